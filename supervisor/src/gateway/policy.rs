//! The gateway's policy, pure: which tools a persona is offered, how one `tools/call` is judged,
//! and the rewrites of `initialize`, `tools/list` and `roots/list` (docs/security.md#the-gateway).

use std::path::{Component, Path, PathBuf};

use leopold_flows::Flow;
use leopold_guard::browser::{acted, judge_acted, RefMapFile};
use leopold_guard::{decide, Denial, HookInput, Reason, Verdict};
use serde_json::{json, Value};

/// Which tools a persona is offered, what each does and which arguments name an element: the
/// browser tool catalogue, [`leopold_flows::catalogue`]. A tool it does not know (a later server
/// version's, a `webmcp_*` tool a page chose) is neither offered nor forwarded until someone
/// catalogues it.
pub use leopold_flows::catalogue;

/// Argument keys whose string values are paths the server writes or reads.
const PATH_KEYS: &[&str] = &[
    "filename",
    "path",
    "paths",
    "file",
    "files",
    "dir",
    "outputdir",
];

/// What one gateway judges by: the flow, the server's name (tools are `mcp__<server>__<tool>`
/// to the guard's decision), the run's browser output folder, and whether the server is the
/// provisioned browser (whose clicks are judged against the ref map).
#[derive(Debug, Clone)]
pub struct Policy {
    pub flow: Flow,
    pub server: String,
    /// Canonical.
    pub output_dir: PathBuf,
    pub provisioned: bool,
}

impl Policy {
    /// Whether `tool` (the server's own name for it) is offered: the catalogue says so, for this
    /// flow's `allow_tools`.
    pub fn listed(&self, tool: &str) -> bool {
        catalogue::offered(tool, &self.flow.allow_tools)
    }

    /// The name the harness and the guard know the tool by.
    pub fn full_name(&self, tool: &str) -> String {
        format!("mcp__{}__{tool}", self.server)
    }

    /// Judges one `tools/call`'s `params`: `Ok((tool, arguments))` to forward, or the denial.
    /// `refs` is the provisioned browser's current ref map.
    pub fn judge_call(
        &self,
        params: Option<&Value>,
        refs: Option<&RefMapFile>,
    ) -> Result<(String, Value), (Option<String>, Denial)> {
        let unjudgeable = |what: &str| Denial::new(Reason::GatewayUnjudgeable).with_detail(what);
        let Some(Value::Object(p)) = params else {
            return Err((None, unjudgeable("`params` is not an object")));
        };
        let tool = match p.get("name") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err((None, unjudgeable("`params.name` is not a tool name"))),
        };
        let arguments = match p.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return Err((
                    Some(tool),
                    unjudgeable("`params.arguments` is not an object"),
                ))
            }
        };
        if !self.listed(&tool) {
            return Err((Some(tool), Denial::new(Reason::ToolNotListed)));
        }
        if let Err(what) = check_paths(&self.output_dir, &arguments) {
            return Err((
                Some(tool),
                Denial::new(Reason::FilenameOutsideOutput).with_detail(what),
            ));
        }
        let input = HookInput {
            tool_name: self.full_name(&tool),
            tool_input: arguments.clone(),
            cwd: None,
            tool_use_id: None,
        };
        if let Verdict::Deny(d) = decide(&self.flow, &input) {
            return Err((Some(tool), d));
        }
        if let Some(d) = leopold_guard::browser::dangerous_tool(&self.flow, &input) {
            return Err((Some(tool), d));
        }
        if self.provisioned && self.flow.has_label_rules() {
            let acted = acted(&self.server, &input);
            if let Verdict::Deny(d) = judge_acted(&self.flow, &acted, refs) {
                return Err((Some(tool), d));
            }
        }
        Ok((tool, arguments))
    }
}

