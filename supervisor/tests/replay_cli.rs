//! `leopold persona replay` end to end: the real binary on the journal crate's golden journals and
//! on the real harness captures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::kit::{assert_has, capture};

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../journal/tests/golden")
        .join(name)
}

fn leopold(args: &[&std::ffi::OsStr]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_leopold"))
        .args(args)
        .env("HOME", home.path())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    out
}

fn replay(extra: &[&str], input: &Path) -> (i32, String, String) {
    let mut args: Vec<&std::ffi::OsStr> =
        vec!["persona".as_ref(), "replay".as_ref(), input.as_os_str()];
    args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    let out = leopold(&args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        !stdout.contains("://") && !stderr.contains("://"),
        "no full URL printed:\n{stdout}\n{stderr}"
    );
    (out.status.code().unwrap(), stdout, stderr)
}

/// `persona replay` of a golden journal, exiting `code`: its stdout.
fn replay_golden(name: &str, code: i32) -> String {
    let (got, out, err) = replay(&[], &golden(name));
    assert_eq!(got, code, "{out}{err}");
    out
}

#[test]
fn clean_journal_exits_0_with_a_summary() {
    let out = replay_golden("clean.jsonl", 0);
    assert_has(
        &out,
        "replay: 5 actions checked against flow `checkout`: 0 violations, 1 denied",
    );
}

#[test]
fn violations_print_file_line_and_rule_and_exit_1() {
    let out = replay_golden("violations.jsonl", 1);
    assert!(
        out.contains(
            "violations.jsonl:3: violation: hook_failed_open (host prod-dashboard.example.org)"
        ),
        "{out}"
    );
    assert_has(
        &out,
        "violations.jsonl:5: violation: builtin payment: label",
    );
    assert_has(
        &out,
        "violations.jsonl:6: violation: hook_failed_open (host evil.example)",
    );
    assert_has(&out, "3 violations, 1 denied");
}

#[test]
fn json_output_is_one_object_per_line_ending_with_the_summary() {
    let (code, out, _) = replay(&["--json"], &golden("violations.jsonl"));
    assert_eq!(code, 1);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[0]["type"], "violation");
    assert_eq!(lines[0]["line"], 3);
    assert_eq!(lines[0]["rule"], "hook_failed_open");
    let summary = &lines[3];
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["violations"], 3);
    assert_eq!(summary["exit_code"], 1);
}

#[test]
fn torn_last_line_is_reported_and_exit_stays_0() {
    let out = replay_golden("torn_last_line.jsonl", 0);
    assert_has(&out, "torn_last_line.jsonl:4: torn last line");
    assert_has(&out, "torn last line skipped");
}

#[test]
fn malformed_lines_are_numbered_and_exit_2() {
    let out = replay_golden("malformed_lines.jsonl", 2);
    for n in [3, 4, 5] {
        assert!(
            out.contains(&format!(
                "malformed_lines.jsonl:{n}: malformed line skipped"
            )),
            "{out}"
        );
    }
    assert_has(&out, "3 malformed lines skipped");
}

#[test]
fn unknown_version_and_missing_header_exit_2_with_a_hint() {
    let (code, out, err) = replay(&[], &golden("unknown_version.jsonl"));
    assert_eq!(code, 2, "{out}{err}");
    assert_has(&err, "version 3 journal");
    let (code, _, err) = replay(&["--json"], &golden("no_header.jsonl"));
    assert_eq!(code, 2);
    assert_has(&err, "is not a Leopold journal");
    assert_has(&err, "hint:");
}

#[test]
fn a_missing_input_exits_2_naming_it() {
    let (code, _, err) = replay(&[], Path::new("/nonexistent/journal.jsonl"));
    assert_eq!(code, 2);
    assert_has(&err, "/nonexistent/journal.jsonl");
}

#[test]
fn raw_streams_are_checked_with_from_and_flow() {
    let flow = golden("flow.md");
    let flow = flow.to_str().unwrap();
    let (code, out, err) = replay(
        &["--from", "claude-stream", "--flow", flow],
        &capture("claude-playwright-stream.jsonl"),
    );
    assert_eq!(code, 1, "{out}{err}");
    // The link click the browser refused (its resolver rules) is not a violation: it is
    // journaled as blocked by the browser.
    assert!(!out.contains("left_allowlist"), "{out}");
    assert_has(&out, ":13: violation: builtin payment");
    let (code, out, _) = replay(
        &["--from", "codex-json", "--flow", flow],
        &capture("codex-playwright-stream.jsonl"),
    );
    assert_eq!(code, 1, "{out}");
    assert_has(&out, "3 actions checked");
    let (code, _, err) = replay(&["--from", "codex-json"], &capture("codex-stream.jsonl"));
    assert_eq!(code, 2);
    assert_has(&err, "--flow");
}

#[test]
fn a_seq_gap_is_reported_and_exit_2() {
    let out = replay_golden("seq_gap.jsonl", 2);
    assert_has(&out, "seq_gap.jsonl:4: seq 4 where 3 was expected");
    assert_has(&out, "1 seq gap");
}

/// The gateway's record beside the journal (`gateway.jsonl`, hash-chained from its first line)
/// is checked too: its links, and its head against the one run.json recorded. Edited, cut or
/// removed, it is reported as tampered and the exit is 1.
#[test]
fn the_gateway_record_beside_the_journal_is_checked_link_by_link_and_against_its_head() {
    use leopold_journal::chain::{link, JournalHash};
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(golden("clean.jsonl"), run.join("journal.jsonl")).unwrap();
    let mut prev = leopold_journal::GENESIS;
    let lines: Vec<String> = (1..=3)
        .map(|seq| {
            let mut l =
                format!(r#"{{"event":"call","seq":{seq},"tool":"browser_snapshot"}}"#).into_bytes();
            prev = link(&mut l, &prev).unwrap();
            String::from_utf8(l).unwrap()
        })
        .collect();
    let head: JournalHash = prev;
    let write = |ls: &[String]| {
        std::fs::write(run.join("gateway.jsonl"), ls.join("\n") + "\n").unwrap();
    };
    std::fs::write(
        run.join("run.json"),
        format!(r#"{{"end":{{"gateway_hash":"{head}"}}}}"#),
    )
    .unwrap();
    let flow = golden("flow.md");
    let flow = flow.to_str().unwrap();
    let shown = run.join("gateway.jsonl").display().to_string();

    write(&lines);
    let (code, out, err) = replay(&["--flow", flow], &run);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "replay: gateway record (3 lines): hash chain intact; gateway_hash {head}"
        )),
        "{out}"
    );

    // Line 2 edited: line 3's link breaks.
    let mut edited = lines.clone();
    edited[1] = edited[1].replace("browser_snapshot", "browser_evaluate");
    write(&edited);
    let (code, out, _) = replay(&["--flow", flow], &run);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "{shown}:3: tampered: its `prev` is not the hash of the line before"
        )),
        "{out}"
    );
    assert_has(&out, "the gateway record's hash chain broken");

    // The last line cut off: the chain holds, the head recorded in run.json does not.
    write(&lines[..2]);
    let (code, out, _) = replay(&["--flow", flow], &run);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("{shown}: tampered: the gateway record ends on "))
            && out.contains(&format!("not on {head} (run.json)")),
        "{out}"
    );

    // Removed.
    std::fs::remove_file(run.join("gateway.jsonl")).unwrap();
    let (code, out, _) = replay(&["--flow", flow], &run);
    assert_eq!(code, 1, "{out}");
    assert_has(&out, "and the record is gone or empty");
}
