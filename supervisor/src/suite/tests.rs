//! The suite's grouping, status, exit code, JUnit shape (parsed back as XML) and page, over run
//! directories written as `persona run` writes them.

use std::path::{Path, PathBuf};

use super::*;

/// One run's `run.json`, its `suite` membership given or absent.
struct Run<'a> {
    id: &'a str,
    flow: &'a str,
    harness: &'a str,
    outcome: &'a str,
    code: u8,
    started: &'a str,
    suite: Option<(&'a str, u32)>,
}

const VERDICT: &str = r#","verdict":{"fail_on":"major","expectations":[],"reported":[{"seq":4,"severity":"minor","title":"slow","at":"2026-12-01T10:00:05Z"},{"seq":5,"severity":"major","title":"broken","at":"2026-12-01T10:00:06Z"}],"reported_not_kept":0,"finish":null,"failed_by":["broken"],"unmet":[]}"#;

fn write(runs_dir: &Path, r: &Run<'_>) -> PathBuf {
    let dir = runs_dir.join(r.id);
    std::fs::create_dir_all(&dir).unwrap();
    let suite = r
        .suite
        .map(|(id, n)| format!(r#""suite":{{"id":"{id}","attempt":{n}}},"#))
        .unwrap_or_default();
    let verdict = if r.outcome == "failed" { VERDICT } else { "" };
    let usage = r#","usage":{"turns":2,"input_tokens":100,"output_tokens":20,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0.25}"#;
    let json = format!(
        r#"{{"version":1,"active":false,"run_id":"{id}","flow":"{flow}","flow_path":"/p/{flow}.md","harness":"{harness}","supervisor_pid":1,"worker_pid":null,"started_at":"{started}","wiring":[],{suite}"end":{{"outcome":"{outcome}","exit_code":{code},"reason":"ended {outcome}","ended_at":"{ended}","counts":{{"actions":0,"completed":0,"errored":0,"denied":0,"violations":0,"unreadable_lines":0}}{usage}{verdict}}}}}"#,
        id = r.id,
        flow = r.flow,
        harness = r.harness,
        started = r.started,
        outcome = r.outcome,
        code = r.code,
        ended = r.started.replace(":00Z", ":10Z"),
    );
    std::fs::write(dir.join("run.json"), json).unwrap();
    std::fs::write(dir.join("report.html"), "<p>report</p>").unwrap();
    dir
}

/// A runs folder: checkout under claude flaky (failed, then clean), under codex passed; signup
/// under claude failed twice (stuck, then the app failed the flow); and an older standalone run
/// of checkout under claude that the suite supersedes.
fn suite_folder() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let runs = [
        (
            "old",
            "checkout",
            "claude",
            "clean",
            0,
            "2026-11-30T09:00:00Z",
            None,
        ),
        (
            "a1",
            "checkout",
            "claude",
            "worker_failed",
            3,
            "2026-12-01T10:00:00Z",
            Some(("S", 1)),
        ),
        (
            "a2",
            "checkout",
            "claude",
            "clean",
            0,
            "2026-12-01T10:01:00Z",
            Some(("S", 2)),
        ),
        (
            "b1",
            "checkout",
            "codex",
            "clean",
            0,
            "2026-12-01T10:00:00Z",
            Some(("S", 1)),
        ),
        (
            "c1",
            "signup",
            "claude",
            "stuck",
            5,
            "2026-12-01T10:00:00Z",
            Some(("S", 1)),
        ),
        (
            "c2",
            "signup",
            "claude",
            "failed",
            6,
            "2026-12-01T10:02:00Z",
            Some(("S", 2)),
        ),
    ];
    for (id, flow, harness, outcome, code, started, suite) in runs {
        let r = Run {
            id,
            flow,
            harness,
            outcome,
            code,
            started,
            suite,
        };
        write(d.path(), &r);
    }
    d
}

fn suite_cases(d: &Path) -> Vec<Case> {
    cases(load(&[d.to_path_buf()]).unwrap())
}

#[test]
fn runs_group_into_cases_by_suite_flow_and_harness_in_order() {
    let d = suite_folder();
    let cs = suite_cases(d.path());
    let shape: Vec<(&str, &str, Vec<String>, Status, u8)> = cs
        .iter()
        .map(|c| {
            let ids = c.attempts.iter().map(|r| r.run_id()).collect();
            (
                c.flow.as_str(),
                c.harness.as_str(),
                ids,
                c.status,
                c.exit_code(),
            )
        })
        .collect();
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shape,
        vec![
            ("checkout", "claude", ids(&["a1", "a2"]), Status::Flaky, 0),
            ("checkout", "codex", ids(&["b1"]), Status::Passed, 0),
            ("signup", "claude", ids(&["c1", "c2"]), Status::Failed, 6),
        ]
    );
    assert_eq!(cs[0].superseded, vec!["suite old: old".to_owned()]);
    let notes = notes(&cs);
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("skipped suite old"), "{notes:?}");
    assert_eq!(exit_code(&cs), 6);
}

