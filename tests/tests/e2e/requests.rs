//! Issue #22: the irreversible act is a request. Every gesture that places the staging shop's
//! order without a "Place order" click (Enter in the form, `submit: true`, Tab then Space, a
//! checkbox or select that submits on change, an accepted `confirm()`, a button labelled only
//! "Confirm", page script's `fetch`/beacon/WebSocket/`DELETE`), tried on both real CLIs through
//! `leopold persona run --browser playwright`, boxed, with the real Chromium.
//!
//! The witness is the staging app's own request log: a `POST /checkout/confirm` there is an order.
//! Each gesture is first run under a flow with no irreversibility rule (the control: the order
//! *is* placed, so the gesture is real), then under the shop's flow (`url_paths =
//! ["/checkout/confirm"]`, `forbid = ["payment", "deletion"]`): the app never receives it, the run
//! ends clean (the bound held), and the refusal is recorded host-only in `gateway.jsonl` (or the
//! guard refused the gesture before the browser saw it).
//!
//! Also: https staging through the proxy's per-run CA (`--ca-cert` for the app's own CA), and a
//! page's WebRTC, whose UDP has no way out of the browser's box (the control: the same page in
//! the same Chromium outside the box does send it).
#![allow(clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};

use leopold_tests::script::Turn;
use leopold_tests::staging::{call, require_browser, ShopDone, ShopRun, StagingApp};
use leopold_tests::{leopold_bin, Harness, Sandbox};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(100);

/// The shop's rules as the user wrote them.
const RULES: &str = "[irreversible]\nforbid = [\"payment\", \"deletion\"]\n\
                     click_labels = [\"(?i)place order\"]\nurl_paths = [\"/checkout/confirm\"]\n";

fn flow(port: u16, rules: &str) -> String {
    format!(
        "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\nmax_denials_in_a_row = 1000\n\
         [hosts]\n\"staging.example.com\" = \"127.0.0.1:{port}\"\n{rules}+++\n\
         Walk the shop as a first-time buyer.\n"
    )
}

fn nav_to(scheme: &str, path: &str) -> Turn {
    call(
        "browser_navigate",
        json!({ "url": format!("{scheme}://staging.example.com{path}") }),
    )
}

/// One boxed run of `turns` against a fresh app (https with `tls`) under `rules`.
fn run(harness: Harness, tls: bool, rules: &str, turns: Vec<Turn>) -> Option<ShopDone> {
    Some(
        ShopRun::prepare(
            harness,
            &leopold_bin(),
            tls,
            |port| flow(port, rules),
            |_, _| turns,
            "Done.",
        )?
        .run_to_end(TIMEOUT),
    )
}

/// The gestures, each from a fresh page: refs are the page's first snapshot's.
fn gestures() -> Vec<(&'static str, Vec<Turn>)> {
    let key = |k: &str| call("browser_press_key", json!({ "key": k }));
    vec![
        (
            "type with submit",
            vec![
                nav_to("http", "/checkout/form"),
                call(
                    "browser_type",
                    json!({"element": "Name", "target": "e5", "text": "Ann", "submit": true}),
                ),
            ],
        ),
        (
            "type, then Enter",
            vec![
                nav_to("http", "/checkout/form"),
                call(
                    "browser_type",
                    json!({"element": "Name", "target": "e5", "text": "Ann"}),
                ),
                key("Enter"),
            ],
        ),
        (
            "Tab onto the button, then Space",
            vec![
                nav_to("http", "/checkout/form"),
                call("browser_click", json!({"element": "Name", "target": "e5"})),
                key("Tab"),
                key("Space"),
            ],
        ),
        (
            "a checkbox ticked through fill_form",
            vec![
                nav_to("http", "/checkout/tick"),
                call(
                    "browser_fill_form",
                    json!({"fields": [{"name": "I agree to the terms", "type": "checkbox", "target": "e5", "value": "true"}]}),
                ),
            ],
        ),
        (
            "an option chosen through fill_form",
            vec![
                nav_to("http", "/checkout/select"),
                call(
                    "browser_fill_form",
                    json!({"fields": [{"name": "Delivery", "type": "combobox", "target": "e5", "value": "Standard"}]}),
                ),
            ],
        ),
        (
            "a confirm() dialog accepted",
            vec![
                nav_to("http", "/checkout/dialog"),
                call("browser_click", json!({"element": "Continue", "target": "e3"})),
                call("browser_handle_dialog", json!({"accept": true})),
            ],
        ),
        (
            "a button labelled Confirm",
            vec![
                nav_to("http", "/checkout/plain"),
                call("browser_click", json!({"element": "Confirm", "target": "e4"})),
            ],
        ),
    ]
    .into_iter()
    .map(|(name, mut turns)| {
        // Time for a submission the last call started to reach the app.
        turns.push(call("browser_wait_for", json!({"time": 1})));
        (name, turns)
    })
    .collect()
}

