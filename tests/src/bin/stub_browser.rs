//! `leopold-stub-browser`: a stand-in MCP browser server (stdio, newline-delimited JSON-RPC 2.0).
//!
//! Tools: `navigate(url)`, `click(label)`, `type(selector, text)`. Nothing is browsed: each
//! `tools/call` is appended to a log as one JSON line **before** it is answered, so a call a hook
//! denied is proven by its absence from that log.
//!
//! ```text
//! leopold-stub-browser [--log FILE]        (or env LEOPOLD_STUB_BROWSER_LOG=FILE)
//! ```
//!
//! Log line: `{"ts_ms":…,"pid":…,"tool":"navigate","arguments":{…}}`. The arguments are what the model
//! sent, verbatim: test data. Nothing but JSON-RPC is written to stdout.
#![allow(clippy::print_stderr, clippy::exit)]

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

const LOG_ENV: &str = "LEOPOLD_STUB_BROWSER_LOG";

fn tools() -> Value {
    // No `additionalProperties: false`: a persona's payload may carry more than the schema names
    // (batches, nested URLs), and the guard, not this stub, is what must judge it.
    json!([
        {"name": "navigate", "description": "Open a URL in the browser.",
         "inputSchema": {"type": "object", "properties": {"url": {"type": "string", "description": "The URL to open"}}, "required": ["url"]}},
        {"name": "click", "description": "Click the element with this accessible label.",
         "inputSchema": {"type": "object", "properties": {"label": {"type": "string", "description": "The element's label"}}, "required": ["label"]}},
        {"name": "type", "description": "Type text into the element matching a CSS selector.",
         "inputSchema": {"type": "object", "properties": {"selector": {"type": "string"}, "text": {"type": "string"}}, "required": ["selector", "text"]}}
    ])
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut log: Option<PathBuf> = std::env::var_os(LOG_ENV).map(PathBuf::from);
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--log") => log = args.next().map(PathBuf::from),
            _ => {
                eprintln!("usage: leopold-stub-browser [--log FILE]   (or {LOG_ENV}=FILE)");
                std::process::exit(2);
            }
        }
    }
    let mut log_file = log.map(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .unwrap_or_else(|e| {
                eprintln!("leopold-stub-browser: cannot open log {}: {e}", p.display());
                std::process::exit(1);
            })
    });

    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            let err = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}});
            let _ = writeln!(stdout, "{err}");
            let _ = stdout.flush();
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue; // a notification (e.g. notifications/initialized): no answer
        };
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let reply = match method {
            "initialize" => {
                let version = params
                    .get("protocolVersion")
                    .cloned()
                    .unwrap_or(json!("2025-06-18"));
                Ok(
                    json!({"protocolVersion": version, "capabilities": {"tools": {}},
                          "serverInfo": {"name": "leopold-stub-browser", "version": env!("CARGO_PKG_VERSION")}}),
                )
            }
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools()})),
            "tools/call" => {
                let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
                let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
                if let Some(f) = log_file.as_mut() {
                    // The pid: which process of the server a call reached.
                    let entry = json!({"ts_ms": now_ms(), "pid": std::process::id(), "tool": tool, "arguments": arguments});
                    // Log first, one write per line: the log is the proof of what got through.
                    if let Err(e) = f.write_all(format!("{entry}\n").as_bytes()) {
                        eprintln!("leopold-stub-browser: cannot write the log: {e}");
                    }
                }
                match tool {
                    // A navigation says where the page is, as Playwright's answers do.
                    "navigate" => {
                        let url = arguments.get("url").and_then(Value::as_str).unwrap_or("");
                        Ok(json!({"content": [{"type": "text",
                            "text": format!("stub browser: navigate done\n- Page URL: {url}")}]}))
                    }
                    "click" | "type" => Ok(json!({"content": [{"type": "text",
                        "text": format!("stub browser: {tool} done")}]})),
                    _ => Ok(
                        json!({"content": [{"type": "text", "text": format!("stub browser: no tool named {tool}")}],
                                   "isError": true}),
                    ),
                }
            }
            _ => Err(json!({"code": -32601, "message": format!("method not found: {method}")})),
        };
        let out = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        if writeln!(stdout, "{out}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