#[test]
fn the_worst_case_decides_the_exit_code_and_tampering_is_a_violation() {
    let d = suite_folder();
    let mut cs = suite_cases(d.path());
    assert_eq!(exit_code(&cs[..2]), 0, "flaky and passed exit 0");
    // The app's failure outranks a persona the supervisor stopped; a broken record outranks
    // both.
    let mut stopped = cs[2].clone();
    stopped.attempts.swap(0, 1);
    assert_eq!(stopped.exit_code(), 5);
    assert_eq!(exit_code(std::slice::from_ref(&stopped)), 5);
    cs.push(stopped);
    assert_eq!(exit_code(&cs), 6);
    let mut tampered = cs[1].clone();
    tampered.attempts[0].tampered = vec!["journal.jsonl line 2: …".into()];
    tampered.status = Status::Failed;
    assert_eq!(tampered.exit_code(), 1);
    cs.push(tampered);
    assert_eq!(exit_code(&cs), 1);
}

#[test]
fn a_path_that_is_no_run_directory_nor_a_folder_of_them_is_one_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    for (p, says) in [
        (
            file,
            "is not a run directory or a folder of run directories: not a folder",
        ),
        (d.path().join("nope"), "it does not exist"),
        (d.path().to_path_buf(), "holds no run directory"),
    ] {
        let e = format!("{:#}", load(std::slice::from_ref(&p)).unwrap_err());
        assert!(
            e.contains(says) && e.contains(&p.display().to_string()),
            "{e}"
        );
    }
}

/// An element of a parsed document: its name, its ancestors' names, its attributes.
struct El {
    path: Vec<String>,
    attrs: Vec<(String, String)>,
}

impl El {
    fn attr(&self, k: &str) -> &str {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v)
    }
    fn name(&self) -> &str {
        self.path.last().unwrap()
    }
}

fn parse(xml: &str) -> Vec<El> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    let (mut out, mut open) = (Vec::new(), Vec::<String>::new());
    loop {
        let ev = r.read_event().unwrap_or_else(|e| panic!("{e}\n{xml}"));
        let (s, empty) = match &ev {
            Event::Start(s) => (s, false),
            Event::Empty(s) => (s, true),
            Event::End(_) => {
                open.pop();
                continue;
            }
            Event::Eof => return out,
            _ => continue,
        };
        let name = s.name().as_ref().to_owned();
        let attrs = s
            .attributes()
            .map(|a| {
                let a = a.unwrap();
                let v = a
                    .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .unwrap()
                    .into_owned();
                (a.key.as_ref().to_owned(), v)
            })
            .collect();
        let mut path = open.clone();
        path.push(name.clone());
        out.push(El { path, attrs });
        if !empty {
            open.push(name);
        }
    }
}

