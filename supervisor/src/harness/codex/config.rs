//! Codex CLI: `[[hooks.PreToolUse]]` in `$CODEX_HOME/config.toml`
//! (docs/harness-facts.md#4-wiring-formats).
//!
//! Edited with `toml_edit`, which keeps every comment, blank line, key order and quoting of the
//! user's file. Both ways Codex accepts the array are handled: `[[hooks.PreToolUse]]` tables (what
//! we add to a file without hooks) and an inline `PreToolUse = [{ … }]` array (we add an inline
//! table to it). A TOML comment carrying the tag precedes the group we add.

use std::path::Path;

use toml_edit::{
    Array, ArrayOfTables, Document, DocumentMut, InlineTable, Item, Table, TableLike, Value,
};

use crate::harness::json_text::line_col;
use crate::harness::{
    match_line_endings, Added, Created, HookSpec, WiredHandler, WiringError, MATCHER, TAG,
};

const FIX_BY_HAND: &str =
    "fix the file by hand (Codex would not accept it either), then run the command again";

fn malformed(file: &Path, text: &str, offset: usize, problem: String) -> WiringError {
    let (line, column) = line_col(text, offset);
    WiringError::Malformed {
        file: file.to_path_buf(),
        line,
        column,
        problem,
        hint: FIX_BY_HAND.to_owned(),
    }
}

fn internal(file: &Path, problem: &str) -> WiringError {
    WiringError::Internal {
        file: file.to_path_buf(),
        problem: problem.to_owned(),
    }
}

/// The tables of an array of tables, or of an inline array made only of inline tables.
fn table_likes(item: &Item) -> Option<Vec<&dyn TableLike>> {
    match item {
        Item::ArrayOfTables(a) => Some(a.iter().map(|t| t as &dyn TableLike).collect()),
        Item::Value(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_inline_table().map(|t| t as &dyn TableLike))
            .collect(),
        _ => None,
    }
}

/// Where to point at `key` of `table` (its key, else its value, else the start of the file).
fn offset_of(table: &dyn TableLike, key: &str) -> usize {
    table
        .key(key)
        .and_then(|k| k.span())
        .or_else(|| table.get(key).and_then(Item::span))
        .map_or(0, |s| s.start)
}

