//! The model relay: the box's one way to the model endpoint, and the keeper of the model's
//! credentials.
//!
//! The worker never holds the key (issue #22). Each credential the harness needs (a key
//! variable, the login file's tokens) enters the box as a placeholder of Leopold's, made per
//! run ([`Credentials::placeholder`]); the relay, outside the box, puts the real value back into
//! the request's credential header on its way to the endpoint. What the worker can read (its
//! environment, its files, `/proc`) holds placeholders only; what it could send anywhere else
//! has no way out of the box. This is the pattern of srt-proxy and codex-action.
//!
//! Inside, the harness speaks plain HTTP to box-init's loopback port; the relay speaks to the
//! endpoint (TLS for a remote one, with the system's roots). Only origin-form requests are
//! relayed, each to the endpoint whatever its `Host` says: a `CONNECT` or a proxy-style request
//! for another host is refused and counted. An upgrade (Codex's Responses WebSocket) is joined
//! end to end. Bodies are never read nor changed: a placeholder in a body stays a placeholder.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpStream, UnixStream};

use super::Endpoint;
use crate::web::Body;

/// The headers a credential travels in: Anthropic's `x-api-key`, the bearer `authorization`
/// of OAuth logins and of OpenAI-style keys, Azure's `api-key`.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "x-api-key", "api-key"];

/// The run's credentials: each placeholder the box holds, and the value it stands for. Never
/// printed: its `Debug` shows the names only.
#[derive(Clone, Default)]
pub struct Credentials {
    /// (name, placeholder, real value)
    pairs: Vec<(String, String, String)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.pairs.iter().map(|(n, _, _)| n))
            .finish()
    }
}

impl Credentials {
    /// The placeholder the box gets for `real`, named after `name` (a variable, a login file's
    /// field) and the run. It keeps the key's leading kind (`sk-ant-api03-`, `sk-proj-`), so
    /// that a harness that reads the kind from the key still sees the same one.
    pub fn placeholder(&mut self, name: &str, real: &str, run_id: &str) -> String {
        if let Some((_, p, _)) = self.pairs.iter().find(|(_, _, r)| r == real) {
            return p.clone();
        }
        let lead: String = real
            .chars()
            .take(16)
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let kind = lead.rfind('-').map_or("", |i| &lead[..=i]);
        let tag: String = format!("{name}-{run_id}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let placeholder = format!("{kind}leopold-placeholder-{tag}");
        self.pairs
            .push((name.to_owned(), placeholder.clone(), real.to_owned()));
        placeholder
    }

    /// Puts the real values back in the credential headers: a value that is a placeholder, or
    /// `Bearer <placeholder>`. Any other header, and any other shape, is left as it came.
    fn fill(&self, headers: &mut hyper::HeaderMap) {
        for name in CREDENTIAL_HEADERS {
            let Some(value) = headers.get(*name).and_then(|v| v.to_str().ok()) else {
                continue;
            };
            let (scheme, token) = match value.split_once(' ') {
                Some((s, t)) if s.eq_ignore_ascii_case("bearer") => (Some(s), t.trim()),
                _ => (None, value.trim()),
            };
            let Some((_, _, real)) = self.pairs.iter().find(|(_, p, _)| p == token) else {
                continue;
            };
            let filled = match scheme {
                Some(s) => format!("{s} {real}"),
                None => real.clone(),
            };
            if let Ok(mut v) = hyper::header::HeaderValue::from_str(&filled) {
                v.set_sensitive(true);
                headers.insert(*name, v);
            }
        }
    }
}

/// One run's relay to its model endpoint.
pub struct ModelRelay {
    endpoint: Endpoint,
    credentials: Credentials,
    /// For a remote endpoint: the system's roots, `http/1.1`.
    tls: Option<Arc<rustls::ClientConfig>>,
    host_header: hyper::header::HeaderValue,
    /// Requests for anything but the endpoint, refused.
    refused: Arc<AtomicUsize>,
}

impl ModelRelay {
    /// `extra_roots`: PEM files trusted beside the system's roots (which honour
    /// `SSL_CERT_FILE`).
    pub fn new(
        endpoint: Endpoint,
        credentials: Credentials,
        refused: Arc<AtomicUsize>,
        extra_roots: &[std::path::PathBuf],
    ) -> anyhow::Result<ModelRelay> {
        let (tls, host_header) = match &endpoint {
            Endpoint::Loopback(a) => (None, a.to_string()),
            Endpoint::Remote { host, port } => (
                Some(crate::web::tls::client_config(extra_roots)?),
                if *port == 443 {
                    host.clone()
                } else {
                    format!("{host}:{port}")
                },
            ),
        };
        Ok(ModelRelay {
            endpoint,
            credentials,
            tls,
            host_header: host_header.parse()?,
            refused,
        })
    }

