//! Tests of the wiring: round-trip properties, refusals, symlinks and permissions, concurrent
//! changes, idempotency.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;

use super::*;

/// Cases for properties of the pure edit functions.
const PURE_CASES: u32 = 256;
/// Cases for properties that go through the filesystem.
const IO_CASES: u32 = 64;

/// A sandbox: `<tmp>/project` and `<tmp>/codex` (as `$CODEX_HOME`).
struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ctx: Context,
}

fn sandbox() -> Sandbox {
    sandbox_with("/opt/leo pold/bin/leopold")
}

fn sandbox_with(exe: &str) -> Sandbox {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    fs::create_dir_all(root.join("project")).unwrap();
    let ctx = Context {
        project: root.join("project"),
        codex_home: root.join("codex"),
        guard_command: guard_command(Path::new(exe)).unwrap(),
        claude_on_failure: true,
        by_hand: false,
        record_dir: None,
    };
    Sandbox {
        _dir: dir,
        root,
        ctx,
    }
}

impl Sandbox {
    fn file(&self, kind: Harness) -> PathBuf {
        self.ctx.settings_path(kind)
    }

    fn put(&self, kind: Harness, text: &str) {
        let f = self.file(kind);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(f, text).unwrap();
    }

    fn read(&self, kind: Harness) -> Option<String> {
        fs::read_to_string(self.file(kind)).ok()
    }
}

// ---------------------------------------------------------------------------------------------
// Generated Claude settings.json documents.

/// A JSON value to render in a chosen style (keys unique per object, in this order).
#[derive(Debug, Clone)]
enum G {
    Obj(Vec<(String, G)>),
    Arr(Vec<G>),
    Str(String),
    Num(i64),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone)]
struct JStyle {
    pretty: bool,
    unit: &'static str,
    colon: &'static str,
    comma: &'static str,
    newline: &'static str,
    trailing_newline: bool,
}

fn render_g(v: &G, s: &JStyle, indent: &str, out: &mut String) {
    let (open, close, items): (char, char, Vec<(Option<&str>, &G)>) = match v {
        G::Str(x) => {
            out.push_str(&Value::String(x.clone()).to_string());
            return;
        }
        G::Num(n) => {
            out.push_str(&n.to_string());
            return;
        }
        G::Bool(b) => {
            out.push_str(if *b { "true" } else { "false" });
            return;
        }
        G::Null => {
            out.push_str("null");
            return;
        }
        G::Obj(m) => (
            '{',
            '}',
            m.iter().map(|(k, v)| (Some(k.as_str()), v)).collect(),
        ),
        G::Arr(a) => ('[', ']', a.iter().map(|v| (None, v)).collect()),
    };
    out.push(open);
    if items.is_empty() {
        out.push(close);
        return;
    }
    let inner = format!("{indent}{}", s.unit);
    for (i, (k, v)) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(if s.pretty { "," } else { s.comma });
        }
        if s.pretty {
            out.push_str(s.newline);
            out.push_str(&inner);
        }
        if let Some(k) = k {
            out.push_str(&Value::String((*k).to_owned()).to_string());
            out.push_str(s.colon);
        }
        render_g(v, s, &inner, out);
    }
    if s.pretty {
        out.push_str(s.newline);
        out.push_str(indent);
    }
    out.push(close);
}

fn render_doc(v: &G, s: &JStyle) -> String {
    let mut out = String::new();
    render_g(v, s, "", &mut out);
    if s.trailing_newline {
        out.push_str(s.newline);
    }
    out
}

fn text_strategy() -> impl Strategy<Value = String> {
    // Unicode, quotes and backslashes (escaped by the renderer), and control characters.
    "[a-zA-Z0-9 _.\\-é漢字🎉\"\\\\\t\n]{0,10}"
}

fn leaf() -> impl Strategy<Value = G> {
    prop_oneof![
        text_strategy().prop_map(G::Str),
        any::<i64>().prop_map(G::Num),
        any::<bool>().prop_map(G::Bool),
        Just(G::Null),
    ]
}

fn unique(members: Vec<(String, G)>) -> Vec<(String, G)> {
    let mut seen = std::collections::HashSet::new();
    members
        .into_iter()
        .filter(|(k, _)| seen.insert(k.clone()))
        .collect()
}

fn nested() -> impl Strategy<Value = G> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(G::Arr),
            prop::collection::vec((text_strategy(), inner), 0..4).prop_map(|m| G::Obj(unique(m))),
        ]
    })
}

/// Another tool's hook group; sometimes with our very matcher.
fn foreign_group() -> impl Strategy<Value = G> {
    (
        prop_oneof![
            Just("mcp__.*|WebFetch".to_owned()),
            Just("Bash".to_owned()),
            Just("Edit|Write".to_owned())
        ],
        prop::collection::vec("[a-z/ ._-]{1,20}", 1..3),
        any::<bool>(),
    )
        .prop_map(|(matcher, commands, with_timeout)| {
            let handlers = commands
                .into_iter()
                .map(|c| {
                    let mut h = vec![
                        ("type".to_owned(), G::Str("command".to_owned())),
                        ("command".to_owned(), G::Str(c)),
                    ];
                    if with_timeout {
                        h.push(("timeout".to_owned(), G::Num(30)));
                    }
                    G::Obj(h)
                })
                .collect();
            G::Obj(vec![
                ("matcher".to_owned(), G::Str(matcher)),
                ("hooks".to_owned(), G::Arr(handlers)),
            ])
        })
}

/// `hooks` absent, or present with (maybe) other events and (maybe) a PreToolUse array.
fn hooks_member() -> impl Strategy<Value = Option<G>> {
    prop_oneof![
        Just(None),
        (
            prop::option::of(prop::collection::vec(foreign_group(), 0..3)),
            prop::option::of(prop::collection::vec(foreign_group(), 0..2)),
        )
            .prop_map(|(pre, post)| {
                let mut m = Vec::new();
                if let Some(post) = post {
                    m.push(("PostToolUse".to_owned(), G::Arr(post)));
                }
                if let Some(pre) = pre {
                    m.push(("PreToolUse".to_owned(), G::Arr(pre)));
                }
                Some(G::Obj(m))
            }),
    ]
}

fn settings_doc() -> impl Strategy<Value = G> {
    (
        prop::collection::vec(("[a-zA-Z$é漢]{1,8}", nested()), 0..5),
        hooks_member(),
        0usize..6,
    )
        .prop_map(|(members, hooks, at)| {
            let mut members: Vec<(String, G)> =
                members.into_iter().filter(|(k, _)| k != "hooks").collect();
            members.insert(0, ("model".to_owned(), G::Str("sonnet".to_owned())));
            let mut members = unique(members);
            if let Some(h) = hooks {
                let at = at.min(members.len());
                members.insert(at, ("hooks".to_owned(), h));
            }
            G::Obj(members)
        })
}

/// `doc` with a `hooks.PreToolUse` array (kept if it has one, else holding `groups`).
fn with_pre_tool_use(doc: G, groups: Vec<G>) -> G {
    let G::Obj(mut members) = doc else {
        return doc;
    };
    match members.iter_mut().find(|(k, _)| k == "hooks") {
        Some((_, G::Obj(h))) => {
            if !h.iter().any(|(k, _)| k == "PreToolUse") {
                h.push(("PreToolUse".to_owned(), G::Arr(groups)));
            }
        }
        _ => members.push((
            "hooks".to_owned(),
            G::Obj(vec![("PreToolUse".to_owned(), G::Arr(groups))]),
        )),
    }
    G::Obj(members)
}

