//! `leopold persona runs [--project DIR] [--json]`: the project's past runs, newest first
//! (docs/reference.md#past-runs).

use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::json;

use crate::cli::RunsArgs;
use crate::output::outln;
use crate::report::{self, html::format_duration, RunRecord};
use crate::state::{self, PersonaPaths};

/// One row of the listing: a run read, or a directory that could not be.
enum Entry {
    Run(Box<RunRecord>),
    Unreadable {
        dir: std::path::PathBuf,
        error: String,
    },
}

impl Entry {
    /// The directory's name: a run id, which starts with the run's UTC start time, so names
    /// sort as starts do (and a run whose run.json cannot be read still has its place).
    fn sort_key(&self) -> String {
        let dir = match self {
            Entry::Run(r) => r.dir.path(),
            Entry::Unreadable { dir, .. } => dir,
        };
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

pub fn run(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let project = state::resolve_project(args.project.project.as_deref())?;
    let paths = PersonaPaths::new(&project);
    let runs_dir = paths.runs();
    // Every live run is `active`; a crashed one stays `unfinished` until recovered.
    let live: Vec<String> = state::active_runs(&paths)
        .into_iter()
        .filter(|r| r.live)
        .filter_map(|r| r.run_id().map(str::to_owned))
        .collect();
    let mut entries = Vec::new();
    match std::fs::read_dir(&runs_dir) {
        Ok(rd) => {
            for e in rd {
                let e = e.with_context(|| format!("cannot read {}", runs_dir.display()))?;
                let dir = e.path();
                if !dir.is_dir() {
                    continue;
                }
                entries.push(match report::read_run_summary(&dir) {
                    Ok(r) => Entry::Run(Box::new(r)),
                    Err(err) => Entry::Unreadable {
                        dir,
                        error: format!("{err:#}"),
                    },
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {}", runs_dir.display()));
        }
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.sort_key()));

    let outcome_of = |r: &RunRecord| {
        let o = r.outcome();
        if o == "unfinished" && live.contains(&r.run_id()) {
            "active".to_owned()
        } else {
            o
        }
    };
    if args.json {
        let runs: Vec<serde_json::Value> = entries
            .iter()
            .map(|e| match e {
                Entry::Run(r) => {
                    let end = r.state.as_ref().and_then(|s| s.end.as_ref());
                    json!({
                        "run_id": r.run_id(),
                        "flow": r.flow(),
                        "harness": r.harness(),
                        "started_at": r.started_at(),
                        "ended_at": end.map(|e| e.ended_at.clone()),
                        "duration_ms": r.duration().map(|d| d.as_millis() as u64),
                        "outcome": outcome_of(r),
                        "exit_code": r.exit_code(),
                        "counts": end.map(|e| e.counts.clone()),
                        "verdict": end.and_then(|e| e.verdict.as_ref()),
                        "usage": end.and_then(|e| e.usage.clone()),
                        "run_dir": r.dir,
                    })
                }
                Entry::Unreadable { dir, error } => json!({
                    "run_dir": dir,
                    "outcome": "unreadable",
                    "error": error,
                }),
            })
            .collect();
        outln!("{}", json!({"project": project, "runs": runs}));
        return Ok(ExitCode::SUCCESS);
    }

    if entries.is_empty() {
        outln!(
            "no persona runs in {} (`leopold persona run` records them under {})",
            project.display(),
            runs_dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let cwd = std::env::current_dir().ok();
    let shown = |p: &std::path::Path| {
        cwd.as_deref()
            .and_then(|c| p.strip_prefix(c).ok())
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut rows: Vec<[String; 12]> = vec![[
        "RUN".into(),
        "FLOW".into(),
        "HARNESS".into(),
        "STARTED".into(),
        "DURATION".into(),
        "OUTCOME".into(),
        "ACTIONS".into(),
        "DENIED".into(),
        "VIOLATIONS".into(),
        "FINDINGS".into(),
        "TOKENS".into(),
        "COST".into(),
    ]];
    let mut dirs = vec!["DIRECTORY".to_owned()];
    for e in &entries {
        match e {
            Entry::Run(r) => {
                let end = r.state.as_ref().and_then(|s| s.end.as_ref());
                let outcome = match r.exit_code() {
                    Some(c) => format!("{} ({c})", outcome_of(r)),
                    None => outcome_of(r),
                };
                let usage = end.and_then(|e| e.usage.as_ref());
                let n = |f: fn(&state::Counts) -> u64| {
                    end.map_or_else(|| "-".to_owned(), |e| f(&e.counts).to_string())
                };
                rows.push([
                    r.run_id(),
                    r.flow(),
                    r.harness(),
                    r.started_at().unwrap_or_else(|| "-".into()),
                    r.duration().map_or_else(|| "-".into(), format_duration),
                    outcome,
                    n(|c| c.actions),
                    n(|c| c.denied),
                    n(|c| c.violations),
                    findings_cell(end.and_then(|e| e.verdict.as_ref())),
                    usage.map_or_else(|| "-".into(), |u| crate::usage::grouped(u.tokens())),
                    usage
                        .and_then(|u| u.cost_usd)
                        .map_or_else(|| "-".into(), crate::usage::dollars),
                ]);
                dirs.push(shown(r.dir.path()));
            }
            Entry::Unreadable { dir, error } => {
                let name = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let first = error.lines().next().unwrap_or("").to_owned();
                // Nothing is known of it but its name: every other column is `-`.
                let mut row: [String; 12] = std::array::from_fn(|_| "-".to_owned());
                row[0] = name;
                row[5] = "unreadable".into();
                rows.push(row);
                dirs.push(format!("{}  ({first})", shown(dir)));
            }
        }
    }
    for line in crate::table::aligned(&rows, Some(&dirs)) {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The findings the persona reported, and the worst one's severity: `2 (major)`, `-` for none.
fn findings_cell(v: Option<&crate::verdict::Verdict>) -> String {
    let Some(v) = v.filter(|v| !v.reported.is_empty()) else {
        return "-".into();
    };
    let worst = v
        .reported
        .iter()
        .filter_map(|f| leopold_flows::Severity::from_name(&f.severity))
        .max()
        .map_or_else(String::new, |s| format!(" ({s})"));
    format!("{}{worst}", v.reported.len() as u64 + v.reported_not_kept)
}
