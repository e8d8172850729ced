//! One connection from the browser, and each request on it judged: a plain request by its
//! absolute URL, a `CONNECT` by its host before the tunnel opens, then every request inside the
//! tunnel. Here is where a request is refused, recorded and left unanswered; what is allowed goes
//! on in `forward`.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};

use super::forward::{empty, forward, plain};
use super::prefixed::Prefixed;
use super::{policy, Body, Ctx, Refusal, Refused};

/// Inside a tunnel: where every request of the connection goes.
#[derive(Debug, Clone)]
pub(super) struct Tunnel {
    pub(super) tls: bool,
    pub(super) host: String,
    pub(super) port: u16,
}

/// Serves HTTP/1.1 on one connection from the browser (or on one tunnel inside it).
pub(super) async fn serve<S>(io: S, ctx: Arc<Ctx>, tunnel: Option<Tunnel>)
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
pub(super) struct Closed;

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
