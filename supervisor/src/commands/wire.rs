//! `leopold persona wire` and `leopold persona unwire`: the wiring, by hand.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{UnwireArgs, WireArgs};
use crate::harness::{self, Context, Harness, UnwireAction};

fn context(project: PathBuf, claude_on_failure: bool) -> anyhow::Result<Context> {
    let exe = std::env::current_exe().context("cannot tell where this leopold binary is")?;
    Ok(Context::new(project, &exe, claude_on_failure)?)
}

/// Whether the Claude Code at `bin` (default `claude` on PATH) understands `onFailure`; when it
/// cannot be asked, says so and wires without it (the hook then fails open if it cannot run).
fn detect_on_failure(bin: Option<&Path>) -> bool {
    let bin = bin.unwrap_or(Path::new(Harness::Claude.as_str()));
    match harness::claude_supports_on_failure(bin) {
        Ok(yes) => yes,
        Err(err) => {
            eprintln!(
                "leopold: warning: {err}; wiring without `\"onFailure\": \"block\"` (needs Claude \
                 Code 2.1.295 or later), so a guard that cannot run lets the call through\n\
                 (hint: pass --harness-bin PATH to name the claude executable)"
            );
            false
        }
    }
}

pub fn wire(args: WireArgs) -> anyhow::Result<ExitCode> {
    let kind = args.harness;
    let project = crate::state::resolve_project(args.project.project.as_deref())?;
    let on_failure = kind == Harness::Claude && detect_on_failure(args.harness_bin.as_deref());
    let ctx = context(project, on_failure)?;
    let outcome = harness::wire(kind, &ctx)?;
    let file = outcome.record.file.display();
    if outcome.changed {
        println!("wired the persona guard into {kind}: `{file}`");
    } else {
        println!("the persona guard is already wired into {kind}: `{file}` (unchanged)");
    }
    let on_failure = if on_failure { ", onFailure: block" } else { "" };
    println!(
        "  PreToolUse matcher `{}`: {} (timeout {}s{on_failure})",
        harness::MATCHER,
        ctx.guard_command,
        harness::HOOK_TIMEOUT_SECS
    );
    for w in &outcome.warnings {
        eprintln!("leopold: warning: {w}");
    }
    if kind == Harness::Codex {
        // HARNESS-FACTS §2: untrusted hooks are inert under `codex exec`.
        println!(
            "  note: `codex exec` runs this hook only once you trust it, or with \
             --dangerously-bypass-hook-trust (which `leopold persona run` passes)"
        );
    }
    println!("  undo with: leopold persona unwire --harness {kind}");
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
                let file = outcome.file.display();
                match outcome.action {
                    UnwireAction::NothingWired => {
                        println!("{kind}: nothing wired in `{file}` (unchanged)");
                    }
                    UnwireAction::Restored => {
                        println!("{kind}: restored `{file}` to exactly what it was before wiring");
                    }
                    UnwireAction::RemovedHandlers(n) => {
                        let s = if n == 1 { "" } else { "s" };
                        println!("{kind}: removed {n} persona guard handler{s} from `{file}`");
                    }
                }
                for w in &outcome.warnings {
                    eprintln!("leopold: warning: {w}");
                }
            }
            Err(err) => {
                if kinds.len() > 1 {
                    eprintln!("leopold: error: {kind}: {err:#}");
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
