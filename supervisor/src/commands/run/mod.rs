//! `leopold persona run`: the persona-run lifecycle.
//!
//! 1. resolve the project, parse the flow, check the arguments (nothing touched yet): [`plan`];
//! 2. take `.leopold/persona/run.lock` without waiting, shared when boxed, alone with
//!    `--no-contain` (busy: exit 4, nothing touched): [`claim`];
//! 3. with the lock held, recover crashed runs, leaving live ones alone;
//! 4. take the run's own lock and write its state file (`active/<run_id>.json`, or ACTIVE.json
//!    with `--no-contain`), naming what is about to be wired (record before you change);
//! 5. wire the guard, write Claude's `--settings` file, prove the wired command denies: [`proof`];
//! 6. launch the worker in its own process group, dying with the supervisor, in the box
//!    ([`crate::sandbox`]) unless `--no-contain`;
//! 7. journal and validate its event stream live, stopping it on a violation: [`supervise`];
//! 8. on worker exit, timeout or signal: stop the group, decide the outcome ([`outcome`]), unwire,
//!    archive the state as `runs/<run_id>/run.json`, release the locks: [`teardown`].
//!
//! Recovery is step 3 rather than before the lock: recovering without the lock could undo a live
//! run's wiring.
//!
//! Each step is traced (`-v`, or `RUST_LOG=leopold=info`) with the time since the run started.

mod budget;
mod claim;
mod outcome;
// `doctor` names what loosens a flow's bounds as a run does (`plan::loosened`).
mod launch;
pub(super) mod plan;
mod progress;
pub(in crate::commands) use progress::stamp;
mod prompt;
mod proof;
mod supervise;
mod teardown;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;

use crate::cli::RunArgs;
use crate::commands::pause_point;
use crate::harness::{self, WorkerSpec};
use crate::mcp::{self, McpServer, McpTransport};
use crate::observe::Observer;
use crate::output::Failure;
use crate::run_dir::RunDir;
use crate::state::{
    self, ActiveState, LockHolder, OwnLock, RunEnd, RunLock, RunOutcome, StateFile,
};
use claim::Synced;
use launch::{launch, settle, Launched};
use outcome::{classify, Ended};
use plan::Plan;
use progress::{Mode, Reporter};
use supervise::Signals;
use teardown::{Ending, Teardown};

/// Benchmarks: write monotonic timings (microseconds since start) of the lifecycle to this file.
pub(in crate::commands) const TIMINGS_ENV: &str = "__LEOPOLD_TIMINGS";

/// Monotonic lifecycle timings: traced as each step ends, and written for BENCHMARKS.md.
pub struct Timings {
    start: Instant,
    last: Instant,
    marks: Vec<(&'static str, u128)>,
}

impl Timings {
    fn new() -> Timings {
        let now = Instant::now();
        Timings {
            start: now,
            last: now,
            marks: Vec::new(),
        }
    }

    pub fn mark(&mut self, name: &'static str) {
        self.mark_at(name, Instant::now());
    }

    /// A step that ended at `now`, as [`Timings::mark`] records it.
    pub fn mark_at(&mut self, name: &'static str, now: Instant) {
        let since_start = now - self.start;
        tracing::info!(
            step = name,
            step_ms = format_args!("{:.1}", (now - self.last).as_secs_f64() * 1e3),
            total_ms = format_args!("{:.1}", since_start.as_secs_f64() * 1e3),
            "lifecycle step done"
        );
        self.last = now;
        self.marks.push((name, since_start.as_micros()));
    }

