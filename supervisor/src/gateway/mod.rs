//! The gateway: every MCP server the worker gets is reached through the supervisor, which
//! judges each message before the real server sees it (docs/security.md#the-gateway).
//!
//! For each server (a stdio server of `--mcp-config`, or the provisioned Playwright browser)
//! the supervisor listens on `<sock dir>/mcp-<server>.sock`; the worker's MCP config names
//! `leopold persona mcp-relay --socket <that>` instead of the server. The first connection
//! starts the run's one process of the real server here, outside the box (its working directory
//! the run's browser output folder, never the project), which every later connection shares;
//! the gateway relays newline-delimited JSON-RPC, each request under an id of its own so that
//! every answer is judged, recorded and returned as the answer to the request it answers:
//!
//! - a `tools/call` goes on only if the browser tool catalogue offers it ([`policy::catalogue`]) and the
//!   guard's own decision allows it; a denied call is answered here with an MCP tool error
//!   carrying the guard's one-line message, and is never forwarded. This holds whether or not
//!   the harness ran its hook (on Codex a hook that cannot run fails open,
//!   docs/harness-facts.md#1-what-fails-open);
//! - `initialize`: the client's `roots` capability is replaced by the gateway's; the server's
//!   `roots/list` is answered with the output folder alone; `tools/list` results are filtered;
//! - anything the gateway cannot parse or judge is refused with a named reason and recorded: a
//!   batch, a `tools/call` without an id (a notification), a request reusing an id still in
//!   flight, a method it does not pass on.
//!
//! Every call and answer is journaled in `gateway.jsonl` (tool, verdict, reason, the call
//! reduced as events.jsonl reduces it, the page's host and title), the record the run's
//! journal is compared with at the end, call by call ([`Shared::compare`]); hash-chained as the journal is,
//! its head kept in run.json, so that `persona replay` shows a line edited, removed or cut.

pub mod policy;
pub mod relay;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use leopold_journal::lines::LineBuf;
use leopold_journal::{ChainedFile, JournalHash};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::browser::RefTracker;
use policy::Policy;

/// The gateway's own record, in the run directory.
/// The longest message the gateway reads; a longer line closes the connection.
const MAX_LINE: usize = 32 << 20;

/// The socket the worker's relay connects to for `server`.
pub fn socket_path(sock_dir: &Path, server: &str) -> PathBuf {
    sock_dir.join(format!("mcp-{server}.sock"))
}

/// The MCP server entry the worker is given for `server`: this binary's relay.
pub fn relay_server(leopold: &Path, sock_dir: &Path, server: &str) -> crate::mcp::McpServer {
    crate::mcp::McpServer {
        name: server.to_owned(),
        transport: crate::mcp::McpTransport::Stdio {
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

/// A call the gateway forwarded to a server, as its record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    /// The record's `seq` of the call's line.
    pub seq: u64,
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The arguments, reduced as the record keeps them ([`leopold_guard::reduced_call`]).
    pub call: Value,
    /// The server's answer, once it came.
    pub answer: Option<Answer>,
}

/// A server's answer to a forwarded call, as the record keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// An MCP tool error, or a JSON-RPC error.
    pub is_error: bool,
    /// The host of the page the browser was on after the call (Playwright's `Page URL:`).
    pub page_host: Option<String>,
}

/// A call of one of the gateway's servers as the harness's stream shows it, journaled (a call
/// the stream shows denied is not one: it never reached a server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamCall {
    /// The journal's `seq`.
    pub seq: u64,
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The arguments the stream shows, reduced as the gateway reduces them.
    pub call: Value,
    pub outcome: leopold_journal::Outcome,
    /// The host of the page the stream's result names, when it names one.
    pub page_host: Option<String>,
}

/// One place where the harness's stream and the gateway's record of the browser's calls
/// disagree (docs/security.md#the-gateway): it makes the run `violated`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The journal's `seq` of the stream's call, when the stream shows one.
    pub journal_seq: Option<u64>,
    /// The record's `seq` of the gateway's call, when the gateway has one.
    pub gateway_seq: Option<u64>,
    /// One sentence naming the tool and both seqs; hosts, never a URL.
    pub what: String,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

/// What the gateway and the observer share, in-process.
#[derive(Debug, Default)]
pub struct Shared {
    /// Denials the observer has not matched to a stream action yet.
    pub denials: VecDeque<GatewayDenial>,
    /// Calls forwarded to a server, in the record's order, with their answers.
    pub forwarded: Vec<Forwarded>,
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

    /// Notes the answer to the forwarded call the record numbered `seq`.
    pub fn answered(&mut self, seq: u64, answer: Answer) {
        // Answers come soon after their calls: search from the end.
        if let Some(f) = self.forwarded.iter_mut().rev().find(|f| f.seq == seq) {
            f.answer = Some(answer);
        }
    }