fn json_style() -> impl Strategy<Value = JStyle> {
    (
        any::<bool>(),
        prop_oneof![Just("  "), Just("    "), Just("\t")],
        prop_oneof![Just(": "), Just(":"), Just(" : ")],
        prop_oneof![Just(", "), Just(",")],
        prop_oneof![Just("\n"), Just("\r\n")],
        any::<bool>(),
    )
        .prop_map(
            |(pretty, unit, colon, comma, newline, trailing_newline)| JStyle {
                pretty,
                unit,
                colon,
                comma,
                newline,
                trailing_newline,
            },
        )
}

/// The user's edit: a new first member of the root object.
fn user_edit_json(text: &str) -> String {
    let i = text.find('{').unwrap();
    format!("{}{{\"userEdit\": true, {}", &text[..i], &text[i + 1..])
}

fn to_j(g: &G) -> json_text::J {
    use json_text::J;
    match g {
        G::Obj(m) => J::Obj(
            m.iter()
                .map(|(k, v)| (&*Box::leak(k.clone().into_boxed_str()), to_j(v)))
                .collect(),
        ),
        G::Arr(a) => J::Arr(a.iter().map(to_j).collect()),
        G::Str(s) => J::Str(s.clone()),
        G::Num(n) => J::Num(u64::try_from(*n).unwrap()),
        G::Bool(_) | G::Null => unreachable!("hook groups hold no booleans or nulls"),
    }
}

/// The user's edit: their own group appended to `hooks.PreToolUse`, in the file's style.
fn append_group(text: &str, group: &G) -> String {
    let root = json_text::parse(text).unwrap();
    let style = json_text::Style::detect(text, &root);
    let ptu = root.get("hooks").unwrap().get("PreToolUse").unwrap();
    json_text::append(text, &style, ptu, None, &to_j(group))
}

fn pre_tool_use_of(v: &Value) -> Vec<Value> {
    v.get("hooks")
        .and_then(|h| h.get("PreToolUse"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: PURE_CASES, ..ProptestConfig::default() })]

    #[test]
    fn claude_wire_keeps_every_existing_hook_and_key(doc in settings_doc(), style in json_style()) {
        let sb = sandbox();
        let original = render_doc(&doc, &style);
        let wired = claude::add(Path::new("s.json"), Some(&original), &sb.ctx.spec(Harness::Claude)).unwrap().text;
        let before: Value = serde_json::from_str(&original).unwrap();
        let after: Value = serde_json::from_str(&wired).unwrap();
        let (pre_before, mut pre_after) = (pre_tool_use_of(&before), pre_tool_use_of(&after));
        let ours = pre_after.pop().unwrap();
        prop_assert_eq!(pre_before, pre_after);
        prop_assert_eq!(&ours["hooks"][0]["command"], &Value::String(sb.ctx.guard_command.clone()));
        prop_assert_eq!(&ours["hooks"][0]["onFailure"], "block");
        // Every key but hooks.PreToolUse is untouched.
        let strip = |mut v: Value| {
            if let Some(h) = v.get_mut("hooks").and_then(Value::as_object_mut) {
                h.remove("PreToolUse");
                if h.is_empty() { v.as_object_mut().unwrap().remove("hooks"); }
            }
            v
        };
        prop_assert_eq!(strip(before), strip(after));
        // In the file's own line endings.
        if style.newline == "\r\n" && original.contains('\n') {
            prop_assert_eq!(wired.matches('\n').count(), wired.matches("\r\n").count());
        }
        // A compact file stays compact.
        if !style.pretty {
            prop_assert_eq!(wired.matches('\n').count(), original.matches('\n').count());
        }
    }

    #[test]
    fn claude_edit_between_wire_and_unwire_survives(doc in settings_doc(), style in json_style()) {
        let sb = sandbox();
        let file = Path::new("s.json");
        let original = render_doc(&doc, &style);
        let added = claude::add(file, Some(&original), &sb.ctx.spec(Harness::Claude)).unwrap();
        let (unwired, n) = claude::strip(file, &user_edit_json(&added.text), added.created).unwrap();
        prop_assert_eq!(n, 1);
        prop_assert_eq!(unwired, user_edit_json(&original));
    }

    /// Without the record (lost, or wired by another leopold), removal by tag alone is the exact
    /// inverse of wire whenever wire did not have to create `hooks`/`PreToolUse`.
    /// The user (or the harness) adds a group after ours, which is now in the middle.
    #[test]
    fn claude_a_group_added_after_ours_survives_unwire(
        doc in settings_doc(),
        groups in prop::collection::vec(foreign_group(), 0..3),
        theirs in foreign_group(),
        style in json_style(),
    ) {
        let sb = sandbox();
        let file = Path::new("s.json");
        let original = render_doc(&with_pre_tool_use(doc, groups), &style);
        let added = claude::add(file, Some(&original), &sb.ctx.spec(Harness::Claude)).unwrap();
        let edited = append_group(&added.text, &theirs);
        let (unwired, n) = claude::strip(file, &edited, added.created).unwrap();
        prop_assert_eq!(n, 1);
        prop_assert_eq!(unwired, append_group(&original, &theirs));
    }

    #[test]
    fn claude_removal_by_tag_alone_is_exact_when_pre_tool_use_existed(
        doc in settings_doc(),
        groups in prop::collection::vec(foreign_group(), 0..3),
        style in json_style(),
    ) {
        let sb = sandbox();
        let file = Path::new("s.json");
        let original = render_doc(&with_pre_tool_use(doc, groups), &style);
        let added = claude::add(file, Some(&original), &sb.ctx.spec(Harness::Claude)).unwrap();
        prop_assert_eq!(added.created, Created::default());
        let (unwired, n) = claude::strip(file, &added.text, Created::default()).unwrap();
        prop_assert_eq!(n, 1);
        prop_assert_eq!(unwired, original);
    }
}

// ---------------------------------------------------------------------------------------------
// Generated Codex config.toml documents.

fn toml_string() -> impl Strategy<Value = String> {
    // Basic strings with unicode; quotes and backslashes escaped.
    "[a-zA-Z0-9 _.é漢🎉\"\\\\-]{0,10}"
        .prop_map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
}

fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        toml_string(),
        any::<i32>().prop_map(|n| n.to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        prop::collection::vec(any::<u8>(), 0..4).prop_map(|v| format!(
            "[{}]",
            v.iter().map(u8::to_string).collect::<Vec<_>>().join(", ")
        )),
        "'[a-z漢 ]{0,6}'",
    ]
}

/// `key = value`, with odd spacing and maybe a trailing comment.
fn toml_kv(key: String) -> impl Strategy<Value = String> {
    (
        toml_value(),
        prop_oneof![Just(" = "), Just("="), Just("   =  "), Just("\t= ")],
        prop::option::of("[ a-zé#]{0,12}"),
    )
        .prop_map(move |(v, eq, comment)| match comment {
            Some(c) => format!("{key}{eq}{v}   # {c}"),
            None => format!("{key}{eq}{v}"),
        })
}

fn toml_comment_or_blank() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "#[ a-z漢é#=\\[\\]]{0,20}",
        Just("   ".to_owned())
    ]
}

