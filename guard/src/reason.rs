//! What the guard answers, and why: the verdict, the named reasons, and the one stderr line.

/// The guard's answer to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a verdict that is dropped lets the call through"]
pub enum Verdict {
    /// Let the call run: exit 0, nothing printed.
    Allow,
    /// Refuse the call: exit 2, one line on stderr, one line in `events.jsonl`.
    Deny(Denial),
}

impl Verdict {
    /// True only for [`Verdict::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow)
    }

    /// The denial's reason, if denied.
    pub fn reason(&self) -> Option<Reason> {
        match self {
            Verdict::Allow => None,
            Verdict::Deny(d) => Some(d.reason),
        }
    }
}

/// Why a call was denied, with what may be shown: a host (never a URL) and a detail that never
/// carries tool input (a scheme, a rule, the name of a missing field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The named reason.
    pub reason: Reason,
    /// The host judged, when there was one (as the URL parser serialises it).
    pub host: Option<String>,
    /// A short, safe detail: the scheme of a non-web URL, the irreversibility rule that matched,
    /// or what is wrong with a state file.
    pub detail: Option<String>,
}

impl Denial {
    /// A denial with a reason only.
    pub fn new(reason: Reason) -> Denial {
        Denial {
            reason,
            host: None,
            detail: None,
        }
    }

    /// Adds the host judged.
    pub fn with_host(mut self, host: impl Into<String>) -> Denial {
        self.host = Some(host.into());
        self
    }

    /// Adds a detail.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Denial {
        self.detail = Some(detail.into());
        self
    }
}

/// Every reason the guard denies for. The ids ([`Reason::id`]) are stable: they appear in
/// `events.jsonl`, at the end of the stderr line, and in docs/security.md#the-guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// An http(s) URL whose host is not on the flow's allowlist.
    OutsideAllowlist,
    /// A URL whose scheme is not http or https (`javascript:`, `data:`, `file:`, `ws:`, ...).
    NotWebScheme,
    /// A string under a URL-like key, or a navigation-looking string, that does not parse as an
    /// absolute URL (scheme-relative, scheme-less, invalid host, ...).
    UnparseableUrl,
    /// A URL-like key whose value is not a string (a number, an object, null, ...).
    NonStringUrl,
    /// The tool's name matches an irreversibility rule.
    IrreversibleTool,
    /// A name of the element a call activates (click, check, select, drag, submit, a dialog's
    /// message) matches an irreversibility rule.
    IrreversibleLabel,
    /// A URL's path matches an irreversibility rule.
    IrreversiblePath,
    /// The payload on stdin is over [`crate::MAX_PAYLOAD_BYTES`].
    PayloadTooLarge,
    /// Reading stdin failed.
    PayloadUnreadable,
    /// The payload is not a JSON object.
    PayloadNotJson,
    /// The payload lacks `tool_name` (a string) or `tool_input`.
    PayloadMissingField,
    /// Looking for `.leopold/` above the session's cwd failed with an I/O error.
    ProjectRootUnreadable,
    /// `.leopold/persona/ACTIVE.json` exists but cannot be read.
    ActiveStateUnreadable,
    /// `.leopold/persona/ACTIVE.json` is not JSON, or lacks `active`, `flow` or `flow_path`.
    ActiveStateMalformed,
    /// The active flow file cannot be read.
    FlowUnreadable,
    /// The active flow file does not parse or validate.
    FlowInvalid,
    /// The flow file's `name` is not the flow ACTIVE.json names.
    FlowMismatch,
    /// The guard itself failed (a panic): deny.
    InternalError,
    /// In a provisioned browser run, a tool that can do anything the page can
    /// (`browser_evaluate`, ...) that the flow's `allow_tools` does not name.
    DangerousBrowserTool,
    /// In a provisioned browser run whose flow has click rules, an element reference the
    /// supervisor's ref map does not know (stale, not yet seen, or a selector), so the element's
    /// real name cannot be judged.
    UnknownElementRef,
    /// `ACTIVE.json`'s `browser` names a ref map that exists but cannot be read or parsed.
    RefMapUnreadable,
    /// In a provisioned browser run whose flow has click rules, a key that can activate the
    /// focused element, which the ref map cannot name, on a page holding an element whose name
    /// matches a rule (or before any snapshot).
    FocusUnjudgeable,
    /// In a provisioned browser run whose flow has click rules, accepting a dialog whose message
    /// Playwright's answers did not show.
    DialogUnknown,
    /// The gateway: a tool that is not on its list of browser tools a persona needs
    /// (docs/security.md#the-gateway), or a dangerous one the flow did not opt into.
    ToolNotListed,
    /// The gateway: a `filename` (or other path) argument that resolves outside the run's
    /// browser output folder (absolute, `..`, a symlink).
    FilenameOutsideOutput,
    /// The gateway: a message it cannot parse or judge (not JSON-RPC, no tool name, arguments
    /// that are not an object, over its size limit).
    GatewayUnjudgeable,
}

