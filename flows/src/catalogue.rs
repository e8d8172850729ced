//! The catalogue of the provisioned browser's tools: every tool Playwright MCP 0.0.83 can list
//! (with every `--caps` capability on), what it does, which of its arguments name an element or
//! a URL, and whether a persona is offered it.
//!
//! One table, read by every layer that must agree on what a browser tool is:
//! - the gateway offers a tool only if its entry says so ([`Offer`]), and a tool the catalogue
//!   does not know is neither offered nor forwarded;
//! - the guard judges every call that activates an element ([`activation`]) against every name
//!   the element has ([`element_names`], [`element_refs`]);
//! - the flow's `allow_tools` accepts only [`Offer::OptIn`] tools;
//! - the journal classifies a call by what its tool does ([`Does`]).
//!
//! Names are bare: Playwright's own are `browser_<name>` ([`find`] drops the prefix), so the test
//! kit's stub `click` and Playwright's `browser_click` are one entry. The e2e suite reads the real
//! server's `tools/list` and fails on a tool this table does not know (`tests/tests/e2e/catalogue.rs`).

/// What a tool does, as far as the bounds care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Does {
    /// Loads a URL, or moves through the tab's history.
    Navigate,
    /// Activates an element: clicks it, chooses its option, drags it. Always judged against the
    /// element's names.
    Activate,
    /// Types into an element; with `submit: true` it presses Enter after, which submits the form,
    /// so it activates.
    Type,
    /// Fills several fields at once; a field that is not a text box (checkbox, radio, combobox,
    /// slider) is ticked or chosen, which activates it.
    Fill,
    /// Presses a key on whichever element has focus, which Leopold cannot name (see [`key_activates`]).
    Key,
    /// Answers the page's dialog; accepting a `confirm()` does what the dialog asked about.
    Dialog,
    /// Moves the pointer over an element: menus open, nothing is activated.
    Hover,
    /// Reads the page: snapshot, screenshot, console, network list, text search, a wait.
    Read,
    /// Lists, opens (at a URL), selects or closes tabs.
    Tabs,
    /// Changes the window or the page's emulation: resize, close, media features.
    Window,
    /// Runs the model's code, in the page or in the server.
    Code,
    /// Hands files or data from outside the page to it.
    File,
    /// Acts at screen coordinates: there is no element Leopold could name.
    Coordinates,
    /// Debugging and recording aids: tracing, video, highlight, pause, annotation.
    Devtools,
}

impl Does {
    /// The name in docs/security.md#the-browsers-tools's table and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Does::Navigate => "navigate",
            Does::Activate => "activate",
            Does::Type => "type",
            Does::Fill => "fill",
            Does::Key => "key",
            Does::Dialog => "dialog",
            Does::Hover => "hover",
            Does::Read => "read",
            Does::Tabs => "tabs",
            Does::Window => "window",
            Does::Code => "code",
            Does::File => "file",
            Does::Coordinates => "coordinates",
            Does::Devtools => "devtools",
        }
    }
}

/// Whether a persona is offered the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Offer {
    /// Offered in every provisioned run.
    Offered,
    /// Offered only when the flow's `allow_tools` names it (`browser_<name>`).
    OptIn,
    /// Never offered, whatever the flow says.
    Never,
}

/// Where a tool's arguments name one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementArg {
    /// The array whose every item names an element (`fields` of `fill_form`); `None` when the
    /// keys sit at the top of the arguments.
    pub within: Option<&'static str>,
    /// Keys whose strings the model wrote as the element's name (`element`, a field's `name`).
    pub descriptions: &'static [&'static str],
    /// The key of the element's ref from the page snapshot (or a selector, which no ref map
    /// knows).
    pub reference: &'static str,
    /// Keys whose strings are options chosen in the element (`values` of `select_option`, a
    /// combobox field's `value`): the option's label is a name too.
    pub options: &'static [&'static str],
    /// The key saying what kind of field this is (`type` of a `fill_form` field); a field of
    /// kind [`TEXT_FIELD`] is typed into, not activated, and its option keys hold typed text.
    pub kind: Option<&'static str>,
}

/// The field kind that is typed into rather than activated.
pub const TEXT_FIELD: &str = "textbox";

/// One tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// The bare name (Playwright's is `browser_<name>`).
    pub name: &'static str,
    /// What it does.
    pub does: Does,
    /// Where its arguments name elements.
    pub elements: &'static [ElementArg],
    /// Keys whose strings are URLs it loads.
    pub urls: &'static [&'static str],
    /// Whether a persona is offered it.
    pub offer: Offer,
    /// Why it has this offer, in a few words (docs/security.md#the-browsers-tools's table).
    pub why: &'static str,
}

