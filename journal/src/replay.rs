//! `leopold persona replay`: re-validate a recorded journal (or a raw harness stream) against a
//! flow, streaming: one line in memory at a time (lines are capped at [`MAX_LINE`]), so memory
//! stays flat whatever the journal's size.
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

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use leopold_flows::{Flow, FlowError};
use serde::{Deserialize, Serialize};

use crate::action::{ActionKind, ActionView, Harness, Outcome, Verdict};
use crate::adapter::{Adapter, AdapterEvent};
use crate::chain::{JournalHash, LineHasher, GENESIS};
use crate::validate::Validator;
use crate::writer::{JournalHeader, JOURNAL_VERSION, UNCHAINED_JOURNAL_VERSION};

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
}

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
    /// Heads checked (`--expect`, `run.json`) and found different.
    pub head_mismatches: u64,
    /// Raw streams: event types not known to the adapter, with counts.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unknown_types: std::collections::BTreeMap<String, u64>,
}

impl ReplaySummary {
    /// 0 clean, 1 violations or a record that was tampered with (a broken chain, a head other
    /// than the one expected), 2 malformed lines or `seq` gaps and nothing of exit 1.
    pub fn exit_code(&self) -> u8 {
        if self.violations > 0 || self.chain_breaks > 0 || self.head_mismatches > 0 {
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
    let mut lines = LineReader::new(&mut reader, true);
    let (header, header_hash) = read_header(&mut lines, &journal)?;

    let flow_path = match (
        &opts.flow,
        run_info.as_ref().and_then(|r| r.flow_path.clone()),
    ) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => resolve_recorded(&p, &journal),
        (None, None) => resolve_recorded(&header.flow_path, &journal),
    };
    let flow = Flow::load(&flow_path)?;
    let mut s = replay_lines(&flow, &header, header_hash, &mut lines, &journal, on_event)?;
    s.flow_path = flow_path;
    if let Some(expected) = &opts.expect {
        check_head(&mut s, "--expect", &expected.to_string(), on_event);
    }
    if let Some(recorded) = run_info.as_ref().and_then(RunInfo::recorded_head) {
        check_head(&mut s, "run.json", recorded, on_event);
    }
    Ok(s)
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

/// Reads line 1: the header, and that line's hash (the chain's first link).
fn read_header<R: BufRead>(
    lines: &mut LineReader<'_, R>,
    path: &Path,
) -> Result<(JournalHeader, JournalHash), ReplayError> {
    let no_header = |problem: &str| ReplayError::NoHeader {
        path: path.to_path_buf(),
        problem: problem.to_owned(),
    };
    let (line, hash) = match lines.next_line().map_err(read_error(path))? {
        None => return Err(no_header("is missing (the file is empty)")),
        Some((_, Line::TooLong, _)) => return Err(no_header("is too long to be a header")),
        Some((_, Line::Bytes { bytes, .. }, hash)) => (bytes, hash.unwrap_or(GENESIS)),
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
fn replay_lines<R: BufRead>(
    flow: &Flow,
    header: &JournalHeader,
    header_hash: JournalHash,
    lines: &mut LineReader<'_, R>,
    path: &Path,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<ReplaySummary, ReplayError> {
    let mut s = summary(flow, path);
    s.chained = header.leopold_journal != UNCHAINED_JOURNAL_VERSION;
    if !s.chained {
        // Nothing to check the hashes against: a version 1 journal costs what it always did.
        lines.hasher = None;
    }
    let mut chain = Chain {
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
    let mut validator = Validator::new(flow);
    // The `seq` the next action should carry; unknown after a skipped line (it may have held one).
    let mut expected_seq = Some(1);
    while let Some((line_no, line, hash)) = lines.next_line().map_err(read_error(path))? {
        // Every line is a link, whatever it holds: a blank or malformed line breaks the chain at
        // the line after it.
        let prev = std::mem::replace(&mut chain.last, hash.unwrap_or(GENESIS));
        let (bytes, terminated) = match line {
            Line::TooLong => {
                expected_seq = None;
                report_too_long(&mut s, line_no, on_event);
                continue;
            }
            Line::Bytes { bytes, terminated } => (bytes, terminated),
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            // The writer never writes one: in a chained journal it is a line that links to
            // nothing.
            if chain.on {
                chain.check(&mut s, line_no, prev, None, on_event);
            }
            continue;
        }
        // Borrowed from the line: the journal's own rules, none of its allocations.
        let action: ActionView<'_> = match serde_json::from_slice(bytes) {
            Ok(a) => a,
            Err(_) if !terminated => {
                s.torn_last_line = true;
                on_event(ReplayEvent::Torn { line: line_no });
                continue;
            }
            Err(e) => {
                expected_seq = None;
                report_malformed(&mut s, line_no, &e.to_string(), on_event);
                if chain.on {
                    // Not an action, but maybe a link all the same (a second header).
                    let link = serde_json::from_slice::<Link<'_>>(bytes).ok();
                    let link = link.as_ref().and_then(|l| l.prev.as_deref());
                    chain.check(&mut s, line_no, prev, link, on_event);
                }
                continue;
            }
        };
        chain.check(&mut s, line_no, prev, action.prev.as_deref(), on_event);
        if let Some(expected) = expected_seq.filter(|e| *e != action.seq) {
            s.seq_gaps += 1;
            on_event(ReplayEvent::SeqGap {
                line: line_no,
                expected,
                found: action.seq,
            });
        }
        expected_seq = action.seq.checked_add(1);
        let now = validator.validate(&action);
        if let Some(recorded) = &action.verdict {
            if **recorded != now {
                s.verdicts_changed += 1;
                on_event(ReplayEvent::VerdictChanged {
                    line: line_no,
                    seq: action.seq,
                    recorded: recorded.as_ref().clone(),
                    now: now.clone(),
                });
            }
        }
        count(&mut s, &action, now, line_no, on_event);
    }
    s.lines = lines.line_no;
    if s.chained {
        s.journal_hash = Some(chain.last.to_string());
    }
    Ok(s)
}

/// Any JSON object's chain link.
#[derive(Deserialize)]
struct Link<'a> {
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
    /// Checks one action line's link to the line before (`prev`: that line's hash).
    fn check(
        &mut self,
        s: &mut ReplaySummary,
        line: u64,
        prev: JournalHash,
        link: Option<&str>,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) {
        let before = line - 1;
        let problem = match (self.on, link) {
            (true, Some(l)) if prev.matches_hex(l) => return,
            (false, None) => return,
            (true, Some(_)) => format!("line {line} does not follow line {before}"),
            (true, None) => {
                format!("line {line} carries no `prev`: it does not follow line {before}")
            }
            // A version 1 header over chained lines: the header was rewritten to the version
            // before the chain, which turns the chain's check off. Said once.
            (false, Some(_)) if self.relabelled => return,
            (false, Some(_)) => {
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

fn count(
    s: &mut ReplaySummary,
    action: &ActionView<'_>,
    now: Verdict,
    line: u64,
    on_event: &mut dyn FnMut(ReplayEvent),
) {
    s.actions += 1;
    if action.outcome == Outcome::Denied {
        s.denied += 1;
    }
    if let Verdict::Violation { rule, detail } = now {
        s.violations += 1;
        on_event(ReplayEvent::Violation {
            line,
            seq: action.seq,
            tool: action.tool.as_ref().to_owned(),
            kind: action.kind,
            outcome: action.outcome,
            rule,
            detail,
        });
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
    let mut lines = LineReader::new(&mut reader, true);
    let (header, hash) = read_header(&mut lines, path)?;
    replay_lines(flow, &header, hash, &mut lines, path, on_event)
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
    let mut lines = LineReader::new(&mut reader, false);
    while let Some((line_no, line, _)) = lines.next_line().map_err(read_error(path))? {
        let events = match line {
            Line::TooLong => {
                report_too_long(&mut s, line_no, on_event);
                continue;
            }
            Line::Bytes { bytes, terminated } => {
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
                count(s, &a, now, line_no, on_event);
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
    Bytes { bytes: &'a [u8], terminated: bool },
    TooLong,
}

/// Reads lines into one reused buffer, never holding more than [`MAX_LINE`] bytes of a line;
/// hashes each line whole (a too-long one too), as the chain defines it, when asked.
struct LineReader<'r, R> {
    reader: &'r mut R,
    buf: Vec<u8>,
    line_no: u64,
    hasher: Option<LineHasher>,
}

impl<'r, R: BufRead> LineReader<'r, R> {
    fn new(reader: &'r mut R, hash: bool) -> Self {
        LineReader {
            reader,
            buf: Vec::with_capacity(4096),
            line_no: 0,
            hasher: hash.then(LineHasher::default),
        }
    }

    /// The next line with its 1-based number and (when hashing) its hash, or `None` at the end.
    fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>, Option<JournalHash>)>> {
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
            if let Some(h) = &mut self.hasher {
                h.update(part);
            }
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
        let hash = self.hasher.as_mut().map(LineHasher::finish_line);
        if too_long {
            return Ok(Some((self.line_no, Line::TooLong, hash)));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some((
            self.line_no,
            Line::Bytes {
                bytes: &self.buf,
                terminated,
            },
            hash,
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

    #[test]
    fn lines_longer_than_the_cap_are_skipped_whole() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\nnext\n");
        let input_copy = input.clone();
        let mut r = std::io::Cursor::new(input);
        let mut lines = LineReader::new(&mut r, true);
        let long_hash = JournalHash::of_line(&input_copy[..MAX_LINE + 10]);
        assert!(matches!(
            lines.next_line().unwrap(),
            Some((1, Line::TooLong, Some(h))) if h == long_hash
        ));
        match lines.next_line().unwrap() {
            Some((2, Line::Bytes { bytes, terminated }, h)) => {
                assert_eq!(bytes, b"next");
                assert!(terminated);
                assert_eq!(h, Some(JournalHash::of_line(b"next")));
            }
            _ => panic!("second line"),
        }
        assert!(lines.next_line().unwrap().is_none());
    }
}
