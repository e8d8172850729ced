//! What the supervisor sees of the worker: stream lines in, journaled actions and violations out.
//!
//! [`Observer`] puts the journal crate's pieces together: the harness's stream adapter, live
//! validation, the journal writer and the guard's own denials (Codex leaves no trace of them in its
//! stream). The ref map the guard judges clicks by is the gateway's to keep, from the answers
//! themselves, before the worker sees them: the adapter here hands back no tool result.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use leopold_flows::Flow;
use leopold_journal::{
    guard_denials, validate, Action, Adapter, AdapterEvent, Harness, JournalHeader, JournalWriter,
    Outcome, Verdict,
};
use serde_json::Value;

use crate::state::Finding;

/// One action observed in the worker's stream, already journaled.
#[derive(Debug, Clone)]
pub struct Observed {
    /// Journal sequence number.
    pub seq: u64,
    /// The tool, e.g. `mcp__browser__browser_click`.
    pub tool: String,
    /// Short description for progress lines: kind, host or label; never a full URL.
    pub summary: String,
    pub outcome: Outcome,
    /// For a denial: why, as the journal records it.
    pub denied_reason: Option<String>,
    /// Why this action breaks the flow's bound, if it does.
    pub violation: Option<String>,
    /// The wall this action is, if it is one (a denial, a browser refusal, a violation).
    pub finding: Option<Finding>,
    /// The journal line, for `--json`.
    pub json: Value,
    /// What makes two calls the same call on the same target, for the loop watch: the tool, its
    /// kind and its arguments as the guard reduces them ([`crate::looping::repeat_key`]).
    pub repeat: Option<crate::looping::RepeatKey>,
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

pub struct Observer {
    flow: Flow,
    harness: Harness,
    adapter: Adapter,
    writer: JournalWriter,
    /// Codex leaves no item for a call the guard denied: the guard's own events are merged.
    events: Option<(PathBuf, u64)>,
    /// The persona's latest answer: the last one is its final report (`findings.md`).
    answer: Option<String>,
    /// The harness's own error, when it gave up with one instead of an answer.
    harness_failed: Option<String>,
    /// When the stream last produced anything.
    last_event: std::time::Instant,
    /// The gateway's denials, learnt in-process, and its servers.
    gateway: Option<Arc<Mutex<crate::gateway::Shared>>>,
    /// Calls of the gateway's servers the stream shows as having reached a server, in order.
    stream_calls: Vec<crate::gateway::StreamCall>,
    /// The journal's last sync, under way.
    pending_sync: Option<leopold_journal::PendingSync>,
    /// The model's usage so far, from the stream (docs/reference.md#cost-and-budgets).
    meter: crate::meter::Meter,
    /// What the model wrote between its calls, kept apart from the journal, host-only.
    narration: crate::narration::Narration,
    /// The journal seq of the last action recorded.
    last_seq: u64,
}

impl Observer {
    /// Creates the journal (its header line) before the worker exists: nothing it does goes
    /// unrecorded. The guard's events are read from the start of `events_path` until
    /// [`Observer::events_from`] says where this run's begin.
    pub fn new(
        harness: Harness,
        flow: &Flow,
        journal: &Path,
        run_id: &str,
        events_path: &Path,
    ) -> anyhow::Result<Observer> {
        let header = JournalHeader::new(
            run_id,
            &flow.name,
            &flow.source,
            harness,
            leopold_journal::now_rfc3339(),
        );
        let writer = JournalWriter::create(journal, &header)?;
        Ok(Observer {
            flow: flow.clone(),
            harness,
            adapter: Adapter::new(harness).with_usage().with_narration(),
            writer,
            events: crate::harness::denials_only_in_events(harness)
                .then(|| (events_path.to_path_buf(), 0)),
            answer: None,
            harness_failed: None,
            last_event: std::time::Instant::now(),
            gateway: None,
            stream_calls: Vec::new(),
            pending_sync: None,
            meter: crate::meter::Meter::new(harness, None),
            narration: crate::narration::Narration::new(
                journal.with_file_name(crate::run_dir::RunDir::NARRATION),
            ),
            last_seq: 0,
        })
    }

    /// Where the guard's events of this run begin in the events file, once known (after the
    /// guard's proof, whose own denial is not the worker's).
    pub fn events_from(&mut self, offset: u64) {
        if let Some((_, o)) = &mut self.events {
            *o = offset;
        }
    }

