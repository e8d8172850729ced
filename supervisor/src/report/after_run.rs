//! What a report is made from once a run has ended (the after-run hook `persona run` calls) or
//! later (`persona report`): the run directory, and the flow it used: the run directory's own
//! copy, found as `persona replay` finds it.

use std::path::Path;

use super::{html, junit, read_run, RunRecord};
use crate::run_dir::RunDir;

/// What [`after_run`] has the caller say.
#[derive(Debug, Default)]
pub struct AfterRun {
    /// A warning per file that could not be written.
    pub warnings: Vec<String>,
    /// In GitHub Actions, the workflow commands annotating the app's failures, for stderr.
    pub annotations: Vec<String>,
}

/// What `persona run` does once `run.json` is final: writes `report.html` into the run
/// directory and, with `--junit FILE`, the JUnit report, both atomically and both from the run
/// directory (so they say what `persona report` would); in GitHub Actions, appends the run to
/// the job summary. The run's outcome and exit code stand whatever could not be written.
pub fn after_run(run_dir: &RunDir, flow: &leopold_flows::Flow, junit: Option<&Path>) -> AfterRun {
    let rec = match read_run(run_dir.path()) {
        Ok(r) => r,
        Err(e) => {
            return AfterRun {
                warnings: vec![format!("no report written: {e:#}")],
                annotations: Vec::new(),
            }
        }
    };
    let mut warnings = Vec::new();
    let mut annotations = Vec::new();
    if super::github::in_actions() {
        annotations = super::github::annotations(&rec);
        if let Err(e) = super::github::append_summary(&super::github::summary(&rec)) {
            warnings.push(format!("cannot append to $GITHUB_STEP_SUMMARY: {e}"));
        }
    }
    let page = html::render(&rec, &FlowSource::Given(flow));
    // Both made from run.json, and `persona report` makes them again: nothing waits on the disk.
    let volatile = crate::state::Durability::Volatile;
    if let Err(e) = crate::state::write_atomic_as(&rec.dir.report(), page.as_bytes(), volatile) {
        warnings.push(format!("no report written: {e:#}"));
    }
    if let Some(path) = junit {
        // A CI job names a file under a folder it has not made yet (`reports/junit.xml`).
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Err(e) =
            crate::state::write_atomic_as(path, junit::render(&rec).as_bytes(), volatile)
        {
            warnings.push(format!("no JUnit report written: {e:#}"));
        }
    }
    AfterRun {
        warnings,
        annotations,
    }
}

/// Where the report's flow section comes from.
pub enum FlowSource<'a> {
    /// The flow the run itself used (at the end of a run).
    Given(&'a leopold_flows::Flow),
    /// The run directory's copy of the flow it ran (`flow.md`), read again.
    Copied(Box<leopold_flows::Flow>),
    /// The flow file a run made before runs carried a copy recorded, read again: it may have
    /// changed since.
    Loaded(Box<leopold_flows::Flow>),
    /// The flow file could not be read now: why.
    Missing(String),
}

impl FlowSource<'_> {
    /// Loads the flow the run names, for a report rendered after the fact.
    pub fn load(rec: &RunRecord) -> FlowSource<'static> {
        let recorded = rec.flow_path().unwrap_or_default();
        let path = match leopold_journal::replay::flow_of_run(rec.dir.path(), &recorded) {
            Ok(p) => p,
            Err(why) => return FlowSource::Missing(why),
        };
        match leopold_flows::Flow::load(&path) {
            Ok(f) if path == rec.dir.flow() => FlowSource::Copied(Box::new(f)),
            Ok(f) => FlowSource::Loaded(Box::new(f)),
            Err(e) => FlowSource::Missing(format!("{e}")),
        }
    }

    /// The flow, when there is one.
    pub fn flow(&self) -> Option<&leopold_flows::Flow> {
        match self {
            FlowSource::Given(f) => Some(f),
            FlowSource::Copied(f) | FlowSource::Loaded(f) => Some(f),
            FlowSource::Missing(_) => None,
        }
    }
}
