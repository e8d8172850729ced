//! The worker's launch, one dispatch to the harness's wing: its command line, the switches
//! that leave it only the browser, and the extra arguments (after `--`) it refuses.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{claude, codex, Harness};
use crate::mcp::McpServer;

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
    match spec.kind {
        Harness::Claude => claude::launch::args(spec),
        Harness::Codex => codex::launch::args(spec),
    }
}

/// The variables that switch a harness's tools off, set over the user's own, boxed or not.
pub fn only_the_browser_env(kind: Harness) -> &'static [(&'static str, &'static str)] {
    match kind {
        Harness::Claude => claude::launch::CLAUDE_ONLY_THE_BROWSER_ENV,
        Harness::Codex => &[],
    }
}

/// Extra arguments that would switch hooks off
/// (docs/harness-facts.md#2-when-hooks-are-not-in-force), give the worker a tool besides the
/// browser again (docs/harness-facts.md#9-what-the-worker-can-do-besides-the-browser: the
/// switches of each wing's launch), or break the event stream the supervisor reads. `Err` names
/// the argument and why.
pub fn check_extra_args(kind: Harness, extra: &[String]) -> Result<(), String> {
    for (i, arg) in extra.iter().enumerate() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg.as_str(), None),
        };
        let value = || {
            inline
                .map(str::to_owned)
                .or_else(|| extra.get(i + 1).cloned())
        };
        let refused = match kind {
            Harness::Claude => claude::launch::refusal(flag, value),
            Harness::Codex => codex::launch::refusal(arg, flag, value),
        };
        if let Some(why) = refused {
            return Err(why);
        }
    }
    Ok(())
}

/// Leopold's own flag for a harness flag it passes itself (`--max-budget-usd` is
/// `--max-cost-usd`), in backticks.
pub fn leopold_flag(harness_flag: &str) -> &'static str {
    match harness_flag {
        "--max-turns" => "`--max-turns`",
        "--max-budget-usd" => "`--max-cost-usd`",
        _ => "`--model`",
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
        // The model and the limits are Leopold's flags, given one way only.
        for (flag, ours) in [
            ("--model", "`--model`"),
            ("--max-turns", "`--max-turns`"),
            ("--max-budget-usd", "`--max-cost-usd`"),
        ] {
            let e = check_extra_args(Harness::Claude, &s(&[flag, "3"])).unwrap_err();
            assert!(e.contains(ours) && e.contains("before `--`"), "{e}");
        }
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
        for model in [
            s(&["-c", "model=\"x\""]),
            s(&["-m", "o3"]),
            s(&["--model=o3"]),
        ] {
            let e = check_extra_args(Harness::Codex, &model).unwrap_err();
            assert!(e.contains("`--model` before `--`"), "{model:?}: {e}");
        }
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
        assert!(check_extra_args(Harness::Claude, &s(&["--disallowedTools", "Bash"])).is_ok());
    }

    #[test]
    fn claude_args_carry_settings_strict_mcp_and_allowed_servers_never_bare() {
        let (dir, cfg) = leopold_tests::temp_file(
            "mcp.json",
            r#"{"mcpServers":{"browser":{"command":"pw","args":["--isolated"]},"stub":{"type":"http","url":"http://127.0.0.1:9/mcp"}}}"#,
        );
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
        let (dir, cfg) = leopold_tests::temp_file(
            "mcp.json",
            r#"{"mcpServers":{"browser":{"command":"/opt/pw \"mcp\"","args":["--config","a b.json"],"env":{"K":"v"}}}}"#,
        );
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
}
