//! Adapters from each harness's JSON-lines event stream to [`Action`]s.
//!
//! Feed every line with `push_line`; each call returns what that line completed. A line that is
//! not JSON is reported as [`AdapterEvent::Malformed`] with its line number and the stream goes on;
//! unknown event types are counted (see [`AdapterStats`]) and ignored. `finish` flushes calls that
//! were issued but never answered, as [`Outcome::Unfinished`].
//!
//! Memory is bounded whatever the stream's length: pending calls and snapshot refs are capped.
//!
//! The stream is parsed here once for everyone: an adapter made [`Adapter::with_tool_results`]
//! also yields each completed call's result text ([`AdapterEvent::ToolResult`]), from which the
//! supervisor keeps the provisioned browser's ref map.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::action::{now_rfc3339, Action, Harness, Outcome};
use crate::classify::{build_action, result_text, RefMap};

/// What one input line produced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
// Actions are nearly every event; boxing them would cost an allocation each to shrink the rare one.
#[allow(clippy::large_enum_variant)]
pub enum AdapterEvent {
    /// A tool call whose outcome is now known (not yet validated; `seq` is 0).
    Action(Action),
    /// The result text of a call that completed, just before its [`AdapterEvent::Action`]; only
    /// from an adapter made [`Adapter::with_tool_results`].
    ToolResult {
        /// The tool, as in the action (`mcp__<server>__<tool>`).
        tool: String,
        /// The result's text blocks, joined by newlines.
        text: String,
    },
    /// The persona's final answer: Claude's `result` event text, a Codex `agent_message` (the
    /// last one of a stream is the final answer). Verbatim: it is the run's `findings.md`.
    Answer {
        /// The answer's text, as the model wrote it.
        text: String,
    },
    /// The harness gave up with an error of its own instead of an answer: Claude's `result`
    /// marked `is_error` ("Not logged in · Please run /login"), a Codex `turn.failed`. Never
    /// the persona's findings.
    HarnessFailed {
        /// The harness's error text, as it gave it.
        text: String,
    },
    /// What the line says the model used (tokens, turns, cost, its name); only from an adapter
    /// made [`Adapter::with_usage`].
    Usage(crate::usage::UsageReport),
    /// What Claude's model wrote between its tool calls (an `assistant` message's `text` block),
    /// verbatim; only from an adapter made [`Adapter::with_narration`]. Codex's is its
    /// `agent_message`s, each an [`AdapterEvent::Answer`].
    Narration {
        /// The text, as the model wrote it.
        text: String,
    },
    /// A line that is not a JSON object.
    Malformed {
        /// 1-based line number in the stream.
        line_no: u64,
        /// What was wrong, without the line's content.
        error: String,
    },
}

/// Counters over a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdapterStats {
    /// Lines seen (blank lines included).
    pub lines: u64,
    /// Malformed lines.
    pub malformed: u64,
    /// Event types this adapter does not know, with their counts (at most 64 names are kept; the
    /// rest are counted under `…`).
    pub unknown_types: BTreeMap<String, u64>,
}

impl AdapterStats {
    fn unknown(&mut self, name: &str) {
        let key = if self.unknown_types.len() < 64 || self.unknown_types.contains_key(name) {
            name.to_owned()
        } else {
            "…".to_owned()
        };
        *self.unknown_types.entry(key).or_default() += 1;
    }

    /// The start of both adapters' `push_line`: counts the line and parses it as a JSON object.
    /// `Err` holds what the line produces instead: nothing for a blank line, a
    /// [`AdapterEvent::Malformed`] (counted) for anything else that is not an object.
    fn parse_line(&mut self, line_no: u64, line: &str) -> Result<Value, Vec<AdapterEvent>> {
        self.lines += 1;
        if line.trim().is_empty() {
            return Err(vec![]);
        }
        let error = match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => return Ok(v),
            Ok(_) => "not a JSON object".to_owned(),
            Err(e) => format!("invalid JSON: {e}"),
        };
        self.malformed += 1;
        Err(vec![AdapterEvent::Malformed { line_no, error }])
    }
}

