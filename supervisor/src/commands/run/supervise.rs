//! Step 7: the worker's event stream read line by line, journaled and validated live, with the
//! worker stopped on a violation, a timeout or a signal.

use std::time::Duration;

use leopold_journal::lines::LineBuf;
use tokio::io::AsyncBufReadExt as _;
use tokio::io::AsyncReadExt as _;
use tokio::signal::unix::{signal, SignalKind};

use super::outcome::{Signal, Stop};
use super::plan::Plan;
use super::progress::Reporter;
use super::Timings;
use crate::observe::{Batch, Observer, Waiting};
use crate::state::{Counts, Finding};

/// Longest stream line kept; longer lines are skipped and noted (a Playwright snapshot is far
/// below this).
const MAX_LINE: usize = 16 * 1024 * 1024;
/// After the worker exits, how long its stdout may stay open (a grandchild holding it) before the
/// group is killed.
const LEAK_TIMEOUT: Duration = Duration::from_millis(500);
/// After this long without an event the progress says what the run is waiting for (and again
/// each time as long again passes).
const QUIET_NOTE: Duration = Duration::from_secs(30);
/// Tests: the quiet interval in milliseconds instead of [`QUIET_NOTE`].
const QUIET_NOTE_ENV: &str = "__LEOPOLD_QUIET_NOTE_MS";
/// Most walls kept for run.json; past it they are counted (the journal holds every one).
const MAX_FINDINGS: usize = 1000;
/// How often the guard's own denials are looked for between stream lines (Codex: a denied call
/// prints nothing).
const POLL: Duration = Duration::from_millis(250);
/// Once the model alarm is tripped, how long the harness has to say so in its own words and
/// exit before it is stopped: its text goes into the cause (a harness that retries is stopped
/// all the same, well within the 10 s a failing endpoint may cost).
const MODEL_GRACE: Duration = Duration::from_secs(2);

/// SIGINT, SIGTERM and SIGHUP, handled from the start of the lifecycle: a Ctrl-C during setup
/// must still unwire.
pub struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal.
    pub async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::Int,
            _ = self.term.recv() => Signal::Term,
            _ = self.hup.recv() => Signal::Hup,
        }
    }

    /// A signal that already arrived, without waiting.
    pub async fn pending(&mut self) -> Option<Signal> {
        tokio::task::yield_now().await;
        tokio::select! {
            biased;
            s = self.recv() => Some(s),
            _ = std::future::ready(()) => None,
        }
    }
}

/// What supervision saw.
pub struct Supervised {
    pub status: Option<std::process::ExitStatus>,
    pub stop: Option<Stop>,
    pub counts: Counts,
    /// The walls the persona hit, in order (at most [`MAX_FINDINGS`]), then the stuck stop.
    pub findings: Vec<Finding>,
    /// Walls past [`MAX_FINDINGS`].
    pub findings_not_kept: u64,
    pub leaked: bool,
    pub stderr_tail: Vec<u8>,
}

impl Supervised {
    /// The gateway's record disagrees with the harness's stream (docs/security.md#the-gateway):
    /// each
    /// disagreement is a violation finding, and the first is why the run is `violated`, unless a
    /// violation in the stream itself stopped the worker first.
    pub fn disagreements(&mut self, found: &[crate::gateway::Disagreement]) {
        for d in found {
            let f = Finding {
                kind: "violation".into(),
                seq: d.journal_seq,
                tool: None,
                hosts: Vec::new(),
                label: None,
                reason: format!("gateway record: {d}"),
            };
            if self.findings.len() < MAX_FINDINGS {
                self.findings.push(f);
            } else {
                self.findings_not_kept += 1;
            }
        }
        if let Some(first) = found.first() {
            if !matches!(self.stop, Some(Stop::Violation(_))) {
                self.stop = Some(Stop::Violation(format!(
                    "the gateway's record disagrees with the harness's stream: {first}"
                )));
            }
        }
    }
}

