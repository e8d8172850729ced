//! Leopold's test kit: drive the real Claude Code and Codex CLIs hermetically (issue #6).
//!
//! # Brief overview
//!
//! - [`Sandbox`]: a throwaway `HOME`, `CODEX_HOME`, project directory and log directory, and the
//!   hermetic environment a harness runs in (no account, no network but loopback).
//! - [`ModelServer`]: the `leopold-scripted-model` binary, started on free loopback ports with a
//!   [`script::Script`]; its request log shows what the model received (e.g. the guard's reason).
//! - [`StubBrowser`]: the `leopold-stub-browser` MCP server as the harness launches it; its log
//!   holds every `tools/call` that got through, so a deny is proven by absence.
//! - [`require_cli`]: the real CLI under test, from `LEOPOLD_CLAUDE_BIN` / `LEOPOLD_CODEX_BIN`
//!   (set by `scripts/test.sh`). In CI a missing CLI fails the test; elsewhere it skips loudly.
//! - [`leopold_bin`]: the `leopold` binary, built from this workspace.
//! - [`capture`]: a harness capture under `tests/captures/` (`scripts/record-captures.sh`).
//! - [`fake_run`]: `leopold persona run` with the fake worker standing in for the harness, in a
//!   [`Sandbox`] holding the user's own files (the supervisor's lifecycle tests).
//! - [`witness`]: what got out of a run, seen from outside the box: the forbidden host's log,
//!   byte snapshots, the process table.
//! - [`world`] and [`adversary`]: the containment suites' world (a boxed `persona run` with the
//!   user's files planted) and the calls the scripted adversary makes to get out of it.
//!
//! # Example
//!
//! ```no_run
//! use leopold_tests::{require_cli, Harness, ModelServer, Sandbox};
//! use leopold_tests::script::{Script, ToolCall, Turn};
//!
//! let Some(claude) = require_cli(Harness::Claude) else { return };
//! let sb = Sandbox::new();
//! let script = Script {
//!     turns: vec![Turn { delay_ms: 0, calls: vec![ToolCall {
//!         tool: "mcp__browser__navigate".into(),
//!         input: serde_json::json!({"url": "https://staging.example.com/"}),
//!     }] }],
//!     final_answer: "done".into(),
//! };
//! let model = ModelServer::start(&sb, &script);
//! let browser = sb.stub_browser("browser");
//! let run = sb.run(sb.claude_command(&claude, &model, &browser, "go"), std::time::Duration::from_secs(60));
//! assert!(run.status.success(), "{run}");
//! assert_eq!(browser.calls().len(), 1);
//! ```
#![warn(missing_docs)]

pub mod adversary;
pub mod checkout;
pub mod fake_run;
#[cfg(test)]
mod links;
pub mod offered;
pub mod script;
pub mod staging;
pub mod suite;
pub mod witness;
pub mod world;

use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The tag every Leopold guard wiring carries (a shell comment after the command).
pub const GUARD_TAG: &str = "leopold-persona-guard";

/// The hook matcher Leopold wires: every MCP tool, and WebFetch.
pub const GUARD_MATCHER: &str = "mcp__.*|WebFetch";

/// A harness under test: the product's own enum (`leopold_guard::Harness`), so the kit names
/// harnesses exactly as the files and the command line do.
pub use leopold_guard::Harness;

/// What the test kit adds to [`Harness`].
pub trait HarnessKit: Sized {
    /// The harnesses a `--harness claude|codex|all` argument names; `None` for anything else.
    fn select(arg: &str) -> Option<Vec<Self>>;
    /// The benchmark binaries' arguments, `[--rounds N] [--harness claude|codex|all]`: the
    /// rounds (default `default_rounds`, at least 1) and the harnesses (default both); `None` for
    /// anything else.
    fn bench_args(
        args: impl Iterator<Item = String>,
        default_rounds: usize,
    ) -> Option<(usize, Vec<Self>)>;
    /// The environment variable naming this harness's binary.
    fn env_var(self) -> &'static str;
    /// The binary a benchmark drives, from [`HarnessKit::env_var`]; `None` (said on stderr) when
    /// that is not set.
    fn bench_cli(self) -> Option<PathBuf>;
}

/// The head of the benchmarks' Markdown table (BENCHMARKS.md).
pub const BENCH_TABLE_HEAD: &str =
    "| harness | way | median | min | max | ratio to bare (median) |\n|---|---|---|---|---|---|";

/// `codex exec` as a peer runs it, bare: JSON events, no approvals, no sandbox; the project
/// folder follows (docs/harness-facts.md#5-headless-worker-invocations).
pub const CODEX_BARE_EXEC: [&str; 5] = [
    "exec",
    "--json",
    "--skip-git-repo-check",
    "--dangerously-bypass-approvals-and-sandbox",
    "-C",
];