/// Either harness's adapter, chosen at run time.
#[derive(Debug)]
pub enum Adapter {
    /// Claude Code stream-json.
    Claude(ClaudeAdapter),
    /// Codex `exec --json`.
    Codex(CodexAdapter),
}

impl Adapter {
    /// A fresh adapter for a harness's stream.
    pub fn new(harness: Harness) -> Adapter {
        match harness {
            Harness::Claude => Adapter::Claude(ClaudeAdapter::default()),
            Harness::Codex => Adapter::Codex(CodexAdapter::default()),
        }
    }

    /// Feeds one line (without its newline); `line_no` is 1-based.
    pub fn push_line(&mut self, line_no: u64, line: &str) -> Vec<AdapterEvent> {
        match self {
            Adapter::Claude(a) => a.push_line(line_no, line),
            Adapter::Codex(a) => a.push_line(line_no, line),
        }
    }

    /// Ends the stream: calls never answered come out as [`Outcome::Unfinished`].
    pub fn finish(&mut self) -> Vec<AdapterEvent> {
        match self {
            Adapter::Claude(a) => a.finish(),
            Adapter::Codex(a) => a.finish(),
        }
    }

    /// Also yield [`AdapterEvent::Narration`]s (off by default: the journal keeps no text the
    /// model wrote; the run keeps it apart, host-only). Codex's narration is its answers.
    #[must_use]
    pub fn with_narration(mut self) -> Adapter {
        self.wants().narration = true;
        self
    }

    /// Also yield [`AdapterEvent::ToolResult`]s (off by default: replay has no use for them).
    #[must_use]
    pub fn with_tool_results(mut self) -> Adapter {
        self.wants().tool_results = true;
        self
    }

    /// Also yield [`AdapterEvent::Usage`]s (off by default: replay has no use for them).
    #[must_use]
    pub fn with_usage(mut self) -> Adapter {
        self.wants().usage = true;
        self
    }

    fn wants(&mut self) -> &mut Wants {
        match self {
            Adapter::Claude(a) => &mut a.state.wants,
            Adapter::Codex(a) => &mut a.state.wants,
        }
    }

    fn state(&self) -> &StreamState {
        match self {
            Adapter::Claude(a) => &a.state,
            Adapter::Codex(a) => &a.state,
        }
    }

    /// The tools of the calls issued and not yet answered, oldest first: what a silent run is
    /// waiting for.
    pub fn pending_tools(&self) -> Vec<String> {
        let mut calls: Vec<&Pending> = self.state().pending.calls.values().collect();
        calls.sort_by_key(|p| p.order);
        calls.into_iter().map(|p| p.tool.clone()).collect()
    }

    /// The element refs of the page snapshots seen so far (for the guard's denials, which name
    /// a ref the stream showed).
    pub fn refs(&self) -> &RefMap {
        &self.state().refs
    }

    /// Counters so far.
    pub fn stats(&self) -> &AdapterStats {
        &self.state().stats
    }
}

/// At most this many calls wait for their result; past it the oldest is flushed as unfinished.
const MAX_PENDING: usize = 4096;

#[derive(Debug)]
struct Pending {
    order: u64,
    tool: String,
    args: Value,
}

#[derive(Debug, Default)]
struct PendingCalls {
    calls: HashMap<String, Pending>,
    next: u64,
}

impl PendingCalls {
    /// Adds a call; returns the oldest one if the table was full.
    fn insert(&mut self, id: String, tool: String, args: Value) -> Option<(String, Pending)> {
        let evicted = if self.calls.len() >= MAX_PENDING && !self.calls.contains_key(&id) {
            let oldest = self
                .calls
                .iter()
                .min_by_key(|(_, p)| p.order)
                .map(|(k, _)| k.clone());
            oldest.and_then(|k| self.calls.remove_entry(&k))
        } else {
            None
        };
        self.next += 1;
        self.calls.insert(
            id,
            Pending {
                order: self.next,
                tool,
                args,
            },
        );
        evicted
    }

    /// Empties the table: each call never answered, oldest first, as [`Outcome::Unfinished`].
    fn finish(&mut self, harness: Harness, refs: &RefMap) -> Vec<AdapterEvent> {
        let mut all: Vec<_> = self.calls.drain().collect();
        all.sort_by_key(|(_, p)| p.order);
        all.into_iter()
            .map(|(id, call)| call.unfinished(harness, id, refs))
            .collect()
    }
}

