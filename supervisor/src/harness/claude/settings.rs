//! Claude Code: `hooks.PreToolUse` in the project's `.claude/settings.json`
//! (docs/harness-facts.md#4-wiring-formats).
//!
//! Edits are textual splices (see `json_text`), so the user's key order, indentation, separators
//! and line endings survive; every edit is checked by re-parsing the result and comparing it with
//! the intended value before anything is written.

use std::path::Path;

use serde_json::Value;

use crate::harness::json_text::{self, Kind, Node, Style, J};
use crate::harness::{Added, Created, HookSpec, WiredHandler, WiringError, MATCHER, TAG};

/// The hook group `wire` adds, keys in the order written.
pub(in crate::harness) fn group(spec: &HookSpec) -> J {
    let mut handler = vec![
        ("type", J::Str("command".to_owned())),
        ("command", J::Str(spec.command.clone())),
        ("timeout", J::Num(spec.timeout)),
    ];
    if spec.on_failure_block {
        handler.push(("onFailure", J::Str("block".to_owned())));
    }
    J::Obj(vec![
        ("matcher", J::Str(MATCHER.to_owned())),
        ("hooks", J::Arr(vec![J::Obj(handler)])),
    ])
}

fn malformed(file: &Path, text: &str, offset: usize, problem: String, hint: &str) -> WiringError {
    let (line, column) = json_text::line_col(text, offset);
    WiringError::Malformed {
        file: file.to_path_buf(),
        line,
        column,
        problem,
        hint: hint.to_owned(),
    }
}

const FIX_BY_HAND: &str =
    "fix the file by hand (Claude Code would not accept it either), then run the command again";

