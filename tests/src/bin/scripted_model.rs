//! `leopold-scripted-model`: a model server for rehearsing a flow without a model account.
//!
//! Serves the Anthropic Messages streaming API (for Claude Code) and the OpenAI Responses
//! streaming API (for Codex CLI) on one loopback port each, answering from a script (see
//! `leopold_tests::script`), and logs every request it receives as one JSON line.
//!
//! ```text
//! leopold-scripted-model --script FILE [--log FILE] [--port-file FILE]
//!                        [--anthropic-port N] [--openai-port N] [--status CODE]
//! ```
//!
//! `--status CODE` (401, 404, …): every model call (`POST /v1/messages`, `/v1/responses`, and
//! the model list `GET /v1/models`) is answered with that status and the API's error body, as
//! an endpoint refusing the key or the model would; the script is not played.
//!
//! Ports default to 0 (any free port). Once both are bound it writes `{"anthropic":N,"openai":M}`
//! to `--port-file` (atomically) and prints `anthropic=127.0.0.1:N openai=127.0.0.1:M` on stdout.
//!
//! HTTP is the small subset both CLIs use
//! (docs/harness-facts.md#6-driving-the-real-clis-hermetically): one request per connection, a
//! `Content-Length` or chunked body, the whole reply written at once, then `Connection: close`
//! (Codex reads a Responses stream until the connection closes).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use leopold_tests::script::{
    anthropic_tool_results, codex_namespace, openai_tool_results, Script, Step,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const USAGE: &str = "usage: leopold-scripted-model --script FILE [--log FILE] [--port-file FILE] [--anthropic-port N] [--openai-port N] [--status CODE]";
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    Anthropic,
    OpenAi,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic",
            Api::OpenAi => "openai",
        }
    }
}

struct State {
    script: Script,
    log: Option<Mutex<std::fs::File>>,
    seq: AtomicU64,
    /// `--status`: the status every model call gets.
    status: Option<u16>,
}

struct Args {
    script: PathBuf,
    log: Option<PathBuf>,
    port_file: Option<PathBuf>,
    anthropic_port: u16,
    openai_port: u16,
    status: Option<u16>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args_os().skip(1);
    let (mut script, mut log, mut port_file) = (None, None, None);
    let (mut anthropic_port, mut openai_port, mut status) = (0u16, 0u16, None);
    while let Some(flag) = it.next() {
        let flag = flag.to_string_lossy().into_owned();
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.to_owned());
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let port = |v: &std::ffi::OsStr| {
            v.to_string_lossy()
                .parse::<u16>()
                .map_err(|_| format!("{flag}: not a port number\n{USAGE}"))
        };
        match flag.as_str() {
            "--script" => script = Some(PathBuf::from(value)),
            "--log" => log = Some(PathBuf::from(value)),
            "--port-file" => port_file = Some(PathBuf::from(value)),
            "--anthropic-port" => anthropic_port = port(&value)?,
            "--openai-port" => openai_port = port(&value)?,
            "--status" => {
                status = Some(
                    value
                        .to_string_lossy()
                        .parse::<u16>()
                        .ok()
                        .filter(|s| (100..600).contains(s))
                        .ok_or_else(|| format!("--status: not an HTTP status\n{USAGE}"))?,
                )
            }
            _ => return Err(format!("unknown argument {flag}\n{USAGE}")),
        }
    }
    Ok(Args {
        script: script.ok_or_else(|| format!("--script is required\n{USAGE}"))?,
        log,
        port_file,
        anthropic_port,
        openai_port,
        status,
    })
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("leopold-scripted-model: {msg}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(err) = rt.block_on(run(args)) {
        eprintln!("leopold-scripted-model: {err:#}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let script = Script::load(&args.script)?;
    let log = match &args.log {
        Some(p) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("cannot open log {}", p.display()))?,
        )),
        None => None,
    };
    let state = Arc::new(State {
        script,
        log,
        seq: AtomicU64::new(0),
        status: args.status,
    });
    let a = TcpListener::bind(("127.0.0.1", args.anthropic_port))
        .await
        .context("cannot bind the Anthropic port")?;
    let o = TcpListener::bind(("127.0.0.1", args.openai_port))
        .await
        .context("cannot bind the OpenAI port")?;
    let (ap, op) = (a.local_addr()?.port(), o.local_addr()?.port());
    if let Some(p) = &args.port_file {
        write_atomic(
            p,
            json!({"anthropic": ap, "openai": op})
                .to_string()
                .as_bytes(),
        )
        .with_context(|| format!("cannot write port file {}", p.display()))?;
    }
    println!("anthropic=127.0.0.1:{ap} openai=127.0.0.1:{op}");
    tokio::spawn(serve(a, Api::Anthropic, state.clone()));
    tokio::spawn(serve(o, Api::OpenAi, state));
    // Run until killed; a closed stdin is not a reason to stop (tests start it with stdin null).
    std::future::pending::<()>().await;
    Ok(())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let mut tmp = tempfile::NamedTempFile::new_in(dir.unwrap_or(Path::new(".")))?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