impl Pending {
    /// This call, never answered, as `harness`'s action (Codex items may have an empty id:
    /// none).
    fn unfinished(self, harness: Harness, id: String, refs: &RefMap) -> AdapterEvent {
        let id = match harness {
            Harness::Codex if id.is_empty() => None,
            _ => Some(id),
        };
        AdapterEvent::Action(build_action(
            harness,
            &self.tool,
            id,
            &self.args,
            Outcome::Unfinished,
            None,
            refs,
            now_rfc3339(),
        ))
    }
}

/// The line's usage report as an event, when usage was asked for and the line has one.
fn usage_events(
    wanted: bool,
    report: impl FnOnce() -> Option<crate::usage::UsageReport>,
) -> Vec<AdapterEvent> {
    wanted
        .then(report)
        .flatten()
        .map(AdapterEvent::Usage)
        .into_iter()
        .collect()
}

/// What an adapter yields beyond the actions, each off by default ([`Adapter::with_tool_results`],
/// [`Adapter::with_usage`], [`Adapter::with_narration`]).
#[derive(Debug, Default, Clone, Copy)]
struct Wants {
    tool_results: bool,
    usage: bool,
    narration: bool,
}

/// What either adapter keeps over its stream; only the reading of each harness's lines differs.
#[derive(Debug, Default)]
struct StreamState {
    pending: PendingCalls,
    refs: RefMap,
    wants: Wants,
    stats: AdapterStats,
}

impl StreamState {
    /// The start of `push_line`: the line as a JSON object, with the line's usage report
    /// (`usage` reads it) as the first event when usage was asked for. `Err` holds what the line
    /// produces instead ([`AdapterStats::parse_line`]).
    fn open_line(
        &mut self,
        line_no: u64,
        line: &str,
        usage: fn(&Value) -> Option<crate::usage::UsageReport>,
    ) -> Result<(Value, Vec<AdapterEvent>), Vec<AdapterEvent>> {
        let v = self.stats.parse_line(line_no, line)?;
        let out = usage_events(self.wants.usage, || usage(&v));
        Ok((v, out))
    }

    /// A call issued: it waits for its result; when the table was full, the oldest waiting call
    /// comes out as unfinished.
    fn issued(
        &mut self,
        harness: Harness,
        id: String,
        tool: String,
        args: Value,
        out: &mut Vec<AdapterEvent>,
    ) {
        if let Some((old_id, old)) = self.pending.insert(id, tool, args) {
            out.push(old.unfinished(harness, old_id, &self.refs));
        }
    }

    /// A call answered: the result of a completed call teaches the refs and, when asked for,
    /// comes out just before the action.
    fn answered(
        &mut self,
        tool: String,
        result: Option<&str>,
        action: Action,
        out: &mut Vec<AdapterEvent>,
    ) {
        if let Some(t) = result {
            self.refs.learn(t);
            if self.wants.tool_results {
                out.push(AdapterEvent::ToolResult {
                    tool,
                    text: t.to_owned(),
                });
            }
        }
        out.push(AdapterEvent::Action(action));
    }

    /// Ends the stream: calls never answered come out as [`Outcome::Unfinished`].
    fn finish(&mut self, harness: Harness) -> Vec<AdapterEvent> {
        self.pending.finish(harness, &self.refs)
    }
}

/// Claude Code `-p --output-format stream-json --verbose`.
///
/// `assistant` messages' `tool_use` blocks are paired with the `tool_result` blocks of the `user`
/// messages that answer them. A `tool_result` with `is_error: true` is `denied` when the content
/// says a PreToolUse hook refused it (`PreToolUse:<tool> hook error: …`) or the harness's own
/// permission check rejected it (`tool_result_meta[].permission_decision.decision == "reject"`),
/// otherwise `errored`.
#[derive(Debug, Default)]
pub struct ClaudeAdapter {
    state: StreamState,
}

