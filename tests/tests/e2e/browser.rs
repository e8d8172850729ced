//! The provisioned browser, proven in real Chromium (issue #7): `leopold persona run --browser
//! playwright` under each real harness, the scripted model, `@playwright/mcp` and Debian's
//! Chromium, against the test kit's staging app reached as `staging.example.com`.
//!
//! The staging app's ways out point at places this machine **can** reach without the browser's
//! resolver rules (the app itself by IP literal, or as `localhost`), so its request log proves
//! that nothing got out: every request it received names `staging.example.com`, and none of the
//! ways-out paths ever arrived.
#![allow(clippy::print_stderr)]

use std::process::Command;
use std::time::Duration;

use leopold_tests::offered::offered_browser_tools;
use leopold_tests::script::Turn;
use leopold_tests::staging::{
    call, nav, require_browser, shop_flow, ShopDone, ShopRun, StagingApp,
};
use leopold_tests::{leopold_bin, read_jsonl, require_cli, Harness, Sandbox};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(100);

/// The model's final answer.
const WALKED: &str = "Walked the shop.";

/// Paths a way out leads to on the app itself; none may ever arrive.
const WAYS_OUT: &[&str] = &["/admin", "/offers", "/partners", "/eval"];

/// Every request reached the app as `staging.example.com`, and no way out arrived.
fn assert_nothing_got_out(s: &ShopDone) {
    let seen = s.app.seen();
    assert!(!seen.is_empty(), "the app saw nothing\n{}", s.run);
    for (method, path, host) in &seen {
        assert_eq!(
            host, "staging.example.com",
            "{method} {path} reached the app as {host}"
        );
        assert!(
            !WAYS_OUT.contains(&path.as_str()),
            "{method} {path} arrived\n{}",
            s.run
        );
    }
}

fn run_scenario(
    harness: Harness,
    name: &str,
    flow_extra: &str,
    turns: impl FnOnce(u16) -> Vec<Turn>,
) -> Option<ShopDone> {
    let s = ShopRun::prepare(
        harness,
        &leopold_bin(),
        false,
        |port| shop_flow(port, flow_extra),
        move |port, _| turns(port),
        WALKED,
    )?
    .run_to_end(TIMEOUT);
    eprintln!(
        "scenario {name} on {}: {:.2} s wall",
        harness.as_str(),
        s.run.elapsed.as_secs_f64()
    );
    Some(s)
}

fn allowed_navigation_loads(harness: Harness) {
    let Some(s) = run_scenario(harness, "allowed_navigation", "", |_| {
        vec![nav("/"), call("browser_snapshot", json!({}))]
    }) else {
        return;
    };
    assert_eq!(s.run.status.code(), Some(0), "{}", s.run);
    assert!(s
        .app
        .seen()
        .iter()
        .any(|(m, p, h)| m == "GET" && p == "/" && h == "staging.example.com"));
    assert_nothing_got_out(&s);
    let journal = s.journal();
    assert_eq!(journal.len(), 2, "{journal:?}");
    // The journal records where the browser actually was: the page's host, never the URL.
    let page = &journal[0]["urls"];
    assert!(
        page.as_array()
            .unwrap()
            .iter()
            .any(|u| u["role"] == "page" && u["host"] == "staging.example.com"),
        "{page}"
    );
    for a in &journal {
        assert_eq!(a["outcome"], "completed", "{a}");
        assert!(!a.to_string().contains("://"), "{a}");
    }
}

