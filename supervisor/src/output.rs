//! Everything `leopold` prints goes through here (STYLE.md §2): one writer per stream, one error
//! type that knows its exit code, one rendering of an error for people and one for machines.
//!
//! - **A closed stdout is not an error.** `leopold doctor | head -1` closes the pipe early; Rust
//!   ignores SIGPIPE, so the next write fails with `EPIPE`, and `println!` would panic on it.
//!   [`Stdout`] swallows that error and drops the rest of the output: the command finishes what it
//!   was doing (a persona run still unwires) and exits with its own code.
//! - **stderr never panics** either: a failed write to it is ignored (there is nowhere left to say
//!   so).
//! - **Errors carry their exit code** ([`Failure`]), decided where the error is made, not by
//!   `main`.
//! - **Hints sit on their own line.** Messages in the workspace end in `\n(hint: …)`; when an
//!   error is wrapped in context, that hint would land mid-line, so [`Rendered`] collects the
//!   hints of the whole chain and prints each on a line of its own, after the message.
//! - **`--json` errors are JSON too**, one shape for every command:
//!   `{"type":"error","exit_code":N,"message":"…","hints":["…"]}` on stdout (the text goes to
//!   stderr as well).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::exit::RunExit;

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The process's stdout, for which a closed pipe is the reader's choice, not an error: once a
/// write fails with `EPIPE`, this and every later write succeed without writing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stdout;

impl Stdout {
    fn closed(e: &io::Error) -> bool {
        if e.kind() == io::ErrorKind::BrokenPipe {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            true
        } else {
            false
        }
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if STDOUT_CLOSED.load(Ordering::Relaxed) {
            return Ok(buf.len());
        }
        match io::stdout().lock().write(buf) {
            Err(e) if Self::closed(&e) => Ok(buf.len()),
            r => r,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if STDOUT_CLOSED.load(Ordering::Relaxed) {
            return Ok(());
        }
        match io::stdout().lock().flush() {
            Err(e) if Self::closed(&e) => Ok(()),
            r => r,
        }
    }
}

/// One line on stdout. A closed stdout drops it; any other write error is ignored too (the
/// command's outcome does not depend on its progress lines).
pub fn line(args: fmt::Arguments<'_>) {
    let mut out = io::LineWriter::new(Stdout);
    let _ = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
}

/// One line on stderr, never panicking.
pub fn eline(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// Text on stderr with no newline (a live count redrawn in place), never panicking.
pub fn estr(text: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `println!` that survives a closed stdout.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::line(format_args!($($arg)*)) };
}
pub(crate) use outln;

/// A warning on stderr: `leopold: warning: …`, its hints on lines of their own.
pub fn warn(msg: &str) {
    let r = Rendered::from_text(msg);
    eline(format_args!("leopold: warning: {}", r.text()));
}

/// An error that ends a command, with the exit code it stands for.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl Failure {
    /// A usage or configuration error: exit 2 (bad flow, bad argument, wiring refused, …).
    pub fn config(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: RunExit::CONFIG,
            error: error.into(),
        }
    }

    /// Another persona run holds the project's lock: exit 4, nothing touched.
    pub fn busy(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: RunExit::BUSY,
            error: error.into(),
        }
    }

    pub fn code(&self) -> u8 {
        self.code
    }

    /// Prints the error: to stderr always; with `json`, also as one JSON line on stdout.
    pub fn report(&self, json: bool) {
        let r = Rendered::from_error(&self.error);
        report_rendered(&r, self.code, json);
    }
}

/// Any error not given another code is a usage or configuration error (exit 2): the exit codes'
/// catch-all (README.md#exit-codes) for "Leopold could not do what was asked, and changed nothing
/// it did not undo".
impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure::config(error)
    }
}

macro_rules! failure_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for Failure {
            fn from(error: $t) -> Failure {
                Failure::config(error)
            }
        }
    )*};
}
failure_from!(
    io::Error,
    serde_json::Error,
    crate::harness::WiringError,
    leopold_flows::FlowError,
);

/// Prints an error message made elsewhere (a run's teardown): stderr, and JSON with `json`.
pub fn error_text(msg: &str, code: u8, json: bool) {
    report_rendered(&Rendered::from_text(msg), code, json);
}

fn report_rendered(r: &Rendered, code: u8, json: bool) {
    eline(format_args!("leopold: error: {}", r.text()));
    if json {
        error_line(r, code);
    }
}

/// The `--json` error line on stdout.
fn error_line(r: &Rendered, code: u8) {
    let v = serde_json::json!({
        "type": "error",
        "exit_code": code,
        "message": r.message,
        "hints": r.hints,
    });
    line(format_args!("{v}"));
}

