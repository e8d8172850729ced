//! Whole runs: during the run ACTIVE.json and the wiring exist; after it, nothing remains but the
//! run directory, and the settings and config files are byte-identical to before.

use crate::kit::*;

fn clean_claude_script() -> String {
    let mut s = String::new();
    s.push_str(&claude_navigate(
        "t1",
        "https://staging.example.com/welcome",
    ));
    s.push('\n');
    s.push_str(&claude_tool_ok("t1"));
    s.push_str("\n@sleep 400\n");
    s
}

#[test]
fn claude_run_wires_during_and_leaves_only_the_run_dir_after() {
    claude_run_wires_during_and_leaves(Sandbox::with_user_files());
}

#[test]
fn claude_run_wires_during_and_leaves_only_the_run_dir_after_unboxed() {
    claude_run_wires_during_and_leaves(Sandbox::unboxed());
}

/// Boxed, the guard's one layer is the `--settings` file and the user's `.claude/settings.json`
/// is not touched even during the run; `--no-contain`, the guard is wired in both.
fn claude_run_wires_during_and_leaves(sb: Sandbox) {
    sb.set_script(&clean_claude_script());
    let before = sb.snapshot();
    let child = sb
        .run_cmd("claude", &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // During: ACTIVE.json names the run and its worker; the guard is wired.
    wait_for(10, "the worker to start", || sb.record().exists());
    wait_for(10, "worker_pid in ACTIVE.json", || {
        active_worker_pid(&sb).is_some()
    });
    let active: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.active()).unwrap()).unwrap();
    assert_eq!(active["active"], true);
    assert_eq!(active["flow"], "checkout");
    assert_eq!(active["harness"], "claude");
    assert_eq!(active["flow_path"], sb.flow().display().to_string());
    assert_eq!(active["supervisor_pid"], child.id());
    let settings = std::fs::read_to_string(sb.project.join(".claude/settings.json")).unwrap();
    if sb.unboxed {
        assert_eq!(active["wiring"][0]["tag"], "leopold-persona-guard");
        assert_has(&settings, "persona guard");
    } else {
        assert_eq!(active["wiring"], serde_json::json!([]), "{active}");
        assert_eq!(sb.snapshot(), before, "a boxed run changed a user file");
    }
    let gs = active["guard_settings"].as_str().unwrap().to_owned();
    assert!(std::fs::read_to_string(&gs)
        .unwrap()
        .contains("persona guard"));

    let out = wait_output(child, 20);
    assert_exit_code(&out, 0);

    // After: byte-identical files, only the run dir (and the inert lock file) remain.
    assert_eq!(sb.snapshot(), before);
    let listing = if sb.unboxed {
        unboxed_run_listing()
    } else {
        RUN_LISTING.to_vec()
    };
    assert_eq!(sb.persona_listing(), listing);
    assert!(!std::path::Path::new(&gs).exists());
    // The proof ran the real wired guard: its denial of the probe host is the first event.
    let events = sb.events_text();
    assert!(
        events
            .lines()
            .next()
            .unwrap()
            .contains("leopold-proof.invalid"),
        "{events}"
    );
    let rj = sb.run_json();
    assert_eq!(rj["active"], false);
    assert_eq!(rj["end"]["outcome"], "clean");
    assert_eq!(rj["end"]["counts"]["actions"], 1);
    // run.json points at the run directory's copy of the flow, byte for byte the file given.
    assert_eq!(rj["flow_path"], "flow.md");
    assert_eq!(rj["flow_source"], sb.flow().display().to_string());
    assert_eq!(
        std::fs::read(sb.run_dirs()[0].join("flow.md")).unwrap(),
        std::fs::read(sb.flow()).unwrap()
    );
    assert_eq!(rj["flow"], "checkout");

    // What the worker was given.
    let rec = sb.worker_record();
    let argv: Vec<String> = serde_json::from_value(rec["argv"].clone()).unwrap();
    assert_eq!(
        &argv[..5],
        [
            "-p",
            argv[1].as_str(),
            "--output-format",
            "stream-json",
            "--verbose"
        ]
    );
    assert!(argv[1].contains("Walk the checkout") && argv[1].contains("staging.example.com"));
    let i = argv
        .iter()
        .position(|a| a == "--settings")
        .expect("--settings");
    assert_eq!(argv[i + 1], gs);
    assert!(!argv.iter().any(|a| a == "--bare" || a == "--safe-mode"));
    // In the box, pids are the box's own: bwrap leads the group the supervisor signals.
    assert_ne!(rec["pgid"], std::process::id());
    assert_eq!(rec["stdin_is_null"], true);
    assert_eq!(rec["cwd"], sb.project.display().to_string());
    assert_eq!(rec["run_id"], rj["run_id"]);
    let journal = sb.journal();
    assert_eq!(journal[0]["leopold_journal"], 2);
    assert_eq!(journal[1]["tool"], "mcp__personastub__navigate");
    assert_eq!(journal[1]["verdict"]["result"], "ok");
    // Progress shows hosts, never full URLs.
    assert!(stdout(&out).contains("staging.example.com"));
    assert!(!stdout(&out).contains("://"), "{}", stdout(&out));
}

