//! `trace.zip` from Playwright's live trace folder: the layout `tracing.stop({ path })` writes
//! and `npx playwright show-trace` opens (`trace.trace`, `trace.network`, `resources/<sha1>`).
//! Stored, not deflated: the resources are PNGs and JPEGs already compressed, and no crate of
//! the workspace writes zips.
//!
//! What would let a reader act as the persona's session is taken out on the way in
//! ([`scrub`]): every cookie, the value of every credential header (`Cookie`, `Set-Cookie`,
//! `Authorization`, …) and every request body. The pages' URLs, their DOM snapshots and
//! responses stay: they are the trace (docs/reference.md#evidence).

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;

/// Writes `out` from the trace folder `traces` (`<name>.trace`, `<name>.network`, `resources/`).
pub(super) fn write(traces: &Path, out: &Path) -> anyhow::Result<()> {
    let mut entries: Vec<(String, std::path::PathBuf)> = Vec::new();
    let read = |d: &Path| {
        std::fs::read_dir(d)
            .with_context(|| format!("cannot read {}", d.display()))
            .map(|it| {
                let mut v: Vec<_> = it.filter_map(Result::ok).map(|e| e.path()).collect();
                v.sort();
                v
            })
    };
    for p in read(traces)? {
        let (Some(ext), true) = (p.extension().and_then(|e| e.to_str()), p.is_file()) else {
            continue;
        };
        if matches!(ext, "trace" | "network" | "stacks") {
            entries.push((format!("trace.{ext}"), p));
        }
    }
    if !entries.iter().any(|(n, _)| n == "trace.trace") {
        anyhow::bail!("no .trace file in {}", traces.display());
    }
    // The event files, scrubbed; the resources they say are request bodies are left out.
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut bodies = std::collections::BTreeSet::new();
    for (name, path) in entries {
        let data =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        files.push((name, scrub(&data, &mut bodies)));
    }
    let resources = traces.join("resources");
    if resources.is_dir() {
        for p in read(&resources)? {
            if let (true, Some(n)) = (p.is_file(), p.file_name().and_then(|n| n.to_str())) {
                if bodies.contains(n) {
                    continue;
                }
                let data =
                    std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?;
                files.push((format!("resources/{n}"), data));
            }
        }
    }
    write_zip(&files, out)
}

/// What replaces a credential header's value in the trace.
const REMOVED: &str = "<removed by Leopold>";

/// A header whose value is a credential: cookies, authorization, and anything named as a token,
/// a secret or a key of an API.
fn is_credential(header: &str) -> bool {
    let h = header.to_ascii_lowercase();
    [
        "cookie", "auth", "token", "secret", "api-key", "apikey", "session",
    ]
    .iter()
    .any(|w| h.contains(w))
}