impl ClaudeAdapter {
    /// Feeds one line (without its newline); `line_no` is 1-based.
    pub fn push_line(&mut self, line_no: u64, line: &str) -> Vec<AdapterEvent> {
        let (v, mut out) = match self.state.open_line(line_no, line, crate::usage::claude) {
            Ok(opened) => opened,
            Err(produced) => return produced,
        };
        match v.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                for block in content_blocks(&v) {
                    let ty = block.get("type").and_then(Value::as_str);
                    if ty == Some("text") && self.state.wants.narration {
                        if let Some(text) = block.get("text").and_then(Value::as_str) {
                            out.push(AdapterEvent::Narration {
                                text: text.to_owned(),
                            });
                        }
                    }
                    if ty != Some("tool_use") {
                        continue;
                    }
                    let (Some(id), Some(name)) = (
                        block.get("id").and_then(Value::as_str),
                        block.get("name").and_then(Value::as_str),
                    ) else {
                        continue;
                    };
                    let args = block.get("input").cloned().unwrap_or(Value::Null);
                    self.state.issued(
                        Harness::Claude,
                        id.to_owned(),
                        name.to_owned(),
                        args,
                        &mut out,
                    );
                }
            }
            Some("user") => {
                let ts = v
                    .get("timestamp")
                    .and_then(Value::as_str)
                    .map_or_else(now_rfc3339, str::to_owned);
                for block in content_blocks(&v) {
                    if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
                        continue;
                    };
                    let Some(call) = self.state.pending.calls.remove(id) else {
                        continue;
                    };
                    let text = block.get("content").and_then(result_text);
                    let outcome = if block.get("is_error").and_then(Value::as_bool) == Some(true) {
                        if is_claude_denial(&v, id, &call.tool, text.as_deref()) {
                            Outcome::Denied
                        } else {
                            Outcome::Errored
                        }
                    } else {
                        Outcome::Completed
                    };
                    let result = (outcome == Outcome::Completed)
                        .then_some(text.as_deref())
                        .flatten();
                    let mut action = build_action(
                        Harness::Claude,
                        &call.tool,
                        Some(id.to_owned()),
                        &call.args,
                        outcome,
                        result,
                        &self.state.refs,
                        ts.clone(),
                    );
                    if outcome == Outcome::Denied {
                        action.denied_reason = Some(claude_denial_reason(text.as_deref()));
                    } else {
                        action.browser_blocked = text
                            .as_deref()
                            .and_then(crate::classify::browser_blocked)
                            .map(Box::new);
                    }
                    self.state.answered(call.tool, result, action, &mut out);
                }
            }
            Some("result") => {
                if let Some(text) = v.get("result").and_then(Value::as_str) {
                    let text = text.to_owned();
                    out.push(if v.get("is_error") == Some(&Value::Bool(true)) {
                        AdapterEvent::HarnessFailed { text }
                    } else {
                        AdapterEvent::Answer { text }
                    });
                }
            }
            Some("system" | "stream_event") => {}
            Some(other) => self.state.stats.unknown(other),
            None => self.state.stats.unknown("(no type)"),
        }
        out
    }

    /// Ends the stream: calls never answered come out as [`Outcome::Unfinished`].
    pub fn finish(&mut self) -> Vec<AdapterEvent> {
        self.state.finish(Harness::Claude)
    }

    /// Counters so far.
    pub fn stats(&self) -> &AdapterStats {
        &self.state.stats
    }
}

fn content_blocks(v: &Value) -> impl Iterator<Item = &Value> {
    v.pointer("/message/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn is_claude_denial(message: &Value, id: &str, tool: &str, text: Option<&str>) -> bool {
    if text.is_some_and(|t| t.contains("PreToolUse:") && t.contains("hook")) {
        return true;
    }
    if harness_tool_unavailable(tool, text) {
        return true;
    }
    message
        .get("tool_result_meta")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m.get("id").and_then(Value::as_str) == Some(id))
        .any(|m| {
            m.pointer("/permission_decision/decision")
                .and_then(Value::as_str)
                == Some("reject")
        })
}

