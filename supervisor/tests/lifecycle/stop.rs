//! Every way a run ends early stops the worker's whole group and cleans up fully.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::kit::*;

/// `cmd` spawned, returned once its worker runs and has written its record.
fn spawn_until_working(sb: &Sandbox, cmd: &mut std::process::Command) -> std::process::Child {
    let child = cmd.spawn().unwrap();
    wait_for(10, "the worker", || {
        active_worker_pid(sb).is_some() && sb.record().exists()
    });
    child
}

/// `persona run` of the sandbox's flow under `harness`, stdout and stderr each to a new `out`,
/// returned once its worker runs ([`spawn_until_working`]).
fn spawn_run_until_working(sb: &Sandbox, harness: &str, out: fn() -> Stdio) -> std::process::Child {
    spawn_until_working(sb, sb.run_cmd(harness, &[]).stdout(out()).stderr(out()))
}

fn assert_clean_after(
    sb: &Sandbox,
    before: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
) {
    assert_eq!(&sb.snapshot(), before, "files must be byte-identical");
    assert!(!sb.active().exists());
    let rec = sb.worker_record();
    let pid = rec["pid"].as_u64().unwrap() as u32;
    wait_for(5, "the worker to be gone", || !sb.proc_alive(pid));
    assert!(processes_of_run(rec["run_id"].as_str().unwrap()).is_empty());
}

#[test]
fn an_off_allowlist_call_that_reached_the_tool_stops_the_worker_exit_1() {
    let sb = Sandbox::with_user_files();
    // The hook failed open: the navigation ran. The worker would go on for a minute.
    sb.set_script(&format!(
        "{}\n{}\n@sleep 60000\n",
        claude_navigate(
            "t9",
            "https://prod-dashboard.example.org/admin?token=secret"
        ),
        claude_tool_ok("t9")
    ));
    let before = sb.snapshot();
    let t = Instant::now();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 1);
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "stopped, not waited out: {:?}",
        t.elapsed()
    );
    assert_clean_after(&sb, &before);
    let j = sb.journal();
    assert_eq!(j[1]["verdict"]["result"], "violation");
    assert_eq!(j[1]["verdict"]["rule"], "hook_failed_open");
    assert!(j[1]["verdict"]["detail"]
        .as_str()
        .unwrap()
        .contains("prod-dashboard.example.org"));
    let rj = sb.run_json();
    assert_eq!(rj["end"]["outcome"], "violated");
    assert_eq!(rj["end"]["counts"]["violations"], 1);
    assert!(rj["end"]["reason"]
        .as_str()
        .unwrap()
        .contains("hook_failed_open"));
    // Never a full URL, never its token.
    let all = format!(
        "{}{}{}",
        stdout(&out),
        stderr(&out),
        std::fs::read_to_string(sb.run_dir().join("journal.jsonl")).unwrap()
    );
    assert!(!all.contains("secret") && !all.contains("://"), "{all}");
}

#[test]
fn an_irreversible_click_stops_a_worker_that_ignores_sigterm_exit_1() {
    // Unboxed: the supervisor's own group handling (the box would kill its namespace whole).
    let sb = Sandbox::unboxed();
    // The real Codex + Playwright capture: a click on "the blue button" whose ref is the
    // "Place order" button; the worker ignores SIGTERM, so only SIGKILL stops it.
    sb.set_script(&format!(
        "@ignore-sigterm\n@stream {}\n@sleep 60000\n",
        capture("codex-playwright-stream.jsonl").display()
    ));
    let before = sb.snapshot();
    let t = Instant::now();
    let out = sb.run_cmd("codex", &[]).output().unwrap();
    assert_exit_code(&out, 1);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_clean_after(&sb, &before);
    let j = sb.journal();
    let v: Vec<&serde_json::Value> = j
        .iter()
        .filter(|a| a["verdict"]["result"] == "violation")
        .collect();
    assert!(!v.is_empty(), "{j:?}");
    let why = serde_json::to_string(&v[0]["verdict"])
        .unwrap()
        .to_lowercase();
    assert!(
        why.contains("place order") || why.contains("checkout/confirm"),
        "{why}"
    );
    assert_eq!(sb.run_json()["end"]["worker_status"], "signal 9");
}

