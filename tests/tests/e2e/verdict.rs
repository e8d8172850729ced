//! Issue #24, the verdict, on both real CLIs through `leopold persona run --browser playwright`,
//! boxed, with the real Chromium against the staging shop. The persona (the scripted model)
//! reports through Leopold's own tools as the real CLI offers them; the witnesses are the app's
//! request log (where the browser really went), the run's files and the JUnit file.
//!
//! The seeded bug: with `--seeded-bug` the shop's `/checkout/review` redirects to an error page.
//! A persona that walks to it and says it reached the goal still fails the run, since `reach`
//! is judged from the page the browser reports; the same walk on the sound shop passes.

use std::time::Duration;

use leopold_tests::script::Turn;
use leopold_tests::staging::{call, nav, rendered_text, require_browser, AppOpts, ShopRun};
use leopold_tests::{leopold_bin, read_jsonl, Harness, Run};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(100);

fn flow(port: u16, expect: &str) -> String {
    format!(
        "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\n\
         [hosts]\n\"staging.example.com\" = \"127.0.0.1:{port}\"\n{expect}\n+++\n\
         Buy a hat as a first-time buyer.\n"
    )
}

fn report(severity: &str, title: &str) -> Turn {
    call(
        "report_finding",
        json!({"severity": severity, "title": title, "detail": "Opened the cart; the total shows no tax."}),
    )
}

fn finish(goal_reached: bool) -> Turn {
    call(
        "finish",
        json!({"goal_reached": goal_reached, "summary": "Walked to the review page."}),
    )
}

/// `persona run` of `turns` under `[expect]` `expect`, against the shop (broken with
/// `seeded_bug`), with `extra` arguments; `None` where a CLI or the browser is missing.
fn shop(
    harness: Harness,
    seeded_bug: bool,
    expect: &str,
    turns: Vec<Turn>,
    extra: &[&str],
) -> Option<(ShopRun, Run)> {
    let mut s = ShopRun::prepare(
        harness,
        &leopold_bin(),
        AppOpts {
            tls: false,
            seeded_bug,
            ..AppOpts::default()
        },
        |port| flow(port, expect),
        |_, _| turns,
        "Done.",
    )?;
    let run = s.run(extra, TIMEOUT);
    Some((s, run))
}

fn run_end(s: &ShopRun) -> Value {
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(s.sb.run_dir().join("run.json")).unwrap())
            .unwrap();
    run["end"].clone()
}

fn a_major_finding_fails_the_run_and_junit_names_it(h: Harness) {
    let junit =
        std::env::temp_dir().join(format!("leopold-verdict-{}-{h:?}.xml", std::process::id()));
    let junit_arg = junit.display().to_string();
    let Some((s, run)) = shop(
        h,
        false,
        "[expect]\nfail_on = \"major\"",
        vec![
            nav("/cart"),
            report("major", "Cart total shows no tax"),
            finish(true),
        ],
        &["--junit", &junit_arg],
    ) else {
        return;
    };
    assert_eq!(run.status.code(), Some(6), "{run}");
    let end = run_end(&s);
    assert_eq!(end["outcome"], "failed", "{end}");
    assert_eq!(end["reason"], "major finding: Cart total shows no tax");
    assert_eq!(
        end["verdict"]["reported"][0]["detail"],
        "Opened the cart; the total shows no tax."
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let _ = std::fs::remove_file(&junit);
    assert!(
        xml.contains(
            "<failure message=\"major finding: Cart total shows no tax\" type=\"failed\">"
        ),
        "{xml}"
    );
    // The report as a reader sees it, rendered by Chromium: the verdict first, then the finding.
    if let Some((chromium, _)) = require_browser() {
        let text = rendered_text(&chromium, &s.sb.run_dir().join("report.html"));
        let verdict =
            text.find("The app did not meet the flow: major finding: Cart total shows no tax");
        let finding =
            text.find("major Cart total shows no tax Opened the cart; the total shows no tax.");
        assert!(verdict.is_some() && finding.is_some(), "{text}");
        assert!(
            verdict < text.find("Timeline"),
            "the verdict comes first: {text}"
        );
    }
    // The call went through the real CLI to Leopold's gateway and no further.
    assert!(
        s.app.seen().iter().all(|(_, p, _)| p != "/report_finding"),
        "{:?}",
        s.app.seen()
    );
}

fn an_unmet_reach_fails_even_though_finish_says_the_goal_was_reached(h: Harness) {
    let expect = "[expect]\nreach = [\"/cart\", \"/checkout/review\"]";
    let walk = || vec![nav("/cart"), nav("/checkout/review"), finish(true)];
    let Some((s, run)) = shop(h, true, expect, walk(), &[]) else {
        return;
    };
    assert_eq!(run.status.code(), Some(6), "{run}");
    let end = run_end(&s);
    assert_eq!(end["reason"], "never reached /checkout/review", "{end}");
    assert_eq!(end["verdict"]["finish"]["goal_reached"], true);
    // The witness: the browser asked for the review page and was sent to the error page.
    let paths: Vec<String> = s.app.seen().into_iter().map(|(_, p, _)| p).collect();
    assert!(
        paths.contains(&"/checkout/review".to_owned())
            && paths.contains(&"/checkout/error".to_owned()),
        "{paths:?}"
    );
    // The control: the same walk on the sound shop meets both.
    let Some((s, run)) = shop(h, false, expect, walk(), &[]) else {
        return;
    };
    assert_eq!(run.status.code(), Some(0), "{run}");
    let met: Vec<bool> = run_end(&s)["verdict"]["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["met"] == true)
        .collect();
    assert_eq!(met, [true, true]);
}

/// Two findings, then the model takes a minute over its next answer; the run is interrupted
/// (SIGINT) once the gateway's record holds both, and run.json keeps both.
fn an_interrupted_run_keeps_both_findings(h: Harness) {
    let mut slow = finish(true);
    slow.delay_ms = 60_000;
    let Some(mut s) = ShopRun::prepare(
        h,
        &leopold_bin(),
        false,
        |port| flow(port, "[expect]\nfail_on = \"minor\""),
        |_, _| {
            vec![
                report("minor", "Logo is blurry"),
                report("minor", "Typo in footer"),
                slow,
            ]
        },
        "Done.",
    ) else {
        return;
    };
    let child = s
        .cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let runs = s.sb.persona_dir().join("runs");
    let record = || {
        std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|d| read_jsonl(&d.path().join("gateway.jsonl")))
            .collect::<Vec<Value>>()
    };
    leopold_tests::fake_run::wait_for(60, "two findings in the gateway's record", || {
        record().iter().filter(|l| l["event"] == "finding").count() == 2
    });
    leopold_tests::fake_run::signal(child.id(), "INT");
    let out = leopold_tests::fake_run::wait_output(child, 30);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end = run_end(&s);
    assert_eq!(end["outcome"], "interrupted", "{end}");
    assert_eq!(
        leopold_tests::reported_titles(&end),
        ["Logo is blurry", "Typo in footer"]
    );
}

both_harnesses! {
    a_major_finding_fails_the_run_and_junit_names_it;
    an_unmet_reach_fails_even_though_finish_says_the_goal_was_reached;
    an_interrupted_run_keeps_both_findings;
}
