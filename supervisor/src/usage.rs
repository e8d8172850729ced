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

impl Usage {
    pub(crate) fn add_tokens(&mut self, t: &Usage) {
        self.input_tokens += t.input_tokens;
        self.output_tokens += t.output_tokens;
        self.cache_read_tokens += t.cache_read_tokens;
        self.cache_write_tokens += t.cache_write_tokens;
    }

    pub(crate) fn sub_tokens(&mut self, t: &Usage) {
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