    /// Learns of the gateway's denials: a call the gateway refused is journaled as a denial
    /// (with its reason), not as what the stream shows (a call and its error result).
    pub fn with_gateway(mut self, shared: Arc<Mutex<crate::gateway::Shared>>) -> Observer {
        self.gateway = Some(shared);
        self
    }

    /// The gateway's record against the stream's, call by call, once the stream has ended.
    pub fn compare_with_gateway(
        &self,
        gw: &crate::gateway::Gateway,
    ) -> Vec<crate::gateway::Disagreement> {
        gw.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .compare(&self.stream_calls)
    }

    /// The model the run asked for (`--model`, or Codex's configuration): the usage names it
    /// until the stream names its own.
    pub fn with_model(mut self, model: Option<String>) -> Observer {
        self.meter = crate::meter::Meter::new(self.harness, model);
        self
    }

    /// The model's usage so far (`None` while the stream has reported none).
    pub fn usage(&self) -> Option<&crate::usage::Usage> {
        self.meter.usage()
    }

    /// The meter itself: whether the harness stopped at its own limit.
    pub fn meter(&self) -> &crate::meter::Meter {
        &self.meter
    }

    /// The journal's hash-chain head: the hash of the last line written (`journal_hash`).
    pub fn journal_hash(&self) -> String {
        self.writer.head().to_string()
    }

    /// The persona's final answer, if it gave one.
    pub fn answer(&self) -> Option<&str> {
        self.answer.as_deref()
    }

    /// The harness's own error, if it gave up with one ("Not logged in · Please run /login"):
    /// never findings.
    pub fn harness_failed(&self) -> Option<&str> {
        self.harness_failed.as_deref()
    }

    /// What a silent run waits for, and since when: the oldest tool call not yet answered, or
    /// (none open) the model's reply.
    pub fn waiting(&self) -> (Waiting, std::time::Duration) {
        let what = match self.adapter.pending_tools().into_iter().next() {
            Some(tool) => Waiting::Tool(tool),
            None => Waiting::Model,
        };
        (what, self.last_event.elapsed())
    }

    /// One line of the worker's stdout (without the newline). `line_no` counts from 1.
    pub fn line(&mut self, line_no: u64, line: &str) -> anyhow::Result<Batch> {
        self.last_event = std::time::Instant::now();
        let mut batch = Batch::default();
        // Denials first: they happened before the calls that follow them in the stream.
        self.merge_guard_denials(&mut batch)?;
        let events = self.adapter.push_line(line_no, line);
        self.absorb(events, &mut batch)?;
        Ok(batch)
    }

    /// Whether [`Observer::poll`] can find anything: on Codex a denied call leaves no stream
    /// line, so a persona retrying a denied call prints nothing while the guard's denials pile
    /// up; polling them keeps `max_denials_in_a_row` from waiting for the next line.
    pub fn polls(&self) -> bool {
        self.events.is_some()
    }

    /// The guard's denials written since the last look, journaled.
    pub fn poll(&mut self) -> anyhow::Result<Batch> {
        let mut batch = Batch::default();
        self.merge_guard_denials(&mut batch)?;
        if !batch.actions.is_empty() {
            self.last_event = std::time::Instant::now();
        }
        Ok(batch)
    }

    /// A line longer than the limit was skipped.
    pub fn overlong(&mut self, line_no: u64) -> Batch {
        Batch {
            actions: Vec::new(),
            notes: vec![Note {
                line_no,
                message: "line longer than the limit, skipped".into(),
            }],
        }
    }

    /// The stream ended: calls still open become `unfinished`; the guard's remaining denials are
    /// merged.
    pub fn finish(&mut self) -> anyhow::Result<Batch> {
        let mut batch = Batch::default();
        self.merge_guard_denials(&mut batch)?;
        let events = self.adapter.finish();
        self.absorb(events, &mut batch)?;
        // The record across a power loss: one fdatasync at the end of the stream, under way
        // while the run stops the box and writes run.json ([`Observer::take_sync`]).
        self.pending_sync = Some(self.writer.sync_in_background()?);
        crate::fs::note_sync();
        Ok(batch)
    }

