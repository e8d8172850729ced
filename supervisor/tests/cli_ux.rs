//! The command line as a new user meets it (issue #11, "What a new user tripped over", items 6-7):
//! output that survives a closed pipe, errors with their exit code (as JSON under `--json`),
//! hints on their own line, the project found from a subfolder, `flow check`, `completions`,
//! and the commands agreeing with each other about wiring.
//!
//! Self-contained: a temporary HOME, CODEX_HOME and project per test, a fake `claude` shell
//! script that answers `--version` and prints a canned stream, the real `leopold` binary.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::kit::assert_has;

const LEOPOLD: &str = env!("CARGO_BIN_EXE_leopold");

const FLOW: &str =
    "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n+++\nWalk the shop.\n";
const BAD_REGEX_FLOW: &str = "+++\nname = \"x\"\nallowlist = [\"staging.example.com\"]\n\n[irreversible]\nclick_labels = [\"(?i)place (order\"]\n+++\n";

/// One navigation, completed: what Claude Code's `stream-json` prints for it.
const STREAM: &str = r#"{"type":"system","subtype":"init","session_id":"s"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"mcp__browser__navigate","input":{"url":"https://staging.example.com/"}}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}}
{"type":"result","subtype":"success","is_error":false,"result":"done"}
"#;

struct Sandbox {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

/// The browser every run here is given (a run with none is refused): an MCP server no test
/// starts (the fake `claude` only prints its stream), in `flows/`.
const MCP_CONFIG: &str = r#"{"mcpServers":{"kitstub":{"command":"/bin/false"}}}"#;

/// The arguments of [`Sandbox::run_checkout`].
fn checkout_args<'a>(bin: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    run_args("flows/checkout.md", bin, extra)
}

/// `persona run <flow>` under Claude with `bin` as the harness binary, then `extra`.
fn run_args<'a>(flow: &'a str, bin: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "persona",
        "run",
        flow,
        "--harness",
        "claude",
        "--harness-bin",
        bin,
        "--mcp-config",
        // Beside the flow, as the flow is given.
        if flow.contains('/') {
            "flows/mcp.json"
        } else {
            "mcp.json"
        },
    ];
    args.extend_from_slice(extra);
    args
}

fn sandbox() -> Sandbox {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = root.join("shop");
    std::fs::create_dir_all(project.join("flows")).unwrap();
    std::fs::write(project.join("flows/checkout.md"), FLOW).unwrap();
    std::fs::write(project.join("flows/mcp.json"), MCP_CONFIG).unwrap();
    Sandbox {
        _tmp: tmp,
        root,
        project,
    }
}

impl Sandbox {
    fn cmd(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(LEOPOLD);
        c.args(args)
            .current_dir(cwd)
            .env("HOME", &self.root)
            .env("CODEX_HOME", self.root.join("codex-home"))
            .env("PATH", "/usr/bin:/bin")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        c
    }

    fn run_in(&self, cwd: &Path, args: &[&str]) -> Output {
        self.cmd(cwd, args).output().unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_in(&self.project, args)
    }

    /// `leopold persona wire` of Claude's settings, with `bin` as the harness binary.
    fn wire_claude(&self, bin: &str) -> Output {
        self.run(&[
            "persona",
            "wire",
            "--harness",
            "claude",
            "--harness-bin",
            bin,
        ])
    }

    /// `persona run flows/checkout.md --harness claude --harness-bin <bin> <extra…>`.
    fn run_checkout(&self, bin: &str, extra: &[&str]) -> Output {
        self.run(&checkout_args(bin, extra))
    }

    /// A fake `claude`: `--version` says 2.1.332; otherwise it prints [`STREAM`] and exits 0.
    /// Installed as npm installs the real one (a `.bin` link into its package, which holds the
    /// stream too): the box takes in the package, never the folder beside it.
    fn fake_claude(&self) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let pkg = self.root.join("node_modules/@anthropic-ai/claude-code");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            "{\"name\":\"@anthropic-ai/claude-code\"}",
        )
        .unwrap();
        let stream = pkg.join("stream.jsonl");
        std::fs::write(&stream, STREAM).unwrap();
        let bin = self.root.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink("../@anthropic-ai/claude-code/cli.sh", bin.join("claude"))
            .unwrap();
        let p = pkg.join("cli.sh");
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\ncase \"$1\" in --version) echo '2.1.332 (Claude Code)'; exit 0;; esac\ncat '{}'\n",
                stream.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin.join("claude")
    }

    fn settings(&self) -> PathBuf {
        self.project.join(".claude/settings.json")
    }

    /// The project's Claude settings file, as text.
    fn settings_text(&self) -> String {
        std::fs::read_to_string(self.settings()).unwrap()
    }
}

