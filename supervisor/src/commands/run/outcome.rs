//! How a run ended, decided from what supervision saw: a pure function, unit-tested.

use std::process::ExitStatus;
use std::time::Duration;

use crate::state::RunOutcome;

/// A signal that asks the supervisor to stop the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Int,
    Term,
    Hup,
}

impl Signal {
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
            Signal::Hup => "SIGHUP",
        }
    }
}

/// Why the worker is being stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The first violation, as `#<seq> <tool>: <rule>`.
    Violation(String),
    /// `--timeout` passed; the cause says what the run was waiting for.
    Timeout(Duration, String),
    Signal(Signal),
    /// `max_denials_in_a_row` denials with no allowed action between: the last reason, how many.
    Stuck(String, u32),
    /// The boxed worker hit a limit: which (`the worker's processes reached --max-procs 512`).
    OverLimit(String),
    /// The run went over a budget: which (`tokens reached --max-tokens 200000`).
    OverBudget(String),
    /// The persona repeated one call: which, and how many times.
    Looping(String),
    /// The model endpoint refused the harness or could not be reached: the cause, with the
    /// endpoint's host, the status and what to do.
    Model(String),
}

/// The finding (and the reason) of a stuck run: `stuck at a wall: <reason> ×N`.
pub fn stuck_text(reason: &str, n: u32) -> String {
    format!("stuck at a wall: {reason} ×{n}")
}

/// What supervision saw by the time the worker's group is gone.
#[derive(Debug, Clone, Copy)]
pub struct Ended<'a> {
    pub violations: u64,
    /// Why the supervisor stopped the worker, if it did.
    pub stop: Option<&'a Stop>,
    /// The worker's exit status; `None` when it could not be waited for.
    pub status: Option<&'a ExitStatus>,
    /// A process the worker started held its stdout after it exited (and was killed).
    pub leaked: bool,
    /// The end of the worker's stderr.
    pub stderr_tail: &'a [u8],
    /// Why the app failed the flow, whatever else happened: a finding at or above `fail_on`,
    /// `finish` with the goal not reached.
    pub app_failed: &'a [String],
    /// Expectations unmet: a failure of the app only for a run the persona saw through.
    pub unmet: &'a [String],
}

/// The outcome and the reason run.json and the summary give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub outcome: RunOutcome,
    pub reason: Option<String>,
    /// For a timeout: what the run was waiting for.
    pub cause: Option<String>,
}

/// Violations win over everything (the bound was broken, whatever happened next); then the
/// supervisor's own reason for stopping; then the worker's exit status.
pub fn classify(end: &Ended<'_>) -> Classified {
    let cause = match end.stop {
        Some(Stop::Timeout(_, c)) if end.violations == 0 => Some(c.clone()),
        _ => None,
    };
    let failed = |causes: &[String]| (RunOutcome::Failed, Some(causes.join("; ")));
    let (outcome, reason) = if end.violations > 0 {
        let why = match end.stop {
            Some(Stop::Violation(v)) => v.clone(),
            _ => "violation".into(),
        };
        (RunOutcome::Violated, Some(why))
    } else if let Some(Stop::Signal(s)) = end.stop {
        // Stopped by its user: no verdict on the app is complete.
        (RunOutcome::Interrupted, Some(s.as_str().to_owned()))
    } else if !end.app_failed.is_empty() {
        // The persona said the app failed: that stands however the run went on.
        failed(end.app_failed)
    } else {
        match end.stop {
            Some(Stop::Timeout(d, cause)) => (
                RunOutcome::TimedOut,
                Some(format!(
                    "timed out after {}: {cause}",
                    humantime::format_duration(*d)
                )),
            ),
            Some(Stop::Stuck(r, n)) => (RunOutcome::Stuck, Some(stuck_text(r, *n))),
            Some(Stop::OverLimit(why)) => (RunOutcome::OverLimit, Some(why.clone())),
            Some(Stop::OverBudget(why)) => (RunOutcome::OverBudget, Some(why.clone())),
            Some(Stop::Looping(why)) => (RunOutcome::Looping, Some(why.clone())),
            Some(Stop::Model(why)) => (RunOutcome::ModelFailed, Some(why.clone())),
            Some(Stop::Signal(s)) => (RunOutcome::Interrupted, Some(s.as_str().to_owned())),
            Some(Stop::Violation(v)) => (RunOutcome::Violated, Some(v.clone())),
            None => match end.status {
                Some(s) if s.success() && !end.unmet.is_empty() => failed(end.unmet),
                Some(s) if s.success() => (RunOutcome::Clean, None),
                Some(s) => (
                    RunOutcome::WorkerFailed,
                    Some(format!(
                        "worker {}{}",
                        crate::process::describe_status(s),
                        tail_hint(end.stderr_tail)
                    )),
                ),
                None => (RunOutcome::WorkerFailed, Some("worker lost".into())),
            },
        }
    };
    const LEAKED: &str = "a process the worker started held its output after it exited (killed)";
    let reason = match (reason, end.leaked) {
        (Some(r), true) => Some(format!("{r}; {LEAKED}")),
        (None, true) => Some(LEAKED.to_owned()),
        (r, false) => r,
    };
    Classified {
        outcome,
        reason,
        cause,
    }
}

