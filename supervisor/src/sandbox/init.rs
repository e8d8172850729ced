//! `leopold persona box-init`: the first program inside the box. It listens on the loopback
//! address(es) it is given and forwards every connection to a unix socket the supervisor serves
//! (the model relay), then runs the worker and exits as it did.
//!
//! It holds no privilege the worker lacks: the worker could connect to the socket itself. The
//! bound is the supervisor's end, outside the box.
#![allow(clippy::print_stderr, clippy::exit)]

use std::ffi::OsString;
use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// `--forward ADDR=SOCKET ... -- PROGRAM ARGS...`
pub fn main(args: &[OsString]) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "leopold box-init: {e:#}");
            ExitCode::from(70)
        }
    }
}

fn run(args: &[OsString]) -> anyhow::Result<ExitCode> {
    let mut forwards: Vec<(SocketAddr, PathBuf)> = Vec::new();
    let mut dns: Option<SocketAddr> = None;
    let mut seed: Option<(PathBuf, PathBuf)> = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].to_str().unwrap_or("") {
            "--forward" => {
                let spec = args
                    .get(i + 1)
                    .and_then(|a| a.to_str())
                    .ok_or_else(|| anyhow::anyhow!("--forward needs ADDR=SOCKET"))?;
                let (addr, sock) = spec
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("--forward {spec}: expected ADDR=SOCKET"))?;
                forwards.push((addr.parse()?, PathBuf::from(sock)));
                i += 2;
            }
            "--dns" => {
                let addr = args
                    .get(i + 1)
                    .and_then(|a| a.to_str())
                    .ok_or_else(|| anyhow::anyhow!("--dns needs ADDR"))?;
                dns = Some(addr.parse()?);
                i += 2;
            }
            "--seed" => {
                let spec = args
                    .get(i + 1)
                    .ok_or_else(|| anyhow::anyhow!("--seed needs FROM=TO"))?;
                let spec = spec.to_string_lossy();
                let (from, to) = spec
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("--seed {spec}: expected FROM=TO"))?;
                seed = Some((PathBuf::from(from), PathBuf::from(to)));
                i += 2;
            }
            "--" => {
                i += 1;
                break;
            }
            _ => anyhow::bail!("unknown argument {:?}", args[i]),
        }
    }
    let program = args
        .get(i)
        .ok_or_else(|| anyhow::anyhow!("no program after --"))?;
    for (addr, sock) in forwards {
        let listener = TcpListener::bind(addr)
            .map_err(|e| anyhow::anyhow!("cannot listen on {addr} inside the box: {e}"))?;
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let sock = sock.clone();
                std::thread::spawn(move || forward(conn, &sock));
            }
        });
    }
    if let Some(addr) = dns {
        // Best effort: without it a lookup waits out the resolver's timeout instead of failing.
        if let Ok(sock) = std::net::UdpSocket::bind(addr) {
            std::thread::spawn(move || answer_dns(&sock));
        }
    }
    // The only privileges the box started with were for the port above; none reach the worker.
    drop_all_capabilities()?;
    if let Some((from, to)) = seed {
        copy_tree(&from, &to, 0);
    }
    let status = Command::new(program)
        .args(&args[i + 1..])
        .status()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", program.to_string_lossy()))?;
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(sig) = status.signal() {
        // Die the way the worker died, so the supervisor reports the same.
        #[allow(unsafe_code)]
        // SAFETY: resetting a signal's disposition and raising it have no preconditions.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

/// Copies the run's prepared scratch files (Leopold's, read-only at `from`) into the scratch
/// tmpfs: folders and regular files only, modes kept; what is there already (a file bound over,
/// such as a login file) is left as it is. Best effort: the worker sees what could be copied.
fn copy_tree(from: &std::path::Path, to: &std::path::Path, depth: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for e in entries.flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let Ok(meta) = std::fs::symlink_metadata(&src) else {
            continue;
        };
        if meta.is_dir() && depth < 16 {
            let _ = std::fs::create_dir(&dst);
            copy_tree(&src, &dst, depth + 1);
        } else if meta.is_file()
            && std::fs::symlink_metadata(&dst).is_err()
            && std::fs::copy(&src, &dst).is_ok()
        {
            let mode = meta.permissions().mode() & 0o777;
            let _ = std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode));
        }
    }
}

