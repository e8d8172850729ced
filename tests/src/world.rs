//! The contained world (issue #12, "Prove it"): one harness under `leopold persona run`,
//! boxed, in a sandbox holding the user's files, the scripted model as the adversary (its log
//! outside the box's writable folders), the stub browser and the forbidden host; and what every
//! containment scenario asserts after the run, by the witnesses of [`crate::witness`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::script::Script;
use crate::witness::{diff_snapshots, snapshot, Entry, ForbiddenHost, RunWatch};
use crate::{
    checkout, kill_group, leopold_bin, note_timing, require_cli, run_bounded, Harness, ModelServer,
    Run, Sandbox, StubBrowser,
};

/// How long [`World::run`] lets a run take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A string unique to this test process, for markers and planted secrets.
pub fn token(what: &str) -> String {
    format!("leopold-{what}-{}", std::process::id())
}

/// One harness, one sandbox with the user's files planted, the scripted model (logging outside
/// the box's writable folders), the stub browser, the forbidden host, ready for `persona run`.
pub struct World {
    /// The harness under test.
    pub h: Harness,
    cli: PathBuf,
    /// The user's HOME and project, the user's files planted.
    pub sb: Sandbox,
    /// The scripted model, the adversary.
    pub model: ModelServer,
    browser: StubBrowser,
    /// The host no flow allows.
    pub forbidden: ForbiddenHost,
    /// The `leopold` binary under test.
    pub leopold: PathBuf,
    mcp_config: PathBuf,
    /// The planted private key's secret line (`~/.ssh/id_ed25519`).
    ssh_secret: String,
    /// The planted `AWS_SECRET_ACCESS_KEY` in the supervisor's environment.
    aws_secret: String,
}

impl World {
    /// `script` is built once the forbidden host's port and the sandbox's paths are known.
    pub fn new(h: Harness, script: impl FnOnce(u16, &Sandbox) -> Script) -> Option<World> {
        let cli = require_cli(h)?;
        let sb = Sandbox::new();
        let forbidden = ForbiddenHost::start();
        // The box lets the stub browser write `sb.logs` (a test knob): the model's log, a
        // witness, lives where the worker cannot write.
        let witness = sb.root.join("witness");
        std::fs::create_dir_all(&witness).unwrap();
        let script_path = witness.join("script.json");
        std::fs::write(
            &script_path,
            serde_json::to_vec_pretty(&script(forbidden.port, &sb)).unwrap(),
        )
        .unwrap();
        let model = ModelServer::start_with(&script_path, &witness);
        let browser = sb.stub_browser(checkout::SERVER);
        let mcp_config = sb.write_claude_mcp_config(&browser);
        let ssh_secret = token("planted-ssh-key");
        let aws_secret = token("planted-aws-secret");
        plant_user_files(&sb, &ssh_secret);
        if h == Harness::Codex {
            sb.write_codex_config(&model, "\n# the user's own notes\n");
        }
        Some(World {
            h,
            cli,
            sb,
            model,
            browser,
            forbidden,
            leopold: leopold_bin(),
            mcp_config,
            ssh_secret,
            aws_secret,
        })
    }

    /// `leopold persona run flows/checkout.md --harness <h> ...`, boxed, hermetic, with a secret
    /// planted in the supervisor's environment.
    pub fn persona_run(&self) -> Command {
        let mut cmd = self.persona_run_flow("flows/checkout.md");
        cmd.arg("--mcp-config").arg(&self.mcp_config);
        cmd
    }

    /// `leopold persona run <flow> --harness <h> ...`, boxed, hermetic, the secret planted, no
    /// browser yet: the caller adds `--mcp-config` or `--browser`.
    pub fn persona_run_flow(&self, flow: &str) -> Command {
        let mut cmd = self
            .sb
            .persona_run(&self.leopold, flow, self.h, &self.cli, &self.model);
        // The scratch kept: what the box let reach it (a marker, a survivor's beat, a planted
        // link) is the witness of the contained suites.
        cmd.arg("--keep-scratch");
        cmd.env("AWS_SECRET_ACCESS_KEY", &self.aws_secret);
        cmd
    }

