//! `leopold-demo`: the README's first command, end to end (run by `scripts/demo.sh`).
//!
//! For each harness: a throwaway project under `--dir` (default `target/leopold-demo`), the
//! scripted model playing the checkout script (`tests/scripts/checkout.toml`: every bypass trick
//! at once), the stub browser; then the real CLI runs the flow `flows/checkout.md` under
//! Leopold, and the demo prints what reached the browser, what was blocked and why, and where the
//! records are. Exit 0 only if every harness was bounded exactly as the flow says.
//!
//! Needs `LEOPOLD_BIN`, `LEOPOLD_CLAUDE_BIN`, `LEOPOLD_CODEX_BIN` (set by `scripts/demo.sh`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use leopold_tests::{checkout, leopold_bin, Harness, ModelServer, Run, Sandbox, StubBrowser};
use serde_json::Value;

const PROMPT: &str = "Walk the checkout flow as a first-time buyer using the browser tools.";

/// How the guard is put in force. `GuardWiredDirectly` is the honest label for a run without the
/// supervisor: the demo wires `leopold persona guard` into the harness's settings itself.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    GuardWiredDirectly,
}

const MODE: Mode = Mode::GuardWiredDirectly;

fn main() -> ExitCode {
    let mut dir = PathBuf::from("target/leopold-demo");
    let mut harnesses = Harness::ALL.to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--dir", Some(d)) => dir = PathBuf::from(d),
            ("--harness", Some(h)) => {
                harnesses = match h.as_str() {
                    "claude" => vec![Harness::Claude],
                    "codex" => vec![Harness::Codex],
                    "all" => Harness::ALL.to_vec(),
                    _ => return usage(),
                }
            }
            _ => return usage(),
        }
    }
    let mut ok = true;
    for h in harnesses {
        match demo(h, &dir.join(h.name())) {
            Ok(bounded) => ok &= bounded,
            Err(e) => {
                eprintln!("leopold-demo: {}: {e:#}", h.name());
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

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', "'\\''"))
}

fn demo(h: Harness, dir: &Path) -> anyhow::Result<bool> {
    let bin = cli(h)?;
    let leopold = leopold_bin();
    let sb = Sandbox::at(dir);
    let model = ModelServer::start(&sb, &checkout::script());
    let browser = sb.stub_browser(checkout::SERVER);
    let title = match h {
        Harness::Claude => "Claude Code",
        Harness::Codex => "Codex CLI",
    };
    println!(
        "\n== {title} walks flows/checkout.md ({} tool calls scripted)",
        checkout::script().call_count()
    );
    let run = match MODE {
        Mode::GuardWiredDirectly => {
            println!("   mode: guard wired directly into the harness settings (no supervisor: `leopold persona run` is not built yet)");
            sb.activate_flow(&checkout::flow_path(), h);
            let guard = format!("{} persona guard", shell_quote(&leopold));
            let cmd = match h {
                Harness::Claude => {
                    sb.wire_claude_hook(&guard);
                    sb.claude_command(&bin, &model, &browser, PROMPT)
                }
                Harness::Codex => {
                    sb.write_codex_config(&model, &Sandbox::codex_hook_toml(&guard));
                    sb.codex_command(&bin, &model, &browser, PROMPT)
                }
            };
            sb.run(cmd, Duration::from_secs(120))
        }
    };
    let stream = sb.logs.join(format!("{}-stream.jsonl", h.name()));
    std::fs::write(&stream, &run.stdout)?;
    println!(
        "   {} exited {} after {:.1} s",
        h.name(),
        run.status
            .code()
            .map_or("by signal".into(), |c| c.to_string()),
        run.elapsed.as_secs_f64()
    );
    Ok(report(&sb, &model, &browser, &run, &stream))
}

fn report(
    sb: &Sandbox,
    model: &ModelServer,
    browser: &StubBrowser,
    run: &Run,
    stream: &Path,
) -> bool {
    let calls = browser.calls();
    println!("   allowed (reached the browser):");
    for c in &calls {
        println!(
            "     {:<9} {}",
            c["tool"].as_str().unwrap_or("?"),
            target(&c["arguments"])
        );
    }
    let events = sb.events();
    println!("   blocked by the guard (before the browser saw them), and why:");
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
    println!(
        "   the guard's events:   {}",
        sb.persona_dir().join("events.jsonl").display()
    );
    println!("   the harness's stream: {}", stream.display());
    println!("   the browser's log:    {}", browser.log.display());

    let want: Vec<(String, Value)> = checkout::allowed_calls()
        .into_iter()
        .map(|(t, a)| (t.to_owned(), a))
        .collect();
    let seen: Vec<(String, Value)> = calls
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or("").to_owned(),
                c["arguments"].clone(),
            )
        })
        .collect();
    let bounded = run.status.success() && seen == want && events.len() == checkout::BLOCKED_CALLS;
    if !bounded {
        println!(
            "   NOT as expected: want {} allowed and {} blocked calls and a clean exit",
            want.len(),
            checkout::BLOCKED_CALLS
        );
    }
    bounded
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
