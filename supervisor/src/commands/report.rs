//! `leopold persona report RUN_DIR [--out FILE] [--junit FILE]`: renders `report.html` (and the
//! JUnit file) again from a run directory alone, its hash chains checked first
//! (docs/reference.md#reports). `--merge DIR... --out DIR` gathers runs from several jobs into
//! one folder with the suite's page and JUnit file (docs/reference.md#merging-shards).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::output::{eline, outln};
use crate::report::{self, FlowSource};
use crate::suite;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let Some(run_dir) = &args.run_dir else {
        let out = args.out.as_deref().unwrap_or(Path::new("."));
        return merge(&args.merge, out);
    };
    let rec = report::read_run(run_dir)?;
    let flow = FlowSource::load(&rec);
    let out = match &args.out {
        Some(p) => std::path::absolute(p)
            .map_err(|e| anyhow::anyhow!("cannot resolve {}: {e}", p.display()))?,
        None => rec.dir.report(),
    };
    let page = report::html::render(&rec, &flow);
    crate::state::write_atomic(&out, page.as_bytes())?;
    if let Some(path) = &args.junit {
        crate::state::write_atomic(path, report::junit::render(&rec).as_bytes())?;
    }
    if let FlowSource::Missing(why) = &flow {
        eline(format_args!(
            "leopold: warning: the report shows no allowlist or rules: {why}"
        ));
    }
    tampered(&rec);
    if !rec.tampered.is_empty() {
        eline(format_args!(
            "(hint: `leopold persona replay {}` lists every break)",
            rec.dir.path().display()
        ));
    }
    outln!("{}", out.display());
    // As `persona replay`: records changed after the run are exit 1.
    Ok(if rec.tampered.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Each break of the run's hash chains, on stderr.
fn tampered(rec: &report::RunRecord) {
    for t in &rec.tampered {
        eline(format_args!("leopold: tampered: {t}"));
    }
}

/// `--merge DIR... --out OUT`: the runs copied into `OUT/<run_id>/`, then `OUT/suite.html` and
/// `OUT/junit.xml` written from the copies (and the job summary in GitHub Actions). Exits with
/// the worst case's code.
fn merge(inputs: &[PathBuf], out: &Path) -> anyhow::Result<ExitCode> {
    let out = std::path::absolute(out)
        .map_err(|e| anyhow::anyhow!("cannot resolve {}: {e}", out.display()))?;
    let dirs = suite::merge::merge(inputs, &out)?;
    let cases = suite::cases(suite::load(&dirs)?);
    let (page, junit) = (out.join("suite.html"), out.join("junit.xml"));
    crate::state::write_atomic(&page, suite::html(&cases, &out).as_bytes())?;
    crate::state::write_atomic(&junit, suite::junit(&cases).as_bytes())?;
    if report::github::in_actions() {
        if let Err(e) = report::github::append_summary(&suite::step_summary(&cases)) {
            crate::output::warn(&format!("cannot append to $GITHUB_STEP_SUMMARY: {e}"));
        }
    }
    for note in suite::notes(&cases) {
        eline(format_args!("leopold: note: {note}"));
    }
    cases.iter().flat_map(|c| &c.attempts).for_each(tampered);
    outln!("{}", crate::project::shown(&page));
    outln!("{}", crate::project::shown(&junit));
    Ok(ExitCode::from(suite::exit_code(&cases)))
}
