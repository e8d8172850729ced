//! Harness wiring: the persona guard as a PreToolUse hook in Claude Code's project
//! `.claude/settings.json` and in Codex's `$CODEX_HOME/config.toml`. See issue #3 and
//! docs/reference.md#wiring.
//!
//! # Interface
//! - [`wire`] adds one hook group (matcher `mcp__.*|WebFetch`, one command handler running
//!   [`guard_command`], tagged [`TAG`]); idempotent.
//! - [`unwire`] restores the file byte for byte when it still holds exactly what `wire` wrote;
//!   otherwise it removes only the handlers tagged [`TAG`] (and a group, or a `hooks` /
//!   `PreToolUse` key `wire` created, left empty by that), keeping every other byte.
//! - [`wired_handlers`] lists tagged handlers (orphan detection, `doctor`).
//! - [`claude_guard_settings_json`] is the standalone file `persona run` passes with
//!   `claude --settings`, so the hook is in force even when Claude skips the project file.
//!
//! # Record before you change
//! Before touching a settings file, `wire` writes `<project>/.leopold/persona/wiring/<harness>.json`
//! holding what the file was (its text, or "absent") and what wire is about to write. A crash at
//! any point leaves either the original file (the record's `written` does not match, so `unwire`
//! falls back to removing tagged handlers: there are none) or the wired file (restored exactly).
//!
//! # Refuse, don't repair
//! A file that is not valid UTF-8 JSON/TOML, has duplicate JSON keys, or whose `hooks` /
//! `PreToolUse` / groups / handlers have an unexpected type is never written: the error names the
//! file, line and column and says what to do.

mod claude;
mod codex;
pub mod doctor;
mod finding;
mod json_text;
mod launch;
mod run;
mod wired;
mod wiring;

pub use codex::{catalog as codex_catalog, run_home};
pub use launch::{check_extra_args, worker_command, WorkerSpec};
pub use run::*;
pub use wired::*;
pub use wiring::*;

/// What the harness's worker needs in the box (`crate::sandbox::Needs`), told by its wing:
/// Claude's from its variables and its login file in `home`; Codex's from the run's own
/// `codex_home` and the user's login file `codex_login`.
pub fn box_needs(
    kind: Harness,
    scratch: &Path,
    codex_home: &Path,
    codex_login: Option<PathBuf>,
) -> anyhow::Result<crate::sandbox::Needs> {
    match kind {
        Harness::Claude => claude::box_needs(scratch),
        Harness::Codex => codex::box_needs(codex_home, codex_login),
    }
}

/// What to do when `kind`'s model endpoint refuses it (Codex's from its configuration in
/// `codex_home`).
pub fn model_advice(kind: Harness, codex_home: &Path) -> crate::sandbox::Advice {
    match kind {
        Harness::Claude => claude::advice(),
        Harness::Codex => codex::advice_for_home(codex_home),
    }
}

use std::path::{Path, PathBuf};

use crate::fs;

/// The tag carried by every handler Leopold wires (as a shell comment ending the command): unwire
/// and orphan detection touch exactly the handlers whose command contains it.
pub const TAG: &str = "leopold-persona-guard";

/// Which tools the guard sees: every MCP tool (`mcp__<server>__<tool>`) and Claude's WebFetch.
/// Not made only of `[A-Za-z0-9_|]`, so both harnesses read it as an (unanchored) regex.
pub const MATCHER: &str = "mcp__.*|WebFetch";

/// The hook's `timeout`, in seconds. The guard answers in milliseconds; a stuck guard is denied
/// (Claude with `onFailure: block`) or fails open (Codex) after this long.
pub const HOOK_TIMEOUT_SECS: u64 = 5;

/// The first Claude Code release that understands `"onFailure": "block"`
/// (docs/harness-facts.md#1-what-fails-open).
pub const CLAUDE_ON_FAILURE_SINCE: (u64, u64, u64) = (2, 1, 295);

/// How often a read-edit-write is redone when the file changes under us before giving up.
const MAX_ATTEMPTS: usize = 5;

/// Which harness: the one enum every crate uses.
pub use leopold_guard::{Harness, WiringEntry};

/// Everything wiring needs to know, resolved before any side effect.
#[derive(Debug, Clone)]
pub struct Context {
    /// The project root: holds `.claude/` and `.leopold/`.
    pub project: PathBuf,
    /// `$CODEX_HOME`, default `~/.codex`.
    pub codex_home: PathBuf,
    /// The hook command, from [`guard_command`].
    pub guard_command: String,
    /// Whether the installed Claude Code understands `"onFailure": "block"`.
    pub claude_on_failure: bool,
    /// The user's own `persona wire`/`persona unwire` (not a run, not recovery): wiring made by
    /// hand is recorded as such, and only a command by hand removes it.
    pub by_hand: bool,
    /// Where wiring records live instead of `<project>/.leopold/persona/wiring`: a run's own
    /// Codex configuration keeps its record in the run directory, so it never meets the record
    /// of what the user wired by hand ([`run_home::run_context`]).
    pub record_dir: Option<PathBuf>,
}

