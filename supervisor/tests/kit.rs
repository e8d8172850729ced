//! The supervisor's test kit: `leopold-tests`' [`Sandbox`] and helpers (the one kit of the
//! workspace), driving this package's own `leopold` binary, the one cargo built for these tests.

use std::process::{Child, Command, Output};

pub use leopold_tests::fake_run::*;
pub use leopold_tests::{capture, Sandbox};

/// This package's `leopold` binary.
pub const LEOPOLD: &str = env!("CARGO_BIN_EXE_leopold");

fn leopold_bin() -> &'static std::path::Path {
    if !cfg!(feature = "test-knobs") {
        panic!(
            "these tests set the `__LEOPOLD_*` test knobs, which only a build with the \
             `test-knobs` feature reads: run ./scripts/test.sh, or add `--features leopold/test-knobs`"
        );
    }
    std::path::Path::new(LEOPOLD)
}

/// The kit's `leopold` commands with [`LEOPOLD`] as the binary.
pub trait Leopold {
    /// `leopold <args>` in the sandbox (sealed HOME/CODEX_HOME, the fake worker's script).
    fn leopold(&self, args: &[&str]) -> Command;
    /// `leopold persona run` of the sandbox's flow with the fake worker as `harness`.
    fn run_cmd(&self, harness: &str, extra: &[&str]) -> Command;
    /// [`Leopold::run_cmd`] of another flow file in the same project.
    fn run_flow(&self, flow: &std::path::Path, harness: &str, extra: &[&str]) -> Command;
    /// [`Leopold::run_cmd`] with these variables set, run to completion.
    fn run_with_env(&self, harness: &str, extra: &[&str], env: &[(&str, &str)]) -> Output;
    /// `persona run` paused at `step`, once the supervisor has reached it.
    fn spawn_paused(&self, harness: &str, step: &str) -> Child;
    /// `leopold persona recover` of the sandbox's project.
    fn recover(&self) -> Output;
    /// `leopold persona run` of the sandbox's flow with `bin` as `harness`, nothing added.
    fn run_with_bin(&self, harness: &str, bin: &str, extra: &[&str]) -> Command;
    /// `leopold persona runs --project <the sandbox's project> <extra…>`, run to completion.
    fn runs(&self, extra: &[&str]) -> Output;
}

impl Leopold for Sandbox {
    fn leopold(&self, args: &[&str]) -> Command {
        self.leopold_command(leopold_bin(), args)
    }
    fn run_cmd(&self, harness: &str, extra: &[&str]) -> Command {
        self.persona_run_command(leopold_bin(), harness, extra)
    }
    fn run_flow(&self, flow: &std::path::Path, harness: &str, extra: &[&str]) -> Command {
        self.persona_run_of(leopold_bin(), flow, harness, extra)
    }
    fn run_with_env(&self, harness: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = self.run_cmd(harness, extra);
        cmd.envs(env.iter().copied());
        cmd.output().unwrap()
    }
    fn spawn_paused(&self, harness: &str, step: &str) -> Child {
        self.spawn_paused_run(leopold_bin(), harness, step)
    }
    fn recover(&self) -> Output {
        self.run_recover(leopold_bin())
    }
    fn run_with_bin(&self, harness: &str, bin: &str, extra: &[&str]) -> Command {
        self.persona_run_with_bin(leopold_bin(), harness, bin, extra)
    }
    fn runs(&self, extra: &[&str]) -> Output {
        let project = self.project.display().to_string();
        let mut args = vec!["persona", "runs", "--project", &project];
        args.extend_from_slice(extra);
        self.leopold(&args).output().unwrap()
    }
}

/// The fake worker's `@mcp` script for `calls` (server `browser`), then a clean exit.
pub fn mcp_script(calls: &[(&str, serde_json::Value)]) -> String {
    let mut s = String::new();
    for (tool, args) in calls {
        s.push_str(&format!("@mcp browser {tool} {args}\n"));
    }
    s.push_str("@exit 0\n");
    s
}

/// A `navigate` call to `url`, for [`mcp_script`].
pub fn mcp_navigate(url: &str) -> (&'static str, serde_json::Value) {
    ("navigate", serde_json::json!({ "url": url }))
}

/// A file of tests/fixtures/ (the real streams of the checkout script), copied into the kit
/// folder, which the box lets the fake worker read.
pub fn fixture_into_kit(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let src = capture("x")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("fixtures")
        .join(name);
    let dst = sb.kit().join(name);
    std::fs::create_dir_all(sb.kit()).unwrap();
    std::fs::copy(&src, &dst).unwrap();
    dst
}

/// The run id in ACTIVE.json, of the run under way.
pub fn active_run_id(sb: &Sandbox) -> String {
    serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(sb.active()).unwrap())
        .unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A local HTTP server on a free port, answering `200 ok` to every request and keeping what it
/// received, in order: `accepted` (if given) as it accepts each connection, before reading
/// anything, then what `read` makes of the request (read on a thread of its own).
pub struct Recorder<T> {
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: std::sync::Arc<std::sync::Mutex<Vec<T>>>,
}

impl<T: Clone + Send + 'static> Recorder<T> {
    pub fn start(
        accepted: Option<T>,
        read: impl Fn(&mut std::io::BufReader<&std::net::TcpStream>) -> T + Send + Sync + 'static,
    ) -> Recorder<T> {
        use std::io::Write as _;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let read = std::sync::Arc::new(read);
        let kept = log.clone();
        std::thread::spawn(move || {
            for conn in l.incoming().flatten() {
                if let Some(a) = &accepted {
                    kept.lock().unwrap().push(a.clone());
                }
                let (read, kept) = (read.clone(), kept.clone());
                std::thread::spawn(move || {
                    let got = read(&mut std::io::BufReader::new(&conn));
                    kept.lock().unwrap().push(got);
                    let mut w = &conn;
                    let _ = w.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    );
                });
            }
        });
        Recorder { port, log }
    }

    /// What it received so far.
    pub fn seen(&self) -> Vec<T> {
        self.log.lock().unwrap().clone()
    }
}
