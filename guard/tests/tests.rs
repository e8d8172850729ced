//! The guard crate's integration tests, one binary.

/// Property tests: the invariants the red-team corpus samples.
mod props;
/// Issue #22: every activating tool judged alike in a provisioned run, exit codes and all.
mod provisioned;
/// The red-team corpus (`redteam.toml`) through the whole in-process guard.
mod redteam;
/// WPT parity: the WHATWG URL test data (`data/`) through `decide`.
mod wpt;
