//! `leopold persona recover`, and the recovery `persona run` does itself at start.
//!
//! A run that crashed (its supervisor SIGKILLed, the machine rebooted) leaves its lock free (a
//! kernel lock dies with its process) and its ACTIVE.json behind. Recovery, with the lock held:
//! kill what is left of its worker group (only processes carrying its `LEOPOLD_RUN_ID`), unwire
//! exactly what ACTIVE.json records, remove its `--settings` file, archive ACTIVE.json as the run's
//! `run.json`, append a `persona_recovered` event. Then it removes tagged wiring that no
//! ACTIVE.json accounts for (orphans), in the project's Claude settings and in Codex's config.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::json;

use crate::cli::ProjectArgs;
use crate::exit::RunExit;
use crate::output::{outln, Failure};
use crate::project::shown;
use crate::state::{self, ActiveState, Counts, LockHolder, PersonaPaths, RunEnd, RunLock, TryLock};
use crate::wiring_port::{self as harness, HarnessKind};

/// What recovery did.
#[derive(Debug, Default)]
pub struct RecoveryReport {
    /// The crashed run, if ACTIVE.json was there.
    pub crashed_run: Option<String>,
    pub killed: Vec<u32>,
    pub unwired: Vec<PathBuf>,
    pub removed_files: Vec<PathBuf>,
    pub orphans: Vec<PathBuf>,
    /// What unwiring had to say (e.g. a file edited since it was wired).
    pub warnings: Vec<String>,
}

impl RecoveryReport {
    pub fn is_empty(&self) -> bool {
        self.crashed_run.is_none()
            && self.orphans.is_empty()
            && self.removed_files.is_empty()
            && self.warnings.is_empty()
    }

    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(r) = &self.crashed_run {
            out.push(format!("crashed run {r} archived"));
        }
        if !self.killed.is_empty() {
            out.push(format!(
                "killed its leftover worker processes {:?}",
                self.killed
            ));
        }
        for f in &self.unwired {
            out.push(format!("unwired {}", shown(f)));
        }
        for f in &self.removed_files {
            out.push(format!("removed {}", shown(f)));
        }
        for f in &self.orphans {
            out.push(format!("removed orphaned guard wiring from {}", shown(f)));
        }
        out
    }
}

