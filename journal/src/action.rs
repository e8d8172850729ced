//! One journaled action, as written to `journal.jsonl` (one JSON object per line).

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize};

/// Which harness produced the action: the guard crate's, so every file names it the same way.
pub use leopold_guard::Harness;

/// What an action does, as far as the bound cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Loads a URL in the browser (or moves through its history).
    Navigate,
    /// Clicks, taps or selects an element.
    Click,
    /// Types or fills text (its length only is kept).
    Type,
    /// Submits a form: Enter, a `submit` flag, a submit tool.
    Submit,
    /// Fetches a URL outside the browser (`WebFetch`, a shell command naming a URL).
    Fetch,
    /// Anything else (snapshots, screenshots, file edits, ...).
    Other,
}

impl ActionKind {
    /// The name in journals and progress lines.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Navigate => "navigate",
            ActionKind::Click => "click",
            ActionKind::Type => "type",
            ActionKind::Submit => "submit",
            ActionKind::Fetch => "fetch",
            ActionKind::Other => "other",
        }
    }
}

/// How the call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and answered.
    Completed,
    /// The tool ran (or was attempted) and answered with an error.
    Errored,
    /// A PreToolUse hook (the guard) or the harness's own permission check refused it: it never ran.
    Denied,
    /// The call was issued but the stream ended before its result: it may have run.
    Unfinished,
}

impl Outcome {
    /// The name in journals and progress lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Errored => "errored",
            Outcome::Denied => "denied",
            Outcome::Unfinished => "unfinished",
        }
    }
}

/// A navigation the browser refused, as Playwright reported it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserBlock {
    /// `error_page` (the page ended on `chrome-error://`) or `name_not_resolved`
    /// (`net::ERR_NAME_NOT_RESOLVED`, e.g. a redirect to a refused host).
    pub how: String,
    /// The refused host, when the browser named it (an error page's title is the host); a
    /// refused redirect's target is not named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Where a URL attached to an action comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlRole {
    /// The URL the call asked for (`url` argument, a URL in a shell command).
    Target,
    /// The `href` of the link the call clicked, from the page snapshot the model saw.
    Href,
    /// The page the browser was on after the call (Playwright's `Page URL:` line).
    Page,
}

/// A URL reduced to what the journal may keep: never userinfo, query or fragment.
///
/// `scheme`, `host` and `path` are `None` when the URL does not parse without a base; `path` is
/// only kept for `http`/`https` URLs (other schemes carry data in their path: `javascript:`,
/// `data:`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlRef {
    /// Where the URL came from.
    pub role: UrlRole,
    /// The scheme, lowercase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// The host as the WHATWG URL parser serialises it (lowercase, punycode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The path (percent-encoded as the parser left it), for `http`/`https` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl UrlRef {
    /// Reduces a raw URL string to scheme, host and path, with the same parser the flow's
    /// [`judge_url`](leopold_flows::Flow::judge_url) uses, so the journal's host is the host a
    /// browser would contact.
    pub fn from_raw(role: UrlRole, raw: &str) -> UrlRef {
        match url::Url::parse(raw.trim()) {
            Ok(url) => {
                let scheme = url.scheme().to_owned();
                let web = scheme == "http" || scheme == "https";
                UrlRef {
                    role,
                    host: url.host().map(|h| h.to_string()),
                    path: web.then(|| url.path().to_owned()),
                    scheme: Some(scheme),
                }
            }
            Err(_) => UrlRef {
                role,
                scheme: None,
                host: None,
                path: None,
            },
        }
    }

    /// Whether this is an `http`/`https` URL with a host.
    pub fn is_web(&self) -> bool {
        matches!(self.scheme.as_deref(), Some("http" | "https")) && self.host.is_some()
    }
}

