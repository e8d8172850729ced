//! `leopold persona replay`: re-validate a recorded journal (or a raw harness stream) against a
//! flow, streaming, so memory stays flat whatever the journal's size: a raw stream one line at a
//! time, a journal in batches of lines (lines are capped at [`MAX_LINE`]) that threads judge side
//! by side and a merge puts back in input order (`Parallelism`). Everything that depends on the
//! lines before (the chain's links, `seq`, the totals) is done in the merge, in order: the
//! findings do not depend on the number of threads.
//!
//! A version 2 journal is hash-chained ([`crate::chain`]): replay recomputes every link and the
//! head, and checks the head against `--expect` and `run.json`'s `journal_hash`. A version 1
//! journal (written before the chain) is read as unchained: no tamper evidence, not a finding,
//! unless a head is expected.
//!
//! Exit codes ([`ReplaySummary::exit_code`]): 0 clean, 1 at least one violation, a broken chain
//! or a head other than the one expected, 2 unreadable input ([`ReplayError`]: missing file or
//! flow, no header, unknown version) or, when there is nothing of exit 1, malformed lines or `seq`
//! gaps (a journal with unreadable or missing lines cannot be called clean). A torn last line (a
//! crash mid-write) is reported and skipped and does not change the exit code.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use leopold_flows::{Flow, FlowError};
use serde::{Deserialize, Serialize};

use crate::action::{ActionKind, ActionView, Harness, Outcome, Verdict};
use crate::adapter::{Adapter, AdapterEvent};
use crate::chain::{JournalHash, LineHasher, GENESIS};
use crate::validate::Validator;
use crate::writer::{JournalHeader, JOURNAL_VERSION, UNCHAINED_JOURNAL_VERSION};

mod batches;
use batches::{Batch, BatchReader, Lines};

/// The longest line read; a longer one is reported as malformed and skipped.
pub const MAX_LINE: usize = 4 << 20;

/// What to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// A `journal.jsonl`, a run directory holding one, or (with `from`) a raw harness stream.
    pub input: PathBuf,
    /// The flow to check against; default: the run's `run.json` `flow_path`, else the journal
    /// header's `flow_path`. Required with `from`.
    pub flow: Option<PathBuf>,
    /// Read a raw harness stream of this harness instead of a journal.
    pub from: Option<Harness>,
    /// The head the journal must end on (`--expect`: the `journal_hash` saved when the run
    /// ended). Catches what the chain alone cannot: lines cut from the end, the last line edited.
    pub expect: Option<JournalHash>,
    /// Threads judging a journal's lines (`--threads`); default: one per CPU, at most
    /// [`MAX_WORKERS`]. The findings and their order are the same whatever the number.
    pub threads: Option<NonZeroUsize>,
}

/// The fields replay reads from a run directory's `run.json` (written by the supervisor; any
/// other field is ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RunInfo {
    /// The flow file the run used.
    #[serde(default)]
    pub flow_path: Option<PathBuf>,
    /// The flow's name.
    #[serde(default)]
    pub flow: Option<String>,
    /// The chain's head when the run ended (`end.journal_hash`; a top-level `journal_hash` is
    /// read too).
    #[serde(default)]
    pub journal_hash: Option<String>,
    /// The end of the run, when it ended.
    #[serde(default)]
    pub end: Option<RunEndInfo>,
}

/// The fields replay reads from `run.json`'s `end`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RunEndInfo {
    /// The chain's head when the run ended.
    #[serde(default)]
    pub journal_hash: Option<String>,
    /// The gateway record's chain head when the run ended ([`GATEWAY_RECORD`]).
    #[serde(default)]
    pub gateway_hash: Option<String>,
}

/// The gateway's record in a run directory, beside the journal: hash-chained from its first
/// line ([`crate::chain::check_lines`]). Replay checks it when it is there.
pub const GATEWAY_RECORD: &str = "gateway.jsonl";

impl RunInfo {
    /// The recorded head, wherever it is.
    pub fn recorded_head(&self) -> Option<&str> {
        self.end
            .as_ref()
            .and_then(|e| e.journal_hash.as_deref())
            .or(self.journal_hash.as_deref())
    }
}

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
    /// A line of the gateway's record ([`GATEWAY_RECORD`]) that does not link to the line
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

/// Replays `opts.input`, calling `on_event` for each finding in input order.
///
/// # Errors
///
/// [`ReplayError`] when the input cannot be read at all (exit code 2).
pub fn replay(
    opts: &ReplayOptions,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<ReplaySummary, ReplayError> {
    if let Some(harness) = opts.from {
        let Some(flow_path) = &opts.flow else {
            return Err(ReplayError::NoFlow {
                path: opts.input.clone(),
                why: "a raw harness stream records no flow".to_owned(),
            });
        };
        let flow = Flow::load(flow_path)?;
        let reader = open(&opts.input)?;
        let mut s = replay_stream(&flow, harness, reader, &opts.input, on_event)?;
        s.flow_path = flow_path.clone();
        if let Some(expected) = &opts.expect {
            check_head(&mut s, "--expect", &expected.to_string(), on_event);
        }
        return Ok(s);
    }

    let journal = if opts.input.is_dir() {
        opts.input.join("journal.jsonl")
    } else {
        opts.input.clone()
    };
    // `run.json` sits beside the journal in a run directory. With `--flow` it is only read for
    // the recorded head, and one that does not read is not an error.
    let run_json = journal.parent().map(|dir| dir.join("run.json"));
    let run_info = match (&opts.flow, &run_json) {
        (None, Some(p)) => read_run_info(p)?,
        (Some(_), Some(p)) => read_run_info(p).ok().flatten(),
        _ => None,
    };
    let mut reader = open(&journal)?;
    let (header, header_hash) = read_header(&mut reader, &journal)?;

    let flow_path = match (
        &opts.flow,
        run_info.as_ref().and_then(|r| r.flow_path.clone()),
    ) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => resolve_recorded(&p, &journal),
        (None, None) => resolve_recorded(&header.flow_path, &journal),
    };
    let flow = Flow::load(&flow_path)?;
    let par = Parallelism::new(opts.threads);
    let mut s = replay_lines(
        &flow,
        &header,
        header_hash,
        &mut reader,
        &journal,
        par,
        on_event,
    )?;
    s.flow_path = flow_path;
    if let Some(expected) = &opts.expect {
        check_head(&mut s, "--expect", &expected.to_string(), on_event);
    }
    if let Some(recorded) = run_info.as_ref().and_then(RunInfo::recorded_head) {
        check_head(&mut s, "run.json", recorded, on_event);
    }
    if let Some(dir) = journal.parent() {
        let recorded = run_info
            .as_ref()
            .and_then(|r| r.end.as_ref())
            .and_then(|e| e.gateway_hash.as_deref());
        check_gateway_record(&mut s, &dir.join(GATEWAY_RECORD), recorded, on_event)?;
    }
    Ok(s)
}

