//! The recorded real streams under `tests/fixtures/` and `tests/captures/` (see their READMEs):
//! whole, scrubbed, and still showing what they are recorded to show.

use std::path::Path;

use leopold_tests::{codex_mcp_tool_calls, read_jsonl};

fn fixture(name: &str) -> (String, Vec<serde_json::Value>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (text, read_jsonl(&path))
}

/// `field` of each MCP tool call item in a recorded Codex stream.
fn codex_calls(name: &str, field: &str) -> Vec<String> {
    let (_, lines) = fixture(name);
    codex_mcp_tool_calls(&lines)
        .map(|i| i[field].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn recorded_streams_hold_no_machine_paths_or_keys() {
    for name in [
        "fixtures/claude-checkout-guard-stream.jsonl",
        "fixtures/codex-checkout-guard-stream.jsonl",
        "fixtures/claude-unrunnable-guard-stream.jsonl",
        "fixtures/codex-unrunnable-guard-stream.jsonl",
        "captures/claude-stream.jsonl",
        "captures/codex-stream.jsonl",
        "captures/claude-playwright-stream.jsonl",
        "captures/codex-playwright-stream.jsonl",
    ] {
        let (text, lines) = fixture(name);
        assert!(!lines.is_empty(), "{name} is empty");
        for needle in leopold_tests::UNSCRUBBED {
            assert!(!text.contains(needle), "{name} holds {needle:?}");
        }
    }
}

#[test]
fn recorded_claude_stream_shows_five_guard_denials_and_two_allowed_calls() {
    let (_, lines) = fixture("fixtures/claude-checkout-guard-stream.jsonl");
    let results: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "user")
        .filter_map(|l| l["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .collect();
    let denied = results
        .iter()
        .filter(|b| b["is_error"] == true && b.to_string().contains("Leopold persona guard"))
        .count();
    assert_eq!((results.len(), denied), (7, 5), "{results:#?}");
}

#[test]
fn recorded_codex_stream_shows_only_the_allowed_calls() {
    let tools = codex_calls("fixtures/codex-checkout-guard-stream.jsonl", "tool");
    assert_eq!(tools, ["navigate", "type"]);
}

#[test]
fn recorded_codex_fail_open_stream_shows_every_call_completed() {
    let statuses = codex_calls("fixtures/codex-unrunnable-guard-stream.jsonl", "status");
    assert_eq!(statuses, vec!["completed"; 7]);
}
