//! Several runs in one project: boxed runs run side by side, each guard judging by its own
//! run's flow; a `--no-contain` run runs alone and says why; a crash of several runs, or of one
//! beside a live one, is recovered like a crash of one run, the live one left alone.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::kit::*;

/// A second flow for the project: `billing`, whose allowlist holds none of checkout's hosts.
const BILLING: &str = "+++\nname = \"billing\"\nallowlist = [\"billing.example.com\"]\nstart_url = \"https://billing.example.com/\"\n+++\n# Billing\n\nLook at the invoices.\n";

/// `persona run FLOW --harness claude` in the sandbox's project with the fake worker following
/// `script`, in files of its own named `name` (script and record), and `extra` after.
fn run_named(sb: &Sandbox, flow: &Path, name: &str, script: &str, extra: &[&str]) -> Command {
    let script_file = sb.kit().join(format!("{name}.txt"));
    std::fs::create_dir_all(sb.kit()).unwrap();
    std::fs::write(&script_file, script).unwrap();
    let mut cmd = sb.run_flow(flow, "claude", extra);
    cmd.env("FAKE_WORKER_SCRIPT", &script_file)
        .env("FAKE_WORKER_RECORD", sb.kit().join(format!("{name}.json")));
    cmd
}

/// Starts `cmd` in a process group of its own, its output captured.
fn spawn(mut cmd: Command) -> Child {
    use std::os::unix::process::CommandExt as _;
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// The fake worker's script line that waits until the file `go` exists (the kit folder is
/// writable in the box, and the test makes the file from outside).
fn wait_for_go(go: &Path) -> String {
    format!(
        "@sh while [ ! -e '{}' ]; do sleep 0.05; done\n",
        go.display()
    )
}

/// Every live state file's (run id, flow, worker pid once recorded), boxed runs' and
/// ACTIVE.json's.
fn states(sb: &Sandbox) -> Vec<(String, String, Option<u32>)> {
    let top = sb.persona_dir().join("ACTIVE.json");
    top.exists()
        .then_some(top)
        .into_iter()
        .chain(sb.boxed_states())
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .filter_map(|v| {
            Some((
                v["run_id"].as_str()?.to_owned(),
                v["flow"].as_str()?.to_owned(),
                v["worker_pid"].as_u64().map(|p| p as u32),
            ))
        })
        .collect()
}

/// Waits until `n` runs have recorded their worker.
fn wait_for_workers(sb: &Sandbox, n: usize) -> Vec<(String, String, Option<u32>)> {
    wait_for(20, &format!("{n} live workers"), || {
        states(sb).iter().filter(|s| s.2.is_some()).count() == n
    });
    states(sb)
}

/// The run directory whose run.json names `flow`, and that run.json.
fn run_of_flow(sb: &Sandbox, flow: &str) -> (PathBuf, serde_json::Value) {
    sb.run_dirs()
        .into_iter()
        .find_map(|d| {
            let rj: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).ok()?).ok()?;
            (rj["flow"] == flow).then_some((d, rj))
        })
        .unwrap_or_else(|| panic!("no finished run of flow {flow}"))
}

/// The journal's action outcomes (the header line skipped).
fn outcomes(run_dir: &Path) -> Vec<String> {
    std::fs::read_to_string(run_dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["outcome"].to_string())
        .collect()
}

#[test]
fn two_boxed_runs_of_two_flows_run_side_by_side_each_judged_by_its_own_flow() {
    let sb = Sandbox::with_user_files();
    let billing = sb.root.join("billing.md");
    std::fs::write(&billing, BILLING).unwrap();
    let before = sb.snapshot();
    let go = sb.kit().join("go");
    // The witness: one call that checkout allows and billing does not, made by both guards
    // only once both runs are live. Before it, each worker looks at the project's state in its
    // box: its own run's ACTIVE.json is there, nothing of the other run's nor the project's lock.
    let p = sb.persona_dir().display().to_string();
    let script = format!(
        "{}@sh test -s '{p}/ACTIVE.json' && test ! -e '{p}/active' && test ! -e '{p}/run.lock'\n\
         @guard mcp__browser__navigate https://staging.example.com/cart\n@exit 0\n",
        wait_for_go(&go)
    );
    let a = spawn(run_named(&sb, &sb.flow(), "a", &script, &[]));
    let b = spawn(run_named(&sb, &billing, "b", &script, &[]));
    let live = wait_for_workers(&sb, 2);
    let mut flows: Vec<&str> = live.iter().map(|s| s.1.as_str()).collect();
    flows.sort_unstable();
    assert_eq!(flows, ["billing", "checkout"], "{live:?}");
    assert!(
        !sb.persona_dir().join("ACTIVE.json").exists(),
        "a boxed run keeps its state to itself"
    );
    std::fs::write(&go, "").unwrap();
    for (name, child) in [("checkout", a), ("billing", b)] {
        let out = wait_output(child, 30);
        assert_exit_code(&out, 0);
        assert_has(&stdout(&out), &format!("flow `{name}`"));
    }

    let looked = sb.results_lines();
    let looked = results_for(&looked, "sh");
    // The waits for `go` are `sh` lines too: every one ran, and every look found only its own.
    assert_eq!(looked.len(), 4, "{looked:?}");
    assert!(looked.iter().all(|r| r["ok"] == true), "{looked:?}");
    let (checkout_dir, rj) = run_of_flow(&sb, "checkout");
    assert_eq!(rj["end"]["outcome"], "clean", "{rj}");
    assert_eq!(outcomes(&checkout_dir), ["\"completed\""]);
    let (billing_dir, rj) = run_of_flow(&sb, "billing");
    assert_eq!(rj["end"]["outcome"], "clean", "{rj}");
    assert_eq!(outcomes(&billing_dir), ["\"denied\""]);
    // The denial is billing's guard's, in the project's record, naming its flow.
    let events = sb.events_text();
    assert!(
        events.lines().any(|l| l.contains("\"flow\":\"billing\"")
            && l.contains("staging.example.com")
            && l.contains("outside_allowlist")),
        "{events}"
    );
    assert!(
        !events
            .lines()
            .any(|l| l.contains("\"flow\":\"checkout\"") && l.contains("toolu_fake")),
        "checkout's guard denied nothing: {events}"
    );
    assert_eq!(sb.snapshot(), before);
    assert!(states(&sb).is_empty());
    assert!(
        !sb.persona_dir().join("active").exists(),
        "{:?}",
        sb.persona_listing()
    );
}

