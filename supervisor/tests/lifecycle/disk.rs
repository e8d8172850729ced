//! How often a run waits on the disk (docs/reference.md#what-reaches-the-disk): the supervisor
//! counts
//! every fsync/fdatasync it makes (they all go through `fs.rs`, or are noted there) and
//! `__LEOPOLD_TIMINGS` reports the count. A count that creeps up fails here; one that drops must
//! say, in docs/reference.md#what-reaches-the-disk, which file no longer survives a power loss.
use crate::kit::*;

/// A whole run with the timings file set; returns its `fsyncs` count.
fn fsyncs(sb: &Sandbox, harness: &str) -> u64 {
    let timings = sb.root.join("timings.json");
    let out = sb
        .run_cmd(harness, &[])
        .env("__LEOPOLD_TIMINGS", &timings)
        .output()
        .unwrap();
    assert_exit_code(&out, 0);
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&timings).unwrap()).unwrap();
    t["fsyncs"]
        .as_u64()
        .unwrap_or_else(|| panic!("no fsyncs count: {t}"))
}

// Per run: ACTIVE.json as first written (its file: 1; and its directory when the run wires a
// file of the user's: a `--no-contain` Claude run), ACTIVE.json's worker pid (its file, not its
// directory: 1), the journal (1), run.json (2). A `--no-contain` Claude run adds the user's
// settings file wired (2) and restored (2) and the wiring record (2). A boxed Claude run touches
// no user file (the guard comes through `--settings`), nor does Codex: the run wires its own copy
// of the configuration in the run directory, which is removed at the end and needs no sync.
// findings.md adds its file's fsync (its directory is run.json's).
fn without_answer(harness: &str, sb: &Sandbox) -> u64 {
    match harness {
        "claude" if sb.unboxed => 12,
        _ => 5,
    }
}

/// Boxed, both harnesses; and Claude `--no-contain`, the one run that edits a user file.
fn sandboxes() -> [(&'static str, Sandbox); 3] {
    [
        ("claude", Sandbox::with_user_files()),
        ("claude", Sandbox::unboxed()),
        ("codex", Sandbox::with_user_files()),
    ]
}

#[test]
fn a_run_without_an_answer_waits_on_the_disk_only_for_the_users_file_and_the_record() {
    for (harness, sb) in sandboxes() {
        sb.set_script("@exit 0\n");
        assert_eq!(
            fsyncs(&sb, harness),
            without_answer(harness, &sb),
            "{harness}, unboxed: {}",
            sb.unboxed
        );
    }
}

#[test]
fn a_run_with_findings_adds_one_fsync_for_findings_md() {
    for (harness, sb) in sandboxes() {
        let stream = fixture_into_kit(&sb, &format!("{harness}-checkout-guard-stream.jsonl"));
        sb.set_script(&format!("@stream {}\n", stream.display()));
        assert_eq!(
            fsyncs(&sb, harness),
            without_answer(harness, &sb) + 1,
            "{harness}, unboxed: {}",
            sb.unboxed
        );
        assert!(
            sb.run_dir().join("findings.md").exists(),
            "{harness}: the fixture's run gives an answer"
        );
    }
}
