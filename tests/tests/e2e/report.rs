//! What a run leaves (issue #14 items 2 and 4), on the real CLIs with the provisioned browser:
//! the persona takes a screenshot in real Chromium, and the run's `report.html` shows it,
//! embedded, beside the action that took it; `--junit` writes a passing test case.

use std::time::Duration;

use leopold_tests::staging::{call, ShopRun};
use leopold_tests::{leopold_bin, read_jsonl, Harness};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(100);

fn screenshot_lands_in_the_report(harness: Harness) {
    let Some(ShopRun {
        sb,
        app: _app,
        model: _model,
        mut cmd,
    }) = ShopRun::prepare(
        harness,
        &leopold_bin(),
        false,
        |port| {
            format!(
                "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\n\
                 [hosts]\n\"staging.example.com\" = \"127.0.0.1:{port}\"\n+++\nLook at the shop.\n"
            )
        },
        |_, _| {
            vec![
                call(
                    "browser_navigate",
                    json!({"url": "http://staging.example.com/"}),
                ),
                call("browser_take_screenshot", json!({})),
            ]
        },
        "The shop's front page loaded.",
    )
    else {
        return;
    };
    let junit = sb.project.join("reports/junit.xml");
    // Unboxed for the same reason as the browser suite (tests/e2e/browser.rs): until the browser
    // runs outside the box behind its MCP relay.
    cmd.arg("--no-contain").arg("--junit").arg(&junit);
    let run = sb.run(cmd, TIMEOUT);
    assert_eq!(run.status.code(), Some(0), "{run}");

    let dir = sb.run_dir();
    let journal = read_jsonl(&dir.join("journal.jsonl"));
    let shot = journal
        .iter()
        .find_map(|a| a["screenshot"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no action names a screenshot: {journal:?}\n{run}"));
    // Kept from the browser's output folder, which went with the run.
    assert!(
        dir.join("screenshots").join(&shot).is_file(),
        "{shot} is not in the run's screenshots/"
    );
    assert!(!dir.join("browser").exists());
    let png = std::fs::read(dir.join("screenshots").join(&shot)).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("src=\"data:image/png;base64,"),
        "not embedded"
    );
    assert!(html.contains(&format!("screenshots/{shot}")), "{html}");
    assert!(html.contains("class=\"outcome clean\""), "{html}");
    assert!(!html.contains("://"), "a URL in the report");
    assert_eq!(html.to_ascii_lowercase().matches("<script").count(), 0);

    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testcase name=\"shop\""), "{xml}");
    assert!(
        !xml.contains("<failure") && !xml.contains("<error"),
        "{xml}"
    );
}

per_harness! {
    screenshot_lands_in_the_report =>
        claude_screenshot_lands_in_the_report,
        codex_screenshot_lands_in_the_report;
}
