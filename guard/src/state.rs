//! The state around the decision: the project root, `ACTIVE.json`, the active flow.
//!
//! No locks are taken and nothing waits: the supervisor writes `ACTIVE.json` atomically (temp file
//! and rename), so a read sees either the old or the new file.

use std::io::Read;
use std::path::{Path, PathBuf};

use leopold_flows::{Flow, FlowError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::browser::BrowserState;
use crate::Harness;

use crate::reason::{safe_text, Denial, Reason};

/// `ACTIVE.json` is small; anything bigger is damage, not state.
const MAX_ACTIVE_BYTES: u64 = 1 << 20;

/// `ACTIVE.json`, relative to the project root.
pub const ACTIVE_PATH: &str = ".leopold/persona/ACTIVE.json";

/// `events.jsonl`, relative to the project root.
pub const EVENTS_PATH: &str = ".leopold/persona/events.jsonl";

/// ACTIVE.json's format version.
pub const ACTIVE_VERSION: u32 = 1;

/// One wiring record: enough for recovery to unwire exactly what a run wired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WiringEntry {
    /// The harness wired.
    pub harness: Harness,
    /// The file the guard is (or is about to be) wired into.
    pub file: PathBuf,
    /// The tag on every handler Leopold adds.
    pub tag: String,
}

/// `ACTIVE.json` as the supervisor writes it, and the run's `run.json` (the same object with
/// `end`, the supervisor's account `E` of how the run ended). The one definition of the file:
/// the supervisor reads it strictly (unknown keys refused); the guard reads only `active`,
/// `flow`, `flow_path` and `browser` of it, each checked on its own so that a denial says which
/// ([`read_active`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActiveFile<E> {
    /// [`ACTIVE_VERSION`].
    pub version: u32,
    /// Whether the run is live (ACTIVE.json) or over (`run.json`).
    pub active: bool,
    /// The run's id, also its directory name under `runs/`.
    pub run_id: String,
    /// The flow's name.
    pub flow: String,
    /// The flow file: in ACTIVE.json the one the guard reads, absolute; in `run.json` the run
    /// directory's copy, relative to it (`flow.md`; docs/reference.md#run-directory).
    pub flow_path: PathBuf,
    /// In `run.json` only: the flow file the run was given, relative to the project when it lies
    /// inside it. For people: replay and reports read the copy `flow_path` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_source: Option<PathBuf>,
    /// The harness running the worker.
    pub harness: Harness,
    /// The supervisor's pid.
    pub supervisor_pid: u32,
    /// The worker's pid, which is also its process group id (it leads its own group).
    pub worker_pid: Option<u32>,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// What is (or is about to be) wired. Written before each edit, so a crash in between leaves
    /// a record naming a file that may or may not carry the tag; unwiring is idempotent.
    pub wiring: Vec<WiringEntry>,
    /// The `claude --settings` file of this run, removed at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard_settings: Option<PathBuf>,
    /// Present when the supervisor provisioned the worker's browser: the guard then turns the
    /// dangerous browser tools off and judges clicks by the ref map ([`crate::browser`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserState>,
    /// Present when the run is one attempt of a suite (`persona run` of several flows or
    /// harnesses, or with `--attempts`): the supervisor's results group runs by it; the guard
    /// ignores it. Absent: a run of its own, attempt 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<SuiteMember>,
    /// `--keep-scratch`: the browser's profile and the worker's scratch outlive the run (and its
    /// recovery after a crash); by default both are removed when it ends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_scratch: bool,
    /// Present only in `run.json`: how the run ended.
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub end: Option<E>,
}

/// Which suite a run belongs to, and which of its case's attempts it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteMember {
    /// The suite's id: the same for every run one `persona run` started.
    pub id: String,
    /// Which attempt of its flow and harness this run is, from 1.
    pub attempt: u32,
}

fn none<E>() -> Option<E> {
    None
}

