//! `leopold-suite-bench`: a suite of 8 boxed real-browser runs (4 flows × both real CLIs)
//! against the staging shop, the scripted model answering each turn after 2 s, with `--jobs 8`
//! against `--jobs 1`, alternating (BENCHMARKS.md#suites); and the peak memory of one boxed
//! real-browser run, to size `--jobs` by.
//!
//! The memory is the proportional set size (PSS: shared pages split between the processes that
//! share them) summed over the run's whole process tree (supervisor, box, harness, gateway,
//! Playwright MCP, Chromium), sampled every 50 ms; its highest sum is the peak. RSS would count
//! Chromium's shared pages once per process.
//!
//! ```text
//! leopold-suite-bench [--rounds N]
//! ```
//! Needs `LEOPOLD_BIN`, `LEOPOLD_CLAUDE_BIN`, `LEOPOLD_CODEX_BIN`, the browser
//! (`scripts/bench-suite.sh` sets them).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::time::{Duration, Instant};

use leopold_tests::median;
use leopold_tests::script::Turn;
use leopold_tests::staging::{nav, AppOpts};
use leopold_tests::suite::{finish, Suite};

const FLOWS: [&str; 4] = ["browse", "cart", "review", "search"];

fn turns() -> Vec<Turn> {
    [nav("/"), nav("/cart"), finish()]
        .into_iter()
        .map(|t| Turn {
            delay_ms: 2000,
            ..t
        })
        .collect()
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let rounds = match (args.next().as_deref(), args.next()) {
        (None, _) => 2,
        (Some("--rounds"), Some(n)) => match n.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => return usage(),
        },
        _ => return usage(),
    };
    let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (i, jobs) in ["8", "1"].iter().enumerate() {
            match suite(jobs) {
                Ok(t) => times[i].push(t),
                Err(e) => {
                    eprintln!("--jobs {jobs}: {e:#}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let (eight, one) = (median(&mut times[0]), median(&mut times[1]));
    println!("| suite of 8 runs | median | min | max | ratio to --jobs 1 |\n|---|---|---|---|---|");
    for (name, t, m) in [
        ("--jobs 8", &times[0], eight),
        ("--jobs 1 (peer)", &times[1], one),
    ] {
        println!(
            "| {name} | {:.1} s | {:.1} s | {:.1} s | {:.2}x |",
            m.as_secs_f64(),
            t.iter().min().unwrap().as_secs_f64(),
            t.iter().max().unwrap().as_secs_f64(),
            m.as_secs_f64() / one.as_secs_f64()
        );
    }
    for h in ["claude", "codex"] {
        match peak_of_one(h) {
            Ok(kib) => println!(
                "peak memory of one boxed real-browser run ({h}): {:.0} MiB PSS",
                kib as f64 / 1024.0
            ),
            Err(e) => {
                eprintln!("peak memory ({h}): {e:#}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: leopold-suite-bench [--rounds N]");
    ExitCode::from(2)
}

/// One suite of 8 with `--jobs jobs`: its wall time, after checking every run was clean.
fn suite(jobs: &str) -> anyhow::Result<Duration> {
    let s = Suite::new(AppOpts::default(), &FLOWS, "", turns())
        .ok_or_else(|| anyhow::anyhow!("a CLI or the browser is missing"))?;
    let run = s.run(&["flows", "--harness", "all", "--jobs", jobs, "--quiet"]);
    anyhow::ensure!(run.status.success(), "the suite failed:\n{run}");
    anyhow::ensure!(run.stdout.contains("8 passed"), "not 8 passed:\n{run}");
    Ok(run.elapsed)
}

/// The highest PSS sum, in KiB, of one boxed real-browser run's process tree.
fn peak_of_one(harness: &str) -> anyhow::Result<u64> {
    let s = Suite::new(AppOpts::default(), &FLOWS[..1], "", turns())
        .ok_or_else(|| anyhow::anyhow!("a CLI or the browser is missing"))?;
    let mut cmd = s.cmd(&["flows/browse.md", "--harness", harness, "--quiet"]);
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let root = child.id();
    let started = Instant::now();
    let mut peak = 0u64;
    while child.try_wait()?.is_none() {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(180),
            "the run took over 180 s"
        );
        peak = peak.max(tree(root).iter().map(|p| pss_kib(*p)).sum());
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(peak)
}

/// `root` and every process below it.
fn tree(root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        out.extend(leopold_tests::fake_run::children(out[i]));
        i += 1;
    }
    out
}

/// A process's PSS in KiB (0 once it is gone).
fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