/// Parses and checks: valid TOML (no duplicate keys: TOML forbids them), and `hooks`,
/// `hooks.PreToolUse`, its groups and their `hooks` of the types Codex expects.
fn parse_checked(file: &Path, text: &str) -> Result<DocumentMut, WiringError> {
    let doc = Document::parse(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        malformed(
            file,
            text,
            offset,
            format!("not valid TOML: {}", e.message().trim()),
        )
    })?;
    let root: &dyn TableLike = doc.as_table();
    if let Some(hooks) = root.get("hooks") {
        let Some(hooks_t) = hooks.as_table_like() else {
            return Err(malformed(
                file,
                text,
                offset_of(root, "hooks"),
                format!("`hooks` is {}, expected a table", hooks.type_name()),
            ));
        };
        if let Some(ptu) = hooks_t.get("PreToolUse") {
            let Some(groups) = table_likes(ptu) else {
                return Err(malformed(
                    file,
                    text,
                    offset_of(hooks_t, "PreToolUse"),
                    format!(
                        "`hooks.PreToolUse` is {}, expected an array of tables \
                         (`[[hooks.PreToolUse]]`)",
                        ptu.type_name()
                    ),
                ));
            };
            for (gi, g) in groups.iter().enumerate() {
                if let Some(h) = g.get("hooks") {
                    if table_likes(h).is_none() {
                        return Err(malformed(
                            file,
                            text,
                            offset_of(*g, "hooks"),
                            format!(
                                "`hooks.PreToolUse[{gi}].hooks` is {}, expected an array of \
                                 tables (`[[hooks.PreToolUse.hooks]]`)",
                                h.type_name()
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(doc.into_mut())
}

fn is_tagged(handler: &dyn TableLike) -> bool {
    handler
        .get("command")
        .and_then(Item::as_str)
        .is_some_and(|c| c.contains(TAG))
}

/// Whether `group` is exactly what `wire` writes: our matcher, one handler, our fields.
fn is_current(group: &dyn TableLike, spec: &HookSpec) -> bool {
    let handlers = group.get("hooks").and_then(table_likes).unwrap_or_default();
    let [h] = handlers.as_slice() else {
        return false;
    };
    group.len() == 2
        && group.get("matcher").and_then(Item::as_str) == Some(MATCHER)
        && h.len() == 3
        && h.get("type").and_then(Item::as_str) == Some("command")
        && h.get("command").and_then(Item::as_str) == Some(spec.command.as_str())
        && h.get("timeout").and_then(Item::as_integer) == i64::try_from(spec.timeout).ok()
}

fn groups(doc: &DocumentMut) -> Vec<&dyn TableLike> {
    doc.get("hooks")
        .and_then(Item::as_table_like)
        .and_then(|h| h.get("PreToolUse"))
        .and_then(table_likes)
        .unwrap_or_default()
}

fn list_doc(file: &Path, doc: &DocumentMut, spec: &HookSpec) -> Vec<WiredHandler> {
    let mut out = Vec::new();
    for (gi, g) in groups(doc).into_iter().enumerate() {
        let handlers = g.get("hooks").and_then(table_likes).unwrap_or_default();
        for h in handlers.into_iter().filter(|h| is_tagged(*h)) {
            out.push(WiredHandler::read(
                file,
                gi,
                g.get("matcher").and_then(Item::as_str),
                h.get("command").and_then(Item::as_str),
                is_current(g, spec),
            ));
        }
    }
    out
}

pub(in crate::harness) fn list(
    file: &Path,
    text: &str,
    spec: &HookSpec,
) -> Result<Vec<WiredHandler>, WiringError> {
    Ok(list_doc(file, &parse_checked(file, text)?, spec))
}

fn handler_table(spec: &HookSpec) -> Table {
    let mut h = Table::new();
    h.insert("type", toml_edit::value("command"));
    h.insert("command", toml_edit::value(spec.command.as_str()));
    h.insert("timeout", toml_edit::value(spec.timeout as i64));
    h
}

pub(in crate::harness) fn add(
    file: &Path,
    text: Option<&str>,
    spec: &HookSpec,
) -> Result<Added, WiringError> {
    let src = text.unwrap_or("");
    let mut doc = parse_checked(file, src)?;
    let groups_before = groups(&doc).len();
    let mut created = Created::default();
    if !doc.contains_key("hooks") {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("hooks", Item::Table(t));
        created.hooks = true;
    }
    let hooks_item = doc
        .get_mut("hooks")
        .ok_or_else(|| internal(file, "`hooks` vanished"))?;
    // `[[hooks.PreToolUse]]` headers only make sense under a real `[hooks]` table; under an inline
    // or dotted `hooks` the array must be inline too.
    let inline_only = match &*hooks_item {
        Item::Table(t) => t.is_dotted(),
        _ => true,
    };
    let hooks = hooks_item
        .as_table_like_mut()
        .ok_or_else(|| internal(file, "`hooks` is not a table"))?;
    if !hooks.contains_key("PreToolUse") {
        let item = if inline_only {
            Item::Value(Value::Array(Array::new()))
        } else {
            Item::ArrayOfTables(ArrayOfTables::new())
        };
        hooks.insert("PreToolUse", item);
        created.pre_tool_use = true;
    }
    match hooks.get_mut("PreToolUse") {
        Some(Item::ArrayOfTables(aot)) => {
            let mut group = Table::new();
            let lead = if src.trim().is_empty() { "" } else { "\n" };
            group.decor_mut().set_prefix(format!(
                "{lead}# {TAG}: added by `leopold persona wire` (or `persona run`); \
                 `leopold persona unwire` removes it\n"
            ));
            group.insert("matcher", toml_edit::value(MATCHER));
            let mut handlers = ArrayOfTables::new();
            handlers.push(handler_table(spec));
            group.insert("hooks", Item::ArrayOfTables(handlers));
            aot.push(group);
        }
        Some(Item::Value(Value::Array(arr))) => {
            let mut group = InlineTable::new();
            group.insert("matcher", MATCHER.into());
            let mut handlers = Array::new();
            handlers.push(handler_table(spec).into_inline_table());
            group.insert("hooks", Value::Array(handlers));
            arr.push(group);
        }
        _ => return Err(internal(file, "the checked shape changed")),
    }
    let new_text = keep_final_newline(src, match_line_endings(src, doc.to_string()));

    // The edit must be exactly "one more group, ours and current".
    let check = parse_checked(file, &new_text).map_err(|e| internal(file, &e.to_string()))?;
    let handlers = list_doc(file, &check, spec);
    if groups(&check).len() != groups_before + 1 || !handlers.iter().any(|h| h.current) {
        return Err(internal(
            file,
            "the edited text does not hold the intended group",
        ));
    }
    Ok(Added {
        text: new_text,
        created,
    })
}

/// toml_edit ends every line it renders with a newline; a file that did not end with one keeps
/// it that way.
fn keep_final_newline(original: &str, mut new: String) -> String {
    if !original.is_empty() && !original.ends_with('\n') && new.ends_with('\n') {
        new.pop();
        if new.ends_with('\r') {
            new.pop();
        }
    }
    new
}

/// Removes tagged handlers from one group; returns how many, and whether the group's handler
/// list is now empty.
fn strip_group(group: &mut dyn TableLike) -> (usize, bool) {
    match group.get_mut("hooks") {
        Some(Item::ArrayOfTables(aot)) => {
            let before = aot.len();
            aot.retain(|t| !is_tagged(t));
            (before - aot.len(), aot.is_empty())
        }
        Some(Item::Value(Value::Array(arr))) => {
            let before = arr.len();
            arr.retain(|v| !v.as_inline_table().is_some_and(|t| is_tagged(t)));
            (before - arr.len(), arr.is_empty())
        }
        _ => (0, false),
    }
}

pub(in crate::harness) fn strip(
    file: &Path,
    text: &str,
    created: Created,
) -> Result<(String, usize), WiringError> {
    let mut doc = parse_checked(file, text)?;
    let mut removed = 0;
    if let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_like_mut) {
        match hooks.get_mut("PreToolUse") {
            Some(Item::ArrayOfTables(aot)) => {
                for gi in (0..aot.len()).rev() {
                    let Some(g) = aot.get_mut(gi) else { continue };
                    let (n, empty) = strip_group(g);
                    removed += n;
                    if n > 0 && empty {
                        // A group left empty by removing our handler goes too.
                        aot.remove(gi);
                    }
                }
            }
            Some(Item::Value(Value::Array(arr))) => {
                for gi in (0..arr.len()).rev() {
                    let Some(g) = arr.get_mut(gi).and_then(Value::as_inline_table_mut) else {
                        continue;
                    };
                    let (n, empty) = strip_group(g);
                    removed += n;
                    if n > 0 && empty {
                        arr.remove(gi);
                    }
                }
            }
            _ => {}
        }
        if removed > 0 && created.pre_tool_use {
            let empty = hooks
                .get("PreToolUse")
                .and_then(table_likes)
                .is_some_and(|g| g.is_empty());
            if empty {
                hooks.remove("PreToolUse");
            }
        }
    }
    if removed > 0 && created.hooks {
        let empty = doc
            .get("hooks")
            .and_then(Item::as_table_like)
            .is_some_and(|h| h.is_empty());
        if empty {
            doc.remove("hooks");
        }
    }
    if removed == 0 {
        return Ok((text.to_owned(), 0));
    }
    let new_text = keep_final_newline(text, match_line_endings(text, doc.to_string()));
    let check = parse_checked(file, &new_text).map_err(|e| internal(file, &e.to_string()))?;
    if !list_doc(
        file,
        &check,
        &HookSpec {
            command: String::new(),
            timeout: 0,
            on_failure_block: false,
        },
    )
    .is_empty()
    {
        return Err(internal(file, "a tagged handler survived removal"));
    }
    Ok((new_text, removed))
}
