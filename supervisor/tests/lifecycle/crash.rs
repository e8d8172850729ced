//! Crash at every step: the supervisor is SIGKILLed while paused at a named lifecycle step
//! (`__LEOPOLD_PAUSE_AT`), then `persona recover` must leave the files byte-identical, no
//! ACTIVE.json, the lock free and no process of the run alive.

use crate::kit::*;

/// One allowed navigation and its result.
fn navigate_action() -> String {
    format!(
        "{}\n{}\n",
        claude_navigate("t1", "https://staging.example.com/a"),
        claude_tool_ok("t1")
    )
}

fn script_for(step: &str) -> String {
    let action = navigate_action();
    if step == "mid-unwire" {
        format!("{action}@exit 0\n")
    } else {
        // A grandchild in the worker's group: the parent-death signal reaches only the worker
        // itself, so this one must be found and killed by recovery.
        format!("@grandchild 60\n{action}@sleep 60000\n")
    }
}

fn crash_then_recover(harness: &str, step: &str) {
    crash_then_recover_in(Sandbox::with_user_files(), harness, step);
}

fn crash_then_recover_in(sb: Sandbox, harness: &str, step: &str) {
    sb.set_script(&script_for(step));
    let before = sb.snapshot();
    let mut child = sb.spawn_paused(harness, step);
    let launched = matches!(step, "launched" | "mid-stream");
    if launched {
        // The supervisor is paused, the worker goes on: let it start its grandchild (in the box
        // that takes a few tens of milliseconds longer) before the supervisor dies.
        wait_for(10, "the worker's grandchild", || {
            sb.grandchild_pid().is_some()
        });
    }
    signal(child.id(), "KILL");
    let _ = child.wait();

    let grandchild = sb.grandchild_pid();
    let run_id = std::fs::read_to_string(sb.active())
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["run_id"].as_str().map(str::to_owned));
    if launched {
        let g = grandchild.expect("the worker started its grandchild");
        wait_for(5, "the worker to die with its supervisor", || {
            let pid = sb.worker_record()["pid"].as_u64().unwrap() as u32;
            !sb.proc_alive(pid)
        });
        // In the box its PID namespace dies with the supervisor, grandchild and all; unboxed,
        // only the worker has the parent-death signal, and recovery kills the rest.
        if sb.unboxed {
            assert!(
                sb.proc_alive(g),
                "the grandchild outlives the supervisor until recovery"
            );
        } else {
            wait_for(5, "the box's grandchild to die with the supervisor", || {
                !sb.proc_alive(g)
            });
        }
    }

    if matches!(
        step,
        "wired" | "settings-written" | "launched" | "mid-stream"
    ) {
        if harness == "codex" {
            // A Codex run wires its own copy of the configuration, in its run directory: the
            // user's files are untouched even by a crash.
            assert_eq!(sb.snapshot(), before, "{step}: a user file changed");
            let id = run_id.as_deref().expect("ACTIVE.json names the run");
            let copy = sb
                .persona_dir()
                .join("runs")
                .join(id)
                .join("scratch/.codex/config.toml");
            let text = std::fs::read_to_string(&copy).unwrap_or_default();
            assert!(
                text.contains("leopold-persona-guard"),
                "{step}: the run's copy {} is wired",
                copy.display()
            );
        } else if sb.unboxed {
            assert_ne!(
                sb.snapshot(),
                before,
                "{step}: the crash must have left the guard wired"
            );
        } else {
            // A boxed Claude run wires no file of the user's (the guard comes through
            // `--settings`): the crash leaves every byte of theirs as it was.
            assert_eq!(sb.snapshot(), before, "{step}: a user file changed");
        }
    }
    if step != "locked" {
        assert!(
            sb.active().exists(),
            "{step}: the crash must have left ACTIVE.json"
        );
    }

    let out = sb.recover();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{step}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    if step != "locked" {
        assert!(
            stdout(&out).contains("crashed run"),
            "{step}: {}",
            stdout(&out)
        );
    }

    assert_eq!(
        sb.snapshot(),
        before,
        "{step}: files must be byte-identical"
    );
    assert!(!sb.active().exists(), "{step}: ACTIVE.json must be gone");
    if let Some(g) = grandchild {
        wait_for(5, "the grandchild to be gone", || !sb.proc_alive(g));
    }
    if sb.record().exists() {
        let pid = sb.worker_record()["pid"].as_u64().unwrap() as u32;
        assert!(!sb.proc_alive(pid), "{step}: worker {pid} still alive");
    }
    if let Some(id) = &run_id {
        assert!(
            processes_of_run(id).is_empty(),
            "{step}: processes of run {id} remain"
        );
        assert!(
            cgroups_of_run(id).is_empty(),
            "{step}: the box's cgroup remains: {:?}",
            cgroups_of_run(id)
        );
        let rj = sb.run_json();
        assert_eq!(rj["run_id"], id.as_str());
        assert_eq!(rj["active"], false);
        assert_eq!(rj["end"]["outcome"], "recovered");
        // Archived as a finished run is: its flow's copy, named relatively, and no scratch.
        assert_eq!(rj["flow_path"], "flow.md", "{step}: {rj}");
        assert!(sb.run_dir().join("flow.md").is_file(), "{step}");
        assert!(!sb.run_dir().join("scratch").exists(), "{step}");
        // The head recovery found in the journal, for a later replay to `--expect`.
        let journal = sb.run_dir().join("journal.jsonl");
        let head = std::fs::File::open(&journal).ok().and_then(|f| {
            leopold_journal::chain::head_of(std::io::BufReader::new(f))
                .unwrap()
                .map(|h| h.to_string())
        });
        assert_eq!(
            rj["end"]["journal_hash"].as_str(),
            head.as_deref(),
            "{step}: {rj}"
        );
        let events = sb.events_text();
        assert!(events.contains("\"persona_recovered\"") && events.contains(id.as_str()));
        assert!(!sb
            .persona_listing()
            .iter()
            .any(|p| p.ends_with("guard-settings.json")));
    } else {
        assert_eq!(sb.persona_listing(), ["run.lock"]);
    }

    // The lock is free: a second recovery takes it and finds nothing to do.
    let again = sb.recover();
    assert_eq!(again.status.code(), Some(0));
    assert_has(&stdout(&again), "nothing to recover");
}