fn ways_out_are_refused_by_the_browser(harness: Harness) {
    let Some(s) = run_scenario(
        harness,
        "ways_out_refused",
        "allow_tools = [\"browser_evaluate\"]",
        |port| {
            vec![
                nav("/"),
                call("browser_snapshot", json!({})),
                // The link "Admin dashboard" (to the app by IP literal) by its snapshot ref.
                call(
                    "browser_click",
                    json!({"element": "Admin dashboard link", "target": "e5"}),
                ),
                // A page whose script sets location.href to localhost.
                nav("/js-redirect"),
                // A 302 to localhost.
                nav("/go-away"),
                nav("/"),
                // window.location from the model's own JavaScript (allowed by this flow).
                call(
                    "browser_evaluate",
                    json!({"function": format!("() => {{ window.location.href = 'http://127.0.0.1:{port}/eval'; return 1; }}")}),
                ),
                // The navigation that script starts may land after evaluate has answered (on a
                // loaded machine it had not when the snapshot right after looked: seen in CI):
                // the page is given time to settle, then looked at.
                call("browser_wait_for", json!({"time": 2})),
                call("browser_snapshot", json!({})),
            ]
        },
    ) else {
        return;
    };
    assert_nothing_got_out(&s);
    let paths: Vec<String> = s.app.seen().into_iter().map(|(_, p, _)| p).collect();
    for p in ["/", "/js-redirect", "/go-away"] {
        assert!(
            paths.iter().any(|x| x == p),
            "{p} not requested: {paths:?}\n{}",
            s.run
        );
    }
    // No violation: the browser refused every way out, and the journal says so.
    assert_eq!(s.run.status.code(), Some(0), "{}", s.run);
    let journal = s.journal();
    let blocked: Vec<&Value> = journal
        .iter()
        .filter(|a| a.get("browser_blocked").is_some())
        .collect();
    let tools: Vec<&str> = blocked
        .iter()
        .map(|a| a["tool"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"mcp__browser__browser_click"),
        "{journal:?}"
    );
    // The location change is seen on evaluate's own answer or, when Chromium had not refused
    // it yet, on the wait's or the snapshot's after it (the last two actions).
    let after: Vec<&Value> = journal.iter().rev().take(2).collect();
    assert!(
        tools.contains(&"mcp__browser__browser_evaluate")
            || after.iter().any(|a| a.get("browser_blocked").is_some()),
        "{journal:?}"
    );
    assert_eq!(
        after[0]["tool"], "mcp__browser__browser_snapshot",
        "{journal:?}"
    );
    assert!(
        blocked.len() >= 4,
        "link, script redirect, 302, location: {journal:?}"
    );
    let click = blocked
        .iter()
        .find(|a| a["tool"] == "mcp__browser__browser_click")
        .unwrap();
    // The error page's title names the refused host when Chromium has set it by then.
    let named = &click["browser_blocked"]["host"];
    assert!(named.is_null() || named == "127.0.0.1", "{click}");
    for a in &journal {
        assert_eq!(a["verdict"]["result"], "ok", "{a}");
        assert!(!a.to_string().contains("://"), "{a}");
    }
}

fn the_guard_denies_evaluate_and_a_misleading_click(harness: Harness) {
    let Some(s) = run_scenario(harness, "guard_denials", "", |_| {
        vec![
            nav("/checkout"),
            call("browser_snapshot", json!({})),
            // The "Place order" button's ref, described as something harmless.
            call(
                "browser_click",
                json!({"element": "the blue button", "target": "e5"}),
            ),
            call(
                "browser_evaluate",
                json!({"function": "() => { document.forms[0].submit(); }"}),
            ),
        ]
    }) else {
        return;
    };
    assert_eq!(s.run.status.code(), Some(0), "{}", s.run);
    // Denied before the click: the app never received the order.
    assert!(
        !s.app
            .seen()
            .iter()
            .any(|(m, p, _)| m == "POST" || p == "/checkout/confirm"),
        "{:?}",
        s.app.seen()
    );
    assert_nothing_got_out(&s);
    let events = s.guard_denials();
    assert!(
        events.contains(&(
            "mcp__browser__browser_click".into(),
            "irreversible_label".into()
        )),
        "{events:?}\n{}",
        s.run
    );
    // `browser_evaluate` is not even offered (the gateway's list, docs/security.md#the-gateway):
    // the
    // harness refuses it as a tool it does not have, or, if a call gets past it, the guard and
    // the gateway deny it. Never does it run.
    let journal = s.journal();
    let eval: Vec<&Value> = journal
        .iter()
        .filter(|a| a["tool"] == "mcp__browser__browser_evaluate")
        .collect();
    assert!(
        eval.iter().all(|a| a["outcome"] != "completed"),
        "{eval:?}\n{}",
        s.run
    );
    let gateway = read_jsonl(&s.sb.run_dir().join("gateway.jsonl"));
    assert!(
        !gateway
            .iter()
            .any(|l| l["tool"] == "browser_evaluate" && l["verdict"] == "allowed"),
        "{gateway:?}"
    );
    let denied = journal.iter().filter(|a| a["outcome"] == "denied").count();
    assert!(denied >= 1, "{journal:?}");
}

