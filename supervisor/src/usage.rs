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
