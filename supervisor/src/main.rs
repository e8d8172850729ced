//! `leopold`: the binary. Parses, dispatches, reports a failure with its own exit code (STYLE.md
//! §2; printing lives in `output`).
//!
//! `leopold persona guard` is matched on the raw arguments before anything else (no clap, no
//! logging, no runtime): it runs before every browser tool call.

mod browser;
mod cli;
mod commands;
mod exit;
mod fs;
mod harness;
mod observe;
mod observe_impl;
#[cfg(unix)]
#[path = "os/unix.rs"]
mod os;
mod output;
mod project;
mod redact;
mod state;
mod wiring_port;
mod worker;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let _argv0 = args.next();
    if args.len() == 2
        && args.next().is_some_and(|a| a == "persona")
        && args.next().is_some_and(|a| a == "guard")
    {
        return ExitCode::from(leopold_guard::main_entry());
    }

    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return output::usage_error(&err),
    };
    let json = cli.command.json();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(failure) => {
            failure.report(json);
            ExitCode::from(failure.code())
        }
    }
}
