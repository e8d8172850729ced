//! The persona run's on-disk state under `<project>/.leopold/persona/`:
//!
//! - `run.lock` and each run's own `active/<run_id>.lock`: [`lock`]. A kernel lock dies with its
//!   process, so a crash leaves a state file behind, never a stale lock.
//! - the state files: `ACTIVE.json` (a `--no-contain` run) and `active/<run_id>.json` (a boxed
//!   run), each written atomically before anything is changed, so that recovery knows what to
//!   undo (record before you change): [`active`].
//! - `runs/<run_id>/`: the run's journal, its `--settings` file while it runs, and `run.json`
//!   (ACTIVE.json's final state) once it ends.
//! - `events.jsonl`: the guard's denials and lifecycle events such as `persona_recovered`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub(crate) use crate::fs::Durability;
use anyhow::Context as _;
use serde::{Deserialize, Serialize};

pub use leopold_guard::ACTIVE_VERSION;

use crate::run_dir::RunDir;

pub mod active;
mod lock;

pub use active::{active_runs, ActiveRun, Slot};
pub use lock::{held_alone, is_live, Busy, LockHolder, LockMode, OwnLock, RunLock, TryLock};

/// Paths of one project's persona state.
#[derive(Debug, Clone)]
pub struct PersonaPaths {
    pub project: PathBuf,
    pub dir: PathBuf,
}

impl PersonaPaths {
    pub fn new(project: &Path) -> PersonaPaths {
        PersonaPaths {
            project: project.to_path_buf(),
            dir: project.join(".leopold").join("persona"),
        }
    }
    pub fn lock(&self) -> PathBuf {
        self.dir.join("run.lock")
    }
    /// Where the guard reads the active run from: a `--no-contain` run's state file (a boxed
    /// run's guard sees its own [`PersonaPaths::state_of`] there, in its box).
    pub fn active(&self) -> PathBuf {
        self.project.join(leopold_guard::ACTIVE_PATH)
    }
    /// Where the runs' own locks and the boxed runs' state files are.
    pub fn active_dir(&self) -> PathBuf {
        self.dir.join("active")
    }
    /// A boxed run's state file.
    pub fn state_of(&self, run_id: &str) -> PathBuf {
        self.active_dir().join(format!("{run_id}.json"))
    }
    /// A run's own lock, held while it lives.
    pub fn own_lock(&self, run_id: &str) -> PathBuf {
        self.active_dir().join(format!("{run_id}.lock"))
    }
    /// Where a boxed run's guard is proven: a project root of its own whose ACTIVE.json is the
    /// run's state, as the box shows it (`commands/run/proof.rs`).
    pub fn proof_root(&self, run_id: &str) -> PathBuf {
        self.active_dir().join(format!("{run_id}.proof"))
    }
    /// The log the guard appends its denials to.
    pub fn events(&self) -> PathBuf {
        self.project.join(leopold_guard::EVENTS_PATH)
    }
    pub fn runs(&self) -> PathBuf {
        self.dir.join("runs")
    }
    pub fn run_dir(&self, run_id: &str) -> RunDir {
        RunDir::new(self.runs().join(run_id))
    }
}

/// Resolves `--project`, or finds the project from the current directory ([`crate::project`]).
pub fn resolve_project(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    crate::project::resolve(arg)
}

/// ACTIVE.json while a run is active, and `run.json` (with `end`) after it ended: the guard
/// crate's one definition of the file, with the supervisor's [`RunEnd`].
pub type ActiveState = leopold_guard::ActiveFile<RunEnd>;

/// How a persona run ended: `run.json`'s `end.outcome`, `--json`'s `run_ended`, and the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// The worker finished and every action was inside the flow's bounds.
    Clean,
    /// An action broke the flow's bounds; the worker was stopped.
    Violated,
    /// The worker exited non-zero, crashed, or was lost.
    WorkerFailed,
    /// `--timeout` passed.
    TimedOut,
    /// SIGINT, SIGTERM or SIGHUP reached the supervisor.
    Interrupted,
    /// A step before the worker ran failed (wiring, its proof, the journal, the launch).
    SetupFailed,
    /// Archived by `persona recover` after the supervisor died.
    Recovered,
    /// Another run holds the lock; nothing was touched (never archived: no run.json).
    Busy,
    /// The persona hit the same wall `max_denials_in_a_row` times with no allowed action
    /// between; the worker was stopped.
    Stuck,
    /// The boxed worker hit one of its limits (`--max-procs`, `--max-memory`, `--max-scratch`,
    /// `--max-records`); the worker was stopped.
    OverLimit,
    /// The run went over `--max-tokens`, `--max-cost-usd` or `--max-turns`; the worker was
    /// stopped.
    OverBudget,
    /// The persona repeated the same allowed call on the same target `max_repeats` times
    /// running; the worker was stopped.
    Looping,
    /// The model endpoint refused the harness's credentials or model, or could not be reached;
    /// the worker was stopped.
    ModelFailed,
    /// The app did not meet the flow: an expectation unmet, a finding at or above `fail_on`, or
    /// `finish` with the goal not reached.
    Failed,
}

