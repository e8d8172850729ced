//! One attempt of one pair: a `leopold persona run` of its own, a child process with the flags
//! the suite was given, read through its `--json` events.
//!
//! A run of its own, not a task of this process: each keeps its whole lifecycle (lock, state,
//! box, gateway, teardown) exactly as a single run does, and a crash of one is recovered like a
//! crash of one run. The kernel sends it SIGTERM if the suite dies, so it stops its worker and
//! unwires as on Ctrl-C.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory as _};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use super::list::Pair;
use crate::output::{eline, outln};
use crate::usage::Usage;

/// `persona run`'s arguments a suite decides for each run itself (or keeps for itself).
const SUITE_ONLY: &[&str] = &[
    "flows",
    "harness",
    "jobs",
    "attempts",
    "partition",
    "suite_member",
    "json",
    "quiet",
    "junit",
    "verbose",
];

/// How many of a run's stderr lines are kept, to show when it ended without a verdict.
const STDERR_TAIL: usize = 40;

/// How one attempt ended.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// 1-based.
    pub number: u32,
    pub run_id: Option<String>,
    pub run_dir: Option<PathBuf>,
    /// The run's outcome (`clean`, `failed`, …), or, for a run that ended before it had one,
    /// `setup_failed`, `busy` or `crashed`.
    pub outcome: String,
    pub exit_code: u8,
    pub duration: Duration,
    pub usage: Option<Usage>,
    /// Why it stopped, or the error that ended it.
    pub reason: Option<String>,
    /// The run's last stderr lines, when it ended without a `run_ended` event.
    pub stderr: Vec<String>,
}

impl Attempt {
    /// Whether a later attempt may pass: the app failed the flow, the persona got stuck, or
    /// the worker failed or ran out of time. Never a violation: a bound broken once is the
    /// finding, however a retry ends.
    pub fn retryable(&self) -> bool {
        matches!(
            self.outcome.as_str(),
            "failed" | "stuck" | "worker_failed" | "timed_out"
        )
    }

    pub fn passed(&self) -> bool {
        self.outcome == "clean"
    }
}

/// The flags given to the suite that each of its runs gets too, as given: every `persona run`
/// argument set on the command line but [`SUITE_ONLY`]'s, and the harness arguments after `--`.
/// Read from clap's own record of the command line, so a flag added to `persona run` reaches
/// a suite's runs without being listed here.
pub fn passthrough(matches: &ArgMatches) -> Vec<OsString> {
    let cli = crate::cli::Cli::command();
    let run = cli
        .find_subcommand("persona")
        .and_then(|p| p.find_subcommand("run"))
        .expect("`persona run` is a command");
    let mut out: Vec<OsString> = Vec::new();
    let mut after_dashes: Vec<OsString> = Vec::new();
    for arg in run.get_arguments() {
        let id = arg.get_id().as_str();
        if SUITE_ONLY.contains(&id) || matches.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let raw: Vec<OsString> = matches
            .get_raw(id)
            .map(|vals| vals.map(OsString::from).collect())
            .unwrap_or_default();
        match arg.get_long() {
            None => {
                after_dashes.push("--".into());
                after_dashes.extend(raw);
            }
            Some(long) if arg.get_action().takes_values() => {
                // `--flag=value`: a value that starts with `-` stays a value.
                out.extend(raw.into_iter().map(|v| {
                    let mut s = OsString::from(format!("--{long}="));
                    s.push(v);
                    s
                }));
            }
            Some(long) => out.push(format!("--{long}").into()),
        }
    }
    out.extend(after_dashes);
    out
}

/// Runs one attempt to its end. `json`: pass the run's events through as they come.
pub async fn attempt(
    pair: &Pair,
    member: (&str, u32),
    passthrough: &[OsString],
    json: bool,
    pids: &std::sync::Mutex<Vec<u32>>,
) -> Attempt {
    let started = Instant::now();
    let mut out = Attempt {
        number: member.1,
        run_id: None,
        run_dir: None,
        outcome: "crashed".into(),
        exit_code: crate::exit::RunExit::WORKER_FAILED,
        duration: Duration::ZERO,
        usage: None,
        reason: None,
        stderr: Vec::new(),
    };
    let mut cmd = match std::env::current_exe() {
        Ok(exe) => std::process::Command::new(exe),
        Err(e) => {
            out.reason = Some(format!("cannot find the leopold executable: {e}"));
            return out;
        }
    };
    cmd.arg("persona")
        .arg("run")
        .arg(&pair.flow)
        .arg(format!("--harness={}", pair.harness))
        .arg("--json")
        .arg(format!("--suite-member={}:{}", member.0, member.1))
        .args(passthrough)
        // The suite writes one step summary for all its runs, and times itself.
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove(crate::commands::run::TIMINGS_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::os::die_with_parent(&mut cmd, libc::SIGTERM);
    let mut child = match tokio::process::Command::from(cmd).spawn() {
        Ok(c) => c,
        Err(e) => {
            out.reason = Some(format!("cannot start its run: {e}"));
            return out;
        }
    };
    let pid = child.id();
    if let Some(pid) = pid {
        pids.lock().expect("not poisoned").push(pid);
    }
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let read_err = async {
        let mut lines = BufReader::new(stderr).lines();
        let mut tail: Vec<String> = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            // GitHub's annotations are for the job's log as they come.
            if line.starts_with("::") {
                eline(format_args!("{line}"));
            }
            if tail.len() == STDERR_TAIL {
                tail.remove(0);
            }
            tail.push(line);
        }
        tail
    };
    let read_out = async {
        let mut lines = BufReader::new(stdout).lines();
        let mut ended = false;
        while let Ok(Some(line)) = lines.next_line().await {
            if json {
                outln!("{line}");
            }
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                ended |= read_event(&v, &mut out);
            }
        }
        ended
    };
    let (tail, ended) = tokio::join!(read_err, read_out);
    let status = child.wait().await;
    if let Some(pid) = pid {
        pids.lock().expect("not poisoned").retain(|p| *p != pid);
    }
    out.duration = started.elapsed();
    if !ended {
        let code = status.ok().and_then(|s| s.code());
        (out.outcome, out.exit_code) = match code {
            Some(2) => ("setup_failed".into(), 2),
            Some(4) => ("busy".into(), 4),
            _ => ("crashed".into(), crate::exit::RunExit::WORKER_FAILED),
        };
        out.stderr = tail;
    }
    out
}

