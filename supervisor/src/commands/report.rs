//! `leopold persona report RUN_DIR [--out FILE] [--junit FILE]`: renders `report.html` (and the
//! JUnit file) again from a run directory alone, its hash chains checked first
//! (docs/reference.md#reports).

use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::output::{eline, outln};
use crate::report::{self, FlowSource};

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let rec = report::read_run(&args.run_dir)?;
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
    for t in &rec.tampered {
        eline(format_args!("leopold: tampered: {t}"));
    }
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