    /// The harness's stream against the gateway's record, call by call; empty when they agree.
    ///
    /// Each stream call takes the first gateway call not taken yet of the same tool with equal
    /// reduced arguments (calls of different tools, or with different arguments, may interleave
    /// differently in the two records: parallel calls reach the server in any order), preferring
    /// one whose answer agrees with the stream's. They disagree when:
    /// - the stream shows a call completed that no forwarded call matches (a forged line);
    /// - the stream shows a call completed that the server answered with an error, never
    ///   answered, or answered on another page's host than the stream shows;
    /// - the gateway forwarded a call that no stream call matches (a call hidden from the
    ///   stream, or shown with other arguments), or denied one the stream never showed.
    ///
    /// A call the stream shows failed or unanswered that the gateway never forwarded claims
    /// nothing the browser did (the harness refused it, or gave up on it), and a call the stream
    /// shows failed that the server answered is a harness's own timeout: neither disagrees.
    /// In order: the stream's calls, then the gateway's left over, then its denials.
    pub fn compare(&self, stream: &[StreamCall]) -> Vec<Disagreement> {
        use leopold_journal::Outcome;
        let agrees = |s: &StreamCall, a: Option<&Answer>| {
            s.outcome != Outcome::Completed
                || a.is_some_and(|a| {
                    !a.is_error && (s.page_host.is_none() || s.page_host == a.page_host)
                })
        };
        // The answer that says what the stream says: preferred among calls alike.
        let fits = |s: &StreamCall, a: Option<&Answer>| match (s.outcome, a) {
            (Outcome::Errored, Some(a)) => a.is_error,
            (Outcome::Unfinished, None) => true,
            (Outcome::Completed, a) => agrees(s, a),
            _ => false,
        };
        // A stream's tool name is the worker's text: shown only if it carries no URL.
        let shown = |t: &str| {
            leopold_guard::safe_text(t, 128).unwrap_or_else(|| "(a tool name holding a URL)".into())
        };
        let mut taken = vec![false; self.forwarded.len()];
        let mut out = Vec::new();
        for s in stream {
            let candidates: Vec<usize> = (0..self.forwarded.len())
                .filter(|&i| {
                    let f = &self.forwarded[i];
                    !taken[i] && f.tool == s.tool && f.call == s.call
                })
                .collect();
            let Some(&first) = candidates.first() else {
                if s.outcome == Outcome::Completed {
                    out.push(Disagreement {
                        tool: shown(&s.tool),
                        journal_seq: Some(s.seq),
                        gateway_seq: None,
                        what: format!(
                            "the harness's stream shows a `{}` call completed (journal #{}) that the gateway never forwarded with those arguments",
                            shown(&s.tool),
                            s.seq
                        ),
                    });
                }
                continue;
            };
            let answer = |i: &&usize| self.forwarded[**i].answer.as_ref();
            let i = candidates
                .iter()
                .find(|i| fits(s, answer(i)))
                .or_else(|| candidates.iter().find(|i| agrees(s, answer(i))))
                .copied()
                .unwrap_or(first);
            taken[i] = true;
            let f = &self.forwarded[i];
            if agrees(s, f.answer.as_ref()) {
                continue;
            }
            let server_said = match &f.answer {
                None => "the server never answered it".to_owned(),
                Some(a) if a.is_error => "the server answered it with an error".to_owned(),
                Some(a) => format!(
                    "the server's answer was on {}",
                    a.page_host
                        .as_deref()
                        .map_or_else(|| "no page".to_owned(), |h| format!("host {h}"))
                ),
            };
            let stream_said = match &s.page_host {
                Some(h) if f.answer.as_ref().is_some_and(|a| !a.is_error) => {
                    format!("completed on host {h}")
                }
                _ => "completed".to_owned(),
            };
            out.push(Disagreement {
                tool: shown(&s.tool),
                journal_seq: Some(s.seq),
                gateway_seq: Some(f.seq),
                what: format!(
                    "the harness's stream shows the `{}` call (journal #{}, gateway #{}) {stream_said}; {server_said}",
                    shown(&s.tool),
                    s.seq,
                    f.seq
                ),
            });
        }
        for (f, _) in self.forwarded.iter().zip(&taken).filter(|(_, t)| !**t) {
            out.push(Disagreement {
                tool: shown(&f.tool),
                journal_seq: None,
                gateway_seq: Some(f.seq),
                what: format!(
                    "the gateway forwarded a `{}` call (gateway #{}) that the harness's stream does not show with those arguments",
                    shown(&f.tool),
                    f.seq
                ),
            });
        }
        for d in &self.denials {
            out.push(Disagreement {
                tool: shown(&d.tool),
                journal_seq: None,
                gateway_seq: None,
                what: format!(
                    "the gateway denied a `{}` call ({}) that the harness's stream never showed",
                    shown(&d.tool),
                    d.reason
                ),
            });
        }
        out
    }
}

/// `gateway.jsonl`: one line per call, one per answer, and at the end one per disagreement with
/// the harness's stream ([`Gateway::record_disagreements`]). Written as the journal is, apart from
/// it ([`leopold_journal::ChainedFile`]: one `write` per line, `O_APPEND`, hash-chained): each
/// line's last key, `prev`, is the SHA-256 of the line before (64 zeros for line 1), and the run
/// records the head (`end.gateway_hash`).
struct Record {
    chain: ChainedFile,
    seq: u64,
    /// Set once the run has taken the head ([`Gateway::seal`]): nothing is written after it.
    sealed: bool,
    /// `--max-records`: the most bytes this run's gateway writes (the worker's calls make them).
    max: Option<u64>,
    written: u64,
    /// A line did not fit: nothing more is written.
    over: bool,
    /// Tripped when a line would go past `max`; nothing more is written, and the run stops.
    tripwire: crate::sandbox::limits::Tripwire,
}

impl Record {
    fn new(file: std::fs::File, head: Option<JournalHash>) -> Record {
        Record {
            chain: ChainedFile::new(file, head),
            seq: 0,
            sealed: false,
            max: None,
            written: 0,
            over: false,
            tripwire: crate::sandbox::limits::Tripwire::default(),
        }
    }

    /// Whether the record is full: a call is then not forwarded, since it could not be recorded.
    fn full(&self) -> bool {
        self.over
    }

    fn line(&mut self, mut v: Value) {
        if self.sealed || self.over {
            return;
        }
        if let Some(o) = v.as_object_mut() {
            o.insert("ts".into(), json!(leopold_journal::now_rfc3339()));
        }
        let Ok(len) = self.chain.prepare(&v) else {
            return; // every line is built as an object
        };
        let len = len as u64;
        if let Some(max) = self.max.filter(|m| self.written + len > *m) {
            self.over = true;
            self.tripwire.trip(format!(
                "the gateway record reached --max-records {}",
                crate::sandbox::limits::show_size(max)
            ));
            return;
        }
        self.written += len;
        // A line that did not reach the file still moves the head: replay then finds the file
        // ending on another hash than the one recorded, which is what happened.
        if self.chain.write_prepared().is_err() {
            self.chain.skip_prepared();
        }
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
    /// The run's one process of this server, started by the first connection and shared by
    /// every later one: a server per connection was a browser per connection (20 Playwright
    /// servers for one run), each outside the box.
    server: Mutex<Option<Arc<Server>>>,
    /// The browser proxy's refusals, for the provisioned browser, and how many of them the
    /// persona has been told of: each answer tells the ones since the last (a form a call
    /// submitted by script may be refused after that call's own answer).
    web: Option<(Arc<Mutex<crate::web::Seen>>, Mutex<usize>)>,
}

impl Ctx {
    /// The run's process of this server, started on the first call.
    fn server(self: &Arc<Ctx>) -> anyhow::Result<Arc<Server>> {
        let mut slot = self.server.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = &*slot {
            return Ok(s.clone());
        }
        let s = start_server(self)?;
        *slot = Some(s.clone());
        Ok(s)
    }
}

/// What [`start`] needs.
pub struct Start<'a> {
    pub flow: &'a leopold_flows::Flow,
    pub sock_dir: &'a Path,
    /// Whether the gateway creates (and removes) the socket directory itself: a run without
    /// the box has none.
    pub make_sock_dir: bool,
    pub run_dir: &'a crate::run_dir::RunDir,
    pub run_id: &'a str,
    /// The run's browser output folder: the servers' working directory and their only root.
    pub output_dir: &'a Path,
    pub servers: Vec<Upstream>,
    /// The provisioned browser's ref map tracker, when there is one.
    pub refs: Option<RefTracker>,
    /// `--max-records`: the most bytes the gateway writes in its record for this run.
    pub max_record: Option<u64>,
    /// Tripped when the record is full.
    pub tripwire: crate::sandbox::limits::Tripwire,
    /// What the browser's proxy refused ([`crate::web`]): the provisioned browser's answers
    /// tell the persona about the requests its call caused that were refused.
    pub web: Option<Arc<Mutex<crate::web::Seen>>>,
}

