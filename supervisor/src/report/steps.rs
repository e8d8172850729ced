//! What the gateway's record adds to each step of the timeline: how long the browser took to
//! answer it, and the screenshot the gateway took after it (`--evidence`,
//! docs/reference.md#evidence).
//!
//! The journal and `gateway.jsonl` number their lines apart; both hold the browser's calls in the
//! order they were made, so a journal action is matched with the record's next call of the same
//! tool (as the run's own comparison of the two does, docs/security.md#the-gateway).

use std::collections::HashMap;
use std::io::BufRead as _;
use std::path::PathBuf;
use std::time::Duration;

use leopold_journal::Action;
use serde_json::Value;

use crate::run_dir::RunDir;

/// A step's share of the gateway's record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    /// From the call reaching the gateway to the browser's answer.
    pub took: Option<Duration>,
    /// The gateway's screenshot after the step, relative to the run directory.
    pub shot: Option<String>,
}

/// The most of `gateway.jsonl` read for the timeline (`--max-records`' default).
const MAX_READ: u64 = 64 << 20;
/// How far ahead in the record a journal action's call is looked for.
const LOOK_AHEAD: usize = 8;

/// Each journal action's step (by the action's journal seq), from `<run dir>/gateway.jsonl`.
pub fn steps(dir: &RunDir, actions: &[Action]) -> HashMap<u64, Step> {
    let calls = record_calls(dir);
    let mut out = HashMap::new();
    let mut next = 0;
    for a in actions.iter().filter(|a| a.tool.starts_with("mcp__")) {
        let found = calls
            .iter()
            .enumerate()
            .skip(next)
            .take(LOOK_AHEAD)
            .find(|(_, c)| c.tool == a.tool);
        if let Some((i, c)) = found {
            next = i + 1;
            out.insert(a.seq, c.step.clone());
        }
    }
    out
}

struct Call {
    tool: String,
    step: Step,
}

fn record_calls(dir: &RunDir) -> Vec<Call> {
    let Ok(f) = std::fs::File::open(dir.gateway_record()) else {
        return Vec::new();
    };
    let mut calls: Vec<Call> = Vec::new();
    // Record seq -> (index in `calls`, when the call came).
    let mut by_seq: HashMap<u64, (usize, Option<std::time::SystemTime>)> = HashMap::new();
    let r = std::io::BufReader::new(std::io::Read::take(f, MAX_READ));
    for line in r.lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(event), Some(seq)) = (
            v.get("event").and_then(Value::as_str),
            v.get("seq").and_then(Value::as_u64),
        ) else {
            continue;
        };
        let ts = v
            .get("ts")
            .and_then(Value::as_str)
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok());
        match event {
            "call" => {
                let (Some(server), Some(tool)) = (
                    v.get("server").and_then(Value::as_str),
                    v.get("tool").and_then(Value::as_str),
                ) else {
                    continue;
                };
                by_seq.insert(seq, (calls.len(), ts));
                calls.push(Call {
                    tool: format!("mcp__{server}__{tool}"),
                    step: Step::default(),
                });
            }
            "result" => {
                if let Some((i, Some(at))) = by_seq.get(&seq).copied() {
                    calls[i].step.took = ts.and_then(|t| t.duration_since(at).ok());
                }
            }
            "evidence" => {
                let file = v
                    .get("file")
                    .and_then(Value::as_str)
                    .filter(|f| shot_name_ok(f));
                if let (Some((i, _)), Some(f)) = (by_seq.get(&seq).copied(), file) {
                    calls[i].step.shot = Some(f.to_owned());
                }
            }
            _ => {}
        }
    }
    calls
}

/// Only the names the gateway writes (`evidence/step-0003.png`): the record is read back, and a
/// report follows no other path from it.
fn shot_name_ok(f: &str) -> bool {
    f.strip_prefix(crate::run_dir::RunDir::EVIDENCE)
        .and_then(|r| r.strip_prefix("/step-"))
        .and_then(|r| r.strip_suffix(".png"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The screenshot's path, when it is there.
pub fn shot_path(dir: &RunDir, rel: &str) -> Option<PathBuf> {
    let p = dir.path().join(rel);
    p.is_file().then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_gateways_names_are_followed() {
        assert!(shot_name_ok("evidence/step-0003.png"));
        for bad in [
            "evidence/../run.json",
            "/etc/passwd",
            "evidence/step-.png",
            "evidence/step-1/../../x.png",
            "trace.zip",
        ] {
            assert!(!shot_name_ok(bad), "{bad}");
        }
    }

    #[test]
    fn actions_take_the_records_calls_in_order() {
        let d = tempfile::tempdir().unwrap();
        let dir = RunDir::new(d.path());
        let lines = [
            r#"{"event":"call","seq":1,"server":"browser","tool":"browser_navigate","ts":"2026-01-01T00:00:00.000Z"}"#,
            r#"{"event":"result","seq":1,"server":"browser","tool":"browser_navigate","ts":"2026-01-01T00:00:00.250Z"}"#,
            r#"{"event":"evidence","seq":1,"file":"evidence/step-0001.png","ts":"2026-01-01T00:00:00.400Z"}"#,
            r#"{"event":"call","seq":2,"server":"browser","tool":"browser_snapshot","ts":"2026-01-01T00:00:01.000Z"}"#,
            r#"{"event":"call","seq":3,"server":"browser","tool":"browser_click","ts":"2026-01-01T00:00:02.000Z"}"#,
            r#"{"event":"result","seq":3,"server":"browser","tool":"browser_click","ts":"2026-01-01T00:00:03.500Z"}"#,
            r#"{"event":"evidence","seq":3,"file":"../x.png","ts":"2026-01-01T00:00:03.600Z"}"#,
        ];
        std::fs::write(dir.gateway_record(), lines.join("\n")).unwrap();
        let action = |seq, tool: &str| {
            let mut a: Action = serde_json::from_value(serde_json::json!({
                "seq": seq, "ts": "2026-01-01T00:00:00Z", "harness": "claude", "tool": tool,
                "kind": "other", "outcome": "completed"}))
            .unwrap();
            a.seq = seq;
            a
        };
        let s = steps(
            &dir,
            &[
                action(1, "mcp__browser__browser_navigate"),
                action(2, "mcp__browser__browser_click"),
            ],
        );
        assert_eq!(s[&1].took, Some(Duration::from_millis(250)));
        assert_eq!(s[&1].shot.as_deref(), Some("evidence/step-0001.png"));
        // The snapshot between is skipped; a name the gateway does not write is dropped.
        assert_eq!(s[&2].took, Some(Duration::from_millis(1500)));
        assert_eq!(s[&2].shot, None);
    }
}
