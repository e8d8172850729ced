//! The gateway's record beside a journal: its chain, its head, and the disagreements the run
//! wrote into it.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader};
use std::path::Path;

use serde::Deserialize;

use super::{check_recorded, open, read_error, ReplayError, ReplayEvent, ReplaySummary, MAX_LINE};
use crate::lines::LineReader;

/// Checks the gateway record's chain, and its head against the one `run.json` recorded.
pub(super) fn check_gateway_record(
    s: &mut ReplaySummary,
    path: &Path,
    recorded: Option<&str>,
    on_event: &mut dyn FnMut(ReplayEvent),
) -> Result<(), ReplayError> {
    let found = match File::open(path) {
        Ok(f) => {
            let reader = BufReader::with_capacity(256 << 10, f);
            let check = crate::chain::check_lines(reader, MAX_LINE).map_err(read_error(path))?;
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
        let mismatch = |expected, found| ReplayEvent::GatewayHeadMismatch {
            file: path.to_path_buf(),
            expected,
            found,
        };
        check_recorded(s, expected, found, mismatch, on_event);
    }
    Ok(())
}

/// The disagreements the run wrote into the gateway's record, each a finding.
pub(super) fn disagreements(
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
    let mut lines = LineReader::new(open(path)?, MAX_LINE);
    while let Some(line) = lines.next_line().map_err(read_error(path))? {
        let n = line.no;
        // A line too long to be one of the record's own is no disagreement line: skipped.
        let Some(Ok(l)) = line.bytes.map(serde_json::from_slice::<Line<'_>>) else {
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
    Ok(())
}
