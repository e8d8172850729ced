//! Issue #25, a suite: `leopold persona run flows --harness claude,codex`, both real CLIs boxed
//! side by side in one project, each with the real provisioned browser, against one staging
//! shop and one scripted model (it answers from each request's own history, so runs at once do
//! not disturb each other). The witnesses: the shop's request log, each run's own directory,
//! the JUnit file and suite.html read back, the process table after a SIGKILL.

use std::path::{Path, PathBuf};
use std::process::Command;

use leopold_tests::script::Turn;
use leopold_tests::staging::{nav, AppOpts};
use leopold_tests::suite::{finish, Suite};
use leopold_tests::{leopold_bin, Harness};
use serde_json::Value;

/// Every run directory under `runs` with its run.json.
fn run_dirs(runs: &Path) -> Vec<(PathBuf, Value)> {
    let mut out: Vec<(PathBuf, Value)> = std::fs::read_dir(runs)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("run.json").is_file())
                .map(|p| {
                    let v = serde_json::from_slice(&std::fs::read(p.join("run.json")).unwrap())
                        .unwrap();
                    (p, v)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|(_, v)| {
        (
            v["flow"].to_string(),
            v["harness"].to_string(),
            v["started_at"].to_string(),
        )
    });
    out
}

fn pairs(runs: &[(PathBuf, Value)]) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = runs
        .iter()
        .map(|(_, v)| {
            let s = |x: &Value| x.as_str().unwrap_or_default().to_owned();
            (s(&v["flow"]), s(&v["harness"]), s(&v["end"]["outcome"]))
        })
        .collect();
    out.sort();
    out
}

