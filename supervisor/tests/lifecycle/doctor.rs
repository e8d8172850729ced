//! `leopold doctor`: a stale ACTIVE.json and orphaned wiring are problems with their fix; after
//! recovery the same project is healthy.

use crate::kit::*;

fn doctor(sb: &Sandbox) -> (i32, serde_json::Value) {
    let project = sb.project.display().to_string();
    let out = sb
        .leopold(&["doctor", "--project", &project, "--json"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    (out.status.code().unwrap(), v)
}

fn problems(v: &serde_json::Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "problem")
        .map(|f| {
            format!(
                "{}/{}",
                f["scope"].as_str().unwrap(),
                f["check"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn doctor_finds_a_crashed_run_and_its_wiring_then_is_healthy_after_recover() {
    // Unboxed: a boxed Claude run leaves no wiring of its own in the project for doctor to find.
    let sb = Sandbox::unboxed();
    sb.set_script("@sleep 60000\n");
    let (code, v) = doctor(&sb);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["ok"], true);
    assert!(problems(&v).is_empty());

    let mut child = sb.spawn_paused("claude", "launched");
    // While the run is live: the lock's holder is named, the wiring is not an orphan.
    let (code, v) = doctor(&sb);
    assert_eq!(code, 0, "{v}");
    let lock = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "lock")
        .unwrap();
    assert!(
        lock["message"]
            .as_str()
            .unwrap()
            .contains(&child.id().to_string()),
        "{lock}"
    );

    signal(child.id(), "KILL");
    let _ = child.wait();
    let (code, v) = doctor(&sb);
    assert_eq!(code, 1, "{v}");
    let p = problems(&v);
    assert!(p.contains(&"project/stale_active".to_owned()), "{p:?}");
    assert!(p.contains(&"claude/wired".to_owned()), "{p:?}");
    for f in v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "problem")
    {
        assert!(
            f["fix"]
                .as_str()
                .unwrap()
                .contains("leopold persona recover"),
            "{f}"
        );
    }

    assert_eq!(sb.recover().status.code(), Some(0));
    let (code, v) = doctor(&sb);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn doctor_reports_a_claude_settings_file_claude_would_skip() {
    let sb = Sandbox::with_user_files();
    std::fs::write(
        sb.project.join(".claude/settings.json"),
        r#"{"permissions":{"allow":5}}"#,
    )
    .unwrap();
    let (code, v) = doctor(&sb);
    assert_eq!(code, 1);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "settings" && f["status"] == "problem")
        .unwrap();
    assert!(
        f["message"].as_str().unwrap().contains("permissions.allow"),
        "{f}"
    );
    assert!(f["fix"].as_str().unwrap().contains("settings.json"));
    // Human form too: each problem with its fix.
    let project = sb.project.display().to_string();
    let out = sb
        .leopold(&["doctor", "--project", &project])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_has(&stdout(&out), "PROBLEM");
    assert_has(&stdout(&out), "fix:");
}

#[test]
fn doctor_says_when_claudes_on_failure_is_not_honoured() {
    let sb = Sandbox::with_user_files();
    let bin = sb.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(fake_worker(), bin.join("claude")).unwrap();
    let project = sb.project.display().to_string();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    for (version, want_problem) in [
        ("2.1.200 (Claude Code)", true),
        ("2.1.332 (Claude Code)", false),
    ] {
        let out = sb
            .leopold(&["doctor", "--project", &project, "--json"])
            .env("PATH", &path)
            .env("FAKE_WORKER_VERSION", version)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        let f = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["check"] == "on_failure")
            .unwrap_or_else(|| panic!("{v}"));
        assert_eq!(f["status"] == "problem", want_problem, "{version}: {f}");
        assert_eq!(
            out.status.code(),
            Some(if want_problem { 1 } else { 0 }),
            "{version}: {v}"
        );
        let binary = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["scope"] == "claude" && f["check"] == "binary")
            .unwrap();
        assert!(
            binary["message"]
                .as_str()
                .unwrap()
                .contains(version.split(' ').next().unwrap()),
            "{binary}"
        );
    }
}

/// The binary under test was built by cargo through `.cargo/rustc-leopold.sh`, which links it
/// statically so that each guard call starts without the dynamic loader (BENCHMARKS.md, "The
/// guard"); doctor must say so. Building with the documented off switch is the one exception.
#[cfg(target_os = "linux")]
#[test]
fn doctor_reports_the_binary_statically_linked() {
    let sb = Sandbox::with_user_files();
    let (_, v) = doctor(&sb);
    let linking = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["scope"] == "leopold" && f["check"] == "linking")
        .unwrap_or_else(|| panic!("no leopold/linking finding: {v}"));
    // The wrapper's test: set and not empty.
    let expected = if std::env::var_os("LEOPOLD_DYNAMIC_LINK").is_some_and(|v| !v.is_empty()) {
        "note"
    } else {
        "ok"
    };
    assert_eq!(linking["status"], expected, "{linking}");
}