impl HarnessKit for Harness {
    fn select(arg: &str) -> Option<Vec<Harness>> {
        match arg {
            "all" => Some(Harness::ALL.to_vec()),
            one => one.parse().ok().map(|h| vec![h]),
        }
    }

    fn bench_args(
        mut args: impl Iterator<Item = String>,
        default_rounds: usize,
    ) -> Option<(usize, Vec<Harness>)> {
        let mut rounds = default_rounds;
        let mut harnesses = Harness::ALL.to_vec();
        while let Some(a) = args.next() {
            match (a.as_str(), args.next()) {
                ("--rounds", Some(n)) => rounds = n.parse().ok().filter(|&n| n > 0)?,
                ("--harness", Some(h)) => harnesses = Harness::select(&h)?,
                _ => return None,
            }
        }
        Some((rounds, harnesses))
    }

    fn env_var(self) -> &'static str {
        match self {
            Harness::Claude => "LEOPOLD_CLAUDE_BIN",
            Harness::Codex => "LEOPOLD_CODEX_BIN",
        }
    }

    #[allow(clippy::print_stderr)]
    fn bench_cli(self) -> Option<PathBuf> {
        let cli = std::env::var_os(self.env_var()).map(PathBuf::from);
        if cli.is_none() {
            eprintln!("{} is not set", self.env_var());
        }
        cli
    }
}

/// The real CLI binary for `harness`, from its environment variable (`scripts/test.sh` installs
/// the pinned CLIs and sets both).
///
/// When the variable is missing: **panics if `CI` is set** (these suites must never skip in CI);
/// otherwise prints a loud SKIPPED line and returns `None`. A variable naming a missing file
/// always panics.
#[allow(clippy::print_stderr)]
pub fn require_cli(harness: Harness) -> Option<PathBuf> {
    let var = harness.env_var();
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "{var} names {}, which is not a file; run ./scripts/install-clis.sh",
                path.display()
            );
            Some(path)
        }
        None if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) => panic!(
            "{var} is not set and CI is: the real-CLI suites must not skip in CI \
             (run them through ./scripts/test.sh, which installs the pinned CLIs)"
        ),
        None => {
            eprintln!(
                "\n*** SKIPPED: {var} is not set, so this test did not run the real {} CLI.\n\
                 *** Run ./scripts/test.sh (it installs the pinned CLIs and sets {var}).\n",
                harness.as_str()
            );
            None
        }
    }
}

/// The directory holding this crate's binaries (`target/<profile>/`), found from the running
/// test executable (`target/<profile>/deps/<test>-<hash>`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test executable has a directory");
    if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    }
}

/// A test-kit binary (`leopold-scripted-model`, `leopold-stub-browser`, ...) by name.
pub fn kit_bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.is_file(),
        "test-kit binary {} is missing; build it with `cargo build -p leopold-tests`",
        p.display()
    );
    p
}

/// The `leopold` binary: `LEOPOLD_BIN` if set (`scripts/test.sh` builds it and sets it), else
/// `leopold` beside the running test's target directory. Never built from here: a test that ran
/// `cargo build` would race the build that started it.
///
/// # Panics
/// Neither is a file; the message says how to build it.
pub fn leopold_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let p = match std::env::var_os("LEOPOLD_BIN").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => bin_dir().join("leopold"),
        };
        assert!(
            p.is_file(),
            "the leopold binary {} is missing: run ./scripts/test.sh, or build it with \
             `cargo build -p leopold` (or set LEOPOLD_BIN)",
            p.display()
        );
        p
    })
    .clone()
}

/// `tests/captures/<name>`: a real harness stream recorded by `scripts/record-captures.sh`
/// (see `tests/captures/README.md`).
pub fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name)
}

/// Each item's string fields `a` and `b`, as a pair (a record's kind and reason, a request's
/// method and rule).
///
/// # Panics
/// An item without either string.
pub fn string_pairs(items: &[Value], a: &str, b: &str) -> Vec<(String, String)> {
    let field = |v: &Value, k: &str| {
        v[k].as_str()
            .unwrap_or_else(|| panic!("no string `{k}` in {v}"))
            .to_owned()
    };
    items.iter().map(|v| (field(v, a), field(v, b))).collect()
}

/// What a recorded stream committed to the repository must not hold: this machine's paths, the
/// test sandboxes' names and the scripted model's key.
pub const UNSCRUBBED: [&str; 4] = [
    "leopold-e2e-",
    "/root/",
    "/work/",
    "scripted-model-no-secret",
];

