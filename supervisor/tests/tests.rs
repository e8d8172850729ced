//! The supervisor's integration tests, one binary. The kit is `leopold-tests`' (see `kit`).

/// The command line as a new user meets it: closed stdout, exit codes and JSON errors, hints,
/// the project from a subfolder, `flow check`, `completions`.
mod cli_ux;
/// `leopold persona guard` as a process: exit codes, output, events.
mod guard_process;
/// The one kit: `leopold-tests`' sandbox and helpers with this package's `leopold`.
mod kit;
/// `persona run`, `recover` and `doctor` end to end with the fake worker.
mod lifecycle;
/// `leopold persona replay` on the golden journals and the harness captures.
mod replay_cli;
/// `report.html`, `persona report`, `persona runs`, `--junit`.
mod report;
/// `persona report --merge`: shards of a suite merged as one folder of their runs.
mod suite;
/// `leopold persona wire` / `unwire`, and the wired command as a harness runs it.
mod wiring_cli;