fn gesture_does_not_place_the_order(harness: Harness, which: usize) {
    let (name, turns) = gestures().swap_remove(which);
    {
        // The control: with no rule, the gesture does place the order.
        let Some(control) = run(harness, false, "", turns.clone()) else {
            return;
        };
        assert_eq!(
            control.orders(),
            1,
            "control `{name}`: the gesture did not place the order, so it proves nothing: {:?}\n{}",
            control.seen(),
            control.run
        );
        let Some(d) = run(harness, false, RULES, turns) else {
            return;
        };
        eprintln!(
            "{} `{name}`: {:.2} s, refusals {}, denied calls {:?}",
            harness.as_str(),
            d.run.elapsed.as_secs_f64(),
            d.refusals().len(),
            d.denied_calls()
        );
        assert_eq!(
            d.orders(),
            0,
            "`{name}` placed the order: {:?}\n{}",
            d.seen(),
            d.run
        );
        // The page the gesture came from was there: the bound, not a broken page, held.
        assert!(
            d.seen()
                .iter()
                .any(|(m, p)| m == "GET" && p.starts_with("/checkout/")),
            "`{name}`: {:?}\n{}",
            d.seen(),
            d.run
        );
        assert_eq!(d.run.status.code(), Some(0), "`{name}`\n{}", d.run);
        // Refused by the proxy (recorded host-only, with its rule), or by the guard before the
        // browser acted.
        let refusals = d.refusals();
        if refusals.is_empty() {
            assert!(
                !d.denied_calls().is_empty(),
                "`{name}`: neither a refused request nor a denied call\n{}",
                d.run
            );
        }
        for r in &refusals {
            assert_eq!(r["host"], "staging.example.com", "{r}");
            assert_eq!(r["verdict"], "denied", "{r}");
            assert!(
                r["rule"].as_str().unwrap().contains("/checkout/confirm"),
                "{r}"
            );
            assert!(!r.to_string().contains("://"), "{r}");
        }
        if !refusals.is_empty() {
            assert!(
                d.run
                    .stderr
                    .contains("browser: refused POST to staging.example.com"),
                "{}",
                d.run
            );
            // The persona was told, in the answer of the call that caused it.
            assert!(
                d.model.received("### Refused by Leopold")
                    && d.model.received("POST to staging.example.com"),
                "`{name}`: the model never saw the refusal\n{}",
                d.run
            );
        }
    }
}

/// One module per gesture (in [`gestures`]' order), a test per harness: each is two runs.
macro_rules! gesture_tests {
    ($($name:ident = $which:expr;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            fn claude() {
                gesture_does_not_place_the_order(Harness::Claude, $which);
            }
            #[test]
            fn codex() {
                gesture_does_not_place_the_order(Harness::Codex, $which);
            }
        }
    )*};
}

gesture_tests! {
    type_with_submit = 0;
    type_then_enter = 1;
    tab_then_space = 2;
    checkbox_through_fill_form = 3;
    select_through_fill_form = 4;
    confirm_dialog_accepted = 5;
    button_labelled_confirm = 6;
}

/// Page script's own requests: judged like the persona's. The control `/cart/ok` arrives.
fn page_script_requests_are_judged(harness: Harness) {
    let turns = vec![
        nav_to("http", "/scripted"),
        call("browser_wait_for", json!({"time": 2})),
    ];
    let Some(d) = run(harness, false, RULES, turns) else {
        return;
    };
    let seen = d.seen();
    assert!(
        seen.iter().any(|(m, p)| m == "GET" && p == "/cart/ok"),
        "the page's script ran and its allowed request arrived: {seen:?}\n{}",
        d.run
    );
    assert_eq!(d.orders(), 0, "{seen:?}");
    assert!(!seen.iter().any(|(m, _)| m == "DELETE"), "{seen:?}");
    let refused = leopold_tests::string_pairs(&d.refusals(), "method", "rule");
    assert!(
        refused.contains(&("DELETE".into(), "builtin deletion: method DELETE".into())),
        "{refused:?}"
    );
    // fetch and the beacon (both POST), and the WebSocket upgrade (GET).
    let to_confirm = |m: &str| {
        refused
            .iter()
            .filter(|(rm, rule)| rm == m && rule.contains("/checkout/confirm"))
            .count()
    };
    assert!(to_confirm("POST") >= 2, "{refused:?}");
    assert!(to_confirm("GET") >= 1, "{refused:?}");
    assert_eq!(d.run.status.code(), Some(0), "{}", d.run);
}

