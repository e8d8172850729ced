//! `leopold persona run`: the persona-run lifecycle.
//!
//! 1. resolve the project, parse the flow, check the arguments (nothing touched yet);
//! 2. take `.leopold/persona/run.lock` without waiting (busy: exit 4, nothing touched);
//! 3. with the lock held, recover a crashed earlier run;
//! 4. write ACTIVE.json, naming what is about to be wired (record before you change);
//! 5. wire the guard, write Claude's `--settings` file, prove the wired command denies;
//! 6. launch the worker in its own process group, dying with the supervisor;
//! 7. journal and validate its event stream live, stopping it on a violation;
//! 8. on worker exit, timeout or signal: stop the group, unwire, archive ACTIVE.json as
//!    `runs/<run_id>/run.json`, release the lock.
//!
//! Recovery is step 3 rather than before the lock: recovering without the lock could undo a live
//! run's wiring.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use leopold_flows::Flow;
use serde_json::json;
use tokio::io::AsyncBufReadExt as _;
use tokio::io::AsyncReadExt as _;

use crate::cli::RunArgs;
use crate::exit::RunExit;
use crate::observe::{Batch, Observer};
use crate::output::{self, Failure};
use crate::state::{
    self, ActiveState, Counts, LockHolder, PersonaPaths, RunEnd, RunLock, TryLock, WiringEntry,
};
use crate::wiring_port::{self as harness, HarnessKind};
use crate::worker::{self, WorkerSpec};

/// Longest stream line kept; longer lines are skipped and noted (a Playwright snapshot is far
/// below this).
const MAX_LINE: usize = 16 * 1024 * 1024;
/// After the worker exits, how long its stdout may stay open (a grandchild holding it) before the
/// group is killed.
const LEAK_TIMEOUT: Duration = Duration::from_millis(500);
/// Default grace between SIGTERM and SIGKILL.
const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// The proof's own deadline for the wired guard command.
const PROOF_TIMEOUT: Duration = Duration::from_secs(10);

/// Test-only: pause at a named step (write a marker file, then sleep until killed). Steps, in
/// order: `locked`, `active-written`, `wired`, `settings-written` (Claude), `launched`,
/// `mid-stream` (after the first journaled action), `mid-unwire` (unwired, not yet archived).
const PAUSE_AT_ENV: &str = "__LEOPOLD_PAUSE_AT";
const PAUSE_MARKER_ENV: &str = "__LEOPOLD_PAUSE_MARKER";
/// Test-only: grace period in milliseconds between SIGTERM and SIGKILL.
const GRACE_ENV: &str = "__LEOPOLD_STOP_GRACE_MS";
/// Benchmarks: write monotonic timings (microseconds since start) of the lifecycle to this file.
const TIMINGS_ENV: &str = "__LEOPOLD_TIMINGS";

