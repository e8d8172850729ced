//! How a run puts the guard in front of each harness's worker and takes it away again: one
//! dispatch, so that the lifecycle (`commands/run`, `recovery`, `commands/wire`, the observer)
//! names no harness.
//!
//! Claude: boxed, the guard goes in by flag (the run's own `--settings` file); unboxed, into the
//! project's `.claude/settings.json`, the user's file, for the run's duration. Codex: always
//! into the run's own copy of its configuration, a `CODEX_HOME` in the run directory
//! ([`super::run_home`]); the user's file is never wired by a run.

use std::path::{Path, PathBuf};

use super::{claude, codex, run_home, Context, Harness};
use crate::run_dir::RunDir;

/// Whether an unboxed run wires the user's own settings file (Claude's project file).
pub fn wires_the_users_file(kind: Harness) -> bool {
    match kind {
        Harness::Claude => true,
        Harness::Codex => false,
    }
}

/// Whether a run wires a settings file at all: always a Codex run (its copy); a Claude run only
/// unboxed (boxed, the `--settings` flag is its one layer, and no file of the user's is edited).
pub fn wires_a_file(kind: Harness, boxed: bool) -> bool {
    match kind {
        Harness::Claude => !boxed,
        Harness::Codex => true,
    }
}

/// The run's wiring context: Codex's the run's own `CODEX_HOME` and record folder; Claude's the
/// user's.
pub fn run_context(kind: Harness, ctx: &Context, run_dir: &Path) -> Context {
    match kind {
        Harness::Claude => ctx.clone(),
        Harness::Codex => run_home::run_context(ctx, run_dir),
    }
}

/// The run's own settings file carrying the guard, passed to the worker by flag (Claude's
/// `--settings`); none for Codex.
pub fn guard_settings_file(kind: Harness, run_dir: &RunDir) -> Option<PathBuf> {
    match kind {
        Harness::Claude => Some(run_dir.guard_settings()),
        Harness::Codex => None,
    }
}

/// Makes the run's own harness home before it is wired: Codex's `CODEX_HOME` from the user's
/// (`user`), its login linked when unboxed (the box copies it itself, its secrets replaced).
pub fn prepare_home(
    kind: Harness,
    user: &Context,
    run: &Context,
    boxed: bool,
) -> anyhow::Result<()> {
    match kind {
        Harness::Claude => Ok(()),
        Harness::Codex => run_home::prepare_codex_home(&user.codex_home, &run.codex_home, !boxed),
    }
}

/// What an unboxed worker is told of its run's home (the box sets it itself).
pub fn unboxed_env(kind: Harness, run: &Context) -> Vec<(&'static str, PathBuf)> {
    match kind {
        Harness::Claude => Vec::new(),
        Harness::Codex => vec![("CODEX_HOME", run.codex_home.clone())],
    }
}

/// After the run: the run's copy of the user's configuration, and its login entry, go.
pub fn remove_run_home(kind: Harness, run: &Context) {
    if kind == Harness::Codex {
        run_home::remove_codex_copy(&run.codex_home);
    }
}

/// The context in which a crashed run's wiring of `file` is undone: the run's own copy's, or,
/// for a Codex configuration an older version wired in place, that file's folder.
pub fn recovery_context(kind: Harness, ctx: &Context, file: &Path, crashed_dir: &Path) -> Context {
    match kind {
        Harness::Claude => ctx.clone(),
        Harness::Codex if run_home::is_run_copy(file, crashed_dir) => {
            run_home::run_context(ctx, crashed_dir)
        }
        Harness::Codex => {
            let mut c = ctx.clone();
            if let Some(home) = file.parent() {
                c.codex_home = home.to_path_buf();
            }
            c
        }
    }
}

/// Whether a wiring entry is a run's own copy, with nothing of the user's to unwire.
pub fn is_run_copy(kind: Harness, file: &Path, crashed_dir: &Path) -> bool {
    kind == Harness::Codex && run_home::is_run_copy(file, crashed_dir)
}

/// Readies the wiring context for the harness binary a run or `persona wire` uses: Claude's
/// `onFailure: block` only where its version understands it.
pub fn probe_binary(kind: Harness, ctx: &mut Context, bin: &Path) {
    if kind == Harness::Claude {
        claude::probe_on_failure(ctx, bin);
    }
}

/// Leopold's own model catalog for the harness binary, every model's own tools off (Codex's
/// `-c model_catalog_json`); `Err` says why it cannot be made, and the run refuses.
pub fn model_catalog(kind: Harness, bin: &Path) -> Result<Option<String>, String> {
    match kind {
        Harness::Claude => Ok(None),
        Harness::Codex => codex::catalog::catalog_without_tools(bin).map(Some),
    }
}

/// Harness arguments for a flow's provisioned browser, MCP server `server`: Codex starts its
/// first turn without an MCP server that is still starting (seen: Playwright MCP's tools were
/// missing from the first requests, so the model's browser calls were "unsupported");
/// `required = true` makes it wait.
pub fn browser_args(kind: Harness, server: &str) -> Vec<String> {
    match kind {
        Harness::Claude => Vec::new(),
        Harness::Codex => vec!["-c".into(), format!("mcp_servers.{server}.required=true")],
    }
}

/// Whether the guard's denials show only in its events: Codex's stream has no item for a call
/// its hook denied (docs/harness-facts.md#5-headless-worker-invocations), so the observer reads the events file too.
pub fn denials_only_in_events(kind: Harness) -> bool {
    kind == Harness::Codex
}

/// `persona wire`'s `onFailure: block`: Claude's where its version understands it (a named
/// binary that cannot tell refuses; one that cannot be found is a warning, returned); never
/// Codex's, which has no such key.
pub fn on_failure_for_wire(
    kind: Harness,
    bin: Option<&Path>,
) -> anyhow::Result<(bool, Option<String>)> {
    match kind {
        Harness::Claude => claude::on_failure_for_wire(bin),
        Harness::Codex => Ok((false, None)),
    }
}

/// What `persona wire` adds of the harness: when its hooks are in force.
pub fn wire_note(kind: Harness) -> Option<&'static str> {
    match kind {
        Harness::Claude => None,
        // docs/harness-facts.md#2-when-hooks-are-not-in-force: untrusted hooks are inert under
        // `codex exec`.
        Harness::Codex => Some(
            "  note: `codex exec` runs this hook only once you trust it, or with \
             --dangerously-bypass-hook-trust (which `leopold persona run` passes)",
        ),
    }
}

/// The harness's name for `--help`.
pub fn describe(kind: Harness) -> &'static str {
    match kind {
        Harness::Claude => "Claude Code (`claude`)",
        Harness::Codex => "OpenAI Codex CLI (`codex`)",
    }
}

/// The name `persona replay --from` knows the harness's raw stream by, and what it is.
pub fn stream_format(kind: Harness) -> (&'static str, &'static str) {
    match kind {
        Harness::Claude => (
            "claude-stream",
            "Claude Code `-p --output-format stream-json --verbose`",
        ),
        Harness::Codex => ("codex-json", "Codex CLI `exec --json`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_waits_for_the_browser_server() {
        assert_eq!(
            browser_args(Harness::Codex, "browser"),
            ["-c", "mcp_servers.browser.required=true"]
        );
        assert!(browser_args(Harness::Claude, "browser").is_empty());
    }
}
