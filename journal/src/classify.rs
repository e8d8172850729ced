//! From a tool call (name, arguments, result text) to an [`Action`]: which kind it is, which URLs
//! it carries, what it clicked, how much it typed. Shared by both adapters and the guard-event
//! reader, so a tool is classified the same way whichever harness ran it.
//!
//! Known tool families: the `personastub` tools (`navigate`, `click`, `type`), Playwright MCP's
//! `browser_*` tools, Claude's `WebFetch` and `Bash`, Codex's `command_execution` items.
//! Unknown tools with a `url` argument are navigations; anything else is `other`.

use std::collections::HashMap;

use leopold_flows::catalogue::{self, Activation, Does, Tool};
use serde_json::Value;

use crate::action::{Action, ActionKind, Harness, Outcome, UrlRef, UrlRole};

/// The tool's own name, lowercased: `mcp__browser__browser_click` → `browser_click`
/// ([`leopold_guard::bare_tool`], the one reading of `mcp__<server>__<tool>`).
pub fn bare_tool_name(tool: &str) -> String {
    leopold_guard::bare_tool(tool).to_ascii_lowercase()
}

/// The kind of a tool call, from its name and arguments: for a browser tool the catalogue knows
/// ([`leopold_flows::catalogue`], found as the guard finds it), what the catalogue says it does
/// with these arguments; for any other tool, its family's name.
pub fn classify(tool: &str, args: &Value) -> ActionKind {
    if let Some(entry) = leopold_guard::catalogue_entry(tool) {
        return catalogued(entry, args);
    }
    let bare = bare_tool_name(tool);
    match bare.as_str() {
        "webfetch" | "fetch" | "http_request" | "http_get" | "curl" => ActionKind::Fetch,
        // Tools of other servers, and Playwright tools a later version may add (not catalogued,
        // so never offered; journaled by their names' family).
        "browser_navigate_forward" | "browser_reload" | "goto" | "open_url" | "visit" | "open" => {
            ActionKind::Navigate
        }
        "tap" | "browser_check" | "browser_uncheck" | "check" | "uncheck" => ActionKind::Click,
        "fill" | "input_text" => {
            if args.get("submit").and_then(Value::as_bool) == Some(true) {
                ActionKind::Submit
            } else {
                ActionKind::Type
            }
        }
        "press" | "key" => {
            let key = args.get("key").and_then(Value::as_str).unwrap_or("");
            if catalogue::key_activates(key) {
                ActionKind::Submit
            } else {
                ActionKind::Other
            }
        }
        "submit" | "submit_form" | "browser_submit" => ActionKind::Submit,
        "bash" | "shell" | "command_execution" | "exec_command" => {
            if command_text(args).is_some_and(|c| !scan_web_urls(c).is_empty()) {
                ActionKind::Fetch
            } else {
                ActionKind::Other
            }
        }
        _ if bare.ends_with("_fetch") || bare.starts_with("fetch_") => ActionKind::Fetch,
        _ if args.get("url").is_some_and(Value::is_string) => ActionKind::Navigate,
        _ => ActionKind::Other,
    }
}

/// The kind of a catalogued browser tool's call. An activation is a click, a key or an accepted
/// dialog a submit (the journal judges the labels of both after the fact).
fn catalogued(tool: &Tool, args: &Value) -> ActionKind {
    let submit = args.get("submit").and_then(Value::as_bool) == Some(true);
    match (tool.does, catalogue::activation(tool, args)) {
        (Does::Navigate, _) => ActionKind::Navigate,
        (Does::Type | Does::Fill, _) if submit => ActionKind::Submit,
        (Does::Type, _) => ActionKind::Type,
        (Does::Fill, Activation::No) => ActionKind::Type,
        (_, Activation::Elements) => ActionKind::Click,
        (_, Activation::Focused | Activation::Dialog) => ActionKind::Submit,
        (_, Activation::No) if args.get("url").is_some_and(Value::is_string) => {
            ActionKind::Navigate
        }
        (_, Activation::No) => ActionKind::Other,
    }
}

fn command_text(args: &Value) -> Option<&str> {
    args.get("command").and_then(Value::as_str)
}

