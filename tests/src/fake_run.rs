//! Driving `leopold` with the fake worker (`leopold-fake-worker`) in a [`Sandbox`]: the
//! supervisor's lifecycle tests. The sandbox gets the user's own files (a Claude settings file,
//! a Codex config, both with formatting and keys Leopold must keep) whose exact bytes the tests
//! compare afterwards, a flow, and the fake worker's script and record.
//!
//! The `leopold` binary is passed in by the caller (`env!("CARGO_BIN_EXE_leopold")` in the
//! supervisor's own tests), so a test always runs the binary cargo built for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::Sandbox;

/// The user's `.claude/settings.json`: a permission, a hook of their own, an unknown key, odd
/// spacing. Leopold must leave it byte for byte.
pub const CLAUDE_SETTINGS: &str = "{\n  \"permissions\": {\"allow\": [\"Read\"]},\n    \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"true\"}]}]},\n  \"zz_unknown\": [1,2,   3]\n}\n";
/// The user's `$CODEX_HOME/config.toml`, with comments Leopold must keep.
pub const CODEX_CONFIG: &str = "# my codex config\nmodel = \"o3\"   # keep this comment\n\n[mcp_servers.other]\ncommand = \"x\"\n";

/// The checkout flow the lifecycle tests run (`<root>/checkout.md`).
pub const FLOW: &str = "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\", \"accounts.example.com\"]\nstart_url = \"https://staging.example.com/\"\n\n[irreversible]\nforbid = [\"payment\", \"deletion\"]\nclick_labels = [\"(?i)place order\"]\nurl_paths = [\"/checkout/confirm\"]\n+++\n# Checkout\n\nWalk the checkout; never place the order.\n";