/// Every string under a path-like key, at any depth, must resolve inside `output_dir`
/// (canonical): relative, no `..`, no symlink on the way. `Err` says which key, never the value.
pub fn check_paths(output_dir: &Path, arguments: &Value) -> Result<(), String> {
    fn walk(out: &Path, v: &Value, key: Option<&str>) -> Result<(), String> {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    walk(out, v, Some(k))?;
                }
            }
            Value::Array(a) => {
                for v in a {
                    walk(out, v, key)?;
                }
            }
            Value::String(s) => {
                if let Some(k) =
                    key.filter(|k| PATH_KEYS.contains(&k.to_ascii_lowercase().as_str()))
                {
                    if !inside(out, s) {
                        return Err(format!("`{k}`"));
                    }
                }
            }
            _ => {
                if let Some(k) =
                    key.filter(|k| PATH_KEYS.contains(&k.to_ascii_lowercase().as_str()))
                {
                    if !v.is_null() {
                        return Err(format!("`{k}` is not a string"));
                    }
                }
            }
        }
        Ok(())
    }
    walk(output_dir, arguments, None)
}

/// Whether the file name `raw` lands inside `out` (canonical) when the server resolves it
/// against its output folder.
pub fn inside(out: &Path, raw: &str) -> bool {
    if raw.is_empty() || raw.contains('\0') {
        return false;
    }
    let p = Path::new(raw);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        out.join(p)
    };
    // Lexically first: `..` anywhere is refused outright (a later symlink could change what it
    // means).
    if joined
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return false;
    }
    if !joined.starts_with(out) {
        return false;
    }
    // Then on disk: every component that exists must be a real directory (or, for the last,
    // a regular file), so a symlink planted in the output folder cannot point elsewhere.
    let mut cur = out.to_path_buf();
    let rest = match joined.strip_prefix(out) {
        Ok(r) => r.to_path_buf(),
        Err(_) => return false,
    };
    for c in rest.components() {
        cur.push(c);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => return false,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    true
}

/// `initialize` from the client: its `roots` capability is replaced by the gateway's own (the
/// server's `roots/list` is answered with the output folder alone); everything else kept.
pub fn rewrite_initialize(msg: &mut Value) {
    if let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) {
        let caps = params.entry("capabilities").or_insert_with(|| json!({}));
        if let Some(c) = caps.as_object_mut() {
            c.insert("roots".into(), json!({"listChanged": false}));
            // The browser must not ask the harness's model for anything.
            c.remove("sampling");
            c.remove("elicitation");
        }
    }
}

/// The server's `initialize` result: only its `tools` capability is kept (no resources,
/// prompts or completions reach the worker past the gateway).
pub fn rewrite_initialize_result(result: &mut Value) {
    if let Some(caps) = result
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    {
        caps.retain(|k, _| k == "tools" || k == "logging");
    }
}

/// A `tools/list` result, filtered to the listed tools; returns the names dropped.
pub fn filter_tools_list(policy: &Policy, result: &mut Value) -> Vec<String> {
    let mut dropped = Vec::new();
    match result.get_mut("tools").and_then(Value::as_array_mut) {
        Some(tools) => tools.retain(|t| {
            let keep = t
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| policy.listed(n));
            if !keep {
                dropped.push(
                    t.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("(unnamed)")
                        .to_owned(),
                );
            }
            keep
        }),
        None => {
            // Not a list the gateway can filter: offer nothing.
            if let Some(o) = result.as_object_mut() {
                o.insert("tools".into(), json!([]));
            }
        }
    }
    dropped
}

/// The gateway's answer to the server's `roots/list`: the output folder alone.
pub fn roots_answer(id: &Value, output_dir: &Path) -> Value {
    let uri = url::Url::from_directory_path(output_dir)
        .map(|u| u.to_string())
        .unwrap_or_else(|()| format!("file://{}", output_dir.display()));
    json!({"jsonrpc": "2.0", "id": id, "result": {"roots": [{"uri": uri, "name": "output"}]}})
}

/// A tool error result answering a denied call, with the guard's one-line message.
pub fn tool_error(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id,
           "result": {"content": [{"type": "text", "text": text}], "isError": true}})
}

/// A JSON-RPC error for a request the gateway does not pass on.
pub fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Client methods passed on (after judging); every other request is answered with an error.
pub fn client_method_passes(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "tools/list"
            | "tools/call"
            | "notifications/initialized"
            | "notifications/cancelled"
            | "notifications/progress"
    )
}

