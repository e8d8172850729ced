//! `leopold-browser-bench`: wall time of a provisioned-browser walk on the real CLIs, two ways,
//! alternating (these machines are noisy):
//!
//! - `bare`: the harness alone with the very same Playwright MCP server and Chromium config (the
//!   peer): the `browser/mcp.json` the previous `persona run` wrote, no hook, no supervisor;
//! - `persona run`: `leopold persona run --browser playwright`, boxed (lock, wire, prove,
//!   provision, launch, guard on every call, ref map, every request through the browser's proxy
//!   from the browser's own box, journal, unwire, archive);
//! - with `LEOPOLD_BASELINE_BIN` set, the same `persona run` by that other `leopold` too (an
//!   earlier commit's build), so a change is measured against the code before it in one run;
//! - with `LEOPOLD_BENCH_EVIDENCE=1`, the same `persona run` with `--evidence none` too: the
//!   default's screenshot after every page-changing step and its trace against neither.
//!
//! The peer's Chromium gets `--host-resolver-rules` mapping the shop instead of the run's proxy
//! (which is gone with the run).
//!
//! The walk: navigate to the shop, snapshot, click the "Cart" link by its ref, snapshot; all
//! four calls are allowed both ways, so both do the same browser work.
//!
//! ```text
//! leopold-browser-bench [--rounds N] [--harness claude|codex|all]
//! ```
//! Needs `LEOPOLD_BIN`, `LEOPOLD_CLAUDE_BIN`, `LEOPOLD_CODEX_BIN`, `LEOPOLD_PLAYWRIGHT_MCP`
//! (`scripts/bench-browser.sh` sets them).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::Context as _;
use leopold_tests::script::{Script, ToolCall, Turn};
use leopold_tests::staging::StagingApp;
use leopold_tests::{
    leopold_bin, median, run_bounded, Harness, HarnessKit, ModelServer, Sandbox, BENCH_TABLE_HEAD,
    CODEX_BARE_EXEC,
};
use serde_json::{json, Value};

fn script() -> Script {
    let call = |tool: &str, input: Value| Turn {
        calls: vec![ToolCall {
            tool: format!("mcp__browser__{tool}"),
            input,
        }],
        delay_ms: 0,
    };
    Script {
        turns: vec![
            call(
                "browser_navigate",
                json!({"url": "http://staging.example.com/"}),
            ),
            call("browser_snapshot", json!({})),
            call(
                "browser_click",
                json!({"element": "Cart link", "target": "e7"}),
            ),
            call("browser_snapshot", json!({})),
        ],
        final_answer: "Walked to the checkout.".into(),
    }
}