/// A fresh temporary directory holding these files (`(path relative to it, contents)`), their
/// folders made. Dropped, it is removed.
///
/// # Panics
/// When a file cannot be written.
pub fn temp_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (rel, contents) in files {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("the file's folder");
        }
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
    dir
}

/// [`temp_tree`] of one file: the directory and the file's path.
pub fn temp_file(rel: &str, contents: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = temp_tree(&[(rel, contents)]);
    let path = dir.path().join(rel);
    (dir, path)
}

/// The titles of the findings a run's `end` (run.json's) says the persona reported, in order.
pub fn reported_titles(end: &Value) -> Vec<String> {
    end["verdict"]["reported"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Reads a JSON-lines file; a missing file is an empty list (nothing was logged).
///
/// Tests poll logs that live processes are still appending to, and a reader can see a write
/// half done: a last line without its newline is still in flight and is left for the next read.
///
/// # Panics
/// A whole line (one that ends in a newline) that is not JSON: a log a test reads must be whole.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .split_inclusive('\n')
            .filter_map(|l| l.strip_suffix('\n'))
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{}: bad JSON line {l:?}: {e}", path.display()))
            })
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    }
}

/// A throwaway world for one harness run.
pub struct Sandbox {
    _tmp: Option<tempfile::TempDir>,
    /// The sandbox root (holds everything below).
    pub root: PathBuf,
    /// The harness's `HOME`.
    pub home: PathBuf,
    /// Codex's `CODEX_HOME` (`<home>/.codex`).
    pub codex_home: PathBuf,
    /// The project the persona runs in (the harness's working directory).
    pub project: PathBuf,
    /// Logs and generated configs that belong to the test, not the harness.
    pub logs: PathBuf,
    /// `persona run --no-contain` in [`fake_run`]'s commands (docs/security.md#the-box).
    pub unboxed: bool,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// Creates the directories under a fresh temporary directory, removed on drop.
    pub fn new() -> Sandbox {
        let tmp = tempfile::Builder::new()
            .prefix("leopold-e2e-")
            .tempdir()
            .expect("temp dir");
        let mut sb = Self::layout(tmp.path());
        sb._tmp = Some(tmp);
        sb
    }