/// A command line clap refused (or `--help`/`--version`, which clap reports the same way): clap
/// prints it and picks the code (2 for a usage error). Under `--json` a usage error is also the
/// JSON error line, so a script reading stdout sees it.
pub fn usage_error(err: &clap::Error) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    let code = u8::try_from(err.exit_code()).unwrap_or(RunExit::CONFIG);
    let _ = err.print();
    let is_usage = !matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if is_usage && std::env::args_os().any(|a| a == "--json") {
        let text = err.render().to_string();
        // clap's message, without its usage block and "try --help" footer.
        let text = text.split("\n\nUsage:").next().unwrap_or_default();
        error_line(
            &Rendered::from_text(text.trim_start_matches("error: ")),
            code,
        );
    }
    std::process::ExitCode::from(code)
}

/// An error as shown: the messages of its chain joined by `: ` (a cause already quoted by the
/// message before it is not repeated), and the hints found anywhere in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub message: String,
    pub hints: Vec<String>,
}

impl Rendered {
    pub fn from_error(err: &anyhow::Error) -> Rendered {
        let mut r = Rendered {
            message: String::new(),
            hints: Vec::new(),
        };
        for cause in err.chain() {
            let (msg, hints) = split_hints(&cause.to_string());
            r.hints.extend(hints);
            let msg = msg.trim_end();
            if msg.is_empty() || r.message.contains(msg) {
                continue;
            }
            if !r.message.is_empty() {
                r.message
                    .push_str(if r.message.ends_with(':') { " " } else { ": " });
            }
            r.message.push_str(msg);
        }
        r
    }

    pub fn from_text(text: &str) -> Rendered {
        let (message, hints) = split_hints(text);
        Rendered {
            message: message.trim_end().to_owned(),
            hints,
        }
    }

    /// The message, then `hint: …` on a line of its own for each hint.
    pub fn text(&self) -> String {
        let mut s = self.message.clone();
        for h in &self.hints {
            s.push_str("\nhint: ");
            s.push_str(h);
        }
        s
    }
}

/// Splits `(hint: …)` lines (the workspace's convention) from the rest of a message.
fn split_hints(text: &str) -> (String, Vec<String>) {
    let mut msg = String::new();
    let mut hints = Vec::new();
    for l in text.split('\n') {
        if let Some(h) = l
            .trim()
            .strip_prefix("(hint: ")
            .and_then(|h| h.strip_suffix(')'))
        {
            hints.push(h.to_owned());
            continue;
        }
        if let Some(h) = l.trim().strip_prefix("hint: ") {
            hints.push(h.to_owned());
            continue;
        }
        if !msg.is_empty() {
            msg.push('\n');
        }
        msg.push_str(l);
    }
    (msg, hints)
}

/// `1 action`, `2 actions`, `0 actions`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if let Some(stem) = noun.strip_suffix("ss") {
        format!("{n} {stem}sses")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_inside_a_wrapped_error_moves_to_its_own_line() {
        let inner = anyhow::anyhow!("the file is broken\n(hint: fix it by hand)");
        let err = inner.context("cannot recover\n(hint: move it aside)");
        let r = Rendered::from_error(&err);
        assert_eq!(r.message, "cannot recover: the file is broken");
        assert_eq!(r.hints, ["move it aside", "fix it by hand"]);
        assert_eq!(
            r.text(),
            "cannot recover: the file is broken\nhint: move it aside\nhint: fix it by hand"
        );
    }

    #[test]
    fn a_cause_the_message_already_quotes_is_not_repeated() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let shown = io.to_string();
        let err = anyhow::Error::new(io).context(format!("cannot read flow file x.md: {shown}"));
        let r = Rendered::from_error(&err);
        assert_eq!(r.message, format!("cannot read flow file x.md: {shown}"));
        assert_eq!(r.message.matches(&shown).count(), 1);
    }

    #[test]
    fn a_multi_line_message_keeps_its_lines() {
        let r = Rendered::from_text(
            "bad regex:\n    (order\n    ^\nerror: unclosed group\n(hint: use Rust syntax)",
        );
        assert_eq!(
            r.message,
            "bad regex:\n    (order\n    ^\nerror: unclosed group"
        );
        assert_eq!(r.hints, ["use Rust syntax"]);
    }

    #[test]
    fn counts_are_pluralised() {
        assert_eq!(count(1, "action"), "1 action");
        assert_eq!(count(0, "action"), "0 actions");
        assert_eq!(count(2, "violation"), "2 violations");
        assert_eq!(count(3, "process"), "3 processes");
        assert_eq!(count(1, "process"), "1 process");
    }

    #[test]
    fn failures_know_their_exit_code() {
        assert_eq!(Failure::from(anyhow::anyhow!("x")).code(), RunExit::CONFIG);
        assert_eq!(Failure::busy(anyhow::anyhow!("x")).code(), RunExit::BUSY);
    }
}