fn toml_lines(
    prefix: &'static str,
    n: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (
            toml_kv(String::new()),
            toml_comment_or_blank(),
            any::<bool>(),
        ),
        n,
    )
    .prop_map(move |items| {
        let mut out = Vec::new();
        for (i, (kv, extra, with_extra)) in items.into_iter().enumerate() {
            if with_extra {
                out.push(extra);
            }
            out.push(format!("{prefix}{i}{kv}"));
        }
        out
    })
}

/// Another tool's `[[hooks.PreToolUse]]` group.
fn toml_foreign_group() -> impl Strategy<Value = Vec<String>> {
    (
        prop_oneof![Just("mcp__.*|WebFetch"), Just("Bash"), Just("apply_patch")],
        prop::collection::vec("[a-z/ ._-]{1,16}", 1..3),
        any::<bool>(),
    )
        .prop_map(|(matcher, commands, blank)| {
            let mut out = vec![
                "[[hooks.PreToolUse]]".to_owned(),
                format!("matcher = \"{matcher}\""),
            ];
            for c in commands {
                if blank {
                    out.push(String::new());
                }
                out.push("[[hooks.PreToolUse.hooks]]".to_owned());
                out.push("type = \"command\"".to_owned());
                out.push(format!("command = \"{c}\"  # theirs"));
            }
            out
        })
}

fn config_toml() -> impl Strategy<Value = (String, &'static str)> {
    config_toml_with(false)
}

/// With `mixed`, each line break is LF or CRLF at random (the returned newline is then "").
fn config_toml_with(mixed: bool) -> impl Strategy<Value = (String, &'static str)> {
    (
        prop::collection::vec(toml_comment_or_blank(), 0..3),
        toml_lines("key", 0..4),
        prop::collection::vec(
            prop_oneof![
                toml_lines("", 0..3).prop_map(|l| {
                    let mut v = vec!["[mcp_servers.browser]".to_owned()];
                    v.extend(l.into_iter().map(|s| {
                        if s.starts_with(|c: char| c.is_ascii_digit()) {
                            format!("k{s}")
                        } else {
                            s
                        }
                    }));
                    v
                }),
                toml_foreign_group(),
            ],
            0..3,
        ),
        any::<bool>(),
        prop_oneof![Just("\n"), Just("\r\n")],
        any::<bool>(),
        prop::collection::vec(any::<bool>(), 1..16),
    )
        .prop_map(
            move |(head, top, sections, hooks_table, newline, trailing, crlf)| {
                let mut lines = head;
                lines.extend(top);
                if hooks_table {
                    lines.push(String::new());
                    lines.push("[hooks]".to_owned());
                    lines.push("enabled_note = \"x\"".to_owned());
                }
                let mut seen_mcp = false;
                for s in sections {
                    // One [mcp_servers.browser] at most: TOML forbids defining a table twice.
                    if s[0] == "[mcp_servers.browser]" {
                        if seen_mcp {
                            continue;
                        }
                        seen_mcp = true;
                    }
                    lines.push(String::new());
                    lines.extend(s);
                }
                if mixed {
                    let mut text = String::new();
                    for (i, line) in lines.iter().enumerate() {
                        text.push_str(line);
                        if trailing || i + 1 < lines.len() {
                            text.push_str(if crlf[i % crlf.len()] { "\r\n" } else { "\n" });
                        }
                    }
                    return (text, "");
                }
                let mut text = lines.join(newline);
                if trailing {
                    text.push_str(newline);
                }
                (text, newline)
            },
        )
}

