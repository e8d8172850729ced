//! Recovery after a crashed run: used by `leopold persona recover` and by `persona run` itself
//! (step 3, lock held).
//!
//! A run that crashed (its supervisor SIGKILLed, the machine rebooted) leaves its lock free (a
//! kernel lock dies with its process) and its ACTIVE.json behind. Recovery, with the lock held:
//! kill what is left of its worker group (only processes carrying its `LEOPOLD_RUN_ID`), unwire
//! exactly what ACTIVE.json records, remove its `--settings` file, archive ACTIVE.json as the run's
//! `run.json`, append a `persona_recovered` event. A Codex run's wiring is in its own copy of the
//! configuration, in its run directory (`harness::run_home`): that copy is removed, and the
//! user's `config.toml` is not touched. Then it removes tagged wiring that no ACTIVE.json accounts
//! for (orphans, e.g. left in the user's Codex config by an older version), in the project's
//! Claude settings and in Codex's config.

use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::json;

use crate::harness::{self, Harness};
use crate::project::shown;
use crate::run_dir::RunDir;
use crate::state::{self, ActiveState, PersonaPaths, RunEnd, RunOutcome, StateFile};

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

/// How far recovery looks for `--settings` files left by runs that are over.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sweep {
    /// Every run directory (`persona recover`): a run's own teardown removes its file, so one is
    /// left only where a teardown could not (a warning said so) or its ACTIVE.json was lost.
    EveryRun,
    /// Only when a crashed run was found (`persona run`): a run's start must not grow with the
    /// project's history, one `stat` per earlier run.
    AfterCrash,
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
    sweep: Sweep,
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
        // The box's cgroup, with anything still in it (docs/security.md#limits).
        crate::sandbox::limits::Cgroup::remove_leftover(&st.run_id);
        // The box's socket directory, if the run had one, and what the worker left in its
        // scratch made safe to keep (docs/security.md#the-box).
        let _ = std::fs::remove_dir_all(crate::sandbox::sock_dir_for(&st.run_id));
        let crashed_dir = paths.run_dir(&st.run_id);
        crate::sandbox::clean_scratch(&crashed_dir.scratch());
        for w in &st.wiring {
            let kind = w.harness;
            // The run's own copy of the configuration (its record in the run directory) holds
            // nothing of the user's; a configuration an older version wired in place is
            // unwired where it is, even if CODEX_HOME differs now.
            let run_copy = harness::is_run_copy(kind, &w.file, crashed_dir.path());
            let c = harness::recovery_context(kind, ctx, &w.file, crashed_dir.path());
            let unwired = harness::unwire(kind, &c).with_context(|| {
                format!(
                    "cannot unwire {} for crashed run {}; {} is kept so a later recovery retries",
                    w.file.display(),
                    st.run_id,
                    active.display()
                )
            })?;
            report.warnings.extend(unwired.warnings.iter().cloned());
            if run_copy {
                report
                    .removed_files
                    .extend(harness::run_home::remove_codex_copy(&c.codex_home));
            } else if unwired.changed() {
                report.unwired.push(w.file.clone());
            }
        }
        if let Some(gs) = &st.guard_settings {
            if std::fs::remove_file(gs).is_ok() {
                report.removed_files.push(gs.clone());
            }
        }
        // Once unwired: a Codex run's wiring is in its scratch.
        report.warnings.extend(archive_crashed(&st, &crashed_dir));
        std::fs::create_dir_all(crashed_dir.path())
            .with_context(|| format!("cannot create {}", crashed_dir.path().display()))?;
        let run_json = crashed_dir.run_json();
        // A crash after run.json was written but before ACTIVE.json was removed: the run had
        // finished; keep its own account.
        if !run_json.exists() {
            st.active = false;
            st.end = Some(RunEnd {
                reason: Some(format!(
                    "supervisor pid {} died during the run; recovered by pid {}",
                    st.supervisor_pid,
                    std::process::id()
                )),
                // As recovery found the journal: what a later replay `--expect`s.
                journal_hash: leopold_journal::chain::head_of_file(&crashed_dir.journal())
                    .map(|h| h.to_string()),
                gateway_hash: leopold_journal::chain::head_of_file(&crashed_dir.gateway_record())
                    .map(|h| h.to_string()),
                // What the persona reported before the crash, kept (the outcome stays
                // `recovered`: no verdict of a run cut short is complete).
                verdict: leopold_flows::Flow::load(&crashed_dir.flow())
                    .ok()
                    .map(|flow| {
                        let seen = crate::gateway::seen_in(&crashed_dir.gateway_record(), &flow);
                        crate::verdict::judge(&flow, seen)
                    }),
                ..RunEnd::new(RunOutcome::Recovered)
            });
            crate::archive::run_json(&st, &crashed_dir, &paths.project).write_atomic(&run_json)?;
        }
        std::fs::remove_file(&active)
            .with_context(|| format!("cannot remove {}", active.display()))?;
        state::append_event(
            paths,
            &json!({
                "ts": state::now_rfc3339(),
                "event": leopold_guard::EventName::Recovered,
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
    for kind in Harness::ALL {
        // A file that cannot be read or parsed is left as it is: it is reported here, and wiring
        // refuses it with the full error if a run needs it.
        let handlers = match harness::wired_handlers(kind, ctx) {
            Ok(h) => h,
            Err(e) => {
                report.warnings.push(format!("orphan check skipped: {e:#}"));
                continue;
            }
        };
        if handlers.is_empty() {
            continue;
        }
        let unwired = harness::unwire(kind, ctx)?;
        report.warnings.extend(unwired.warnings.iter().cloned());
        if unwired.changed() {
            report.orphans.push(ctx.settings_path(kind));
        }
    }
    // `--settings` files of runs that are over.
    let sweep = sweep == Sweep::EveryRun || report.crashed_run.is_some();
    if let Some(dir) = sweep
        .then(|| std::fs::read_dir(paths.runs()).ok())
        .flatten()
    {
        for entry in dir.flatten() {
            let gs = RunDir::new(entry.path()).guard_settings();
            if gs.exists() && std::fs::remove_file(&gs).is_ok() {
                report.removed_files.push(gs);
            }
        }
    }
    Ok(report)
}

/// A crashed run's directory made as a finished run's is ([`crate::archive`]): the flow's copy
/// (a run whose copy a power loss took, or made by an older version, gets one now, from the file
/// it recorded) and no browser files or scratch, unless the run kept them.
fn archive_crashed(st: &ActiveState, dir: &RunDir) -> Vec<String> {
    let mut warnings = crate::archive::clear(dir, st.keep_scratch);
    let copied = std::fs::create_dir_all(dir.path())
        .map_err(anyhow::Error::from)
        .and_then(|()| match crate::archive::has_flow(dir) {
            true => Ok(()),
            false => crate::archive::copy_flow(&st.flow_path, dir),
        });
    if let Err(e) = copied {
        warnings.push(format!(
            "the crashed run's directory holds no copy of its flow: {e:#}"
        ));
    }
    warnings
}
