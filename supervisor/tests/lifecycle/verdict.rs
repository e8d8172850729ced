//! The verdict on the app (#24): the persona's `report_finding` and `finish` calls through the
//! gateway, the flow's `[expect]` judged from the pages the server answered on, and the outcome
//! `failed` (exit 6). The fake worker calls the tools as a harness would; the witnesses are the
//! stub server's log, the gateway's record and the run's files.

use serde_json::{json, Value};

use crate::kit::*;

/// The lifecycle flow with `expect` added to its front matter.
fn flow_with(sb: &Sandbox, expect: &str) {
    let text = leopold_tests::fake_run::FLOW.replacen(
        "+++\n# Checkout",
        &format!("{expect}\n+++\n# Checkout"),
        1,
    );
    std::fs::write(sb.flow(), text).unwrap();
}

/// `persona run` under `harness` with the stub browser as the worker's MCP server.
fn run_cmd(sb: &Sandbox, harness: &str, extra: &[&str]) -> std::process::Command {
    let browser = sb.stub_browser("browser");
    let cfg = sb.write_claude_mcp_config(&browser).display().to_string();
    let mut args = vec!["--mcp-config", cfg.as_str()];
    args.extend_from_slice(extra);
    sb.run_cmd(harness, &args)
}

fn run(sb: &Sandbox, harness: &str, extra: &[&str]) -> std::process::Output {
    run_cmd(sb, harness, extra).output().unwrap()
}

fn record(sb: &Sandbox) -> Vec<Value> {
    let dir = sb.run_dirs().pop().expect("a run dir");
    leopold_tests::read_jsonl(&dir.join("gateway.jsonl"))
}

fn major(title: &str) -> (&'static str, Value) {
    (
        "report_finding",
        json!({"severity": "major", "title": title, "detail": "Added one hat; the cart says 2.", "step": 1}),
    )
}

/// A major finding fails the run when the flow says `fail_on = "major"`: exit 6, outcome
/// `failed` naming it, the finding in run.json, `run_ended`, the gateway's record and the JUnit
/// failure; the stub server never saw the call (Leopold answered it).
#[test]
fn a_finding_at_fail_on_fails_the_run_with_exit_6_on_both_harnesses() {
    for harness in ["claude", "codex"] {
        let sb = Sandbox::with_user_files();
        flow_with(&sb, "[expect]\nfail_on = \"major\"");
        sb.set_script(&mcp_script(&[
            mcp_navigate("https://staging.example.com/cart"),
            major("Cart count is wrong"),
        ]));
        let junit = sb.root.join("junit.xml");
        let junit_arg = junit.display().to_string();
        let out = run(&sb, harness, &["--junit", &junit_arg, "--json"]);
        assert_eq!(out.status.code(), Some(6), "{harness}: {}", stderr(&out));
        let end = &sb.run_json()["end"];
        assert_eq!(end["outcome"], "failed", "{end}");
        assert_has(
            end["reason"].as_str().unwrap(),
            "major finding: Cart count is wrong",
        );
        let reported = &end["verdict"]["reported"];
        assert_eq!(reported[0]["severity"], "major", "{end}");
        assert_eq!(reported[0]["step"], 1);
        assert_eq!(reported[0]["detail"], "Added one hat; the cart says 2.");
        let ended = stdout(&out)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["event"] == "run_ended")
            .expect("run_ended");
        assert_eq!(ended["verdict"]["reported"], *reported);
        assert!(record(&sb)
            .iter()
            .any(|l| l["event"] == "finding" && l["title"] == "Cart count is wrong"));
        let log = sb.stub_browser("browser").calls();
        assert_eq!(
            log.len(),
            1,
            "only the navigation reached the server: {log:?}"
        );
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert_has(&xml, "<failure");
        assert_has(&xml, "major finding: Cart count is wrong");
        // `persona runs`: the table counts the findings with the worst severity; --json has them.
        let table = stdout(&sb.runs(&[]));
        let header = table.lines().next().unwrap();
        let row = table.lines().nth(1).unwrap();
        assert!(
            header.contains("FINDINGS") && row.contains("failed (6)") && row.contains("1 (major)"),
            "{table}"
        );
        let listed: Value = serde_json::from_str(&stdout(&sb.runs(&["--json"]))).unwrap();
        assert_eq!(listed["runs"][0]["verdict"]["reported"], *reported);
    }
}

