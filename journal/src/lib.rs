//! Leopold's action journal: what the worker actually did, validated in code.
//!
//! # Brief overview
//!
//! The guard only sees what a hook is shown; on Codex a hook that cannot run fails open. The
//! journal is the record of every tool call the worker made, read from the harness's own event
//! stream, and [`validate`] is the run's real bound: the supervisor calls it live on each action
//! and stops the run on a violation; `leopold persona replay` calls the same function later.
//!
//! - [`Adapter`] ([`ClaudeAdapter`], [`CodexAdapter`]): harness JSON lines → [`Action`]s;
//!   [`guard_denials`] adds the denials Codex streams do not show.
//! - [`validate`]: (flow, action) → [`Verdict`], pure.
//! - [`JournalWriter`]: `.leopold/persona/runs/<run_id>/journal.jsonl`, a [`JournalHeader`] line
//!   then one action per line, each written whole, each linked to the line before by its
//!   SHA-256 ([`chain`]); [`JournalWriter::head`] is the chain's head, `journal_hash`.
//! - [`replay()`]: re-validates a journal or a raw stream, streaming.
//!
//! # Example
//!
//! ```
//! use leopold_flows::Flow;
//! use leopold_journal::{validate, Adapter, AdapterEvent, Harness, JournalHeader, JournalWriter};
//!
//! let flow = Flow::parse(
//!     "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n+++\nBrief.\n",
//!     std::path::Path::new("flows/checkout.md"),
//! ).unwrap();
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("runs/r1/journal.jsonl");
//! let header = JournalHeader::new("r1", &flow.name, &flow.source, Harness::Codex, "2026-11-30T10:00:00Z".into());
//! let mut journal = JournalWriter::create(&path, &header).unwrap();
//!
//! let mut adapter = Adapter::new(Harness::Codex);
//! let line = r#"{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"s","tool":"navigate","arguments":{"url":"https://prod.example.org/?token=x"},"status":"completed"}}"#;
//! for event in adapter.push_line(1, line) {
//!     if let AdapterEvent::Action(mut action) = event {
//!         let verdict = validate(&flow, &action);
//!         assert!(verdict.is_violation()); // prod.example.org is off the allowlist
//!         action.verdict = Some(verdict);
//!         journal.append(&mut action).unwrap();
//!     }
//! }
//! ```
#![warn(missing_docs)]

mod action;
mod adapter;
pub mod chain;
pub mod classify;
mod guard_events;
pub mod lines;
pub mod replay;
pub mod usage;
mod validate;
mod writer;

pub use action::{
    now_rfc3339, Action, ActionKind, BrowserBlock, Harness, Outcome, UrlRef, UrlRole, Verdict,
};
pub use adapter::{Adapter, AdapterEvent, AdapterStats, ClaudeAdapter, CodexAdapter};
pub use chain::{JournalHash, GENESIS};
pub use guard_events::{denial_from_line, guard_denials};
pub use replay::{replay, ReplayError, ReplayEvent, ReplayOptions, ReplaySummary, RunInfo};
pub use usage::{UsageReport, UsageScope};
pub use validate::{validate, RULE_HOOK_FAILED_OPEN, RULE_LEFT_ALLOWLIST};
pub use writer::{
    ChainedFile, JournalHeader, JournalWriter, PendingSync, WriteError, JOURNAL_VERSION,
    UNCHAINED_JOURNAL_VERSION,
};
