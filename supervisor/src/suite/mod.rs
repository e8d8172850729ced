//! A suite's results, from run directories alone: the runs one `persona run` of several flows,
//! harnesses or attempts left (each run's `run.json` names its suite and attempt), or run
//! directories copied from several CI jobs (`persona report --merge`). The same code serves
//! both, so a merge of shards says what one machine running them all would have said.
//!
//! - [`load`] reads run directories, or folders of them, with the report's reader (hash chains
//!   checked: a changed record is `tampered`, never clean);
//! - [`cases`] groups the runs into cases, one per flow and harness, attempts in order;
//! - [`junit`], [`html`] and [`step_summary`] render the cases (docs/reference.md#suites).

mod github;
mod html;
mod junit;
pub mod merge;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::exit::RunExit;
use crate::report::RunRecord;

pub use github::step_summary;
pub use html::html;
pub use junit::junit;

/// How a case ended, over its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The first attempt was clean.
    Passed,
    /// Clean in the end, after at least one attempt that was not.
    Flaky,
    /// The last attempt was not clean.
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Flaky => "flaky",
            Status::Failed => "failed",
        }
    }
}

/// One flow under one harness: every attempt of it in one suite.
#[derive(Debug, Clone)]
pub struct Case {
    pub flow: String,
    pub harness: String,
    /// The attempts, in order (the last one decides).
    pub attempts: Vec<RunRecord>,
    pub status: Status,
    /// The other suites' runs of the same flow and harness, left out for this newer one, one
    /// line each (`suite S: runs a, b`).
    pub superseded: Vec<String>,
}

impl Case {
    /// The attempt that decides the case.
    pub fn last(&self) -> &RunRecord {
        self.attempts
            .last()
            .expect("a case has at least one attempt")
    }

    /// The case's exit code: 0 when it passed (flaky included); else the last attempt's, 1 for
    /// a `tampered` one (as `persona report` exits) and 3 for one that never ended (its worker
    /// never got to finish).
    pub fn exit_code(&self) -> u8 {
        let last = self.last();
        match self.status {
            Status::Passed | Status::Flaky => RunExit::CLEAN,
            Status::Failed if !last.tampered.is_empty() => RunExit::VIOLATIONS,
            Status::Failed => match last.exit_code() {
                Some(RunExit::CLEAN) | None => RunExit::WORKER_FAILED,
                Some(code) => code,
            },
        }
    }
}

/// The suite's exit code: the worst of its cases' ([`RunExit::WORST_FIRST`]), 0 when every case passed
/// or was flaky.
pub fn exit_code(cases: &[Case]) -> u8 {
    RunExit::worst(cases.iter().map(Case::exit_code))
}

/// Reads every run of `paths`, each a run directory (it holds `run.json` or `journal.jsonl`) or
/// a folder of run directories (its other entries, and hidden folders, are skipped).
///
/// # Errors
///
/// A path that is neither, a folder that holds no run, a run directory the report cannot read
/// (its error names the file).
pub fn load(paths: &[PathBuf]) -> anyhow::Result<Vec<RunRecord>> {
    let mut runs = Vec::new();
    for p in paths {
        for dir in run_dirs(p)? {
            runs.push(crate::report::read_run(&dir)?);
        }
    }
    Ok(runs)
}

/// The run directories `path` stands for, sorted by name.
pub fn run_dirs(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    const HINT: &str = "(hint: give run directories, .leopold/persona/runs/<run_id>, or folders of them, such as .leopold/persona/runs)";
    if !path.is_dir() {
        anyhow::bail!(
            "{} is not a run directory or a folder of run directories: {}\n{HINT}",
            path.display(),
            if path.exists() {
                "not a folder"
            } else {
                "it does not exist"
            }
        );
    }
    if is_run_dir(path) {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        // A hidden folder is not a run's (a merge cut short leaves `.<run_id>.merging`).
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir() && is_run_dir(p))
        .collect();
    if dirs.is_empty() {
        anyhow::bail!(
            "{} holds no run directory (none of its folders holds run.json or journal.jsonl)\n{HINT}",
            path.display()
        );
    }
    dirs.sort();
    Ok(dirs)
}

fn is_run_dir(p: &Path) -> bool {
    let d = crate::run_dir::RunDir::new(p);
    d.run_json().is_file() || d.journal().is_file()
}

/// Groups runs into cases: by suite (a run of no suite is a suite of its own), flow and
/// harness; attempts by number. When one flow and harness has runs from several suites (a
/// runs folder that kept older ones), the newest suite's are the case and the others are named
/// in [`Case::superseded`]. Flows by name, then harnesses in `Harness::ALL` order.
pub fn cases(runs: Vec<RunRecord>) -> Vec<Case> {
    type Group = Vec<RunRecord>;
    let mut by_pair: BTreeMap<(String, usize, String), BTreeMap<String, Group>> = BTreeMap::new();
    for rec in runs {
        let (suite, _) = membership(&rec);
        let harness = rec.harness();
        let order = harness
            .parse::<leopold_guard::Harness>()
            .ok()
            .and_then(|h| leopold_guard::Harness::ALL.iter().position(|&a| a == h))
            .unwrap_or(usize::MAX);
        by_pair
            .entry((rec.flow(), order, harness))
            .or_default()
            .entry(suite)
            .or_default()
            .push(rec);
    }
    by_pair
        .into_iter()
        .map(|((flow, _, harness), suites)| case_of(flow, harness, suites))
        .collect()
}

