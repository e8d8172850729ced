//! One journaled action, as written to `journal.jsonl` (one JSON object per line).

use serde::{Deserialize, Serialize};

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

/// One action of the worker, as journaled. See README "Journal" for the line format.
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
    /// `harness_permission` (the harness's own permission check).
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
}

impl Action {
    /// The first host among the action's URLs, for one-line messages.
    pub fn first_host(&self) -> Option<&str> {
        self.urls.iter().find_map(|u| u.host.as_deref())
    }
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

/// Now, as RFC 3339 UTC with milliseconds: the journal's timestamp format.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

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