/// `http://` and `https://` URLs written literally in a text (a shell command), in order.
pub fn scan_web_urls(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("http") {
        let start = from + pos;
        let rest = &lower[start..];
        if rest.starts_with("http://") || rest.starts_with("https://") {
            let end = text[start..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | ')')
                })
                .map_or(text.len(), |e| start + e);
            out.push(&text[start..end]);
            from = end;
        } else {
            from = start + 4;
        }
    }
    out
}

/// One element of a Playwright page snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotElement {
    /// Its ARIA role (`button`, `link`, ...).
    pub role: String,
    /// Its accessible name, if the snapshot gives one.
    pub name: Option<String>,
    /// A link's target, reduced (the full URL is never kept).
    pub href: Option<UrlRef>,
}

/// Elements of the page snapshots seen so far, by `ref`, so a click `target: "e5"` described as
/// "the blue button" is journaled (and judged) as the button "Place order" it really was.
///
/// Bounded: past [`RefMap::MAX`] entries the map starts afresh (refs of old snapshots go stale
/// in Playwright anyway), so memory stays flat over a long run.
#[derive(Debug, Default)]
pub struct RefMap {
    map: HashMap<String, SnapshotElement>,
}

impl RefMap {
    /// The most refs kept.
    pub const MAX: usize = 20_000;

    /// Looks a ref up.
    pub fn get(&self, r: &str) -> Option<&SnapshotElement> {
        self.map.get(r)
    }

    /// Learns the refs of every snapshot line in a tool's result text (YAML like
    /// `- button "Place order" [ref=e5]`, a link's `- /url: …` on the next, deeper line).
    pub fn learn(&mut self, text: &str) {
        if !text.contains("[ref=") {
            return;
        }
        let mut last: Option<(String, usize)> = None;
        for line in text.lines() {
            let indent = line.len() - line.trim_start().len();
            let Some(item) = line.trim_start().strip_prefix("- ") else {
                continue;
            };
            if let Some(url) = item.strip_prefix("/url:") {
                if let Some((r, ind)) = &last {
                    if indent > *ind {
                        if let Some(el) = self.map.get_mut(r) {
                            el.href = Some(UrlRef::from_raw(UrlRole::Href, url.trim()));
                        }
                    }
                }
                continue;
            }
            let Some(el) = leopold_guard::browser::parse_snapshot_line(line) else {
                continue;
            };
            let Some(r) = el.reference else {
                continue;
            };
            if self.map.len() >= Self::MAX {
                self.map.clear();
            }
            self.map.insert(
                r.to_owned(),
                SnapshotElement {
                    role: el.role.to_owned(),
                    name: el.name,
                    href: None,
                },
            );
            last = Some((r.to_owned(), indent));
        }
    }
}

/// Reads a quoted string's rest (after its opening quote) up to the closing quote, unescaping `\x`.
fn read_quoted_rest(quote: char) -> impl Fn(&str) -> Option<String> {
    move |rest: &str| {
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?),
                c if c == quote => return Some(out),
                c => out.push(c),
            }
        }
        None
    }
}

/// The accessible name in Playwright's report of the code it ran:
/// ``await page.getByRole('button', { name: 'Place order' }).click();`` → `Place order`.
pub fn playwright_resolved_name(result: &str) -> Option<String> {
    let code = result.split("### Ran Playwright code").nth(1)?;
    let code = code.split("\n###").next().unwrap_or(code);
    // Only the `name` option of a `getByRole(...)` locator: typed text (`.fill('…')`) is never read.
    let call = &code[code.find("getByRole(")?..];
    // The options object `{ name: '…' }` must open before the call closes.
    let (open, close) = (call.find('{')?, call.find(')')?);
    if close < open {
        return None;
    }
    let call = &call[open..call.find('}').unwrap_or(call.len())];
    let at = call.find("name: ")? + "name: ".len();
    let rest = &call[at..];
    let quote = rest
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"' | '`'))?;
    read_quoted_rest(quote)(&rest[quote.len_utf8()..])
}

/// The page URL Playwright reports after a call (`- Page URL: …`), reduced; only `http`/`https`
/// pages are kept (a browser error page is not a place the browser went).
pub fn playwright_page_url(result: &str) -> Option<UrlRef> {
    let line = result
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("- Page URL:"))?;
    let u = UrlRef::from_raw(UrlRole::Page, line.trim());
    u.is_web().then_some(u)
}