/// The suite's id (the run's own id for a run of no suite) and the attempt (1 when none).
fn membership(rec: &RunRecord) -> (String, u32) {
    match rec.state.as_ref().and_then(|s| s.suite.as_ref()) {
        Some(m) => (m.id.clone(), m.attempt),
        None => (rec.run_id(), 1),
    }
}

/// The case of one flow and harness: the newest suite's attempts (by the latest start among
/// them; RFC 3339 UTC times sort as text).
fn case_of(flow: String, harness: String, suites: BTreeMap<String, Vec<RunRecord>>) -> Case {
    let newest = |g: &Vec<RunRecord>| g.iter().filter_map(RunRecord::started_at).max();
    let mut groups: Vec<(String, Vec<RunRecord>)> = suites.into_iter().collect();
    groups.sort_by(|a, b| newest(&a.1).cmp(&newest(&b.1)).then(a.0.cmp(&b.0)));
    let (_, mut attempts) = groups.pop().expect("a pair has at least one run");
    attempts.sort_by_key(|r| (membership(r).1, r.started_at()));
    let superseded = groups
        .iter()
        .map(|(id, g)| {
            let ids: Vec<String> = g.iter().map(RunRecord::run_id).collect();
            format!("suite {id}: {}", ids.join(", "))
        })
        .collect();
    let clean = |r: &RunRecord| r.outcome() == "clean";
    let status = match attempts.last() {
        Some(last) if !clean(last) => Status::Failed,
        _ if attempts.iter().all(clean) => Status::Passed,
        _ => Status::Flaky,
    };
    Case {
        flow,
        harness,
        attempts,
        status,
        superseded,
    }
}

/// What a person should know of the grouping: each case that left another suite's runs out.
pub fn notes(cases: &[Case]) -> Vec<String> {
    cases
        .iter()
        .flat_map(|c| {
            c.superseded.iter().map(move |s| {
                format!(
                    "flow {} under {}: kept the newest suite's runs; skipped {s}",
                    c.flow, c.harness
                )
            })
        })
        .collect()
}

/// The suite's figures: runs, cases by status, wall time, tokens and cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub runs: usize,
    pub passed: usize,
    pub flaky: usize,
    /// Failed cases, by their last attempt's outcome.
    pub failed: BTreeMap<String, usize>,
    /// From the first start to the last end.
    pub wall: Option<std::time::Duration>,
    pub tokens: u64,
    /// USD, over the runs whose harness reported it.
    pub cost_usd: Option<f64>,
}

impl Totals {
    pub fn of(cases: &[Case]) -> Totals {
        let mut t = Totals::default();
        let mut first = None;
        let mut last = None;
        for c in cases {
            match c.status {
                Status::Passed => t.passed += 1,
                Status::Flaky => t.flaky += 1,
                Status::Failed => *t.failed.entry(c.last().outcome()).or_default() += 1,
            }
            let (_, tokens, cost) = case_figures(c);
            t.tokens += tokens;
            if let Some(x) = cost {
                *t.cost_usd.get_or_insert(0.0) += x;
            }
            t.runs += c.attempts.len();
            for (start, end) in c.attempts.iter().map(span) {
                first = match (first, start) {
                    (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
                    (a, b) => a.or(b),
                };
                last = last.max(end);
            }
        }
        t.wall = first.zip(last).and_then(|(a, b)| b.duration_since(a).ok());
        t
    }

    pub fn failed_total(&self) -> usize {
        self.failed.values().sum()
    }
}

/// The run's usage, when it recorded one.
pub(crate) fn usage(r: &RunRecord) -> Option<&crate::usage::Usage> {
    r.state.as_ref()?.end.as_ref()?.usage.as_ref()
}

fn span(r: &RunRecord) -> (Option<std::time::SystemTime>, Option<std::time::SystemTime>) {
    let parse = |s: &str| humantime::parse_rfc3339_weak(s).ok();
    let start = r.started_at().and_then(|s| parse(&s));
    let end = r
        .state
        .as_ref()
        .and_then(|s| s.end.as_ref())
        .and_then(|e| parse(&e.ended_at));
    (start, end)
}

/// A case's figures over its attempts: duration, tokens, cost.
pub(crate) fn case_figures(c: &Case) -> (std::time::Duration, u64, Option<f64>) {
    let mut d = std::time::Duration::ZERO;
    let mut tokens = 0;
    let mut cost = None;
    for r in &c.attempts {
        d += r.duration().unwrap_or_default();
        let u = usage(r);
        tokens += u.map_or(0, crate::usage::Usage::tokens);
        if let Some(x) = u.and_then(|u| u.cost_usd) {
            *cost.get_or_insert(0.0) += x;
        }
    }
    (d, tokens, cost)
}

/// The findings the persona reported over a case's last attempt: how many, and the worst
/// severity.
pub(crate) fn findings(c: &Case) -> (u64, Option<leopold_flows::Severity>) {
    let Some(v) = c
        .last()
        .state
        .as_ref()
        .and_then(|s| s.end.as_ref())
        .and_then(|e| e.verdict.as_ref())
    else {
        return (0, None);
    };
    let worst = v
        .reported
        .iter()
        .filter_map(|f| leopold_flows::Severity::from_name(&f.severity))
        .max();
    (v.reported.len() as u64 + v.reported_not_kept, worst)
}

#[cfg(test)]
mod tests;