const EL: ElementArg = ElementArg {
    within: None,
    descriptions: &["element"],
    reference: "target",
    options: &[],
    kind: None,
};
const ONE: &[ElementArg] = &[EL];
const SUBTREE: &[ElementArg] = &[ElementArg {
    descriptions: &[],
    ..EL
}];
const SELECT: &[ElementArg] = &[ElementArg {
    options: &["values"],
    ..EL
}];
const DRAG: &[ElementArg] = &[
    ElementArg {
        descriptions: &["startElement"],
        reference: "startTarget",
        ..EL
    },
    ElementArg {
        descriptions: &["endElement"],
        reference: "endTarget",
        ..EL
    },
];
const FIELDS: &[ElementArg] = &[ElementArg {
    within: Some("fields"),
    descriptions: &["element", "name"],
    reference: "target",
    options: &["value"],
    kind: Some("type"),
}];

const fn tool(
    name: &'static str,
    does: Does,
    elements: &'static [ElementArg],
    offer: Offer,
    why: &'static str,
) -> Tool {
    Tool {
        name,
        does,
        elements,
        urls: &[],
        offer,
        why,
    }
}

use Does::*;
use Offer::*;

/// Every tool of Playwright MCP 0.0.83, in its own `tools/list` order (default tools first, then
/// those of `--caps vision,pdf,devtools`).
pub const TOOLS: &[Tool] = &[
    tool("close", Window, &[], Offered, "closes the page"),
    tool("resize", Window, &[], Offered, "the window's size"),
    tool(
        "console_messages",
        Read,
        &[],
        Offered,
        "reads the console; a `filename` only inside the output folder",
    ),
    tool(
        "handle_dialog",
        Dialog,
        &[],
        Offered,
        "accepting is judged by the dialog's text",
    ),
    tool(
        "emulate_media",
        Window,
        &[],
        Never,
        "changes the page's media features; not a user's gesture",
    ),
    tool(
        "evaluate",
        Code,
        ONE,
        OptIn,
        "runs the model's JavaScript in the page: no URL or label to judge",
    ),
    tool(
        "file_upload",
        File,
        &[],
        OptIn,
        "hands files from the worker's disk to the page",
    ),
    tool(
        "drop",
        File,
        ONE,
        OptIn,
        "drops files or arbitrary data onto an element",
    ),
    tool(
        "find",
        Read,
        &[],
        Never,
        "searches the snapshot; not reviewed yet",
    ),
    tool(
        "fill_form",
        Fill,
        FIELDS,
        Offered,
        "a non-text field activates: judged by every field's names",
    ),
    tool(
        "press_key",
        Key,
        &[],
        Offered,
        "a key on the focused element: judged against the page",
    ),
    tool(
        "type",
        Type,
        ONE,
        Offered,
        "with `submit: true`, judged as activating the element",
    ),
    Tool {
        urls: &["url"],
        ..tool("navigate", Navigate, &[], Offered, "the URL is judged")
    },
    tool("navigate_back", Navigate, &[], Offered, "history"),
    tool(
        "network_requests",
        Read,
        &[],
        Offered,
        "reads the request list; a `filename` only inside the output folder",
    ),
    tool(
        "network_request",
        Read,
        &[],
        Never,
        "a request's headers and bodies: cookies and tokens",
    ),
    tool(
        "run_code_unsafe",
        Code,
        &[],
        Never,
        "Playwright's own docs call it RCE-equivalent",
    ),
    tool(
        "take_screenshot",
        Read,
        ONE,
        Offered,
        "a `filename` only inside the output folder",
    ),
    tool(
        "snapshot",
        Read,
        SUBTREE,
        Offered,
        "the page's elements and their refs",
    ),
    tool(
        "click",
        Activate,
        ONE,
        Offered,
        "judged by the element's names",
    ),
    tool(
        "drag",
        Activate,
        DRAG,
        Offered,
        "judged by both elements' names",
    ),
    tool("hover", Hover, ONE, Offered, "nothing is activated"),
    tool(
        "select_option",
        Activate,
        SELECT,
        Offered,
        "judged by the element's names and the options'",
    ),
    Tool {
        urls: &["url"],
        ..tool("tabs", Tabs, &[], Offered, "a new tab's URL is judged")
    },
    tool("wait_for", Read, &[], Offered, "waits for text or time"),
    // `--caps devtools`, `vision`, `pdf`: Leopold never turns them on.
    tool("resume", Devtools, &[], Never, "debugging"),
    tool("highlight", Devtools, ONE, Never, "debugging"),
    tool("hide_highlight", Devtools, ONE, Never, "debugging"),
    tool("annotate", Devtools, &[], Never, "waits for a human"),
    tool(
        "mouse_move_xy",
        Coordinates,
        &[],
        Never,
        "coordinates name no element",
    ),
    tool(
        "mouse_click_xy",
        Coordinates,
        &[],
        Never,
        "a click at coordinates names no element",
    ),
    tool(
        "mouse_drag_xy",
        Coordinates,
        &[],
        Never,
        "coordinates name no element",
    ),
    tool(
        "mouse_down",
        Coordinates,
        &[],
        Never,
        "half a click, on no named element",
    ),
    tool(
        "mouse_up",
        Coordinates,
        &[],
        Never,
        "half a click, on no named element",
    ),
    tool(
        "mouse_wheel",
        Coordinates,
        &[],
        Never,
        "coordinates name no element",
    ),
    tool("pdf_save", Read, &[], Never, "writes files; not needed"),
    tool("start_recording", Devtools, &[], Never, "recording"),
    tool("stop_recording", Devtools, &[], Never, "recording"),
    tool("start_tracing", Devtools, &[], Never, "recording"),
    tool("stop_tracing", Devtools, &[], Never, "recording"),
    tool("start_video", Devtools, &[], Never, "recording"),
    tool("stop_video", Devtools, &[], Never, "recording"),
    tool("video_chapter", Devtools, &[], Never, "recording"),
    tool("video_show_actions", Devtools, &[], Never, "recording"),
    tool("video_hide_actions", Devtools, &[], Never, "recording"),
];

