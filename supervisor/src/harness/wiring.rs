//! The wiring engine: the guard as a tagged PreToolUse hook in a harness's settings or config
//! file, recorded before any change, undone byte for byte (the module doc of `crate::harness`
//! says how). Each wing edits its own format (`claude::settings`, `codex::config`).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::fs;
use crate::fs::{FileState, Replace};

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

/// `<project>/.leopold/persona/wiring/<harness>.json`: Leopold's own file, strict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    version: u32,
    harness: Harness,
    file: PathBuf,
    /// The file's text before wire (`None`: it did not exist). Absent when unknown (the file was
    /// already wired, e.g. by an older leopold): then unwire only removes tagged handlers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restore: Option<Restore>,
    /// Exactly what wire wrote.
    written: String,
    created: Created,
    /// Directories wire created to hold this record (e.g. `.leopold/persona` for a standalone
    /// `persona wire`), deepest first; removed again with the record if left empty. Directories
    /// that existed before (the supervisor's) are never removed.
    #[serde(default)]
    state_dirs: Vec<PathBuf>,
    /// Wired by the user's `persona wire`, not by a run: a run or recovery leaves it in place.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    by_hand: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Restore {
    original: Option<String>,
    /// Directories wire created for the file (deepest first), removed again if left empty.
    created_dirs: Vec<PathBuf>,
}

const RECORD_VERSION: u32 = 1;

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> WiringError + 'a {
    move |source| WiringError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

fn decode(file: &Path, state: &FileState) -> Result<Option<String>, WiringError> {
    match state {
        FileState::Absent => Ok(None),
        FileState::Present(bytes) => {
            String::from_utf8(bytes.clone())
                .map(Some)
                .map_err(|_| WiringError::NotUtf8 {
                    file: file.to_path_buf(),
                })
        }
    }
}

fn list(
    kind: Harness,
    file: &Path,
    text: &str,
    spec: &HookSpec,
) -> Result<Vec<WiredHandler>, WiringError> {
    match kind {
        Harness::Claude => claude::list(file, text, spec),
        Harness::Codex => codex::list(file, text, spec),
    }
}

fn add(
    kind: Harness,
    file: &Path,
    text: Option<&str>,
    spec: &HookSpec,
) -> Result<Added, WiringError> {
    match kind {
        Harness::Claude => claude::add(file, text, spec),
        Harness::Codex => codex::add(file, text, spec),
    }
}

/// Removes every tagged handler; returns the new text and how many were removed.
fn strip(
    kind: Harness,
    file: &Path,
    text: &str,
    created: Created,
) -> Result<(String, usize), WiringError> {
    match kind {
        Harness::Claude => claude::strip(file, text, created),
        Harness::Codex => codex::strip(file, text, created),
    }
}

/// Reads the wiring record; an unreadable one is reported as a warning and ignored (unwire then
/// falls back to removing tagged handlers, which never needs it).
fn load_record(ctx: &Context, kind: Harness, warnings: &mut Vec<String>) -> Option<Record> {
    let path = ctx.record_path(kind);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            warnings.push(format!(
                "cannot read the wiring record `{}`: {e}; ignoring it",
                path.display()
            ));
            return None;
        }
    };
    match serde_json::from_slice::<Record>(&bytes) {
        Ok(r) if r.version == RECORD_VERSION && r.harness == kind => Some(r),
        Ok(_) => {
            warnings.push(format!(
                "the wiring record `{}` is for another version or harness; ignoring it",
                path.display()
            ));
            None
        }
        Err(e) => {
            warnings.push(format!(
                "the wiring record `{}` is unreadable ({e}); ignoring it",
                path.display()
            ));
            None
        }
    }
}

fn save_record(ctx: &Context, kind: Harness, record: &Record) -> Result<(), WiringError> {
    let path = ctx.record_path(kind);
    let mut bytes = serde_json::to_vec_pretty(record).map_err(|e| WiringError::Internal {
        file: path.clone(),
        problem: e.to_string(),
    })?;
    bytes.push(b'\n');
    fs::write_own_file_as(&path, &bytes, ctx.durability())
        .map_err(io_err("write the wiring record", &path))
}