/// Parses and checks the file: valid JSON, no duplicate keys, an object at the top, and
/// `hooks` / `PreToolUse` / groups / handlers of the types Claude expects.
fn parse_checked(file: &Path, text: &str) -> Result<(Value, Node), WiringError> {
    if text.trim().is_empty() {
        return Err(malformed(
            file,
            text,
            0,
            "the file is empty, which is not JSON".to_owned(),
            "write `{}` into it, or delete it, then run the command again",
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let problem = match msg.rfind(" at line ") {
            Some(i) => msg[..i].to_owned(),
            None => msg,
        };
        WiringError::Malformed {
            file: file.to_path_buf(),
            line: e.line(),
            column: e.column(),
            problem: format!("not valid JSON: {problem}"),
            hint: FIX_BY_HAND.to_owned(),
        }
    })?;
    let root = json_text::parse(text).map_err(|e| {
        malformed(
            file,
            text,
            e.offset,
            e.message,
            "remove one of the two, then run the command again (which one Claude Code uses is \
             not defined)",
        )
    })?;
    // A node of the wrong type: where it is, what it is and what was expected.
    let wrong = |node: &Node, what: &str, expected: &str| {
        malformed(
            file,
            text,
            node.start,
            format!("{what} is {}, expected {expected}", node.type_name()),
            FIX_BY_HAND,
        )
    };
    if root.members().is_none() {
        return Err(wrong(&root, "the top level", "an object"));
    }
    let Some(hooks) = root.get("hooks") else {
        return Ok((value, root));
    };
    if hooks.members().is_none() {
        return Err(wrong(hooks, "`hooks`", "an object"));
    }
    let Some(ptu) = hooks.get("PreToolUse") else {
        return Ok((value, root));
    };
    let Some(groups) = ptu.elements() else {
        return Err(wrong(ptu, "`hooks.PreToolUse`", "an array of hook groups"));
    };
    for (gi, g) in groups.iter().enumerate() {
        if g.members().is_none() {
            return Err(wrong(
                g,
                &format!("`hooks.PreToolUse[{gi}]`"),
                "an object with `matcher` and `hooks`",
            ));
        }
        let Some(handlers) = g.get("hooks") else {
            continue;
        };
        let Some(handlers) = handlers.elements() else {
            return Err(wrong(
                handlers,
                &format!("`hooks.PreToolUse[{gi}].hooks`"),
                "an array of handlers",
            ));
        };
        for (hi, h) in handlers.iter().enumerate() {
            if h.members().is_none() {
                return Err(wrong(
                    h,
                    &format!("`hooks.PreToolUse[{gi}].hooks[{hi}]`"),
                    "an object",
                ));
            }
        }
    }
    Ok((value, root))
}

fn pre_tool_use(root: &Node) -> Option<&Node> {
    root.get("hooks")?.get("PreToolUse")
}

fn is_tagged(handler: &Node) -> bool {
    handler
        .get("command")
        .and_then(Node::as_str)
        .is_some_and(|c| c.contains(TAG))
}

pub(in crate::harness) fn list(
    file: &Path,
    text: &str,
    spec: &HookSpec,
) -> Result<Vec<WiredHandler>, WiringError> {
    let (_, root) = parse_checked(file, text)?;
    let want = group(spec).to_value();
    let mut out = Vec::new();
    let Some(groups) = pre_tool_use(&root).and_then(Node::elements) else {
        return Ok(out);
    };
    for (gi, g) in groups.iter().enumerate() {
        let Some(handlers) = g.get("hooks").and_then(Node::elements) else {
            continue;
        };
        for h in handlers.iter().filter(|h| is_tagged(h)) {
            let group_value: Option<Value> = serde_json::from_str(&text[g.start..g.end]).ok();
            out.push(WiredHandler::read(
                file,
                gi,
                g.get("matcher").and_then(Node::as_str),
                h.get("command").and_then(Node::as_str),
                group_value.as_ref() == Some(&want),
            ));
        }
    }
    Ok(out)
}

pub(in crate::harness) fn add(
    file: &Path,
    text: Option<&str>,
    spec: &HookSpec,
) -> Result<Added, WiringError> {
    let g = group(spec);
    let Some(text) = text else {
        let doc = J::Obj(vec![(
            "hooks",
            J::Obj(vec![("PreToolUse", J::Arr(vec![g]))]),
        )]);
        return Ok(Added {
            text: Style::default().render_document(&doc),
            created: Created {
                hooks: true,
                pre_tool_use: true,
            },
        });
    };
    let (mut expected, root) = parse_checked(file, text)?;
    let style = Style::detect(text, &root);
    let mut created = Created::default();
    let new_text = match root.get("hooks") {
        None => {
            created = Created {
                hooks: true,
                pre_tool_use: true,
            };
            let v = J::Obj(vec![("PreToolUse", J::Arr(vec![g.clone()]))]);
            json_text::append(text, &style, &root, Some("hooks"), &v)
        }
        Some(hooks) => match hooks.get("PreToolUse") {
            None => {
                created.pre_tool_use = true;
                json_text::append(
                    text,
                    &style,
                    hooks,
                    Some("PreToolUse"),
                    &J::Arr(vec![g.clone()]),
                )
            }
            Some(ptu) => json_text::append(text, &style, ptu, None, &g),
        },
    };

    // The edit must be exactly "one more group at the end of hooks.PreToolUse".
    let hooks = expected.as_object_mut().map(|o| {
        o.entry("hooks")
            .or_insert_with(|| Value::Object(Default::default()))
    });
    let ptu = hooks.and_then(Value::as_object_mut).map(|o| {
        o.entry("PreToolUse")
            .or_insert_with(|| Value::Array(Vec::new()))
    });
    match ptu.and_then(Value::as_array_mut) {
        Some(a) => a.push(g.to_value()),
        None => return Err(internal(file, "the checked shape changed")),
    }
    let got: Value = serde_json::from_str(&new_text)
        .map_err(|e| internal(file, &format!("the edited text does not parse: {e}")))?;
    if got != expected {
        return Err(internal(
            file,
            "the edited text does not hold the intended value",
        ));
    }
    json_text::parse(&new_text).map_err(|e| internal(file, &e.message))?;
    Ok(Added {
        text: new_text,
        created,
    })
}

fn internal(file: &Path, problem: &str) -> WiringError {
    WiringError::Internal {
        file: file.to_path_buf(),
        problem: problem.to_owned(),
    }
}

pub(in crate::harness) fn strip(
    file: &Path,
    text: &str,
    created: Created,
) -> Result<(String, usize), WiringError> {
    let mut text = text.to_owned();
    let mut removed = 0;
    loop {
        let (_, root) = parse_checked(file, &text)?;
        let Some(ptu) = pre_tool_use(&root) else {
            break;
        };
        let Some(groups) = ptu.elements() else {
            break;
        };
        let found = groups.iter().enumerate().find_map(|(gi, g)| {
            let handlers = g.get("hooks")?;
            let hi = handlers.elements()?.iter().position(is_tagged)?;
            Some((gi, handlers, hi))
        });
        let Some((gi, handlers, hi)) = found else {
            break;
        };
        let alone = handlers.elements().map_or(0, <[Node]>::len) == 1;
        text = if alone {
            // A group left empty by removing our handler goes too.
            json_text::remove(&text, ptu, gi)
        } else {
            json_text::remove(&text, handlers, hi)
        };
        removed += 1;
    }
    if removed > 0 && created.pre_tool_use {
        let (_, root) = parse_checked(file, &text)?;
        if let Some(hooks) = root.get("hooks") {
            if let Some(i) = hooks.members().and_then(|m| {
                m.iter().position(|m| {
                    m.key == "PreToolUse" && matches!(&m.value.kind, Kind::Array(e) if e.is_empty())
                })
            }) {
                text = json_text::remove(&text, hooks, i);
            }
        }
    }
    if removed > 0 && created.hooks {
        let (_, root) = parse_checked(file, &text)?;
        if let Some(i) = root.members().and_then(|m| {
            m.iter().position(|m| {
                m.key == "hooks" && matches!(&m.value.kind, Kind::Object(o) if o.is_empty())
            })
        }) {
            text = json_text::remove(&text, &root, i);
        }
    }
    // The result must still be a valid settings file without any tagged handler.
    let (_, root) = parse_checked(file, &text).map_err(|e| internal(file, &e.to_string()))?;
    if pre_tool_use(&root)
        .and_then(Node::elements)
        .is_some_and(|gs| {
            gs.iter()
                .filter_map(|g| g.get("hooks").and_then(Node::elements))
                .any(|hs| hs.iter().any(is_tagged))
        })
    {
        return Err(internal(file, "a tagged handler survived removal"));
    }
    Ok((text, removed))
}

/// Shapes Claude Code is known to reject (a documented subset of its settings schema). Claude
/// skips the *whole* project file when any field fails validation
/// (docs/harness-facts.md#2-when-hooks-are-not-in-force), silently
/// under `-p`, so a hook wired there would not be in force.
pub(in crate::harness) fn validation_warnings(file: &Path, text: &str) -> Vec<String> {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let mut out: Vec<String> = schema_problems(&root)
        .into_iter()
        .map(|p| {
            format!(
                "`{}`: {p}. Claude Code skips the whole project settings file when one field \
                 fails its validation, so the hook wired there may not be in force; `leopold \
                 persona run` also passes the hook with `--settings`, which does not depend on \
                 this file",
                file.display()
            )
        })
        .collect();
    if root.get("disableAllHooks") == Some(&Value::Bool(true)) {
        out.push(format!(
            "`{}`: `disableAllHooks` is true, so Claude Code runs no hooks at all, the guard \
             included; remove it for the guard to be in force",
            file.display()
        ));
    }
    out
}

/// The fields of a Claude Code settings object that fail the part of its settings schema known
/// here; any one of them makes Claude Code skip the whole file. Shared by wiring's warnings and
/// `leopold doctor`.
pub(crate) fn schema_problems(root: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    if let Some(p) = root.get("permissions") {
        match p.as_object() {
            None => problems.push("`permissions` is not an object".to_owned()),
            Some(p) => {
                for key in ["allow", "deny", "ask", "additionalDirectories"] {
                    if p.get(key).is_some_and(|v| !strings(v)) {
                        problems.push(format!("`permissions.{key}` is not an array of strings"));
                    }
                }
                if p.get("defaultMode").is_some_and(|v| !v.is_string()) {
                    problems.push("`permissions.defaultMode` is not a string".to_owned());
                }
            }
        }
    }
    if let Some(env) = root.get("env") {
        if !env
            .as_object()
            .is_some_and(|o| o.values().all(Value::is_string))
        {
            problems.push("`env` is not an object of strings".to_owned());
        }
    }
    for key in ["model", "apiKeyHelper", "outputStyle"] {
        if root.get(key).is_some_and(|v| !v.is_string()) {
            problems.push(format!("`{key}` is not a string"));
        }
    }
    for key in ["disableAllHooks", "includeCoAuthoredBy"] {
        if root.get(key).is_some_and(|v| !v.is_boolean()) {
            problems.push(format!("`{key}` is not a boolean"));
        }
    }
    if let Some(hooks) = root.get("hooks") {
        match hooks.as_object() {
            None => problems.push("`hooks` is not an object".to_owned()),
            Some(hooks) => {
                for (event, groups) in hooks {
                    let Some(groups) = groups.as_array() else {
                        problems.push(format!("`hooks.{event}` is not an array"));
                        continue;
                    };
                    for (i, g) in groups.iter().enumerate() {
                        if !g.get("hooks").is_some_and(Value::is_array) {
                            problems.push(format!("`hooks.{event}[{i}].hooks` is not an array"));
                        }
                    }
                }
            }
        }
    }
    problems
}