/// Pauses here if a test asked for it. Never returns in that case: the test SIGKILLs us.
pub fn pause_point(step: &str) {
    let Ok(want) = std::env::var(PAUSE_AT_ENV) else {
        return;
    };
    if want != step {
        return;
    }
    if let Ok(marker) = std::env::var(PAUSE_MARKER_ENV) {
        let _ = std::fs::write(&marker, format!("{step} {}\n", std::process::id()));
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Human,
    Quiet,
    Json,
}

struct Reporter {
    mode: Mode,
}

impl Reporter {
    fn info(&self, line: &str) {
        if self.mode == Mode::Human {
            output::outln!("{line}");
        }
    }
    fn json(&self, v: serde_json::Value) {
        if self.mode == Mode::Json {
            output::outln!("{v}");
        }
    }
    fn summary(&self, line: &str) {
        if self.mode != Mode::Json {
            output::outln!("{line}");
        }
    }
    fn warn(&self, line: &str) {
        output::warn(line);
    }
    /// An error that stops the run (exit 2); with `--json` it is a JSON line too.
    fn error(&self, line: &str) {
        output::error_text(line, RunExit::CONFIG, self.mode == Mode::Json);
    }
}

/// Everything resolved before any side effect.
struct Plan {
    paths: PersonaPaths,
    flow: Flow,
    flow_path: PathBuf,
    kind: HarnessKind,
    bin: PathBuf,
    mcp_config: Option<PathBuf>,
    mcp_servers: Vec<worker::McpServer>,
    /// The provisioned browser's programs, when the run provisions one.
    browser: Option<crate::browser::BrowserBins>,
    extra: Vec<String>,
    timeout: Option<Duration>,
    grace: Duration,
    ctx: harness::Context,
}

/// The harness context for this project: where Codex keeps its config, the guard's command.
pub fn harness_context(project: &Path) -> anyhow::Result<harness::Context> {
    let exe = std::env::current_exe().context("cannot find the leopold executable's path")?;
    Ok(harness::Context::new(project.to_path_buf(), &exe, true)?)
}

fn plan(args: &RunArgs) -> anyhow::Result<Plan> {
    let project = state::resolve_project(args.project.project.as_deref())?;
    let (flow_path, flow) = crate::project::load_flow(&args.flow)?;
    let kind = HarnessKind::from(args.harness);
    worker::check_extra_args(kind, &args.extra).map_err(|why| {
        anyhow::anyhow!(
            "refused harness argument: {why}\n(hint: Leopold's guard must stay in force; remove it from after `--`)"
        )
    })?;
    let (mcp_config, mcp_servers) = match &args.mcp_config {
        Some(p) => {
            let abs = std::path::absolute(p)
                .with_context(|| format!("cannot resolve {}", p.display()))?;
            let servers = worker::read_mcp_config(&abs)?;
            (Some(abs), servers)
        }
        None => (None, Vec::new()),
    };
    let provision = args.browser.is_some()
        || flow.browser == Some(leopold_flows::browser::BrowserKind::Playwright);
    if provision && args.mcp_config.is_some() {
        anyhow::bail!(
            "flow `{}` provisions its browser (`browser = \"playwright\"`), and --mcp-config gives the worker another\n(hint: drop --mcp-config; the supervisor writes the browser's MCP config itself)",
            flow.name
        );
    }
    let browser = if provision {
        Some(crate::browser::find_bins(
            args.chromium.as_deref(),
            args.playwright_mcp.as_deref(),
        )?)
    } else {
        None
    };
    let wanted = args
        .harness_bin
        .clone()
        .unwrap_or_else(|| PathBuf::from(kind.name()));
    let bin = crate::os::harness_executable(&wanted, args.harness_bin.is_some())?;
    let grace = std::env::var(GRACE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_GRACE);
    let mut ctx = harness_context(&project)?;
    if kind == HarnessKind::Claude {
        // `onFailure: block` only where this Claude Code understands it (2.1.295+); when the
        // version cannot be told, keep it: older releases tolerate unknown keys in a handler.
        ctx.claude_on_failure = crate::harness::claude_supports_on_failure(&bin).unwrap_or(true);
    }
    Ok(Plan {
        paths: PersonaPaths::new(&project),
        flow,
        flow_path,
        kind,
        bin,
        mcp_config,
        mcp_servers,
        browser,
        extra: args.extra.clone(),
        timeout: args.timeout,
        grace,
        ctx,
    })
}

/// Monotonic lifecycle timings for BENCHMARKS.md.
struct Timings {
    start: Instant,
    marks: Vec<(&'static str, u128)>,
}

impl Timings {
    fn mark(&mut self, name: &'static str) {
        self.marks.push((name, self.start.elapsed().as_micros()));
    }
    fn write(&self) {
        if let Some(path) = std::env::var_os(TIMINGS_ENV) {
            let obj: serde_json::Map<String, serde_json::Value> = self
                .marks
                .iter()
                .map(|(k, v)| ((*k).to_owned(), json!(*v as u64)))
                .collect();
            let _ = std::fs::write(path, serde_json::Value::Object(obj).to_string());
        }
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let mut timings = Timings {
        start: Instant::now(),
        marks: Vec::new(),
    };
    let out = Reporter {
        mode: if args.json {
            Mode::Json
        } else if args.quiet {
            Mode::Quiet
        } else {
            Mode::Human
        },
    };
    // 1. Everything resolved before any side effect; errors here exit 2 via main.
    let plan = plan(&args)?;
    timings.mark("planned");

    // 2. The lock. Busy: say who holds it and touch nothing else.
    let holder = LockHolder {
        pid: std::process::id(),
        command: "persona run".into(),
        flow: Some(plan.flow.name.clone()),
        started_at: state::now_rfc3339(),
    };
    let lock = match RunLock::try_acquire(&plan.paths, &holder)? {
        TryLock::Acquired(lock) => lock,
        TryLock::Busy(h) => {
            let who = h.map_or_else(
                || "another process (it has not described itself yet)".to_owned(),
                |h| h.to_string(),
            );
            return Err(Failure::busy(anyhow::anyhow!(
                "another persona run is active in {}: {who}\n(hint: wait for it to finish, or stop it; if it crashed, its lock is already free and `leopold persona recover` cleans up)",
                crate::project::shown(&plan.paths.project)
            )));
        }
    };
    timings.mark("locked");
    pause_point("locked");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let code = rt.block_on(lifecycle(plan, lock, holder, &out, &mut timings))?;
    timings.mark("done");
    timings.write();
    Ok(ExitCode::from(code))
}

/// Why the worker is being stopped.
#[derive(Debug, Clone)]
enum Stop {
    Violation(String),
    Timeout(Duration),
    Signal(&'static str),
}

async fn lifecycle(
    plan: Plan,
    mut lock: RunLock,
    holder: LockHolder,
    out: &Reporter,
    timings: &mut Timings,
) -> anyhow::Result<u8> {
    use tokio::signal::unix::{signal, SignalKind};
    // Signals from here on are ours to handle: a Ctrl-C during setup must still unwire.
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;

    // 3. Recover a crashed earlier run, lock held.
    let report = super::recover::recover_locked(&plan.paths, &plan.ctx)?;
    timings.mark("recovered");
    for line in report.lines() {
        out.info(&format!("leopold: recovered: {line}"));
    }
    if !report.is_empty() {
        out.json(
            json!({"event":"recovered","crashed_run":report.crashed_run,"lines":report.lines()}),
        );
    }

    // 4. ACTIVE.json, naming what is about to be wired.
    let run_id = state::new_run_id();
    let run_dir = plan.paths.run_dir(&run_id);
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create {}", run_dir.display()))?;
    let guard_settings =
        (plan.kind == HarnessKind::Claude).then(|| run_dir.join("guard-settings.json"));
    // The provisioned browser's files, before ACTIVE.json names them for the guard.
    let provisioned = match &plan.browser {
        Some(bins) => {
            let p = crate::browser::provision(&plan.flow, bins, &run_dir)?;
            for n in &p.notes {
                out.warn(&format!("the provisioned browser cannot reach {n}"));
            }
            Some(p)
        }
        None => None,
    };
    let st = ActiveState {
        version: state::ACTIVE_VERSION,
        active: true,
        run_id: run_id.clone(),
        flow: plan.flow.name.clone(),
        flow_path: plan.flow_path.clone(),
        harness: plan.kind.name().into(),
        supervisor_pid: std::process::id(),
        worker_pid: None,
        started_at: holder.started_at.clone(),
        wiring: vec![WiringEntry {
            harness: plan.kind.name().into(),
            file: harness::target_file(plan.kind, &plan.ctx),
            tag: harness::TAG.into(),
        }],
        guard_settings: guard_settings.clone(),
        browser: provisioned
            .as_ref()
            .map(|p| crate::state::BrowserActive::from(&p.state)),
        end: None,
    };
    st.write_atomic(&plan.paths.active())?;
    let _ = lock.update(&LockHolder {
        flow: Some(format!("{} (run {run_id})", plan.flow.name)),
        ..holder
    });
    timings.mark("active_written");
    pause_point("active-written");

    let mut run = Teardown {
        plan: &plan,
        st,
        lock: Some(lock),
        out,
    };

    // 5. Wire, write the --settings file, prove.
    let setup = async {
        let outcome = harness::wire(plan.kind, &plan.ctx)?;
        for w in &outcome.warnings {
            out.warn(w);
        }
        timings.mark("wired");
        pause_point("wired");
        if let Some(gs) = &guard_settings {
            state::write_atomic(
                gs,
                harness::claude_guard_settings_json(&plan.ctx).as_bytes(),
            )?;
            timings.mark("settings_written");
            pause_point("settings-written");
        }
        prove_guard(&plan)?;
        timings.mark("proved");
        anyhow::Ok(())
    };
    let setup_result = setup.await;
    if let Err(e) = setup_result {
        return run.setup_failed(format!("{e:#}"));
    }
    if let Some(sig) = pending_signal(&mut sigint, &mut sigterm, &mut sighup).await {
        return run.finish(
            "interrupted",
            RunExit::WORKER_FAILED,
            Counts::default(),
            None,
            Some(format!("{sig} before launch")),
        );
    }

    // 6. Launch.
    let extra: Vec<String> = match &provisioned {
        Some(_) => crate::browser::harness_args(plan.kind)
            .into_iter()
            .chain(plan.extra.iter().cloned())
            .collect(),
        None => plan.extra.clone(),
    };
    let spec = WorkerSpec {
        kind: plan.kind,
        bin: plan.bin.clone(),
        project: &plan.paths.project,
        prompt: worker::build_prompt(&plan.flow),
        mcp_config: provisioned
            .as_ref()
            .map(|p| p.mcp_config.as_path())
            .or(plan.mcp_config.as_deref()),
        mcp_servers: match &provisioned {
            Some(p) => vec![p.server.clone()],
            None => plan.mcp_servers.clone(),
        },
        guard_settings: guard_settings.as_deref(),
        extra: &extra,
    };
    let events_offset = std::fs::metadata(plan.paths.events())
        .map(|m| m.len())
        .unwrap_or(0);
    // The journal exists before the worker does: nothing it does goes unrecorded.
    let journal_path = run_dir.join("journal.jsonl");
    let mut observer = match crate::observe_impl::make_observer(
        plan.kind,
        &plan.flow,
        &journal_path,
        &run_id,
        &plan.paths.events(),
        events_offset,
    ) {
        Ok(o) => o,
        Err(e) => {
            let msg = format!("{e:#}");
            return run.setup_failed(msg);
        }
    };
    if let Some(p) = &provisioned {
        observer = Box::new(crate::browser::WithRefMap::new(
            observer,
            crate::browser::RefTracker::new(&p.state, &p.output_dir),
        ));
    }
    let cmd = worker::worker_command(&spec, &run_id);
    let mut child = match tokio::process::Command::from(cmd).spawn() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot start the worker {}: {e}", plan.bin.display());
            return run.setup_failed(msg);
        }
    };
    timings.mark("worker_spawned");
    let pgid = child.id().unwrap_or(0);
    run.st.worker_pid = Some(pgid);
    if let Err(e) = run.st.write_atomic(&plan.paths.active()) {
        // Recovery could not find this worker by its recorded pid: stop it now.
        let _ = crate::os::signal_group(pgid, libc::SIGKILL);
        let _ = child.wait().await;
        let msg = format!("{e:#}");
        return run.setup_failed(msg);
    }
    out.info(&format!(
        "leopold: run {run_id}: flow `{}` under {} (worker pid {pgid})",
        plan.flow.name,
        plan.kind.name()
    ));
    out.json(json!({"event":"run_started","run_id":run_id,"flow":plan.flow.name,"harness":plan.kind.name(),"worker_pid":pgid}));
    pause_point("launched");

    // 7. Supervise.
    let sup = supervise(
        &mut child,
        pgid,
        observer.as_mut(),
        &plan,
        out,
        (&mut sigint, &mut sigterm, &mut sighup),
        timings,
    )
    .await;

    // Chromium runs in a session of its own (Playwright starts it detached): whatever of the
    // browser outlived the worker's group carries the run's id.
    if provisioned.is_some() {
        let left = crate::os::kill_crashed_run(None, &run_id);
        if !left.is_empty() {
            out.warn(&format!(
                "{} outlived the worker; stopped",
                output::count(left.len() as u64, "browser process")
            ));
        }
    }

    // 8. Outcome.
    let worker_status = sup.status.map(|s| describe_status(&s));
    let (outcome, code, reason) = if sup.counts.violations > 0 {
        let why = match &sup.stop {
            Some(Stop::Violation(v)) => v.clone(),
            _ => "violation".into(),
        };
        ("violated", RunExit::VIOLATIONS, Some(why))
    } else {
        match &sup.stop {
            Some(Stop::Timeout(d)) => (
                "timed_out",
                RunExit::WORKER_FAILED,
                Some(format!(
                    "timed out after {}",
                    humantime::format_duration(*d)
                )),
            ),
            Some(Stop::Signal(s)) => ("interrupted", RunExit::WORKER_FAILED, Some(s.to_string())),
            Some(Stop::Violation(v)) => ("violated", RunExit::VIOLATIONS, Some(v.clone())),
            None => match &sup.status {
                Some(s) if s.success() => ("clean", RunExit::CLEAN, None),
                Some(_) => (
                    "worker_failed",
                    RunExit::WORKER_FAILED,
                    Some(format!(
                        "worker {}{}",
                        worker_status.clone().unwrap_or_default(),
                        tail_hint(&sup.stderr_tail)
                    )),
                ),
                None => (
                    "worker_failed",
                    RunExit::WORKER_FAILED,
                    Some("worker lost".into()),
                ),
            },
        }
    };
    let reason = match (reason, sup.leaked) {
        (Some(r), true) => Some(format!(
            "{r}; a process the worker started held its output after it exited (killed)"
        )),
        (None, true) => {
            Some("a process the worker started held its output after it exited (killed)".into())
        }
        (r, false) => r,
    };
    timings.mark("worker_exited");
    let code = run.finish(outcome, code, sup.counts, worker_status, reason)?;
    timings.mark("unwired");
    Ok(code)
}

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
        // Never print a full URL: the worker's stderr may carry one.
        format!(": {}", crate::redact::strip_urls(last.trim()))
    }
}