    /// Creates the directories under `dir`, emptied first, and kept afterwards (for the demo,
    /// whose journal the user reads after it ends).
    pub fn at(dir: &Path) -> Sandbox {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .unwrap_or_else(|e| panic!("cannot empty {}: {e}", dir.display()));
        }
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        Self::layout(dir)
    }

    fn layout(dir: &Path) -> Sandbox {
        // Canonical paths: harnesses report a canonical `cwd` to hooks.
        let root = dir.canonicalize().expect("canonical sandbox dir");
        let home = root.join("home");
        let codex_home = home.join(".codex");
        let project = root.join("project");
        let logs = root.join("logs");
        let kit = root.join("kit");
        for d in [&home, &codex_home, &project, &logs, &kit] {
            std::fs::create_dir_all(d).expect("create sandbox dir");
        }
        Sandbox {
            _tmp: None,
            root,
            home,
            codex_home,
            project,
            logs,
            unboxed: false,
        }
    }

    /// The environment a harness runs with: nothing inherited but `PATH`, a throwaway `HOME`,
    /// the scripted model as the only API endpoint.
    pub fn env(&self, model: &ModelServer) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = Vec::new();
        let mut set = |k: &str, v: &dyn AsRef<std::ffi::OsStr>| {
            env.push((k.into(), v.as_ref().to_owned()));
        };
        set("PATH", &std::env::var_os("PATH").unwrap_or_default());
        set("HOME", &self.home);
        set("CODEX_HOME", &self.codex_home);
        set("XDG_CONFIG_HOME", &self.home.join(".config"));
        set("XDG_CACHE_HOME", &self.home.join(".cache"));
        set("XDG_DATA_HOME", &self.home.join(".local/share"));
        set("XDG_STATE_HOME", &self.home.join(".local/state"));
        set("TMPDIR", &std::env::temp_dir());
        set("LANG", &"C.UTF-8");
        // Codex runs hooks through `$SHELL -lc`, Claude through `/bin/sh -c`.
        set("SHELL", &"/bin/sh");
        set("NO_COLOR", &"1");
        set(
            "ANTHROPIC_BASE_URL",
            &format!("http://127.0.0.1:{}", model.anthropic_port),
        );
        set("ANTHROPIC_API_KEY", &"scripted-model-no-secret");
        set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", &"1");
        set("DISABLE_AUTOUPDATER", &"1");
        set("MOCK_API_KEY", &"scripted-model-no-secret");
        env
    }

    /// A stub MCP browser named `name` (tools `mcp__<name>__navigate|click|type`), logging to
    /// `<logs>/<name>-calls.jsonl`.
    pub fn stub_browser(&self, name: &str) -> StubBrowser {
        StubBrowser {
            name: name.to_owned(),
            bin: kit_bin("leopold-stub-browser"),
            log: self.logs.join(format!("{name}-calls.jsonl")),
        }
    }

    /// Copies the checkout flow to `<project>/flows/checkout.md`, where runs name it
    /// `flows/checkout.md`.
    pub fn add_checkout_flow(&self) {
        let flows = self.project.join("flows");
        std::fs::create_dir_all(&flows).expect("create the project's flows folder");
        std::fs::copy(checkout::flow_path(), flows.join("checkout.md"))
            .expect("copy the checkout flow");
    }

    /// The checkout world for a run of `h` against `model`: the checkout flow in the project, a
    /// stub browser for the checkout server and Codex pointed at the model. Returns the
    /// browser's `--mcp-config` file.
    pub fn checkout_setup(&self, h: Harness, model: &ModelServer) -> PathBuf {
        let browser = self.stub_browser(checkout::SERVER);
        self.add_checkout_flow();
        if h == Harness::Codex {
            self.write_codex_config(model, "");
        }
        self.write_claude_mcp_config(&browser)
    }

    /// Writes a Claude `--mcp-config` file for `browser` and returns its path.
    pub fn write_claude_mcp_config(&self, browser: &StubBrowser) -> PathBuf {
        let path = self.logs.join(format!("{}-mcp.json", browser.name));
        let cfg = browser.claude_mcp_config();
        std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).expect("write mcp config");
        path
    }

    /// Writes `$CODEX_HOME/config.toml` pointing Codex at the scripted model (the `mock`
    /// provider of docs/harness-facts.md#6-driving-the-real-clis-hermetically), followed by `extra`
    /// (e.g. hook wiring). Returns its path.
    pub fn write_codex_config(&self, model: &ModelServer, extra: &str) -> PathBuf {
        let path = self.codex_home.join("config.toml");
        let text = format!(
            "model = \"scripted\"\nmodel_provider = \"mock\"\n\n\
             [model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n{extra}",
            model.openai_port
        );
        std::fs::write(&path, text).expect("write codex config");
        path
    }

    /// The project's `.claude/settings.json` with one PreToolUse hook running `command`
    /// (tagged, `onFailure: block`, matcher [`GUARD_MATCHER`]), as Leopold wires it.
    pub fn wire_claude_hook(&self, command: &str) -> PathBuf {
        let dir = self.project.join(".claude");
        std::fs::create_dir_all(&dir).expect("create .claude");
        let path = dir.join("settings.json");
        let cfg = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": GUARD_MATCHER, "hooks": [
            {"type": "command", "command": format!("{command} # {GUARD_TAG}"), "timeout": 10,
             "onFailure": "block"}]}]}});
        std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).expect("write settings");
        path
    }

    /// The TOML to pass as `extra` to [`Sandbox::write_codex_config`] for one PreToolUse hook
    /// running `command`, tagged as Leopold wires it.
    pub fn codex_hook_toml(command: &str) -> String {
        let cmd = toml_string(&format!("{command} # {GUARD_TAG}"));
        format!(
            "\n[[hooks.PreToolUse]]\nmatcher = {}\n\n[[hooks.PreToolUse.hooks]]\n\
             type = \"command\"\ncommand = {cmd}\ntimeout = 10\n",
            toml_string(GUARD_MATCHER)
        )
    }

    /// `claude -p` with the headless flags of docs/harness-facts.md#5-headless-worker-invocations,
    /// the stub browser as its only
    /// MCP server and its tools allowed, in the project directory, hermetic env.
    pub fn claude_command(
        &self,
        claude: &Path,
        model: &ModelServer,
        browser: &StubBrowser,
        prompt: &str,
    ) -> Command {
        let mcp = self.write_claude_mcp_config(browser);
        let mut cmd = Command::new(claude);
        cmd.args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
            .arg("--mcp-config")
            .arg(&mcp)
            .args(["--strict-mcp-config", "--allowedTools"])
            .arg(format!("mcp__{}", browser.name));
        self.hermetic(&mut cmd, model);
        cmd
    }

    /// `codex exec` with the headless flags of docs/harness-facts.md#5-headless-worker-invocations
    /// and the stub browser given with
    /// `-c mcp_servers.<name>...` (no user file touched). Call [`Sandbox::write_codex_config`]
    /// first.
    pub fn codex_command(
        &self,
        codex: &Path,
        model: &ModelServer,
        browser: &StubBrowser,
        prompt: &str,
    ) -> Command {
        let mut cmd = Command::new(codex);
        cmd.args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
            "-C",
        ])
        .arg(&self.project);
        for c in browser.codex_overrides() {
            cmd.arg("-c").arg(c);
        }
        cmd.arg(prompt);
        self.hermetic(&mut cmd, model);
        cmd
    }

    /// `harness`'s headless command ([`Sandbox::claude_command`] / [`Sandbox::codex_command`])
    /// with `hook`, if any, wired as its PreToolUse hook as Leopold wires it
    /// ([`Sandbox::wire_claude_hook`] / [`Sandbox::codex_hook_toml`]). For Codex it writes the
    /// config pointing at the scripted model, hook or not.
    pub fn harness_command(
        &self,
        harness: Harness,
        bin: &Path,
        model: &ModelServer,
        browser: &StubBrowser,
        prompt: &str,
        hook: Option<&str>,
    ) -> Command {
        match harness {
            Harness::Claude => {
                if let Some(hook) = hook {
                    self.wire_claude_hook(hook);
                }
                self.claude_command(bin, model, browser, prompt)
            }
            Harness::Codex => {
                let extra = hook.map(Sandbox::codex_hook_toml).unwrap_or_default();
                self.write_codex_config(model, &extra);
                self.codex_command(bin, model, browser, prompt)
            }
        }
    }

    /// Applies the hermetic environment and working directory to `cmd`; stdin is closed.
    pub fn hermetic(&self, cmd: &mut Command, model: &ModelServer) {
        cmd.env_clear()
            .envs(self.env(model))
            // `persona run` boxes the harness: the stub browser it starts inside writes its call
            // log here (test-only knob; the browser moves outside the box with its MCP relay).
            .env("__LEOPOLD_BOX_RW", &self.logs)
            .current_dir(&self.project)
            .stdin(Stdio::null());
    }

    /// `leopold persona run <flow> --harness <harness> --project <project> --harness-bin <cli>`,
    /// [`Sandbox::hermetic`] with `model`: the caller adds the browser (`--mcp-config`).
    pub fn persona_run(
        &self,
        leopold: &Path,
        flow: &str,
        harness: Harness,
        cli: &Path,
        model: &ModelServer,
    ) -> Command {
        let mut cmd = Command::new(leopold);
        cmd.args(["persona", "run", flow, "--harness", harness.as_str()])
            .arg("--project")
            .arg(&self.project)
            .arg("--harness-bin")
            .arg(cli);
        self.hermetic(&mut cmd, model);
        cmd
    }

    /// `leopold persona recover --project <project>`, [`Sandbox::hermetic`] with `model`, run to
    /// its end (30 s at most).
    pub fn persona_recover(&self, leopold: &Path, model: &ModelServer) -> Run {
        let mut recover = Command::new(leopold);
        recover
            .args(["persona", "recover", "--project"])
            .arg(&self.project);
        self.hermetic(&mut recover, model);
        run_bounded(recover, Duration::from_secs(30))
    }

    /// Copies `flow` into `<project>/flows/` and writes `.leopold/persona/ACTIVE.json` naming it,
    /// as a running supervisor would: the guard is then in force for this project.
    pub fn activate_flow(&self, flow: &Path, harness: Harness) -> PathBuf {
        let name = flow.file_name().expect("flow file name");
        let flows = self.project.join("flows");
        std::fs::create_dir_all(&flows).expect("create flows dir");
        std::fs::copy(flow, flows.join(name)).expect("copy flow");
        let state = self.persona_dir();
        std::fs::create_dir_all(&state).expect("create .leopold/persona");
        let flow_name = flow
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("flow")
            .to_owned();
        let active = serde_json::json!({
            "version": 1,
            "active": true,
            "run_id": format!("e2e-{}", std::process::id()),
            "flow": flow_name,
            "flow_path": format!("flows/{}", name.to_string_lossy()),
            "harness": harness.as_str(),
            "supervisor_pid": std::process::id(),
            "started_at": "2026-01-01T00:00:00Z",
        });
        let path = state.join("ACTIVE.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&active).unwrap()).expect("ACTIVE.json");
        path
    }

    /// `<project>/.leopold/persona`.
    pub fn persona_dir(&self) -> PathBuf {
        self.project.join(".leopold/persona")
    }

    /// The single run directory under `<project>/.leopold/persona/runs` (a `persona run` has
    /// ended and archived its journal there).
    ///
    /// # Panics
    /// No runs directory, or not exactly one run in it.
    pub fn run_dir(&self) -> PathBuf {
        let runs = self.persona_dir().join("runs");
        let dirs: Vec<PathBuf> = std::fs::read_dir(&runs)
            .unwrap_or_else(|e| panic!("{}: {e}", runs.display()))
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "run dirs: {dirs:?}");
        dirs[0].clone()
    }

    /// The single run's journal actions (header skipped) and its `run.json`.
    pub fn run_journal(&self) -> (Vec<Value>, Value) {
        let dir = self.run_dir();
        let actions = read_jsonl(&dir.join("journal.jsonl"))
            .into_iter()
            .filter(|l| l.get("leopold_journal").is_none())
            .collect();
        let run_json = serde_json::from_slice(
            &std::fs::read(dir.join("run.json")).expect("run.json archived"),
        )
        .unwrap();
        (actions, run_json)
    }

    /// `<project>/.leopold/persona/events.jsonl`, the guard's record of each deny.
    pub fn events_path(&self) -> PathBuf {
        self.persona_dir().join("events.jsonl")
    }

    /// Every guard event of the project, as text: `events.jsonl` (the guard's own without the
    /// box, and the supervisor's `persona_*` lines), then each boxed run's own
    /// `runs/<run_id>/events.jsonl` (its worker's denials and its proof's), by run id.
    pub fn events_text(&self) -> String {
        let mut files = vec![self.events_path()];
        let mut runs: Vec<PathBuf> = std::fs::read_dir(self.persona_dir().join("runs"))
            .map(|d| d.flatten().map(|e| e.path().join("events.jsonl")).collect())
            .unwrap_or_default();
        runs.sort();
        files.extend(runs);
        files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .collect()
    }

    /// The guard's event lines ([`Sandbox::events_text`]).
    pub fn events(&self) -> Vec<Value> {
        self.events_text()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The guard's `events.jsonl` lines after a `persona run`, split into the supervisor's
    /// pre-launch proof of the wired guard (a synthetic `mcp__leopold_proof__*` call, which the
    /// guard records too) and the denials of the persona's own calls.
    pub fn run_events(&self) -> (Vec<Value>, Vec<Value>) {
        self.events().into_iter().partition(|e| {
            e["tool"]
                .as_str()
                .is_some_and(|t| t.starts_with("mcp__leopold_proof__"))
        })
    }

    /// `text` with this machine's paths rewritten: the sandbox root becomes `/home/user/sandbox`,
    /// binary directories `/home/user/bin`.
    pub fn scrub(&self, text: &str, bins: &[&Path]) -> String {
        let root = self.root.to_string_lossy().into_owned();
        let mut out = text.replace(&root, "/home/user/sandbox");
        // Claude names per-project folders after the path with `/` and `.` as `-`.
        let slug = root.replace(['/', '.'], "-");
        out = out.replace(&slug, "-home-user-sandbox");
        for b in bins {
            if let Some(dir) = b.parent() {
                let dir = dir.to_string_lossy().into_owned();
                if dir.len() > 1 {
                    out = out.replace(&dir, "/home/user/bin");
                }
            }
        }
        out
    }

    /// Runs `cmd` to completion in its own process group, capturing stdout and stderr; kills the
    /// group and panics (with both outputs) if it takes longer than `timeout`.
    pub fn run(&self, cmd: Command, timeout: Duration) -> Run {
        run_bounded(cmd, timeout)
    }
}

