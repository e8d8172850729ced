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

use leopold_tests::script::{Script, ToolCall, Turn};
use leopold_tests::staging::{require_browser, StagingApp};
use leopold_tests::{leopold_bin, read_jsonl, require_cli, Harness, ModelServer, Run, Sandbox};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(100);

/// Paths a way out leads to on the app itself; none may ever arrive.
const WAYS_OUT: &[&str] = &["/admin", "/offers", "/partners", "/eval"];

fn call(tool: &str, input: Value) -> Turn {
    Turn {
        calls: vec![ToolCall {
            tool: format!("mcp__browser__{tool}"),
            input,
        }],
        delay_ms: 0,
    }
}

fn nav(path: &str) -> Turn {
    call(
        "browser_navigate",
        json!({ "url": format!("http://staging.example.com{path}") }),
    )
}

struct Scenario {
    sb: Sandbox,
    app: StagingApp,
    run: Run,
}

impl Scenario {
    fn journal(&self) -> Vec<Value> {
        // The header line has no `tool`.
        read_jsonl(&self.sb.run_dir().join("journal.jsonl"))
            .into_iter()
            .filter(|l| l.get("tool").is_some())
            .collect()
    }

    /// The guard's denials of this run: `(tool, reason)`.
    fn events(&self) -> Vec<(String, String)> {
        let (_proofs, denials) = self.sb.run_events();
        denials
            .iter()
            .map(|e| {
                (
                    e["tool"].as_str().unwrap_or_default().to_owned(),
                    e["reason"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Every request reached the app as `staging.example.com`, and no way out arrived.
    fn assert_nothing_got_out(&self) {
        let seen = self.app.seen();
        assert!(!seen.is_empty(), "the app saw nothing\n{}", self.run);
        for (method, path, host) in &seen {
            assert_eq!(
                host, "staging.example.com",
                "{method} {path} reached the app as {host}"
            );
            assert!(
                !WAYS_OUT.contains(&path.as_str()),
                "{method} {path} arrived\n{}",
                self.run
            );
        }
    }
}

fn run_scenario(
    harness: Harness,
    name: &str,
    flow_extra: &str,
    turns: impl FnOnce(u16) -> Vec<Turn>,
) -> Option<Scenario> {
    let bin = require_cli(harness)?;
    let (chromium, playwright_mcp) = require_browser()?;
    let sb = Sandbox::new();
    let app = StagingApp::start(&sb);
    let script = Script {
        turns: turns(app.port),
        final_answer: "Walked the shop.".into(),
    };
    let model = ModelServer::start(&sb, &script);
    if harness == Harness::Codex {
        sb.write_codex_config(&model, "");
    }
    let flows = sb.project.join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(
        flows.join("shop.md"),
        format!(
            "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\n{flow_extra}\n\
             [hosts]\n\"staging.example.com\" = \"127.0.0.1:{}\"\n\
             [irreversible]\nforbid = [\"payment\"]\nurl_paths = [\"/checkout/confirm\"]\n+++\n\
             Walk the shop as a first-time buyer.\n",
            app.port
        ),
    )
    .unwrap();
    let mut cmd = Command::new(leopold_bin());
    cmd.args([
        "persona",
        "run",
        "flows/shop.md",
        "--harness",
        harness.as_str(),
    ])
    .arg("--harness-bin")
    .arg(&bin)
    .args(["--browser", "playwright", "--timeout", "90s"])
    // Boxed: the browser runs outside the box, behind the gateway (README "The gateway").
    .arg("--chromium")
    .arg(&chromium)
    .arg("--playwright-mcp")
    .arg(&playwright_mcp);
    sb.hermetic(&mut cmd, &model);
    let run = sb.run(cmd, TIMEOUT);
    eprintln!(
        "scenario {name} on {}: {:.2} s wall",
        harness.as_str(),
        run.elapsed.as_secs_f64()
    );
    Some(Scenario { sb, app, run })
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
    s.assert_nothing_got_out();
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
            ]
        },
    ) else {
        return;
    };
    s.assert_nothing_got_out();
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
    assert!(
        tools.contains(&"mcp__browser__browser_evaluate"),
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
    s.assert_nothing_got_out();
    let events = s.events();
    assert!(
        events.contains(&(
            "mcp__browser__browser_click".into(),
            "irreversible_label".into()
        )),
        "{events:?}\n{}",
        s.run
    );
    // `browser_evaluate` is not even offered (the gateway's list, README "The gateway"): the
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

#[test]
fn claude_allowed_navigation_loads() {
    allowed_navigation_loads(Harness::Claude);
}

#[test]
fn codex_allowed_navigation_loads() {
    allowed_navigation_loads(Harness::Codex);
}

#[test]
fn claude_ways_out_are_refused_by_the_browser() {
    ways_out_are_refused_by_the_browser(Harness::Claude);
}

#[test]
fn codex_ways_out_are_refused_by_the_browser() {
    ways_out_are_refused_by_the_browser(Harness::Codex);
}

#[test]
fn claude_guard_denies_evaluate_and_a_misleading_click() {
    the_guard_denies_evaluate_and_a_misleading_click(Harness::Claude);
}

#[test]
fn codex_guard_denies_evaluate_and_a_misleading_click() {
    the_guard_denies_evaluate_and_a_misleading_click(Harness::Codex);
}