    /// The end of the stream's journal sync ([`Observer::finish`]), for the teardown to wait on
    /// before it releases the project.
    pub fn take_sync(&mut self) -> Option<leopold_journal::PendingSync> {
        self.pending_sync.take()
    }

    /// The journal's `fdatasync`, counted with the supervisor's own (it happens in the journal
    /// crate, which does not count).
    fn sync_journal(&self) -> anyhow::Result<()> {
        self.writer.sync()?;
        crate::fs::note_sync();
        Ok(())
    }

    fn record(&mut self, mut action: Action, batch: &mut Batch) -> anyhow::Result<()> {
        let mut reached_server = false;
        if let Some(gw) = &self.gateway {
            let mut sh = gw.lock().unwrap_or_else(|e| e.into_inner());
            if sh.covers(&action.tool) {
                if let Some(d) = sh.take_denial(&action.tool) {
                    // The gateway answered it: it never reached the server.
                    action.outcome = Outcome::Denied;
                    action.denied_reason = Some(d.reason);
                } else {
                    reached_server = action.outcome != Outcome::Denied;
                }
            }
        }
        let repeat = crate::looping::repeat_key(&action);
        let verdict = validate(&self.flow, &action);
        let violation = match &verdict {
            Verdict::Violation { rule, detail } => Some(match detail {
                Some(d) => format!("{rule}: {d}"),
                None => rule.clone(),
            }),
            _ => None,
        };
        action.verdict = Some(verdict);
        self.writer.append(&mut action)?;
        if reached_server {
            self.stream_calls.push(crate::gateway::StreamCall {
                seq: action.seq,
                tool: action.tool.clone(),
                // The gateway reads absent arguments as none.
                call: match action.call.take() {
                    None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
                    Some(c) => c,
                },
                outcome: action.outcome,
                page_host: action
                    .urls
                    .iter()
                    .find(|u| u.role == leopold_journal::UrlRole::Page)
                    .and_then(|u| u.host.clone()),
            });
        }
        if violation.is_some() {
            // The journal must say why before the worker is stopped.
            self.sync_journal()?;
        }
        self.last_seq = action.seq;
        batch.actions.push(Observed {
            seq: action.seq,
            tool: action.tool.clone(),
            summary: summary(&action),
            outcome: action.outcome,
            denied_reason: action.denied_reason.clone(),
            finding: finding(&action),
            violation,
            json: serde_json::to_value(&action).unwrap_or_default(),
            repeat,
        });
        self.meter.response();
        Ok(())
    }

    fn absorb(&mut self, events: Vec<AdapterEvent>, batch: &mut Batch) -> anyhow::Result<()> {
        for ev in events {
            match ev {
                AdapterEvent::Action(a) => self.record(a, batch)?,
                AdapterEvent::Narration { text } => self.narration.push(self.last_seq, &text),
                AdapterEvent::Answer { text } => {
                    self.meter.response();
                    // Codex's every `agent_message` is one; Claude's is its last text again.
                    if self.harness == Harness::Codex {
                        self.narration.push(self.last_seq, &text);
                    }
                    self.answer = Some(text);
                }
                AdapterEvent::Usage(r) => self.meter.report(&r),
                AdapterEvent::HarnessFailed { text } => self.harness_failed = Some(text),
                AdapterEvent::Malformed { line_no, error } => batch.notes.push(Note {
                    line_no,
                    message: format!("unreadable stream line: {error}"),
                }),
                _ => {}
            }
        }
        Ok(())
    }

    fn merge_guard_denials(&mut self, batch: &mut Batch) -> anyhow::Result<()> {
        let Some((path, offset)) = self.events.clone() else {
            return Ok(());
        };
        let (denials, next) = guard_denials(&path, self.harness, offset, self.adapter.refs())?;
        self.events = Some((path, next));
        for d in denials {
            self.record(d, batch)?;
        }
        Ok(())
    }
}

/// What a silent run is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    /// No call is open: the model's next reply.
    Model,
    /// A tool call that has not returned (the oldest open one).
    Tool(String),
}