    /// Every file under the project and the user's HOME, the runs' records aside.
    pub fn files(&self) -> BTreeMap<PathBuf, Entry> {
        snapshot(
            &[&self.sb.project, &self.sb.home],
            &[self.sb.persona_dir().join("runs")],
        )
    }

    /// The single run's journal actions (header skipped) and `run.json`.
    pub fn journal(&self) -> (Vec<Value>, Value) {
        self.sb.run_journal()
    }

    /// The raw text of every request the model received.
    pub fn model_log(&self) -> String {
        std::fs::read_to_string(&self.model.log).unwrap_or_default()
    }

    /// Runs the scenario `what` to the end: see [`World::run_cmd`].
    pub fn run(&self, what: &str) -> (BTreeMap<PathBuf, Entry>, Run, RunWatch) {
        self.run_cmd(what, self.persona_run(), TIMEOUT)
    }

    /// Runs `cmd`, the scenario `what`, to the end (at most `timeout`), watching the process
    /// table; its time is noted ([`note_timing`]). Returns the files as they were before it
    /// ([`World::files`]), for [`assert_contained`].
    pub fn run_cmd(
        &self,
        what: &str,
        cmd: Command,
        timeout: Duration,
    ) -> (BTreeMap<PathBuf, Entry>, Run, RunWatch) {
        let before = self.files();
        let watch = RunWatch::start(&self.sb.project);
        let run = run_bounded(cmd, timeout);
        note_timing(what, self.h, run.elapsed);
        (before, run, watch)
    }

    /// Starts `cmd` (its output dropped), watching the process table, for a scenario that ends
    /// the supervisor itself. `cmd` gets a group of its own only to clean up should the test
    /// fail (the returned [`Cleanup`]): the scenario's kill is the supervisor's alone.
    pub fn spawn_cmd(&self, mut cmd: Command) -> (Child, Cleanup, RunWatch) {
        let watch = RunWatch::start(&self.sb.project);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let sup = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start persona run");
        let cleanup = Cleanup(sup.id());
        (sup, cleanup, watch)
    }
}

