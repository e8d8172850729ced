//! `leopold-fake-worker`: stands in for `claude`/`codex` in the supervisor's lifecycle tests
//! (passed with `--harness-bin`). It complements, never replaces, the runs of the real CLIs.
//!
//! It follows a script (env `FAKE_WORKER_SCRIPT`, a file): each line is either a stream line
//! printed as is, or a directive:
//!
//! - `@stream FILE`: print every line of FILE (relative to the script's directory), e.g. a real
//!   capture from `tests/captures/`;
//! - `@sleep MS`;
//! - `@ignore-sigterm`: from now on SIGTERM does nothing (the supervisor must SIGKILL);
//! - `@grandchild SECS`: start a process that holds our stdout for SECS seconds, in our group
//!   (its pid goes to `$FAKE_WORKER_RECORD.grandchild`);
//! - `@long N`: print one line of N bytes (no newline inside);
//! - `@crash`: abort (SIGABRT), as a crashing harness would;
//! - `@exit N`: exit with N at once;
//! - `@fail-once FILE N`: if FILE does not exist, create it and exit with N; else go on (a
//!   run that fails its first attempt only: a suite's `--attempts`);
//! - `@guard TOOL URL`: act as Claude Code would for one tool call: run every PreToolUse hook
//!   command from the `--settings` file we were given through `sh -c` with the hook payload, then
//!   print the `tool_use` and its `tool_result` (an error result if a hook exited 2);
//! - `@guard-codex TOOL URL`: the same as Codex would: the hook commands come from
//!   `$CODEX_HOME/config.toml`; a denied call leaves no item in the stream, an allowed one an
//!   `mcp_tool_call` item.
//! - `@mcp SERVER TOOL JSON`: act as a harness whose hook did not run: start MCP server SERVER
//!   as the worker's own MCP config says (Claude's `--mcp-config` file, or Codex's
//!   `-c mcp_servers.SERVER.command/args`), `initialize` it (offering the `roots` capability),
//!   list its tools, call TOOL with the JSON arguments, and print what the harness would (Claude:
//!   `tool_use` and `tool_result`, with `--mcp-config`; else a Codex `mcp_tool_call` item, `failed`
//!   for an error result). Records `{op:"mcp", tools, is_error, text, roots_asked}`.
//! - `@mcp-raw SERVER LINE`: initialize SERVER, then send LINE as it is and record the answer.
//! - `@mcp-send SERVER JSON`: initialize SERVER, then send each message of the JSON array as a
//!   line of its own (one write: nothing waits between them), then a `ping`; records every
//!   answer that came before the ping's, `{op:"mcp-send", answers}`;
//! - `@mcp-hold SERVER MS`: initialize SERVER, record `{op:"mcp-hold"}`, and hold the session
//!   open for MS milliseconds.
//! - `@mcp-bench SERVER N TOOL JSON`: one session to SERVER as the config says (the gateway's
//!   relay in a run) and one to the server started directly (`$FAKE_WORKER_DIRECT_MCP`, a JSON
//!   array `[command, args…]`), then N calls of TOOL on each, alternating; records every call's
//!   latency in µs, `{op:"mcp-bench", gateway_us, direct_us}` (`scripts/bench-gateway.sh`).
//!
//! Adversary directives (the box's tests: anything the OS allows, each outcome appended as one
//! JSON line to `$FAKE_WORKER_RESULTS`; `${VAR}` in an argument is replaced by the variable):
//!
//! - `@get URL`: an HTTP GET over a plain TCP connection (no proxy), `http://host:port/path`;
//! - `@connect TARGET`: `CONNECT TARGET` to the box's model relay (the authority of
//!   `$ANTHROPIC_BASE_URL`, else `$OPENAI_BASE_URL`), as to a proxy; records the status line;
//! - `@proxy-get URL`: `GET URL` in absolute form to the same relay, as to a proxy; records the
//!   status line;
//! - `@write PATH`: append a line to PATH (created if missing);
//! - `@read PATH`: read PATH whole (records the byte count only);
//! - `@detach SECS URL FILE`: start a child in a new session (`setsid`), not waited for, with
//!   stdio on /dev/null, that sleeps SECS, then GETs URL and writes FILE: it acts after the run;
//! - `@sh CMD`: `sh -c CMD` (curl, python, …), records the exit code;
//! - `@alloc MIB`: allocates MIB mebibytes and touches every page, holding them until it exits
//!   (records `{op:"alloc"}` once all are held);
//! - `@events N LINE`: sends LINE N times as a datagram to the guard's event socket
//!   (`$LEOPOLD_EVENTS_SOCKET`), as a forger or a flood would; records how many were sent.
//!
//! At start, if `FAKE_WORKER_RECORD` is set, it writes `{argv, pid, pgid, cwd, stdin_is_null,
//! run_id, mono_ns}` there as JSON. With `--version` it prints `FAKE_WORKER_VERSION` (default a
//! Claude Code version line) and exits, after sleeping `FAKE_WORKER_VERSION_HANG` seconds if set.
//! With `debug models` it prints a one-model catalog in Codex 0.171.0's shape, every tool field on
//! (Leopold reads a Codex's catalog before the run: `harness::codex_catalog`).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]
#![allow(unsafe_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn out(line: &str) {
    let mut o = std::io::stdout().lock();
    if writeln!(o, "{line}").and_then(|()| o.flush()).is_err() {
        std::process::exit(0);
    }
}

