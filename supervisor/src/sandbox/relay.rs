//! The supervisor's side of the box: the run's socket directory, the model relay (the one way
//! out of the box's network namespace) and the guard's event socket.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::Context as _;
use tokio::net::{UnixDatagram, UnixListener};

pub const MODEL_SOCK: &str = "model.sock";
pub const EVENTS_SOCK: &str = "events.sock";
/// Longest event datagram accepted (the guard's lines are a few hundred bytes).
const MAX_EVENT: usize = 16 * 1024;

/// One run's box, outside half. Dropping it stops the relay tasks and removes the socket
/// directory.
///
/// The relay starts shut: the worker may start while the guard's proof still runs, and
/// connections to the model (and the guard's events) wait until [`RunBox::open`]. A worker's
/// tool calls come from the model's answers, so none can happen before the guard is proven; a
/// box dropped shut (the proof failed) passed nothing to the model. (The MCP sockets are the
/// gateway's: it judges every call on its own, proof or not.)
pub struct RunBox {
    pub spec: super::BoxSpec,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    gate: tokio::sync::watch::Sender<bool>,
    /// Requests for anything but the model endpoint, refused.
    pub refused: Arc<AtomicUsize>,
    /// Events from the event socket that were not guard events, dropped.
    pub dropped_events: Arc<AtomicUsize>,
}

/// Creates the socket directory (mode 0700; an existing one is an error: it is never reused),
/// and returns it.
pub fn make_sock_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .with_context(|| {
            format!(
                "cannot create the run's socket directory {}\n(hint: if it is left from a crashed run, `leopold persona recover` removes it)",
                dir.display()
            )
        })
}

impl RunBox {
    /// Binds the sockets and starts the relay. Must run inside a tokio runtime.
    /// `max_events`: the most bytes appended to `events.jsonl` for the box (`--max-records`);
    /// past it, nothing more is written and `tripwire` is tripped. `alarm`: tripped by the
    /// relay when the model endpoint refuses the harness or cannot be reached.
    pub fn start(
        spec: super::BoxSpec,
        events_file: PathBuf,
        max_events: Option<u64>,
        tripwire: super::limits::Tripwire,
        alarm: super::model_relay::Alarm,
    ) -> anyhow::Result<RunBox> {
        let model = UnixListener::bind(spec.sock_dir.join(MODEL_SOCK)).with_context(|| {
            format!(
                "cannot listen on {}",
                spec.sock_dir.join(MODEL_SOCK).display()
            )
        })?;
        let events = UnixDatagram::bind(spec.sock_dir.join(EVENTS_SOCK)).with_context(|| {
            format!("cannot bind {}", spec.sock_dir.join(EVENTS_SOCK).display())
        })?;
        let refused = Arc::new(AtomicUsize::new(0));
        let dropped_events = Arc::new(AtomicUsize::new(0));
        let (gate, shut) = tokio::sync::watch::channel(false);
        let relay = super::model_relay::ModelRelay::new(
            spec.endpoint.clone(),
            spec.credentials.clone(),
            refused.clone(),
            &[],
            alarm,
        )?;
        let tasks = vec![
            tokio::spawn(relay_model(model, Arc::new(relay), shut.clone())),
            tokio::spawn(receive_events(
                events,
                EventsOut {
                    file: events_file,
                    max: max_events,
                    tripwire,
                },
                dropped_events.clone(),
                shut,
            )),
        ];
        Ok(RunBox {
            spec,
            tasks,
            gate,
            refused,
            dropped_events,
        })
    }

    /// Lets the held connections to the model, and the guard's events, through.
    pub fn open(&self) {
        self.gate.send_replace(true);
    }
}

/// Waits until the run opens the relay; `false` when the run ended first.
async fn opened(gate: &mut tokio::sync::watch::Receiver<bool>) -> bool {
    gate.wait_for(|open| *open).await.is_ok()
}

impl Drop for RunBox {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = std::fs::remove_dir_all(&self.spec.sock_dir);
        super::clean_scratch(&self.spec.scratch);
    }
}

async fn relay_model(
    listener: UnixListener,
    relay: Arc<super::model_relay::ModelRelay>,
    gate: tokio::sync::watch::Receiver<bool>,
) {
    while let Ok((conn, _)) = listener.accept().await {
        let relay = relay.clone();
        let mut gate = gate.clone();
        tokio::spawn(async move {
            // Accepted at once (the worker sees a slow answer, not a refusal), relayed once open.
            if opened(&mut gate).await {
                relay.serve(conn).await;
            }
        });
    }
}

/// Where the box's guard events go, and how much of them.
struct EventsOut {
    file: PathBuf,
    max: Option<u64>,
    tripwire: super::limits::Tripwire,
}