fn user_edit_toml(text: &str, newline: &str) -> String {
    format!("user_edit = true{newline}{text}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: PURE_CASES, ..ProptestConfig::default() })]

    #[test]
    fn codex_wire_keeps_every_existing_line_and_hook((original, newline) in config_toml()) {
        let sb = sandbox();
        let file = Path::new("config.toml");
        let wired = codex::add(file, Some(&original), &sb.ctx.spec(Harness::Codex)).unwrap().text;
        // Every line of the user's file is still there, in order (comments, spacing and all).
        let mut rest = wired.as_str();
        for line in original.split(newline).filter(|l| !l.is_empty()) {
            let at = rest.find(line);
            prop_assert!(at.is_some(), "line {:?} lost in\n{}", line, wired);
            rest = &rest[at.unwrap() + line.len()..];
        }
        let before = original.matches("[[hooks.PreToolUse]]").count();
        prop_assert_eq!(wired.matches("[[hooks.PreToolUse]]").count(), before + 1);
        let handlers = codex::list(file, &wired, &sb.ctx.spec(Harness::Codex)).unwrap();
        prop_assert_eq!(handlers.len(), 1);
        prop_assert!(handlers[0].current);
        if newline == "\r\n" && original.contains('\n') {
            prop_assert_eq!(wired.matches('\n').count(), wired.matches("\r\n").count());
        }
    }

    #[test]
    fn codex_edit_between_wire_and_unwire_survives((original, newline) in config_toml()) {
        let (file, added) = codex_added(&original);
        // The user edits in the file's line endings (an empty file had none: wire wrote LF).
        let newline = if added.text.contains(newline) { newline } else { "\n" };
        let (unwired, n) = codex::strip(file, &user_edit_toml(&added.text, newline), added.created).unwrap();
        prop_assert_eq!(n, 1);
        prop_assert_eq!(unwired, user_edit_toml(&original, newline));
    }

    /// toml_edit writes LF only; each line the user had keeps its own ending, even in a file
    /// that mixes LF and CRLF.
    #[test]
    fn codex_wire_keeps_each_lines_ending_in_a_mixed_file((original, _nl) in config_toml_with(true)) {
        let (file, added) = codex_added(&original);
        lines_kept_in_order(&original, &added.text)?;
        let (unwired, _) = codex::strip(file, &added.text, Created::default()).unwrap();
        lines_kept_in_order(&original, &unwired)?;
    }

    /// The user adds their own `[[hooks.PreToolUse]]` group at the end of the file.
    #[test]
    fn codex_a_group_added_after_ours_survives_unwire(
        (original, newline) in config_toml(),
        theirs in toml_foreign_group(),
    ) {
        let (file, added) = codex_added(&original);
        let newline = if added.text.contains(newline) { newline } else { "\n" };
        let edit = |text: &str| {
            let sep = if text.is_empty() || text.ends_with('\n') { "" } else { newline };
            format!("{text}{sep}{}{newline}", theirs.join(newline))
        };
        let (unwired, n) = codex::strip(file, &edit(&added.text), added.created).unwrap();
        prop_assert_eq!(n, 1);
        prop_assert_eq!(unwired, edit(&original));
    }

    #[test]
    fn codex_removal_by_tag_alone_is_exact_when_pre_tool_use_existed(
        (original, newline) in config_toml(),
        group in toml_foreign_group(),
    ) {
        let original = if original.contains("[[hooks.PreToolUse]]") {
            original
        } else {
            format!("{original}{newline}{}{newline}", group.join(newline))
        };
        let (file, added) = codex_added(&original);
        prop_assert_eq!(added.created, Created::default());
        let (unwired, n) = codex::strip(file, &added.text, Created::default()).unwrap();
        prop_assert_eq!(n, 1);
        prop_assert_eq!(unwired, original);
    }

}

// The same documents through the real `wire`/`unwire` (files, record, fsync, rename): fewer cases,
// as each one touches the disk a dozen times.
proptest! {
    #![proptest_config(ProptestConfig { cases: IO_CASES, ..ProptestConfig::default() })]

    #[test]
    fn claude_wire_then_unwire_restores_the_bytes(doc in settings_doc(), style in json_style()) {
        let original = render_doc(&doc, &style);
        let (sb, wired) = wired_then_unwired(Harness::Claude, &original)?;
        prop_assert_ne!(&wired, &original);
        prop_assert!(!sb.ctx.record_path(Harness::Claude).exists());
    }

    #[test]
    fn claude_wire_is_idempotent_and_unwire_twice_is_a_no_op(doc in settings_doc(), style in json_style()) {
        wired_twice_unwired_twice(Harness::Claude, &render_doc(&doc, &style))?;
    }

    #[test]
    fn codex_wire_then_unwire_restores_the_bytes((original, _nl) in config_toml()) {
        wired_then_unwired(Harness::Codex, &original)?;
    }

    #[test]
    fn codex_wire_is_idempotent((original, _nl) in config_toml()) {
        wired_twice_unwired_twice(Harness::Codex, &original)?;
    }
}

/// The guard's wiring added to a Codex `config.toml` holding `original`: the file's name and
/// what `add` made of it.
fn codex_added(original: &str) -> (&'static Path, Added) {
    let file = Path::new("config.toml");
    let added = codex::add(file, Some(original), &sandbox().ctx.spec(Harness::Codex)).unwrap();
    (file, added)
}

/// Each non-blank line of `original` stands in `text`, with its own ending, in the same order.
fn lines_kept_in_order(original: &str, text: &str) -> Result<(), TestCaseError> {
    let mut rest = text;
    for line in original.split_inclusive('\n').filter(|l| l.trim() != "") {
        let at = rest.find(line);
        prop_assert!(at.is_some(), "line {:?} lost in\n{:?}", line, text);
        rest = &rest[at.unwrap() + line.len()..];
    }
    Ok(())
}

/// `h`'s settings holding `original`, wired (a change) then unwired (restored to the byte):
/// the sandbox and the wired text.
fn wired_then_unwired(h: Harness, original: &str) -> Result<(Sandbox, String), TestCaseError> {
    let sb = sandbox();
    sb.put(h, original);
    prop_assert!(wire(h, &sb.ctx).unwrap().changed);
    let wired = sb.read(h).unwrap();
    let un = unwire(h, &sb.ctx).unwrap();
    prop_assert_eq!(un.action, UnwireAction::Restored);
    prop_assert_eq!(sb.read(h).unwrap(), original);
    Ok((sb, wired))
}

/// `h`'s settings holding `original`: a second wiring changes nothing and leaves one handler; a
/// second unwiring finds nothing wired, and `original` is back.
fn wired_twice_unwired_twice(h: Harness, original: &str) -> Result<(), TestCaseError> {
    let sb = sandbox();
    sb.put(h, original);
    let _ = wire(h, &sb.ctx).unwrap();
    let once = sb.read(h).unwrap();
    prop_assert!(!wire(h, &sb.ctx).unwrap().changed);
    prop_assert_eq!(sb.read(h).unwrap(), once);
    prop_assert_eq!(wired_handlers(h, &sb.ctx).unwrap().len(), 1);
    let _ = unwire(h, &sb.ctx).unwrap();
    prop_assert_eq!(
        unwire(h, &sb.ctx).unwrap().action,
        UnwireAction::NothingWired
    );
    prop_assert_eq!(sb.read(h).unwrap(), original);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Refuse, don't repair.

/// Wire and unwire both refuse `text` in `kind`'s file, leaving its bytes alone; returns the
/// error message.
/// [`refused`], whose message must contain `needle`.
#[track_caller]
fn refused_saying(kind: Harness, text: &[u8], needle: &str) -> String {
    let msg = refused(kind, text);
    assert!(msg.contains(needle), "{msg}");
    msg
}

fn refused(kind: Harness, text: &[u8]) -> String {
    let sb = sandbox();
    let file = sb.file(kind);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, text).unwrap();
    let err = wire(kind, &sb.ctx).unwrap_err();
    assert_eq!(
        fs::read(&file).unwrap(),
        text,
        "wire changed a malformed file"
    );
    assert!(
        !sb.ctx.record_path(kind).exists(),
        "wire recorded a refused file"
    );
    let msg = err.to_string();
    assert!(msg.contains(&file.display().to_string()), "{msg}");
    assert!(msg.contains("left untouched"), "{msg}");
    assert!(msg.contains("hint:"), "{msg}");
    let err2 = unwire(kind, &sb.ctx).unwrap_err();
    assert_eq!(
        fs::read(&file).unwrap(),
        text,
        "unwire changed a malformed file"
    );
    assert_eq!(err2.to_string(), msg);
    assert!(wired_handlers(kind, &sb.ctx).is_err());
    msg
}

#[test]
fn truncated_json_is_refused_with_line_and_column() {
    refused_saying(
        Harness::Claude,
        b"{\n  \"hooks\": {\n    \"PreToolUse\": [",
        "line 3, column 19: not valid JSON: EOF while parsing",
    );
}

#[test]
fn duplicate_json_keys_are_refused() {
    let msg = refused_saying(
        Harness::Claude,
        b"{\n  \"hooks\": {},\n  \"model\": \"a\",\n  \"model\": \"b\"\n}\n",
        "line 4, column 3: duplicate key \"model\"",
    );
    assert!(msg.contains("remove one of the two"), "{msg}");
}

#[test]
fn hooks_of_the_wrong_type_are_refused() {
    refused_saying(
        Harness::Claude,
        b"{\"hooks\": \"none\"}",
        "line 1, column 11: `hooks` is a string, expected an object",
    );
    refused_saying(
        Harness::Claude,
        b"{\"hooks\": {\"PreToolUse\": {\"matcher\": \"x\"}}}",
        "column 26: `hooks.PreToolUse` is an object, expected an array",
    );
    refused_saying(
        Harness::Claude,
        b"{\"hooks\": {\"PreToolUse\": [{\"hooks\": 3}]}}",
        "`hooks.PreToolUse[0].hooks` is a number",
    );
    refused_saying(
        Harness::Claude,
        b"[1, 2]\n",
        "line 1, column 1: the top level is an array, expected an object",
    );
}

#[test]
fn empty_and_non_utf8_settings_are_refused() {
    refused_saying(Harness::Claude, b"  \n", "the file is empty");
    refused_saying(Harness::Claude, b"{\"model\": \"\xff\"}", "is not UTF-8");
    refused_saying(Harness::Codex, b"model = \"\xfe\"\n", "is not UTF-8");
}

#[test]
fn toml_syntax_errors_are_refused_with_line_and_column() {
    refused_saying(
        Harness::Codex,
        b"model = \"o3\"\n\n[hooks\nx = 1\n",
        "line 3, column 7: not valid TOML",
    );
    refused_saying(
        Harness::Codex,
        b"a = 1\na = 2\n",
        "line 2, column 1: not valid TOML: duplicate key",
    );
}

#[test]
fn toml_pre_tool_use_as_a_table_is_refused() {
    refused_saying(
        Harness::Codex,
        b"# mine\n[hooks.PreToolUse]\nmatcher = \"Bash\"\n",
        "line 2, column 8: `hooks.PreToolUse` is table, expected an array of tables",
    );
    refused_saying(
        Harness::Codex,
        b"hooks = \"off\"\n",
        "line 1, column 1: `hooks` is string, expected a table",
    );
    refused_saying(
        Harness::Codex,
        b"[[hooks.PreToolUse]]\nmatcher = \"x\"\nhooks = \"y\"\n",
        "line 3, column 1: `hooks.PreToolUse[0].hooks` is string",
    );
}

// ---------------------------------------------------------------------------------------------
// What is written.

#[test]
fn claude_file_and_directory_are_created_and_removed_again() {
    let sb = sandbox();
    let out = wire(Harness::Claude, &sb.ctx).unwrap();
    assert!(out.changed);
    assert_eq!(
        out.record,
        WiringEntry {
            harness: Harness::Claude,
            file: sb.file(Harness::Claude),
            tag: TAG.to_owned()
        }
    );
    let v: Value = serde_json::from_str(&sb.read(Harness::Claude).unwrap()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "mcp__.*|WebFetch", "hooks": [{
            "type": "command",
            "command": "'/opt/leo pold/bin/leopold' persona guard # leopold-persona-guard",
            "timeout": 5,
            "onFailure": "block"
        }]}]}})
    );
    let un = unwire(Harness::Claude, &sb.ctx).unwrap();
    assert_eq!(un.action, UnwireAction::Restored);
    assert!(!sb.ctx.project.join(".claude").exists());
    assert!(!sb.ctx.project.join(".leopold").exists());
}

