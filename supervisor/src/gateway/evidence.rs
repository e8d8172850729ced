//! Evidence for every step (`--evidence`, docs/reference.md#evidence): the gateway's own calls
//! of the provisioned browser, which the worker never sees and the model never pays for.
//!
//! - After a call that can change the page ([`changes_page`]) is answered, the gateway sends the
//!   server its own `browser_take_screenshot` under an id of its own, in the same write as the
//!   worker's answer goes out: the answer is not delayed. Its answer is never passed on; the file
//!   is moved into `<run dir>/evidence/` and an `{"event":"evidence","seq":…,"file":…}` line
//!   is recorded for the step's seq.
//! - While one of the gateway's own requests is with the server, the worker's next `tools/call`
//!   waits for it ([`State::held`]): Playwright MCP runs requests side by side, and a click sent
//!   while the screenshot is being taken would let the screenshot show the page after the click.
//!   The wait is at most what is left of one screenshot, and only when the model answers faster
//!   than a screenshot is taken (a scripted model; never a real one).
//! - `steps` also records the whole run's Playwright trace: `browser_start_tracing` before the
//!   worker's first call, `browser_stop_tracing` when the run ends ([`super::Gateway::finish_evidence`]),
//!   while the server still runs; the live trace's files become `<run dir>/trace.zip`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::server::{send, Pending, Route, Routes, Server};
use super::start::Ctx;

pub use crate::run_dir::Evidence;
use crate::run_dir::RunDir;

const DIR: &str = RunDir::EVIDENCE;
const TRACE: &str = RunDir::TRACE;
/// Where the server writes the gateway's screenshots, in its output folder, before they move.
const STAGING: &str = "leopold-evidence";

/// The provisioned browser's evidence settings ([`Ctx::evidence`]).
#[derive(Debug, Clone)]
pub(super) struct Config {
    pub(super) mode: Evidence,
    pub(super) run_dir: PathBuf,
}

/// What the gateway asked the server itself.
#[derive(Debug)]
pub(super) enum Own {
    Screenshot { seq: u64 },
    TraceStart,
    TraceStop,
}

/// The evidence's share of a server's routes.
#[derive(Default)]
pub(super) struct State {
    /// The gateway's own requests with the server; while there is one, the worker's calls wait.
    holding: usize,
    /// The worker's calls waiting, already under the gateway's ids.
    held: Vec<Value>,
    trace: Trace,
    /// Told when `browser_stop_tracing` is answered.
    stopped: Option<tokio::sync::oneshot::Sender<()>>,
}

#[derive(Default, PartialEq, Eq)]
enum Trace {
    #[default]
    NotStarted,
    Started,
    Stopped,
}

/// Whether a call of `tool` can change what the page shows.
pub(super) fn changes_page(tool: &str) -> bool {
    use leopold_flows::catalogue::Does;
    leopold_flows::catalogue::find(tool)
        .is_some_and(|t| !matches!(t.does, Does::Read | Does::Devtools))
}

/// Sends the gateway's own request, which holds the worker's calls until it is answered.
fn own_request(srv: &Server, r: &mut Routes, what: Own, tool: &str, arguments: Value) {
    let gid = r.route(Route {
        // No connection is 0: the answer goes to no one.
        conn: 0,
        id: Value::Null,
        what: Pending::Evidence(what),
    });
    r.evidence.holding += 1;
    send(
        &srv.to_server,
        &json!({"jsonrpc": "2.0", "id": gid, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}),
    );
}

/// Sends the worker's `tools/call` (under the gateway's id) on, or holds it while the gateway's
/// own request is with the server. The trace starts before the first one.
pub(super) fn send_call(ctx: &Ctx, srv: &Server, msg: Value) {
    let Some(cfg) = &ctx.evidence else {
        return send(&srv.to_server, &msg);
    };
    let mut r = srv.routes();
    if cfg.mode == Evidence::Steps && r.evidence.trace == Trace::NotStarted {
        r.evidence.trace = Trace::Started;
        own_request(
            srv,
            &mut r,
            Own::TraceStart,
            "browser_start_tracing",
            json!({}),
        );
    }
    if r.evidence.holding > 0 {
        r.evidence.held.push(msg);
    } else {
        send(&srv.to_server, &msg);
    }
}

/// Screenshots the page after step `seq`, if the mode asks for it: `walled` says the call was
/// denied, errored or refused by the proxy.
pub(super) fn after(ctx: &Ctx, srv: &Server, seq: u64, tool: Option<&str>, walled: bool) {
    let Some(cfg) = &ctx.evidence else { return };
    let wanted = match cfg.mode {
        Evidence::Steps => walled || tool.is_some_and(changes_page),
        Evidence::Walls => walled,
        Evidence::None => false,
    };
    if !wanted {
        return;
    }
    let mut r = srv.routes();
    if r.gone {
        return;
    }
    own_request(
        srv,
        &mut r,
        Own::Screenshot { seq },
        "browser_take_screenshot",
        json!({"type": "png", "filename": format!("{STAGING}/{}", shot_name(seq))}),
    );
}

