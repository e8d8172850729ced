//! A run's claims on its project (docs/reference.md#the-locks): `run.lock` (step 2), shared by a
//! boxed run, which runs beside the project's other boxed runs, and taken alone by a
//! `--no-contain` run, which wires the project's own settings file and whose guard reads the
//! project's `ACTIVE.json`; then the run's own lock and its state file (step 4), and the sync
//! of its folder when a file of the user's is about to be wired.

use std::path::PathBuf;

use super::plan::Plan;
use crate::output::Failure;
use crate::project::shown;
use crate::state::{self, Busy, LockHolder, LockMode, OwnLock, RunLock, TryLock};

/// Why a `--no-contain` run waits for no other: said whenever it is refused or refuses.
const ALONE: &str = "a --no-contain run runs alone because it wires the project's settings file";

/// Step 2: `run.lock`, without waiting. Busy: exit 4, nothing touched, and why.
pub fn lock_project(plan: &Plan, holder: &LockHolder) -> Result<RunLock, Failure> {
    let mode = if plan.bwrap.is_some() {
        LockMode::Shared
    } else {
        LockMode::Exclusive
    };
    match RunLock::try_acquire(&plan.paths, holder, mode)? {
        TryLock::Acquired(lock) => Ok(lock),
        TryLock::Busy(busy) => Err(Failure::busy(anyhow::anyhow!(
            "{}",
            busy_message(plan, mode, busy)
        ))),
    }
}

fn busy_message(plan: &Plan, mode: LockMode, busy: Busy) -> String {
    let project = shown(&plan.paths.project);
    let hint = "(hint: wait for it to finish, or stop it; if it crashed, its lock is already free and `leopold persona recover` cleans up)";
    match busy {
        // Boxed runs (or `persona recover`) hold the project: this `--no-contain` run waits.
        Busy::Shared => {
            let live: Vec<String> = state::active_runs(&plan.paths)
                .iter()
                .filter(|r| r.live)
                .map(state::ActiveRun::describe)
                .collect();
            let who = if live.is_empty() {
                "boxed runs are starting, or `leopold persona recover` is running".to_owned()
            } else {
                live.join("; ")
            };
            format!(
                "another persona run is active in {project}: {who}\n{ALONE}, and these hold the project\n(hint: wait for them to finish, or run this one boxed, without --no-contain, beside them)"
            )
        }
        Busy::Alone(h) => {
            let who = h.map_or_else(
                || "another process (it has not described itself yet)".to_owned(),
                |h| h.to_string(),
            );
            match mode {
                LockMode::Exclusive => {
                    format!("another persona run is active in {project}: {who}\n{ALONE}\n{hint}")
                }
                LockMode::Shared => format!(
                    "another persona run is active in {project}: {who}, holding the project alone\n{ALONE}, so no boxed run starts beside it\n{hint}"
                ),
            }
        }
    }
}

/// Step 4's claim: the run's own lock, held for its whole life, and where its state is written
/// (`ACTIVE.json` for a `--no-contain` run, whose guard reads the project's; else
/// `active/<run_id>.json`, which the box shows its guard as `ACTIVE.json`).
pub struct Claim {
    pub own: OwnLock,
    pub state_file: PathBuf,
}

pub fn claim(plan: &Plan, run_id: &str) -> anyhow::Result<Claim> {
    let own = OwnLock::take(&plan.paths, run_id)?;
    let state_file = if plan.bwrap.is_some() {
        plan.paths.state_of(run_id)
    } else {
        plan.paths.active()
    };
    Ok(Claim { own, state_file })
}

/// A folder's sync running on a thread of its own, waited for by [`Synced::wait`] or when
/// dropped.
pub struct Synced(Option<std::thread::JoinHandle<()>>);

impl Synced {
    /// Syncs the folder of `path` on a thread (here, if none can be started).
    pub fn dir_of(path: PathBuf) -> Synced {
        let theirs = path.clone();
        match std::thread::Builder::new()
            .name("leopold-sync".into())
            .spawn(move || crate::fs::sync_dir_of(&theirs))
        {
            Ok(h) => Synced(Some(h)),
            Err(_) => {
                crate::fs::sync_dir_of(&path);
                Synced(None)
            }
        }
    }

    pub fn done() -> Synced {
        Synced(None)
    }

    pub fn wait(&mut self) {
        if let Some(h) = self.0.take() {
            // A panic there is a sync not made: the caller goes on as after a failed fsync.
            let _ = h.join();
        }
    }
}

impl Drop for Synced {
    fn drop(&mut self) {
        self.wait();
    }
}
