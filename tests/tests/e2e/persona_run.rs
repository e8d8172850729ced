//! The scenarios through `leopold persona run`, on the real Claude Code and Codex CLIs
//! (issue #6): the supervisor wires the guard, launches the harness, journals and validates.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leopold_tests::checkout::{self, CheckoutWorld};
use leopold_tests::script::Script;
use leopold_tests::{leopold_bin, note_timing, read_jsonl, run_bounded, Harness, Run, StubBrowser};
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

/// The checkout world with the flow and the user's own harness settings in place.
struct World {
    base: CheckoutWorld,
    leopold: PathBuf,
    /// The harness settings file a persona run wires (and must leave as it found it).
    settings: PathBuf,
}

impl World {
    fn new(h: Harness, script: &Script) -> Option<World> {
        Self::with_settings(h, script, USER_CLAUDE_SETTINGS)
    }

    fn with_settings(h: Harness, script: &Script, claude_settings: &str) -> Option<World> {
        let base = CheckoutWorld::new(h, |_| script.clone())?;
        let sb = &base.sb;
        sb.add_checkout_flow();
        let settings = match h {
            Harness::Claude => {
                let dir = sb.project.join(".claude");
                std::fs::create_dir_all(&dir).unwrap();
                let p = dir.join("settings.json");
                std::fs::write(&p, claude_settings).unwrap();
                p
            }
            Harness::Codex => sb.write_codex_config(&base.model, USER_CODEX_TAIL),
        };
        Some(World {
            base,
            leopold: leopold_bin(),
            settings,
        })
    }

    fn run(&self) -> Run {
        run_bounded(self.base.persona_run(&self.leopold), TIMEOUT)
    }

    fn settings_bytes(&self) -> Vec<u8> {
        std::fs::read(&self.settings).unwrap()
    }

    /// The run's state file: ACTIVE.json, or a boxed run's `active/<run_id>.json`.
    fn active_json(&self) -> PathBuf {
        self.base.sb.active()
    }

    /// The single run directory's journal actions (header line skipped) and `run.json`.
    fn journal(&self) -> (Vec<Value>, Value) {
        self.base.sb.run_journal()
    }

    /// True once some run directory's journal holds an action line.
    fn journal_has_actions(&self) -> bool {
        let runs = self.base.sb.persona_dir().join("runs");
        std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .flatten()
            .any(|d| {
                std::fs::read_to_string(d.path().join("journal.jsonl"))
                    .is_ok_and(|t| t.lines().any(|l| l.contains("\"seq\"")))
            })
    }

