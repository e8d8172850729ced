//! `leopold persona recover`: the command around [`crate::recovery`], under `run.lock` shared,
//! so that it recovers crashed runs while other boxed runs of the project are live
//! (docs/reference.md#recovery).

use std::process::ExitCode;

use crate::cli::ProjectArgs;
use crate::exit::RunExit;
use crate::output::{outln, Failure};
use crate::project::shown;
use crate::recovery::{recover_crashed, Sweep};
use crate::state::{self, Busy, LockHolder, LockMode, PersonaPaths, RunLock, TryLock};

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
    let lock = match RunLock::try_acquire(&paths, &holder, LockMode::Shared)? {
        TryLock::Acquired(l) => l,
        TryLock::Busy(busy) => {
            // Taken shared, only a holder alone keeps it out.
            let who = match busy {
                Busy::Alone(Some(h)) => h.to_string(),
                _ => "another process".to_owned(),
            };
            return Err(Failure::busy(anyhow::anyhow!(
                "a --no-contain persona run is active in {}: {who}; refusing to recover (it runs alone because it wires the project's settings file, and recovering would undo its wiring)\n(hint: a live run cleans up after itself when it ends; stop it with Ctrl-C or SIGTERM)",
                shown(&project)
            )));
        }
    };
    let mut report = recover_crashed(&paths, &ctx, Sweep::EveryRun)?;
    drop(lock);
    if report.is_empty() && report.failed.is_none() {
        outln!("leopold: nothing to recover in {}", shown(&project));
    } else {
        for line in report.lines() {
            outln!("leopold: recovered: {line}");
        }
    }
    for live in &report.live {
        outln!("leopold: left alone: live {live}");
    }
    match report.failed.take() {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::from(RunExit::CLEAN)),
    }
}
