//! What a run leaves and says: the persona's findings (`findings.md`, the summary, `run_ended`),
//! the walls as structured findings, the `stuck` stop (exit 5), a timeout's cause, the progress
//! of a quiet run, and the `--json` events' stamps.

use std::path::PathBuf;

use crate::kit::*;

/// The final answer the fixtures' scripted model gives.
const ANSWER: &str = "Walked the checkout up to the order button. Walls: four navigations outside the flow's hosts and the Place order button were refused by Leopold's guard; noted as findings.";

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A Claude `tool_result` for a call the guard denied, as the real CLI prints it.
fn claude_denied(id: &str, tool: &str, reason: &str) -> String {
    serde_json::json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"is_error":true,"content":format!("PreToolUse:{tool} hook error: ['leopold' persona guard # leopold-persona-guard]: Leopold persona guard: refused; journal the wall as a finding instead of retrying (reason: {reason})")}]}}).to_string()
}

#[test]
fn claude_findings_are_saved_verbatim_carried_in_run_ended_and_every_event_is_stamped() {
    let sb = Sandbox::with_user_files();
    let stream = fixture_into_kit(&sb, "claude-checkout-guard-stream.jsonl");
    sb.set_script(&format!("@stream {}\n", stream.display()));
    let out = sb.run_cmd("claude", &["--json"]).output().unwrap();
    assert_exit_code(&out, 0);
    let events = json_lines(&out);
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert!(
        !names.contains(&"recovered"),
        "nothing was recovered: {names:?}"
    );
    assert_eq!(names.first(), Some(&"run_started"), "{names:?}");
    assert_eq!(names.last(), Some(&"run_ended"), "{names:?}");
    for e in &events {
        let ts = e["ts"].as_str().unwrap_or_else(|| panic!("no ts: {e}"));
        assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
        assert_eq!(e["schema_version"], 1, "{e}");
    }
    let started = &events[0];
    assert!(PathBuf::from(started["run_dir"].as_str().unwrap()).is_absolute());
    assert_eq!(
        started["timeout_ms"],
        30 * 60 * 1000,
        "30 minutes by default"
    );
    let ended = events.last().unwrap();
    assert_eq!(ended["findings"], ANSWER);
    let run_dir = PathBuf::from(ended["run_dir"].as_str().unwrap());
    assert!(run_dir.is_absolute(), "{run_dir:?}");
    // Verbatim, byte for byte.
    assert_eq!(
        std::fs::read(run_dir.join("findings.md")).unwrap(),
        ANSWER.as_bytes()
    );
    assert_eq!(
        PathBuf::from(ended["findings_file"].as_str().unwrap()),
        run_dir.join("findings.md")
    );
    // The walls, structured: four navigations off the allowlist, the Place order click.
    let walls = leopold_tests::string_pairs(
        sb.run_json()["end"]["findings"].as_array().unwrap(),
        "kind",
        "reason",
    );
    let denied = |r: &str| ("denied".to_owned(), r.to_owned());
    assert_eq!(
        walls,
        vec![
            denied("outside_allowlist"),
            denied("outside_allowlist"),
            denied("outside_allowlist"),
            denied("outside_allowlist"),
            denied("irreversible_label"),
        ]
    );
    assert_eq!(ended["walls"].as_array().unwrap().len(), 5);
    assert_eq!(sb.run_json()["end"]["findings"][4]["label"], "Place order");
    let batch = &sb.run_json()["end"]["findings"][3];
    assert_eq!(
        batch["hosts"],
        serde_json::json!([
            "accounts.example.com",
            "evil.example",
            "staging.example.com"
        ]),
        "every host of the batch: {batch}"
    );
    // The report shows both.
    let report = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(report.contains("Walked the checkout up to the order button."));
    assert!(
        report.contains(
            "#7 blocked: irreversible_label: mcp__browser__click &quot;Place order&quot;"
        ),
        "{report}"
    );

    // A second run after a clean one, in the same project, for both harnesses: nothing to
    // recover, so no `recovered` event.
    for harness in ["claude", "codex"] {
        let out = sb.run_cmd(harness, &["--json"]).output().unwrap();
        assert_exit_code(&out, 0);
        let names: Vec<String> = json_lines(&out)
            .iter()
            .filter_map(|e| e["event"].as_str().map(str::to_owned))
            .collect();
        assert!(
            !names.iter().any(|n| n == "recovered"),
            "{harness}: {names:?}"
        );
        assert_eq!(
            names.last().map(String::as_str),
            Some("run_ended"),
            "{names:?}"
        );
    }
}