fn record(path: &Path, argv: &[String]) {
    // SAFETY: getpgrp(2) has no preconditions.
    let pgid = unsafe { libc::getpgrp() };
    let mut stdin_bytes = Vec::new();
    let stdin_is_null =
        std::io::stdin().read_to_end(&mut stdin_bytes).is_ok() && stdin_bytes.is_empty();
    let v = serde_json::json!({
        "argv": argv,
        "pid": std::process::id(),
        "pgid": pgid,
        "cwd": std::env::current_dir().ok(),
        "stdin_is_null": stdin_is_null,
        "run_id": std::env::var("LEOPOLD_RUN_ID").ok(),
        // CLOCK_MONOTONIC (shared with the host: the box has no time namespace), so a benchmark
        // can tell when the worker really started, inside the box or not.
        "mono_ns": mono_ns(),
    });
    // Workers of a suite run side by side and share this path: each writes a temporary file of
    // its own, named at random (a boxed worker's pid is its PID namespace's, the same in every
    // box), so one's rename cannot take away the file another is about to rename.
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).expect("create record");
    tmp.write_all(v.to_string().as_bytes())
        .expect("write record");
    tmp.persist(path).expect("rename record");
}

fn mono_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

fn settings_hooks(argv: &[String]) -> Vec<String> {
    let Some(i) = argv.iter().position(|a| a == "--settings") else {
        return Vec::new();
    };
    let Some(file) = argv.get(i + 1) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut cmds = Vec::new();
    for m in doc["hooks"]["PreToolUse"].as_array().into_iter().flatten() {
        for h in m["hooks"].as_array().into_iter().flatten() {
            if let Some(c) = h["command"].as_str() {
                cmds.push(c.to_owned());
            }
        }
    }
    cmds
}

fn codex_hooks() -> Vec<String> {
    let Some(home) = std::env::var_os("CODEX_HOME") else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(Path::new(&home).join("config.toml")).unwrap_or_default();
    let doc: toml::Value = toml::from_str(&text).unwrap_or(toml::Value::Boolean(false));
    let mut cmds = Vec::new();
    let groups = doc
        .get("hooks")
        .and_then(|h| h.get("PreToolUse"))
        .and_then(|g| g.as_array());
    for g in groups.into_iter().flatten() {
        for h in g
            .get("hooks")
            .and_then(|h| h.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(c) = h.get("command").and_then(|c| c.as_str()) {
                cmds.push(c.to_owned());
            }
        }
    }
    cmds
}

/// Runs the hook commands on one call (as both harnesses do, through a shell, with
/// `CLAUDE_PROJECT_DIR` set); the first deny's reason (exit 2) if one denied it.
fn run_hooks(cmds: &[String], tool: &str, input: &serde_json::Value, id: &str) -> Option<String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let payload = serde_json::json!({"session_id":"fake","hook_event_name":"PreToolUse","cwd":cwd,"tool_name":tool,"tool_input":input,"tool_use_id":id});
    for cmd in cmds {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(&cwd)
            .env("CLAUDE_PROJECT_DIR", &cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hook");
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        let o = child.wait_with_output().expect("hook output");
        eprintln!("fake-worker: hook exit {:?}", o.status.code());
        if o.status.code() == Some(2) {
            return Some(String::from_utf8_lossy(&o.stderr).trim().to_owned());
        }
    }
    None
}

