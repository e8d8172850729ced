//! The real [`Observer`]: the journal crate's stream adapter, validation and journal writer.

use std::path::{Path, PathBuf};

use leopold_flows::Flow;
use leopold_journal::{
    guard_denials, validate, Action, Adapter, AdapterEvent, Harness, JournalHeader, JournalWriter,
    Outcome, Verdict,
};

use crate::observe::{Batch, Note, Observed, Observer};
use crate::wiring_port::HarnessKind;

pub struct JournalObserver {
    flow: Flow,
    harness: Harness,
    adapter: Adapter,
    writer: JournalWriter,
    /// Codex leaves no item for a call the guard denied: the guard's own events are merged.
    events: Option<(PathBuf, u64)>,
}

pub fn make_observer(
    kind: HarnessKind,
    flow: &Flow,
    journal: &Path,
    run_id: &str,
    events_path: &Path,
    events_offset: u64,
) -> anyhow::Result<Box<dyn Observer>> {
    let harness = match kind {
        HarnessKind::Claude => Harness::Claude,
        HarnessKind::Codex => Harness::Codex,
    };
    let header = JournalHeader::new(
        run_id,
        &flow.name,
        &flow.source,
        harness,
        leopold_journal::now_rfc3339(),
    );
    let writer = JournalWriter::create(journal, &header)?;
    Ok(Box::new(JournalObserver {
        flow: flow.clone(),
        harness,
        adapter: Adapter::new(harness),
        writer,
        events: (kind == HarnessKind::Codex).then(|| (events_path.to_path_buf(), events_offset)),
    }))
}

/// What a progress line shows of an action: kind, host, label; never a full URL, never typed text.
fn summary(a: &Action) -> String {
    let mut parts = vec![format!("{:?}", a.kind).to_lowercase()];
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

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed => "completed",
        Outcome::Errored => "errored",
        Outcome::Denied => "denied",
        Outcome::Unfinished => "unfinished",
    }
}

impl JournalObserver {
    fn record(&mut self, mut action: Action, batch: &mut Batch) -> anyhow::Result<()> {
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
        if violation.is_some() {
            // The journal must say why before the worker is stopped.
            self.writer.sync()?;
        }
        batch.actions.push(Observed {
            seq: action.seq,
            tool: action.tool.clone(),
            summary: summary(&action),
            outcome: outcome_name(action.outcome).into(),
            violation,
            json: serde_json::to_value(&action).unwrap_or_default(),
        });
        Ok(())
    }

    fn absorb(&mut self, events: Vec<AdapterEvent>, batch: &mut Batch) -> anyhow::Result<()> {
        for ev in events {
            match ev {
                AdapterEvent::Action(a) => self.record(a, batch)?,
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
        let (denials, next) = guard_denials(&path, self.harness, offset)?;
        self.events = Some((path, next));
        for d in denials {
            self.record(d, batch)?;
        }
        Ok(())
    }
}

impl Observer for JournalObserver {
    fn line(&mut self, line_no: u64, line: &str) -> anyhow::Result<Batch> {
        let mut batch = Batch::default();
        // Denials first: they happened before the calls that follow them in the stream.
        self.merge_guard_denials(&mut batch)?;
        let events = self.adapter.push_line(line_no, line);
        self.absorb(events, &mut batch)?;
        Ok(batch)
    }

    fn finish(&mut self) -> anyhow::Result<Batch> {
        let mut batch = Batch::default();
        self.merge_guard_denials(&mut batch)?;
        let events = self.adapter.finish();
        self.absorb(events, &mut batch)?;
        self.writer.sync()?;
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
