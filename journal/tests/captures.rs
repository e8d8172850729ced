use std::io::Write;

use leopold_journal::{
    guard_denials, validate, Action, ActionKind, Adapter, AdapterEvent, Harness, Outcome, UrlRole,
    Verdict,
};

use crate::kit::{capture, checkout};

/// Every action and malformed report of a capture, through the adapter line by line.
fn run(harness: Harness, name: &str) -> (Vec<Action>, Vec<AdapterEvent>, Adapter) {
    let text = std::fs::read_to_string(capture(name))
        .unwrap_or_else(|e| panic!("{}: {e}", capture(name).display()));
    let mut adapter = Adapter::new(harness);
    let mut events = vec![];
    for (i, line) in text.lines().enumerate() {
        events.extend(adapter.push_line(i as u64 + 1, line));
    }
    events.extend(adapter.finish());
    let actions = events
        .iter()
        .filter_map(|e| match e {
            AdapterEvent::Action(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    (actions, events, adapter)
}

/// The capture's lines as JSON, read without the adapter: what the adapter's output is checked
/// against.
fn raw(name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(capture(name))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The ids of a Claude capture's `tool_use` blocks, in order.
fn claude_tool_use_ids(lines: &[serde_json::Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .filter_map(|l| l["message"]["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap().to_owned())
        .collect()
}

/// An action's tool, kind, outcome, first host and label.
type Summary<'a> = (
    &'a str,
    ActionKind,
    Outcome,
    Option<&'a str>,
    Option<&'a str>,
);

fn summary(a: &Action) -> Summary<'_> {
    (
        &a.tool,
        a.kind,
        a.outcome,
        a.first_host(),
        a.label.as_deref(),
    )
}

// The stub checkout's calls, as either harness's capture holds them.
const NAVIGATE_STAGING: Summary = (
    "mcp__personastub__navigate",
    ActionKind::Navigate,
    Outcome::Completed,
    Some("staging.example.com"),
    None,
);
const NAVIGATE_PROD_DENIED: Summary = (
    "mcp__personastub__navigate",
    ActionKind::Navigate,
    Outcome::Denied,
    Some("prod-dashboard.example.org"),
    None,
);
const CLICK_PLACE_ORDER: Summary = (
    "mcp__personastub__click",
    ActionKind::Click,
    Outcome::Completed,
    None,
    Some("Place order"),
);

fn rule(v: &Verdict) -> String {
    match v {
        Verdict::Ok => "ok".into(),
        Verdict::Violation { rule, .. } => rule.clone(),
    }
}

#[test]
fn claude_stub_capture_every_call_found_and_the_denial_recognised() {
    let (actions, events, adapter) = run(Harness::Claude, "claude-stream.jsonl");
    // Three calls, then the persona's final answer (Claude's `result` event), verbatim.
    assert_eq!(events.len(), 4, "{events:#?}");
    assert!(
        matches!(&events[3], AdapterEvent::Answer { text } if text == "Done."),
        "{:?}",
        events[3]
    );
    let got: Vec<_> = actions.iter().map(summary).collect();
    assert_eq!(
        got,
        [NAVIGATE_STAGING, NAVIGATE_PROD_DENIED, CLICK_PLACE_ORDER]
    );
    let lines = raw("claude-stream.jsonl");
    let ids: Vec<_> = actions
        .iter()
        .map(|a| a.tool_use_id.clone().unwrap())
        .collect();
    let want = claude_tool_use_ids(&lines);
    assert_eq!(ids, want);
    assert_eq!(want.len(), 3);
    // The first call's result line: a `user` line carrying its `tool_result`.
    let result_line = lines
        .iter()
        .find(|l| {
            l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == want[0].as_str()
        })
        .unwrap();
    assert_ne!(result_line["timestamp"], lines[1]["timestamp"]);
    assert_eq!(
        actions[0].ts, result_line["timestamp"],
        "the tool_result's timestamp"
    );
    assert_eq!(actions[0].urls[0].path.as_deref(), Some("/welcome"));
    assert!(
        adapter.stats().unknown_types.is_empty(),
        "{:?}",
        adapter.stats()
    );
    let flow = checkout();
    let verdicts: Vec<_> = actions.iter().map(|a| rule(&validate(&flow, a))).collect();
    assert_eq!(verdicts[0], "ok");
    assert_eq!(verdicts[1], "ok", "a denied call never ran");
    assert!(verdicts[2].starts_with("builtin payment"), "{verdicts:?}");
}

#[test]
fn claude_playwright_capture_resolves_the_blue_button_and_the_link() {
    let (actions, _, _) = run(Harness::Claude, "claude-playwright-stream.jsonl");
    let kinds: Vec<_> = actions
        .iter()
        .map(|a| (bare(&a.tool), a.kind, a.outcome))
        .collect();
    use ActionKind::*;
    use Outcome::Completed as C;
    assert_eq!(
        kinds,
        vec![
            ("browser_navigate", Navigate, C),
            ("browser_snapshot", Other, C),
            ("browser_click", Click, C),
            ("browser_navigate", Navigate, C),
            ("browser_snapshot", Other, C),
            ("browser_click", Click, C),
        ]
    );
    // The link click: its href from the snapshot (the app by IP literal, off the allowlist), and
    // no page for the browser's error page.
    let link = &actions[2];
    assert_eq!(link.label.as_deref(), Some("Admin dashboard"));
    assert_eq!(link.element.as_deref(), Some("Admin dashboard link"));
    let roles: Vec<_> = link
        .urls
        .iter()
        .map(|u| (u.role, u.host.as_deref()))
        .collect();
    assert_eq!(roles, vec![(UrlRole::Href, Some("127.0.0.1"))]);
    // The irreversible click: described as "the blue button", really "Place order".
    let buy = &actions[5];
    assert_eq!(buy.label.as_deref(), Some("Place order"));
    assert_eq!(buy.element.as_deref(), Some("the blue button"));
    assert!(buy
        .urls
        .iter()
        .any(|u| u.role == UrlRole::Page && u.path.as_deref() == Some("/checkout/confirm")));

    let flow = checkout();
    let verdicts: Vec<_> = actions.iter().map(|a| rule(&validate(&flow, a))).collect();
    assert_eq!(&verdicts[..2], ["ok", "ok"]);
    // The browser refused the link (resolver rules): journaled as blocked by the browser, with
    // the refused host from the error page's title, and not a violation.
    assert_eq!(verdicts[2], "ok");
    let blocked = link
        .browser_blocked
        .as_ref()
        .expect("blocked by the browser");
    assert_eq!(blocked.how, "error_page");
    assert_eq!(blocked.host.as_deref(), Some("127.0.0.1"));
    assert!(
        actions
            .iter()
            .filter(|a| a.browser_blocked.is_some())
            .count()
            == 1
    );
    assert_eq!(&verdicts[3..5], ["ok", "ok"]);
    assert!(verdicts[5].starts_with("builtin payment"), "{verdicts:?}");
    for a in &actions {
        let line = serde_json::to_string(a).unwrap();
        assert!(!line.contains("://"), "no full URL in the journal: {line}");
    }
}

fn bare(tool: &str) -> &str {
    leopold_guard::bare_tool(tool)
}

#[test]
fn codex_stub_capture_plus_guard_events_shows_the_denial() {
    let (actions, _, adapter) = run(Harness::Codex, "codex-stream.jsonl");
    let got: Vec<_> = actions.iter().map(summary).collect();
    assert_eq!(
        got,
        [NAVIGATE_STAGING, CLICK_PLACE_ORDER],
        "a denied Codex call leaves no item"
    );
    // Codex's item id: the first `mcp_tool_call` item of the stream.
    let first_item = raw("codex-stream.jsonl")
        .into_iter()
        .find(|l| l["item"]["type"] == "mcp_tool_call")
        .unwrap();
    assert_eq!(
        actions[0].tool_use_id.as_deref(),
        first_item["item"]["id"].as_str()
    );
    assert!(
        adapter.stats().unknown_types.is_empty(),
        "{:?}",
        adapter.stats()
    );

    // What the guard wrote during that run (synthetic, in the guard's documented format).
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let mut f = std::fs::File::create(&events).unwrap();
    writeln!(f, r#"{{"ts":"2026-11-30T10:10:55.280Z","event":"persona_guard_block","tool":"mcp__personastub__navigate","host":"prod-dashboard.example.org","flow":"checkout","reason":"outside_allowlist"}}"#).unwrap();
    let (denials, offset) = guard_denials(&events, Harness::Codex, 0, &Default::default()).unwrap();
    assert_eq!(offset, std::fs::metadata(&events).unwrap().len());
    assert_eq!(denials.len(), 1);
    let d = &denials[0];
    assert_eq!(summary(d), NAVIGATE_PROD_DENIED);
    assert_eq!(d.denied_reason.as_deref(), Some("outside_allowlist"));
    assert_eq!(validate(&checkout(), d), Verdict::Ok);
}

#[test]
fn codex_playwright_capture_resolves_the_blue_button() {
    let (actions, _, _) = run(Harness::Codex, "codex-playwright-stream.jsonl");
    let tools: Vec<_> = actions.iter().map(|a| bare(&a.tool)).collect();
    assert_eq!(
        tools,
        ["browser_navigate", "browser_snapshot", "browser_click"]
    );
    let buy = &actions[2];
    assert_eq!(buy.label.as_deref(), Some("Place order"));
    assert_eq!(buy.element.as_deref(), Some("the blue button"));
    let v = validate(&checkout(), buy);
    assert!(rule(&v).starts_with("builtin payment"), "{v:?}");
}

#[test]
fn a_malformed_line_is_reported_and_the_stream_goes_on() {
    let text = std::fs::read_to_string(capture("codex-stream.jsonl")).unwrap();
    let mut adapter = Adapter::new(Harness::Codex);
    let mut events = vec![];
    let mut n = 0;
    for line in text.lines() {
        n += 1;
        events.extend(adapter.push_line(n, line));
        if n == 3 {
            n += 1;
            events.extend(adapter.push_line(n, "{\"type\":\"item.completed\",\"item\":{"));
            n += 1;
            events.extend(adapter.push_line(n, r#"{"type":"thread.rewound"}"#));
        }
    }
    events.extend(adapter.finish());
    let malformed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AdapterEvent::Malformed { line_no, .. } => Some(*line_no),
            _ => None,
        })
        .collect();
    assert_eq!(malformed, [4]);
    let actions = events
        .iter()
        .filter(|e| matches!(e, AdapterEvent::Action(_)))
        .count();
    assert_eq!(actions, 2);
    assert_eq!(
        adapter.stats().unknown_types.get("thread.rewound"),
        Some(&1)
    );
}

#[test]
fn a_stream_cut_mid_call_flushes_the_call_as_unfinished() {
    let text = std::fs::read_to_string(capture("claude-stream.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut adapter = Adapter::new(Harness::Claude);
    let third = &claude_tool_use_ids(&raw("claude-stream.jsonl"))[2];
    // Up to the assistant line that issues the third call, without its result.
    assert!(lines[5].contains(third.as_str()) && lines[5].contains("tool_use"));
    for (i, line) in lines.iter().take(6).enumerate() {
        adapter.push_line(i as u64 + 1, line);
    }
    let rest = adapter.finish();
    assert_eq!(rest.len(), 1);
    let AdapterEvent::Action(a) = &rest[0] else {
        panic!("{rest:?}")
    };
    assert_eq!(a.outcome, Outcome::Unfinished);
    assert_eq!(a.tool_use_id.as_ref(), Some(third));
    assert!(validate(&checkout(), a).is_violation(), "it may have run");
}
