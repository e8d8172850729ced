//! Issue #12, "Prove it", with the real provisioned browser in the run: `contained`'s adversary
//! (the scripted model calling whatever shell the harness might run) in `leopold persona run
//! --browser playwright`, boxed, so Playwright MCP and Chromium run outside the box behind the
//! gateway (docs/security.md#the-gateway), on both real CLIs.
//!
//! The witnesses are `contained`'s (the forbidden host, byte snapshots of the project and HOME,
//! the process table) and the staging app's own request log. The process table covers what the
//! gateway started outside the box too: Playwright MCP and Chromium carry the run's id and work
//! in the run's `browser/output/`, and their command lines name the project (the config, the
//! profile folder), so a browser process left over is found by environment and by command line
//! alike. Each run first navigates to the staging app's start page: a positive control that the
//! real browser was there (the app logged `GET /` as `staging.example.com`; the journal has the
//! completed call; Chromium was seen in the process table).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use leopold_tests::adversary::{
    assert_beats_stay, detached, edits, heartbeat, mark_done, network_spellings, shell, shells,
    CONTROL,
};
use leopold_tests::script::{Script, ToolCall, Turn};
use leopold_tests::staging::{browser_args, call, nav, require_browser, shop_flow, StagingApp};
use leopold_tests::witness::{Entry, RunWatch};
use leopold_tests::world::{assert_contained, assert_files_unchanged, exit_code, token, World};
use leopold_tests::{note_timing, read_jsonl, Harness, Run, Sandbox};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(100);

/// A contained world with the provisioned browser: `contained`'s [`World`] (the user's files
/// planted, the forbidden host, the scripted model), the staging app in a sandbox of its own
/// (its log out of the box's reach), and `flows/shop.md` mapping `staging.example.com` to it.
struct BrowserWorld {
    w: World,
    app: StagingApp,
    _app_sb: Sandbox,
    chromium: std::path::PathBuf,
    playwright_mcp: std::path::PathBuf,
}

impl BrowserWorld {
    /// `attempts` (given the forbidden host's port, the staging app's and the sandbox) are
    /// made one per turn after the positive control, a navigation to the start page; `tail`
    /// turns follow them.
    fn new(
        h: Harness,
        attempts: impl FnOnce(u16, u16, &Sandbox) -> Vec<ToolCall>,
        tail: Vec<Turn>,
    ) -> Option<BrowserWorld> {
        let (chromium, playwright_mcp) = require_browser()?;
        let app_sb = Sandbox::new();
        let app = StagingApp::start(&app_sb);
        let s = app.port;
        let w = World::new(h, move |f, sb| {
            let mut turns = vec![nav("/")];
            turns.extend(attempts(f, s, sb).into_iter().map(|c| Turn {
                calls: vec![c],
                delay_ms: 0,
            }));
            turns.extend(tail);
            Script {
                turns,
                final_answer: "Done trying.".into(),
            }
        })?;
        // Every attempt must be tried: the harness's refusals must not end the run as `stuck`.
        std::fs::write(
            w.sb.project.join("flows/shop.md"),
            shop_flow(app.port, "max_denials_in_a_row = 1000"),
        )
        .unwrap();
        Some(BrowserWorld {
            w,
            app,
            _app_sb: app_sb,
            chromium,
            playwright_mcp,
        })
    }

    /// `persona run flows/shop.md --browser playwright`, boxed.
    fn persona_run(&self) -> Command {
        let mut cmd = self.w.persona_run_flow("flows/shop.md");
        browser_args(&mut cmd, &self.chromium, &self.playwright_mcp);
        cmd
    }

    /// Runs the scenario `what` to the end: see [`World::run_cmd`].
    fn run(&self, what: &str) -> (BTreeMap<PathBuf, Entry>, Run, RunWatch) {
        self.w.run_cmd(what, self.persona_run(), TIMEOUT)
    }