    /// Serves one connection from the box: its requests in turn, on one connection to the
    /// endpoint kept as long as both ends keep theirs.
    pub async fn serve(self: Arc<Self>, conn: UnixStream) {
        let upstream: Arc<tokio::sync::Mutex<Option<SendRequest<Incoming>>>> = Arc::default();
        let service = hyper::service::service_fn(move |req| {
            let relay = self.clone();
            let upstream = upstream.clone();
            async move { Ok::<_, Infallible>(relay.handle(req, &upstream).await) }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(conn), service)
            .with_upgrades()
            .await;
    }

    async fn handle(
        &self,
        req: Request<Incoming>,
        upstream: &tokio::sync::Mutex<Option<SendRequest<Incoming>>>,
    ) -> Response<Body> {
        if req.method() == Method::CONNECT || req.uri().authority().is_some() {
            self.refused.fetch_add(1, Ordering::Relaxed);
            let mut res = crate::web::plain(
                StatusCode::FORBIDDEN,
                "leopold: the box reaches only its model endpoint\n",
            );
            // The connection ends with the refusal: nothing more is read from it.
            res.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return res;
        }
        match self.forward(req, upstream).await {
            Ok(res) => res,
            Err(e) => crate::web::plain(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "leopold: cannot reach the model endpoint {}: {e:#}\n",
                    self.endpoint.describe()
                ),
            ),
        }
    }

    async fn forward(
        &self,
        mut req: Request<Incoming>,
        upstream: &tokio::sync::Mutex<Option<SendRequest<Incoming>>>,
    ) -> anyhow::Result<Response<Body>> {
        let upgrade = crate::web::is_upgrade(&req);
        crate::web::strip_hop_by_hop(req.headers_mut(), upgrade);
        req.headers_mut()
            .insert(hyper::header::HOST, self.host_header.clone());
        self.credentials.fill(req.headers_mut());
        let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
        let mut held = upstream.lock().await;
        let mut sender = match held.take() {
            Some(mut s) => match s.ready().await {
                Ok(()) => s,
                // The endpoint closed it: a new one.
                Err(_) => self.connect().await?,
            },
            None => self.connect().await?,
        };
        let sent = sender.send_request(req);
        if !upgrade {
            // An upgraded connection is the WebSocket's, never another request's.
            *held = Some(sender);
        }
        drop(held);
        let mut res = sent.await?;
        crate::web::answer(&mut res, client_upgrade);
        Ok(res.map(http_body_util::BodyExt::boxed))
    }

