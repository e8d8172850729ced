//! The browser's network path: every request the provisioned browser sends reaches the app only
//! through this proxy, which judges it by host, method and path ([`policy`]) first
//! (docs/security.md#the-browsers-network-path).
//!
//! Why a request, not a gesture: a form submitted by Enter, a checkbox whose `change` handler
//! submits, an accepted `confirm()` or page script each send the POST with no URL and no label in
//! any tool call. The request is the act; this is where it can be refused.
//!
//! How the browser is held to it:
//! - Chromium is started with `--proxy-server` pointing here and `<-loopback>` removed from the
//!   bypass list, so every scheme and host goes through the proxy, loopback included;
//! - in a boxed run, Playwright MCP and Chromium run in a network namespace of their own whose
//!   only way out is this proxy (`leopold persona box-init` forwards the proxy's port inside to
//!   the run's `web.sock`): no WebRTC UDP, no QUIC, no direct connection, whatever a page asks;
//! - https: a tunnel (`CONNECT host:port`) to an allowlisted host is terminated here with a
//!   certificate from the run's own CA ([`tls`]), so each request inside is judged like a plain
//!   one; a tunnel to any other host is refused before it opens. Inside a tunnel only HTTP/1.1
//!   (plain or TLS) is spoken: anything else fails to parse and the tunnel closes.
//!
//! Why not a library proxy: `hudsucker` (the maintained Rust MITM proxy) tunnels a `CONNECT`
//! whose first bytes are neither TLS nor HTTP straight through, unjudged, to an address it
//! resolves itself, and opens WebSocket upstreams with its own resolver: both bypass the flow's
//! `[hosts]` and "what Leopold cannot judge, it denies". The pieces are the well-kept crates
//! (hyper, rustls, rcgen); this module only puts them together. Chrome DevTools Protocol
//! interception was the other candidate: Playwright MCP owns the browser's CDP session, it
//! misses service workers started before it attaches, and it cannot stop WebRTC's UDP.
//!
//! A refused request is never answered ([`Closed`]) and is recorded: method, host and rule,
//! never the path or query.

pub mod policy;
pub mod tls;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use leopold_flows::Flow;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};

pub use policy::Refusal;

/// The proxy's socket in the run's socket directory (the browser's box forwards to it).
pub const SOCK: &str = "web.sock";
/// Inside the browser's box, where Chromium finds the proxy (the namespace is the run's own:
/// any port is free).
pub const BOX_PORT: u16 = 3128;

pub(crate) type Body = BoxBody<Bytes, hyper::Error>;

/// Where refused requests are written: the gateway's hash-chained record.
pub type Recorder = Arc<dyn Fn(Value) + Send + Sync>;

/// A request the proxy refused, for the run's summary and report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub method: String,
    pub host: String,
    pub refusal: Refusal,
}

/// What the proxy saw, shared with the run.
#[derive(Debug, Default)]
pub struct Seen {
    /// Requests refused, in order.
    pub refused: Vec<Refused>,
}

/// Where the browser reaches the proxy.
pub enum Listen {
    /// A boxed run: the run's `web.sock`, forwarded to from inside the browser's box.
    Unix(PathBuf),
    /// A run without the box: a loopback port bound when the browser's config was written.
    Tcp(std::net::TcpListener),
}

/// What the persona is told, in the answer of the call during which the browser's requests were
/// refused: method, host and rule, as recorded; `None` when none were.
pub fn refusal_note(refused: &[Refused]) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    let mut note = String::from(
        "### Refused by Leopold\nThe browser sent requests during this call that the flow does not allow; \
         they never reached the app (the page or request failed as on a network error):",
    );
    for r in refused.iter().take(10) {
        note.push_str(&format!(
            "\n- {} to {}: {}",
            r.method, r.host, r.refusal.rule
        ));
    }
    if refused.len() > 10 {
        note.push_str(&format!("\n- and {} more", refused.len() - 10));
    }
    note.push_str("\nGo on with what the flow allows.");
    Some(note)
}

/// What [`start`] needs.
pub struct Start {
    pub flow: Flow,
    pub listen: Listen,
    pub authority: Arc<tls::Authority>,
    /// `--ca-cert` files: extra roots for the app's own certificate.
    pub ca_certs: Vec<PathBuf>,
    pub record: Recorder,
    /// Shared with the gateway, which tells the persona of refusals ([`refusal_note`]).
    pub seen: Arc<Mutex<Seen>>,
}

struct Ctx {
    flow: Flow,
    hosts: HashMap<String, SocketAddr>,
    authority: Arc<tls::Authority>,
    client: tokio_rustls::TlsConnector,
    record: Recorder,
    seen: Arc<Mutex<Seen>>,
}

