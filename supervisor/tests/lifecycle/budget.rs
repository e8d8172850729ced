//! Cost and budgets (docs/reference.md#cost-and-budgets): the model, turns, tokens and cost a
//! harness's stream reports, recorded in run.json, `run_ended`, the summary, `persona runs` and
//! JUnit; `--model` and `--max-turns` passed on; `--max-tokens`, `--max-cost-usd` and the
//! harness's own turn limit stop a run as `over_budget`, and one call repeated `max_repeats`
//! times running stops it as `looping` (both exit 5).

use crate::kit::*;

/// A Claude response carrying its usage, as the real CLI prints one.
fn claude_reply(id: &str, input: u64, output: u64) -> String {
    serde_json::json!({"type":"assistant","message":{"id":id,"type":"message","role":"assistant",
        "model":"claude-test-1","content":[{"type":"text","text":"thinking"}],
        "usage":{"input_tokens":input,"output_tokens":output,"cache_read_input_tokens":0,
        "cache_creation_input_tokens":0}}})
    .to_string()
}

/// Claude's `result` event.
fn claude_result(subtype: &str, turns: u64, cost: f64) -> String {
    serde_json::json!({"type":"result","subtype":subtype,"is_error":subtype != "success",
        "num_turns":turns,"total_cost_usd":cost,"result":"Stopped.",
        "usage":{"input_tokens":10,"output_tokens":10,"cache_read_input_tokens":0,
        "cache_creation_input_tokens":0}})
    .to_string()
}