#[test]
fn state_directories_that_existed_before_wire_are_kept() {
    let sb = sandbox();
    let persona = sb.ctx.project.join(".leopold/persona");
    fs::create_dir_all(&persona).unwrap();
    let _ = wire(Harness::Codex, &sb.ctx).unwrap();
    assert!(sb.ctx.record_path(Harness::Codex).exists());
    let _ = unwire(Harness::Codex, &sb.ctx).unwrap();
    assert!(!persona.join("wiring").exists());
    assert!(persona.is_dir(), "the supervisor's directory was removed");
}

#[test]
fn claude_directory_holding_something_else_is_kept() {
    let sb = sandbox();
    let _ = wire(Harness::Claude, &sb.ctx).unwrap();
    fs::write(sb.ctx.project.join(".claude/settings.local.json"), "{}").unwrap();
    let _ = unwire(Harness::Claude, &sb.ctx).unwrap();
    assert!(!sb.file(Harness::Claude).exists());
    assert!(sb.ctx.project.join(".claude/settings.local.json").exists());
}

#[test]
fn on_failure_is_only_set_when_claude_supports_it() {
    let mut sb = sandbox();
    sb.ctx.claude_on_failure = false;
    let _ = wire(Harness::Claude, &sb.ctx).unwrap();
    assert!(!sb.read(Harness::Claude).unwrap().contains("onFailure"));
    // Codex has no such setting, whatever Claude supports.
    sb.ctx.claude_on_failure = true;
    let _ = wire(Harness::Codex, &sb.ctx).unwrap();
    assert!(!sb.read(Harness::Codex).unwrap().contains("onFailure"));
}

#[test]
fn codex_wiring_is_the_documented_toml() {
    let sb = sandbox();
    sb.put(Harness::Codex, "model = \"o3\" # mine\n");
    let _ = wire(Harness::Codex, &sb.ctx).unwrap();
    assert_eq!(
        sb.read(Harness::Codex).unwrap(),
        "model = \"o3\" # mine\n\
         \n\
         # leopold-persona-guard: added by `leopold persona wire` (or `persona run`); `leopold persona unwire` removes it\n\
         [[hooks.PreToolUse]]\n\
         matcher = \"mcp__.*|WebFetch\"\n\
         \n\
         [[hooks.PreToolUse.hooks]]\n\
         type = \"command\"\n\
         command = \"'/opt/leo pold/bin/leopold' persona guard # leopold-persona-guard\"\n\
         timeout = 5\n"
    );
}

#[test]
fn codex_inline_pre_tool_use_array_gets_an_inline_group() {
    let sb = sandbox();
    let original = "hooks = { PreToolUse = [{ matcher = \"Bash\", hooks = [{ type = \"command\", command = \"x\" }] }] }\n";
    sb.put(Harness::Codex, original);
    let _ = wire(Harness::Codex, &sb.ctx).unwrap();
    let wired = sb.read(Harness::Codex).unwrap();
    assert!(wired.starts_with("hooks = { PreToolUse = [{ matcher = \"Bash\", hooks = [{ type = \"command\", command = \"x\" }] }, {"), "{wired}");
    let h = wired_handlers(Harness::Codex, &sb.ctx).unwrap();
    assert_eq!(h.len(), 1);
    assert!(h[0].current);
    // Removal by tag too (the record lost).
    fs::remove_file(sb.ctx.record_path(Harness::Codex)).unwrap();
    let un = unwire(Harness::Codex, &sb.ctx).unwrap();
    assert_eq!(un.action, UnwireAction::RemovedHandlers(1));
    let after = sb.read(Harness::Codex).unwrap();
    assert!(!after.contains(TAG));
    assert!(after.contains("matcher = \"Bash\""));
}

#[test]
fn a_shared_group_keeps_the_other_handler() {
    let sb = sandbox();
    let cmd = &sb.ctx.guard_command;
    let text = format!(
        "{{\"hooks\": {{\"PreToolUse\": [{{\"matcher\": \"mcp__.*|WebFetch\", \"hooks\": [\
         {{\"type\": \"command\", \"command\": {}}}, {{\"type\": \"command\", \"command\": \"audit\"}}]}}]}}}}",
        Value::String(cmd.clone())
    );
    sb.put(Harness::Claude, &text);
    let h = wired_handlers(Harness::Claude, &sb.ctx).unwrap();
    assert_eq!(h.len(), 1);
    assert!(!h[0].current, "not alone in its group");
    let un = unwire(Harness::Claude, &sb.ctx).unwrap();
    assert_eq!(un.action, UnwireAction::RemovedHandlers(1));
    assert_eq!(
        sb.read(Harness::Claude).unwrap(),
        "{\"hooks\": {\"PreToolUse\": [{\"matcher\": \"mcp__.*|WebFetch\", \"hooks\": [\
         {\"type\": \"command\", \"command\": \"audit\"}]}]}}"
    );
}

#[test]
fn a_stale_wiring_is_replaced_and_unwire_still_restores_the_original() {
    let old = sandbox_with("/old/leopold");
    let original = "{\n  \"model\": \"opus\"\n}\n";
    old.put(Harness::Claude, original);
    let _ = wire(Harness::Claude, &old.ctx).unwrap();
    let mut new_ctx = old.ctx.clone();
    new_ctx.guard_command = guard_command(Path::new("/new/leopold")).unwrap();
    let stale = wired_handlers(Harness::Claude, &new_ctx).unwrap();
    assert_eq!(stale.len(), 1);
    assert!(!stale[0].current);
    assert!(wire(Harness::Claude, &new_ctx).unwrap().changed);
    let now = wired_handlers(Harness::Claude, &new_ctx).unwrap();
    assert_eq!(now.len(), 1);
    assert!(now[0].current);
    assert!(now[0].command.starts_with("'/new/leopold'"));
    assert_eq!(
        unwire(Harness::Claude, &new_ctx).unwrap().action,
        UnwireAction::Restored
    );
    assert_eq!(old.read(Harness::Claude).unwrap(), original);
}

