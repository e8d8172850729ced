//! What the supervisor sees of the worker: stream lines in, journaled actions and violations out.
//!
//! The run loop talks to an [`Observer`]; [`JournalObserver`] is the real one (the journal
//! crate's adapters, journal writer and validation).

use serde_json::Value;

/// One action observed in the worker's stream, already journaled.
#[derive(Debug, Clone)]
pub struct Observed {
    /// Journal sequence number.
    pub seq: u64,
    /// The tool, e.g. `mcp__browser__browser_click`.
    pub tool: String,
    /// Short description for progress lines: kind, host or label; never a full URL.
    pub summary: String,
    /// `completed`, `errored`, `denied`, `unfinished`.
    pub outcome: String,
    /// Why this action breaks the flow's bound, if it does.
    pub violation: Option<String>,
    /// The journal line, for `--json`.
    pub json: Value,
}

/// Notes from the adapter that are not actions (unreadable lines, stream errors).
#[derive(Debug, Clone)]
pub struct Note {
    pub line_no: u64,
    pub message: String,
}

#[derive(Debug, Default)]
pub struct Batch {
    pub actions: Vec<Observed>,
    pub notes: Vec<Note>,
}

pub trait Observer {
    /// One line of the worker's stdout (without the newline). `line_no` counts from 1.
    fn line(&mut self, line_no: u64, line: &str) -> anyhow::Result<Batch>;
    /// A line longer than the limit was skipped.
    fn overlong(&mut self, line_no: u64) -> Batch {
        Batch {
            actions: Vec::new(),
            notes: vec![Note {
                line_no,
                message: "line longer than the limit, skipped".into(),
            }],
        }
    }
    /// The stream ended: calls still open become `unfinished`; the guard's own denials (which
    /// Codex leaves no trace of in its stream) are merged.
    fn finish(&mut self) -> anyhow::Result<Batch>;
}
