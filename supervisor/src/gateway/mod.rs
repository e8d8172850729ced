//! The gateway: every MCP server the worker gets is reached through the supervisor, which
//! judges each message before the real server sees it (README "The gateway").
//!
//! For each server (a stdio server of `--mcp-config`, or the provisioned Playwright browser)
//! the supervisor listens on `<sock dir>/mcp-<server>.sock`; the worker's MCP config names
//! `leopold persona mcp-relay --socket <that>` instead of the server. For every connection the
//! gateway starts the real server here, outside the box (its working directory the run's
//! browser output folder, never the project), and relays newline-delimited JSON-RPC:
//!
//! - a `tools/call` goes on only if the browser tool catalogue offers it ([`policy::catalogue`]) and the
//!   guard's own decision allows it; a denied call is answered here with an MCP tool error
//!   carrying the guard's one-line message, and is never forwarded. This holds whether or not
//!   the harness ran its hook (on Codex a hook that cannot run fails open, HARNESS-FACTS §1);
//! - `initialize`: the client's `roots` capability is replaced by the gateway's; the server's
//!   `roots/list` is answered with the output folder alone; `tools/list` results are filtered;
//! - anything the gateway cannot parse or judge is refused with a named reason.
//!
//! Every call and answer is journaled in `gateway.jsonl` (tool, verdict, reason, the call
//! reduced as events.jsonl reduces it, the page's host and title), the record the run's
//! journal is compared with at the end ([`Shared::compare`]); hash-chained as the journal is,
//! its head kept in run.json, so that `persona replay` shows a line edited, removed or cut.

pub mod policy;
pub mod relay;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use leopold_journal::JournalHash;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::browser::RefTracker;
use policy::Policy;

/// The gateway's own record, in the run directory.
pub const RECORD_FILE: &str = leopold_journal::replay::GATEWAY_RECORD;
/// The longest message the gateway reads; a longer line closes the connection.
const MAX_LINE: u64 = 32 << 20;

/// The socket the worker's relay connects to for `server`.
pub fn socket_path(sock_dir: &Path, server: &str) -> PathBuf {
    sock_dir.join(format!("mcp-{server}.sock"))
}

/// The MCP server entry the worker is given for `server`: this binary's relay.
pub fn relay_server(leopold: &Path, sock_dir: &Path, server: &str) -> crate::worker::McpServer {
    crate::worker::McpServer {
        name: server.to_owned(),
        transport: crate::worker::McpTransport::Stdio {
            command: leopold.display().to_string(),
            args: vec![
                "persona".into(),
                "mcp-relay".into(),
                "--socket".into(),
                socket_path(sock_dir, server).display().to_string(),
            ],
            env: Vec::new(),
        },
    }
}

/// A real server, as the gateway starts it.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Whether it is the provisioned browser (its clicks are judged by the ref map).
    pub provisioned: bool,
}

/// A call the gateway refused, waiting for the observer to meet it in the harness's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayDenial {
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The reason id.
    pub reason: String,
}

/// What the gateway and the observer share, in-process.
#[derive(Debug, Default)]
pub struct Shared {
    /// Denials the observer has not matched to a stream action yet.
    pub denials: VecDeque<GatewayDenial>,
    /// Calls forwarded to a server, by `mcp__<server>__<tool>`.
    pub forwarded: BTreeMap<String, u64>,
    /// Calls denied, by tool.
    pub denied: BTreeMap<String, u64>,
    /// The servers behind the gateway.
    pub servers: Vec<String>,
}

impl Shared {
    /// Whether `tool` is one of the gateway's servers' tools.
    pub fn covers(&self, tool: &str) -> bool {
        self.servers.iter().any(|s| {
            tool.strip_prefix("mcp__")
                .and_then(|r| r.strip_prefix(s.as_str()))
                .is_some_and(|r| r.starts_with("__"))
        })
    }

    /// Takes the first unmatched denial of `tool`.
    pub fn take_denial(&mut self, tool: &str) -> Option<GatewayDenial> {
        let i = self.denials.iter().position(|d| d.tool == tool)?;
        self.denials.remove(i)
    }

