//! The guard crate's integration tests, one binary.

/// Property tests: the invariants the red-team corpus samples.
mod props;
/// The red-team corpus (`redteam.toml`) through the whole in-process guard.
mod redteam;
/// WPT parity: the WHATWG URL test data (`data/`) through `decide`.
mod wpt;