async fn serve(listener: TcpListener, api: Api, state: Arc<State>) {
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            if let Err(err) = handle(sock, api, &state).await {
                eprintln!("leopold-scripted-model: {} connection: {err}", api.name());
            }
        });
    }
}

struct Request {
    method: String,
    path: String,
    /// The credential header as it arrived (`x-api-key`, else `authorization`): what the
    /// endpoint was given, logged so a test can tell the key from a box's placeholder.
    credential: Option<String>,
    body: Vec<u8>,
}

async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_owned());
    let mut buf = Vec::with_capacity(8192);
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
        let mut chunk = [0u8; 8192];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut rest = buf[head_end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let target = first.next().unwrap_or_default();
    let path = target.split('?').next().unwrap_or_default().to_owned();
    let (mut length, mut chunked) = (0usize, false);
    let mut credential = None;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        if k == "x-api-key" || (k == "authorization" && credential.is_none()) {
            credential = Some(v.to_owned());
        }
        if k == "content-length" {
            length = v.parse().map_err(|_| bad("bad content-length"))?;
        } else if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        } else if k == "content-encoding" && !v.eq_ignore_ascii_case("identity") {
            return Err(bad("compressed request bodies are not supported"));
        } else if k == "expect" && v.eq_ignore_ascii_case("100-continue") {
            sock.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
    }
    let body = if chunked {
        read_chunked(sock, rest).await?
    } else {
        if length > MAX_BODY {
            return Err(bad("request body too large"));
        }
        while rest.len() < length {
            let mut chunk = vec![0u8; (length - rest.len()).min(1 << 16)];
            let n = sock.read(&mut chunk).await?;
            if n == 0 {
                return Err(bad("connection closed mid-body"));
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        rest.truncate(length);
        rest
    };
    Ok(Some(Request {
        method,
        path,
        credential,
        body,
    }))
}

async fn read_chunked(sock: &mut TcpStream, mut buf: Vec<u8>) -> std::io::Result<Vec<u8>> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_owned());
    let mut body = Vec::new();
    let mut pos = 0usize;
    loop {
        // Make sure a whole size line is buffered.
        let line_end = loop {
            if let Some(i) = buf[pos..].windows(2).position(|w| w == b"\r\n") {
                break pos + i;
            }
            fill(sock, &mut buf).await?;
        };
        let size_text = String::from_utf8_lossy(&buf[pos..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| bad("bad chunk size"))?;
        pos = line_end + 2;
        if size == 0 {
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("request body too large"));
        }
        while buf.len() < pos + size + 2 {
            fill(sock, &mut buf).await?;
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        pos += size + 2;
    }
}

async fn fill(sock: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut chunk = [0u8; 16384];
    let n = sock.read(&mut chunk).await?;
    if n == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed mid-body",
        ));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

async fn handle(mut sock: TcpStream, api: Api, state: &State) -> std::io::Result<()> {
    let Some(req) = read_request(&mut sock).await? else {
        return Ok(());
    };
    let seq = state.seq.fetch_add(1, Ordering::SeqCst) + 1;
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted")
        .to_owned();

    let (status, content_type, reply, reply_kind, tool_results, turn): (
        &str,
        &str,
        String,
        &str,
        Option<usize>,
        Option<usize>,
    ) = match (api, req.method.as_str(), req.path.as_str()) {
        (_, "POST", "/v1/messages" | "/v1/responses") | (_, "GET", "/v1/models")
            if state.status.is_some() =>
        {
            let code = state.status.unwrap_or(500);
            let body = match api {
                Api::Anthropic => json!({"type": "error", "error": {"type": "scripted_error", "message": format!("the scripted model answers {code}")}}),
                Api::OpenAi => json!({"error": {"type": "scripted_error", "code": code, "message": format!("the scripted model answers {code}")}}),
            };
            (
                status_line(code),
                "application/json",
                body.to_string(),
                "status",
                None,
                None,
            )
        }
        (_, "GET", "/v1/models") => (
            "200 OK",
            "application/json",
            json!({"data": [{"id": "scripted", "type": "model"}]}).to_string(),
            "models",
            None,
            None,
        ),
        (Api::Anthropic, "POST", "/v1/messages/count_tokens") => (
            "200 OK",
            "application/json",
            json!({"input_tokens": 1}).to_string(),
            "count_tokens",
            None,
            None,
        ),
        (Api::Anthropic, "POST", "/v1/messages") => {
            let n = anthropic_tool_results(&body);
            let step = state.script.step(n);
            delay(&step).await;
            let turn = turn_of(&step);
            let kind = kind_of(&step);
            if streaming {
                let sse = anthropic_sse(&step, &model, seq);
                ("200 OK", "text/event-stream", sse, kind, Some(n), turn)
            } else {
                let msg = anthropic_message(&step, &model, seq);
                ("200 OK", "application/json", msg.to_string(), kind, Some(n), turn)
            }
        }
        (Api::OpenAi, "POST", "/v1/responses") => {
            let n = openai_tool_results(&body);
            let step = state.script.step(n);
            delay(&step).await;
            let sse = openai_sse(&step, seq);
            (
                "200 OK",
                "text/event-stream",
                sse,
                kind_of(&step),
                Some(n),
                turn_of(&step),
            )
        }
        _ => (
            "404 Not Found",
            "application/json",
            json!({"type": "error", "error": {"type": "not_found_error", "message": "the scripted model serves POST /v1/messages (Anthropic port) and POST /v1/responses (OpenAI port) only"}}).to_string(),
            "not_found",
            None,
            None,
        ),
    };

    log_request(
        state,
        json!({
            "seq": seq,
            "ts_ms": now_ms(),
            "api": api.name(),
            "method": req.method,
            "path": req.path,
            "credential": req.credential,
            "reply": reply_kind,
            "tool_results": tool_results,
            "turn": turn,
            "body": body,
        }),
    );

    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(reply.as_bytes()).await?;
    sock.flush().await?;
    sock.shutdown().await
}

