use std::io::BufReader;
use std::path::Path;

use leopold_journal::replay::replay_journal;
use leopold_journal::{
    validate, Action, ActionKind, Harness, JournalHeader, JournalWriter, Outcome, ReplayEvent,
    UrlRef, UrlRole, Verdict,
};
use proptest::prelude::*;

use crate::kit::checkout;

fn url() -> impl Strategy<Value = UrlRef> {
    let role = prop_oneof![
        Just(UrlRole::Target),
        Just(UrlRole::Href),
        Just(UrlRole::Page)
    ];
    let raw = prop_oneof![
        Just("https://staging.example.com/welcome"),
        Just("https://a.staging.example.com/cart"),
        Just("http://staging.example.com/checkout/confirm"),
        Just("https://prod-dashboard.example.org/admin"),
        Just("https://staging.example.com@evil.example/"),
        Just("javascript:alert(1)"),
        Just("//no-scheme.example/"),
        Just("https://staging.example.com./"),
    ];
    (role, raw).prop_map(|(role, raw)| UrlRef::from_raw(role, raw))
}

fn action() -> impl Strategy<Value = Action> {
    let tool = prop_oneof![
        Just("mcp__browser__browser_navigate"),
        Just("mcp__browser__browser_click"),
        Just("mcp__stripe__create_charge"),
        Just("mcp__db__delete_user"),
        Just("WebFetch"),
    ];
    let kind = prop_oneof![
        Just(ActionKind::Navigate),
        Just(ActionKind::Click),
        Just(ActionKind::Type),
        Just(ActionKind::Submit),
        Just(ActionKind::Fetch),
        Just(ActionKind::Other),
    ];
    let outcome = prop_oneof![
        Just(Outcome::Completed),
        Just(Outcome::Errored),
        Just(Outcome::Denied),
        Just(Outcome::Unfinished),
    ];
    let label = proptest::option::of(prop_oneof![
        Just("Place order".to_owned()),
        Just("Add to cart".to_owned()),
        Just("Delete my account".to_owned()),
        "[a-zA-Z \"\\\\]{0,12}",
    ]);
    (
        tool,
        kind,
        outcome,
        proptest::collection::vec(url(), 0..3),
        label,
        proptest::option::of(0u64..40),
    )
        .prop_map(|(tool, kind, outcome, urls, label, typed_len)| Action {
            urls,
            label,
            typed_len,
            ..Action::new(
                Harness::Codex,
                "2026-11-30T10:00:00.000Z".into(),
                tool,
                kind,
                outcome,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Live: validate, journal with the verdict. Replay: the same violations, on the same lines,
    /// no recorded verdict differs, the chain holds and its head is the writer's. Replaying twice
    /// gives the same result.
    #[test]
    fn replay_gives_the_verdicts_live_validation_gave(actions in proptest::collection::vec(action(), 0..40)) {
        let flow = checkout();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let header = JournalHeader::new("p", &flow.name, Path::new("checkout.md"), Harness::Codex, "2026-11-30T10:00:00Z".into());
        let mut w = JournalWriter::create(&path, &header).unwrap();
        let mut live = vec![];
        for mut a in actions {
            let v = validate(&flow, &a);
            a.verdict = Some(v.clone());
            let seq = w.append(&mut a).unwrap();
            if let Verdict::Violation { rule, .. } = v {
                // Line = seq + 1: the header is line 1.
                live.push((seq + 1, rule));
            }
        }
        let live_head = w.head().to_string();
        drop(w);
        let replay_once = || {
            let mut got = vec![];
            let mut changed = 0;
            let f = std::fs::File::open(&path).unwrap();
            let s = replay_journal(&flow, BufReader::new(f), &path, &mut |e| match e {
                ReplayEvent::Violation { line, rule, .. } => got.push((line, rule)),
                ReplayEvent::VerdictChanged { .. } => changed += 1,
                other => panic!("unexpected {other:?}"),
            }).unwrap();
            (got, changed, s)
        };
        let (got, changed, s) = replay_once();
        prop_assert_eq!(&got, &live);
        prop_assert_eq!(changed, 0);
        prop_assert_eq!(s.violations as usize, live.len());
        prop_assert!(s.chained);
        prop_assert_eq!((s.chain_breaks, s.head_mismatches), (0, 0));
        prop_assert_eq!(s.journal_hash.as_deref(), Some(live_head.as_str()));
        let (got2, _, s2) = replay_once();
        prop_assert_eq!(got2, got);
        prop_assert_eq!(s2, s);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever follows a valid header, replay never panics, and every line is accounted for:
    /// an action, a malformed line, a torn last line, or blank.
    #[test]
    fn replay_survives_arbitrary_lines(lines in proptest::collection::vec("[ -~]{0,40}|\\{\"seq\":[0-9],[ -~]{0,30}", 0..20), torn in any::<bool>()) {
        let flow = checkout();
        let mut text = String::from("{\"leopold_journal\":1,\"run_id\":\"p\",\"flow\":\"checkout\",\"flow_path\":\"c.md\",\"harness\":\"codex\",\"started_at\":\"t\"}\n");
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        if torn {
            text.push_str("{\"seq\":");
        }
        let mut n_events = 0u64;
        let s = replay_journal(&flow, text.as_bytes(), Path::new("j"), &mut |_| n_events += 1).unwrap();
        let blank = lines.iter().filter(|l| l.trim().is_empty()).count() as u64;
        prop_assert_eq!(s.actions + s.malformed + u64::from(s.torn_last_line) + blank, lines.len() as u64 + u64::from(torn));
        prop_assert_eq!(s.torn_last_line, torn);
    }

    /// The adapters never panic on arbitrary lines, JSON or not.
    #[test]
    fn adapters_survive_arbitrary_lines(lines in proptest::collection::vec(
        prop_oneof![
            "[ -~]{0,60}",
            Just(r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"mcp__b__browser_click","input":{"ref":"e1"}}]}}"#.to_owned()),
            Just(r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"- button \"x [ref=e1]\n- /url: h"}]}}"#.to_owned()),
            Just(r####"{"type":"item.completed","item":{"id":"a","type":"mcp_tool_call","server":"b","tool":"browser_click","arguments":{"target":"e1"},"result":{"content":[{"type":"text","text":"### Ran Playwright code\ngetByRole('b', { name: '"}]}}}"####.to_owned()),
        ], 0..30)) {
        for harness in [Harness::Claude, Harness::Codex] {
            let mut a = leopold_journal::Adapter::new(harness);
            for (i, l) in lines.iter().enumerate() {
                a.push_line(i as u64 + 1, l);
            }
            a.finish();
        }
    }
}
