//! What a harness's stream says the model cost: its name, tokens, turns and (Claude) the cost in
//! USD, read from the lines the adapters parse anyway (docs/reference.md#cost-and-budgets).
//!
//! An adapter made [`Adapter::with_usage`](crate::Adapter::with_usage) yields one
//! [`AdapterEvent::Usage`](crate::AdapterEvent::Usage) per report; adding them up is the reader's:
//! a report says whether it is one model response, a turn of Codex's, or the harness's own totals.

use serde_json::Value;

/// What a usage report covers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UsageScope {
    /// Only the model's name (Claude's `system`/`init`).
    #[default]
    Model,
    /// One model response, by its message id (Claude's `assistant` message). Claude prints a
    /// response with several content blocks as several `assistant` events of one id, each
    /// repeating the usage: a reader counts an id once, keeping its latest figures.
    Message(String),
    /// The harness's own totals for the whole run (Claude's `result`): they replace what the
    /// responses added up to.
    Total,
    /// One turn's tokens, to add (Codex's `turn.completed`).
    Turn,
}

/// One report of the model's usage in a harness's stream.
///
/// Input tokens are the ones not read from or written to the provider's prompt cache, so that
/// the four token counts add up to what the run was billed for: Codex counts its cached input
/// inside `input_tokens`, and that part is moved to `cache_read_tokens` (`cache_write_tokens`
/// likewise).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UsageReport {
    /// What the report covers.
    pub scope: UsageScope,
    /// The model, where the line names it.
    pub model: Option<String>,
    /// Input tokens, without the cached ones.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// The harness's count of turns (Claude's `num_turns`), in its totals.
    pub turns: Option<u64>,
    /// The cost in USD, in the harness's totals (Claude's `total_cost_usd`).
    pub cost_usd: Option<f64>,
    /// The harness stopped at its own turn limit (Claude's `result` subtype `error_max_turns`).
    pub turn_limit_hit: bool,
    /// The harness stopped at its own spending limit (Claude's `result` subtype
    /// `error_max_budget_usd`, from `--max-budget-usd`).
    pub budget_limit_hit: bool,
}

// The adapter's events compare as a whole: a cost is a number the harness printed, never NaN.
impl Eq for UsageReport {}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The usage a Claude stream-json line reports, if it reports any.
pub(crate) fn claude(v: &Value) -> Option<UsageReport> {
    match v.get("type").and_then(Value::as_str)? {
        "system" if v.get("subtype").and_then(Value::as_str) == Some("init") => Some(UsageReport {
            scope: UsageScope::Model,
            model: Some(v.get("model")?.as_str()?.to_owned()),
            ..UsageReport::default()
        }),
        "assistant" => {
            let m = v.get("message")?;
            let id = m.get("id").and_then(Value::as_str)?;
            // A sub-agent's messages carry their parent's id: the run has none (`--tools ""`),
            // and counting one would count its tokens twice with the totals.
            if v.get("parent_tool_use_id").is_some_and(|p| !p.is_null()) {
                return None;
            }
            let u = m.get("usage")?;
            Some(UsageReport {
                scope: UsageScope::Message(id.to_owned()),
                model: m.get("model").and_then(Value::as_str).map(str::to_owned),
                ..claude_tokens(u)
            })
        }
        "result" => {
            let u = v.get("usage");
            let subtype = v.get("subtype").and_then(Value::as_str);
            Some(UsageReport {
                scope: UsageScope::Total,
                turns: v.get("num_turns").and_then(Value::as_u64),
                cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
                turn_limit_hit: subtype == Some("error_max_turns"),
                budget_limit_hit: subtype == Some("error_max_budget_usd"),
                ..u.map(claude_tokens).unwrap_or_default()
            })
        }
        _ => None,
    }
}

fn claude_tokens(u: &Value) -> UsageReport {
    UsageReport {
        input_tokens: count(u, "input_tokens"),
        output_tokens: count(u, "output_tokens"),
        cache_read_tokens: count(u, "cache_read_input_tokens"),
        cache_write_tokens: count(u, "cache_creation_input_tokens"),
        ..UsageReport::default()
    }
}

/// The usage a Codex `exec --json` line reports, if it reports any.
pub(crate) fn codex(v: &Value) -> Option<UsageReport> {
    if v.get("type").and_then(Value::as_str)? != "turn.completed" {
        return None;
    }
    let u = v.get("usage")?;
    let cached = count(u, "cached_input_tokens");
    let written = count(u, "cache_write_input_tokens");
    Some(UsageReport {
        scope: UsageScope::Turn,
        input_tokens: count(u, "input_tokens").saturating_sub(cached + written),
        output_tokens: count(u, "output_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: written,
        ..UsageReport::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_lines_give_the_model_each_response_and_the_totals() {
        let init = json!({"type": "system", "subtype": "init", "model": "claude-x"});
        assert_eq!(claude(&init).unwrap().model.as_deref(), Some("claude-x"));
        let msg = json!({"type": "assistant", "parent_tool_use_id": null, "message": {
            "id": "m1", "model": "claude-x", "usage": {"input_tokens": 3,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 7}}});
        let r = claude(&msg).unwrap();
        assert_eq!(r.scope, UsageScope::Message("m1".into()));
        assert_eq!(
            (
                r.input_tokens,
                r.output_tokens,
                r.cache_read_tokens,
                r.cache_write_tokens
            ),
            (3, 7, 100, 20)
        );
        let end = json!({"type": "result", "subtype": "error_max_turns", "num_turns": 4,
            "total_cost_usd": 0.25, "usage": {"input_tokens": 9, "output_tokens": 2}});
        let r = claude(&end).unwrap();
        assert_eq!(r.scope, UsageScope::Total);
        assert_eq!(
            (r.turns, r.cost_usd, r.turn_limit_hit, r.input_tokens),
            (Some(4), Some(0.25), true, 9)
        );
        assert!(claude(&json!({"type": "user"})).is_none());
    }

    #[test]
    fn codex_cached_input_is_moved_out_of_its_input_tokens() {
        let turn = json!({"type": "turn.completed", "usage": {"input_tokens": 1000,
            "cached_input_tokens": 600, "output_tokens": 50}});
        let r = codex(&turn).unwrap();
        assert_eq!(r.scope, UsageScope::Turn);
        assert_eq!(
            (r.input_tokens, r.cache_read_tokens, r.output_tokens),
            (400, 600, 50)
        );
        assert!(codex(&json!({"type": "turn.started"})).is_none());
    }
}