/// A tool's bare name: without Playwright's `browser_` prefix.
pub fn bare(name: &str) -> &str {
    name.strip_prefix("browser_").unwrap_or(name)
}

/// The catalogue's entry for a tool, by its server name (`browser_click`) or bare name (`click`).
pub fn find(name: &str) -> Option<&'static Tool> {
    let b = bare(name);
    TOOLS.iter().find(|t| t.name == b)
}

/// Whether a persona is offered the tool (by the server's name for it), given the flow's
/// `allow_tools`. A tool the catalogue does not know is never offered.
pub fn offered(name: &str, allow_tools: &[String]) -> bool {
    match find(name).map(|t| t.offer) {
        Some(Offered) => true,
        Some(OptIn) => {
            let b = bare(name);
            allow_tools
                .iter()
                .any(|a| a.strip_prefix("browser_") == Some(b))
        }
        Some(Never) | None => false,
    }
}

/// The tools a flow may opt into, by the name `allow_tools` uses (`browser_evaluate`, …).
pub fn opt_in_names() -> impl Iterator<Item = String> {
    TOOLS
        .iter()
        .filter(|t| t.offer == OptIn)
        .map(|t| format!("browser_{}", t.name))
}

/// How a call activates an element, from its tool and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// It activates nothing.
    No,
    /// It activates the elements its arguments name: judge [`element_names`] and
    /// [`element_refs`].
    Elements,
    /// It acts on the focused element, which its arguments do not name.
    Focused,
    /// It accepts the page's dialog.
    Dialog,
}

impl Activation {
    /// Anything but [`Activation::No`].
    pub fn activates(self) -> bool {
        self != Activation::No
    }
}

/// How a call of `tool` with `args` (a JSON object) activates an element. Anything Leopold
/// cannot read as harmless activates: a `submit` that is not `false`, a field whose kind is not
/// a text box, an `accept` that is not `false`.
pub fn activation(tool: &Tool, args: &serde_json::Value) -> Activation {
    use serde_json::Value;
    let flag = |k: &str| args.get(k).and_then(Value::as_bool);
    match tool.does {
        Activate => Activation::Elements,
        // A drop hands data to the element's own handler, like a drag's end.
        File if !tool.elements.is_empty() => Activation::Elements,
        Type if matches!(args.get("submit"), Some(v) if v != &Value::Bool(false) && !v.is_null()) => {
            Activation::Elements
        }
        Fill if items(tool, args).any(|(el, item)| !is_text_field(el, item)) => {
            Activation::Elements
        }
        Key if args
            .get("key")
            .is_none_or(|k| k.as_str().is_none_or(key_activates)) =>
        {
            Activation::Focused
        }
        Dialog if flag("accept") != Some(false) => Activation::Dialog,
        _ => Activation::No,
    }
}