#[test]
fn codex_findings_are_printed_after_the_summary() {
    let sb = Sandbox::with_user_files();
    let stream = fixture_into_kit(&sb, "codex-checkout-guard-stream.jsonl");
    sb.set_script(&format!("@stream {}\n", stream.display()));
    let out = sb.run_cmd("codex", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    let text = stdout(&out);
    let summary = text
        .find("clean (exit 0)")
        .unwrap_or_else(|| panic!("{text}"));
    let findings = text.find(ANSWER).unwrap_or_else(|| panic!("{text}"));
    assert!(summary < findings, "findings after the summary:\n{text}");
    assert_has(&text, "findings.md):\n");
    let dir = &sb.run_dirs()[0];
    assert_eq!(
        std::fs::read(dir.join("findings.md")).unwrap(),
        ANSWER.as_bytes()
    );
}

/// A sandbox whose flow stops the run after the same wall 3 times in a row.
fn stuck_after_three_denials() -> Sandbox {
    let sb = Sandbox::with_user_files();
    let flow = std::fs::read_to_string(sb.flow()).unwrap().replacen(
        "+++\nname",
        "+++\nmax_denials_in_a_row = 3\nname",
        1,
    );
    std::fs::write(sb.flow(), flow).unwrap();
    sb
}

/// Runs `harness` in [`stuck_after_three_denials`]'s sandbox and checks that the worker, told to
/// sleep, was stopped as stuck at `outside_allowlist` (exit 5): its output and run.json.
fn run_until_stuck(sb: &Sandbox, harness: &str) -> (std::process::Output, serde_json::Value) {
    let t = std::time::Instant::now();
    let out = sb.run_cmd(harness, &[]).output().unwrap();
    assert_exit_code(&out, 5);
    assert!(t.elapsed().as_secs() < 30, "the worker was stopped");
    let rj = sb.run_json();
    assert_eq!(rj["end"]["reason"], "stuck at a wall: outside_allowlist ×3");
    (out, rj)
}

#[test]
fn the_same_wall_max_denials_in_a_row_times_stops_the_run_as_stuck_exit_5() {
    let sb = stuck_after_three_denials();
    let tool = "mcp__personastub__navigate";
    let mut script = String::new();
    // Two denials, an allowed call (the count starts again), then three denials in a row; the
    // worker would go on for a minute.
    let mut n = 0;
    let mut deny = |script: &mut String| {
        n += 1;
        let id = format!("d{n}");
        script.push_str(&claude_tool_use(
            &id,
            tool,
            serde_json::json!({"url":"https://evil.example/"}),
        ));
        script.push('\n');
        script.push_str(&claude_denied(&id, tool, "outside_allowlist"));
        script.push('\n');
    };
    deny(&mut script);
    deny(&mut script);
    script.push_str(&claude_tool_use(
        "ok1",
        tool,
        serde_json::json!({"url":"https://staging.example.com/"}),
    ));
    script.push('\n');
    script.push_str(&claude_tool_ok("ok1"));
    script.push('\n');
    deny(&mut script);
    deny(&mut script);
    deny(&mut script);
    script.push_str("@sleep 60000\n");
    sb.set_script(&script);
    let before = sb.snapshot();
    let (out, rj) = run_until_stuck(&sb, "claude");
    assert_eq!(rj["end"]["outcome"], "stuck");
    assert_eq!(rj["end"]["exit_code"], 5);
    let findings = rj["end"]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 6, "five denials and the stop: {findings:?}");
    assert_eq!(findings[5]["kind"], "stuck");
    assert_eq!(
        findings[5]["reason"],
        "stuck at a wall: outside_allowlist ×3"
    );
    let text = stdout(&out);
    assert_has(&text, "stuck (exit 5)");
    assert_has(&text, "stuck at a wall: outside_allowlist ×3");
    assert!(
        text.contains(
            "blocked   mcp__personastub__navigate  navigate evil.example — outside_allowlist"
        ),
        "{text}"
    );
    // Everything Leopold changed is undone, as on every other way out.
    let mut after = sb.snapshot();
    let mut before = before;
    after.retain(|p, _| !p.ends_with("checkout.md"));
    before.retain(|p, _| !p.ends_with("checkout.md"));
    assert_eq!(after, before);
    assert!(!sb.active().exists());
}