/// Issue #22: every gesture that can activate "Place order" is judged like a click on it, in
/// real Chromium on both harnesses: a key on the focused button (Tab onto it, then Space or
/// Enter), a drag from or onto it, an option chosen in it, a field of it ticked. The app's log is
/// the witness: the order never arrives.
fn every_gesture_on_place_order_is_denied(harness: Harness) {
    let Some(s) = run_scenario(
        harness,
        "activating_gestures",
        "max_denials_in_a_row = 1000",
        |_| {
            let tool = |t: &str, input: Value| call(t, input);
            vec![
                nav("/checkout"),
                call("browser_snapshot", json!({})),
                tool("browser_press_key", json!({"key": "Tab"})),
                tool("browser_press_key", json!({"key": "Space"})),
                tool("browser_press_key", json!({"key": "Enter"})),
                tool(
                    "browser_drag",
                    json!({"startElement": "the total", "startTarget": "e5", "endElement": "the heading", "endTarget": "e3"}),
                ),
                tool(
                    "browser_select_option",
                    json!({"element": "the blue thing", "target": "e5", "values": ["1"]}),
                ),
                tool(
                    "browser_fill_form",
                    json!({"fields": [{"name": "the box", "target": "e5", "type": "checkbox", "value": "true"}]}),
                ),
            ]
        },
    ) else {
        return;
    };
    assert_eq!(s.run.status.code(), Some(0), "{}", s.run);
    assert!(
        !s.app
            .seen()
            .iter()
            .any(|(m, p, _)| m == "POST" || p == "/checkout/confirm"),
        "the order was placed: {:?}\n{}",
        s.app.seen(),
        s.run
    );
    assert_nothing_got_out(&s);
    let events = s.guard_denials();
    let denied = |tool: &str, reason: &str| {
        events.contains(&(format!("mcp__browser__{tool}"), reason.into()))
    };
    assert!(
        denied("browser_press_key", "focus_unjudgeable"),
        "{events:?}\n{}",
        s.run
    );
    for tool in ["browser_drag", "browser_select_option", "browser_fill_form"] {
        assert!(
            denied(tool, "irreversible_label"),
            "{tool}: {events:?}\n{}",
            s.run
        );
    }
    // Tab moved focus and activated nothing: it ran.
    let journal = s.journal();
    assert!(
        journal
            .iter()
            .any(|a| a["tool"] == "mcp__browser__browser_press_key" && a["outcome"] == "completed"),
        "{journal:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The gateway (docs/security.md#the-gateway), through the real harnesses and the real browser.

/// The tool list each harness offers holds only listed browser tools; a page that registers a
/// WebMCP tool gets none registered (WebMCP is off, and no `webmcp` tool is offered), and a
/// call to one never runs: the app never receives the order.
fn the_gateway_offers_only_listed_tools_and_no_webmcp(harness: Harness) {
    let Some(s) = run_scenario(harness, "gateway_tools_webmcp", "", |_| {
        vec![
            nav("/webmcp"),
            call("browser_snapshot", json!({})),
            call("webmcp_place_order", json!({})),
            call("browser_webmcp_call", json!({"name": "place_order"})),
            call(
                "browser_run_code_unsafe",
                json!({"code": "async (page) => page.goto('http://localhost/')"}),
            ),
        ]
    }) else {
        return;
    };
    assert_eq!(s.run.status.code(), Some(0), "{}", s.run);
    let offered = offered_browser_tools(&s.model);
    assert!(
        offered.contains("browser_navigate") && offered.contains("browser_click"),
        "the browser's tools were not offered at all: {offered:?}"
    );
    // Leopold's own tools, answered by the gateway, sit beside the browser's.
    for t in offered
        .iter()
        .filter(|t| !["report_finding", "finish"].contains(&t.as_str()))
    {
        assert!(
            leopold_flows::catalogue::offered(t, &[]),
            "{} offered {t}: {offered:?}",
            harness.as_str()
        );
        assert!(!t.contains("webmcp") && !t.contains("evaluate") && !t.contains("unsafe"));
    }
    // WebMCP is off: the snapshot announces no page tool.
    for r in s.model.tool_results() {
        assert!(
            !r.contains("webmcp tool") && !r.contains("Places the order"),
            "{r}"
        );
    }
    assert!(
        !s.app
            .seen()
            .iter()
            .any(|(m, p, _)| m == "POST" || p == "/checkout/confirm"),
        "{:?}",
        s.app.seen()
    );
    let gateway = read_jsonl(&s.sb.run_dir().join("gateway.jsonl"));
    assert!(
        !gateway.iter().any(|l| l["verdict"] == "allowed"
            && l["tool"]
                .as_str()
                .is_some_and(|t| t.contains("webmcp") || t.contains("unsafe"))),
        "{gateway:?}"
    );
    assert!(
        gateway
            .iter()
            .any(|l| l["event"] == "result" && l["page_host"] == "staging.example.com"),
        "{gateway:?}"
    );
}

/// Playwright's `filename` arguments aimed at project files are refused before the browser
/// sees them, and the files keep their bytes; a screenshot into the output folder works.
fn a_filename_aimed_at_the_project_is_refused(harness: Harness) {
    let Some(ShopRun {
        sb,
        app,
        model,
        cmd,
    }) = ShopRun::prepare(
        harness,
        &leopold_bin(),
        false,
        |port| shop_flow(port, ""),
        |_, project| {
            let script = project.join("run.sh");
            std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
            std::fs::create_dir_all(project.join(".git")).unwrap();
            std::fs::write(project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
            vec![
                nav("/"),
                call(
                    "browser_take_screenshot",
                    json!({"type": "png", "filename": script}),
                ),
                // Relative to the output folder, six levels up is the project.
                call(
                    "browser_take_screenshot",
                    json!({"type": "png", "filename": "../../../../../../.git/HEAD"}),
                ),
                call(
                    "browser_console_messages",
                    json!({"level": "info", "filename": project.join("run.sh")}),
                ),
                call(
                    "browser_take_screenshot",
                    json!({"type": "png", "filename": "after.png"}),
                ),
            ]
        },
        WALKED,
    )
    else {
        return;
    };
    let before: Vec<(std::path::PathBuf, Vec<u8>)> = ["run.sh", ".git/HEAD"]
        .iter()
        .map(|f| {
            (
                sb.project.join(f),
                std::fs::read(sb.project.join(f)).unwrap(),
            )
        })
        .collect();
    let run = sb.run(cmd, TIMEOUT);
    assert_eq!(run.status.code(), Some(0), "{run}");
    for (p, bytes) in &before {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{} changed\n{run}",
            p.display()
        );
    }
    // The positive control: the same tool, into the output folder, wrote its file (kept, with
    // the persona's other screenshots, once the browser's files went with the run).
    assert!(
        sb.run_dir().join("screenshots/after.png").is_file(),
        "the screenshot into the output folder was not taken\n{run}"
    );
    let results = model.tool_results();
    let refused = results
        .iter()
        .filter(|r| r.contains("(reason: filename_outside_output)"))
        .count();
    assert_eq!(refused, 3, "{results:#?}");
    drop(app);
}

/// Codex with the guard's binary moved away while the model is mid-turn (its hook then fails
/// open, docs/harness-facts.md#1-what-fails-open): the off-allowlist navigation, the irreversible
/// path and the
/// irreversible click never reach the browser or the app; the gateway refused them. Unboxed:
/// the box binds leopold's file when the run starts, so renaming it outside would not take it
/// away from the guard; this is about the hook failing, which the gateway makes irrelevant.
#[test]
fn codex_guard_moved_away_the_gateway_still_refuses_the_browser_calls() {
    if require_cli(Harness::Codex).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("leopold");
    std::fs::copy(leopold_bin(), &copy).unwrap();
    let Some(ShopRun {
        sb,
        app,
        model,
        mut cmd,
    }) = ShopRun::prepare(
        Harness::Codex,
        &copy,
        false,
        |port| shop_flow(port, "max_denials_in_a_row = 100"),
        |port, _| {
            let mut t = vec![
                nav("/checkout"),
                call(
                    "browser_navigate",
                    json!({"url": format!("http://127.0.0.1:{port}/admin")}),
                ),
                nav("/checkout/confirm"),
                call("browser_snapshot", json!({})),
                call(
                    "browser_click",
                    json!({"element": "the blue button", "target": "e5"}),
                ),
            ];
            // The guard is moved away while the model works on its second reply.
            t[1].delay_ms = 2_000;
            t
        },
        WALKED,
    )
    else {
        return;
    };
    cmd.arg("--no-contain");
    let handle = {
        let sb_run = std::thread::spawn(move || {
            let run = sb.run(cmd, TIMEOUT);
            (sb, run)
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while app.seen().is_empty() {
            assert!(std::time::Instant::now() < deadline, "the app saw nothing");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::fs::rename(&copy, dir.path().join("leopold.moved-away")).unwrap();
        sb_run
    };
    let (sb, run) = handle.join().unwrap();
    assert_eq!(run.status.code(), Some(0), "{run}");
    let seen = app.seen();
    assert!(
        !seen
            .iter()
            .any(|(m, p, _)| m == "POST" || p.starts_with("/checkout/confirm") || p == "/admin"),
        "{seen:?}\n{run}"
    );
    let gateway = read_jsonl(&sb.run_dir().join("gateway.jsonl"));
    let denied: Vec<(&str, &str)> = gateway
        .iter()
        .filter(|l| l["event"] == "call" && l["verdict"] == "denied")
        .map(|l| {
            (
                l["tool"].as_str().unwrap_or(""),
                l["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        denied,
        [
            ("browser_navigate", "outside_allowlist"),
            ("browser_navigate", "irreversible_path"),
            ("browser_click", "irreversible_label"),
        ],
        "{gateway:#?}\n{run}"
    );
    let journal = read_jsonl(&sb.run_dir().join("journal.jsonl"));
    let denials = journal.iter().filter(|a| a["outcome"] == "denied").count();
    assert_eq!(denials, 3, "{journal:#?}");
    assert!(
        journal
            .iter()
            .all(|a| a["verdict"]["result"] != "violation"),
        "{journal:#?}"
    );
    assert!(model.received("(reason: irreversible_label)"), "{run}");
}

/// The snapshot text Playwright MCP gives for the staging app's WebMCP page, driven directly
/// (no Leopold), with `extra` arguments.
fn webmcp_page_snapshot(extra: &[&str]) -> Option<String> {
    use std::io::{BufRead as _, Write as _};
    let (chromium, playwright_mcp) = require_browser()?;
    let sb = Sandbox::new();
    let app = StagingApp::start(&sb);
    let cfg = sb.logs.join("pw.json");
    std::fs::write(
        &cfg,
        json!({"browser": {"browserName": "chromium", "launchOptions": {
            "executablePath": chromium, "headless": true,
            "args": ["--no-sandbox", "--disable-gpu", "--no-proxy-server"]}},
            "outputDir": sb.logs.join("out")})
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(playwright_mcp)
        .arg("--config")
        .arg(&cfg)
        .arg("--isolated")
        .args(extra)
        .current_dir(&sb.logs)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut req = |id: u64, method: &str, params: Value| -> Value {
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "the server closed");
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["id"] == id {
                return v;
            }
        }
    };
    req(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "leopold-e2e", "version": "0"}}),
    );
    let url = format!("http://127.0.0.1:{}/webmcp", app.port);
    req(
        1,
        "tools/call",
        json!({"name": "browser_navigate", "arguments": {"url": url}}),
    );
    // WebMCP tools are collected with the page snapshot, after the page's script ran.
    std::thread::sleep(Duration::from_millis(500));
    let snap = req(
        2,
        "tools/call",
        json!({"name": "browser_snapshot", "arguments": {}}),
    );
    let _ = child.kill();
    let _ = child.wait();
    Some(
        snap["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// The positive control of the WebMCP scenarios: the staging app's page does register its tool
/// when WebMCP is on (Playwright MCP 0.0.83's default), and `--no-webmcp`, which the gateway
/// starts the browser with, turns that off.
#[test]
fn the_webmcp_page_registers_a_tool_unless_webmcp_is_off() {
    let Some(on) = webmcp_page_snapshot(&[]) else {
        return;
    };
    assert!(on.contains("1 webmcp tool available"), "{on}");
    assert!(on.contains("place_order"), "{on}");
    let off = webmcp_page_snapshot(&["--no-webmcp"]).unwrap();
    assert!(
        !off.contains("webmcp tool") && !off.contains("place_order"),
        "{off}"
    );
}

per_harness! {
    allowed_navigation_loads => claude_allowed_navigation_loads, codex_allowed_navigation_loads;
    ways_out_are_refused_by_the_browser =>
        claude_ways_out_are_refused_by_the_browser,
        codex_ways_out_are_refused_by_the_browser;
    every_gesture_on_place_order_is_denied =>
        claude_every_gesture_on_place_order_is_denied,
        codex_every_gesture_on_place_order_is_denied;
    the_guard_denies_evaluate_and_a_misleading_click =>
        claude_guard_denies_evaluate_and_a_misleading_click,
        codex_guard_denies_evaluate_and_a_misleading_click;
    the_gateway_offers_only_listed_tools_and_no_webmcp =>
        claude_gateway_offers_only_listed_tools_and_no_webmcp,
        codex_gateway_offers_only_listed_tools_and_no_webmcp;
    a_filename_aimed_at_the_project_is_refused =>
        claude_a_filename_aimed_at_the_project_is_refused,
        codex_a_filename_aimed_at_the_project_is_refused;
}
