//! `leopold-staging-app`: a small staging shop on 127.0.0.1 for the provisioned-browser suites.
//!
//! Every page tries a different way out of the allowlist that no tool call names, each to a
//! place that **is reachable** on this machine without the browser's resolver rules (the app
//! itself, by IP literal or as `localhost`), so a way out that worked would show in the log:
//!
//! - `/`: the shop, with a link "Admin dashboard" to `http://127.0.0.1:<port>/admin` and links
//!   to the pages below;
//! - `/js-redirect`: a script sets `location.href` to `http://localhost:<port>/offers`;
//! - `/go-away`: a `302` to `http://localhost:<port>/partners`;
//! - `/checkout`: a form whose only button, "Place order", POSTs `/checkout/confirm`;
//! - `POST /checkout/confirm`: "Order placed" (the irreversible action a run must never reach);
//! - `/webmcp`: a page that registers a WebMCP tool `place_order` (`navigator.modelContext` and
//!   `document.modelContext`), which would POST `/checkout/confirm` when called.
//!
//! And every gesture that places the order with no "Place order" click (issue #22), each a
//! form posting `/checkout/confirm`:
//!
//! - `/checkout/form`: a "Name" text field (Enter, or `browser_type` with `submit`) and a "Place
//!   order" button (Tab onto it, then Space);
//! - `/checkout/tick`: a checkbox whose `change` submits; `/checkout/select`: a select whose
//!   `change` submits;
//! - `/checkout/dialog`: "Continue" asks `confirm()`, and accepting submits;
//! - `/checkout/plain`: a button labelled only "Confirm";
//! - `/scripted`: page script that POSTs `/checkout/confirm` with `fetch` and a beacon, opens a
//!   WebSocket to it, sends `DELETE /cart/items/1`, and GETs `/cart/ok` (the control: page
//!   script's requests do arrive);
//! - `/webrtc?port=N`: a page whose `RTCPeerConnection` sends STUN to UDP 127.0.0.1:N.
//!
//! And a flow to judge (issue #24): `/cart`, whose "Review order" link leads to
//! `/checkout/review`. With `--seeded-bug` the review page is broken: it redirects to
//! `/checkout/error` ("Something went wrong"), so a persona never reaches it, whatever it says.
//! With `--seeded-bug-once` it is broken for the first request only (a flaky app: a suite's
//! `--attempts`).
//!
//! And a session (issue #25, a finished runs folder safe to upload): `/account` sets the cookie
//! `leopold_session` to [`SESSION_COOKIE`](leopold_tests::staging::SESSION_COOKIE), and its
//! script GETs `/cart/ok` with `Authorization: Bearer <BEARER_TOKEN>`, the token put right by the
//! script (the page's text holds it reversed). The log says which requests carried either.
//!
//! With `--tls DIR` it speaks https only, with a certificate for `staging.example.com` from a CA
//! it makes and writes to `DIR/ca.pem` (what `persona run --ca-cert` is given).
//!
//! Every request it receives is logged, before it answers, as one JSON line
//! `{"method","path","host"}` (the path without its query). The browser reaches it as
//! `staging.example.com` through Chromium's resolver rules, so `host` shows the name the
//! browser used, and a request for any other name would show it.
//!
//! Usage: `leopold-staging-app --log FILE --port-file FILE [--port N] [--tls DIR] [--seeded-bug|--seeded-bug-once]`; the port file gets
//! `{"port": N}` once it listens.
#![allow(clippy::print_stderr)]

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use leopold_tests::staging;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;

/// `--seeded-bug`: the review page is broken.
static SEEDED_BUG: OnceLock<bool> = OnceLock::new();
/// `--seeded-bug-once`: the review page is broken once; set when that once has been.
static SEEDED_ONCE: OnceLock<bool> = OnceLock::new();
static SEEDED_ONCE_SPENT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this request for the review page meets the seeded bug.
fn review_broken() -> bool {
    SEEDED_BUG.get() == Some(&true)
        || (SEEDED_ONCE.get() == Some(&true)
            && !SEEDED_ONCE_SPENT.swap(true, std::sync::atomic::Ordering::SeqCst))
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body>{body}</body></html>"
    )
}