fn main() -> ExitCode {
    let Some((rounds, harnesses)) = Harness::bench_args(std::env::args().skip(1), 3) else {
        return usage();
    };
    let Some(pw) = std::env::var_os("LEOPOLD_PLAYWRIGHT_MCP").map(PathBuf::from) else {
        eprintln!("LEOPOLD_PLAYWRIGHT_MCP is not set");
        return ExitCode::from(2);
    };
    let leopold = leopold_bin();
    let baseline = std::env::var_os("LEOPOLD_BASELINE_BIN").map(PathBuf::from);
    let evidence = std::env::var_os("LEOPOLD_BENCH_EVIDENCE").is_some_and(|v| v == "1");
    println!("{BENCH_TABLE_HEAD}");
    for h in harnesses {
        let Some(cli) = h.bench_cli() else {
            return ExitCode::from(2);
        };
        let timed = time_rounds(
            h,
            &cli,
            &leopold,
            baseline.as_deref(),
            &pw,
            evidence,
            rounds,
        );
        let Timings {
            mut bare,
            mut run,
            mut base,
            mut none,
        } = match timed {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{e:#}");
                return ExitCode::FAILURE;
            }
        };
        let b = median(&mut bare);
        let mut ways = vec![
            ("bare harness + same browser (peer)", &mut bare),
            ("leopold persona run --browser playwright", &mut run),
        ];
        if !base.is_empty() {
            ways.push(("the same, by LEOPOLD_BASELINE_BIN", &mut base));
        }
        if !none.is_empty() {
            ways.push(("the same, --evidence none", &mut none));
        }
        for (name, t) in ways {
            let m = median(t);
            println!(
                "| {} | {name} | {:.2} s | {:.2} s | {:.2} s | {:.2}x |",
                h.as_str(),
                m.as_secs_f64(),
                t.iter().min().unwrap().as_secs_f64(),
                t.iter().max().unwrap().as_secs_f64(),
                m.as_secs_f64() / b.as_secs_f64()
            );
        }
        if !base.is_empty() {
            println!(
                "| {} | this build / baseline (medians) | | | | **{:.2}x** |",
                h.as_str(),
                median(&mut run).as_secs_f64() / median(&mut base).as_secs_f64()
            );
        }
        if !none.is_empty() {
            println!(
                "| {} | --evidence steps / none (medians) | | | | **{:.2}x** |",
                h.as_str(),
                median(&mut run).as_secs_f64() / median(&mut none).as_secs_f64()
            );
        }
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: leopold-browser-bench [--rounds N] [--harness claude|codex|all]");
    ExitCode::from(2)
}

/// A harness's times, each way: the bare harness, `persona run`, the baseline's and
/// `--evidence none`'s (the last two empty where not asked for).
#[derive(Default)]
struct Timings {
    bare: Vec<Duration>,
    run: Vec<Duration>,
    base: Vec<Duration>,
    none: Vec<Duration>,
}

/// `rounds` rounds of [`round`] under `h`, each way asked for; the first failure, named by the
/// harness and the way, ends them.
fn time_rounds(
    h: Harness,
    cli: &Path,
    leopold: &Path,
    baseline: Option<&Path>,
    pw: &Path,
    evidence: bool,
    rounds: usize,
) -> anyhow::Result<Timings> {
    // This build removes a run's browser files as it ends; the peer is started from the MCP
    // config the run wrote there. (The baseline, from before that, keeps them without the flag,
    // which it does not know.)
    const KEEP: &str = "--keep-scratch";
    let mut t = Timings::default();
    for _ in 0..rounds {
        if evidence {
            let (r, b) = round(h, cli, leopold, pw, &[KEEP, "--evidence", "none"])
                .with_context(|| format!("{} (--evidence none)", h.as_str()))?;
            t.none.push(r);
            t.bare.push(b);
        }
        if let Some(b) = baseline {
            let (r, _) =
                round(h, cli, b, pw, &[]).with_context(|| format!("{} (baseline)", h.as_str()))?;
            t.base.push(r);
        }
        let (r, b) = round(h, cli, leopold, pw, &[KEEP]).context(h.as_str())?;
        t.run.push(r);
        t.bare.push(b);
    }
    Ok(t)
}

/// One `persona run`, then the bare harness with the MCP config that run wrote; both timed.
fn round(
    h: Harness,
    cli: &Path,
    leopold: &Path,
    pw: &Path,
    extra: &[&str],
) -> anyhow::Result<(Duration, Duration)> {
    let sb = Sandbox::new();
    let app = StagingApp::start(&sb);
    let model = ModelServer::start(&sb, &script());
    if h == Harness::Codex {
        sb.write_codex_config(&model, "");
    }
    let flows = sb.project.join("flows");
    std::fs::create_dir_all(&flows)?;
    std::fs::write(
        flows.join("shop.md"),
        format!(
            "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\nbrowser = \"playwright\"\n\
             [hosts]\n\"staging.example.com\" = \"127.0.0.1:{}\"\n\
             [irreversible]\nforbid = [\"payment\"]\n+++\nWalk the shop.\n",
            app.port
        ),
    )?;
    let mut cmd = Command::new(leopold);
    cmd.args(["persona", "run", "flows/shop.md", "--harness", h.as_str()])
        .args(["--quiet", "--harness-bin"])
        .arg(cli)
        .arg("--playwright-mcp")
        .arg(pw)
        .args(extra);
    sb.hermetic(&mut cmd, &model);
    let run = run_bounded(cmd, Duration::from_secs(120));
    anyhow::ensure!(run.status.success(), "persona run failed:\n{run}");
    let checkout_seen = |app: &StagingApp| {
        app.seen()
            .iter()
            .filter(|(_, p, _)| p == "/checkout")
            .count()
    };
    anyhow::ensure!(
        checkout_seen(&app) == 1,
        "persona run: the click did not reach /checkout"
    );

    // The peer: the same browser server, from the config the run wrote.
    let runs = sb.persona_dir().join("runs");
    let run_dir = std::fs::read_dir(&runs)?
        .next()
        .context("no run directory")??
        .path();
    let mcp = run_dir.join("browser/mcp.json");
    unproxied(&run_dir.join("browser/playwright.json"), app.port)?;
    let cfg: Value = serde_json::from_slice(
        &std::fs::read(&mcp).with_context(|| format!("the run's {}", mcp.display()))?,
    )?;
    let server = &cfg["mcpServers"]["browser"];
    let mut bare = Command::new(cli);
    match h {
        Harness::Claude => {
            bare.args([
                "-p",
                "Walk the shop.",
                "--output-format",
                "stream-json",
                "--verbose",
            ])
            .arg("--mcp-config")
            .arg(&mcp)
            .args(["--strict-mcp-config", "--allowedTools", "mcp__browser"]);
        }
        Harness::Codex => {
            let args: Vec<String> = server["args"]
                .as_array()
                .context("args")?
                .iter()
                .map(|a| serde_json::to_string(a.as_str().unwrap_or_default()).unwrap())
                .collect();
            bare.args(CODEX_BARE_EXEC)
                .arg(&sb.project)
                .arg("-c")
                .arg(format!("mcp_servers.browser.command={}", server["command"]))
                .arg("-c")
                .arg(format!("mcp_servers.browser.args=[{}]", args.join(",")))
                .args(["-c", "mcp_servers.browser.required=true", "Walk the shop."]);
        }
    }
    // The scripted model counts tool results per conversation: a fresh one for the peer.
    let model2 = ModelServer::start_with(&sb.logs.join("script.json"), &sb.root);
    if h == Harness::Codex {
        sb.write_codex_config(&model2, "");
    }
    sb.hermetic(&mut bare, &model2);
    let peer = run_bounded(bare, Duration::from_secs(120));
    anyhow::ensure!(peer.status.success(), "bare run failed:\n{peer}");
    anyhow::ensure!(
        checkout_seen(&app) == 2,
        "bare run: the click did not reach /checkout: {:?}\n{peer}",
        app.seen()
    );
    Ok((run.elapsed, peer.elapsed))
}

/// The run's Playwright config for the bare peer: Chromium reaches the shop by its own resolver
/// (the run's proxy is gone with the run).
fn unproxied(config: &Path, port: u16) -> anyhow::Result<()> {
    let mut cfg: Value = serde_json::from_slice(
        &std::fs::read(config).with_context(|| format!("the run's {}", config.display()))?,
    )?;
    let args = cfg["browser"]["launchOptions"]["args"]
        .as_array_mut()
        .context("no launch args")?;
    args.retain(|a| {
        let a = a.as_str().unwrap_or_default();
        !a.starts_with("--proxy-")
            && !a.starts_with("--ignore-certificate-errors-spki-list")
            && !a.starts_with("--host-resolver-rules")
    });
    args.push(json!(format!(
        "--host-resolver-rules=MAP staging.example.com 127.0.0.1:{port}"
    )));
    std::fs::write(config, serde_json::to_vec_pretty(&cfg)?)?;
    // The boxed Chromium's profile lock names the box's host name and pid: outside the box it
    // reads as a profile in use by another machine.
    if let Some(profile) = cfg["browser"]["userDataDir"].as_str() {
        for f in ["SingletonLock", "SingletonSocket", "SingletonCookie"] {
            let _ = std::fs::remove_file(Path::new(profile).join(f));
        }
    }
    Ok(())
}
