//! What a run cost: the model, the turns, the tokens and, where the harness reports it, the cost
//! in USD (docs/reference.md#cost-and-budgets), read from the harness's own stream.

use serde::{Deserialize, Serialize};

/// A run's usage, in `run.json`'s `end.usage` and `run_ended`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// The model the harness said it used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model turns (requests answered).
    pub turns: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// The cost in USD, where the harness reports it (Claude does; Codex does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Every token the run was billed for.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// The running total of a run's usage, from the adapter's reports as the stream goes: live, so
/// that a budget can stop the run the moment it is passed.
///
/// Claude: each response (an `assistant` message, counted once by its id) adds its tokens and a
/// turn; the `result` event's totals (with `num_turns` and `total_cost_usd`) then replace the
/// sum. Codex: each `turn.completed` adds its tokens; its stream does not mark the model's
/// requests, so each call the persona made (a denied one too) and each message it wrote counts
/// as a turn (several calls in one response count one each).
#[derive(Debug, Default)]
pub struct Meter {
    usage: Usage,
    /// Anything reported or counted: a stream without usage records none.
    seen: bool,
    /// Codex: turns are counted from calls and messages.
    counts_calls: bool,
    /// The latest response's id and the tokens it added (Claude repeats a response's usage on
    /// each of its content blocks).
    last_message: Option<(String, Usage)>,
    turn_limit_hit: bool,
    budget_limit_hit: bool,
}

impl Meter {
    /// A meter for `harness`'s stream; `model` is the model the run asked for, if it named one
    /// (the stream's own name for it wins: Claude resolves an alias such as `sonnet`).
    pub fn new(harness: leopold_journal::Harness, model: Option<String>) -> Meter {
        Meter {
            usage: Usage {
                model,
                ..Usage::default()
            },
            counts_calls: harness == leopold_journal::Harness::Codex,
            ..Meter::default()
        }
    }

    /// One report of the adapter's.
    pub fn report(&mut self, r: &leopold_journal::UsageReport) {
        use leopold_journal::UsageScope;
        // Claude names its own error replies (`Not logged in`, an API error) `<synthetic>`: no
        // model answered them, and they are no turn.
        let synthetic = r.model.as_ref().is_some_and(|m| m.starts_with('<'));
        if synthetic && matches!(r.scope, UsageScope::Message(_)) {
            return;
        }
        self.seen = true;
        if let Some(m) = r.model.as_ref().filter(|_| !synthetic) {
            self.usage.model = Some(m.clone());
        }
        let tokens = Usage {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cache_read_tokens: r.cache_read_tokens,
            cache_write_tokens: r.cache_write_tokens,
            ..Usage::default()
        };
        match &r.scope {
            UsageScope::Model => {}
            UsageScope::Message(id) => {
                match self.last_message.take() {
                    Some((last, before)) if &last == id => self.usage.sub_tokens(&before),
                    _ => self.usage.turns += 1,
                }
                self.usage.add_tokens(&tokens);
                self.last_message = Some((id.clone(), tokens));
            }
            UsageScope::Turn => self.usage.add_tokens(&tokens),
            UsageScope::Total => {
                let turns = r.turns.unwrap_or(self.usage.turns);
                self.usage = Usage {
                    model: self.usage.model.take(),
                    turns,
                    cost_usd: r.cost_usd.or(self.usage.cost_usd),
                    ..tokens
                };
                self.last_message = None;
                self.turn_limit_hit |= r.turn_limit_hit;
                self.budget_limit_hit |= r.budget_limit_hit;
            }
        }
    }

    /// A call the persona made, or a message it wrote: a turn, where the stream does not say
    /// (Codex).
    pub fn response(&mut self) {
        if self.counts_calls {
            self.seen = true;
            self.usage.turns += 1;
        }
    }

    /// The usage so far; `None` when the stream reported none.
    pub fn usage(&self) -> Option<&Usage> {
        self.seen.then_some(&self.usage)
    }

    /// The harness stopped at its own turn limit (Claude's `error_max_turns`).
    pub fn turn_limit_hit(&self) -> bool {
        self.turn_limit_hit
    }

    /// The harness stopped at its own spending limit (Claude's `error_max_budget_usd`).
    pub fn budget_limit_hit(&self) -> bool {
        self.budget_limit_hit
    }
}

impl Usage {
    fn add_tokens(&mut self, t: &Usage) {
        self.input_tokens += t.input_tokens;
        self.output_tokens += t.output_tokens;
        self.cache_read_tokens += t.cache_read_tokens;
        self.cache_write_tokens += t.cache_write_tokens;
    }

