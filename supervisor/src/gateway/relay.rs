//! `leopold persona mcp-relay --socket PATH`: the worker's MCP server, as the harness sees it.
//!
//! A byte relay between its stdio and the supervisor's gateway socket, nothing more: it judges
//! nothing (the bound is the supervisor's end, outside the box, where the worker cannot reach
//! it) and exits as soon as either side closes, so a harness that stops its server and a
//! gateway that ends the run both end it.

use std::io::{Read, Write};
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
    let Ok(to_gateway) = sock.try_clone() else {
        return ExitCode::from(1);
    };
    let Ok(closer) = sock.try_clone() else {
        return ExitCode::from(1);
    };
    // stdin -> socket on a thread; when the harness closes stdin, the socket is shut down both
    // ways, which ends the copy below.
    std::thread::spawn(move || {
        copy(std::io::stdin().lock(), to_gateway);
        let _ = closer.shutdown(std::net::Shutdown::Both);
    });
    copy(sock, std::io::stdout().lock());
    ExitCode::SUCCESS
}

/// Copies `from` to `to` until either side closes or fails, each read passed on and flushed at
/// once: a message must not wait in a buffer for the next one.
fn copy(mut from: impl Read, mut to: impl Write) {
    let mut buf = [0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return;
                }
            }
        }
    }
}
