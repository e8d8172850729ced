//! `leopold`: the binary. Parses, dispatches, reports a failure with its own exit code (STYLE.md
//! §2; printing lives in `output`).
//!
//! `leopold persona guard` is matched on the raw arguments before anything else (no clap, no
//! logging, no runtime): it runs before every browser tool call.

mod archive;
mod browser;
mod cache;
mod cli;
mod commands;
mod exit;
mod fs;
#[cfg(unix)]
mod gateway;
mod harness;
mod knobs;
mod looping;
mod mcp;
mod meter;
mod narration;
mod observe;
#[cfg(unix)]
#[path = "os/unix.rs"]
mod os;
mod output;
mod partition;
mod process;
mod project;
mod recovery;
mod redact;
mod report;
mod run_dir;
#[cfg(unix)]
mod sandbox;
mod state;
mod suite;
mod table;
#[cfg(test)]
mod test_support;
mod usage;
mod verdict;
mod web;

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let _argv0 = args.next();
    if args.len() == 2
        && args.next().is_some_and(|a| a == "persona")
        && args.next().is_some_and(|a| a == "guard")
    {
        return ExitCode::from(leopold_guard::main_entry());
    }
    // The box's first program (docs/security.md#the-box): raw arguments, the worker's own after
    // `--`.
    let mut raw = std::env::args_os().skip(1);
    if raw.next().is_some_and(|a| a == "persona") && raw.next().is_some_and(|a| a == "box-init") {
        let rest: Vec<std::ffi::OsString> = raw.collect();
        return sandbox::init::main(&rest);
    }

    let cli = match cli::Cli::parse_keeping_matches() {
        Ok(cli) => cli,
        Err(err) => return output::usage_error(&err),
    };
    if !matches!(
        cli.command,
        cli::Command::Persona(cli::PersonaCommand::Guard)
    ) {
        init_tracing(cli.verbose);
    }
    let json = cli.command.json();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(failure) => {
            failure.report(json);
            ExitCode::from(failure.code())
        }
    }
}

/// Traces to stderr when asked: `RUST_LOG` if set, else `-v` (info) or `-vv` (debug) for
/// Leopold's own crates. Not asked: no subscriber at all, nothing to pay. The guard never gets
/// here (docs/architecture.md#start-up-cost-and-how-leopold-is-built).
fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::new(spec),
        _ => match verbose {
            0 => return,
            1 => EnvFilter::new("leopold=info,leopold_journal=info"),
            _ => EnvFilter::new("leopold=debug,leopold_journal=debug,leopold_guard=debug"),
        },
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(tracing_subscriber::fmt::time::uptime())
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
