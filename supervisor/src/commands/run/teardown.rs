//! Step 8's undo, shared by every way out once the run's state file exists: unwire, remove the
//! `--settings` file, clear the browser's files and the scratch, archive the state as `run.json`
//! ([`crate::archive`]), remove the state file, release the run's own lock and `run.lock`, print
//! the summary.

use anyhow::Context as _;

use super::plan::Plan;
use super::progress::{summary_line, Reporter};
use crate::exit::RunExit;
use crate::harness;
use crate::run_dir::RunDir;
use crate::state::{self, ActiveState, OwnLock, RunEnd, RunLock, RunOutcome, StateFile};

pub struct Teardown<'a> {
    pub plan: &'a Plan,
    /// The run's wiring context (for Codex, its own configuration copy).
    pub ctx: &'a harness::Context,
    pub st: ActiveState,
    /// Where `st` is: `active/<run_id>.json`, or ACTIVE.json with `--no-contain`.
    pub state_file: &'a std::path::Path,
    /// The run's own lock, released once its state file is gone.
    pub own: Option<OwnLock>,
    pub lock: Option<RunLock>,
    pub out: &'a Reporter,
    /// When [`Teardown::finish`] archived the run and released the project, for the run's
    /// timings (`__LEOPOLD_TIMINGS`).
    pub steps: Vec<(&'static str, std::time::Instant)>,
}

/// How the run ended, for [`Teardown::finish`].
pub struct Ending {
    /// `run.json`'s `end` and the `run_ended` event. Its `ended_at` is when the run is archived;
    /// a chain head left `None` (the journal's before the worker ran, the gateway record's
    /// without a gateway) is read from its file, if the run got that far.
    pub end: RunEnd,
    /// The persona's final answer, saved as `findings.md` (its URLs as their hosts).
    pub answer: Option<String>,
    /// The journal's last sync, under way: waited for before the project is released.
    pub journal_sync: Option<leopold_journal::PendingSync>,
}

impl Ending {
    /// An ending before the worker ran.
    pub fn early(outcome: RunOutcome, reason: String) -> Ending {
        Ending {
            end: RunEnd {
                reason: Some(reason),
                ..RunEnd::new(outcome)
            },
            answer: None,
            journal_sync: None,
        }
    }
}

