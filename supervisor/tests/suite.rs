//! `persona report --merge`: real finished runs (the fake worker's), labelled as one suite's
//! attempts as the suite's orchestrator labels them, split into two shards as two CI jobs would
//! leave them. Merging the shards says what one folder holding every run says: the same JUnit
//! (times aside) and the same page; the verdicts are checked against the runs' own exit codes
//! and `run.json`s, not against the merge's output.

use std::path::{Path, PathBuf};

use crate::kit::*;

/// Runs `persona run` under `harness` with the fake worker exiting `exit`, checks the run's own
/// exit code, and labels the new run directory attempt `attempt` of suite `S`.
fn attempt(sb: &Sandbox, harness: &str, exit: u8, want: i32, attempt: u32) -> PathBuf {
    let before = sb.run_dirs();
    sb.set_script(&format!("@exit {exit}\n"));
    let out = sb.run_cmd(harness, &[]).output().unwrap();
    assert_exit_code(&out, want);
    let dir = sb
        .run_dirs()
        .into_iter()
        .find(|d| !before.contains(d))
        .expect("a new run directory");
    let p = dir.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["suite"] = serde_json::json!({"id": "S", "attempt": attempt});
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    dir
}

fn copy_into(dirs: &[&PathBuf], shard: &Path) {
    std::fs::create_dir_all(shard).unwrap();
    for d in dirs {
        let st = std::process::Command::new("cp")
            .arg("-r")
            .arg(d)
            .arg(shard)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

fn merge(sb: &Sandbox, inputs: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["persona".to_owned(), "report".into(), "--merge".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["--out".into(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.leopold(&args).output().unwrap()
}

/// The JUnit file with the folder it was merged into written `OUT` and every time left out.
fn junit_of(out: &Path) -> String {
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let xml = xml.replace(&out.display().to_string(), "OUT");
    let mut rest = xml.as_str();
    let mut kept = String::new();
    while let Some(i) = [" time=\"", " timestamp=\""]
        .iter()
        .filter_map(|a| rest.find(a).map(|i| (i, a.len())))
        .min()
    {
        let (at, len) = i;
        kept.push_str(&rest[..at]);
        let value = &rest[at + len..];
        rest = &value[value.find('"').unwrap() + 1..];
    }
    kept.push_str(rest);
    kept
}

fn count(xml: &str, tag: &str) -> usize {
    xml.matches(&format!("<{tag} ")).count() + xml.matches(&format!("<{tag}>")).count()
}

#[test]
fn merging_two_shards_gives_what_one_folder_of_every_run_gives() {
    let sb = Sandbox::with_user_files();
    // checkout: claude fails then passes (flaky), codex passes.
    let a1 = attempt(&sb, "claude", 1, 3, 1);
    let a2 = attempt(&sb, "claude", 0, 0, 2);
    let b1 = attempt(&sb, "codex", 0, 0, 1);
    // signup: claude passes; codex fails twice.
    let flow = std::fs::read_to_string(sb.flow()).unwrap();
    std::fs::write(sb.flow(), flow.replace("\"checkout\"", "\"signup\"")).unwrap();
    let c1 = attempt(&sb, "claude", 0, 0, 1);
    let d1 = attempt(&sb, "codex", 1, 3, 1);
    let d2 = attempt(&sb, "codex", 1, 3, 2);
    let outcome = |d: &Path| -> String {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
        v["end"]["outcome"].as_str().unwrap().to_owned()
    };
    assert_eq!(outcome(&a1), "worker_failed");
    assert_eq!(outcome(&d2), "worker_failed");

    let (shard_a, shard_b) = (sb.root.join("shard-a"), sb.root.join("shard-b"));
    copy_into(&[&a1, &a2, &d1], &shard_a);
    copy_into(&[&b1, &c1, &d2], &shard_b);
    let (merged, whole) = (sb.root.join("merged"), sb.root.join("whole"));
    let m = merge(&sb, &[&shard_a, &shard_b], &merged);
    let runs = sb.project.join(".leopold/persona/runs");
    let w = merge(&sb, &[&runs], &whole);
    // The worst case is signup under codex: the worker failed, as its own run exited.
    assert_exit_code(&m, 3);
    assert_exit_code(&w, 3);
    assert_has(&stdout(&m), "suite.html");
    assert_has(&stdout(&m), "junit.xml");

    // OUT is a runs folder: every run, its records byte for byte, its report beside them.
    for d in [&a1, &a2, &b1, &c1, &d1, &d2] {
        let copy = merged.join(d.file_name().unwrap());
        for f in ["run.json", "journal.jsonl", "report.html"] {
            assert_eq!(
                std::fs::read(copy.join(f)).unwrap(),
                std::fs::read(d.join(f)).unwrap(),
                "{f} of {}",
                d.display()
            );
        }
    }

    let xml = junit_of(&merged);
    assert_eq!(xml, junit_of(&whole), "shards merged = one folder");
    assert_eq!(
        std::fs::read_to_string(merged.join("suite.html")).unwrap(),
        std::fs::read_to_string(whole.join("suite.html")).unwrap()
    );
    assert_has(
        &xml,
        r#"<testsuites name="leopold" tests="4" failures="1" errors="0">"#,
    );
    assert_eq!(count(&xml, "testsuite"), 2);
    assert_eq!(count(&xml, "testcase"), 4);
    assert_eq!(count(&xml, "flakyFailure"), 1);
    assert_eq!(count(&xml, "rerunFailure"), 1);
    assert_eq!(count(&xml, "failure"), 1);
    assert_has(&xml, r#"type="worker_failed""#);
    let page = std::fs::read_to_string(merged.join("suite.html")).unwrap();
    for d in [&a1, &a2, &b1, &c1, &d1, &d2] {
        let id = d.file_name().unwrap().to_string_lossy();
        assert_has(&page, &format!("href=\"{id}/report.html\""));
    }
    assert_has(&page, "id=\"runs\">6<");
    assert_has(&page, "id=\"flaky\">1<");
    assert_has(&page, "id=\"passed\">2<");
}

#[test]
fn a_merge_refuses_a_run_id_out_holds_for_another_run_or_a_path_that_is_no_run_and_writes_nothing()
{
    let sb = Sandbox::with_user_files();
    let a = attempt(&sb, "codex", 0, 0, 1);
    let b = attempt(&sb, "codex", 1, 3, 2);
    // OUT holds a run under a's id that is b's.
    let out = sb.root.join("out");
    let clash = out.join(a.file_name().unwrap());
    copy_into(&[&b], &out);
    std::fs::rename(out.join(b.file_name().unwrap()), &clash).unwrap();
    let listing = |p: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = walkdir(p);
        v.sort();
        v
    };
    let before = listing(&out);
    let o = merge(&sb, &[&a], &out);
    assert_exit_code(&o, 2);
    assert_has(&stderr(&o), "already holds a different run with the id");
    assert_eq!(listing(&out), before, "nothing written");

    let nowhere = sb.root.join("nowhere");
    let o = merge(&sb, &[&sb.flow()], &nowhere);
    assert_exit_code(&o, 2);
    assert_has(
        &stderr(&o),
        "is not a run directory or a folder of run directories",
    );
    assert!(!nowhere.exists());
}

fn walkdir(p: &Path) -> Vec<PathBuf> {
    let mut out = vec![p.to_path_buf()];
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            out.extend(walkdir(&e.path()));
        }
    }
    out
}