/// A Codex run wires its own copy of the configuration: a crash leaves the user's config.toml as
/// it was (doctor names the stale run, not the user's file), while a tagged handler an older
/// version left in the user's file is still an orphan that `persona recover` removes.
#[test]
fn a_crashed_codex_run_leaves_the_users_config_alone_and_an_older_orphan_is_still_recovered() {
    let sb = Sandbox::scripted("@sleep 60000\n");
    let before = sb.snapshot();
    let mut child = sb.spawn_paused("codex", "launched");
    signal(child.id(), "KILL");
    let _ = child.wait();
    assert_eq!(sb.snapshot(), before, "the crash changed a user file");
    let (code, v) = doctor(&sb);
    assert_eq!(code, 1, "{v}");
    let p = problems(&v);
    assert!(p.contains(&"project/stale_active".to_owned()), "{p:?}");
    assert!(!p.contains(&"codex/wired".to_owned()), "{p:?}");

    // What an older leopold's crashed run left in the user's file.
    let cfg = sb.codex_home.join("config.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&Sandbox::codex_hook_toml("'/old/leopold' persona guard"));
    std::fs::write(&cfg, &text).unwrap();
    let (_, v) = doctor(&sb);
    assert!(problems(&v).contains(&"codex/wired".to_owned()), "{v}");

    let out = sb.recover();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stdout(&out);
    assert_has(&said, "crashed run");
    assert_has(&said, "orphaned guard wiring");
    assert_eq!(sb.snapshot(), before, "recovery must restore every byte");
    // The crashed run's copy (a copy of the user's config, wired) is gone from its record.
    let copy = sb.run_dirs()[0].join("scratch/.codex/config.toml");
    assert!(!copy.exists(), "{}", copy.display());
    let (code, v) = doctor(&sb);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn during_a_boxed_claude_run_a_tagged_handler_in_the_project_is_not_called_the_runs() {
    let sb = Sandbox::scripted("@sleep 60000\n");
    // An orphan: a crashed `--no-contain` run's wiring, say. A boxed run wires nothing there.
    let project = sb.project.display().to_string();
    let fake = fake_worker().display().to_string();
    let wire = sb
        .leopold(&[
            "persona",
            "wire",
            "--harness",
            "claude",
            "--project",
            &project,
            "--harness-bin",
            &fake,
        ])
        .output()
        .unwrap();
    assert_eq!(wire.status.code(), Some(0), "{}", stderr(&wire));
    let mut child = sb.spawn_paused("claude", "launched");
    let (_, v) = doctor(&sb);
    let wired = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["scope"] == "claude" && f["check"] == "wired")
        .unwrap()
        .clone();
    // Wired by hand, and the boxed run's ACTIVE.json names no file of the project's: a note.
    assert_eq!(wired["status"], "note", "{wired}");
    assert!(
        wired["message"].as_str().unwrap().contains("by hand"),
        "{wired}"
    );
    signal(child.id(), "KILL");
    let _ = child.wait();
    assert_eq!(sb.recover().status.code(), Some(0));
}

/// What loosens a bound is said loudly: `doctor` names a flow of the project that opts into a
/// dangerous browser tool (and says when none does), and a run of it, given a harness argument
/// after `--` and `--no-contain`, warns of all three on stderr; the argument's value is not shown.
#[test]
fn what_loosens_a_bound_is_said_by_doctor_and_by_every_run() {
    let sb = Sandbox::unboxed();
    sb.set_script("@exit 0\n");
    let flows = sb.project.join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::copy(sb.flow(), flows.join("checkout.md")).unwrap();
    let loosened = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "loosened")
            .cloned()
            .collect()
    };
    let (_, v) = doctor(&sb);
    let l = loosened(&v);
    assert_eq!(l.len(), 1, "{v}");
    assert_eq!(l[0]["status"], "ok", "{v}");

    let opted = std::fs::read_to_string(sb.flow()).unwrap().replacen(
        "+++\n",
        "+++\nallow_tools = [\"browser_evaluate\"]\n",
        1,
    );
    std::fs::write(sb.flow(), &opted).unwrap();
    std::fs::write(flows.join("checkout.md"), &opted).unwrap();
    let (_, v) = doctor(&sb);
    let l = loosened(&v);
    assert_eq!(l.len(), 1, "{v}");
    let msg = l[0]["message"].as_str().unwrap();
    assert_eq!(l[0]["status"], "note", "{v}");
    assert!(
        msg.contains("checkout.md")
            && msg.contains("allow_tools")
            && msg.contains("browser_evaluate"),
        "{msg}"
    );

    let out = sb
        .run_cmd("claude", &["--", "--fallback-model", "secret-model-name"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let e = stderr(&out);
    let warnings: Vec<&str> = e
        .lines()
        .filter(|l| l.starts_with("leopold: warning: "))
        .collect();
    for want in [
        "--no-contain: the worker runs WITHOUT the box",
        "opts into dangerous browser tools (`allow_tools`): browser_evaluate",
        "2 arguments passed to the harness after `--` (--fallback-model)",
    ] {
        assert!(warnings.iter().any(|w| w.contains(want)), "{want}: {e}");
    }
    assert!(!e.contains("secret-model-name"), "{e}");
}
