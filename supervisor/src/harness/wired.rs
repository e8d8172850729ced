//! What wiring says: its outcomes, the handlers it finds in a file, its errors, and the hook
//! it writes (shared by the engine, `wiring.rs`, and each wing's file format).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::WiringEntry;

/// The result of [`wire`].
#[derive(Debug, Clone)]
#[must_use]
pub struct WireOutcome {
    pub record: WiringEntry,
    /// Whether the file was written (false: it already held exactly this wiring).
    pub changed: bool,
    /// Things the user should know (e.g. Claude would skip this settings file).
    pub warnings: Vec<String>,
}

/// What [`unwire`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnwireAction {
    /// Nothing of ours was wired: nothing written.
    NothingWired,
    /// The file held exactly what wire wrote: its original bytes are back (or it is gone again,
    /// when wire created it).
    Restored,
    /// The file changed since wire: only this many tagged handlers were removed.
    RemovedHandlers(usize),
    /// The guard was wired by hand (`persona wire`), and this unwire is not (a run's teardown,
    /// recovery): the wiring is the user's, and stays.
    KeptByHand,
}

/// The result of [`unwire`].
#[derive(Debug, Clone)]
#[must_use]
pub struct UnwireOutcome {
    pub file: PathBuf,
    pub action: UnwireAction,
    pub warnings: Vec<String>,
}

impl UnwireOutcome {
    /// Whether the file changed (anything of ours was there to remove; wiring the user made by
    /// hand is kept, so not a change).
    pub fn changed(&self) -> bool {
        matches!(
            self.action,
            UnwireAction::Restored | UnwireAction::RemovedHandlers(_)
        )
    }
}

/// One handler carrying [`TAG`] in a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WiredHandler {
    pub file: PathBuf,
    /// Index of its group in `PreToolUse`.
    pub group: usize,
    /// The group's matcher, if it has one.
    pub matcher: Option<String>,
    pub command: String,
    /// Exactly what `wire` would write now (same command, matcher, timeout, onFailure, alone in
    /// its group). False for a stale wiring, e.g. left by another leopold binary.
    pub current: bool,
}

impl WiredHandler {
    /// The tagged handler of group `group` in `file`, as read there: the group's matcher and
    /// the handler's command, when they are strings.
    pub(crate) fn read(
        file: &Path,
        group: usize,
        matcher: Option<&str>,
        command: Option<&str>,
        current: bool,
    ) -> WiredHandler {
        WiredHandler {
            file: file.to_path_buf(),
            group,
            matcher: matcher.map(str::to_owned),
            command: command.unwrap_or_default().to_owned(),
            current,
        }
    }
}

/// Why wiring failed. Every variant names the file; nothing was written when one is returned,
/// except where stated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WiringError {
    #[error("cannot {action} `{}`", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "`{}` line {line}, column {column}: {problem}; the file was left untouched\n(hint: {hint})",
        file.display()
    )]
    Malformed {
        file: PathBuf,
        line: usize,
        column: usize,
        problem: String,
        hint: String,
    },
    #[error(
        "`{}` is not UTF-8 text; the file was left untouched\n(hint: settings files are UTF-8; \
         fix its encoding by hand, then run the command again)",
        file.display()
    )]
    NotUtf8 { file: PathBuf },
    #[error(
        "`{}` kept changing while leopold was editing it ({attempts} attempts); nothing was \
         written\n(hint: is the harness or an editor writing it? let it finish, then run the \
         command again)",
        file.display()
    )]
    Contended { file: PathBuf, attempts: usize },
    #[error("cannot tell the version of Claude Code at `{}`: {problem}", bin.display())]
    ClaudeVersion { bin: PathBuf, problem: String },
    #[error(
        "the leopold binary's path `{}` is not UTF-8, so no hook command can name it\n(hint: \
         install leopold under a UTF-8 path)",
        path.display()
    )]
    NonUtf8Exe { path: PathBuf },
    #[error("neither CODEX_HOME nor HOME is set, so Codex's config.toml cannot be found")]
    NoCodexHome,
    #[error("editing `{}` produced an unexpected result ({problem}); nothing was written. This is a bug in leopold", file.display())]
    Internal { file: PathBuf, problem: String },
}

/// The hook a harness should run, resolved from a [`Context`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookSpec {
    pub command: String,
    pub timeout: u64,
    /// Claude only: `"onFailure": "block"`.
    pub on_failure_block: bool,
}

/// Keys `wire` itself created, so that unwire removes them again once they are empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Created {
    /// The `hooks` table/object.
    pub hooks: bool,
    /// The `PreToolUse` array.
    pub pre_tool_use: bool,
}

/// The text after wiring, and which keys that created.
pub(crate) struct Added {
    pub text: String,
    pub created: Created,
}
