//! Property tests: the invariants the red-team corpus samples.

use std::path::Path;

use leopold_flows::Flow;
use leopold_guard::{decide, evaluate, HookInput, Reason, Verdict};
use proptest::prelude::*;
use serde_json::Value;

const FLOW: &str = "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n\
[irreversible]\nforbid = [\"payment\", \"deletion\"]\nclick_labels = [\"(?i)place order\"]\n\
url_paths = [\"/checkout/confirm\"]\n+++\nbrief\n";

fn flow() -> Flow {
    Flow::parse(FLOW, Path::new("checkout.md")).unwrap()
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,40}".prop_map(Value::String),
        prop_oneof![
            Just("https://staging.example.com/"),
            Just("https://evil.example/"),
            Just("javascript:alert(1)"),
            Just("//evil.example"),
            Just("Place order"),
            Just("e5"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        let key = prop_oneof![
            Just("url".to_owned()),
            Just("element".to_owned()),
            Just("target".to_owned()),
            Just("urls".to_owned()),
            "[a-zA-Z_]{0,10}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn input(tool: &str, v: Value) -> HookInput {
    HookInput {
        tool_name: tool.into(),
        tool_input: v,
        cwd: None,
        tool_use_id: None,
    }
}

/// Puts `needle` somewhere inside `v`, under `key`, following `path` to choose where.
fn plant(v: &mut Value, path: &[usize], key: &str, needle: &str) {
    let step = path.first().copied().unwrap_or(0);
    match v {
        Value::Object(m) if !m.is_empty() && !path.is_empty() => {
            let n = m.len();
            let (k, _) = m.iter().nth(step % n).map(|(k, v)| (k.clone(), v)).unwrap();
            // Never descend under a URL-like key: a value there must stay a string.
            if k.to_ascii_lowercase().contains("url") {
                m.insert(format!("{key}_{step}"), Value::String(needle.into()));
            } else {
                plant(m.get_mut(&k).unwrap(), &path[1..], key, needle);
            }
        }
        Value::Array(a) if !a.is_empty() && !path.is_empty() => {
            let n = a.len();
            plant(&mut a[step % n], &path[1..], key, needle);
        }
        Value::Object(m) => {
            m.insert(key.into(), Value::String(needle.into()));
        }
        other => {
            let mut m = serde_json::Map::new();
            m.insert(key.into(), Value::String(needle.into()));
            *other = Value::Array(vec![other.take(), Value::Object(m)]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `decide` returns a verdict for any JSON a model could send, under any tool name.
    #[test]
    fn decide_never_panics(v in json(), tool in "(mcp__[a-z]{1,8}__)?[a-z_]{1,16}") {
        let _ = decide(&flow(), &input(&tool, v));
    }

    /// An off-allowlist URL planted anywhere, under a URL key or as a navigation-looking string
    /// under any other key, denies the whole call.
    #[test]
    fn a_planted_outside_url_always_denies(
        v in json(),
        path in prop::collection::vec(any::<usize>(), 0..6),
        key in prop_oneof![Just("url"), Just("href"), Just("next"), Just("text"), Just("x")],
        needle in prop_oneof![
            Just("https://evil.example/"),
            Just("https://staging.example.com@evil.example/"),
            Just(" \thttp:evil.example"),
            Just("https://evil.example\\@staging.example.com/"),
        ],
    ) {
        let mut v = v;
        plant(&mut v, &path, key, needle);
        let verdict = decide(&flow(), &input("mcp__browser__browser_navigate", v.clone()));
        prop_assert!(!verdict.is_allow(), "allowed {v}");
    }

    /// Garbage on stdin never allows while a run is active.
    #[test]
    fn garbage_payload_never_allows_when_active(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".leopold/persona")).unwrap();
        std::fs::write(root.join("checkout.md"), FLOW).unwrap();
        std::fs::write(
            root.join(".leopold/persona/ACTIVE.json"),
            r#"{"active":true,"flow":"checkout","flow_path":"checkout.md"}"#,
        ).unwrap();
        prop_assume!(HookInput::from_slice(&bytes).is_err());
        let eval = evaluate(&bytes[..], Some(root));
        match eval.verdict {
            Verdict::Deny(d) => prop_assert!(matches!(
                d.reason,
                Reason::PayloadNotJson | Reason::PayloadMissingField
            )),
            Verdict::Allow => prop_assert!(false, "garbage allowed"),
        }
    }
}