fn describe_status(s: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "unknown".into(),
    }
}

async fn pending_signal(
    a: &mut tokio::signal::unix::Signal,
    b: &mut tokio::signal::unix::Signal,
    c: &mut tokio::signal::unix::Signal,
) -> Option<&'static str> {
    tokio::task::yield_now().await;
    tokio::select! {
        biased;
        _ = a.recv() => Some("SIGINT"),
        _ = b.recv() => Some("SIGTERM"),
        _ = c.recv() => Some("SIGHUP"),
        _ = std::future::ready(()) => None,
    }
}

/// Step 8's undo, shared by every way out once ACTIVE.json exists.
struct Teardown<'a> {
    plan: &'a Plan,
    st: ActiveState,
    lock: Option<RunLock>,
    out: &'a Reporter,
}

impl Teardown<'_> {
    /// A step before the worker ran failed: say why, then undo as every other way out does.
    fn setup_failed(&mut self, msg: String) -> anyhow::Result<u8> {
        self.out.error(&msg);
        self.finish(
            "setup_failed",
            RunExit::CONFIG,
            Counts::default(),
            None,
            Some(msg),
        )
    }

    fn finish(
        &mut self,
        outcome: &str,
        code: u8,
        counts: Counts,
        worker_status: Option<String>,
        reason: Option<String>,
    ) -> anyhow::Result<u8> {
        let plan = self.plan;
        // Unwire. On failure ACTIVE.json stays, so `persona recover` (or the next run) retries.
        let out = self.out;
        let unwired = harness::unwire(plan.kind, &plan.ctx, &mut |w| out.warn(w)).or_else(|e| {
            // Wiring refused the file (malformed, not UTF-8, ...) and it carries nothing of ours:
            // there is nothing to undo but wiring's own record of the attempt.
            let file = harness::target_file(plan.kind, &plan.ctx);
            let ours = std::fs::read(&file)
                .map(|b| {
                    b.windows(harness::TAG.len())
                        .any(|w| w == harness::TAG.as_bytes())
                })
                .unwrap_or(false);
            if ours {
                return Err(e);
            }
            let record = plan.ctx.record_path(plan.kind);
            let _ = std::fs::remove_file(&record);
            if let Some(dir) = record.parent() {
                let _ = std::fs::remove_dir(dir);
            }
            Ok(false)
        });
        if let Err(e) = unwired {
            self.out.error(&format!(
                "{e:#}\nthe guard is still wired; ACTIVE.json is kept so that `leopold persona recover --project {}` can finish the cleanup",
                plan.paths.project.display()
            ));
            return Ok(RunExit::CONFIG);
        }
        pause_point("mid-unwire");
        if let Some(gs) = &self.st.guard_settings {
            match std::fs::remove_file(gs) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => self
                    .out
                    .warn(&format!("cannot remove {}: {e}", gs.display())),
            }
        }
        let run_dir = plan.paths.run_dir(&self.st.run_id);
        let mut fin = self.st.clone();
        fin.active = false;
        fin.end = Some(RunEnd {
            outcome: outcome.into(),
            exit_code: code,
            ended_at: state::now_rfc3339(),
            counts: counts.clone(),
            worker_status,
            reason: reason.clone(),
        });
        fin.write_atomic(&run_dir.join("run.json"))?;
        std::fs::remove_file(plan.paths.active())
            .with_context(|| format!("cannot remove {}", plan.paths.active().display()))?;
        drop(self.lock.take());
        let rel = crate::project::shown(&run_dir);
        self.out.summary(&format!(
            "leopold: run {} {outcome} (exit {code}): {}, {} denied, {}{}; see {rel}/",
            self.st.run_id,
            output::count(counts.actions, "action"),
            counts.denied,
            output::count(counts.violations, "violation"),
            // The reason's hints were printed with the error; the summary stays one line.
            reason
                .as_deref()
                .map(|r| format!("; {}", output::Rendered::from_text(r).message))
                .unwrap_or_default(),
        ));
        self.out.json(json!({"event":"run_ended","run_id":self.st.run_id,"outcome":outcome,"exit_code":code,"counts":counts,"reason":reason,"run_dir":rel}));
        Ok(code)
    }
}

