//! Recovery after crashed runs: used by `leopold persona recover` and by each `persona run`
//! itself (step 3), under `run.lock`, shared or alone (docs/reference.md#recovery).
//!
//! A run that crashed (its supervisor SIGKILLed, the machine rebooted) leaves its locks free (a
//! kernel lock dies with its process) and its state file behind: `ACTIVE.json` for a
//! `--no-contain` run, `active/<run_id>.json` for a boxed one. Recovery walks them all and
//! try-locks each run's own lock: held, the run is live and left alone; free, the run crashed,
//! and is recovered while recovery holds that lock (two runs starting at once never recover the
//! same crash twice): kill what is left of its worker group (only processes carrying its
//! `LEOPOLD_RUN_ID`), unwire exactly what its state records, remove its `--settings` file,
//! archive the state as the run's `run.json`, append a `persona_recovered` event, remove its
//! state file and lock. A Codex run's wiring is in its own copy of the configuration, in its run
//! directory (`harness::run_home`): that copy is removed, and the user's `config.toml` is not
//! touched. Then it removes tagged wiring that no state file accounts for (orphans, e.g. left in
//! the user's Codex config by an older version), in the project's Claude settings and in Codex's
//! config.

use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::json;

use crate::harness::{self, Harness};
use crate::project::shown;
use crate::run_dir::RunDir;
use crate::state::{self, ActiveState, OwnLock, PersonaPaths, RunEnd, RunOutcome, Slot, StateFile};

/// One crashed run recovered.
#[derive(Debug)]
pub struct Crashed {
    pub run_id: String,
    pub killed: Vec<u32>,
}

/// What recovery did.
#[derive(Debug, Default)]
pub struct RecoveryReport {
    /// The crashed runs, archived.
    pub crashed: Vec<Crashed>,
    /// The live runs, left alone, each described.
    pub live: Vec<String>,
    pub unwired: Vec<PathBuf>,
    pub removed_files: Vec<PathBuf>,
    pub orphans: Vec<PathBuf>,
    /// What unwiring had to say (e.g. a file edited since it was wired).
    pub warnings: Vec<String>,
    /// The first state file recovery refused (unreadable, or its unwiring failed), left in
    /// place so that a later recovery retries; the others were recovered, and orphans were not
    /// looked for (that file may account for some).
    pub failed: Option<anyhow::Error>,
}

impl RecoveryReport {
    pub fn is_empty(&self) -> bool {
        self.crashed.is_empty()
            && self.orphans.is_empty()
            && self.removed_files.is_empty()
            && self.warnings.is_empty()
    }