/// Checks the gateway record's chain, and its head against the one `run.json` recorded.
fn check_gateway_record(
    s: &mut ReplaySummary,
    path: &Path,
    recorded: Option<&str>,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<(), ReplayError> {
    let found = match File::open(path) {
        Ok(f) => {
            let check = crate::chain::check_lines(BufReader::with_capacity(256 << 10, f))
                .map_err(read_error(path))?;
            s.gateway_lines = check.lines;
            s.gateway_chain_breaks = check.breaks;
            s.gateway_hash = check.head.map(|h| h.to_string());
            if let Some((line, problem)) = check.first_break {
                on_event(ReplayEvent::GatewayChainBreak {
                    file: path.to_path_buf(),
                    line,
                    problem,
                });
            }
            if check.lines > 0 {
                disagreements(s, path, on_event)?;
            }
            check.head
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(read_error(path)(e)),
    };
    if let Some(expected) = recorded {
        let matches = match (&found, expected.parse::<JournalHash>()) {
            (Some(f), Ok(e)) => *f == e,
            _ => false,
        };
        if !matches {
            s.head_mismatches += 1;
            on_event(ReplayEvent::GatewayHeadMismatch {
                file: path.to_path_buf(),
                expected: expected.chars().take(80).collect(),
                found: found.map(|h| h.to_string()),
            });
        }
    }
    Ok(())
}

/// The disagreements the run wrote into the gateway's record, each a finding.
fn disagreements(
    s: &mut ReplaySummary,
    path: &Path,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<(), ReplayError> {
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow, default)]
        event: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        what: Option<Cow<'a, str>>,
    }
    let mut reader = open(path)?;
    let mut line = Vec::new();
    let mut n: u64 = 0;
    loop {
        line.clear();
        // A line too long to be one of the record's own is no disagreement line: skipped.
        let got = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(read_error(path))?;
        if got == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            let mut sink = Vec::new();
            reader
                .read_until(b'\n', &mut sink)
                .map_err(read_error(path))?;
        }
        n += 1;
        let Ok(l) = serde_json::from_slice::<Line<'_>>(&line) else {
            continue;
        };
        if l.event.as_deref() == Some("disagreement") {
            s.gateway_disagreements += 1;
            on_event(ReplayEvent::GatewayDisagreement {
                file: path.to_path_buf(),
                line: n,
                // Someone else's text, if the record was rewritten: shown, but bounded.
                what: l
                    .what
                    .as_deref()
                    .unwrap_or("(no description)")
                    .chars()
                    .take(400)
                    .collect(),
            });
        }
    }
}

fn open(path: &Path) -> Result<BufReader<File>, ReplayError> {
    File::open(path)
        .map(|f| BufReader::with_capacity(256 << 10, f))
        .map_err(read_error(path))
}

/// Wraps an I/O error on `path`.
fn read_error(path: &Path) -> impl Fn(io::Error) -> ReplayError + '_ {
    |source| ReplayError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn read_run_info(path: &Path) -> Result<Option<RunInfo>, ReplayError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ReplayError::RunInfo {
                path: path.to_path_buf(),
                error: e.to_string(),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(read_error(path)(source)),
    }
}

/// A recorded flow path: as is if it exists (absolute, or relative to the current directory),
/// else relative to the journal's directory, else to the project root the journal lives in
/// (`<root>/.leopold/persona/runs/<id>/journal.jsonl`).
fn resolve_recorded(recorded: &Path, journal: &Path) -> PathBuf {
    if recorded.is_absolute() || recorded.exists() {
        return recorded.to_path_buf();
    }
    let Ok(journal) = journal.canonicalize() else {
        return recorded.to_path_buf();
    };
    [1, 5]
        .iter()
        .filter_map(|&n| journal.ancestors().nth(n))
        .map(|base| base.join(recorded))
        .find(|p| p.exists())
        .unwrap_or_else(|| recorded.to_path_buf())
}

/// Compares the journal's head with one recorded elsewhere; a difference is a finding.
fn check_head(
    s: &mut ReplaySummary,
    from: &str,
    expected: &str,
    on_event: &mut dyn FnMut(ReplayEvent),
) {
    let matches = match &s.journal_hash {
        Some(found) => expected
            .parse::<JournalHash>()
            .is_ok_and(|e| e.matches_hex(found)),
        None => false,
    };
    if !matches {
        s.head_mismatches += 1;
        on_event(ReplayEvent::HeadMismatch {
            from: from.to_owned(),
            // Someone else's text (run.json may have been rewritten): shown, but bounded.
            expected: expected.chars().take(80).collect(),
            found: s.journal_hash.clone(),
        });
    }
}