fn forward(tcp: TcpStream, sock: &std::path::Path) {
    let Ok(unix) = UnixStream::connect(sock) else {
        return;
    };
    let (Ok(mut tcp_r), Ok(mut unix_r)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let mut tcp_w = tcp;
    let mut unix_w = unix;
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut tcp_r, &mut unix_w);
        let _ = unix_w.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut unix_r, &mut tcp_w);
    let _ = tcp_w.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
}

/// Answers every DNS query with "no such name" (NXDOMAIN), at once. Inside the box no name
/// resolves anyway (there is no network); without an answer a resolver waits out its timeout
/// (musl: 2 x 2.5 s, seen delaying Codex's every run by 5 s).
fn answer_dns(sock: &std::net::UdpSocket) {
    let mut buf = [0u8; 512];
    while let Ok((n, peer)) = sock.recv_from(&mut buf) {
        if let Some(reply) = nxdomain(&buf[..n]) {
            let _ = sock.send_to(&reply, peer);
        }
    }
}

/// The NXDOMAIN reply to a query: its header and question, no records.
pub fn nxdomain(q: &[u8]) -> Option<Vec<u8>> {
    if q.len() < 12 || q[2] & 0x80 != 0 {
        return None;
    }
    // Skip the first question's name (labels up to the root), then type and class.
    let mut i = 12;
    loop {
        let len = *q.get(i)? as usize;
        if len == 0 {
            i += 1;
            break;
        }
        if len & 0xC0 != 0 {
            return None;
        }
        i += 1 + len;
    }
    let end = i + 4;
    if q.len() < end {
        return None;
    }
    let mut r = q[..end].to_vec();
    r[2] = 0x80 | (q[2] & 0x79); // QR, keep opcode and RD
    r[3] = 0x80 | 3; // RA, NXDOMAIN
    r[4] = 0;
    r[5] = 1; // one question
    r[6..12].fill(0);
    Some(r)
}

/// Empties every capability set, the bounding set and the ambient set, so neither box-init nor
/// anything it starts (a root `execve`, a setuid program) holds a capability.
fn drop_all_capabilities() -> anyhow::Result<()> {
    use rustix::thread::{self as t, CapabilitySet, CapabilitySets};
    for cap in 0..=63 {
        let cap = CapabilitySet::from_bits_retain(1 << cap);
        // EINVAL past the last capability this kernel knows: done.
        let Ok(held) = t::capability_is_in_bounding_set(cap) else {
            break;
        };
        if held {
            t::remove_capability_from_bounding_set(cap).map_err(|e| {
                anyhow::anyhow!(
                    "cannot drop capability {} from the bounding set: {}",
                    cap.bits().trailing_zeros(),
                    std::io::Error::from(e)
                )
            })?;
        }
    }
    let _ = t::clear_ambient_capability_set();
    let none = CapabilitySet::empty();
    t::set_capabilities(
        None,
        CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )
    .map_err(|e| anyhow::anyhow!("cannot drop capabilities: {}", std::io::Error::from(e)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_query_gets_nxdomain_with_its_id_and_question() {
        // id 0xabcd, RD, one question api.github.com A IN, one additional (EDNS) record.
        let mut q = vec![0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
        for label in ["api", "github", "com"] {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        let qlen = q.len();
        q.extend_from_slice(&[0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0]);
        let r = super::nxdomain(&q).unwrap();
        assert_eq!(&r[..2], &[0xab, 0xcd]);
        assert_eq!(r[2] & 0x80, 0x80, "a response");
        assert_eq!(r[3] & 0x0f, 3, "NXDOMAIN");
        assert_eq!(&r[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(r.len(), qlen);
        assert!(super::nxdomain(&r).is_none(), "never answers an answer");
        assert!(super::nxdomain(&q[..15]).is_none());
    }
}
