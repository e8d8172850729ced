//! How Codex CLI is launched headless (docs/harness-facts.md#5-headless-worker-invocations):
//! `exec --json`, the switches and the model catalog that leave it only the browser, the flow's
//! MCP servers as `-c` overrides, and the arguments after `--` that would undo any of them.

use crate::harness::WorkerSpec;
use crate::mcp::{McpServer, McpTransport};

/// Codex's switches that leave the worker the browser
/// (docs/harness-facts.md#9-what-the-worker-can-do-besides-the-browser;
/// docs/reference.md#what-a-run-does, step 6): its own sandbox on, read-only and without network
/// (`-s read-only`), never asking (`approval_policy="never"`: `exec` has nobody to ask), and
/// every tool that has a switch off.
/// Codex ignores an unknown `features.*` key silently, so a renamed feature would come back:
/// the end-to-end test `only_browser` pins the exact tool list the model is offered. The tools
/// a catalog model brings (`tool_search`, `apply_patch`, code mode, sub-agents) have no switch
/// here: Leopold's own catalog takes them off ([`crate::harness::codex_catalog`]).
pub const CODEX_ONLY_THE_BROWSER: &[(&str, &str)] = &[
    ("-s", "read-only"),
    ("-c", "approval_policy=\"never\""),
    // `exec_command` / `write_stdin` (the shell) and the older `shell` tool.
    ("-c", "features.shell_tool=false"),
    ("-c", "features.unified_exec=false"),
    // The hosted `web_search`.
    ("-c", "web_search=\"disabled\""),
    // `multi_agent_v1` (spawn_agent, send_input, …): sub-agents.
    ("-c", "features.multi_agent=false"),
    // `get_goal`, `create_goal`, `update_goal`.
    ("-c", "features.goals=false"),
    // `view_image`: reads any image file by path.
    ("-c", "features.view_image=false"),
    // `request_user_input` (nobody answers in `exec`).
    ("-c", "tools.experimental_request_user_input.enabled=false"),
    // Not offered in a headless run against an API key today, but each adds tools where it
    // applies (a ChatGPT login's connectors, plugins, image generation, computer and browser
    // use, plugin suggestions, skill search, the sleep tool): off, so that a login or a
    // release that turns one on adds nothing.
    ("-c", "features.apps=false"),
    ("-c", "features.plugins=false"),
    ("-c", "features.image_generation=false"),
    ("-c", "features.browser_use=false"),
    ("-c", "features.computer_use=false"),
    ("-c", "features.in_app_browser=false"),
    ("-c", "features.tool_suggest=false"),
    ("-c", "features.skill_search=false"),
    ("-c", "features.sleep_tool=false"),
];

/// Codex's argument vector (without the program).
pub fn args(spec: &WorkerSpec<'_>) -> Vec<String> {
    let mut a: Vec<String> = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-hook-trust",
    ]
    .map(str::to_owned)
    .to_vec();
    for (flag, value) in CODEX_ONLY_THE_BROWSER {
        a.push((*flag).to_owned());
        a.push((*value).to_owned());
    }
    if let Some(catalog) = spec.codex_catalog {
        a.push("-c".into());
        a.push(format!(
            "model_catalog_json={}",
            toml_edit::Value::from(catalog.display().to_string())
                .to_string()
                .trim()
        ));
    }
    a.push("-C".into());
    a.push(spec.project.display().to_string());
    // `-s read-only` with `approval_policy="never"` would cancel every MCP call; each server of
    // the flow is approved by name, and no other server exists.
    for s in &spec.mcp_servers {
        a.push("-c".into());
        a.push(format!(
            "mcp_servers.{}.default_tools_approval_mode=\"approve\"",
            s.name
        ));
    }
    for s in &spec.mcp_servers {
        for (key, value) in mcp_overrides(s) {
            a.push("-c".into());
            a.push(format!("mcp_servers.{}.{key}={value}", s.name));
        }
    }
    a.extend(spec.extra.iter().cloned());
    a.push(spec.prompt.clone());
    a
}