impl Sandbox {
    /// A sandbox holding the user's files ([`CLAUDE_SETTINGS`] in the project, [`CODEX_CONFIG`]
    /// in `CODEX_HOME`) and the flow [`FLOW`] at [`Sandbox::flow`].
    pub fn with_user_files() -> Sandbox {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.project.join(".claude")).expect("create .claude");
        std::fs::write(sb.project.join(".claude/settings.json"), CLAUDE_SETTINGS)
            .expect("write settings");
        std::fs::write(sb.codex_home.join("config.toml"), CODEX_CONFIG).expect("write config");
        std::fs::write(sb.flow(), FLOW).expect("write flow");
        sb
    }

    /// [`Sandbox::with_user_files`] with `script` as the fake worker's script.
    pub fn scripted(script: &str) -> Sandbox {
        let sb = Sandbox::with_user_files();
        sb.set_script(script);
        sb
    }

    /// [`Sandbox::with_user_files`] whose runs pass `--no-contain`: for the tests that pin the
    /// supervisor's own process handling (process group, grace period, leaked output), which the
    /// box replaces by killing its PID namespace whole.
    pub fn unboxed() -> Sandbox {
        Sandbox {
            unboxed: true,
            ..Sandbox::with_user_files()
        }
    }

    /// `<root>/checkout.md`.
    pub fn flow(&self) -> PathBuf {
        self.root.join("checkout.md")
    }

    /// The fake worker's own folder (its script, its record, its results): the one place
    /// outside the box's scratch that the box lets it write (`__LEOPOLD_BOX_RW`), apart from the
    /// project and HOME whose bytes the tests compare.
    pub fn kit(&self) -> PathBuf {
        self.root.join("kit")
    }

    /// The fake worker's script (`FAKE_WORKER_SCRIPT`).
    pub fn script(&self) -> PathBuf {
        self.kit().join("script.txt")
    }

    /// Where the fake worker records its argv, pid, group, cwd (`FAKE_WORKER_RECORD`).
    pub fn record(&self) -> PathBuf {
        self.kit().join("worker.json")
    }

    /// Where the fake worker's adversary directives write what they saw (JSON lines,
    /// `FAKE_WORKER_RESULTS`).
    pub fn results(&self) -> PathBuf {
        self.kit().join("results.jsonl")
    }

    /// The adversary's results, one value per line (none if it wrote none).
    pub fn results_lines(&self) -> Vec<serde_json::Value> {
        crate::read_jsonl(&self.results())
    }

    /// Whether a process the fake worker recorded (by the pid it saw, which inside the box is
    /// its pid in the box's PID namespace) is alive: found in the host's /proc by this sandbox's
    /// record path in its environment and its innermost pid (`NSpid`).
    pub fn proc_alive(&self, recorded: u32) -> bool {
        let needle = format!("FAKE_WORKER_RECORD={}", self.record().display());
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if !env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
                continue;
            }
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let inner = status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|v| v.split_whitespace().last())
                .and_then(|v| v.parse::<u32>().ok());
            if inner == Some(recorded) && alive(pid) {
                return true;
            }
        }
        false
    }

    /// The marker a paused supervisor creates (`__LEOPOLD_PAUSE_MARKER`).
    pub fn marker(&self) -> PathBuf {
        self.root.join("paused")
    }

    /// The state file of the run under way: `<project>/.leopold/persona/ACTIVE.json` (a
    /// `--no-contain` run's), else the first `active/<run_id>.json` (a boxed run's), else (none
    /// there) the path of ACTIVE.json.
    pub fn active(&self) -> PathBuf {
        let top = self.persona_dir().join("ACTIVE.json");
        if top.exists() {
            return top;
        }
        self.boxed_states().into_iter().next().unwrap_or(top)
    }

    /// The boxed runs' state files, `.leopold/persona/active/<run_id>.json`, by name.
    pub fn boxed_states(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(self.persona_dir().join("active"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        out.sort();
        out
    }

    /// Writes the fake worker's script.
    pub fn set_script(&self, text: &str) {
        std::fs::create_dir_all(self.kit()).expect("create the kit folder");
        std::fs::write(self.script(), text).expect("write script");
    }

    /// Every file under the project and HOME (except `.leopold/`), with its bytes.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let state = self.project.join(".leopold");
        for base in [&self.project, &self.home] {
            walk(base, &mut |p| {
                if !p.starts_with(&state) {
                    out.insert(p.to_path_buf(), std::fs::read(p).unwrap());
                }
            });
        }
        out
    }

    /// Every path under `.leopold/persona`, relative, with run ids replaced by `<run>`.
    pub fn persona_listing(&self) -> Vec<String> {
        let mut out = Vec::new();
        let base = self.persona_dir();
        walk(&base, &mut |p| {
            let rel = p.strip_prefix(&base).unwrap().display().to_string();
            let parts: Vec<&str> = rel.split('/').collect();
            let rel = if parts.len() >= 2 && parts[0] == "runs" {
                let mut v = parts.clone();
                v[1] = "<run>";
                v.join("/")
            } else {
                rel
            };
            out.push(rel);
        });
        out.sort();
        out
    }

    /// The run directories under `.leopold/persona/runs` (none if there is no such directory).
    pub fn run_dirs(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.persona_dir().join("runs")) {
            Ok(d) => d.flatten().map(|e| e.path()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The single run's `run.json`.
    pub fn run_json(&self) -> serde_json::Value {
        let p = self.run_dir().join("run.json");
        serde_json::from_str(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        )
        .unwrap()
    }

    /// The single run's `journal.jsonl`, header included.
    pub fn journal(&self) -> Vec<serde_json::Value> {
        let p = self.run_dir().join("journal.jsonl");
        std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// What the fake worker recorded about itself.
    pub fn worker_record(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.record()).unwrap()).unwrap()
    }

    /// `leopold <args>` in this sandbox: sealed HOME/CODEX_HOME, the fake worker's script.
    pub fn leopold_command(&self, leopold: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(leopold);
        cmd.args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("CODEX_HOME", &self.codex_home)
            // Leopold's own cache (the harness's `--version`), per sandbox and outside the HOME
            // whose bytes the tests compare.
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("FAKE_WORKER_SCRIPT", self.script())
            .env("FAKE_WORKER_RECORD", self.record())
            .env("FAKE_WORKER_RESULTS", self.results())
            // The box passes these in and binds the kit folder and the captures (test-only
            // knobs).
            .env(
                "__LEOPOLD_BOX_PASS_ENV",
                "FAKE_WORKER_SCRIPT,FAKE_WORKER_RECORD,FAKE_WORKER_RESULTS,FAKE_WORKER_VERSION",
            )
            .env("__LEOPOLD_BOX_RW", self.kit())
            .env(
                "__LEOPOLD_BOX_RO",
                crate::capture("x").parent().expect("captures folder"),
            )
            .env("__LEOPOLD_STOP_GRACE_MS", "300")
            .env_remove("LEOPOLD_RUN_ID")
            .env_remove("__LEOPOLD_PAUSE_AT")
            .env_remove("__LEOPOLD_PAUSE_MARKER")
            .stdin(Stdio::null());
        cmd
    }

    /// The MCP config every kit run gives its persona unless the caller or the flow gives a
    /// browser (a run with none is refused): the stub browser, as server `kitstub`, a name no
    /// test's stream uses (the gateway compares a stream's calls of its servers with its
    /// record). It starts only if the worker connects to it.
    pub fn stub_mcp_config(&self) -> PathBuf {
        let path = self.kit().join("kitstub-mcp.json");
        let stub = fake_worker().with_file_name("leopold-stub-browser");
        let cfg = serde_json::json!({"mcpServers": {"kitstub": {
            "type": "stdio", "command": stub, "args": ["--log", self.kit().join("kitstub-calls.jsonl")]}}});
        std::fs::create_dir_all(self.kit()).expect("create the kit folder");
        std::fs::write(&path, cfg.to_string()).expect("write the stub's MCP config");
        path
    }

    /// `leopold persona run <flow> --harness H --project P --harness-bin <fake worker> <extra…>`,
    /// with [`Sandbox::stub_mcp_config`] unless `extra` or the flow gives the persona a browser.
    pub fn persona_run_command(&self, leopold: &Path, harness: &str, extra: &[&str]) -> Command {
        self.persona_run_of(leopold, &self.flow(), harness, extra)
    }

    /// [`Sandbox::persona_run_command`] of `flow`, another flow than the sandbox's own.
    pub fn persona_run_of(
        &self,
        leopold: &Path,
        flow: &Path,
        harness: &str,
        extra: &[&str],
    ) -> Command {
        let bin = fake_worker().display().to_string();
        let mut args = Vec::new();
        if self.unboxed {
            args.push("--no-contain");
        }
        let browser_given = extra.iter().any(|a| {
            ["--mcp-config", "--browser"]
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
        }) || std::fs::read_to_string(flow)
            .is_ok_and(|f| f.lines().any(|l| l.trim_start().starts_with("browser")));
        let stub = (!browser_given).then(|| self.stub_mcp_config().display().to_string());
        if let Some(s) = &stub {
            args.extend(["--mcp-config", s.as_str()]);
        }
        args.extend_from_slice(extra);
        self.persona_run_with_bin_of(leopold, flow, harness, &bin, &args)
    }

    /// `leopold persona run <flow> --harness H --project P --harness-bin <bin> <extra…>`, as
    /// given: no browser and no `--no-contain` added.
    pub fn persona_run_with_bin(
        &self,
        leopold: &Path,
        harness: &str,
        bin: &str,
        extra: &[&str],
    ) -> Command {
        self.persona_run_with_bin_of(leopold, &self.flow(), harness, bin, extra)
    }

    /// [`Sandbox::persona_run_with_bin`] of `flow`.
    pub fn persona_run_with_bin_of(
        &self,
        leopold: &Path,
        flow: &Path,
        harness: &str,
        bin: &str,
        extra: &[&str],
    ) -> Command {
        let flow = flow.display().to_string();
        let project = self.project.display().to_string();
        let mut args = vec![
            "persona",
            "run",
            &flow,
            "--harness",
            harness,
            "--project",
            &project,
            "--harness-bin",
            bin,
        ];
        args.extend_from_slice(extra);
        self.leopold_command(leopold, &args)
    }

    /// Starts `persona run` paused at the lifecycle step `step` (`__LEOPOLD_PAUSE_AT`), its
    /// output discarded, and returns once the supervisor has reached it.
    pub fn spawn_paused_run(&self, leopold: &Path, harness: &str, step: &str) -> Child {
        let child = self
            .persona_run_command(leopold, harness, &[])
            .env("__LEOPOLD_PAUSE_AT", step)
            .env("__LEOPOLD_PAUSE_MARKER", self.marker())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(15, &format!("the supervisor to pause at {step}"), || {
            self.marker().exists()
        });
        child
    }

    /// Where the fake worker's `@grandchild` writes the grandchild's pid.
    pub fn grandchild_record(&self) -> PathBuf {
        PathBuf::from(format!("{}.grandchild", self.record().display()))
    }

    /// The pid of the fake worker's grandchild, once it has written it.
    pub fn grandchild_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.grandchild_record())
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    /// `leopold persona recover --project P`, run to completion.
    pub fn run_recover(&self, leopold: &Path) -> Output {
        let project = self.project.display().to_string();
        self.leopold_command(leopold, &["persona", "recover", "--project", &project])
            .output()
            .unwrap()
    }
}

