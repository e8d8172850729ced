//! Replaying a raw harness stream, one line at a time through the harness's adapter.

use std::io::BufRead;
use std::path::Path;

use leopold_flows::Flow;

use super::judge::Violation;
use super::{
    read_error, report_malformed, report_too_long, summary, tally, ReplayError, ReplayEvent,
    ReplaySummary, MAX_LINE,
};
use crate::action::{Harness, Outcome};
use crate::adapter::{Adapter, AdapterEvent};
use crate::lines::LineReader;
use crate::validate::Validator;

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
    let mut lines = LineReader::new(&mut reader, MAX_LINE);
    while let Some(line) = lines.next_line().map_err(read_error(path))? {
        let line_no = line.no;
        let events = match line.without_cr() {
            None => {
                report_too_long(&mut s, line_no, on_event);
                continue;
            }
            Some((bytes, _)) => {
                let text = String::from_utf8_lossy(bytes);
                if !line.terminated && serde_json::from_str::<serde_json::Value>(&text).is_err() {
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
    handle_adapter_events(&mut s, &mut validator, rest, lines.lines(), on_event);
    s.lines = lines.lines();
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
            AdapterEvent::ToolResult { .. }
            | AdapterEvent::Answer { .. }
            | AdapterEvent::HarnessFailed { .. }
            | AdapterEvent::Usage(_)
            | AdapterEvent::Narration { .. } => {}
        }
    }
}