    /// The calls one record holds and the other does not: `stream` counts the harness-stream
    /// calls (not denied before the gateway) by tool.
    pub fn compare(&self, stream: &BTreeMap<String, u64>) -> Vec<String> {
        let mut out = Vec::new();
        let tools: std::collections::BTreeSet<&String> =
            self.forwarded.keys().chain(stream.keys()).collect();
        for t in tools {
            let g = self.forwarded.get(t).copied().unwrap_or(0);
            let s = stream.get(t).copied().unwrap_or(0);
            if g > s {
                out.push(format!(
                    "the gateway forwarded {g} `{t}` call(s) to the browser; the harness's stream shows {s}"
                ));
            } else if s > g {
                out.push(format!(
                    "the harness's stream shows {s} `{t}` call(s) that reached a server; the gateway forwarded {g}"
                ));
            }
        }
        for d in &self.denials {
            out.push(format!(
                "the gateway denied a `{}` call ({}) that the harness's stream never showed",
                d.tool, d.reason
            ));
        }
        out
    }
}

/// `gateway.jsonl`: one line per call, one per answer. Its own small writer (one `write` per
/// line, `O_APPEND`), apart from the journal's, hash-chained as the journal is
/// ([`leopold_journal::chain`]): each line's last key, `prev`, is the SHA-256 of the line before
/// (64 zeros for line 1), and the run records the head (`end.gateway_hash`).
struct Record {
    file: std::fs::File,
    seq: u64,
    /// The hash of the record's last line (the next line's `prev`); `None` while it has none.
    head: Option<JournalHash>,
    /// Set once the run has taken the head ([`Gateway::seal`]): nothing is written after it.
    sealed: bool,
}

impl Record {
    fn new(file: std::fs::File, head: Option<JournalHash>) -> Record {
        Record {
            file,
            seq: 0,
            head,
            sealed: false,
        }
    }

    fn line(&mut self, mut v: Value) {
        if self.sealed {
            return;
        }
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "ts".into(),
                json!(humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()),
            );
        }
        let mut bytes = v.to_string().into_bytes();
        let prev = self.head.unwrap_or(leopold_journal::GENESIS);
        let Ok(hash) = leopold_journal::chain::link(&mut bytes, &prev) else {
            return; // every line is built as an object
        };
        bytes.push(b'\n');
        // A line that did not reach the file still moves the head: replay then finds the file
        // ending on another hash than the one recorded, which is what happened.
        let _ = self.file.write_all(&bytes);
        self.head = Some(hash);
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}

/// One server's context, shared by its connections.
struct Ctx {
    policy: Policy,
    upstream: Upstream,
    shared: Arc<Mutex<Shared>>,
    record: Arc<Mutex<Record>>,
    refs: Option<Arc<Mutex<RefTracker>>>,
    cwd: PathBuf,
    run_id: String,
    stderr_log: PathBuf,
}

/// What [`start`] needs.
pub struct Start<'a> {
    pub flow: &'a leopold_flows::Flow,
    pub sock_dir: &'a Path,
    /// Whether the gateway creates (and removes) the socket directory itself: a run without
    /// the box has none.
    pub make_sock_dir: bool,
    pub run_dir: &'a Path,
    pub run_id: &'a str,
    /// The run's browser output folder: the servers' working directory and their only root.
    pub output_dir: &'a Path,
    pub servers: Vec<Upstream>,
    /// The provisioned browser's ref map tracker, when there is one.
    pub refs: Option<RefTracker>,
}

/// The running gateway. Dropping it stops it and removes its sockets.
pub struct Gateway {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub shared: Arc<Mutex<Shared>>,
    record: Arc<Mutex<Record>>,
    sockets: Vec<PathBuf>,
    own_dir: Option<PathBuf>,
}

impl Gateway {
    /// Closes `gateway.jsonl` and returns its hash chain's head (the hash of its last line), once
    /// it has one. A line the gateway would write after this (an answer to a worker already gone)
    /// is not written: the head the run records is the record's last line.
    pub fn seal(&self) -> Option<JournalHash> {
        let mut r = self.record.lock().unwrap_or_else(|e| e.into_inner());
        r.sealed = true;
        r.head
    }
}