/// The fake worker binary: `LEOPOLD_FAKE_WORKER` if set (`scripts/test.sh` builds it and sets
/// it), else `leopold-fake-worker` beside the running test's target directory. Never built from
/// here: a test that ran `cargo build` would race the build that started it.
///
/// # Panics
/// Neither is a file; the message says how to build it.
pub fn fake_worker() -> PathBuf {
    let p = match std::env::var_os("LEOPOLD_FAKE_WORKER").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => crate::bin_dir().join("leopold-fake-worker"),
    };
    assert!(
        p.is_file(),
        "the fake worker {} is missing: run ./scripts/test.sh, or build it with \
         `cargo build -p leopold-tests --bin leopold-fake-worker` (or set LEOPOLD_FAKE_WORKER)",
        p.display()
    );
    p
}

/// Calls `f` on every file under `dir`, recursively.
fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, f);
        } else {
            f(&p);
        }
    }
}

/// Polls `cond` every 10 ms until it holds or `secs` pass.
pub fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits `secs` at most for `child` to exit, and returns its output; kills it otherwise.
pub fn wait_output(child: Child, secs: u64) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            signal(pid, "KILL");
            panic!("leopold (pid {pid}) did not finish within {secs}s");
        }
    }
}

/// Sends `sig` (a name: `TERM`, `KILL`…) to `pid`.
pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

