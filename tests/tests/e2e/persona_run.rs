//! The scenarios through `leopold persona run`, on the real Claude Code and Codex CLIs
//! (issue #6): the supervisor wires the guard, launches the harness, journals and validates.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leopold_tests::script::Script;
use leopold_tests::{
    checkout, leopold_bin, read_jsonl, require_cli, run_bounded, Harness, ModelServer, Run,
    Sandbox, StubBrowser,
};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(50);

/// A user's own Claude settings, odd formatting included: must survive byte for byte.
const USER_CLAUDE_SETTINGS: &str =
    "{\n  \"permissions\": { \"allow\": [\"Bash(ls:*)\"] },\n    \"env\": {\"LEOPOLD_E2E_USER_KEY\": \"kept\"}\n}\n";
/// The same with one field Claude rejects (`allow` must be a list): Claude skips the whole file.
const INVALID_CLAUDE_SETTINGS: &str =
    "{\n  \"permissions\": { \"allow\": 5 },\n  \"env\": {\"LEOPOLD_E2E_USER_KEY\": \"kept\"}\n}\n";
/// Appended to the Codex config the sandbox writes: a user's comment and table.
const USER_CODEX_TAIL: &str = "\n# my own notes, keep them\n[history]\npersistence = \"none\"\n";

/// One harness, one sandbox, the scripted model and the stub browser, ready for `persona run`.
struct World {
    h: Harness,
    cli: PathBuf,
    sb: Sandbox,
    model: ModelServer,
    browser: StubBrowser,
    leopold: PathBuf,
    mcp_config: PathBuf,
    /// The harness settings file a persona run wires (and must leave as it found it).
    settings: PathBuf,
}

impl World {
    fn new(h: Harness, script: &Script) -> Option<World> {
        Self::with_settings(h, script, USER_CLAUDE_SETTINGS)
    }

    fn with_settings(h: Harness, script: &Script, claude_settings: &str) -> Option<World> {
        let cli = require_cli(h)?;
        let sb = Sandbox::new();
        let model = ModelServer::start(&sb, script);
        let browser = sb.stub_browser(checkout::SERVER);
        let mcp_config = sb.write_claude_mcp_config(&browser);
        let flows = sb.project.join("flows");
        std::fs::create_dir_all(&flows).unwrap();
        std::fs::copy(checkout::flow_path(), flows.join("checkout.md")).unwrap();
        let settings = match h {
            Harness::Claude => {
                let dir = sb.project.join(".claude");
                std::fs::create_dir_all(&dir).unwrap();
                let p = dir.join("settings.json");
                std::fs::write(&p, claude_settings).unwrap();
                p
            }
            Harness::Codex => sb.write_codex_config(&model, USER_CODEX_TAIL),
        };
        Some(World {
            h,
            cli,
            sb,
            model,
            browser,
            leopold: leopold_bin(),
            mcp_config,
            settings,
        })
    }

    /// `leopold persona run flows/checkout.md --harness <h> ...`, hermetic, from the project.
    fn persona_run(&self, leopold: &Path) -> Command {
        let mut cmd = Command::new(leopold);
        cmd.args([
            "persona",
            "run",
            "flows/checkout.md",
            "--harness",
            self.h.name(),
        ])
        .arg("--project")
        .arg(&self.sb.project)
        .arg("--harness-bin")
        .arg(&self.cli)
        .arg("--mcp-config")
        .arg(&self.mcp_config);
        self.sb.hermetic(&mut cmd, &self.model);
        cmd
    }

    fn run(&self) -> Run {
        run_bounded(self.persona_run(&self.leopold), TIMEOUT)
    }

    fn settings_bytes(&self) -> Vec<u8> {
        std::fs::read(&self.settings).unwrap()
    }

    fn active_json(&self) -> PathBuf {
        self.sb.persona_dir().join("ACTIVE.json")
    }