/// Binds every server's socket and starts serving. Inside a tokio runtime.
pub fn start(s: Start<'_>) -> anyhow::Result<Gateway> {
    if s.make_sock_dir {
        crate::sandbox::make_sock_dir(s.sock_dir)?;
    }
    let own_dir = s.make_sock_dir.then(|| s.sock_dir.to_path_buf());
    std::fs::create_dir_all(s.output_dir)
        .with_context(|| format!("cannot create {}", s.output_dir.display()))?;
    let output_dir = std::fs::canonicalize(s.output_dir)
        .with_context(|| format!("cannot resolve {}", s.output_dir.display()))?;
    let path = s.run_dir.join(RECORD_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    // A record already there (the run's gateway started before) is continued, not restarted.
    let head = std::fs::File::open(&path)
        .ok()
        .and_then(|f| leopold_journal::chain::head_of(std::io::BufReader::new(f)).ok())
        .flatten();
    let record = Arc::new(Mutex::new(Record::new(file, head)));
    let shared = Arc::new(Mutex::new(Shared {
        servers: s.servers.iter().map(|u| u.name.clone()).collect(),
        ..Shared::default()
    }));
    let refs = s.refs.map(|r| Arc::new(Mutex::new(r)));
    let mut gw = Gateway {
        tasks: Vec::new(),
        shared: shared.clone(),
        record: record.clone(),
        sockets: Vec::new(),
        own_dir,
    };
    for up in s.servers {
        let sock = socket_path(s.sock_dir, &up.name);
        let listener = UnixListener::bind(&sock)
            .with_context(|| format!("cannot listen on {}", sock.display()))?;
        gw.sockets.push(sock);
        let ctx = Arc::new(Ctx {
            policy: Policy {
                flow: s.flow.clone(),
                server: up.name.clone(),
                output_dir: output_dir.clone(),
                provisioned: up.provisioned,
            },
            refs: if up.provisioned { refs.clone() } else { None },
            stderr_log: s.run_dir.join(format!("gateway-{}.log", up.name)),
            upstream: up,
            shared: shared.clone(),
            record: record.clone(),
            cwd: output_dir.clone(),
            run_id: s.run_id.to_owned(),
        });
        gw.tasks.push(tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve(conn, &ctx).await {
                        tracing::warn!("gateway `{}`: {e:#}", ctx.upstream.name);
                    }
                });
            }
        }));
    }
    Ok(gw)
}

impl Drop for Gateway {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        for s in &self.sockets {
            let _ = std::fs::remove_file(s);
        }
        if let Some(d) = &self.own_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// What a request the gateway passed on was, to treat its answer.
enum Pending {
    Initialize,
    ToolsList,
    ToolsCall { seq: u64, tool: String },
}

type PendingMap = Arc<Mutex<HashMap<String, Pending>>>;

fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Reads one line of at most [`MAX_LINE`] bytes; `None` at the end or past the limit.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let n = r
        .take(MAX_LINE + 1)
        .read_until(b'\n', &mut buf)
        .await
        .ok()?;
    if n == 0 || buf.len() as u64 > MAX_LINE {
        return None;
    }
    Some(buf)
}

fn send(tx: &mpsc::UnboundedSender<Vec<u8>>, v: &Value) {
    let mut b = v.to_string().into_bytes();
    b.push(b'\n');
    let _ = tx.send(b);
}