#[test]
fn a_no_contain_run_runs_alone_and_says_why() {
    let sb = Sandbox::with_user_files();
    let go = sb.kit().join("go");
    let waits = format!("{}@exit 0\n", wait_for_go(&go));
    let before = sb.snapshot();

    // A boxed run is live: a `--no-contain` run is refused, naming it, and touches nothing.
    let boxed = spawn(run_named(&sb, &sb.flow(), "boxed", &waits, &[]));
    let live = wait_for_workers(&sb, 1);
    let refused = run_named(&sb, &sb.flow(), "alone", "@exit 0\n", &["--no-contain"])
        .output()
        .unwrap();
    assert_exit_code(&refused, 4);
    let e = stderr(&refused);
    assert_has(
        &e,
        "runs alone because it wires the project's settings file",
    );
    assert_has(
        &e,
        &format!("run {}: flow `checkout` under claude", live[0].0),
    );
    assert_eq!(
        sb.run_dirs().len(),
        1,
        "the refused run made no run directory"
    );
    assert_eq!(sb.snapshot(), before);
    std::fs::write(&go, "").unwrap();
    assert_exit_code(&wait_output(boxed, 30), 0);
    std::fs::remove_file(&go).unwrap();

    // A `--no-contain` run is live: a boxed run is refused, saying so.
    let alone = spawn(run_named(
        &sb,
        &sb.flow(),
        "alone",
        &waits,
        &["--no-contain"],
    ));
    let live = wait_for_workers(&sb, 1);
    let wired = sb.snapshot();
    let refused = run_named(&sb, &sb.flow(), "boxed", "@exit 0\n", &[])
        .output()
        .unwrap();
    assert_exit_code(&refused, 4);
    let e = stderr(&refused);
    assert_has(&e, "holding the project alone");
    assert_has(
        &e,
        "runs alone because it wires the project's settings file",
    );
    assert_has(&e, &format!("(run {})", live[0].0));
    assert_eq!(sb.run_dirs().len(), 2);
    assert_eq!(sb.snapshot(), wired, "nothing touched");
    std::fs::write(&go, "").unwrap();
    assert_exit_code(&wait_output(alone, 30), 0);
    assert_eq!(sb.snapshot(), before);
}

/// Kills a run's supervisor and worker, each by its process group.
fn kill_run(supervisor: &mut Child, worker: u32) {
    signal_group(supervisor.id(), "KILL");
    signal_group(worker, "KILL");
    let _ = supervisor.wait();
}

fn signal_group(pgid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg("--")
        .arg(format!("-{pgid}"))
        .status();
}