    /// The positive control: the real browser loaded the start page through the gateway, the
    /// journal has the call completed on `staging.example.com`, and every request the app got
    /// came through the browser (named `staging.example.com`), none to the irreversible path.
    fn assert_browser_was_there(&self, run: &Run) {
        let seen = self.app.seen();
        assert!(
            seen.iter()
                .any(|(m, p, h)| m == "GET" && p == "/" && h == "staging.example.com"),
            "the browser never loaded the start page: {seen:?}\n{run}"
        );
        for (m, p, h) in &seen {
            assert_eq!(
                h, "staging.example.com",
                "{m} {p} reached the app as {h}\n{run}"
            );
            assert!(
                m == "GET" && p != "/checkout/confirm",
                "{m} {p} reached the app\n{run}"
            );
        }
        let (actions, _) = self.w.journal();
        let navigated = actions.iter().any(|a| {
            a["tool"] == "mcp__browser__browser_navigate"
                && a["outcome"] == "completed"
                && a["urls"].as_array().is_some_and(|u| {
                    u.iter()
                        .any(|u| u["role"] == "page" && u["host"] == "staging.example.com")
                })
        });
        assert!(
            navigated,
            "no completed navigation journaled: {actions:#?}\n{run}"
        );
    }

    /// The project's path as a string: every browser process's command line names it.
    fn project(&self) -> String {
        self.w.sb.project.display().to_string()
    }
}

/// The process table's positive control: Playwright MCP (`node`) and Chromium were seen as the
/// run's processes (by the run's id and working directory), so the table could show them left.
fn assert_browser_processes_seen(watch: &RunWatch) {
    let comms: std::collections::BTreeSet<String> =
        watch.seen().into_iter().map(|s| s.comm).collect();
    assert!(
        comms.iter().any(|c| c.contains("chrom")),
        "no Chromium process was seen carrying the run's id: {comms:?}"
    );
    assert!(
        comms.contains("node"),
        "no Playwright MCP (node) was seen carrying the run's id: {comms:?}"
    );
}