/// The line of doctor's output its `settings` check printed.
fn settings_line(doctor: &Output) -> String {
    stdout(doctor)
        .lines()
        .find(|l| l.contains(" settings "))
        .unwrap_or_default()
        .to_owned()
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// The one JSON error line a `--json` command prints, checked for the documented shape.
fn json_error(out: &Output) -> serde_json::Value {
    let lines = json_lines(out);
    let errors: Vec<_> = lines.iter().filter(|v| v["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "one error line: {}", stdout(out));
    let e = errors[0].clone();
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["exit_code", "hints", "message", "type"], "{e}");
    assert_eq!(Some(e["exit_code"].as_i64().unwrap() as i32), code(out));
    assert!(e["hints"].is_array());
    e
}

// --- 1. Output: a closed stdout, errors with their codes, JSON errors -------------------------

/// Runs `args` with stdout a pipe whose reading end is already closed: every write gets EPIPE.
fn with_closed_stdout(sb: &Sandbox, args: &[&str]) -> Output {
    let (reader, writer) = rustix::pipe::pipe().unwrap();
    drop(reader);
    sb.cmd(&sb.project, args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_is_not_an_error_and_the_command_still_does_its_work() {
    let sb = sandbox();
    let out = with_closed_stdout(&sb, &["persona", "wire", "--harness", "claude"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert!(
        sb.settings_text().contains("leopold-persona-guard"),
        "wire finished its work although nobody read its output"
    );
    for args in [
        &["doctor"][..],
        &["doctor", "--json"],
        &["completions", "bash"],
        &["flow", "check", "flows/checkout.md"],
        &["persona", "unwire", "--harness", "all"],
        &["persona", "recover"],
    ] {
        let out = with_closed_stdout(&sb, args);
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(code(&out).is_some_and(|c| c <= 1), "{args:?}: {out:?}");
    }
    assert!(!sb.settings().exists(), "unwire finished too");
    // A run with nobody reading still runs, journals and unwires.
    let claude = sb.fake_claude();
    let out = with_closed_stdout(&sb, &checkout_args(claude.to_str().unwrap(), &[]));
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(!sb.settings().exists());
    assert!(!sb.project.join(".leopold/persona/ACTIVE.json").exists());
    // Its listing and its report, with nobody reading: success, and the report is written.
    let run_dir = std::fs::read_dir(sb.project.join(".leopold/persona/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(run_dir.join("report.html")).unwrap();
    let run_dir = run_dir.to_str().unwrap();
    for args in [
        &["persona", "runs"][..],
        &["persona", "runs", "--json"],
        &["persona", "report", run_dir],
    ] {
        let out = with_closed_stdout(&sb, args);
        assert_eq!(code(&out), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(Path::new(run_dir).join("report.html").is_file());
}

#[test]
fn a_missing_flow_is_one_clear_error_with_exit_2_and_json_under_json() {
    let sb = sandbox();
    let out = sb.run(&["persona", "run", "nope.md", "--harness", "claude"]);
    assert_eq!(code(&out), Some(2));
    let err = stderr(&out);
    assert_has(&err, "cannot read flow file nope.md");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert!(stdout(&out).is_empty());

    let out = sb.run(&["persona", "run", "nope.md", "--harness", "claude", "--json"]);
    let e = json_error(&out);
    assert_eq!(e["exit_code"], 2);
    assert!(e["message"].as_str().unwrap().contains("nope.md"), "{e}");
}

#[test]
fn every_json_command_prints_its_errors_in_the_one_shape() {
    let sb = sandbox();
    // persona run: harness not found (with a valid flow).
    let out = sb.run_checkout("/nonexistent/claude", &["--json"]);
    let e = json_error(&out);
    assert!(e["message"].as_str().unwrap().contains("not found"), "{e}");
    assert!(!e["hints"].as_array().unwrap().is_empty(), "{e}");
    // persona replay: unreadable input.
    let out = sb.run(&["persona", "replay", "nope.jsonl", "--json"]);
    assert_eq!(json_error(&out)["exit_code"], 2);
    // doctor: a project that does not exist.
    let out = sb.run(&["doctor", "--json", "--project", "/nonexistent/project"]);
    assert_eq!(json_error(&out)["exit_code"], 2);
    // flow check: its own per-file lines, then exit 2.
    std::fs::write(sb.project.join("bad.md"), BAD_REGEX_FLOW).unwrap();
    let out = sb.run(&["flow", "check", "--json", "flows/checkout.md", "bad.md"]);
    assert_eq!(code(&out), Some(2));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[0]["name"], "checkout");
    assert_eq!(lines[1]["ok"], false);
    assert!(lines[1]["message"]
        .as_str()
        .unwrap()
        .contains("click_labels"));
}

#[test]
fn a_busy_project_is_exit_4_with_a_json_error() {
    let sb = sandbox();
    let lock = sb.project.join(".leopold/persona/run.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::fs::write(&lock, "").unwrap();
    // flock(1) takes the same kernel lock `persona run` takes (flock(2)).
    let ready = sb.root.join("locked");
    // Its own process group, so the holder and its `sleep` go together.
    let mut holder = Command::new("flock")
        .arg("--close")
        .arg(&lock)
        .args(["sh", "-c"])
        .arg(format!("touch '{}'; exec sleep 30", ready.display()))
        .process_group(0)
        .spawn()
        .unwrap();
    for _ in 0..500 {
        if ready.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(ready.exists(), "flock did not take the lock");
    let claude = sb.fake_claude();
    let out = sb.run_checkout(claude.to_str().unwrap(), &["--json"]);
    let group = rustix::process::Pid::from_raw(holder.id() as i32).unwrap();
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let _ = holder.wait();
    assert_eq!(code(&out), Some(4), "{}", stderr(&out));
    let e = json_error(&out);
    assert!(e["message"]
        .as_str()
        .unwrap()
        .contains("another persona run is active"));
    let out = sb.run(&["persona", "recover"]);
    assert_eq!(
        code(&out),
        Some(0),
        "the lock is free again: {}",
        stderr(&out)
    );
}

// --- Messages ----------------------------------------------------------------------------------

#[test]
fn a_regex_error_keeps_its_caret_and_the_hint_has_its_own_line() {
    let sb = sandbox();
    std::fs::write(sb.project.join("bad.md"), BAD_REGEX_FLOW).unwrap();
    let run = sb.run(&["persona", "run", "bad.md", "--harness", "claude"]);
    let check = sb.run(&["flow", "check", "bad.md"]);
    assert_eq!(code(&run), Some(2));
    assert_eq!(code(&check), Some(2));
    let err = stderr(&run);
    let lines: Vec<&str> = err.lines().collect();
    // The pattern, then a caret under its unclosed group, as the regex crate lays them out.
    let pat = lines
        .iter()
        .position(|l| l.trim_start() == "(?i)place (order")
        .unwrap_or_else(|| panic!("{err}"));
    let caret = lines[pat + 1];
    assert_eq!(caret.trim(), "^", "{err}");
    assert_eq!(
        &lines[pat][caret.len() - 1..caret.len()],
        "(",
        "the caret sits under `(`: {err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("hint: use Rust regex syntax")),
        "{err}"
    );
    assert!(!err.contains("(hint:"), "{err}");
    // `flow check` says exactly what `persona run` says about the file.
    assert!(
        stderr(&check).starts_with(&err),
        "{}\n---\n{err}",
        stderr(&check)
    );
}

#[test]
fn a_non_executable_harness_is_not_executable_not_missing() {
    let sb = sandbox();
    let file = sb.root.join("claude-noexec");
    std::fs::write(&file, "#!/bin/sh\n").unwrap();
    let out = sb.run_checkout(file.to_str().unwrap(), &[]);
    assert_eq!(code(&out), Some(2));
    assert_has(&stderr(&out), "is not executable");
    assert!(!stderr(&out).contains("not found"), "{}", stderr(&out));
    // Control: a path that does not exist is "not found".
    let out = sb.run_checkout("/nonexistent/claude", &[]);
    assert_has(&stderr(&out), "not found");
}

#[test]
fn a_run_summary_counts_in_the_singular_for_one() {
    let sb = sandbox();
    let claude = sb.fake_claude();
    let out = sb.run_checkout(claude.to_str().unwrap(), &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_has(&text, ": 1 action, 0 denied, 0 violations;");
    assert!(!text.contains("1 actions"), "{text}");
}

// --- The project, found from a subfolder -------------------------------------------------------

#[test]
fn from_a_subfolder_the_repository_root_is_the_project() {
    let sb = sandbox();
    std::fs::create_dir(sb.project.join(".git")).unwrap();
    let flows = sb.project.join("flows");
    let claude = sb.fake_claude();
    let out = sb.run_in(
        &flows,
        &run_args("checkout.md", claude.to_str().unwrap(), &[]),
    );
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(!flows.join(".leopold").exists(), "no flows/.leopold/");
    assert!(!flows.join(".claude").exists());
    let runs: Vec<_> = std::fs::read_dir(sb.project.join(".leopold/persona/runs"))
        .unwrap()
        .collect();
    assert_eq!(runs.len(), 1);
    // The run directory is shown as a path that works from where the user stands (the project
    // root is not inside `flows/`, so absolute), and it exists.
    let text = stdout(&out);
    let shown = text
        .lines()
        .find(|l| l.contains("; see "))
        .and_then(|l| l.rsplit("; see ").next())
        .and_then(|s| s.trim().strip_suffix('/'))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(Path::new(shown).is_absolute(), "{text}");
    assert!(flows.join(shown).join("journal.jsonl").exists(), "{text}");

    // From the root itself the same directory is shown relative.
    let out = sb.run_checkout(claude.to_str().unwrap(), &[]);
    let text = stdout(&out);
    assert_has(&text, "; see .leopold/persona/runs/");
}

#[test]
fn the_nearest_leopold_dir_is_the_project_and_project_overrides() {
    let sb = sandbox();
    let deep = sb.project.join("flows/deep");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::create_dir_all(sb.project.join(".leopold")).unwrap();
    let out = sb.run_in(&deep, &["persona", "wire", "--harness", "claude"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(sb.settings().exists());
    assert!(!deep.join(".claude").exists());
    // --project wins over discovery.
    let other = sb.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let out = sb.run_in(
        &deep,
        &[
            "persona",
            "wire",
            "--harness",
            "claude",
            "--project",
            other.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(other.join(".claude/settings.json").exists());
}

// --- Commands that agree ----------------------------------------------------------------------

#[test]
fn hand_wiring_is_a_note_for_doctor_and_survives_recover_and_runs() {
    let sb = sandbox();
    let claude = sb.fake_claude();
    let out = sb.wire_claude(claude.to_str().unwrap());
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    let wired = std::fs::read(sb.settings()).unwrap();
    assert!(String::from_utf8_lossy(&wired).contains("\"onFailure\": \"block\""));

    let out = sb.run(&["doctor"]);
    let text = stdout(&out);
    assert_eq!(code(&out), Some(0), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("note") && l.contains("wired by hand")),
        "{text}"
    );
    assert!(!text.contains("orphaned"), "{text}");

    let out = sb.run(&["persona", "recover"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(sb.settings()).unwrap(),
        wired,
        "recover kept it"
    );
    let out = sb.run_checkout(claude.to_str().unwrap(), &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(sb.settings()).unwrap(),
        wired,
        "the run kept it"
    );

    let out = sb.run(&["persona", "unwire", "--harness", "claude"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(!sb.settings().exists(), "unwire by hand removes it");
}

#[test]
fn wiring_left_by_a_crashed_run_is_still_an_orphan() {
    let sb = sandbox();
    let out = sb.run(&["persona", "wire", "--harness", "claude"]);
    assert_eq!(code(&out), Some(0));
    // What a run leaves when it dies after wiring, minus its state: tagged wiring with no
    // record of `persona wire`.
    std::fs::remove_file(sb.project.join(".leopold/persona/wiring/claude.json")).unwrap();
    let out = sb.run(&["doctor"]);
    assert_eq!(code(&out), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("PROBLEM") && l.contains("orphaned wiring")),
        "{}",
        stdout(&out)
    );
    let out = sb.run(&["persona", "recover"]);
    assert_eq!(code(&out), Some(0));
    assert_has(&stdout(&out), "removed orphaned guard wiring");
    assert!(!sb.settings_text().contains("leopold-persona-guard"));
}

#[test]
fn doctor_and_run_agree_on_a_settings_file_wiring_refuses() {
    let sb = sandbox();
    let claude = sb.fake_claude();
    std::fs::create_dir_all(sb.project.join(".claude")).unwrap();
    let refused = b"{\"hooks\": {\"PreToolUse\": {}}}\n";
    std::fs::write(sb.settings(), refused).unwrap();
    let doctor = sb.run(&["doctor"]);
    assert_eq!(code(&doctor), Some(1));
    let line = settings_line(&doctor);
    assert_has(&line, "--no-contain` refuses to start");
    assert_has(&line, "a boxed run neither reads nor edits it");
    assert!(!line.contains("still passes the guard"), "{line}");
    let run_with = |extra: &[&str]| sb.run_checkout(claude.to_str().unwrap(), extra);
    let run = run_with(&["--no-contain"]);
    assert_eq!(code(&run), Some(2), "{}", stderr(&run));
    assert_has(&stdout(&run), "setup_failed");
    assert_eq!(
        std::fs::read(sb.settings()).unwrap(),
        refused,
        "left byte for byte"
    );
    // Boxed, the run never edits the file, so it does not refuse it either.
    let run = run_with(&[]);
    assert_eq!(code(&run), Some(0), "{}", stderr(&run));
    assert_eq!(std::fs::read(sb.settings()).unwrap(), refused);

    // Control: a file Claude skips for one invalid field but wiring can edit. Doctor says the
    // run still guards through --settings, and the run does start and finish clean.
    let skipped = b"{\"permissions\": {\"allow\": 5}}\n";
    std::fs::write(sb.settings(), skipped).unwrap();
    let line = settings_line(&sb.run(&["doctor"]));
    assert_has(&line, "still passes the guard with --settings");
    let run = sb.run_checkout(claude.to_str().unwrap(), &[]);
    assert_eq!(code(&run), Some(0), "{}", stderr(&run));
    assert_eq!(std::fs::read(sb.settings()).unwrap(), skipped);
}

#[test]
fn wire_refuses_a_harness_bin_it_cannot_run() {
    let sb = sandbox();
    let out = sb.wire_claude("/nonexistent");
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert_has(&stderr(&out), "`/nonexistent` not found");
    assert!(!sb.settings().exists(), "nothing wired");
    assert!(!sb.project.join(".claude").exists());
    assert!(!sb.project.join(".leopold").exists());
    // One that runs but reports no version: refused as well.
    let mute = sb.root.join("mute");
    std::fs::write(&mute, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&mute, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = sb.wire_claude(mute.to_str().unwrap());
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert_has(&stderr(&out), "nothing was wired");
    assert!(!sb.settings().exists());
}

// --- flow check, completions, help --------------------------------------------------------------

#[test]
fn flow_check_checks_every_file_and_reports_every_bad_one() {
    let sb = sandbox();
    std::fs::write(sb.project.join("bad.md"), BAD_REGEX_FLOW).unwrap();
    std::fs::write(sb.project.join("nomatter.md"), "no front matter\n").unwrap();
    let out = sb.run(&[
        "flow",
        "check",
        "bad.md",
        "flows/checkout.md",
        "nomatter.md",
        "gone.md",
    ]);
    assert_eq!(code(&out), Some(2));
    let err = stderr(&out);
    for needle in ["bad.md", "nomatter.md has no front matter", "gone.md"] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert_has(&err, "3 of 4 flow files invalid");
    assert!(stdout(&out).contains("ok: flows/checkout.md: flow `checkout`"));
    // `[expect]` is checked too: the key and entry named, the file left as it was.
    let expect = "+++\nname = \"e\"\nallowlist = [\"a.example\"]\n[expect]\nreach = [\"/cart\", \"review\"]\nfail_on = \"major\"\n+++\n";
    std::fs::write(sb.project.join("expect.md"), expect).unwrap();
    let out = sb.run(&["flow", "check", "expect.md"]);
    assert_eq!(code(&out), Some(2));
    assert_has(
        &stderr(&out),
        "key `expect.reach[1]` is \"review\", neither a path nor a `regex:` pattern",
    );
    assert_eq!(
        std::fs::read_to_string(sb.project.join("expect.md")).unwrap(),
        expect
    );
    let out = sb.run(&["flow", "check", "flows/checkout.md"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_has(&stdout(&out), "1 flow file valid");
    // Nothing was run or written.
    assert!(!sb.project.join(".leopold").exists());
}

#[test]
fn completions_are_printed_for_every_shell() {
    let sb = sandbox();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = sb.run(&["completions", shell]);
        assert_eq!(code(&out), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains("leopold"), "{shell}");
        assert!(
            script.contains("persona"),
            "{shell}: subcommands are completed"
        );
    }
    let out = sb.run(&["completions", "tcsh"]);
    assert_eq!(code(&out), Some(2));
}

#[test]
fn the_top_level_help_lists_the_exit_codes() {
    let sb = sandbox();
    let out = sb.run(&["--help"]);
    assert_eq!(code(&out), Some(0));
    let text = stdout(&out);
    assert_has(&text, "Exit codes");
    for line in [
        "  0  ", "  1  ", "  2  ", "  3  ", "  4  ", "  5  ", "  6  ",
    ] {
        assert!(text.contains(line), "{line:?}: {text}");
    }
}