fn guard_call_codex(n: &mut u32, tool: &str, url: &str) {
    *n += 1;
    let id = format!("item_fake_{n}");
    let input = serde_json::json!({"url": url});
    if run_hooks(&codex_hooks(), tool, &input, &id).is_some() {
        return;
    }
    let mut parts = tool.splitn(3, "__");
    let (_, server, bare) = (
        parts.next(),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let item = |status: &str| serde_json::json!({"id":id,"type":"mcp_tool_call","server":server,"tool":bare,"arguments":input,"status":status});
    out(&serde_json::json!({"type":"item.started","item":item("in_progress")}).to_string());
    out(&serde_json::json!({"type":"item.completed","item":item("completed")}).to_string());
}

fn guard_call(argv: &[String], n: &mut u32, tool: &str, url: &str) {
    *n += 1;
    let id = format!("toolu_fake_{n}");
    let input = serde_json::json!({"url": url});
    out(&serde_json::json!({"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","content":[{"type":"tool_use","id":id,"name":tool,"input":input}]}}).to_string());
    let result = match run_hooks(&settings_hooks(argv), tool, &input, &id) {
        Some(reason) => {
            serde_json::json!({"type":"tool_result","tool_use_id":id,"content":format!("PreToolUse:{tool} hook error: {reason}"),"is_error":true})
        }
        None => {
            serde_json::json!({"type":"tool_result","tool_use_id":id,"content":[{"type":"text","text":"navigated"}]})
        }
    };
    out(
        &serde_json::json!({"type":"user","message":{"role":"user","content":[result]}})
            .to_string(),
    );
}

/// Appends one outcome line to `$FAKE_WORKER_RESULTS`.
fn result(v: serde_json::Value) {
    let Some(p) = std::env::var_os("FAKE_WORKER_RESULTS") else {
        return;
    };
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
    {
        // One write per line: `writeln!` on a `File` writes piece by piece, and a test may
        // read the file while this process still appends.
        let _ = f.write_all(format!("{v}\n").as_bytes());
    }
}

/// `${VAR}` replaced by the variable's value (empty when unset).
fn expand(arg: &str) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let Some(j) = rest[i..].find('}') else {
            out.push_str(&rest[i..]);
            return out;
        };
        out.push_str(&std::env::var(&rest[i + 2..i + j]).unwrap_or_default());
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    out
}