/// Whether a Playwright result (or error) says the browser refused to go where the call led:
/// the page ended on `chrome-error://` (its title is then the refused host), or navigation
/// failed with `net::ERR_NAME_NOT_RESOLVED`, or with the errors Leopold's proxy causes for a
/// host off the allowlist. Only a host-shaped title is kept.
pub fn browser_blocked(text: &str) -> Option<crate::action::BrowserBlock> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim_start().strip_prefix(name))
            .map(str::trim)
    };
    if field("- Page URL:").is_some_and(|u| u.starts_with("chrome-error://")) {
        let host = field("- Page Title:")
            .filter(|t| {
                !t.is_empty()
                    && t.len() <= 253
                    && t.bytes().all(|b| {
                        b.is_ascii_alphanumeric()
                            || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']')
                    })
            })
            .map(|t| t.to_ascii_lowercase());
        return Some(crate::action::BrowserBlock {
            how: "error_page".into(),
            host,
        });
    }
    if text.contains("net::ERR_NAME_NOT_RESOLVED") {
        return Some(crate::action::BrowserBlock {
            how: "name_not_resolved".into(),
            host: None,
        });
    }
    // Leopold's proxy refuses a host off the allowlist by closing the connection (plain http)
    // or answering the tunnel with 403 (https): Chromium names these two errors.
    if text.contains("net::ERR_EMPTY_RESPONSE")
        || text.contains("net::ERR_TUNNEL_CONNECTION_FAILED")
    {
        return Some(crate::action::BrowserBlock {
            how: "refused_by_proxy".into(),
            host: None,
        });
    }
    // Playwright's navigation that ended on the browser's error page instead (a page script
    // sent it to a refused host while `goto` waited).
    text.contains("interrupted by another navigation to \"chrome-error://")
        .then(|| crate::action::BrowserBlock {
            how: "error_page".into(),
            host: None,
        })
}

/// Builds the action of one tool call. `result` is the tool's answer text, when it has one
/// (errors and denials carry no snapshot); `refs` are the snapshot refs seen so far.
#[allow(clippy::too_many_arguments)] // one flat call site per adapter reads better than a builder
pub fn build_action(
    harness: Harness,
    tool: &str,
    tool_use_id: Option<String>,
    args: &Value,
    outcome: Outcome,
    result: Option<&str>,
    refs: &RefMap,
    ts: String,
) -> Action {
    let kind = classify(tool, args);
    // Every URL the call carries, found exactly as the guard finds them (nested keys, batches,
    // navigation-looking strings anywhere): a call that ran with one the guard would have judged
    // outside means the hook failed open.
    let mut urls = Vec::new();
    let _ = leopold_guard::walk_call(args, &mut |item| {
        if let leopold_guard::CallItem::Url(raw) = item {
            urls.push(UrlRef::from_raw(UrlRole::Target, raw));
        }
        Ok::<(), ()>(())
    });
    if let Some(cmd) = command_text(args) {
        for raw in scan_web_urls(cmd) {
            urls.push(UrlRef::from_raw(UrlRole::Target, raw));
        }
    }

    let str_arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
    let given_label =
        str_arg("label").or_else(|| str_arg("text").filter(|_| kind == ActionKind::Click));
    let mut element = str_arg("element");
    let snapshot = ["ref", "target"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .and_then(|r| refs.get(r));
    if let Some(href) = snapshot.and_then(|el| el.href.clone()) {
        urls.push(href);
    }
    let mut label = match kind {
        ActionKind::Click | ActionKind::Submit | ActionKind::Type => result
            .and_then(playwright_resolved_name)
            .or_else(|| snapshot.and_then(|el| el.name.clone()))
            .or(given_label),
        _ => given_label,
    };
    if matches!(kind, ActionKind::Submit) && label.is_none() {
        label = str_arg("key");
    }
    if kind == ActionKind::Type
        || (matches!(kind, ActionKind::Submit | ActionKind::Click) && args.get("fields").is_some())
    {
        if let Some(fields) = args.get("fields").and_then(Value::as_array) {
            let names: Vec<&str> = fields
                .iter()
                .filter_map(|f| f.get("name").and_then(Value::as_str))
                .collect();
            if label.is_none() && !names.is_empty() {
                label = Some(names.join(", "));
            }
        }
    }
    if label.is_none() {
        label = element.take();
    }
    if element.is_some() && element == label {
        element = None;
    }
    let typed_len = typed_len(args);
    if let Some(page) = result.and_then(playwright_page_url) {
        urls.push(page);
    }

    Action {
        seq: 0,
        ts,
        harness,
        tool: tool.to_owned(),
        tool_use_id,
        kind,
        urls,
        label,
        element,
        typed_len,
        outcome,
        denied_reason: None,
        verdict: None,
        browser_blocked: None,
        screenshot: result.and_then(playwright_screenshot_file),
        call: Some(leopold_guard::reduced_call(tool, args)),
    }
}

/// The file name of the screenshot a Playwright result reports saving
/// (`- [Screenshot of viewport](<dir>/page-….png)`): the name only, never the path the stream
/// gives, so a report looks for it in the run's own browser output folder and nowhere else.
pub fn playwright_screenshot_file(result: &str) -> Option<String> {
    result.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix("- [Screenshot of ")?;
        let target = rest.split_once("](")?.1.strip_suffix(')')?;
        let name = target.rsplit(['/', '\\']).next()?;
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        let plain = !name.starts_with('.') && !name.contains(['<', '>', '"', '\0']);
        (plain && matches!(ext.as_str(), "png" | "jpeg" | "jpg" | "webp")).then(|| name.to_owned())
    })
}

