//! The run's one process of a server and the routes of the requests it has: started by the
//! first connection and shared by every later one, each request under an id of the gateway's own
//! so that every answer goes back, judged and recorded, to the request it answers. What the
//! server says is judged here ([`server_message`]); what the worker says, in `conn`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use leopold_journal::lines::LineBuf;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

use super::compare::Answer;
use super::policy;
use super::start::Ctx;

/// The gateway's own record, in the run directory.
/// The longest message the gateway reads; a longer line closes the connection.
pub(super) const MAX_LINE: usize = 32 << 20;

/// What a request the gateway passed on was, to treat its answer.
pub(super) enum Pending {
    Initialize,
    ToolsList,
    ToolsCall {
        seq: u64,
        tool: String,
    },
    /// Passed back as it is (`ping`).
    Other,
    /// The gateway's own request ([`super::evidence`]): its answer goes to no one.
    Evidence(super::evidence::Own),
}

/// A request passed on to the server under an id of the gateway's own: whose it was.
pub(super) struct Route {
    pub(super) conn: u64,
    /// The id the worker gave it, restored on its answer.
    pub(super) id: Value,
    pub(super) what: Pending,
}

/// The server's answer to the first `initialize`, kept for every later connection's.
pub(super) enum Init {
    NotSent,
    /// The first one is with the server; these connections' (and ids) wait for its answer.
    Waiting(Vec<(u64, Value)>),
    /// Its answer, without its id.
    Done(Value),
}

/// The connections sharing a server and their requests in flight.
pub(super) struct Routes {
    pub(super) next_id: u64,
    pub(super) next_conn: u64,
    /// Live connections: where their answers go.
    pub(super) conns: HashMap<u64, mpsc::UnboundedSender<Vec<u8>>>,
    /// Requests with the server, by the gateway's id for them. A worker's ids are its own
    /// connection's: two connections (or one reusing an id) never collide on the server, and
    /// every answer is judged and recorded as the answer to the request it answers.
    pub(super) pending: HashMap<u64, Route>,
    pub(super) init: Init,
    /// Whether `notifications/initialized` reached the server (once: it was initialized once).
    pub(super) initialized: bool,
    /// The server's process ended: no connection is served any more.
    pub(super) gone: bool,
    pub(super) evidence: super::evidence::State,
}

impl Routes {
    /// Keeps `route` under a new id of the gateway's, the id the request goes to the server with.
    pub(super) fn route(&mut self, route: Route) -> u64 {
        self.next_id += 1;
        self.pending.insert(self.next_id, route);
        self.next_id
    }
}

/// The run's one process of a server ([`Ctx::server`]).
pub(super) struct Server {
    pub(super) to_server: mpsc::UnboundedSender<Vec<u8>>,
    pub(super) routes: Mutex<Routes>,
    /// The process (its own group, SIGKILLed by the kernel if the supervisor dies) and its pipes'
    /// tasks; [`Server::stop`] ends them.
    pub(super) child: Mutex<Option<tokio::process::Child>>,
    pub(super) tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Server {
    pub(super) fn new(to_server: mpsc::UnboundedSender<Vec<u8>>) -> Server {
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
                evidence: super::evidence::State::default(),
            }),
            child: Mutex::new(None),
            tasks: Mutex::new(Vec::new()),
        }
    }

    pub(super) fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new connection, its answers sent to `tx`; `None` once the server is gone.
    pub(super) fn connect(&self, tx: mpsc::UnboundedSender<Vec<u8>>) -> Option<u64> {
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
    pub(super) fn disconnect(&self, conn: u64) {
        let mut r = self.routes();
        r.conns.remove(&conn);
        if let Init::Waiting(w) = &mut r.init {
            w.retain(|(c, _)| *c != conn);
        }
    }

    pub(super) fn to_conn(&self, conn: u64, v: &Value) {
        if let Some(tx) = self.routes().conns.get(&conn) {
            send(tx, v);
        }
    }

    /// The process ended: every connection closes (its writer drains, then shuts the socket).
    pub(super) fn gone(&self) {
        let mut r = self.routes();
        r.gone = true;
        r.conns.clear();
        r.init = Init::NotSent;
    }

    pub(super) fn stop(&self) {
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
            let leader = child.id();
            let inner = leader.map(crate::os::children).unwrap_or_default();
            inner.iter().for_each(|&pid| crate::os::kill(pid));
            // Its group: what it started in it goes too.
            if let Some(pid) = leader {
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

pub(super) type RequestKey = (u64, String);

pub(super) fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Reads one line of at most [`MAX_LINE`] bytes; `None` at the end or past the limit.
pub(super) async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Option<Vec<u8>> {
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

pub(super) fn send(tx: &mpsc::UnboundedSender<Vec<u8>>, v: &Value) {
    let mut b = v.to_string().into_bytes();
    b.push(b'\n');
    let _ = tx.send(b);
}

/// Starts the run's process of the server and the tasks on its pipes.
pub(super) fn start_server(ctx: &Arc<Ctx>) -> anyhow::Result<Arc<Server>> {
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

/// One message from the real server.
pub(super) fn server_message(ctx: &Ctx, srv: &Server, line: &[u8]) {
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
                        if ctx.own_tools {
                            if let Some(tools) = r.get_mut("tools").and_then(Value::as_array_mut) {
                                tools.extend(super::own::definitions());
                            }
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
                    // The `[expect]` pages this answer is on, by the flow's own words: the
                    // record keeps hosts, never a URL.
                    let mut shared = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
                    let reached: Vec<String> = match policy::page_url(&text) {
                        Some(url) if !is_error => shared.verdict.reach(&ctx.policy.flow, seq, url),
                        _ => Vec::new(),
                    };
                    let mut line = json!({
                        "event": "result", "seq": seq, "server": ctx.policy.server, "tool": tool,
                        "is_error": is_error, "page_host": host, "page_title": title});
                    if !reached.is_empty() {
                        line["reached"] = json!(reached);
                    }
                    ctx.record
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .line(line);
                    // Before the worker can see the answer: the stream never shows it first.
                    shared.answered(
                        seq,
                        Answer {
                            is_error,
                            page_host: host,
                        },
                    );
                    drop(shared);
                    let mut refused = false;
                    if let Some((w, told)) = &ctx.web {
                        let seen = w.lock().unwrap_or_else(|e| e.into_inner());
                        let mut told = told.lock().unwrap_or_else(|e| e.into_inner());
                        let new = &seen.refused[(*told).min(seen.refused.len())..];
                        if let Some(note) = crate::web::refusal_note(new) {
                            policy::append_text(&mut msg, &note);
                            refused = true;
                        }
                        *told = seen.refused.len();
                    }
                    // Sent to the server before the worker can see the answer, so the worker's
                    // next call finds it already there (and waits for it).
                    super::evidence::after(ctx, srv, seq, Some(&tool), is_error || refused);
                    srv.to_conn(route.conn, &msg);
                }
                Pending::Other => srv.to_conn(route.conn, &msg),
                Pending::Evidence(own) => super::evidence::answered(ctx, srv, own, &msg),
            }
        }
        (None, None) => {}
    }
}
