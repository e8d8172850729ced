//! The guard's extra rules in a run whose browser the supervisor provisioned (Playwright MCP).
//!
//! `ACTIVE.json` then carries `"browser": {"kind": "playwright", "server": "browser",
//! "ref_map": "<run dir>/browser/refs.json"}` ([`BrowserState`]). With it the guard:
//!
//! 1. denies a Playwright tool the catalogue (`leopold_flows::catalogue`) does not offer
//!    (`browser_evaluate`, `browser_run_code_unsafe`, …) unless it is opt-in and the flow's
//!    `allow_tools` names it;
//! 2. on a flow with click rules, judges every call that activates an element
//!    ([`crate::activation`]) against the page the supervisor's ref map describes:
//!    - a call naming its elements by ref (`browser_click`, `browser_drag`'s two ends,
//!      `browser_select_option`, `browser_type` with `submit`, every field of a
//!      `browser_fill_form` that ticks or chooses one): each ref is looked up and the element's
//!      **real** accessible name judged, not the model's description. A reference the map does
//!      not know (stale, not seen yet, or a CSS/text selector instead of a ref) denies;
//!    - a key on the focused element (`browser_press_key` Enter, Space, an arrow, a character:
//!      anything but Tab, Escape and modifiers): the map does not say which element has focus,
//!      so the key is denied when the page holds any element whose name matches a rule, or when
//!      no snapshot has been seen (`focus_unjudgeable`);
//!    - accepting a dialog (`browser_handle_dialog` without `accept: false`): the dialog's message,
//!      as Playwright's last answer reported it, is judged like a label; a dialog whose message
//!      Leopold did not see denies (`dialog_unknown`).
//!
//! # Timing
//!
//! The supervisor writes the ref map (atomically) when it reads a tool result carrying a
//! snapshot from the worker's event stream. The harness prints that result before it asks the
//! model for the next call, so the map is normally current before the next hook runs; but the
//! supervisor reads the stream asynchronously, so when a reference is unknown the guard re-reads
//! the map for up to [`REF_MAP_WAIT`] before it denies. What the map cannot know: an element
//! renamed by the page's own script after the snapshot. The supervisor's journal still catches
//! that after the fact, from Playwright's report of the locator it used.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use leopold_flows::catalogue::{self, Activation, Offer};
use leopold_flows::Flow;
use serde::Deserialize as _;
use serde_json::{json, Map, Value};

use crate::decide::{activates_by_name, bare_tool, HookInput};
use crate::reason::{safe_text, Denial, Reason, Verdict};

/// How long the guard waits for the supervisor to catch up with a reference it does not know.
pub const REF_MAP_WAIT: Duration = Duration::from_millis(1500);

/// A ref map bigger than this is damage.
const MAX_REF_MAP_BYTES: u64 = 8 << 20;

/// `ACTIVE.json`'s `browser` object: the supervisor writes it, the guard reads it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserState {
    /// `playwright`.
    pub kind: String,
    /// The MCP server name the worker knows the browser by (`browser`): its tools are
    /// `mcp__<server>__browser_*`.
    pub server: String,
    /// The ref map file the supervisor keeps (absolute).
    pub ref_map: PathBuf,
}

impl BrowserState {
    /// Reads the object strictly: exactly `kind`, `server` and `ref_map`, all strings, `ref_map`
    /// absolute.
    pub fn from_value(v: &Value) -> Option<BrowserState> {
        BrowserState::deserialize(v)
            .ok()
            .filter(|b| b.ref_map.is_absolute())
    }

    /// The object as `ACTIVE.json` holds it.
    pub fn to_value(&self) -> Value {
        json!({"kind": self.kind, "server": self.server, "ref_map": self.ref_map})
    }
}

/// One element of the latest snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefEntry {
    /// ARIA role (`button`, `link`, ...).
    pub role: String,
    /// Accessible name; empty when the snapshot gives none.
    pub name: String,
}

