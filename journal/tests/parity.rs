//! One journal for both harnesses: the same seven calls of the checkout script, recorded from
//! the real CLIs (`tests/fixtures/`), journal the same fields whichever harness made them: the
//! label, every host of a batch, the path, the denial's reason.
//!
//! Claude's stream shows every call, its denials as hook-error `tool_result`s. Codex's shows
//! only the two calls that ran; its five denials exist only as the guard's events. Those events
//! are made here by the real guard (`leopold_guard::evaluate` + `report`) on the Codex hook
//! payloads of the same calls (the shape of docs/harness-facts.md#3-hook-input), in a project whose
//! ACTIVE.json names
//! the flow the fixtures were recorded under.

use std::path::{Path, PathBuf};

use leopold_journal::{guard_denials, Action, Adapter, AdapterEvent, Harness, Outcome};
use serde_json::{json, Value};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

fn lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(fixture(name))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The actions and the final answer of a stream.
fn adapt(harness: Harness, lines: &[String]) -> (Vec<Action>, Option<String>) {
    let mut a = Adapter::new(harness);
    let mut events = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        events.extend(a.push_line(i as u64 + 1, l));
    }
    events.extend(a.finish());
    let mut actions = Vec::new();
    let mut answer = None;
    for e in events {
        match e {
            AdapterEvent::Action(x) => actions.push(x),
            AdapterEvent::Answer { text } => answer = Some(text),
            _ => {}
        }
    }
    (actions, answer)
}

/// What must be the same: everything but when, which harness, and the harness's own call id.
fn fields(a: &Action) -> Value {
    let mut v = serde_json::to_value(a).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["seq", "ts", "harness", "tool_use_id"] {
        o.remove(k);
    }
    v
}

/// The calls of the Claude stream (tool name, input), in order.
fn claude_calls(lines: &[String]) -> Vec<(String, Value)> {
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "assistant")
        .flat_map(|v| {
            v["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_use")
        .map(|b| (b["name"].as_str().unwrap().to_owned(), b["input"].clone()))
        .collect()
}

#[test]
fn the_same_calls_journal_the_same_fields_on_claude_and_codex() {
    let claude_lines = lines("claude-checkout-guard-stream.jsonl");
    let (claude, claude_answer) = adapt(Harness::Claude, &claude_lines);
    assert_eq!(claude.len(), 7);
    assert_eq!(
        claude
            .iter()
            .filter(|a| a.outcome == Outcome::Denied)
            .count(),
        5
    );

    // The Codex run: the real guard judges each call as Codex's hook would hand it over.
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::create_dir_all(root.join(".leopold/persona")).unwrap();
    let flow = std::fs::canonicalize(fixture("../../flows/checkout.md")).unwrap();
    std::fs::write(
        root.join(".leopold/persona/ACTIVE.json"),
        json!({"active":true,"flow":"checkout","flow_path":flow}).to_string(),
    )
    .unwrap();
    for (i, (tool, input)) in claude_calls(&claude_lines).into_iter().enumerate() {
        let payload = json!({
            "session_id": "s", "turn_id": "t", "transcript_path": null, "cwd": root,
            "hook_event_name": "PreToolUse", "model": "scripted",
            "permission_mode": "bypassPermissions", "tool_name": tool, "tool_input": input,
            "tool_use_id": format!("call_{i}"),
        });
        let eval = leopold_guard::evaluate(payload.to_string().as_bytes(), Some(root));
        leopold_guard::report(&eval, std::io::sink());
    }
    let events = root.join(leopold_guard::EVENTS_PATH);
    let (denials, _) = guard_denials(&events, Harness::Codex, 0, &Default::default()).unwrap();
    assert_eq!(
        denials.len(),
        5,
        "the guard denied what it denied on Claude"
    );
    let (ran, codex_answer) = adapt(Harness::Codex, &lines("codex-checkout-guard-stream.jsonl"));
    assert_eq!(ran.len(), 2);

    // The journals, in call order: the supervisor merges each denial before the stream line
    // that follows it, so the Codex journal is the calls in the order they were made.
    let mut codex: Vec<Action> = Vec::new();
    let mut ran = ran.into_iter();
    let mut denials = denials.into_iter();
    for a in &claude {
        let next = if a.outcome == Outcome::Denied {
            denials.next()
        } else {
            ran.next()
        };
        codex.push(next.unwrap());
    }
    let c: Vec<Value> = claude.iter().map(fields).collect();
    let x: Vec<Value> = codex.iter().map(fields).collect();
    for (i, (a, b)) in c.iter().zip(&x).enumerate() {
        assert_eq!(a, b, "call {}: claude vs codex", i + 1);
    }

    // What the issue named, said outright.
    let click = &claude[6];
    assert_eq!(click.label.as_deref(), Some("Place order"));
    assert_eq!(click.denied_reason.as_deref(), Some("irreversible_label"));
    let batch = &codex[4];
    let hosts: Vec<_> = batch
        .urls
        .iter()
        .filter_map(|u| u.host.as_deref())
        .collect();
    assert_eq!(
        hosts,
        [
            "accounts.example.com",
            "evil.example",
            "staging.example.com"
        ]
    );
    assert_eq!(batch.urls[0].path.as_deref(), Some("/login"));
    assert_eq!(codex[1].denied_reason.as_deref(), Some("outside_allowlist"));
    assert_eq!(codex[1].urls[0].path.as_deref(), Some("/admin"));
    // No query, userinfo or fragment anywhere in either journal.
    for v in c.iter().chain(&x) {
        let line = v.to_string();
        assert!(!line.contains('?') && !line.contains("://"), "{line}");
    }
    // And the same final answer.
    assert!(claude_answer.is_some());
    assert_eq!(claude_answer, codex_answer);
}