#[test]
fn a_quiet_run_says_what_it_waits_for_and_a_timeout_records_it() {
    let sb = Sandbox::scripted(&format!(
        "{}\n@sleep 60000\n",
        claude_navigate("t1", "https://staging.example.com/")
    ));
    let out = sb.run_with_env(
        "claude",
        &["--timeout", "1500ms"],
        &[("__LEOPOLD_QUIET_NOTE_MS", "400")],
    );
    assert_exit_code(&out, 3);
    let text = stdout(&out);
    assert_has(
        &text,
        "without an event: waiting for tool mcp__personastub__navigate to return",
    );
    let end = &sb.run_json()["end"];
    assert_eq!(end["outcome"], "timed_out");
    let cause = end["cause"].as_str().unwrap();
    assert!(
        cause.starts_with("tool mcp__personastub__navigate never returned (nothing for "),
        "{cause}"
    );
    assert!(end["reason"].as_str().unwrap().ends_with(cause), "{end}");
    assert!(text.contains(cause), "the summary says the cause: {text}");
    let report = std::fs::read_to_string(sb.run_dirs()[0].join("report.html")).unwrap();
    assert_has(&report, "Timed out waiting for");

    // Nothing open: the run waits for the model.
    let sb = Sandbox::scripted("@sleep 60000\n");
    let out = sb.run_with_env(
        "claude",
        &["--timeout", "1s", "--json"],
        &[("__LEOPOLD_QUIET_NOTE_MS", "300")],
    );
    assert_exit_code(&out, 3);
    let events = json_lines(&out);
    let waiting = events
        .iter()
        .find(|e| e["event"] == "waiting")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(waiting["for"], "model");
    let ended = events.last().unwrap();
    assert!(
        ended["cause"]
            .as_str()
            .unwrap()
            .starts_with("no reply from the model"),
        "{ended}"
    );
}

#[test]
fn codex_denials_that_print_nothing_still_stop_a_stuck_run() {
    // Codex leaves no stream item for a denied call: the three denials below are only in the
    // guard's events, and the worker prints nothing after them.
    let sb = stuck_after_three_denials();
    sb.set_script(
        "@guard-codex mcp__personastub__navigate https://evil.example/a?token=s3cret\n\
         @guard-codex mcp__personastub__navigate https://evil.example/b\n\
         @guard-codex mcp__personastub__navigate https://evil.example/c\n\
         @sleep 60000\n",
    );
    run_until_stuck(&sb, "codex");
    // Journaled from the guard's events with the path, never the query.
    let paths: Vec<String> = sb
        .journal()
        .iter()
        .filter(|l| l["outcome"] == "denied")
        .map(|l| l["urls"][0]["path"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(paths, ["/a", "/b", "/c"]);
    let journal = std::fs::read_to_string(sb.run_dirs()[0].join("journal.jsonl")).unwrap();
    assert!(!journal.contains("s3cret"), "{journal}");
}