/// What the guard reads of `ACTIVE.json`: `active`, `flow`, `flow_path`, and `browser` when the
/// supervisor provisioned the browser (see [`crate::browser`]); nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActiveState {
    /// No `ACTIVE.json`, or `"active": false`: the guard is inert.
    Inactive,
    /// A persona run is active.
    Active {
        /// The flow's name (`flow`).
        flow: String,
        /// The flow file (`flow_path`), resolved against the project root when relative.
        flow_path: PathBuf,
        /// `browser`: present when the supervisor provisioned the worker's browser.
        browser: Option<crate::browser::BrowserState>,
    },
}

/// The nearest ancestor of `start` (itself included) that holds a `.leopold/` directory.
///
/// # Errors
///
/// [`Reason::ProjectRootUnreadable`] when a `stat` fails with anything but "not found" or "not a
/// directory": the guard cannot tell whether a run is active, so it must not guess "inert".
pub fn find_root(start: &Path) -> Result<Option<PathBuf>, Denial> {
    for dir in start.ancestors() {
        let candidate = dir.join(".leopold");
        match std::fs::metadata(&candidate) {
            Ok(m) if m.is_dir() => return Ok(Some(dir.to_path_buf())),
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.kind() == std::io::ErrorKind::NotADirectory => {}
            Err(e) => {
                return Err(
                    Denial::new(Reason::ProjectRootUnreadable).with_detail(e.kind().to_string())
                )
            }
        }
    }
    Ok(None)
}

/// Reads `<root>/.leopold/persona/ACTIVE.json`.
///
/// # Errors
///
/// [`Reason::ActiveStateUnreadable`] or [`Reason::ActiveStateMalformed`], with a detail.
pub fn read_active(root: &Path) -> Result<ActiveState, Denial> {
    let path = root.join(ACTIVE_PATH);
    let unreadable = |e: std::io::Error| {
        Denial::new(Reason::ActiveStateUnreadable).with_detail(e.kind().to_string())
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ActiveState::Inactive),
        Err(e) => return Err(unreadable(e)),
    };
    let mut bytes = Vec::with_capacity(1024);
    file.take(MAX_ACTIVE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    let malformed = |what: &str| Denial::new(Reason::ActiveStateMalformed).with_detail(what);
    if bytes.len() as u64 > MAX_ACTIVE_BYTES {
        return Err(malformed("over 1 MiB"));
    }
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(malformed("not a JSON object"));
    };
    match map.get("active") {
        Some(Value::Bool(false)) => return Ok(ActiveState::Inactive),
        Some(Value::Bool(true)) => {}
        _ => return Err(malformed("`active` is not true or false")),
    }
    let flow = match map.get("flow") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => return Err(malformed("`flow` is not a flow name")),
    };
    let flow_path = match map.get("flow_path") {
        Some(Value::String(s)) if !s.is_empty() && !s.contains('\0') => root.join(s),
        _ => return Err(malformed("`flow_path` is not a path")),
    };
    let browser = match map.get("browser") {
        None | Some(Value::Null) => None,
        Some(v) => match BrowserState::from_value(v) {
            Some(b) => Some(b),
            None => return Err(malformed("`browser` is not a provisioned-browser object")),
        },
    };
    Ok(ActiveState::Active {
        flow,
        flow_path,
        browser,
    })
}

