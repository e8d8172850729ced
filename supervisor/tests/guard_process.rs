//! `leopold persona guard` as the harness runs it: a process, a payload on stdin, an exit code.
//! Exit codes are only 0 and 2, allow is silent, a deny is one stderr line, and nothing the guard
//! writes ever holds a URL or a credential.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::kit::{assert_has, Sandbox, LEOPOLD};

const SECRET: &str = "PlantedS3cretToken";

const FLOW: &str = "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n\
start_url = \"https://staging.example.com/\"\n[irreversible]\nforbid = [\"payment\"]\n\
url_paths = [\"/checkout/confirm\"]\ntools = [\"mcp__stripe__.*\"]\n+++\nbrief\n";

/// A sandbox whose project holds the flow, a subdirectory to run from, and (if `active`) the
/// ACTIVE.json of a running persona.
fn project(active: bool) -> Sandbox {
    let sb = Sandbox::new();
    let root = &sb.project;
    std::fs::create_dir_all(root.join(".leopold/persona")).unwrap();
    std::fs::create_dir_all(root.join("flows")).unwrap();
    std::fs::create_dir_all(root.join("web/app")).unwrap();
    std::fs::write(root.join("flows/checkout.md"), FLOW).unwrap();
    if active {
        std::fs::write(
            root.join(".leopold/persona/ACTIVE.json"),
            r#"{"version":1,"active":true,"run_id":"r1","flow":"checkout","flow_path":"flows/checkout.md","harness":"claude"}"#,
        )
        .unwrap();
    }
    sb
}

fn payload(root: &Path, tool: &str, input: serde_json::Value, id: &str) -> Vec<u8> {
    serde_json::json!({
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": root.join("web/app"),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": id,
    })
    .to_string()
    .into_bytes()
}

