//! A suite (`persona run FLOW... --harness claude,codex`) with the fake worker: every flow ×
//! harness pair runs once as a run of its own, attempts and flaky runs, shards, the worst exit
//! code. The witness is the run directories each run left, not the suite's own lines.

use std::path::PathBuf;
use std::process::Output;

use crate::kit::*;

/// Writes flows named `names` into `<root>/flows/` (the sandbox's checkout flow, renamed).
fn flows(sb: &Sandbox, names: &[&str]) -> PathBuf {
    let dir = sb.root.join("flows");
    std::fs::create_dir_all(&dir).unwrap();
    for n in names {
        std::fs::write(
            dir.join(format!("{n}.md")),
            FLOW.replace("name = \"checkout\"", &format!("name = \"{n}\"")),
        )
        .unwrap();
    }
    dir
}

/// `persona run <flows> --harness <harness> <extra…>` with the fake worker for every harness.
fn suite(sb: &Sandbox, flows: &[PathBuf], harness: &str, extra: &[&str]) -> Output {
    let stub = sb.stub_mcp_config().display().to_string();
    let project = sb.project.display().to_string();
    let bin = fake_worker().display().to_string();
    let mut args: Vec<String> = vec!["persona".into(), "run".into()];
    args.extend(flows.iter().map(|f| f.display().to_string()));
    for a in [
        "--harness",
        harness,
        "--project",
        &project,
        "--harness-bin",
        &bin,
        "--mcp-config",
        &stub,
    ] {
        args.push(a.into());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = sb
        .leopold(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_output(child, 120)
}

/// Each run directory's run.json.
fn run_jsons(sb: &Sandbox) -> Vec<serde_json::Value> {
    sb.run_dirs()
        .iter()
        .filter(|d| d.is_dir())
        .map(|d| serde_json::from_slice(&std::fs::read(d.join("run.json")).unwrap()).unwrap())
        .collect()
}

/// Each run directory's (flow, harness, outcome), sorted.
fn runs_left(sb: &Sandbox) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = run_jsons(sb)
        .iter()
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            (
                s("flow"),
                s("harness"),
                v["end"]["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_flow_runs_under_every_harness_and_the_table_lists_them() {
    let sb = Sandbox::scripted("@exit 0\n");
    let dir = flows(&sb, &["browse", "search"]);
    let junit = sb.root.join("out/suite.xml");
    let o = suite(
        &sb,
        &[dir],
        "claude,codex",
        &["--jobs", "4", "--junit", junit.to_str().unwrap()],
    );
    let out = stdout(&o);
    assert_exit_code(&o, 0);
    assert_has(&out, "suite of 4 runs, 4 at a time (--jobs)");
    assert_eq!(out.matches("   PASS [").count(), 4, "{out}");
    assert_has(&out, "4 runs in ");
    assert_has(&out, "4 passed, 0 flaky, 0 failed");
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("FLOW "))
        .collect();
    assert!(
        table[0].contains("HARNESS") && table[0].contains("ATTEMPTS") && table[0].contains("COST"),
        "{out}"
    );
    assert_eq!(
        table.iter().filter(|l| l.contains("clean (0)")).count(),
        4,
        "{out}"
    );
    let want: Vec<(String, String, String)> = [
        ("browse", "claude"),
        ("browse", "codex"),
        ("search", "claude"),
        ("search", "codex"),
    ]
    .iter()
    .map(|(f, h)| (f.to_string(), h.to_string(), "clean".to_string()))
    .collect();
    assert_eq!(runs_left(&sb), want);
    // One JUnit file and one page for the suite, each naming every run.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 4, "{xml}");
    let html = std::fs::read_to_string(sb.persona_dir().join("runs/suite.html")).unwrap();
    for d in sb.run_dirs().iter().filter(|d| d.is_dir()) {
        let id = d.file_name().unwrap().to_str().unwrap();
        assert!(html.contains(&format!("href=\"{id}/report.html\"")), "{id}");
    }
    // Nothing wired, nothing active, the user's files as they were.
    assert!(!sb.active().exists());
    assert_eq!(
        std::fs::read_to_string(sb.project.join(".claude/settings.json")).unwrap(),
        CLAUDE_SETTINGS
    );
}

#[test]
fn a_run_that_fails_once_is_tried_again_and_reported_flaky() {
    let once = |sb: &Sandbox| {
        format!(
            "@fail-once {} 1\n@exit 0\n",
            sb.kit().join("once").display()
        )
    };
    let sb = Sandbox::with_user_files();
    sb.set_script(&once(&sb));
    let o = suite(&sb, &[sb.flow()], "codex", &["--attempts", "2"]);
    let out = stdout(&o);
    assert_exit_code(&o, 0);
    assert_has(&out, "RETRY [");
    assert_has(&out, "worker_failed (3) (attempt 1 of 2)");
    assert_has(&out, "FLAKY [");
    assert_has(&out, "1 run in ");
    assert_has(&out, "0 passed, 1 flaky, 0 failed");
    let outcomes: Vec<String> = runs_left(&sb).into_iter().map(|r| r.2).collect();
    assert_eq!(outcomes, ["clean", "worker_failed"]);
    // Each run says which attempt of which suite it was.
    let mut members: Vec<(String, u64)> = run_jsons(&sb)
        .iter()
        .map(|v| {
            (
                v["suite"]["id"].as_str().unwrap().to_owned(),
                v["suite"]["attempt"].as_u64().unwrap(),
            )
        })
        .collect();
    members.sort_by_key(|m| m.1);
    assert_eq!(members[0].0, members[1].0);
    assert_eq!([members[0].1, members[1].1], [1, 2]);

    // Tried once only, the same failure is the suite's: exit 3, nothing retried.
    let sb = Sandbox::with_user_files();
    sb.set_script(&once(&sb));
    let o = suite(
        &sb,
        &[sb.flow()],
        "codex",
        &["--attempts", "1", "--jobs", "1"],
    );
    assert_exit_code(&o, 3);
    assert_eq!(sb.run_dirs().len(), 1);
}

#[test]
fn two_shards_run_every_pair_exactly_once() {
    let mut seen = Vec::new();
    for shard in ["count:1/2", "count:2/2"] {
        let sb = Sandbox::scripted("@exit 0\n");
        let dir = flows(&sb, &["browse", "search", "signup"]);
        let o = suite(&sb, &[dir], "all", &["--partition", shard, "--jobs", "1"]);
        assert_exit_code(&o, 0);
        assert_has(&stdout(&o), &format!("(shard {shard}: 3 of 6)"));
        seen.extend(runs_left(&sb));
    }
    seen.sort();
    let mut want = Vec::new();
    for f in ["browse", "search", "signup"] {
        for h in ["claude", "codex"] {
            want.push((f.to_owned(), h.to_owned(), "clean".to_owned()));
        }
    }
    assert_eq!(seen, want);
}

#[test]
fn a_bad_flow_stops_the_suite_before_any_run() {
    let sb = Sandbox::scripted("@exit 0\n");
    let dir = flows(&sb, &["browse"]);
    std::fs::write(dir.join("broken.md"), "+++\nname = \n+++\n").unwrap();
    let before = std::fs::read(dir.join("broken.md")).unwrap();
    let o = suite(&sb, std::slice::from_ref(&dir), "claude,codex", &[]);
    assert_exit_code(&o, 2);
    assert_has(&stderr(&o), "broken.md");
    assert!(sb.run_dirs().is_empty());
    assert_eq!(std::fs::read(dir.join("broken.md")).unwrap(), before);
}
