//! One module per command; each returns the process exit code.

mod doctor;
mod recover;
mod replay;
mod report;
mod run;
mod runs;

use std::process::ExitCode;

use crate::cli::{Cli, Command, PersonaCommand};

mod wire;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Persona(PersonaCommand::Guard) => Ok(ExitCode::from(leopold_guard::main_entry())),
        Command::Persona(PersonaCommand::Replay(args)) => replay::run(args),
        Command::Persona(PersonaCommand::Run(args)) => run::run(args),
        Command::Persona(PersonaCommand::Recover(args)) => recover::recover(args),
        Command::Doctor(args) => doctor::doctor(args),
        Command::Persona(PersonaCommand::Wire(args)) => wire::wire(args),
        Command::Persona(PersonaCommand::Unwire(args)) => wire::unwire(args),
        Command::Persona(PersonaCommand::Report(args)) => report::run(args),
        Command::Persona(PersonaCommand::Runs(args)) => runs::run(args),
    }
}