/// Whether Claude refused a built-in tool it does not offer (`persona run` passes `--tools ""`):
/// `No such tool available: Bash. Bash is disabled for this session, …` (seen, 2.1.332). The
/// tool never ran, so the call is a denial, not a call that got past the hook. Only for
/// built-ins: an MCP tool's error text is the server's (and may carry what a page or the model
/// chose), so it never makes an MCP call a denial.
fn harness_tool_unavailable(tool: &str, text: Option<&str>) -> bool {
    !tool.starts_with("mcp__")
        && text.and_then(unavailable_rest).is_some_and(|rest| {
            rest.strip_prefix(tool)
                .is_some_and(|r| r.starts_with('.') || r.is_empty())
        })
}

/// What follows `No such tool available: ` in Claude's refusal, which it wraps as
/// `<tool_use_error>Error: No such tool available: …</tool_use_error>` (seen, 2.1.332).
fn unavailable_rest(text: &str) -> Option<&str> {
    let t = text.strip_prefix("<tool_use_error>").unwrap_or(text);
    let t = t.strip_prefix("Error: ").unwrap_or(t);
    t.strip_prefix("No such tool available: ")
}

/// The reason id of a call Claude reports denied, from the `tool_result`'s error text: the
/// guard's own id (its stderr line ends `(reason: <id>)`); `guard_unrunnable` when the hook could
/// not run and `onFailure: "block"` refused the call; `harness_tool_unavailable` when the tool
/// is not offered at all; `harness_permission` when Claude's own permission check refused it;
/// else `hook_denied`.
fn claude_denial_reason(text: Option<&str>) -> String {
    let text = text.unwrap_or("");
    if let Some(at) = text.rfind("(reason: ") {
        let rest = &text[at + "(reason: ".len()..];
        if let Some(id) = rest
            .split(')')
            .next()
            .filter(|r| crate::guard_events::is_reason_id(r))
        {
            return id.to_owned();
        }
    }
    if unavailable_rest(text).is_some() {
        "harness_tool_unavailable".to_owned()
    } else if text.contains("onFailure") {
        "guard_unrunnable".to_owned()
    } else if text.contains("PreToolUse:") {
        "hook_denied".to_owned()
    } else {
        "harness_permission".to_owned()
    }
}

/// Codex CLI `exec --json`.
///
/// `item.started` / `item.completed` of the tool-call item types: `mcp_tool_call` (journaled as
/// `mcp__<server>__<tool>`, the name hooks see), `command_execution` (`Bash`-like: a URL in the
/// command makes it a fetch), `web_search`. An `agent_message` is the persona's answer
/// ([`AdapterEvent::Answer`]); other non-call items (`reasoning`, `error`, `todo_list`,
/// `file_change`) are ignored. A call the hook denied leaves **no** item: merge the
/// guard's events with [`guard_denials`](crate::guard_denials).
#[derive(Debug, Default)]
pub struct CodexAdapter {
    state: StreamState,
}

impl CodexAdapter {
    /// Feeds one line (without its newline); `line_no` is 1-based.
    pub fn push_line(&mut self, line_no: u64, line: &str) -> Vec<AdapterEvent> {
        let (v, mut out) = match self.state.open_line(line_no, line, crate::usage::codex) {
            Ok(opened) => opened,
            Err(produced) => return produced,
        };
        let ty = v.get("type").and_then(Value::as_str);
        match ty {
            Some(t @ ("item.started" | "item.updated" | "item.completed")) => {
                let Some(item) = v.get("item") else {
                    return out;
                };
                let item_type = item.get("type").and_then(Value::as_str).unwrap_or("");
                let Some((tool, args)) = codex_call(item_type, item) else {
                    if item_type == "agent_message" && t == "item.completed" {
                        if let Some(text) = item.get("text").and_then(Value::as_str) {
                            out.push(AdapterEvent::Answer {
                                text: text.to_owned(),
                            });
                        }
                        return out;
                    }
                    if !matches!(
                        item_type,
                        "agent_message" | "reasoning" | "error" | "todo_list" | "file_change"
                    ) {
                        self.state.stats.unknown(&format!("item:{item_type}"));
                    }
                    return out;
                };
                let id = item
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                if t != "item.completed" {
                    self.state.issued(Harness::Codex, id, tool, args, &mut out);
                    return out;
                }
                self.state.pending.calls.remove(&id);
                let status = item.get("status").and_then(Value::as_str).unwrap_or("");
                let failed = matches!(status, "failed" | "declined" | "cancelled")
                    || item.get("error").is_some_and(|e| !e.is_null());
                let outcome = if failed {
                    Outcome::Errored
                } else {
                    Outcome::Completed
                };
                let text = item
                    .pointer("/result/content")
                    .and_then(result_text)
                    .or_else(|| {
                        item.get("aggregated_output")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    });
                let result = (outcome == Outcome::Completed)
                    .then_some(text.as_deref())
                    .flatten();
                let mut action = build_action(
                    Harness::Codex,
                    &tool,
                    (!id.is_empty()).then_some(id),
                    &args,
                    outcome,
                    result,
                    &self.state.refs,
                    now_rfc3339(),
                );
                action.browser_blocked = text
                    .as_deref()
                    .or_else(|| {
                        item.get("error")
                            .and_then(|e| e.get("message"))
                            .and_then(Value::as_str)
                    })
                    .and_then(crate::classify::browser_blocked)
                    .map(Box::new);
                self.state.answered(tool, result, action, &mut out);
            }
            Some("turn.failed") => {
                if let Some(text) = v.pointer("/error/message").and_then(Value::as_str) {
                    out.push(AdapterEvent::HarnessFailed {
                        text: text.to_owned(),
                    });
                }
            }
            Some("thread.started" | "turn.started" | "turn.completed" | "error") => {}
            Some(other) => self.state.stats.unknown(other),
            None => self.state.stats.unknown("(no type)"),
        }
        out
    }