#[test]
fn the_junit_file_has_a_suite_per_flow_a_case_per_harness_and_reruns_as_nextest_writes_them() {
    let d = suite_folder();
    let els = parse(&junit(&suite_cases(d.path())));
    let named = |n: &'static str| els.iter().filter(move |e| e.name() == n);
    let top = named("testsuites").next().unwrap();
    assert_eq!(
        [top.attr("tests"), top.attr("failures"), top.attr("errors")],
        ["3", "1", "0"]
    );
    let suites: Vec<(&str, &str)> = named("testsuite")
        .map(|e| (e.attr("name"), e.attr("tests")))
        .collect();
    assert_eq!(suites, [("checkout", "2"), ("signup", "1")]);
    let cases: Vec<(&str, &str)> = named("testcase")
        .map(|e| (e.attr("classname"), e.attr("name")))
        .collect();
    assert_eq!(
        cases,
        [
            ("checkout", "claude"),
            ("checkout", "codex"),
            ("signup", "claude")
        ]
    );
    // The flaky case passes, its failed attempt a <flakyFailure> inside it; the failed case's
    // last attempt is its <failure>, the earlier one a <rerunFailure>.
    let under = |n: &'static str| -> Vec<(String, &str)> {
        named(n)
            .map(|e| (e.path[..e.path.len() - 1].join("/"), e.attr("type")))
            .collect()
    };
    let case = "testsuites/testsuite/testcase".to_owned();
    assert_eq!(under("flakyFailure"), [(case.clone(), "worker_failed")]);
    assert_eq!(under("rerunFailure"), [(case.clone(), "stuck")]);
    assert_eq!(under("failure"), [(case.clone(), "failed")]);
    assert_eq!(named("error").count() + named("rerunError").count(), 0);
    // Each rerun carries its own output; each case its last attempt's properties.
    assert_eq!(named("system-out").count(), 3 + 2);
    let run_ids: Vec<&str> = named("property")
        .filter(|p| p.attr("name") == "run_id")
        .map(|p| p.attr("value"))
        .collect();
    assert_eq!(run_ids, ["a2", "b1", "c2"]);
    let flaky = named("flakyFailure").next().unwrap();
    assert_eq!(flaky.attr("timestamp"), "2026-12-01T10:00:00Z");
    assert_eq!(flaky.attr("message"), "ended worker_failed");
}

#[test]
fn the_page_links_every_attempt_relative_to_its_folder_and_shows_the_totals() {
    let d = suite_folder();
    let cs = suite_cases(d.path());
    let page = html(&cs, d.path());
    for id in ["a1", "a2", "b1", "c1", "c2"] {
        assert!(
            page.contains(&format!("href=\"{id}/report.html\"")),
            "{id}: {page}"
        );
    }
    assert!(
        !page.contains("old/report.html"),
        "the superseded run is not a case's"
    );
    // From a sibling folder, the links climb out of it.
    let elsewhere = d.path().join("site");
    assert!(html(&cs, &elsewhere).contains("href=\"../a1/report.html\""));
    let t = Totals::of(&cs);
    assert_eq!((t.runs, t.passed, t.flaky, t.failed_total()), (5, 1, 1, 1));
    assert_eq!(t.tokens, 5 * 120);
    assert_eq!(t.cost_usd, Some(1.25));
    // 10:00:00 to 10:02:10.
    assert_eq!(t.wall, Some(std::time::Duration::from_secs(130)));
    for (id, text) in [
        ("runs", "5"),
        ("passed", "1"),
        ("flaky", "1"),
        ("wall", "2m 10s"),
        ("tokens", "600"),
        ("cost", "$1.2500"),
    ] {
        assert!(
            page.contains(&format!("id=\"{id}\">{text}<")),
            "{id}: {page}"
        );
    }
    assert!(page.contains("id=\"failed\">1 · failed 1<"), "{page}");
    assert!(page.contains("<span class=\"outcome flaky\">flaky</span>"));
    assert!(
        page.contains("sev-major"),
        "the worst finding of signup: {page}"
    );
    assert!(!page.contains("<script") && !page.contains("://"), "{page}");
    let md = step_summary(&cs);
    assert!(md.contains("| `checkout` | claude | 2 | flaky |"), "{md}");
    assert!(
        md.contains("| `signup` | claude | 2 | **failed** (exit 6) |"),
        "{md}"
    );
    assert!(md.contains("| 2 (major) |"), "{md}");
}

#[test]
fn a_merge_refuses_a_run_id_out_already_holds_for_another_run_and_writes_nothing() {
    let d = suite_folder();
    let out = tempfile::tempdir().unwrap();
    let other = Run {
        id: "a1",
        flow: "checkout",
        harness: "claude",
        outcome: "clean",
        code: 0,
        started: "2026-12-02T10:00:00Z",
        suite: None,
    };
    write(out.path(), &other);
    let before = std::fs::read_dir(out.path()).unwrap().count();
    let e = format!(
        "{:#}",
        merge::merge(&[d.path().to_path_buf()], out.path()).unwrap_err()
    );
    assert!(
        e.contains("already holds a different run with the id a1"),
        "{e}"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), before);
    // The same run again is no conflict: merging a folder into itself changes nothing.
    let dirs = merge::merge(&[d.path().to_path_buf()], d.path()).unwrap();
    assert_eq!(dirs.len(), 6);
}