#[test]
fn a_wiring_found_without_record_is_not_taken_as_the_original() {
    // Wired, record lost, wired again: unwire must not "restore" the wired file.
    let sb = sandbox();
    sb.put(Harness::Claude, "{\"a\": 1}");
    let _ = wire(Harness::Claude, &sb.ctx).unwrap();
    fs::remove_file(sb.ctx.record_path(Harness::Claude)).unwrap();
    let mut other = sb.ctx.clone();
    other.guard_command = guard_command(Path::new("/elsewhere/leopold")).unwrap();
    let _ = wire(Harness::Claude, &other).unwrap();
    let _ = unwire(Harness::Claude, &other).unwrap();
    let after = sb.read(Harness::Claude).unwrap();
    assert!(!after.contains(TAG), "{after}");
    let v: Value = serde_json::from_str(&after).unwrap();
    assert_eq!(v["a"], 1);
}

#[test]
fn unwire_with_nothing_wired_succeeds_without_writing() {
    let sb = sandbox();
    for kind in Harness::ALL {
        assert_eq!(
            unwire(kind, &sb.ctx).unwrap().action,
            UnwireAction::NothingWired
        );
        assert!(!sb.file(kind).exists());
    }
    sb.put(Harness::Claude, "{ \"x\" : 1 }");
    assert_eq!(
        unwire(Harness::Claude, &sb.ctx).unwrap().action,
        UnwireAction::NothingWired
    );
    assert_eq!(sb.read(Harness::Claude).unwrap(), "{ \"x\" : 1 }");
}

#[test]
fn claude_validation_problems_are_warned_about() {
    let sb = sandbox();
    sb.put(
        Harness::Claude,
        "{\"permissions\": {\"allow\": 5, \"deny\": [\"x\", 1]}, \"env\": {\"A\": 1}, \"disableAllHooks\": true}",
    );
    let out = wire(Harness::Claude, &sb.ctx).unwrap();
    let all = out.warnings.join("\n");
    assert!(
        all.contains("`permissions.allow` is not an array of strings"),
        "{all}"
    );
    assert!(
        all.contains("`permissions.deny` is not an array of strings"),
        "{all}"
    );
    assert!(all.contains("`env` is not an object of strings"), "{all}");
    assert!(
        all.contains("also passes the hook with `--settings`"),
        "{all}"
    );
    assert!(all.contains("`disableAllHooks` is true"), "{all}");
    // A valid file gets no warning.
    let clean = sandbox();
    clean.put(
        Harness::Claude,
        "{\"permissions\": {\"allow\": [\"Bash(ls)\"]}}",
    );
    assert!(wire(Harness::Claude, &clean.ctx)
        .unwrap()
        .warnings
        .is_empty());
}

#[test]
fn the_standalone_settings_file_holds_only_the_guard() {
    let sb = sandbox();
    let v: Value = serde_json::from_str(&claude_guard_settings_json(&sb.ctx)).unwrap();
    let groups = pre_tool_use_of(&v);
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["matcher"], MATCHER);
    assert_eq!(
        groups[0]["hooks"][0]["command"],
        sb.ctx.guard_command.as_str()
    );
    assert_eq!(groups[0]["hooks"][0]["onFailure"], "block");
    assert_eq!(v.as_object().unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Atomic and careful.

#[cfg(unix)]
#[test]
fn a_symlinked_settings_file_stays_a_link_and_its_target_is_written() {
    let sb = sandbox();
    let dotfiles = sb.root.join("dotfiles");
    fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("claude-settings.json");
    let original = "{\n    \"model\": \"opus\"\n}\n";
    fs::write(&target, original).unwrap();
    fs::create_dir_all(sb.ctx.project.join(".claude")).unwrap();
    let link = sb.file(Harness::Claude);
    std::os::unix::fs::symlink("../../dotfiles/claude-settings.json", &link).unwrap();
    let _ = wire(Harness::Claude, &sb.ctx).unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read_to_string(&target).unwrap().contains(TAG));
    // No temp file left beside either.
    assert_eq!(fs::read_dir(&dotfiles).unwrap().count(), 1);
    assert_eq!(fs::read_dir(link.parent().unwrap()).unwrap().count(), 1);
    assert_eq!(
        unwire(Harness::Claude, &sb.ctx).unwrap().action,
        UnwireAction::Restored
    );
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_to_string(&target).unwrap(), original);
}

#[cfg(unix)]
#[test]
fn a_dangling_symlink_is_written_through_to_its_target() {
    let sb = sandbox();
    fs::create_dir_all(&sb.ctx.codex_home).unwrap();
    let target = sb.root.join("config-real.toml");
    std::os::unix::fs::symlink(&target, sb.file(Harness::Codex)).unwrap();
    let _ = wire(Harness::Codex, &sb.ctx).unwrap();
    assert!(fs::read_to_string(&target).unwrap().contains(TAG));
    assert!(fs::symlink_metadata(sb.file(Harness::Codex))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[cfg(unix)]
#[test]
fn file_permissions_survive_wire_and_unwire() {
    use std::os::unix::fs::PermissionsExt;
    for (kind, text, mode) in [
        (Harness::Claude, "{}", 0o600),
        (Harness::Codex, "# private\n", 0o640),
    ] {
        let sb = sandbox();
        sb.put(kind, text);
        let file = sb.file(kind);
        fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
        let _ = wire(kind, &sb.ctx).unwrap();
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o7777,
            mode
        );
        sb.put(kind, &format!("{}\n", sb.read(kind).unwrap()));
        let _ = unwire(kind, &sb.ctx).unwrap();
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o7777,
            mode
        );
    }
}

#[test]
fn a_change_between_read_and_rename_is_redone_not_overwritten() {
    for kind in Harness::ALL {
        let sb = sandbox();
        let (first, theirs) = match kind {
            Harness::Claude => (
                "{\n  \"a\": 1\n}\n",
                "{\n  \"a\": 1,\n  \"theirs\": true\n}\n",
            ),
            Harness::Codex => ("a = 1\n", "a = 1\ntheirs = true\n"),
        };
        sb.put(kind, first);
        let file = sb.file(kind);
        let mut calls = 0;
        let out = wire_with_hook(kind, &sb.ctx, &mut |_| {
            calls += 1;
            if calls == 1 {
                fs::write(&file, theirs).unwrap();
            }
        })
        .unwrap();
        assert!(out.changed);
        assert_eq!(calls, 2, "{kind}: redone once");
        let wired = sb.read(kind).unwrap();
        assert!(
            wired.contains("theirs"),
            "{kind}: their change was overwritten:\n{wired}"
        );
        assert_eq!(wired_handlers(kind, &sb.ctx).unwrap().len(), 1);
        // Unwire restores what the file was when wire last read it (with their change).
        assert_eq!(
            unwire(kind, &sb.ctx).unwrap().action,
            UnwireAction::Restored
        );
        assert_eq!(sb.read(kind).unwrap(), theirs);

        // The same race during unwire.
        let _ = wire(kind, &sb.ctx).unwrap();
        let mut calls = 0;
        let un = unwire_with_hook(kind, &sb.ctx, &mut |_| {
            calls += 1;
            if calls == 1 {
                let now = fs::read_to_string(&file).unwrap();
                fs::write(&file, user_edit(kind, &now)).unwrap();
            }
        })
        .unwrap();
        assert_eq!(calls, 2);
        assert_eq!(un.action, UnwireAction::RemovedHandlers(1));
        assert_eq!(sb.read(kind).unwrap(), user_edit(kind, theirs));
    }
}