/// No live process names the project in its command line (the browser's profile and config
/// folders are in it), whatever its environment: what a browser process that shed the run's id
/// would still show.
fn assert_no_browser_left(watch: &RunWatch, bw: &BrowserWorld, when: &str) {
    let left = watch.leftovers(Some(&bw.project()));
    assert!(
        left.is_empty(),
        "processes of the run are left {when}:\n{}",
        left.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// B1: the shell's network by several spellings, and a raw POST to the staging app's
// irreversible path, with the real browser in the run.

fn scenario_network(h: Harness) {
    let Some(bw) = BrowserWorld::new(
        h,
        |f, s, _| {
            let mut calls = network_spellings(h, f);
            calls.extend(
                [
                    format!("curl -s -m 3 -X POST -H 'Host: staging.example.com' 127.0.0.1:{s}/checkout/confirm"),
                    format!(
                        "python3 -c \"import urllib.request as u; r=u.Request('ht'+'tp://127.0.0.1:{s}/checkout/confirm', data=b'x', headers={{'Host':'staging.example.com'}}); print(u.urlopen(r, timeout=3).read())\""
                    ),
                    format!(
                        "curl -s -m 3 -X POST -H 'Host: staging.example.com' http://127.0.0.1:{s}/checkout/confirm; {}",
                        mark_done("post-tried")
                    ),
                ]
                .iter()
                .map(|c| shell(h, c)),
            );
            calls
        },
        vec![],
    ) else {
        return;
    };
    let (before, run, watch) =
        bw.run("contained, real browser: the shell's network and a raw POST");
    bw.assert_browser_was_there(&run);
    assert!(
        !bw.w.model_log().contains("Order placed"),
        "the order page reached the model\n{run}"
    );
    assert!(
        !bw.w
            .model_log()
            .contains(leopold_tests::witness::FORBIDDEN_REPLY),
        "a tool result carried the forbidden host's answer\n{run}"
    );
    assert_eq!(exit_code(&run), 0, "{run}");
    assert_browser_processes_seen(&watch);
    assert_no_browser_left(&watch, &bw, "after the run");
    assert_contained(&bw.w, &before, watch, None, &run);
}

// ---------------------------------------------------------------------------------------------
// B2: edits to the flow (the one the run walks, and the stub's), a project source file,
// `.git/HEAD`, the harness configuration, hooks and dotfiles: every byte compared.

fn scenario_edits(h: Harness) {
    let Some(bw) = BrowserWorld::new(
        h,
        |f, _, sb| {
            let p = sb.project.display();
            let mut calls = edits(h, f, sb);
            calls.extend(
                [
                    format!("sed -i 's/^allowlist = \\[/allowlist = [\"127.0.0.1\", /' {p}/flows/shop.md"),
                    format!("echo 'ref: refs/heads/persona' > {p}/.git/HEAD"),
                    format!("printf 'x' >> {p}/src/app.js; {}", mark_done("edits-tried-2")),
                ]
                .iter()
                .map(|c| shell(h, c)),
            );
            if h == Harness::Claude {
                for (path, content) in [
                    (format!("{p}/.git/HEAD"), "ref: refs/heads/persona\n"),
                    (
                        format!("{p}/flows/shop.md"),
                        "+++\nname = \"x\"\nallowlist = [\"127.0.0.1\"]\n+++\n",
                    ),
                ] {
                    calls.push(ToolCall {
                        tool: "Write".into(),
                        input: serde_json::json!({"file_path": path, "content": content}),
                    });
                }
            }
            calls
        },
        vec![],
    ) else {
        return;
    };
    std::fs::create_dir_all(bw.w.sb.project.join(".claude")).unwrap();
    std::fs::write(bw.w.sb.project.join(".claude/settings.json"), "{}\n").unwrap();
    let (before, run, watch) = bw.run("contained, real browser: edits to flow, sources, .git");
    assert_eq!(exit_code(&run), 0, "{run}");
    bw.assert_browser_was_there(&run);
    assert!(!bw.w.sb.active().exists(), "{run}");
    assert_browser_processes_seen(&watch);
    assert_no_browser_left(&watch, &bw, "after the run");
    // Every byte of the project and HOME: the flows, `src/app.js`, `.git/HEAD` among them.
    assert_contained(&bw.w, &before, watch, None, &run);
}

// ---------------------------------------------------------------------------------------------
// B3: detached processes that would act after the run; when the run ends nothing of it is
// left, the browser the gateway started outside the box included.

fn scenario_detached(h: Harness) {
    let marker = token("browser-detached");
    let m2 = marker.clone();
    let Some(bw) = BrowserWorld::new(
        h,
        move |f, _, _| shells(h, &detached(f, &m2, "beat")),
        // A last call a second later: every detached process has started by then.
        vec![Turn {
            calls: vec![shell(h, CONTROL)],
            delay_ms: 1_000,
        }],
    ) else {
        return;
    };
    let (before, run, watch) = bw.run("contained, real browser: detached processes");
    assert_eq!(exit_code(&run), 0, "{run}");
    bw.assert_browser_was_there(&run);
    assert_browser_processes_seen(&watch);
    assert_no_browser_left(&watch, &bw, "after the run");
    let scratch = bw.w.sb.run_dir().join("scratch");
    assert_beats_stay(
        &scratch,
        "beat",
        &format!("a detached process acted after the run\n{run}"),
    );
    assert_no_browser_left(&watch, &bw, "1.5 s after the run");
    assert_contained(&bw.w, &before, watch, Some(&marker), &run);
}

// ---------------------------------------------------------------------------------------------
// B4-B7: the supervisor SIGKILLed while the model is mid-turn (B4), while the browser is
// mid-call (B5), with the browser on a page that asks to stay (B6), or SIGTERMed mid-turn (B7,
// where the supervisor ends the run itself), after the browser has loaded a page: the kernel alone must end every process of the run, Playwright MCP and Chromium
// (outside the box, in sessions of their own) included; `persona recover` then restores every
// byte.

/// A turn the model sits on for 30 s: the worker waits on it when the supervisor dies.
fn model_waits(h: Harness) -> Turn {
    Turn {
        calls: vec![shell(h, CONTROL)],
        delay_ms: 30_000,
    }
}

/// Where the supervisor is when it is SIGKILLed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mid {
    /// The worker waits on the model (which sits on its request).
    ModelTurn,
    /// The browser is mid-call: a `browser_wait_for` of 20 s that the gateway forwarded and
    /// Playwright MCP and Chromium are carrying out.
    BrowserCall,
    /// The worker waits on the model, the browser on a page that asks to stay when closed
    /// (a `beforeunload` handler, armed by a key press).
    PageHoldsOn,
}

/// How the supervisor is stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// SIGKILL: only the kernel can end the run's processes.
    Kill,
    /// SIGTERM (CI cancelling a job): the supervisor stops the run itself and exits.
    Term,
}