/// One action of the worker, as journaled. See docs/reference.md#journal for the line format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Position in the journal, from 1; assigned by [`JournalWriter::append`](crate::JournalWriter::append)
    /// (adapters leave it 0).
    pub seq: u64,
    /// When the action's outcome was observed, RFC 3339 UTC.
    pub ts: String,
    /// The harness that ran the worker.
    pub harness: Harness,
    /// The tool's name as hooks see it: `mcp__<server>__<tool>` for MCP tools, `WebFetch`, `Bash`, ...
    pub tool: String,
    /// The harness's id for the call (Claude `toolu_…`, Codex item id), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// What the action does.
    pub kind: ActionKind,
    /// Every URL the call carries or caused, reduced (see [`UrlRef`]); empty when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<UrlRef>,
    /// For clicks and submits: the element's accessible name when known (resolved from the page
    /// snapshot or the browser's own report), else the label the model gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The model's own description of the element (`element` argument), when it differs from `label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<String>,
    /// For typed text: its length in characters. The text itself is never kept (it may be a card number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_len: Option<u64>,
    /// How the call ended.
    pub outcome: Outcome,
    /// For a denial: its reason id, the same on both harnesses: the guard's (`outside_allowlist`,
    /// ...; from its event, or on Claude from the end of the `tool_result`'s error text), or
    /// `guard_unrunnable` (Claude's `onFailure: "block"`), `hook_denied` (another hook),
    /// `harness_tool_unavailable` (Claude refused a built-in it does not offer), `harness_permission`
    /// (the harness's own permission check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_reason: Option<String>,
    /// The validation verdict, once validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The browser itself refused to go where the call led (a provisioned browser's resolver
    /// rules): Playwright reported an error page or `net::ERR_NAME_NOT_RESOLVED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_blocked: Option<Box<BrowserBlock>>,
    /// The file name of the screenshot the call saved (Playwright's `browser_take_screenshot`),
    /// in the run's `browser/output/` folder. The name only: a report never follows a path from
    /// the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
    /// The call's arguments as [`leopold_guard::reduced_call`] reduces them (the form the
    /// gateway's own record keeps), for actions read from a harness's stream. Not journaled: the
    /// supervisor compares it with the gateway's record while the run lasts
    /// (docs/security.md#the-gateway); a journal line never carries it.
    #[serde(skip)]
    pub call: Option<serde_json::Value>,
}

impl Action {
    /// A call of `tool` at `ts`, of this kind and outcome, with nothing else known yet: no
    /// `seq` (the writer assigns it), no URL, label, reason or verdict.
    pub fn new(
        harness: Harness,
        ts: String,
        tool: &str,
        kind: ActionKind,
        outcome: Outcome,
    ) -> Action {
        Action {
            seq: 0,
            ts,
            harness,
            tool: tool.to_owned(),
            tool_use_id: None,
            kind,
            urls: vec![],
            label: None,
            element: None,
            typed_len: None,
            outcome,
            denied_reason: None,
            verdict: None,
            browser_blocked: None,
            screenshot: None,
            call: None,
        }
    }

    /// The first host among the action's URLs, for one-line messages.
    pub fn first_host(&self) -> Option<&str> {
        self.urls.iter().find_map(|u| u.host.as_deref())
    }

    /// The distinct hosts the action's URLs name, in order; a URL without a host is shown by its
    /// scheme (`javascript:`) or as `unparseable URL`.
    pub fn hosts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for u in &self.urls {
            let h = match (&u.host, &u.scheme) {
                (Some(h), _) => h.clone(),
                (None, Some(s)) => format!("{s}:"),
                (None, None) => "unparseable URL".into(),
            };
            if !out.contains(&h) {
                out.push(h);
            }
        }
        out
    }
}

/// An [`Action`] as replay reads it from a journal line: the same fields, accepted and refused by
/// the same rules (unknown fields, types, duplicates), with strings borrowed from the line unless
/// the JSON escapes them, so reading a line allocates nothing but its URL list. Validation judges
/// this form; [`Action::view`] gives it for an action in memory.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ActionView<'a> {
    pub seq: u64,
    #[serde(borrow)]
    pub ts: Cow<'a, str>,
    pub harness: Harness,
    #[serde(borrow)]
    pub tool: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub tool_use_id: Option<Cow<'a, str>>,
    pub kind: ActionKind,
    #[serde(default, borrow)]
    pub urls: Vec<UrlView<'a>>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub label: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub element: Option<Cow<'a, str>>,
    #[serde(default)]
    pub typed_len: Option<u64>,
    pub outcome: Outcome,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub denied_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub verdict: Option<Cow<'a, Verdict>>,
    #[serde(default)]
    pub browser_blocked: Option<Cow<'a, BrowserBlock>>,
    /// Read so a line is accepted exactly as [`Action`] accepts it; replay does not judge it.
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub screenshot: Option<Cow<'a, str>>,
    /// The hash chain's link (a property of the line, not of the action): the SHA-256 of the line
    /// before, in hex. Absent in version 1 journals.
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub prev: Option<Cow<'a, str>>,
}