enum LineMsg {
    Line(u64, String),
    TooLong(u64),
}

/// Reads lines of at most `MAX_LINE` bytes; never blocks the worker longer than the channel's
/// backpressure.
async fn read_lines(stdout: tokio::process::ChildStdout, tx: tokio::sync::mpsc::Sender<LineMsg>) {
    let mut r = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
    let mut line = LineBuf::new(MAX_LINE);
    while let Ok(avail) = r.fill_buf().await {
        let end = avail.is_empty();
        let (used, ended) = line.push(avail);
        r.consume(used);
        if ended {
            let l = line.line();
            let msg = match l.bytes {
                Some(bytes) => LineMsg::Line(l.no, String::from_utf8_lossy(bytes).into_owned()),
                None => LineMsg::TooLong(l.no),
            };
            if tx.send(msg).await.is_err() {
                break;
            }
        }
        if end {
            break;
        }
    }
}

/// Drains stderr so the worker never blocks on it; keeps the last few KiB for the error message.
async fn drain_tail(mut stderr: tokio::process::ChildStderr) -> Vec<u8> {
    const KEEP: usize = 8 * 1024;
    let mut tail = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(k) => {
                tail.extend_from_slice(&chunk[..k]);
                if tail.len() > KEEP * 2 {
                    tail.drain(..tail.len() - KEEP);
                }
            }
        }
    }
    if tail.len() > KEEP {
        tail.drain(..tail.len() - KEEP);
    }
    tail
}

/// Where the stop sequence stands: SIGTERM to the group, SIGKILL `grace` later; a second request
/// (or zero grace) is SIGKILL at once.
struct Stopper {
    pgid: u32,
    grace: Duration,
    stop: Option<Stop>,
    kill_at: Option<tokio::time::Instant>,
}

impl Stopper {
    /// A violation was journaled: stop the worker (said once, at the first).
    fn violation(&mut self, v: String, out: &Reporter) {
        if !matches!(self.stop, Some(Stop::Violation(_))) {
            out.info(&format!("leopold: stopping the worker: {v}"));
        }
        self.begin(Stop::Violation(v));
    }

    /// The same wall too many times: stop the worker (unless it is already being stopped).
    fn stuck(&mut self, reason: String, n: u32, out: &Reporter) {
        if self.stop.is_none() {
            out.info(&format!(
                "leopold: stopping the worker: {}",
                super::outcome::stuck_text(&reason, n)
            ));
            self.begin(Stop::Stuck(reason, n));
        }
    }

    /// SIGINT, SIGTERM or SIGHUP: the first starts the stop; a second skips the grace.
    fn signal(&mut self, sig: Signal, out: &Reporter) {
        if self.stop.is_some() {
            let _ = crate::os::signal_group(self.pgid, libc::SIGKILL);
        } else {
            out.info(&format!("leopold: {}: stopping the worker", sig.as_str()));
            self.begin(Stop::Signal(sig));
        }
    }

    /// A limit, a budget, a loop or the model endpoint: stop the worker, saying `said` (unless
    /// it is already being stopped).
    fn halt(&mut self, why: Stop, said: &str, out: &Reporter) {
        if self.stop.is_none() {
            out.info(&format!("leopold: stopping the worker: {said}"));
            self.begin(why);
        }
    }

    /// A budget passed or a loop: stopped as [`Stopper::halt`] does, saying the reason.
    fn halt_for(&mut self, why: Stop, out: &Reporter) {
        let said = match &why {
            Stop::OverBudget(w) | Stop::Looping(w) => w.clone(),
            other => format!("{other:?}"),
        };
        self.halt(why, &said, out);
    }

    fn begin(&mut self, why: Stop) {
        if self.stop.is_none() {
            self.stop = Some(why);
        }
        if self.grace.is_zero() {
            let _ = crate::os::signal_group(self.pgid, libc::SIGKILL);
        } else if self.kill_at.is_none() {
            let _ = crate::os::signal_group(self.pgid, libc::SIGTERM);
            self.kill_at = Some(tokio::time::Instant::now() + self.grace);
        }
    }
}

