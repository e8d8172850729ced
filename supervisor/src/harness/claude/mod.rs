//! Claude Code's wing: its settings file and the guard's place in it ([`settings`]), and what
//! its worker needs in the box ([`boxing`]).

mod boxing;
pub(in crate::harness) mod doctor;
pub(in crate::harness) mod launch;
mod settings;

pub use boxing::{advice, box_needs};
pub(in crate::harness) use settings::{add, group, list, strip, validation_warnings};

use std::path::Path;

use crate::os::Lookup;

/// A run's `onFailure: block` only where this Claude Code understands it (2.1.295+); when the
/// version cannot be told (the probe failed or timed out), kept: older releases tolerate
/// unknown keys in a handler.
pub fn probe_on_failure(ctx: &mut super::Context, bin: &Path) {
    let _probe = tracing::info_span!("version_probe").entered();
    ctx.claude_on_failure = match super::claude_supports_on_failure(bin) {
        Ok(yes) => {
            tracing::debug!(on_failure = yes, "{} --version answered", bin.display());
            yes
        }
        Err(e) => {
            tracing::warn!("{e}; keeping `onFailure: block`");
            true
        }
    };
}

/// Whether the Claude Code at `bin` understands `onFailure`.
///
/// A `--harness-bin` that cannot be asked is an error: the user named it, and wiring without
/// `onFailure` would quietly let calls through when the guard cannot run. Without one, `claude`
/// missing from PATH is a warning (returned, for the caller to print), and the hook is wired
/// without `onFailure`.
pub fn on_failure_for_wire(bin: Option<&Path>) -> anyhow::Result<(bool, Option<String>)> {
    if let Some(named) = bin {
        let found = crate::os::harness_executable(named, true)?;
        return crate::harness::claude_supports_on_failure(&found)
            .map(|yes| (yes, None))
            .map_err(|e| {
            anyhow::anyhow!(
                "{e}; nothing was wired\n(hint: --harness-bin must name a Claude Code that answers `--version`; leave it out to wire without `\"onFailure\": \"block\"`)"
            )
        });
    }
    let missing = match crate::os::executable(Path::new("claude")) {
        Lookup::Found(found) => match crate::harness::claude_supports_on_failure(&found) {
            Ok(yes) => return Ok((yes, None)),
            Err(e) => e.to_string(),
        },
        _ => "`claude` is not on PATH".to_owned(),
    };
    Ok((false, Some(format!(
        "{missing}; wiring without `\"onFailure\": \"block\"` (needs Claude Code 2.1.295 or later), so a guard that cannot run lets the call through\n(hint: pass --harness-bin PATH to name the claude executable)"
    ))))
}