/// Below `fail_on` (the default, blocker) a finding is kept and the run passes.
#[test]
fn a_finding_below_fail_on_is_kept_and_the_run_is_clean() {
    let sb = Sandbox::with_user_files();
    sb.set_script(&mcp_script(&[major("Slow page")]));
    let out = run(&sb, "claude", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = &sb.run_json()["end"]["verdict"];
    assert_eq!(v["fail_on"], "blocker");
    assert_eq!(v["reported"][0]["title"], "Slow page");
    assert_eq!(v["failed_by"], json!([]), "{v}");
}

/// `reach` is judged from the pages the server answered on, not from `finish`: a persona that
/// says it reached the goal but never was on `/checkout/review` fails the run; one that was on
/// every page passes.
#[test]
fn an_unmet_reach_fails_the_run_even_when_finish_says_the_goal_was_reached() {
    let expect = "[expect]\nreach = [\"/cart\", \"regex:^/checkout/review$\"]";
    let finish = (
        "finish",
        json!({"goal_reached": true, "summary": "Checked out."}),
    );
    // The same walk, to the page given: `/checkout/review/x` is not the expected page.
    let walk = |review: &str| {
        let sb = Sandbox::with_user_files();
        flow_with(&sb, expect);
        sb.set_script(&mcp_script(&[
            mcp_navigate("https://staging.example.com/cart"),
            mcp_navigate(&format!("https://staging.example.com{review}")),
            finish.clone(),
        ]));
        sb
    };
    let sb = walk("/checkout/review/x");
    let out = run(&sb, "codex", &[]);
    assert_eq!(
        out.status.code(),
        Some(6),
        "{}{}",
        stderr(&out),
        sb.run_json()
    );
    let end = &sb.run_json()["end"];
    assert_eq!(end["reason"], "never reached regex:^/checkout/review$");
    assert_eq!(end["verdict"]["expectations"][0]["met"], true);
    assert_eq!(end["verdict"]["expectations"][1]["met"], false);
    assert_eq!(end["verdict"]["finish"]["goal_reached"], true);
    let reached: Vec<Value> = record(&sb)
        .into_iter()
        .filter_map(|l| l.get("reached").cloned())
        .collect();
    assert_eq!(reached, [json!(["/cart"])]);

    let sb = walk("/checkout/review");
    let out = run(&sb, "codex", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `finish` with the goal not reached fails the run, whatever `fail_on` says.
#[test]
fn finish_with_the_goal_not_reached_fails_the_run() {
    let sb = Sandbox::with_user_files();
    sb.set_script(&mcp_script(&[(
        "finish",
        json!({"goal_reached": false, "summary": "The pay button does nothing."}),
    )]));
    let out = run(&sb, "claude", &[]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(
        sb.run_json()["end"]["reason"],
        "the persona did not reach the goal: The pay button does nothing."
    );
}

/// A call that is not as the tool's schema says is refused with the argument named, kept out of
/// the verdict, and the run goes on.
#[test]
fn a_malformed_report_is_refused_and_not_kept() {
    let sb = Sandbox::with_user_files();
    sb.set_script(&mcp_script(&[(
        "report_finding",
        json!({"severity": "critical", "title": "x"}),
    )]));
    let out = run(&sb, "claude", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &sb.results_lines()[0];
    assert_eq!(r["is_error"], true, "{r}");
    assert_has(r["text"].as_str().unwrap(), "severity");
    assert_eq!(sb.run_json()["end"]["verdict"]["reported"], json!([]));
}

/// A run whose persona reported two findings and then waits, sent `sig` once the gateway's
/// record holds both; its output.
fn two_findings_then(sb: &Sandbox, sig: &str) -> std::process::Output {
    flow_with(sb, "[expect]\nfail_on = \"minor\"");
    let minor = |t: &str| ("report_finding", json!({"severity": "minor", "title": t}));
    let mut s = mcp_script(&[minor("Typo in header"), minor("Logo blurry")]);
    s = s.replace("@exit 0\n", "@sleep 30000\n@exit 0\n");
    sb.set_script(&s);
    let child = run_cmd(sb, "claude", &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(20, "two findings in the record", || {
        sb.run_dirs().pop().is_some_and(|d| {
            leopold_tests::read_jsonl(&d.join("gateway.jsonl"))
                .iter()
                .filter(|l| l["event"] == "finding")
                .count()
                == 2
        })
    });
    signal(child.id(), sig);
    wait_output(child, 20)
}

/// A run interrupted after two findings keeps both: a finding stands however the run ends.
#[test]
fn a_run_interrupted_after_two_findings_keeps_both() {
    let sb = Sandbox::with_user_files();
    let out = two_findings_then(&sb, "INT");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_ended_with_both(&sb, "interrupted");
}

/// A supervisor killed (SIGKILL) after two findings judges nothing; `persona recover` reads
/// both from the gateway's record into the archived run.json.
#[test]
fn a_crashed_run_keeps_its_findings_through_recover() {
    let sb = Sandbox::with_user_files();
    two_findings_then(&sb, "KILL");
    assert_exit_code(&sb.recover(), 0);
    assert_ended_with_both(&sb, "recovered");
}

/// The archived run ended as `outcome` and reports both of [`two_findings_then`]'s findings.
fn assert_ended_with_both(sb: &Sandbox, outcome: &str) {
    let end = &sb.run_json()["end"];
    assert_eq!(end["outcome"], outcome, "{end}");
    assert_eq!(
        leopold_tests::reported_titles(end),
        ["Typo in header", "Logo blurry"]
    );
}

/// In GitHub Actions the run is appended to the job summary and each finding at `fail_on` is an
/// `::error` annotation on stderr, its text escaped so that it cannot forge a command; outside
/// Actions neither is written.
#[test]
fn in_github_actions_the_summary_and_annotations_name_each_failing_finding() {
    let sb = Sandbox::with_user_files();
    flow_with(&sb, "[expect]\nfail_on = \"major\"");
    sb.set_script(&mcp_script(&[
        major("Total wrong\n::error::forged"),
        (
            "report_finding",
            json!({"severity": "minor", "title": "Typo"}),
        ),
    ]));
    let summary = sb.root.join("step-summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let out = run_cmd(&sb, "claude", &[])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let err = stderr(&out);
    let annotations: Vec<&str> = err.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(
        annotations,
        ["::error title=Leopold checkout (claude)::major finding: Total wrong ::error::forged%0AAdded one hat; the cart says 2."],
        "{err}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with(
            "earlier step\n### ❌ Leopold: flow `checkout` under claude: failed (exit 6)"
        ),
        "{md}"
    );
    assert_has(&md, "| major | Total wrong ::error::forged |");
    assert_has(&md, "| minor | Typo |");

    let sb = Sandbox::with_user_files();
    sb.set_script(&mcp_script(&[major("Total wrong")]));
    let out = run(&sb, "claude", &[]);
    assert!(
        !stderr(&out).lines().any(|l| l.starts_with("::")),
        "{}",
        stderr(&out)
    );
}
