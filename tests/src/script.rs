//! The scripted model's script: the tool calls to make turn by turn, then a final answer.
//!
//! A file in JSON or TOML (chosen by extension: `.toml` is TOML, anything else JSON):
//!
//! ```toml
//! final = "Walked the checkout; the guard refused one host."
//!
//! [[turns]]
//! calls = [{ tool = "mcp__browser__navigate", input = { url = "https://staging.example.com/" } }]
//!
//! [[turns]]
//! calls = [
//!   { tool = "mcp__browser__click", input = { label = "Add to cart" } },
//!   { tool = "mcp__browser__type", input = { selector = "#email", text = "a@b.c" } },
//! ]
//! ```
//!
//! Several calls in one turn are sent as parallel tool calls in one model reply. A turn may set
//! `delay_ms`: the server waits that long before sending it.
//!
//! **How the server knows where it is.** It never keeps per-session state: a request's position in
//! the script is the number of tool results the request carries (Anthropic `tool_result` blocks,
//! OpenAI `function_call_output` items), counted across the whole conversation. A denied call comes
//! back as a result too (an error result), so it advances the script like any other. A retried or
//! duplicated request therefore gets the same answer, and side requests the harness makes without
//! tool results get the first turn again (harmless: nothing executes a reply that is thrown away).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A whole script.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The turns, in order; each makes one or more tool calls.
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// The final answer text, sent once every call of every turn has a result.
    #[serde(rename = "final", default = "default_final")]
    pub final_answer: String,
}

fn default_final() -> String {
    "Done.".to_owned()
}

/// One model reply made of tool calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// The tool calls of this reply (at least one).
    pub calls: Vec<ToolCall>,
    /// Wait this long before replying (tests use it to act mid-run, e.g. kill the supervisor
    /// while the worker waits for its model).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One tool call: any tool name, any JSON input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The tool's full name as Claude Code names it, e.g. `mcp__browser__navigate` or `WebFetch`.
    pub tool: String,
    /// The tool input, sent verbatim (it need not match the tool's schema: that is the point).
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// What the model says next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<'a> {
    /// Make these calls.
    Calls {
        /// The turn's index in the script.
        turn: usize,
        /// Its calls.
        calls: &'a [ToolCall],
        /// How long to wait before replying.
        delay_ms: u64,
    },
    /// Give the final answer.
    Final(&'a str),
}

impl Script {
    /// Reads a script file (TOML if the name ends in `.toml`, JSON otherwise).
    ///
    /// # Errors
    /// The file cannot be read or does not parse as a script; the message names the file.
    pub fn load(path: &Path) -> anyhow::Result<Script> {
        use anyhow::Context as _;
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read script {}", path.display()))?;
        let script: Script = if path.extension().is_some_and(|e| e == "toml") {
            toml::from_str(&text)
                .with_context(|| format!("script {} is not valid", path.display()))?
        } else {
            serde_json::from_str(&text)
                .with_context(|| format!("script {} is not valid", path.display()))?
        };
        if let Some(i) = script.turns.iter().position(|t| t.calls.is_empty()) {
            anyhow::bail!(
                "script {}: turn {} has no calls (put the answer in `final`)",
                path.display(),
                i + 1
            );
        }
        Ok(script)
    }

    /// The step for a request that carries `tool_results` tool results.
    pub fn step(&self, tool_results: usize) -> Step<'_> {
        let mut answered = 0usize;
        for (turn, t) in self.turns.iter().enumerate() {
            answered += t.calls.len();
            if tool_results < answered {
                return Step::Calls {
                    turn,
                    calls: &t.calls,
                    delay_ms: t.delay_ms,
                };
            }
        }
        Step::Final(&self.final_answer)
    }

    /// Total number of tool calls in the script.
    pub fn call_count(&self) -> usize {
        self.turns.iter().map(|t| t.calls.len()).sum()
    }
}

/// Splits `mcp__<server>__<tool>` into (`mcp__<server>`, `<tool>`): Codex offers MCP tools to the
/// model as a namespace holding bare names, and answers a flat name "unsupported call".
pub fn codex_namespace(tool: &str) -> Option<(&str, &str)> {
    let rest = tool.strip_prefix("mcp__")?;
    let split = rest.find("__")?;
    let (ns_len, bare) = (5 + split, &rest[split + 2..]);
    (!bare.is_empty() && split > 0).then(|| (&tool[..ns_len], bare))
}

