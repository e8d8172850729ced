//! `leopold persona wire` / `unwire` as a user runs them, and the wired command as a harness runs
//! it: through a shell, with a payload on stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::kit::{assert_has, Sandbox, LEOPOLD};

const FLOW: &str = "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n+++\nbrief\n";

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.project.join("flows")).unwrap();
    sb
}

/// What these tests do in a sandbox.
trait Wiring {
    /// `leopold <args>` run to completion in the project, no `claude` on PATH.
    fn cli(&self, args: &[&str]) -> Output;
    /// A fake `claude` that reports `version`.
    fn fake_claude(&self, version: &str) -> PathBuf;
    /// Makes a persona run of the `checkout` flow active, as the supervisor does.
    fn activate(&self);
    /// The project's `.claude/settings.json`.
    fn claude_settings(&self) -> PathBuf;
    /// Its text.
    fn claude_settings_text(&self) -> String {
        std::fs::read_to_string(self.claude_settings()).unwrap()
    }
}

impl Wiring for Sandbox {
    fn cli(&self, args: &[&str]) -> Output {
        Command::new(LEOPOLD)
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("CODEX_HOME", &self.codex_home)
            // No `claude` on PATH unless a test passes --harness-bin.
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn fake_claude(&self, version: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = self.root.join(format!("claude-{version}"));
        std::fs::write(&p, format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn activate(&self) {
        std::fs::write(self.project.join("flows/checkout.md"), FLOW).unwrap();
        std::fs::create_dir_all(self.project.join(".leopold/persona")).unwrap();
        std::fs::write(
            self.project.join(".leopold/persona/ACTIVE.json"),
            r#"{"version":1,"active":true,"run_id":"r1","flow":"checkout","flow_path":"flows/checkout.md","harness":"claude"}"#,
        )
        .unwrap();
    }

    fn claude_settings(&self) -> PathBuf {
        self.project.join(".claude/settings.json")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn ok(out: &Output) -> (String, String) {
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "status {}\nstdout:\n{o}\nstderr:\n{e}",
        out.status
    );
    (o, e)
}

/// Runs a hook command the way both harnesses do (through a shell), payload on stdin.
/// The wired hook `command` run on a navigation to `url` in the sandbox's project, exiting
/// `code`.
fn hook_on_navigation(sb: &Sandbox, command: &str, url: &str, code: i32) -> Output {
    let out = run_hook(command, &sb.project, &navigate(&sb.project, url));
    assert_eq!(
        out.status.code(),
        Some(code),
        "stderr: {}",
        text(&out.stderr)
    );
    out
}

fn run_hook(command: &str, cwd: &Path, payload: &serde_json::Value) -> Output {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn navigate(cwd: &Path, url: &str) -> serde_json::Value {
    serde_json::json!({
        "session_id": "s1",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": "mcp__browser__browser_navigate",
        "tool_input": {"url": url},
        "tool_use_id": "t1",
    })
}

fn claude_command(settings: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(settings).unwrap();
    let groups = v["hooks"]["PreToolUse"].as_array().unwrap();
    let ours: Vec<&str> = groups
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap())
        .filter_map(|h| h["command"].as_str())
        .filter(|c| c.contains("leopold-persona-guard"))
        .collect();
    assert_eq!(ours.len(), 1, "{settings}");
    ours[0].to_owned()
}

fn codex_command(config: &str) -> String {
    let doc: toml_edit::DocumentMut = config.parse().unwrap();
    let groups = doc["hooks"]["PreToolUse"].as_array_of_tables().unwrap();
    let ours: Vec<String> = groups
        .iter()
        .flat_map(|g| g["hooks"].as_array_of_tables().unwrap().iter())
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .filter(|c| c.contains("leopold-persona-guard"))
        .collect();
    assert_eq!(ours.len(), 1, "{config}");
    ours[0].clone()
}

#[test]
fn the_wired_claude_command_runs_the_guard_and_denies_an_off_allowlist_navigation() {
    let sb = sandbox();
    sb.activate();
    let claude = sb.fake_claude("2.1.332");
    let out = sb.cli(&[
        "persona",
        "wire",
        "--harness",
        "claude",
        "--harness-bin",
        claude.to_str().unwrap(),
    ]);
    let (stdout, stderr) = ok(&out);
    assert_has(&stdout, "wired the persona guard into claude");
    assert_has(&stdout, "onFailure: block");
    assert!(stderr.is_empty(), "{stderr}");
    let settings = sb.claude_settings_text();
    assert_has(&settings, "\"onFailure\": \"block\"");
    let command = claude_command(&settings);
    assert_eq!(
        command,
        format!("'{LEOPOLD}' persona guard # leopold-persona-guard")
    );

    let denied = hook_on_navigation(&sb, &command, "https://evil.example/x?token=s3cret", 2);
    let reason = text(&denied.stderr);
    assert_has(&reason, "evil.example");
    assert!(
        !reason.contains("s3cret"),
        "a deny reason must not carry the URL: {reason}"
    );
    assert!(denied.stdout.is_empty());

    // Control: the same command lets an allowlisted navigation through, silently.
    let allowed = hook_on_navigation(&sb, &command, "https://staging.example.com/cart", 0);
    assert!(allowed.stderr.is_empty() && allowed.stdout.is_empty());
}

#[test]
fn the_wired_codex_command_runs_the_guard_and_denies_an_off_allowlist_navigation() {
    let sb = sandbox();
    sb.activate();
    std::fs::create_dir_all(&sb.codex_home).unwrap();
    let original =
        "# my codex config\nmodel = \"o3\"\n\n[mcp_servers.browser]\ncommand = \"npx\"\n";
    std::fs::write(sb.codex_home.join("config.toml"), original).unwrap();
    let (stdout, _) = ok(&sb.cli(&["persona", "wire", "--harness", "codex"]));
    assert_has(&stdout, "wired the persona guard into codex");
    assert!(!stdout.contains("onFailure"), "{stdout}");
    assert_has(&stdout, "--dangerously-bypass-hook-trust");
    let config = std::fs::read_to_string(sb.codex_home.join("config.toml")).unwrap();
    assert!(config.starts_with(original), "{config}");
    let command = codex_command(&config);

    hook_on_navigation(&sb, &command, "https://evil.example/", 2);
    hook_on_navigation(&sb, &command, "https://staging.example.com/", 0);

    let (stdout, _) = ok(&sb.cli(&["persona", "unwire", "--harness", "codex"]));
    assert_has(&stdout, "codex: restored");
    assert_eq!(
        std::fs::read_to_string(sb.codex_home.join("config.toml")).unwrap(),
        original
    );
}

#[test]
fn wire_then_unwire_all_leaves_no_trace() {
    let sb = sandbox();
    let before = listing(&sb.root);
    ok(&sb.cli(&["persona", "wire", "--harness", "claude"]));
    ok(&sb.cli(&["persona", "wire", "--harness", "codex"]));
    assert!(sb.claude_settings().exists());
    assert!(sb.codex_home.join("config.toml").exists());
    let (stdout, _) = ok(&sb.cli(&["persona", "unwire", "--harness", "all"]));
    assert_has(&stdout, "claude: restored");
    assert_has(&stdout, "codex: restored");
    assert_eq!(listing(&sb.root), before);
    // Again: nothing wired, still success.
    let (stdout, _) = ok(&sb.cli(&["persona", "unwire", "--harness", "all"]));
    assert_has(&stdout, "claude: nothing wired");
    assert_has(&stdout, "codex: nothing wired");
}

#[test]
fn wire_without_claude_on_path_warns_and_wires_without_on_failure() {
    let sb = sandbox();
    let out = sb.cli(&["persona", "wire", "--harness", "claude"]);
    let (_, stderr) = ok(&out);
    assert_has(&stderr, "`claude` is not on PATH");
    assert_has(&stderr, "--harness-bin");
    let settings = sb.claude_settings_text();
    assert!(!settings.contains("onFailure"), "{settings}");
    // An old Claude: no onFailure either, and no warning.
    let old = sb.fake_claude("2.1.200");
    ok(&sb.cli(&["persona", "unwire", "--harness", "claude"]));
    let (_, stderr) = ok(&sb.cli(&[
        "persona",
        "wire",
        "--harness",
        "claude",
        "--harness-bin",
        old.to_str().unwrap(),
    ]));
    assert!(stderr.is_empty(), "{stderr}");
    assert!(!sb.claude_settings_text().contains("onFailure"));
}

#[test]
fn a_malformed_settings_file_is_refused_and_left_as_it_was() {
    let sb = sandbox();
    std::fs::create_dir_all(sb.project.join(".claude")).unwrap();
    let bad = "{\n  \"hooks\": {\n    \"PreToolUse\": {}\n  }\n}\n";
    std::fs::write(sb.claude_settings(), bad).unwrap();
    let out = sb.cli(&["persona", "wire", "--harness", "claude"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .contains(".claude/settings.json` line 3, column 19: `hooks.PreToolUse` is an object"),
        "{stderr}"
    );
    assert_has(&stderr, "hint:");
    assert!(out.stdout.is_empty());
    assert_eq!(sb.claude_settings_text(), bad);
    assert!(!sb.project.join(".leopold").exists());
}

#[test]
fn help_explains_both_commands() {
    let sb = sandbox();
    let (wire, _) = ok(&sb.cli(&["persona", "wire", "--help"]));
    assert_has(&wire, "--harness");
    assert_has(&wire, "leopold-persona-guard");
    assert_has(&wire, "--harness-bin");
    let (unwire, _) = ok(&sb.cli(&["persona", "unwire", "--help"]));
    assert_has(&unwire, "all");
    assert_has(&unwire, "byte for byte");
}

/// Every path under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            out.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}