    fn assert_lock_free(&self) {
        let lock = self.base.sb.persona_dir().join("run.lock");
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

// ---------------------------------------------------------------------------------------------
/// The real CLI's usage, as the scripted model reported it (1 input and 1 output token per
/// answer), reached run.json (docs/reference.md#cost-and-budgets).
fn assert_usage_recorded(h: Harness, usage: &Value) {
    let n = |k: &str| {
        usage[k]
            .as_u64()
            .unwrap_or_else(|| panic!("no {k}: {usage}"))
    };
    assert!(n("turns") >= 1, "{usage}");
    assert!(n("input_tokens") >= 1 && n("output_tokens") >= 1, "{usage}");
    match h {
        Harness::Claude => {
            // Claude names the model it asked and prices what it used.
            assert!(
                usage["model"].as_str().is_some_and(|m| !m.is_empty()),
                "{usage}"
            );
            assert!(
                usage["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
                "{usage}"
            );
            // One answer of the scripted model is one turn, 1 token in and 1 out.
            assert_eq!(n("input_tokens"), n("turns"), "{usage}");
            assert_eq!(n("output_tokens"), n("turns"), "{usage}");
        }
        Harness::Codex => {
            // The sandbox's config.toml names the model; Codex reports no cost.
            assert_eq!(usage["model"], "scripted", "{usage}");
            assert!(usage.get("cost_usd").is_none(), "{usage}");
        }
    }
}

// Scenario 1: the checkout flow.

fn scenario_checkout(h: Harness) {
    let Some(w) = World::new(h, &checkout::script()) else {
        return;
    };
    let before = w.settings_bytes();
    let run = w.run();
    assert_eq!(exit_code(&run), Some(0), "a clean run exits 0\n{run}");
    note_timing("s1 checkout (persona run)", h, run.elapsed);

    // The browser saw exactly the allowed calls.
    assert_eq!(w.base.browser.seen(), checkout::allowed_calls(), "{run}");

    // One host-only events line per block, in the run's events.jsonl. The supervisor proves
    // the wired guard before launch with a synthetic probe, which the guard records too: exactly
    // one such line, set apart.
    let (proofs, events) = w.base.sb.run_events();
    assert_eq!(proofs.len(), 1, "{proofs:#?}");
    assert_eq!(events.len(), checkout::BLOCKED_CALLS, "{events:#?}");
    let hosts: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "persona_guard_block")
        .map(|e| e["host"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(hosts, checkout::BLOCKED_HOSTS);
    let events_text = w.base.sb.events_text();
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
    assert_usage_recorded(h, &run_json["end"]["usage"]);
    let journal_text = serde_json::to_string(&actions).unwrap();
    assert!(!journal_text.contains("://"), "the journal holds a URL");

    // The model received the guard's reason for each denied call.
    let results = w.base.model.tool_results();
    let denied: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].contains("Leopold persona guard: "))
        .collect();
    assert_eq!(denied, [1, 2, 3, 4, 6], "{results:#?}");

    // One journal for both harnesses: every denial has its reason, the batch every host and the
    // paths, the click its label.
    let reasons: Vec<&str> = actions
        .iter()
        .filter(|a| a["outcome"] == "denied")
        .map(|a| a["denied_reason"].as_str().unwrap_or("(none)"))
        .collect();
    assert_eq!(
        reasons,
        [
            "outside_allowlist",
            "outside_allowlist",
            "outside_allowlist",
            "outside_allowlist",
            "irreversible_label"
        ],
        "{actions:#?}"
    );
    assert_eq!(actions[6]["label"], "Place order", "{:#}", actions[6]);
    let batch_hosts: Vec<&str> = actions[4]["urls"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["host"].as_str())
        .collect();
    assert_eq!(
        batch_hosts,
        [
            "accounts.example.com",
            "evil.example",
            "staging.example.com"
        ],
        "{:#}",
        actions[4]
    );
    assert_eq!(actions[1]["urls"][0]["path"], "/admin", "{:#}", actions[1]);

    // The findings: the persona's final answer, verbatim, printed after the summary; the walls,
    // structured, in run.json.
    let answer = checkout::script().final_answer;
    let saved =
        std::fs::read_to_string(w.base.sb.run_dir().join("findings.md")).expect("findings.md");
    assert_eq!(saved, answer);
    let summary_at = run.stdout.find("clean (exit 0)").expect("summary");
    let answer_at = run.stdout.find(&answer).unwrap_or_else(|| panic!("{run}"));
    assert!(summary_at < answer_at, "findings after the summary\n{run}");
    let walls: Vec<(&str, &str)> = run_json["end"]["findings"]
        .as_array()
        .expect("end.findings")
        .iter()
        .map(|f| (f["kind"].as_str().unwrap(), f["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(walls.len(), 5, "{walls:?}");
    assert!(walls.iter().all(|(k, _)| *k == "denied"), "{walls:?}");
    assert_eq!(walls[4].1, "irreversible_label");

    // The record's hash-chain head: the summary's, run.json's and replay's are one.
    let head = run_json["end"]["journal_hash"]
        .as_str()
        .expect("end.journal_hash")
        .to_owned();
    assert!(
        run.stdout.contains(&format!("; journal_hash {head}; see ")),
        "{run}"
    );
    assert_replay_head(&w, &head);

    w.assert_cleaned_up(&before);
}

/// `persona replay RUN_DIR --json --expect HEAD` recomputes the same head, the chain intact.
fn assert_replay_head(w: &World, head: &str) {
    let out = Command::new(&w.leopold)
        .args(["persona", "replay"])
        .arg(w.base.sb.run_dir())
        .args(["--json", "--expect", head])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let summary: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(summary["journal_hash"], head, "{summary}");
    assert_eq!(
        (
            summary["chained"].as_bool(),
            summary["chain_breaks"].as_u64()
        ),
        (Some(true), Some(0)),
        "{summary}"
    );
}

/// With `--json`, the `run_ended` event carries the head `run.json` records and replay finds.
fn scenario_checkout_json(h: Harness) {
    let Some(w) = World::new(h, &checkout::script()) else {
        return;
    };
    let mut cmd = w.base.persona_run(&w.leopold);
    cmd.arg("--json");
    let run = run_bounded(cmd, TIMEOUT);
    assert_eq!(exit_code(&run), Some(0), "{run}");
    let ended: Value = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "run_ended")
        .unwrap_or_else(|| panic!("no run_ended\n{run}"));
    let head = ended["journal_hash"]
        .as_str()
        .expect("journal_hash")
        .to_owned();
    let (actions, run_json) = w.journal();
    assert_eq!(actions.len(), 7, "{actions:#?}");
    assert_eq!(
        run_json["end"]["journal_hash"],
        head.as_str(),
        "{run_json:#}"
    );
    assert_replay_head(&w, &head);
}

// ---------------------------------------------------------------------------------------------
// Helpers for the mid-run scenarios.

/// Starts `cmd` on a thread (bounded like every run); the handle yields its `Run`.
fn spawn_run(cmd: Command) -> std::thread::JoinHandle<Run> {
    std::thread::spawn(move || run_bounded(cmd, TIMEOUT))
}

/// Waits until the stub browser has logged `n` calls (the worker is then mid-run).
fn wait_for_calls(b: &StubBrowser, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while b.calls().len() < n {
        assert!(
            Instant::now() < deadline,
            "the browser never saw {n} call(s)"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every file under `dir` with its bytes, sorted by path.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            // A boxed run's scratch folder (its HOME: the one place the worker writes) belongs
            // to that run, not to the files a test compares.
            let scratch = p.file_name().is_some_and(|n| n == "scratch")
                && p.parent()
                    .and_then(Path::parent)
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "runs");
            if scratch {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Fails naming each file that appeared, vanished or changed between two [`tree`]s.
fn assert_same_tree(before: &[(PathBuf, Vec<u8>)], after: &[(PathBuf, Vec<u8>)]) {
    let mut diffs = Vec::new();
    for (p, b) in before {
        match after.iter().find(|(q, _)| q == p) {
            None => diffs.push(format!("removed {}", p.display())),
            Some((_, a)) if a != b => diffs.push(format!(
                "changed {}:\n--- before\n{}\n--- after\n{}",
                p.display(),
                String::from_utf8_lossy(b),
                String::from_utf8_lossy(a)
            )),
            _ => {}
        }
    }
    for (p, _) in after {
        if !before.iter().any(|(q, _)| q == p) {
            diffs.push(format!("added {}", p.display()));
        }
    }
    assert!(diffs.is_empty(), "files changed:\n{}", diffs.join("\n"));
}

/// True while `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario 2: fail-closed. The guard's binary is moved away mid-run.

fn scenario_guard_moved_away(h: Harness) {
    let mut script = checkout::script();
    // The off-allowlist call waits while the test moves the guard away; the call after it waits
    // long enough that a worker still running then was not stopped.
    script.turns[1].delay_ms = 2_000;
    script.turns[2].delay_ms = 8_000;
    let Some(w) = World::new(h, &script) else {
        return;
    };
    // Every call after the move is denied on Claude: this scenario is about fail-closed, not
    // about the `stuck` stop (five denials in a row), so the flow allows more.
    let flow = w.base.sb.project.join("flows/checkout.md");
    let text = std::fs::read_to_string(&flow).unwrap();
    std::fs::write(
        &flow,
        text.replacen("+++\n", "+++\nmax_denials_in_a_row = 100\n", 1),
    )
    .unwrap();
    let before = w.settings_bytes();
    // A private copy of leopold: the supervisor wires its own path as the guard command.
    let bin_dir = w.base.sb.root.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let copy = bin_dir.join("leopold");
    std::fs::copy(&w.leopold, &copy).unwrap();
    // Unboxed: the box binds leopold's file into itself when the run starts, so renaming it
    // outside does not take it away from the guard; this scenario is about the harnesses' hook
    // failure semantics, which the real guard-can't-run case still has without the box.
    let mut cmd = w.base.persona_run(&copy);
    cmd.arg("--no-contain");
    let handle = spawn_run(cmd);
    wait_for_calls(&w.base.browser, 1);
    std::fs::rename(&copy, bin_dir.join("leopold.moved-away")).unwrap();
    let run = handle.join().unwrap();
    note_timing(
        "s2 guard moved away mid-run (incl. 2 s scripted wait)",
        h,
        run.elapsed,
    );

    let seen: Vec<Value> = w.base.browser.seen().into_iter().map(|(_, a)| a).collect();
    let (actions, run_json) = w.journal();
    match h {
        Harness::Claude => {
            // `onFailure: block`: every later call is denied, nothing more reaches the browser.
            assert_eq!(seen.len(), 1, "a call got past an unrunnable guard\n{run}");
            assert_eq!(exit_code(&run), Some(0), "{run}");
            assert_eq!(run_json["end"]["counts"]["violations"], 0, "{run_json:#}");
            let outcomes: Vec<String> = tools_and_outcomes(&actions)
                .into_iter()
                .map(|(_, o)| o)
                .collect();
            assert_eq!(outcomes[0], "completed");
            assert!(
                outcomes[1..].iter().all(|o| o != "completed"),
                "{actions:#?}"
            );
        }
        Harness::Codex => {
            // Codex fails open: its hook let every later call through. The gateway did not:
            // the off-allowlist navigations and the "Place order" click never reached the
            // browser, and the worker read the guard's reason in the tool error. The journal
            // records them as denials with the gateway's reasons, not violations.
            assert_eq!(
                w.base.browser.seen(),
                checkout::allowed_calls(),
                "a call got past the gateway\n{run}"
            );
            assert_eq!(exit_code(&run), Some(0), "{run}");
            assert_eq!(run_json["end"]["counts"]["violations"], 0, "{run_json:#}");
            let denied: Vec<&Value> = actions
                .iter()
                .filter(|a| a["outcome"] == "denied")
                .collect();
            assert_eq!(denied.len(), checkout::BLOCKED_CALLS, "{actions:#?}");
            assert!(
                denied
                    .iter()
                    .any(|a| a["denied_reason"] == "irreversible_label"),
                "{denied:#?}"
            );
            assert!(
                w.base.model.received("(reason: outside_allowlist)"),
                "the model never read the gateway's reason"
            );
            let gateway = read_jsonl(&w.base.sb.run_dir().join("gateway.jsonl"));
            let refused = gateway
                .iter()
                .filter(|l| l["event"] == "call" && l["verdict"] == "denied")
                .count();
            assert!(refused >= 1, "{gateway:#?}");
            assert!(
                !serde_json::to_string(&gateway).unwrap().contains("://"),
                "{gateway:#?}"
            );
        }
    }
    w.assert_cleaned_up(&before);
}

// ---------------------------------------------------------------------------------------------
// Scenario 3: an invalid project `.claude/settings.json`.

#[test]
fn s3_claude_invalid_project_settings_guard_still_fires_and_doctor_reports_the_file() {
    let Some(w) = World::with_settings(
        Harness::Claude,
        &checkout::script(),
        INVALID_CLAUDE_SETTINGS,
    ) else {
        return;
    };
    let before = w.settings_bytes();
    let run = w.run();
    assert_eq!(exit_code(&run), Some(0), "{run}");
    note_timing(
        "s3 invalid project settings (persona run)",
        Harness::Claude,
        run.elapsed,
    );
    assert_eq!(
        w.base.browser.seen(),
        checkout::allowed_calls(),
        "the guard did not fire\n{run}"
    );
    w.assert_cleaned_up(&before);

    let mut doctor = Command::new(&w.leopold);
    doctor
        .args(["doctor", "--json", "--project"])
        .arg(&w.base.sb.project);
    w.base.sb.hermetic(&mut doctor, &w.base.model);
    let out = run_bounded(doctor, Duration::from_secs(30));
    note_timing("s3 leopold doctor", Harness::Claude, out.elapsed);
    assert_eq!(
        exit_code(&out),
        Some(1),
        "doctor must flag the problem\n{out}"
    );
    let findings: Vec<Value> = serde_json::from_str::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.get("findings").cloned().or(Some(v)))
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_else(|| out.json_lines());
    assert!(
        findings.iter().any(|f| f["status"] == "problem"
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains(".claude/settings.json"))),
        "doctor did not name the invalid file: {out}"
    );
    // Doctor only reads.
    assert_eq!(w.settings_bytes(), before);
}

// ---------------------------------------------------------------------------------------------
// Scenario 4: the supervisor is SIGKILLed mid-run.

fn scenario_crash(h: Harness) {
    let mut script = checkout::script();
    script.turns[1].delay_ms = 30_000; // the worker waits on its model when the supervisor dies
    let Some(w) = World::new(h, &script) else {
        return;
    };
    let before = w.settings_bytes();
    let mut cmd = w.base.persona_run(&w.leopold);
    let mut sup = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start persona run");
    wait_for_calls(&w.base.browser, 1);
    let active: Value =
        serde_json::from_slice(&std::fs::read(w.active_json()).expect("ACTIVE.json mid-run"))
            .unwrap();
    let worker = active["worker_pid"]
        .as_u64()
        .expect("worker_pid in ACTIVE.json") as u32;
    assert!(alive(worker));
    match h {
        Harness::Claude => {
            // Boxed, the guard comes through the run's `--settings` file; the user's
            // `.claude/settings.json` is never edited, not even mid-run.
            assert_eq!(
                w.settings_bytes(),
                before,
                "the user's settings.json changed"
            );
            assert_eq!(active["wiring"], serde_json::json!([]), "{active}");
            let gs = active["guard_settings"].as_str().expect("guard_settings");
            assert!(
                std::fs::read_to_string(gs)
                    .unwrap()
                    .contains("leopold-persona-guard"),
                "{gs}"
            );
        }
        Harness::Codex => {
            // Wired in the run's own copy of the configuration; the user's file never changes.
            assert_eq!(w.settings_bytes(), before, "the user's config.toml changed");
            let copy = active["wiring"][0]["file"].as_str().expect("wiring entry");
            assert!(
                copy.ends_with("/scratch/.codex/config.toml")
                    && std::fs::read_to_string(copy)
                        .unwrap()
                        .contains("leopold-persona-guard"),
                "{copy}"
            );
        }
    }

    sup.kill().unwrap(); // SIGKILL: no cleanup code runs
    sup.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(worker) {
        assert!(
            Instant::now() < deadline,
            "worker {worker} outlived its supervisor by 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let out = w.base.sb.persona_recover(&w.leopold, &w.base.model);
    assert_eq!(exit_code(&out), Some(0), "{out}");
    note_timing("s4 persona recover after SIGKILL", h, out.elapsed);
    w.assert_cleaned_up(&before);
    // Only the first call ever reached the browser.
    assert_eq!(w.base.browser.calls().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Scenario 5: a second run while one is active. Boxed runs of one project run side by side; a
// `--no-contain` run (it wires the project's settings file) runs alone, and is refused.

fn scenario_busy(h: Harness) {
    let mut script = checkout::script();
    script.turns[1].delay_ms = 5_000; // run 1 holds the lock while run 2 tries
    let Some(w) = World::new(h, &script) else {
        return;
    };
    let first = spawn_run(w.base.persona_run(&w.leopold));
    wait_for_calls(&w.base.browser, 1);
    // ...and until run 1 journaled that call: from then on run 1 waits on its model.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !w.journal_has_actions() {
        assert!(
            Instant::now() < deadline,
            "run 1 never journaled its first call"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let project_before = tree(&w.base.sb.project);
    let settings_before = w.settings_bytes();

    let mut alone = w.base.persona_run(&w.leopold);
    alone.arg("--no-contain");
    let second = run_bounded(alone, Duration::from_secs(20));
    assert_eq!(exit_code(&second), Some(4), "{second}");
    note_timing("s5 second run refused (exit 4)", h, second.elapsed);
    assert!(
        second.stderr.contains("flow `checkout`")
            && second
                .stderr
                .contains("runs alone because it wires the project's settings file"),
        "the message names the active run's flow and says why\n{second}"
    );
    assert_same_tree(&project_before, &tree(&w.base.sb.project));
    assert_eq!(w.settings_bytes(), settings_before);
    assert_eq!(
        w.base.browser.calls().len(),
        1,
        "the second run reached the browser"
    );

    let run = first.join().unwrap();
    assert_eq!(
        exit_code(&run),
        Some(0),
        "the first run still ends clean\n{run}"
    );
}

per_harness! {
    scenario_checkout_json =>
        s1_claude_json_run_ended_carries_the_journal_hash_replay_recomputes,
        s1_codex_json_run_ended_carries_the_journal_hash_replay_recomputes;
    scenario_checkout =>
        s1_claude_checkout_through_persona_run_is_bounded_journaled_and_clean,
        s1_codex_checkout_through_persona_run_is_bounded_journaled_and_clean;
    scenario_guard_moved_away =>
        s2_claude_guard_moved_away_mid_run_blocks_every_later_call,
        s2_codex_guard_moved_away_mid_run_fails_open_and_the_gateway_refuses_every_later_call;
    scenario_crash =>
        s4_claude_supervisor_sigkill_worker_dies_and_recover_restores_every_byte,
        s4_codex_supervisor_sigkill_worker_dies_and_recover_restores_every_byte;
    scenario_busy =>
        s5_claude_second_run_while_active_exits_4_and_changes_nothing,
        s5_codex_second_run_while_active_exits_4_and_changes_nothing;
}

// Scenario: the turn limit. Claude stops itself at `--max-turns` (its `result` says
// `error_max_turns` and it exits 1); Codex has no such limit and Leopold counts its turns. Either
// way the run is `over_budget`, exit 5, not a worker failure.

fn scenario_max_turns(h: Harness) {
    let Some(w) = World::new(h, &checkout::script()) else {
        return;
    };
    let mut cmd = w.base.persona_run(&w.leopold);
    cmd.args(["--max-turns", "2"]);
    let run = run_bounded(cmd, TIMEOUT);
    assert_eq!(exit_code(&run), Some(5), "{run}");
    let (_, run_json) = w.journal();
    assert_eq!(run_json["end"]["outcome"], "over_budget", "{run_json:#}");
    let reason = run_json["end"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("turns reached --max-turns 2 ("),
        "{reason}"
    );
    // Claude's own stop, read from its `result`: Leopold's count never passed the limit first.
    let by_harness = reason.ends_with(": the harness stopped)");
    assert_eq!(by_harness, h == Harness::Claude, "{reason}\n{run}");
}

per_harness! {
    scenario_max_turns =>
        claude_stops_at_max_turns_and_the_run_is_over_budget,
        codex_turns_past_max_turns_stop_the_run_as_over_budget;
}
