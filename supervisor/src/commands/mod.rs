//! One module per command; each returns the process exit code.

mod replay;

use std::process::ExitCode;

use crate::cli::{Cli, Command, PersonaCommand};

mod wire;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Persona(PersonaCommand::Guard) => Ok(ExitCode::from(leopold_guard::main_entry())),
        Command::Persona(PersonaCommand::Wire(args)) => wire::wire(args),
        Command::Persona(PersonaCommand::Unwire(args)) => wire::unwire(args),
        Command::Persona(PersonaCommand::Replay(args)) => replay::run(args),
        Command::Persona(PersonaCommand::Run(_))
        | Command::Persona(PersonaCommand::Recover(_))
        | Command::Doctor(_) => anyhow::bail!("this command is not built yet"),
    }
}