/// The running proxy. Dropping it stops it and removes its socket.
pub struct WebPath {
    task: tokio::task::JoinHandle<()>,
    pub seen: Arc<Mutex<Seen>>,
    sock: Option<PathBuf>,
}

impl WebPath {
    /// The refused requests, one line per method, host and rule, with a count: `POST to
    /// staging.example.com ×2 (irreversible.url_paths "/checkout/confirm")`.
    pub fn refusal_lines(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut counts: Vec<(&Refused, u64)> = Vec::new();
        for r in &seen.refused {
            match counts.iter_mut().find(|(c, _)| *c == r) {
                Some((_, n)) => *n += 1,
                None => counts.push((r, 1)),
            }
        }
        counts
            .into_iter()
            .map(|(r, n)| {
                let times = if n > 1 {
                    format!(" ×{n}")
                } else {
                    String::new()
                };
                format!("{} to {}{times} ({})", r.method, r.host, r.refusal.rule)
            })
            .collect()
    }
}

impl Drop for WebPath {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(s) = &self.sock {
            let _ = std::fs::remove_file(s);
        }
    }
}

/// Starts serving. Inside a tokio runtime.
///
/// # Errors
///
/// The socket cannot be bound, or a `--ca-cert` file is unusable.
pub fn start(s: Start) -> anyhow::Result<WebPath> {
    let client = tokio_rustls::TlsConnector::from(tls::client_config(&s.ca_certs)?);
    let seen = s.seen;
    let ctx = Arc::new(Ctx {
        hosts: s
            .flow
            .hosts
            .iter()
            .map(|m| (m.host.clone(), m.to))
            .collect(),
        flow: s.flow,
        authority: s.authority,
        client,
        record: s.record,
        seen: seen.clone(),
    });
    let (task, sock) = match s.listen {
        Listen::Unix(path) => {
            let listener = tokio::net::UnixListener::bind(&path)
                .with_context(|| format!("cannot listen on {}", path.display()))?;
            let task = tokio::spawn(async move {
                while let Ok((conn, _)) = listener.accept().await {
                    tokio::spawn(serve(conn, ctx.clone(), None));
                }
            });
            (task, Some(path))
        }
        Listen::Tcp(listener) => {
            listener.set_nonblocking(true)?;
            let listener = tokio::net::TcpListener::from_std(listener)?;
            let task = tokio::spawn(async move {
                while let Ok((conn, _)) = listener.accept().await {
                    tokio::spawn(serve(conn, ctx.clone(), None));
                }
            });
            (task, None)
        }
    };
    Ok(WebPath { task, seen, sock })
}

/// Inside a tunnel: where every request of the connection goes.
#[derive(Debug, Clone)]
struct Tunnel {
    tls: bool,
    host: String,
    port: u16,
}

/// Serves HTTP/1.1 on one connection from the browser (or on one tunnel inside it).
async fn serve<S>(io: S, ctx: Arc<Ctx>, tunnel: Option<Tunnel>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let (ctx, tunnel) = (ctx.clone(), tunnel.clone());
        async move { handle(req, &ctx, tunnel.as_ref()).await }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades()
        .await;
}

/// A refused request gets no answer at all: the connection closes. A navigation then ends on
/// Chromium's own error page (`chrome-error://`, titled with the host), which the journal reads
/// as a way out the browser refused; a `fetch` or beacon fails as on a network error. Why not a
/// page of Leopold's: it would sit at the refused URL, where the journal (rightly) takes a page
/// at an outside host or an irreversible path for one the browser reached, and a page of the
/// app's could forge it. Chromium's error page no page can forge. The persona learns why from the
/// gateway, which adds the refusal to the answer of the call that caused it.
#[derive(Debug)]
struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused: host off the allowlist")
    }
}

impl std::error::Error for Closed {}