/// A GET over plain TCP; `Ok(status line)` or the error.
fn http_get(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("http://").ok_or("not http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    use std::net::ToSocketAddrs as _;
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    Ok(text.lines().next().unwrap_or("").to_owned())
}

/// Sends `METHOD TARGET` to the box's model relay as to a proxy; the answer's status line.
fn via_relay(method: &str, target: &str, host: &str) -> Result<String, String> {
    let base = std::env::var("ANTHROPIC_BASE_URL")
        .or_else(|_| std::env::var("OPENAI_BASE_URL"))
        .map_err(|_| "no model base URL".to_owned())?;
    let rest = base
        .strip_prefix("http://")
        .ok_or("the base URL is not http://")?;
    let authority = rest.split('/').next().unwrap_or(rest).to_owned();
    let mut s = std::net::TcpStream::connect(&authority).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    write!(s, "{method} {target} HTTP/1.1\r\nHost: {host}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or("")
        .to_owned())
}

/// SERVER's command and arguments, from the worker's own argv.
fn mcp_server_command(argv: &[String], server: &str) -> Option<(String, Vec<String>)> {
    if let Some(i) = argv.iter().position(|a| a == "--mcp-config") {
        let text = std::fs::read_to_string(argv.get(i + 1)?).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let s = &v["mcpServers"][server];
        let cmd = s["command"].as_str()?.to_owned();
        let args = s["args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        return Some((cmd, args));
    }
    let mut doc = String::new();
    for w in argv.windows(2) {
        if w[0] == "-c" && w[1].starts_with(&format!("mcp_servers.{server}.")) {
            doc.push_str(&w[1]);
            doc.push('\n');
        }
    }
    let t: toml::Table = doc.parse().ok()?;
    let s = t.get("mcp_servers")?.get(server)?;
    let cmd = s.get("command")?.as_str()?.to_owned();
    let args = s
        .get("args")
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Some((cmd, args))
}

/// A minimal MCP client session over a child's stdio.
struct Mcp {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
    roots_asked: Vec<serde_json::Value>,
}

impl Mcp {
    /// Kills the server and reaps it.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn start(argv: &[String], server: &str) -> Result<Mcp, String> {
        let (cmd, args) =
            mcp_server_command(argv, server).ok_or(format!("no MCP server {server} in argv"))?;
        Mcp::spawn(&cmd, &args)
    }

    fn spawn(cmd: &str, args: &[String]) -> Result<Mcp, String> {
        let mut child = Command::new(cmd)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| e.to_string())?;
        let out = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut m = Mcp {
            child,
            out,
            roots_asked: Vec::new(),
        };
        m.request(0, "initialize", serde_json::json!({"protocolVersion":"2025-06-18",
            "capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"fake-worker","version":"0"}}))?;
        m.send(
            &serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
        )?;
        Ok(m)
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.child.stdin.as_mut().ok_or("no stdin")?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| e.to_string())
    }

    /// Sends a request and waits for the answer with its id; a request from the server on the
    /// way is answered as a harness would (its cwd as the one root) and remembered.
    fn request(
        &mut self,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        self.send(
            &serde_json::json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
                .to_string(),
        )?;
        self.answer(&serde_json::json!(id))
    }

    fn answer(&mut self, id: &serde_json::Value) -> Result<serde_json::Value, String> {
        use std::io::BufRead as _;
        loop {
            let mut line = String::new();
            if self.out.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("the server closed".into());
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if v.get("method").is_some() {
                if let Some(rid) = v.get("id") {
                    self.roots_asked.push(v.clone());
                    let cwd = std::env::current_dir().unwrap_or_default();
                    let a = serde_json::json!({"jsonrpc":"2.0","id":rid,"result":{"roots":[{"uri":format!("file://{}", cwd.display())}]}});
                    self.send(&a.to_string())?;
                }
                continue;
            }
            if v.get("id") == Some(id) || id.is_null() {
                return Ok(v);
            }
        }
    }
}

fn mcp_call(argv: &[String], n: &mut u32, arg: &str) {
    *n += 1;
    let mut parts = arg.splitn(3, ' ');
    let (server, tool, json) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("{}"),
    );
    let input: serde_json::Value = serde_json::from_str(json).unwrap_or(serde_json::json!({}));
    let r = (|| {
        let mut m = Mcp::start(argv, server)?;
        let list = m.request(1, "tools/list", serde_json::json!({}))?;
        let tools: Vec<String> = list["result"]["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let res = m.request(
            2,
            "tools/call",
            serde_json::json!({"name": tool, "arguments": input}),
        )?;
        m.stop();
        Ok::<_, String>((tools, res, m.roots_asked))
    })();
    let id = format!("item_mcp_{n}");
    match r {
        Ok((tools, res, roots)) => {
            let is_error =
                res["result"]["isError"].as_bool().unwrap_or(false) || res.get("error").is_some();
            let text = res["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if argv.iter().any(|a| a == "--mcp-config") {
                // Claude's stream: the tool_use, then its result.
                let name = format!("mcp__{server}__{tool}");
                out(&serde_json::json!({"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","content":[{"type":"tool_use","id":id,"name":name,"input":input}]}}).to_string());
                out(&serde_json::json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":[{"type":"text","text":text}],"is_error":is_error}]}}).to_string());
            } else {
                let item = |status: &str| serde_json::json!({"id":id,"type":"mcp_tool_call","server":server,"tool":tool,"arguments":input,"status":status});
                out(
                    &serde_json::json!({"type":"item.started","item":item("in_progress")})
                        .to_string(),
                );
                let done = if is_error { "failed" } else { "completed" };
                out(&serde_json::json!({"type":"item.completed","item":item(done)}).to_string());
            }
            result(
                serde_json::json!({"op":"mcp","tool":tool,"tools":tools,"is_error":is_error,"text":text,"roots_asked":roots}),
            );
        }
        Err(e) => result(serde_json::json!({"op":"mcp","tool":tool,"ok":false,"detail":e})),
    }
}

fn mcp_bench(argv: &[String], arg: &str) {
    let mut parts = arg.splitn(4, ' ');
    let (server, n, tool, json) = (
        parts.next().unwrap_or(""),
        parts
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(100),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("{}"),
    );
    let input: serde_json::Value = serde_json::from_str(json).unwrap_or(serde_json::json!({}));
    let r = (|| {
        let direct: Vec<String> = std::env::var("FAKE_WORKER_DIRECT_MCP")
            .ok()
            .and_then(|v| serde_json::from_str(&v).ok())
            .ok_or("FAKE_WORKER_DIRECT_MCP is not a JSON array")?;
        let (cmd, args) = direct.split_first().ok_or("empty FAKE_WORKER_DIRECT_MCP")?;
        let mut gw = Mcp::start(argv, server)?;
        let mut dr = Mcp::spawn(cmd, args)?;
        let params = serde_json::json!({"name": tool, "arguments": input});
        let (mut g, mut d) = (Vec::new(), Vec::new());
        for i in 0..n {
            for (m, out) in [(&mut gw, &mut g), (&mut dr, &mut d)] {
                let t = std::time::Instant::now();
                let a = m.request(10 + i, "tools/call", params.clone())?;
                if a.get("result").is_none() || a["result"]["isError"].as_bool().unwrap_or(false) {
                    return Err(format!("the call failed: {a}"));
                }
                out.push(t.elapsed().as_micros() as u64);
            }
        }
        for m in [&mut gw, &mut dr] {
            m.stop();
        }
        Ok::<_, String>((g, d))
    })();
    match r {
        Ok((g, d)) => result(serde_json::json!({"op":"mcp-bench","gateway_us":g,"direct_us":d})),
        Err(e) => result(serde_json::json!({"op":"mcp-bench","ok":false,"detail":e})),
    }
}

fn mcp_raw(argv: &[String], arg: &str) {
    let (server, line) = arg.split_once(' ').unwrap_or((arg, ""));
    let r = (|| {
        let mut m = Mcp::start(argv, server)?;
        m.send(line)?;
        let a = m.answer(&serde_json::Value::Null)?;
        m.stop();
        Ok::<_, String>(a)
    })();
    answered("mcp-raw", "answer", r);
}

/// The result line of `op`: the answer under `key`, or `ok: false` with why there is none.
fn answered(op: &str, key: &str, r: Result<impl serde::Serialize, String>) {
    match r {
        Ok(a) => {
            let mut line = serde_json::Map::new();
            line.insert("op".into(), op.into());
            line.insert(key.into(), serde_json::json!(a));
            result(line.into());
        }
        Err(e) => result(serde_json::json!({"op":op,"ok":false,"detail":e})),
    }
}

fn mcp_send(argv: &[String], arg: &str) {
    let (server, json) = arg.split_once(' ').unwrap_or((arg, ""));
    let r = (|| {
        let msgs: Vec<serde_json::Value> =
            serde_json::from_str(json).map_err(|e| format!("not a JSON array: {e}"))?;
        let mut m = Mcp::start(argv, server)?;
        let mut lines: Vec<String> = msgs.iter().map(ToString::to_string).collect();
        lines.push(
            serde_json::json!({"jsonrpc":"2.0","id":"fake-worker-sync","method":"ping"})
                .to_string(),
        );
        m.send(&lines.join("\n"))?;
        let mut answers = Vec::new();
        loop {
            let a = m.answer(&serde_json::Value::Null)?;
            if a["id"] == "fake-worker-sync" {
                break;
            }
            answers.push(a);
        }
        m.stop();
        Ok::<_, String>(answers)
    })();
    answered("mcp-send", "answers", r);
}

fn adversary(name: &str, arg: &str) -> bool {
    let arg = expand(arg.trim());
    match name {
        "get" => {
            let r = http_get(&arg);
            result(
                serde_json::json!({"op":"get","url":arg,"ok":r.is_ok(),"detail":r.unwrap_or_else(|e| e)}),
            );
        }
        "proxy-get" => {
            let host = arg
                .strip_prefix("http://")
                .and_then(|r| r.split('/').next())
                .unwrap_or("")
                .to_owned();
            let r = via_relay("GET", &arg, &host);
            result(
                serde_json::json!({"op":"proxy-get","url":arg,"ok":r.is_ok(),"detail":r.unwrap_or_else(|e| e)}),
            );
        }
        "connect" => {
            let r = via_relay("CONNECT", &arg, &arg);
            result(
                serde_json::json!({"op":"connect","target":arg,"ok":r.is_ok(),"detail":r.unwrap_or_else(|e| e)}),
            );
        }
        "write" => {
            let r = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&arg)
                .and_then(|mut f| f.write_all(b"written by the persona\n"));
            result(
                serde_json::json!({"op":"write","path":arg,"ok":r.is_ok(),"detail":r.err().map(|e| e.to_string())}),
            );
        }
        "read" => {
            let r = std::fs::read(&arg);
            result(
                serde_json::json!({"op":"read","path":arg,"ok":r.is_ok(),"bytes":r.as_ref().map(Vec::len).unwrap_or(0),"detail":r.err().map(|e| e.to_string())}),
            );
        }
        "detach" => {
            use std::os::unix::process::CommandExt as _;
            let exe = std::env::current_exe().expect("current exe");
            let parts: Vec<&str> = arg.splitn(3, ' ').collect();
            let mut cmd = Command::new(exe);
            cmd.arg("--detached")
                .args(&parts)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: setsid(2) in the child before exec; async-signal-safe, no shared memory.
            unsafe {
                cmd.pre_exec(|| {
                    libc::setsid();
                    Ok(())
                });
            }
            // Deliberately never waited for: it must try to outlive the run.
            #[allow(clippy::zombie_processes)]
            let r = cmd.spawn();
            result(
                serde_json::json!({"op":"detach","ok":r.is_ok(),"pid":r.as_ref().map(|c| c.id()).ok()}),
            );
        }
        "alloc" => {
            let mib: usize = arg.parse().unwrap_or(0);
            let mut held: Vec<Vec<u8>> = Vec::with_capacity(mib);
            for _ in 0..mib {
                let mut chunk = vec![0u8; 1 << 20];
                for i in (0..chunk.len()).step_by(4096) {
                    chunk[i] = 1;
                }
                held.push(chunk);
            }
            result(serde_json::json!({"op":"alloc","mib":mib,"ok":true}));
            // Held until the process exits.
            std::mem::forget(held);
        }
        "events" => {
            let (n, line) = arg.split_once(' ').unwrap_or((arg.as_str(), ""));
            let n: usize = n.parse().unwrap_or(0);
            let sock = std::os::unix::net::UnixDatagram::unbound().expect("datagram socket");
            let to = std::env::var_os("LEOPOLD_EVENTS_SOCKET").unwrap_or_default();
            let sent = (0..n)
                .filter(|_| sock.send_to(line.as_bytes(), &to).is_ok())
                .count();
            result(serde_json::json!({"op":"events","sent":sent,"ok":sent == n}));
        }
        "sh" => {
            let r = Command::new("sh")
                .arg("-c")
                .arg(&arg)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            result(
                serde_json::json!({"op":"sh","cmd":arg,"ok":r.as_ref().is_ok_and(|s| s.success()),"code":r.ok().and_then(|s| s.code())}),
            );
        }
        _ => return false,
    }
    true
}