fn shot_name(seq: u64) -> String {
    format!("step-{seq:04}.png")
}

/// The server answered one of the gateway's own requests: never passed on.
pub(super) fn answered(ctx: &Ctx, srv: &Server, what: Own, msg: &Value) {
    let ok = msg
        .get("result")
        .is_some_and(|r| !r.get("isError").and_then(Value::as_bool).unwrap_or(false));
    let error = (!ok).then(|| {
        let text = msg
            .get("result")
            .map(super::policy::result_text)
            .or_else(|| {
                msg.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        leopold_guard::safe_text(&crate::redact::strip_urls(&text), 200)
    });
    match what {
        Own::Screenshot { seq } => {
            let moved = ctx
                .evidence
                .as_ref()
                .filter(|_| ok)
                .and_then(|cfg| move_shot(&ctx.cwd, &cfg.run_dir, seq));
            let mut line = json!({"event": "evidence", "seq": seq, "server": ctx.policy.server,
                "file": moved});
            if let Some(e) = error.flatten() {
                line["error"] = json!(e);
            }
            ctx.record
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .line(line);
        }
        Own::TraceStart => {
            if !ok {
                tracing::warn!(error = ?error.flatten(), "the browser's trace did not start");
            }
        }
        Own::TraceStop => {
            if let Some(tx) = srv.routes().evidence.stopped.take() {
                let _ = tx.send(());
            }
        }
    }
    // Answered: the worker's calls that waited go on, in their order.
    let mut r = srv.routes();
    r.evidence.holding = r.evidence.holding.saturating_sub(1);
    if r.evidence.holding == 0 {
        for m in std::mem::take(&mut r.evidence.held) {
            send(&srv.to_server, &m);
        }
    }
}

/// Moves the screenshot out of the browser's output folder (which the worker's calls can
/// write) into the run directory; its name there, relative to the run directory.
fn move_shot(output_dir: &Path, run_dir: &Path, seq: u64) -> Option<String> {
    let name = shot_name(seq);
    let dir = run_dir.join(DIR);
    std::fs::create_dir_all(&dir).ok()?;
    let from = output_dir.join(STAGING).join(&name);
    match std::fs::rename(&from, dir.join(&name)) {
        Ok(()) => Some(format!("{DIR}/{name}")),
        Err(e) => {
            tracing::warn!("screenshot of step {seq} not kept: {e}");
            None
        }
    }
}

/// Stops the trace and writes `trace.zip` into the run directory, once the worker is gone and
/// while the server still runs; waits (bounded) for the gateway's screenshots still pending.
pub(super) async fn finish(ctx: &Ctx, srv: &Server) {
    let Some(cfg) = &ctx.evidence else { return };
    let until = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let stopped = {
        let mut r = srv.routes();
        if r.gone || r.evidence.trace != Trace::Started {
            None
        } else {
            r.evidence.trace = Trace::Stopped;
            let (tx, rx) = tokio::sync::oneshot::channel();
            r.evidence.stopped = Some(tx);
            own_request(
                srv,
                &mut r,
                Own::TraceStop,
                "browser_stop_tracing",
                json!({}),
            );
            Some(rx)
        }
    };
    // A server gone answers nothing more: nothing to wait for.
    while {
        let r = srv.routes();
        r.evidence.holding > 0 && !r.gone
    } && tokio::time::Instant::now() < until
    {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let Some(rx) = stopped else { return };
    if tokio::time::timeout_at(until, rx).await.is_err() {
        tracing::warn!("the browser's trace did not stop in time: no trace.zip");
        return;
    }
    let traces = ctx.cwd.join("traces");
    let out = cfg.run_dir.join(TRACE);
    match super::trace_zip::write(&traces, &out) {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&traces);
            let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
            let seq = rec.next_seq();
            rec.line(
                json!({"event": "evidence", "seq": seq, "server": ctx.policy.server,
                "file": TRACE}),
            );
        }
        Err(e) => tracing::warn!("no trace.zip: {e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_changing_tools_are_the_catalogues_actions() {
        for t in [
            "browser_navigate",
            "browser_click",
            "browser_type",
            "browser_press_key",
            "browser_handle_dialog",
            "browser_select_option",
            "browser_fill_form",
            "browser_navigate_back",
        ] {
            assert!(changes_page(t), "{t}");
        }
        for t in [
            "browser_snapshot",
            "browser_take_screenshot",
            "browser_start_tracing",
            "browser_console_messages",
            "not_a_tool",
        ] {
            assert!(!changes_page(t), "{t}");
        }
    }
}
