//! `leopold persona wire` and `leopold persona unwire`: the wiring, by hand.
//!
//! Wiring made here is recorded as the user's (`by_hand`): `doctor` reports it as a note rather
//! than an orphan, and neither a run's teardown nor `persona recover` removes it; `persona
//! unwire` does.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{UnwireArgs, WireArgs};
use crate::harness::{self, Context, UnwireAction};
use crate::output::{self, outln};
use crate::project::shown;

fn context(project: PathBuf, claude_on_failure: bool) -> anyhow::Result<Context> {
    let exe = std::env::current_exe().context("cannot tell where this leopold binary is")?;
    let mut ctx = Context::new(project, &exe, claude_on_failure)?;
    ctx.by_hand = true;
    Ok(ctx)
}

pub fn wire(args: WireArgs) -> anyhow::Result<ExitCode> {
    let kind = args.harness;
    let project = crate::state::resolve_project(args.project.project.as_deref())?;
    let (on_failure, warning) = harness::on_failure_for_wire(kind, args.harness_bin.as_deref())?;
    if let Some(w) = warning {
        output::warn(&w);
    }
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
    if let Some(note) = harness::wire_note(kind) {
        outln!("{note}");
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
    for &kind in &kinds {
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
