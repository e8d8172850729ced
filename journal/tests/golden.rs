use std::path::Path;

use leopold_journal::{replay, ReplayError, ReplayEvent, ReplayOptions, ReplaySummary};

use crate::kit::golden;

fn run(name: &str) -> (Result<ReplaySummary, ReplayError>, Vec<ReplayEvent>) {
    let opts = ReplayOptions {
        input: golden(name),
        ..ReplayOptions::default()
    };
    let mut events = vec![];
    let r = replay(&opts, &mut |e| events.push(e));
    (r, events)
}

/// A golden journal replayed: its summary and events.
fn replayed(name: &str) -> (ReplaySummary, Vec<ReplayEvent>) {
    let (r, events) = run(name);
    (r.unwrap(), events)
}

/// Why a golden journal cannot be replayed.
fn unreadable(name: &str) -> ReplayError {
    run(name).0.unwrap_err()
}

fn violations(events: &[ReplayEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            ReplayEvent::Violation { line, rule, .. } => Some((*line, rule.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn clean_journal_exits_0_with_its_recorded_flow() {
    let (s, events) = replayed("clean.jsonl");
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(
        (s.actions, s.violations, s.denied, s.malformed),
        (5, 0, 1, 0)
    );
    assert_eq!(s.flow, "checkout");
    assert!(s.flow_path.ends_with("golden/flow.md"), "{:?}", s.flow_path);
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn violations_are_reported_with_line_and_rule_and_exit_1() {
    let (s, events) = replayed("violations.jsonl");
    let v = violations(&events);
    assert_eq!(v.len(), 3, "{events:?}");
    assert_eq!(v[0], (3, "hook_failed_open".to_owned()));
    assert_eq!(v[1].0, 5);
    assert!(v[1].1.starts_with("builtin payment: label"), "{v:?}");
    assert_eq!(
        v[2],
        (6, "hook_failed_open".to_owned()),
        "an errored fetch got past the hook"
    );
    assert_eq!(s.verdicts_changed, 0, "the recorded verdicts are today's");
    assert_eq!((s.actions, s.violations, s.denied), (6, 3, 1));
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn a_stricter_flow_changes_verdicts_and_says_so() {
    let (_dir, strict) = leopold_tests::temp_file(
        "strict.md",
        "+++\nname = \"strict\"\nallowlist = [\"staging.example.com\"]\n[irreversible]\nclick_labels = [\"(?i)cart\"]\n+++\nb\n",
    );
    let opts = ReplayOptions {
        input: golden("clean.jsonl"),
        flow: Some(strict),
        ..ReplayOptions::default()
    };
    let mut events = vec![];
    let s = replay(&opts, &mut |e| events.push(e)).unwrap();
    assert_eq!(s.flow, "strict");
    assert_eq!(
        violations(&events),
        vec![(3, "irreversible.click_labels \"(?i)cart\"".to_owned())]
    );
    assert_eq!(s.verdicts_changed, 1);
    assert!(events.iter().any(|e| matches!(
        e,
        ReplayEvent::VerdictChanged {
            line: 3,
            seq: 2,
            ..
        }
    )));
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn torn_last_line_is_reported_and_skipped() {
    let (s, events) = replayed("torn_last_line.jsonl");
    assert_eq!(events, vec![ReplayEvent::Torn { line: 4 }]);
    assert!(s.torn_last_line);
    assert_eq!((s.actions, s.malformed), (2, 0));
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn malformed_lines_are_reported_by_number_and_the_rest_is_checked() {
    let (s, events) = replayed("malformed_lines.jsonl");
    let lines: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            ReplayEvent::Malformed { line, .. } => Some(*line),
            _ => None,
        })
        .collect();
    assert_eq!(lines, [3, 4, 5]);
    assert!(
        events.iter().any(|e| matches!(e, ReplayEvent::Malformed { line: 4, error } if error.contains("unknown field `password`"))),
        "journals are strict: {events:?}"
    );
    assert_eq!((s.actions, s.malformed), (2, 3));
    assert_eq!(
        s.exit_code(),
        2,
        "a journal with unreadable lines is not clean"
    );
}

#[test]
fn unknown_version_is_unreadable() {
    let err = unreadable("unknown_version.jsonl");
    assert!(
        matches!(err, ReplayError::UnknownVersion { ref version, .. } if version == "3"),
        "{err}"
    );
    assert!(err.to_string().contains("version 3"), "{err}");
}

#[test]
fn a_journal_without_header_is_unreadable() {
    let err = unreadable("no_header.jsonl");
    assert!(matches!(err, ReplayError::NoHeader { .. }), "{err}");
    assert!(
        err.to_string().contains("--from"),
        "the hint names the raw-stream mode: {err}"
    );
}

#[test]
fn a_run_dir_uses_its_run_json_flow_and_tolerates_extra_fields() {
    let dir = leopold_tests::temp_tree(&[
        (
            "flows/lenient.md",
            "+++\nname = \"lenient\"\nallowlist = [\"staging.example.com\", \"prod-dashboard.example.org\", \"evil.example\"]\n+++\nb\n",
        ),
        (
            ".leopold/persona/runs/r7/run.json",
            r#"{"run_id":"r7","flow":"lenient","flow_path":"flows/lenient.md","pid":1234,"future_field":[1]}"#,
        ),
    ]);
    let run = dir.path().join(".leopold/persona/runs/r7");
    std::fs::copy(golden("violations.jsonl"), run.join("journal.jsonl")).unwrap();
    let opts = ReplayOptions {
        input: run.clone(),
        ..ReplayOptions::default()
    };
    let mut events = vec![];
    let s = replay(&opts, &mut |e| events.push(e)).unwrap();
    assert_eq!(
        s.flow, "lenient",
        "run.json's flow_path, resolved against the project root"
    );
    assert_eq!((s.violations, s.verdicts_changed), (0, 2), "{events:?}");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn a_missing_flow_is_unreadable_input() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal.jsonl");
    std::fs::copy(golden("clean.jsonl"), &j).unwrap();
    let opts = ReplayOptions {
        input: j,
        ..ReplayOptions::default()
    };
    let err = replay(&opts, &mut |_| {}).unwrap_err();
    assert!(matches!(err, ReplayError::NoFlow { .. }), "{err}");
    // It names the copy it looked for, the file the run recorded, and what to do.
    let text = err.to_string();
    assert!(text.contains("holds no copy of its flow (flow.md"), "{err}");
    assert!(
        text.contains("the flow it recorded, flow.md, is not there"),
        "{err}"
    );
    assert!(text.contains("pass the flow with --flow FILE"), "{err}");
}

#[test]
fn a_raw_stream_needs_a_flow() {
    let opts = ReplayOptions {
        input: Path::new("x.jsonl").to_path_buf(),
        from: Some(leopold_journal::Harness::Claude),
        ..ReplayOptions::default()
    };
    let err = replay(&opts, &mut |_| {}).unwrap_err();
    assert!(matches!(err, ReplayError::NoFlow { .. }), "{err}");
}

#[test]
fn raw_captures_replay_with_from() {
    for (harness, name, want_actions, want_violations) in [
        (
            leopold_journal::Harness::Claude,
            "claude-stream.jsonl",
            3,
            1,
        ),
        (
            leopold_journal::Harness::Claude,
            "claude-playwright-stream.jsonl",
            6,
            // The Place order click; the link the browser refused is not a violation.
            1,
        ),
        (leopold_journal::Harness::Codex, "codex-stream.jsonl", 2, 1),
        (
            leopold_journal::Harness::Codex,
            "codex-playwright-stream.jsonl",
            3,
            1,
        ),
    ] {
        let opts = ReplayOptions {
            input: crate::kit::capture(name),
            flow: Some(golden("flow.md")),
            from: Some(harness),
            ..ReplayOptions::default()
        };
        let s = replay(&opts, &mut |_| {}).unwrap();
        assert_eq!(
            (s.actions, s.violations, s.malformed),
            (want_actions, want_violations, 0),
            "{name}"
        );
    }
}

#[test]
fn a_removed_line_shows_as_a_seq_gap_and_exit_2() {
    let (s, events) = replayed("seq_gap.jsonl");
    assert_eq!(
        events,
        vec![ReplayEvent::SeqGap {
            line: 4,
            expected: 3,
            found: 4
        }]
    );
    assert_eq!((s.actions, s.violations, s.seq_gaps), (4, 0, 1));
    assert_eq!(
        s.exit_code(),
        2,
        "a journal with a missing line is not clean"
    );
}

#[test]
fn a_broken_run_json_is_unreadable_unless_flow_is_given() {
    let dir = leopold_tests::temp_tree(&[("run.json", "{\"flow_path\": ")]);
    std::fs::copy(golden("clean.jsonl"), dir.path().join("journal.jsonl")).unwrap();
    let mut opts = ReplayOptions {
        input: dir.path().to_path_buf(),
        ..ReplayOptions::default()
    };
    let err = replay(&opts, &mut |_| {}).unwrap_err();
    assert!(matches!(err, ReplayError::RunInfo { .. }), "{err}");
    assert!(err.to_string().contains("run.json"), "{err}");
    opts.flow = Some(golden("flow.md"));
    assert_eq!(replay(&opts, &mut |_| {}).unwrap().exit_code(), 0);
}