/// Runs the exact wired command through `sh -c` on an off-allowlist navigation for this project
/// and requires exit 2: a guard that is wired but cannot run (bad path, broken binary, unreadable
/// ACTIVE.json) is caught before the worker starts.
fn prove_guard(plan: &Plan) -> anyhow::Result<()> {
    use std::io::Read as _;
    let host = [
        "leopold-proof.invalid",
        "leopold-proof.example.net",
        "leopold-proof.test",
    ]
    .into_iter()
    .find(|h| !plan.flow.judge_url(&format!("https://{h}/")).is_inside())
    .context("the flow allows every probe host; cannot prove the guard")?;
    let payload = json!({
        "session_id": "leopold-proof",
        "hook_event_name": "PreToolUse",
        "cwd": plan.paths.project,
        "permission_mode": "default",
        "tool_name": "mcp__leopold_proof__navigate",
        "tool_input": {"url": format!("https://{host}/")},
        "tool_use_id": "leopold-proof",
    });
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&plan.ctx.guard_command)
        .current_dir(&plan.paths.project)
        .env("CLAUDE_PROJECT_DIR", &plan.paths.project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("cannot run `sh` to prove the wired guard")?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(payload.to_string().as_bytes());
    }
    let status = wait_or_kill(&mut child, PROOF_TIMEOUT)?;
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.by_ref().take(4096).read_to_string(&mut stderr);
    }
    match status {
        Some(s) if s.code() == Some(2) => Ok(()),
        Some(s) => anyhow::bail!(
            "the wired guard did not deny an off-allowlist navigation ({}; stderr: {:?}): refusing to start the worker\n(command: {})\n(hint: run `leopold doctor`)",
            describe_status(&s),
            stderr.trim(),
            plan.ctx.guard_command
        ),
        None => anyhow::bail!(
            "the wired guard did not answer within {}s: refusing to start the worker\n(command: {})",
            PROOF_TIMEOUT.as_secs(),
            plan.ctx.guard_command
        ),
    }
}