/// The running gateway. Dropping it stops it, its servers and removes its sockets.
pub struct Gateway {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub shared: Arc<Mutex<Shared>>,
    record: Arc<Mutex<Record>>,
    sockets: Vec<PathBuf>,
    own_dir: Option<PathBuf>,
    ctxs: Vec<Arc<Ctx>>,
}

impl Gateway {
    /// Writes each disagreement between the record and the harness's stream into the record
    /// (`{"event":"disagreement",…}`), before [`Gateway::seal`]: chained with the rest, so
    /// `persona replay` shows them and none can be taken out unseen.
    pub fn record_disagreements(&self, found: &[Disagreement]) {
        let mut r = self.record.lock().unwrap_or_else(|e| e.into_inner());
        for d in found {
            let seq = r.next_seq();
            r.line(json!({"event": "disagreement", "seq": seq, "tool": d.tool,
                "journal_seq": d.journal_seq, "gateway_seq": d.gateway_seq, "what": d.what}));
        }
    }

    /// Closes `gateway.jsonl` and returns its hash chain's head (the hash of its last line), once
    /// it has one. A line the gateway would write after this (an answer to a worker already gone)
    /// is not written: the head the run records is the record's last line.
    pub fn seal(&self) -> Option<JournalHash> {
        let mut r = self.record.lock().unwrap_or_else(|e| e.into_inner());
        r.sealed = true;
        r.chain.head()
    }