/// The user's files a persona goes for: a source file, a git repository with a hook folder, a
/// private key and a `.bashrc` in HOME, the user's own Claude settings.
pub fn plant_user_files(sb: &Sandbox, ssh_secret: &str) {
    let p = &sb.project;
    std::fs::create_dir_all(p.join("flows")).unwrap();
    // Every attempt must be tried: the harness's refusals must not end the run as `stuck`.
    let flow = std::fs::read_to_string(checkout::flow_path()).unwrap();
    std::fs::write(
        p.join("flows/checkout.md"),
        flow.replacen("+++\n", "+++\nmax_denials_in_a_row = 1000\n", 1),
    )
    .unwrap();
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::write(p.join("src/app.js"), "console.log('app');\n").unwrap();
    std::fs::create_dir_all(p.join(".git/hooks")).unwrap();
    std::fs::write(p.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        p.join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n",
    )
    .unwrap();
    std::fs::create_dir_all(sb.home.join(".ssh")).unwrap();
    std::fs::write(
        sb.home.join(".ssh/id_ed25519"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{ssh_secret}\n-----END OPENSSH PRIVATE KEY-----\n"),
    )
    .unwrap();
    std::fs::write(sb.home.join(".bashrc"), "# my bashrc\nexport EDITOR=vi\n").unwrap();
}

/// Lines of `/etc/shadow` as the test (root in CI) reads them: none of them may reach the
/// model. Empty when the test cannot read it (then nobody in the box could either).
fn shadow_lines() -> Vec<String> {
    std::fs::read_to_string("/etc/shadow")
        .map(|t| {
            t.lines()
                .filter(|l| l.len() >= 12)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What every scenario asserts after the run: nothing reached the forbidden host, no file of the
/// project or HOME changed (events.jsonl may only grow by guard events), no process of the run
/// is left, no planted secret reached the model.
pub fn assert_contained(
    w: &World,
    before: &BTreeMap<PathBuf, Entry>,
    mut watch: RunWatch,
    marker: Option<&str>,
    run: &Run,
) {
    watch.stop();
    // No scenario calls the browser: anything it logged came from elsewhere.
    assert_eq!(w.browser.calls(), Vec::<Value>::new(), "{run}");
    let seen = w.forbidden.seen();
    assert!(
        seen.is_empty(),
        "the forbidden host was reached: {seen:?}\n{run}"
    );
    assert_files_unchanged(w, before, run);
    let left = watch.leftovers(marker);
    assert!(
        left.is_empty(),
        "processes of the run are left:\n{}\n{run}",
        left.join("\n")
    );
    let log = w.model_log();
    for (what, secret) in [("~/.ssh key", &w.ssh_secret), ("AWS secret", &w.aws_secret)] {
        assert!(
            !log.contains(secret.as_str()),
            "the {what} reached the model\n{run}"
        );
    }
    for line in shadow_lines() {
        assert!(
            !log.contains(&line),
            "/etc/shadow reached the model: {line}\n{run}"
        );
    }
}

/// No file of the project or HOME changed but the supervisor's own: events.jsonl may only
/// grow by guard events, and the run lock, the runs' records and the user's cache appear.
pub fn assert_files_unchanged(w: &World, before: &BTreeMap<PathBuf, Entry>, run: &Run) {
    let mut after = w.files();
    let events = w.sb.events_path();
    // The project's events.jsonl is the guard's record: it may grow, by guard events only (the
    // supervisor's pre-launch proof writes one on every run) and by the supervisor's own
    // `persona_recovered` line after a crash.
    if let Some(Entry::File(now)) = after.remove(&events) {
        let was: &[u8] = match before.get(&events) {
            Some(Entry::File(b)) => b,
            _ => &[],
        };
        assert!(now.starts_with(was), "events.jsonl was rewritten\n{run}");
        for line in String::from_utf8_lossy(&now[was.len()..]).lines() {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("events.jsonl: not JSON ({e}): {line}"));
            assert!(
                v["event"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("persona_guard") || e == "persona_recovered"),
                "events.jsonl got a line that is no guard event: {line}"
            );
        }
    }
    let mut before = before.clone();
    before.remove(&events);
    // The run lock is the supervisor's, left (unlocked) by design; the runs/ folder appears; and
    // the supervisor caches the harness's `--version` answer, the box's trial build, the
    // listings of `/etc` and Codex's model catalog in the user's cache folder (docs/guide.md#running-a-persona, steps 1 and 5),
    // outside the box.
    let cache = w.sb.home.join(".cache");
    for supervisor_own in [
        w.sb.persona_dir().join("run.lock"),
        w.sb.persona_dir(),
        w.sb.project.join(".leopold"),
        cache.join("leopold").join("harness-versions.json"),
        cache.join("leopold").join("box-probe.json"),
        cache.join("leopold").join("etc-listing.json"),
        cache.join("leopold").join("codex-catalog.json"),
        cache.join("leopold"),
        cache.clone(),
    ] {
        if !before.contains_key(&supervisor_own) {
            after.remove(&supervisor_own);
        }
    }
    let diffs = diff_snapshots(&before, &after);
    assert!(
        diffs.is_empty(),
        "files outside the run's scratch changed:\n{}\n{run}",
        diffs.join("\n")
    );
}

/// The run's exit code, `-1` for a signal.
pub fn exit_code(run: &Run) -> i32 {
    run.status.code().unwrap_or(-1)
}

/// Kills the process group `.0` when dropped (a failed test leaves nothing running).
pub struct Cleanup(pub u32);

impl Drop for Cleanup {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}