fn remove_record(ctx: &Context, kind: Harness, record: Option<&Record>) -> Result<(), WiringError> {
    let path = ctx.record_path(kind);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("remove the wiring record", &path)(e)),
    }
    // `wiring/` is ours alone; its parents only when wire created them. Each removal only
    // succeeds on an empty directory, which is the point.
    let mut dirs: Vec<PathBuf> = path.parent().map(Path::to_path_buf).into_iter().collect();
    dirs.extend(record.map(|r| r.state_dirs.clone()).unwrap_or_default());
    dirs.dedup();
    remove_empty_dirs(&dirs);
    Ok(())
}

/// Removes `dirs` in order, deepest first, stopping at the first that cannot go: a directory
/// that is not empty holds someone's files, and its parents with it.
fn remove_empty_dirs(dirs: &[PathBuf]) {
    for dir in dirs {
        if std::fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

/// The directories `create_dir_all(dir)` would create, deepest first.
fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        out.push(d.to_path_buf());
        cur = d.parent();
    }
    out
}

/// Wires the guard into `kind`'s settings file. Idempotent: a file already holding exactly this
/// wiring is not written (`changed: false`); a stale wiring of ours (another leopold path, another
/// timeout) is replaced, so the file holds exactly one tagged handler afterwards.
///
/// # Errors
/// A malformed settings file ([`WiringError::Malformed`], [`WiringError::NotUtf8`]) is left
/// untouched; I/O errors; [`WiringError::Contended`] when the file keeps changing under us.
pub fn wire(kind: Harness, ctx: &Context) -> Result<WireOutcome, WiringError> {
    wire_with_hook(kind, ctx, &mut |_| {})
}

pub(crate) fn wire_with_hook(
    kind: Harness,
    ctx: &Context,
    before_rename: &mut dyn FnMut(&Path),
) -> Result<WireOutcome, WiringError> {
    let file = ctx.settings_path(kind);
    let spec = ctx.spec(kind);
    let record = wiring_record(kind, ctx);
    for _ in 0..MAX_ATTEMPTS {
        let mut warnings = Vec::new();
        let state = fs::read_state(&file).map_err(io_err("read", &file))?;
        let text = decode(&file, &state)?;
        let handlers = match &text {
            Some(t) => list(kind, &file, t, &spec)?,
            None => Vec::new(),
        };
        if kind == Harness::Claude {
            if let Some(t) = &text {
                warnings.extend(claude::validation_warnings(&file, t));
            }
        }
        if handlers.len() == 1 && handlers[0].current {
            if ctx.by_hand {
                mark_by_hand(ctx, kind, &file, &mut warnings)?;
            }
            return Ok(WireOutcome {
                record,
                changed: false,
                warnings,
            });
        }

        let old = load_record(ctx, kind, &mut warnings);
        let strip_created = old.as_ref().map(|r| r.created).unwrap_or_default();
        let stripped = match &text {
            Some(t) if !handlers.is_empty() => Some(strip(kind, &file, t, strip_created)?.0),
            _ => text.clone(),
        };
        let added = add(kind, &file, stripped.as_deref(), &spec)?;
        let created = added.created;
        let record_dir = ctx.record_path(kind);
        let state_dirs = match &old {
            Some(r) => r.state_dirs.clone(),
            None => {
                // A record of the other harness may already have created them: inherit its
                // list, so whichever unwire comes last removes them.
                let mut dirs = record_dir.parent().map(missing_dirs).unwrap_or_default();
                for other in Harness::ALL.into_iter().filter(|k| *k != kind) {
                    if let Some(r) = load_record(ctx, other, &mut Vec::new()) {
                        for d in r.state_dirs {
                            if !dirs.contains(&d) {
                                dirs.push(d);
                            }
                        }
                    }
                }
                dirs
            }
        };
        // A run re-wiring (a stale command replaced) what the user wired by hand keeps it theirs.
        let by_hand = ctx.by_hand
            || old
                .as_ref()
                .is_some_and(|r| r.by_hand && Some(r.written.as_str()) == text.as_deref());
        let restore = match old {
            Some(Record {
                restore: Some(r),
                written,
                ..
            }) if Some(written.as_str()) == text.as_deref() => Some(r),
            _ if handlers.is_empty() => Some(Restore {
                original: text.clone(),
                created_dirs: file.parent().map(missing_dirs).unwrap_or_default(),
            }),
            _ => None,
        };
        save_record(
            ctx,
            kind,
            &Record {
                version: RECORD_VERSION,
                harness: kind,
                file: file.clone(),
                restore,
                written: added.text.clone(),
                created,
                state_dirs,
                by_hand,
            },
        )?;
        match fs::replace_if_unchanged(
            &file,
            &state,
            Some(added.text.as_bytes()),
            before_rename,
            ctx.durability(),
        )
        .map_err(io_err("write", &file))?
        {
            Replace::Done => {
                return Ok(WireOutcome {
                    record,
                    changed: true,
                    warnings,
                })
            }
            Replace::Conflict => continue,
        }
    }
    Err(WiringError::Contended {
        file,
        attempts: MAX_ATTEMPTS,
    })
}