/// One of the trace's event files (JSON lines), with every cookie, credential header value and
/// request body taken out; a request body kept as a resource adds its name to `bodies`. A line
/// that is not JSON is kept as it is.
fn scrub(data: &[u8], bodies: &mut std::collections::BTreeSet<String>) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for line in data.split_inclusive(|&b| b == b'\n') {
        let (text, nl) = match line.strip_suffix(b"\n") {
            Some(t) => (t, true),
            None => (line, false),
        };
        let scrubbed = serde_json::from_slice::<serde_json::Value>(text)
            .ok()
            .and_then(|mut v| scrub_value(&mut v, bodies).then(|| serde_json::to_vec(&v).ok()))
            .flatten();
        match scrubbed {
            Some(bytes) => {
                out.extend(bytes);
                if nl {
                    out.push(b'\n');
                }
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// Scrubs one JSON value in place, at any depth; whether anything changed.
fn scrub_value(v: &mut serde_json::Value, bodies: &mut std::collections::BTreeSet<String>) -> bool {
    use serde_json::Value;
    let mut changed = false;
    match v {
        Value::Object(map) => {
            for (key, val) in map.iter_mut() {
                match (key.as_str(), val) {
                    ("cookies", Value::Array(a)) if !a.is_empty() => {
                        a.clear();
                        changed = true;
                    }
                    ("headers", Value::Array(a)) => {
                        for h in a.iter_mut() {
                            let name = h.get("name").and_then(Value::as_str).unwrap_or("");
                            if is_credential(name) && h.get("value").is_some() {
                                h["value"] = REMOVED.into();
                                changed = true;
                            }
                        }
                    }
                    ("headers", Value::Object(m)) => {
                        for (name, value) in m.iter_mut() {
                            if is_credential(name) {
                                *value = REMOVED.into();
                                changed = true;
                            }
                        }
                    }
                    ("postData", Value::Object(body)) => {
                        if let Some(Value::String(sha1)) = body.remove("_sha1") {
                            bodies.insert(sha1);
                        }
                        body.remove("params");
                        body.insert("text".into(), REMOVED.into());
                        changed = true;
                    }
                    (_, val) => changed |= scrub_value(val, bodies),
                }
            }
        }
        Value::Array(a) => {
            for val in a {
                changed |= scrub_value(val, bodies);
            }
        }
        _ => {}
    }
    changed
}

/// Writes the zip of `files` (name, bytes), stored, to `out` (through a temporary file).
fn write_zip(files: &[(String, Vec<u8>)], out: &Path) -> anyhow::Result<()> {
    let tmp = out.with_extension("zip.part");
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?,
    );
    let mut central = Vec::new();
    let mut offset: u64 = 0;
    for (name, data) in files {
        let size = u32::try_from(data.len()).context("a trace file over 4 GiB")?;
        let at = u32::try_from(offset).context("a trace over 4 GiB")?;
        let crc = crc32(data);
        let header = |sig: u32, central: bool| {
            let mut h = Vec::with_capacity(46 + name.len());
            h.extend_from_slice(&sig.to_le_bytes());
            if central {
                h.extend_from_slice(&20u16.to_le_bytes()); // made by
            }
            // version needed, flags (UTF-8 names), method (stored), time, date (1980-01-01)
            for v in [20u16, 1 << 11, 0, 0, 0x21] {
                h.extend_from_slice(&v.to_le_bytes());
            }
            for v in [crc, size, size] {
                h.extend_from_slice(&v.to_le_bytes());
            }
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes()); // extra
            if central {
                // comment, disk, internal attrs, external attrs, offset
                h.extend_from_slice(&[0; 10]);
                h.extend_from_slice(&at.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        let local = header(0x0403_4b50, false);
        f.write_all(&local)?;
        f.write_all(data)?;
        offset += (local.len() + data.len()) as u64;
        central.extend(header(0x0201_4b50, true));
    }
    let cd_at = u32::try_from(offset).context("a trace over 4 GiB")?;
    f.write_all(&central)?;
    let n = u16::try_from(files.len()).context("over 65535 trace files")?;
    let mut end = Vec::with_capacity(22);
    end.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    end.extend_from_slice(&[0; 4]); // disk numbers
    end.extend_from_slice(&n.to_le_bytes());
    end.extend_from_slice(&n.to_le_bytes());
    end.extend_from_slice(&(central.len() as u32).to_le_bytes());
    end.extend_from_slice(&cd_at.to_le_bytes());
    end.extend_from_slice(&0u16.to_le_bytes());
    f.write_all(&end)?;
    f.into_inner()
        .map_err(std::io::IntoInnerError::into_error)?
        .sync_all()?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(())
}

/// CRC-32 (IEEE), as zip checks its entries.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_is_zips() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn the_zip_lists_the_trace_and_its_resources() {
        let (d, t) = crate::test_support::temp_path("traces");
        std::fs::create_dir_all(t.join("resources")).unwrap();
        std::fs::write(t.join("trace-1.trace"), b"{\"type\":\"context-options\"}\n").unwrap();
        std::fs::write(t.join("trace-1.network"), b"").unwrap();
        std::fs::write(t.join("resources/abc.png"), b"\x89PNG").unwrap();
        let out = d.path().join("trace.zip");
        write(&t, &out).unwrap();
        let z = std::fs::read(&out).unwrap();
        assert_eq!(&z[..4], b"PK\x03\x04");
        let eocd = &z[z.len() - 22..];
        assert_eq!(&eocd[..4], b"PK\x05\x06");
        assert_eq!(u16::from_le_bytes([eocd[10], eocd[11]]), 3);
        let s = String::from_utf8_lossy(&z);
        for n in ["trace.trace", "trace.network", "resources/abc.png"] {
            assert_eq!(
                s.matches(n).count(),
                2,
                "{n} in the local and central headers"
            );
        }
        // No trace file: no zip.
        std::fs::remove_file(t.join("trace-1.trace")).unwrap();
        assert!(write(&t, &d.path().join("none.zip")).is_err());
    }

    #[test]
    fn the_zip_holds_no_cookie_credential_header_or_request_body() {
        let (d, t) = crate::test_support::temp_path("traces");
        std::fs::create_dir_all(t.join("resources")).unwrap();
        std::fs::write(
            t.join("trace-1.trace"),
            b"{\"type\":\"context-options\"}\nnot json s3cret-kept\n",
        )
        .unwrap();
        let entry = serde_json::json!({"type": "resource-snapshot", "snapshot": {
            "request": {"url": "http://app.test/login", "method": "POST",
                "headers": [{"name": "Cookie", "value": "sid=s3cret-cookie"},
                            {"name": "Authorization", "value": "Bearer s3cret-bearer"},
                            {"name": "Accept", "value": "text/html"}],
                "cookies": [{"name": "sid", "value": "s3cret-cookie"}],
                "postData": {"mimeType": "application/x-www-form-urlencoded",
                    "text": "password=s3cret-pw", "params": [{"name": "password", "value": "s3cret-pw"}],
                    "_sha1": "body.dat"}},
            "response": {"status": 200,
                "headers": {"Set-Cookie": "sid=s3cret-new; HttpOnly", "X-Api-Key": "s3cret-key"},
                "cookies": [{"name": "sid", "value": "s3cret-new"}],
                "content": {"_sha1": "page.html"}}}});
        std::fs::write(t.join("trace-1.network"), format!("{entry}\n")).unwrap();
        std::fs::write(t.join("resources/body.dat"), b"password=s3cret-pw").unwrap();
        std::fs::write(t.join("resources/page.html"), b"<p>hello</p>").unwrap();
        let out = d.path().join("trace.zip");
        write(&t, &out).unwrap();
        let z = String::from_utf8_lossy(&std::fs::read(&out).unwrap()).into_owned();
        for secret in [
            "s3cret-cookie",
            "s3cret-bearer",
            "s3cret-pw",
            "s3cret-new",
            "s3cret-key",
        ] {
            assert!(!z.contains(secret), "{secret} in {z}");
        }
        // What the trace is for stays: the page, its URL, a plain header, a line not understood.
        for kept in [
            "http://app.test/login",
            "text/html",
            "<p>hello</p>",
            "not json s3cret-kept\n",
            "resources/page.html",
        ] {
            assert!(z.contains(kept), "{kept} not in {z}");
        }
        assert!(!z.contains("resources/body.dat"));
        assert_eq!(z.matches(REMOVED).count(), 5, "{z}");
    }
}