impl ActionView<'_> {
    /// The action this line records, owning its strings (the chain's link is the line's, not
    /// the action's, and is dropped).
    pub(crate) fn to_action(&self) -> Action {
        fn s(o: &Option<Cow<'_, str>>) -> Option<String> {
            o.as_deref().map(str::to_owned)
        }
        Action {
            seq: self.seq,
            ts: self.ts.as_ref().to_owned(),
            harness: self.harness,
            tool: self.tool.as_ref().to_owned(),
            tool_use_id: s(&self.tool_use_id),
            kind: self.kind,
            urls: self
                .urls
                .iter()
                .map(|u| UrlRef {
                    role: u.role,
                    scheme: s(&u.scheme),
                    host: s(&u.host),
                    path: s(&u.path),
                })
                .collect(),
            label: s(&self.label),
            element: s(&self.element),
            typed_len: self.typed_len,
            outcome: self.outcome,
            denied_reason: s(&self.denied_reason),
            verdict: self.verdict.as_deref().cloned(),
            browser_blocked: self.browser_blocked.as_deref().map(|b| Box::new(b.clone())),
            screenshot: s(&self.screenshot),
            call: None,
        }
    }
}

/// A [`UrlRef`] in an [`ActionView`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UrlView<'a> {
    pub role: UrlRole,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub scheme: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub host: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "opt_str")]
    pub path: Option<Cow<'a, str>>,
}

impl UrlView<'_> {
    /// [`UrlRef::is_web`].
    pub fn is_web(&self) -> bool {
        matches!(self.scheme.as_deref(), Some("http" | "https")) && self.host.is_some()
    }
}

impl Action {
    /// Reads one action line of a journal of any version (the chain's `prev` accepted and
    /// dropped; every other rule as for `Action` itself). Checking the chain is replay's job.
    ///
    /// # Errors
    ///
    /// The parser's error when the line is not an action.
    pub fn from_journal_line(line: &[u8]) -> Result<Action, serde_json::Error> {
        serde_json::from_slice::<ActionView<'_>>(line).map(|v| v.to_action())
    }

    /// This action as validation judges it, borrowing every string.
    pub(crate) fn view(&self) -> ActionView<'_> {
        fn s(o: &Option<String>) -> Option<Cow<'_, str>> {
            o.as_deref().map(Cow::Borrowed)
        }
        ActionView {
            seq: self.seq,
            ts: Cow::Borrowed(&self.ts),
            harness: self.harness,
            tool: Cow::Borrowed(&self.tool),
            tool_use_id: s(&self.tool_use_id),
            kind: self.kind,
            urls: self
                .urls
                .iter()
                .map(|u| UrlView {
                    role: u.role,
                    scheme: s(&u.scheme),
                    host: s(&u.host),
                    path: s(&u.path),
                })
                .collect(),
            label: s(&self.label),
            element: s(&self.element),
            typed_len: self.typed_len,
            outcome: self.outcome,
            denied_reason: s(&self.denied_reason),
            verdict: self.verdict.as_ref().map(Cow::Borrowed),
            browser_blocked: self.browser_blocked.as_deref().map(Cow::Borrowed),
            screenshot: s(&self.screenshot),
            prev: None,
        }
    }
}

/// An optional string, borrowed from the input when it has no escapes. (serde borrows a bare
/// `Cow<str>` field with `#[serde(borrow)]`, but not one inside an `Option`.)
fn opt_str<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct Str<'a>(Cow<'a, str>);
    struct StrVisitor<'a>(PhantomData<&'a ()>);
    impl<'de: 'a, 'a> serde::de::Visitor<'de> for StrVisitor<'a> {
        type Value = Str<'a>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
            Ok(Str(Cow::Borrowed(v)))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Str<'a>, E> {
            Ok(Str(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Str<'a>, E> {
            Ok(Str(Cow::Owned(v)))
        }
    }
    impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_string(StrVisitor(PhantomData))
        }
    }
    Ok(Option::<Str<'a>>::deserialize(d)?.map(|s| s.0))
}