/// Reads line 1: the header, and that line's hash (the chain's first link). The reader is left
/// at line 2.
fn read_header<R: BufRead>(
    reader: &mut R,
    path: &Path,
) -> Result<(JournalHeader, JournalHash), ReplayError> {
    let no_header = |problem: &str| ReplayError::NoHeader {
        path: path.to_path_buf(),
        problem: problem.to_owned(),
    };
    let mut lines = LineReader::new(reader);
    let (line, hash) = match lines.next_line().map_err(read_error(path))? {
        None => return Err(no_header("is missing (the file is empty)")),
        Some((_, Line::TooLong)) => return Err(no_header("is too long to be a header")),
        Some((_, Line::Bytes { bytes, cr, .. })) => {
            // The chain hashes a line's `\r` too.
            let mut h = LineHasher::default();
            h.update(bytes);
            if cr {
                h.update(b"\r");
            }
            (bytes, h.finish_line())
        }
    };
    let v: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| no_header(&format!("is not JSON ({e})")))?;
    let Some(version) = v.get("leopold_journal") else {
        return Err(no_header("has no `leopold_journal` version field"));
    };
    let known = [UNCHAINED_JOURNAL_VERSION, JOURNAL_VERSION].map(u64::from);
    let Some(n) = version.as_u64().filter(|n| known.contains(n)) else {
        return Err(ReplayError::UnknownVersion {
            path: path.to_path_buf(),
            version: version.to_string(),
        });
    };
    let header: JournalHeader = serde_json::from_value(v)
        .map_err(|e| no_header(&format!("is not a valid version {n} header ({e})")))?;
    Ok((header, hash))
}

/// Replays journal lines (after the header) from any reader.
fn replay_lines<R: Read>(
    flow: &Flow,
    header: &JournalHeader,
    header_hash: JournalHash,
    reader: &mut R,
    path: &Path,
    par: Parallelism,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<ReplaySummary, ReplayError> {
    let mut s = summary(flow, path);
    s.chained = header.leopold_journal != UNCHAINED_JOURNAL_VERSION;
    let chain = Chain {
        on: s.chained,
        last: header_hash,
        relabelled: false,
    };
    if s.chained
        && !header
            .prev
            .as_deref()
            .is_some_and(|p| GENESIS.matches_hex(p))
    {
        let problem = match header.prev {
            None => "line 1 (the header) carries no `prev`: it does not start a chain",
            Some(_) => "line 1 (the header) does not start a chain: its `prev` is not 64 zeros",
        };
        chain.broken(&mut s, 1, problem.to_owned(), on_event);
    }
    let mut merge = Merge {
        s,
        chain,
        // The `seq` the next action should carry; unknown after a skipped line (it may have held
        // one).
        expected_seq: Some(1),
        line_no: 1,
    };
    let judge = Judge {
        flow,
        // Nothing to check the hashes of a version 1 journal against: it costs what it always did.
        chained: merge.s.chained,
    };
    let mut batches = BatchReader::new(reader, par.batch_bytes, judge.chained);
    let workers = par.workers.get();
    if workers == 1 {
        // One thread: each batch is judged by the thread that read it.
        let mut validator = Validator::new(flow);
        while let Some(batch) = batches.next_batch().map_err(read_error(path))? {
            let judged = judge.batch(&mut validator, batch);
            if let Some(buf) = merge_judged(&judge, &mut validator, &mut merge, judged, on_event) {
                batches.reuse(buf);
            }
        }
    } else {
        run_workers(&judge, workers, &mut batches, &mut merge, on_event)
            .map_err(read_error(path))?;
    }
    let mut s = merge.s;
    s.lines = merge.line_no;
    if s.chained {
        s.journal_hash = Some(merge.chain.last.to_string());
    }
    Ok(s)
}

/// How replay spreads a journal over threads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parallelism {
    /// Threads judging lines (1: the reading thread judges them itself).
    pub workers: NonZeroUsize,
    /// Bytes read into a batch before it ends at its last whole line.
    pub batch_bytes: usize,
}

impl Parallelism {
    /// Enough that handing a batch over costs little per line (about 3,000 journal lines), few
    /// enough that the `2 x threads + 1` batches in flight stay a few MiB whatever the journal's
    /// size. A line longer than this grows its batch, up to [`MAX_LINE`].
    const BATCH_BYTES: usize = 1 << 20;

    fn new(threads: Option<NonZeroUsize>) -> Parallelism {
        let workers = threads
            .or_else(|| std::thread::available_parallelism().ok())
            .unwrap_or(NonZeroUsize::MIN)
            .min(NonZeroUsize::new(MAX_WORKERS).unwrap_or(NonZeroUsize::MIN));
        Parallelism {
            workers,
            batch_bytes: Self::BATCH_BYTES,
        }
    }
}

/// More threads than this only wait on the one reading the file.
pub const MAX_WORKERS: usize = 8;

/// Hands batches to `workers` threads and merges their judgements in the order the batches were
/// read. Whichever thread is free takes the next batch, so a thread that shares its core with the
/// reader, or runs on a slower one, takes fewer; the merge waits for each batch in turn. At most
/// two batches per thread are read and not yet merged, and their buffers come back to the
/// reader: memory stays flat.
fn run_workers<R: Read>(
    judge: &Judge<'_>,
    workers: usize,
    batches: &mut BatchReader<'_, R>,
    merge: &mut Merge,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> io::Result<()> {
    use std::collections::BTreeMap;
    use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
    use std::sync::{mpsc, Arc, Mutex, PoisonError};
    std::thread::scope(|scope| {
        let (to_workers, queue) = mpsc::sync_channel::<(u64, Batch)>(workers);
        // Only the workers hold the queue: were they all gone, the reader's send would fail
        // instead of waiting for them.
        let queue = Arc::new(Mutex::new(queue));
        let (to_merge, judged) = mpsc::channel::<(u64, std::thread::Result<Judgements>)>();
        for _ in 0..workers {
            let (queue, to_merge) = (Arc::clone(&queue), to_merge.clone());
            scope.spawn(move || {
                let mut validator = Validator::new(judge.flow);
                loop {
                    // Held only while waiting for a batch, never while judging one.
                    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    let Ok((n, batch)) = next else {
                        break; // the reader is done
                    };
                    // A panic goes to the merge, which raises it again: the batch is not lost
                    // with the thread, to be waited for forever.
                    let result =
                        catch_unwind(AssertUnwindSafe(|| judge.batch(&mut validator, batch)));
                    let panicked = result.is_err();
                    if to_merge.send((n, result)).is_err() || panicked {
                        break;
                    }
                }
            });
        }
        drop((queue, to_merge));
        // Batches judged ahead of the one the merge waits for, by number.
        let mut ahead = BTreeMap::new();
        // For what a worker left of a batch of very short lines ([`MAX_JUDGED`]).
        let mut validator = Validator::new(judge.flow);
        let (mut sent, mut merged) = (0u64, 0u64);
        // Waits for one judged batch and merges every batch that is next in order; `false` once
        // no worker is left to answer (one died outside a batch: the scope raises its panic).
        let mut take = |merged: &mut u64, batches: &mut BatchReader<'_, R>| {
            let Ok((n, result)) = judged.recv() else {
                return false;
            };
            match result {
                Ok(j) => ahead.insert(n, j),
                Err(panic) => resume_unwind(panic),
            };
            while let Some(j) = ahead.remove(merged) {
                if let Some(buf) = merge_judged(judge, &mut validator, merge, j, on_event) {
                    batches.reuse(buf);
                }
                *merged += 1;
            }
            true
        };
        let limit = 2 * workers as u64;
        let read = 'read: loop {
            while sent - merged >= limit {
                if !take(&mut merged, batches) {
                    break 'read Ok(());
                }
            }
            let batch = match batches.next_batch() {
                Ok(Some(b)) => b,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            if to_workers.send((sent, batch)).is_err() {
                break Ok(()); // every worker is gone: the scope raises the panic that ended them
            }
            sent += 1;
        };
        // Closing the queue ends the workers once it is empty; what was read before an error is
        // reported before it, as a sequential read would.
        drop(to_workers);
        while merged < sent && take(&mut merged, batches) {}
        read
    })
}

