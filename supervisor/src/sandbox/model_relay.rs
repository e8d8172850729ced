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
//!
//! The relay is also where a run learns that its model will never answer ([`Alarm`]): the
//! endpoint refusing the credentials (401, 403), having no such model (404), or not being
//! reachable at all. It trips the run's model alarm, and supervision stops the worker as
//! `model_failed` (exit 3) instead of waiting out `--timeout` while the harness retries.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// What to do when the endpoint refuses the harness, told by its wing: one phrase each, put
/// after `hint: ` in the cause.
#[derive(Debug, Clone, Default)]
pub struct Advice {
    /// For a refused credential (401, 403): which variable to set, or which login to run.
    pub credentials: String,
    /// For a model the endpoint does not have (404).
    pub model: String,
    /// For an endpoint that cannot be reached: where its address comes from.
    pub endpoint: String,
}

/// How long connecting may keep failing, once the endpoint has answered, before the run stops.
/// Before its first answer, one failure stops it: an endpoint never reached is a wrong address
/// or no network, which the harness's retries (Codex's "Reconnecting…", for minutes) do not
/// mend. After it answered, a blip is the network's, and the harness's retries are the cure.
const CONNECT_FAILING_FOR: Duration = Duration::from_secs(30);

/// The relay's side of the run's model alarm: what trips it, and what the cause says.
#[derive(Debug, Clone, Default)]
pub struct Alarm {
    pub wire: super::limits::Tripwire,
    pub advice: Advice,
    reach: Arc<Mutex<Reach>>,
}

/// What the relay has seen of the endpoint so far.
#[derive(Debug, Default)]
struct Reach {
    /// The endpoint answered once (any status): its address is right.
    answered: bool,
    /// Since when connecting has failed, with no answer between.
    failing_since: Option<Instant>,
}

impl Alarm {
    pub fn new(wire: super::limits::Tripwire, advice: Advice) -> Alarm {
        Alarm {
            wire,
            advice,
            reach: Arc::default(),
        }
    }

    fn reach(&self) -> std::sync::MutexGuard<'_, Reach> {
        self.reach.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The endpoint's answer to the request for `path`: 401 and 403 are credentials refused,
    /// 404 no such model, each final (the harness cannot mend them by retrying). Only a model
    /// call's answer counts (`…/messages`, `…/responses`, `…/chat/completions`): a side request
    /// of the harness's that the endpoint does not serve is no failure of the run. A 429 or a
    /// 5xx is not either: harnesses retry them, and they pass.
    fn answered(&self, host: &str, path: &str, status: StatusCode) {
        {
            let mut r = self.reach();
            r.answered = true;
            r.failing_since = None;
        }
        let model_call = {
            let p = path.split('?').next().unwrap_or("").trim_end_matches('/');
            [
                "/messages",
                "/responses",
                "/chat/completions",
                "/completions",
            ]
            .iter()
            .any(|end| p.ends_with(end))
        };
        if !model_call {
            return;
        }
        let what = match status.as_u16() {
            401 | 403 => ("the credentials were refused", &self.advice.credentials),
            404 => ("no such model", &self.advice.model),
            _ => return,
        };
        self.wire.trip(cause(
            &format!("the model endpoint {host} answered {status}: {}", what.0),
            what.1,
        ));
    }

    /// Connecting to the endpoint failed (its name, the connection or TLS): fatal before the
    /// endpoint ever answered, or once it has failed for [`CONNECT_FAILING_FOR`] running.
    fn unreachable(&self, host: &str, e: &anyhow::Error) {
        let now = Instant::now();
        let fatal = {
            let mut r = self.reach();
            let since = *r.failing_since.get_or_insert(now);
            !r.answered || now.duration_since(since) >= CONNECT_FAILING_FOR
        };
        if fatal {
            self.wire.trip(cause(
                &format!(
                    "cannot reach the model endpoint {host}: {}",
                    crate::redact::strip_urls(&format!("{e:#}"))
                ),
                &self.advice.endpoint,
            ));
        }
    }
}