/// Removes the guard's wiring from `kind`'s settings file. With nothing wired this is a no-op
/// that succeeds.
///
/// # Errors
/// As [`wire`]; a malformed file is left untouched (and the wiring record kept).
pub fn unwire(kind: Harness, ctx: &Context) -> Result<UnwireOutcome, WiringError> {
    unwire_with_hook(kind, ctx, &mut |_| {})
}

pub(crate) fn unwire_with_hook(
    kind: Harness,
    ctx: &Context,
    before_rename: &mut dyn FnMut(&Path),
) -> Result<UnwireOutcome, WiringError> {
    for _ in 0..MAX_ATTEMPTS {
        let mut warnings = Vec::new();
        let record = load_record(ctx, kind, &mut warnings);
        let file = match &record {
            Some(r) => {
                let here = ctx.settings_path(kind);
                if r.file != here {
                    warnings.push(format!(
                        "the guard was wired in `{}`, not `{}`: unwiring the former",
                        r.file.display(),
                        here.display()
                    ));
                }
                r.file.clone()
            }
            None => ctx.settings_path(kind),
        };
        if !ctx.by_hand && record.as_ref().is_some_and(|r| r.by_hand) {
            return Ok(UnwireOutcome {
                file,
                action: UnwireAction::KeptByHand,
                warnings,
            });
        }
        let state = fs::read_state(&file).map_err(io_err("read", &file))?;
        let done = |action, warnings| UnwireOutcome {
            file: file.clone(),
            action,
            warnings,
        };

        if let Some(Record {
            restore: Some(restore),
            written,
            ..
        }) = &record
        {
            if state.bytes() == Some(written.as_bytes()) {
                let target = restore.original.as_deref().map(str::as_bytes);
                match fs::replace_if_unchanged(
                    &file,
                    &state,
                    target,
                    before_rename,
                    ctx.durability(),
                )
                .map_err(io_err("restore", &file))?
                {
                    Replace::Conflict => continue,
                    Replace::Done => {}
                }
                if restore.original.is_none() {
                    remove_empty_dirs(&restore.created_dirs);
                }
                remove_record(ctx, kind, record.as_ref())?;
                return Ok(done(UnwireAction::Restored, warnings));
            }
        }

        let Some(text) = decode(&file, &state)? else {
            remove_record(ctx, kind, record.as_ref())?;
            return Ok(done(UnwireAction::NothingWired, warnings));
        };
        let created = record.as_ref().map(|r| r.created).unwrap_or_default();
        let (new_text, removed) = strip(kind, &file, &text, created)?;
        if removed == 0 {
            remove_record(ctx, kind, record.as_ref())?;
            return Ok(done(UnwireAction::NothingWired, warnings));
        }
        match fs::replace_if_unchanged(
            &file,
            &state,
            Some(new_text.as_bytes()),
            before_rename,
            ctx.durability(),
        )
        .map_err(io_err("write", &file))?
        {
            Replace::Conflict => continue,
            Replace::Done => {}
        }
        if record.is_some() {
            warnings.push(format!(
                "`{}` changed since the guard was wired: removed only the guard's handler, kept \
                 the rest as it is now",
                file.display()
            ));
        }
        remove_record(ctx, kind, record.as_ref())?;
        return Ok(done(UnwireAction::RemovedHandlers(removed), warnings));
    }
    Err(WiringError::Contended {
        file: ctx.settings_path(kind),
        attempts: MAX_ATTEMPTS,
    })
}

/// Whether [`wire`] could wire `kind`'s settings file as it is now, without writing anything:
/// `doctor` uses it to say whether `persona run` will start.
///
/// # Errors
/// As [`wire`] would fail: a malformed file, not UTF-8, an I/O error.
pub fn check_wirable(kind: Harness, ctx: &Context) -> Result<(), WiringError> {
    let file = ctx.settings_path(kind);
    let spec = ctx.spec(kind);
    let state = fs::read_state(&file).map_err(io_err("read", &file))?;
    let Some(text) = decode(&file, &state)? else {
        return Ok(());
    };
    let handlers = list(kind, &file, &text, &spec)?;
    let stripped = if handlers.is_empty() {
        text
    } else {
        strip(kind, &file, &text, Created::default())?.0
    };
    add(kind, &file, Some(&stripped), &spec).map(|_| ())
}

