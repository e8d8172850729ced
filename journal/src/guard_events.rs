//! The guard's own record of what it refused, `.leopold/persona/events.jsonl`, turned into
//! `denied` actions. On Codex a denied call leaves no item in the stream, so this is the only
//! place those denials show; the supervisor merges them into the journal as they appear.
//!
//! The line format is the guard's own [`GuardEvent`]; other events (such as
//! `persona_recovered`) are skipped.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use leopold_guard::GuardEvent;

use crate::action::{now_rfc3339, Action, Harness, Outcome, UrlRef, UrlRole};
use crate::classify::{build_action, classify, RefMap};

/// The guard's reasons are short snake_case ids; anything else is not kept (the journal holds no
/// free text from outside Leopold).
pub(crate) fn is_reason_id(r: &str) -> bool {
    (1..=64).contains(&r.len())
        && r.bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
}

/// Reads the guard's events from byte `from_offset` on and returns the denials as actions
/// (their element refs resolved with `refs`, the snapshots the stream showed so far)
/// (outcome `denied`, `seq` 0) with the offset to resume from. Only whole lines (ending in `\n`)
/// are consumed: a line the guard is still writing is left for the next call. Lines that are not
/// guard events (or not JSON) are skipped. A missing file is no denials yet.
///
/// # Errors
///
/// I/O errors reading the file (other than it not existing).
pub fn guard_denials(
    events_path: &Path,
    harness: Harness,
    from_offset: u64,
    refs: &RefMap,
) -> io::Result<(Vec<Action>, u64)> {
    let mut file = match File::open(events_path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((vec![], from_offset)),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("reading guard events {}: {e}", events_path.display()),
            ))
        }
    };
    // A file shorter than the offset was replaced (a new run): read it from the start.
    let len = file.metadata()?.len();
    let mut offset = if from_offset > len { 0 } else { from_offset };
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut out = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        offset += n as u64;
        if let Some(a) = denial_from_line(&line, harness, refs) {
            out.push(a);
        }
    }
    Ok((out, offset))
}

/// One guard event line to a `denied` action, if it is a denial.
///
/// An event that carries the reduced call (`call`) becomes the action [`build_action`] makes of
/// it, the function a denied Claude call goes through: the same label, every host of a batch,
/// the paths. An older event (host only) gives what it has.
pub fn denial_from_line(line: &[u8], harness: Harness, refs: &RefMap) -> Option<Action> {
    let ev = GuardEvent::from_line(line)?;
    let tool = ev.tool.unwrap_or_default();
    let reason = ev.reason.filter(|r| is_reason_id(r));
    let ts = ev.ts.unwrap_or_else(now_rfc3339);
    if let Some(call) = ev.call.as_ref().filter(|c| c.is_object()) {
        let mut a = build_action(
            harness,
            &tool,
            ev.tool_use_id,
            &rehydrate(call),
            Outcome::Denied,
            None,
            refs,
            ts,
        );
        a.denied_reason = reason;
        return Some(a);
    }
    let urls = ev
        .host
        .filter(|h| !h.is_empty())
        .map(|h| {
            // The guard records the host only; reduce it the same way as a URL's host.
            let mut u = UrlRef::from_raw(UrlRole::Target, &format!("https://{h}/"));
            u.scheme = None;
            u.path = None;
            u
        })
        .into_iter()
        .collect();
    let kind = classify(&tool, &serde_json::Value::Null);
    Some(Action {
        tool_use_id: ev.tool_use_id,
        urls,
        denied_reason: reason,
        ..Action::new(harness, ts, &tool, kind, Outcome::Denied)
    })
}

/// The reduced call of a guard event back as a call: each `{"leopold_url": {scheme, host,
/// path}}` becomes the URL string `scheme://host/path` (`scheme:` without a host, an
/// unparseable `//unparseable` when it did not parse), which the journal's URL parser reads back
/// to the same scheme, host and path.
fn rehydrate(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            if let (1, Some(Value::Object(parts))) =
                (m.len(), m.get(leopold_guard::REDUCED_URL_KEY))
            {
                let get = |k: &str| parts.get(k).and_then(Value::as_str);
                let url = match (get("scheme"), get("host")) {
                    (Some(s), Some(h)) => format!("{s}://{h}{}", get("path").unwrap_or("")),
                    (Some(s), None) => format!("{s}:"),
                    _ => "//unparseable".to_owned(),
                };
                return Value::String(url);
            }
            Value::Object(m.iter().map(|(k, v)| (k.clone(), rehydrate(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(rehydrate).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ActionKind;
    use std::io::Write;

    #[test]
    fn denials_are_read_incrementally_and_torn_lines_wait() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("events.jsonl");
        assert_eq!(
            guard_denials(&p, Harness::Codex, 0, &RefMap::default()).unwrap(),
            (vec![], 0)
        );
        let mut f = File::create(&p).unwrap();
        writeln!(
            f,
            r#"{{"ts":"2026-11-30T10:00:00Z","event":"persona_guard_allow","tool":"x"}}"#
        )
        .unwrap();
        writeln!(f, r#"{{"ts":"2026-11-30T10:00:01Z","event":"persona_guard_block","tool":"mcp__personastub__navigate","host":"prod-dashboard.example.org","flow":"c","reason":"host outside allowlist"}}"#).unwrap();
        write!(
            f,
            r#"{{"ts":"2026-11-30T10:00:02Z","event":"persona_guard_irrev"#
        )
        .unwrap();
        f.flush().unwrap();
        let (got, off) = guard_denials(&p, Harness::Codex, 0, &RefMap::default()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].outcome, Outcome::Denied);
        assert_eq!(got[0].kind, ActionKind::Navigate);
        assert_eq!(got[0].first_host(), Some("prod-dashboard.example.org"));
        assert_eq!(got[0].denied_reason, None, "free text is not a reason id");
        writeln!(f, r#"ersible","tool":"mcp__personastub__click","flow":"c","reason":"irreversible_label","tool_use_id":"t9"}}"#).unwrap();
        let (got2, off2) = guard_denials(&p, Harness::Codex, off, &RefMap::default()).unwrap();
        assert_eq!(got2.len(), 1);
        assert_eq!(got2[0].tool_use_id.as_deref(), Some("t9"));
        assert_eq!(got2[0].kind, ActionKind::Click);
        assert_eq!(got2[0].denied_reason.as_deref(), Some("irreversible_label"));
        assert!(off2 > off);
        assert_eq!(
            guard_denials(&p, Harness::Codex, off2, &RefMap::default()).unwrap(),
            (vec![], off2)
        );
    }
}
