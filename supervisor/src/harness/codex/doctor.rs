//! What `leopold doctor` says of Codex CLI: how `persona run` runs it, and whether its
//! configuration parses with hooks on.

use crate::harness::finding::{finding, Finding, Status};
use crate::harness::Context;
use crate::project::shown;

/// Codex's own checks.
pub fn checks(ctx: &Context) -> Vec<Finding> {
    let scope = "codex";
    let mut out = Vec::new();
    out.push(finding(
            scope,
            "exec_flags",
            Status::Note,
            "`codex exec` runs hooks only with --dangerously-bypass-hook-trust, which `persona run` passes, with Codex's own sandbox on (-s read-only), no shell, no web search, no sub-agents, and the flow's MCP servers approved by name. On Codex a guard that cannot run fails open: the supervisor's journal is the bound".into(),
            None,
        ));
    let cfg = ctx.codex_home.join("config.toml");
    if let Ok(text) = std::fs::read_to_string(&cfg) {
        match text.parse::<toml_edit::DocumentMut>() {
            Ok(doc) => {
                let hooks_off = doc
                    .get("features")
                    .and_then(|t| t.get("codex_hooks").or_else(|| t.get("hooks")))
                    .and_then(|v| v.as_bool())
                    == Some(false);
                if hooks_off {
                    out.push(finding(
                        scope,
                        "config",
                        Status::Problem,
                        format!("{}: hooks are switched off under [features]", shown(&cfg)),
                        Some(format!(
                            "remove the hooks feature toggle from {}",
                            shown(&cfg)
                        )),
                    ));
                } else {
                    out.push(finding(
                        scope,
                        "config",
                        Status::Ok,
                        format!("{} parses", shown(&cfg)),
                        None,
                    ));
                }
            }
            Err(e) => out.push(finding(
                scope,
                "config",
                Status::Problem,
                format!(
                    "{} is not valid TOML: {}",
                    shown(&cfg),
                    e.to_string().lines().next().unwrap_or("")
                ),
                Some(format!("correct {}", shown(&cfg))),
            )),
        }
    }
    out
}