#[test]
fn codex_run_gets_its_flags_and_mcp_servers_without_touching_user_files() {
    let sb = Sandbox::with_user_files();
    let clean: Vec<&str> = std::fs::read_to_string(capture("codex-stream.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.contains("Place order"))
        .map(|l| Box::leak(l.to_owned().into_boxed_str()) as &str)
        .collect();
    sb.set_script(&(clean.join("\n") + "\n@sleep 200\n"));
    let mcp = sb.root.join("mcp.json");
    std::fs::write(
        &mcp,
        r#"{"mcpServers":{"browser":{"command":"/opt/playwright-mcp","args":["--isolated"]}}}"#,
    )
    .unwrap();
    let before = sb.snapshot();
    let out = sb
        .run_cmd("codex", &["--mcp-config", mcp.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit_code(&out, 0);
    assert_eq!(sb.snapshot(), before);
    // The capture's model ends with an answer ("Done."): the run saved it as findings.md.
    // The gateway's record and the worker's MCP config (the relay) join the run's files, and
    // the answer is also the model's last narration (Codex's every agent message is one).
    let mut listing = RUN_LISTING.to_vec();
    listing.insert(2, "runs/<run>/findings.md");
    listing.insert(7, "runs/<run>/narration.jsonl");
    assert_eq!(sb.persona_listing(), listing);
    assert_eq!(
        std::fs::read_to_string(sb.run_dirs()[0].join("findings.md")).unwrap(),
        "Done."
    );
    let argv: Vec<String> = serde_json::from_value(sb.worker_record()["argv"].clone()).unwrap();
    assert_eq!(
        &argv[..6],
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "-s",
            "read-only",
        ]
    );
    // The server itself is the gateway's to start: the worker is given the relay to it.
    assert!(
        !argv
            .iter()
            .any(|a| a == "--dangerously-bypass-approvals-and-sandbox"),
        "{argv:?}"
    );
    let cd = argv.iter().position(|a| a == "-C").expect("-C");
    assert_eq!(argv[cd + 1], sb.project.to_str().unwrap());
    assert!(
        argv.iter()
            .any(|a| a == "mcp_servers.browser.default_tools_approval_mode=\"approve\""),
        "{argv:?}"
    );
    assert!(
        argv.iter()
            .any(|a| a.starts_with("mcp_servers.browser.command=") && a.contains("leopold")),
        "{argv:?}"
    );
    assert!(
        argv.iter()
            .any(|a| a.starts_with("mcp_servers.browser.args=")
                && a.contains("mcp-relay")
                && a.contains("mcp-browser.sock")),
        "{argv:?}"
    );
    assert!(
        !argv.iter().any(|a| a.contains("/opt/playwright-mcp")),
        "{argv:?}"
    );
    assert!(argv.last().unwrap().contains("Walk the checkout"));
    let rj = sb.run_json();
    assert_eq!(rj["harness"], "codex");
    assert_eq!(rj["end"]["outcome"], "clean");
    assert_eq!(rj["end"]["counts"]["completed"], 1);
    // The guard was wired into the run's own copy of the configuration, never the user's
    // (run.json names it relative to the run directory, whose scratch is gone with it).
    assert_eq!(rj["wiring"][0]["file"], "scratch/.codex/config.toml");
    assert!(!sb.run_dirs()[0].join("scratch").exists());
}

#[test]
fn json_mode_prints_one_object_per_line_and_quiet_only_the_summary() {
    let sb = Sandbox::scripted(&clean_claude_script());
    let out = sb.run_cmd("claude", &["--json"]).output().unwrap();
    assert_exit_code(&out, 0);
    let events: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["run_started", "action", "run_ended"]);
    assert_eq!(events[2]["exit_code"], 0);

    let out = sb.run_cmd("claude", &["--quiet"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("clean (exit 0)"));
}

#[test]
fn hook_disabling_extra_args_are_refused_before_anything_is_touched() {
    for (harness, extra) in [
        ("claude", "--bare"),
        ("claude", "--safe-mode"),
        ("codex", "-c"),
    ] {
        let sb = Sandbox::scripted("@exit 0\n");
        let before = sb.snapshot();
        let mut args = vec!["--", extra];
        if extra == "-c" {
            args.push("features.codex_hooks=false");
        }
        let out = sb.run_cmd(harness, &args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{harness} {extra}: {}",
            stderr(&out)
        );
        assert_has(&stderr(&out), "refused harness argument");
        assert_eq!(sb.snapshot(), before);
        assert!(!sb.project.join(".leopold").exists());
        assert!(!sb.record().exists(), "the worker must not start");
    }
}

#[test]
fn a_bad_flow_or_missing_harness_is_a_usage_error_touching_nothing() {
    let sb = Sandbox::with_user_files();
    std::fs::write(sb.flow(), "+++\nname = \"x\"\nallowlist = []\n+++\n").unwrap();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_has(&stderr(&out), "checkout.md");
    assert!(!sb.project.join(".leopold").exists());

    let sb = Sandbox::with_user_files();
    let mcp = sb.stub_mcp_config().display().to_string();
    let out = sb
        .run_with_bin("codex", "/nonexistent/codex", &["--mcp-config", &mcp])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_has(&stderr(&out), "not found");
    assert_has(&stderr(&out), "--harness-bin");
    assert!(!sb.project.join(".leopold").exists());
}

/// A flow that gives the persona no browser (no `browser` key, no --browser, no --mcp-config)
/// is a configuration error before anything starts: the worker would get no tool at all.
#[test]
fn a_run_with_no_browser_is_refused_touching_nothing() {
    for harness in ["claude", "codex"] {
        let sb = Sandbox::scripted(
            "@exit 0
",
        );
        let before = sb.snapshot();
        let bin = fake_worker().display().to_string();
        let out = sb.run_with_bin(harness, &bin, &[]).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines,
            [
                "leopold: error: flow `checkout` gives the persona no browser",
                "hint: add `browser = \"playwright\"` to the flow, or pass --browser playwright, or --mcp-config FILE naming your browser's MCP server",
            ],
            "{err}"
        );
        assert_eq!(sb.snapshot(), before);
        assert!(
            !sb.project.join(".leopold").exists(),
            "no lock, no ACTIVE.json"
        );
        assert!(!sb.record().exists(), "the worker must not start");
    }
}

#[test]
fn the_guard_passed_with_settings_denies_off_allowlist_calls_and_the_run_stays_clean() {
    // The fake worker does what Claude Code does with `--settings`: it runs every PreToolUse hook
    // command in that file (the real `leopold persona guard`) before each call.
    let sb = Sandbox::scripted(
        "@guard mcp__personastub__navigate https://staging.example.com/welcome\n\
         @guard mcp__personastub__navigate https://prod-dashboard.example.org/x\n\
         @guard mcp__personastub__navigate https://staging.example.com.evil.io/\n",
    );
    let before = sb.snapshot();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    assert_eq!(sb.snapshot(), before);
    let j = sb.journal();
    let outcomes: Vec<&str> = j[1..]
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["completed", "denied", "denied"], "{j:?}");
    assert!(j[1..].iter().all(|a| a["verdict"]["result"] == "ok"));
    let rj = sb.run_json();
    assert_eq!(rj["end"]["counts"]["denied"], 2);
    let events = sb.events_text();
    assert_has(&events, "prod-dashboard.example.org");
    assert_has(&events, "staging.example.com.evil.io");
    assert_has(&stdout(&out), "blocked");
}

/// A project settings file the wiring refuses to edit: not JSON.
fn write_unwirable_settings(sb: &Sandbox) {
    std::fs::write(
        sb.project.join(".claude/settings.json"),
        "{\"hooks\": [1, 2,\n",
    )
    .unwrap();
}

#[test]
fn a_settings_file_wiring_refuses_stops_the_run_with_exit_2_and_leaves_it_byte_for_byte() {
    // Only a `--no-contain` run edits the project's settings file (a boxed one passes the guard
    // with `--settings`: `a_boxed_claude_run_leaves_a_settings_file_it_could_not_wire_alone`).
    let sb = Sandbox::unboxed();
    write_unwirable_settings(&sb);
    sb.set_script("@exit 0\n");
    let before = sb.snapshot();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 2);
    assert!(
        stderr(&out).contains("settings.json"),
        "names the file: {}",
        stderr(&out)
    );
    assert_eq!(sb.snapshot(), before);
    assert!(!sb.active().exists());
    assert!(!sb.record().exists(), "the worker must not start");
    let rj = sb.run_json();
    assert_eq!(rj["end"]["outcome"], "setup_failed");
    assert_eq!(rj["end"]["exit_code"], 2);
}