/// One connection: the real server started for it, both directions judged.
async fn serve(conn: UnixStream, ctx: &Ctx) -> anyhow::Result<()> {
    let up = &ctx.upstream;
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ctx.stderr_log)
        .map(std::process::Stdio::from)
        .unwrap_or_else(|_| std::process::Stdio::null());
    let mut cmd = std::process::Command::new(&up.command);
    cmd.args(&up.args)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        )
        .env("HOME", &ctx.cwd)
        .env(crate::os::RUN_ID_ENV, &ctx.run_id)
        .envs(up.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&ctx.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr);
    for k in ["LANG", "LC_ALL", "TERM"] {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    // Its own process group, and SIGKILLed by the kernel if the supervisor dies: a server
    // started outside the box must not outlive a SIGKILLed supervisor either.
    crate::os::configure_worker(&mut cmd);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start MCP server `{}` ({})", up.name, up.command))?;
    let mut server_in = child.stdin.take().context("no stdin")?;
    let server_out = child.stdout.take().context("no stdout")?;
    let (client_r, mut client_w) = conn.into_split();

    let (to_client, mut to_client_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let (to_server, mut to_server_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let client_writer = tokio::spawn(async move {
        while let Some(b) = to_client_rx.recv().await {
            if client_w.write_all(&b).await.is_err() {
                break;
            }
        }
        let _ = client_w.shutdown().await;
    });
    let server_writer = tokio::spawn(async move {
        while let Some(b) = to_server_rx.recv().await {
            if server_in.write_all(&b).await.is_err() || server_in.flush().await.is_err() {
                break;
            }
        }
    });
    let pending: PendingMap = Arc::new(Mutex::new(HashMap::new()));

    let from_client = {
        let (to_client, to_server, pending) =
            (to_client.clone(), to_server.clone(), pending.clone());
        async move {
            let mut r = BufReader::new(client_r);
            while let Some(line) = read_line(&mut r).await {
                client_message(ctx, &line, &to_client, &to_server, &pending);
            }
        }
    };
    let from_server = {
        let (to_client, to_server, pending) =
            (to_client.clone(), to_server.clone(), pending.clone());
        async move {
            let mut r = BufReader::new(server_out);
            while let Some(line) = read_line(&mut r).await {
                server_message(ctx, &line, &to_client, &to_server, &pending);
            }
        }
    };
    // Either side closing ends the connection: the relay exits when its socket closes, and
    // the server is stopped (kill on drop) when the client is gone.
    tokio::select! {
        () = from_client => {}
        () = from_server => {}
    }
    drop(to_client);
    drop(to_server);
    server_writer.abort();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), client_writer).await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    Ok(())
}

/// One message from the worker.
fn client_message(
    ctx: &Ctx,
    line: &[u8],
    to_client: &mpsc::UnboundedSender<Vec<u8>>,
    to_server: &mpsc::UnboundedSender<Vec<u8>>,
    pending: &PendingMap,
) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let policy = &ctx.policy;
    let msg: Value = match serde_json::from_slice(line) {
        Ok(v @ Value::Object(_)) => v,
        // Not one JSON-RPC message (a batch, a scalar, not JSON): refused, never forwarded.
        _ => {
            deny_unparsed(ctx, to_client, &Value::Null, "not one JSON-RPC message");
            return;
        }
    };
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    match (method.as_deref(), id) {
        (Some("tools/call"), Some(id)) => {
            let refs_guard = ctx
                .refs
                .as_ref()
                .map(|r| r.lock().unwrap_or_else(|e| e.into_inner()));
            let verdict = policy.judge_call(
                msg.get("params"),
                refs_guard.as_deref().map(RefTracker::map),
            );
            drop(refs_guard);
            match verdict {
                Ok((tool, arguments)) => {
                    let full = policy.full_name(&tool);
                    let seq = {
                        let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
                        let seq = rec.next_seq();
                        rec.line(json!({"event": "call", "seq": seq, "server": policy.server, "tool": tool,
                            "verdict": "allowed", "call": leopold_guard::reduced_call(&full, &arguments)}));
                        seq
                    };
                    *ctx.shared
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .forwarded
                        .entry(full.clone())
                        .or_default() += 1;
                    pending
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id_key(&id), Pending::ToolsCall { seq, tool });
                    let _ = to_server.send(line_of(line));
                }
                Err((tool, denial)) => {
                    let full = tool.as_deref().map(|t| policy.full_name(t));
                    let shown = full
                        .as_deref()
                        .and_then(|t| leopold_guard::safe_text(t, 128));
                    let text =
                        leopold_guard::message(&denial, Some(&policy.flow.name), shown.as_deref());
                    let args = msg
                        .get("params")
                        .and_then(|p| p.get("arguments"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    {
                        let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
                        let seq = rec.next_seq();
                        let tool = tool
                            .as_deref()
                            .and_then(|t| leopold_guard::safe_text(t, 128));
                        rec.line(json!({"event": "call", "seq": seq, "server": policy.server, "tool": tool,
                            "verdict": "denied", "reason": denial.reason.id(),
                            "call": leopold_guard::reduced_call(full.as_deref().unwrap_or(""), &args)}));
                    }
                    if let Some(full) = full {
                        // Before the answer: the observer must know by the time the harness
                        // prints the error result.
                        let mut sh = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
                        *sh.denied.entry(full.clone()).or_default() += 1;
                        sh.denials.push_back(GatewayDenial {
                            tool: full,
                            reason: denial.reason.id().to_owned(),
                        });
                    }
                    send(to_client, &policy::tool_error(&id, &text));
                }
            }
        }
        (Some(m), id) if policy::client_method_passes(m) => {
            let mut msg = msg;
            if let Some(id) = &id {
                let p = match m {
                    "initialize" => Some(Pending::Initialize),
                    "tools/list" => Some(Pending::ToolsList),
                    _ => None,
                };
                if let Some(p) = p {
                    pending
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id_key(id), p);
                }
            }
            if m == "initialize" {
                policy::rewrite_initialize(&mut msg);
                send(to_server, &msg);
            } else {
                let _ = to_server.send(line_of(line));
            }
        }
        (Some(m), Some(id)) => {
            // A request the gateway does not pass on (resources, prompts, completion, …).
            send(
                to_client,
                &policy::rpc_error(
                    &id,
                    -32601,
                    &format!("Leopold's gateway does not pass on `{m}`"),
                ),
            );
        }
        // A notification the gateway does not pass on (roots/list_changed, …): dropped.
        (Some(_), None) => {}
        // A response: to a request the server sent and the gateway passed on. The gateway
        // passes none on (it answers roots/list itself), so nothing is forwarded.
        (None, _) => {}
    }
}