/// The `tool_result` blocks across every message of an Anthropic Messages request, in order.
pub fn anthropic_tool_result_blocks(body: &Value) -> impl Iterator<Item = &Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
}

/// Counts `tool_result` blocks across every message of an Anthropic Messages request.
pub fn anthropic_tool_results(body: &Value) -> usize {
    anthropic_tool_result_blocks(body).count()
}

/// The tool output items (`function_call_output`, `custom_tool_call_output`, ...) in an OpenAI
/// Responses request's `input`, in order.
pub fn openai_tool_output_items(body: &Value) -> impl Iterator<Item = &Value> {
    body.get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|i| {
            i.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("call_output"))
        })
}

/// Counts tool output items in an OpenAI Responses request's `input`.
pub fn openai_tool_results(body: &Value) -> usize {
    openai_tool_output_items(body).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn script() -> Script {
        serde_json::from_value(json!({
            "turns": [
                {"calls": [{"tool": "mcp__b__navigate", "input": {"url": "https://a.example/"}}]},
                {"calls": [{"tool": "mcp__b__click", "input": {"label": "x"}},
                           {"tool": "WebFetch"}]}
            ],
            "final": "bye"
        }))
        .unwrap()
    }

    #[test]
    fn step_advances_by_counted_tool_results() {
        let s = script();
        assert!(matches!(s.step(0), Step::Calls { turn: 0, .. }));
        assert!(matches!(s.step(1), Step::Calls { turn: 1, .. }));
        // One of two parallel results is not yet a full turn: the same turn again.
        assert!(matches!(s.step(2), Step::Calls { turn: 1, .. }));
        assert_eq!(s.step(3), Step::Final("bye"));
        assert_eq!(s.step(99), Step::Final("bye"));
        assert_eq!(s.call_count(), 3);
    }

    #[test]
    fn toml_and_json_scripts_load_alike() {
        let json = serde_json::to_string(&script()).unwrap();
        let dir = crate::temp_tree(&[
            (
                "s.toml",
                "final = \"bye\"\n[[turns]]\ncalls = [{ tool = \"mcp__b__navigate\", input = { url = \"https://a.example/\" } }]\n[[turns]]\ncalls = [{ tool = \"mcp__b__click\", input = { label = \"x\" } }, { tool = \"WebFetch\" }]\n",
            ),
            ("s.json", &json),
        ]);
        for name in ["s.toml", "s.json"] {
            assert_eq!(
                Script::load(&dir.path().join(name)).unwrap(),
                script(),
                "{name}"
            );
        }
    }

    #[test]
    fn a_turn_without_calls_is_refused_with_the_file_named() {
        let (_dir, p) = crate::temp_file("bad.json", r#"{"turns":[{"calls":[]}]}"#);
        let err = format!("{:#}", Script::load(&p).unwrap_err());
        assert!(err.contains("bad.json") && err.contains("turn 1"), "{err}");
        std::fs::write(&p, r#"{"turns":[],"oops":1}"#).unwrap();
        assert!(Script::load(&p).is_err());
    }

    #[test]
    fn codex_namespace_splits_mcp_names_only() {
        assert_eq!(
            codex_namespace("mcp__browser__navigate"),
            Some(("mcp__browser", "navigate"))
        );
        assert_eq!(codex_namespace("mcp__a__b__c"), Some(("mcp__a", "b__c")));
        assert_eq!(codex_namespace("WebFetch"), None);
        assert_eq!(codex_namespace("mcp__browser"), None);
        assert_eq!(codex_namespace("mcp____x"), None);
    }

    #[test]
    fn tool_results_are_counted_across_the_conversation() {
        let a = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use"}]},
            {"role": "user", "content": [{"type": "tool_result", "is_error": true}]},
            {"role": "user", "content": [{"type": "tool_result"}, {"type": "text"}]}
        ]});
        assert_eq!(anthropic_tool_results(&a), 2);
        let o = json!({"input": [
            {"type": "message"}, {"type": "function_call"},
            {"type": "function_call_output"}, {"type": "custom_tool_call_output"}
        ]});
        assert_eq!(openai_tool_results(&o), 2);
        assert_eq!(openai_tool_results(&json!({"input": "text"})), 0);
    }
}
