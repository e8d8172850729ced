//! The supervisor's test kit: `leopold-tests`' [`Sandbox`] and helpers (the one kit of the
//! workspace), driving this package's own `leopold` binary, the one cargo built for these tests.

use std::process::{Child, Command, Output};

pub use leopold_tests::fake_run::*;
pub use leopold_tests::{capture, Sandbox};

/// This package's `leopold` binary.
pub const LEOPOLD: &str = env!("CARGO_BIN_EXE_leopold");

fn leopold_bin() -> &'static std::path::Path {
    if !cfg!(feature = "test-knobs") {
        panic!(
            "these tests set the `__LEOPOLD_*` test knobs, which only a build with the \
             `test-knobs` feature reads: run ./scripts/test.sh, or add `--features leopold/test-knobs`"
        );
    }
    std::path::Path::new(LEOPOLD)
}

/// The kit's `leopold` commands with [`LEOPOLD`] as the binary.
pub trait Leopold {
    /// `leopold <args>` in the sandbox (sealed HOME/CODEX_HOME, the fake worker's script).
    fn leopold(&self, args: &[&str]) -> Command;
    /// `leopold persona run` of the sandbox's flow with the fake worker as `harness`.
    fn run_cmd(&self, harness: &str, extra: &[&str]) -> Command;
    /// `persona run` paused at `step`, once the supervisor has reached it.
    fn spawn_paused(&self, harness: &str, step: &str) -> Child;
    /// `leopold persona recover` of the sandbox's project.
    fn recover(&self) -> Output;
}

impl Leopold for Sandbox {
    fn leopold(&self, args: &[&str]) -> Command {
        self.leopold_command(leopold_bin(), args)
    }
    fn run_cmd(&self, harness: &str, extra: &[&str]) -> Command {
        self.persona_run_command(leopold_bin(), harness, extra)
    }
    fn spawn_paused(&self, harness: &str, step: &str) -> Child {
        self.spawn_paused_run(leopold_bin(), harness, step)
    }
    fn recover(&self) -> Output {
        self.run_recover(leopold_bin())
    }
}