    async fn connect(&self) -> anyhow::Result<SendRequest<Incoming>> {
        match &self.endpoint {
            Endpoint::Loopback(addr) => {
                let tcp = TcpStream::connect(addr).await?;
                let _ = tcp.set_nodelay(true);
                crate::web::handshake(tcp).await
            }
            Endpoint::Remote { host, port } => {
                // Resolved here, outside the box.
                let tcp = TcpStream::connect((host.as_str(), *port)).await?;
                let _ = tcp.set_nodelay(true);
                let config = self
                    .tls
                    .clone()
                    .ok_or_else(|| anyhow::anyhow!("no TLS configuration"))?;
                let name = rustls::pki_types::ServerName::try_from(host.clone())?;
                let tls = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await?;
                crate::web::handshake(tls).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> hyper::HeaderMap {
        let mut h = hyper::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    /// A remote endpoint over TLS (a local server with a certificate for `localhost`): the
    /// request arrives with the endpoint's `Host`, the real key and its body as sent; a
    /// `CONNECT` for another host is refused and counted, and never reaches it.
    #[tokio::test]
    async fn a_remote_endpoint_gets_the_key_over_tls_and_nothing_else() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let pem = dir.path().join("ca.pem");
        std::fs::write(&pem, cert.cert.pem()).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(
            rustls::pki_types::PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()),
        );
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    continue;
                };
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !String::from_utf8_lossy(&got).contains("\r\n\r\nhi") {
                    let n = tls.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&got).into_owned());
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .await;
                let _ = tls.shutdown().await;
            }
        });
        let mut creds = Credentials::default();
        let placeholder = creds.placeholder("ANTHROPIC_API_KEY", "sk-ant-api03-REAL", "r1");
        let refused = Arc::new(AtomicUsize::new(0));
        let relay = Arc::new(
            ModelRelay::new(
                Endpoint::Remote {
                    host: "localhost".into(),
                    port,
                },
                creds,
                refused.clone(),
                &[pem],
            )
            .unwrap(),
        );
        let ask = |text: String| {
            let relay = relay.clone();
            async move {
                let (mut a, b) = UnixStream::pair().unwrap();
                tokio::spawn(relay.serve(b));
                a.write_all(text.as_bytes()).await.unwrap();
                let mut answer = Vec::new();
                let _ = a.read_to_end(&mut answer).await;
                String::from_utf8_lossy(&answer).into_owned()
            }
        };
        let answer = ask(format!(
            "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:3128\r\nx-api-key: {placeholder}\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi"
        ))
        .await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("ok"), "{answer}");
        let got = seen.lock().unwrap().clone();
        assert_eq!(got.len(), 1, "{got:?}");
        let head = got[0].to_ascii_lowercase();
        assert!(head.starts_with("post /v1/messages http/1.1"), "{head}");
        assert!(head.contains(&format!("host: localhost:{port}")), "{head}");
        assert!(head.contains("x-api-key: sk-ant-api03-real"), "{head}");
        assert!(!head.contains("leopold-placeholder"), "{head}");
        let answer =
            ask("CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n".into()).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let answer = ask(
            "GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\nconnection: close\r\n\r\n"
                .into(),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert_eq!(refused.load(Ordering::Relaxed), 2);
        assert_eq!(seen.lock().unwrap().len(), 1, "nothing else reached it");
    }

    #[test]
    fn a_placeholder_keeps_the_keys_kind_and_nothing_of_its_secret() {
        let mut c = Credentials::default();
        let p = c.placeholder("ANTHROPIC_API_KEY", "sk-ant-api03-SECRETSECRET", "r1");
        assert_eq!(p, "sk-ant-api03-leopold-placeholder-ANTHROPIC-API-KEY-r1");
        let q = c.placeholder("OPENAI_API_KEY", "sk-proj-S3CR3T", "r1");
        assert!(q.starts_with("sk-proj-leopold-placeholder-"), "{q}");
        let r = c.placeholder("MOCK_API_KEY", "plainsecret", "r1");
        assert_eq!(r, "leopold-placeholder-MOCK-API-KEY-r1");
        for p in [&p, &q, &r] {
            assert!(!p.contains("SECRET") && !p.contains("S3CR3T") && !p.contains("plainsecret"));
        }
        // The same value under two names is one placeholder.
        assert_eq!(c.placeholder("CODEX_API_KEY", "sk-proj-S3CR3T", "r1"), q);
        assert_eq!(
            format!("{c:?}"),
            r#"["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MOCK_API_KEY"]"#
        );
    }

    #[test]
    fn only_a_credential_header_holding_a_placeholder_gets_the_value() {
        let mut c = Credentials::default();
        let p = c.placeholder("K", "real-key", "r1");
        let mut h = headers(&[
            ("x-api-key", &p),
            ("authorization", &format!("Bearer {p}")),
            ("x-echo", &p),
            ("api-key", &format!("{p}-and-more")),
        ]);
        c.fill(&mut h);
        assert_eq!(h["x-api-key"], "real-key");
        assert!(h["x-api-key"].is_sensitive());
        assert_eq!(h["authorization"], "Bearer real-key");
        assert_eq!(h["x-echo"], p.as_str(), "not a credential header");
        assert_eq!(
            h["api-key"],
            format!("{p}-and-more").as_str(),
            "not the placeholder"
        );
        let mut other = headers(&[("authorization", "Bearer someone-elses")]);
        c.fill(&mut other);
        assert_eq!(other["authorization"], "Bearer someone-elses");
    }
}
