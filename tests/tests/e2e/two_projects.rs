//! Two projects at once (issue #12 item 3), on the real Codex CLI: two `persona run`s in two
//! projects share one user `CODEX_HOME`. Each run wires the guard into its own copy of the
//! configuration, so the user's `config.toml` is byte-identical while both run and after, and
//! each run's guard fires (before, the second run's unwire removed the first's handler).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use leopold_tests::script::{Script, ToolCall, Turn};
use leopold_tests::{
    checkout, leopold_bin, require_cli, run_bounded, Harness, ModelServer, Run, Sandbox,
};
use serde_json::json;

/// The user's own config: odd formatting, a comment, a table of theirs.
const USER_TAIL: &str = "\n# my own notes, keep them\n[history]\npersistence = \"none\"\n";

fn script() -> Script {
    let turn = |url: &str, delay_ms| Turn {
        calls: vec![ToolCall {
            tool: "mcp__browser__navigate".into(),
            input: json!({ "url": url }),
        }],
        delay_ms,
    };
    Script {
        turns: vec![
            turn("https://staging.example.com/products/1", 0),
            // Long enough that both runs are live at once.
            turn("https://evil.example/", 3_000),
        ],
        final_answer: "Done.".into(),
    }
}

#[test]
fn two_codex_runs_in_two_projects_leave_the_shared_user_config_alone_and_both_guards_fire() {
    let Some(cli) = require_cli(Harness::Codex) else {
        return;
    };
    let user = Sandbox::new();
    // One model server for both: it keeps no per-session state (its position in the script is
    // the number of tool results a request carries).
    let model = ModelServer::start(&user, &script());
    let user_cfg = user.write_codex_config(&model, USER_TAIL);
    let before = std::fs::read(&user_cfg).unwrap();

    let projects: Vec<(Sandbox, leopold_tests::StubBrowser, PathBuf)> = (0..2)
        .map(|_| {
            let sb = Sandbox::new();
            let browser = sb.stub_browser(checkout::SERVER);
            let mcp = sb.write_claude_mcp_config(&browser);
            sb.add_checkout_flow();
            (sb, browser, mcp)
        })
        .collect();

    let runs: Vec<std::thread::JoinHandle<Run>> = projects
        .iter()
        .map(|(sb, _, mcp)| {
            let mut cmd = sb.persona_run(
                &leopold_bin(),
                "flows/checkout.md",
                Harness::Codex,
                &cli,
                &model,
            );
            cmd.arg("--mcp-config").arg(mcp);
            // Both projects, one user.
            cmd.env("HOME", &user.home)
                .env("CODEX_HOME", &user.codex_home);
            std::thread::spawn(move || run_bounded(cmd, Duration::from_secs(60)))
        })
        .collect();

    // While both are live: the user's file never changes.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut both_live = false;
    while !runs.iter().all(std::thread::JoinHandle::is_finished) {
        assert_eq!(
            std::fs::read(&user_cfg).unwrap(),
            before,
            "the user's config.toml changed mid-run"
        );
        both_live |= projects.iter().all(|(sb, _, _)| sb.active().exists());
        assert!(Instant::now() < deadline, "the runs did not end");
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(both_live, "the two runs never ran at the same time");
    let runs: Vec<Run> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    assert_eq!(
        std::fs::read(&user_cfg).unwrap(),
        before,
        "the user's config.toml changed"
    );

    for ((sb, browser, _), run) in projects.iter().zip(&runs) {
        assert_eq!(run.status.code(), Some(0), "{run}");
        // Its guard fired: the evil host was denied by the hook, and never reached the browser.
        let (_, events) = sb.run_events();
        assert!(
            events
                .iter()
                .any(|e| e["event"] == "persona_guard_block" && e["host"] == "evil.example"),
            "{events:#?}\n{run}"
        );
        assert_eq!(browser.seen().len(), 1, "{run}");
        // Its own copy, wired for the run, is gone with it.
        let copy = sb.run_dir().join("scratch/.codex/config.toml");
        assert!(!copy.exists(), "{}", copy.display());
    }
    assert!(
        model.received("Tool call blocked by PreToolUse hook"),
        "the model never saw a denial"
    );
}