/// Loads the active flow and checks it is the flow `ACTIVE.json` names.
///
/// # Errors
///
/// [`Reason::FlowUnreadable`], [`Reason::FlowInvalid`] or [`Reason::FlowMismatch`].
pub fn load_flow(name: &str, path: &Path) -> Result<Flow, Denial> {
    match Flow::load(path) {
        Ok(flow) if flow.name == name => Ok(flow),
        Ok(flow) => Err(Denial::new(Reason::FlowMismatch).with_detail(format!(
            "its `name` is {}",
            safe_text(&flow.name, 64).map_or_else(|| "withheld".to_owned(), |n| format!("{n:?}"))
        ))),
        Err(FlowError::Read { source, .. }) => {
            Err(Denial::new(Reason::FlowUnreadable).with_detail(source.kind().to_string()))
        }
        Err(FlowError::Key { key, .. }) => {
            Err(Denial::new(Reason::FlowInvalid).with_detail(format!(
                "key `{}`; `leopold flow check` on it says why",
                safe_text(&key, 64).unwrap_or_default()
            )))
        }
        Err(_) => Err(Denial::new(Reason::FlowInvalid)
            .with_detail("its front matter does not parse; `leopold flow check` on it says why")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(active: bool) -> ActiveFile<Value> {
        ActiveFile {
            version: ACTIVE_VERSION,
            active,
            run_id: "r1".into(),
            flow: "checkout".into(),
            flow_path: "/p/flows/checkout.md".into(),
            flow_source: None,
            harness: Harness::Codex,
            supervisor_pid: 7,
            worker_pid: Some(8),
            started_at: "2026-11-30T10:00:00.000Z".into(),
            wiring: vec![WiringEntry {
                harness: Harness::Codex,
                file: "/h/.codex/config.toml".into(),
                tag: "leopold-persona-guard".into(),
            }],
            guard_settings: None,
            browser: Some(BrowserState {
                kind: "playwright".into(),
                server: "browser".into(),
                ref_map: "/p/.leopold/persona/runs/r1/browser/refs.json".into(),
            }),
            suite: None,
            keep_scratch: false,
            end: None,
        }
    }

    fn write(root: &Path, f: &ActiveFile<Value>) {
        let path = root.join(ACTIVE_PATH);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_vec_pretty(f).unwrap()).unwrap();
    }

    /// What the guard should read of `f`.
    fn active_of(f: &ActiveFile<Value>) -> ActiveState {
        ActiveState::Active {
            flow: f.flow.clone(),
            flow_path: f.flow_path.clone(),
            browser: f.browser.clone(),
        }
    }

    #[test]
    fn the_guard_reads_what_the_supervisor_writes() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(true);
        write(dir.path(), &f);
        assert_eq!(read_active(dir.path()).unwrap(), active_of(&f));
        let text = std::fs::read_to_string(dir.path().join(ACTIVE_PATH)).unwrap();
        assert!(text.contains("\"harness\": \"codex\""), "{text}");
        write(dir.path(), &file(false));
        assert_eq!(read_active(dir.path()).unwrap(), ActiveState::Inactive);
    }

    #[test]
    fn suite_membership_is_written_only_when_there_is_one_and_the_guard_ignores_it() {
        let dir = tempfile::tempdir().unwrap();
        let alone = serde_json::to_value(file(true)).unwrap();
        assert!(alone.get("suite").is_none(), "{alone}");
        let mut f = file(true);
        f.suite = Some(SuiteMember {
            id: "s1".into(),
            attempt: 2,
        });
        write(dir.path(), &f);
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(ACTIVE_PATH)).unwrap()).unwrap();
        assert_eq!(v["suite"], serde_json::json!({"id": "s1", "attempt": 2}));
        let back: ActiveFile<Value> = serde_json::from_value(v).unwrap();
        assert_eq!(back.suite, f.suite);
        assert_eq!(read_active(dir.path()).unwrap(), active_of(&f));
    }

    #[test]
    fn unknown_keys_are_the_supervisors_to_refuse_and_the_guards_to_ignore() {
        let dir = tempfile::tempdir().unwrap();
        let mut v = serde_json::to_value(file(true)).unwrap();
        v["from_a_later_version"] = Value::Bool(true);
        let path = dir.path().join(ACTIVE_PATH);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, v.to_string()).unwrap();
        assert!(matches!(
            read_active(dir.path()),
            Ok(ActiveState::Active { .. })
        ));
        assert!(serde_json::from_value::<ActiveFile<Value>>(v).is_err());
    }
}