impl RunOutcome {
    /// The name run.json and `--json` use.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Clean => "clean",
            RunOutcome::Violated => "violated",
            RunOutcome::WorkerFailed => "worker_failed",
            RunOutcome::TimedOut => "timed_out",
            RunOutcome::Interrupted => "interrupted",
            RunOutcome::SetupFailed => "setup_failed",
            RunOutcome::Recovered => "recovered",
            RunOutcome::Busy => "busy",
            RunOutcome::Stuck => "stuck",
            RunOutcome::OverLimit => "over_limit",
            RunOutcome::OverBudget => "over_budget",
            RunOutcome::Looping => "looping",
            RunOutcome::ModelFailed => "model_failed",
            RunOutcome::Failed => "failed",
        }
    }

    /// The exit code of `persona run` for this outcome (docs/reference.md#what-a-run-does).
    pub fn exit_code(self) -> u8 {
        use crate::exit::RunExit;
        match self {
            RunOutcome::Clean => RunExit::CLEAN,
            RunOutcome::Violated => RunExit::VIOLATIONS,
            RunOutcome::SetupFailed => RunExit::CONFIG,
            RunOutcome::WorkerFailed
            | RunOutcome::TimedOut
            | RunOutcome::Interrupted
            | RunOutcome::Recovered => RunExit::WORKER_FAILED,
            RunOutcome::Busy => RunExit::BUSY,
            RunOutcome::Stuck => RunExit::STUCK,
            RunOutcome::OverLimit => RunExit::OVER_LIMIT,
            RunOutcome::OverBudget => RunExit::OVER_BUDGET,
            RunOutcome::Looping => RunExit::LOOPING,
            RunOutcome::ModelFailed => RunExit::MODEL_FAILED,
            RunOutcome::Failed => RunExit::FAILED,
        }
    }
}

impl std::fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a run ended (in `run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEnd {
    pub outcome: RunOutcome,
    pub exit_code: u8,
    pub ended_at: String,
    pub counts: Counts,
    /// The worker's exit status as text (`exit 0`, `signal 9`), if it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_status: Option<String>,
    /// Why the run stopped early, if it did (violation reason, timeout, signal, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a timeout: what the run was waiting for when time ran out (`no reply from the model
    /// for 40s`, `tool mcp__browser__browser_navigate never returned (2m)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The walls the persona hit, in order: each denial, browser refusal, violation, and the
    /// `stuck` stop (docs/guide.md#findings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Walls past the ones kept in `findings`, counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub findings_not_kept: u64,
    /// Where the harness's stream and the gateway's record (`gateway.jsonl`) disagree, call by
    /// call, each a violation (docs/security.md#the-gateway); empty when the two agree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gateway_mismatches: Vec<String>,
    /// The journal's hash-chain head when the run ended (SHA-256 of its last line, hex;
    /// docs/reference.md#journal): what `persona replay --expect` checks. Absent for a run without
    /// a journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_hash: Option<String>,
    /// The head of the gateway record's hash chain (`gateway.jsonl`, docs/security.md#the-gateway)
    /// when
    /// the run ended: what `persona replay` checks that file against. Absent when the gateway
    /// recorded nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_hash: Option<String>,
    /// The verdict on the app: expectations, the persona's reported findings and `finish`, and
    /// why the app failed the flow, if it did (docs/reference.md#the-verdict). Absent for a run
    /// that never reached its gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::verdict::Verdict>,
    /// The model, turns, tokens and cost, as the harness reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::usage::Usage>,
}

impl RunEnd {
    /// A run that ends as `outcome` now, with the outcome's exit code and nothing yet counted,
    /// found or recorded.
    pub fn new(outcome: RunOutcome) -> RunEnd {
        RunEnd {
            outcome,
            exit_code: outcome.exit_code(),
            ended_at: now_rfc3339(),
            counts: Counts::default(),
            worker_status: None,
            reason: None,
            cause: None,
            findings: Vec::new(),
            findings_not_kept: 0,
            gateway_mismatches: Vec::new(),
            journal_hash: None,
            gateway_hash: None,
            verdict: None,
            usage: None,
        }
    }