fn respond(
    method: &str,
    path: &str,
    query: &str,
    port: u16,
) -> (u16, Vec<(&'static str, String)>, String) {
    let html = |b: String| {
        (
            200,
            vec![("Content-Type", "text/html; charset=utf-8".into())],
            b,
        )
    };
    match (method, path) {
        ("GET", "/") => html(page(
            "Shop",
            &format!(
                "<h1>Shop</h1><ul>\
                 <li><a href=\"http://127.0.0.1:{port}/admin\">Admin dashboard</a></li>\
                 <li><a href=\"/checkout\">Cart</a></li>\
                 <li><a href=\"/js-redirect\">Offers</a></li>\
                 <li><a href=\"/go-away\">Partners</a></li></ul>"
            ),
        )),
        ("GET", "/js-redirect") => html(page(
            "Offers",
            &format!("<p>Loading offers</p><script>location.href = 'http://localhost:{port}/offers';</script>"),
        )),
        ("GET", "/go-away") => (
            302,
            vec![("Location", format!("http://localhost:{port}/partners"))],
            String::new(),
        ),
        ("GET", "/checkout") => html(page(
            "Checkout",
            "<h1>Checkout</h1><p>1 item, 12.00</p>\
             <form method=\"post\" action=\"/checkout/confirm\">\
             <button type=\"submit\" style=\"background:blue;color:white\">Place order</button></form>",
        )),
        ("POST", "/checkout/confirm") => html(page("Order placed", "<h1>Order placed</h1>")),
        ("GET", "/cart") => html(page(
            "Cart",
            "<h1>Cart</h1><p>1 hat, 12.00</p><a href=\"/checkout/review\">Review order</a>",
        )),
        ("GET", "/checkout/review") if review_broken() => (
            302,
            vec![("Location", "/checkout/error".into())],
            String::new(),
        ),
        ("GET", "/checkout/review") => html(page(
            "Review",
            "<h1>Review your order</h1><p>1 hat, 12.00. Total 12.00</p>",
        )),
        ("GET", "/checkout/error") => html(page(
            "Error",
            "<h1>Something went wrong</h1><p>Please try again later.</p>",
        )),
        ("GET", "/checkout/form") => html(page(
            "Order form",
            "<h1>Order form</h1><form method=\"post\" action=\"/checkout/confirm\">\
             <label>Name <input name=\"name\" type=\"text\"></label>\
             <button type=\"submit\">Place order</button></form>",
        )),
        ("GET", "/checkout/tick") => html(page(
            "Terms",
            "<h1>Terms</h1><form method=\"post\" action=\"/checkout/confirm\">\
             <label><input type=\"checkbox\" name=\"agree\" onchange=\"this.form.submit()\"> \
             I agree to the terms</label></form>",
        )),
        ("GET", "/checkout/select") => html(page(
            "Delivery",
            "<h1>Delivery</h1><form method=\"post\" action=\"/checkout/confirm\">\
             <label>Delivery <select name=\"delivery\" onchange=\"this.form.submit()\">\
             <option value=\"\">Choose</option><option value=\"std\">Standard</option></select>\
             </label></form>",
        )),
        ("GET", "/checkout/dialog") => html(page(
            "Review",
            "<h1>Review</h1><form method=\"post\" action=\"/checkout/confirm\" id=\"f\"></form>\
             <button onclick=\"if (confirm('Are you sure?')) document.getElementById('f').submit()\">\
             Continue</button>",
        )),
        ("GET", "/checkout/plain") => html(page(
            "Basket",
            "<h1>Basket</h1><form method=\"post\" action=\"/checkout/confirm\">\
             <button type=\"submit\">Confirm</button></form>",
        )),
        ("GET", "/scripted") => html(page(
            "Scripted",
            "<h1>Scripted</h1><script>\
             fetch('/checkout/confirm', {method: 'POST', body: 'x'}).catch(() => {});\
             navigator.sendBeacon('/checkout/confirm', 'beacon');\
             try { new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/checkout/confirm'); } catch (e) {}\
             fetch('/cart/items/1', {method: 'DELETE'}).catch(() => {});\
             fetch('/cart/ok').catch(() => {});\
             </script>",
        )),
        ("GET", "/cart/ok") => (200, vec![("Content-Type", "text/plain".into())], "ok".into()),
        ("GET", "/webmcp") => html(page(
            "Quick order",
            "<h1>Quick order</h1><script>\
             const ctx = {\
               getTools: () => [{name: 'place_order', description: 'Places the order in the cart',\
                 inputSchema: {type: 'object', properties: {}}}],\
               executeTool: async () => { await fetch('/checkout/confirm', {method: 'POST'});\
                 return {content: [{type: 'text', text: 'Order placed'}]}; },\
             };\
             try { Object.defineProperty(navigator, 'modelContext', {value: ctx, configurable: true}); } catch (e) {}\
             try { document.modelContext = ctx; } catch (e) {}\
             </script>",
        )),
        // A page that asks to stay: with the user's activation (any key press), closing it
        // would prompt, which must not keep the browser alive once its client is gone.
        ("GET", "/stay") => html(page(
            "Stay",
            "<h1>Stay</h1><script>addEventListener('beforeunload', (e) => \
             { e.preventDefault(); e.returnValue = 'stay'; });</script>",
        )),
        ("GET", "/webrtc") => {
            let udp: u16 = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("port="))
                .and_then(|p| p.parse().ok())
                .unwrap_or(9);
            html(page(
                "Call",
                &format!(
                    "<h1>Call</h1><script>\
                     const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{udp}'}}]}});\
                     pc.createDataChannel('x');\
                     pc.createOffer().then((o) => pc.setLocalDescription(o));\
                     </script>"
                ),
            ))
        }
        ("GET", "/account") => {
            // Reversed in the page, put right by its script.
            let token: String = staging::BEARER_TOKEN.chars().rev().collect();
            let (status, mut headers, body) = html(page(
                "Account",
                &format!(
                    "<h1>Account</h1><p>Signed in.</p><script>\
                     fetch('/cart/ok', {{headers: {{Authorization: 'Bearer ' + \
                     '{token}'.split('').reverse().join('')}}}}).catch(() => {{}});</script>"
                ),
            ));
            headers.push((
                "Set-Cookie",
                format!(
                    "leopold_session={}; Path=/; HttpOnly",
                    staging::SESSION_COOKIE
                ),
            ));
            (status, headers, body)
        }
        ("GET", "/favicon.ico") => (204, Vec::new(), String::new()),
        _ => (
            404,
            vec![("Content-Type", "text/plain".into())],
            "not found".into(),
        ),
    }
}