/// What recovery must leave of a crashed run: its run.json `recovered`, no state, no process.
fn assert_recovered(sb: &Sandbox, run_id: &str) {
    let rj: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.persona_dir().join("runs").join(run_id).join("run.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rj["end"]["outcome"], "recovered", "{rj}");
    assert!(!states(sb).iter().any(|s| s.0 == run_id));
    assert!(!sb
        .persona_dir()
        .join("active")
        .join(format!("{run_id}.lock"))
        .exists());
    assert!(
        processes_of_run(run_id).is_empty(),
        "run {run_id}: {:?}",
        processes_of_run(run_id)
    );
}

#[test]
fn two_sigkilled_boxed_runs_are_both_recovered() {
    let sb = Sandbox::with_user_files();
    let before = sb.snapshot();
    let script = "@grandchild 60\n@sleep 60000\n";
    let mut a = spawn(run_named(&sb, &sb.flow(), "a", script, &[]));
    let mut b = spawn(run_named(&sb, &sb.flow(), "b", script, &[]));
    let live = wait_for_workers(&sb, 2);
    for (child, (_, _, worker)) in [&mut a, &mut b].into_iter().zip(&live) {
        kill_run(child, worker.unwrap());
    }
    assert_eq!(states(&sb).len(), 2, "the crash left both states");

    let out = sb.recover();
    assert_exit_code(&out, 0);
    let said = stdout(&out);
    for (id, _, _) in &live {
        assert_has(&said, &format!("crashed run {id} archived"));
        assert_recovered(&sb, id);
    }
    assert_eq!(sb.snapshot(), before);
    assert_eq!(
        sb.persona_listing()
            .iter()
            .filter(|p| p.starts_with("active"))
            .count(),
        0
    );
    assert_has(&stdout(&sb.recover()), "nothing to recover");
}

#[test]
fn a_crashed_run_is_recovered_while_another_boxed_run_lives_on() {
    let sb = Sandbox::with_user_files();
    let go = sb.kit().join("go");
    let mut crashing = spawn(run_named(&sb, &sb.flow(), "a", "@sleep 60000\n", &[]));
    let first = wait_for_workers(&sb, 1);
    let living = spawn(run_named(
        &sb,
        &sb.flow(),
        "b",
        &format!("{}@exit 0\n", wait_for_go(&go)),
        &[],
    ));
    let both = wait_for_workers(&sb, 2);
    let crashed = first[0].clone();
    let live = both.iter().find(|s| s.0 != crashed.0).unwrap().clone();
    kill_run(&mut crashing, crashed.2.unwrap());

    // Doctor: the live run is named active, the crashed one is a problem recovery fixes.
    let (_, v) = super::doctor::doctor(&sb);
    let of = |check: &str| -> Vec<String> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == check)
            .map(|f| format!("{} {}", f["status"], f["message"]))
            .collect()
    };
    let (lock, stale) = (of("lock"), of("stale_active"));
    assert!(
        lock.len() == 1 && lock[0].contains(&live.0) && !lock[0].contains(&crashed.0),
        "{lock:?}"
    );
    assert!(
        stale.len() == 1 && stale[0].contains(&crashed.0) && stale[0].starts_with("\"problem\""),
        "{stale:?}"
    );

    let out = sb.recover();
    assert_exit_code(&out, 0);
    let said = stdout(&out);
    assert_has(&said, &format!("crashed run {} archived", crashed.0));
    assert_has(&said, &format!("left alone: live run {}", live.0));
    assert_recovered(&sb, &crashed.0);
    // The live run is untouched: its state and lock are there, its worker alive, and it ends
    // clean.
    assert_eq!(
        states(&sb).iter().map(|s| &s.0).collect::<Vec<_>>(),
        [&live.0]
    );
    assert!(!processes_of_run(&live.0).is_empty());
    let settings = sb
        .persona_dir()
        .join("runs")
        .join(&live.0)
        .join("guard-settings.json");
    assert!(
        settings.exists(),
        "the live run's --settings file is in use"
    );
    let listed = stdout(&sb.runs(&["--json"]));
    let v: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let outcome = |id: &str| {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["run_id"] == id)
            .map(|r| r["outcome"].clone())
    };
    assert_eq!(outcome(&live.0), Some("active".into()), "{v}");
    assert_eq!(outcome(&crashed.0), Some("recovered".into()), "{v}");
    std::fs::write(&go, "").unwrap();
    assert_exit_code(&wait_output(living, 30), 0);
    let rj: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sb.persona_dir().join("runs").join(&live.0).join("run.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rj["end"]["outcome"], "clean", "{rj}");
}

#[test]
fn a_malformed_state_file_is_refused_and_left_while_the_others_are_recovered() {
    let sb = Sandbox::with_user_files();
    let mut a = spawn(run_named(&sb, &sb.flow(), "a", "@sleep 60000\n", &[]));
    let crashed = wait_for_workers(&sb, 1).remove(0);
    kill_run(&mut a, crashed.2.unwrap());
    let bad = sb.persona_dir().join("active/20261203T000000Z-1.json");
    std::fs::write(&bad, "{\"version\": 99}").unwrap();

    let out = sb.recover();
    assert_exit_code(&out, 2);
    assert_has(
        &stdout(&out),
        &format!("crashed run {} archived", crashed.0),
    );
    let e = stderr(&out);
    assert!(
        e.contains("20261203T000000Z-1.json") && e.contains("aside"),
        "{e}"
    );
    assert_eq!(std::fs::read(&bad).unwrap(), b"{\"version\": 99}");
    assert_recovered(&sb, &crashed.0);
    // A run refuses to start over it, as over an unreadable ACTIVE.json, and touches nothing.
    let before = sb.snapshot();
    let out = run_named(&sb, &sb.flow(), "b", "@exit 0\n", &[])
        .output()
        .unwrap();
    assert_exit_code(&out, 2);
    assert_eq!(std::fs::read(&bad).unwrap(), b"{\"version\": 99}");
    assert_eq!(sb.snapshot(), before);
}
