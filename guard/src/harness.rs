//! Which harness runs the persona: the one name every crate and every file uses for it
//! (`ACTIVE.json`, `run.json`, journal headers, the command line).

use serde::{Deserialize, Serialize};

/// A supported harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Harness {
    /// Claude Code (`claude -p --output-format stream-json --verbose`).
    Claude,
    /// OpenAI Codex CLI (`codex exec --json`).
    Codex,
}

impl Harness {
    /// Both, in a fixed order.
    pub const ALL: [Harness; 2] = [Harness::Claude, Harness::Codex];

    /// The name in files and on the command line, which is also the executable's default name.
    pub fn as_str(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
        }
    }
}

impl std::fmt::Display for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Harness {
    type Err = UnknownHarness;

    fn from_str(s: &str) -> Result<Harness, UnknownHarness> {
        Harness::ALL
            .into_iter()
            .find(|h| h.as_str() == s)
            .ok_or(UnknownHarness)
    }
}

/// A name that is not `claude` or `codex`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownHarness;

impl std::fmt::Display for UnknownHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a harness (expected `claude` or `codex`)")
    }
}

impl std::error::Error for UnknownHarness {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for h in Harness::ALL {
            assert_eq!(h.as_str().parse::<Harness>(), Ok(h));
            assert_eq!(h.to_string(), h.as_str());
            let json = serde_json::to_string(&h).unwrap();
            assert_eq!(json, format!("\"{h}\""));
            assert_eq!(serde_json::from_str::<Harness>(&json).unwrap(), h);
        }
        assert_eq!("Claude".parse::<Harness>(), Err(UnknownHarness));
        assert!(serde_json::from_str::<Harness>("\"all\"").is_err());
    }
}
