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

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use leopold_flows::Flow;
use serde::Deserialize;

use crate::action::Harness;
use crate::chain::{JournalHash, GENESIS};
use crate::validate::Validator;
use crate::writer::{JournalHeader, JOURNAL_VERSION, UNCHAINED_JOURNAL_VERSION};

mod batches;
mod findings;
mod gateway;
mod judge;
mod merge;
mod parallel;
mod stream;
#[cfg(test)]
mod tests;

use crate::lines::LineReader;
use batches::BatchReader;
pub use findings::{ReplayError, ReplayEvent, ReplaySummary};
use gateway::check_gateway_record;
use judge::Judge;
use merge::{Chain, Merge};
pub use parallel::MAX_WORKERS;
use parallel::{merge_judged, run_workers, Parallelism};
pub use stream::replay_stream;

/// The longest line read; a longer one is reported as malformed and skipped.
pub const MAX_LINE: usize = 4 << 20;

/// What to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// A `journal.jsonl`, a run directory holding one, or (with `from`) a raw harness stream.
    pub input: PathBuf,
    /// The flow to check against; default: the run directory's copy ([`FLOW`]), else the
    /// path the run recorded ([`flow_of_run`]). Required with `from`.
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
/// other field is ignored). Each may be absent: runs of every version are read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunInfo {
    /// The flow file the run used.
    pub flow_path: Option<PathBuf>,
    /// The flow's name.
    pub flow: Option<String>,
    /// The chain's head when the run ended (`end.journal_hash`; a top-level `journal_hash` is
    /// read too).
    pub journal_hash: Option<String>,
    /// The end of the run, when it ended.
    pub end: Option<RunEndInfo>,
}

/// The fields replay reads from `run.json`'s `end`, each of which may be absent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunEndInfo {
    /// The chain's head when the run ended.
    pub journal_hash: Option<String>,
    /// The gateway record's chain head when the run ended ([`GATEWAY_RECORD`]).
    pub gateway_hash: Option<String>,
}

/// The copy of the flow a run ran, in its run directory: what replay and `persona report` check
/// against when no `--flow` is given ([`flow_of_run`]).
pub const FLOW: &str = "flow.md";

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

    let flow_path = match &opts.flow {
        Some(p) => p.clone(),
        None => {
            let recorded = run_info.as_ref().and_then(|r| r.flow_path.clone());
            let recorded = recorded.unwrap_or_else(|| header.flow_path.clone());
            let dir = journal.parent().unwrap_or(Path::new("."));
            flow_of_run(dir, &recorded).map_err(|why| ReplayError::NoFlow {
                path: opts.input.clone(),
                why,
            })?
        }
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

/// The flow a run directory's journal is checked against when no `--flow` is given: the run
/// directory's own copy ([`FLOW`], written since runs carry one), else the path the run recorded
/// (an older run's, absolute), relative to the run directory or else to the project that holds
/// it (`<root>/.leopold/persona/runs/<id>/`). Never the current directory: a run directory
/// moved elsewhere must not be judged by whatever `flow.md` lies where replay is run.
///
/// # Errors
///
/// Why no flow was found, as the rest of a sentence (`no flow to check … against: {why}`).
pub fn flow_of_run(dir: &Path, recorded: &Path) -> Result<PathBuf, String> {
    let copy = dir.join(FLOW);
    if copy.is_file() {
        return Ok(copy);
    }
    let found = if recorded.is_absolute() {
        Some(recorded.to_path_buf()).filter(|p| p.exists())
    } else {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        [0, 4]
            .iter()
            .filter_map(|&n| dir.ancestors().nth(n))
            .map(|base| base.join(recorded))
            .find(|p| p.exists())
    };
    found.ok_or_else(|| {
        format!(
            "{} holds no copy of its flow ({FLOW}: a run made before run directories carried one) and the flow it recorded, {}, is not there",
            dir.display(),
            recorded.display()
        )
    })
}

/// Compares the journal's head with one recorded elsewhere; a difference is a finding.
fn check_head(
    s: &mut ReplaySummary,
    from: &str,
    expected: &str,
    on_event: &mut dyn FnMut(ReplayEvent),
) {
    let found = s.journal_hash.as_deref().and_then(|h| h.parse().ok());
    let from = from.to_owned();
    let mismatch = |expected, found| ReplayEvent::HeadMismatch {
        from,
        expected,
        found,
    };
    check_recorded(s, expected, found, mismatch, on_event);
}

/// Compares a head with one recorded elsewhere; a difference is counted, and `mismatch` makes
/// its finding of the head expected and the one found.
fn check_recorded(
    s: &mut ReplaySummary,
    expected: &str,
    found: Option<JournalHash>,
    mismatch: impl FnOnce(String, Option<String>) -> ReplayEvent,
    on_event: &mut dyn FnMut(ReplayEvent),
) {
    let matches = matches!((found, expected.parse::<JournalHash>()), (Some(f), Ok(e)) if f == e);
    if !matches {
        s.head_mismatches += 1;
        // Someone else's text (run.json may have been rewritten): shown, but bounded.
        let expected = expected.chars().take(80).collect();
        on_event(mismatch(expected, found.map(|h| h.to_string())));
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
    let mut lines = LineReader::new(reader, MAX_LINE);
    let (line, hash) = match lines.next_line().map_err(read_error(path))? {
        None => return Err(no_header("is missing (the file is empty)")),
        Some(line) => match (line.bytes, line.without_cr()) {
            // The chain hashes a line's `\r` too.
            (Some(whole), Some((bytes, _))) => (bytes, JournalHash::of_line(whole)),
            _ => return Err(no_header("is too long to be a header")),
        },
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