/// The text of a tool result's content: a string, or the `text` of each block, joined.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|b| {
                b["text"]
                    .as_str()
                    .map_or_else(|| b.to_string(), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// True if any string anywhere in `v` (keys excluded) contains `needle`.
pub fn any_string_contains(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(a) => a.iter().any(|x| any_string_contains(x, needle)),
        Value::Object(o) => o.values().any(|x| any_string_contains(x, needle)),
        _ => false,
    }
}

/// The median of `v` (the upper one of an even count), sorting `v`: the benchmarks' figure.
pub fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The `mcp_tool_call` items Codex completed, from its `exec --json` stream lines: a call its
/// hook denied leaves none.
pub fn codex_mcp_tool_calls(lines: &[Value]) -> impl Iterator<Item = &Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "item.completed" && l["item"]["type"] == "mcp_tool_call")
        .map(|l| &l["item"])
}

/// `p` single-quoted for `sh` (as a hook command's program).
pub fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', "'\\''"))
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).expect("string")
}

/// Runs `cmd` in its own process group with a deadline; see [`Sandbox::run`].
pub fn run_bounded(mut cmd: Command, timeout: Duration) -> Run {
    use std::os::unix::process::CommandExt as _;
    let desc = format!("{cmd:?}");
    let start = Instant::now();
    let mut child = cmd
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {desc}: {e}"));
    let pid = child.id();
    // Read both pipes on their own threads so the child never blocks on a full pipe.
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if start.elapsed() > timeout {
            kill_group(pid);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    // The harness may leave grandchildren (MCP servers) holding the pipes: reap the group.
    kill_group(pid);
    let run = Run {
        command: desc,
        status: status.unwrap_or_default(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        elapsed,
    };
    assert!(
        status.is_some(),
        "timed out after {timeout:?}; group killed\n{run}"
    );
    run
}

pub(crate) fn kill_group(pid: u32) {
    // `kill -KILL -<pgid>`: the group we created for this child, and only it.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

/// Writes a real stream as `tests/fixtures/<name>` when `LEOPOLD_RECORD_FIXTURES=1` (paths
/// already scrubbed by the caller). Returns whether it wrote. Recording is opt-in so a test run
/// never dirties the tree.
pub fn record_fixture(name: &str, text: &str) -> bool {
    if std::env::var_os("LEOPOLD_RECORD_FIXTURES").is_none_or(|v| v != "1") {
        return false;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    std::fs::create_dir_all(&dir).expect("fixtures dir");
    std::fs::write(dir.join(name), text).expect("write fixture");
    true
}

/// Appends `{"scenario","harness","secs"}` to the file named by `LEOPOLD_E2E_TIMINGS`, if set:
/// the per-scenario wall times BENCHMARKS.md reports. One write per line (tests may run at once).
pub fn note_timing(scenario: &str, harness: Harness, elapsed: Duration) {
    let Some(path) = std::env::var_os("LEOPOLD_E2E_TIMINGS") else {
        return;
    };
    let line = serde_json::json!({"scenario": scenario, "harness": harness.as_str(),
        "secs": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0});
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes());
    }
}

/// A finished harness run.
pub struct Run {
    /// The command, for messages.
    pub command: String,
    /// How it exited.
    pub status: ExitStatus,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
}

impl Run {
    /// stdout parsed as JSON lines (lines that are not JSON are skipped).
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "command: {}\nstatus: {}\nelapsed: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// The stub MCP browser as a harness launches it.
#[derive(Debug, Clone)]
pub struct StubBrowser {
    /// The MCP server name (tools are `mcp__<name>__<tool>`).
    pub name: String,
    /// The `leopold-stub-browser` binary.
    pub bin: PathBuf,
    /// Its `tools/call` log.
    pub log: PathBuf,
}

impl StubBrowser {
    /// Every `tools/call` the stub received: `{"ts_ms","tool","arguments"}`.
    pub fn calls(&self) -> Vec<Value> {
        read_jsonl(&self.log)
    }

    /// `(tool, arguments)` of every `tools/call` the stub received, in order.
    pub fn seen(&self) -> Vec<(String, Value)> {
        self.calls()
            .iter()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap_or("").to_owned(),
                    c["arguments"].clone(),
                )
            })
            .collect()
    }

    /// The `-c` overrides that give Codex this server
    /// (docs/harness-facts.md#8-a-real-browser-playwright-mcp-and-chromium).
    pub fn codex_overrides(&self) -> Vec<String> {
        vec![
            format!(
                "mcp_servers.{}.command={}",
                self.name,
                toml_string(&self.bin.to_string_lossy())
            ),
            format!(
                "mcp_servers.{}.args=[\"--log\",{}]",
                self.name,
                toml_string(&self.log.to_string_lossy())
            ),
        ]
    }

    /// A Claude `--mcp-config` document for this server.
    pub fn claude_mcp_config(&self) -> Value {
        serde_json::json!({"mcpServers": {self.name.clone(): {
            "type": "stdio", "command": self.bin, "args": ["--log", self.log]}}})
    }
}