/// One element line of a Playwright MCP page snapshot, `- <role> "<name>" [ref=<r>] …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotLine<'a> {
    /// ARIA role (`button`, `link`, ...).
    pub role: &'a str,
    /// Accessible name, when the line gives one (quoted, `\` escapes undone).
    pub name: Option<String>,
    /// The element's own `ref` attribute, if it has one.
    pub reference: Option<&'a str>,
}

/// Parses one snapshot line (indent and `- ` included). `None` for a line that is not an element:
/// no `- ` item, a property such as `- /url: …`, or a name whose quote never closes.
///
/// The one parser of snapshot lines: the supervisor's ref map (which the guard judges clicks by)
/// and the journal's both read refs with it. The name is read as a quoted string before the ref
/// is looked for, and only the element's own attributes (`[level=1] [ref=e2] [cursor=pointer]`,
/// up to `:` or the end) are searched, so a name that itself contains `[ref=e5]` cannot pass for
/// another element's ref.
pub fn parse_snapshot_line(line: &str) -> Option<SnapshotLine<'_>> {
    let item = line.trim_start().strip_prefix("- ")?;
    let role_len = item
        .find(|c: char| c.is_whitespace() || c == '[' || c == ':' || c == '"')
        .unwrap_or(item.len());
    let role = &item[..role_len];
    if role.is_empty() || role.starts_with('/') {
        return None;
    }
    let mut rest = item[role_len..].trim_start();
    let mut name = None;
    if let Some(q) = rest.strip_prefix('"') {
        let mut text = String::new();
        let mut chars = q.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        text.push(e);
                    }
                }
                '"' => {
                    end = Some(i + 1);
                    break;
                }
                c => text.push(c),
            }
        }
        rest = &q[end?..];
        name = Some(text);
    }
    let mut reference = None;
    let mut attrs = rest.trim_start();
    while let Some(a) = attrs.strip_prefix('[') {
        let Some(close) = a.find(']') else { break };
        if let Some(v) = a[..close].strip_prefix("ref=") {
            reference = Some(v);
        }
        attrs = a[close + 1..].trim_start();
    }
    Some(SnapshotLine {
        role,
        name,
        reference,
    })
}

/// The ref map file: the supervisor writes it, the guard reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefMapFile {
    /// Format version, 1.
    pub version: u32,
    /// How many snapshots the supervisor has folded in (for diagnostics).
    pub snapshots: u64,
    /// The host of the page the snapshot came from, when it was an http(s) page.
    pub page_host: Option<String>,
    /// Reference → element.
    pub refs: BTreeMap<String, RefEntry>,
    /// The message of the dialog the page shows, as Playwright's latest answer reported it
    /// ([`modal_dialog`]); `None` when it reported none.
    pub dialog: Option<String>,
}

/// The ref map format version.
pub const REF_MAP_VERSION: u32 = 1;

impl RefMapFile {
    /// The file's JSON: `{"version","snapshots","page_host"?,"dialog"?,"refs":{ref:{"role","name"}}}`.
    pub fn to_json(&self) -> Vec<u8> {
        let mut refs = Map::new();
        for (r, e) in &self.refs {
            refs.insert(r.clone(), json!({"role": e.role, "name": e.name}));
        }
        let mut obj = Map::new();
        obj.insert("version".into(), json!(self.version));
        obj.insert("snapshots".into(), json!(self.snapshots));
        if let Some(h) = &self.page_host {
            obj.insert("page_host".into(), json!(h));
        }
        if let Some(d) = &self.dialog {
            obj.insert("dialog".into(), json!(d));
        }
        obj.insert("refs".into(), Value::Object(refs));
        serde_json::to_vec(&Value::Object(obj)).unwrap_or_default()
    }

