//! `leopold-record-captures`: records the harness captures under `tests/captures/` from the
//! pinned CLIs (run by `scripts/record-captures.sh`, which installs them and sets the variables
//! below). A version bump re-records every capture in one command.
//!
//! Four captures, each a real CLI's stream driven by the scripted model, with no `leopold` in
//! the loop (the journal and the ref tracker are tested on what a harness really prints):
//!
//! - `claude-stream.jsonl`, `codex-stream.jsonl`: the stub browser as MCP server `personastub`
//!   and a PreToolUse hook that judges URLs only (it denies any call naming
//!   `prod-dashboard.example.org`). Three calls: a navigation to the staging host (runs), one to
//!   `prod-dashboard.example.org` (denied), a click on "Place order" (runs: the hook does not
//!   judge labels).
//! - `claude-playwright-stream.jsonl`, `codex-playwright-stream.jsonl`: the real `@playwright/mcp`
//!   (server `browser`) in Chromium against the staging app, reached as `staging.example.com`
//!   through Chromium's resolver rules (every other host unresolvable), no hook. Claude: the
//!   shop, a snapshot, a click on the "Admin dashboard" link (off the allowlist: the browser
//!   refuses it), the checkout page, a snapshot, a click by ref on the "Place order" button
//!   described as "the blue button". Codex: the checkout page, a snapshot, the same click. The
//!   app receives `POST /checkout/confirm`: the irreversible action the captures exist to show.
//!
//! Every capture is checked against its witnesses (the stub's call log, the app's request log)
//! before it is written, and scrubbed of this machine's paths as `tests/fixtures/` are.
//!
//! Needs `LEOPOLD_CLAUDE_BIN`, `LEOPOLD_CODEX_BIN`, `LEOPOLD_PLAYWRIGHT_MCP` and optionally
//! `LEOPOLD_CHROMIUM`. Usage: `leopold-record-captures --out DIR`.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use leopold_tests::script::{Script, ToolCall, Turn};
use leopold_tests::staging::StagingApp;
use leopold_tests::{
    codex_mcp_tool_calls, Harness, HarnessKit as _, ModelServer, Run, Sandbox, CODEX_BARE_EXEC,
};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The stub scenario's MCP server name.
const STUB_SERVER: &str = "personastub";

/// The provisioned browser's MCP server name (as `persona run --browser playwright` names it).
const BROWSER_SERVER: &str = "browser";