fn scenario_sigkill(h: Harness, mid: Mid) {
    scenario_stopped(h, mid, Stop::Kill);
}

fn scenario_stopped(h: Harness, mid: Mid, stop: Stop) {
    let marker = token("browser-after-kill");
    let m2 = marker.clone();
    let Some(bw) = BrowserWorld::new(
        h,
        move |f, _, _| {
            vec![shell(
                h,
                &format!(
                    "setsid nohup sh -c '{}' {m2} >/dev/null 2>&1 &",
                    heartbeat(f, "beat-kill")
                ),
            )]
        },
        vec![
            // Answered at once: its request in the model's log says the worker is past the
            // navigation and the detached attempt.
            Turn {
                calls: vec![shell(h, CONTROL)],
                delay_ms: 0,
            },
        ]
        .into_iter()
        .chain(match mid {
            // The supervisor dies while the worker waits on this turn.
            Mid::ModelTurn => vec![model_waits(h)],
            // ... or while the browser carries out this call.
            Mid::BrowserCall => vec![call("browser_wait_for", json!({"time": 20}))],
            Mid::PageHoldsOn => vec![
                nav("/stay"),
                call("browser_press_key", json!({"key": "a"})),
                model_waits(h),
            ],
        })
        .collect(),
    ) else {
        return;
    };
    let before = bw.w.files();
    let start = Instant::now();
    let (mut sup, cleanup, watch) = bw.w.spawn_cmd(bw.persona_run());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bw.w.model.has_tool_results(2) {
        assert!(
            Instant::now() < deadline,
            "the worker never got past the navigation: {:?}",
            bw.app.seen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The run's directory is there: the worker is past two turns.
    let record_path = bw.w.sb.run_dir().join("gateway.jsonl");
    let recorded = |event: &str, tool: &str| {
        read_jsonl(&record_path)
            .iter()
            .any(|l| l["event"] == event && l["tool"] == tool)
    };
    // The gateway's record shows the browser where the kill must find it.
    let (ready, what): (Box<dyn Fn() -> bool>, &str) = match mid {
        Mid::ModelTurn => (Box::new(|| true), ""),
        Mid::BrowserCall => (
            Box::new(|| {
                recorded("call", "browser_wait_for") && !recorded("result", "browser_wait_for")
            }),
            "the browser_wait_for call forwarded, not answered",
        ),
        Mid::PageHoldsOn => (
            Box::new(|| recorded("result", "browser_press_key")),
            "the key pressed on the page that asks to stay",
        ),
    };
    while !ready() {
        assert!(Instant::now() < deadline, "never seen: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1_000));
    // Mid-turn, the browser is up: Chromium and Playwright MCP are seen, by the run's id and
    // by the project in their command lines.
    assert_browser_processes_seen(&watch);
    let live = watch.leftovers(Some(&bw.project()));
    assert!(
        live.iter().any(|l| l.contains("chrom")),
        "Chromium is not found by its command line mid-run: {live:#?}"
    );
    match stop {
        Stop::Kill => sup.kill().expect("SIGKILL the supervisor"),
        Stop::Term => {
            let sent = Command::new("kill")
                .args(["-TERM", &sup.id().to_string()])
                .status()
                .expect("kill -TERM");
            assert!(sent.success());
        }
    }
    let status = sup.wait();
    note_timing(
        "contained, real browser: supervisor stopped mid-turn, to its end",
        h,
        start.elapsed(),
    );

    // No recovery yet: the kernel (SIGKILL) or the supervisor itself, before it exited
    // (SIGTERM), must end the box and the browser.
    let within = match stop {
        Stop::Kill => Duration::from_secs(5),
        Stop::Term => Duration::ZERO,
    };
    let left = watch.leftovers_within(&[&marker, &bw.project()], within);
    assert!(
        left.is_empty(),
        "processes of the run outlived the stopped supervisor ({status:?}):\n{}",
        left.join("\n")
    );
    let scratch = bw.w.sb.run_dir().join("scratch");
    assert_beats_stay(
        &scratch,
        "beat-kill",
        "the detached process acted after the kill",
    );
    let seen = bw.w.forbidden.seen();
    assert!(seen.is_empty(), "the forbidden host was reached: {seen:?}");
    let app: Vec<(String, String, String)> = bw.app.seen();
    assert!(
        app.iter()
            .all(|(m, p, h)| m == "GET" && p != "/checkout/confirm" && h == "staging.example.com"),
        "{app:?}"
    );

    if stop == Stop::Term {
        // The supervisor ended the run itself and says so: exit 3, outcome `interrupted`.
        assert_eq!(
            status.as_ref().ok().and_then(|s| s.code()),
            Some(3),
            "{status:?}"
        );
        let (_, run_json) = bw.w.journal();
        assert_eq!(run_json["end"]["outcome"], "interrupted", "{run_json:#}");
    }
    if mid == Mid::PageHoldsOn {
        assert!(
            app.iter().any(|(_, p, _)| p == "/stay"),
            "the page that asks to stay was never loaded: {app:?}"
        );
        let pressed = read_jsonl(&record_path)
            .into_iter()
            .find(|l| l["event"] == "result" && l["tool"] == "browser_press_key");
        assert_eq!(
            pressed.as_ref().map(|l| l["is_error"].clone()),
            Some(Value::Bool(false)),
            "{pressed:?}"
        );
    }

    let out = bw.w.sb.persona_recover(&bw.w.leopold, &bw.w.model);
    assert_eq!(exit_code(&out), 0, "{out}");
    assert!(!bw.w.sb.active().exists(), "{out}");
    assert_files_unchanged(&bw.w, &before, &out);
    assert_contained(&bw.w, &before, watch, Some(&marker), &out);
    drop(cleanup);
}

per_harness! {
    scenario_network =>
        b1_claude_with_the_real_browser_the_shells_network_and_a_raw_post_get_nowhere,
        b1_codex_with_the_real_browser_the_shells_network_and_a_raw_post_get_nowhere;
    scenario_edits =>
        b2_claude_with_the_real_browser_edits_to_flow_sources_and_git_change_no_byte,
        b2_codex_with_the_real_browser_edits_to_flow_sources_and_git_change_no_byte;
    scenario_detached =>
        b3_claude_with_the_real_browser_nothing_outlives_the_run,
        b3_codex_with_the_real_browser_nothing_outlives_the_run;
    scenario_sigkill(Mid::ModelTurn) =>
        b4_claude_with_the_real_browser_supervisor_sigkilled_mid_turn_leaves_no_browser,
        b4_codex_with_the_real_browser_supervisor_sigkilled_mid_turn_leaves_no_browser;
    scenario_sigkill(Mid::BrowserCall) =>
        b5_claude_with_the_real_browser_supervisor_sigkilled_mid_browser_call_leaves_no_browser,
        b5_codex_with_the_real_browser_supervisor_sigkilled_mid_browser_call_leaves_no_browser;
    scenario_sigkill(Mid::PageHoldsOn) =>
        b6_claude_with_the_real_browser_supervisor_sigkilled_on_a_page_that_asks_to_stay_leaves_no_browser,
        b6_codex_with_the_real_browser_supervisor_sigkilled_on_a_page_that_asks_to_stay_leaves_no_browser;
    scenario_stopped(Mid::ModelTurn, Stop::Term) =>
        b7_claude_with_the_real_browser_supervisor_sigtermed_mid_turn_leaves_no_browser,
        b7_codex_with_the_real_browser_supervisor_sigtermed_mid_turn_leaves_no_browser;
}
