//! What a run prints: progress lines and the summary (human), or one JSON object per event
//! (`--json`). The text is built by pure functions; [`Reporter`] only decides where it goes.

use leopold_journal::Outcome;
use serde_json::json;

use crate::exit::RunExit;
use crate::observe::{Batch, Observed, Waiting};
use crate::output::{self, outln};
use crate::state::{Counts, RunOutcome};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Human,
    Quiet,
    Json,
}

pub struct Reporter {
    pub mode: Mode,
}

/// `schema_version` of every `--json` event: raised when a field changes meaning or goes away
/// (a new field or event does not raise it). docs/reference.md#--json-events.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// Adds `ts` (RFC 3339, UTC, milliseconds) and `schema_version` to an event object.
pub fn stamp(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(o) = v.as_object_mut() {
        o.insert("ts".into(), json!(leopold_journal::now_rfc3339()));
        o.insert("schema_version".into(), json!(JSON_SCHEMA_VERSION));
    }
    v
}

/// The progress line of a quiet run: `leopold: 30s without an event: waiting for …`.
pub fn waiting_line(what: &Waiting, idle: std::time::Duration) -> String {
    let idle = humantime::format_duration(std::time::Duration::from_secs(idle.as_secs()));
    match what {
        Waiting::Model => {
            format!("leopold: {idle} without an event: waiting for the model's reply")
        }
        Waiting::Tool(t) => {
            format!("leopold: {idle} without an event: waiting for tool {t} to return")
        }
    }
}

impl Reporter {
    pub fn info(&self, line: &str) {
        if self.mode == Mode::Human {
            outln!("{line}");
        }
    }
    /// One `--json` event, stamped with `ts` and `schema_version` ([`stamp`]).
    pub fn json(&self, v: serde_json::Value) {
        if self.mode == Mode::Json {
            outln!("{}", stamp(v));
        }
    }
    /// A quiet run: what it is waiting for.
    pub fn waiting(&self, what: &Waiting, idle: std::time::Duration) {
        self.info(&waiting_line(what, idle));
        let (waiting_for, tool) = match what {
            Waiting::Model => ("model", None),
            Waiting::Tool(t) => ("tool", Some(t.as_str())),
        };
        self.json(json!({"event":"waiting","for":waiting_for,"tool":tool,"idle_ms":idle.as_millis() as u64}));
    }
    pub fn summary(&self, line: &str) {
        if self.mode != Mode::Json {
            outln!("{line}");
        }
    }
    pub fn warn(&self, line: &str) {
        output::warn(line);
    }
    /// An error that stops the run (exit 2); with `--json` it is a JSON line too.
    pub fn error(&self, line: &str) {
        output::error_text(line, RunExit::CONFIG, self.mode == Mode::Json);
    }

    /// Prints a batch, updates the counts, returns the first violation's reason.
    pub fn batch(&self, batch: &Batch, counts: &mut Counts) -> Option<String> {
        let mut first = None;
        for note in &batch.notes {
            counts.unreadable_lines += 1;
            self.info(&format!("  line {}: {}", note.line_no, note.message));
            self.json(json!({"event":"note","line":note.line_no,"message":note.message}));
        }
        for a in &batch.actions {
            count(counts, a);
            self.info(&action_line(a));
            if let Some(v) = &a.violation {
                self.info(&format!("        {v}"));
                if first.is_none() {
                    first = Some(format!("#{} {}: {v}", a.seq, a.tool));
                }
            }
            self.json(json!({"event":"action","action":a.json,"violation":a.violation}));
        }
        first
    }
}

/// Adds one action to the counts.
fn count(counts: &mut Counts, a: &Observed) {
    counts.actions += 1;
    match a.outcome {
        Outcome::Completed => counts.completed += 1,
        Outcome::Errored => counts.errored += 1,
        Outcome::Denied => counts.denied += 1,
        Outcome::Unfinished => {}
    }
    if a.violation.is_some() {
        counts.violations += 1;
    }
}

/// The tag a progress line shows: a violation, a call the guard (or harness) blocked, or how the
/// call ended.
fn tag(a: &Observed) -> &'static str {
    match (&a.violation, a.outcome) {
        (Some(_), _) => "VIOLATION",
        (None, Outcome::Denied) => "blocked",
        (None, o) => o.as_str(),
    }
}

/// One progress line per action: `  #3   blocked   mcp__b__navigate  navigate evil.example`;
/// a blocked line ends with why (`— outside_allowlist`).
pub fn action_line(a: &Observed) -> String {
    let why = match (a.outcome, &a.violation, &a.denied_reason) {
        (Outcome::Denied, None, Some(r)) => format!(" — {r}"),
        _ => String::new(),
    };
    format!(
        "  #{:<3} {:<9} {}  {}{why}",
        a.seq,
        tag(a),
        a.tool,
        a.summary
    )
}

