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

/// Codex's credentials: its model provider's `env_key` (a provider of the configuration's
/// own), else its key variables, else its login file (`$CODEX_HOME/auth.json`: a key, or a
/// ChatGPT login's tokens). What is set, said by name only, and the key `--online` can try.
pub fn credentials(ctx: &Context) -> (Option<String>, Option<crate::harness::doctor::Key>) {
    let doc: Option<toml_edit::DocumentMut> =
        std::fs::read_to_string(ctx.codex_home.join("config.toml"))
            .ok()
            .and_then(|t| t.parse().ok());
    let provider = doc
        .as_ref()
        .and_then(|d| d.get("model_provider"))
        .and_then(|v| v.as_str())
        .filter(|p| *p != "openai");
    let table = provider.and_then(|p| doc.as_ref()?.get("model_providers")?.get(p));
    let field = |k: &str| {
        table
            .and_then(|t| t.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let base = match provider {
        Some(_) => field("base_url").unwrap_or_default(),
        None => std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "https://api.openai.com/v1".into()),
    };
    let key = |name: String, value: String| crate::harness::doctor::Key {
        name,
        base: base.clone(),
        models_path: "/models".into(),
        headers: vec![("authorization", format!("Bearer {value}"))],
    };
    let set = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let vars: Vec<String> = match (provider, field("env_key")) {
        (Some(_), Some(k)) => vec![k],
        _ => vec!["OPENAI_API_KEY".into(), "CODEX_API_KEY".into()],
    };
    for name in vars {
        if let Some(v) = set(&name) {
            return (Some(format!("{name} is set")), Some(key(name, v)));
        }
    }
    if provider.is_some() && field("env_key").is_some() {
        return (None, None);
    }
    let file = ctx.codex_home.join("auth.json");
    let auth: Option<serde_json::Value> = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let text = |ptr: &str| {
        auth.as_ref()
            .and_then(|a| a.pointer(ptr))
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    if let Some(v) = text("/OPENAI_API_KEY") {
        return (
            Some(format!("a key in {}", shown(&file))),
            Some(key("auth.json".into(), v)),
        );
    }
    if text("/tokens/access_token").is_some() {
        return (Some(format!("logged in ({})", shown(&file))), None);
    }
    (None, None)
}