impl Reason {
    /// Every reason, for docs and tests.
    pub const ALL: &'static [Reason] = &[
        Reason::OutsideAllowlist,
        Reason::NotWebScheme,
        Reason::UnparseableUrl,
        Reason::NonStringUrl,
        Reason::IrreversibleTool,
        Reason::IrreversibleLabel,
        Reason::IrreversiblePath,
        Reason::PayloadTooLarge,
        Reason::PayloadUnreadable,
        Reason::PayloadNotJson,
        Reason::PayloadMissingField,
        Reason::ProjectRootUnreadable,
        Reason::ActiveStateUnreadable,
        Reason::ActiveStateMalformed,
        Reason::FlowUnreadable,
        Reason::FlowInvalid,
        Reason::FlowMismatch,
        Reason::InternalError,
        Reason::DangerousBrowserTool,
        Reason::UnknownElementRef,
        Reason::RefMapUnreadable,
        Reason::FocusUnjudgeable,
        Reason::DialogUnknown,
        Reason::ToolNotListed,
        Reason::FilenameOutsideOutput,
        Reason::GatewayUnjudgeable,
    ];

    /// The stable snake_case id.
    pub fn id(self) -> &'static str {
        match self {
            Reason::OutsideAllowlist => "outside_allowlist",
            Reason::NotWebScheme => "not_web_scheme",
            Reason::UnparseableUrl => "unparseable_url",
            Reason::NonStringUrl => "non_string_url",
            Reason::IrreversibleTool => "irreversible_tool",
            Reason::IrreversibleLabel => "irreversible_label",
            Reason::IrreversiblePath => "irreversible_path",
            Reason::PayloadTooLarge => "payload_too_large",
            Reason::PayloadUnreadable => "payload_unreadable",
            Reason::PayloadNotJson => "payload_not_json",
            Reason::PayloadMissingField => "payload_missing_field",
            Reason::ProjectRootUnreadable => "project_root_unreadable",
            Reason::ActiveStateUnreadable => "active_state_unreadable",
            Reason::ActiveStateMalformed => "active_state_malformed",
            Reason::FlowUnreadable => "flow_unreadable",
            Reason::FlowInvalid => "flow_invalid",
            Reason::FlowMismatch => "flow_mismatch",
            Reason::InternalError => "internal_error",
            Reason::DangerousBrowserTool => "dangerous_browser_tool",
            Reason::UnknownElementRef => "unknown_element_ref",
            Reason::RefMapUnreadable => "ref_map_unreadable",
            Reason::FocusUnjudgeable => "focus_unjudgeable",
            Reason::DialogUnknown => "dialog_unknown",
            Reason::ToolNotListed => "tool_not_listed",
            Reason::FilenameOutsideOutput => "filename_outside_output",
            Reason::GatewayUnjudgeable => "gateway_unjudgeable",
        }
    }

    /// Parses an id back (for test corpora and the journal).
    pub fn from_id(id: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.id() == id)
    }

    /// The `event` field of the `events.jsonl` line.
    pub fn event(self) -> crate::EventName {
        match self {
            Reason::IrreversibleTool | Reason::IrreversibleLabel | Reason::IrreversiblePath => {
                crate::EventName::GuardIrreversible
            }
            _ => crate::EventName::GuardBlock,
        }
    }
}

