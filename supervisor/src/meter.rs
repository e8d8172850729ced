//! The running total of a run's usage ([`crate::usage::Usage`]), from the harness's stream as
//! the observer reads it (docs/reference.md#cost-and-budgets): apart from the usage itself, which
//! `run.json` holds, so that the run's state does not depend on the stream's adapters.

use crate::usage::Usage;

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
}
