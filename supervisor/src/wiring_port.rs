//! The supervisor's view of harness wiring (`crate::harness`, issue #3): errors as `anyhow`,
//! unwiring reduced to "did anything change".

use std::path::PathBuf;

use crate::harness::{self, UnwireAction};
pub use crate::harness::{claude_guard_settings_json, Context, HarnessKind, TAG};

/// `claude` / `codex` back to a kind (ACTIVE.json stores names).
pub fn kind_from_name(s: &str) -> Option<HarnessKind> {
    HarnessKind::ALL.into_iter().find(|k| k.name() == s)
}

/// The file `kind` is wired in.
pub fn target_file(kind: HarnessKind, ctx: &Context) -> PathBuf {
    ctx.settings_path(kind)
}

pub fn wire(kind: HarnessKind, ctx: &Context) -> anyhow::Result<harness::WireOutcome> {
    Ok(harness::wire(kind, ctx)?)
}

/// Unwires; `Ok(true)` if a file changed (wiring the user made by hand is kept: `Ok(false)`).
/// Warnings go to `warn`.
pub fn unwire(
    kind: HarnessKind,
    ctx: &Context,
    warn: &mut dyn FnMut(&str),
) -> anyhow::Result<bool> {
    let out = harness::unwire(kind, ctx)?;
    for w in &out.warnings {
        warn(w);
    }
    Ok(matches!(
        out.action,
        UnwireAction::Restored | UnwireAction::RemovedHandlers(_)
    ))
}

/// Commands of the handlers carrying the tag in `kind`'s file.
pub fn wired_handlers(kind: HarnessKind, ctx: &Context) -> anyhow::Result<Vec<String>> {
    Ok(harness::wired_handlers(kind, ctx)?
        .into_iter()
        .map(|h| h.command)
        .collect())
}
