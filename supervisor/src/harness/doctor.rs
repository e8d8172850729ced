//! What `leopold doctor` reports of a harness: the finding's shape, and the one dispatch to
//! each wing's checks and wording.

use std::path::Path;

use super::{claude, codex, Context, Harness};
use crate::project::shown;

pub use super::finding::{finding, Finding, Status};

/// The harness's own checks (its configuration, what its version honours); `version` its
/// `--version` line.
pub fn checks(kind: Harness, ctx: &Context, project: &Path, version: Option<&str>) -> Vec<Finding> {
    match kind {
        Harness::Claude => claude::doctor::checks(ctx, project, version),
        Harness::Codex => codex::doctor::checks(ctx),
    }
}

/// What an unwired settings file means for this harness's runs.
pub fn not_wired_note(kind: Harness, target: &Path) -> String {
    match kind {
        Harness::Claude => format!(
            "guard not wired in {} (a `--no-contain` persona run wires it for its duration; a boxed run passes the guard with `--settings` and leaves this file alone)",
            shown(target)
        ),
        Harness::Codex => format!(
            "guard not wired in {} (a persona run wires its own copy, in its run directory, and never this file)",
            shown(target)
        ),
    }
}

/// How a wired guard behaves when it cannot run, as `persona wire` said it: `current` whether
/// every handler is as this leopold writes it now.
pub fn wired_how(kind: Harness, current: bool) -> &'static str {
    match (kind, current) {
        (Harness::Claude, true) => ", onFailure block",
        (Harness::Claude, false) => {
            ", without onFailure block or for another leopold binary: a guard that cannot run lets the call through"
        }
        (Harness::Codex, _) => "; fails open if it cannot run",
    }
}