/// Waits up to `within` for a short-lived helper process. Past that, or when it cannot be
/// waited for, it is killed and reaped: `Ok(None)` for a timeout.
pub fn wait_or_kill(
    child: &mut std::process::Child,
    within: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + within;
    let gave_up = loop {
        match child.try_wait() {
            Ok(Some(s)) => return Ok(Some(s)),
            Ok(None) if Instant::now() <= deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => break Ok(None),
            Err(e) => break Err(e),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    gave_up
}

struct Supervised {
    status: Option<std::process::ExitStatus>,
    stop: Option<Stop>,
    counts: Counts,
    leaked: bool,
    stderr_tail: Vec<u8>,
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

async fn supervise(
    child: &mut tokio::process::Child,
    pgid: u32,
    observer: &mut dyn Observer,
    plan: &Plan,
    out: &Reporter,
    sigs: (
        &mut tokio::signal::unix::Signal,
        &mut tokio::signal::unix::Signal,
        &mut tokio::signal::unix::Signal,
    ),
    timings: &mut Timings,
) -> Supervised {
    use tokio::time::{sleep_until, Instant as TInstant};
    let (sigint, sigterm, sighup) = sigs;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<LineMsg>(256);
    let reader = child.stdout.take().map(|s| tokio::spawn(read_lines(s, tx)));
    let stderr_task = child.stderr.take().map(|s| tokio::spawn(drain_tail(s)));
    let mut counts = Counts::default();
    let mut stop: Option<Stop> = None;
    let mut status = None;
    let mut stdout_open = reader.is_some();
    let mut kill_at: Option<TInstant> = None;
    let mut leak_at: Option<TInstant> = None;
    let mut abandon_at: Option<TInstant> = None;
    let mut leaked = false;
    let mut paused_mid_stream = false;
    let deadline = plan.timeout.map(|t| TInstant::now() + t);
    let far = TInstant::now() + Duration::from_secs(86400 * 365);

    let begin_stop = |why: Stop, stop: &mut Option<Stop>, kill_at: &mut Option<TInstant>| {
        if stop.is_none() {
            *stop = Some(why);
        }
        if plan.grace.is_zero() {
            let _ = crate::os::signal_group(pgid, libc::SIGKILL);
        } else if kill_at.is_none() {
            let _ = crate::os::signal_group(pgid, libc::SIGTERM);
            *kill_at = Some(TInstant::now() + plan.grace);
        }
    };

    loop {
        if status.is_some() && !stdout_open {
            break;
        }
        let mut signalled: Option<&'static str> = None;
        tokio::select! {
            msg = rx.recv(), if stdout_open => {
                let batch = match msg {
                    Some(LineMsg::Line(n, line)) => observer.line(n, &line).unwrap_or_else(|e| {
                        out.warn(&format!("journal: {e:#}"));
                        Batch::default()
                    }),
                    Some(LineMsg::TooLong(n)) => observer.overlong(n),
                    None => { stdout_open = false; Batch::default() }
                };
                if let Some(v) = report_batch(&batch, &mut counts, out) {
                    if !matches!(stop, Some(Stop::Violation(_))) {
                        out.info(&format!("leopold: stopping the worker: {v}"));
                    }
                    begin_stop(Stop::Violation(v), &mut stop, &mut kill_at);
                }
                if !paused_mid_stream && counts.actions > 0 {
                    paused_mid_stream = true;
                    pause_point("mid-stream");
                }
            }
            st = child.wait(), if status.is_none() => {
                status = st.ok();
                timings.mark("worker_exit_seen");
                if stdout_open {
                    leak_at = Some(TInstant::now() + LEAK_TIMEOUT);
                }
            }
            _ = sigint.recv() => signalled = Some("SIGINT"),
            _ = sigterm.recv() => signalled = Some("SIGTERM"),
            _ = sighup.recv() => signalled = Some("SIGHUP"),
            _ = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() && stop.is_none() && status.is_none() => {
                let t = plan.timeout.unwrap_or_default();
                out.info(&format!("leopold: timed out after {}: stopping the worker", humantime::format_duration(t)));
                begin_stop(Stop::Timeout(t), &mut stop, &mut kill_at);
            }
            _ = sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() => {
                kill_at = None;
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
        if let Some(sig) = signalled {
            if stop.is_some() {
                // Second request: no more grace.
                let _ = crate::os::signal_group(pgid, libc::SIGKILL);
            } else {
                out.info(&format!("leopold: {sig}: stopping the worker"));
                begin_stop(Stop::Signal(sig), &mut stop, &mut kill_at);
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
    if let Some(v) = report_batch(&fin, &mut counts, out) {
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

/// Prints a batch, updates the counts, returns the first violation's reason.
fn report_batch(batch: &Batch, counts: &mut Counts, out: &Reporter) -> Option<String> {
    let mut first = None;
    for note in &batch.notes {
        counts.unreadable_lines += 1;
        out.info(&format!("  line {}: {}", note.line_no, note.message));
        out.json(json!({"event":"note","line":note.line_no,"message":note.message}));
    }
    for a in &batch.actions {
        counts.actions += 1;
        match a.outcome.as_str() {
            "completed" => counts.completed += 1,
            "errored" => counts.errored += 1,
            "denied" => counts.denied += 1,
            _ => {}
        }
        let tag = match (&a.violation, a.outcome.as_str()) {
            (Some(_), _) => "VIOLATION",
            (None, "denied") => "blocked",
            (None, o) => o,
        };
        out.info(&format!(
            "  #{:<3} {:<9} {}  {}",
            a.seq, tag, a.tool, a.summary
        ));
        if let Some(v) = &a.violation {
            counts.violations += 1;
            out.info(&format!("        {v}"));
            if first.is_none() {
                first = Some(format!("#{} {}: {v}", a.seq, a.tool));
            }
        }
        out.json(json!({"event":"action","action":a.json,"violation":a.violation}));
    }
    first
}