/// The wall an action is, if it is one: a violation, a denial, a browser refusal (in that order:
/// a violation that the browser also refused is a violation).
pub fn finding(a: &Action) -> Option<Finding> {
    let (kind, reason) = match (&a.verdict, a.outcome, &a.browser_blocked) {
        (Some(Verdict::Violation { rule, detail }), _, _) => (
            "violation",
            match detail {
                Some(d) => format!("{rule}: {d}"),
                None => rule.clone(),
            },
        ),
        (_, Outcome::Denied, _) => (
            "denied",
            a.denied_reason
                .clone()
                .unwrap_or_else(|| "denied (no reason recorded)".into()),
        ),
        (_, _, Some(b)) => (
            "browser_refused",
            match &b.host {
                Some(h) => format!("{}: {h}", b.how),
                None => b.how.clone(),
            },
        ),
        _ => return None,
    };
    Some(Finding {
        kind: kind.into(),
        seq: Some(a.seq),
        tool: Some(a.tool.clone()),
        hosts: a.hosts(),
        label: a.label.clone(),
        reason,
    })
}

/// What a progress line shows of an action: kind, host, label; never a full URL, never typed text.
fn summary(a: &Action) -> String {
    let mut parts = vec![a.kind.as_str().to_owned()];
    // Every distinct host, not only the first: in a batch the blocked host is often not first.
    let mut hosts: Vec<&str> = Vec::new();
    for h in a.urls.iter().filter_map(|u| u.host.as_deref()) {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    const SHOWN: usize = 4;
    if !hosts.is_empty() {
        let mut shown = hosts[..hosts.len().min(SHOWN)].join(", ");
        if hosts.len() > SHOWN {
            shown.push_str(&format!(" (+{} more)", hosts.len() - SHOWN));
        }
        parts.push(shown);
    }
    if let Some(l) = &a.label {
        parts.push(format!("{l:?}"));
    }
    if let Some(n) = a.typed_len {
        parts.push(format!("({n} chars typed)"));
    }
    if let Some(b) = &a.browser_blocked {
        parts.push(match &b.host {
            Some(h) => format!("[blocked by the browser: {h}]"),
            None => "[blocked by the browser]".to_owned(),
        });
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_and_its_result_are_one_journaled_action() {
        let dir = tempfile::tempdir().unwrap();
        let flow = crate::test_support::checkout_flow("");
        let mut o = Observer::new(
            Harness::Claude,
            &flow,
            &dir.path().join("journal.jsonl"),
            "r1",
            &dir.path().join("events.jsonl"),
        )
        .unwrap();
        let call = serde_json::json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "mcp__browser__browser_navigate",
             "input": {"url": "https://staging.example.com/cart"}}]}});
        let result = serde_json::json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text":
             "### Page\n- Page URL: https://staging.example.com/cart\n### Snapshot\n```yaml\n- button \"Place order\" [ref=e5]\n```"}]}]}});
        assert!(o.line(1, &call.to_string()).unwrap().actions.is_empty());
        let batch = o.line(2, &result.to_string()).unwrap();
        assert_eq!(batch.actions.len(), 1);
        assert_eq!(batch.actions[0].outcome, Outcome::Completed);
        assert!(batch.notes.is_empty(), "{:?}", batch.notes);
        // The ref map is the gateway's: nothing here writes one.
        assert!(!dir.path().join("refs.json").exists());
        o.finish().unwrap();
        let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
        assert_eq!(
            journal.lines().count(),
            2,
            "header and one action: {journal}"
        );
    }

    #[test]
    fn summary_names_every_distinct_host_of_a_batch() {
        let mut a: Action = serde_json::from_value(serde_json::json!({
            "seq": 1, "ts": "2026-11-30T00:00:00Z", "harness": "claude",
            "tool": "mcp__s__navigate", "kind": "navigate", "outcome": "denied",
            "urls": [
                {"role": "target", "scheme": "https", "host": "staging.example.com", "path": "/"},
                {"role": "target", "scheme": "https", "host": "staging.example.com", "path": "/a"},
                {"role": "target", "scheme": "https", "host": "evil.example", "path": "/"}
            ]
        }))
        .unwrap();
        assert_eq!(summary(&a), "navigate staging.example.com, evil.example");
        for i in 0..4 {
            a.urls.push(leopold_journal::UrlRef {
                host: Some(format!("h{i}.example")),
                ..a.urls[0].clone()
            });
        }
        assert!(
            summary(&a).ends_with("h1.example (+2 more)"),
            "{}",
            summary(&a)
        );
    }
}