    fn sub_tokens(&mut self, t: &Usage) {
        self.input_tokens = self.input_tokens.saturating_sub(t.input_tokens);
        self.output_tokens = self.output_tokens.saturating_sub(t.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_sub(t.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_sub(t.cache_write_tokens);
    }

    /// `model, 4 turns, 1,234 tokens (1,000 in, 200 out, 34 cached), $0.0123`: the summary's
    /// line, the figures the harness did not report left out.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = &self.model {
            parts.push(m.clone());
        }
        parts.push(crate::output::count(self.turns, "turn"));
        let cached = self.cache_read_tokens + self.cache_write_tokens;
        let mut tokens = format!(
            "{} tokens ({} in, {} out",
            grouped(self.tokens()),
            grouped(self.input_tokens),
            grouped(self.output_tokens)
        );
        if cached > 0 {
            tokens.push_str(&format!(
                ", {} cache read, {} cache write",
                grouped(self.cache_read_tokens),
                grouped(self.cache_write_tokens)
            ));
        }
        tokens.push(')');
        parts.push(tokens);
        if let Some(c) = self.cost_usd {
            parts.push(dollars(c));
        }
        parts.join(", ")
    }
}

/// `20512` as `20,512`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cost as `$0.0123`: four decimals, since a short run costs cents.
pub fn dollars(usd: f64) -> String {
    if usd > 0.0 && usd < 0.0001 {
        // Less than a hundredth of a cent still cost something: show it.
        format!("${usd:.6}")
    } else {
        format!("${usd:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leopold_journal::{Adapter, AdapterEvent, Harness};

    /// The meter over a whole captured stream, as the observer feeds it.
    fn metered(harness: Harness, model: Option<&str>, stream: &str) -> Meter {
        let mut adapter = Adapter::new(harness).with_usage();
        let mut meter = Meter::new(harness, model.map(str::to_owned));
        for (n, line) in stream.lines().enumerate() {
            for ev in adapter.push_line(n as u64 + 1, line) {
                match ev {
                    AdapterEvent::Usage(r) => meter.report(&r),
                    AdapterEvent::Action(_) | AdapterEvent::Answer { .. } => meter.response(),
                    _ => {}
                }
            }
        }
        meter
    }

    fn capture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/captures")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn a_real_claude_stream_gives_its_model_turns_tokens_and_cost() {
        // tests/captures/claude-stream.jsonl, by hand: `init` names claude-opus-5-5; four
        // responses of 1 input and 1 output token each; `result` says num_turns 4, usage 4 in,
        // 4 out, no cache, total_cost_usd 9.6e-5.
        let m = metered(Harness::Claude, None, &capture("claude-stream.jsonl"));
        let u = m.usage().unwrap();
        assert_eq!(u.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(
            (u.turns, u.input_tokens, u.output_tokens, u.tokens()),
            (4, 4, 4, 8)
        );
        assert!((u.cost_usd.unwrap() - 9.6e-5).abs() < 1e-12, "{u:?}");
        assert!(!m.turn_limit_hit());
    }

    #[test]
    fn a_real_codex_stream_gives_its_tokens_and_counts_its_calls_as_turns() {
        // tests/captures/codex-stream.jsonl, by hand: two `mcp_tool_call` items (the third call
        // was denied and left none), one `agent_message`, one `turn.completed` with 4 input
        // (none cached) and 4 output tokens; no cost, no model.
        let m = metered(
            Harness::Codex,
            Some("gpt-x"),
            &capture("codex-stream.jsonl"),
        );
        let u = m.usage().unwrap();
        assert_eq!(u.model.as_deref(), Some("gpt-x"));
        assert_eq!(
            (u.turns, u.input_tokens, u.output_tokens, u.cost_usd),
            (3, 4, 4, None)
        );
    }

    #[test]
    fn a_response_split_over_several_events_is_counted_once() {
        let msg = |id: &str, out: u64| {
            serde_json::json!({"type": "assistant", "message": {"id": id, "model": "m",
                "usage": {"input_tokens": 10, "output_tokens": out}}})
            .to_string()
        };
        let error = serde_json::json!({"type": "assistant", "message": {"id": "e",
            "model": "<synthetic>", "usage": {"input_tokens": 0, "output_tokens": 0}}});
        let stream = [msg("a", 1), msg("a", 5), msg("b", 2), error.to_string()].join("\n");
        let m = metered(Harness::Claude, None, &stream);
        let u = m.usage().unwrap();
        assert_eq!((u.turns, u.input_tokens, u.output_tokens), (2, 20, 7));
        assert_eq!(u.model.as_deref(), Some("m"), "no model answered the error");
        assert!(metered(Harness::Claude, None, "").usage().is_none());
    }

    #[test]
    fn the_line_groups_digits_and_leaves_out_what_was_not_reported() {
        let u = Usage {
            model: Some("claude-x".into()),
            turns: 3,
            input_tokens: 20_000,
            output_tokens: 512,
            ..Usage::default()
        };
        assert_eq!(
            u.line(),
            "claude-x, 3 turns, 20,512 tokens (20,000 in, 512 out)"
        );
        let u = Usage {
            cache_read_tokens: 1_000_000,
            cost_usd: Some(0.5),
            ..u
        };
        assert_eq!(
            u.line(),
            "claude-x, 3 turns, 1,020,512 tokens (20,000 in, 512 out, 1,000,000 cache read, 0 cache write), $0.5000"
        );
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(dollars(0.000_048), "$0.000048");
        assert_eq!(dollars(0.0), "$0.0000");
    }
}