/// Whether pressing `key` (Playwright's name, a `+` combination such as `Control+Enter`, or one
/// character) can activate the focused element. Enter and Space activate buttons, links, boxes
/// and forms; arrows, Home/End, Page keys and any character change a focused select, radio group
/// or slider, whose change handler may submit. Only keys that move focus or close something, and
/// modifiers alone, cannot.
pub fn key_activates(key: &str) -> bool {
    const INERT: &[&str] = &[
        "Tab",
        "Escape",
        "Shift",
        "Control",
        "Alt",
        "Meta",
        "ControlOrMeta",
        "CapsLock",
    ];
    let last = key.rsplit('+').next().unwrap_or(key);
    // `+` itself, as in `Shift++`, is a character.
    let last = if last.is_empty() { "+" } else { last };
    !INERT.iter().any(|k| k.eq_ignore_ascii_case(last))
}

/// Each element the arguments name, with the object that names it.
fn items<'a>(
    tool: &'a Tool,
    args: &'a serde_json::Value,
) -> impl Iterator<Item = (&'static ElementArg, &'a serde_json::Value)> + 'a {
    tool.elements.iter().flat_map(move |el| {
        let list: Vec<&'a serde_json::Value> = match el.within {
            None => vec![args],
            Some(k) => match args.get(k) {
                Some(serde_json::Value::Array(a)) => a.iter().collect(),
                // Not a list: one item Leopold cannot read, judged as the whole value.
                Some(v) => vec![v],
                None => Vec::new(),
            },
        };
        list.into_iter().map(move |item| (el, item))
    })
}

fn is_text_field(el: &ElementArg, item: &serde_json::Value) -> bool {
    el.kind
        .is_none_or(|k| item.get(k).and_then(serde_json::Value::as_str) == Some(TEXT_FIELD))
}

/// Every name the model gave the elements a call acts on: descriptions, and the options chosen
/// (a text box's typed value excepted). Strings only; arrays of strings are read through.
pub fn element_names<'a>(tool: &'a Tool, args: &'a serde_json::Value) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (el, item) in items(tool, args) {
        let text = is_text_field(el, item) && el.kind.is_some();
        let keys = el
            .descriptions
            .iter()
            .chain(el.options.iter().filter(|_| !text));
        for k in keys {
            strings(item.get(*k), &mut out);
        }
    }
    out
}

fn strings<'a>(v: Option<&'a serde_json::Value>, out: &mut Vec<&'a str>) {
    match v {
        Some(serde_json::Value::String(s)) => out.push(s),
        Some(serde_json::Value::Array(a)) => a.iter().for_each(|v| strings(Some(v), out)),
        _ => {}
    }
}