#[test]
fn claude_crash_after_lock() {
    crash_then_recover("claude", "locked");
}
#[test]
fn claude_crash_after_active_written() {
    crash_then_recover("claude", "active-written");
}
#[test]
fn claude_crash_after_wired() {
    crash_then_recover("claude", "wired");
}
#[test]
fn claude_crash_after_project_settings_wired_unboxed() {
    crash_then_recover_in(Sandbox::unboxed(), "claude", "wired");
}
#[test]
fn claude_crash_after_settings_file_written() {
    crash_then_recover("claude", "settings-written");
}
#[test]
fn claude_crash_after_settings_file_written_unboxed() {
    crash_then_recover_in(Sandbox::unboxed(), "claude", "settings-written");
}
#[test]
fn claude_crash_after_launch() {
    crash_then_recover("claude", "launched");
}
#[test]
fn claude_crash_after_launch_unboxed() {
    crash_then_recover_in(Sandbox::unboxed(), "claude", "launched");
}
#[test]
fn codex_crash_after_launch_unboxed() {
    crash_then_recover_in(Sandbox::unboxed(), "codex", "launched");
}
#[test]
fn claude_crash_mid_stream() {
    crash_then_recover("claude", "mid-stream");
}
#[test]
fn claude_crash_mid_unwire() {
    crash_then_recover("claude", "mid-unwire");
}
#[test]
fn claude_crash_mid_unwire_unboxed() {
    crash_then_recover_in(Sandbox::unboxed(), "claude", "mid-unwire");
}
#[test]
fn codex_crash_after_config_wired() {
    crash_then_recover("codex", "wired");
}
#[test]
fn codex_crash_after_launch() {
    crash_then_recover("codex", "launched");
}
#[test]
fn codex_crash_mid_unwire() {
    crash_then_recover("codex", "mid-unwire");
}

#[test]
fn the_next_run_recovers_a_crashed_one_itself() {
    // Unboxed: a boxed Claude run wires nothing of the user's for the next run to restore.
    let sb = Sandbox::unboxed();
    sb.set_script(&script_for("wired"));
    let before = sb.snapshot();
    let mut child = sb.spawn_paused("claude", "wired");
    signal(child.id(), "KILL");
    let _ = child.wait();
    assert_ne!(sb.snapshot(), before, "the crash left the guard wired");

    sb.set_script(&navigate_action());
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    assert_has(&stdout(&out), "recovered: crashed run");
    assert_eq!(sb.snapshot(), before);
    assert_eq!(sb.run_dirs().len(), 2);
    assert!(!sb.active().exists());
}

#[test]
fn an_active_json_this_version_cannot_read_is_left_in_place_with_a_hint() {
    let sb = Sandbox::scripted("@exit 0\n");
    std::fs::create_dir_all(sb.persona_dir()).unwrap();
    std::fs::write(sb.active(), "{\"version\": 99}").unwrap();
    let before = sb.snapshot();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 2);
    let e = stderr(&out);
    assert!(
        e.contains("ACTIVE.json") && e.contains("move") && e.contains("aside"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.active()).unwrap(),
        "{\"version\": 99}"
    );
    assert_eq!(sb.snapshot(), before);
    assert!(!sb.record().exists());
    let out = sb.recover();
    assert_eq!(out.status.code(), Some(2));
}