#[test]
fn a_boxed_claude_run_leaves_a_settings_file_it_could_not_wire_alone() {
    let sb = Sandbox::with_user_files();
    write_unwirable_settings(&sb);
    sb.set_script(&clean_claude_script());
    let before = sb.snapshot();
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    // The box never shows the worker the project, so the file is neither read nor edited: the
    // guard comes through `--settings`, and the run goes on.
    assert_exit_code(&out, 0);
    assert_eq!(sb.snapshot(), before);
    let rj = sb.run_json();
    assert_eq!(rj["end"]["outcome"], "clean");
    assert_eq!(rj["wiring"], serde_json::json!([]));
    let argv = sb.worker_record()["argv"].clone();
    assert!(
        argv.as_array().unwrap().iter().any(|a| a
            .as_str()
            .is_some_and(|a| a.ends_with("guard-settings.json"))),
        "{argv}"
    );
}

#[test]
fn codex_denials_leave_no_stream_item_and_are_merged_from_the_guards_events() {
    // The fake worker runs the hook commands wired in $CODEX_HOME/config.toml, as Codex does; a
    // denied call leaves no item in its stream
    // (docs/harness-facts.md#5-headless-worker-invocations).
    let sb = Sandbox::scripted(
        "@guard-codex mcp__personastub__navigate https://staging.example.com/welcome\n\
         @guard-codex mcp__personastub__navigate https://prod-dashboard.example.org/x\n\
         @guard-codex mcp__personastub__navigate https://accounts.example.com/\n",
    );
    let before = sb.snapshot();
    let out = sb.run_cmd("codex", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    assert_eq!(sb.snapshot(), before);
    let j = sb.journal();
    let seen: Vec<(String, String)> = j[1..]
        .iter()
        .map(|a| {
            (
                a["outcome"].as_str().unwrap().to_owned(),
                a["urls"][0]["host"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert!(
        seen.contains(&("denied".into(), "prod-dashboard.example.org".into())),
        "{seen:?}"
    );
    assert_eq!(
        seen.iter().filter(|(o, _)| o == "completed").count(),
        2,
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|(_, h)| h.contains("leopold-proof")),
        "the proof is not a worker action: {seen:?}"
    );
    assert_eq!(sb.run_json()["end"]["counts"]["denied"], 1);
}

#[test]
fn a_claude_stuck_on_version_does_not_hold_the_run() {
    let sb = Sandbox::scripted(&clean_claude_script());
    let started = std::time::Instant::now();
    let child = sb
        .run_cmd("claude", &[])
        .env("FAKE_WORKER_VERSION_HANG", "300")
        .env("__LEOPOLD_VERSION_TIMEOUT_MS", "500")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The --settings file exists while the worker runs: the version being unknown, the handler
    // keeps `onFailure: block`.
    wait_for(20, "the worker to start", || sb.record().exists());
    let active: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.active()).unwrap()).unwrap();
    let gs = std::fs::read_to_string(active["guard_settings"].as_str().unwrap()).unwrap();
    assert_has(&gs, "\"onFailure\": \"block\"");
    let out = wait_output(child, 30);
    assert_exit_code(&out, 0);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the run waited {:?} for `claude --version`",
        started.elapsed()
    );
    // The stuck probe was killed, not left behind (witness: the process table). Every process
    // of this sandbox carries its FAKE_WORKER_RECORD; the run is over, so none may be left.
    let mark = format!("FAKE_WORKER_RECORD={}", sb.record().display());
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
            !stat.contains(") Z ") && env.split(|b| *b == 0).any(|v| v == mark.as_bytes())
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.is_empty(),
        "processes of the run outlived it: {left:?}"
    );
}

