//! One module per command; each returns the process exit code, or a failure carrying its own.

mod completions;
mod doctor;
mod flow;
mod recover;
mod replay;
mod run;
mod wire;

use std::process::ExitCode;

use crate::cli::{Cli, Command, FlowCommand, PersonaCommand};
use crate::output::Failure;

pub fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Persona(PersonaCommand::Guard) => Ok(ExitCode::from(leopold_guard::main_entry())),
        Command::Persona(PersonaCommand::Replay(args)) => replay::run(args),
        Command::Persona(PersonaCommand::Run(args)) => run::run(args),
        Command::Persona(PersonaCommand::Recover(args)) => recover::recover(args),
        Command::Doctor(args) => Ok(doctor::doctor(args)?),
        Command::Persona(PersonaCommand::Wire(args)) => Ok(wire::wire(args)?),
        Command::Persona(PersonaCommand::Unwire(args)) => Ok(wire::unwire(args)?),
        Command::Flow(FlowCommand::Check(args)) => Ok(flow::check(&args)),
        Command::Completions(args) => Ok(completions::completions(&args)),
    }
}
