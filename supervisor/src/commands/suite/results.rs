//! The suite's results, made from its run directories alone by [`crate::suite`] (as
//! `persona report --merge` makes them from shards): `suite.html` next to the runs, the
//! `--junit` file, and the step summary in GitHub Actions. A result that cannot be written is
//! a warning: the runs and their own reports are already on disk, and the exit code stands.

use std::path::{Path, PathBuf};

use super::progress::Written;
use super::PairResult;
use crate::state::PersonaPaths;

/// `suite.html`, in the runs folder it links into.
pub const SUITE_HTML: &str = "suite.html";

pub fn write(paths: &PersonaPaths, junit: Option<&Path>, results: &[PairResult]) -> Written {
    let dirs: Vec<PathBuf> = results
        .iter()
        .flat_map(|r| r.attempts.iter().filter_map(|a| a.run_dir.clone()))
        .collect();
    let runs = match crate::suite::load(&dirs) {
        Ok(runs) => runs,
        Err(_) if dirs.is_empty() => Vec::new(),
        Err(e) => {
            crate::output::warn(&format!("cannot read the suite's runs back: {e:#}"));
            return Written::default();
        }
    };
    let cases = crate::suite::cases(runs);
    let mut written = Written::default();
    let runs_dir = paths.runs();
    let html = runs_dir.join(SUITE_HTML);
    let page = crate::suite::html(&cases, &runs_dir);
    match std::fs::create_dir_all(&runs_dir)
        .map_err(anyhow::Error::from)
        .and_then(|()| crate::state::write_atomic(&html, page.as_bytes()))
    {
        Ok(()) => written.html = Some(html),
        Err(e) => crate::output::warn(&format!("cannot write {}: {e:#}", html.display())),
    }
    if let Some(file) = junit {
        let xml = crate::suite::junit(&cases);
        let made = file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(anyhow::Error::from)
            .and_then(|()| crate::state::write_atomic(file, xml.as_bytes()));
        match made {
            Ok(()) => written.junit = Some(file.to_path_buf()),
            Err(e) => crate::output::warn(&format!("cannot write {}: {e:#}", file.display())),
        }
    }
    if crate::report::github::in_actions() {
        if let Err(e) = crate::report::github::append_summary(&crate::suite::step_summary(&cases)) {
            crate::output::warn(&format!("cannot append to $GITHUB_STEP_SUMMARY: {e}"));
        }
    }
    written
}
