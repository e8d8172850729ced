//! A judged request on its way to the app and its answer back: the app reached at the judged
//! host (or its `[hosts]` address), the hop-by-hop headers dropped both ways, an agreed upgrade
//! joined end to end. Also the bodies the proxy answers with itself.

use std::sync::Arc;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use super::conn::Tunnel;
use super::{Body, Ctx};

/// Sends a judged request on to the app, and its answer back; an upgrade (a WebSocket) is
/// joined end to end once the app agrees to it.
pub(super) async fn forward(
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

pub(crate) fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut res = Response::new(full(text.to_owned()));
    *res.status_mut() = status;
    res
}

fn full(s: String) -> Body {
    Full::new(Bytes::from(s)).map_err(|n| match n {}).boxed()
}

pub(super) fn empty() -> Body {
    full(String::new())
}