/// Merges a judged batch, then judges and merges here whatever of it its judge left
/// ([`MAX_JUDGED`]), so that no judgement holds more lines than that; gives back the batch's
/// buffer.
fn merge_judged(
    judge: &Judge<'_>,
    validator: &mut Validator<'_>,
    merge: &mut Merge,
    judged: Judgements,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Option<Vec<u8>> {
    let (lines, mut done) = merge.batch(judged, on_event)?;
    let bytes = lines.bytes();
    while done < bytes.len() {
        let (rest, used) = judge.lines(validator, &bytes[done..]);
        done += used;
        merge.batch(rest, on_event);
    }
    Some(lines.into_buffer())
}

/// What a worker needs to judge lines: the flow, and whether to hash them.
struct Judge<'f> {
    flow: &'f Flow,
    chained: bool,
}

/// A batch judged: its lines in order, which [`Merge`] numbers and turns into findings.
struct Judgements {
    lines: Vec<Judged>,
    /// The first line's `prev`, which only the merge can hold against the line before it.
    first_prev: Link,
    /// The hash of the last line judged (when chained; else [`GENESIS`]).
    last: JournalHash,
    /// The batch's lines as read, and how many of their bytes were judged: at most
    /// [`MAX_JUDGED`] lines are, and the merge judges the rest ([`merge_judged`]). Handed back
    /// to the reader once merged.
    read: Option<(Lines, usize)>,
}

/// The most lines one judgement holds. A batch is a MiB of lines, usually about 3,000 of them;
/// a MiB of empty or one-character lines (a damaged or hostile journal) would be a million
/// judgements in memory at once, times the batches in flight.
const MAX_JUDGED: usize = 16 << 10;

/// One line judged.
struct Judged {
    what: What,
    /// Its `prev` against the line before it (when chained).
    linked: Linked,
}

enum What {
    TooLong,
    Blank,
    Torn,
    Malformed {
        error: String,
    },
    Action {
        seq: u64,
        denied: bool,
        changed: Option<Box<(Verdict, Verdict)>>,
        violation: Option<Box<Violation>>,
    },
}

/// A line's `prev`, as found.
enum Link {
    Absent,
    /// 64 bytes, as the writer writes a hash.
    Hex([u8; 64]),
    /// Anything else: links to nothing.
    Other,
}

impl Link {
    fn of(prev: Option<&str>) -> Link {
        match prev {
            None => Link::Absent,
            Some(p) => match <[u8; 64]>::try_from(p.as_bytes()) {
                Ok(hex) => Link::Hex(hex),
                Err(_) => Link::Other,
            },
        }
    }

    /// This link held against the hash of the line before.
    fn against(&self, before: &JournalHash) -> Linked {
        match self {
            Link::Absent => Linked::Absent,
            // The hash written out, not the digits read in: decoding them is a branch a digit
            // ([`JournalHash::matches_hex`]).
            Link::Hex(hex) if *hex == before.hex() => Linked::Follows,
            Link::Hex(_) | Link::Other => Linked::Breaks,
        }
    }
}

/// A line's `prev` held against the line before it.
#[derive(Clone, Copy)]
enum Linked {
    Absent,
    Follows,
    Breaks,
    /// A batch's first line: the merge holds [`Judgements::first_prev`] against the line before.
    First,
}