/// Starts the kit server `name` with `args` and `--port-file <port_file>`, and waits (10 s at
/// most) for the port file it writes atomically once bound: the child and the file's JSON.
fn start_serving<'a>(
    name: &str,
    args: impl IntoIterator<Item = &'a std::ffi::OsStr>,
    port_file: &Path,
) -> (Child, Value) {
    let _ = std::fs::remove_file(port_file);
    let mut child = Command::new(kit_bin(name))
        .args(args)
        .arg("--port-file")
        .arg(port_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {name}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(port_file) {
            if let Ok(v) = serde_json::from_str(&text) {
                return (child, v);
            }
        }
        if let Some(st) = child.try_wait().expect("wait") {
            panic!("{name} exited early: {st}");
        }
        assert!(
            Instant::now() < deadline,
            "{name} wrote no port file in 10 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A running `leopold-scripted-model`; killed on drop.
pub struct ModelServer {
    child: Child,
    /// The Anthropic Messages port on 127.0.0.1.
    pub anthropic_port: u16,
    /// The OpenAI Responses port on 127.0.0.1.
    pub openai_port: u16,
    /// The request log (JSON lines).
    pub log: PathBuf,
}

impl ModelServer {
    /// Writes `script` into the sandbox and starts the server on free ports.
    pub fn start(sb: &Sandbox, script: &script::Script) -> ModelServer {
        let script_path = sb.logs.join("script.json");
        std::fs::write(&script_path, serde_json::to_vec_pretty(script).unwrap())
            .expect("write script");
        Self::start_with(&script_path, &sb.logs)
    }

    /// Starts the server on `script_path`, with its log and port file in `dir`.
    pub fn start_with(script_path: &Path, dir: &Path) -> ModelServer {
        Self::spawn(script_path, dir, None)
    }

    /// Starts a server answering every model call with `status` (401: the key refused; 404: no
    /// such model), as a real endpoint would.
    pub fn start_answering(sb: &Sandbox, status: u16) -> ModelServer {
        let script_path = sb.logs.join("script.json");
        std::fs::write(
            &script_path,
            serde_json::to_vec_pretty(&script::Script::default()).unwrap(),
        )
        .expect("write script");
        Self::spawn(&script_path, &sb.logs, Some(status))
    }

    fn spawn(script_path: &Path, dir: &Path, status: Option<u16>) -> ModelServer {
        let log = dir.join("model-requests.jsonl");
        let port_file = dir.join("model-ports.json");
        let status = status.map(|s| s.to_string());
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "--script".as_ref(),
            script_path.as_os_str(),
            "--log".as_ref(),
            log.as_os_str(),
        ];
        if let Some(s) = &status {
            args.push(std::ffi::OsStr::new("--status"));
            args.push(std::ffi::OsStr::new(s.as_str()));
        }
        let (child, ports) = start_serving("leopold-scripted-model", args, &port_file);
        let port = |k: &str| {
            ports[k]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap()
        };
        ModelServer {
            anthropic_port: port("anthropic"),
            openai_port: port("openai"),
            child,
            log,
        }
    }

    /// Every request the model received, in order.
    pub fn requests(&self) -> Vec<Value> {
        read_jsonl(&self.log)
    }

    /// True once the model has received a request carrying `n` tool results or more: the
    /// worker is past its `n`th turn.
    pub fn has_tool_results(&self, n: u64) -> bool {
        self.requests()
            .iter()
            .any(|r| r["tool_results"].as_u64() >= Some(n))
    }

    /// The text of every tool result in the most complete request the model received (the one
    /// carrying the most results), in conversation order: Anthropic `tool_result` blocks, OpenAI
    /// `*call_output` items. A denied call's result holds the hook's reason as the harness put it.
    pub fn tool_results(&self) -> Vec<String> {
        let reqs = self.requests();
        let Some(last) = reqs
            .iter()
            .filter(|r| r["tool_results"].is_u64())
            .max_by_key(|r| r["tool_results"].as_u64())
        else {
            return Vec::new();
        };
        let body = &last["body"];
        if body["messages"].is_array() {
            script::anthropic_tool_result_blocks(body)
                .map(|b| text_of(&b["content"]))
                .collect()
        } else {
            script::openai_tool_output_items(body)
                .map(|i| text_of(&i["output"]))
                .collect()
        }
    }

    /// True if any request the model received contains `needle` anywhere in its body (e.g. the
    /// guard's reason in a tool result).
    pub fn received(&self, needle: &str) -> bool {
        self.requests()
            .iter()
            .any(|r| any_string_contains(&r["body"], needle))
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::{read_jsonl, Harness, HarnessKit};

    fn args(a: &[&str]) -> Option<(usize, Vec<Harness>)> {
        Harness::bench_args(a.iter().map(|s| (*s).to_owned()), 3)
    }

    #[test]
    fn bench_args_take_rounds_and_harnesses_and_refuse_the_rest() {
        assert_eq!(args(&[]), Some((3, Harness::ALL.to_vec())));
        assert_eq!(
            args(&["--harness", "codex", "--rounds", "7"]),
            Some((7, vec![Harness::Codex]))
        );
        for bad in [
            &["--rounds", "0"][..],
            &["--rounds", "x"],
            &["--rounds"],
            &["--harness", "gemini"],
            &["--bogus", "1"],
        ] {
            assert_eq!(args(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn read_jsonl_leaves_a_line_still_being_written_and_refuses_a_whole_bad_one() {
        let (dir, p) = super::temp_file("log.jsonl", "{\"a\":1}\r\n\n{\"b\":2}\n{\"c\":");
        let got = read_jsonl(&p);
        assert_eq!(
            got,
            vec![serde_json::json!({"a":1}), serde_json::json!({"b":2})]
        );
        std::fs::write(&p, "{\"a\":1}\n{\"c\":\n").unwrap();
        let torn = std::panic::catch_unwind(|| read_jsonl(&p));
        assert!(
            torn.is_err(),
            "a whole line that is not JSON must fail the test"
        );
        assert!(read_jsonl(&dir.path().join("missing")).is_empty());
    }
}