/// The detached child of `@detach`: after SECS, GET URL and write FILE.
fn detached(args: &[String]) {
    let secs: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1);
    std::thread::sleep(Duration::from_secs(secs));
    if let Some(url) = args.get(1) {
        let _ = http_get(url);
    }
    if let Some(file) = args.get(2) {
        let _ = std::fs::write(file, "the detached child acted after the run\n");
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--detached") {
        detached(&argv[1..]);
        return;
    }
    if argv.first().map(String::as_str) == Some("--version") {
        // A harness stuck before it answers (the supervisor must not wait for it).
        if let Some(secs) = std::env::var("FAKE_WORKER_VERSION_HANG")
            .ok()
            .and_then(|s| s.parse().ok())
        {
            std::thread::sleep(Duration::from_secs(secs));
        }
        out(&std::env::var("FAKE_WORKER_VERSION")
            .unwrap_or_else(|_| "2.1.332 (Claude Code)".into()));
        return;
    }
    if argv.iter().map(String::as_str).eq(["debug", "models"]) {
        out(
            r#"{"models":[{"slug":"fake","supports_search_tool":true,"apply_patch_tool_type":"freeform","tool_mode":"code_mode_only","multi_agent_version":"v2","experimental_supported_tools":["clock"]}]}"#,
        );
        return;
    }
    if argv.first().map(String::as_str) == Some("--hold") {
        let secs: u64 = argv.get(1).and_then(|s| s.parse().ok()).unwrap_or(30);
        std::thread::sleep(Duration::from_secs(secs));
        return;
    }
    if let Some(p) = std::env::var_os("FAKE_WORKER_RECORD") {
        record(Path::new(&p), &argv);
    }
    let Some(script) = std::env::var_os("FAKE_WORKER_SCRIPT").map(PathBuf::from) else {
        eprintln!("fake-worker: FAKE_WORKER_SCRIPT is not set");
        std::process::exit(97);
    };
    let text = std::fs::read_to_string(&script).unwrap_or_else(|e| {
        eprintln!("fake-worker: cannot read {}: {e}", script.display());
        std::process::exit(98);
    });
    let base = script.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut calls = 0u32;
    for line in text.lines() {
        let Some(directive) = line.strip_prefix('@') else {
            if !line.trim().is_empty() {
                out(line);
            }
            continue;
        };
        let (name, arg) = directive.split_once(' ').unwrap_or((directive, ""));
        match name {
            "stream" => {
                let path = base.join(arg.trim());
                let s = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                    eprintln!("fake-worker: cannot read {}: {e}", path.display());
                    std::process::exit(98);
                });
                for l in s.lines() {
                    out(l);
                }
            }
            "sleep" => std::thread::sleep(Duration::from_millis(arg.trim().parse().unwrap_or(0))),
            // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
            "ignore-sigterm" => unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            },
            "grandchild" => {
                let exe = std::env::current_exe().expect("current exe");
                // Deliberately never waited for: it must outlive us holding our stdout.
                #[allow(clippy::zombie_processes)]
                let child = Command::new(exe)
                    .args(["--hold", arg.trim()])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("spawn grandchild");
                if let Some(p) = std::env::var_os("FAKE_WORKER_RECORD") {
                    let mut p = PathBuf::from(p).into_os_string();
                    p.push(".grandchild");
                    std::fs::write(&p, child.id().to_string()).expect("write grandchild pid");
                }
            }
            "long" => out(&"x".repeat(arg.trim().parse().unwrap_or(0))),
            "crash" => std::process::abort(),
            "exit" => std::process::exit(arg.trim().parse().unwrap_or(1)),
            "fail-once" => {
                let (file, code) = arg.trim().rsplit_once(' ').unwrap_or((arg.trim(), "1"));
                if std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(file)
                    .is_ok()
                {
                    std::process::exit(code.parse().unwrap_or(1));
                }
            }
            "guard-codex" => {
                let (tool, url) = arg.split_once(' ').unwrap_or((arg, ""));
                guard_call_codex(&mut calls, tool.trim(), url.trim());
            }
            "guard" => {
                let (tool, url) = arg.split_once(' ').unwrap_or((arg, ""));
                guard_call(&argv, &mut calls, tool.trim(), url.trim());
            }
            "mcp" => mcp_call(&argv, &mut calls, arg.trim()),
            "mcp-raw" => mcp_raw(&argv, arg.trim()),
            "mcp-send" => mcp_send(&argv, arg.trim()),
            "mcp-bench" => mcp_bench(&argv, arg.trim()),
            "mcp-hold" => {
                let (server, ms) = arg.trim().split_once(' ').unwrap_or((arg.trim(), "0"));
                match Mcp::start(&argv, server) {
                    Ok(m) => {
                        result(serde_json::json!({"op":"mcp-hold","ok":true}));
                        std::thread::sleep(Duration::from_millis(ms.parse().unwrap_or(0)));
                        drop(m);
                    }
                    Err(e) => result(serde_json::json!({"op":"mcp-hold","ok":false,"detail":e})),
                }
            }
            other if adversary(other, arg) => {}
            other => {
                eprintln!("fake-worker: unknown directive @{other}");
                std::process::exit(99);
            }
        }
    }
}
