use std::path::{Path, PathBuf};

use leopold_journal::{
    replay, validate, Action, ActionKind, Harness, JournalHash, JournalHeader, JournalWriter,
    Outcome, ReplayEvent, ReplayOptions, ReplaySummary, UrlRef, UrlRole,
};
use proptest::prelude::*;

use crate::kit::{checkout, golden};

/// A chained journal of `n` actions, as the supervisor writes it; returns its path and head.
fn write_journal(dir: &Path, n: u64) -> (PathBuf, JournalHash) {
    let flow = checkout();
    let path = dir.join("journal.jsonl");
    let header = JournalHeader::new(
        "r1",
        &flow.name,
        Path::new("flow.md"),
        Harness::Claude,
        "2026-11-30T10:00:00.000Z".into(),
    );
    let mut w = JournalWriter::create(&path, &header).unwrap();
    for i in 0..n {
        let host = if i == 2 {
            "prod.example.org"
        } else {
            "staging.example.com"
        };
        let mut a = Action {
            tool_use_id: Some(format!("toolu_{i}")),
            urls: vec![UrlRef::from_raw(
                UrlRole::Target,
                &format!("https://{host}/p{i}"),
            )],
            ..Action::new(
                Harness::Claude,
                format!("2026-11-30T10:00:{:02}.000Z", i % 60),
                "mcp__browser__browser_navigate",
                ActionKind::Navigate,
                Outcome::Completed,
            )
        };
        a.verdict = Some(validate(&flow, &a));
        w.append(&mut a).unwrap();
    }
    w.sync().unwrap();
    (path, w.head())
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Rewrites the journal at `path` with `edit` applied to its lines.
fn edit_lines<R>(path: &Path, edit: impl FnOnce(&mut Vec<String>) -> R) {
    let mut lines = lines_of(path);
    let _ = edit(&mut lines);
    write_lines(path, &lines);
}

/// [`run`] without a head, after [`edit_lines`].
fn run_edited<R>(
    path: &Path,
    edit: impl FnOnce(&mut Vec<String>) -> R,
) -> (ReplaySummary, Vec<ReplayEvent>) {
    edit_lines(path, edit);
    run(path, None)
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// Replays on one thread and on three: the findings must not depend on how many check lines.
fn run(path: &Path, expect: Option<JournalHash>) -> (ReplaySummary, Vec<ReplayEvent>) {
    let [one, three] = [1, 3].map(|n| {
        let opts = ReplayOptions {
            input: path.to_path_buf(),
            flow: Some(golden("flow.md")),
            from: None,
            expect,
            threads: std::num::NonZeroUsize::new(n),
        };
        let mut events = vec![];
        let s = replay(&opts, &mut |e| events.push(e)).unwrap();
        (s, events)
    });
    assert_eq!(
        one,
        three,
        "one thread and three differ on {}",
        path.display()
    );
    one
}

fn breaks(events: &[ReplayEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            ReplayEvent::ChainBreak { line, problem } => Some((*line, problem.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn an_untouched_journal_verifies_and_its_head_is_the_writers() {
    let dir = tempfile::tempdir().unwrap();
    let (path, head) = write_journal(dir.path(), 6);
    let (s, events) = run(&path, Some(head));
    assert!(s.chained);
    assert_eq!(s.journal_hash, Some(head.to_string()));
    assert_eq!((s.chain_breaks, s.head_mismatches), (0, 0), "{events:?}");
    // The one violation is the off-allowlist navigation, and only that.
    assert_eq!(s.violations, 1);
    assert_eq!(
        leopold_journal::chain::head_of(
            std::fs::File::open(&path)
                .map(std::io::BufReader::new)
                .unwrap()
        )
        .unwrap(),
        Some(head)
    );
}

#[test]
fn an_edited_line_breaks_the_chain_at_the_line_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_journal(dir.path(), 6);
    let mut lines = lines_of(&path);
    // Line 4 is the violation (seq 3): rewritten to a staging host, the way the planted process did.
    assert!(lines[3].contains("prod.example.org"));
    lines[3] = lines[3]
        .replace("prod.example.org", "staging.example.com")
        .replace(
            r#"{"result":"violation","rule":"left_allowlist"#,
            r#"{"result":"ok"#,
        );
    write_lines(&path, &lines);
    let (s, events) = run(&path, None);
    assert_eq!(s.violations, 0, "the edit hid the violation");
    assert_eq!(
        breaks(&events),
        vec![(5, "line 5 does not follow line 4".to_owned())]
    );
    assert_eq!(s.chain_broken_at, Some(5));
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn a_removed_line_breaks_the_chain_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (path, head) = write_journal(dir.path(), 6);
    edit_lines(&path, |lines| lines.remove(3));
    let (s, events) = run(&path, Some(head));
    assert_eq!(
        breaks(&events),
        vec![(4, "line 4 does not follow line 3".to_owned())]
    );
    assert_eq!(s.seq_gaps, 1);
    assert_eq!(s.head_mismatches, 0, "the tail is intact");
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn reordered_lines_break_the_chain_at_the_first_moved_line() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_journal(dir.path(), 6);
    let (s, events) = run_edited(&path, |lines| lines.swap(3, 4));
    let b = breaks(&events);
    assert_eq!(b[0], (4, "line 4 does not follow line 3".to_owned()));
    assert_eq!(
        b.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
        vec![4, 5, 6],
        "every link around the move: {b:?}"
    );
    assert_eq!(s.exit_code(), 1);
}

#[test]
fn an_edited_header_breaks_the_chain_at_line_2() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_journal(dir.path(), 3);
    let (s, events) = run_edited(&path, |lines| {
        lines[0] = lines[0].replace("10:00:00.000Z", "09:00:00.000Z")
    });
    assert_eq!(breaks(&events)[0].0, 2, "{events:?}");
    assert_eq!(s.exit_code(), 1);
    // A header whose own link is not the genesis is line 1's fault.
    let (_, events) = run_edited(&path, |lines| {
        lines[0] = lines[0].replace(&"0".repeat(64), &"1".repeat(64))
    });
    assert_eq!(breaks(&events)[0].0, 1, "{events:?}");
}

#[test]
fn a_blank_or_unreadable_line_in_a_chained_journal_is_a_break_too() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_journal(dir.path(), 4);
    let (s, events) = run_edited(&path, |lines| lines.insert(2, String::new()));
    assert_eq!(breaks(&events)[0].0, 3, "{events:?}");
    assert_eq!(s.exit_code(), 1);
    let (s, events) = run_edited(&path, |lines| lines[2] = "not json".into());
    assert_eq!((s.malformed, breaks(&events)[0].0), (1, 3), "{events:?}");
    // A second header where an action belongs links to nothing.
    let (_, events) = run_edited(&path, |lines| lines[2] = lines[0].clone());
    assert_eq!(breaks(&events)[0].0, 3, "{events:?}");
}

#[test]
fn a_cut_tail_or_an_edited_last_line_is_caught_only_against_the_saved_head() {
    let dir = tempfile::tempdir().unwrap();
    let (path, head) = write_journal(dir.path(), 6);
    let mut lines = lines_of(&path);
    lines.truncate(5);
    write_lines(&path, &lines);
    let (s, events) = run(&path, None);
    assert_eq!(
        (s.chain_breaks, s.head_mismatches, s.violations),
        (0, 0, 1),
        "the journal alone cannot show a cut tail: {events:?}"
    );
    let (s, events) = run(&path, Some(head));
    assert_eq!(s.head_mismatches, 1);
    let found = JournalHash::of_line(lines[4].as_bytes()).to_string();
    assert_eq!(
        events.last(),
        Some(&ReplayEvent::HeadMismatch {
            from: "--expect".into(),
            expected: head.to_string(),
            found: Some(found),
        })
    );
    // The same on a journal with nothing else to report: exit 0 without the head, 1 with it.
    let (path, head) = write_journal(&dir.path().join("c"), 2);
    edit_lines(&path, |lines| lines.pop());
    assert_eq!(run(&path, None).0.exit_code(), 0);
    assert_eq!(run(&path, Some(head)).0.exit_code(), 1);

    let (path, head) = write_journal(&dir.path().join("b"), 3);
    let mut lines = lines_of(&path);
    let last = lines.len() - 1;
    lines[last] = lines[last].replace("toolu_2", "toolu_9");
    write_lines(&path, &lines);
    assert_eq!(run(&path, None).0.exit_code(), 1, "still the violation");
    let (s, _) = run(&path, Some(head));
    assert_eq!((s.chain_breaks, s.head_mismatches), (0, 1));
}

#[test]
fn run_json_s_recorded_head_is_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    let (path, head) = write_journal(dir.path(), 4);
    let run_json = |hash: &str| {
        std::fs::write(
            dir.path().join("run.json"),
            format!(
                r#"{{"flow_path":"x.md","end":{{"outcome":"clean","journal_hash":"{hash}"}}}}"#
            ),
        )
        .unwrap();
    };
    run_json(&head.to_string());
    let (s, events) = run(&path, None);
    assert_eq!(s.head_mismatches, 0, "{events:?}");
    let (s, events) = run_edited(&path, |lines| lines.pop());
    assert_eq!(s.head_mismatches, 1, "{events:?}");
    assert!(
        matches!(&events[..], [.., ReplayEvent::HeadMismatch { from, .. }] if from == "run.json")
    );
    run_json("not a hash");
    assert_eq!(run(&path, None).0.head_mismatches, 1);
}

#[test]
fn a_journal_from_before_the_chain_is_unchained_not_a_finding_unless_a_head_is_expected() {
    let (s, events) = run(&golden("clean.jsonl"), None);
    assert!(!s.chained && s.journal_hash.is_none());
    assert_eq!((s.exit_code(), events.len()), (0, 0), "{events:?}");
    let (s, events) = run(&golden("clean.jsonl"), Some(leopold_journal::GENESIS));
    assert_eq!(s.exit_code(), 1);
    assert!(
        matches!(&events[..], [ReplayEvent::HeadMismatch { found: None, .. }]),
        "{events:?}"
    );
}

#[test]
fn a_chained_journal_relabelled_version_1_is_not_taken_as_unchained() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_journal(dir.path(), 3);
    let mut lines = lines_of(&path);
    lines[0] = lines[0]
        .replace(r#""leopold_journal":2"#, r#""leopold_journal":1"#)
        .replace(&format!(r#","prev":"{}""#, "0".repeat(64)), "");
    write_lines(&path, &lines);
    let (s, events) = run(&path, None);
    assert!(!s.chained);
    assert_eq!(
        breaks(&events),
        vec![(
            2,
            "line 2 carries a hash-chain `prev`, but line 1 says version 1 (before the chain): the header was changed".to_owned()
        )]
    );
    assert_eq!(
        (s.actions, s.malformed, s.violations),
        (3, 0, 1),
        "still judged"
    );
    assert_eq!(s.exit_code(), 1);
}

#[derive(Debug, Clone)]
enum Tamper {
    Edit(usize),
    Remove(usize),
    Swap(usize),
    Insert(usize),
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any one edit, removal, insertion or swap of lines after the run (the header edited or
    /// duplicated too; without its header a file is not a journal, which replay refuses):
    /// replay exits 1, naming the first line that does not follow, or, where the chain itself is
    /// intact (the last line edited, the tail cut), the head differs from the saved one.
    #[test]
    fn any_tampering_is_caught(n in 2u64..12, op in prop_oneof![
        (0usize..13).prop_map(Tamper::Edit),
        (0usize..13).prop_map(Tamper::Remove),
        (0usize..12).prop_map(Tamper::Swap),
        (0usize..13).prop_map(Tamper::Insert),
    ]) {
        let dir = tempfile::tempdir().unwrap();
        let (path, head) = write_journal(dir.path(), n);
        let mut lines = lines_of(&path);
        let len = lines.len();
        let first_bad = match op {
            Tamper::Edit(i) => {
                let i = i % len;
                lines[i] = lines[i].replacen("2026-11-30", "2026-11-29", 1);
                i + 2
            }
            Tamper::Remove(i) => {
                let i = 1 + i % (len - 1);
                lines.remove(i);
                i + 1
            }
            Tamper::Swap(i) => {
                let i = 1 + i % (len - 2);
                lines.swap(i, i + 1);
                i + 1
            }
            Tamper::Insert(i) => {
                let i = i % len;
                let copy = lines[i].clone();
                lines.insert(i, copy);
                i + 2
            }
        };
        write_lines(&path, &lines);
        let (s, events) = run(&path, Some(head));
        prop_assert_eq!(s.exit_code(), 1);
        let first = breaks(&events).first().map(|b| b.0 as usize);
        if first_bad <= lines.len() {
            prop_assert_eq!(first, Some(first_bad), "{:?}", events);
        } else {
            // The last line edited or removed: the chain holds, the head says so.
            prop_assert_eq!((s.chain_breaks, s.head_mismatches), (0, 1), "{:?}", events);
        }
    }
}
