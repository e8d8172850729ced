//! What a harness offered the model, read from the scripted model's request log: the exact
//! tool list of its first request, and every browser tool named over the whole run.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::ModelServer;

/// The tool list of the first model request that carries one, sorted: Claude `/v1/messages`
/// and Codex `/v1/responses` `tools`, or Codex's "responses lite" shape (the catalog's newer
/// models), where the tools come as `additional_tools` input items and plain functions sit in a
/// `functions` namespace (listed here as top-level names, as in the other shape). A namespace is
/// `name:[its tools]`; a tool the harness defers (`defer_loading`, offered only through a search
/// tool) is marked `deferred:`, so that "directly offered" is part of the comparison.
pub fn first_request_tools(model: &ModelServer) -> Vec<String> {
    first_request(model).1
}

/// The first request carrying tools: its `model` and its tools as [`first_request_tools`].
pub fn first_request(model: &ModelServer) -> (String, Vec<String>) {
    let reqs = model.requests();
    let lite = |r: &Value| -> Vec<Value> {
        r["body"]["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "additional_tools")
            .flat_map(|i| i["tools"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let (first, tools) = reqs
        .iter()
        .find_map(|r| match r["body"]["tools"].as_array() {
            Some(t) => Some((r, t.clone())),
            None => Some((r, lite(r))).filter(|(_, t)| !t.is_empty()),
        })
        .unwrap_or_else(|| panic!("no model request carried tools: {reqs:#?}"));
    let name = |t: &Value| -> String {
        let n = t["name"]
            .as_str()
            .or_else(|| t["type"].as_str())
            .unwrap_or("?")
            .to_owned();
        if t["defer_loading"] == true {
            format!("deferred:{n}")
        } else {
            n
        }
    };
    let mut names: Vec<String> = Vec::new();
    for t in &tools {
        let inner = || t["tools"].as_array().into_iter().flatten();
        match t["type"].as_str() {
            Some("namespace") if t["name"] == "functions" => names.extend(inner().map(name)),
            Some("namespace") => {
                let mut inner: Vec<String> = inner().map(name).collect();
                inner.sort_unstable();
                names.push(format!("{}:[{}]", name(t), inner.join(",")));
            }
            _ => names.push(name(t)),
        }
    }
    names.sort();
    (
        first["body"]["model"].as_str().unwrap_or("").to_owned(),
        names,
    )
}

/// Every browser tool name the harness offered the model, over all its requests: Claude's
/// `mcp__browser__<tool>` entries, Codex's `mcp__browser` namespace's tools.
pub fn offered_browser_tools(model: &ModelServer) -> BTreeSet<String> {
    fn walk(v: &Value, in_ns: bool, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                let name = m.get("name").and_then(Value::as_str).unwrap_or("");
                if let Some(t) = name.strip_prefix("mcp__browser__") {
                    out.insert(t.to_owned());
                } else if in_ns && !name.is_empty() {
                    out.insert(name.to_owned());
                }
                let ns = name == "mcp__browser";
                for (k, v) in m {
                    if k != "name" {
                        walk(v, ns || (in_ns && k != "tools"), out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, in_ns, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    for r in model.requests() {
        walk(&r["body"]["tools"], false, &mut out);
        // Claude defers MCP tools: their names come as text (a deferred-tools list) until the
        // model searches for them. Every `mcp__browser__<name>` anywhere in the request counts.
        // The model's own calls and their results name tools too (the scripted ones it was
        // never offered): not offers.
        fn strip_calls(v: &mut Value) {
            match v {
                Value::Array(a) => {
                    a.retain(|x| {
                        !matches!(
                            x["type"].as_str(),
                            Some(
                                "tool_use"
                                    | "tool_result"
                                    | "function_call"
                                    | "function_call_output"
                            )
                        )
                    });
                    a.iter_mut().for_each(strip_calls);
                }
                Value::Object(m) => m.values_mut().for_each(strip_calls),
                _ => {}
            }
        }
        let mut body = r["body"].clone();
        strip_calls(&mut body);
        let text = body.to_string();
        for (i, _) in text.match_indices("mcp__browser__") {
            let name: String = text[i + "mcp__browser__".len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}
