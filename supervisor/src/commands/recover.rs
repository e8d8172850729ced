//! `leopold persona recover`: the command around [`crate::recovery`], under the run lock.

use std::process::ExitCode;

use crate::cli::ProjectArgs;
use crate::exit::RunExit;
use crate::output::{outln, Failure};
use crate::project::shown;
use crate::recovery::{recover_locked, Sweep};
use crate::state::{self, LockHolder, PersonaPaths, RunLock, TryLock};

pub fn recover(args: ProjectArgs) -> Result<ExitCode, Failure> {
    let project = state::resolve_project(args.project.as_deref())?;
    let paths = PersonaPaths::new(&project);
    let ctx = super::harness_context(&project)?;
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
    let report = recover_locked(&paths, &ctx, Sweep::EveryRun)?;
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
