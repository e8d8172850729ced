//! The gateway: every MCP server the worker gets is reached through the supervisor, which
//! judges each message before the real server sees it (docs/security.md#the-gateway).
//!
//! For each server (a stdio server of `--mcp-config`, or the provisioned Playwright browser)
//! the supervisor listens on `<sock dir>/mcp-<server>.sock`; the worker's MCP config names
//! `leopold persona mcp-relay --socket <that>` instead of the server. The first connection
//! starts the run's one process of the real server here, outside the box (its working directory
//! the run's browser output folder, never the project), which every later connection shares;
//! the gateway relays newline-delimited JSON-RPC, each request under an id of its own so that
//! every answer is judged, recorded and returned as the answer to the request it answers:
//!
//! - a `tools/call` goes on only if the browser tool catalogue offers it ([`policy::catalogue`]) and the
//!   guard's own decision allows it; a denied call is answered here with an MCP tool error
//!   carrying the guard's one-line message, and is never forwarded. This holds whether or not
//!   the harness ran its hook (on Codex a hook that cannot run fails open,
//!   docs/harness-facts.md#1-what-fails-open);
//! - `initialize`: the client's `roots` capability is replaced by the gateway's; the server's
//!   `roots/list` is answered with the output folder alone; `tools/list` results are filtered;
//! - anything the gateway cannot parse or judge is refused with a named reason and recorded: a
//!   batch, a `tools/call` without an id (a notification), a request reusing an id still in
//!   flight, a method it does not pass on.
//!
//! Every call and answer is journaled in `gateway.jsonl` (tool, verdict, reason, the call
//! reduced as events.jsonl reduces it, the page's host and title), the record the run's
//! journal is compared with at the end, call by call ([`Shared::compare`]); hash-chained as the journal is,
//! its head kept in run.json, so that `persona replay` shows a line edited, removed or cut.
//!
//! The parts, one file each so that each reads on its own: the worker's side of a connection
//! (`conn`), the run's process of a server and its answers (`server`), the record (`record`),
//! the comparison with the stream (`compare`), the gateway's own screenshots and trace
//! (`evidence`, `trace_zip`), and the gateway as a run starts and stops it (`start`).

mod compare;
mod conn;
pub mod evidence;
mod own;
pub mod policy;
mod record;
pub mod relay;
mod server;
mod start;
mod trace_zip;

use std::path::{Path, PathBuf};

pub use compare::{Disagreement, Shared, StreamCall};
pub use evidence::Evidence;
pub use own::{FINISH, REPORT_FINDING};
pub use record::seen_in;
pub use start::{start, Gateway, Start};

/// The socket the worker's relay connects to for `server`.
pub fn socket_path(sock_dir: &Path, server: &str) -> PathBuf {
    sock_dir.join(format!("mcp-{server}.sock"))
}

/// The MCP server entry the worker is given for `server`: this binary's relay.
pub fn relay_server(leopold: &Path, sock_dir: &Path, server: &str) -> crate::mcp::McpServer {
    crate::mcp::McpServer {
        name: server.to_owned(),
        transport: crate::mcp::McpTransport::Stdio {
            command: leopold.display().to_string(),
            args: vec![
                "persona".into(),
                "mcp-relay".into(),
                "--socket".into(),
                socket_path(sock_dir, server).display().to_string(),
            ],
            env: Vec::new(),
        },
    }
}

/// A real server, as the gateway starts it.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Whether it is the provisioned browser (its clicks are judged by the ref map).
    pub provisioned: bool,
}
