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
//! A refused request is never answered ([`Closed`](conn::Closed)) and is recorded: method, host
//! and rule, never the path or query.
//!
//! The parts, one file each so that each reads on its own: a connection and each request on it
//! judged (`conn`), a judged request sent on to the app (`forward`), the bytes a tunnel's first
//! read took put back (`prefixed`); here, the proxy as a run starts it and what it saw.

mod conn;
mod forward;
pub mod policy;
mod prefixed;
pub mod tls;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use leopold_flows::Flow;
use serde_json::Value;

pub(crate) use forward::{answer, handshake, is_upgrade, plain, strip_hop_by_hop};
pub use policy::Refusal;

use conn::serve;

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

pub(super) struct Ctx {
    pub(super) flow: Flow,
    pub(super) hosts: HashMap<String, SocketAddr>,
    pub(super) authority: Arc<tls::Authority>,
    pub(super) client: tokio_rustls::TlsConnector,
    pub(super) record: Recorder,
    pub(super) seen: Arc<Mutex<Seen>>,
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