/// Server notifications passed on to the client.
pub fn server_notification_passes(method: &str) -> bool {
    matches!(
        method,
        "notifications/tools/list_changed"
            | "notifications/progress"
            | "notifications/message"
            | "notifications/cancelled"
    )
}

/// The URL of the page a result shows (`- Page URL:`): held in memory to judge `[expect]`,
/// never recorded.
pub fn page_url(text: &str) -> Option<&str> {
    result_field(text, "- Page URL:")
}

fn result_field<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(prefix))
        .map(str::trim)
}

/// The page a result shows: host of `- Page URL:` and `- Page Title:`, both made safe.
pub fn page_of(text: &str) -> (Option<String>, Option<String>) {
    let field = |prefix: &str| result_field(text, prefix);
    let host = field("- Page URL:").and_then(|u| {
        url::Url::parse(u)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
    });
    let title = field("- Page Title:").and_then(|t| leopold_guard::safe_text(t, 120));
    (host, title)
}

/// Adds a text item to a tool result's content (a message with no `result.content` list, an
/// error, is left as it is).
pub fn append_text(msg: &mut Value, text: &str) {
    if let Some(items) = msg
        .get_mut("result")
        .and_then(|r| r.get_mut("content"))
        .and_then(Value::as_array_mut)
    {
        items.push(json!({"type": "text", "text": text}));
    }
}

