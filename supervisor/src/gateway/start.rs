//! The gateway as a run starts and stops it: one context per server, the sockets, the record
//! opened (or continued), and what dropping it ends. The serving itself is in `conn` and `server`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use leopold_journal::JournalHash;
use serde_json::{json, Value};
use tokio::net::UnixListener;

use super::compare::{Disagreement, Shared};
use super::conn::serve;
use super::policy::Policy;
use super::record::Record;
use super::server::{start_server, Server};
use super::{socket_path, Upstream};
use crate::browser::RefTracker;

/// One server's context, shared by its connections.
pub(super) struct Ctx {
    pub(super) policy: Policy,
    pub(super) upstream: Upstream,
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) record: Arc<Mutex<Record>>,
    pub(super) refs: Option<Arc<Mutex<RefTracker>>>,
    pub(super) cwd: PathBuf,
    pub(super) run_id: String,
    pub(super) stderr_log: PathBuf,
    /// The run's one process of this server, started by the first connection and shared by
    /// every later one: a server per connection was a browser per connection (20 Playwright
    /// servers for one run), each outside the box.
    pub(super) server: Mutex<Option<Arc<Server>>>,
    /// The browser proxy's refusals, for the provisioned browser, and how many of them the
    /// persona has been told of: each answer tells the ones since the last (a form a call
    /// submitted by script may be refused after that call's own answer).
    pub(super) web: Option<(Arc<Mutex<crate::web::Seen>>, Mutex<usize>)>,
    /// This server's `tools/list` carries Leopold's own tools ([`super::own`]), and its calls of
    /// them are answered here: the provisioned browser's, else the first server's.
    pub(super) own_tools: bool,
    /// The provisioned browser's `--evidence` ([`super::evidence`]); `None` for other servers.
    pub(super) evidence: Option<super::evidence::Config>,
}

impl Ctx {
    /// The run's process of this server, started on the first call.
    pub(super) fn server(self: &Arc<Ctx>) -> anyhow::Result<Arc<Server>> {
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
    /// `--evidence`: what the gateway keeps of the provisioned browser's pages.
    pub evidence: super::Evidence,
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

    /// Stops the provisioned browser's trace into `trace.zip` and waits for the gateway's last
    /// screenshots, once the worker is gone and before [`Gateway::seal`]: the server is still
    /// running (dropping the gateway kills it, and an unstopped trace is not flushed).
    pub async fn finish_evidence(&self) {
        for c in &self.ctxs {
            let server = c.server.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(s) = server {
                super::evidence::finish(c, &s).await;
            }
        }
    }

    /// What the persona reported with Leopold's own tools and the `[expect]` pages reached.
    pub fn seen(&self) -> crate::verdict::Seen {
        let sh = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        sh.verdict.clone()
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
    let own_host = s.servers.iter().position(|u| u.provisioned).unwrap_or(0);
    for (i, up) in s.servers.into_iter().enumerate() {
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
            own_tools: i == own_host,
            evidence: (up_provisioned && s.evidence != super::Evidence::None).then(|| {
                super::evidence::Config {
                    mode: s.evidence,
                    run_dir: s.run_dir.path().to_path_buf(),
                }
            }),
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