impl Judge<'_> {
    /// Judges a batch's lines in order, each line's link against the line before it but the
    /// first's.
    fn batch(&self, validator: &mut Validator<'_>, batch: Batch) -> Judgements {
        match batch {
            Batch::TooLong(hash) => Judgements {
                lines: vec![Judged {
                    what: What::TooLong,
                    linked: Linked::First,
                }],
                first_prev: Link::Absent,
                last: hash.unwrap_or(GENESIS),
                read: None,
            },
            Batch::Lines(lines) => {
                let (mut out, used) = self.lines(validator, lines.bytes());
                out.read = Some((lines, used));
                out
            }
        }
    }

    /// Judges the first [`MAX_JUDGED`] lines of `bytes` (whole lines, as a batch holds them),
    /// each line's link against the line before it but the first's; and how many bytes they
    /// took.
    fn lines(&self, validator: &mut Validator<'_>, bytes: &[u8]) -> (Judgements, usize) {
        let mut out = Judgements {
            // About as many lines as a journal's usual 200 to 450 bytes make.
            lines: Vec::with_capacity((bytes.len() / 256 + 1).min(MAX_JUDGED)),
            first_prev: Link::Absent,
            last: GENESIS,
            read: None,
        };
        let mut used = 0;
        for (i, (whole, terminated)) in batches::lines(bytes).take(MAX_JUDGED).enumerate() {
            used += whole.len() + usize::from(terminated);
            let (what, link) = self.line_read(validator, whole, terminated);
            let before = std::mem::replace(&mut out.last, self.hash(whole));
            let linked = if i == 0 {
                out.first_prev = link;
                Linked::First
            } else {
                link.against(&before)
            };
            out.lines.push(Judged { what, linked });
        }
        (out, used)
    }

    /// A line's hash, when the chain needs it.
    fn hash(&self, whole: &[u8]) -> JournalHash {
        if self.chained {
            JournalHash::of_line(whole)
        } else {
            GENESIS
        }
    }

    /// One line as read (its `\r` kept, as the chain hashes it; `terminated`: whether a `\n`
    /// ended it), and its `prev`.
    fn line_read(
        &self,
        validator: &mut Validator<'_>,
        whole: &[u8],
        terminated: bool,
    ) -> (What, Link) {
        if whole.len() > MAX_LINE {
            return (What::TooLong, Link::Absent);
        }
        let bytes = whole.strip_suffix(b"\r").unwrap_or(whole);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return (What::Blank, Link::Absent);
        }
        let action = match parse_view(bytes) {
            Ok(a) => a,
            Err(_) if !terminated => return (What::Torn, Link::Absent),
            Err(e) => {
                // Not an action, but maybe a link all the same (a second header).
                let link = if self.chained {
                    let link = serde_json::from_slice::<PrevOnly<'_>>(bytes).ok();
                    Link::of(link.as_ref().and_then(|l| l.prev.as_deref()))
                } else {
                    Link::Absent
                };
                let error = e.to_string();
                return (What::Malformed { error }, link);
            }
        };
        let now = validator.validate(&action);
        let changed = match &action.verdict {
            Some(recorded) if **recorded != now => {
                Some(Box::new((recorded.as_ref().clone(), now.clone())))
            }
            _ => None,
        };
        let what = What::Action {
            seq: action.seq,
            denied: action.outcome == Outcome::Denied,
            changed,
            violation: Violation::of(&action, now).map(Box::new),
        };
        (what, Link::of(action.prev.as_deref()))
    }
}

/// Parses a journal line. A line that is UTF-8 throughout (every line the writer writes) is
/// checked once, whole, and parsed as text: the parser then skips checking each string it
/// borrows. Any other line goes to the byte parser, which accepts and refuses exactly what it
/// always did.
fn parse_view(bytes: &[u8]) -> serde_json::Result<ActionView<'_>> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// A violation, before it is known on which line (a worker judges lines it cannot number).
struct Violation {
    seq: u64,
    tool: String,
    kind: ActionKind,
    outcome: Outcome,
    rule: String,
    detail: Option<String>,
}

impl Violation {
    /// The violation a verdict makes, if any.
    fn of(action: &ActionView<'_>, now: Verdict) -> Option<Violation> {
        match now {
            Verdict::Violation { rule, detail } => Some(Violation {
                seq: action.seq,
                tool: action.tool.as_ref().to_owned(),
                kind: action.kind,
                outcome: action.outcome,
                rule,
                detail,
            }),
            Verdict::Ok => None,
        }
    }

    fn at(self, line: u64) -> ReplayEvent {
        ReplayEvent::Violation {
            line,
            seq: self.seq,
            tool: self.tool,
            kind: self.kind,
            outcome: self.outcome,
            rule: self.rule,
            detail: self.detail,
        }
    }
}

/// Replay's state across lines, in input order: the chain, `seq`, the totals.
struct Merge {
    s: ReplaySummary,
    chain: Chain,
    expected_seq: Option<u64>,
    /// The number of the last line merged (1: the header).
    line_no: u64,
}

impl Merge {
    /// The next judgement, in order; gives back the lines it was made of, and how far into them
    /// it went.
    fn batch(
        &mut self,
        judged: Judgements,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) -> Option<(Lines, usize)> {
        let first = judged.first_prev.against(&self.chain.last);
        for j in judged.lines {
            let linked = match j.linked {
                Linked::First => first,
                other => other,
            };
            self.line(j.what, linked, on_event);
        }
        self.chain.last = judged.last;
        judged.read
    }

    /// The next line.
    fn line(&mut self, what: What, linked: Linked, on_event: &mut dyn FnMut(ReplayEvent)) {
        self.line_no += 1;
        let line_no = self.line_no;
        let s = &mut self.s;
        // Every line is a link, whatever it holds: a blank or malformed line breaks the chain at
        // the line after it.
        match what {
            What::TooLong => {
                self.expected_seq = None;
                report_too_long(s, line_no, on_event);
            }
            What::Blank => {
                // The writer never writes one: in a chained journal it is a line that links to
                // nothing.
                if self.chain.on {
                    self.chain.check(s, line_no, linked, on_event);
                }
            }
            What::Torn => {
                s.torn_last_line = true;
                on_event(ReplayEvent::Torn { line: line_no });
            }
            What::Malformed { error } => {
                self.expected_seq = None;
                report_malformed(s, line_no, &error, on_event);
                if self.chain.on {
                    self.chain.check(s, line_no, linked, on_event);
                }
            }
            What::Action {
                seq,
                denied,
                changed,
                violation,
            } => {
                self.chain.check(s, line_no, linked, on_event);
                if let Some(expected) = self.expected_seq.filter(|e| *e != seq) {
                    s.seq_gaps += 1;
                    on_event(ReplayEvent::SeqGap {
                        line: line_no,
                        expected,
                        found: seq,
                    });
                }
                self.expected_seq = seq.checked_add(1);
                if let Some(change) = changed {
                    let (recorded, now) = *change;
                    s.verdicts_changed += 1;
                    on_event(ReplayEvent::VerdictChanged {
                        line: line_no,
                        seq,
                        recorded,
                        now,
                    });
                }
                tally(s, denied, violation.map(|v| v.at(line_no)), on_event);
            }
        }
    }
}

/// Any JSON object's chain link.
#[derive(Deserialize)]
struct PrevOnly<'a> {
    #[serde(default, borrow)]
    prev: Option<std::borrow::Cow<'a, str>>,
}

/// The chain as replay walks it.
struct Chain {
    /// Whether the journal is chained (version 2).
    on: bool,
    /// The hash of the last line read.
    last: JournalHash,
    /// Whether a version 1 header over chained lines was reported (once is enough).
    relabelled: bool,
}