/// Takes what the suite needs from one `--json` event; true for `run_ended`.
fn read_event(v: &Value, out: &mut Attempt) -> bool {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match (v.get("event").and_then(Value::as_str), text("type")) {
        (Some("run_started"), _) => {
            out.run_id = text("run_id");
            out.run_dir = text("run_dir").map(PathBuf::from);
            false
        }
        (Some("run_ended"), _) => {
            out.run_id = text("run_id").or(out.run_id.take());
            out.run_dir = text("run_dir").map(PathBuf::from).or(out.run_dir.take());
            out.outcome = text("outcome").unwrap_or_else(|| "crashed".into());
            out.exit_code = v
                .get("exit_code")
                .and_then(Value::as_u64)
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(crate::exit::RunExit::WORKER_FAILED);
            out.reason = text("reason");
            out.usage = v
                .get("usage")
                .and_then(|u| serde_json::from_value(u.clone()).ok());
            true
        }
        (None, Some(t)) if t == "error" => {
            out.reason = text("message");
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(args: &[&str]) -> ArgMatches {
        let m = crate::cli::Cli::command()
            .try_get_matches_from(["leopold", "persona", "run"].iter().chain(args))
            .unwrap();
        m.subcommand_matches("persona")
            .and_then(|p| p.subcommand_matches("run"))
            .unwrap()
            .clone()
    }

    #[test]
    fn a_suites_runs_get_every_flag_but_the_suites_own() {
        let m = matches(&[
            "flows/",
            "--harness",
            "claude,codex",
            "--jobs",
            "4",
            "--attempts=2",
            "--json",
            "--junit",
            "suite.xml",
            "--timeout",
            "90s",
            "--ca-cert",
            "a.pem",
            "--ca-cert",
            "b.pem",
            "--no-contain",
            "--max-memory",
            "2GiB",
            "--model=-odd",
            "--",
            "--verbose",
            "x",
        ]);
        let got: Vec<String> = passthrough(&m)
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            got,
            [
                "--timeout=90s",
                "--ca-cert=a.pem",
                "--ca-cert=b.pem",
                "--no-contain",
                "--max-memory=2GiB",
                "--model=-odd",
                "--",
                "--verbose",
                "x"
            ]
        );
        // A default is not passed: the run takes its own.
        assert!(passthrough(&matches(&["f.md", "--harness", "codex"])).is_empty());
    }

    #[test]
    fn every_run_flag_is_passed_or_the_suites_own() {
        // Each argument of `persona run` round-trips through `passthrough`, unless the suite
        // decides it per run: a new flag cannot be silently dropped from a suite's runs.
        let cli = crate::cli::Cli::command();
        let run = cli
            .find_subcommand("persona")
            .and_then(|p| p.find_subcommand("run"))
            .unwrap();
        for arg in run.get_arguments() {
            let id = arg.get_id().as_str();
            if SUITE_ONLY.contains(&id) || arg.get_long().is_none() || arg.is_hide_set() {
                continue;
            }
            let long = arg.get_long().unwrap();
            // A value each flag's parser takes.
            let value = match id {
                "timeout" => "90s".to_owned(),
                "max_memory" | "max_scratch" | "max_records" => "1GiB".to_owned(),
                _ => arg
                    .get_possible_values()
                    .first()
                    .map(|v| v.get_name().to_owned())
                    .unwrap_or_else(|| "1".into()),
            };
            let given = if arg.get_action().takes_values() {
                format!("--{long}={value}")
            } else {
                format!("--{long}")
            };
            let m = matches(&["f.md", "--harness", "codex", &given]);
            let got = passthrough(&m);
            assert_eq!(got, [OsString::from(&given)], "{id}");
        }
    }

    #[test]
    fn a_runs_events_give_its_end() {
        let mut a = Attempt {
            number: 1,
            run_id: None,
            run_dir: None,
            outcome: "crashed".into(),
            exit_code: 3,
            duration: Duration::ZERO,
            usage: None,
            reason: None,
            stderr: Vec::new(),
        };
        let started = serde_json::json!({"event":"run_started","run_id":"r1","run_dir":"/p/r1"});
        assert!(!read_event(&started, &mut a));
        let ended = serde_json::json!({"event":"run_ended","run_id":"r1","outcome":"failed","exit_code":6,"reason":null,
            "usage":{"turns":3,"input_tokens":10,"output_tokens":5,"cache_read_tokens":0,"cache_write_tokens":0}});
        assert!(read_event(&ended, &mut a));
        assert_eq!((a.outcome.as_str(), a.exit_code), ("failed", 6));
        assert_eq!(a.run_dir.as_deref(), Some(std::path::Path::new("/p/r1")));
        assert_eq!(a.usage.as_ref().unwrap().tokens(), 15);
        assert!(Attempt {
            outcome: "failed".into(),
            ..a.clone()
        }
        .retryable());
        assert!(!Attempt {
            outcome: "violated".into(),
            ..a.clone()
        }
        .retryable());
    }
}