fn guard_in(cwd: &Path, stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(LEOPOLD);
    cmd.args(["persona", "guard"])
        .current_dir(cwd)
        .env_remove("__LEOPOLD_GUARD_PANIC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    // The guard stops reading past its bound: a broken pipe here is expected.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// [`guard`] of the [`payload`] of one call in the sandbox's project.
fn guard_call(p: &Sandbox, tool: &str, input: serde_json::Value, id: &str) -> Output {
    guard(p, &payload(&p.project, tool, input, id))
}

fn guard(p: &Sandbox, stdin: &[u8]) -> Output {
    guard_in(&p.project, stdin, &[])
}

/// Every file under `dir` with its contents.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

fn assert_allow(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}

fn assert_deny(out: &Output, reason: &str) -> String {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(err.matches('\n').count(), 1, "{err:?}");
    assert!(err.ends_with('\n'), "{err:?}");
    assert!(err.starts_with("Leopold persona guard: "), "{err:?}");
    assert!(err.contains(&format!("(reason: {reason})")), "{err:?}");
    assert!(!err.contains("://") && !err.contains(SECRET), "{err:?}");
    err
}

fn events(p: &Sandbox) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p.project.join(".leopold/persona/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One call the guard denies for `reason`, in a fresh project: its stderr line and the events.
fn denied(
    tool: &str,
    input: serde_json::Value,
    id: &str,
    reason: &str,
) -> (String, Vec<serde_json::Value>) {
    let p = project(true);
    let err = assert_deny(&guard_call(&p, tool, input, id), reason);
    (err, events(&p))
}

#[test]
fn an_allowed_navigation_exits_zero_in_silence_and_writes_nothing() {
    let p = project(true);
    let before = files(&p.project);
    let out = guard_call(
        &p,
        "mcp__browser__browser_navigate",
        serde_json::json!({"url": "https://staging.example.com/products"}),
        "toolu_1",
    );
    assert_allow(&out);
    assert_eq!(files(&p.project), before);
}

#[test]
fn a_denied_navigation_prints_one_line_and_journals_the_host_and_path_only() {
    let p = project(true);
    let before = files(&p.project);
    let url = format!("https://user:{SECRET}@evil.example/account?token={SECRET}#{SECRET}");
    let out = guard_call(
        &p,
        "mcp__browser__browser_navigate",
        serde_json::json!({"url": url}),
        "toolu_01abc",
    );
    let err = assert_deny(&out, "outside_allowlist");
    assert_has(&err, "host \"evil.example\"");
    assert_has(&err, "flow \"checkout\"");
    assert!(err.contains("journal the wall as a finding instead of retrying"));

    // Grep every file the guard wrote or changed.
    let after = files(&p.project);
    let written: Vec<_> = after
        .iter()
        .filter(|(path, bytes)| before.get(*path) != Some(*bytes))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    for (path, bytes) in &written {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains("://") && !text.contains(SECRET),
            "{path:?}: {text}"
        );
    }
    let ev = events(&p);
    assert_eq!(ev.len(), 1);
    let e = &ev[0];
    assert_eq!(e["event"], "persona_guard_block");
    assert_eq!(e["tool"], "mcp__browser__browser_navigate");
    assert_eq!(e["host"], "evil.example");
    assert_eq!(e["flow"], "checkout");
    assert_eq!(e["reason"], "outside_allowlist");
    assert_eq!(e["tool_use_id"], "toolu_01abc");
    assert!(humantime::parse_rfc3339(e["ts"].as_str().unwrap()).is_ok());
    let mut keys: Vec<_> = e.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    // The call, reduced: the URL as scheme, host and path, never userinfo, query or fragment.
    assert_eq!(
        e["call"],
        serde_json::json!({"url": {"leopold_url": {"scheme": "https", "host": "evil.example", "path": "/account"}}})
    );
    assert_eq!(
        keys,
        [
            "call",
            "event",
            "flow",
            "host",
            "reason",
            "tool",
            "tool_use_id",
            "ts"
        ]
    );
}

#[test]
fn an_irreversible_tool_is_its_own_event_with_a_null_host() {
    let (_, ev) = denied(
        "mcp__stripe__create_charge",
        serde_json::json!({"amount": 100}),
        "call_9",
        "irreversible_tool",
    );
    assert_eq!(ev[0]["event"], "persona_guard_irreversible");
    assert!(ev[0]["host"].is_null());
    assert_eq!(ev[0]["tool_use_id"], "call_9");
}

#[test]
fn an_irreversible_path_names_its_host_but_not_the_path() {
    let (err, ev) = denied(
        "mcp__browser__browser_navigate",
        serde_json::json!({"url": format!("https://staging.example.com/checkout/confirm?k={SECRET}")}),
        "t",
        "irreversible_path",
    );
    assert_has(&err, "host \"staging.example.com\"");
    assert_eq!(ev[0]["host"], "staging.example.com");
    assert_eq!(ev[0]["event"], "persona_guard_irreversible");
}

#[test]
fn state_and_payload_failures_deny_with_their_reasons() {
    let p = project(true);
    assert_deny(&guard(&p, b"not json"), "payload_not_json");
    assert_deny(&guard(&p, b""), "payload_not_json");
    assert_deny(
        &guard(&p, br#"{"tool_name":"mcp__b__navigate"}"#),
        "payload_missing_field",
    );
    let mut big = payload(
        &p.project,
        "mcp__browser__browser_navigate",
        serde_json::json!({"url": "https://staging.example.com/"}),
        "t",
    );
    big.extend(std::iter::repeat_n(b' ', 2 << 20));
    assert_deny(&guard(&p, &big), "payload_too_large");

    std::fs::write(
        p.project.join(".leopold/persona/ACTIVE.json"),
        "{\"active\":tr",
    )
    .unwrap();
    let ok = payload(
        &p.project,
        "mcp__browser__browser_navigate",
        serde_json::json!({"url": "https://staging.example.com/"}),
        "t",
    );
    assert_deny(&guard(&p, &ok), "active_state_malformed");

    std::fs::write(
        p.project.join(".leopold/persona/ACTIVE.json"),
        r#"{"active":true,"flow":"checkout","flow_path":"flows/missing.md"}"#,
    )
    .unwrap();
    assert_deny(&guard(&p, &ok), "flow_unreadable");
    // One event per deny, each a whole JSON line.
    assert_eq!(events(&p).len(), 6);
}

#[test]
fn inert_without_an_active_run() {
    let p = project(false);
    let evil = payload(
        &p.project,
        "mcp__browser__browser_navigate",
        serde_json::json!({"url": "https://evil.example/"}),
        "t",
    );
    assert_allow(&guard(&p, &evil));
    assert_allow(&guard(&p, b"garbage"));
    std::fs::write(
        p.project.join(".leopold/persona/ACTIVE.json"),
        r#"{"active":false}"#,
    )
    .unwrap();
    assert_allow(&guard(&p, &evil));
    assert!(!p.project.join(".leopold/persona/events.jsonl").exists());
}

#[test]
fn a_panic_still_denies_with_exit_two_and_one_line() {
    if !cfg!(feature = "test-knobs") {
        panic!("the forced panic is a test knob: run ./scripts/test.sh, or add `--features leopold/test-knobs`");
    }
    let p = project(true);
    let out = guard_in(&p.project, b"{}", &[("__LEOPOLD_GUARD_PANIC", "1")]);
    let err = assert_deny(&out, "internal_error");
    assert!(!err.contains("__LEOPOLD_GUARD_PANIC"), "{err}");
}

#[test]
fn parallel_denials_append_whole_lines() {
    let p = project(true);
    let n = 24;
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let root = p.project.clone();
            std::thread::spawn(move || {
                let body = payload(
                    &root,
                    "mcp__browser__browser_navigate",
                    serde_json::json!({"url": format!("https://evil{i}.example/")}),
                    &format!("toolu_{i}"),
                );
                guard_in(&root, &body, &[]).status.code()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), Some(2));
    }
    let ev = events(&p);
    assert_eq!(ev.len(), n);
    let mut ids: Vec<String> = ev
        .iter()
        .map(|e| e["tool_use_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n);
}

#[test]
fn exit_codes_are_only_zero_or_two() {
    let p = project(true);
    let bodies: Vec<Vec<u8>> = vec![
        b"\xff\xfe\x00".to_vec(),
        b"{\"tool_name\":".to_vec(),
        b"[1,2,3]".to_vec(),
        b"null".to_vec(),
        "{\"tool_name\":\"x\",\"tool_input\":"
            .repeat(200)
            .into_bytes(),
        format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(),
        payload(
            &p.project,
            "mcp__b__click",
            serde_json::json!({"uid": "1_4"}),
            "t",
        ),
        payload(
            &p.project,
            "mcp__b__navigate",
            serde_json::json!({"url": "javascript:alert(1)"}),
            "t",
        ),
    ];
    for body in &bodies {
        let code = guard(&p, body).status.code();
        assert!(matches!(code, Some(0) | Some(2)), "{code:?}");
    }
}