    /// Parses the file strictly (unknown keys refused).
    pub fn from_slice(bytes: &[u8]) -> Option<RefMapFile> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        let obj = v.as_object()?;
        if obj.keys().any(|k| {
            !matches!(
                k.as_str(),
                "version" | "snapshots" | "page_host" | "dialog" | "refs"
            )
        }) {
            return None;
        }
        let mut refs = BTreeMap::new();
        for (r, e) in obj.get("refs")?.as_object()? {
            let e = e.as_object()?;
            if e.len() != 2 {
                return None;
            }
            let role = e.get("role")?.as_str()?.to_owned();
            let name = e.get("name")?.as_str()?.to_owned();
            refs.insert(r.clone(), RefEntry { role, name });
        }
        Some(RefMapFile {
            version: u32::try_from(obj.get("version")?.as_u64()?).ok()?,
            snapshots: obj.get("snapshots")?.as_u64()?,
            page_host: match obj.get("page_host") {
                None | Some(Value::Null) => None,
                Some(h) => Some(h.as_str()?.to_owned()),
            },
            dialog: match obj.get("dialog") {
                None | Some(Value::Null) => None,
                Some(d) => Some(d.as_str()?.to_owned()),
            },
            refs,
        })
    }
}

/// What Playwright's answer says about the page's dialog: `Some(Some(message))` when its
/// `### Modal state` section shows one (`- ["confirm" dialog with message "…"]: can be handled
/// by …`), `Some(None)` when the answer shows the page and no dialog, `None` when it says nothing
/// about the page (an error).
pub fn modal_dialog(text: &str) -> Option<Option<String>> {
    const OPEN: &str = " dialog with message \"";
    const CLOSE: &str = "\"]: can be handled by";
    let Some(at) = text.find("### Modal state") else {
        let shows_page = text.contains("### Page") || text.contains("- Page URL:");
        return shows_page.then_some(None);
    };
    let section = &text[at..];
    let section = section[3..]
        .find("\n### ")
        .map_or(section, |end| &section[..end + 3]);
    // The message is the page's own text: it may hold quotes and newlines, so it runs to the
    // last closing marker of the section rather than to the next quote.
    let Some(open) = section.find(OPEN) else {
        return Some(None);
    };
    let rest = &section[open + OPEN.len()..];
    let message = rest.rfind(CLOSE).map_or(rest, |close| &rest[..close]);
    Some(Some(message.to_owned()))
}

/// Rule 1: a Playwright tool (`browser_…`) the catalogue does not offer, unless it is opt-in
/// and the flow's `allow_tools` names it.
pub fn dangerous_tool(flow: &Flow, input: &HookInput) -> Option<Denial> {
    if !input.tool_name.starts_with("mcp__") {
        return None;
    }
    // The tool's own name, and its last segment in case the server's name holds `__`
    // (see `bare_tool`): a dangerous tool is refused under either reading.
    let b = bare_tool(&input.tool_name);
    let last = b.rsplit("__").next().unwrap_or(b);
    [b, last]
        .into_iter()
        .any(|t| {
            t.starts_with("browser_")
                && catalogue::find(t).is_some_and(|e| e.offer != Offer::Offered)
                && !catalogue::offered(t, &flow.allow_tools)
        })
        .then(|| Denial::new(Reason::DangerousBrowserTool))
}

/// What a call of the provisioned browser activates, for the ref map to judge (see the module
/// docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acted<'a> {
    /// The refs of the elements it activates; `None` for one that is missing or not a string.
    pub refs: Vec<Option<&'a str>>,
    /// It acts on the focused element, which no argument names.
    pub focused: bool,
    /// It accepts the page's dialog.
    pub dialog: bool,
}

impl Acted<'_> {
    /// It activates nothing.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty() && !self.focused && !self.dialog
    }
}

/// Where an uncatalogued tool that activates by its name may carry its element refs.
const REF_KEYS: &[&str] = &["target", "ref", "startTarget", "endTarget"];

