//! `leopold persona wire` and `leopold persona unwire`: the wiring, by hand.
//!
//! Wiring made here is recorded as the user's (`by_hand`): `doctor` reports it as a note rather
//! than an orphan, and neither a run's teardown nor `persona recover` removes it; `persona
//! unwire` does.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{UnwireArgs, WireArgs};
use crate::harness::{self, Context, Harness, UnwireAction};
use crate::os::Lookup;
use crate::output::{self, outln};
use crate::project::shown;

fn context(project: PathBuf, claude_on_failure: bool) -> anyhow::Result<Context> {
    let exe = std::env::current_exe().context("cannot tell where this leopold binary is")?;
    let mut ctx = Context::new(project, &exe, claude_on_failure)?;
    ctx.by_hand = true;
    Ok(ctx)
}

/// Whether the Claude Code at `bin` understands `onFailure`.
///
/// A `--harness-bin` that cannot be asked is an error: the user named it, and wiring without
/// `onFailure` would quietly let calls through when the guard cannot run. Without one, `claude`
/// missing from PATH is a warning, and the hook is wired without `onFailure`.
fn detect_on_failure(bin: Option<&Path>) -> anyhow::Result<bool> {
    if let Some(named) = bin {
        let found = crate::os::harness_executable(named, true)?;
        return harness::claude_supports_on_failure(&found).map_err(|e| {
            anyhow::anyhow!(
                "{e}; nothing was wired\n(hint: --harness-bin must name a Claude Code that answers `--version`; leave it out to wire without `\"onFailure\": \"block\"`)"
            )
        });
    }
    let missing = match crate::os::executable(Path::new(Harness::Claude.as_str())) {
        Lookup::Found(found) => match harness::claude_supports_on_failure(&found) {
            Ok(yes) => return Ok(yes),
            Err(e) => e.to_string(),
        },
        _ => "`claude` is not on PATH".to_owned(),
    };
    output::warn(&format!(
        "{missing}; wiring without `\"onFailure\": \"block\"` (needs Claude Code 2.1.295 or later), so a guard that cannot run lets the call through\n(hint: pass --harness-bin PATH to name the claude executable)"
    ));
    Ok(false)
}

pub fn wire(args: WireArgs) -> anyhow::Result<ExitCode> {
    let kind = args.harness;
    let project = crate::state::resolve_project(args.project.project.as_deref())?;
    let on_failure = match kind {
        Harness::Claude => detect_on_failure(args.harness_bin.as_deref())?,
        Harness::Codex => false,
    };
    let ctx = context(project, on_failure)?;
    let outcome = harness::wire(kind, &ctx)?;
    let file = shown(&outcome.record.file);
    if outcome.changed {
        outln!("wired the persona guard into {kind}: `{file}`");
    } else {
        outln!("the persona guard is already wired into {kind}: `{file}` (unchanged)");
    }
    let on_failure = if on_failure { ", onFailure: block" } else { "" };
    outln!(
        "  PreToolUse matcher `{}`: {} (timeout {}s{on_failure})",
        harness::MATCHER,
        ctx.guard_command,
        harness::HOOK_TIMEOUT_SECS
    );
    for w in &outcome.warnings {
        output::warn(w);
    }
    if kind == Harness::Codex {
        // docs/harness-facts.md#2-when-hooks-are-not-in-force: untrusted hooks are inert under
        // `codex exec`.
        outln!(
            "  note: `codex exec` runs this hook only once you trust it, or with \
             --dangerously-bypass-hook-trust (which `leopold persona run` passes)"
        );
    }
    outln!(
        "  note: the guard judges only while a persona run is active; runs and `persona recover` leave this wiring in place"
    );
    outln!("  undo with: leopold persona unwire --harness {kind}");
    Ok(ExitCode::SUCCESS)
}

pub fn unwire(args: UnwireArgs) -> anyhow::Result<ExitCode> {
    let kinds = args.harness.harnesses();
    let project = crate::state::resolve_project(args.project.project.as_deref())?;
    let ctx = context(project, false)?;
    let mut first_error = None;
    for &kind in kinds {
        match harness::unwire(kind, &ctx) {
            Ok(outcome) => {
                let file = shown(&outcome.file);
                match outcome.action {
                    UnwireAction::NothingWired | UnwireAction::KeptByHand => {
                        outln!("{kind}: nothing wired in `{file}` (unchanged)");
                    }
                    UnwireAction::Restored => {
                        outln!("{kind}: restored `{file}` to exactly what it was before wiring");
                    }
                    UnwireAction::RemovedHandlers(n) => {
                        outln!(
                            "{kind}: removed {} from `{file}`",
                            output::count(n as u64, "persona guard handler")
                        );
                    }
                }
                for w in &outcome.warnings {
                    output::warn(w);
                }
            }
            Err(err) => {
                if kinds.len() > 1 {
                    output::error_text(
                        &format!("{kind}: {err}"),
                        crate::exit::RunExit::CONFIG,
                        false,
                    );
                }
                first_error.get_or_insert(err);
            }
        }
    }
    match first_error {
        Some(err) if kinds.len() == 1 => Err(err.into()),
        Some(_) => anyhow::bail!("unwiring failed for at least one harness (see above)"),
        None => Ok(ExitCode::SUCCESS),
    }
}