impl Context {
    /// A context for `project` wiring the guard of the leopold binary at `leopold_exe`, with
    /// `$CODEX_HOME` (or `~/.codex`) as Codex's home.
    ///
    /// # Errors
    /// When the binary's path is not UTF-8 (no hook command can name it), or when neither
    /// `$CODEX_HOME` nor `$HOME` is set.
    pub fn new(
        project: PathBuf,
        leopold_exe: &Path,
        claude_on_failure: bool,
    ) -> Result<Context, WiringError> {
        Ok(Context {
            project,
            codex_home: default_codex_home()?,
            guard_command: guard_command(leopold_exe)?,
            claude_on_failure,
            by_hand: false,
            record_dir: None,
        })
    }

    /// The settings file `kind` is wired in.
    pub fn settings_path(&self, kind: Harness) -> PathBuf {
        match kind {
            Harness::Claude => self.project.join(".claude").join("settings.json"),
            Harness::Codex => self.codex_home.join("config.toml"),
        }
    }

    /// How far the wiring's writes must reach the disk: a user's settings file and its record
    /// survive a power loss; a run's own copy of the configuration (its record in the run
    /// directory, [`run_home::run_context`]) is the run's scratch, removed when the run ends or is
    /// recovered, and worth no stall.
    pub(crate) fn durability(&self) -> fs::Durability {
        if self.record_dir.is_some() {
            fs::Durability::Volatile
        } else {
            fs::Durability::Durable
        }
    }

    /// Where `wire` records what the file was before it.
    pub fn record_path(&self, kind: Harness) -> PathBuf {
        let dir = match &self.record_dir {
            Some(d) => d.clone(),
            None => self.project.join(".leopold").join("persona").join("wiring"),
        };
        dir.join(format!("{kind}.json"))
    }

    fn spec(&self, kind: Harness) -> HookSpec {
        HookSpec {
            command: self.guard_command.clone(),
            timeout: HOOK_TIMEOUT_SECS,
            on_failure_block: kind == Harness::Claude && self.claude_on_failure,
        }
    }
}

/// `$CODEX_HOME`, or `~/.codex`.
///
/// # Errors
/// When neither `CODEX_HOME` nor `HOME` is set.
pub fn default_codex_home() -> Result<PathBuf, WiringError> {
    if let Some(home) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".codex"))
        .ok_or(WiringError::NoCodexHome)
}

/// The hook command: `'<absolute path>' persona guard # leopold-persona-guard`. Both harnesses
/// run it through a shell, so the path is single-quoted (a `'` inside becomes `'\''`) and the tag
/// is a shell comment: it marks the handler as ours without reaching the guard's arguments.
///
/// # Errors
/// When the path is not UTF-8 (settings files hold text), or cannot be made absolute.
pub fn guard_command(leopold_exe: &Path) -> Result<String, WiringError> {
    let abs = std::path::absolute(leopold_exe).map_err(|source| WiringError::Io {
        action: "resolve the path of",
        path: leopold_exe.to_path_buf(),
        source,
    })?;
    let s = abs
        .to_str()
        .ok_or_else(|| WiringError::NonUtf8Exe { path: abs.clone() })?;
    Ok(format!(
        "'{}' persona guard # {TAG}",
        s.replace('\'', r"'\''")
    ))
}

/// The version `claude --version` reports, as `(major, minor, patch)`; the probe is bounded by
/// [`crate::process::VERSION_TIMEOUT`], and its answer cached for this very binary
/// ([`crate::cache`]).
///
/// # Errors
/// When the binary cannot be run, fails, or prints no version.
pub fn claude_version(claude_bin: &Path) -> Result<(u64, u64, u64), WiringError> {
    let text = crate::cache::version_output(
        crate::cache::cache_file().as_deref(),
        claude_bin,
        std::time::SystemTime::now(),
        |bin| crate::process::version_output(bin, crate::process::version_timeout()),
    )
    .map_err(|e| WiringError::ClaudeVersion {
        bin: claude_bin.to_path_buf(),
        problem: e.to_string(),
    })?;
    parse_version(&text).ok_or_else(|| WiringError::ClaudeVersion {
        bin: claude_bin.to_path_buf(),
        problem: format!("no version in its output {:?}", text.trim()),
    })
}

/// Whether the Claude Code at `claude_bin` understands `"onFailure": "block"` (2.1.295+).
///
/// # Errors
/// As [`claude_version`].
pub fn claude_supports_on_failure(claude_bin: &Path) -> Result<bool, WiringError> {
    Ok(claude_version(claude_bin)? >= CLAUDE_ON_FAILURE_SINCE)
}

/// The first `X.Y.Z` in `text` (e.g. `2.1.332 (Claude Code)`, `codex-cli 0.171.0`).
pub(crate) fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|word| {
            let mut parts = word.split('.');
            let v = (
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
            );
            Some(v)
        })
}

/// The standalone settings file `persona run` passes with `claude --settings <file>`: only the
/// guard's hook group. Claude deduplicates an identical command present in two settings layers,
/// so with the project file also wired the guard still runs once per call.
pub fn claude_guard_settings_json(ctx: &Context) -> String {
    let group = claude::group(&ctx.spec(Harness::Claude));
    json_text::Style::default().render_document(&json_text::J::Obj(vec![(
        "hooks",
        json_text::J::Obj(vec![("PreToolUse", json_text::J::Arr(vec![group]))]),
    )]))
}

/// What ACTIVE.json records of a run's wiring: where the guard is (or is about to be) wired.
pub fn wiring_record(kind: Harness, ctx: &Context) -> WiringEntry {
    WiringEntry {
        harness: kind,
        file: ctx.settings_path(kind),
        tag: TAG.to_owned(),
    }
}