/// What a call of `server`'s tools activates. A call of another server's tool activates nothing
/// here (its labels were judged by [`crate::decide`]).
pub fn acted<'a>(server: &str, input: &'a HookInput) -> Acted<'a> {
    let Some(rest) = input
        .tool_name
        .strip_prefix("mcp__")
        .and_then(|r| r.strip_prefix(server))
        .and_then(|r| r.strip_prefix("__"))
    else {
        return Acted::default();
    };
    let v = &input.tool_input;
    let mut acted = Acted::default();
    match catalogue::find(rest) {
        Some(tool) => match catalogue::activation(tool, v) {
            Activation::Elements => acted.refs = catalogue::element_refs(tool, v),
            Activation::Focused => acted.focused = true,
            Activation::Dialog => acted.dialog = true,
            Activation::No => return acted,
        },
        None if activates_by_name(&input.tool_name) => {
            acted.refs = REF_KEYS
                .iter()
                .filter_map(|k| v.get(*k))
                .map(Value::as_str)
                .collect();
        }
        None => return acted,
    }
    // An activation that names no element at all cannot be judged by its element.
    if acted.is_empty() {
        acted.refs.push(None);
    }
    acted
}

/// Rule 2, pure: judges what a call activates against the map.
pub fn judge_acted(flow: &Flow, acted: &Acted<'_>, map: Option<&RefMapFile>) -> Verdict {
    for r in &acted.refs {
        let entry = r.and_then(|r| map.and_then(|m| m.refs.get(r)));
        let Some(entry) = entry else {
            let shown = r.and_then(|r| safe_text(r, 40)).map_or_else(
                || "(missing or not a string)".to_owned(),
                |r| format!("{r:?}"),
            );
            return Verdict::Deny(Denial::new(Reason::UnknownElementRef).with_detail(shown));
        };
        if let Some(hit) = flow.match_label(&entry.name) {
            let name = safe_text(&entry.name, 80).unwrap_or_else(|| "(withheld)".into());
            let role = safe_text(&entry.role, 24).unwrap_or_default();
            return Verdict::Deny(Denial::new(Reason::IrreversibleLabel).with_detail(format!(
                "ref {} is {role} {name:?} in the page snapshot; {}",
                r.unwrap_or_default(),
                hit.rule
            )));
        }
    }
    if acted.focused {
        let Some(map) = map else {
            return Verdict::Deny(
                Denial::new(Reason::FocusUnjudgeable).with_detail("no page snapshot seen yet"),
            );
        };
        for entry in map.refs.values() {
            if let Some(hit) = flow.match_label(&entry.name) {
                let name = safe_text(&entry.name, 80).unwrap_or_else(|| "(withheld)".into());
                let role = safe_text(&entry.role, 24).unwrap_or_default();
                return Verdict::Deny(
                    Denial::new(Reason::FocusUnjudgeable)
                        .with_detail(format!("the page holds {role} {name:?}; {}", hit.rule)),
                );
            }
        }
    }
    if acted.dialog {
        let Some(message) = map.and_then(|m| m.dialog.as_deref()) else {
            return Verdict::Deny(Denial::new(Reason::DialogUnknown));
        };
        if let Some(hit) = flow.match_label(message) {
            let shown = safe_text(message, 80).unwrap_or_else(|| "(withheld)".into());
            return Verdict::Deny(
                Denial::new(Reason::IrreversibleLabel)
                    .with_detail(format!("the dialog says {shown:?}; {}", hit.rule)),
            );
        }
    }
    Verdict::Allow
}

/// Reads the ref map; a missing file is `None` (no snapshot seen yet).
///
/// # Errors
///
/// [`Reason::RefMapUnreadable`].
pub fn read_ref_map(path: &Path) -> Result<Option<RefMapFile>, Denial> {
    let unreadable = |what: String| Denial::new(Reason::RefMapUnreadable).with_detail(what);
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e.kind().to_string())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_REF_MAP_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(e.kind().to_string()))?;
    if bytes.len() as u64 > MAX_REF_MAP_BYTES {
        return Err(unreadable("over 8 MiB".into()));
    }
    let map = RefMapFile::from_slice(&bytes).ok_or_else(|| unreadable("not a ref map".into()))?;
    if map.version != REF_MAP_VERSION {
        return Err(unreadable(format!("version {}", map.version)));
    }
    Ok(Some(map))
}

