//! `leopold flow check FILE…`: validates flow files without running anything, with the messages
//! `persona run` gives (both load through [`crate::project::load_flow`]).

use std::process::ExitCode;

use serde_json::json;

use crate::cli::FlowCheckArgs;
use crate::exit::RunExit;
use crate::output::{self, outln, Rendered};

/// Checks every file (one bad file does not hide the next), reports each, and exits 0 when all
/// are valid, 2 when one is not.
pub fn check(args: &FlowCheckArgs) -> ExitCode {
    let mut bad = 0u64;
    for file in &args.files {
        match crate::project::load_flow(file) {
            Ok((_, flow)) => {
                if args.json {
                    outln!(
                        "{}",
                        json!({"type": "flow", "file": file, "ok": true, "name": flow.name})
                    );
                } else {
                    outln!("ok: {}: flow `{}`", file.display(), flow.name);
                }
            }
            Err(err) => {
                bad += 1;
                let r = Rendered::from_error(&anyhow::Error::from(err));
                if args.json {
                    outln!(
                        "{}",
                        json!({"type": "flow", "file": file, "ok": false, "message": r.message, "hints": r.hints})
                    );
                }
                output::eline(format_args!("leopold: error: {}", r.text()));
            }
        }
    }
    let total = args.files.len() as u64;
    if bad == 0 {
        if !args.json {
            outln!("{} valid", output::count(total, "flow file"));
        }
        ExitCode::SUCCESS
    } else {
        output::eline(format_args!(
            "leopold: {} of {} invalid",
            bad,
            output::count(total, "flow file")
        ));
        ExitCode::from(RunExit::CONFIG)
    }
}
