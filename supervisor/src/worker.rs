//! The worker's command line (HARNESS-FACTS §5): headless flags, the MCP servers, the prompt built
//! from the flow, and the refusal of extra arguments that would switch the guard off.

use std::path::{Path, PathBuf};
use std::process::Command;

use leopold_flows::Flow;

use crate::harness::Harness;
use crate::mcp::{McpServer, McpTransport};

/// Extra arguments that would switch hooks off (HARNESS-FACTS §2), give the worker a tool besides
/// the browser again (§9: the switches of [`CLAUDE_ONLY_THE_BROWSER`] and
/// [`CODEX_ONLY_THE_BROWSER`]), or break the event stream the supervisor reads. `Err` names the
/// argument and why.
pub fn check_extra_args(kind: Harness, extra: &[String]) -> Result<(), String> {
    let mut i = 0;
    while i < extra.len() {
        let arg = extra[i].as_str();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg, None),
        };
        let next = || {
            inline
                .map(str::to_owned)
                .or_else(|| extra.get(i + 1).cloned())
        };
        match kind {
            Harness::Claude => match flag {
                "--bare" | "--safe-mode" => {
                    return Err(format!("`{flag}` makes Claude Code skip hooks: the guard would not run"))
                }
                "--settings" => {
                    // Claude keeps one `--settings`: a second could replace the guard's, which
                    // in the box is the guard's only layer.
                    // Inline settings may carry a URL (an `apiKeyHelper` command): hosts only.
                    let v = crate::redact::strip_urls(&next().unwrap_or_default());
                    return Err(format!(
                        "`--settings {v}`: Leopold passes its own `--settings` file, which carries the guard, and Claude Code keeps only one: the guard could be replaced"
                    ));
                }
                "--setting-sources" => {
                    return Err("`--setting-sources` changes which settings (and hooks) load; Leopold passes `--setting-sources project` and the guard itself".into())
                }
                "--tools" | "--allowedTools" | "--allowed-tools" | "--add-dir"
                | "--permission-mode" | "--dangerously-skip-permissions"
                | "--allow-dangerously-skip-permissions" | "--permission-prompt-tool"
                | "--plugin-dir" | "--chrome" | "--ide" | "--agents" => {
                    return Err(format!(
                        "`{flag}` would give the worker tools or permissions besides the browser: Leopold passes `--tools \"\"`, `--permission-mode default` and allows only the flow's MCP servers"
                    ))
                }
                "-p" | "--print" | "--output-format" | "--input-format" | "--mcp-config"
                | "--strict-mcp-config" => {
                    return Err(format!("`{flag}` is set by Leopold (use `--mcp-config` before `--`)"))
                }
                _ => {}
            },
            Harness::Codex => {
                let config_value = match flag {
                    "-c" | "--config" => next(),
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
                        return Err(format!(
                            "`-c {key}=…` overrides Codex hook settings: the guard could be switched off"
                        ));
                    }
                    if codex_key_widens(&key_l) {
                        return Err(format!(
                            "`-c {key}=…` overrides Codex's sandbox, approvals, tools or MCP servers: Leopold sets them so that the worker has the browser and nothing else"
                        ));
                    }
                }
                match flag {
                    "--disable" => {
                        let v = next().unwrap_or_default();
                        if v.contains("hook") {
                            return Err(format!("`{flag} {v}` toggles Codex hooks"));
                        }
                    }
                    "--enable" => {
                        let v = next().unwrap_or_default();
                        return Err(format!(
                            "`--enable {v}`: a Codex feature switched on can add a tool besides the browser"
                        ));
                    }
                    "--dangerously-bypass-approvals-and-sandbox" | "--yolo" | "--full-auto"
                    | "-s" | "--sandbox" | "-a" | "--ask-for-approval" | "--add-dir" | "-p"
                    | "--profile" | "--search" => {
                        return Err(format!(
                            "`{flag}` would change Codex's sandbox, approvals or tools: Leopold runs it with `-s read-only`, `approval_policy=\"never\"` and only the browser"
                        ))
                    }
                    "--json" | "--skip-git-repo-check" | "--dangerously-bypass-hook-trust" | "-C"
                    | "--cd" => return Err(format!("`{flag}` is set by Leopold")),
                    _ => {}
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// A `-c` key (lower-cased) that reaches what [`CODEX_ONLY_THE_BROWSER`] sets, or the MCP servers.
fn codex_key_widens(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "sandbox_mode",
        "approval_policy",
        "approvals_reviewer",
        "web_search",
        "profile",
        "default_permissions",
        // A model catalog decides tools too (code mode, apply_patch, sub-agents: README "Only
        // the browser").
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

/// The persona's prompt: brief, start URL, allowlist, irreversibility rules, and what to do at a
/// wall.
pub fn build_prompt(flow: &Flow) -> String {
    let mut p = String::new();
    p.push_str(&format!(
        "You are a persona walking the flow `{}` on a staging web app, using only the browser tools you were given.\n\n",
        flow.name
    ));
    p.push_str("## Your brief\n\n");
    p.push_str(flow.brief.trim());
    p.push_str("\n\n## Rules Leopold enforces\n\n");
    if let Some(start) = &flow.start_url {
        p.push_str(&format!("- Start at {start}\n"));
    }
    let hosts: Vec<String> = flow.allowlist.iter().map(|e| e.to_string()).collect();
    p.push_str(&format!(
        "- Only these hosts (and their subdomains) may be visited: {}. Anything else is refused.\n",
        hosts.join(", ")
    ));
    let irr = &flow.irreversible;
    let mut rules = Vec::new();
    for set in &irr.forbid {
        rules.push(format!("any {} action", set.name()));
    }
    for re in &irr.click_labels {
        // Every way the browser tool catalogue says a call activates an element is judged.
        rules.push(format!(
            "clicking, ticking, choosing, dragging or submitting anything labelled like /{}/",
            re.as_str()
        ));
    }
    for path in &irr.url_paths {
        rules.push(format!("visiting or submitting to a path starting {path}"));
    }
    for re in &irr.tools {
        rules.push(format!("calling tools matching /{}/", re.as_str()));
    }
    if !rules.is_empty() {
        p.push_str(&format!(
            "- Irreversible, never do: {}. Doing one stops the run.\n",
            rules.join("; ")
        ));
    }
    if flow.has_label_rules() {
        p.push_str(
            "- Act on elements by the refs of the latest page snapshot. On a page showing an irreversible element, keys other than Tab and Escape are refused (Leopold cannot tell which element has focus), and a dialog can be accepted only once its message was shown.\n",
        );
    }
    p.push_str(
        "- When a step is refused (by Leopold's guard or by the browser), do not retry it or work around it: note the wall as a finding and go on.\n\nFinish with a short report of your findings.\n",
    );
    p
}

/// Claude's switches that leave the worker the browser and nothing else (README "Running a
/// persona", HARNESS-FACTS §9): no built-in tool at all (`--tools ""`: Bash, Read, Write, Edit,
/// WebFetch, WebSearch, Agent, … are not offered, whatever a permission rule says); only the
/// project's settings and the `--settings` file load (`--setting-sources project`: a user's
/// `~/.claude/settings.json` allowing Bash or setting a `defaultMode` is not read); and the
/// permission mode is the default one whatever a settings file says (`--permission-mode
/// default`: a project's `defaultMode` such as `acceptEdits` or `bypassPermissions` does not
/// apply). The MCP servers are then allowed by name (`--allowedTools mcp__<server>`).
pub const CLAUDE_ONLY_THE_BROWSER: [&str; 6] = [
    "--setting-sources",
    "project",
    "--permission-mode",
    "default",
    "--tools",
    "",
];

/// Claude's environment that offers the browser's tools directly: without
/// `ENABLE_TOOL_SEARCH=false`, Claude Code 2.1.332 keeps deferred tool loading on and offers the
/// model a `DeferredToolPlaceholder` tool (`defer_loading`) beside them, whatever `--model`
/// (seen with `sonnet`, `haiku`, `opus`; README "Only the browser"). Set over the user's own
/// value, boxed or not.
pub const CLAUDE_ONLY_THE_BROWSER_ENV: &[(&str, &str)] = &[("ENABLE_TOOL_SEARCH", "false")];

/// The variables that switch a harness's tools off ([`CLAUDE_ONLY_THE_BROWSER_ENV`]).
pub fn only_the_browser_env(kind: Harness) -> &'static [(&'static str, &'static str)] {
    match kind {
        Harness::Claude => CLAUDE_ONLY_THE_BROWSER_ENV,
        Harness::Codex => &[],
    }
}

/// Codex's switches that leave the worker the browser (HARNESS-FACTS §9; README "Running a
/// persona"): its own sandbox on, read-only and without network (`-s read-only`), never asking
/// (`approval_policy="never"`: `exec` has nobody to ask), and every tool that has a switch off.
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

/// What the worker is launched with.
#[derive(Debug, Clone)]
pub struct WorkerSpec<'a> {
    pub kind: Harness,
    pub bin: PathBuf,
    pub project: &'a Path,
    pub prompt: String,
    pub mcp_config: Option<&'a Path>,
    pub mcp_servers: Vec<McpServer>,
    /// Claude: the run's `--settings` file carrying the guard.
    pub guard_settings: Option<&'a Path>,
    /// Codex: the run's model catalog with every model's own tools off
    /// ([`crate::harness::codex_catalog`]).
    pub codex_catalog: Option<&'a Path>,
    pub extra: &'a [String],
}

/// The worker's argument vector (without the program).
pub fn worker_args(spec: &WorkerSpec<'_>) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    match spec.kind {
        Harness::Claude => {
            a.extend(
                [
                    "-p",
                    &spec.prompt,
                    "--output-format",
                    "stream-json",
                    "--verbose",
                ]
                .map(str::to_owned),
            );
            if let Some(settings) = spec.guard_settings {
                a.push("--settings".into());
                a.push(settings.display().to_string());
            }
            a.extend(CLAUDE_ONLY_THE_BROWSER.map(str::to_owned));
            if let Some(cfg) = spec.mcp_config {
                a.push("--mcp-config".into());
                a.push(cfg.display().to_string());
                a.push("--strict-mcp-config".into());
                if !spec.mcp_servers.is_empty() {
                    a.push("--allowedTools".into());
                    a.push(
                        spec.mcp_servers
                            .iter()
                            .map(|s| format!("mcp__{}", s.name))
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                }
            }
            a.extend(spec.extra.iter().cloned());
        }
        Harness::Codex => {
            a.extend(
                [
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-hook-trust",
                ]
                .map(str::to_owned),
            );
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
            // `-s read-only` with `approval_policy="never"` would cancel every MCP call; each
            // server of the flow is approved by name, and no other server exists.
            for s in &spec.mcp_servers {
                a.push("-c".into());
                a.push(format!(
                    "mcp_servers.{}.default_tools_approval_mode=\"approve\"",
                    s.name
                ));
            }
            for s in &spec.mcp_servers {
                for (key, value) in codex_mcp_overrides(s) {
                    a.push("-c".into());
                    a.push(format!("mcp_servers.{}.{key}={value}", s.name));
                }
            }
            a.extend(spec.extra.iter().cloned());
            a.push(spec.prompt.clone());
        }
    }
    a
}

/// The `-c` overrides that give Codex one MCP server without touching any user file; values are
/// TOML literals.
fn codex_mcp_overrides(s: &McpServer) -> Vec<(&'static str, String)> {
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

/// The worker command: program, arguments, cwd = project, stdin closed, stdout/stderr piped, its
/// own process group, dying with the supervisor, `LEOPOLD_RUN_ID` in its environment.
pub fn worker_command(spec: &WorkerSpec<'_>, run_id: &str) -> Command {
    let mut cmd = Command::new(&spec.bin);
    cmd.args(worker_args(spec))
        .current_dir(spec.project)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env(crate::os::RUN_ID_ENV, run_id)
        .envs(only_the_browser_env(spec.kind).iter().copied());
    crate::os::configure_worker(&mut cmd);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::read_mcp_config;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn hook_disabling_claude_args_are_refused() {
        for bad in [
            s(&["--bare"]),
            s(&["--safe-mode"]),
            s(&["--settings", "{\"disableAllHooks\":true}"]),
            s(&["--settings={\"disableAllHooks\":true}"]),
            s(&["--setting-sources", "user"]),
            s(&["--output-format", "text"]),
        ] {
            assert!(check_extra_args(Harness::Claude, &bad).is_err(), "{bad:?}");
        }
        assert!(
            check_extra_args(Harness::Claude, &s(&["--model", "x", "--max-turns", "3"])).is_ok()
        );
        // Even a harmless-looking settings file: it could take the place of the guard's.
        let e = check_extra_args(Harness::Claude, &s(&["--settings", "{\"model\":\"x\"}"]))
            .unwrap_err();
        assert!(e.contains("carries the guard"), "{e}");
        assert!(check_extra_args(Harness::Claude, &s(&["--settings=/tmp/s.json"])).is_err());
        let e = check_extra_args(
            Harness::Claude,
            &s(&[
                "--settings",
                "{\"apiKeyHelper\":\"curl https://u:tok@keys.example/k\"}",
            ]),
        )
        .unwrap_err();
        assert!(!e.contains("://") && !e.contains("tok"), "{e}");
    }

    #[test]
    fn hook_disabling_codex_args_are_refused() {
        for bad in [
            s(&["-c", "features.codex_hooks=false"]),
            s(&["-c", "hooks.PreToolUse=[]"]),
            s(&["--config=hooks={}"]),
            s(&["-chooks={}"]),
            s(&["--disable", "codex_hooks"]),
            s(&["-C", "/elsewhere"]),
        ] {
            assert!(check_extra_args(Harness::Codex, &bad).is_err(), "{bad:?}");
        }
        assert!(check_extra_args(Harness::Codex, &s(&["-c", "model=\"x\"", "-m", "o3"])).is_ok());
    }

    #[test]
    fn tool_widening_args_are_refused_with_a_reason() {
        for bad in [
            s(&["--tools", "Bash"]),
            s(&["--tools=default"]),
            s(&["--allowedTools", "Bash"]),
            s(&["--allowed-tools", "Read"]),
            s(&["--dangerously-skip-permissions"]),
            s(&["--permission-mode", "acceptEdits"]),
            s(&["--permission-mode=bypassPermissions"]),
            s(&["--add-dir", "/"]),
            s(&["--settings", "{\"permissions\":{\"allow\":[\"Bash\"]}}"]),
            s(&["--settings", "{\"defaultMode\":\"acceptEdits\"}"]),
            s(&["--plugin-dir", "/p"]),
        ] {
            let e = check_extra_args(Harness::Claude, &bad).unwrap_err();
            assert!(
                e.contains(bad[0].split('=').next().unwrap()),
                "{bad:?}: {e}"
            );
        }
        for bad in [
            s(&["--dangerously-bypass-approvals-and-sandbox"]),
            s(&["--full-auto"]),
            s(&["--yolo"]),
            s(&["-s", "danger-full-access"]),
            s(&["--sandbox=workspace-write"]),
            s(&["-a", "on-request"]),
            s(&["-c", "sandbox_mode=\"danger-full-access\""]),
            s(&["-c", "approval_policy=\"on-request\""]),
            s(&["-c", "features.shell_tool=true"]),
            s(&["-cfeatures.multi_agent=true"]),
            s(&["--config=web_search=\"live\""]),
            s(&["-c", "tools.view_image=true"]),
            s(&["-c", "mcp_servers.other.command=\"sh\""]),
            s(&["-c", "profiles.x.sandbox_mode=\"danger-full-access\""]),
            s(&["--enable", "shell_tool"]),
            s(&["--profile", "wide"]),
            s(&["--add-dir", "/"]),
            s(&["--search"]),
            s(&["-c", "model_catalog_json=\"/tmp/m.json\""]),
        ] {
            let e = check_extra_args(Harness::Codex, &bad).unwrap_err();
            assert!(e.contains('`'), "{bad:?}: {e}");
        }
        // What narrows or only picks a model passes.
        assert!(check_extra_args(
            Harness::Codex,
            &s(&["-c", "model_reasoning_effort=\"low\"", "--disable", "goals"])
        )
        .is_ok());
        assert!(check_extra_args(
            Harness::Claude,
            &s(&["--disallowedTools", "Bash", "--model", "x"])
        )
        .is_ok());
    }

    #[test]
    fn claude_args_carry_settings_strict_mcp_and_allowed_servers_never_bare() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("mcp.json");
        std::fs::write(
            &cfg,
            r#"{"mcpServers":{"browser":{"command":"pw","args":["--isolated"]},"stub":{"type":"http","url":"http://127.0.0.1:9/mcp"}}}"#,
        )
        .unwrap();
        let servers = read_mcp_config(&cfg).unwrap();
        let settings = dir.path().join("guard-settings.json");
        let spec = WorkerSpec {
            kind: Harness::Claude,
            bin: "claude".into(),
            project: dir.path(),
            prompt: "P".into(),
            mcp_config: Some(&cfg),
            mcp_servers: servers,
            guard_settings: Some(&settings),
            codex_catalog: None,
            extra: &[],
        };
        let a = worker_args(&spec);
        let joined = a.join(" ");
        assert!(joined.starts_with("-p P --output-format stream-json --verbose --settings "));
        assert!(joined.contains("--strict-mcp-config --allowedTools mcp__browser mcp__stub"));
        let tools = a.iter().position(|x| x == "--tools").unwrap();
        assert_eq!(a[tools + 1], "", "no built-in tool: {a:?}");
        assert!(joined.contains("--setting-sources project --permission-mode default"));
        assert!(!a.iter().any(|x| x == "--bare"));
    }

    #[test]
    fn codex_gets_mcp_servers_as_config_overrides_and_only_the_browser() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("mcp.json");
        std::fs::write(
            &cfg,
            r#"{"mcpServers":{"browser":{"command":"/opt/pw \"mcp\"","args":["--config","a b.json"],"env":{"K":"v"}}}}"#,
        )
        .unwrap();
        let servers = read_mcp_config(&cfg).unwrap();
        let spec = WorkerSpec {
            kind: Harness::Codex,
            bin: "codex".into(),
            project: dir.path(),
            prompt: "P".into(),
            mcp_config: Some(&cfg),
            mcp_servers: servers,
            guard_settings: None,
            codex_catalog: Some(Path::new("/run/models \"x\".json")),
            extra: &[],
        };
        let a = worker_args(&spec);
        assert!(
            a.windows(2)
                .any(|w| w[0] == "-c" && w[1] == r#"model_catalog_json='/run/models "x".json'"#),
            "{a:?}"
        );
        assert_eq!(
            &a[..4],
            &s(&[
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-hook-trust",
            ])[..]
        );
        assert!(!a
            .iter()
            .any(|x| x == "--dangerously-bypass-approvals-and-sandbox"));
        let joined = a.join(" ");
        for want in [
            "-s read-only",
            "-c approval_policy=\"never\"",
            "-c features.shell_tool=false",
            "-c web_search=\"disabled\"",
            "-c features.multi_agent=false",
            "-c mcp_servers.browser.default_tools_approval_mode=\"approve\"",
        ] {
            assert!(joined.contains(want), "{want} missing from {joined}");
        }
        // Leopold's own switches pass its own refusal of extra arguments only because they are
        // not extra: the same flags given after `--` are refused.
        assert!(check_extra_args(Harness::Codex, &a[4..a.len() - 1]).is_err());
        assert_eq!(a.last().unwrap(), "P");
        // Each override parses back as TOML to the original values.
        let mut doc = String::new();
        for kv in a.iter().filter(|x| x.starts_with("mcp_servers.")) {
            doc.push_str(kv);
            doc.push('\n');
        }
        let parsed: toml_edit::DocumentMut = doc.parse().unwrap_or_else(|e| panic!("{doc}: {e}"));
        let b = &parsed["mcp_servers"]["browser"];
        assert_eq!(b["command"].as_str(), Some("/opt/pw \"mcp\""));
        let args: Vec<&str> = b["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(args, ["--config", "a b.json"]);
        assert_eq!(b["env"]["K"].as_str(), Some("v"));
    }

    #[test]
    fn prompt_names_brief_start_allowlist_and_walls() {
        let flow = Flow::parse(
            "+++\nname=\"checkout\"\nallowlist=[\"staging.example.com\"]\nstart_url=\"https://staging.example.com/\"\n[irreversible]\nforbid=[\"payment\"]\nclick_labels=[\"(?i)place order\"]\n+++\nBuy a hat.\n",
            Path::new("f.md"),
        )
        .unwrap();
        let p = build_prompt(&flow);
        for needle in [
            "Buy a hat.",
            "https://staging.example.com/",
            "staging.example.com",
            "payment",
            "place order",
            "finding",
            "ticking, choosing, dragging or submitting",
            "Tab and Escape",
        ] {
            assert!(p.contains(needle), "{needle} missing from {p}");
        }
    }
}