/// Both rules, with the I/O: reads the ref map only when a call activates something on a flow
/// with click rules, and waits up to `wait` for an unknown reference to appear.
pub fn judge(flow: &Flow, browser: &BrowserState, input: &HookInput, wait: Duration) -> Verdict {
    if let Some(d) = dangerous_tool(flow, input) {
        return Verdict::Deny(d);
    }
    if !flow.has_label_rules() {
        return Verdict::Allow;
    }
    let acted = acted(&browser.server, input);
    if acted.is_empty() {
        return Verdict::Allow;
    }
    let deadline = Instant::now() + wait;
    loop {
        let map = match read_ref_map(&browser.ref_map) {
            Ok(m) => m,
            Err(d) => return Verdict::Deny(d),
        };
        let verdict = judge_acted(flow, &acted, map.as_ref());
        let unknown = matches!(&verdict, Verdict::Deny(d) if d.reason == Reason::UnknownElementRef);
        if !unknown || acted.refs.contains(&None) || Instant::now() >= deadline {
            return verdict;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_lines_are_parsed_name_first() {
        let el = parse_snapshot_line(
            r#"  - link "Say \"hi\" [ref=e9]" [level=1] [ref=e3] [cursor=pointer]:"#,
        )
        .unwrap();
        assert_eq!(el.role, "link");
        assert_eq!(el.name.as_deref(), Some(r#"Say "hi" [ref=e9]"#));
        assert_eq!(el.reference, Some("e3"));
        let el = parse_snapshot_line("- generic [ref=e1]:").unwrap();
        assert_eq!(
            (el.role, el.name, el.reference),
            ("generic", None, Some("e1"))
        );
        assert_eq!(
            parse_snapshot_line("- text: Hello").unwrap().reference,
            None
        );
        // Not elements: a property line, an unterminated name, no item at all.
        assert_eq!(parse_snapshot_line("    - /url: /checkout"), None);
        assert_eq!(parse_snapshot_line(r#"- button "Pay [ref=e2]"#), None);
        assert_eq!(parse_snapshot_line("### Snapshot"), None);
    }
    use serde_json::json;

    fn flow(extra: &str) -> Flow {
        Flow::parse(
            &format!(
                "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n{extra}\n\
                 [irreversible]\nforbid = [\"payment\"]\n+++\nBrief.\n"
            ),
            Path::new("flows/checkout.md"),
        )
        .unwrap()
    }

    fn call(tool: &str, input: Value) -> HookInput {
        HookInput {
            tool_name: tool.into(),
            tool_input: input,
            cwd: None,
            tool_use_id: None,
        }
    }

    fn map() -> RefMapFile {
        let mut m = RefMapFile {
            version: REF_MAP_VERSION,
            snapshots: 1,
            page_host: Some("staging.example.com".into()),
            refs: BTreeMap::new(),
            dialog: None,
        };
        for (r, role, name) in [
            ("f2e5", "button", "Place order"),
            ("f2e6", "button", "Add to cart"),
        ] {
            m.refs.insert(
                r.into(),
                RefEntry {
                    role: role.into(),
                    name: name.into(),
                },
            );
        }
        m
    }

    #[test]
    fn the_files_round_trip_and_unknown_keys_are_refused() {
        let mut m = map();
        assert_eq!(RefMapFile::from_slice(&m.to_json()), Some(m.clone()));
        m.dialog = Some("Sure?".into());
        assert_eq!(RefMapFile::from_slice(&m.to_json()), Some(m));
        assert_eq!(
            RefMapFile::from_slice(br#"{"version":1,"snapshots":0,"refs":{},"extra":1}"#),
            None
        );
        let b = BrowserState {
            kind: "playwright".into(),
            server: "browser".into(),
            ref_map: "/p/refs.json".into(),
        };
        assert_eq!(BrowserState::from_value(&b.to_value()), Some(b));
        for bad in [
            json!({"kind": "playwright", "server": "browser", "ref_map": "refs.json"}),
            json!({"kind": "playwright", "server": "browser"}),
            json!({"kind": "playwright", "server": "browser", "ref_map": "/r", "x": 1}),
            json!("playwright"),
        ] {
            assert_eq!(BrowserState::from_value(&bad), None, "{bad}");
        }
    }

    #[test]
    fn dangerous_tools_are_off_unless_named() {
        let f = flow("");
        for t in catalogue::TOOLS
            .iter()
            .filter(|t| t.offer != Offer::Offered)
        {
            let c = call(
                &format!("mcp__browser__browser_{}", t.name),
                json!({"function": "() => 1"}),
            );
            let d = dangerous_tool(&f, &c).expect(t.name);
            assert_eq!(d.reason, Reason::DangerousBrowserTool);
        }
        // Another server's plain `find` is not Playwright's.
        assert!(dangerous_tool(&f, &call("mcp__files__find", json!({}))).is_none());
        assert!(dangerous_tool(&f, &call("mcp__browser__browser_click", json!({}))).is_none());
        let f = flow("allow_tools = [\"browser_evaluate\"]");
        let c = call(
            "mcp__browser__browser_evaluate",
            json!({"function": "() => 1"}),
        );
        assert!(dangerous_tool(&f, &c).is_none());
        let c = call(
            "mcp__browser__browser_run_code_unsafe",
            json!({"code": "x"}),
        );
        assert!(dangerous_tool(&f, &c).is_some());
        // A server whose name holds `__` reads as another tool name; still refused.
        let f = flow("");
        let c = call(
            "mcp__my__pw__browser_evaluate",
            json!({"function": "() => 1"}),
        );
        assert!(dangerous_tool(&f, &c).is_some());
        assert!(dangerous_tool(&f, &call("mcp__pw__safe__browser_click", json!({}))).is_none());
    }

    #[test]
    fn a_misleading_description_is_judged_by_the_real_name() {
        let f = flow("");
        let c = call(
            "mcp__browser__browser_click",
            json!({"element": "the blue button", "target": "f2e5"}),
        );
        let Verdict::Deny(d) = judge_acted(&f, &acted("browser", &c), Some(&map())) else {
            panic!("allowed")
        };
        assert_eq!(d.reason, Reason::IrreversibleLabel);
        assert!(d.detail.unwrap().contains("\"Place order\""));
        let c = call(
            "mcp__browser__browser_click",
            json!({"element": "Place order", "target": "f2e6"}),
        );
        // The description says "Place order" but the ref is "Add to cart": the ref map decides
        // here; `decide` has already judged the description itself.
        assert_eq!(
            judge_acted(&f, &acted("browser", &c), Some(&map())),
            Verdict::Allow
        );
    }

    #[test]
    fn unknown_refs_selectors_and_no_map_deny() {
        let f = flow("");
        for target in [json!("e5"), json!("button#place"), json!(5)] {
            let c = call("mcp__browser__browser_click", json!({ "target": target }));
            let a = acted("browser", &c);
            assert_eq!(a.refs.len(), 1);
            let Verdict::Deny(d) = judge_acted(&f, &a, Some(&map())) else {
                panic!("allowed {target}")
            };
            assert_eq!(d.reason, Reason::UnknownElementRef);
        }
        let c = call("mcp__browser__browser_click", json!({"target": "f2e6"}));
        assert!(matches!(
            judge_acted(&f, &acted("browser", &c), None),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn which_calls_act_on_elements() {
        let refs = |tool: &str, v: Value| acted("browser", &call(tool, v)).refs.len();
        assert_eq!(
            refs("mcp__browser__browser_click", json!({"target": "e1"})),
            1
        );
        assert_eq!(
            refs(
                "mcp__browser__browser_drag",
                json!({"startTarget": "e1", "endTarget": "e2"})
            ),
            2
        );
        assert_eq!(
            refs("mcp__browser__browser_type", json!({"target": "e1"})),
            0
        );
        assert_eq!(
            refs(
                "mcp__browser__browser_type",
                json!({"target": "e1", "submit": true})
            ),
            1
        );
        assert_eq!(
            refs("mcp__browser__browser_hover", json!({"target": "e1"})),
            0
        );
        assert_eq!(
            refs("mcp__other__browser_click", json!({"target": "e1"})),
            0
        );
        // A later server's `browser_check`, not catalogued, is judged like a click; a click with
        // no ref at all is one element Leopold cannot look up.
        assert_eq!(
            refs("mcp__browser__browser_check", json!({"target": "e1"})),
            1
        );
        assert_eq!(
            acted("browser", &call("mcp__browser__browser_click", json!({}))).refs,
            [None]
        );
        assert_eq!(
            refs(
                "mcp__browser__browser_fill_form",
                json!({"fields": [{"target": "e1", "type": "textbox"}, {"target": "e2", "type": "checkbox"}]})
            ),
            2
        );
        assert_eq!(
            refs(
                "mcp__browser__browser_fill_form",
                json!({"fields": [{"target": "e1", "type": "textbox"}]})
            ),
            0
        );
        let enter = call("mcp__browser__browser_press_key", json!({"key": "Enter"}));
        let a = acted("browser", &enter);
        assert!(a.focused && a.refs.is_empty());
        assert!(acted(
            "browser",
            &call("mcp__browser__browser_press_key", json!({"key": "Tab"}))
        )
        .is_empty());
        assert!(
            acted(
                "browser",
                &call(
                    "mcp__browser__browser_handle_dialog",
                    json!({"accept": true})
                )
            )
            .dialog
        );
        assert!(acted(
            "browser",
            &call(
                "mcp__browser__browser_handle_dialog",
                json!({"accept": false})
            )
        )
        .is_empty());
    }

    /// Every tool that can activate an element, on the element named "Place order" (by its ref,
    /// whatever the description says), is denied; the same call on "Add to cart" is allowed.
    #[test]
    fn every_activating_tool_is_judged_by_the_real_name() {
        let f = flow("");
        let on = |r: &str| -> Vec<(&str, Value)> {
            vec![
                ("browser_click", json!({"element": "a button", "target": r})),
                ("browser_check", json!({"element": "a box", "target": r})),
                ("browser_uncheck", json!({"element": "a box", "target": r})),
                (
                    "browser_select_option",
                    json!({"element": "a list", "target": r, "values": ["1"]}),
                ),
                (
                    "browser_drag",
                    json!({"startElement": "a", "startTarget": "f2e6", "endElement": "b", "endTarget": r}),
                ),
                (
                    "browser_drag",
                    json!({"startElement": "a", "startTarget": r, "endElement": "b", "endTarget": "f2e6"}),
                ),
                (
                    "browser_type",
                    json!({"element": "a field", "target": r, "text": "x", "submit": true}),
                ),
                (
                    "browser_fill_form",
                    json!({"fields": [{"name": "a box", "target": r, "type": "checkbox", "value": "true"}]}),
                ),
                (
                    "browser_fill_form",
                    json!({"fields": [{"name": "a list", "target": r, "type": "combobox", "value": "1"}]}),
                ),
            ]
        };
        for (tool, args) in on("f2e5") {
            let c = call(&format!("mcp__browser__{tool}"), args.clone());
            let Verdict::Deny(d) = judge_acted(&f, &acted("browser", &c), Some(&map())) else {
                panic!("{tool} {args} allowed")
            };
            assert_eq!(d.reason, Reason::IrreversibleLabel, "{tool} {args}");
        }
        for (tool, args) in on("f2e6") {
            let c = call(&format!("mcp__browser__{tool}"), args.clone());
            assert_eq!(
                judge_acted(&f, &acted("browser", &c), Some(&map())),
                Verdict::Allow,
                "{tool} {args}"
            );
        }
    }

    #[test]
    fn a_key_is_judged_against_the_page_it_lands_on() {
        let f = flow("");
        let enter = call("mcp__browser__browser_press_key", json!({"key": "Enter"}));
        let a = acted("browser", &enter);
        let Verdict::Deny(d) = judge_acted(&f, &a, Some(&map())) else {
            panic!("Enter on a page holding \"Place order\" allowed")
        };
        assert_eq!(d.reason, Reason::FocusUnjudgeable);
        assert!(d.detail.unwrap().contains("\"Place order\""));
        assert_eq!(
            judge_acted(&f, &a, None).reason(),
            Some(Reason::FocusUnjudgeable),
            "no snapshot yet"
        );
        let mut harmless = map();
        harmless.refs.remove("f2e5");
        assert_eq!(judge_acted(&f, &a, Some(&harmless)), Verdict::Allow);
    }

    #[test]
    fn accepting_a_dialog_is_judged_by_its_message() {
        let f = flow("");
        let accept = call(
            "mcp__browser__browser_handle_dialog",
            json!({"accept": true}),
        );
        let a = acted("browser", &accept);
        let mut m = map();
        assert_eq!(
            judge_acted(&f, &a, Some(&m)).reason(),
            Some(Reason::DialogUnknown)
        );
        m.dialog = Some("Place order for $12?".into());
        assert_eq!(
            judge_acted(&f, &a, Some(&m)).reason(),
            Some(Reason::IrreversibleLabel)
        );
        m.dialog = Some("Leave this page?".into());
        assert_eq!(judge_acted(&f, &a, Some(&m)), Verdict::Allow);
        let dismiss = call(
            "mcp__browser__browser_handle_dialog",
            json!({"accept": false}),
        );
        assert!(acted("browser", &dismiss).is_empty());
    }

    #[test]
    fn the_dialog_is_read_from_the_modal_state_section() {
        let shown = "### Page\n- Page URL: http://staging.example.com/\n### Modal state\n\
                     - [\"confirm\" dialog with message \"Place \"the\" order?\nReally\"]: can be handled by browser_handle_dialog\n\
                     ### Snapshot\n- button \"x\" [ref=e1]\n";
        assert_eq!(
            modal_dialog(shown),
            Some(Some("Place \"the\" order?\nReally".into()))
        );
        assert_eq!(
            modal_dialog("### Page\n- Page URL: http://staging.example.com/\n"),
            Some(None)
        );
        assert_eq!(modal_dialog("### Error\nTimeout"), None);
        assert_eq!(
            modal_dialog(
                "### Modal state\n- [File chooser]: can be handled by browser_file_upload\n"
            ),
            Some(None)
        );
    }

    #[test]
    fn judge_reads_the_file_and_waits_for_a_late_map() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refs.json");
        let b = BrowserState {
            kind: "playwright".into(),
            server: "browser".into(),
            ref_map: path.clone(),
        };
        let f = flow("");
        let c = call(
            "mcp__browser__browser_click",
            json!({"element": "ok", "target": "f2e6"}),
        );
        // No map yet, no wait: deny.
        assert!(matches!(
            judge(&f, &b, &c, Duration::ZERO),
            Verdict::Deny(_)
        ));
        // The map arrives while the guard waits.
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                let tmp = path.with_extension("tmp");
                std::fs::write(&tmp, map().to_json()).unwrap();
                std::fs::rename(tmp, path).unwrap();
            })
        };
        assert_eq!(judge(&f, &b, &c, Duration::from_secs(5)), Verdict::Allow);
        writer.join().unwrap();
        std::fs::write(&path, b"{").unwrap();
        let Verdict::Deny(d) = judge(&f, &b, &c, Duration::ZERO) else {
            panic!("allowed")
        };
        assert_eq!(d.reason, Reason::RefMapUnreadable);
        // A flow without click rules never reads the map.
        let plain = Flow::parse(
            "+++\nname = \"p\"\nallowlist = [\"staging.example.com\"]\n+++\n",
            Path::new("p.md"),
        )
        .unwrap();
        assert_eq!(judge(&plain, &b, &c, Duration::ZERO), Verdict::Allow);
    }
}