impl Teardown<'_> {
    /// A step before the worker ran failed: say why, then undo as every other way out does.
    pub fn setup_failed(&mut self, msg: String) -> anyhow::Result<u8> {
        self.out.error(&msg);
        self.finish(Ending::early(RunOutcome::SetupFailed, msg))
    }

    /// Returns the exit code: the outcome's, or 2 when unwiring failed (the state file is then
    /// kept so that `persona recover`, or the next run, retries).
    pub fn finish(&mut self, ending: Ending) -> anyhow::Result<u8> {
        let Ending {
            mut end,
            answer,
            journal_sync,
        } = ending;
        // URLs as their hosts, in findings.md as everywhere a run writes or prints: the runs
        // folder is safe to upload (docs/reference.md#run-directory).
        let answer = answer.map(|a| crate::redact::strip_urls(&a));
        let plan = self.plan;
        let _step = tracing::info_span!("teardown", outcome = end.outcome.as_str()).entered();
        let out = self.out;
        let ctx = self.ctx;
        let target = ctx.settings_path(plan.kind);
        // Nothing to unwire when the run wired no settings file (a boxed Claude run).
        let wired = !self.st.wiring.is_empty();
        let unwired = if !wired {
            Ok(false)
        } else {
            harness::unwire(plan.kind, ctx)
                .map(|u| {
                    for w in &u.warnings {
                        out.warn(w);
                    }
                    u.changed()
                })
                .or_else(|e| {
                    // Wiring refused the file (malformed, not UTF-8, ...) and it carries nothing of
                    // ours: there is nothing to undo but wiring's own record of the attempt.
                    let ours = std::fs::read(&target)
                        .map(|b| {
                            b.windows(harness::TAG.len())
                                .any(|w| w == harness::TAG.as_bytes())
                        })
                        .unwrap_or(false);
                    if ours {
                        return Err(e);
                    }
                    let record = ctx.record_path(plan.kind);
                    let _ = std::fs::remove_file(&record);
                    if let Some(dir) = record.parent() {
                        let _ = std::fs::remove_dir(dir);
                    }
                    Ok(false)
                })
        };
        if let Err(e) = unwired {
            self.out.error(&format!(
                "{e:#}\nthe guard is still wired; {} is kept so that `leopold persona recover --project {}` can finish the cleanup",
                self.state_file.display(),
                plan.paths.project.display()
            ));
            return Ok(RunExit::CONFIG);
        }
        if wired {
            tracing::info!("unwired {}", target.display());
        }
        harness::remove_run_home(plan.kind, ctx);
        crate::commands::pause_point("mid-unwire");
        if let Some(gs) = &self.st.guard_settings {
            match std::fs::remove_file(gs) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => self
                    .out
                    .warn(&format!("cannot remove {}: {e}", gs.display())),
            }
        }
        let code = end.exit_code;
        let run_dir = plan.paths.run_dir(&self.st.run_id);
        // The persona's answer (its URLs as hosts), before run.json says the
        // run ended (a reader that sees run.json finds findings.md too).
        let findings_file = run_dir.findings();
        if let Some(answer) = &answer {
            // `Whole`: run.json's write below syncs the directory they share, for both.
            if let Err(e) =
                state::write_atomic_as(&findings_file, answer.as_bytes(), state::Durability::Whole)
            {
                self.out.warn(&format!("{e:#}"));
            }
        }
        end.journal_hash = end.journal_hash.or_else(|| {
            leopold_journal::chain::head_of_file(&run_dir.journal()).map(|h| h.to_string())
        });
        end.gateway_hash = end.gateway_hash.or_else(|| {
            leopold_journal::chain::head_of_file(&run_dir.gateway_record()).map(|h| h.to_string())
        });
        end.ended_at = state::now_rfc3339();
        // Before ACTIVE.json goes: a crash before this leaves recovery to do it.
        for w in crate::archive::clear(&run_dir, self.st.keep_scratch) {
            self.out.warn(&w);
        }
        let mut fin = crate::archive::run_json(&self.st, &run_dir, &plan.paths.project);
        fin.end = Some(end.clone());
        // Whole here, its directory synced below: run.json is written while the journal's last
        // sync is still under way, and the project is released once both files are on disk.
        let run_json = run_dir.run_json();
        fin.write_as(&run_json, state::Durability::Whole)?;
        if let Some(sync) = journal_sync {
            if let Err(e) = sync.wait() {
                self.out.warn(&format!("journal: {e:#}"));
            }
        }
        self.steps.push(("archived", std::time::Instant::now()));
        std::fs::remove_file(self.state_file)
            .with_context(|| format!("cannot remove {}", self.state_file.display()))?;
        if let Some(own) = self.own.take() {
            own.release();
        }
        drop(self.lock.take());
        // The project is as it was and free for the next run; the report comes after.
        self.steps.push(("released", std::time::Instant::now()));
        // run.json's name across a power loss (and findings.md's, in the same folder). Lost
        // before this, recovery finds the state file (its removal is not durable before either)
        // and archives the run as crashed.
        crate::fs::sync_dir_of(&run_json);
        let rel = crate::project::shown(run_dir.path());
        // report.html (and --junit), from the run directory now that run.json is final.
        let after = crate::report::after_run(&run_dir, &plan.flow, plan.junit.as_deref());
        for w in &after.warnings {
            self.out.warn(w);
        }
        for a in &after.annotations {
            crate::output::eline(format_args!("{a}"));
        }
        self.out
            .info(&format!("leopold: report: {rel}/{}", RunDir::REPORT));
        self.out.summary(&summary_line(
            &self.st.run_id,
            end.outcome,
            &end.counts,
            end.reason.as_deref(),
            end.journal_hash.as_deref(),
            &rel,
        ));
        // The model, turns, tokens and cost, on a line of their own (docs/reference.md#cost-and-budgets).
        if let Some(u) = &end.usage {
            self.out.summary(&format!("leopold: usage: {}", u.line()));
        }
        // The findings after the summary.
        let shown = answer.as_deref().map(str::trim_end);
        match &shown {
            Some(text) => self.out.summary(&format!(
                "leopold: findings ({rel}/{}):\n{text}",
                RunDir::FINDINGS
            )),
            None if self.st.worker_pid.is_some() => self
                .out
                .info("leopold: the persona gave no final answer (no findings.md)"),
            None => {}
        }
        if let Some(v) = &end.verdict {
            let text = crate::report::findings_text(v);
            if !text.is_empty() {
                self.out
                    .summary(&format!("leopold: verdict:{}", text.trim_end()));
            }
        }
        if self.st.keep_scratch {
            self.out
                .summary(&format!("leopold: warning: {}", crate::archive::KEPT));
        }
        self.out
            .json(end.event(&self.st.run_id, &run_dir, answer.as_deref()));
        Ok(code)
    }
}
