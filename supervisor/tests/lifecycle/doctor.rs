//! `leopold doctor`: a stale ACTIVE.json and orphaned wiring are problems with their fix; after
//! recovery the same project is healthy.

use crate::kit::*;

/// `leopold doctor --json` of the sandbox's project: its exit code and report.
pub(super) fn doctor(sb: &Sandbox) -> (i32, serde_json::Value) {
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

/// The first finding of doctor's report that matches; the report in the panic otherwise.
fn finding(
    v: &serde_json::Value,
    matches: impl Fn(&serde_json::Value) -> bool,
) -> &serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| matches(f))
        .unwrap_or_else(|| panic!("no such finding: {v}"))
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
    let lock = finding(&v, |f| f["check"] == "lock");
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
    let f = finding(&v, |f| f["check"] == "settings" && f["status"] == "problem");
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
            // Credentials present: their check passes, the version's decides.
            .env("ANTHROPIC_API_KEY", "sk-ant-api03-doctor")
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        let f = finding(&v, |f| f["check"] == "on_failure");
        assert_eq!(f["status"] == "problem", want_problem, "{version}: {f}");
        assert_eq!(
            out.status.code(),
            Some(if want_problem { 1 } else { 0 }),
            "{version}: {v}"
        );
        let binary = finding(&v, |f| f["scope"] == "claude" && f["check"] == "binary");
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
    let linking = finding(&v, |f| f["scope"] == "leopold" && f["check"] == "linking");
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
    assert_exit_code(&out, 0);
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
    let wired = finding(&v, |f| f["scope"] == "claude" && f["check"] == "wired").clone();
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
    assert_exit_code(&out, 0);
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

/// A fake `claude` on PATH (its credentials then matter): the doctor command with `env`.
fn doctor_with(
    sb: &Sandbox,
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, serde_json::Value) {
    let bin = sb.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let _ = std::os::unix::fs::symlink(fake_worker(), bin.join("claude"));
    let project = sb.project.display().to_string();
    let mut all = vec!["doctor", "--project", &project, "--json"];
    all.extend_from_slice(args);
    let mut cmd = sb.leopold(&all);
    cmd.env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("FAKE_WORKER_VERSION", "2.1.332 (Claude Code)")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODEX_API_KEY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let v: serde_json::Value =
        serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    (out.status.code().unwrap(), text, v)
}

fn check<'a>(v: &'a serde_json::Value, scope: &str, name: &str) -> &'a serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["scope"] == scope && f["check"] == name)
        .unwrap_or_else(|| panic!("no {scope}/{name}: {v}"))
}

/// With the harness installed and no credentials, the check fails with what to do; with a key
/// variable or a login file it passes; no value is ever printed.
#[test]
fn doctor_checks_each_harness_has_credentials_and_never_prints_them() {
    let sb = Sandbox::with_user_files();
    let (code, text, v) = doctor_with(&sb, &[], &[]);
    assert_eq!(code, 1, "{v}");
    let c = check(&v, "claude", "credentials");
    assert_eq!(c["status"], "problem", "{c}");
    assert!(
        c["fix"].as_str().unwrap().contains("ANTHROPIC_API_KEY"),
        "{c}"
    );
    assert!(c["fix"].as_str().unwrap().contains("claude login"), "{c}");
    // Codex is not on PATH here: its missing credentials are a note.
    assert_eq!(check(&v, "codex", "credentials")["status"], "note");
    assert!(!text.contains("leopold-placeholder"));

    let key = "sk-ant-api03-SECRET-doctor-key";
    let (code, text, v) = doctor_with(&sb, &[], &[("ANTHROPIC_API_KEY", key)]);
    assert_eq!(code, 0, "{v}");
    let c = check(&v, "claude", "credentials");
    assert_eq!(c["status"], "ok", "{c}");
    assert_eq!(c["message"], "ANTHROPIC_API_KEY is set");
    assert!(!text.contains("SECRET"), "{text}");

    // Claude's login file, and Codex's.
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    std::fs::write(
        sb.home.join(".claude/.credentials.json"),
        r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-SECRET-access","refreshToken":"r"}}"#,
    )
    .unwrap();
    std::fs::write(
        sb.codex_home.join("auth.json"),
        r#"{"OPENAI_API_KEY":null,"tokens":{"access_token":"SECRET-codex-access"}}"#,
    )
    .unwrap();
    let (code, text, v) = doctor_with(&sb, &[], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(check(&v, "claude", "credentials")["status"], "ok");
    assert_eq!(check(&v, "codex", "credentials")["status"], "ok");
    assert!(!text.contains("SECRET"), "{text}");
}

/// A model endpoint on a free loopback port answering every request with `status`.
fn answering(status: u16) -> u16 {
    use std::io::{BufRead as _, Write as _};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let mut r = std::io::BufReader::new(&conn);
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let _ = (&conn).write_all(
                format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
                )
                .as_bytes(),
            );
        }
    });
    port
}

