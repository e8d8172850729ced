//! The README's first command, as a user runs it (minus the install and build `scripts/demo.sh`
//! does first): `leopold-demo` over both real CLIs.

use std::process::Command;
use std::time::Duration;

use leopold_tests::{kit_bin, leopold_bin, require_cli, run_bounded, Harness};

#[test]
fn demo_runs_checkout_under_both_harnesses_and_reports_hosts_reasons_and_journal() {
    let (Some(claude), Some(codex)) = (require_cli(Harness::Claude), require_cli(Harness::Codex))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(kit_bin("leopold-demo"));
    cmd.arg("--dir")
        .arg(dir.path())
        .env("LEOPOLD_BIN", leopold_bin())
        .env("LEOPOLD_CLAUDE_BIN", claude)
        .env("LEOPOLD_CODEX_BIN", codex);
    let run = run_bounded(cmd, Duration::from_secs(120));
    assert!(run.status.success(), "{run}");
    let out = &run.stdout;
    for h in ["Claude Code", "Codex CLI"] {
        assert!(out.contains(h), "{out}");
    }
    // Per harness: the two allowed targets, the five blocks with hosts and reasons, the journal.
    assert_eq!(
        out.matches("navigate  staging.example.com").count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.matches("prod-dashboard.example.org   outside_allowlist")
            .count(),
        2,
        "{out}"
    );
    // The demo's table and the progress line, per harness.
    assert_eq!(out.matches("irreversible_label").count(), 4, "{out}");
    // One journal for both harnesses: the same calls read the same, label, every host of the
    // batch and the reason included.
    assert_eq!(
        out.matches("click \"Place order\" — irreversible_label")
            .count(),
        2,
        "{out}"
    );
    let progress = |section: &str| -> Vec<String> {
        section
            .lines()
            .filter(|l| l.trim_start().starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let (claude, codex) = out.split_once("== Codex CLI").expect("two sections");
    assert_eq!(progress(claude), progress(codex), "{out}");
    assert_eq!(progress(claude).len(), 7, "{out}");
    assert_eq!(out.matches("the journal (7 actions): ").count(), 2, "{out}");
    assert!(
        out.contains("Every run stayed inside the flow's bounds."),
        "{out}"
    );
    // Hosts only: the demo never prints a URL.
    assert!(!out.contains("://"), "{out}");
}