/// Characters typed by the call: `text`, `value`, or the sum over `fields[].value`.
fn typed_len(args: &Value) -> Option<u64> {
    let count = |v: &Value| v.as_str().map(|s| s.chars().count() as u64);
    if let Some(n) = args.get("text").and_then(count) {
        return Some(n);
    }
    if let Some(n) = args.get("value").and_then(count) {
        return Some(n);
    }
    let fields = args.get("fields")?.as_array()?;
    Some(
        fields
            .iter()
            .filter_map(|f| f.get("value").and_then(count))
            .sum(),
    )
}

/// Text of a tool result: a string, or the `text` of every `{type:"text"}` block, joined.
pub fn result_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_are_classified() {
        let cases = [
            (
                "mcp__personastub__navigate",
                json!({"url":"https://a.example/"}),
                ActionKind::Navigate,
            ),
            (
                "mcp__personastub__click",
                json!({"label":"Go"}),
                ActionKind::Click,
            ),
            (
                "mcp__personastub__type",
                json!({"text":"x"}),
                ActionKind::Type,
            ),
            (
                "mcp__browser__browser_navigate",
                json!({"url":"https://a.example/"}),
                ActionKind::Navigate,
            ),
            (
                "mcp__browser__browser_click",
                json!({"element":"x","ref":"e1"}),
                ActionKind::Click,
            ),
            (
                "mcp__browser__browser_type",
                json!({"text":"x"}),
                ActionKind::Type,
            ),
            (
                "mcp__browser__browser_type",
                json!({"text":"x","submit":true}),
                ActionKind::Submit,
            ),
            (
                "mcp__browser__browser_fill_form",
                json!({"fields":[]}),
                ActionKind::Type,
            ),
            (
                "mcp__browser__browser_press_key",
                json!({"key":"Enter"}),
                ActionKind::Submit,
            ),
            (
                "mcp__browser__browser_press_key",
                json!({"key":"Tab"}),
                ActionKind::Other,
            ),
            (
                "mcp__browser__browser_press_key",
                json!({"key":"Space"}),
                ActionKind::Submit,
            ),
            (
                "mcp__browser__browser_drag",
                json!({"startTarget":"e1","endTarget":"e2"}),
                ActionKind::Click,
            ),
            (
                "mcp__browser__browser_fill_form",
                json!({"fields":[{"name":"Agree","type":"checkbox","target":"e1","value":"true"}]}),
                ActionKind::Click,
            ),
            (
                "mcp__browser__browser_handle_dialog",
                json!({"accept":true}),
                ActionKind::Submit,
            ),
            (
                "mcp__browser__browser_handle_dialog",
                json!({"accept":false}),
                ActionKind::Other,
            ),
            (
                "mcp__browser__browser_tabs",
                json!({"action":"new","url":"https://a.example/"}),
                ActionKind::Navigate,
            ),
            (
                "mcp__browser__browser_evaluate",
                json!({"function":"() => 1"}),
                ActionKind::Other,
            ),
            (
                "mcp__browser__browser_snapshot",
                json!({}),
                ActionKind::Other,
            ),
            (
                "WebFetch",
                json!({"url":"https://a.example/","prompt":"p"}),
                ActionKind::Fetch,
            ),
            (
                "Bash",
                json!({"command":"curl -s https://a.example/x"}),
                ActionKind::Fetch,
            ),
            ("Bash", json!({"command":"ls"}), ActionKind::Other),
            (
                "mcp__other__open_page",
                json!({"url":"https://a.example/"}),
                ActionKind::Navigate,
            ),
        ];
        for (tool, args, want) in cases {
            assert_eq!(classify(tool, &args), want, "{tool} {args}");
        }
    }

    #[test]
    fn typed_text_is_kept_as_its_length_only() {
        let a = build_action(
            Harness::Claude,
            "mcp__browser__browser_type",
            None,
            &json!({"element":"Card number","ref":"e9","text":"4242 4242 4242 4242"}),
            Outcome::Completed,
            None,
            &RefMap::default(),
            "t".into(),
        );
        assert_eq!(a.typed_len, Some(19));
        assert!(!serde_json::to_string(&a).unwrap().contains("4242"));
    }

    #[test]
    fn fill_form_sums_values_and_names_fields() {
        let a = build_action(
            Harness::Codex,
            "mcp__browser__browser_fill_form",
            None,
            &json!({"fields":[{"name":"Email","type":"textbox","ref":"e1","value":"a@b.c"},
                              {"name":"Card","type":"textbox","ref":"e2","value":"4242"}]}),
            Outcome::Completed,
            None,
            &RefMap::default(),
            "t".into(),
        );
        assert_eq!(a.typed_len, Some(9));
        assert_eq!(a.label.as_deref(), Some("Email, Card"));
        assert!(!serde_json::to_string(&a).unwrap().contains("4242"));
    }

    #[test]
    fn snapshot_refs_resolve_names_and_hrefs() {
        let mut refs = RefMap::default();
        refs.learn(
            "### Snapshot\n```yaml\n- generic [active] [ref=e1]:\n  - heading \"Shop\" [level=1] [ref=e2]\n  \
             - link \"Admin dashboard\" [ref=e3] [cursor=pointer]:\n    - /url: http://prod.example.org/admin?t=1\n  \
             - button \"Place \\\"order\\\"\" [ref=e5]\n```",
        );
        let link = refs.get("e3").unwrap();
        assert_eq!(link.role, "link");
        assert_eq!(link.name.as_deref(), Some("Admin dashboard"));
        let href = link.href.as_ref().unwrap();
        assert_eq!(href.host.as_deref(), Some("prod.example.org"));
        assert_eq!(href.path.as_deref(), Some("/admin"));
        assert_eq!(
            refs.get("e5").unwrap().name.as_deref(),
            Some("Place \"order\"")
        );
        assert!(refs.get("e5").unwrap().href.is_none());
        assert!(refs.get("e2").unwrap().href.is_none());
    }

    #[test]
    fn a_name_holding_a_ref_does_not_pass_for_that_ref() {
        // A page names its own button "Continue [ref=e5]": e5 must stay the real "Place order",
        // and the button itself must be known as e4.
        let mut refs = RefMap::default();
        refs.learn("- button \"Place order\" [ref=e5]\n- button \"Continue [ref=e5]\" [ref=e4]\n");
        assert_eq!(refs.get("e5").unwrap().name.as_deref(), Some("Place order"));
        assert_eq!(
            refs.get("e4").unwrap().name.as_deref(),
            Some("Continue [ref=e5]")
        );
    }

    #[test]
    fn playwright_reports_are_read() {
        let r = "### Ran Playwright code\n```js\nawait page.getByRole('button', { name: 'Place order' }).click();\n```\n\
                 ### Page\n- Page URL: http://staging.example.com/checkout/confirm?x=1\n";
        assert_eq!(playwright_resolved_name(r).as_deref(), Some("Place order"));
        let p = playwright_page_url(r).unwrap();
        assert_eq!(p.path.as_deref(), Some("/checkout/confirm"));
        assert!(playwright_page_url("- Page URL: chrome-error://chromewebdata/").is_none());
        let fill = "### Ran Playwright code\nawait page.locator('#c').fill('name: 4242');\n";
        assert_eq!(playwright_resolved_name(fill), None);
        let bare = "### Ran Playwright code\nawait page.getByRole('button').fill('{ name: x }');\n";
        assert_eq!(playwright_resolved_name(bare), None);
        let paren = "### Ran Playwright code\nawait page.getByRole('button', { name: 'Pay (now)' }).click();\n";
        assert_eq!(
            playwright_resolved_name(paren).as_deref(),
            Some("Pay (now)")
        );
    }

    #[test]
    fn urls_in_commands_are_found() {
        assert_eq!(
            scan_web_urls("curl 'https://a.example/x' && wget HTTP://b.example"),
            vec!["https://a.example/x", "HTTP://b.example"]
        );
        assert!(scan_web_urls("echo httpd").is_empty());
    }

    #[test]
    fn screenshot_file_names_are_read_without_their_path() {
        let r = "### Result\n- [Screenshot of viewport](../../tmp/out/page-2026-11-30T10-00-00-000Z.png)\n";
        assert_eq!(
            playwright_screenshot_file(r).as_deref(),
            Some("page-2026-11-30T10-00-00-000Z.png")
        );
        assert_eq!(
            playwright_screenshot_file("- [Snapshot](out/page-1.yml)"),
            None
        );
        assert_eq!(
            playwright_screenshot_file("- [Screenshot of viewport](x/.hidden.png)"),
            None
        );
        assert_eq!(
            playwright_screenshot_file("- [Screenshot of viewport](x/a.txt)"),
            None
        );
    }

    #[test]
    fn a_screenshot_call_journals_the_file_name_playwright_reports() {
        // The text Playwright MCP 0.0.83 answered `browser_take_screenshot` with (seen).
        let result = "### Result\n- [Screenshot of viewport](out/page-2026-12-01T07-32-30-942Z.png)\n### Ran Playwright code\n```js\n// Screenshot viewport and save it as out/page-2026-12-01T07-32-30-942Z.png\n```";
        for harness in [Harness::Claude, Harness::Codex] {
            let a = build_action(
                harness,
                "mcp__browser__browser_take_screenshot",
                None,
                &json!({}),
                Outcome::Completed,
                Some(result),
                &RefMap::default(),
                "2026-12-01T07:32:31Z".into(),
            );
            assert_eq!(
                a.screenshot.as_deref(),
                Some("page-2026-12-01T07-32-30-942Z.png")
            );
            let line = serde_json::to_string(&a).unwrap();
            assert!(line.contains(r#""screenshot":"page-2026-12-01T07-32-30-942Z.png""#));
            assert!(!line.contains("out/"), "no path is kept: {line}");
        }
    }

    #[test]
    fn browser_refusals_are_recognised_without_keeping_urls() {
        let b = browser_blocked(
            "### Page\n- Page URL: chrome-error://chromewebdata/\n- Page Title: Evil.Example.net\n",
        )
        .unwrap();
        assert_eq!(
            (b.how.as_str(), b.host.as_deref()),
            ("error_page", Some("evil.example.net"))
        );
        let b = browser_blocked(
            "### Error\nError: browserBackend.callTool: net::ERR_NAME_NOT_RESOLVED at http://staging.example.com/go-away",
        )
        .unwrap();
        assert_eq!((b.how.as_str(), b.host), ("name_not_resolved", None));
        for e in [
            "net::ERR_EMPTY_RESPONSE",
            "net::ERR_TUNNEL_CONNECTION_FAILED",
        ] {
            let b = browser_blocked(&format!(
                "### Error\nError: page.goto: {e} at http://staging.example.com/go-away"
            ))
            .unwrap();
            assert_eq!((b.how.as_str(), b.host), ("refused_by_proxy", None));
        }
        let b = browser_blocked(
            "### Error\nError: Navigation to \"http://staging.example.com/\" is interrupted by another navigation to \"chrome-error://chromewebdata/\"",
        )
        .unwrap();
        assert_eq!((b.how.as_str(), b.host), ("error_page", None));
        // A title that is not a host is not kept.
        let b =
            browser_blocked("- Page URL: chrome-error://x/\n- Page Title: a b/c://d\n").unwrap();
        assert_eq!(b.host, None);
        assert!(
            browser_blocked("- Page URL: http://staging.example.com/\n- Page Title: Shop")
                .is_none()
        );
    }
}