/// The pids of `pid`'s live children (a suite's runs' supervisors).
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|p| alive(*p))
        .collect()
}

/// Whether a process is alive (zombies count as gone: they run nothing).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .map(|(_, a)| !a.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Every folder under `/sys/fs/cgroup` named after the run (`leopold-<run_id>`, the box's
/// cgroup), a few levels down.
pub fn cgroups_of_run(run_id: &str) -> Vec<PathBuf> {
    let name = format!("leopold-{run_id}");
    let mut found = Vec::new();
    let mut stack = vec![(PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((d, depth)) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if e.file_name() == name.as_str() {
                    found.push(e.path());
                }
                if depth < 4 {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
    }
    found
}

/// Every live process whose environment carries this run id.
pub fn processes_of_run(run_id: &str) -> Vec<u32> {
    let needle = format!("LEOPOLD_RUN_ID={run_id}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) && alive(pid) {
                out.push(pid);
            }
        }
    }
    out
}

/// An output's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Requires `o` to have exited with `code`; the message shows both streams.
///
/// # Panics
/// Any other exit, or none (a signal).
#[track_caller]
pub fn assert_exit_code(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}{}", stdout(o), stderr(o));
}

/// Requires `text` to contain `needle`; the message shows the whole text.
///
/// # Panics
/// `needle` is not in `text`.
#[track_caller]
pub fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "{text}");
}

/// An output's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A line of Claude stream-json: an assistant `tool_use`.
pub fn claude_tool_use(id: &str, tool: &str, input: serde_json::Value) -> String {
    serde_json::json!({"type":"assistant","message":{"id":"m","type":"message","role":"assistant","content":[{"type":"tool_use","id":id,"name":tool,"input":input}]}}).to_string()
}

/// A line of Claude stream-json: a navigation to `url` on the stub browser.
pub fn claude_navigate(id: &str, url: &str) -> String {
    claude_tool_use(
        id,
        "mcp__personastub__navigate",
        serde_json::json!({ "url": url }),
    )
}

/// A line of Claude stream-json: the `tool_result` of a call that ran.
pub fn claude_tool_ok(id: &str) -> String {
    serde_json::json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":[{"type":"text","text":"ok"}]}]}}).to_string()
}

/// ACTIVE.json's `worker_pid`, once it is there.
pub fn active_worker_pid(sb: &Sandbox) -> Option<u32> {
    let text = std::fs::read_to_string(sb.active()).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["worker_pid"].as_u64().map(|p| p as u32)
}

/// What a finished boxed run leaves under `.leopold/persona/`: the inert lock file and the run
/// directory (its guard events, the proof's among them; the copy of its flow, the gateway's
/// record and the worker's MCP config for its browser, journal, report, final state; no
/// scratch).
pub const RUN_LISTING: [&str; 8] = [
    "run.lock",
    "runs/<run>/events.jsonl",
    "runs/<run>/flow.md",
    "runs/<run>/gateway.jsonl",
    "runs/<run>/journal.jsonl",
    "runs/<run>/mcp-relay.json",
    "runs/<run>/report.html",
    "runs/<run>/run.json",
];

/// [`RUN_LISTING`] for a `--no-contain` run: its guard writes the project's event log (the run
/// is alone in the project), not one of the run directory.
pub fn unboxed_run_listing() -> Vec<&'static str> {
    let mut l: Vec<&str> = RUN_LISTING
        .iter()
        .map(|f| match *f {
            "runs/<run>/events.jsonl" => "events.jsonl",
            f => f,
        })
        .collect();
    l.sort_unstable();
    l
}

/// The results of one op (`read`, `get`, ...) among the adversary's result lines, in order.
pub fn results_for<'a>(lines: &'a [serde_json::Value], op: &str) -> Vec<&'a serde_json::Value> {
    lines.iter().filter(|l| l["op"] == op).collect()
}
