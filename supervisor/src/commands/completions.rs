//! `leopold completions <shell>`: a completion script, generated from the same clap definition
//! that parses the arguments, so it never falls behind.

use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs};

pub fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut cmd = Cli::command();
    // Into memory first: `generate` panics on a failed write.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "leopold", &mut script);
    match std::io::Write::write_all(&mut crate::output::Stdout, &script) {
        // A closed stdout is the reader's choice (`Stdout` swallows EPIPE).
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::output::error_text(
                &format!("cannot write the completion script: {e}"),
                crate::exit::RunExit::CONFIG,
                false,
            );
            ExitCode::from(crate::exit::RunExit::CONFIG)
        }
    }
}
