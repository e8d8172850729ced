//! What a report is made from once a run has ended (the after-run hook `persona run` calls) or
//! later (`persona report`): the run directory, and the flow it used, found again from the path
//! the run recorded.

use std::path::{Path, PathBuf};

use super::{html, junit, read_run, RunRecord};
use crate::run_dir::RunDir;

/// Resolves a recorded flow path: absolute, or relative to the project that holds the run
/// directory (`<project>/.leopold/persona/runs/<id>`), or to the current directory.
pub fn resolve_flow_path(recorded: &Path, run_dir: &Path) -> PathBuf {
    if recorded.is_absolute() {
        return recorded.to_path_buf();
    }
    run_dir
        .ancestors()
        .nth(4)
        .map(|root| root.join(recorded))
        .filter(|p| p.exists())
        .unwrap_or_else(|| recorded.to_path_buf())
}

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
    /// Read again from the flow file `run.json` names.
    Loaded(Box<leopold_flows::Flow>),
    /// The flow file could not be read now: why.
    Missing(String),
}

impl FlowSource<'_> {
    /// Loads the flow the run names, for a report rendered after the fact.
    pub fn load(rec: &RunRecord) -> FlowSource<'static> {
        let Some(recorded) = rec.flow_path() else {
            return FlowSource::Missing("the run records no flow file".into());
        };
        let path = resolve_flow_path(&recorded, rec.dir.path());
        match leopold_flows::Flow::load(&path) {
            Ok(f) => FlowSource::Loaded(Box::new(f)),
            Err(e) => FlowSource::Missing(format!("{e}")),
        }
    }

    /// The flow, when there is one.
    pub fn flow(&self) -> Option<&leopold_flows::Flow> {
        match self {
            FlowSource::Given(f) => Some(f),
            FlowSource::Loaded(f) => Some(f),
            FlowSource::Missing(_) => None,
        }
    }
}
