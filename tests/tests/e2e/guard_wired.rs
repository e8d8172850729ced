//! The guard wired directly into each real harness (no supervisor): proves that a hook-level deny
//! keeps a call from the browser, and that the model is told why (issue #6, scenario 1's URL set).

use std::path::{Path, PathBuf};
use std::time::Duration;

use leopold_tests::{
    checkout, codex_mcp_tool_calls, leopold_bin, record_fixture, require_cli, shell_quote, Harness,
    ModelServer, Run, Sandbox, StubBrowser,
};
use serde_json::Value;

const PROMPT: &str = "Walk the checkout flow as a first-time buyer using the browser tools.";
const TIMEOUT: Duration = Duration::from_secs(60);

/// Which hook is wired.
#[derive(Clone, Copy, Debug)]
enum Hook {
    /// A few lines of shell that deny by substring: validates the kit itself, independent of
    /// Leopold's guard.
    StandIn,
    /// `leopold persona guard`, with an ACTIVE.json naming flows/checkout.md.
    Leopold,
}

const STAND_IN_REASON: &str = "stand-in hook: denied";

fn stand_in_hook(sb: &Sandbox) -> String {
    let path = sb.root.join("stand-in-hook.sh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n  *evil.example*|*prod-dashboard.example.org*|*\"Place order\"*)\n    echo \"{STAND_IN_REASON}\" >&2; exit 2;;\nesac\nexit 0\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    shell_quote(&path)
}

struct Outcome {
    sb: Sandbox,
    run: Run,
    browser: StubBrowser,
    model: ModelServer,
    bin: PathBuf,
}

fn run_checkout(harness: Harness, hook: Hook) -> Option<Outcome> {
    let bin = require_cli(harness)?;
    let sb = Sandbox::new();
    let model = ModelServer::start(&sb, &checkout::script());
    let browser = sb.stub_browser(checkout::SERVER);
    let command = match hook {
        Hook::StandIn => stand_in_hook(&sb),
        Hook::Leopold => {
            sb.activate_flow(&checkout::flow_path(), harness);
            format!("{} persona guard", shell_quote(&leopold_bin()))
        }
    };
    let cmd = sb.harness_command(harness, &bin, &model, &browser, PROMPT, Some(&command));
    let run = sb.run(cmd, TIMEOUT);
    Some(Outcome {
        sb,
        run,
        browser,
        model,
        bin,
    })
}

/// What every guarded checkout run must show, whichever hook denied.
fn assert_checkout_bounded(o: &Outcome, reason_marker: &str) {
    let run = &o.run;
    assert!(run.status.success(), "the harness failed\n{run}");

    // The browser saw exactly the allowed calls, in order.
    assert_eq!(
        o.browser.seen(),
        checkout::allowed_calls(),
        "stub browser log differs\n{run}"
    );

    // The model got a result for every call, and the hook's reason for exactly the denied ones.
    let results = o.model.tool_results();
    assert_eq!(
        results.len(),
        checkout::script().call_count(),
        "tool results the model received: {results:#?}\n{run}"
    );
    let denied: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.contains(reason_marker))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        denied,
        [1, 2, 3, 4, 6],
        "which results carry the reason {reason_marker:?}: {results:#?}"
    );

    // The run finished with the script's final answer, and no secret leaked into the stream.
    assert!(
        run.stdout.contains(&checkout::script().final_answer),
        "no final answer in the stream\n{run}"
    );
    assert!(!run.stdout.contains("scripted-model-no-secret"));
}

fn record(o: &Outcome, name: &str) {
    let leopold = std::env::var_os("LEOPOLD_BIN").map(PathBuf::from);
    let mut bins: Vec<&Path> = vec![&o.bin, &o.browser.bin];
    if let Some(l) = &leopold {
        bins.push(l);
    }
    record_fixture(name, &o.sb.scrub(&o.run.stdout, &bins));
}