/// The status line's text for `code`.
fn status_line(code: u16) -> &'static str {
    match code {
        401 => "401 Unauthorized",
        403 => "403 Forbidden",
        404 => "404 Not Found",
        429 => "429 Too Many Requests",
        500 => "500 Internal Server Error",
        503 => "503 Service Unavailable",
        _ => "400 Bad Request",
    }
}

async fn delay(step: &Step<'_>) {
    if let Step::Calls { delay_ms, .. } = step {
        if *delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(*delay_ms)).await;
        }
    }
}

fn turn_of(step: &Step<'_>) -> Option<usize> {
    match step {
        Step::Calls { turn, .. } => Some(*turn),
        Step::Final(_) => None,
    }
}

fn kind_of(step: &Step<'_>) -> &'static str {
    match step {
        Step::Calls { .. } => "tool_calls",
        Step::Final(_) => "final",
    }
}

fn log_request(state: &State, line: Value) {
    if let Some(log) = &state.log {
        let mut text = line.to_string();
        text.push('\n');
        // One write per line, on an O_APPEND file: lines never interleave.
        let mut f = log.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = std::io::Write::write_all(&mut *f, text.as_bytes()) {
            eprintln!("leopold-scripted-model: cannot write the request log: {err}");
        }
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn sse(out: &mut String, event: &str, data: &Value) {
    out.push_str("event: ");
    out.push_str(event);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

fn anthropic_blocks(step: &Step<'_>, seq: u64) -> (Vec<Value>, &'static str) {
    match step {
        Step::Calls { turn, calls, .. } => (
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    json!({"type": "tool_use", "id": format!("toolu_scripted_{turn}_{i}_{seq}"),
                           "name": c.tool, "input": c.input})
                })
                .collect(),
            "tool_use",
        ),
        Step::Final(text) => (vec![json!({"type": "text", "text": text})], "end_turn"),
    }
}

fn anthropic_message(step: &Step<'_>, model: &str, seq: u64) -> Value {
    let (content, stop) = anthropic_blocks(step, seq);
    json!({"id": format!("msg_scripted_{seq}"), "type": "message", "role": "assistant",
           "model": model, "content": content, "stop_reason": stop, "stop_sequence": null,
           "usage": {"input_tokens": 1, "output_tokens": 1}})
}

fn anthropic_sse(step: &Step<'_>, model: &str, seq: u64) -> String {
    let mut out = String::new();
    sse(
        &mut out,
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_scripted_{seq}"), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    );
    let (blocks, stop) = anthropic_blocks(step, seq);
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        sse(
            &mut out,
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        sse(
            &mut out,
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        sse(
            &mut out,
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }
    sse(
        &mut out,
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 1}}),
    );
    sse(&mut out, "message_stop", &json!({"type": "message_stop"}));
    out
}

fn openai_sse(step: &Step<'_>, seq: u64) -> String {
    let id = format!("resp_scripted_{seq}");
    let mut out = String::new();
    sse(
        &mut out,
        "response.created",
        &json!({"type": "response.created", "response": {"id": id}}),
    );
    let items: Vec<Value> = match step {
        Step::Calls { turn, calls, .. } => calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut item = json!({"type": "function_call", "id": format!("fc_scripted_{turn}_{i}_{seq}"),
                    "call_id": format!("call_scripted_{turn}_{i}_{seq}"), "name": c.tool,
                    "arguments": c.input.to_string()});
                if let Some((namespace, bare)) = codex_namespace(&c.tool) {
                    item["namespace"] = json!(namespace);
                    item["name"] = json!(bare);
                }
                item
            })
            .collect(),
        Step::Final(text) => vec![json!({"type": "message", "id": format!("msg_scripted_{seq}"),
            "role": "assistant", "content": [{"type": "output_text", "text": text}]})],
    };
    for (i, item) in items.into_iter().enumerate() {
        sse(
            &mut out,
            "response.output_item.done",
            &json!({"type": "response.output_item.done", "output_index": i, "item": item}),
        );
    }
    sse(
        &mut out,
        "response.completed",
        &json!({"type": "response.completed", "response": {"id": id,
            "usage": {"input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
                      "output_tokens_details": null, "total_tokens": 2}}}),
    );
    out
}