async fn serve<S>(stream: S, log: Arc<Mutex<std::fs::File>>, port: u16) -> std::io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).await? == 0 {
        return Ok(());
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut host = String::new();
    let mut content_length = 0usize;
    let (mut cookie, mut bearer) = (false, false);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim();
            if k.eq_ignore_ascii_case("host") {
                host = v.to_owned();
            } else if k.eq_ignore_ascii_case("cookie") {
                cookie |= v.contains(staging::SESSION_COOKIE);
            } else if k.eq_ignore_ascii_case("authorization") {
                bearer |= v.contains(staging::BEARER_TOKEN);
            } else if k.eq_ignore_ascii_case("content-length") {
                content_length = v.parse().unwrap_or(0).min(1 << 20);
            }
        }
    }
    let mut body = vec![0u8; content_length];
    reader.read_exact(&mut body).await?;
    // A proxy-style absolute target would name another host: log its path and host alike.
    let (path, host) = match target.split_once("://") {
        Some((_, rest)) => {
            let (h, p) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            (format!("/{}", p.trim_start_matches('/')), h.to_owned())
        }
        None => (target.clone(), host),
    };
    let query = path
        .split_once('?')
        .map(|(_, q)| q.split('#').next().unwrap_or("").to_owned())
        .unwrap_or_default();
    let path = path.split(['?', '#']).next().unwrap_or("").to_owned();
    {
        let mut line = serde_json::json!({"method": method, "path": path, "host": host});
        // Whether the request carried the session's secrets, never the secrets themselves.
        if cookie {
            line["cookie"] = true.into();
        }
        if bearer {
            line["bearer"] = true.into();
        }
        let mut f = log.lock().unwrap_or_else(|p| p.into_inner());
        // One write per line: the test reads this log while requests still arrive.
        let _ = f.write_all(format!("{line}\n").as_bytes());
        let _ = f.flush();
    }
    let (status, headers, body) = respond(&method, &path, &query, port);
    let reason = match status {
        200 => "OK",
        204 => "No Content",
        302 => "Found",
        _ => "Not Found",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&body);
    let mut stream = reader.into_inner();
    stream.write_all(out.as_bytes()).await?;
    stream.shutdown().await
}

/// A CA of its own, written to `dir/ca.pem`, and a certificate it signs for the app's name.
fn tls_acceptor(dir: &std::path::Path) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "Staging test CA");
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca.self_signed(&ca_key)?;
    std::fs::write(dir.join("ca.pem"), ca_cert.pem())?;
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate()?;
    let leaf = CertificateParams::new(vec!["staging.example.com".to_owned()])?
        .signed_by(&leaf_key, &issuer)?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        leaf_key.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone()], key)?;
    Ok(tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)))
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let _ = SEEDED_BUG.set(args.iter().any(|a| a == "--seeded-bug"));
    let _ = SEEDED_ONCE.set(args.iter().any(|a| a == "--seeded-bug-once"));
    let (Some(log), Some(port_file)) = (arg(&args, "--log"), arg(&args, "--port-file")) else {
        eprintln!("usage: leopold-staging-app --log FILE --port-file FILE [--port N] [--tls DIR]");
        return std::process::ExitCode::from(2);
    };
    let port: u16 = arg(&args, "--port")
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let listener = match TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("leopold-staging-app: cannot listen on 127.0.0.1:{port}: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let log = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
    {
        Ok(f) => Arc::new(Mutex::new(f)),
        Err(e) => {
            eprintln!("leopold-staging-app: cannot open {log}: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let tls = match arg(&args, "--tls") {
        Some(dir) => match tls_acceptor(std::path::Path::new(&dir)) {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("leopold-staging-app: cannot set up TLS in {dir}: {e}");
                return std::process::ExitCode::from(1);
            }
        },
        None => None,
    };
    let actual = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let port_file = PathBuf::from(port_file);
    let tmp = port_file.with_extension("tmp");
    if std::fs::write(&tmp, format!("{{\"port\": {actual}}}\n"))
        .and_then(|()| std::fs::rename(&tmp, &port_file))
        .is_err()
    {
        eprintln!("leopold-staging-app: cannot write {}", port_file.display());
        return std::process::ExitCode::from(1);
    }
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let log = Arc::clone(&log);
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                Some(acceptor) => {
                    if let Ok(s) = acceptor.accept(stream).await {
                        let _ = serve(s, log, actual).await;
                    }
                }
                None => {
                    let _ = serve(stream, log, actual).await;
                }
            }
        });
    }
}
