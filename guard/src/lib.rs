//! Leopold persona guard: the PreToolUse hook's decision. See issue #2 and
//! docs/security.md#the-guard.
//!
//! # Contract
//!
//! `leopold persona guard` reads one PreToolUse payload on stdin (at most [`MAX_PAYLOAD_BYTES`])
//! and answers with its exit code, nothing else:
//!
//! - **allow**: exit 0, nothing on stdout or stderr;
//! - **deny**: exit 2, exactly one line on stderr starting `Leopold persona guard:` that names
//!   the host (never the URL), the flow and the reason id, and one JSON line appended to
//!   `<root>/.leopold/persona/events.jsonl`.
//!
//! No other exit code, ever: a panic prints a reason and exits 2
//! (docs/harness-facts.md#1-what-fails-open: exit 1 and
//! 101 fail open on Codex and on Claude without `onFailure`).
//!
//! # Decision
//!
//! [`decide`] is the one decision function; [`evaluate`] wraps it with the state handling: the
//! project root is the nearest ancestor of the payload's `cwd` holding `.leopold/`; no root, no
//! `ACTIVE.json` or `"active": false` is inert (allow); every state that cannot be read or judged
//! denies with its own [`Reason`].
//!
//! # Performance
//!
//! This runs before every browser tool call: no async runtime, no logging, no network, no lock
//! waits, no work beyond the decision (BENCHMARKS.md "The guard").
#![warn(missing_docs)]

pub mod browser;
mod decide;
mod events;
mod harness;
mod reason;
mod state;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

pub use decide::{
    activates_by_name, activation, bare_tool, catalogue_entry, decide, is_click_like,
    looks_like_navigation, reduced_call, walk_call, CallItem, HookInput, REDUCED_URL_KEY,
};
pub use events::{EventName, GuardEvent};
pub use harness::{Harness, UnknownHarness};
pub use reason::{message, safe_text, Denial, Reason, Verdict, PREFIX};
pub use state::{
    find_root, load_flow, read_active, ActiveFile, ActiveState, SuiteMember, WiringEntry,
    ACTIVE_PATH, ACTIVE_VERSION, EVENTS_PATH,
};

/// The largest payload the guard judges; anything bigger denies (`payload_too_large`) while a
/// run is active. Browser tool calls are a few hundred bytes.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

/// Now, as RFC 3339 UTC with milliseconds: the timestamp of every line Leopold writes (guard
/// events, the journal, the gateway's record, `run.json`).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Everything the guard found out about one call: the verdict, and what the report needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The answer.
    pub verdict: Verdict,
    /// The project root, when one was found.
    pub root: Option<PathBuf>,
    /// The active flow's name, when a run is active.
    pub flow: Option<String>,
    /// The payload's `tool_name`, when it had one.
    pub tool: Option<String>,
    /// The payload's `tool_use_id`, when it had one.
    pub tool_use_id: Option<String>,
    /// The payload's `tool_input`, when it had one: reduced into the event of a denial
    /// ([`reduced_call`]) so the journal records a denied Codex call (which leaves no item in
    /// Codex's stream) with the fields a denied Claude call has.
    pub tool_input: Option<serde_json::Value>,
}

impl Evaluation {
    fn inert(root: Option<PathBuf>) -> Evaluation {
        Evaluation {
            verdict: Verdict::Allow,
            root,
            flow: None,
            tool: None,
            tool_use_id: None,
            tool_input: None,
        }
    }
}