/// The most runs whose [started_at, ended_at] overlap at one moment.
fn most_at_once(runs: &[(PathBuf, Value)]) -> usize {
    let t = |v: &Value| humantime::parse_rfc3339(v.as_str().unwrap()).unwrap();
    let spans: Vec<_> = runs
        .iter()
        .map(|(_, v)| (t(&v["started_at"]), t(&v["end"]["ended_at"])))
        .collect();
    spans
        .iter()
        .map(|(start, _)| {
            spans
                .iter()
                .filter(|(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// A JUnit file with what differs between two runs of one suite blanked: times, timestamps,
/// run ids, hash-chain heads, and where the run directories lie.
fn junit_shape(xml: &str) -> String {
    let attrs = regex::Regex::new(r#"(time|timestamp|id|uuid)="[^"]*""#).unwrap();
    let props =
        regex::Regex::new(r#"name="(run_dir|report|journal_hash|gateway_hash)" value="[^"]*""#)
            .unwrap();
    let report = regex::Regex::new(r"Report: \S+").unwrap();
    let runs = regex::Regex::new(r"\d{8}T\d{6}Z-\d+").unwrap();
    let xml = attrs.replace_all(xml, "$1=\"\"");
    let xml = props.replace_all(&xml, "name=\"$1\" value=\"\"");
    let xml = report.replace_all(&xml, "Report: …");
    runs.replace_all(&xml, "RUN").into_owned()
}

#[test]
fn four_flows_under_both_harnesses_run_side_by_side_into_one_result() {
    let names = ["browse", "cart", "search", "signup"];
    let Some(s) = Suite::new(AppOpts::default(), &names, "", vec![nav("/cart"), finish()]) else {
        return;
    };
    let junit = s.sb.root.join("suite.xml");
    let junit_arg = format!("--junit={}", junit.display());
    let run = s.run(&["flows", "--harness=claude,codex", "--jobs=4", &junit_arg]);
    assert_eq!(run.status.code(), Some(0), "{run}");
    assert!(
        run.stdout.contains("suite of 8 runs, 4 at a time (--jobs)"),
        "{run}"
    );
    let runs = run_dirs(&s.runs_dir());
    let mut want = Vec::new();
    for n in names {
        for h in ["claude", "codex"] {
            want.push((n.to_owned(), h.to_owned(), "clean".to_owned()));
        }
    }
    assert_eq!(pairs(&runs), want, "{run}");
    // Side by side: the runs' own records overlap in time.
    assert!(most_at_once(&runs) >= 2, "{run}");
    // The shop saw every run's browser.
    let carts = s
        .app
        .seen()
        .iter()
        .filter(|(m, p, _)| m == "GET" && p == "/cart")
        .count();
    assert!(carts >= 8, "{:?}", s.app.seen());
    // One JUnit file: a test suite per flow, a test case per harness.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testsuite ").count(), 4, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 8, "{xml}");
    assert!(
        !xml.contains("<failure") && !xml.contains("<error"),
        "{xml}"
    );
    // suite.html next to the runs links every run's report, relative to itself.
    let html = std::fs::read_to_string(s.runs_dir().join("suite.html")).unwrap();
    for (dir, _) in &runs {
        let id = dir.file_name().unwrap().to_str().unwrap();
        assert!(
            html.contains(&format!("href=\"{id}/report.html\"")),
            "{id}: {html}"
        );
    }
    // A run directory is self-contained: moved elsewhere, it replays without --flow.
    let moved = s.sb.root.join("elsewhere");
    std::fs::create_dir_all(&moved).unwrap();
    let one = moved.join("run");
    std::fs::rename(&runs[0].0, &one).unwrap();
    std::fs::rename(s.sb.project.join("flows"), s.sb.root.join("flows-gone")).unwrap();
    let out = Command::new(leopold_bin())
        .args(["persona", "replay"])
        .arg(&one)
        .current_dir(&moved)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn a_run_made_to_fail_once_is_flaky(h: Harness) {
    let expect = "[expect]\nreach = [\"/checkout/review\"]";
    let app = AppOpts {
        seeded_bug_once: true,
        ..AppOpts::default()
    };
    let turns = vec![nav("/cart"), nav("/checkout/review"), finish()];
    let Some(s) = Suite::new(app, &["shop"], expect, turns) else {
        return;
    };
    let junit = s.sb.root.join("suite.xml");
    let run = s.run(&[
        "flows/shop.md",
        "--harness",
        h.as_str(),
        "--attempts",
        "2",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{run}");
    assert!(run.stdout.contains("FLAKY ["), "{run}");
    assert!(run.stdout.contains("0 passed, 1 flaky, 0 failed"), "{run}");
    let runs = run_dirs(&s.runs_dir());
    let outcomes: Vec<&str> = runs
        .iter()
        .map(|(_, v)| v["end"]["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["failed", "clean"], "{run}");
    assert_eq!(
        runs[0].1["end"]["reason"], "never reached /checkout/review",
        "{run}"
    );
    // The witness: the shop broke the first review page only.
    let seen: Vec<String> = s.app.seen().into_iter().map(|(_, p, _)| p).collect();
    assert_eq!(
        seen.iter().filter(|p| *p == "/checkout/error").count(),
        1,
        "{seen:?}"
    );
    assert_eq!(
        seen.iter().filter(|p| *p == "/checkout/review").count(),
        2,
        "{seen:?}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<flakyFailure").count(), 1, "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
}

both_harnesses! {
    a_run_made_to_fail_once_is_flaky;
}

#[test]
fn two_shards_merged_equal_the_whole_suite() {
    let names = ["browse", "cart", "search"];
    let Some(s) = Suite::new(AppOpts::default(), &names, "", vec![nav("/cart"), finish()]) else {
        return;
    };
    let kept = s.sb.root.join("shards");
    let mut shards = Vec::new();
    for shard in ["count:1/2", "count:2/2"] {
        let run = s.run(&[
            "flows",
            "--harness",
            "all",
            "--partition",
            shard,
            "--jobs",
            "3",
        ]);
        assert_eq!(run.status.code(), Some(0), "{run}");
        // A CI job's artifact: its runs folder, moved off the machine.
        let dir = kept.join(shard.replace([':', '/'], "-"));
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::rename(s.runs_dir(), &dir).unwrap();
        shards.push(dir);
    }
    let seen: Vec<_> = shards.iter().flat_map(|d| pairs(&run_dirs(d))).collect();
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 6, "each pair once: {seen:?}");
    assert_eq!(seen.len(), 6, "no pair twice: {seen:?}");

    let whole_junit = s.sb.root.join("whole.xml");
    let junit_arg = format!("--junit={}", whole_junit.display());
    let run = s.run(&["flows", "--harness=all", "--jobs=3", &junit_arg]);
    assert_eq!(run.status.code(), Some(0), "{run}");
    let merged = s.sb.root.join("merged");
    let mut cmd = Command::new(leopold_bin());
    cmd.args(["persona", "report", "--merge"])
        .args(&shards)
        .arg("--out")
        .arg(&merged);
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        junit_shape(&std::fs::read_to_string(merged.join("junit.xml")).unwrap()),
        junit_shape(&std::fs::read_to_string(&whole_junit).unwrap())
    );
    let html = std::fs::read_to_string(merged.join("suite.html")).unwrap();
    assert_eq!(html.matches("/report.html\"").count(), 6, "{html}");
}

#[test]
fn a_suite_killed_mid_run_is_recovered() {
    let names = ["browse", "cart"];
    let slow = Turn {
        delay_ms: 60_000,
        ..nav("/")
    };
    let Some(s) = Suite::new(AppOpts::default(), &names, "", vec![nav("/cart"), slow]) else {
        return;
    };
    let mut suite = s
        .cmd(&["flows", "--harness", "all", "--jobs", "4"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // All four runs live: each has made its first browser call.
    let carts = || s.app.seen().iter().filter(|(_, p, _)| p == "/cart").count();
    leopold_tests::fake_run::wait_for(120, "four runs to reach the shop", || carts() >= 4);
    let supervisors = leopold_tests::fake_run::children(suite.id());
    assert_eq!(supervisors.len(), 4, "{supervisors:?}");
    // The suite and every run's supervisor die at once, with no chance to clean up.
    leopold_tests::fake_run::signal(suite.id(), "KILL");
    for pid in &supervisors {
        leopold_tests::fake_run::signal(*pid, "KILL");
    }
    let _ = suite.wait();
    let out = s.sb.persona_recover(&leopold_bin(), &s.model);
    assert_eq!(out.status.code(), Some(0), "{out}");
    let runs = run_dirs(&s.runs_dir());
    assert_eq!(runs.len(), 4);
    for (dir, v) in &runs {
        assert_eq!(v["end"]["outcome"], "recovered", "{}", dir.display());
        let id = v["run_id"].as_str().unwrap();
        assert!(
            leopold_tests::fake_run::processes_of_run(id).is_empty(),
            "run {id} left processes"
        );
    }
    let persona = s.sb.project.join(".leopold/persona");
    assert!(!persona.join("ACTIVE.json").exists());
    let active: Vec<_> = std::fs::read_dir(persona.join("active"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(active.is_empty(), "{active:?}");
}