#[test]
fn claude_stand_in_hook_keeps_denied_calls_from_the_browser() {
    let Some(o) = run_checkout(Harness::Claude, Hook::StandIn) else {
        return;
    };
    assert_checkout_bounded(&o, STAND_IN_REASON);
    // Claude tells the model which hook spoke.
    assert!(o
        .model
        .received("PreToolUse:mcp__browser__navigate hook error"));
}

#[test]
fn codex_stand_in_hook_keeps_denied_calls_from_the_browser() {
    let Some(o) = run_checkout(Harness::Codex, Hook::StandIn) else {
        return;
    };
    assert_checkout_bounded(&o, STAND_IN_REASON);
    assert!(o.model.received("Tool call blocked by PreToolUse hook"));
    // A denied call leaves no mcp_tool_call item in Codex's stream: only the two allowed ones.
    let items = codex_mcp_tool_calls(&o.run.json_lines()).count();
    assert_eq!(items, 2, "{}", o.run);
}

/// The reason line the real guard prints, as both harnesses relay it to the model.
const GUARD_REASON: &str = "Leopold persona guard: ";

/// The real guard's own record of each deny: one host-only line per blocked call.
fn assert_guard_events(o: &Outcome) {
    let events = o.sb.events();
    assert_eq!(
        events.len(),
        checkout::BLOCKED_CALLS,
        "events.jsonl: {events:#?}\n{}",
        o.run
    );
    let hosts: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "persona_guard_block")
        .map(|e| e["host"].as_str().unwrap_or("(none)"))
        .collect();
    assert_eq!(hosts, checkout::BLOCKED_HOSTS, "{events:#?}");
    let irreversible: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "persona_guard_irreversible")
        .collect();
    assert_eq!(irreversible.len(), 1, "{events:#?}");
    assert_eq!(irreversible[0]["tool"], "mcp__browser__click");
    for e in &events {
        assert_eq!(e["flow"], "checkout");
    }
    // No URL, query or credential anywhere in what the guard wrote: hosts, and in the reduced
    // call the paths the journal keeps too.
    let text = std::fs::read_to_string(o.sb.persona_dir().join("events.jsonl")).unwrap();
    for needle in ["://", "staging.example.com@", "first.buyer"] {
        assert!(
            !text.contains(needle),
            "events.jsonl holds {needle:?}: {text}"
        );
    }
}

/// The checkout with Leopold's guard wired, bounded, its events checked, and the model told
/// `told` (`None`: the CLI is not installed).
fn guarded_checkout(harness: Harness, told: &str) -> Option<Outcome> {
    let o = run_checkout(harness, Hook::Leopold)?;
    assert_checkout_bounded(&o, GUARD_REASON);
    assert_guard_events(&o);
    assert!(o.model.received(told), "the model was not told {told:?}");
    Some(o)
}

#[test]
fn claude_with_leopold_guard_denies_every_checkout_trick_and_tells_the_model_why() {
    // The model reads the host, never the URL.
    let Some(o) = guarded_checkout(
        Harness::Claude,
        "navigation to host \"evil.example\" is outside the domain allowlist of flow \"checkout\"",
    ) else {
        return;
    };
    assert!(o
        .model
        .received("PreToolUse:mcp__browser__click hook error"));
    record(&o, "claude-checkout-guard-stream.jsonl");
}

#[test]
fn codex_with_leopold_guard_denies_every_checkout_trick_and_tells_the_model_why() {
    let Some(o) = guarded_checkout(
        Harness::Codex,
        "Tool call blocked by PreToolUse hook: Leopold persona guard: navigation to host \"prod-dashboard.example.org\"",
    ) else {
        return;
    };
    let items = codex_mcp_tool_calls(&o.run.json_lines()).count();
    assert_eq!(items, 2, "{}", o.run);
    record(&o, "codex-checkout-guard-stream.jsonl");
}
