//! `leopold-bad-key-bench`: how long `persona run` takes to end when the model endpoint refuses
//! the key (every model call answered 401, as the scripted model's `--status 401` does), on the
//! real CLIs, by this `leopold` and, with `LEOPOLD_BASELINE_BIN`, by an earlier one, alternating
//! (these machines are noisy). Each run has `--timeout` as given: a `leopold` that does not see
//! the refusal waits it out.
//!
//! ```text
//! leopold-bad-key-bench [--rounds N] [--timeout DURATION]
//! ```
//! Needs `LEOPOLD_BIN`, `LEOPOLD_CLAUDE_BIN`, `LEOPOLD_CODEX_BIN` (`scripts/bench-bad-key.sh`
//! sets them).
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use leopold_tests::{
    checkout, leopold_bin, median, require_cli, run_bounded, Harness, ModelServer, Sandbox,
};

/// One way of running: its name, its `leopold`, and each round's wall time and exit code.
type Way<'a> = (&'a str, &'a Path, Vec<Duration>, Vec<Option<i32>>);

/// One run against a fresh endpoint answering 401: its wall time and exit code.
fn one(leopold: &Path, h: Harness, cli: &Path, timeout: &str) -> (Duration, Option<i32>) {
    let sb = Sandbox::new();
    let model = ModelServer::start_answering(&sb, 401);
    let browser = sb.stub_browser(checkout::SERVER);
    let mcp_config = sb.write_claude_mcp_config(&browser);
    let flows = sb.project.join("flows");
    std::fs::create_dir_all(&flows).expect("flows");
    std::fs::copy(checkout::flow_path(), flows.join("checkout.md")).expect("flow");
    if h == Harness::Codex {
        sb.write_codex_config(&model, "");
    }
    let mut cmd = sb.persona_run(leopold, "flows/checkout.md", h, cli, &model);
    cmd.arg("--mcp-config")
        .arg(&mcp_config)
        .args(["--timeout", timeout]);
    let t = Instant::now();
    let run = run_bounded(cmd, Duration::from_secs(3600));
    (t.elapsed(), run.status.code())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let rounds: usize = opt("--rounds").and_then(|r| r.parse().ok()).unwrap_or(3);
    let timeout = opt("--timeout").unwrap_or_else(|| "60s".into());
    let baseline = std::env::var_os("LEOPOLD_BASELINE_BIN").map(PathBuf::from);
    let current = leopold_bin();
    println!(
        "| harness | leopold | median | exit codes | ratio to this one |\n|---|---|---|---|---|"
    );
    for h in [Harness::Claude, Harness::Codex] {
        let Some(cli) = require_cli(h) else {
            continue;
        };
        let mut ways: Vec<Way<'_>> = vec![("this one", current.as_path(), Vec::new(), Vec::new())];
        if let Some(b) = &baseline {
            ways.push(("LEOPOLD_BASELINE_BIN", b.as_path(), Vec::new(), Vec::new()));
        }
        for _ in 0..rounds {
            for (_, bin, times, codes) in &mut ways {
                let (t, code) = one(bin, h, &cli, &timeout);
                times.push(t);
                codes.push(code);
            }
        }
        let first = median(&mut ways[0].2.clone());
        for (name, _, times, codes) in &mut ways {
            let m = median(times);
            println!(
                "| {} | {name} | {:.2} s | {codes:?} | {:.1}x |",
                h.as_str(),
                m.as_secs_f64(),
                m.as_secs_f64() / first.as_secs_f64()
            );
        }
    }
    ExitCode::SUCCESS
}