impl Chain {
    /// Checks one line's link to the line before.
    fn check(
        &mut self,
        s: &mut ReplaySummary,
        line: u64,
        linked: Linked,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) {
        let before = line - 1;
        let present = !matches!(linked, Linked::Absent);
        let problem = match (self.on, present) {
            (true, true) if matches!(linked, Linked::Follows) => return,
            (false, false) => return,
            (true, true) => format!("line {line} does not follow line {before}"),
            (true, false) => {
                format!("line {line} carries no `prev`: it does not follow line {before}")
            }
            // A version 1 header over chained lines: the header was rewritten to the version
            // before the chain, which turns the chain's check off. Said once.
            (false, true) if self.relabelled => return,
            (false, true) => {
                self.relabelled = true;
                format!("line {line} carries a hash-chain `prev`, but line 1 says version 1 (before the chain): the header was changed")
            }
        };
        self.broken(s, line, problem, on_event);
    }

    fn broken(
        &self,
        s: &mut ReplaySummary,
        line: u64,
        problem: String,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) {
        s.chain_breaks += 1;
        s.chain_broken_at.get_or_insert(line);
        on_event(ReplayEvent::ChainBreak { line, problem });
    }
}

fn summary(flow: &Flow, path: &Path) -> ReplaySummary {
    ReplaySummary {
        flow: flow.name.clone(),
        flow_path: flow.source.clone(),
        input: path.to_path_buf(),
        ..ReplaySummary::default()
    }
}

/// Counts one judged action and reports its violation, if any.
fn tally(
    s: &mut ReplaySummary,
    denied: bool,
    violation: Option<ReplayEvent>,
    on_event: &mut dyn FnMut(ReplayEvent),
) {
    s.actions += 1;
    if denied {
        s.denied += 1;
    }
    if let Some(ev) = violation {
        s.violations += 1;
        on_event(ev);
    }
}

