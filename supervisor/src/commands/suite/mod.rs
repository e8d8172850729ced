//! `leopold persona run FLOW... --harness claude,codex`: one run, or a suite of them.
//!
//! One flow under one harness, tried once and unsharded, is a single run, exactly as it has
//! always been ([`super::run`]). Anything more is a suite:
//!
//! 1. every flow is parsed and every pair listed before anything runs ([`list`]); a bad flow
//!    stops the suite with exit 2, nothing started;
//! 2. up to `--jobs` pairs run at once, each as a `persona run` of its own ([`child`]): its own
//!    lock share, state file, run directory, box, browser, scratch and `CODEX_HOME`;
//! 3. a run that ends `failed`, `stuck`, `worker_failed` or `timed_out` is tried again, up to
//!    `--attempts` in all; one that passes after failing is `flaky`;
//! 4. one line per finished run, a live count on a terminal, a table at the end ([`progress`]),
//!    the suite's JUnit file and `suite.html` from the run directories ([`crate::suite`]);
//! 5. the exit code is the worst run's ([`worst`]).
//!
//! A signal stops the suite: no new run starts, the signal is passed to each live run (it stops
//! its worker and unwires, as on Ctrl-C), and the suite waits for them.

mod child;
mod jobs;
mod list;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context as _;
use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinSet;

use crate::cli::RunArgs;
use crate::output::Failure;
pub use child::Attempt;
use list::Pair;
use progress::Progress;

/// `persona run`: a single run, or a suite.
pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let flows = list::flow_files(&args.flows).map_err(Failure::config)?;
    let harnesses = list::harnesses(&args.harness);
    let single = flows.len() == 1
        && harnesses.len() == 1
        && args.suite.attempts == 1
        && args.suite.partition.is_none();
    if single || args.suite.suite_member.is_some() {
        if flows.len() != 1 || harnesses.len() != 1 {
            return Err(Failure::config(anyhow::anyhow!(
                "--suite-member is for one flow under one harness"
            )));
        }
        return super::run::run(args, &flows[0], harnesses[0]);
    }
    let all = list::pairs(&flows, &harnesses).map_err(Failure::config)?;
    let listed = all.len();
    let pairs = list::shard(all, args.suite.partition.as_ref());
    suite(&args, pairs, listed)
}

/// One pair's attempts, in order.
#[derive(Debug)]
pub struct PairResult {
    pub pair: Pair,
    pub attempts: Vec<Attempt>,
}

impl PairResult {
    /// `passed`, `flaky`, `failed`, or `not run` (the suite was stopped first).
    pub fn status(&self) -> &'static str {
        match self.attempts.last() {
            None => "not run",
            Some(last) if last.passed() && self.attempts.len() > 1 => "flaky",
            Some(last) if last.passed() => "passed",
            Some(_) => "failed",
        }
    }

    /// The last attempt's exit code (a flaky pair passed: 0); a pair never run, 3.
    pub fn exit_code(&self) -> u8 {
        self.attempts
            .last()
            .map_or(crate::exit::RunExit::WORKER_FAILED, |a| a.exit_code)
    }
}

fn suite(args: &RunArgs, pairs: Vec<Pair>, listed: usize) -> Result<ExitCode, Failure> {
    let project = crate::state::resolve_project(args.project.project.as_deref())?;
    let paths = crate::state::PersonaPaths::new(&project);
    let (jobs, why) = match (args.suite.jobs, args.no_contain) {
        // The project's own settings file is wired: one run at a time (and the lock says so).
        (_, true) => (
            1,
            "--no-contain: each run wires the project's settings, so the runs go one at a time"
                .to_owned(),
        ),
        (Some(n), false) => (n.get(), "--jobs".to_owned()),
        (None, false) => {
            let (cores, available) = jobs::machine();
            jobs::default_jobs(pairs.len(), cores, available)
        }
    };
    warm_harnesses(args, &pairs).map_err(Failure::config)?;
    let out = Progress::new(args.json, args.quiet, pairs.len());
    out.started(&pairs, listed, args.suite.partition.as_ref(), jobs, &why);
    let passthrough = args
        .matches
        .as_ref()
        .map(child::passthrough)
        .unwrap_or_default();
    let suite_id = new_suite_id();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = std::time::Instant::now();
    let results = rt.block_on(schedule(
        &pairs,
        &suite_id,
        &passthrough,
        jobs,
        args.suite.attempts,
        &out,
    ))?;
    let code = crate::exit::RunExit::worst(results.iter().map(PairResult::exit_code));
    let written = results::write(&paths, args.junit.as_deref(), &results);
    out.finished(&results, started.elapsed(), &written);
    Ok(ExitCode::from(code))
}