/// Reads the payload (bounded), finds the state, and decides. `fallback_cwd` is where to look
/// for the project root when the payload has no `cwd` (the process's own working directory).
pub fn evaluate(stdin: impl Read, fallback_cwd: Option<&Path>) -> Evaluation {
    let mut bytes = Vec::with_capacity(4096);
    let payload: Result<serde_json::Value, Denial> = match stdin
        .take(MAX_PAYLOAD_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
    {
        Err(e) => Err(Denial::new(Reason::PayloadUnreadable).with_detail(e.kind().to_string())),
        Ok(_) if bytes.len() > MAX_PAYLOAD_BYTES => Err(Denial::new(Reason::PayloadTooLarge)),
        Ok(_) => serde_json::from_slice(&bytes).map_err(|_| Denial::new(Reason::PayloadNotJson)),
    };

    let payload_cwd = payload
        .as_ref()
        .ok()
        .and_then(|v| v.get("cwd"))
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    let start = match (payload_cwd, fallback_cwd) {
        (Some(p), _) if p.is_absolute() => p,
        (Some(p), Some(base)) => base.join(p),
        (None, Some(base)) => base.to_path_buf(),
        (_, None) => {
            let d = Denial::new(Reason::ProjectRootUnreadable)
                .with_detail("no usable working directory to start from");
            return deny(d, None, None, None);
        }
    };

    let root = match find_root(&start) {
        Ok(Some(root)) => root,
        Ok(None) => return Evaluation::inert(None),
        Err(d) => return deny(d, None, None, None),
    };
    let (flow_name, flow_path, browser) = match read_active(&root) {
        Ok(ActiveState::Inactive) => return Evaluation::inert(Some(root)),
        Ok(ActiveState::Active {
            flow,
            flow_path,
            browser,
        }) => (flow, flow_path, browser),
        Err(d) => return deny(d, Some(root), None, None),
    };
    let input = match payload.and_then(HookInput::from_value) {
        Ok(input) => input,
        Err(d) => return deny(d, Some(root), Some(flow_name), None),
    };
    let flow = match load_flow(&flow_name, &flow_path) {
        Ok(flow) => flow,
        Err(d) => return deny(d, Some(root), Some(flow_name), Some(input)),
    };
    let mut verdict = decide(&flow, &input);
    if let (Verdict::Allow, Some(b)) = (&verdict, &browser) {
        verdict = browser::judge(&flow, b, &input, browser::REF_MAP_WAIT);
    }
    Evaluation {
        verdict,
        root: Some(root),
        flow: Some(flow_name),
        tool: Some(input.tool_name),
        tool_use_id: input.tool_use_id,
        tool_input: Some(input.tool_input),
    }
}

fn deny(
    d: Denial,
    root: Option<PathBuf>,
    flow: Option<String>,
    input: Option<HookInput>,
) -> Evaluation {
    let (tool, tool_use_id, tool_input) = match input {
        Some(i) => (Some(i.tool_name), i.tool_use_id, Some(i.tool_input)),
        None => (None, None, None),
    };
    Evaluation {
        verdict: Verdict::Deny(d),
        root,
        flow,
        tool,
        tool_use_id,
        tool_input,
    }
}

/// Reports an evaluation: nothing for allow; for deny, the stderr line and the event. Returns
/// the exit code, 0 or 2.
pub fn report(eval: &Evaluation, mut stderr: impl Write) -> u8 {
    let Verdict::Deny(denial) = &eval.verdict else {
        return 0;
    };
    let flow = eval.flow.as_deref().and_then(|f| safe_text(f, 64));
    let tool = eval.tool.as_deref().and_then(|t| safe_text(t, 128));
    let mut line = message(denial, flow.as_deref(), tool.as_deref());
    line.push('\n');
    // One write of the whole line; a closed stderr still denies.
    let _ = stderr.write_all(line.as_bytes());
    let _ = stderr.flush();
    if let Some(root) = &eval.root {
        append_event(root, &event_line(eval, denial, flow, tool));
    }
    2
}

/// The `events.jsonl` line for a denial (with its newline).
pub fn event_line(
    eval: &Evaluation,
    denial: &Denial,
    flow: Option<String>,
    tool: Option<String>,
) -> Vec<u8> {
    GuardEvent {
        ts: Some(now_rfc3339()),
        event: denial.reason.event(),
        tool,
        host: denial.host.as_deref().and_then(|h| safe_text(h, 253)),
        flow,
        reason: Some(denial.reason.id().to_owned()),
        tool_use_id: eval.tool_use_id.as_deref().and_then(|i| safe_text(i, 128)),
        call: eval
            .tool_input
            .as_ref()
            .map(|input| reduced_call(eval.tool.as_deref().unwrap_or(""), input)),
    }
    .to_line()
}

/// In a boxed run, the supervisor's datagram socket that takes the guard's event lines: the
/// project, and so `events.jsonl`, is read-only inside the box (docs/security.md#the-box).
pub const EVENTS_SOCKET_ENV: &str = "LEOPOLD_EVENTS_SOCKET";

/// Records one event line: sent as one datagram to the supervisor's socket when
/// `LEOPOLD_EVENTS_SOCKET` names one (a boxed run), else (or if sending fails) appended to
/// `<root>/.leopold/persona/events.jsonl` with a single `write(2)` on an `O_APPEND` file, so
/// lines from guards running in parallel never interleave. A failure is ignored: the call is
/// denied either way. Only the deny path comes here; an allow never looks at the variable.
fn append_event(root: &Path, line: &[u8]) {
    #[cfg(unix)]
    if let Some(sock) = std::env::var_os(EVENTS_SOCKET_ENV) {
        if let Ok(s) = std::os::unix::net::UnixDatagram::unbound() {
            if s.send_to(line, &sock).is_ok_and(|n| n == line.len()) {
                return;
            }
        }
    }
    let Ok(mut file) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(root.join(EVENTS_PATH))
    else {
        return;
    };
    match file.write(line) {
        Ok(n) if n == line.len() => {}
        // A short write on a regular file means a full disk; nothing sensible to add.
        Ok(_) | Err(_) => {}
    }
}

/// Runs the hook on the given streams; returns the exit code (0 or 2, never anything else).
pub fn run(stdin: impl Read, stderr: impl Write) -> u8 {
    let cwd = std::env::current_dir().ok();
    let eval = evaluate(stdin, cwd.as_deref());
    report(&eval, stderr)
}

/// The process entry point for `leopold persona guard`: real stdin and stderr, and a panic hook
/// that denies. Returns the exit code.
pub fn main_entry() -> u8 {
    std::panic::set_hook(Box::new(deny_on_panic));
    // For the process tests: prove a panic still exits 2 with one line (a test knob: read
    // only in a build with the `test-knobs` feature).
    if cfg!(feature = "test-knobs") && std::env::var_os("__LEOPOLD_GUARD_PANIC").is_some() {
        panic!("__LEOPOLD_GUARD_PANIC is set");
    }
    run(std::io::stdin().lock(), std::io::stderr().lock())
}

/// A panic must not become exit 101 (fail-open). Print one line (no panic message: it could hold
/// payload text) and exit 2 at once.
#[allow(clippy::exit)]
fn deny_on_panic(_info: &std::panic::PanicHookInfo<'_>) {
    let line = message(&Denial::new(Reason::InternalError), None, None);
    let _ = writeln!(std::io::stderr(), "{line}");
    std::process::exit(2);
}
