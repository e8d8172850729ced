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

/// A key the harness would send, for `doctor --online`. Never printed: its `Debug` names it.
pub struct Key {
    /// Where it comes from (`ANTHROPIC_API_KEY`, `auth.json`): said in the findings.
    pub name: String,
    /// The model endpoint's base URL, as the harness is given it.
    pub base: String,
    /// The path of its model list under the base URL, which the probe asks for.
    pub models_path: String,
    /// The request's headers: the credential's, and the API's own.
    pub headers: Vec<(&'static str, String)>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("name", &self.name).finish()
    }
}

/// Whether the harness has credentials (a key variable, its login file): the finding, never
/// showing a value, and the key `--online` can try. `installed`: the harness is on PATH (its
/// missing credentials are then a problem, else a note).
pub fn credentials(kind: Harness, ctx: &Context, installed: bool) -> (Finding, Option<Key>) {
    let (found, key) = match kind {
        Harness::Claude => claude::doctor::credentials(),
        Harness::Codex => codex::doctor::credentials(ctx),
    };
    let f = match found {
        Some(msg) => finding(kind.as_str(), "credentials", Status::Ok, msg, None),
        None => finding(
            kind.as_str(),
            "credentials",
            if installed {
                Status::Problem
            } else {
                Status::Note
            },
            format!("no credentials for {kind}: a run would stop at once as model_failed (exit 3)"),
            Some(crate::harness::model_advice(kind, &ctx.codex_home).credentials),
        ),
    };
    (f, key)
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