/// The ref Playwright MCP gives the "Admin dashboard" link on the shop's page, and the "Place
/// order" button on the checkout page when it is the first page of the tab. Refs are
/// deterministic for a page; a page after a browser error page gets its frame's prefix (`f2e5`).
/// The recorder checks the snapshot agrees.
const REF: &str = "e5";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let out = match (args.next().as_deref(), args.next(), args.next()) {
        (Some("--out"), Some(dir), None) => PathBuf::from(dir),
        _ => {
            eprintln!("usage: leopold-record-captures --out DIR");
            return ExitCode::from(2);
        }
    };
    match record_all(&out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("leopold-record-captures: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn record_all(out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let chromium = std::env::var_os("LEOPOLD_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let playwright_mcp = env_file("LEOPOLD_PLAYWRIGHT_MCP")?;
    ensure!(chromium.is_file(), "no Chromium at {}", chromium.display());
    for h in Harness::ALL {
        let bin = env_file(h.env_var())?;
        let name = format!("{}-stream.jsonl", h.as_str());
        write(
            out,
            &name,
            &stub_capture(h, &bin).with_context(|| name.clone())?,
        )?;
        let name = format!("{}-playwright-stream.jsonl", h.as_str());
        let text = playwright_capture(h, &bin, &chromium, &playwright_mcp)
            .with_context(|| name.clone())?;
        write(out, &name, &text)?;
    }
    Ok(())
}

fn env_file(var: &str) -> anyhow::Result<PathBuf> {
    let p = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .with_context(|| format!("{var} is not set (run scripts/record-captures.sh)"))?;
    ensure!(p.is_file(), "{var} names {}, not a file", p.display());
    Ok(p)
}

fn write(out: &Path, name: &str, text: &str) -> anyhow::Result<()> {
    for needle in leopold_tests::UNSCRUBBED {
        ensure!(!text.contains(needle), "{name} still holds {needle:?}");
    }
    let path = out.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("recorded {}", path.display());
    Ok(())
}

fn turn(tool: String, input: Value) -> Turn {
    Turn {
        calls: vec![ToolCall { tool, input }],
        delay_ms: 0,
    }
}

/// The stub browser behind a hook that denies `prod-dashboard.example.org` and nothing else.
fn stub_capture(h: Harness, bin: &Path) -> anyhow::Result<String> {
    let sb = Sandbox::new();
    let tool = |t: &str| format!("mcp__{STUB_SERVER}__{t}");
    let script = Script {
        turns: vec![
            turn(
                tool("navigate"),
                json!({"url": "https://staging.example.com/welcome"}),
            ),
            turn(
                tool("navigate"),
                json!({"url": "https://prod-dashboard.example.org/x"}),
            ),
            turn(tool("click"), json!({"label": "Place order"})),
        ],
        final_answer: "Done.".into(),
    };
    let model = ModelServer::start(&sb, &script);
    let browser = sb.stub_browser(STUB_SERVER);
    // Exit 2 with a reason denies on both harnesses (docs/harness-facts.md#1-what-fails-open); the
    // hook reads its JSON
    // input on stdin.
    let hook = sb.logs.join("url-hook.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\nif grep -q 'prod-dashboard\\.example\\.org'; then\n  \
         echo 'probe: host outside allowlist' >&2\n  exit 2\nfi\nexit 0\n",
    )?;
    make_executable(&hook)?;
    // Wired by hand, untagged: this hook is not Leopold's guard.
    let hook = leopold_tests::shell_quote(&hook);
    let prompt = "Walk the checkout.";
    let cmd = match h {
        Harness::Claude => {
            let settings = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__.*", "hooks": [
                {"type": "command", "command": hook, "timeout": 10}]}]}});
            std::fs::create_dir_all(sb.project.join(".claude"))?;
            std::fs::write(
                sb.project.join(".claude/settings.json"),
                serde_json::to_vec_pretty(&settings)?,
            )?;
            sb.claude_command(bin, &model, &browser, prompt)
        }
        Harness::Codex => {
            sb.write_codex_config(
                &model,
                &format!(
                    "\n[[hooks.PreToolUse]]\nmatcher = \"mcp__.*\"\n\n\
                     [[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = {}\ntimeout = 10\n",
                    serde_json::to_string(&hook)?
                ),
            );
            sb.codex_command(bin, &model, &browser, prompt)
        }
    };
    let run = sb.run(cmd, TIMEOUT);
    ensure!(run.status.success(), "the harness failed\n{run}");
    let seen: Vec<String> = browser.seen().into_iter().map(|(t, _)| t).collect();
    ensure!(
        seen == ["navigate", "click"],
        "the stub should have seen the allowed navigation and the click, saw {seen:?}\n{run}"
    );
    check_stream(h, &run, 2)?;
    Ok(sb.scrub(&run.stdout, &[bin, &browser.bin]))
}

