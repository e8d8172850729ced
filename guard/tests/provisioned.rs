//! Issue #22: in a provisioned browser run, every tool that can activate an element is judged
//! alike against every name the element has, through the whole guard (`run`: payload in, exit
//! code out) with a real `ACTIVE.json` and ref map on disk.

use std::path::Path;

use leopold_guard::browser::{RefEntry, RefMapFile, REF_MAP_VERSION};
use serde_json::{json, Value};

const FLOW: &str = "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n\
                    [irreversible]\nclick_labels = [\"(?i)place order\"]\n+++\nBrief.\n";

/// A project with an active provisioned run, and its ref map: `e5` is the button "Place order",
/// `e6` the button "Add to cart".
fn project(dialog: Option<&str>, with_place_order: bool) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join(".leopold/persona")).unwrap();
    std::fs::create_dir_all(root.join("flows")).unwrap();
    std::fs::write(root.join("flows/checkout.md"), FLOW).unwrap();
    let ref_map = root.join("refs.json");
    let active = json!({
        "version": 1, "active": true, "run_id": "r1", "flow": "checkout",
        "flow_path": "flows/checkout.md", "harness": "claude", "supervisor_pid": 1,
        "started_at": "2026-01-01T00:00:00Z", "wiring": [],
        "browser": {"kind": "playwright", "server": "browser", "ref_map": ref_map},
    });
    std::fs::write(
        root.join(".leopold/persona/ACTIVE.json"),
        active.to_string(),
    )
    .unwrap();
    let mut map = RefMapFile {
        version: REF_MAP_VERSION,
        snapshots: 1,
        page_host: Some("staging.example.com".into()),
        dialog: dialog.map(str::to_owned),
        ..RefMapFile::default()
    };
    let mut add = |r: &str, name: &str| {
        map.refs.insert(
            r.into(),
            RefEntry {
                role: "button".into(),
                name: name.into(),
            },
        )
    };
    if with_place_order {
        add("e5", "Place order");
    }
    add("e6", "Add to cart");
    add("e7", "Size");
    std::fs::write(&ref_map, map.to_json()).unwrap();
    tmp
}

/// The guard's exit code and stderr for one call.
fn guard(root: &Path, tool: &str, input: &Value) -> (u8, String) {
    let payload = json!({
        "hook_event_name": "PreToolUse",
        "cwd": root,
        "tool_name": format!("mcp__browser__{tool}"),
        "tool_input": input,
    });
    let mut err = Vec::new();
    let code = leopold_guard::run(payload.to_string().as_bytes(), &mut err);
    (code, String::from_utf8(err).unwrap())
}

/// The activating calls on the element `r`, each described harmlessly ("the blue button"), so
/// only the ref map can tell what they activate.
fn activating(r: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "browser_click",
            json!({"element": "the blue button", "target": r}),
        ),
        ("browser_check", json!({"element": "a box", "target": r})),
        ("browser_uncheck", json!({"element": "a box", "target": r})),
        (
            "browser_select_option",
            json!({"element": "a list", "target": r, "values": ["1"]}),
        ),
        (
            "browser_drag",
            json!({"startElement": "x", "startTarget": "e7", "endElement": "y", "endTarget": r}),
        ),
        (
            "browser_drag",
            json!({"startElement": "x", "startTarget": r, "endElement": "y", "endTarget": "e7"}),
        ),
        (
            "browser_type",
            json!({"element": "a field", "target": r, "text": "1", "submit": true}),
        ),
        (
            "browser_fill_form",
            json!({"fields": [{"name": "a box", "target": r, "type": "checkbox", "value": "true"}]}),
        ),
        (
            "browser_fill_form",
            json!({"fields": [{"name": "a list", "target": r, "type": "combobox", "value": "1"}]}),
        ),
    ]
}

#[test]
fn every_activating_tool_on_place_order_exits_2_and_on_a_harmless_element_0() {
    let p = project(None, true);
    for (tool, input) in activating("e5") {
        let (code, err) = guard(p.path(), tool, &input);
        assert_eq!(code, 2, "{tool} {input} on \"Place order\" by ref: {err}");
        assert!(err.contains("irreversible_label"), "{tool}: {err}");
    }
    for (tool, input) in activating("e6") {
        let (code, err) = guard(p.path(), tool, &input);
        assert_eq!(code, 0, "{tool} {input} on \"Add to cart\": {err}");
    }
    // The description alone names it too, whatever the ref says.
    for (tool, mut input) in activating("e6") {
        for k in ["element", "endElement"] {
            if input.get(k).is_some() {
                input[k] = json!("Place order");
            }
        }
        if let Some(f) = input.get_mut("fields") {
            f[0]["name"] = json!("Place order");
        }
        let (code, err) = guard(p.path(), tool, &input);
        assert_eq!(
            code, 2,
            "{tool} {input} described as \"Place order\": {err}"
        );
    }
    // A chosen option is a name.
    let (code, _) = guard(
        p.path(),
        "browser_select_option",
        &json!({"element": "a list", "target": "e7", "values": ["Place order"]}),
    );
    assert_eq!(code, 2);
}

#[test]
fn enter_and_space_are_judged_against_the_page() {
    let p = project(None, true);
    for key in ["Enter", "Space", "NumpadEnter", " ", "Control+Enter"] {
        let (code, err) = guard(p.path(), "browser_press_key", &json!({ "key": key }));
        assert_eq!(code, 2, "{key:?} on a page holding \"Place order\": {err}");
        assert!(err.contains("focus_unjudgeable"), "{err}");
    }
    let (code, _) = guard(p.path(), "browser_press_key", &json!({"key": "Tab"}));
    assert_eq!(code, 0, "Tab activates nothing");
    let harmless = project(None, false);
    let (code, err) = guard(
        harmless.path(),
        "browser_press_key",
        &json!({"key": "Enter"}),
    );
    assert_eq!(
        code, 0,
        "Enter on a page without an irreversible element: {err}"
    );
}

#[test]
fn accepting_a_dialog_is_judged_by_its_message() {
    let unknown = project(None, false);
    let accept = json!({"accept": true});
    let (code, err) = guard(unknown.path(), "browser_handle_dialog", &accept);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("dialog_unknown"), "{err}");
    let (code, _) = guard(
        unknown.path(),
        "browser_handle_dialog",
        &json!({"accept": false}),
    );
    assert_eq!(code, 0, "dismissing is always allowed");
    let order = project(Some("Place order for 12 EUR?"), false);
    let (code, err) = guard(order.path(), "browser_handle_dialog", &accept);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("irreversible_label"), "{err}");
    let leave = project(Some("Leave this page?"), false);
    let (code, err) = guard(leave.path(), "browser_handle_dialog", &accept);
    assert_eq!(code, 0, "{err}");
}
