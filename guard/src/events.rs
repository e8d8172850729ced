//! `.leopold/persona/events.jsonl`: the project's event log. The guard appends its denials; the
//! supervisor appends lifecycle events (`persona_recovered`) and reads the denials back into the
//! journal. One definition here for every writer and reader.

use serde::{Deserialize, Serialize};

/// The `event` of an `events.jsonl` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventName {
    /// The guard denied a call that breaks the allowlist, or one it could not judge.
    #[serde(rename = "persona_guard_block")]
    GuardBlock,
    /// The guard denied an irreversible action.
    #[serde(rename = "persona_guard_irreversible")]
    GuardIrreversible,
    /// `persona recover` (or a run, before it starts) cleaned up after a crashed run.
    #[serde(rename = "persona_recovered")]
    Recovered,
}

impl EventName {
    /// The name on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::GuardBlock => "persona_guard_block",
            EventName::GuardIrreversible => "persona_guard_irreversible",
            EventName::Recovered => "persona_recovered",
        }
    }

    /// Whether the line records a call the guard denied.
    pub fn is_denial(self) -> bool {
        matches!(self, EventName::GuardBlock | EventName::GuardIrreversible)
    }
}

/// One denial line, as the guard writes it and the journal reads it:
/// `{"ts","event","tool","host","flow","reason","tool_use_id"?}`. `tool`, `host` and `flow` are
/// `null` when unknown; never a URL, path, query or credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardEvent {
    /// RFC 3339, UTC, milliseconds. A reader tolerates its absence.
    #[serde(default)]
    pub ts: Option<String>,
    /// [`EventName::GuardBlock`] or [`EventName::GuardIrreversible`].
    pub event: EventName,
    /// The tool called, when the payload named one.
    #[serde(default)]
    pub tool: Option<String>,
    /// The host judged, when there was one.
    #[serde(default)]
    pub host: Option<String>,
    /// The active flow's name, once known.
    #[serde(default)]
    pub flow: Option<String>,
    /// The [`crate::Reason`] id (a reader keeps it only if it looks like one).
    #[serde(default)]
    pub reason: Option<String>,
    /// The payload's `tool_use_id`, when it had one (the journal merges Codex denials by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The call as the journal may keep it ([`crate::reduced_call`]): every URL reduced to
    /// scheme, host and path, typed text to its length, other free text dropped. Codex leaves no
    /// stream item for a denied call, so the journal builds the action from this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<serde_json::Value>,
}

impl GuardEvent {
    /// The line, with its newline.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).unwrap_or_default();
        line.push(b'\n');
        line
    }

    /// A guard denial from one line; `None` for anything else (another event, not JSON).
    pub fn from_line(line: &[u8]) -> Option<GuardEvent> {
        serde_json::from_slice::<GuardEvent>(line)
            .ok()
            .filter(|e| e.event.is_denial())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_keeps_its_byte_format() {
        let e = GuardEvent {
            ts: Some("2026-11-30T10:44:45.123Z".into()),
            event: EventName::GuardBlock,
            tool: Some("mcp__browser__browser_navigate".into()),
            host: Some("evil.example".into()),
            flow: Some("checkout".into()),
            reason: Some("outside_allowlist".into()),
            tool_use_id: Some("toolu_01".into()),
            call: None,
        };
        // docs/security.md#eventsjsonl, byte for byte.
        assert_eq!(
            String::from_utf8(e.to_line()).unwrap(),
            "{\"ts\":\"2026-11-30T10:44:45.123Z\",\"event\":\"persona_guard_block\",\"tool\":\"mcp__browser__browser_navigate\",\"host\":\"evil.example\",\"flow\":\"checkout\",\"reason\":\"outside_allowlist\",\"tool_use_id\":\"toolu_01\"}\n"
        );
        assert_eq!(GuardEvent::from_line(&e.to_line()), Some(e.clone()));
        let bare = GuardEvent {
            host: None,
            flow: None,
            tool_use_id: None,
            event: EventName::GuardIrreversible,
            ..e
        };
        let text = String::from_utf8(bare.to_line()).unwrap();
        assert!(
            text.contains("\"host\":null,\"flow\":null,") && !text.contains("tool_use_id"),
            "{text}"
        );
        for name in [
            EventName::GuardBlock,
            EventName::GuardIrreversible,
            EventName::Recovered,
        ] {
            assert_eq!(serde_json::to_value(name).unwrap(), name.as_str());
        }
    }

    #[test]
    fn other_events_and_garbage_are_not_denials() {
        assert_eq!(
            GuardEvent::from_line(br#"{"ts":"t","event":"persona_recovered","run_id":"r"}"#),
            None
        );
        assert_eq!(
            GuardEvent::from_line(br#"{"event":"persona_guard_allow"}"#),
            None
        );
        assert_eq!(GuardEvent::from_line(b"{"), None);
        let e = GuardEvent::from_line(br#"{"event":"persona_guard_block","extra":1}"#).unwrap();
        assert_eq!((e.ts, e.tool, e.reason), (None, None, None));
    }
}