/// The real Playwright MCP in Chromium against the staging app, no hook.
fn playwright_capture(
    h: Harness,
    bin: &Path,
    chromium: &Path,
    playwright_mcp: &Path,
) -> anyhow::Result<String> {
    let sb = Sandbox::new();
    let app = StagingApp::start(&sb);
    let tool = |t: &str| format!("mcp__{BROWSER_SERVER}__{t}");
    let nav = |path: &str| {
        turn(
            tool("browser_navigate"),
            json!({"url": format!("http://staging.example.com{path}")}),
        )
    };
    let snapshot = || turn(tool("browser_snapshot"), json!({}));
    let buy_ref = match h {
        Harness::Claude => "f2e5",
        Harness::Codex => REF,
    };
    let buy = turn(
        tool("browser_click"),
        json!({"element": "the blue button", "target": buy_ref}),
    );
    let turns = match h {
        Harness::Claude => vec![
            nav("/"),
            snapshot(),
            turn(
                tool("browser_click"),
                json!({"element": "Admin dashboard link", "target": REF}),
            ),
            nav("/checkout"),
            snapshot(),
            buy,
        ],
        Harness::Codex => vec![nav("/checkout"), snapshot(), buy],
    };
    let calls = turns.len();
    let model = ModelServer::start(
        &sb,
        &Script {
            turns,
            final_answer: "Done.".into(),
        },
    );
    let config = sb.logs.join("playwright.json");
    std::fs::write(
        &config,
        serde_json::to_vec_pretty(&playwright_config(chromium, &sb.logs, app.port))?,
    )?;
    let server_args = [
        "--config".to_owned(),
        config.display().to_string(),
        "--isolated".to_owned(),
    ];
    let prompt = "Walk the checkout.";
    let mut cmd = Command::new(bin);
    match h {
        Harness::Claude => {
            let mcp = sb.logs.join("mcp.json");
            std::fs::write(
                &mcp,
                serde_json::to_vec_pretty(&json!({"mcpServers": {BROWSER_SERVER: {
                    "type": "stdio", "command": playwright_mcp, "args": server_args}}}))?,
            )?;
            cmd.args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
                .arg("--mcp-config")
                .arg(&mcp)
                .args(["--strict-mcp-config", "--allowedTools"])
                .arg(format!("mcp__{BROWSER_SERVER}"));
        }
        Harness::Codex => {
            sb.write_codex_config(&model, "");
            let toml = |s: &str| serde_json::to_string(s).expect("string");
            cmd.args(CODEX_BARE_EXEC)
                .arg(&sb.project)
                .arg("-c")
                .arg(format!(
                    "mcp_servers.{BROWSER_SERVER}.command={}",
                    toml(&playwright_mcp.to_string_lossy())
                ))
                .arg("-c")
                .arg(format!(
                    "mcp_servers.{BROWSER_SERVER}.args=[{}]",
                    server_args
                        .iter()
                        .map(|a| toml(a))
                        .collect::<Vec<_>>()
                        .join(",")
                ))
                // Codex starts its first turn without an MCP server still starting unless told to
                // wait for it (the supervisor passes the same).
                .arg("-c")
                .arg(format!("mcp_servers.{BROWSER_SERVER}.required=true"))
                .arg(prompt);
        }
    }
    sb.hermetic(&mut cmd, &model);
    let run = sb.run(cmd, TIMEOUT);
    ensure!(run.status.success(), "the harness failed\n{run}");
    let seen = app.seen();
    ensure!(
        seen.iter().any(|(m, p, host)| m == "POST"
            && p == "/checkout/confirm"
            && host == "staging.example.com"),
        "the app never received the order: {seen:?}\n{run}"
    );
    ensure!(
        seen.iter()
            .all(|(_, _, host)| host == "staging.example.com"),
        "a request reached the app under another name: {seen:?}"
    );
    ensure!(
        run.stdout
            .contains(&format!("button \\\"Place order\\\" [ref={buy_ref}]")),
        "the snapshot did not give \"Place order\" the ref {buy_ref}: the script's click missed\n{run}"
    );
    check_stream(h, &run, calls)?;
    Ok(sb.scrub(&run.stdout, &[bin, playwright_mcp]))
}

/// The stream holds `calls` completed tool calls (a hook's denial excepted).
fn check_stream(h: Harness, run: &Run, calls: usize) -> anyhow::Result<()> {
    let lines = run.json_lines();
    let completed = match h {
        Harness::Claude => lines
            .iter()
            .filter(|l| l["type"] == "user")
            .filter_map(|l| l["message"]["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result" && b["is_error"] != true)
            .count(),
        Harness::Codex => codex_mcp_tool_calls(&lines)
            .filter(|i| i["status"] == "completed")
            .count(),
    };
    if completed != calls {
        bail!("expected {calls} completed calls in the stream, found {completed}\n{run}");
    }
    Ok(())
}

/// Playwright MCP's config: Chromium headless, an isolated profile, and resolver rules that
/// reach the app as `staging.example.com` and nothing else (the flags `persona run` uses).
fn playwright_config(chromium: &Path, dir: &Path, port: u16) -> Value {
    let mut args = vec![
        format!("--host-resolver-rules=MAP staging.example.com 127.0.0.1:{port}, MAP * ~NOTFOUND"),
        "--no-proxy-server".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--no-first-run".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
    ];
    if is_root() {
        args.push("--no-sandbox".to_owned());
    }
    json!({
        "browser": {
            "browserName": "chromium",
            "launchOptions": {"executablePath": chromium, "headless": true, "args": args},
        },
        "outputDir": dir.join("playwright-output"),
        "imageResponses": "omit",
    })
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().next())
            == Some("0")
    })
}

fn make_executable(p: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("chmod {}", p.display()))
}
