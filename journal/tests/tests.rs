//! The journal crate's integration tests, one binary.

/// Adapters on the real harness captures in `tests/captures/`.
mod captures;
/// `replay` on the golden journals under `tests/golden/`.
mod golden;
/// Shared helpers.
mod kit;
/// One journal for both harnesses: the same calls, the same fields.
mod parity;
/// Replaying a journal gives the verdicts live validation gave (property test).
mod roundtrip;
