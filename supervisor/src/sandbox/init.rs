//! `leopold persona box-init`: the first program inside the box. It listens on the loopback
//! address(es) it is given and forwards every connection to a unix socket the supervisor serves
//! (the model relay), then runs the worker and exits as it did.
//!
//! It holds no privilege the worker lacks: the worker could connect to the socket itself. The
//! bound is the supervisor's end, outside the box.
#![allow(clippy::print_stderr, clippy::exit)]

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// `--forward ADDR=SOCKET ... -- PROGRAM ARGS...`
pub fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "leopold box-init: {e:#}");
            ExitCode::from(70)
        }
    }
}

fn run(args: &[String]) -> anyhow::Result<ExitCode> {
    let mut forwards: Vec<(SocketAddr, PathBuf)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--forward" => {
                let spec = args
                    .get(i + 1)
                    .ok_or_else(|| anyhow::anyhow!("--forward needs ADDR=SOCKET"))?;
                let (addr, sock) = spec
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("--forward {spec}: expected ADDR=SOCKET"))?;
                forwards.push((addr.parse()?, PathBuf::from(sock)));
                i += 2;
            }
            "--" => {
                i += 1;
                break;
            }
            other => anyhow::bail!("unknown argument {other}"),
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
    let status = Command::new(program)
        .args(&args[i + 1..])
        .status()
        .map_err(|e| anyhow::anyhow!("cannot start {program}: {e}"))?;
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