fn last_event(out: &std::process::Output) -> serde_json::Value {
    let text = stdout(out);
    let line = text.lines().last().unwrap_or_else(|| panic!("no output"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn property<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let at = xml.find(&format!("<property name=\"{name}\" value=\""))?;
    let rest = &xml[at + name.len() + 25..];
    rest.split('"').next()
}

/// A run of `harness` whose worker plays the real stream `fixture` to its end, with `extra` and
/// a JUnit report: the sandbox, the output (exit 0 checked) and the report's path.
fn run_fixture(
    harness: &str,
    fixture: &str,
    extra: &[&str],
) -> (Sandbox, std::process::Output, std::path::PathBuf) {
    let sb = Sandbox::with_user_files();
    let stream = fixture_into_kit(&sb, fixture);
    sb.set_script(&format!("@stream {}\n", stream.display()));
    let junit = sb.root.join("junit.xml");
    let mut args = extra.to_vec();
    args.extend(["--junit", junit.to_str().unwrap()]);
    let out = sb.run_cmd(harness, &args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (sb, out, junit)
}

#[test]
fn claude_usage_from_a_real_stream_is_recorded_everywhere() {
    // tests/fixtures/claude-checkout-guard-stream.jsonl, summed by hand: `init` names
    // claude-opus-5-5; eight responses of 1 input and 1 output token; its `result` says
    // num_turns 8, 8 input and 8 output tokens, no cache, total_cost_usd 0.000192.
    let (sb, out, junit) = run_fixture("claude", "claude-checkout-guard-stream.jsonl", &["--json"]);
    let usage = &sb.run_json()["end"]["usage"];
    assert_eq!(usage["model"], "claude-opus-5-5", "{usage}");
    assert_eq!(usage["turns"], 8, "{usage}");
    assert_eq!(usage["input_tokens"], 8, "{usage}");
    assert_eq!(usage["output_tokens"], 8, "{usage}");
    assert_eq!(usage["cache_read_tokens"], 0, "{usage}");
    assert_eq!(usage["cache_write_tokens"], 0, "{usage}");
    let cost = usage["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.000192).abs() < 1e-9, "{usage}");
    assert_eq!(&last_event(&out)["usage"], usage);

    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(
        property(&xml, "leopold.model"),
        Some("claude-opus-5-5"),
        "{xml}"
    );
    assert_eq!(property(&xml, "leopold.turns"), Some("8"), "{xml}");
    assert_eq!(property(&xml, "leopold.tokens.input"), Some("8"), "{xml}");
    assert_eq!(property(&xml, "leopold.tokens.output"), Some("8"), "{xml}");
    assert_eq!(property(&xml, "leopold.tokens.total"), Some("16"), "{xml}");
    let junit_cost: f64 = property(&xml, "leopold.cost_usd").unwrap().parse().unwrap();
    assert!((junit_cost - cost).abs() < 1e-12, "{xml}");

    let table = stdout(&sb.runs(&[]));
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    assert!(
        header.contains("TOKENS") && header.contains("COST"),
        "{table}"
    );
    let row = lines.next().unwrap();
    assert!(row.contains(" 16 ") && row.contains("$0.0002"), "{table}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&sb.runs(&["--json"]))).unwrap();
    assert_eq!(&v["runs"][0]["usage"], usage);

    // The summary says it too, on its own line.
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_has(
        &stdout(&out),
        "leopold: usage: claude-opus-5-5, 8 turns, 16 tokens (8 in, 8 out), $0.0002",
    );
}

#[test]
fn codex_usage_from_a_real_stream_is_recorded_with_the_model_asked_for() {
    // tests/fixtures/codex-checkout-guard-stream.jsonl, by hand: two `mcp_tool_call` items and
    // one `agent_message` (three turns as Leopold counts Codex's), one `turn.completed` with 8
    // input tokens (none cached) and 8 output tokens. Codex reports no cost and no model.
    let (sb, out, junit) = run_fixture(
        "codex",
        "codex-checkout-guard-stream.jsonl",
        &["--model", "gpt-test"],
    );
    let argv = sb.worker_record()["argv"].to_string();
    assert!(argv.contains(r#""-m","gpt-test""#), "{argv}");
    let usage = &sb.run_json()["end"]["usage"];
    assert_eq!(usage["model"], "gpt-test", "{usage}");
    assert_eq!(usage["turns"], 3, "{usage}");
    assert_eq!(usage["input_tokens"], 8, "{usage}");
    assert_eq!(usage["output_tokens"], 8, "{usage}");
    assert!(usage.get("cost_usd").is_none(), "{usage}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(property(&xml, "leopold.tokens.total"), Some("16"), "{xml}");
    assert_eq!(property(&xml, "leopold.cost_usd"), None, "{xml}");
    assert_has(
        &stdout(&out),
        "leopold: usage: gpt-test, 3 turns, 16 tokens (8 in, 8 out)",
    );
}

#[test]
fn max_tokens_stops_a_run_midway_as_over_budget_exit_5() {
    let t = std::time::Instant::now();
    let (sb, out) = run_stalling(
        &[claude_reply("m1", 400, 100), claude_reply("m2", 600, 100)],
        &["--max-tokens", "1000"],
    );
    assert!(t.elapsed().as_secs() < 30, "the worker was stopped");
    let end = assert_over_budget(&sb, &out, "tokens reached --max-tokens 1000 (1,200)");
    assert_eq!(end["usage"]["turns"], 2);
    let text = stdout(&out);
    assert_has(&text, "over_budget (exit 5)");
    assert_has(
        &text,
        "leopold: stopping the worker: tokens reached --max-tokens 1000 (1,200)",
    );
}

#[test]
fn max_cost_usd_reaches_claude_and_stops_a_run_over_it() {
    let (sb, out) = run_stalling(
        &[
            claude_reply("m1", 10, 10),
            claude_result("success", 1, 0.75),
        ],
        &[
            "--max-cost-usd",
            "0.50",
            "--model",
            "sonnet",
            "--max-turns",
            "9",
        ],
    );
    assert_over_budget(&sb, &out, "cost reached --max-cost-usd 0.5 ($0.7500)");
    let argv = sb.worker_record()["argv"].to_string();
    for want in [
        r#""--max-budget-usd","0.5""#,
        r#""--model","sonnet""#,
        r#""--max-turns","9""#,
    ] {
        assert!(argv.contains(want), "{want}: {argv}");
    }
}

#[test]
fn claudes_own_turn_and_spending_limits_are_over_budget_not_a_worker_failure() {
    for (subtype, flags, reason) in [
        (
            "error_max_turns",
            ["--max-turns", "3"],
            "turns reached --max-turns 3 (3: the harness stopped)",
        ),
        (
            "error_max_budget_usd",
            ["--max-cost-usd", "1"],
            "cost reached --max-cost-usd 1 ($0.0100: the harness stopped)",
        ),
    ] {
        let sb = Sandbox::with_user_files();
        sb.set_script(&format!("{}\n@exit 1\n", claude_result(subtype, 3, 0.01)));
        let out = sb.run_cmd("claude", &flags).output().unwrap();
        let end = assert_over_budget(&sb, &out, reason);
        assert_eq!(end["worker_status"], "exit 1", "{subtype}");
    }
}

#[test]
fn codex_turns_are_counted_by_leopold_against_max_turns() {
    let sb = Sandbox::with_user_files();
    let stream = fixture_into_kit(&sb, "codex-checkout-guard-stream.jsonl");
    sb.set_script(&format!("@stream {}\n@sleep 60000\n", stream.display()));
    let out = sb.run_cmd("codex", &["--max-turns", "2"]).output().unwrap();
    assert_over_budget(&sb, &out, "turns reached --max-turns 2 (3)");
    let argv = sb.worker_record()["argv"].to_string();
    assert!(
        !argv.contains("max-turns"),
        "Codex has no such flag: {argv}"
    );
}

/// A Claude run with `flags` whose worker prints `lines`, then waits to be stopped.
fn run_stalling(lines: &[String], flags: &[&str]) -> (Sandbox, std::process::Output) {
    let sb = Sandbox::with_user_files();
    sb.set_script(&format!("{}\n@sleep 60000\n", lines.join("\n")));
    let out = sb.run_cmd("claude", flags).output().unwrap();
    (sb, out)
}

/// The run ended `over_budget` (exit 5) for `reason`; returns run.json's `end`.
fn assert_over_budget(sb: &Sandbox, out: &std::process::Output, reason: &str) -> serde_json::Value {
    assert_exit_code(out, 5);
    let end = sb.run_json()["end"].clone();
    assert_eq!(end["outcome"], "over_budget", "{end}");
    assert_eq!(end["reason"], reason, "{end}");
    end
}

#[test]
fn the_model_and_the_turn_limit_are_given_one_way_only() {
    let sb = Sandbox::with_user_files();
    for (harness, extra) in [
        ("claude", &["--", "--model", "opus"][..]),
        ("claude", &["--", "--max-turns=4"]),
        ("codex", &["--", "-m", "o3"]),
        ("codex", &["--", "-c", "model=\"o3\""]),
    ] {
        let out = sb.run_cmd(harness, extra).output().unwrap();
        assert_exit_code(&out, 2);
        let e = stderr(&out);
        assert!(
            e.contains("before `--` instead"),
            "{harness} {extra:?}: {e}"
        );
        assert!(e.contains("hint: the model and the limits"), "{e}");
    }
    assert!(sb.run_dirs().is_empty(), "nothing ran");
}

#[test]
fn the_same_navigation_max_repeats_times_running_is_looping_and_four_then_another_is_not() {
    let nav = |n: usize| {
        let id = format!("n{n}");
        format!(
            "{}\n{}\n",
            claude_navigate(&id, "https://staging.example.com/cart"),
            claude_tool_ok(&id)
        )
    };
    let sb = Sandbox::with_user_files();
    let mut script: String = (1..=5).map(nav).collect();
    script.push_str("@sleep 60000\n");
    sb.set_script(&script);
    let t = std::time::Instant::now();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 5);
    assert!(t.elapsed().as_secs() < 30, "the worker was stopped");
    let rj = sb.run_json();
    assert_eq!(rj["end"]["outcome"], "looping");
    assert_eq!(
        rj["end"]["reason"],
        "the same call 5 times running: mcp__personastub__navigate (flow key max_repeats = 5)"
    );
    assert_has(&stdout(&out), "looping (exit 5)");

    let sb = Sandbox::with_user_files();
    let mut script: String = (1..=4).map(nav).collect();
    script.push_str(&format!(
        "{}\n{}\n",
        claude_tool_use(
            "c1",
            "mcp__personastub__click",
            serde_json::json!({"label": "Cart"})
        ),
        claude_tool_ok("c1")
    ));
    script.push_str(&nav(6));
    sb.set_script(&script);
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(sb.run_json()["end"]["outcome"], "clean");
}