/// `--online`: the endpoint refusing the key (401) is a problem with what to do; one that
/// takes it passes; one that cannot be reached is a problem. Without `--online` nothing is
/// asked.
#[test]
fn doctor_online_asks_the_model_endpoint_with_the_key() {
    let sb = Sandbox::with_user_files();
    let key = "sk-ant-api03-SECRET-online";
    let refusing = answering(401);
    let base = format!("http://127.0.0.1:{refusing}");
    let env = [
        ("ANTHROPIC_API_KEY", key),
        ("ANTHROPIC_BASE_URL", base.as_str()),
    ];
    let (code, _, v) = doctor_with(&sb, &[], &env);
    assert_eq!(code, 0, "not asked without --online: {v}");
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["check"] != "endpoint"));

    let (code, text, v) = doctor_with(&sb, &["--online"], &env);
    assert_eq!(code, 1, "{v}");
    let e = check(&v, "claude", "endpoint");
    assert_eq!(e["status"], "problem", "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("127.0.0.1:{refusing}")) && msg.contains("401"),
        "{e}"
    );
    assert!(!msg.contains("http://"), "a host, never a URL: {e}");
    assert!(
        e["fix"].as_str().unwrap().contains("ANTHROPIC_API_KEY"),
        "{e}"
    );
    assert!(!text.contains("SECRET"), "{text}");
    // Codex has no key here: not asked, said so.
    assert_eq!(check(&v, "codex", "endpoint")["status"], "note");

    let online_at = |port: u16| {
        let base = format!("http://127.0.0.1:{port}");
        doctor_with(
            &sb,
            &["--online"],
            &[("ANTHROPIC_API_KEY", key), ("ANTHROPIC_BASE_URL", &base)],
        )
    };
    let (code, _, v) = online_at(answering(200));
    assert_eq!(code, 0, "{v}");
    assert_eq!(check(&v, "claude", "endpoint")["status"], "ok");

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, _, v) = online_at(closed);
    assert_eq!(code, 1, "{v}");
    let e = check(&v, "claude", "endpoint");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot reach the model endpoint"),
        "{e}"
    );
}

/// The provisioned browser: found as `persona run` finds it, and started. A flow here that
/// provisions it makes its absence a problem; otherwise a note.
#[test]
fn doctor_checks_the_provisioned_browser() {
    let sb = Sandbox::with_user_files();
    let (_, _, v) = doctor_with(
        &sb,
        &[],
        &[("LEOPOLD_PLAYWRIGHT_MCP", "/nonexistent/playwright-mcp")],
    );
    let b = check(&v, "browser", "installed");
    assert_eq!(b["status"], "note", "{b}");
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/playwright-mcp"),
        "{b}"
    );
    assert!(
        b["fix"].as_str().unwrap().contains("install-browser.sh"),
        "{b}"
    );
    std::fs::create_dir_all(sb.project.join("flows")).unwrap();
    std::fs::write(
        sb.project.join("flows/shop.md"),
        "+++\nname = \"shop\"\nallowlist = [\"shop.example\"]\nbrowser = \"playwright\"\n+++\nShop.\n",
    )
    .unwrap();
    let (code, _, v) = doctor_with(
        &sb,
        &[],
        &[
            ("ANTHROPIC_API_KEY", "k"),
            ("LEOPOLD_PLAYWRIGHT_MCP", "/nonexistent/playwright-mcp"),
        ],
    );
    assert_eq!(check(&v, "browser", "installed")["status"], "problem");
    assert_eq!(code, 1, "{v}");
    // A Playwright MCP that is there but does not start.
    let broken = sb.root.join("playwright-mcp");
    std::fs::write(&broken, "#!/bin/sh\nexit 7\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Chromium is the provisioned one (scripts/test.sh installs it).
    let (_, _, v) = doctor_with(
        &sb,
        &[],
        &[("LEOPOLD_PLAYWRIGHT_MCP", broken.to_str().unwrap())],
    );
    let p = check(&v, "browser", "playwright_mcp");
    assert_eq!(p["status"], "problem", "{p}");
    assert!(
        p["message"].as_str().unwrap().contains("does not start"),
        "{p}"
    );
}