/// The verdict of [`validate`](crate::validate) on one action.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case", deny_unknown_fields)]
pub enum Verdict {
    /// Within the flow's bounds (a denied action is always `ok`: it never ran).
    Ok,
    /// Outside the flow's bounds.
    Violation {
        /// The rule that decided: `hook_failed_open`, `left_allowlist`, or the flow's
        /// irreversibility rule (`irreversible.click_labels "…"`, `builtin payment: label "…"`, ...).
        rule: String,
        /// What matched: `host <host>`, `label "<label>"`, `tool <tool>`, `path <path>`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

impl Verdict {
    /// True for [`Verdict::Violation`].
    pub fn is_violation(&self) -> bool {
        matches!(self, Verdict::Violation { .. })
    }
}

pub use leopold_guard::now_rfc3339;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_is_the_name_on_disk() {
        use ActionKind::*;
        for k in [Navigate, Click, Type, Submit, Fetch, Other] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        for o in [
            Outcome::Completed,
            Outcome::Errored,
            Outcome::Denied,
            Outcome::Unfinished,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
    }

    #[test]
    fn url_ref_drops_userinfo_query_and_fragment() {
        let u = UrlRef::from_raw(
            UrlRole::Target,
            "https://user:secret@Staging.Example.com/a/b?token=x#frag",
        );
        assert_eq!(u.scheme.as_deref(), Some("https"));
        assert_eq!(u.host.as_deref(), Some("staging.example.com"));
        assert_eq!(u.path.as_deref(), Some("/a/b"));
        let line = serde_json::to_string(&u).unwrap();
        assert!(!line.contains("secret") && !line.contains("token") && !line.contains("frag"));
        assert!(!line.contains("://"));
    }

    #[test]
    fn url_ref_keeps_no_path_for_non_web_schemes() {
        let u = UrlRef::from_raw(UrlRole::Target, "javascript:alert(document.cookie)");
        assert_eq!(u.scheme.as_deref(), Some("javascript"));
        assert_eq!(u.host, None);
        assert_eq!(u.path, None);
        assert!(!u.is_web());
    }

    #[test]
    fn url_ref_of_garbage_is_empty() {
        let u = UrlRef::from_raw(UrlRole::Target, "//no-scheme.example/x");
        assert_eq!((u.scheme, u.host, u.path), (None, None, None));
    }

    /// Every line the journal's own type reads, the view reads to the same action (borrowing
    /// where it can), and every line it refuses, the view refuses with the same message.
    #[test]
    fn the_view_reads_lines_exactly_as_the_action_does() {
        let lines = [
            r#"{"seq":1,"ts":"t","harness":"claude","tool":"mcp__b__browser_click","kind":"click","urls":[{"role":"page","scheme":"https","host":"a.example","path":"/x"}],"label":"Pay \u0020now","element":"e","outcome":"completed","verdict":{"result":"violation","rule":"r","detail":"d"},"browser_blocked":{"how":"error_page","host":"b.example"}}"#,
            r#"{"seq":2,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"denied","denied_reason":"outside_allowlist","tool_use_id":null,"label":null,"typed_len":3}"#,
            r#"{"seq":3,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"denied","extra":1}"#,
            r#"{"seq":4,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"denied","label":5}"#,
            r#"{"seq":5,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"denied","label":"a","label":"b"}"#,
            r#"{"seq":6,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"nope"}"#,
            r#"{"seq":7,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"denied","urls":[{"role":"page","port":1}]}"#,
            r#"{"seq":8,"ts":"t","harness":"codex","kind":"other","outcome":"denied"}"#,
            r#"{"seq":9,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"denied","browser_blocked":{"how":"x","why":1}}"#,
            r#"{"seq":10,"ts":"t","harness":"codex","tool":"x","kind":"other","outcome":"denied","verdict":{"result":"ok","rule":"x"}}"#,
            r#"[1,2]"#,
        ];
        for line in lines {
            let owned = serde_json::from_str::<Action>(line);
            let view = serde_json::from_str::<ActionView<'_>>(line);
            match (owned, view) {
                (Ok(a), Ok(v)) => {
                    assert_eq!(a.view(), v, "{line}");
                    assert_eq!(v.to_action(), a, "{line}");
                }
                // The view also knows the line's chain link, `prev`: the one name it adds.
                (Err(a), Err(v)) => assert_eq!(
                    a.to_string(),
                    v.to_string().replace(", `prev`", ""),
                    "{line}"
                ),
                (a, v) => panic!("{line}: action {a:?}, view {v:?}"),
            }
        }
        // A chained line reads to the same action as the line without its link.
        let chained = lines[0].replace(r#""}}"#, r#""},"prev":"00"}"#);
        assert_ne!(chained, lines[0]);
        assert_eq!(
            Action::from_journal_line(chained.as_bytes()).unwrap(),
            serde_json::from_str::<Action>(lines[0]).unwrap()
        );
        let v: ActionView<'_> = serde_json::from_str(lines[0]).unwrap();
        assert!(matches!(v.tool, Cow::Borrowed(_)));
        assert!(matches!(v.urls[0].host, Some(Cow::Borrowed(_))));
        assert!(matches!(v.label, Some(Cow::Owned(ref l)) if l == "Pay  now"));
    }

    #[test]
    fn verdict_serialises_tagged() {
        let v = Verdict::Violation {
            rule: "hook_failed_open".into(),
            detail: Some("host evil.example".into()),
        };
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"result":"violation","rule":"hook_failed_open","detail":"host evil.example"}"#
        );
        assert_eq!(
            serde_json::to_string(&Verdict::Ok).unwrap(),
            r#"{"result":"ok"}"#
        );
    }
}
