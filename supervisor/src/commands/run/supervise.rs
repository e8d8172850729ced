//! Step 7: the worker's event stream read line by line, journaled and validated live, with the
//! worker stopped on a violation, a timeout or a signal.

use std::time::Duration;

use tokio::io::AsyncBufReadExt as _;
use tokio::io::AsyncReadExt as _;
use tokio::signal::unix::{signal, SignalKind};

use super::outcome::{Signal, Stop};
use super::plan::Plan;
use super::progress::Reporter;
use super::Timings;
use crate::observe::{Batch, Observer};
use crate::state::Counts;

/// Longest stream line kept; longer lines are skipped and noted (a Playwright snapshot is far
/// below this).
const MAX_LINE: usize = 16 * 1024 * 1024;
/// After the worker exits, how long its stdout may stay open (a grandchild holding it) before the
/// group is killed.
const LEAK_TIMEOUT: Duration = Duration::from_millis(500);

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
    pub leaked: bool,
    pub stderr_tail: Vec<u8>,
}

enum LineMsg {
    Line(u64, String),
    TooLong(u64),
}

/// Reads lines of at most `MAX_LINE` bytes; never blocks the worker longer than the channel's
/// backpressure.
async fn read_lines(stdout: tokio::process::ChildStdout, tx: tokio::sync::mpsc::Sender<LineMsg>) {
    let mut r = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
    let mut buf: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut n: u64 = 0;
    while let Ok(avail) = r.fill_buf().await {
        if avail.is_empty() {
            if !buf.is_empty() || too_long {
                n += 1;
                let msg = if too_long {
                    LineMsg::TooLong(n)
                } else {
                    LineMsg::Line(n, String::from_utf8_lossy(&buf).into_owned())
                };
                let _ = tx.send(msg).await;
            }
            break;
        }
        match avail.iter().position(|b| *b == b'\n') {
            Some(i) => {
                if !too_long && buf.len() + i <= MAX_LINE {
                    buf.extend_from_slice(&avail[..i]);
                } else {
                    too_long = true;
                }
                r.consume(i + 1);
                n += 1;
                let msg = if too_long {
                    LineMsg::TooLong(n)
                } else {
                    LineMsg::Line(n, String::from_utf8_lossy(&buf).into_owned())
                };
                buf.clear();
                too_long = false;
                if tx.send(msg).await.is_err() {
                    break;
                }
            }
            None => {
                let len = avail.len();
                if !too_long && buf.len() + len <= MAX_LINE {
                    buf.extend_from_slice(avail);
                } else {
                    too_long = true;
                    buf.clear();
                }
                r.consume(len);
            }
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

    /// SIGINT, SIGTERM or SIGHUP: the first starts the stop; a second skips the grace.
    fn signal(&mut self, sig: Signal, out: &Reporter) {
        if self.stop.is_some() {
            let _ = crate::os::signal_group(self.pgid, libc::SIGKILL);
        } else {
            out.info(&format!("leopold: {}: stopping the worker", sig.as_str()));
            self.begin(Stop::Signal(sig));
        }
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

    while status.is_none() || stdout_open {
        tokio::select! {
            msg = rx.recv(), if stdout_open => {
                let Some(batch) = journal(msg, observer, out) else {
                    stdout_open = false;
                    continue;
                };
                if let Some(v) = out.batch(&batch, &mut counts) {
                    stopper.violation(v, out);
                }
                if !paused_mid_stream && counts.actions > 0 {
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
            _ = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() && stopper.stop.is_none() && status.is_none() => {
                let t = plan.timeout.unwrap_or_default();
                out.info(&format!("leopold: timed out after {}: stopping the worker", humantime::format_duration(t)));
                stopper.begin(Stop::Timeout(t));
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
    if let Some(v) = out.batch(&fin, &mut counts) {
        if stop.is_none() {
            stop = Some(Stop::Violation(v));
        }
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
        leaked,
        stderr_tail,
    }
}
