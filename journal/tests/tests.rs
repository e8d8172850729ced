//! The journal crate's integration tests, one binary.

/// Adapters on the real harness captures in `tests/captures/`.
mod captures;
/// The hash chain: a journal edited, cut or reordered after the run does not replay clean.
mod chain;
/// `replay` on the golden journals under `tests/golden/`.
mod golden;
/// Shared helpers.
mod kit;
/// One journal for both harnesses: the same calls, the same fields.
mod parity;
/// Replaying a journal gives the verdicts live validation gave (property test).
mod roundtrip;