/// Whether the guard in `kind`'s settings file was wired by hand (`persona wire`), as this
/// project's wiring record says.
pub fn wired_by_hand(kind: Harness, ctx: &Context) -> bool {
    load_record(ctx, kind, &mut Vec::new())
        .is_some_and(|r| r.by_hand && r.file == ctx.settings_path(kind))
}

/// `persona wire` on a file already wired exactly so (by a run, or by an older leopold): the
/// wiring becomes the user's. Without a record there is nothing to restore later, so unwire will
/// remove the tagged handler only.
fn mark_by_hand(
    ctx: &Context,
    kind: Harness,
    file: &Path,
    warnings: &mut Vec<String>,
) -> Result<(), WiringError> {
    let record = match load_record(ctx, kind, warnings) {
        Some(r) if r.by_hand => return Ok(()),
        Some(r) => Record { by_hand: true, ..r },
        None => Record {
            version: RECORD_VERSION,
            harness: kind,
            file: file.to_path_buf(),
            restore: None,
            written: String::new(),
            created: Created::default(),
            state_dirs: ctx
                .record_path(kind)
                .parent()
                .map(missing_dirs)
                .unwrap_or_default(),
            by_hand: true,
        },
    };
    save_record(ctx, kind, &record)
}

/// The handlers tagged [`TAG`] in `kind`'s settings file (none when it does not exist).
///
/// # Errors
/// A malformed file, or an I/O error.
pub fn wired_handlers(kind: Harness, ctx: &Context) -> Result<Vec<WiredHandler>, WiringError> {
    let file = ctx.settings_path(kind);
    let state = fs::read_state(&file).map_err(io_err("read", &file))?;
    match decode(&file, &state)? {
        Some(text) => list(kind, &file, &text, &ctx.spec(kind)),
        None => Ok(Vec::new()),
    }
}

/// Gives the lines of `new` the line endings they had in `original`.
///
/// `toml_edit` writes every line break as LF. A line of `new` that is one of `original`'s lines
/// (matched in order, by a longest common subsequence of the lines' text) gets the ending it had
/// there; a new line gets the file's dominant ending. So an all-CRLF file stays all-CRLF and a
/// file with mixed endings keeps each untouched line's own; where several identical lines (blank
/// ones, say) are candidates, which one is matched is a guess.
pub(crate) fn match_line_endings(original: &str, new: String) -> String {
    if !original.contains('\r') {
        return new;
    }
    let split = |text: &str| -> Vec<(String, bool, bool)> {
        // (content, ended by CRLF, ended at all)
        text.split_inclusive('\n')
            .map(|l| match l.strip_suffix('\n') {
                Some(l) => match l.strip_suffix('\r') {
                    Some(l) => (l.to_owned(), true, true),
                    None => (l.to_owned(), false, true),
                },
                None => (l.to_owned(), false, false),
            })
            .collect()
    };
    let old = split(original);
    let new_lines = split(&new);
    let crlf = old.iter().filter(|l| l.1).count();
    let ended = old.iter().filter(|l| l.2).count();
    let dominant_crlf = crlf * 2 >= ended;

    let mut crlf_of: Vec<bool> = vec![dominant_crlf; new_lines.len()];
    let (n, m) = (old.len(), new_lines.len());
    // Bounded: settings files are small; a huge one just gets the dominant ending.
    if n.saturating_mul(m) <= 4_000_000 {
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        let at = |i: usize, j: usize| i * (m + 1) + j;
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[at(i, j)] = if old[i].0 == new_lines[j].0 {
                    lcs[at(i + 1, j + 1)] + 1
                } else {
                    lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n && j < m {
            if old[i].0 == new_lines[j].0 {
                if old[i].2 {
                    crlf_of[j] = old[i].1;
                }
                i += 1;
                j += 1;
            } else if lcs[at(i + 1, j)] >= lcs[at(i, j + 1)] {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    let mut out = String::with_capacity(new.len() + new_lines.len());
    for ((content, _, ended), crlf) in new_lines.iter().zip(crlf_of) {
        out.push_str(content);
        if *ended {
            out.push_str(if crlf { "\r\n" } else { "\n" });
        }
    }
    out
}