    /// Writes lines into this record for the browser's proxy ([`crate::web`]): the requests it
    /// refused sit in the same hash chain as the calls that led to them.
    pub fn recorder(&self) -> crate::web::Recorder {
        let record = self.record.clone();
        Arc::new(move |mut v: Value| {
            let mut r = record.lock().unwrap_or_else(|e| e.into_inner());
            let seq = r.next_seq();
            if let Some(o) = v.as_object_mut() {
                o.insert("seq".into(), json!(seq));
            }
            r.line(v);
        })
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
    let path = s.run_dir.gateway_record();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    // A record already there (the run's gateway started before) is continued, not restarted.
    let head = leopold_journal::chain::head_of_file(&path);
    let mut rec = Record::new(file, head);
    rec.max = s.max_record;
    rec.tripwire = s.tripwire;
    let record = Arc::new(Mutex::new(rec));
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
        ctxs: Vec::new(),
    };
    for up in s.servers {
        let sock = socket_path(s.sock_dir, &up.name);
        let listener = UnixListener::bind(&sock)
            .with_context(|| format!("cannot listen on {}", sock.display()))?;
        gw.sockets.push(sock);
        let up_provisioned = up.provisioned;
        let ctx = Arc::new(Ctx {
            policy: Policy {
                flow: s.flow.clone(),
                server: up.name.clone(),
                output_dir: output_dir.clone(),
                provisioned: up.provisioned,
            },
            refs: if up.provisioned { refs.clone() } else { None },
            stderr_log: s.run_dir.gateway_log(&up.name),
            upstream: up,
            shared: shared.clone(),
            record: record.clone(),
            cwd: output_dir.clone(),
            run_id: s.run_id.to_owned(),
            server: Mutex::new(None),
            web: if up_provisioned {
                s.web.clone().map(|w| (w, Mutex::new(0)))
            } else {
                None
            },
        });
        gw.ctxs.push(ctx.clone());
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
        for c in &self.ctxs {
            let server = c.server.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(s) = server {
                s.stop();
            }
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
    ToolsCall {
        seq: u64,
        tool: String,
    },
    /// Passed back as it is (`ping`).
    Other,
}

/// A request passed on to the server under an id of the gateway's own: whose it was.
struct Route {
    conn: u64,
    /// The id the worker gave it, restored on its answer.
    id: Value,
    what: Pending,
}

/// The server's answer to the first `initialize`, kept for every later connection's.
enum Init {
    NotSent,
    /// The first one is with the server; these connections' (and ids) wait for its answer.
    Waiting(Vec<(u64, Value)>),
    /// Its answer, without its id.
    Done(Value),
}

/// The connections sharing a server and their requests in flight.
struct Routes {
    next_id: u64,
    next_conn: u64,
    /// Live connections: where their answers go.
    conns: HashMap<u64, mpsc::UnboundedSender<Vec<u8>>>,
    /// Requests with the server, by the gateway's id for them. A worker's ids are its own
    /// connection's: two connections (or one reusing an id) never collide on the server, and
    /// every answer is judged and recorded as the answer to the request it answers.
    pending: HashMap<u64, Route>,
    init: Init,
    /// Whether `notifications/initialized` reached the server (once: it was initialized once).
    initialized: bool,
    /// The server's process ended: no connection is served any more.
    gone: bool,
}

/// The run's one process of a server ([`Ctx::server`]).
struct Server {
    to_server: mpsc::UnboundedSender<Vec<u8>>,
    routes: Mutex<Routes>,
    /// The process (its own group, SIGKILLed by the kernel if the supervisor dies) and its pipes'
    /// tasks; [`Server::stop`] ends them.
    child: Mutex<Option<tokio::process::Child>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Server {
    fn new(to_server: mpsc::UnboundedSender<Vec<u8>>) -> Server {
        Server {
            to_server,
            routes: Mutex::new(Routes {
                next_id: 0,
                next_conn: 0,
                conns: HashMap::new(),
                pending: HashMap::new(),
                init: Init::NotSent,
                initialized: false,
                gone: false,
            }),
            child: Mutex::new(None),
            tasks: Mutex::new(Vec::new()),
        }
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new connection, its answers sent to `tx`; `None` once the server is gone.
    fn connect(&self, tx: mpsc::UnboundedSender<Vec<u8>>) -> Option<u64> {
        let mut r = self.routes();
        if r.gone {
            return None;
        }
        r.next_conn += 1;
        let id = r.next_conn;
        r.conns.insert(id, tx);
        Some(id)
    }

    /// The connection is closed: answers to its requests still in flight are judged and
    /// recorded, then dropped.
    fn disconnect(&self, conn: u64) {
        let mut r = self.routes();
        r.conns.remove(&conn);
        if let Init::Waiting(w) = &mut r.init {
            w.retain(|(c, _)| *c != conn);
        }
    }

    fn to_conn(&self, conn: u64, v: &Value) {
        if let Some(tx) = self.routes().conns.get(&conn) {
            send(tx, v);
        }
    }

    /// The process ended: every connection closes (its writer drains, then shuts the socket).
    fn gone(&self) {
        let mut r = self.routes();
        r.gone = true;
        r.conns.clear();
        r.init = Init::NotSent;
    }

    fn stop(&self) {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            t.abort();
        }
        if let Some(mut child) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // Boxed, the server's child is PID 1 of the browser's box. Killed itself, its end
            // comes only once the kernel has ended every process of the box's namespace;
            // killing bwrap alone left Chromium's processes dying after the run said it ended.
            let inner = child.id().map(crate::os::children).unwrap_or_default();
            for &pid in &inner {
                if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            // Its group: what it started in it goes too.
            if let Some(pid) = child.id() {
                let _ = crate::os::signal_group(pid, libc::SIGKILL);
            }
            let _ = child.start_kill();
            // Reaped here, as a connection's end reaped its own server before: SIGKILL lands
            // at once, and a zombie would keep its pid until the supervisor exits.
            for _ in 0..200 {
                match child.try_wait() {
                    Ok(None) => std::thread::sleep(std::time::Duration::from_millis(1)),
                    _ => break,
                }
            }
            // Bounded: a process the kernel cannot end (stuck in the disk) must not hold the run.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while inner.iter().any(|&p| !crate::os::ended(p)) && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        self.gone();
    }
}

type RequestKey = (u64, String);

fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Reads one line of at most [`MAX_LINE`] bytes; `None` at the end or past the limit.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Option<Vec<u8>> {
    let mut line = LineBuf::new(MAX_LINE);
    loop {
        let avail = r.fill_buf().await.ok()?;
        let end = avail.is_empty();
        let (used, ended) = line.push(avail);
        r.consume(used);
        if line.is_too_long() {
            return None;
        }
        if ended {
            return line.line().bytes.map(<[u8]>::to_vec);
        }
        if end {
            return None;
        }
    }
}

fn send(tx: &mpsc::UnboundedSender<Vec<u8>>, v: &Value) {
    let mut b = v.to_string().into_bytes();
    b.push(b'\n');
    let _ = tx.send(b);
}

/// Starts the run's process of the server and the tasks on its pipes.
fn start_server(ctx: &Arc<Ctx>) -> anyhow::Result<Arc<Server>> {
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
    let (to_server, mut to_server_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let srv = Arc::new(Server::new(to_server));
    *srv.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
    let writer = tokio::spawn(async move {
        while let Some(b) = to_server_rx.recv().await {
            if server_in.write_all(&b).await.is_err() || server_in.flush().await.is_err() {
                break;
            }
        }
    });
    let reader = {
        let (ctx, srv) = (ctx.clone(), srv.clone());
        tokio::spawn(async move {
            let mut r = BufReader::new(server_out);
            while let Some(line) = read_line(&mut r).await {
                server_message(&ctx, &srv, &line);
            }
            tracing::debug!(server = %ctx.policy.server, "the MCP server closed its output");
            srv.gone();
        })
    };
    srv.tasks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend([writer, reader]);
    Ok(srv)
}

/// One connection to the run's server, both directions judged.
async fn serve(conn: UnixStream, ctx: &Arc<Ctx>) -> anyhow::Result<()> {
    let srv = ctx.server()?;
    let (client_r, mut client_w) = conn.into_split();
    let (to_client, mut to_client_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    // A server already gone: the socket closes at once, and the relay with it.
    let Some(conn) = srv.connect(to_client) else {
        return Ok(());
    };
    let mut client_writer = tokio::spawn(async move {
        while let Some(b) = to_client_rx.recv().await {
            if client_w.write_all(&b).await.is_err() {
                break;
            }
        }
        let _ = client_w.shutdown().await;
    });
    let from_client = async {
        let mut r = BufReader::new(client_r);
        while let Some(line) = read_line(&mut r).await {
            client_message(ctx, &srv, conn, &line);
        }
    };
    // The client closing ends the connection (the relay exits when its socket closes); the
    // server ending closes every connection's writer.
    let writer_done = tokio::select! {
        () = from_client => false,
        _ = &mut client_writer => true,
    };
    srv.disconnect(conn);
    if !writer_done {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), client_writer).await;
    }
    Ok(())
}

/// Records a message the gateway refused (`gateway_unjudgeable`, with what it was).
fn record_refusal(ctx: &Ctx, what: &str, method: Option<&str>, tool: Option<&str>) {
    let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
    let seq = rec.next_seq();
    rec.line(
        json!({"event": "message", "seq": seq, "server": ctx.policy.server, "verdict": "denied",
        "reason": leopold_guard::Reason::GatewayUnjudgeable.id(), "detail": what,
        "method": method.and_then(|m| leopold_guard::safe_text(m, 64)),
        "tool": tool.and_then(|t| leopold_guard::safe_text(t, 128))}),
    );
}

/// A refused message: recorded, and answered when it has an id to answer.
fn refuse(ctx: &Ctx, srv: &Server, conn: u64, msg: &Value, id: Option<&Value>, what: &str) {
    let method = msg.get("method").and_then(Value::as_str);
    let tool = (method == Some("tools/call"))
        .then(|| msg.pointer("/params/name").and_then(Value::as_str))
        .flatten();
    record_refusal(ctx, what, method, tool);
    if let Some(id) = id {
        srv.to_conn(
            conn,
            &policy::rpc_error(
                id,
                -32600,
                &format!("Leopold's gateway refused the message: {what}"),
            ),
        );
    }
}

/// Passes a request on to the server under an id of the gateway's own.
fn pass_on(srv: &Server, conn: u64, id: &Value, what: Pending, mut msg: Value) {
    let gid = {
        let mut r = srv.routes();
        r.next_id += 1;
        let gid = r.next_id;
        r.pending.insert(
            gid,
            Route {
                conn,
                id: id.clone(),
                what,
            },
        );
        gid
    };
    msg["id"] = json!(gid);
    send(&srv.to_server, &msg);
}

/// Whether the connection has a request with this id in flight.
fn in_flight(r: &Routes, key: &RequestKey) -> bool {
    r.pending
        .values()
        .any(|p| p.conn == key.0 && id_key(&p.id) == key.1)
        || matches!(&r.init, Init::Waiting(w) if w.iter().any(|(c, i)| *c == key.0 && id_key(i) == key.1))
}

/// One message from the worker, on connection `conn`.
fn client_message(ctx: &Ctx, srv: &Server, conn: u64, line: &[u8]) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let policy = &ctx.policy;
    let msg: Value = match serde_json::from_slice(line) {
        Ok(v @ Value::Object(_)) => v,
        // Not one JSON-RPC message (a batch, a scalar, not JSON): refused, never forwarded.
        _ => {
            refuse(
                ctx,
                srv,
                conn,
                &Value::Null,
                Some(&Value::Null),
                "not one JSON-RPC message",
            );
            return;
        }
    };
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    let Some(m) = method.as_deref() else {
        // A response, or neither: the gateway asks the worker nothing (it answers the
        // server's requests itself), so there is nothing it could answer.
        refuse(
            ctx,
            srv,
            conn,
            &msg,
            None,
            "a message with no method (the gateway asks the worker nothing)",
        );
        return;
    };
    if !policy::client_method_passes(m) {
        record_refusal(ctx, "a method the gateway does not pass on", Some(m), None);
        // A request gets its answer; a notification cannot.
        if let Some(id) = &id {
            srv.to_conn(
                conn,
                &policy::rpc_error(
                    id,
                    -32601,
                    &format!("Leopold's gateway does not pass on `{m}`"),
                ),
            );
        }
        return;
    }
    let Some(id) = id else {
        client_notification(ctx, srv, conn, m, msg);
        return;
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        refuse(
            ctx,
            srv,
            conn,
            &msg,
            Some(&Value::Null),
            "a request id that is neither a string nor an integer",
        );
        return;
    }
    if in_flight(&srv.routes(), &(conn, id_key(&id))) {
        // Its answer would be taken for the other's: refused, the first one stands.
        refuse(
            ctx,
            srv,
            conn,
            &msg,
            Some(&id),
            "a request id already in flight on this connection",
        );
        return;
    }
    match m {
        "tools/call" => {
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
                    let call = leopold_guard::reduced_call(&full, &arguments);
                    let seq = {
                        let mut rec = ctx.record.lock().unwrap_or_else(|e| e.into_inner());
                        let seq = rec.next_seq();
                        rec.line(json!({"event": "call", "seq": seq, "server": policy.server, "tool": tool,
                            "verdict": "allowed", "call": call}));
                        // A call the record cannot hold is never made (the run is stopping).
                        (!rec.full()).then_some(seq)
                    };
                    let Some(seq) = seq else {
                        srv.to_conn(
                            conn,
                            &policy::tool_error(&id, "Leopold's record of this run is full (--max-records): the call was not made"),
                        );
                        return;
                    };
                    ctx.shared
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .forwarded
                        .push(Forwarded {
                            seq,
                            tool: full.clone(),
                            call,
                            answer: None,
                        });
                    pass_on(srv, conn, &id, Pending::ToolsCall { seq, tool }, msg);
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
                    srv.to_conn(conn, &policy::tool_error(&id, &text));
                }
            }
        }
        "initialize" => {
            let mut msg = msg;
            // The server is initialized once, by the first connection; every later one is
            // answered with that answer (the gateway's capabilities are the same for all).
            let mut r = srv.routes();
            match &mut r.init {
                Init::Done(answer) => {
                    let mut a = answer.clone();
                    a["id"] = id;
                    drop(r);
                    srv.to_conn(conn, &a);
                }
                Init::Waiting(w) => w.push((conn, id)),
                Init::NotSent => {
                    r.init = Init::Waiting(Vec::new());
                    drop(r);
                    policy::rewrite_initialize(&mut msg);
                    pass_on(srv, conn, &id, Pending::Initialize, msg);
                }
            }
        }
        "tools/list" => pass_on(srv, conn, &id, Pending::ToolsList, msg),
        "ping" => pass_on(srv, conn, &id, Pending::Other, msg),
        // A notification's method sent with an id: not a request the gateway passes on.
        _ => {
            record_refusal(ctx, "a method the gateway does not pass on", Some(m), None);
            srv.to_conn(
                conn,
                &policy::rpc_error(
                    &id,
                    -32601,
                    &format!("Leopold's gateway does not pass on `{m}`"),
                ),
            );
        }
    }
}

/// A notification from the worker: the few the server needs go on; anything else, a
/// `tools/call` without an id first, is refused and recorded (it cannot be answered).
fn client_notification(ctx: &Ctx, srv: &Server, conn: u64, m: &str, mut msg: Value) {
    match m {
        "notifications/initialized" => {
            let mut r = srv.routes();
            if matches!(r.init, Init::Done(_)) && !r.initialized {
                r.initialized = true;
                drop(r);
                send(&srv.to_server, &msg);
            }
        }
        "notifications/cancelled" => {
            // Names the worker's id: the server knows the request by the gateway's.
            let key = msg
                .pointer("/params/requestId")
                .map(|i| (conn, id_key(i)));
            let gid = key.and_then(|key| {
                srv.routes()
                    .pending
                    .iter()
                    .find(|(_, p)| p.conn == key.0 && id_key(&p.id) == key.1)
                    .map(|(g, _)| *g)
            });
            match gid {
                Some(g) => {
                    msg["params"]["requestId"] = json!(g);
                    send(&srv.to_server, &msg);
                }
                None => refuse(ctx, srv, conn, &msg, None, "a cancellation of no request in flight on this connection"),
            }
        }
        "notifications/progress" => send(&srv.to_server, &msg),
        "tools/call" => refuse(
            ctx,
            srv,
            conn,
            &msg,
            None,
            "a tools/call without an id (a notification): the gateway passes on requests it can answer",
        ),
        _ => refuse(ctx, srv, conn, &msg, None, "a notification the gateway does not pass on"),
    }
}

/// One message from the real server.
fn server_message(ctx: &Ctx, srv: &Server, line: &[u8]) {
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
                &srv.to_server,
                &policy::roots_answer(&id, &ctx.policy.output_dir),
            );
        }
        (Some(m), Some(id)) => {
            // sampling, elicitation, …: the browser asks the harness nothing.
            send(
                &srv.to_server,
                &policy::rpc_error(
                    &id,
                    -32601,
                    &format!("Leopold's gateway does not pass on `{m}`"),
                ),
            );
        }
        (Some(m), None) => {
            // Every connection is the same worker's: what the server tells one, it tells all
            // (a progress token is the requester's own, and the others ignore it).
            if policy::server_notification_passes(m) {
                for tx in srv.routes().conns.values() {
                    send(tx, &msg);
                }
            }
        }
        (None, Some(gid)) => {
            let route = gid.as_u64().and_then(|g| srv.routes().pending.remove(&g));
            // An answer to nothing the gateway asked: not passed on.
            let Some(route) = route else { return };
            msg["id"] = route.id.clone();
            match route.what {
                Pending::Initialize => {
                    if let Some(r) = msg.get_mut("result") {
                        policy::rewrite_initialize_result(r);
                    }
                    let waiting = {
                        let mut r = srv.routes();
                        let ok = msg.get("result").is_some();
                        let before = std::mem::replace(
                            &mut r.init,
                            if ok {
                                Init::Done(msg.clone())
                            } else {
                                Init::NotSent
                            },
                        );
                        match before {
                            Init::Waiting(w) => w,
                            _ => Vec::new(),
                        }
                    };
                    srv.to_conn(route.conn, &msg);
                    for (conn, id) in waiting {
                        let mut a = msg.clone();
                        a["id"] = id;
                        srv.to_conn(conn, &a);
                    }
                }
                Pending::ToolsList => {
                    if let Some(r) = msg.get_mut("result") {
                        let dropped = policy::filter_tools_list(&ctx.policy, r);
                        if !dropped.is_empty() {
                            tracing::debug!(server = %ctx.policy.server, ?dropped, "tools not listed");
                        }
                    }
                    srv.to_conn(route.conn, &msg);
                }
                Pending::ToolsCall { seq, tool } => {
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
                    // Before the worker can see the answer: the stream never shows it first.
                    ctx.shared
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .answered(
                            seq,
                            Answer {
                                is_error,
                                page_host: host,
                            },
                        );
                    if let Some((w, told)) = &ctx.web {
                        let seen = w.lock().unwrap_or_else(|e| e.into_inner());
                        let mut told = told.lock().unwrap_or_else(|e| e.into_inner());
                        let new = &seen.refused[(*told).min(seen.refused.len())..];
                        if let Some(note) = crate::web::refusal_note(new) {
                            policy::append_text(&mut msg, &note);
                        }
                        *told = seen.refused.len();
                    }
                    srv.to_conn(route.conn, &msg);
                }
                Pending::Other => srv.to_conn(route.conn, &msg),
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
        srv: Server,
        conn: u64,
        client_rx: mpsc::UnboundedReceiver<Vec<u8>>,
        server_rx: mpsc::UnboundedReceiver<Vec<u8>>,
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
            let file =
                std::fs::File::create(out.join(crate::run_dir::RunDir::GATEWAY_RECORD)).unwrap();
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
                server: Mutex::new(None),
                web: None,
            };
            let (to_server, server_rx) = mpsc::unbounded_channel();
            let srv = Server::new(to_server);
            let (to_client, client_rx) = mpsc::unbounded_channel();
            let conn = srv.connect(to_client).unwrap();
            Wire {
                ctx,
                _dir: dir,
                srv,
                conn,
                client_rx,
                server_rx,
            }
        }

        /// Another connection to the same server, and where its answers go.
        fn connect(&self) -> (u64, mpsc::UnboundedReceiver<Vec<u8>>) {
            let (tx, rx) = mpsc::unbounded_channel();
            (self.srv.connect(tx).unwrap(), rx)
        }

        fn client_says(&mut self, v: &str) {
            client_message(&self.ctx, &self.srv, self.conn, v.as_bytes());
        }

        fn says_on(&self, conn: u64, v: &str) {
            client_message(&self.ctx, &self.srv, conn, v.as_bytes());
        }

        fn server_says(&mut self, v: &str) {
            server_message(&self.ctx, &self.srv, v.as_bytes());
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

        fn record(&self) -> Vec<Value> {
            std::fs::read_to_string(
                self.ctx
                    .policy
                    .output_dir
                    .join(crate::run_dir::RunDir::GATEWAY_RECORD),
            )
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
        }
    }

    impl Wire {
        /// The server answers its request `to` (as the server saw it) with `result`.
        fn server_answers(&mut self, to: &Value, result: Value) {
            let a = json!({"jsonrpc": "2.0", "id": to["id"], "result": result});
            self.server_says(&a.to_string());
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
        w.server_answers(&s[0], json!({"capabilities":{"tools":{},"resources":{}}}));
        let c = w.client();
        assert_eq!(c[0]["id"], 0);
        assert_eq!(c[0]["result"]["capabilities"], json!({"tools": {}}));
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
        let s = w.server();
        assert_eq!(s.len(), 1);
        w.server_answers(&s[0], json!({"tools":[{"name":"browser_navigate"},{"name":"browser_run_code_unsafe"},{"name":"webmcp_place_order"}]}));
        let c = w.client();
        assert_eq!(c[0]["id"], 1);
        assert_eq!(
            c[0]["result"]["tools"],
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
        // Allowed: forwarded under the gateway's id, its answer passed back and counted.
        w.client_says(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/"}}}"#);
        let s = w.server();
        assert_eq!(s[0]["params"]["name"], "browser_navigate");
        w.server_answers(&s[0], json!({"content":[{"type":"text","text":"### Page\n- Page URL: https://staging.example.com/?s=1\n- Page Title: Shop"}]}));
        assert_eq!(w.client()[0]["id"], 6);
        // Kept for the comparison with the stream: reduced as the record keeps it, answered.
        assert_eq!(
            w.ctx.shared.lock().unwrap().forwarded,
            [Forwarded {
                seq: 2,
                tool: "mcp__browser__browser_navigate".into(),
                call: json!({"url": {"leopold_url": {"scheme": "https", "host": "staging.example.com", "path": "/"}}}),
                answer: Some(Answer {
                    is_error: false,
                    page_host: Some("staging.example.com".into())
                }),
            }]
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
        // The record: hosts only, never a URL; each refusal is a line of its own.
        let rec = std::fs::read_to_string(
            w.ctx
                .policy
                .output_dir
                .join(crate::run_dir::RunDir::GATEWAY_RECORD),
        )
        .unwrap();
        assert!(!rec.contains("://") && !rec.contains("t=1"), "{rec}");
        assert!(
            rec.contains("\"page_host\":\"staging.example.com\"")
                && rec.contains("\"page_title\":\"Shop\""),
            "{rec}"
        );
        let refused: Vec<Value> = w
            .record()
            .into_iter()
            .filter(|l| l["event"] == "message")
            .collect();
        assert_eq!(refused.len(), 5, "{rec}");
        assert!(refused
            .iter()
            .all(|l| l["verdict"] == "denied" && l["reason"] == "gateway_unjudgeable"));
        assert_eq!(refused[3]["method"], "resources/read");
        assert_eq!(refused[4]["method"], "notifications/roots/list_changed");
    }

    /// A `tools/call` without an id (a notification) is never forwarded, whatever it asks, and
    /// is recorded; nor is a request reusing an id still in flight, whose answer would have been
    /// taken for the first's.
    #[test]
    fn on_the_wire_a_notification_call_and_a_reused_id_are_refused_and_recorded() {
        let mut w = Wire::new();
        w.client_says(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://evil.example/"}}}"#);
        w.client_says(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"browser_click","arguments":{"element":"Place order","ref":"e7"}}}"#);
        // Allowed calls, as notifications too: refused before any judgement.
        w.client_says(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/"}}}"#);
        assert!(w.server().is_empty(), "never forwarded");
        assert!(w.client().is_empty(), "a notification has no answer");

        w.client_says(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/cart"}}}"#);
        w.client_says(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://staging.example.com/checkout"}}}"#);
        let s = w.server();
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            s[0]["params"]["arguments"]["url"],
            "https://staging.example.com/cart"
        );
        let c = w.client();
        assert_eq!(c[0]["id"], 9);
        assert!(c[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in flight"));
        // The first call's answer is the first call's, in the record as well.
        w.server_answers(&s[0], json!({"content":[{"type":"text","text":"- Page URL: https://staging.example.com/cart\n- Page Title: Cart"}]}));
        assert_eq!(w.client()[0]["result"]["content"][0]["type"], "text");
        // Its id is free again.
        w.client_says(r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#);
        assert_eq!(w.server().len(), 1);
        // Ids that are not a string or an integer are refused.
        w.client_says(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#);
        w.client_says(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#);
        assert!(w.server().is_empty());
        assert_eq!(w.client().len(), 2);

        let rec = w.record();
        let refused: Vec<&Value> = rec.iter().filter(|l| l["event"] == "message").collect();
        assert_eq!(refused.len(), 6, "{rec:?}");
        for (l, tool) in
            refused[..3]
                .iter()
                .zip(["browser_navigate", "browser_click", "browser_navigate"])
        {
            assert_eq!(l["method"], "tools/call");
            assert_eq!(l["tool"], tool);
            assert!(
                l["detail"].as_str().unwrap().contains("notification"),
                "{l}"
            );
        }
        assert!(refused[3]["detail"]
            .as_str()
            .unwrap()
            .contains("already in flight"));
        let result = rec.iter().find(|l| l["event"] == "result").unwrap();
        assert_eq!(result["page_title"], "Cart");
        assert_eq!(
            result["seq"],
            rec.iter().find(|l| l["event"] == "call").unwrap()["seq"]
        );
    }

    /// Connections share the run's one server: each request goes up under an id of the
    /// gateway's and its answer comes back to the connection that asked, with that connection's
    /// id; the server is initialized once, later connections answered from its answer; a
    /// connection's cancellation names the server's id for its request.
    #[test]
    fn on_the_wire_connections_share_one_server() {
        let mut w = Wire::new();
        let (b, mut b_rx) = w.connect();
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}"#;
        w.client_says(init);
        w.says_on(b, init);
        let s = w.server();
        assert_eq!(s.len(), 1, "initialized once: {s:?}");
        w.server_answers(
            &s[0],
            json!({"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}),
        );
        let (a0, b0) = (w.client(), Wire::take(&mut b_rx));
        assert_eq!(
            (a0[0]["id"].clone(), b0[0]["id"].clone()),
            (json!(0), json!(0))
        );
        assert_eq!(a0[0]["result"], b0[0]["result"]);
        // A third connection, after: answered at once, the server not asked again.
        let (c, mut c_rx) = w.connect();
        w.says_on(
            c,
            r#"{"jsonrpc":"2.0","id":"x","method":"initialize","params":{}}"#,
        );
        assert!(w.server().is_empty());
        assert_eq!(Wire::take(&mut c_rx)[0]["id"], "x");
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        w.client_says(initialized);
        w.says_on(b, initialized);
        assert_eq!(w.server().len(), 1, "initialized is said once");

        // The same id on two connections: two requests, each answer to its own.
        let call = |u: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"browser_navigate","arguments":{{"url":"https://staging.example.com/{u}"}}}}}}"#
            )
        };
        w.client_says(&call("a"));
        w.says_on(b, &call("b"));
        let s = w.server();
        assert_eq!(s.len(), 2);
        assert_ne!(s[0]["id"], s[1]["id"]);
        w.server_answers(&s[1], json!({"content":[{"type":"text","text":"b"}]}));
        w.server_answers(&s[0], json!({"content":[{"type":"text","text":"a"}]}));
        let (a1, b1) = (w.client(), Wire::take(&mut b_rx));
        assert_eq!(a1[0]["result"]["content"][0]["text"], "a");
        assert_eq!(b1[0]["result"]["content"][0]["text"], "b");
        assert_eq!(
            (a1[0]["id"].clone(), b1[0]["id"].clone()),
            (json!(1), json!(1))
        );

        // A cancellation names the worker's id; the server gets its own; one for nothing in
        // flight is refused.
        w.says_on(b, &call("slow"));
        let s = w.server();
        w.says_on(
            b,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        );
        assert_eq!(w.server()[0]["params"]["requestId"], s[0]["id"]);
        w.client_says(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        );
        assert!(w.server().is_empty());
        // A connection gone: the answer to its call is still recorded, then dropped.
        w.srv.disconnect(b);
        w.server_answers(
            &s[0],
            json!({"content":[{"type":"text","text":"- Page Title: Slow"}]}),
        );
        assert!(w.client().is_empty());
        assert!(w.record().iter().any(|l| l["page_title"] == "Slow"));
        // The server gone: no connection is served.
        w.srv.gone();
        assert!(w.srv.connect(mpsc::unbounded_channel().0).is_none());
    }

    /// A worker calling until the record is full: past `--max-records` no line is written, the
    /// next call is refused and never forwarded, and the run's tripwire names the limit.
    #[test]
    fn a_full_record_stops_growing_and_forwards_no_unrecorded_call() {
        let mut w = Wire::new();
        let tripwire = crate::sandbox::limits::Tripwire::default();
        {
            let mut rec = w.ctx.record.lock().unwrap();
            rec.max = Some(4096);
            rec.tripwire = tripwire.clone();
        }
        let call = |id: u32| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"browser_navigate","arguments":{{"url":"https://staging.example.com/{}"}}}}}}"#,
                "p".repeat(200)
            )
        };
        let mut forwarded = 0;
        for id in 0..100 {
            w.client_says(&call(id));
            forwarded += w.server().len();
        }
        let path = w
            .ctx
            .policy
            .output_dir
            .join(crate::run_dir::RunDir::GATEWAY_RECORD);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size <= 4096, "{size}");
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert_eq!(forwarded, lines, "every forwarded call is recorded");
        assert!(forwarded > 0 && forwarded < 100);
        let last = w.client();
        assert_eq!(last.last().unwrap()["result"]["isError"], true);
        assert_eq!(
            tripwire.tripped().as_deref(),
            Some("the gateway record reached --max-records 4 KiB")
        );
    }

    #[test]
    fn the_records_are_compared_call_by_call() {
        use leopold_journal::Outcome;
        let nav = |path: &str| json!({"url": {"leopold_url": {"scheme": "https", "host": "staging.example.com", "path": path}}});
        let fwd = |seq: u64, tool: &str, call: Value, answer: Option<(bool, &str)>| Forwarded {
            seq,
            tool: tool.into(),
            call,
            answer: answer.map(|(is_error, h)| Answer {
                is_error,
                page_host: Some(h.to_owned()),
            }),
        };
        let st =
            |seq: u64, tool: &str, call: Value, outcome: Outcome, host: Option<&str>| StreamCall {
                seq,
                tool: tool.into(),
                call,
                outcome,
                page_host: host.map(str::to_owned),
            };
        const NAV: &str = "mcp__browser__browser_navigate";
        const CLICK: &str = "mcp__browser__browser_click";
        let click = json!({"element": "Place order", "ref": "e5"});
        let mut sh = Shared {
            servers: vec!["browser".into()],
            ..Shared::default()
        };
        assert!(sh.covers("mcp__browser__browser_click"));
        assert!(!sh.covers("mcp__browserx__click"));
        assert!(!sh.covers("WebFetch"));
        sh.forwarded = vec![
            fwd(1, NAV, nav("/cart"), Some((false, "staging.example.com"))),
            fwd(2, NAV, nav("/cart"), Some((true, "staging.example.com"))),
            fwd(
                3,
                CLICK,
                click.clone(),
                Some((false, "staging.example.com")),
            ),
        ];
        // Honest, the tools interleaved otherwise and two alike calls paired by their answers; a call the harness refused itself (errored, never forwarded) claims nothing.
        let honest = [
            st(
                1,
                CLICK,
                click.clone(),
                Outcome::Completed,
                Some("staging.example.com"),
            ),
            st(2, NAV, nav("/cart"), Outcome::Errored, None),
            st(
                3,
                NAV,
                nav("/cart"),
                Outcome::Completed,
                Some("staging.example.com"),
            ),
            st(4, NAV, nav("/x"), Outcome::Errored, None),
        ];
        assert_eq!(sh.compare(&honest), []);
        // Forged: the same tools and counts, the click shown as a navigation to `/`.
        let forged = [
            st(1, NAV, nav("/cart"), Outcome::Completed, None),
            st(2, NAV, nav("/cart"), Outcome::Errored, None),
            st(3, NAV, nav("/"), Outcome::Completed, None),
        ];
        let got = sh.compare(&forged);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            (got[0].tool.as_str(), got[0].journal_seq, got[0].gateway_seq),
            (NAV, Some(3), None)
        );
        assert_eq!(got[0].to_string(), "the harness's stream shows a `mcp__browser__browser_navigate` call completed (journal #3) that the gateway never forwarded with those arguments");
        assert_eq!(
            (got[1].tool.as_str(), got[1].journal_seq, got[1].gateway_seq),
            (CLICK, None, Some(3))
        );
        assert!(got[1].what.contains("(gateway #3)") && !got[1].what.contains("://"));
        // Hidden: the click left out of the stream.
        let got = sh.compare(&honest[1..]);
        assert_eq!((got.len(), got[0].gateway_seq), (1, Some(3)), "{got:?}");
        // The result: an error answer, or another page, shown as a completion.
        let mut lied = honest.clone();
        lied[1].outcome = Outcome::Completed;
        let got = sh.compare(&lied);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].to_string(), "the harness's stream shows the `mcp__browser__browser_navigate` call (journal #3, gateway #2) completed; the server answered it with an error");
        let mut lied = honest.clone();
        lied[2].page_host = Some("evil.example".into());
        let got = sh.compare(&lied);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].what.ends_with("completed on host evil.example; the server's answer was on host staging.example.com"),
            "{got:?}"
        );
        // A completion the server never answered; a denial the stream never showed.
        sh.forwarded.push(fwd(4, NAV, nav("/a"), None));
        sh.denials.push_back(GatewayDenial {
            tool: NAV.into(),
            reason: "outside_allowlist".into(),
        });
        let mut more = honest.to_vec();
        more.push(st(5, NAV, nav("/a"), Outcome::Completed, None));
        let got = sh.compare(&more);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].what.ends_with("the server never answered it"),
            "{got:?}"
        );
        assert!(got[1].what.contains("never showed"), "{got:?}");
        // A forged tool name is the worker's text: one carrying a URL is not repeated.
        let got = sh.compare(&[st(
            9,
            "mcp__browser__https://evil.example/?t=1",
            json!({}),
            Outcome::Completed,
            None,
        )]);
        assert!(
            got[0].what.contains("`(a tool name holding a URL)`") && !got[0].what.contains("://"),
            "{got:?}"
        );
        let d = sh.take_denial(NAV).unwrap();
        assert_eq!(d.reason, "outside_allowlist");
        assert!(sh.take_denial(NAV).is_none());
    }
}