#[test]
fn sigint_during_a_run_cleans_up_fully() {
    let sb = Sandbox::scripted("@grandchild 60\n@sleep 60000\n");
    let before = sb.snapshot();
    let child = spawn_run_until_working(&sb, "claude", Stdio::piped);
    wait_for(5, "the grandchild", || sb.grandchild_record().exists());
    let g = sb.grandchild_pid().expect("the grandchild's pid");
    signal(child.id(), "INT");
    let out = wait_output(child, 15);
    assert_exit_code(&out, 3);
    assert_clean_after(&sb, &before);
    assert!(!sb.proc_alive(g), "the whole group is stopped");
    let rj = sb.run_json();
    assert_eq!(rj["end"]["outcome"], "interrupted");
    assert_eq!(sb.persona_listing(), RUN_LISTING);
}

#[test]
fn sigterm_and_sighup_clean_up_too() {
    for sig in ["TERM", "HUP"] {
        let sb = Sandbox::scripted("@sleep 60000\n");
        let before = sb.snapshot();
        let child = spawn_run_until_working(&sb, "codex", Stdio::null);
        signal(child.id(), sig);
        let out = wait_output(child, 15);
        assert_eq!(out.status.code(), Some(3), "SIG{sig}");
        assert_clean_after(&sb, &before);
    }
}

#[test]
fn a_timeout_stops_the_worker_exit_3() {
    let sb = Sandbox::scripted("@sleep 60000\n");
    let before = sb.snapshot();
    let out = sb
        .run_cmd("claude", &["--timeout", "300ms"])
        .output()
        .unwrap();
    assert_exit_code(&out, 3);
    assert_clean_after(&sb, &before);
    assert_eq!(sb.run_json()["end"]["outcome"], "timed_out");
}

#[test]
fn a_crashing_worker_is_exit_3_and_cleaned_up() {
    let sb = Sandbox::scripted("not json at all\n@crash\n");
    let before = sb.snapshot();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 3);
    assert_clean_after(&sb, &before);
    let rj = sb.run_json();
    assert_eq!(rj["end"]["outcome"], "worker_failed");
    // bwrap reports a child killed by a signal as 128 + the signal.
    assert_eq!(rj["end"]["worker_status"], "exit 134");
    assert_eq!(rj["end"]["counts"]["unreadable_lines"], 1);
}

#[test]
fn a_grandchild_holding_stdout_after_the_worker_exits_is_killed() {
    // Unboxed: the supervisor's own group handling (the box would kill its namespace whole).
    let sb = Sandbox::unboxed();
    sb.set_script("@grandchild 60\n@exit 0\n");
    let before = sb.snapshot();
    let t = Instant::now();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_clean_after(&sb, &before);
    let g = sb.grandchild_pid().expect("the grandchild's pid");
    assert!(!sb.proc_alive(g));
    assert!(sb.run_json()["end"]["reason"]
        .as_str()
        .unwrap()
        .contains("held its output"));
}

#[test]
fn a_second_signal_skips_the_grace_period() {
    // Unboxed: the supervisor's own group handling (the box would kill its namespace whole).
    let sb = Sandbox::unboxed();
    sb.set_script("@ignore-sigterm\n@sleep 60000\n");
    let before = sb.snapshot();
    let child = spawn_until_working(
        &sb,
        sb.run_cmd("claude", &[])
            .env("__LEOPOLD_STOP_GRACE_MS", "60000")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let pid = child.id();
    signal(pid, "INT");
    std::thread::sleep(Duration::from_millis(300));
    let worker = sb.worker_record()["pid"].as_u64().unwrap() as u32;
    assert!(
        sb.proc_alive(worker),
        "the worker ignores SIGTERM and the grace is a minute"
    );
    let t = Instant::now();
    signal(pid, "INT");
    let out = wait_output(child, 15);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(3));
    assert_clean_after(&sb, &before);
}

#[test]
fn an_overlong_stream_line_is_skipped_and_noted_and_the_run_goes_on() {
    let sb = Sandbox::scripted(&format!(
        "@long {}\n{}\n{}\n",
        17 * 1024 * 1024,
        claude_navigate("t1", "https://staging.example.com/a"),
        claude_tool_ok("t1")
    ));
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    let rj = sb.run_json();
    assert_eq!(rj["end"]["counts"]["unreadable_lines"], 1);
    assert_eq!(rj["end"]["counts"]["actions"], 1);
    assert_has(&stdout(&out), "line 1: line longer than the limit");
}