/// https staging: the page loads through the proxy's tunnel (the app's log has it, as
/// `staging.example.com` over TLS), and the order is refused inside the tunnel.
fn https_staging_is_judged_inside_the_tunnel(harness: Harness) {
    let turns = vec![
        nav_to("https", "/checkout/plain"),
        call(
            "browser_click",
            json!({"element": "Confirm", "target": "e4"}),
        ),
        call("browser_wait_for", json!({"time": 1})),
    ];
    let Some(d) = run(harness, true, RULES, turns.clone()) else {
        return;
    };
    let seen = d.seen();
    assert!(
        seen.iter()
            .any(|(m, p)| m == "GET" && p == "/checkout/plain"),
        "the https page loaded through the proxy: {seen:?}\n{}",
        d.run
    );
    assert_eq!(d.orders(), 0, "{seen:?}\n{}", d.run);
    let refusals = d.refusals();
    assert!(
        refusals
            .iter()
            .any(|r| r["method"] == "POST" && r["host"] == "staging.example.com"),
        "{refusals:?}\n{}",
        d.run
    );
    assert_eq!(d.run.status.code(), Some(0), "{}", d.run);
    // The control without rules: the same click over https does place the order.
    let Some(c) = run(harness, true, "", turns) else {
        return;
    };
    assert_eq!(c.orders(), 1, "{:?}\n{}", c.seen(), c.run);
}

/// Counts the datagrams a UDP socket receives within `wait`.
fn datagrams(sock: &std::net::UdpSocket, wait: Duration) -> usize {
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let end = Instant::now() + wait;
    let mut n = 0;
    let mut buf = [0u8; 2048];
    while Instant::now() < end {
        if sock.recv_from(&mut buf).is_ok() {
            n += 1;
        }
    }
    n
}

/// A page's WebRTC sends STUN to a local UDP port: from the same Chromium outside the box it
/// arrives (the control); from the browser in its box nothing does.
#[test]
fn webrtc_udp_has_no_way_out_of_the_browsers_box() {
    let Some((chromium, _)) = require_browser() else {
        return;
    };
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    // The control: the page straight from the app, in Chromium with no box and no proxy.
    let sb = Sandbox::new();
    let app = StagingApp::start(&sb);
    let mut control = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!(
                "--user-data-dir={}",
                sb.logs.join("chromium-profile").display()
            ),
            &format!("http://127.0.0.1:{}/webrtc?port={udp_port}", app.port),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sent = datagrams(&udp, Duration::from_secs(8));
    let _ = control.kill();
    let _ = control.wait();
    assert!(sent > 0, "the control page sent no STUN: it proves nothing");
    drop(app);
    // Through Leopold, on one harness (the browser's box is the same for both).
    let Some(d) = run(
        Harness::Claude,
        false,
        RULES,
        vec![
            nav_to("http", &format!("/webrtc?port={udp_port}")),
            call("browser_wait_for", json!({"time": 3})),
        ],
    ) else {
        return;
    };
    let leaked = datagrams(&udp, Duration::from_millis(500));
    assert!(
        d.seen().iter().any(|(_, p)| p == "/webrtc"),
        "the page was loaded: {:?}\n{}",
        d.seen(),
        d.run
    );
    assert_eq!(leaked, 0, "datagrams left the browser's box\n{}", d.run);
    assert_eq!(d.run.status.code(), Some(0), "{}", d.run);
}

per_harness! {
    page_script_requests_are_judged =>
        claude_page_script_requests_are_judged,
        codex_page_script_requests_are_judged;
    https_staging_is_judged_inside_the_tunnel =>
        claude_https_staging_is_judged_inside_the_tunnel,
        codex_https_staging_is_judged_inside_the_tunnel;
}