    fn write(&self) {
        if let Some(path) = std::env::var_os(TIMINGS_ENV) {
            let mut obj: serde_json::Map<String, serde_json::Value> = self
                .marks
                .iter()
                .map(|(k, v)| ((*k).to_owned(), json!(*v as u64)))
                .collect();
            // Not a time: how often the run waited on the disk
            // (docs/reference.md#what-reaches-the-disk).
            obj.insert("fsyncs".into(), json!(crate::fs::syncs()));
            let _ = std::fs::write(path, serde_json::Value::Object(obj).to_string());
        }
    }
}

/// One run: the flow file `flow` under `kind`.
pub fn run(args: RunArgs, flow: &Path, kind: harness::Harness) -> Result<ExitCode, Failure> {
    let mut timings = Timings::new();
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
    let plan = plan::plan(&args, flow, kind)?;
    for w in plan::loosened(args.no_contain, &plan.flow, &args.extra) {
        out.warn(&w);
    }
    timings.mark("planned");

    // 2. The lock. Busy: say who holds it and why, and touch nothing else.
    let holder = LockHolder {
        pid: std::process::id(),
        command: "persona run".into(),
        flow: Some(plan.flow.name.clone()),
        started_at: state::now_rfc3339(),
    };
    let lock = claim::lock_project(&plan, &holder)?;
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

/// The ACTIVE.json a run writes before it changes anything.
fn active_state(
    plan: &Plan,
    ctx: &harness::Context,
    run_id: &str,
    started_at: &str,
    guard_settings: Option<std::path::PathBuf>,
    browser: Option<&crate::browser::Provisioned>,
) -> ActiveState {
    ActiveState {
        version: state::ACTIVE_VERSION,
        active: true,
        run_id: run_id.to_owned(),
        flow: plan.flow.name.clone(),
        flow_path: plan.flow_path.clone(),
        flow_source: None,
        harness: plan.kind,
        supervisor_pid: std::process::id(),
        worker_pid: None,
        started_at: started_at.to_owned(),
        wiring: wires_a_settings_file(plan)
            .then(|| harness::wiring_record(plan.kind, ctx))
            .into_iter()
            .collect(),
        guard_settings,
        browser: browser.map(|p| p.state.clone()),
        suite: plan.suite.clone(),
        keep_scratch: plan.keep_scratch,
        end: None,
    }
}

/// Whether the run wires the guard into a settings file (and unwires it at the end): Codex into
/// the run's own copy of the configuration; Claude into the project's `.claude/settings.json`
/// only with `--no-contain`. A boxed Claude worker never sees the project (the box holds none of
/// it), so its one layer is the `--settings` file: a boxed Claude run edits no file of the
/// user's, and waits on the disk for none.
fn wires_a_settings_file(plan: &Plan) -> bool {
    harness::wires_a_file(plan.kind, plan.bwrap.is_some())
}

/// Whether the file [`wires_a_settings_file`] wires is the user's own (Claude's project
/// `.claude/settings.json`, with `--no-contain`), rather than the run's copy of Codex's
/// configuration.
fn wires_a_users_file(plan: &Plan) -> bool {
    harness::wires_the_users_file(plan.kind) && plan.bwrap.is_none()
}

/// What step 4 set up for the rest of the run.
struct Started {
    run_id: String,
    run_dir: RunDir,
    /// The run's state file: `active/<run_id>.json`, or ACTIVE.json with `--no-contain`.
    state_file: PathBuf,
    /// Claude's `--settings` file.
    guard_settings: Option<PathBuf>,
    /// The run's wiring context: for Codex, the run's own `CODEX_HOME`
    /// ([`harness::run_home`]); for Claude, the plan's.
    ctx: harness::Context,
    provisioned: Option<crate::browser::Provisioned>,
}

impl Started {
    /// Where the guard's events of this run land: a boxed run's own file in its run directory
    /// (its box's socket and its proof write there), so that runs side by side never read each
    /// other's denials; a `--no-contain` run's guard writes the project's `events.jsonl` (it
    /// runs alone).
    fn events_file(&self, plan: &Plan) -> PathBuf {
        match plan.bwrap {
            Some(_) => self.run_dir.events(),
            None => plan.paths.events(),
        }
    }
}

async fn lifecycle(
    plan: Plan,
    mut lock: RunLock,
    holder: LockHolder,
    out: &Reporter,
    timings: &mut Timings,
) -> anyhow::Result<u8> {
    // Signals from here on are ours to handle: a Ctrl-C during setup must still unwire.
    let mut signals = Signals::install()?;
    recover(&plan, out, timings)?;
    let (started, st, own) = record_active(&plan, &mut lock, &holder, out, timings)?;
    let mut run = Teardown {
        plan: &plan,
        ctx: &started.ctx,
        st,
        state_file: &started.state_file,
        own: Some(own),
        lock: Some(lock),
        out,
        steps: Vec::new(),
    };
    // From here on every way out goes through `run`: unwire, archive, release.
    // Unboxed, the guard's proof runs while the run wires, and the worker waits for it. Boxed,
    // it starts once the worker is spawned, and the worker's model waits for it (`launch`):
    // what the spawn waits for last is the box's walk of `/etc` (a millisecond of system
    // calls), and the proof's two process starts beside it slowed the run's own steps down.
    // (Started beside the writing of ACTIVE.json, the walk slowed that down: 0.8 -> 3 ms.)
    let proof = match &plan.bwrap {
        Some(_) => {
            crate::sandbox::prefetch_system_args();
            None
        }
        None => match proof::start_proof(&plan, &started) {
            Ok(p) => Some(p),
            Err(e) => return run.setup_failed(format!("{e:#}")),
        },
    };
    // ACTIVE.json survives a power loss before a file of the user's is wired: after a reboot
    // recovery finds the run and unwires. Its folder is synced beside the wiring record's own
    // writes, and the user's file is renamed only once both are on disk (`wire`). A run that
    // wires no file of the user's (a boxed Claude run; a Codex run, whose wiring is its own copy
    // of the configuration in its run directory) leaves nothing for recovery to undo after a
    // reboot (no process survives one, and its own files are in its run directory), so it does
    // not wait on the disk for that: its `Whole` write is there whole or not at all.
    let active_synced = if wires_a_users_file(&plan) {
        Synced::dir_of(started.state_file.clone())
    } else {
        Synced::done()
    };
    if let Err(e) = wire(&plan, &started, out, timings, active_synced) {
        // The proof's guard is done (joined) before teardown frees the lock and ACTIVE.json.
        drop(proof);
        return run.setup_failed(format!("{e:#}"));
    }
    if let Some(sig) = signals.pending().await {
        drop(proof);
        return run.finish(Ending::early(
            RunOutcome::Interrupted,
            format!("{} before launch", sig.as_str()),
        ));
    }
    let Launched {
        mut child,
        mut observer,
        boxed,
        gateway,
        web,
        proof,
    } = match launch(&plan, &started, proof, timings) {
        Ok(launched) => launched,
        Err(e) => return run.setup_failed(format!("{e:#}")),
    };
    let pgid = child.id().unwrap_or(0);
    run.st.worker_pid = Some(pgid);
    // The pid only matters while this boot lasts (recovery kills a crashed run's worker by it),
    // so the rename need not survive a power loss; the file must stay whole, since recovery
    // refuses an unreadable ACTIVE.json: `Whole`, one fsync and no directory sync.
    let recorded = run
        .st
        .write_as(&started.state_file, state::Durability::Whole);
    // A boxed worker runs beside the proof; its model waits for the guard's answer.
    let proved = match proof {
        Some(Ok(p)) => settle(p, &started.events_file(&plan), &mut observer, timings),
        Some(Err(e)) => Err(e),
        None => Ok(()),
    };
    if let Err(e) = recorded.and(proved) {
        // Recovery could not find this worker by its recorded pid, or the guard is not proven
        // (the worker reached no model yet): stop it now.
        stop_before_supervision(&mut child, pgid).await;
        drop(web);
        drop(gateway);
        drop(boxed);
        return run.setup_failed(format!("{e:#}"));
    }
    if let Some(b) = &boxed {
        b.open();
    }
    let run_id = &started.run_id;
    out.info(&format!(
        "leopold: run {run_id}: flow `{}` under {} (worker pid {pgid})",
        plan.flow.name, plan.kind
    ));
    out.json(json!({"event":"run_started","run_id":run_id,"flow":plan.flow.name,"flow_path":plan.flow_path,"harness":plan.kind,"worker_pid":pgid,"run_dir":started.run_dir,"timeout_ms":plan.timeout.map(|t| t.as_millis() as u64)}));
    pause_point("launched");

    // 7. Supervise.
    let mut sup = supervise::supervise(
        &mut child,
        pgid,
        &mut observer,
        &plan,
        out,
        &mut signals,
        timings,
    )
    .await;

    if let Some(note) = boxed.as_ref().and_then(crate::sandbox::Boxed::refusals) {
        out.warn(&note);
    }
    // The proxy stops before the record is sealed: a request it refused is in the record.
    if let Some(w) = web {
        for line in w.refusal_lines() {
            out.warn(&format!("browser: refused {line}"));
        }
        drop(w);
    }
    // The gateway's record against the harness's stream, call by call: any disagreement is a
    // violation.
    let disagreements = match &gateway {
        Some(gw) => observer.compare_with_gateway(gw),
        None => Vec::new(),
    };
    for m in &disagreements {
        out.warn(&format!("gateway record: {m}"));
    }
    sup.disagreements(&disagreements);
    let gateway_mismatches: Vec<String> = disagreements.iter().map(ToString::to_string).collect();
    if let Some(gw) = &gateway {
        gw.record_disagreements(&disagreements);
    }
    if let Some(gw) = &gateway {
        gw.finish_evidence().await;
    }
    let seen = gateway.as_ref().map(crate::gateway::Gateway::seen);
    let verdict = crate::verdict::judge(&plan.flow, seen.unwrap_or_default());
    let gateway_hash = gateway
        .as_ref()
        .and_then(crate::gateway::Gateway::seal)
        .map(|h| h.to_string());
    // The gateway and the relay stop; the box's socket directory goes with them.
    drop(gateway);
    drop(boxed);
    timings.mark("box_stopped");

    if started.provisioned.is_some() {
        launch::stop_browser_leftovers(run_id, out);
    }

    // 8. Outcome, then the undo. The model's failure is said whole, the harness's words in it.
    sup.stop = outcome::model_stop(
        sup.stop.take(),
        observer.harness_failed(),
        &sup.stderr_tail,
        &harness::model_advice(plan.kind, &plan.ctx.codex_home),
    );
    let c = classify(&Ended {
        violations: sup.counts.violations,
        stop: sup.stop.as_ref(),
        status: sup.status.as_ref(),
        leaked: sup.leaked,
        stderr_tail: &sup.stderr_tail,
        app_failed: &verdict.failed_by,
        unmet: &verdict.unmet,
    });
    if let (RunOutcome::ModelFailed, Some(why)) = (c.outcome, &c.reason) {
        out.warn(why);
    }
    tracing::info!(
        outcome = c.outcome.as_str(),
        actions = sup.counts.actions,
        violations = sup.counts.violations,
        "worker's group gone"
    );
    timings.mark("worker_exited");
    let code = run.finish(Ending {
        end: RunEnd {
            counts: sup.counts,
            worker_status: sup.status.as_ref().map(crate::process::describe_status),
            reason: c.reason,
            cause: c.cause,
            findings: sup.findings,
            findings_not_kept: sup.findings_not_kept,
            gateway_mismatches,
            journal_hash: Some(observer.journal_hash()),
            gateway_hash,
            verdict: Some(verdict),
            usage: observer.usage().cloned(),
            ..RunEnd::new(c.outcome)
        },
        // An empty answer is no answer: there is nothing to save or show. Nor is a run whose
        // model failed: what it said then is the harness's error, not findings.
        answer: observer
            .answer()
            .filter(|a| !a.trim().is_empty() && c.outcome != RunOutcome::ModelFailed)
            .map(str::to_owned),
        journal_sync: observer.take_sync(),
    })?;
    for (step, at) in std::mem::take(&mut run.steps) {
        timings.mark_at(step, at);
    }
    timings.mark("unwired");
    Ok(code)
}

/// Stops a worker the run will not supervise, and waits for its whole tree: the leader, then
/// the end of its stdout, which every process of the box holds until the kernel has ended the
/// box's PID namespace (bounded: a process that let go of stdout is killed by the namespace all
/// the same).
async fn stop_before_supervision(child: &mut tokio::process::Child, pgid: u32) {
    use tokio::io::AsyncReadExt as _;
    let _ = crate::os::signal_group(pgid, libc::SIGKILL);
    let _ = child.wait().await;
    if let Some(mut stdout) = child.stdout.take() {
        let mut sink = Vec::new();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            stdout.read_to_end(&mut sink),
        )
        .await;
    }
}

/// Step 3: recovers crashed runs, lock held; live ones are left alone.
fn recover(plan: &Plan, out: &Reporter, timings: &mut Timings) -> anyhow::Result<()> {
    let mut report = crate::recovery::recover_crashed(
        &plan.paths,
        &plan.ctx,
        crate::recovery::Sweep::AfterCrash,
    )?;
    tracing::debug!(crashed = ?report.crashed_runs(), live = report.live.len(), "recovery");
    timings.mark("recovered");
    for line in report.lines() {
        out.info(&format!("leopold: recovered: {line}"));
    }
    if !report.is_empty() {
        let crashed = report.crashed_runs();
        out.json(json!({"event":"recovered","crashed_run":crashed.first(),"crashed_runs":crashed,"lines":report.lines()}));
    }
    report.failed.take().map_or(Ok(()), Err)
}

/// Step 4: the run's own lock, the run directory, the provisioned browser's files, and the
/// state file naming what is about to be wired.
fn record_active(
    plan: &Plan,
    lock: &mut RunLock,
    holder: &LockHolder,
    out: &Reporter,
    timings: &mut Timings,
) -> anyhow::Result<(Started, ActiveState, OwnLock)> {
    let run_id = state::new_run_id();
    let claim::Claim { own, state_file } = claim::claim(plan, &run_id)?;
    match write_state(plan, run_id, state_file, lock, holder, out) {
        Ok((started, st)) => {
            timings.mark("active_written");
            pause_point("active-written");
            Ok((started, st, own))
        }
        Err(e) => {
            own.release();
            Err(e)
        }
    }
}

/// [`record_active`] once the run's own lock is held.
fn write_state(
    plan: &Plan,
    run_id: String,
    state_file: PathBuf,
    lock: &mut RunLock,
    holder: &LockHolder,
    out: &Reporter,
) -> anyhow::Result<(Started, ActiveState)> {
    let run_dir = plan.paths.run_dir(&run_id);
    std::fs::create_dir_all(run_dir.path())
        .with_context(|| format!("cannot create {}", run_dir.path().display()))?;
    crate::archive::copy_flow(&plan.flow_path, &run_dir)?;
    if plan.keep_scratch {
        out.warn(crate::archive::KEPT);
    }
    let guard_settings = harness::guard_settings_file(plan.kind, &run_dir);
    // Codex: the guard goes into the run's own copy of the configuration, never the user's file.
    let ctx = harness::run_context(plan.kind, &plan.ctx, run_dir.path());
    // The provisioned browser's files, before ACTIVE.json names them for the guard.
    let provisioned = match &plan.browser {
        Some(bins) => {
            let p = crate::browser::provision(bins, &run_dir, plan.bwrap.is_some())?;
            if plan.bwrap.is_none() {
                out.warn(
                    "--no-contain: the browser runs outside its box; its requests go through Leopold's proxy, but nothing stops a page's UDP (WebRTC)",
                );
            }
            Some(p)
        }
        None => None,
    };
    let st = active_state(
        plan,
        &ctx,
        &run_id,
        &holder.started_at,
        guard_settings.clone(),
        provisioned.as_ref(),
    );
    // Whole, not yet Durable: the caller starts the guard's proof (which reads the file) and
    // then syncs the directory, before anything of the user's changes.
    st.write_as(&state_file, state::Durability::Whole)?;
    let _ = lock.update(&LockHolder {
        flow: Some(format!("{} (run {run_id})", plan.flow.name)),
        ..holder.clone()
    });
    let started = Started {
        run_id,
        run_dir,
        state_file,
        guard_settings,
        ctx,
        provisioned,
    };
    Ok((started, st))
}

/// Step 5: for Codex, the run's own configuration (a copy of the user's); wires the guard (for
/// Claude only with `--no-contain`: [`wires_a_settings_file`]), writes the `--settings` file.
/// The user's file is renamed into place only once `active_synced` is done. (The proof that the
/// wired command denies runs alongside: [`proof::start_proof`].)
fn wire(
    plan: &Plan,
    started: &Started,
    out: &Reporter,
    timings: &mut Timings,
    mut active_synced: Synced,
) -> anyhow::Result<()> {
    let guard_settings = started.guard_settings.as_deref();
    harness::prepare_home(plan.kind, &plan.ctx, &started.ctx, plan.bwrap.is_some())?;
    if wires_a_settings_file(plan) {
        let outcome =
            harness::wire_with_hook(plan.kind, &started.ctx, &mut |_| active_synced.wait())?;
        tracing::debug!(
            changed = outcome.changed,
            "wired {}",
            outcome.record.file.display()
        );
        for w in &outcome.warnings {
            out.warn(w);
        }
    }
    timings.mark("wired");
    pause_point("wired");
    if let Some(gs) = guard_settings {
        // Removed at the end and by recovery, and only read while this run lives: nothing
        // waits on the disk for it.
        state::write_atomic_as(
            gs,
            harness::claude_guard_settings_json(&started.ctx).as_bytes(),
            state::Durability::Volatile,
        )?;
        timings.mark("settings_written");
        pause_point("settings-written");
    }
    Ok(())
}
