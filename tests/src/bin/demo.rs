//! `leopold-demo`: the README's first command, end to end (run by `scripts/demo.sh`).
//!
//! For each harness: a throwaway project under `--dir` (default `target/leopold-demo`), the
//! scripted model playing the checkout script (`tests/scripts/checkout.toml`: every bypass trick
//! at once), the stub browser; then `leopold persona run flows/checkout.md` runs the real CLI,
//! and the demo prints what reached the browser, what was blocked and why, and where the journal
//! is. Exit 0 only if every harness was bounded exactly as the flow says.
//!
//! Needs `LEOPOLD_BIN`, `LEOPOLD_CLAUDE_BIN`, `LEOPOLD_CODEX_BIN` (set by `scripts/demo.sh`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use leopold_tests::{checkout, leopold_bin, read_jsonl, Harness, HarnessKit, ModelServer, Sandbox};
use serde_json::Value;

fn main() -> ExitCode {
    let mut dir = PathBuf::from("target/leopold-demo");
    let mut harnesses = Harness::ALL.to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--dir", Some(d)) => dir = PathBuf::from(d),
            ("--harness", Some(h)) => match Harness::select(&h) {
                Some(hs) => harnesses = hs,
                None => return usage(),
            },
            _ => return usage(),
        }
    }
    let mut ok = true;
    for h in harnesses {
        match demo(h, &dir.join(h.as_str())) {
            Ok(bounded) => ok &= bounded,
            Err(e) => {
                eprintln!("leopold-demo: {}: {e:#}", h.as_str());
                ok = false;
            }
        }
    }
    if ok {
        println!("\nEvery run stayed inside the flow's bounds.");
        ExitCode::SUCCESS
    } else {
        println!("\nA run was NOT bounded as the flow says (see above).");
        ExitCode::FAILURE
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: leopold-demo [--dir DIR] [--harness claude|codex|all]");
    ExitCode::from(2)
}

fn cli(h: Harness) -> anyhow::Result<PathBuf> {
    let var = h.env_var();
    let p = std::env::var_os(var)
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("{var} is not set; run ./scripts/demo.sh"))?;
    anyhow::ensure!(p.is_file(), "{var} names {}, not a file", p.display());
    Ok(p)
}

fn demo(h: Harness, dir: &Path) -> anyhow::Result<bool> {
    let bin = cli(h)?;
    let leopold = leopold_bin();
    let sb = Sandbox::at(dir);
    let model = ModelServer::start(&sb, &checkout::script());
    let browser = sb.stub_browser(checkout::SERVER);
    let mcp = sb.write_claude_mcp_config(&browser);
    let flows = sb.project.join("flows");
    std::fs::create_dir_all(&flows)?;
    std::fs::copy(checkout::flow_path(), flows.join("checkout.md"))?;
    if h == Harness::Codex {
        // Codex's own config names the scripted model as its provider; Leopold wires the guard
        // into this same file for the run and restores it afterwards.
        sb.write_codex_config(&model, "");
    }
    let title = match h {
        Harness::Claude => "Claude Code",
        Harness::Codex => "Codex CLI",
    };
    println!(
        "\n== {title}: leopold persona run flows/checkout.md --harness {} ({} tool calls scripted)\n",
        h.as_str(),
        checkout::script().call_count()
    );
    let mut cmd = sb.persona_run(&leopold, "flows/checkout.md", h, &bin, &model);
    cmd.args(["--timeout", "120s", "--mcp-config"]).arg(&mcp);
    let start = Instant::now();
    // The supervisor's own progress lines go straight to the terminal.
    let status = cmd.status()?;
    println!(
        "\n   leopold exited {} after {:.1} s",
        status.code().map_or("by signal".into(), |c| c.to_string()),
        start.elapsed().as_secs_f64()
    );

    let calls = browser.calls();
    println!("   allowed (reached the browser):");
    for c in &calls {
        println!(
            "     {:<9} {}",
            c["tool"].as_str().unwrap_or("?"),
            target(&c["arguments"])
        );
    }
    let run_dir = std::fs::read_dir(sb.persona_dir().join("runs"))?
        .flatten()
        .map(|e| e.path())
        .next();
    // The supervisor's pre-launch proof of the wired guard is recorded too; not a call.
    let (_proofs, events) = sb.run_events();
    println!("   blocked by the guard (the browser never saw them), and why:");
    for e in &events {
        let tool = e["tool"].as_str().unwrap_or("?");
        println!(
            "     {:<9} {:<28} {}",
            tool.rsplit("__").next().unwrap_or(tool),
            e["host"].as_str().unwrap_or("-"),
            e["reason"].as_str().unwrap_or("?")
        );
    }
    if let Some(told) = model
        .tool_results()
        .into_iter()
        .find(|r| r.contains("Leopold persona guard"))
    {
        let told = told.trim();
        let told = told
            .find("Leopold persona guard")
            .map_or(told, |i| &told[i..]);
        println!("   what the model was told, e.g.:\n     {told}");
    }
    match &run_dir {
        Some(d) => {
            let actions = read_jsonl(&d.join("journal.jsonl"))
                .into_iter()
                .filter(|l| l.get("seq").is_some())
                .count();
            println!(
                "   the journal ({actions} actions): {}",
                d.join("journal.jsonl").display()
            );
            println!(
                "   re-check it any time:  leopold persona replay {}",
                d.display()
            );
        }
        None => println!("   no run directory was written"),
    }
    println!("   the guard's events:    {}", sb.events_path().display());
    println!("   the browser's log:     {}", browser.log.display());

    let want = checkout::allowed_calls();
    let bounded = status.success()
        && browser.seen() == want
        && events.len() == checkout::BLOCKED_CALLS
        && run_dir.is_some();
    if !bounded {
        println!(
            "   NOT as expected: want {} allowed and {} blocked calls, a journal and exit 0",
            want.len(),
            checkout::BLOCKED_CALLS
        );
    }
    Ok(bounded)
}

/// What a browser call targeted, hosts only: the host of every URL in the arguments, else the
/// label or selector.
fn target(args: &Value) -> String {
    let mut hosts = Vec::new();
    collect_hosts(args, &mut hosts);
    if !hosts.is_empty() {
        return hosts.join(", ");
    }
    ["label", "selector"]
        .iter()
        .find_map(|k| args[*k].as_str().map(|s| format!("{k} {s:?}")))
        .unwrap_or_default()
}

fn collect_hosts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            if let Ok(u) = url::Url::parse(s) {
                if let Some(h) = u.host_str() {
                    out.push(h.to_owned());
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_hosts(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_hosts(x, out)),
        _ => {}
    }
}