/// Why an extra argument is refused: it would override Codex's hooks, sandbox, approvals, tools
/// or MCP servers, or the flags Leopold sets. `arg` is the argument whole, `flag` up to its `=`,
/// `value` its value (inline or the next argument).
pub fn refusal(arg: &str, flag: &str, value: impl Fn() -> Option<String>) -> Option<String> {
    let config_value = match flag {
        "-c" | "--config" => value(),
        _ if arg.starts_with("-c") && arg.len() > 2 => Some(arg[2..].to_owned()),
        _ => None,
    };
    if let Some(kv) = config_value {
        let key = kv.split('=').next().unwrap_or("").trim();
        let key_l = key.to_ascii_lowercase();
        if key_l == "hooks"
            || key_l.starts_with("hooks.")
            || key_l.contains("features.hooks")
            || key_l.contains("features.codex_hooks")
            || (key_l == "features" && kv.contains("hooks"))
        {
            return Some(format!(
                "`-c {key}=…` overrides Codex hook settings: the guard could be switched off"
            ));
        }
        if key_l == "model" {
            return Some(
                "`-c model=…` after `--`: give Leopold's `--model` before `--` instead (Leopold records it and passes it on)".into(),
            );
        }
        if key_widens(&key_l) {
            return Some(format!(
                "`-c {key}=…` overrides Codex's sandbox, approvals, tools or MCP servers: Leopold sets them so that the worker has the browser and nothing else"
            ));
        }
    }
    match flag {
        "--disable" => {
            let v = value().unwrap_or_default();
            v.contains("hook")
                .then(|| format!("`{flag} {v}` toggles Codex hooks"))
        }
        "--enable" => {
            let v = value().unwrap_or_default();
            Some(format!(
                "`--enable {v}`: a Codex feature switched on can add a tool besides the browser"
            ))
        }
        "--dangerously-bypass-approvals-and-sandbox" | "--yolo" | "--full-auto" | "-s"
        | "--sandbox" | "-a" | "--ask-for-approval" | "--add-dir" | "-p" | "--profile"
        | "--search" => Some(format!(
            "`{flag}` would change Codex's sandbox, approvals or tools: Leopold runs it with `-s read-only`, `approval_policy=\"never\"` and only the browser"
        )),
        "-m" | "--model" => Some(format!(
            "`{flag}` after `--`: give Leopold's `--model` before `--` instead (Leopold records it and passes it on)"
        )),
        "--json" | "--skip-git-repo-check" | "--dangerously-bypass-hook-trust" | "-C" | "--cd" => {
            Some(format!("`{flag}` is set by Leopold"))
        }
        _ => None,
    }
}

/// A `-c` key (lower-cased) that reaches what [`CODEX_ONLY_THE_BROWSER`] sets, or the MCP servers.
fn key_widens(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "sandbox_mode",
        "approval_policy",
        "approvals_reviewer",
        "web_search",
        "profile",
        "default_permissions",
        // A model catalog decides tools too (code mode, apply_patch, sub-agents:
        // docs/security.md#only-the-browser).
        "model_catalog_json",
    ];
    const TABLES: &[&str] = &[
        "features",
        "tools",
        "mcp_servers",
        "profiles",
        "sandbox_workspace_write",
        "permissions",
        "shell_environment_policy",
    ];
    EXACT.contains(&key)
        || TABLES
            .iter()
            .any(|t| key == *t || key.strip_prefix(t).is_some_and(|r| r.starts_with('.')))
}

/// The `-c` overrides that give Codex one MCP server without touching any user file; values are
/// TOML literals.
fn mcp_overrides(s: &McpServer) -> Vec<(&'static str, String)> {
    let lit = |v: &str| toml_edit::Value::from(v).to_string().trim().to_owned();
    match &s.transport {
        McpTransport::Stdio { command, args, env } => {
            let mut out = vec![("command", lit(command))];
            let arr: toml_edit::Array = args.iter().map(String::as_str).collect();
            out.push((
                "args",
                toml_edit::Value::Array(arr).to_string().trim().to_owned(),
            ));
            if !env.is_empty() {
                let mut t = toml_edit::InlineTable::new();
                for (k, v) in env {
                    t.insert(k, v.as_str().into());
                }
                out.push((
                    "env",
                    toml_edit::Value::InlineTable(t)
                        .to_string()
                        .trim()
                        .to_owned(),
                ));
            }
            out
        }
        McpTransport::Http { url } => vec![("url", lit(url))],
    }
}
