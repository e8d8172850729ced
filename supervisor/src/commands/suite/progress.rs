//! What a suite prints, the way nextest does: a first line saying what runs and how many at
//! once, one line per finished run, a live count on a terminal, and a table at the end. With
//! `--json`, its runs' own events pass through, between `suite_started`, one `suite_run` per
//! finished attempt, and `suite_ended`.

use std::cell::Cell;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use super::child::Attempt;
use super::list::Pair;
use super::PairResult;
use crate::output::{eline, outln};
use crate::partition::Partition;
use crate::report::html::format_duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Human,
    Quiet,
    Json,
}

/// The suite's output; the live count only when stderr is a terminal.
pub struct Progress {
    mode: Mode,
    total: usize,
    done: Cell<usize>,
    live: bool,
    drawn: Cell<bool>,
    start: Instant,
}

/// What the suite wrote at the end, for its last lines.
#[derive(Debug, Default)]
pub struct Written {
    pub html: Option<PathBuf>,
    pub junit: Option<PathBuf>,
}

impl Progress {
    pub fn new(json: bool, quiet: bool, total: usize) -> Progress {
        let mode = match (json, quiet) {
            (true, _) => Mode::Json,
            (false, true) => Mode::Quiet,
            (false, false) => Mode::Human,
        };
        Progress {
            mode,
            total,
            done: Cell::new(0),
            live: mode == Mode::Human && std::io::stderr().is_terminal(),
            drawn: Cell::new(false),
            start: Instant::now(),
        }
    }

    pub fn json(&self) -> bool {
        self.mode == Mode::Json
    }

    fn event(&self, v: serde_json::Value) {
        if self.mode == Mode::Json {
            outln!("{}", crate::commands::run::stamp(v));
        }
    }

    fn line(&self, line: &str) {
        if self.mode == Mode::Human {
            self.clear();
            outln!("{line}");
        }
    }

    /// Wipes the live count before a line is printed over it.
    fn clear(&self) {
        if self.drawn.replace(false) {
            crate::output::estr("\r\x1b[K");
        }
    }

    pub fn started(
        &self,
        pairs: &[Pair],
        listed: usize,
        partition: Option<&Partition>,
        jobs: usize,
        why: &str,
    ) {
        let shard = partition.map_or_else(String::new, |p| {
            format!(" (shard {p}: {} of {listed})", pairs.len())
        });
        self.line(&format!(
            "leopold: suite of {}{shard}, {jobs} at a time ({why})",
            crate::output::count(pairs.len() as u64, "run"),
        ));
        let runs: Vec<_> = pairs
            .iter()
            .map(|p| json!({"flow": p.name, "flow_path": p.flow, "harness": p.harness}))
            .collect();
        self.event(json!({"event":"suite_started","runs":runs,"listed":listed,"partition":partition.map(ToString::to_string),"jobs":jobs,"jobs_why":why}));
    }

    /// A finished attempt: `retry` when another follows.
    pub fn run_finished(&self, pair: &Pair, a: &Attempt, attempts: u32, retry: bool) {
        self.done.set(self.done.get() + usize::from(!retry));
        let word = match (a.passed(), retry) {
            (_, true) => "RETRY",
            (true, false) if a.number > 1 => "FLAKY",
            (true, false) => "PASS",
            (false, false) => "FAIL",
        };
        let tries = if attempts > 1 {
            format!(" (attempt {} of {attempts})", a.number)
        } else {
            String::new()
        };
        let why = a
            .reason
            .as_deref()
            .map_or_else(String::new, |r| format!(": {r}"));
        self.line(&format!(
            "{word:>7} [{:>8}] {} · {}: {} ({}){tries}{why}",
            format_duration(a.duration),
            pair.name,
            pair.harness,
            a.outcome,
            a.exit_code
        ));
        // The run's own last words, when it ended with neither a verdict nor an error of its own.
        if self.mode != Mode::Json && a.reason.is_none() && !a.stderr.is_empty() {
            self.clear();
            for l in &a.stderr {
                eline(format_args!("        {l}"));
            }
        }
        self.event(json!({"event":"suite_run","flow":pair.name,"harness":pair.harness,"attempt":a.number,
            "outcome":a.outcome,"exit_code":a.exit_code,"retry":retry,"run_id":a.run_id,"run_dir":a.run_dir,
            "duration_ms":a.duration.as_millis() as u64,"reason":a.reason}));
    }