async fn handle(
    req: Request<Incoming>,
    ctx: &Arc<Ctx>,
    tunnel: Option<&Tunnel>,
) -> Result<Response<Body>, Closed> {
    if req.method() == Method::CONNECT && tunnel.is_none() {
        return Ok(connect(req, ctx));
    }
    let method = req.method().as_str().to_owned();
    // The target: the tunnel's for a request inside one, else the absolute URL a proxy is sent.
    let target = match tunnel {
        Some(t) => Some(t.clone()),
        None => {
            let uri = req.uri();
            match (uri.scheme_str(), uri.host()) {
                (Some("http"), Some(h)) => Some(Tunnel {
                    tls: false,
                    host: h
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_ascii_lowercase(),
                    port: uri.port_u16().unwrap_or(80),
                }),
                _ => None,
            }
        }
    };
    let Some(target) = target else {
        // Not a proxy request (an origin-form path sent to the proxy itself, an https:// URL
        // outside a tunnel): nothing to judge it by.
        refuse(
            ctx,
            &method,
            "",
            &Refusal {
                reason: "not_judged",
                rule: "a request the proxy cannot place (no host)".into(),
            },
        );
        return Err(Closed);
    };
    if let Err(r) = policy::judge(&ctx.flow, &method, &target.host, req.uri().path()) {
        refuse(ctx, &method, &target.host, &r);
        return Err(Closed);
    }
    Ok(match forward(req, ctx, &target).await {
        Ok(res) => res,
        Err(e) => {
            tracing::debug!("web: {} {}: {e:#}", method, target.host);
            plain(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "Leopold could not reach {}: the app did not answer.",
                    target.host
                ),
            )
        }
    })
}

/// A `CONNECT`: judged by its host alone, then opened and served, every request inside judged.
fn connect(mut req: Request<Incoming>, ctx: &Arc<Ctx>) -> Response<Body> {
    let Some(authority) = req.uri().authority().cloned() else {
        return plain(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if let Err(r) = policy::judge_host(&ctx.flow, &host) {
        refuse(ctx, "CONNECT", &host, &r);
        // Chromium shows ERR_TUNNEL_CONNECTION_FAILED on its own error page.
        return plain(
            StatusCode::FORBIDDEN,
            "Refused by Leopold: not on the flow's allowlist",
        );
    }
    let port = authority.port_u16().unwrap_or(443);
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(&mut req).await else {
            return;
        };
        let mut io = TokioIo::new(upgraded);
        // TLS starts with a handshake record (0x16); anything else is served as plain HTTP/1.1
        // (a `ws://` tunnel), and what is neither fails to parse there.
        let mut first = [0u8; 1];
        let Ok(n) = tokio::io::AsyncReadExt::read(&mut io, &mut first).await else {
            return;
        };
        let io = Prefixed::new(first[..n].to_vec(), io);
        if n == 1 && first[0] == 0x16 {
            let Ok(config) = ctx.authority.server_config(&host) else {
                return;
            };
            let Ok(tls) = tokio_rustls::TlsAcceptor::from(config).accept(io).await else {
                return;
            };
            serve(
                tls,
                ctx,
                Some(Tunnel {
                    tls: true,
                    host,
                    port,
                }),
            )
            .await;
        } else {
            serve(
                io,
                ctx,
                Some(Tunnel {
                    tls: false,
                    host,
                    port,
                }),
            )
            .await;
        }
    });
    Response::new(empty())
}

/// Sends a judged request on to the app, and its answer back; an upgrade (a WebSocket) is
/// joined end to end once the app agrees to it.
async fn forward(
    mut req: Request<Incoming>,
    ctx: &Arc<Ctx>,
    target: &Tunnel,
) -> anyhow::Result<Response<Body>> {
    let addr = match ctx.hosts.get(&target.host) {
        // `[hosts]`: the app's fixed address, whatever port the URL named (as Chromium's own
        // resolver rules did).
        Some(a) => *a,
        None => tokio::net::lookup_host((target.host.as_str(), target.port))
            .await?
            .next()
            .with_context(|| format!("{} does not resolve", target.host))?,
    };
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let _ = tcp.set_nodelay(true);
    // The request goes on in origin form, its Host the judged host: what the app sees is what
    // was judged.
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    *req.uri_mut() = path.parse()?;
    let default_port = if target.tls { 443 } else { 80 };
    let host_header = if target.port == default_port {
        target.host.clone()
    } else {
        format!("{}:{}", target.host, target.port)
    };
    let upgrade = is_upgrade(&req);
    strip_hop_by_hop(req.headers_mut(), upgrade);
    req.headers_mut()
        .insert(hyper::header::HOST, host_header.parse()?);
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let mut res = if target.tls {
        let name = rustls::pki_types::ServerName::try_from(target.host.clone())?;
        let tls = ctx.client.connect(name, tcp).await?;
        send(tls, req).await?
    } else {
        send(tcp, req).await?
    };
    answer(&mut res, client_upgrade);
    Ok(res.map(BodyExt::boxed))
}

/// Readies the server's answer for the client: an agreed upgrade (a WebSocket) is joined end to
/// end once both sides have switched; any other answer loses its hop-by-hop headers.
pub(crate) fn answer(
    res: &mut Response<Incoming>,
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
) {
    if res.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_side) = client_upgrade {
            let server_side = hyper::upgrade::on(res);
            tokio::spawn(async move {
                if let (Ok(c), Ok(a)) = (client_side.await, server_side.await) {
                    let (mut c, mut a) = (TokioIo::new(c), TokioIo::new(a));
                    let _ = tokio::io::copy_bidirectional(&mut c, &mut a).await;
                }
            });
        }
    } else {
        strip_hop_by_hop(res.headers_mut(), false);
    }
}

