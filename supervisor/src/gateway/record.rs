//! The gateway's record, `gateway.jsonl`: apart from the serving because every path writes it
//! (calls, answers, refusals, the proxy's refused requests, the disagreements at the end) and its
//! limit and seal hold for all of them.

use leopold_journal::{ChainedFile, JournalHash};
use serde_json::{json, Value};

use crate::verdict::{Finish, Reported, Seen, MAX_REPORTED};

/// `gateway.jsonl`: one line per call, one per answer, and at the end one per disagreement with
/// the harness's stream ([`Gateway::record_disagreements`](super::Gateway::record_disagreements)). Written as the journal is, apart from
/// it ([`leopold_journal::ChainedFile`]: one `write` per line, `O_APPEND`, hash-chained): each
/// line's last key, `prev`, is the SHA-256 of the line before (64 zeros for line 1), and the run
/// records the head (`end.gateway_hash`).
pub(super) struct Record {
    pub(super) chain: ChainedFile,
    pub(super) seq: u64,
    /// Set once the run has taken the head ([`Gateway::seal`](super::Gateway::seal)): nothing is written after it.
    pub(super) sealed: bool,
    /// `--max-records`: the most bytes this run's gateway writes (the worker's calls make them).
    pub(super) max: Option<u64>,
    pub(super) written: u64,
    /// A line did not fit: nothing more is written.
    pub(super) over: bool,
    /// Tripped when a line would go past `max`; nothing more is written, and the run stops.
    pub(super) tripwire: crate::sandbox::limits::Tripwire,
}

impl Record {
    pub(super) fn new(file: std::fs::File, head: Option<JournalHash>) -> Record {
        Record {
            chain: ChainedFile::new(file, head),
            seq: 0,
            sealed: false,
            max: None,
            written: 0,
            over: false,
            tripwire: crate::sandbox::limits::Tripwire::default(),
        }
    }

    /// Whether the record is full: a call is then not forwarded, since it could not be recorded.
    pub(super) fn full(&self) -> bool {
        self.over
    }

    pub(super) fn line(&mut self, mut v: Value) {
        if self.sealed || self.over {
            return;
        }
        if let Some(o) = v.as_object_mut() {
            o.insert("ts".into(), json!(leopold_journal::now_rfc3339()));
        }
        let Ok(len) = self.chain.prepare(&v) else {
            return; // every line is built as an object
        };
        let len = len as u64;
        if let Some(max) = self.max.filter(|m| self.written + len > *m) {
            self.over = true;
            self.tripwire.trip(format!(
                "the gateway record reached --max-records {}",
                crate::sandbox::limits::show_size(max)
            ));
            return;
        }
        self.written += len;
        // A line that did not reach the file still moves the head: replay then finds the file
        // ending on another hash than the one recorded, which is what happened.
        if self.chain.write_prepared().is_err() {
            self.chain.skip_prepared();
        }
    }

    pub(super) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}

/// What a run's record (`gateway.jsonl`) says was seen for the verdict: the findings, `finish` and the
/// `[expect]` pages reached, for a run whose supervisor died before it could judge them itself
/// (`persona recover`). Lines that cannot be read are passed over: the record's hash chain is
/// `persona replay`'s to judge.
pub fn seen_in(path: &std::path::Path, flow: &leopold_flows::Flow) -> Seen {
    let mut seen = Seen::default();
    let Ok(file) = std::fs::File::open(path) else {
        return seen;
    };
    let mut lines =
        leopold_journal::lines::LineReader::new(std::io::BufReader::new(file), 256 * 1024);
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    while let Ok(Some(line)) = lines.next_line() {
        let Some(v) = line
            .bytes
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        else {
            continue;
        };
        let seq = v["seq"].as_u64().unwrap_or_default();
        match v["event"].as_str() {
            Some("finding") if seen.reported.len() < MAX_REPORTED => {
                seen.reported.push(Reported {
                    seq,
                    severity: text(&v, "severity"),
                    title: text(&v, "title"),
                    detail: text(&v, "detail"),
                    step: v["step"].as_u64(),
                    at: text(&v, "ts"),
                });
            }
            Some("finding") => seen.not_kept += 1,
            Some("finish") => {
                seen.finish = Some(Finish {
                    seq,
                    goal_reached: v["goal_reached"].as_bool().unwrap_or(false),
                    summary: text(&v, "summary"),
                });
            }
            Some("result") => {
                for r in v["reached"].as_array().into_iter().flatten() {
                    let i = flow
                        .expect
                        .reach
                        .iter()
                        .position(|e| Some(e.as_written().as_str()) == r.as_str());
                    if let Some(i) = i {
                        seen.met(flow, i, seq);
                    }
                }
            }
            _ => {}
        }
    }
    seen
}
