//! `leopold-e2e-bench`: wall time of a whole checkout run on the real CLIs, four ways, measured
//! side by side and alternating (these machines are noisy):
//!
//! - `bare`: the harness alone, no hook (the peer);
//! - `guard`: `leopold persona guard` wired directly as the PreToolUse hook;
//! - `persona run --no-contain`: the whole `leopold persona run` lifecycle (lock, wire, prove,
//!   launch, journal, unwire, archive), without the box;
//! - `persona run`: the same in the box (docs/security.md#the-box), as users run it.
//!
//! Each run is the checkout script (7 tool calls, 5 denied with a guard in force) against the
//! scripted model and the stub browser. Only the measured process is timed, not the sandbox.
//!
//! ```text
//! leopold-e2e-bench [--rounds N] [--harness claude|codex|all]
//! ```
//! Needs `LEOPOLD_BIN`, `LEOPOLD_CLAUDE_BIN`, `LEOPOLD_CODEX_BIN` (`scripts/bench-e2e.sh` sets them).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use leopold_tests::{
    checkout, leopold_bin, median, run_bounded, shell_quote, Harness, HarnessKit, ModelServer,
    Sandbox, BENCH_TABLE_HEAD,
};

#[derive(Clone, Copy)]
enum Way {
    Bare,
    Guard,
    PersonaRunUnboxed,
    PersonaRun,
}

impl Way {
    const ALL: [Way; 4] = [
        Way::Bare,
        Way::Guard,
        Way::PersonaRunUnboxed,
        Way::PersonaRun,
    ];
    fn name(self) -> &'static str {
        match self {
            Way::Bare => "bare harness (peer)",
            Way::Guard => "guard wired directly",
            Way::PersonaRunUnboxed => "leopold persona run --no-contain",
            Way::PersonaRun => "leopold persona run (boxed)",
        }
    }
}

fn main() -> ExitCode {
    let Some((rounds, harnesses)) = Harness::bench_args(std::env::args().skip(1), 5) else {
        return usage();
    };
    let leopold = leopold_bin();
    println!("{BENCH_TABLE_HEAD}");
    for h in harnesses {
        let Some(cli) = h.bench_cli() else {
            return ExitCode::from(2);
        };
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); Way::ALL.len()];
        for _ in 0..rounds {
            for (i, way) in Way::ALL.iter().enumerate() {
                match once(h, *way, &cli, &leopold) {
                    Ok(t) => times[i].push(t),
                    Err(e) => {
                        eprintln!("{} / {}: {e:#}", h.as_str(), way.name());
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        let bare = median(&mut times[0].clone());
        for (i, way) in Way::ALL.iter().enumerate() {
            let t = &mut times[i];
            let m = median(t);
            println!(
                "| {} | {} | {:.2} s | {:.2} s | {:.2} s | {:.2}x |",
                h.as_str(),
                way.name(),
                m.as_secs_f64(),
                t.iter().min().unwrap().as_secs_f64(),
                t.iter().max().unwrap().as_secs_f64(),
                m.as_secs_f64() / bare.as_secs_f64()
            );
        }
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: leopold-e2e-bench [--rounds N] [--harness claude|codex|all]");
    ExitCode::from(2)
}

/// One whole run; returns the measured process's wall time after checking it did its job.
fn once(h: Harness, way: Way, cli: &Path, leopold: &Path) -> anyhow::Result<Duration> {
    const PROMPT: &str = "Walk the checkout flow.";
    let sb = Sandbox::new();
    let model = ModelServer::start(&sb, &checkout::script());
    let browser = sb.stub_browser(checkout::SERVER);
    let guard = format!("{} persona guard", shell_quote(leopold));
    let cmd = match way {
        Way::Bare => sb.harness_command(h, cli, &model, &browser, PROMPT, None),
        Way::Guard => {
            sb.activate_flow(&checkout::flow_path(), h);
            sb.harness_command(h, cli, &model, &browser, PROMPT, Some(&guard))
        }
        Way::PersonaRun | Way::PersonaRunUnboxed => {
            let flows = sb.project.join("flows");
            std::fs::create_dir_all(&flows)?;
            std::fs::copy(checkout::flow_path(), flows.join("checkout.md"))?;
            if h == Harness::Codex {
                sb.write_codex_config(&model, "");
            }
            let mcp = sb.write_claude_mcp_config(&browser);
            let mut cmd = sb.persona_run(leopold, "flows/checkout.md", h, cli, &model);
            cmd.args(["--quiet", "--mcp-config"]).arg(&mcp);
            if matches!(way, Way::PersonaRunUnboxed) {
                cmd.arg("--no-contain");
            }
            cmd
        }
    };
    let run = run_bounded(cmd, Duration::from_secs(120));
    anyhow::ensure!(run.status.success(), "run failed:\n{run}");
    let reached = browser.calls().len();
    let want = match way {
        Way::Bare => checkout::script().call_count(),
        Way::Guard | Way::PersonaRun | Way::PersonaRunUnboxed => checkout::allowed_calls().len(),
    };
    anyhow::ensure!(
        reached == want,
        "{reached} calls reached the browser, want {want}"
    );
    Ok(run.elapsed)
}
