//! `leopold persona report RUN_DIR [--out FILE]`: renders `report.html` again from a run
//! directory alone (README "Reports").
#![allow(clippy::print_stdout)]

use std::io::Write as _;
use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::report::{self, FlowSource};

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let rec = report::read_run(&args.run_dir)?;
    let flow = FlowSource::load(&rec);
    let out = match &args.out {
        Some(p) => std::path::absolute(p)
            .map_err(|e| anyhow::anyhow!("cannot resolve {}: {e}", p.display()))?,
        None => rec.dir.join(report::REPORT_FILE),
    };
    let page = report::html::render(&rec, &flow);
    crate::state::write_atomic(&out, page.as_bytes())?;
    if let FlowSource::Missing(why) = &flow {
        let _ = writeln!(
            std::io::stderr().lock(),
            "leopold: warning: the report shows no allowlist or rules: {why}"
        );
    }
    let _ = writeln!(std::io::stdout().lock(), "{}", out.display());
    Ok(ExitCode::SUCCESS)
}