/// Recovery proper; the caller holds the run lock.
///
/// # Errors
///
/// An ACTIVE.json this version cannot read (left in place, with a hint), or unwiring that failed
/// (ACTIVE.json left in place so the next attempt retries).
pub fn recover_locked(
    paths: &PersonaPaths,
    ctx: &harness::Context,
) -> anyhow::Result<RecoveryReport> {
    let mut report = RecoveryReport::default();
    let active = paths.active();
    if active.exists() {
        let mut st = ActiveState::read(&active).map_err(|e| {
            e.context(format!(
                "cannot recover: the crashed run's state is unreadable\n(hint: move {} aside, then run `leopold persona recover` again; check the harness settings files for handlers tagged `{}`)",
                active.display(),
                harness::TAG
            ))
        })?;
        report.killed = crate::os::kill_crashed_run(st.worker_pid, &st.run_id);
        for w in &st.wiring {
            let kind = harness::kind_from_name(&w.harness).with_context(|| {
                format!(
                    "{}: unknown harness `{}` in wiring",
                    active.display(),
                    w.harness
                )
            })?;
            let mut c = ctx.clone();
            if kind == HarnessKind::Codex {
                // Unwire the config the run wired, even if CODEX_HOME differs now.
                if let Some(home) = w.file.parent() {
                    c.codex_home = home.to_path_buf();
                }
            }
            let changed = harness::unwire(kind, &c, &mut |w| report.warnings.push(w.to_owned()))
                .with_context(|| {
                    format!(
                    "cannot unwire {} for crashed run {}; {} is kept so a later recovery retries",
                    w.file.display(),
                    st.run_id,
                    active.display()
                )
                })?;
            if changed {
                report.unwired.push(w.file.clone());
            }
        }
        if let Some(gs) = &st.guard_settings {
            if std::fs::remove_file(gs).is_ok() {
                report.removed_files.push(gs.clone());
            }
        }
        let run_dir = paths.run_dir(&st.run_id);
        std::fs::create_dir_all(&run_dir)
            .with_context(|| format!("cannot create {}", run_dir.display()))?;
        let run_json = run_dir.join("run.json");
        // A crash after run.json was written but before ACTIVE.json was removed: the run had
        // finished; keep its own account.
        if !run_json.exists() {
            st.active = false;
            st.end = Some(RunEnd {
                outcome: "recovered".into(),
                exit_code: RunExit::WORKER_FAILED,
                ended_at: state::now_rfc3339(),
                counts: Counts::default(),
                worker_status: None,
                reason: Some(format!(
                    "supervisor pid {} died during the run; recovered by pid {}",
                    st.supervisor_pid,
                    std::process::id()
                )),
            });
            st.write_atomic(&run_json)?;
        }
        std::fs::remove_file(&active)
            .with_context(|| format!("cannot remove {}", active.display()))?;
        state::append_event(
            paths,
            &json!({
                "ts": state::now_rfc3339(),
                "event": "persona_recovered",
                "run_id": st.run_id,
                "flow": st.flow,
                "harness": st.harness,
                "supervisor_pid": st.supervisor_pid,
                "killed": report.killed,
                "unwired": report.unwired,
            }),
        )?;
        report.crashed_run = Some(st.run_id);
    }
    // Orphans: tagged wiring that no ACTIVE.json accounts for.
    for kind in HarnessKind::ALL {
        // A file that cannot be read or parsed is left as it is: it is reported here, and wiring
        // refuses it with the full error if a run needs it.
        let handlers = match harness::wired_handlers(kind, ctx) {
            Ok(h) => h,
            Err(e) => {
                report.warnings.push(format!("orphan check skipped: {e:#}"));
                continue;
            }
        };
        if !handlers.is_empty()
            && harness::unwire(kind, ctx, &mut |w| report.warnings.push(w.to_owned()))?
        {
            report.orphans.push(harness::target_file(kind, ctx));
        }
    }
    // `--settings` files of runs that are over.
    if let Ok(dir) = std::fs::read_dir(paths.runs()) {
        for entry in dir.flatten() {
            let gs = entry.path().join("guard-settings.json");
            if gs.exists() && std::fs::remove_file(&gs).is_ok() {
                report.removed_files.push(gs);
            }
        }
    }
    Ok(report)
}

pub fn recover(args: ProjectArgs) -> Result<ExitCode, Failure> {
    let project = state::resolve_project(args.project.as_deref())?;
    let paths = PersonaPaths::new(&project);
    let ctx = super::run::harness_context(&project)?;
    let holder = LockHolder {
        pid: std::process::id(),
        command: "persona recover".into(),
        flow: None,
        started_at: state::now_rfc3339(),
    };
    let lock = match RunLock::try_acquire(&paths, &holder)? {
        TryLock::Acquired(l) => l,
        TryLock::Busy(h) => {
            let who = h.map_or_else(|| "another process".to_owned(), |h| h.to_string());
            return Err(Failure::busy(anyhow::anyhow!(
                "a persona run is active in {}: {who}; refusing to recover (it would undo a live run's wiring)\n(hint: a live run cleans up after itself when it ends; stop it with Ctrl-C or SIGTERM)",
                shown(&project)
            )));
        }
    };
    let report = recover_locked(&paths, &ctx)?;
    drop(lock);
    if report.is_empty() {
        outln!("leopold: nothing to recover in {}", shown(&project));
    } else {
        for line in report.lines() {
            outln!("leopold: recovered: {line}");
        }
    }
    Ok(ExitCode::from(RunExit::CLEAN))
}