/// The last line of a run.
pub fn summary_line(
    run_id: &str,
    outcome: RunOutcome,
    counts: &Counts,
    reason: Option<&str>,
    journal_hash: Option<&str>,
    run_dir: &str,
) -> String {
    format!(
        "leopold: run {run_id} {outcome} (exit {}): {}, {} denied, {}{}{}; see {run_dir}/",
        outcome.exit_code(),
        output::count(counts.actions, "action"),
        counts.denied,
        output::count(counts.violations, "violation"),
        // The reason's hints were printed with the error; the summary stays one line.
        reason
            .map(|r| format!("; {}", output::Rendered::from_text(r).message))
            .unwrap_or_default(),
        // What `persona replay --expect` checks the journal against later
        // (docs/reference.md#journal).
        journal_hash
            .map(|h| format!("; journal_hash {h}"))
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(seq: u64, outcome: Outcome, violation: Option<&str>) -> Observed {
        Observed {
            seq,
            tool: "mcp__browser__browser_navigate".into(),
            summary: "navigate evil.example".into(),
            outcome,
            denied_reason: None,
            violation: violation.map(str::to_owned),
            finding: None,
            json: serde_json::Value::Null,
            repeat: None,
        }
    }

    #[test]
    fn progress_lines_tag_blocks_and_violations() {
        assert_eq!(
            action_line(&observed(3, Outcome::Denied, None)),
            "  #3   blocked   mcp__browser__browser_navigate  navigate evil.example"
        );
        assert_eq!(
            action_line(&observed(12, Outcome::Completed, Some("left_allowlist"))),
            "  #12  VIOLATION mcp__browser__browser_navigate  navigate evil.example"
        );
        let mut why = observed(4, Outcome::Denied, None);
        why.denied_reason = Some("outside_allowlist".into());
        assert_eq!(
            action_line(&why),
            "  #4   blocked   mcp__browser__browser_navigate  navigate evil.example — outside_allowlist"
        );
        assert_eq!(tag(&observed(1, Outcome::Unfinished, None)), "unfinished");
        assert_eq!(tag(&observed(1, Outcome::Errored, None)), "errored");
    }

    #[test]
    fn counts_follow_outcomes_and_violations() {
        let mut c = Counts::default();
        let r = Reporter { mode: Mode::Quiet };
        let batch = Batch {
            actions: vec![
                observed(1, Outcome::Completed, None),
                observed(2, Outcome::Denied, None),
                observed(3, Outcome::Completed, Some("left_allowlist")),
                observed(4, Outcome::Errored, Some("irreversible_label")),
                observed(5, Outcome::Unfinished, None),
            ],
            notes: vec![crate::observe::Note {
                line_no: 9,
                message: "x".into(),
            }],
        };
        let first = r.batch(&batch, &mut c);
        assert_eq!(
            first.as_deref(),
            Some("#3 mcp__browser__browser_navigate: left_allowlist")
        );
        assert_eq!(
            c,
            Counts {
                actions: 5,
                completed: 2,
                errored: 1,
                denied: 1,
                violations: 2,
                unreadable_lines: 1,
            }
        );
    }

    #[test]
    fn json_events_are_stamped_and_quiet_runs_say_what_they_wait_for() {
        let v = stamp(json!({"event":"run_started"}));
        assert_eq!(v["schema_version"], JSON_SCHEMA_VERSION);
        let ts = v["ts"].as_str().unwrap();
        assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
        assert_eq!(
            waiting_line(&Waiting::Model, std::time::Duration::from_millis(30_400)),
            "leopold: 30s without an event: waiting for the model's reply"
        );
        assert_eq!(
            waiting_line(
                &Waiting::Tool("mcp__b__navigate".into()),
                std::time::Duration::from_secs(60)
            ),
            "leopold: 1m without an event: waiting for tool mcp__b__navigate to return"
        );
    }

    #[test]
    fn the_summary_counts_in_words() {
        let mut c = Counts {
            actions: 1,
            denied: 0,
            violations: 1,
            ..Counts::default()
        };
        assert_eq!(
            summary_line("r1", RunOutcome::Violated, &c, Some("#1 t: rule"), Some("ab12"), ".leopold/persona/runs/r1"),
            "leopold: run r1 violated (exit 1): 1 action, 0 denied, 1 violation; #1 t: rule; journal_hash ab12; see .leopold/persona/runs/r1/"
        );
        c.actions = 3;
        c.violations = 0;
        assert_eq!(
            summary_line("r1", RunOutcome::Clean, &c, None, None, "runs/r1"),
            "leopold: run r1 clean (exit 0): 3 actions, 0 denied, 0 violations; see runs/r1/"
        );
    }
}