/// The element refs a call acts on, in order; `None` for a reference that is not a string (it
/// cannot be looked up). An element whose reference key is absent is left out.
pub fn element_refs<'a>(tool: &'a Tool, args: &'a serde_json::Value) -> Vec<Option<&'a str>> {
    items(tool, args)
        .filter_map(|(el, item)| item.get(el.reference))
        .map(serde_json::Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_unique_bare_and_found_with_or_without_the_prefix() {
        for (i, t) in TOOLS.iter().enumerate() {
            assert!(!t.name.starts_with("browser_"), "{}", t.name);
            assert!(
                TOOLS[i + 1..].iter().all(|u| u.name != t.name),
                "{} twice",
                t.name
            );
            assert_eq!(find(&format!("browser_{}", t.name)), Some(t));
            assert_eq!(find(t.name), Some(t));
            assert!(!t.why.is_empty());
        }
        for unknown in [
            "browser_check",
            "browser_reload",
            "browser_webmcp_call",
            "webmcp_x",
            "",
        ] {
            assert_eq!(find(unknown), None, "{unknown}");
        }
    }

    /// The table of docs/security.md#the-browsers-tools is the catalogue, row for row.
    #[test]
    fn the_readme_table_is_the_catalogue() {
        let readme = include_str!("../../docs/security.md");
        let rows: Vec<&str> = readme
            .lines()
            .filter(|l| l.starts_with("| `browser_"))
            .collect();
        for t in TOOLS {
            let offer = match t.offer {
                Offered => "offered",
                OptIn => "opt-in",
                Never => "never",
            };
            let row = format!(
                "| `browser_{}` | {} | {offer} | {} |",
                t.name,
                t.does.as_str(),
                t.why
            );
            assert!(
                rows.contains(&row.as_str()),
                "docs/security.md lacks the row\n{row}"
            );
        }
        assert_eq!(
            rows.len(),
            TOOLS.len(),
            "docs/security.md lists a tool the catalogue does not"
        );
    }

    #[test]
    fn offered_follows_the_table_and_the_flow() {
        let none: Vec<String> = Vec::new();
        assert!(offered("browser_click", &none) && offered("click", &none));
        assert!(!offered("browser_evaluate", &none));
        assert!(offered("browser_evaluate", &["browser_evaluate".into()]));
        assert!(!offered("browser_evaluate", &["evaluate".into()]));
        assert!(!offered(
            "browser_run_code_unsafe",
            &["browser_run_code_unsafe".into()]
        ));
        assert!(
            !offered("browser_check", &none),
            "uncatalogued: never offered"
        );
        assert_eq!(
            opt_in_names().collect::<Vec<_>>(),
            ["browser_evaluate", "browser_file_upload", "browser_drop"]
        );
    }

    #[test]
    fn activation_reads_the_arguments() {
        let act = |name: &str, args| activation(find(name).unwrap(), &args);
        assert_eq!(act("click", json!({"target": "e1"})), Activation::Elements);
        assert_eq!(act("drag", json!({})), Activation::Elements);
        assert_eq!(act("select_option", json!({})), Activation::Elements);
        assert_eq!(act("type", json!({"text": "x"})), Activation::No);
        assert_eq!(act("type", json!({"submit": false})), Activation::No);
        assert_eq!(act("type", json!({"submit": true})), Activation::Elements);
        assert_eq!(act("type", json!({"submit": "yes"})), Activation::Elements);
        let field = |kind: Value| json!({"fields": [{"type": "textbox"}, {"type": kind}]});
        use serde_json::Value;
        assert_eq!(act("fill_form", field(json!("textbox"))), Activation::No);
        for kind in [
            json!("checkbox"),
            json!("radio"),
            json!("combobox"),
            json!("slider"),
            json!(1),
        ] {
            assert_eq!(
                act("fill_form", field(kind.clone())),
                Activation::Elements,
                "{kind}"
            );
        }
        assert_eq!(
            act("fill_form", json!({"fields": "x"})),
            Activation::Elements
        );
        for key in [
            "Enter",
            "NumpadEnter",
            "Space",
            " ",
            "Control+Enter",
            "ArrowDown",
            "a",
            "Shift++",
        ] {
            assert_eq!(
                act("press_key", json!({"key": key})),
                Activation::Focused,
                "{key}"
            );
        }
        for key in ["Tab", "Shift+Tab", "escape", "Shift"] {
            assert_eq!(
                act("press_key", json!({"key": key})),
                Activation::No,
                "{key}"
            );
        }
        assert_eq!(act("press_key", json!({"key": 13})), Activation::Focused);
        assert_eq!(
            act("handle_dialog", json!({"accept": true})),
            Activation::Dialog
        );
        assert_eq!(act("handle_dialog", json!({})), Activation::Dialog);
        assert_eq!(
            act("handle_dialog", json!({"accept": false})),
            Activation::No
        );
        assert_eq!(act("hover", json!({"target": "e1"})), Activation::No);
        assert_eq!(act("navigate", json!({"url": "x"})), Activation::No);
    }

    #[test]
    fn every_name_and_ref_of_the_acted_elements() {
        let t = find("browser_drag").unwrap();
        let args = json!({"startElement": "Item", "startTarget": "e1", "endElement": "Place order", "endTarget": 5});
        assert_eq!(element_names(t, &args), ["Item", "Place order"]);
        assert_eq!(element_refs(t, &args), [Some("e1"), None]);
        let t = find("browser_select_option").unwrap();
        let args =
            json!({"element": "Delivery", "target": "e2", "values": ["Express", "Place order"]});
        assert_eq!(
            element_names(t, &args),
            ["Delivery", "Express", "Place order"]
        );
        let t = find("browser_fill_form").unwrap();
        let args = json!({"fields": [
            {"name": "Card", "element": "card box", "target": "e3", "type": "textbox", "value": "Place order"},
            {"name": "Agree", "target": "e4", "type": "checkbox", "value": "true"},
            {"name": "Plan", "target": "e5", "type": "combobox", "value": "Place order now"}
        ]});
        assert_eq!(
            element_names(t, &args),
            [
                "card box",
                "Card",
                "Agree",
                "true",
                "Plan",
                "Place order now"
            ],
            "a text box's value is typed text, not a name"
        );
        assert_eq!(element_refs(t, &args), [Some("e3"), Some("e4"), Some("e5")]);
    }
}