async fn send<S>(io: S, req: Request<Incoming>) -> anyhow::Result<Response<Incoming>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    Ok(handshake(io).await?.send_request(req).await?)
}

/// An HTTP/1.1 client connection on `io`, driven by a task of its own (upgrades included).
pub(crate) async fn handshake<S>(
    io: S,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Incoming>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    Ok(sender)
}

pub(crate) fn is_upgrade<B>(req: &Request<B>) -> bool {
    req.headers().contains_key(hyper::header::UPGRADE)
        && req
            .headers()
            .get_all(hyper::header::CONNECTION)
            .iter()
            .any(|v| {
                v.to_str()
                    .is_ok_and(|s| s.to_ascii_lowercase().contains("upgrade"))
            })
}

/// Headers that belong to one hop (RFC 9110 §7.6.1), the proxy's own included. An upgrade keeps
/// `Connection: upgrade` and `Upgrade`, which the app needs to agree to it.
pub(crate) fn strip_hop_by_hop(h: &mut hyper::HeaderMap, upgrade: bool) {
    let listed: Vec<String> = h
        .get_all(hyper::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|s| s.trim().to_ascii_lowercase()))
        .filter(|s| !(s.is_empty() || upgrade && s == "upgrade"))
        .collect();
    for name in listed {
        h.remove(name.as_str());
    }
    for name in [
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "keep-alive",
        "te",
        "trailer",
    ] {
        h.remove(name);
    }
    if !upgrade {
        h.remove(hyper::header::CONNECTION);
        h.remove(hyper::header::UPGRADE);
    }
}

/// Records a refusal: method, host and rule, never the path.
fn refuse(ctx: &Ctx, method: &str, host: &str, r: &Refusal) {
    let shown_host = leopold_guard::safe_text(host, 255).unwrap_or_default();
    let shown_method = leopold_guard::safe_text(method, 32).unwrap_or_default();
    (ctx.record)(json!({
        "event": "request", "layer": "browser", "verdict": "denied",
        "method": shown_method, "host": shown_host, "reason": r.reason, "rule": r.rule,
    }));
    ctx.seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .refused
        .push(Refused {
            method: shown_method,
            host: shown_host,
            refusal: r.clone(),
        });
}

pub(crate) fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut res = Response::new(full(text.to_owned()));
    *res.status_mut() = status;
    res
}

fn full(s: String) -> Body {
    Full::new(Bytes::from(s)).map_err(|n| match n {}).boxed()
}

fn empty() -> Body {
    full(String::new())
}

/// A stream with bytes already read from it put back in front.
struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    fn new(prefix: Vec<u8>, inner: S) -> Prefixed<S> {
        Prefixed {
            prefix,
            at: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = (self.prefix.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(method: &str, rule: &str) -> Refused {
        Refused {
            method: method.into(),
            host: "staging.example.com".into(),
            refusal: Refusal {
                reason: "irreversible",
                rule: rule.into(),
            },
        }
    }

    #[test]
    fn the_persona_is_told_what_was_refused_host_only() {
        assert_eq!(refusal_note(&[]), None);
        let note = refusal_note(&[refused(
            "POST",
            "irreversible.url_paths \"/checkout/confirm\"",
        )])
        .unwrap();
        assert!(note.starts_with("### Refused by Leopold\n"), "{note}");
        assert!(note.contains(
            "- POST to staging.example.com: irreversible.url_paths \"/checkout/confirm\""
        ));
        assert!(!note.contains("://"));
        let many: Vec<Refused> = (0..12).map(|_| refused("GET", "allowlist")).collect();
        let note = refusal_note(&many).unwrap();
        assert_eq!(note.matches("- GET to").count(), 10);
        assert!(note.contains("- and 2 more"));
        // Into a tool result's content, after the browser's own text.
        let mut msg = serde_json::json!({"jsonrpc": "2.0", "id": 3,
            "result": {"content": [{"type": "text", "text": "### Page"}]}});
        crate::gateway::policy::append_text(&mut msg, &note);
        assert_eq!(msg["result"]["content"][1]["text"], note.as_str());
        let mut err = serde_json::json!({"jsonrpc": "2.0", "id": 3, "error": {"code": 1}});
        crate::gateway::policy::append_text(&mut err, &note);
        assert!(err.get("result").is_none());
    }
}