/// Appends the guard's event lines to `events.jsonl`, one whole `write` each (`O_APPEND`), as the
/// guard does itself when it is not boxed. Only guard events are kept, host-only: the worker can
/// send to this socket too, and must not add anything else to the project's record. Past
/// `--max-records` bytes nothing more is written, and the run stops.
async fn receive_events(
    sock: UnixDatagram,
    out: EventsOut,
    dropped: Arc<AtomicUsize>,
    mut gate: tokio::sync::watch::Receiver<bool>,
) {
    // Nothing from the box lands in events.jsonl before the proof's own event: the run's events
    // start after it. Datagrams sent meanwhile wait in the socket.
    if !opened(&mut gate).await {
        return;
    }
    let mut buf = vec![0u8; MAX_EVENT + 1];
    let mut written: u64 = 0;
    while let Ok(n) = sock.recv(&mut buf).await {
        let Some(line) = event_line(&buf[..n]) else {
            dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        // Past the cap: not written, and said once, as the limit the run stops at.
        if let Some(max) = out.max.filter(|m| written + line.len() as u64 > *m) {
            out.tripwire.trip(format!(
                "the guard events from the box reached --max-records {}",
                super::limits::show_size(max)
            ));
            continue;
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&out.file)
        {
            if f.write(&line).is_ok() {
                written += line.len() as u64;
            }
        }
    }
}

/// A datagram as an events.jsonl line, or `None` if it is not one guard event
/// ([`leopold_guard::GuardEvent`]), re-serialised on one line with the guard's fields only, and
/// reduced as the guard reduces what it writes: hosts bare, a URL argument to its scheme, host
/// and path, any other URL in a text to its host. An event whose `host` is not a host is
/// refused.
pub fn event_line(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() > MAX_EVENT {
        return None;
    }
    let mut e = leopold_guard::GuardEvent::from_line(bytes)?;
    e.host = match e.host.take() {
        Some(h) => Some(bare_host(&h)?),
        None => None,
    };
    for text in [
        &mut e.ts,
        &mut e.tool,
        &mut e.flow,
        &mut e.reason,
        &mut e.tool_use_id,
    ]
    .into_iter()
    .flatten()
    {
        *text = crate::redact::strip_urls(text);
    }
    if let Some(call) = e.call.as_mut() {
        host_only(call)?;
    }
    Some(e.to_line())
}

/// A host as the guard writes it (a name, an IPv4 or a bracketed IPv6 address), or the host of a
/// URL; `None` for anything else.
fn bare_host(s: &str) -> Option<String> {
    let s = s.trim();
    if s.contains("//") || s.contains('\\') {
        return url::Url::parse(s).ok()?.host_str().map(str::to_owned);
    }
    let ok = !s.is_empty()
        && s.len() <= 255
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'));
    ok.then(|| s.to_owned())
}

/// The guard's reduced call, kept to what the guard itself writes: a `leopold_url` object holds a
/// scheme, a bare host and a path (no query, no fragment); every other text has its URLs
/// reduced to hosts; a key that holds a URL is dropped. `None` when a host is not one.
fn host_only(v: &mut serde_json::Value) -> Option<()> {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = crate::redact::strip_urls(s),
        Value::Array(items) => {
            for i in items {
                host_only(i)?;
            }
        }
        Value::Object(map) => {
            map.retain(|k, _| crate::redact::strip_urls(k) == *k);
            for (k, item) in map.iter_mut() {
                if k == leopold_guard::REDUCED_URL_KEY {
                    reduced_url(item)?;
                } else {
                    host_only(item)?;
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Some(())
}

fn reduced_url(v: &mut serde_json::Value) -> Option<()> {
    use serde_json::Value;
    let Value::Object(parts) = v else {
        *v = Value::Object(serde_json::Map::new());
        return Some(());
    };
    parts.retain(|k, item| matches!(k.as_str(), "scheme" | "host" | "path") && item.is_string());
    if let Some(Value::String(h)) = parts.get_mut("host") {
        *h = bare_host(h)?;
    }
    if let Some(Value::String(scheme)) = parts.get_mut("scheme") {
        if !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            scheme.clear();
        }
    }
    if let Some(Value::String(p)) = parts.get_mut("path") {
        let cut = p.find(['?', '#']).unwrap_or(p.len());
        p.truncate(cut);
        let reduced = crate::redact::strip_urls(p);
        *p = reduced;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_guard_events_become_lines() {
        assert!(event_line(br#"{"event":"persona_guard_block","host":"x"}"#).is_some());
        let l = event_line(b"{\"event\":\"persona_guard_irreversible\",\n\"x\":1}").unwrap();
        assert_eq!(l.iter().filter(|b| **b == b'\n').count(), 1);
        assert!(event_line(br#"{"event":"persona_recovered"}"#).is_none());
        assert!(event_line(b"not json").is_none());
        assert!(event_line(&vec![b' '; MAX_EVENT + 1]).is_none());
    }

    #[test]
    fn a_forged_event_lands_host_only() {
        let forged = br#"{"event":"persona_guard_block","host":"https://user:pw@shop.example:8443/reset/x?token=s3cret","tool":"see https://evil.example/a?k=s3cret","call":{"leopold_url":{"scheme":"https","host":"shop.example","path":"/p?token=s3cret","extra":"s3cret"},"element":"http://a.example/q?k=s3cret","https://k.example/?s3cret":1}}"#;
        let line = String::from_utf8(event_line(forged).unwrap()).unwrap();
        assert!(!line.contains("s3cret"), "{line}");
        assert!(!line.contains("://"), "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["host"], "shop.example");
        assert_eq!(v["tool"], "see <evil.example>");
        assert_eq!(
            v["call"]["leopold_url"],
            serde_json::json!({"scheme": "https", "host": "shop.example", "path": "/p"})
        );
        assert_eq!(v["call"]["element"], "<a.example>");
        // A host that is none is refused, not written.
        assert!(event_line(br#"{"event":"persona_guard_block","host":"a b/c"}"#).is_none());
        assert!(event_line(
            br#"{"event":"persona_guard_block","call":{"leopold_url":{"host":"x y"}}}"#
        )
        .is_none());
        // What the guard writes itself passes as it is.
        let real = br#"{"event":"persona_guard_irreversible","tool":"mcp__b__browser_click","host":"127.0.0.1:8080","reason":"irreversible_click","call":{"element":"Place order","leopold_url":{"scheme":"http","host":"127.0.0.1","path":"/checkout"}}}"#;
        let v: serde_json::Value = serde_json::from_slice(&event_line(real).unwrap()).unwrap();
        let want: serde_json::Value = serde_json::from_slice(real).unwrap();
        assert_eq!(v["call"], want["call"]);
        assert_eq!(v["host"], want["host"]);
    }
}