    /// Ends the stream: calls never answered come out as [`Outcome::Unfinished`].
    pub fn finish(&mut self) -> Vec<AdapterEvent> {
        self.state.finish(Harness::Codex)
    }

    /// Counters so far.
    pub fn stats(&self) -> &AdapterStats {
        &self.state.stats
    }
}

/// The tool name and arguments of a Codex tool-call item, or `None` for other items.
fn codex_call(item_type: &str, item: &Value) -> Option<(String, Value)> {
    match item_type {
        "mcp_tool_call" => {
            let server = item.get("server").and_then(Value::as_str).unwrap_or("");
            let tool = item.get("tool").and_then(Value::as_str)?;
            let args = match item.get("arguments") {
                // Some versions carry the arguments as a JSON-encoded string.
                Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
                Some(v) => v.clone(),
                None => Value::Null,
            };
            Some((format!("mcp__{server}__{tool}"), args))
        }
        "command_execution" => {
            let command = item.get("command").cloned().unwrap_or(Value::Null);
            Some((
                "command_execution".to_owned(),
                serde_json::json!({ "command": command }),
            ))
        }
        "web_search" => Some(("web_search".to_owned(), Value::Null)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::ActionKind;

    fn actions(events: Vec<AdapterEvent>) -> Vec<Action> {
        events
            .into_iter()
            .filter_map(|e| match e {
                AdapterEvent::Action(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn claude_error_without_a_hook_message_is_errored_not_denied() {
        let mut a = ClaudeAdapter::default();
        a.push_line(1, r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__b__browser_navigate","input":{"url":"https://x.example/"}}]}}"#);
        let got = actions(a.push_line(2, r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"net::ERR_NAME_NOT_RESOLVED"}]}}"#));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].outcome, Outcome::Errored);
        assert_eq!(got[0].kind, ActionKind::Navigate);
    }

    #[test]
    fn claude_permission_reject_is_denied() {
        let mut a = ClaudeAdapter::default();
        a.push_line(1, r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"WebFetch","input":{"url":"https://x.example/"}}]}}"#);
        let got = actions(a.push_line(2, r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use WebFetch, but you haven't granted it yet."}]},"tool_result_meta":[{"id":"t1","permission_decision":{"decision":"reject"}}]}"#));
        assert_eq!(got[0].outcome, Outcome::Denied);
        assert_eq!(got[0].kind, ActionKind::Fetch);
    }

    #[test]
    fn a_built_in_claude_does_not_offer_is_denied_but_an_mcp_error_saying_so_is_not() {
        let unavailable = "<tool_use_error>Error: No such tool available: Bash. Bash is disabled for this session, in subagents as well as here.</tool_use_error>";
        let mut a = ClaudeAdapter::default();
        a.push_line(1, r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -s https://evil.example/"}}]}}"#);
        let got = actions(a.push_line(2, &format!(r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"{unavailable}"}}]}}}}"#)));
        assert_eq!(got[0].outcome, Outcome::Denied);
        assert_eq!(
            got[0].denied_reason.as_deref(),
            Some("harness_tool_unavailable")
        );
        // The same words from an MCP server (a page can put text in an error) prove nothing.
        a.push_line(3, r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"mcp__browser__browser_navigate","input":{"url":"https://evil.example/"}}]}}"#);
        let got = actions(a.push_line(4, r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"<tool_use_error>Error: No such tool available: mcp__browser__browser_navigate. x</tool_use_error>"}]}}"#));
        assert_eq!(got[0].outcome, Outcome::Errored);
        // Another tool's name in the message does not make this call a denial.
        a.push_line(5, r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"WebFetch","input":{"url":"https://evil.example/"}}]}}"#);
        let got = actions(a.push_line(6, &format!(r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"t3","is_error":true,"content":"{unavailable}"}}]}}}}"#)));
        assert_eq!(got[0].outcome, Outcome::Errored);
    }

    #[test]
    fn a_result_for_an_unknown_call_is_ignored() {
        let mut a = ClaudeAdapter::default();
        let got = a.push_line(1, r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"nope","content":"x"}]}}"#);
        assert!(got.is_empty());
    }

    #[test]
    fn codex_failed_items_are_errored_and_string_arguments_are_parsed() {
        let mut a = CodexAdapter::default();
        let got = actions(a.push_line(1, r#"{"type":"item.completed","item":{"id":"i1","type":"mcp_tool_call","server":"b","tool":"browser_navigate","arguments":"{\"url\":\"https://x.example/p?q=1\"}","result":null,"error":{"message":"boom"},"status":"failed"}}"#));
        assert_eq!(got[0].outcome, Outcome::Errored);
        assert_eq!(got[0].tool, "mcp__b__browser_navigate");
        assert_eq!(got[0].first_host(), Some("x.example"));
        assert_eq!(got[0].urls[0].path.as_deref(), Some("/p"));
    }

    #[test]
    fn codex_command_execution_with_a_url_is_a_fetch() {
        let mut a = CodexAdapter::default();
        assert!(a.push_line(1, r#"{"type":"item.started","item":{"id":"i2","type":"command_execution","command":"curl -s https://x.example/a","status":"in_progress"}}"#).is_empty());
        let got = actions(a.push_line(2, r#"{"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"curl -s https://x.example/a","aggregated_output":"ok","exit_code":0,"status":"completed"}}"#));
        assert_eq!(got[0].kind, ActionKind::Fetch);
        assert_eq!(got[0].first_host(), Some("x.example"));
        assert!(
            a.finish().is_empty(),
            "the completed call is no longer pending"
        );
    }

    #[test]
    fn pending_calls_are_bounded() {
        let mut a = CodexAdapter::default();
        let mut flushed = 0;
        for i in 0..(MAX_PENDING + 10) {
            let line = format!(
                r#"{{"type":"item.started","item":{{"id":"i{i}","type":"mcp_tool_call","server":"s","tool":"click","arguments":{{}}}}}}"#
            );
            flushed += actions(a.push_line(i as u64 + 1, &line)).len();
        }
        assert_eq!(flushed, 10);
        assert_eq!(a.finish().len(), MAX_PENDING);
    }

    #[test]
    fn tool_results_come_once_before_their_action_and_only_when_asked() {
        let call = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__browser__browser_snapshot","input":{}}]}}"#;
        let ok = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"- Page URL: https://s.example/"}]}]}}"#;
        let mut a = Adapter::new(Harness::Claude).with_tool_results();
        a.push_line(1, call);
        let got = a.push_line(2, ok);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            AdapterEvent::ToolResult {
                tool: "mcp__browser__browser_snapshot".into(),
                text: "- Page URL: https://s.example/".into()
            }
        );
        assert!(matches!(&got[1], AdapterEvent::Action(x) if x.outcome == Outcome::Completed));
        // An errored call has no result to yield.
        a.push_line(3, &call.replace("t1", "t2"));
        let err = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"boom"}]}}"#;
        assert_eq!(actions(a.push_line(4, err)).len(), 1);
        // Off by default.
        let mut plain = Adapter::new(Harness::Claude);
        plain.push_line(1, call);
        assert_eq!(plain.push_line(2, ok).len(), 1);
        // Codex: the completed item carries both.
        let mut c = Adapter::new(Harness::Codex).with_tool_results();
        let got = c.push_line(1, r#"{"type":"item.completed","item":{"id":"i1","type":"mcp_tool_call","server":"browser","tool":"browser_snapshot","arguments":{},"result":{"content":[{"type":"text","text":"snap"}]},"status":"completed"}}"#);
        assert!(
            matches!(&got[0], AdapterEvent::ToolResult { tool, text } if tool == "mcp__browser__browser_snapshot" && text == "snap")
        );
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn a_claude_denial_carries_its_reason_and_both_harnesses_yield_the_final_answer() {
        fn text(t: &str) -> Option<&str> {
            Some(t)
        }
        assert_eq!(
            claude_denial_reason(text("PreToolUse:mcp__b__navigate hook error: [leopold persona guard]: Leopold persona guard: navigation to host \"evil.example\" is outside … (reason: outside_allowlist)")),
            "outside_allowlist"
        );
        assert_eq!(
            claude_denial_reason(text("PreToolUse:mcp__b__navigate hook error: ['/x/leopold' persona guard]: failed; blocking because onFailure is \"block\"")),
            "guard_unrunnable"
        );
        assert_eq!(
            claude_denial_reason(text(
                "PreToolUse:mcp__b__navigate hook error: [my-hook]: no (reason: Not An Id!)"
            )),
            "hook_denied",
            "free text is not a reason id"
        );
        assert_eq!(claude_denial_reason(None), "harness_permission");

        let mut c = ClaudeAdapter::default();
        assert_eq!(
            c.push_line(1, r#"{"type":"result","subtype":"success","is_error":false,"result":"Found two walls.\n- a\n"}"#),
            vec![AdapterEvent::Answer { text: "Found two walls.\n- a\n".into() }]
        );
        let mut x = CodexAdapter::default();
        assert!(x
            .push_line(1, r#"{"type":"item.started","item":{"id":"i","type":"agent_message","text":"partial"}}"#)
            .is_empty(), "only a completed message is an answer");
        assert_eq!(
            x.push_line(2, r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Done."}}"#),
            vec![AdapterEvent::Answer { text: "Done.".into() }]
        );

        // Claude's text between calls, only when asked for.
        let line = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Now the cart."},{"type":"tool_use","id":"t1","name":"mcp__b__click","input":{}}]}}"#;
        assert!(ClaudeAdapter::default().push_line(1, line).is_empty());
        let mut n = Adapter::new(Harness::Claude).with_narration();
        assert_eq!(
            n.push_line(1, line),
            vec![AdapterEvent::Narration {
                text: "Now the cart.".into()
            }]
        );
    }

    /// A harness's own error is never an answer: Claude's result marked `is_error` (as it
    /// gives it with no key), Codex's `turn.failed`.
    #[test]
    fn a_harness_error_is_not_an_answer() {
        let mut c = ClaudeAdapter::default();
        assert_eq!(
            c.push_line(1, r#"{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}"#),
            vec![AdapterEvent::HarnessFailed { text: "Not logged in · Please run /login".into() }]
        );
        let mut x = CodexAdapter::default();
        assert_eq!(
            x.push_line(
                1,
                r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}"#
            ),
            vec![AdapterEvent::HarnessFailed {
                text: "unexpected status 401 Unauthorized".into()
            }]
        );
        assert!(x
            .push_line(2, r#"{"type":"error","message":"Reconnecting... 1/5"}"#)
            .is_empty());
    }

    #[test]
    fn non_object_lines_are_malformed() {
        let mut a = ClaudeAdapter::default();
        assert_eq!(
            a.push_line(7, "[1]"),
            vec![AdapterEvent::Malformed {
                line_no: 7,
                error: "not a JSON object".into()
            }]
        );
        assert!(a.push_line(8, "   ").is_empty());
        assert_eq!(a.stats().malformed, 1);
    }
}