/// Every stderr line starts with this.
pub const PREFIX: &str = "Leopold persona guard: ";

const TAIL: &str =
    "; the persona stays inside the flow's bounds: journal the wall as a finding instead of retrying";

/// The one stderr line for a denial (without the trailing newline). `flow` is the flow's name
/// when known; `tool` the tool's name. Both are already made safe by the caller.
pub fn message(denial: &Denial, flow: Option<&str>, tool: Option<&str>) -> String {
    let flow = flow.unwrap_or("(unknown)");
    let host = denial.host.as_deref().unwrap_or("(none)");
    let detail = denial.detail.as_deref().unwrap_or("");
    let what = match denial.reason {
        Reason::OutsideAllowlist => format!(
            "navigation to host {host:?} is outside the domain allowlist of flow {flow:?}"
        ),
        Reason::NotWebScheme => match &denial.host {
            Some(h) => format!(
                "a {detail:?} URL (host {h:?}) is not an http(s) page on the domain allowlist of flow {flow:?}"
            ),
            None => format!(
                "a {detail:?} URL is not an http(s) page on the domain allowlist of flow {flow:?}"
            ),
        },
        Reason::UnparseableUrl => format!(
            "a URL in the call does not parse as an absolute http(s) URL (scheme-relative, \
             scheme-less or invalid), so its host cannot be judged against the domain allowlist \
             of flow {flow:?}"
        ),
        Reason::NonStringUrl => format!(
            "a URL-like key in the call holds a value that is not a string, so it cannot be \
             judged against the domain allowlist of flow {flow:?}"
        ),
        Reason::IrreversibleTool => format!(
            "tool {:?} is an irreversible action under flow {flow:?} ({detail})",
            tool.unwrap_or("(unknown)")
        ),
        Reason::IrreversibleLabel => format!(
            "this call activates (clicks, ticks, chooses, drags, submits or accepts) an element \
             labelled as an irreversible action under \
             flow {flow:?} ({detail})"
        ),
        Reason::IrreversiblePath => format!(
            "navigation to host {host:?} reaches a path that is an irreversible action under flow \
             {flow:?} ({detail})"
        ),
        Reason::PayloadTooLarge => format!(
            "the hook payload is over {} bytes, too large to judge, while flow {flow:?} is active",
            crate::MAX_PAYLOAD_BYTES
        ),
        Reason::PayloadUnreadable => format!(
            "the hook payload could not be read from stdin ({detail}) while flow {flow:?} is active"
        ),
        Reason::PayloadNotJson => format!(
            "the hook payload is not a JSON object, so the call cannot be judged while flow {flow:?} is active"
        ),
        Reason::PayloadMissingField => format!(
            "the hook payload lacks {detail}, so the call cannot be judged while flow {flow:?} is active"
        ),
        Reason::ProjectRootUnreadable => format!(
            "cannot look for .leopold/ above the session's working directory ({detail}), so the \
             call cannot be judged"
        ),
        Reason::ActiveStateUnreadable => format!(
            "cannot read .leopold/persona/ACTIVE.json ({detail}); if no persona run is active, \
             run `leopold persona recover`"
        ),
        Reason::ActiveStateMalformed => format!(
            ".leopold/persona/ACTIVE.json is malformed ({detail}); if no persona run is active, \
             run `leopold persona recover`"
        ),
        Reason::FlowUnreadable => {
            format!("cannot read the file of the active flow {flow:?} ({detail})")
        }
        Reason::FlowInvalid => format!("the file of the active flow {flow:?} is invalid ({detail})"),
        Reason::FlowMismatch => format!(
            "the flow file named by .leopold/persona/ACTIVE.json is not the active flow {flow:?} ({detail})"
        ),
        Reason::InternalError => "the guard failed internally, so the call is denied".to_owned(),
        Reason::DangerousBrowserTool => format!(
            "tool {:?} can do anything the page can, so it is off in a provisioned browser unless \
             flow {flow:?} names it in `allow_tools`",
            tool.unwrap_or("(unknown)")
        ),
        Reason::UnknownElementRef => format!(
            "the element reference {detail} is not in the latest page snapshot the supervisor \
             saw, so its real name cannot be judged against the click rules of flow {flow:?}; \
             take a fresh browser_snapshot and use its refs"
        ),
        Reason::RefMapUnreadable => format!(
            "the run's element ref map cannot be read ({detail}), so clicks cannot be judged \
             against the click rules of flow {flow:?}"
        ),
        Reason::FocusUnjudgeable => format!(
            "this key acts on whichever element has focus, which Leopold cannot name, and {detail}, \
             an irreversible action under flow {flow:?}; activate elements by their ref instead"
        ),
        Reason::DialogUnknown => format!(
            "accepting a dialog whose message Leopold has not seen cannot be judged against the \
             click rules of flow {flow:?}; dismiss it (`accept: false`) or take a fresh snapshot"
        ),
        Reason::ToolNotListed => format!(
            "tool {:?} is not one of the browser tools Leopold's gateway offers a persona under \
             flow {flow:?}",
            tool.unwrap_or("(unknown)")
        ),
        Reason::FilenameOutsideOutput => format!(
            "a file name in the call ({detail}) resolves outside the run's browser output folder, \
             so the browser may not write it under flow {flow:?}"
        ),
        Reason::GatewayUnjudgeable => format!(
            "Leopold's gateway cannot judge this message ({detail}), so it is not forwarded to \
             the browser while flow {flow:?} is active"
        ),
    };
    let line = format!("{PREFIX}{what}{TAIL} (reason: {})", denial.reason.id());
    // One line, whatever a detail held.
    line.replace(['\n', '\r'], " ")
}

