//! The browser tool catalogue (`leopold_flows::catalogue`, issue #22) pinned to the real server:
//! the installed Playwright MCP (0.0.83, `scripts/install-browser.sh`) is asked for its
//! `tools/list` over stdio, as Leopold starts it and with every `--caps` capability on, and every
//! tool it lists must be catalogued, with the element and URL arguments the catalogue says it has.
//! A later server's new tool fails this test until someone catalogues it (and until then the
//! gateway never offers it).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use leopold_flows::catalogue::{self, Offer};
use leopold_tests::staging::require_browser;
use serde_json::{json, Value};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The server's `tools/list` result's tools: `initialize`, `notifications/initialized`,
/// `tools/list`, answered within a minute.
fn tools_list(playwright_mcp: &Path, chromium: &Path, extra: &[&str]) -> Vec<Value> {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(playwright_mcp)
        .args(["--headless", "--no-webmcp", "--executable-path"])
        .arg(chromium)
        .args(extra)
        .current_dir(home.path())
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", playwright_mcp.display()));
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "leopold-catalogue-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    stdin.flush().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["id"] == 2 {
                let _ = tx.send(v);
                break;
            }
        }
    });
    let answer = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("Playwright MCP did not answer tools/list within 60 s");
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list answered without tools: {answer}"))
        .clone()
}

/// Whether an argument of this name names an element or a URL, by Playwright's own naming.
fn names_element_or_url(key: &str) -> bool {
    key == "url" || key.ends_with("lement") || key.ends_with("arget")
}

/// Every problem with one real tool against its catalogue entry.
fn check(tool: &Value, problems: &mut Vec<String>) {
    let name = tool["name"].as_str().unwrap_or("(unnamed)");
    let Some(entry) = catalogue::find(name) else {
        problems.push(format!(
            "{name}: not in the catalogue (flows/src/catalogue.rs); catalogue it: what it does, \
             its element and URL arguments, offered or not"
        ));
        return;
    };
    let props = &tool["inputSchema"]["properties"];
    let has = |obj: &Value, k: &str| obj.get(k).is_some();
    let mut named: Vec<&str> = entry.urls.to_vec();
    for el in entry.elements {
        let obj = match el.within {
            None => props,
            Some(list) => &props[list]["items"]["properties"],
        };
        let keys = el
            .descriptions
            .iter()
            .chain(el.options)
            .chain([&el.reference])
            .chain(el.kind.as_ref());
        for k in keys {
            if !has(obj, k) {
                problems.push(format!(
                    "{name}: the catalogue names argument {k:?}, the server has none"
                ));
            }
        }
        if el.within.is_none() {
            named.extend(el.descriptions.iter().chain([&el.reference]).copied());
        } else if let Some(list) = el.within {
            named.push(list);
        }
    }
    for k in entry.urls {
        if !has(props, k) {
            problems.push(format!(
                "{name}: the catalogue names URL argument {k:?}, the server has none"
            ));
        }
    }
    for k in props.as_object().into_iter().flat_map(|o| o.keys()) {
        if names_element_or_url(k) && !named.contains(&k.as_str()) {
            problems.push(format!(
                "{name}: argument {k:?} names an element or a URL, and the catalogue does not say so"
            ));
        }
    }
}

#[test]
fn the_catalogue_knows_every_tool_of_the_real_server() {
    let Some((chromium, playwright_mcp)) = require_browser() else {
        return;
    };
    let default = tools_list(&playwright_mcp, &chromium, &[]);
    let all = tools_list(
        &playwright_mcp,
        &chromium,
        &["--caps", "vision,pdf,devtools"],
    );
    assert!(
        default.len() >= 20 && all.len() > default.len(),
        "an unexpectedly short list: {} default tools, {} with every capability",
        default.len(),
        all.len()
    );
    let mut problems = Vec::new();
    for t in default.iter().chain(&all) {
        check(t, &mut problems);
    }
    let listed = |list: &[Value], name: &str| {
        list.iter()
            .any(|t| t["name"].as_str().map(catalogue::bare) == Some(name))
    };
    // What the gateway offers, it offers as Leopold starts the server (no capability): an offered
    // tool the server does not list is a catalogue entry nobody can use.
    for entry in catalogue::TOOLS {
        if entry.offer != Offer::Never && !listed(&default, entry.name) {
            problems.push(format!(
                "{}: offered by the catalogue, not listed by the server Leopold starts",
                entry.name
            ));
        }
        if !listed(&all, entry.name) {
            problems.push(format!(
                "{}: catalogued, but the server does not have it",
                entry.name
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
