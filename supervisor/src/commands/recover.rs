//! `leopold persona recover`: the command around [`crate::recovery`], under the run lock.
#![allow(clippy::print_stdout)]

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::ProjectArgs;
use crate::exit::RunExit;
use crate::recovery::recover_locked;
use crate::state::{self, LockHolder, PersonaPaths, RunLock, TryLock};

pub fn recover(args: ProjectArgs) -> anyhow::Result<ExitCode> {
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
            let _ = writeln!(
                std::io::stderr().lock(),
                "leopold: error: a persona run is active in {}: {who}; refusing to recover (it would undo a live run's wiring)\n(hint: a live run cleans up after itself when it ends; stop it with Ctrl-C or SIGTERM)",
                project.display()
            );
            return Ok(ExitCode::from(RunExit::BUSY));
        }
    };
    let report = recover_locked(&paths, &ctx)?;
    drop(lock);
    let mut stdout = std::io::stdout().lock();
    if report.is_empty() {
        let _ = writeln!(
            stdout,
            "leopold: nothing to recover in {}",
            project.display()
        );
    } else {
        for line in report.lines() {
            let _ = writeln!(stdout, "leopold: recovered: {line}");
        }
    }
    Ok(ExitCode::from(RunExit::CLEAN))
}
