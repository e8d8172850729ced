//! One module per command; each returns the process exit code, or a failure carrying its own.
//! What several commands share (the harness context, the test pause points) sits here, so no
//! command imports another.

mod completions;
mod doctor;
mod flow;
mod recover;
mod replay;
mod report;
mod run;
mod runs;
mod suite;
mod wire;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;

use crate::cli::{Cli, Command, FlowCommand, PersonaCommand};
use crate::output::Failure;

pub fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Persona(PersonaCommand::Guard) => Ok(ExitCode::from(leopold_guard::main_entry())),
        Command::Persona(PersonaCommand::Replay(args)) => replay::run(args),
        Command::Persona(PersonaCommand::Run(args)) => suite::run(*args),
        Command::Persona(PersonaCommand::Recover(args)) => recover::recover(args),
        Command::Doctor(args) => Ok(doctor::doctor(args)?),
        Command::Persona(PersonaCommand::Wire(args)) => Ok(wire::wire(args)?),
        Command::Persona(PersonaCommand::Unwire(args)) => Ok(wire::unwire(args)?),
        Command::Persona(PersonaCommand::Report(args)) => Ok(report::run(args)?),
        Command::Persona(PersonaCommand::Runs(args)) => Ok(runs::run(args)?),
        Command::Persona(PersonaCommand::McpRelay(args)) => {
            Ok(crate::gateway::relay::main(&args.socket))
        }
        Command::Flow(FlowCommand::Check(args)) => Ok(flow::check(&args)),
        Command::Completions(args) => Ok(completions::completions(&args)),
    }
}

/// The harness context for this project: where Codex keeps its config, the guard's command (this
/// binary's own path).
pub fn harness_context(project: &Path) -> anyhow::Result<crate::harness::Context> {
    let exe = std::env::current_exe().context("cannot find the leopold executable's path")?;
    Ok(crate::harness::Context::new(
        project.to_path_buf(),
        &exe,
        true,
    )?)
}

/// Test-only: pause at a named step (write a marker file, then sleep until killed, or until the
/// test removes the marker: then the run goes on). Steps, in order: `locked`, `active-written`,
/// `wired`, `settings-written` (Claude), `launched`, `mid-stream` (after the first journaled
/// action), `mid-unwire` (unwired, not yet archived).
const PAUSE_AT_ENV: &str = "__LEOPOLD_PAUSE_AT";
const PAUSE_MARKER_ENV: &str = "__LEOPOLD_PAUSE_MARKER";

/// Pauses here if a test asked for it, until the test SIGKILLs us or removes the marker.
pub fn pause_point(step: &str) {
    let Some(want) = crate::knobs::var(PAUSE_AT_ENV) else {
        return;
    };
    if want != step {
        return;
    }
    let Some(marker) = crate::knobs::var(PAUSE_MARKER_ENV) else {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    };
    if std::fs::write(&marker, format!("{step} {}\n", std::process::id())).is_err() {
        return;
    }
    while Path::new(&marker).exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}