/// The text items of a tool result, joined.
pub fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(extra: &str, provisioned: bool, out: &Path) -> Policy {
        Policy {
            flow: Flow::parse(
                &format!(
                    "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n{extra}\n\
                     [irreversible]\nclick_labels = [\"(?i)place order\"]\n+++\nBrief.\n"
                ),
                Path::new("flows/checkout.md"),
            )
            .unwrap(),
            server: "browser".into(),
            output_dir: out.to_path_buf(),
            provisioned,
        }
    }

    fn call(name: &str, args: Value) -> Value {
        json!({"name": name, "arguments": args})
    }

    #[test]
    fn the_list_is_closed_and_dangerous_tools_need_the_flow() {
        let dir = tempfile::tempdir().unwrap();
        let p = policy("", true, dir.path());
        for t in [
            "browser_navigate",
            "navigate",
            "browser_snapshot",
            "click",
            "browser_tabs",
        ] {
            assert!(p.listed(t), "{t}");
        }
        for t in [
            "browser_evaluate",
            "browser_run_code_unsafe",
            "run_code_unsafe",
            "webmcp_place_order",
            "browser_webmcp_call",
            "browser_webmcp_list",
            "browser_cookie_set",
            "browser_check",
            "browser_reload",
            "browser_navigate_forward",
            "browser_find",
            "browser_mouse_click_xy",
            "browser_pdf_save",
            "browser_new_tool_of_a_later_version",
            "browser_file_upload",
        ] {
            assert!(!p.listed(t), "{t}");
        }
        let opted = policy("allow_tools = [\"browser_evaluate\"]", true, dir.path());
        assert!(opted.listed("browser_evaluate"));
        assert!(!opted.listed("browser_file_upload"));
        // A never-offered tool cannot even be named: the flow does not parse.
        let e = Flow::parse(
            "+++\nname = \"c\"\nallowlist = [\"a.example\"]\nallow_tools = [\"browser_run_code_unsafe\"]\n+++\n",
            Path::new("flows/c.md"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("allow_tools[0]"), "{e}");
    }

    #[test]
    fn a_call_is_judged_as_the_guard_judges_it_and_more() {
        let dir = tempfile::tempdir().unwrap();
        let out = std::fs::canonicalize(dir.path()).unwrap();
        let p = policy("", true, &out);
        let ok = call(
            "browser_navigate",
            json!({"url": "https://staging.example.com/cart"}),
        );
        assert!(p.judge_call(Some(&ok), None).is_ok());
        let reason = |params: Value, refs: Option<&RefMapFile>| {
            p.judge_call(Some(&params), refs).unwrap_err().1.reason
        };
        assert_eq!(
            reason(
                call("browser_navigate", json!({"url": "https://evil.example/"})),
                None
            ),
            Reason::OutsideAllowlist
        );
        assert_eq!(
            reason(call("webmcp_place_order", json!({})), None),
            Reason::ToolNotListed
        );
        assert_eq!(
            reason(call("browser_run_code_unsafe", json!({"code": "x"})), None),
            Reason::ToolNotListed
        );
        // A click by a ref the map does not know, and one on the real "Place order" button.
        assert_eq!(
            reason(
                call(
                    "browser_click",
                    json!({"element": "the blue button", "target": "e5"})
                ),
                None
            ),
            Reason::UnknownElementRef
        );
        let mut map = RefMapFile {
            version: leopold_guard::browser::REF_MAP_VERSION,
            ..RefMapFile::default()
        };
        map.refs.insert(
            "e5".into(),
            leopold_guard::browser::RefEntry {
                role: "button".into(),
                name: "Place order".into(),
            },
        );
        assert_eq!(
            reason(
                call(
                    "browser_click",
                    json!({"element": "the blue button", "target": "e5"})
                ),
                Some(&map)
            ),
            Reason::IrreversibleLabel
        );
        // The stub's click by label is judged by the label.
        let stub = policy("", false, &out);
        assert_eq!(
            stub.judge_call(Some(&call("click", json!({"label": "Place order"}))), None)
                .unwrap_err()
                .1
                .reason,
            Reason::IrreversibleLabel
        );
    }

    /// Issue #22: the gateway judges every activating tool as the guard does, by the ref map's
    /// real name, whatever the description says; and it never forwards an uncatalogued tool.
    #[test]
    fn every_activating_tool_is_judged_by_the_page() {
        let dir = tempfile::tempdir().unwrap();
        let p = policy("", true, dir.path());
        let mut map = RefMapFile {
            version: leopold_guard::browser::REF_MAP_VERSION,
            ..RefMapFile::default()
        };
        for (r, name) in [("e5", "Place order"), ("e6", "Add to cart")] {
            map.refs.insert(
                r.into(),
                leopold_guard::browser::RefEntry {
                    role: "button".into(),
                    name: name.into(),
                },
            );
        }
        let on = |r: &str| {
            [
                call("browser_click", json!({"element": "x", "target": r})),
                call(
                    "browser_select_option",
                    json!({"element": "x", "target": r, "values": ["1"]}),
                ),
                call(
                    "browser_drag",
                    json!({"startElement": "x", "startTarget": "e6", "endElement": "y", "endTarget": r}),
                ),
                call(
                    "browser_type",
                    json!({"element": "x", "target": r, "text": "1", "submit": true}),
                ),
                call(
                    "browser_fill_form",
                    json!({"fields": [{"name": "x", "target": r, "type": "checkbox", "value": "true"}]}),
                ),
            ]
        };
        for c in on("e5") {
            let e = p.judge_call(Some(&c), Some(&map)).unwrap_err();
            assert_eq!(e.1.reason, Reason::IrreversibleLabel, "{c}");
        }
        for c in on("e6") {
            assert!(p.judge_call(Some(&c), Some(&map)).is_ok(), "{c}");
        }
        let enter = call("browser_press_key", json!({"key": "Enter"}));
        assert_eq!(
            p.judge_call(Some(&enter), Some(&map)).unwrap_err().1.reason,
            Reason::FocusUnjudgeable
        );
        let accept = call("browser_handle_dialog", json!({"accept": true}));
        assert_eq!(
            p.judge_call(Some(&accept), Some(&map))
                .unwrap_err()
                .1
                .reason,
            Reason::DialogUnknown
        );
        map.refs.remove("e5");
        assert!(p.judge_call(Some(&enter), Some(&map)).is_ok());
        let check = call("browser_check", json!({"element": "x", "target": "e6"}));
        assert_eq!(
            p.judge_call(Some(&check), Some(&map)).unwrap_err().1.reason,
            Reason::ToolNotListed,
            "uncatalogued: never forwarded"
        );
    }

    #[test]
    fn malformed_calls_are_denied_with_a_named_reason() {
        let dir = tempfile::tempdir().unwrap();
        let p = policy("", true, dir.path());
        for params in [
            None,
            Some(json!("navigate")),
            Some(json!({"arguments": {}})),
            Some(json!({"name": 7})),
            Some(json!({"name": ""})),
            Some(json!({"name": "browser_navigate", "arguments": "https://staging.example.com/"})),
            Some(json!({"name": "browser_navigate", "arguments": [1]})),
        ] {
            let e = p.judge_call(params.as_ref(), None).unwrap_err();
            assert_eq!(e.1.reason, Reason::GatewayUnjudgeable, "{params:?}");
        }
    }

    #[test]
    fn file_names_stay_in_the_output_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let out = root.join("output");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(root.join("secret.sh"), "x").unwrap();
        std::os::unix::fs::symlink(&root, out.join("up")).unwrap();
        std::os::unix::fs::symlink(root.join("secret.sh"), out.join("link.png")).unwrap();
        assert!(inside(&out, "shot.png"));
        assert!(inside(&out, "sub/shot.png"));
        assert!(inside(&out, &out.join("a.png").to_string_lossy()));
        for bad in [
            "../secret.sh",
            "a/../../secret.sh",
            "/etc/passwd",
            &root.join("secret.sh").to_string_lossy(),
            "up/secret.sh",
            "link.png",
            "",
        ] {
            assert!(!inside(&out, bad), "{bad}");
        }
        let p = policy("", true, &out);
        let e = p
            .judge_call(
                Some(&call(
                    "browser_take_screenshot",
                    json!({"filename": "../secret.sh"}),
                )),
                None,
            )
            .unwrap_err();
        assert_eq!(e.1.reason, Reason::FilenameOutsideOutput);
        assert!(p
            .judge_call(
                Some(&call(
                    "browser_take_screenshot",
                    json!({"filename": "after.png"})
                )),
                None
            )
            .is_ok());
        assert!(check_paths(&out, &json!({"nested": [{"path": "/etc/x"}]})).is_err());
        assert!(check_paths(&out, &json!({"filename": 3})).is_err());
    }

    #[test]
    fn initialize_roots_and_tools_list_are_rewritten() {
        let mut init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","clientInfo":{"name":"claude-code"},
            "capabilities":{"roots":{"listChanged":true},"sampling":{},"x":1}}});
        rewrite_initialize(&mut init);
        let caps = &init["params"]["capabilities"];
        assert_eq!(caps["roots"], json!({"listChanged": false}));
        assert!(caps.get("sampling").is_none());
        assert_eq!(caps["x"], 1);
        let mut res = json!({"capabilities":{"tools":{},"resources":{},"prompts":{}}});
        rewrite_initialize_result(&mut res);
        assert_eq!(res["capabilities"], json!({"tools":{}}));
        let dir = tempfile::tempdir().unwrap();
        let r = roots_answer(&json!(3), dir.path());
        assert_eq!(r["id"], 3);
        let roots = r["result"]["roots"].as_array().unwrap();
        assert_eq!(roots.len(), 1);
        assert!(roots[0]["uri"].as_str().unwrap().starts_with("file:///"));
        let p = policy("", true, dir.path());
        let mut list = json!({"tools":[{"name":"browser_navigate"},{"name":"browser_run_code_unsafe"},
            {"name":"webmcp_place_order"},{"name":"browser_evaluate"},{"name":"browser_click"},{"x":1}]});
        let dropped = filter_tools_list(&p, &mut list);
        let kept: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(kept, ["browser_navigate", "browser_click"]);
        assert_eq!(dropped.len(), 4);
        let mut odd = json!({"tools": "all of them"});
        filter_tools_list(&p, &mut odd);
        assert_eq!(
            odd["tools"],
            json!([]),
            "a list the gateway cannot read offers nothing"
        );
    }

    #[test]
    fn the_page_is_host_and_title_only() {
        let (h, t) = page_of(
            "### Page\n- Page URL: https://staging.example.com/cart?token=abc\n- Page Title: Cart\n",
        );
        assert_eq!(h.as_deref(), Some("staging.example.com"));
        assert_eq!(t.as_deref(), Some("Cart"));
        let (_, t) = page_of("- Page Title: see https://x.example/?t=1\n");
        assert_eq!(t, None, "a title carrying a URL is withheld");
    }
}