mod results;

/// Finds each harness of the suite and learns what its runs would each learn the same way
/// (the box's trial, Codex's model catalog, cached by `crate::cache`): once, before any run, so that runs
/// started together do not all probe at once, and a harness that cannot run stops the suite
/// here (exit 2) rather than failing every one of its runs.
fn warm_harnesses(args: &RunArgs, pairs: &[Pair]) -> anyhow::Result<()> {
    // The box's trial (and its listing of /etc), cached the same way: runs started together
    // would each build a trial box at once.
    crate::sandbox::for_run(args.no_contain)?;
    let mut done = Vec::new();
    for kind in pairs.iter().map(|p| p.harness) {
        if done.contains(&kind) {
            continue;
        }
        done.push(kind);
        let given = crate::cli::suite::harness_bin(&args.harness_bin, kind);
        let wanted = given.map_or_else(|| PathBuf::from(kind.as_str()), PathBuf::from);
        let bin = crate::os::harness_executable(&wanted, given.is_some())?;
        crate::harness::model_catalog(kind, &bin)
            .map_err(|why| anyhow::anyhow!("refused: {why}"))?;
    }
    Ok(())
}

/// A suite's id: like a run's, the start time and this process's pid.
fn new_suite_id() -> String {
    format!("suite-{}", crate::state::new_run_id())
}

/// Runs the pairs, `jobs` at a time, trying each up to `attempts` times.
async fn schedule(
    pairs: &[Pair],
    suite_id: &str,
    passthrough: &[std::ffi::OsString],
    jobs: usize,
    attempts: u32,
    out: &Progress,
) -> anyhow::Result<Vec<PairResult>> {
    let mut results: Vec<PairResult> = pairs
        .iter()
        .map(|p| PairResult {
            pair: p.clone(),
            attempts: Vec::new(),
        })
        .collect();
    let mut queue: std::collections::VecDeque<(usize, u32)> =
        (0..pairs.len()).map(|i| (i, 1)).collect();
    let pids = std::sync::Arc::new(Mutex::new(Vec::<u32>::new()));
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut running: JoinSet<(usize, Attempt)> = JoinSet::new();
    let mut stopping = false;
    loop {
        while running.len() < jobs && !stopping {
            let Some((i, n)) = queue.pop_front() else {
                break;
            };
            let (pair, id, pass, pids) = (
                pairs[i].clone(),
                suite_id.to_owned(),
                passthrough.to_vec(),
                pids.clone(),
            );
            let json = out.json();
            running.spawn(
                async move { (i, child::attempt(&pair, (&id, n), &pass, json, &pids).await) },
            );
        }
        if running.is_empty() {
            break;
        }
        let sig = tokio::select! {
            Some(done) = running.join_next() => {
                let (i, a) = done.context("a run's task panicked")?;
                let retry = a.retryable() && a.number < attempts && !stopping;
                out.run_finished(&results[i].pair, &a, attempts, retry);
                if retry {
                    // First in line: its result is what the suite waits on.
                    queue.push_front((i, a.number + 1));
                }
                results[i].attempts.push(a);
                None
            }
            _ = int.recv() => Some(libc::SIGINT),
            _ = term.recv() => Some(libc::SIGTERM),
            _ = hup.recv() => Some(libc::SIGHUP),
            _ = tick.tick() => { out.tick(running.len()); None }
        };
        if let Some(sig) = sig {
            if !stopping {
                out.stopping(running.len(), queue.len());
            }
            stopping = true;
            for pid in pids.lock().expect("not poisoned").iter() {
                crate::os::signal_process(*pid, sig);
            }
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(outcome: &str, code: u8) -> Attempt {
        Attempt {
            number: 1,
            run_id: None,
            run_dir: None,
            outcome: outcome.into(),
            exit_code: code,
            duration: std::time::Duration::ZERO,
            usage: None,
            reason: None,
            stderr: Vec::new(),
        }
    }

    #[test]
    fn a_pair_that_passes_after_failing_is_flaky() {
        let pair = Pair {
            flow: PathBuf::from("/f.md"),
            name: "f".into(),
            harness: crate::harness::Harness::Codex,
        };
        let mut r = PairResult {
            pair,
            attempts: vec![],
        };
        assert_eq!((r.status(), r.exit_code()), ("not run", 3));
        r.attempts.push(attempt("failed", 6));
        assert_eq!((r.status(), r.exit_code()), ("failed", 6));
        r.attempts.push(attempt("clean", 0));
        assert_eq!((r.status(), r.exit_code()), ("flaky", 0));
        r.attempts.remove(0);
        assert_eq!(r.status(), "passed");
    }
}