/// One message of the reader through the journal; `None` once stdout is closed.
fn journal(msg: Option<LineMsg>, observer: &mut Observer, out: &Reporter) -> Option<Batch> {
    Some(match msg? {
        LineMsg::Line(n, line) => observer.line(n, &line).unwrap_or_else(|e| {
            out.warn(&format!("journal: {e:#}"));
            Batch::default()
        }),
        LineMsg::TooLong(n) => observer.overlong(n),
    })
}

pub async fn supervise(
    child: &mut tokio::process::Child,
    pgid: u32,
    observer: &mut Observer,
    plan: &Plan,
    out: &Reporter,
    signals: &mut Signals,
    timings: &mut Timings,
) -> Supervised {
    use tokio::time::{sleep_until, Instant as TInstant};
    let (tx, mut rx) = tokio::sync::mpsc::channel::<LineMsg>(256);
    let reader = child.stdout.take().map(|s| tokio::spawn(read_lines(s, tx)));
    let stderr_task = child.stderr.take().map(|s| tokio::spawn(drain_tail(s)));
    let mut counts = Counts::default();
    let mut stopper = Stopper {
        pgid,
        grace: plan.grace,
        stop: None,
        kill_at: None,
    };
    let mut status = None;
    let mut stdout_open = reader.is_some();
    let mut leak_at: Option<TInstant> = None;
    let mut abandon_at: Option<TInstant> = None;
    let mut leaked = false;
    let mut paused_mid_stream = false;
    let deadline = plan.timeout.map(|t| TInstant::now() + t);
    let far = TInstant::now() + Duration::from_secs(86400 * 365);
    let quiet = crate::knobs::var(QUIET_NOTE_ENV)
        .and_then(|v| v.parse().ok())
        .map_or(QUIET_NOTE, Duration::from_millis);
    let mut quiet_at = TInstant::now() + quiet;
    let mut walls = Walls::default();
    let max_in_a_row = plan.flow.max_denials_in_a_row;
    let mut watch = super::budget::Watch::new(&plan.budget, plan.flow.max_repeats);
    // A batch of actions, shown and weighed: a broken bound, too many walls in a row, a budget
    // passed or a loop stops the worker. Returns the actions counted so far.
    let mut weigh = |batch: &Batch, meter: &crate::meter::Meter, stopper: &mut Stopper| {
        if let Some(v) = out.batch(batch, &mut counts) {
            stopper.violation(v, out);
        }
        if let Some((reason, n)) = walls.add(batch, max_in_a_row) {
            stopper.stuck(reason, n, out);
        }
        if let Some(why) = watch.check(batch, meter) {
            stopper.halt_for(why, out);
        }
        counts.actions
    };
    let mut poll_at = TInstant::now() + POLL;
    let mut model_due: Option<TInstant> = None;

    while status.is_none() || stdout_open {
        tokio::select! {
            msg = rx.recv(), if stdout_open => {
                let Some(batch) = journal(msg, observer, out) else {
                    stdout_open = false;
                    continue;
                };
                quiet_at = TInstant::now() + quiet;
                let actions = weigh(&batch, observer.meter(), &mut stopper);
                if !paused_mid_stream && actions > 0 {
                    paused_mid_stream = true;
                    crate::commands::pause_point("mid-stream");
                }
            }
            st = child.wait(), if status.is_none() => {
                status = st.ok();
                timings.mark("worker_exit_seen");
                if stdout_open {
                    leak_at = Some(TInstant::now() + LEAK_TIMEOUT);
                }
            }
            sig = signals.recv() => stopper.signal(sig, out),
            why = plan.tripwire.wait(), if stopper.stop.is_none() && status.is_none() => {
                stopper.halt(Stop::OverLimit(why.clone()), &why, out);
            }
            _ = plan.model_alarm.wait(), if model_due.is_none() && stopper.stop.is_none() && status.is_none() => {
                model_due = Some(TInstant::now() + MODEL_GRACE);
            }
            _ = sleep_until(model_due.unwrap_or(far)), if model_due.is_some() && stopper.stop.is_none() && status.is_none() => {
                let why = plan.model_alarm.tripped().unwrap_or_default();
                // Its hint comes with the run's end, the harness's words added.
                let said = why.lines().next().unwrap_or_default().to_owned();
                stopper.halt(Stop::Model(why), &said, out);
            }
            _ = sleep_until(poll_at), if observer.polls() && status.is_none() => {
                poll_at = TInstant::now() + POLL;
                let batch = observer.poll().unwrap_or_else(|e| {
                    out.warn(&format!("journal: {e:#}"));
                    Batch::default()
                });
                if !batch.actions.is_empty() {
                    quiet_at = TInstant::now() + quiet;
                }
                weigh(&batch, observer.meter(), &mut stopper);
            }
            _ = sleep_until(quiet_at), if stopper.stop.is_none() && status.is_none() => {
                quiet_at = TInstant::now() + quiet;
                let (what, idle) = observer.waiting();
                out.waiting(&what, idle);
            }
            _ = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() && stopper.stop.is_none() && status.is_none() => {
                let t = plan.timeout.unwrap_or_default();
                let (what, idle) = observer.waiting();
                let cause = timeout_cause(&what, idle);
                out.info(&format!("leopold: timed out after {}: {cause}: stopping the worker", humantime::format_duration(t)));
                stopper.begin(Stop::Timeout(t, cause));
            }
            _ = sleep_until(stopper.kill_at.unwrap_or(far)), if stopper.kill_at.is_some() => {
                stopper.kill_at = None;
                let _ = crate::os::signal_group(pgid, libc::SIGKILL);
            }
            _ = sleep_until(leak_at.unwrap_or(far)), if leak_at.is_some() && stdout_open => {
                leak_at = None;
                leaked = true;
                let _ = crate::os::signal_group(pgid, libc::SIGKILL);
                abandon_at = Some(TInstant::now() + LEAK_TIMEOUT);
            }
            _ = sleep_until(abandon_at.unwrap_or(far)), if abandon_at.is_some() => {
                // A process outside the group (it changed its own group) still holds stdout.
                break;
            }
        }
    }
    // The leader is gone; whatever it left in its group goes too.
    let _ = crate::os::signal_group(pgid, libc::SIGKILL);
    if let Some(r) = reader {
        r.abort();
    }
    let fin = observer.finish().unwrap_or_else(|e| {
        out.warn(&format!("journal: {e:#}"));
        Batch::default()
    });
    let mut stop = stopper.stop;
    if stop.is_none() {
        // The kernel's answer to a limit may have ended the worker before the watch saw it.
        stop = plan.tripwire.check().map(Stop::OverLimit);
    }
    if stop.is_none() {
        // A harness that gives up on a refused key exits on its own, often before the alarm's
        // note reached the loop: the endpoint's answer is the cause, not the exit status.
        stop = plan.model_alarm.tripped().map(Stop::Model);
    }
    if let Some(v) = out.batch(&fin, &mut counts) {
        if stop.is_none() {
            stop = Some(Stop::Violation(v));
        }
    }
    let _ = walls.add(&fin, max_in_a_row);
    // The harness's own stop at its turn or spending limit, or totals past a budget at the end.
    if let Some(why) = watch.at_end(&fin, observer.meter()) {
        stop.get_or_insert(why);
    }
    if let Some(Stop::Stuck(reason, n)) = &stop {
        walls.findings.push(Finding {
            kind: "stuck".into(),
            seq: None,
            tool: None,
            hosts: Vec::new(),
            label: None,
            reason: super::outcome::stuck_text(reason, *n),
        });
    }
    let stderr_tail = match stderr_task {
        Some(t) => match tokio::time::timeout(Duration::from_millis(200), t).await {
            Ok(Ok(tail)) => tail,
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    Supervised {
        status,
        stop,
        counts,
        findings: walls.findings,
        findings_not_kept: walls.not_kept,
        leaked,
        stderr_tail,
    }
}

/// What a timeout's cause says: what the run was waiting for, and for how long nothing came.
pub fn timeout_cause(what: &Waiting, idle: Duration) -> String {
    let idle = humantime::format_duration(Duration::from_secs(idle.as_secs()));
    match what {
        Waiting::Model => format!("no reply from the model (nothing for {idle})"),
        Waiting::Tool(t) => format!("tool {t} never returned (nothing for {idle})"),
    }
}

/// The walls so far, and the current run of denials with no allowed action between.
#[derive(Debug, Default)]
struct Walls {
    findings: Vec<Finding>,
    not_kept: u64,
    in_a_row: u32,
    last_reason: String,
    /// The stuck stop was already asked for (it is asked once).
    tripped: bool,
}

impl Walls {
    /// Adds a batch's walls; returns `(reason, n)` the first time `max` denials come in a row.
    fn add(&mut self, batch: &Batch, max: u32) -> Option<(String, u32)> {
        let mut trip = None;
        for a in &batch.actions {
            if let Some(f) = &a.finding {
                if self.findings.len() < MAX_FINDINGS {
                    self.findings.push(f.clone());
                } else {
                    self.not_kept += 1;
                }
            }
            match a.outcome {
                leopold_journal::Outcome::Denied => {
                    self.in_a_row += 1;
                    self.last_reason = a
                        .denied_reason
                        .clone()
                        .unwrap_or_else(|| "denied (no reason recorded)".into());
                    if self.in_a_row >= max && !self.tripped {
                        self.tripped = true;
                        trip = Some((self.last_reason.clone(), self.in_a_row));
                    }
                }
                // An allowed action, whatever its result, is a way round the wall.
                leopold_journal::Outcome::Completed | leopold_journal::Outcome::Errored => {
                    self.in_a_row = 0;
                }
                leopold_journal::Outcome::Unfinished => {}
            }
        }
        trip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Observed;
    use leopold_journal::Outcome;

    fn obs(outcome: Outcome, reason: Option<&str>) -> Observed {
        Observed {
            seq: 1,
            tool: "mcp__b__navigate".into(),
            summary: String::new(),
            outcome,
            denied_reason: reason.map(str::to_owned),
            violation: None,
            finding: None,
            json: serde_json::Value::Null,
            repeat: None,
        }
    }

    #[test]
    fn denials_in_a_row_trip_once_and_an_allowed_action_resets_them() {
        let mut w = Walls::default();
        let denied = |r| Batch {
            actions: vec![obs(Outcome::Denied, Some(r))],
            notes: vec![],
        };
        assert_eq!(w.add(&denied("outside_allowlist"), 3), None);
        assert_eq!(w.add(&denied("outside_allowlist"), 3), None);
        let ok = Batch {
            actions: vec![obs(Outcome::Completed, None)],
            notes: vec![],
        };
        assert_eq!(w.add(&ok, 3), None, "an allowed action resets the count");
        assert_eq!(w.add(&denied("outside_allowlist"), 3), None);
        assert_eq!(w.add(&denied("outside_allowlist"), 3), None);
        assert_eq!(
            w.add(&denied("irreversible_label"), 3),
            Some(("irreversible_label".into(), 3))
        );
        assert_eq!(w.add(&denied("irreversible_label"), 3), None, "asked once");
    }

    #[test]
    fn a_timeout_names_what_it_waited_for() {
        assert_eq!(
            timeout_cause(&Waiting::Model, Duration::from_millis(40_700)),
            "no reply from the model (nothing for 40s)"
        );
        assert_eq!(
            timeout_cause(
                &Waiting::Tool("mcp__browser__browser_navigate".into()),
                Duration::from_secs(150)
            ),
            "tool mcp__browser__browser_navigate never returned (nothing for 2m 30s)"
        );
    }
}