fn user_edit(kind: Harness, text: &str) -> String {
    match kind {
        Harness::Claude => user_edit_json(text),
        Harness::Codex => user_edit_toml(text, "\n"),
    }
}

/// A sandbox whose `kind` settings file holds a setting of the user's, and that text.
fn sandbox_with_their_settings(kind: Harness) -> (Sandbox, &'static str) {
    let sb = sandbox();
    let original = match kind {
        Harness::Claude => "{\n  \"theirs\": 1\n}\n",
        Harness::Codex => "theirs = 1\n",
    };
    sb.put(kind, original);
    (sb, original)
}

#[test]
fn the_wiring_record_is_whole_on_disk_before_the_file_is_renamed() {
    // The record holds the file's original bytes: were the rename first, a crash between the two
    // would leave a wired file that nothing can restore.
    for kind in Harness::ALL {
        let (sb, original) = sandbox_with_their_settings(kind);
        let record = sb.ctx.record_path(kind);
        let mut seen = None;
        let out = wire_with_hook(kind, &sb.ctx, &mut |_| {
            seen = Some(fs::read_to_string(&record).map(|t| {
                serde_json::from_str::<serde_json::Value>(&t).unwrap()["restore"]["original"]
                    .clone()
            }));
        })
        .unwrap();
        assert!(out.changed, "{kind}");
        let seen = seen.expect("the hook ran").expect("the record was there");
        assert_eq!(seen, original, "{kind}: the record holds the original");
        assert!(sb.read(kind).unwrap().contains(TAG), "{kind}: wired");
    }
}

#[test]
fn a_record_that_cannot_be_saved_leaves_the_file_as_it_was() {
    for kind in Harness::ALL {
        let (sb, original) = sandbox_with_their_settings(kind);
        // The record's folder is a file: the record cannot be written.
        let wiring = sb.ctx.record_path(kind).parent().unwrap().to_path_buf();
        fs::create_dir_all(wiring.parent().unwrap()).unwrap();
        fs::write(&wiring, "not a folder").unwrap();
        let mut renamed = false;
        let err = wire_with_hook(kind, &sb.ctx, &mut |_| renamed = true).unwrap_err();
        assert!(err.to_string().contains("wiring record"), "{kind}: {err}");
        assert!(!renamed, "{kind}: got as far as the rename");
        assert_eq!(sb.read(kind).unwrap(), original, "{kind}: the file changed");
        let file = sb.file(kind);
        assert_eq!(
            fs::read_dir(file.parent().unwrap()).unwrap().count(),
            1,
            "{kind}: a temp file was left beside the file"
        );
    }
}