/// Replays a journal (header first) from any reader: what [`replay`] does once the flow is known.
///
/// # Errors
///
/// [`ReplayError`] when the header is missing or of an unknown version, or on I/O errors.
pub fn replay_journal<R: BufRead>(
    flow: &Flow,
    mut reader: R,
    path: &Path,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<ReplaySummary, ReplayError> {
    let (header, hash) = read_header(&mut reader, path)?;
    replay_lines(
        flow,
        &header,
        hash,
        &mut reader,
        path,
        Parallelism::new(None),
        on_event,
    )
}

/// Replays a raw harness stream through its adapter, validating each action as it completes.
///
/// # Errors
///
/// [`ReplayError::Read`] on I/O errors.
pub fn replay_stream<R: BufRead>(
    flow: &Flow,
    harness: Harness,
    mut reader: R,
    path: &Path,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<ReplaySummary, ReplayError> {
    let mut s = summary(flow, path);
    let mut validator = Validator::new(flow);
    let mut adapter = Adapter::new(harness);
    let mut lines = LineReader::new(&mut reader);
    while let Some((line_no, line)) = lines.next_line().map_err(read_error(path))? {
        let events = match line {
            Line::TooLong => {
                report_too_long(&mut s, line_no, on_event);
                continue;
            }
            Line::Bytes {
                bytes, terminated, ..
            } => {
                let text = String::from_utf8_lossy(bytes);
                if !terminated && serde_json::from_str::<serde_json::Value>(&text).is_err() {
                    s.torn_last_line = true;
                    on_event(ReplayEvent::Torn { line: line_no });
                    continue;
                }
                adapter.push_line(line_no, &text)
            }
        };
        handle_adapter_events(&mut s, &mut validator, events, line_no, on_event);
    }
    let rest = adapter.finish();
    handle_adapter_events(&mut s, &mut validator, rest, lines.line_no, on_event);
    s.lines = lines.line_no;
    s.unknown_types = adapter.stats().unknown_types.clone();
    Ok(s)
}

fn handle_adapter_events(
    s: &mut ReplaySummary,
    validator: &mut Validator<'_>,
    events: Vec<AdapterEvent>,
    line_no: u64,
    on_event: &mut dyn FnMut(ReplayEvent),
) {
    for ev in events {
        match ev {
            AdapterEvent::Action(a) => {
                let a = a.view();
                let now = validator.validate(&a);
                let violation = Violation::of(&a, now).map(|v| v.at(line_no));
                tally(s, a.outcome == Outcome::Denied, violation, on_event);
            }
            AdapterEvent::Malformed { line_no, error } => {
                report_malformed(s, line_no, &error, on_event);
            }
            AdapterEvent::ToolResult { .. } | AdapterEvent::Answer { .. } => {}
        }
    }
}

/// Counts a line over [`MAX_LINE`] as malformed and reports it.
fn report_too_long(s: &mut ReplaySummary, line: u64, on_event: &mut dyn FnMut(ReplayEvent)) {
    let error = format!("line longer than {MAX_LINE} bytes");
    report_malformed(s, line, &error, on_event);
}

/// Counts a malformed line and reports it, URLs redacted from the parser's message.
fn report_malformed(
    s: &mut ReplaySummary,
    line: u64,
    error: &str,
    on_event: &mut dyn FnMut(ReplayEvent),
) {
    s.malformed += 1;
    on_event(ReplayEvent::Malformed {
        line,
        error: redact_urls(error),
    });
}

/// Parser messages may quote a value from the line (`unknown variant \`…\``); a URL there could
/// carry a token, so any word holding `://` is replaced.
fn redact_urls(msg: &str) -> String {
    if !msg.contains("://") {
        return msg.to_owned();
    }
    msg.split(' ')
        .map(|w| {
            if w.contains("://") {
                "<url redacted>"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

enum Line<'a> {
    /// A line without its `\n` or `\r` (`cr`: whether it ended in one, which the chain hashes).
    Bytes {
        bytes: &'a [u8],
        terminated: bool,
        cr: bool,
    },
    TooLong,
}

/// Reads lines into one reused buffer, never holding more than [`MAX_LINE`] bytes of a line:
/// a journal's header, a raw harness stream.
struct LineReader<'r, R> {
    reader: &'r mut R,
    buf: Vec<u8>,
    line_no: u64,
}

impl<'r, R: BufRead> LineReader<'r, R> {
    fn new(reader: &'r mut R) -> Self {
        LineReader {
            reader,
            buf: Vec::with_capacity(4096),
            line_no: 0,
        }
    }

    /// The next line with its 1-based number, or `None` at the end.
    fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        let terminated = loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break false;
            }
            any = true;
            let (part, found) = match memchr_newline(chunk) {
                Some(i) => (&chunk[..i], Some(i)),
                None => (chunk, None),
            };
            if !too_long {
                if self.buf.len() + part.len() > MAX_LINE {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            match found {
                Some(i) => {
                    self.reader.consume(i + 1);
                    break true;
                }
                None => {
                    let n = chunk.len();
                    self.reader.consume(n);
                }
            }
        };
        if !any {
            return Ok(None);
        }
        self.line_no += 1;
        if too_long {
            return Ok(Some((self.line_no, Line::TooLong)));
        }
        let cr = self.buf.last() == Some(&b'\r');
        if cr {
            self.buf.pop();
        }
        Ok(Some((
            self.line_no,
            Line::Bytes {
                bytes: &self.buf,
                terminated,
                cr,
            },
        )))
    }
}

fn memchr_newline(s: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_messages_lose_their_urls() {
        assert_eq!(
            redact_urls("unknown variant `https://a.example/?token=s`, expected one of"),
            "unknown variant <url redacted> expected one of"
        );
        assert_eq!(redact_urls("expected value"), "expected value");
    }

    fn golden(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(name)
    }

    /// The golden journals' action lines, chained under a version 2 header (or left unchained).
    fn journal_lines(chained: bool) -> Vec<Vec<u8>> {
        let mut lines: Vec<Vec<u8>> = ["violations.jsonl", "clean.jsonl", "seq_gap.jsonl"]
            .iter()
            .flat_map(|f| {
                let text = std::fs::read_to_string(golden(f)).unwrap();
                text.lines()
                    .skip(1)
                    .map(|l| l.as_bytes().to_vec())
                    .collect::<Vec<_>>()
            })
            .collect();
        let header = if chained {
            r#"{"leopold_journal":2,"run_id":"t","flow":"checkout","flow_path":"flow.md","harness":"claude","started_at":"2026-11-30T10:00:00.000Z"}"#
        } else {
            r#"{"leopold_journal":1,"run_id":"t","flow":"checkout","flow_path":"flow.md","harness":"claude","started_at":"2026-11-30T10:00:00.000Z"}"#
        };
        lines.insert(0, header.as_bytes().to_vec());
        if chained {
            let mut prev = GENESIS;
            for l in &mut lines {
                prev = crate::chain::link(l, &prev).unwrap();
            }
        }
        lines
    }

    fn replay_with(text: &[u8], par: Parallelism) -> (ReplaySummary, Vec<ReplayEvent>) {
        let (s, events) = replay_from(&mut std::io::Cursor::new(text), par);
        (s.unwrap(), events)
    }

    /// Gives `data` at most `most` bytes a read, as a pipe or a slow disk may, and fails once
    /// it has given `ok` bytes.
    struct Reads<'a> {
        data: &'a [u8],
        most: usize,
        ok: usize,
    }

    impl io::Read for Reads<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.ok == 0 {
                return Err(io::Error::other("disk gone"));
            }
            let n = buf.len().min(self.most).min(self.ok).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            self.ok -= n;
            Ok(n)
        }
    }

    /// Replays what `reader` yields (the golden flow, the header first): the outcome, and every
    /// event reported on the way.
    fn replay_from<R: BufRead>(
        reader: &mut R,
        par: Parallelism,
    ) -> (Result<ReplaySummary, ReplayError>, Vec<ReplayEvent>) {
        let flow = Flow::load(&golden("flow.md")).unwrap();
        let path = Path::new("j");
        let (header, hash) = read_header(reader, path).unwrap();
        let mut events = vec![];
        let r = replay_lines(&flow, &header, hash, reader, path, par, &mut |e| {
            events.push(e)
        });
        (r, events)
    }

    fn par(workers: usize, batch_bytes: usize) -> Parallelism {
        Parallelism {
            workers: NonZeroUsize::new(workers).unwrap(),
            batch_bytes,
        }
    }

    /// One thread, the golden journals in one batch.
    const WHOLE: Parallelism = Parallelism {
        workers: NonZeroUsize::MIN,
        batch_bytes: Parallelism::BATCH_BYTES,
    };

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

        /// Whatever was done to a journal, and however its lines are split over threads and
        /// batches, replay finds the same things in the same order as one thread reading it
        /// whole.
        #[test]
        fn findings_do_not_depend_on_threads_or_batches(
            chained in proptest::bool::ANY,
            edits in proptest::collection::vec((0u8..7, 1usize..64), 0..6),
            workers in 2usize..5,
            // Bytes: a batch ends within the first line after them (a golden line is 200 to
            // 450 bytes long), so batches of one line up to a few.
            batch in 1usize..1200,
            torn in proptest::bool::ANY,
            trickle in 1usize..400,
        ) {
            let mut lines = journal_lines(chained);
            for (op, at) in edits {
                let i = 1 + at % (lines.len() - 1).max(1);
                if i >= lines.len() {
                    continue;
                }
                match op {
                    0 => { lines.remove(i); }
                    1 => { let l = lines[i].clone(); lines.insert(i, l); }
                    2 if i + 1 < lines.len() => lines.swap(i, i + 1),
                    3 => lines[i] = b"{\"seq\":".to_vec(),
                    4 => lines.insert(i, b"  ".to_vec()),
                    5 => lines[i].push(b'\r'),
                    _ => { let n = lines[i].len(); lines[i][n / 2] = b'x'; }
                }
            }
            let mut text = lines.join(&b'\n');
            if torn {
                text.truncate(text.len() - 7);
            } else {
                text.push(b'\n');
            }
            let whole = replay_with(&text, WHOLE);
            proptest::prop_assert_eq!(&whole, &replay_with(&text, par(1, batch)));
            proptest::prop_assert_eq!(&whole, &replay_with(&text, par(workers, batch)));
            // Reads that stop anywhere, a line's middle included, read the same lines.
            let short = Reads {
                data: &text,
                most: trickle,
                ok: usize::MAX,
            };
            let mut short = BufReader::with_capacity(16, short);
            let (s, events) = replay_from(&mut short, par(workers, batch));
            proptest::prop_assert_eq!(&whole, &(s.unwrap(), events));
        }
    }

    #[test]
    fn what_was_read_before_an_io_error_is_still_reported() {
        let lines = journal_lines(true);
        let mut text = lines.join(&b'\n');
        text.push(b'\n');
        // The error comes right after line 6: lines 2 to 6 hold violations to report.
        let cut = lines[..6].iter().map(|l| l.len() + 1).sum::<usize>();
        let (_, expected) = replay_with(&text[..cut], WHOLE);
        assert!(
            expected
                .iter()
                .any(|e| matches!(e, ReplayEvent::Violation { .. })),
            "{expected:?}"
        );
        // The error right after line 6's `\n`, and in the middle of line 7: the line it cuts is
        // neither judged nor taken for a torn last line.
        for ok in [cut, cut + lines[6].len() / 2] {
            for p in [WHOLE, par(1, 2), par(3, 2)] {
                let fails = Reads {
                    data: &text,
                    most: usize::MAX,
                    ok,
                };
                let mut reader = BufReader::with_capacity(64, fails);
                let (r, events) = replay_from(&mut reader, p);
                assert!(matches!(r, Err(ReplayError::Read { .. })), "{ok} {p:?}");
                assert_eq!(events, expected, "{ok} {p:?}");
            }
        }
    }

    #[test]
    fn a_chain_over_crlf_lines_hashes_each_line_with_its_cr() {
        // Leopold never writes a `\r`, but a journal that went through a Windows editor has one
        // at the end of every line; the chain is the hash of the bytes, `\r` included.
        let mut lines = journal_lines(false);
        let mut prev = GENESIS;
        for l in &mut lines {
            if l.starts_with(br#"{"leopold_journal":1"#) {
                l.splice(..20, br#"{"leopold_journal":2"#.iter().copied());
            }
            crate::chain::link(l, &prev).unwrap();
            l.push(b'\r');
            prev = JournalHash::of_line(l);
        }
        let mut text = lines.join(&b'\n');
        text.push(b'\n');
        for p in [WHOLE, par(1, 300), par(3, 300)] {
            let (s, _) = replay_with(&text, p);
            assert!(s.chained, "{p:?}");
            assert_eq!((s.chain_breaks, s.malformed), (0, 0), "{p:?}");
            assert_eq!(s.journal_hash, Some(prev.to_string()), "{p:?}");
        }
        // The same lines hashed without their `\r`: every link breaks.
        let without_cr: Vec<u8> = text.iter().copied().filter(|&b| b != b'\r').collect();
        let (s, _) = replay_with(&without_cr, WHOLE);
        assert_eq!(s.chain_breaks, (lines.len() - 1) as u64);
    }

    #[test]
    fn a_batch_of_very_short_lines_is_judged_a_bounded_number_of_lines_at_a_time() {
        // Between two stretches of actions, more one-character and empty lines than one
        // judgement holds: the findings are those of one thread reading it whole, and no
        // judgement holds more than MAX_JUDGED lines.
        let lines = journal_lines(true);
        let mut text = lines[..8].join(&b'\n');
        text.push(b'\n');
        for i in 0..(MAX_JUDGED + MAX_JUDGED / 2) {
            text.extend_from_slice(if i % 3 == 0 { b"x\n" } else { b"\n" });
        }
        text.extend_from_slice(&lines[8..].join(&b'\n'));
        text.push(b'\n');
        let (whole, whole_events) = replay_with(&text, par(1, 64));
        assert_eq!(
            whole.malformed,
            (MAX_JUDGED as u64 + MAX_JUDGED as u64 / 2).div_ceil(3)
        );
        assert!(whole.violations > 0);
        for p in [WHOLE, par(2, Parallelism::BATCH_BYTES), par(3, 4096)] {
            assert_eq!(
                replay_with(&text, p),
                (whole.clone(), whole_events.clone()),
                "{p:?}"
            );
        }
        let flow = Flow::load(&golden("flow.md")).unwrap();
        let judge = Judge {
            flow: &flow,
            chained: true,
        };
        let mut validator = Validator::new(&flow);
        let short = b"\n".repeat(MAX_JUDGED + 5);
        let (judged, used) = judge.lines(&mut validator, &short);
        assert_eq!((judged.lines.len(), used), (MAX_JUDGED, MAX_JUDGED));
    }

    #[test]
    fn a_line_over_the_cap_is_malformed_but_still_a_link() {
        let mut lines = journal_lines(true);
        // A line too long to keep, chained like any other: the next line links to its hash.
        let mut long = vec![b'x'; MAX_LINE + 10];
        let before = JournalHash::of_line(&lines[3]);
        let long_hash = JournalHash::of_line(&long);
        long.truncate(MAX_LINE + 10);
        lines.insert(4, long);
        let mut prev = long_hash;
        for l in &mut lines[5..] {
            let n = l.len();
            l.truncate(n - 75); // drop `,"prev":"…"}` and chain again
            l.push(b'}');
            prev = crate::chain::link(l, &prev).unwrap();
        }
        assert_eq!(JournalHash::of_line(&lines[3]), before);
        let mut text = lines.join(&b'\n');
        text.push(b'\n');
        for p in [WHOLE, par(3, 2)] {
            let (s, _) = replay_with(&text, p);
            assert_eq!((s.malformed, s.chain_breaks), (1, 0), "{p:?}");
            assert_eq!(s.journal_hash, Some(prev.to_string()));
        }
    }

    #[test]
    fn lines_longer_than_the_cap_are_skipped_whole() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\nnext\n");
        let mut r = std::io::Cursor::new(input);
        let mut lines = LineReader::new(&mut r);
        assert!(matches!(
            lines.next_line().unwrap(),
            Some((1, Line::TooLong))
        ));
        match lines.next_line().unwrap() {
            Some((
                2,
                Line::Bytes {
                    bytes, terminated, ..
                },
            )) => {
                assert_eq!(bytes, b"next");
                assert!(terminated);
            }
            _ => panic!("second line"),
        }
        assert!(lines.next_line().unwrap().is_none());
    }
}