    /// The live count, redrawn each second on a terminal.
    pub fn tick(&self, running: usize) {
        if !self.live {
            return;
        }
        let elapsed = Duration::from_secs(self.start.elapsed().as_secs());
        crate::output::estr(&format!(
            "\r\x1b[K{:>7} [{:>8}] {}/{} done, {running} running",
            "Running",
            humantime::format_duration(elapsed).to_string(),
            self.done.get(),
            self.total
        ));
        self.drawn.set(true);
    }

    pub fn stopping(&self, running: usize, queued: usize) {
        self.clear();
        crate::output::warn(&format!(
            "stopping the suite: waiting for {} to stop, {} not started",
            crate::output::count(running as u64, "run"),
            crate::output::count(queued as u64, "run")
        ));
    }

    /// The table, the totals and where the results are.
    pub fn finished(&self, results: &[PairResult], elapsed: Duration, written: &Written) {
        self.clear();
        let usage = |r: &PairResult| {
            r.attempts.iter().filter_map(|a| a.usage.as_ref()).fold(
                (None::<u64>, None::<f64>),
                |(t, c), u| {
                    (
                        Some(t.unwrap_or(0) + u.tokens()),
                        u.cost_usd.map(|x| x + c.unwrap_or(0.0)).or(c),
                    )
                },
            )
        };
        if self.mode == Mode::Json {
            let runs: Vec<_> = results
                .iter()
                .map(|r| {
                    let (tokens, cost) = usage(r);
                    json!({"flow":r.pair.name,"harness":r.pair.harness,"status":r.status(),"attempts":r.attempts.len(),
                        "exit_code":r.exit_code(),"tokens":tokens,"cost_usd":cost,
                        "run_dirs":r.attempts.iter().map(|a| a.run_dir.clone()).collect::<Vec<_>>()})
                })
                .collect();
            let code = crate::exit::RunExit::worst(results.iter().map(PairResult::exit_code));
            self.event(json!({"event":"suite_ended","exit_code":code,"duration_ms":elapsed.as_millis() as u64,
                "runs":runs,"suite_html":written.html,"junit":written.junit}));
            return;
        }
        let mut rows = vec![[
            "FLOW", "HARNESS", "ATTEMPTS", "OUTCOME", "DURATION", "TOKENS", "COST",
        ]
        .map(str::to_owned)];
        for r in results {
            let (tokens, cost) = usage(r);
            let outcome = match (r.status(), r.attempts.last()) {
                ("flaky", _) => "flaky".to_owned(),
                (_, Some(a)) => format!("{} ({})", a.outcome, a.exit_code),
                (s, None) => s.to_owned(),
            };
            let duration: Duration = r.attempts.iter().map(|a| a.duration).sum();
            rows.push([
                r.pair.name.clone(),
                r.pair.harness.to_string(),
                r.attempts.len().to_string(),
                outcome,
                format_duration(duration),
                tokens.map_or_else(|| "-".into(), crate::usage::grouped),
                cost.map_or_else(|| "-".into(), crate::usage::dollars),
            ]);
        }
        for line in crate::table::aligned(&rows, None) {
            outln!("{line}");
        }
        let count = |s: &str| results.iter().filter(|r| r.status() == s).count() as u64;
        outln!(
            "leopold: {} in {}: {} passed, {} flaky, {} failed{}",
            crate::output::count(results.len() as u64, "run"),
            format_duration(elapsed),
            count("passed"),
            count("flaky"),
            count("failed"),
            match count("not run") {
                0 => String::new(),
                n => format!(", {n} not run"),
            }
        );
        for (what, path) in [("report", &written.html), ("JUnit", &written.junit)] {
            if let Some(p) = path {
                outln!("leopold: {what}: {}", crate::project::shown(p));
            }
        }
    }
}