    /// `--json`'s last event, `run_ended`: this end as `run.json` records it, with the
    /// persona's `answer` (`findings` there; the walls are `walls`) and where the run's files
    /// are. Absent values are `null`, as the event has always said them.
    pub fn event(&self, run_id: &str, run_dir: &RunDir, answer: Option<&str>) -> serde_json::Value {
        serde_json::json!({
            "event": "run_ended",
            "run_id": run_id,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "counts": self.counts,
            "reason": self.reason,
            "cause": self.cause,
            "findings": answer,
            "walls": self.findings,
            "run_dir": run_dir,
            "findings_file": answer.is_some().then(|| run_dir.findings()),
            "report": run_dir.report(),
            "gateway_mismatches": self.gateway_mismatches,
            "journal_hash": self.journal_hash,
            "gateway_hash": self.gateway_hash,
            "verdict": self.verdict,
            "usage": self.usage,
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One wall the persona hit, as `run.json`'s `end.findings` and the report list it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// `denied` (the guard or the harness refused the call), `browser_refused` (the browser
    /// would not go there), `violation` (the call broke the bound, or the stream and the
    /// gateway's record disagree about it: `gateway record: …`), or `stuck` (the run was stopped
    /// after the same wall N times).
    pub kind: String,
    /// The journal line of the action, when the finding is one action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The tool called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Every host the call named (never a URL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The element's label, for a click, type or submit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Why: the guard's reason id, the browser's refusal, the violated rule, or
    /// `stuck at a wall: <reason> ×N`.
    pub reason: String,
}

/// Action counts of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub actions: u64,
    pub completed: u64,
    pub errored: u64,
    pub denied: u64,
    pub violations: u64,
    /// Stream lines the adapter could not read (malformed JSON, over-long lines).
    pub unreadable_lines: u64,
}

/// Reading and writing ACTIVE.json and run.json.
pub trait StateFile: Sized {
    /// Reads the file strictly: unknown keys are refused.
    fn read(path: &Path) -> anyhow::Result<Self>;
    /// Writes this state to `path` atomically (temp file in the same directory, fsync, rename).
    fn write_atomic(&self, path: &Path) -> anyhow::Result<()> {
        self.write_as(path, Durability::Durable)
    }
    /// [`StateFile::write_atomic`], waiting on the disk only as much as `durability` says.
    fn write_as(&self, path: &Path, durability: Durability) -> anyhow::Result<()>;
}

impl StateFile for ActiveState {
    fn read(path: &Path) -> anyhow::Result<ActiveState> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{} is not a Leopold ACTIVE.json this version understands",
                path.display()
            )
        })
    }

    fn write_as(&self, path: &Path, durability: Durability) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("state serialises");
        text.push('\n');
        write_atomic_as(path, text.as_bytes(), durability)
    }
}

/// Atomic replace of a file Leopold owns: temp file in the target's directory, write, fsync,
/// rename (the same writer as the wiring's records).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_atomic_as(path, bytes, Durability::Durable)
}

/// [`write_atomic`], waiting on the disk only as much as `durability` says.
pub fn write_atomic_as(path: &Path, bytes: &[u8], durability: Durability) -> anyhow::Result<()> {
    crate::fs::write_own_file_as(path, bytes, durability)
        .with_context(|| format!("cannot write {}", path.display()))
}

pub use leopold_journal::now_rfc3339;

/// A run id: UTC start time plus the supervisor's pid (unique while the lock is held).
pub fn new_run_id() -> String {
    let t = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let compact: String = t.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{compact}-{}", std::process::id())
}

/// Appends one JSON line to `events.jsonl` (O_APPEND, one write, so concurrent appenders such as
/// the guard never interleave within a line).
pub fn append_event(paths: &PersonaPaths, event: &serde_json::Value) -> anyhow::Result<()> {
    let path = paths.events();
    let mut line = serde_json::to_string(event).expect("event serialises");
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    f.write_all(line.as_bytes())
        .with_context(|| format!("cannot append to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use leopold_guard::{Harness, WiringEntry};

    #[test]
    fn outcomes_keep_their_names_and_exit_codes() {
        let all = [
            (RunOutcome::Clean, "clean", 0),
            (RunOutcome::Violated, "violated", 1),
            (RunOutcome::WorkerFailed, "worker_failed", 3),
            (RunOutcome::TimedOut, "timed_out", 3),
            (RunOutcome::Interrupted, "interrupted", 3),
            (RunOutcome::SetupFailed, "setup_failed", 2),
            (RunOutcome::Recovered, "recovered", 3),
            (RunOutcome::Busy, "busy", 4),
        ];
        for (o, name, code) in all {
            assert_eq!(o.as_str(), name);
            assert_eq!(o.exit_code(), code, "{name}");
            // On disk and in --json the name is the serde form.
            assert_eq!(serde_json::to_value(o).unwrap(), name);
            assert_eq!(
                serde_json::from_value::<RunOutcome>(name.into()).unwrap(),
                o
            );
        }
    }

    #[test]
    fn active_state_round_trips_and_rejects_unknown_keys() {
        let (dir, p) = crate::test_support::temp_path("ACTIVE.json");
        let s = ActiveState {
            version: ACTIVE_VERSION,
            active: true,
            run_id: new_run_id(),
            flow: "checkout".into(),
            flow_path: "/x/flows/checkout.md".into(),
            flow_source: None,
            harness: Harness::Claude,
            supervisor_pid: 1,
            worker_pid: None,
            started_at: now_rfc3339(),
            wiring: vec![WiringEntry {
                harness: Harness::Claude,
                file: "/x/.claude/settings.json".into(),
                tag: "leopold-persona-guard".into(),
            }],
            guard_settings: None,
            browser: None,
            suite: None,
            keep_scratch: false,
            end: None,
        };
        s.write_atomic(&p).unwrap();
        let back = ActiveState::read(&p).unwrap();
        assert_eq!(back.wiring, s.wiring);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replacen("{", "{\"surprise\": 1,", 1)).unwrap();
        assert!(ActiveState::read(&p).is_err());
        // Only the target remains: the temp file was renamed, not left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