    /// The single run directory's journal actions (header line skipped) and `run.json`.
    fn journal(&self) -> (Vec<Value>, Value) {
        let runs = self.sb.persona_dir().join("runs");
        let dirs: Vec<PathBuf> = std::fs::read_dir(&runs)
            .unwrap_or_else(|e| panic!("{}: {e}", runs.display()))
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "run dirs: {dirs:?}");
        let actions = read_jsonl(&dirs[0].join("journal.jsonl"))
            .into_iter()
            .filter(|l| l.get("leopold_journal").is_none())
            .collect();
        let run_json = serde_json::from_slice(
            &std::fs::read(dirs[0].join("run.json")).expect("run.json archived"),
        )
        .unwrap();
        (actions, run_json)
    }

    fn assert_lock_free(&self) {
        let lock = self.sb.persona_dir().join("run.lock");
        if let Ok(f) = std::fs::File::open(&lock) {
            fs2::FileExt::try_lock_exclusive(&f).expect("run.lock still held after the run");
        }
    }

    fn assert_cleaned_up(&self, before: &[u8]) {
        assert_eq!(
            String::from_utf8_lossy(&self.settings_bytes()),
            String::from_utf8_lossy(before),
            "{} changed",
            self.settings.display()
        );
        assert!(!self.active_json().exists(), "ACTIVE.json left behind");
        self.assert_lock_free();
    }
}

fn exit_code(run: &Run) -> Option<i32> {
    run.status.code()
}

fn tools_and_outcomes(actions: &[Value]) -> Vec<(String, String)> {
    actions
        .iter()
        .map(|a| {
            (
                a["tool"].as_str().unwrap_or("").to_owned(),
                a["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn browser_seen(b: &StubBrowser) -> Vec<(String, Value)> {
    b.calls()
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or("").to_owned(),
                c["arguments"].clone(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Scenario 1: the checkout flow.

fn scenario_checkout(h: Harness) {
    let Some(w) = World::new(h, &checkout::script()) else {
        return;
    };
    let before = w.settings_bytes();
    let run = w.run();
    assert_eq!(exit_code(&run), Some(0), "a clean run exits 0\n{run}");

    // The browser saw exactly the allowed calls.
    let want: Vec<(String, Value)> = checkout::allowed_calls()
        .into_iter()
        .map(|(t, a)| (t.to_owned(), a))
        .collect();
    assert_eq!(browser_seen(&w.browser), want, "{run}");

    // One host-only events line per block. The supervisor proves the wired guard before launch
    // with a synthetic probe, which the guard records too: exactly one such line, set apart.
    let (proofs, events): (Vec<Value>, Vec<Value>) = w.sb.events().into_iter().partition(|e| {
        e["tool"]
            .as_str()
            .is_some_and(|t| t.starts_with("mcp__leopold_proof__"))
    });
    assert_eq!(proofs.len(), 1, "{proofs:#?}");
    assert_eq!(events.len(), checkout::BLOCKED_CALLS, "{events:#?}");
    let hosts: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "persona_guard_block")
        .map(|e| e["host"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(hosts, checkout::BLOCKED_HOSTS);
    let events_text = std::fs::read_to_string(w.sb.persona_dir().join("events.jsonl")).unwrap();
    assert!(!events_text.contains("://"), "{events_text}");

    // The journal lists every action with the right outcome, and no violation.
    let (actions, run_json) = w.journal();
    let b = "mcp__browser__";
    let expect: Vec<(String, String)> = [
        ("navigate", "completed"),
        ("navigate", "denied"),
        ("navigate", "denied"),
        ("navigate", "denied"),
        ("navigate", "denied"),
        ("type", "completed"),
        ("click", "denied"),
    ]
    .iter()
    .map(|(t, o)| (format!("{b}{t}"), (*o).to_owned()))
    .collect();
    assert_eq!(tools_and_outcomes(&actions), expect, "{actions:#?}");
    assert_eq!(run_json["end"]["outcome"], "clean", "{run_json:#}");
    assert_eq!(run_json["end"]["counts"]["violations"], 0);
    let journal_text = serde_json::to_string(&actions).unwrap();
    assert!(!journal_text.contains("://"), "the journal holds a URL");

    // The model received the guard's reason for each denied call.
    let results = w.model.tool_results();
    let denied: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].contains("Leopold persona guard: "))
        .collect();
    assert_eq!(denied, [1, 2, 3, 4, 6], "{results:#?}");

    w.assert_cleaned_up(&before);
}

#[test]
fn s1_claude_checkout_through_persona_run_is_bounded_journaled_and_clean() {
    scenario_checkout(Harness::Claude);
}

#[test]
fn s1_codex_checkout_through_persona_run_is_bounded_journaled_and_clean() {
    scenario_checkout(Harness::Codex);
}