    /// The crashed runs' ids.
    pub fn crashed_runs(&self) -> Vec<&str> {
        self.crashed.iter().map(|c| c.run_id.as_str()).collect()
    }

    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.crashed {
            out.push(format!("crashed run {} archived", c.run_id));
            if !c.killed.is_empty() {
                out.push(format!(
                    "killed its leftover worker processes {:?}",
                    c.killed
                ));
            }
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

/// Recovers every crashed run and leaves the live ones alone; the caller holds `run.lock`
/// (shared or alone).
///
/// # Errors
///
/// Only what stops recovery altogether (a lock that cannot be taken, events.jsonl that cannot be
/// written); a state file refused is [`RecoveryReport::failed`].
pub fn recover_crashed(
    paths: &PersonaPaths,
    ctx: &harness::Context,
    sweep: Sweep,
) -> anyhow::Result<RecoveryReport> {
    let mut report = RecoveryReport::default();
    // What the live runs have wired: not orphans.
    let mut live_wiring = Vec::new();
    for slot in state::active::slots(paths) {
        match recover_slot(paths, ctx, &slot, &mut report) {
            Ok(Some(live)) => {
                if let Some(st) = &live {
                    live_wiring.extend(st.wiring.iter().map(|w| w.file.clone()));
                }
                report.live.push(live.map_or_else(
                    || format!("{} (unreadable)", shown(&slot.file)),
                    |st| state::active::describe(&st),
                ));
            }
            Ok(None) => {}
            Err(e) => {
                report.failed.get_or_insert(e);
            }
        }
    }
    if report.failed.is_some() {
        return Ok(report);
    }
    // Orphans: tagged wiring that no state file accounts for.
    for kind in Harness::ALL {
        if live_wiring.contains(&ctx.settings_path(kind)) {
            continue;
        }
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
    // `--settings` files of runs that are over: a live run's (its own lock held; taken before its
    // state is written) is in use.
    let sweep = sweep == Sweep::EveryRun || !report.crashed.is_empty();
    if let Some(dir) = sweep
        .then(|| std::fs::read_dir(paths.runs()).ok())
        .flatten()
    {
        for entry in dir.flatten() {
            let gs = RunDir::new(entry.path()).guard_settings();
            let live = || state::is_live(paths, &entry.file_name().to_string_lossy());
            if gs.exists() && !live() && std::fs::remove_file(&gs).is_ok() {
                report.removed_files.push(gs);
            }
        }
    }
    Ok(report)
}

/// One state file: `Ok(Some(state))` for a live run (its state, if readable), left alone;
/// `Ok(None)` once a crashed run is recovered (or its run ended meanwhile).
fn recover_slot(
    paths: &PersonaPaths,
    ctx: &harness::Context,
    slot: &Slot,
    report: &mut RecoveryReport,
) -> anyhow::Result<Option<Option<ActiveState>>> {
    let unreadable = |e: anyhow::Error| {
        e.context(format!(
            "cannot recover: the crashed run's state is unreadable\n(hint: move {} aside, then run `leopold persona recover` again; check the harness settings files for handlers tagged `{}`)",
            slot.file.display(),
            harness::TAG
        ))
    };
    // ACTIVE.json names its run inside; a boxed run's file by its name.
    let (run_id, read_first) = match &slot.named {
        Some(id) => (id.clone(), None),
        None => {
            let st = slot.read().map_err(unreadable)?;
            (st.run_id.clone(), Some(st))
        }
    };
    let Some(own) = OwnLock::try_take(paths, &run_id)? else {
        return Ok(Some(read_first.or_else(|| slot.read().ok())));
    };
    // Held now. A state file gone meanwhile was its run's own, ended: nothing to do.
    if !slot.file.exists() {
        own.release();
        return Ok(None);
    }
    let st = match read_first.map_or_else(|| slot.read(), Ok) {
        Ok(st) => st,
        Err(e) => {
            own.release();
            return Err(unreadable(e));
        }
    };
    // Unwiring failed: the state file is kept (and the lock file with it) for a later retry.
    recover_run(paths, ctx, &slot.file, st, report)?;
    let _ = std::fs::remove_dir_all(paths.proof_root(&run_id));
    own.release();
    Ok(None)
}

/// Recovers one crashed run, its own lock held: the body of [`recover_crashed`] for one state
/// file.
fn recover_run(
    paths: &PersonaPaths,
    ctx: &harness::Context,
    file: &std::path::Path,
    mut st: ActiveState,
    report: &mut RecoveryReport,
) -> anyhow::Result<()> {
    let killed = crate::os::kill_crashed_run(st.worker_pid, &st.run_id);
    // The box's cgroup, with anything still in it (docs/security.md#limits).
    crate::sandbox::limits::Cgroup::remove_leftover(&st.run_id);
    // The box's socket directory, if the run had one, and what the worker left in its
    // scratch made safe to keep (docs/security.md#the-box).
    let _ = std::fs::remove_dir_all(crate::sandbox::sock_dir_for(&st.run_id));
    let crashed_dir = paths.run_dir(&st.run_id);
    crate::sandbox::clean_scratch(&crashed_dir.scratch());
    let mut unwired_here = Vec::new();
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
                file.display()
            )
        })?;
        report.warnings.extend(unwired.warnings.iter().cloned());
        if run_copy {
            report
                .removed_files
                .extend(harness::run_home::remove_codex_copy(&c.codex_home));
        } else if unwired.changed() {
            unwired_here.push(w.file.clone());
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
    // A crash after run.json was written but before the state file was removed: the run had
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
    std::fs::remove_file(file).with_context(|| format!("cannot remove {}", file.display()))?;
    state::append_event(
        paths,
        &json!({
            "ts": state::now_rfc3339(),
            "event": leopold_guard::EventName::Recovered,
            "run_id": st.run_id,
            "flow": st.flow,
            "harness": st.harness,
            "supervisor_pid": st.supervisor_pid,
            "killed": killed,
            "unwired": unwired_here,
        }),
    )?;
    report.unwired.extend(unwired_here);
    report.crashed.push(Crashed {
        run_id: st.run_id,
        killed,
    });
    Ok(())
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
