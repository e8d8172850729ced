//! `trace.zip` from Playwright's live trace folder: the layout `tracing.stop({ path })` writes
//! and `npx playwright show-trace` opens (`trace.trace`, `trace.network`, `resources/<sha1>`).
//! Stored, not deflated: the resources are PNGs and JPEGs already compressed, and no crate of
//! the workspace writes zips.

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
    let resources = traces.join("resources");
    if resources.is_dir() {
        for p in read(&resources)? {
            if let (true, Some(n)) = (p.is_file(), p.file_name().and_then(|n| n.to_str())) {
                entries.push((format!("resources/{n}"), p));
            }
        }
    }
    let tmp = out.with_extension("zip.part");
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?,
    );
    let mut central = Vec::new();
    let mut offset: u64 = 0;
    for (name, path) in &entries {
        let data =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let size = u32::try_from(data.len()).context("a trace file over 4 GiB")?;
        let at = u32::try_from(offset).context("a trace over 4 GiB")?;
        let crc = crc32(&data);
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
        f.write_all(&data)?;
        offset += (local.len() + data.len()) as u64;
        central.extend(header(0x0201_4b50, true));
    }
    let cd_at = u32::try_from(offset).context("a trace over 4 GiB")?;
    f.write_all(&central)?;
    let n = u16::try_from(entries.len()).context("over 65535 trace files")?;
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
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("traces");
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
}
