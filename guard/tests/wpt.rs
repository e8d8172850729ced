//! WPT parity: every base-less case of the WHATWG URL test data the `url` crate is tested against
//! (minus its listed expected failures) through `decide`. Failures and non-http(s) schemes deny;
//! an http(s) case is allowed with an allowlist of exactly its expected hostname and denied, naming
//! that host, with a different one.

use std::path::Path;

use leopold_flows::Flow;
use leopold_guard::{decide, HookInput, Reason, Verdict};
use serde_json::Value;

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/urltestdata.rust-url-wpt876fe001.json"
);
const EXPECTED_FAILURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/rust-url-expected_failures.txt"
);

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn flow_allowing(host: &str) -> Result<Flow, String> {
    let text = format!(
        "+++\nname = \"wpt\"\nallowlist = [{}]\n+++\n",
        toml_string(host)
    );
    Flow::parse(&text, Path::new("wpt.md")).map_err(|e| e.to_string())
}

fn call(url: &str) -> HookInput {
    HookInput {
        tool_name: "mcp__browser__browser_navigate".into(),
        tool_input: serde_json::json!({ "url": url }),
        cwd: None,
        tool_use_id: None,
    }
}

#[test]
fn wpt_parity() {
    let data: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(DATA).unwrap_or_else(|e| panic!("{DATA}: {e}")),
    )
    .unwrap();
    let expected_failures: std::collections::HashSet<String> =
        std::fs::read_to_string(EXPECTED_FAILURES)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
    let other = flow_allowing("leopold-wpt-other.invalid").unwrap();

    let mut failures = Vec::new();
    let (mut judged, mut web, mut excluded) = (0, 0, 0);
    let mut unlistable = Vec::new();
    for case in data.iter().filter_map(Value::as_object) {
        if !case.get("base").is_none_or(Value::is_null) {
            continue;
        }
        let input = case["input"].as_str().unwrap();
        if expected_failures.contains(&format!("<{}>", input.escape_default())) {
            excluded += 1;
            continue;
        }
        judged += 1;
        let name = format!("<{}>", input.escape_default());
        let failure = case.get("failure").and_then(Value::as_bool) == Some(true);
        let protocol = case.get("protocol").and_then(Value::as_str).unwrap_or("");
        if failure || (protocol != "http:" && protocol != "https:") {
            let want = if failure {
                Reason::UnparseableUrl
            } else {
                Reason::NotWebScheme
            };
            let got = decide(&other, &call(input));
            if got.reason() != Some(want) {
                failures.push(format!("{name}: expected {}, got {got:?}", want.id()));
            }
            continue;
        }
        web += 1;
        let hostname = case["hostname"].as_str().unwrap();
        match flow_allowing(hostname) {
            Ok(flow) => {
                let got = decide(&flow, &call(input));
                if !got.is_allow() {
                    failures.push(format!(
                        "{name}: allowlist [{hostname:?}] should allow, got {got:?}"
                    ));
                }
            }
            // The flow format refuses, on purpose, entries that are only dots or hold a `*`
            // (docs/guide.md#flow-files): such a host can never be allowed, only denied (below).
            Err(e)
                if (hostname.trim_matches('.').is_empty() || hostname.contains('*'))
                    && e.contains("not a bare host") =>
            {
                unlistable.push(hostname.to_owned());
            }
            Err(e) => failures.push(format!("{name}: hostname {hostname:?} refused: {e}")),
        }
        match decide(&other, &call(input)) {
            Verdict::Deny(d)
                if d.reason == Reason::OutsideAllowlist && d.host.as_deref() == Some(hostname) => {}
            got => failures.push(format!(
                "{name}: another allowlist should deny naming {hostname:?}, got {got:?}"
            )),
        }
    }
    assert!(judged > 500 && web > 100, "judged {judged}, web {web}");
    assert!(excluded < 30, "excluded {excluded}");
    assert_eq!(unlistable, [".", "..", "!\"$&'()*+,-.;=_`{}~"]);
    assert!(
        failures.is_empty(),
        "{} of {judged} WPT cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