fn deny_unparsed(ctx: &Ctx, to_client: &mpsc::UnboundedSender<Vec<u8>>, id: &Value, what: &str) {
    let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
    let seq = rec.next_seq();
    rec.line(
        json!({"event": "message", "seq": seq, "server": ctx.policy.server, "verdict": "denied",
        "reason": leopold_guard::Reason::GatewayUnjudgeable.id(), "detail": what}),
    );
    drop(rec);
    send(
        to_client,
        &policy::rpc_error(
            id,
            -32600,
            &format!("Leopold's gateway refused the message: {what}"),
        ),
    );
}

fn line_of(line: &[u8]) -> Vec<u8> {
    let mut b = line.to_vec();
    if b.last() != Some(&b'\n') {
        b.push(b'\n');
    }
    b
}

/// One message from the real server.
fn server_message(
    ctx: &Ctx,
    line: &[u8],
    to_client: &mpsc::UnboundedSender<Vec<u8>>,
    to_server: &mpsc::UnboundedSender<Vec<u8>>,
    pending: &PendingMap,
) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let mut msg: Value = match serde_json::from_slice(line) {
        Ok(v @ Value::Object(_)) => v,
        // The server said something that is not one message: it does not reach the worker.
        _ => return,
    };
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = msg.get("id").cloned();
    match (method.as_deref(), id) {
        (Some("roots/list"), Some(id)) => {
            send(
                to_server,
                &policy::roots_answer(&id, &ctx.policy.output_dir),
            );
        }
        (Some(m), Some(id)) => {
            // sampling, elicitation, …: the browser asks the harness nothing.
            send(
                to_server,
                &policy::rpc_error(
                    &id,
                    -32601,
                    &format!("Leopold's gateway does not pass on `{m}`"),
                ),
            );
        }
        (Some(m), None) => {
            if policy::server_notification_passes(m) {
                let _ = to_client.send(line_of(line));
            }
        }
        (None, Some(id)) => {
            let p = pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id_key(&id));
            match p {
                Some(Pending::Initialize) => {
                    if let Some(r) = msg.get_mut("result") {
                        policy::rewrite_initialize_result(r);
                    }
                    send(to_client, &msg);
                }
                Some(Pending::ToolsList) => {
                    if let Some(r) = msg.get_mut("result") {
                        let dropped = policy::filter_tools_list(&ctx.policy, r);
                        if !dropped.is_empty() {
                            tracing::debug!(server = %ctx.policy.server, ?dropped, "tools not listed");
                        }
                    }
                    send(to_client, &msg);
                }
                Some(Pending::ToolsCall { seq, tool }) => {
                    let result = msg.get("result");
                    let text = result.map(policy::result_text).unwrap_or_default();
                    let is_error = result.is_none()
                        || result
                            .and_then(|r| r.get("isError"))
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                    let (host, title) = policy::page_of(&text);
                    if let Some(refs) = &ctx.refs {
                        // The map the guard (and the next call here) judges clicks by, from
                        // the answer itself, before the worker sees it.
                        let full = ctx.policy.full_name(&tool);
                        let _ = refs
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .tool_result(&full, &text);
                    }
                    ctx.record
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .line(json!({
                        "event": "result", "seq": seq, "server": ctx.policy.server, "tool": tool,
                        "is_error": is_error, "page_host": host, "page_title": title}));
                    let _ = to_client.send(line_of(line));
                }
                // An answer to nothing the worker asked: not passed on.
                None => {}
            }
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Wire {
        ctx: Ctx,
        _dir: tempfile::TempDir,
        to_client: mpsc::UnboundedSender<Vec<u8>>,
        client_rx: mpsc::UnboundedReceiver<Vec<u8>>,
        to_server: mpsc::UnboundedSender<Vec<u8>>,
        server_rx: mpsc::UnboundedReceiver<Vec<u8>>,
        pending: PendingMap,
    }

    impl Wire {
        fn new() -> Wire {
            let dir = tempfile::tempdir().unwrap();
            let out = std::fs::canonicalize(dir.path()).unwrap();
            let flow = leopold_flows::Flow::parse(
                "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n+++\nBrief.\n",
                Path::new("flows/checkout.md"),
            )
            .unwrap();
            let file = std::fs::File::create(out.join(RECORD_FILE)).unwrap();
            let ctx = Ctx {
                policy: Policy {
                    flow,
                    server: "browser".into(),
                    output_dir: out.clone(),
                    provisioned: true,
                },
                upstream: Upstream {
                    name: "browser".into(),
                    command: "x".into(),
                    args: Vec::new(),
                    env: Vec::new(),
                    provisioned: true,
                },
                shared: Arc::new(Mutex::new(Shared::default())),
                record: Arc::new(Mutex::new(Record::new(file, None))),
                refs: None,
                cwd: out.clone(),
                run_id: "r1".into(),
                stderr_log: out.join("log"),
            };
            let (to_client, client_rx) = mpsc::unbounded_channel();
            let (to_server, server_rx) = mpsc::unbounded_channel();
            Wire {
                ctx,
                _dir: dir,
                to_client,
                client_rx,
                to_server,
                server_rx,
                pending: Arc::new(Mutex::new(HashMap::new())),
            }
        }

        fn client_says(&mut self, v: &str) {
            client_message(
                &self.ctx,
                v.as_bytes(),
                &self.to_client,
                &self.to_server,
                &self.pending,
            );
        }

        fn server_says(&mut self, v: &str) {
            server_message(
                &self.ctx,
                v.as_bytes(),
                &self.to_client,
                &self.to_server,
                &self.pending,
            );
        }

        fn take(rx: &mut mpsc::UnboundedReceiver<Vec<u8>>) -> Vec<Value> {
            let mut out = Vec::new();
            while let Ok(b) = rx.try_recv() {
                out.push(serde_json::from_slice(&b).unwrap());
            }
            out
        }

        fn client(&mut self) -> Vec<Value> {
            Wire::take(&mut self.client_rx)
        }

        fn server(&mut self) -> Vec<Value> {
            Wire::take(&mut self.server_rx)
        }
    }

    #[test]
    fn on_the_wire_initialize_roots_and_lists_are_the_gateways() {
        let mut w = Wire::new();
        w.client_says(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"roots":{"listChanged":true},"sampling":{}}}}"#);
        let s = w.server();
        assert_eq!(
            s[0]["params"]["capabilities"],
            json!({"roots": {"listChanged": false}})
        );
        w.server_says(
            r#"{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"tools":{},"resources":{}}}}"#,
        );
        assert_eq!(
            w.client()[0]["result"]["capabilities"],
            json!({"tools": {}})
        );
        // The server asks for roots: the gateway answers, the worker is never asked.
        w.server_says(r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#);
        assert!(w.client().is_empty());
        let s = w.server();
        let uri = s[0]["result"]["roots"][0]["uri"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            uri.starts_with("file:///") && s[0]["result"]["roots"].as_array().unwrap().len() == 1
        );
        // …nor for a completion of its own.
        w.server_says(
            r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}"#,
        );
        assert!(w.client().is_empty());
        assert!(w.server()[0]["error"].is_object());
        w.client_says(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(w.server().len(), 1);
        w.server_says(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"browser_navigate"},{"name":"browser_run_code_unsafe"},{"name":"webmcp_place_order"}]}}"#);
        assert_eq!(
            w.client()[0]["result"]["tools"],
            json!([{"name": "browser_navigate"}])
        );
        // An answer to nothing the worker asked, and a server line that is not JSON: dropped.
        w.server_says(
            r#"{"jsonrpc":"2.0","id":77,"result":{"tools":[{"name":"browser_evaluate"}]}}"#,
        );
        w.server_says("not json");
        assert!(w.client().is_empty());
    }

    #[test]
    fn on_the_wire_a_denied_call_is_answered_and_never_forwarded() {
        let mut w = Wire::new();
        w.client_says(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://evil.example/?t=1"}}}"#);
        assert!(w.server().is_empty(), "never forwarded");
        let c = w.client();
        assert_eq!(c[0]["id"], 5);
        assert_eq!(c[0]["result"]["isError"], true);
        let text = c[0]["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("Leopold persona guard: ")
                && text.ends_with("(reason: outside_allowlist)"),
            "{text}"
        );
        let sh = w.ctx.shared.lock().unwrap();
        assert_eq!(sh.denials[0].tool, "mcp__browser__browser_navigate");
        drop(sh);
        // Allowed: forwarded as it is, its answer passed back and counted.
        w.client_says(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/"}}}"#);
        assert_eq!(w.server()[0]["id"], 6);
        w.server_says(r####"{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"### Page\n- Page URL: https://staging.example.com/?s=1\n- Page Title: Shop"}]}}"####);
        assert_eq!(w.client()[0]["id"], 6);
        assert_eq!(
            w.ctx.shared.lock().unwrap().forwarded["mcp__browser__browser_navigate"],
            1
        );
        // Refused outright: a batch, not JSON, an unknown method; a notification of roots.
        for bad in [
            r#"[{"jsonrpc":"2.0","id":7,"method":"tools/call"}]"#,
            "{oops",
            r#"7"#,
        ] {
            w.client_says(bad);
            assert!(w.client()[0]["error"].is_object(), "{bad}");
        }
        w.client_says(r#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#);
        assert!(w.client()[0]["error"].is_object());
        w.client_says(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
        assert!(w.server().is_empty() && w.client().is_empty());
        // The record: hosts only, never a URL.
        let rec = std::fs::read_to_string(w.ctx.policy.output_dir.join(RECORD_FILE)).unwrap();
        assert!(!rec.contains("://") && !rec.contains("t=1"), "{rec}");
        assert!(
            rec.contains("\"page_host\":\"staging.example.com\"")
                && rec.contains("\"page_title\":\"Shop\""),
            "{rec}"
        );
    }

    #[test]
    fn the_records_are_compared_call_by_call() {
        let mut sh = Shared {
            servers: vec!["browser".into()],
            ..Shared::default()
        };
        assert!(sh.covers("mcp__browser__browser_click"));
        assert!(!sh.covers("mcp__browserx__click"));
        assert!(!sh.covers("WebFetch"));
        sh.forwarded.insert("mcp__browser__browser_click".into(), 2);
        let mut stream = BTreeMap::new();
        stream.insert("mcp__browser__browser_click".to_owned(), 2);
        assert!(sh.compare(&stream).is_empty());
        stream.insert("mcp__browser__browser_navigate".to_owned(), 1);
        sh.denials.push_back(GatewayDenial {
            tool: "mcp__browser__browser_navigate".into(),
            reason: "outside_allowlist".into(),
        });
        let got = sh.compare(&stream);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].contains("stream shows 1") && got[1].contains("never showed"));
        let d = sh.take_denial("mcp__browser__browser_navigate").unwrap();
        assert_eq!(d.reason, "outside_allowlist");
        assert!(sh.take_denial("mcp__browser__browser_navigate").is_none());
    }
}