#[test]
fn verbose_traces_each_step_on_stderr_and_keeps_json_stdout_clean() {
    let sb = Sandbox::scripted(&clean_claude_script());
    let out = sb
        .run_cmd("claude", &["--json", "-v"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_exit_code(&out, 0);
    for line in stdout(&out).lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not JSON on stdout: {line:?}"
        );
    }
    let err = stderr(&out);
    for step in [
        "planned",
        "locked",
        "recovered",
        "active_written",
        "wired",
        "settings_written",
        "proved",
        "worker_spawned",
        "worker_exited",
        "unwired",
    ] {
        assert!(
            err.contains(&format!("step=\"{step}\"")) || err.contains(&format!("step={step}")),
            "no trace of step {step} in stderr:\n{err}"
        );
    }
    assert_has(&err, "total_ms=");
    // Without -v (and without RUST_LOG) stderr carries no trace.
    let quiet = sb
        .run_cmd("claude", &["--json"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    assert!(!stderr(&quiet).contains("step="), "{}", stderr(&quiet));
}

#[test]
fn a_settings_file_an_ended_run_left_is_swept_by_recover_and_not_by_every_run_start() {
    // A run's own teardown removes its `--settings` file; one is left only where it could not
    // (it warned) or its ACTIVE.json was lost. A run's start does not read every earlier run's
    // folder for it (its cost would grow with the project's history): `persona recover` does.
    let sb = Sandbox::with_user_files();
    let stale = sb
        .persona_dir()
        .join("runs/an-ended-run/guard-settings.json");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(&stale, "{}\n").unwrap();
    sb.set_script("@exit 0\n");
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    assert!(stale.exists(), "a run's start read an earlier run's folder");
    let rec = sb.recover();
    assert_eq!(rec.status.code(), Some(0), "{}", stderr(&rec));
    assert!(!stale.exists(), "{}", stdout(&rec));
    assert_has(&stdout(&rec), "guard-settings.json");
}
