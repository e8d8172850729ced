//! What a replay reports: its findings in input order, its totals, and the input it cannot read.

use std::io;
use std::path::PathBuf;

use leopold_flows::FlowError;
use serde::Serialize;

use crate::action::{ActionKind, Outcome, Verdict};
use crate::writer::{JOURNAL_VERSION, UNCHAINED_JOURNAL_VERSION};

/// One finding, in input order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReplayEvent {
    /// An action the flow forbids.
    Violation {
        /// 1-based line of the input (for a raw stream, the line that completed the call).
        line: u64,
        /// The action's `seq` (0 for raw streams).
        seq: u64,
        /// The tool.
        tool: String,
        /// The action's kind.
        kind: ActionKind,
        /// How it ended.
        outcome: Outcome,
        /// The rule that decided.
        rule: String,
        /// What matched.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A line that is not a valid action (or event); skipped.
    Malformed {
        /// 1-based line.
        line: u64,
        /// What was wrong.
        error: String,
    },
    /// The last line has no newline and does not parse: a write cut by a crash; skipped.
    Torn {
        /// 1-based line.
        line: u64,
    },
    /// An action's `seq` is not the one after the previous action's: lines were lost or moved.
    SeqGap {
        /// 1-based line.
        line: u64,
        /// The `seq` expected.
        expected: u64,
        /// The `seq` found.
        found: u64,
    },
    /// The hash chain breaks here: this line's `prev` is not the SHA-256 of the line before it.
    /// The line before was edited, or lines were removed, inserted or moved here: the chain
    /// cannot tell which.
    ChainBreak {
        /// 1-based line.
        line: u64,
        /// What is wrong, e.g. `line 6 does not follow line 5`.
        problem: String,
    },
    /// The chain's head is not the one expected: lines were cut from the end, the last line was
    /// edited, or the journal was replaced. Or a head was expected of an unchained journal.
    HeadMismatch {
        /// Where the expected head comes from: `--expect` or `run.json`.
        from: String,
        /// The head expected.
        expected: String,
        /// The journal's head; `None` for a version 1 (unchained) journal.
        found: Option<String>,
    },
    /// A line of the gateway's record ([`GATEWAY_RECORD`](super::GATEWAY_RECORD)) that does not link to the line
    /// before: the first of them (the summary counts them all).
    GatewayChainBreak {
        /// The gateway record.
        file: PathBuf,
        /// 1-based line of the gateway record.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// The gateway record ends on another hash than the one `run.json` recorded (or is gone).
    GatewayHeadMismatch {
        /// The gateway record.
        file: PathBuf,
        /// The recorded head.
        expected: String,
        /// The record's head as it is now; `None` when the record is missing or empty.
        found: Option<String>,
    },
    /// A disagreement the run found between the harness's stream and the gateway's record of
    /// the browser's calls, and wrote into the record (`{"event":"disagreement"}`): the run
    /// ended `violated` for it.
    GatewayDisagreement {
        /// The gateway record.
        file: PathBuf,
        /// 1-based line of the gateway record.
        line: u64,
        /// What disagrees, as the run said it (tool and seqs, no URL).
        what: String,
    },
    /// The verdict recorded in the journal differs from today's (the flow changed, or `--flow`).
    VerdictChanged {
        /// 1-based line.
        line: u64,
        /// The action's `seq`.
        seq: u64,
        /// The verdict in the journal.
        recorded: Verdict,
        /// The verdict now.
        now: Verdict,
    },
}

/// Totals of one replay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReplaySummary {
    /// The flow checked against (its name).
    pub flow: String,
    /// The flow file.
    pub flow_path: PathBuf,
    /// The input read.
    pub input: PathBuf,
    /// Lines read (header included).
    pub lines: u64,
    /// Actions validated.
    pub actions: u64,
    /// Of which violations.
    pub violations: u64,
    /// Of which denied (by the guard or the harness).
    pub denied: u64,
    /// Malformed lines skipped.
    pub malformed: u64,
    /// Whether a torn last line was skipped.
    pub torn_last_line: bool,
    /// Places where `seq` jumps (lines lost, removed or reordered).
    pub seq_gaps: u64,
    /// Actions whose recorded verdict differs from today's.
    pub verdicts_changed: u64,
    /// Whether the journal is hash-chained (version 2); a version 1 journal or a raw stream is
    /// not, and has no tamper evidence.
    pub chained: bool,
    /// The chain's head (the last line's SHA-256, hex), for a chained journal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_hash: Option<String>,
    /// Lines whose `prev` does not link to the line before.
    pub chain_breaks: u64,
    /// The first of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain_broken_at: Option<u64>,
    /// Heads checked (`--expect`, `run.json`, the gateway record's) and found different.
    pub head_mismatches: u64,
    /// Lines of the gateway record beside the journal (0 when there is none).
    pub gateway_lines: u64,
    /// The gateway record's chain head, when there is a record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_hash: Option<String>,
    /// Lines of the gateway record that do not link to the line before.
    pub gateway_chain_breaks: u64,
    /// Disagreements between the harness's stream and the gateway's record the run recorded.
    pub gateway_disagreements: u64,
    /// Raw streams: event types not known to the adapter, with counts.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unknown_types: std::collections::BTreeMap<String, u64>,
}

impl ReplaySummary {
    /// 0 clean, 1 violations or a record that was tampered with (a broken chain, a head other
    /// than the one expected), 2 malformed lines or `seq` gaps and nothing of exit 1.
    pub fn exit_code(&self) -> u8 {
        if self.violations > 0
            || self.chain_breaks > 0
            || self.gateway_chain_breaks > 0
            || self.gateway_disagreements > 0
            || self.head_mismatches > 0
        {
            1
        } else if self.malformed > 0 || self.seq_gaps > 0 {
            2
        } else {
            0
        }
    }
}

/// Input replay cannot read at all (exit code 2). Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The input could not be opened or read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// `run.json` exists but is not valid JSON.
    #[error("run file {path} is not valid JSON: {error}\n(hint: pass the flow with --flow FILE)")]
    RunInfo {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        error: String,
    },
    /// The first line is not a journal header.
    #[error("{path} is not a Leopold journal: line 1 {problem}\n(hint: for a raw harness stream pass --from claude-stream|codex-json and --flow FILE)")]
    NoHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong with line 1.
        problem: String,
    },
    /// The header names a version this build does not read.
    #[error("{path} is a version {version} journal; this leopold reads versions {UNCHAINED_JOURNAL_VERSION} and {JOURNAL_VERSION}\n(hint: replay it with the leopold that wrote it)")]
    UnknownVersion {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: String,
    },
    /// No flow to check against.
    #[error("no flow to check {path} against: {why}\n(hint: pass the flow with --flow FILE)")]
    NoFlow {
        /// The input.
        path: PathBuf,
        /// Why none was found.
        why: String,
    },
    /// The flow file is missing or invalid.
    #[error(transparent)]
    Flow(#[from] FlowError),
}