/// The model's failure, said whole: the relay's cause (or, when nothing stopped the run, the
/// harness's own error: with no key Claude never asks the endpoint) with the harness's own
/// words in it, its error text or else the last line of its stderr. `advice`: what to do.
/// Returns the stop to classify by; any other stop is kept as it is.
pub fn model_stop(
    stop: Option<Stop>,
    harness_failed: Option<&str>,
    stderr_tail: &[u8],
    advice: &crate::sandbox::Advice,
) -> Option<Stop> {
    let said = harness_failed
        .map(|t| crate::redact::strip_urls(t.trim()))
        .filter(|t| !t.is_empty())
        .or_else(|| tail_hint(stderr_tail).strip_prefix(": ").map(str::to_owned));
    match stop {
        Some(Stop::Model(cause)) => Some(Stop::Model(match said {
            None => cause,
            Some(said) => {
                let (what, hint) = cause
                    .split_once("\n(hint: ")
                    .map_or((cause.as_str(), None), |(w, h)| (w, Some(h)));
                let hint = hint.map_or_else(String::new, |h| format!("\n(hint: {h}"));
                format!("{what}; the harness said: {}{hint}", one_line(&said))
            }
        })),
        None => {
            let text = harness_failed?;
            let lower = text.to_ascii_lowercase();
            let fix = if [
                "login",
                "api key",
                "401",
                "403",
                "auth",
                "credential",
                "unauthorized",
            ]
            .iter()
            .any(|w| lower.contains(w))
            {
                advice.credentials.as_str()
            } else if lower.contains("404") || lower.contains("model") {
                advice.model.as_str()
            } else {
                ""
            };
            Some(Stop::Model(crate::sandbox::model_cause(
                &format!(
                    "the harness gave up on the model: {}",
                    one_line(&crate::redact::strip_urls(text.trim()))
                ),
                fix,
            )))
        }
        other => other,
    }
}

/// `text` on one line, at most 300 characters: a reason is one line.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &joined[..i]),
        None => joined,
    }
}