#[test]
fn a_file_that_keeps_changing_is_left_alone_with_an_error() {
    let sb = sandbox();
    sb.put(Harness::Claude, "{}");
    let file = sb.file(Harness::Claude);
    let mut n = 0;
    let err = wire_with_hook(Harness::Claude, &sb.ctx, &mut |_| {
        n += 1;
        fs::write(&file, format!("{{\"n\": {n}}}")).unwrap();
    })
    .unwrap_err();
    assert!(
        matches!(err, WiringError::Contended { attempts: 5, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("kept changing"));
    assert_eq!(sb.read(Harness::Claude).unwrap(), "{\"n\": 5}");
    // No temp file left behind.
    assert_eq!(fs::read_dir(file.parent().unwrap()).unwrap().count(), 1);
}

// ---------------------------------------------------------------------------------------------
// The command string.

#[test]
fn guard_command_quotes_the_path_for_a_shell() {
    assert_eq!(
        guard_command(Path::new("/usr/local/bin/leopold")).unwrap(),
        "'/usr/local/bin/leopold' persona guard # leopold-persona-guard"
    );
    assert_eq!(
        guard_command(Path::new("/home/o'brien/my tools/leopold")).unwrap(),
        r"'/home/o'\''brien/my tools/leopold' persona guard # leopold-persona-guard"
    );
}

#[cfg(unix)]
#[test]
fn the_quoted_command_runs_that_binary_with_exactly_persona_guard() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    let dir = sb.root.join("it's a $dir `x`");
    fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("leopold");
    let log = sb.root.join("args");
    fs::write(
        &exe,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" > '{}'\nexit 2\n",
            log.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    let cmd = guard_command(&exe).unwrap();
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&cmd)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
    assert_eq!(fs::read_to_string(&log).unwrap(), "persona|guard|");
}

#[test]
fn claude_versions_are_parsed_and_compared() {
    assert_eq!(parse_version("2.1.332 (Claude Code)\n"), Some((2, 1, 332)));
    assert_eq!(parse_version("claude v2.1.295"), Some((2, 1, 295)));
    assert_eq!(parse_version("no version"), None);
    assert!((2, 1, 295) >= CLAUDE_ON_FAILURE_SINCE);
    assert!((2, 1, 294) < CLAUDE_ON_FAILURE_SINCE);
    assert!((2, 10, 0) >= CLAUDE_ON_FAILURE_SINCE);
}

#[cfg(unix)]
#[test]
fn claude_on_failure_support_is_read_from_claude_version() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox();
    let fake = |name: &str, out: &str| {
        let p = sb.root.join(name);
        fs::write(&p, format!("#!/bin/sh\necho '{out}'\n")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        p
    };
    assert!(claude_supports_on_failure(&fake("new", "2.1.332 (Claude Code)")).unwrap());
    assert!(!claude_supports_on_failure(&fake("old", "2.1.100 (Claude Code)")).unwrap());
    let err = claude_supports_on_failure(&sb.root.join("missing")).unwrap_err();
    assert!(err
        .to_string()
        .contains("cannot tell the version of Claude Code"));
}

#[test]
fn line_endings_follow_each_original_line() {
    assert_eq!(
        match_line_endings("a = 1\r\nb = 2\n", "a = 1\nz = 1\nb = 2\n".to_owned()),
        "a = 1\r\nz = 1\r\nb = 2\n"
    );
    assert_eq!(
        match_line_endings("a\r\nb\r\n", "a\nb\nc".to_owned()),
        "a\r\nb\r\nc"
    );
    // No CR anywhere: nothing to do.
    assert_eq!(match_line_endings("a\nb\n", "a\nx\n".to_owned()), "a\nx\n");
}

// ---------------------------------------------------------------------------------------------
// The span parser against serde_json.

/// Every member's and element's span holds exactly that value, and keys decode as serde_json's.
fn spans_agree(text: &str, node: &json_text::Node, value: &Value) -> bool {
    let here: Value = match serde_json::from_str(&text[node.start..node.end]) {
        Ok(v) => v,
        Err(_) => return false,
    };
    if &here != value {
        return false;
    }
    match (node.members(), node.elements(), value) {
        (Some(members), _, Value::Object(map)) => {
            members.len() == map.len()
                && members.iter().all(|m| {
                    map.get(&m.key)
                        .is_some_and(|v| spans_agree(text, &m.value, v))
                })
        }
        (_, Some(elements), Value::Array(items)) => {
            elements.len() == items.len()
                && elements
                    .iter()
                    .zip(items)
                    .all(|(e, v)| spans_agree(text, e, v))
        }
        _ => true,
    }
}

fn g_to_value(g: &G) -> Value {
    match g {
        G::Obj(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), g_to_value(v))).collect()),
        G::Arr(a) => Value::Array(a.iter().map(g_to_value).collect()),
        G::Str(s) => Value::String(s.clone()),
        G::Num(n) => Value::from(*n),
        G::Bool(b) => Value::Bool(*b),
        G::Null => Value::Null,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: PURE_CASES, ..ProptestConfig::default() })]

    #[test]
    fn span_parser_agrees_with_serde_json(doc in settings_doc(), style in json_style()) {
        let text = render_doc(&doc, &style);
        let node = json_text::parse(&text).unwrap();
        prop_assert!(spans_agree(&text, &node, &g_to_value(&doc)), "{}", text);
    }

    /// Whatever the bytes, the wiring answers (a parsed file or a refusal): it never panics,
    /// and accepts exactly the objects serde_json accepts.
    #[test]
    fn arbitrary_text_is_judged_never_panics(text in "[{}\\[\\]\":,a-z0-9 \\\\\n\r\tu.eE+-]{0,60}") {
        let spec = sandbox().ctx.spec(Harness::Claude);
        let ours = claude::list(Path::new("s.json"), &text, &spec);
        let theirs = serde_json::from_str::<Value>(&text);
        if ours.is_ok() {
            prop_assert!(theirs.as_ref().is_ok_and(Value::is_object), "{:?}", text);
        }
        if let Ok(Value::Object(_)) = theirs {
            // Only duplicate keys or an unexpected hooks shape may be refused then.
            if let Err(e) = ours {
                let msg = e.to_string();
                prop_assert!(msg.contains("duplicate key") || msg.contains("`hooks"), "{}", msg);
            }
        }
        let _ = codex::list(Path::new("c.toml"), &text, &spec);
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus: before/after files of what wiring writes, reviewed by eye.
// `__LEOPOLD_BLESS_WIRING=1 cargo nextest run -p leopold corpus` rewrites the `wired.*` files.

#[test]
fn wiring_corpus_before_wired_and_back() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/wiring"));
    let bless = std::env::var_os("__LEOPOLD_BLESS_WIRING").is_some();
    let mut cases: Vec<PathBuf> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 8, "corpus missing: {}", root.display());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let (kind, ext) = if name.starts_with("claude") {
            (Harness::Claude, "json")
        } else {
            (Harness::Codex, "toml")
        };
        let before = fs::read_to_string(case.join(format!("before.{ext}"))).ok();
        let sb = sandbox_with("/usr/local/bin/leopold");
        if let Some(b) = &before {
            sb.put(kind, b);
        }
        let out = wire(kind, &sb.ctx).unwrap();
        assert!(out.changed, "{name}");
        let wired = sb.read(kind).unwrap();
        let expected_path = case.join(format!("wired.{ext}"));
        if bless {
            fs::write(&expected_path, &wired).unwrap();
        }
        match fs::read_to_string(&expected_path) {
            Ok(expected) if expected == wired => {}
            Ok(expected) => failures.push(format!(
                "{name}: wired differs\n--- expected\n{expected}\n--- got\n{wired}"
            )),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        // Unwire with and without the record both give the original back.
        let _ = unwire(kind, &sb.ctx).unwrap();
        if sb.read(kind) != before {
            failures.push(format!("{name}: unwire did not restore the original"));
        }
        if let Some(b) = &before {
            let (stripped, n) = match kind {
                Harness::Claude => claude::strip(Path::new(&name), &wired, Created::default()),
                Harness::Codex => codex::strip(Path::new(&name), &wired, Created::default()),
            }
            .unwrap();
            assert_eq!(n, 1, "{name}");
            let pre_existed = b.contains("PreToolUse");
            if pre_existed && &stripped != b {
                failures.push(format!("{name}: removal by tag differs\n{stripped}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn wiring_by_hand_is_kept_by_a_run_and_removed_by_hand() {
    let sb = sandbox();
    let original = "{\n  \"model\": \"x\"\n}\n";
    sb.put(Harness::Claude, original);
    let mut by_hand = sb.ctx.clone();
    by_hand.by_hand = true;
    let _ = wire(Harness::Claude, &by_hand).unwrap();
    let wired = sb.read(Harness::Claude).unwrap();
    assert!(wired_by_hand(Harness::Claude, &sb.ctx));
    // A run wires over it (unchanged) and unwires at its end: the user's wiring stays.
    let again = wire(Harness::Claude, &sb.ctx).unwrap();
    assert!(!again.changed);
    let un = unwire(Harness::Claude, &sb.ctx).unwrap();
    assert_eq!(un.action, UnwireAction::KeptByHand);
    assert_eq!(sb.read(Harness::Claude).unwrap(), wired);
    // A run that replaces a stale hand wiring keeps it the user's.
    let mut moved = sb.ctx.clone();
    moved.guard_command = guard_command(Path::new("/elsewhere/leopold")).unwrap();
    let replaced = wire(Harness::Claude, &moved).unwrap();
    assert!(replaced.changed);
    assert!(wired_by_hand(Harness::Claude, &moved));
    // By hand, it goes, and the file is what it was before any wiring.
    let mut moved_by_hand = moved.clone();
    moved_by_hand.by_hand = true;
    let un = unwire(Harness::Claude, &moved_by_hand).unwrap();
    assert_eq!(un.action, UnwireAction::Restored);
    assert_eq!(sb.read(Harness::Claude).unwrap(), original);
    assert!(!wired_by_hand(Harness::Claude, &sb.ctx));
}

#[test]
fn wiring_by_hand_over_a_run_s_wiring_makes_it_the_user_s() {
    let sb = sandbox();
    let _ = wire(Harness::Codex, &sb.ctx).unwrap();
    assert!(!wired_by_hand(Harness::Codex, &sb.ctx));
    let mut by_hand = sb.ctx.clone();
    by_hand.by_hand = true;
    let out = wire(Harness::Codex, &by_hand).unwrap();
    assert!(!out.changed, "the file is not rewritten");
    assert!(wired_by_hand(Harness::Codex, &sb.ctx));
    assert_eq!(
        unwire(Harness::Codex, &sb.ctx).unwrap().action,
        UnwireAction::KeptByHand
    );
    assert_eq!(
        unwire(Harness::Codex, &by_hand).unwrap().action,
        UnwireAction::Restored
    );
    assert!(!sb.file(Harness::Codex).exists());
}

#[test]
fn check_wirable_agrees_with_wire_and_writes_nothing() {
    let sb = sandbox();
    assert!(check_wirable(Harness::Claude, &sb.ctx).is_ok(), "absent");
    for (text, ok) in [
        ("{\"permissions\": {\"allow\": 5}}", true),
        ("{\"hooks\": {\"PreToolUse\": {}}}", false),
        ("{", false),
        ("{\"a\": 1, \"a\": 2}", false),
    ] {
        sb.put(Harness::Claude, text);
        let checked = check_wirable(Harness::Claude, &sb.ctx);
        assert_eq!(checked.is_ok(), ok, "{text}: {checked:?}");
        assert_eq!(sb.read(Harness::Claude).unwrap(), text, "untouched");
        assert_eq!(wire(Harness::Claude, &sb.ctx).is_ok(), ok, "{text}");
        let _ = unwire(Harness::Claude, &sb.ctx);
    }
}
