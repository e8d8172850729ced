//! The record a run leaves is tamper-evident: the journal's hash-chain head is in `run.json`, in
//! the `run_ended` event and in the summary, `persona replay` recomputes the same head, and a
//! journal changed after the run does not replay clean.

use std::path::Path;

use crate::kit::*;

fn three_navigations() -> String {
    let mut s = String::new();
    for (id, path) in [("t1", "/welcome"), ("t2", "/cart"), ("t3", "/shipping")] {
        s.push_str(&claude_navigate(
            id,
            &format!("https://staging.example.com{path}"),
        ));
        s.push('\n');
        s.push_str(&claude_tool_ok(id));
        s.push('\n');
    }
    s.push_str("@sleep 300\n");
    s
}

fn replay(sb: &Sandbox, run_dir: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["persona", "replay", run_dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = sb.leopold(&args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

fn replay_summary(sb: &Sandbox, run_dir: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let (code, text) = replay(sb, run_dir, &args);
    let last = text
        .lines()
        .rev()
        .find(|l| l.contains(r#""type":"summary""#))
        .unwrap_or_else(|| panic!("no summary: {text}"));
    (code, serde_json::from_str(last).unwrap())
}

#[test]
fn the_head_in_run_json_run_ended_and_replay_is_one_and_tampering_fails_replay() {
    let sb = Sandbox::scripted(&three_navigations());
    let out = sb.run_cmd("claude", &["--json"]).output().unwrap();
    assert_exit_code(&out, 0);
    let ended: serde_json::Value = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "run_ended")
        .unwrap();
    let head = ended["journal_hash"].as_str().unwrap().to_owned();
    assert_eq!(head.len(), 64, "{head}");
    assert!(head
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(sb.run_json()["end"]["journal_hash"], head.as_str());
    let run_dir = sb.run_dir();
    let (code, s) = replay_summary(&sb, &run_dir, &["--expect", &head]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["journal_hash"], head.as_str());
    assert_eq!(s["chained"], true);
    assert_eq!(
        (s["chain_breaks"].as_u64(), s["actions"].as_u64()),
        (Some(0), Some(3))
    );
    let (code, text) = replay(&sb, &run_dir, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("hash chain intact; journal_hash {head}")),
        "{text}"
    );

    let journal = run_dir.join("journal.jsonl");
    let original = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    assert_eq!(lines.len(), 4);
    let write = |ls: &[&str]| std::fs::write(&journal, ls.join("\n") + "\n").unwrap();

    // Line 3 (seq 2) edited: line 4 no longer follows it.
    let edited = lines[2].replace("/cart", "/carts");
    write(&[lines[0], lines[1], &edited, lines[3]]);
    let (code, text) = replay(&sb, &run_dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert_has(&text, ":4: tampered: line 4 does not follow line 3");
    let (code, s) = replay_summary(&sb, &run_dir, &[]);
    assert_eq!((code, s["chain_broken_at"].as_u64()), (1, Some(4)), "{s}");

    // Line 2 removed.
    write(&[lines[0], lines[2], lines[3]]);
    let (code, text) = replay(&sb, &run_dir, &["--json"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            r#"{"type":"chain_break","line":2,"problem":"line 2 does not follow line 1"}"#
        ),
        "{text}"
    );

    // Lines 2 and 3 swapped.
    write(&[lines[0], lines[2], lines[1], lines[3]]);
    let (code, text) = replay(&sb, &run_dir, &[]);
    assert_eq!(code, 1, "{text}");
    assert_has(&text, "line 2 does not follow line 1");

    // The last line cut: the chain still holds, the heads do not.
    write(&lines[..3]);
    let (code, text) = replay(&sb, &run_dir, &["--expect", &head]);
    assert_eq!(code, 1, "{text}");
    let now = leopold_journal::JournalHash::of_line(lines[2].as_bytes()).to_string();
    assert!(
        text.contains(&format!(
            "the journal ends on {now}, not on {head} (--expect)"
        )),
        "{text}"
    );
    assert!(
        text.contains("(run.json)"),
        "run.json's head is checked too: {text}"
    );
    // With run.json rewritten as well, only the saved head can tell.
    let mut rj = sb.run_json();
    rj["end"]["journal_hash"] = now.clone().into();
    std::fs::write(run_dir.join("run.json"), rj.to_string()).unwrap();
    assert_eq!(replay(&sb, &run_dir, &[]).0, 0);
    assert_eq!(replay(&sb, &run_dir, &["--expect", &head]).0, 1);

    // A malformed --expect is a usage error.
    let (code, text) = replay(&sb, &run_dir, &["--expect", "xyz"]);
    assert_eq!(code, 2, "{text}");
    assert_has(&text, "not a journal hash");
}

#[test]
fn the_summary_report_and_junit_show_the_head_on_both_harnesses() {
    for harness in ["claude", "codex"] {
        let sb = Sandbox::with_user_files();
        let script = if harness == "claude" {
            three_navigations()
        } else {
            std::fs::read_to_string(capture("codex-stream.jsonl"))
                .unwrap()
                .lines()
                .filter(|l| !l.contains("Place order"))
                .collect::<Vec<_>>()
                .join("\n")
                + "\n@sleep 200\n"
        };
        sb.set_script(&script);
        let junit = sb.root.join("junit.xml");
        let out = sb
            .run_cmd(harness, &["--quiet", "--junit", junit.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{harness}: {}", stderr(&out));
        let head = sb.run_json()["end"]["journal_hash"]
            .as_str()
            .unwrap()
            .to_owned();
        let text = stdout(&out);
        assert!(
            text.contains(&format!("; journal_hash {head}; see ")),
            "{harness}: {text}"
        );
        // The report and the JUnit file show it too.
        let html = std::fs::read_to_string(sb.run_dir().join("report.html")).unwrap();
        assert!(html.contains(&head), "{harness}: report.html");
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(
            xml.contains(&format!(
                r#"<property name="journal_hash" value="{head}"/>"#
            )),
            "{harness}: {xml}"
        );
        let (code, s) = replay_summary(&sb, &sb.run_dir(), &["--expect", &head]);
        assert_eq!(
            (code, s["journal_hash"].as_str()),
            (0, Some(head.as_str())),
            "{harness}"
        );
    }
}