/// Makes a string from the payload or a state file safe to print or journal: control characters
/// replaced, capped in length, and withheld entirely if it could be (or carry) a URL.
pub fn safe_text(s: &str, max_chars: usize) -> Option<String> {
    if s.contains("://") || s.contains(":\\\\") || s.contains(":/\\") || s.contains(":\\/") {
        return None;
    }
    let mut out: String = s
        .chars()
        .take(max_chars)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().count() > max_chars {
        out.push('…');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_snake_case_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for r in Reason::ALL {
            assert!(seen.insert(r.id()), "duplicate id {}", r.id());
            assert!(r.id().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert_eq!(Reason::from_id(r.id()), Some(*r));
        }
    }

    #[test]
    fn every_message_is_one_prefixed_line_with_the_tail() {
        for r in Reason::ALL {
            let d = Denial::new(*r)
                .with_host("evil.example")
                .with_detail("x\ny");
            let m = message(&d, Some("checkout"), Some("mcp__b__navigate"));
            assert!(m.starts_with(PREFIX), "{m}");
            assert!(!m.contains('\n'), "{m}");
            assert!(m.contains("journal the wall as a finding"), "{m}");
            assert!(m.ends_with(&format!("(reason: {})", r.id())), "{m}");
        }
    }

    #[test]
    fn the_issue_message_form_for_an_outside_host() {
        let d = Denial::new(Reason::OutsideAllowlist).with_host("prod-dashboard.example.org");
        assert_eq!(
            message(&d, Some("checkout"), None),
            "Leopold persona guard: navigation to host \"prod-dashboard.example.org\" is outside \
             the domain allowlist of flow \"checkout\"; the persona stays inside the flow's bounds: \
             journal the wall as a finding instead of retrying (reason: outside_allowlist)"
        );
    }

    #[test]
    fn safe_text_withholds_urls_and_controls() {
        assert_eq!(safe_text("https://x.example/?t=1", 100), None);
        assert_eq!(safe_text("a\tb", 100).as_deref(), Some("a?b"));
        assert_eq!(safe_text("abcdef", 3).as_deref(), Some("abc…"));
    }
}