/// `<what>\n(hint: <advice>)`, or `<what>` with no advice: the workspace's way with hints
/// (the summary line shows `<what>`, the warning both).
pub fn cause(what: &str, advice: &str) -> String {
    if advice.is_empty() {
        what.to_owned()
    } else {
        format!("{what}\n(hint: {advice})")
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
    alarm: Alarm,
}

impl ModelRelay {
    /// `extra_roots`: PEM files trusted beside the system's roots (which honour
    /// `SSL_CERT_FILE`).
    pub fn new(
        endpoint: Endpoint,
        credentials: Credentials,
        refused: Arc<AtomicUsize>,
        extra_roots: &[std::path::PathBuf],
        alarm: Alarm,
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
            alarm,
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
        let path = req.uri().path().to_owned();
        let mut held = upstream.lock().await;
        let reused = match held.take() {
            Some(mut s) => s.ready().await.ok().map(|()| s),
            None => None,
        };
        let mut sender = match reused {
            Some(s) => s,
            // None yet, or the endpoint closed it: a new one.
            None => self.connect().await.inspect_err(|e| {
                self.alarm.unreachable(&self.host_header_text(), e);
            })?,
        };
        let sent = sender.send_request(req);
        if !upgrade {
            // An upgraded connection is the WebSocket's, never another request's.
            *held = Some(sender);
        }
        drop(held);
        let mut res = sent.await?;
        self.alarm
            .answered(&self.host_header_text(), &path, res.status());
        crate::web::answer(&mut res, client_upgrade);
        Ok(res.map(http_body_util::BodyExt::boxed))
    }

    /// The endpoint as messages name it: its host (with its port unless 443), never a URL.
    fn host_header_text(&self) -> String {
        self.host_header.to_str().unwrap_or("?").to_owned()
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

/// `leopold doctor --online`: the status line's code of `GET <path>` on `endpoint`, sent with
/// `headers` (the key among them, never printed), within `within`. The endpoint's own answer:
/// no redirect is followed.
pub fn probe_status(
    endpoint: &Endpoint,
    path: &str,
    headers: &[(&str, String)],
    within: Duration,
) -> anyhow::Result<u16> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    async fn ask<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
        mut s: S,
        request: &[u8],
    ) -> anyhow::Result<u16> {
        s.write_all(request).await?;
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.windows(2).any(|w| w == b"\r\n") && got.len() < 8192 {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        let line = String::from_utf8_lossy(&got);
        line.split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("the endpoint's answer is not HTTP"))
    }
    let host = match endpoint {
        Endpoint::Loopback(a) => a.to_string(),
        Endpoint::Remote { host, port: 443 } => host.clone(),
        Endpoint::Remote { host, port } => format!("{host}:{port}"),
    };
    let mut request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("Connection: close\r\n\r\n");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        tokio::time::timeout(within, async {
            match endpoint {
                Endpoint::Loopback(addr) => {
                    ask(TcpStream::connect(addr).await?, request.as_bytes()).await
                }
                Endpoint::Remote { host, port } => {
                    let tcp = TcpStream::connect((host.as_str(), *port)).await?;
                    let name = rustls::pki_types::ServerName::try_from(host.clone())?;
                    let tls =
                        tokio_rustls::TlsConnector::from(crate::web::tls::client_config(&[])?)
                            .connect(name, tcp)
                            .await?;
                    ask(tls, request.as_bytes()).await
                }
            }
        })
        .await
        .map_err(|_| anyhow::anyhow!("no answer within {}", humantime::format_duration(within)))?
    })
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
                Alarm::default(),
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

    /// What trips the alarm: a refused credential or a missing model on a model call, an
    /// endpoint never reached; not a 429 or a 5xx, not a side request, not a blip once the
    /// endpoint has answered.
    #[test]
    fn the_alarm_trips_on_what_no_retry_mends() {
        let advice = Advice {
            credentials: "set K".into(),
            model: "check M".into(),
            endpoint: "check E".into(),
        };
        let alarm = || Alarm::new(crate::sandbox::limits::Tripwire::default(), advice.clone());
        for s in [429, 500, 502, 503, 529, 200] {
            let a = alarm();
            a.answered(
                "h.example",
                "/v1/messages",
                StatusCode::from_u16(s).unwrap(),
            );
            assert_eq!(a.wire.tripped(), None, "{s}");
        }
        let a = alarm();
        a.answered("h.example", "/api/oauth/profile", StatusCode::UNAUTHORIZED);
        a.answered("h.example", "/v1/models", StatusCode::NOT_FOUND);
        assert_eq!(a.wire.tripped(), None, "side requests");
        for (path, s, says) in [
            (
                "/v1/messages?beta=true",
                401,
                "answered 401 Unauthorized: the credentials were refused\n(hint: set K)",
            ),
            (
                "/v1/responses",
                403,
                "answered 403 Forbidden: the credentials were refused\n(hint: set K)",
            ),
            (
                "/openai/v1/chat/completions",
                404,
                "answered 404 Not Found: no such model\n(hint: check M)",
            ),
        ] {
            let a = alarm();
            a.answered("h.example", path, StatusCode::from_u16(s).unwrap());
            let why = a.wire.tripped().unwrap_or_default();
            assert_eq!(why, format!("the model endpoint h.example {says}"));
        }
        let e = anyhow::anyhow!("Connection refused (os error 111)");
        let a = alarm();
        a.unreachable("h.example", &e);
        let why = a.wire.tripped().unwrap_or_default();
        assert!(
            why.starts_with("cannot reach the model endpoint h.example: Connection refused"),
            "{why}"
        );
        assert!(why.ends_with("\n(hint: check E)"), "{why}");
        let a = alarm();
        a.answered("h.example", "/v1/messages", StatusCode::OK);
        a.unreachable("h.example", &e);
        a.unreachable("h.example", &e);
        assert_eq!(a.wire.tripped(), None, "a blip after an answer");
        a.reach().failing_since = Some(Instant::now() - CONNECT_FAILING_FOR);
        a.unreachable("h.example", &e);
        assert!(a.wire.tripped().is_some(), "failing for long");
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
