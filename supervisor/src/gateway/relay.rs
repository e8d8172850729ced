//! `leopold persona mcp-relay --socket PATH`: the worker's MCP server, as the harness sees it.
//!
//! A byte relay between its stdio and the supervisor's gateway socket, nothing more: it judges
//! nothing (the bound is the supervisor's end, outside the box, where the worker cannot reach
//! it) and exits as soon as either side closes, so a harness that stops its server and a
//! gateway that ends the run both end it.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;

/// Runs the relay; exit 0 when a side closed, 1 when the socket cannot be reached.
pub fn main(socket: &Path) -> ExitCode {
    let sock = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "leopold mcp-relay: cannot connect to {}: {e}",
                socket.display()
            );
            return ExitCode::from(1);
        }
    };
    let Ok(mut to_gateway) = sock.try_clone() else {
        return ExitCode::from(1);
    };
    let Ok(closer) = sock.try_clone() else {
        return ExitCode::from(1);
    };
    // stdin -> socket on a thread; when the harness closes stdin, the socket is shut down both
    // ways, which ends the copy below.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to_gateway.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = closer.shutdown(std::net::Shutdown::Both);
    });
    let mut from_gateway = sock;
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match from_gateway.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stdout
                    .write_all(&buf[..n])
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    ExitCode::SUCCESS
}