/// `: <last non-blank line of stderr>`, URLs stripped (the worker's stderr may carry one).
fn tail_hint(tail: &[u8]) -> String {
    let text = String::from_utf8_lossy(tail);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    if last.is_empty() {
        String::new()
    } else {
        format!(": {}", crate::redact::strip_urls(last.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    fn end<'a>(
        violations: u64,
        stop: Option<&'a Stop>,
        status: Option<&'a ExitStatus>,
    ) -> Ended<'a> {
        Ended {
            violations,
            stop,
            status,
            leaked: false,
            stderr_tail: b"",
            app_failed: &[],
            unmet: &[],
        }
    }

    #[test]
    fn a_worker_that_exits_zero_is_clean() {
        let ok = ExitStatus::from_raw(0);
        let c = classify(&end(0, None, Some(&ok)));
        assert_eq!(c.outcome, RunOutcome::Clean);
        assert_eq!(c.reason, None);
    }

    #[test]
    fn a_violation_wins_over_a_timeout_or_a_signal() {
        let killed = ExitStatus::from_raw(9);
        let v = Stop::Violation("#2 mcp__b__navigate: left_allowlist".into());
        let c = classify(&end(1, Some(&v), Some(&killed)));
        assert_eq!(c.outcome, RunOutcome::Violated);
        assert_eq!(
            c.reason.as_deref(),
            Some("#2 mcp__b__navigate: left_allowlist")
        );
        // The violation showed up only after the stop was a timeout: still violated.
        let t = Stop::Timeout(
            Duration::from_secs(90),
            "waiting for the model's reply".into(),
        );
        let c = classify(&end(2, Some(&t), Some(&killed)));
        assert_eq!(c.outcome, RunOutcome::Violated);
        assert_eq!(c.reason.as_deref(), Some("violation"));
        assert_eq!(c.outcome.exit_code(), 1);
    }

    #[test]
    fn timeouts_signals_and_failures_exit_3_with_their_reason() {
        let killed = ExitStatus::from_raw(15);
        let t = Stop::Timeout(
            Duration::from_secs(90),
            "tool mcp__b__navigate never returned (nothing for 1m 20s)".into(),
        );
        let c = classify(&end(0, Some(&t), Some(&killed)));
        assert_eq!(
            (c.outcome, c.reason.as_deref()),
            (
                RunOutcome::TimedOut,
                Some("timed out after 1m 30s: tool mcp__b__navigate never returned (nothing for 1m 20s)")
            )
        );
        assert_eq!(
            c.cause.as_deref(),
            Some("tool mcp__b__navigate never returned (nothing for 1m 20s)")
        );
        let s = Stop::Signal(Signal::Hup);
        let c = classify(&end(0, Some(&s), Some(&killed)));
        assert_eq!(
            (c.outcome, c.reason.as_deref()),
            (RunOutcome::Interrupted, Some("SIGHUP"))
        );
        let failed = ExitStatus::from_raw(3 << 8);
        let mut e = end(0, None, Some(&failed));
        e.stderr_tail = b"starting\nerror: cannot reach https://api.example/v1?key=s3cret\n\n";
        let c = classify(&e);
        assert_eq!(c.outcome, RunOutcome::WorkerFailed);
        let reason = c.reason.unwrap();
        assert!(
            reason.starts_with("worker exit 3: error: cannot reach "),
            "{reason}"
        );
        assert!(
            !reason.contains("s3cret"),
            "a URL from stderr leaked: {reason}"
        );
        let c = classify(&end(0, None, None));
        assert_eq!(
            (c.outcome, c.reason.as_deref()),
            (RunOutcome::WorkerFailed, Some("worker lost"))
        );
        for o in [
            RunOutcome::TimedOut,
            RunOutcome::Interrupted,
            RunOutcome::WorkerFailed,
        ] {
            assert_eq!(o.exit_code(), 3);
        }
    }

    #[test]
    fn a_leaked_output_holder_is_added_to_the_reason() {
        let ok = ExitStatus::from_raw(0);
        let mut e = end(0, None, Some(&ok));
        e.leaked = true;
        let c = classify(&e);
        assert_eq!(c.outcome, RunOutcome::Clean);
        assert_eq!(
            c.reason.as_deref(),
            Some("a process the worker started held its output after it exited (killed)")
        );
        let s = Stop::Signal(Signal::Int);
        e.stop = Some(&s);
        assert_eq!(
            classify(&e).reason.as_deref(),
            Some("SIGINT; a process the worker started held its output after it exited (killed)")
        );
    }

    /// A run the supervisor stopped as `stop` ends as `outcome` with `reason`, exit 5, unless a
    /// violation came first.
    fn stopped_with_exit_5(stop: &Stop, outcome: RunOutcome, reason: &str) {
        let killed = ExitStatus::from_raw(9);
        let c = classify(&end(0, Some(stop), Some(&killed)));
        assert_eq!(
            (c.outcome, c.reason.as_deref(), c.cause),
            (outcome, Some(reason), None)
        );
        assert_eq!(c.outcome.exit_code(), 5);
        assert_eq!(
            classify(&end(1, Some(stop), Some(&killed))).outcome,
            RunOutcome::Violated
        );
    }

    #[test]
    fn a_limit_hit_exits_5_unless_a_violation_came_first() {
        let why = "the worker's processes reached --max-procs 64";
        stopped_with_exit_5(&Stop::OverLimit(why.into()), RunOutcome::OverLimit, why);
        assert_eq!(RunOutcome::OverLimit.as_str(), "over_limit");
    }

    #[test]
    fn a_stuck_run_exits_5_unless_a_violation_came_first() {
        stopped_with_exit_5(
            &Stop::Stuck("outside_allowlist".into(), 5),
            RunOutcome::Stuck,
            "stuck at a wall: outside_allowlist ×5",
        );
    }

    #[test]
    fn the_apps_failure_is_exit_6_below_a_violation_and_a_signal() {
        let ok = ExitStatus::from_raw(0);
        let killed = ExitStatus::from_raw(15);
        let causes = ["major finding: the total is wrong".to_owned()];
        let unmet = ["never reached /checkout/review".to_owned()];
        fn with(
            v: u64,
            stop: Option<&Stop>,
            status: Option<&ExitStatus>,
            app_failed: &[String],
            unmet: &[String],
        ) -> Classified {
            classify(&Ended {
                app_failed,
                unmet,
                ..end(v, stop, status)
            })
        }
        let (causes, unmet) = (&causes[..], &unmet[..]);
        let c = with(0, None, Some(&ok), causes, unmet);
        assert_eq!(c.outcome, RunOutcome::Failed);
        assert_eq!(
            c.reason.as_deref(),
            Some("major finding: the total is wrong")
        );
        assert_eq!(c.outcome.exit_code(), 6);
        // An unmet expectation fails a run that finished, and only that.
        let c = with(0, None, Some(&ok), &[], unmet);
        assert_eq!(
            (c.outcome, c.reason.as_deref()),
            (RunOutcome::Failed, Some("never reached /checkout/review"))
        );
        let st = Stop::Stuck("outside_allowlist".into(), 5);
        assert_eq!(
            with(0, Some(&st), Some(&killed), &[], unmet).outcome,
            RunOutcome::Stuck
        );
        // A finding stands however the run went on, but not over a violation or its user's stop.
        assert_eq!(
            with(0, Some(&st), Some(&killed), causes, &[]).outcome,
            RunOutcome::Failed
        );
        assert_eq!(
            with(1, None, Some(&ok), causes, &[]).outcome,
            RunOutcome::Violated
        );
        let sig = Stop::Signal(Signal::Int);
        assert_eq!(
            with(0, Some(&sig), Some(&killed), causes, &[]).outcome,
            RunOutcome::Interrupted
        );
        let m = Stop::Model("the model endpoint api.anthropic.com answered 401".into());
        let c = with(0, Some(&m), Some(&killed), &[], unmet);
        assert_eq!(
            (c.outcome, c.outcome.exit_code()),
            (RunOutcome::ModelFailed, 3)
        );
        for (stop, outcome) in [
            (Stop::OverBudget("tokens".into()), RunOutcome::OverBudget),
            (Stop::Looping("same call".into()), RunOutcome::Looping),
        ] {
            let c = with(0, Some(&stop), Some(&killed), &[], &[]);
            assert_eq!((c.outcome, c.outcome.exit_code()), (outcome, 5));
        }
    }

    #[test]
    fn the_models_failure_carries_the_harnesss_words_and_never_drops_another_stop() {
        let advice = crate::sandbox::Advice {
            credentials: "set KEY".into(),
            model: "check MODEL".into(),
            endpoint: "check URL".into(),
        };
        let relay =
            Stop::Model("the model endpoint h answered 401 Unauthorized\n(hint: set KEY)".into());
        assert_eq!(
            model_stop(Some(relay.clone()), Some("Invalid API key · Please run /login"), b"", &advice),
            Some(Stop::Model("the model endpoint h answered 401 Unauthorized; the harness said: Invalid API key · Please run /login\n(hint: set KEY)".into()))
        );
        // No result text: the end of its stderr, URLs as hosts.
        assert_eq!(
            model_stop(Some(relay.clone()), None, b"Reconnecting 2/5\nerror: https://api.example/v1 401\n", &advice),
            Some(Stop::Model("the model endpoint h answered 401 Unauthorized; the harness said: error: <api.example> 401\n(hint: set KEY)".into()))
        );
        assert_eq!(
            model_stop(Some(relay.clone()), None, b"", &advice),
            Some(relay)
        );
        // Nothing stopped the run, the harness gave up: the model failed, with the hint that fits.
        assert_eq!(
            model_stop(None, Some("Not logged in · Please run /login"), b"", &advice),
            Some(Stop::Model("the harness gave up on the model: Not logged in · Please run /login\n(hint: set KEY)".into()))
        );
        assert_eq!(
            model_stop(None, Some("API Error: 404 model: nope"), b"", &advice),
            Some(Stop::Model(
                "the harness gave up on the model: API Error: 404 model: nope\n(hint: check MODEL)"
                    .into()
            ))
        );
        assert_eq!(model_stop(None, None, b"boom", &advice), None);
        let t = Stop::Signal(Signal::Int);
        assert_eq!(
            model_stop(Some(t.clone()), Some("Not logged in"), b"", &advice),
            Some(t)
        );
    }
}
