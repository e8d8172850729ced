//! The box's limits and what it takes in, with the fake worker as the adversary (issue #22: a
//! boxed worker started 3,000 processes, allocated 4 GiB, left 3 GiB in its scratch, made
//! Leopold write hundreds of MB of records, forged events with full URLs, and read the home
//! folder its harness binary was kept in). The limits are small here so that the tests stay
//! cheap; the witnesses are the kernel's (the run's outcome comes from its counters), the
//! process table, the cgroup tree and the bytes on disk.

use std::path::Path;
use std::process::Output;

use crate::kit::*;

/// Bytes under `dir`, symlinks not followed.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        total += if m.is_dir() {
            bytes_under(&e.path())
        } else {
            m.len()
        };
    }
    total
}

/// Runs the script boxed with `limits`, and checks what every stopped run must show: exit 5,
/// outcome `over_limit` with a reason naming `flag`, and nothing of the run left in the process
/// table, the cgroup tree or the scratch.
fn stopped_at(sb: &Sandbox, script: &str, limits: &[&str], flag: &str) -> Output {
    sb.set_script(script);
    // The scratch kept (`--keep-scratch`), so that what of it reached the disk can be measured.
    let args = [limits, &["--keep-scratch"]].concat();
    let out = sb.run_cmd("claude", &args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "{}{err}", stdout(&out));
    let run = sb.run_json();
    assert_eq!(run["end"]["outcome"], "over_limit", "{run}");
    let reason = run["end"]["reason"].as_str().unwrap_or_default();
    assert_has(reason, flag);
    let said = format!("{}{err}", stdout(&out));
    assert_has(&said, flag);
    let run_id = run["run_id"].as_str().unwrap();
    assert!(processes_of_run(run_id).is_empty(), "processes left");
    assert!(
        cgroups_of_run(run_id).is_empty(),
        "{:?}",
        cgroups_of_run(run_id)
    );
    let scratch = sb.run_dir().join("scratch");
    assert!(scratch.is_dir(), "the scratch is kept");
    assert!(
        bytes_under(&scratch) < 64 << 10,
        "the scratch on disk holds {} bytes",
        bytes_under(&scratch)
    );
    out
}

#[test]
fn a_worker_forking_3000_processes_is_stopped_at_max_procs() {
    let sb = Sandbox::with_user_files();
    stopped_at(
        &sb,
        "@sh i=0; while [ $i -lt 3000 ]; do sleep 60 & i=$((i+1)); done; wait\n@exit 0\n",
        &["--max-procs", "64"],
        "--max-procs 64",
    );
}

#[test]
fn a_worker_allocating_past_max_memory_is_stopped() {
    let sb = Sandbox::with_user_files();
    stopped_at(
        &sb,
        "@alloc 1024\n@sleep 20000\n@exit 0\n",
        &["--max-memory", "256MiB"],
        "--max-memory 256 MiB",
    );
    assert!(
        sb.results_lines().iter().all(|r| r["op"] != "alloc"),
        "the worker held 1 GiB: {:?}",
        sb.results_lines()
    );
}

#[test]
fn a_worker_filling_its_scratch_is_stopped_and_leaves_nothing_on_disk() {
    let sb = Sandbox::with_user_files();
    stopped_at(
        &sb,
        "@sh head -c 300M /dev/zero > \"$HOME/big\"\n@sleep 20000\n@exit 0\n",
        &["--max-scratch", "64MiB"],
        "--max-scratch 64 MiB",
    );
    // The watcher may stop the worker between the write's "no space left" and the worker's
    // report of it, so a missing report is no failure; a report saying the write went through is.
    if let Some(sh) = sb.results_lines().first() {
        assert_eq!(sh["ok"], false, "the write past the size failed: {sh}");
    }
    assert!(!sb.run_dir().join("scratch/big").exists());
}

/// The positive control of the scratch: under its size the worker writes and reads its HOME,
/// Leopold's own files for the run are there, and the run is clean.
#[test]
fn the_scratch_holds_the_worker_files_and_leopolds_own_under_its_size() {
    let sb = Sandbox::scripted(
        "@sh head -c 1M /dev/zero > \"$HOME/small\" && test -s \"$HOME/small\" && test -f \"$HOME/.codex/config.toml\"\n@exit 0\n",
    );
    let out = sb.run_with_env(
        "codex",
        &["--max-scratch", "64MiB", "--keep-scratch"],
        &[("MOCK_API_KEY", "none")],
    );
    assert_exit_code(&out, 0);
    assert_eq!(
        sb.results_lines()[0]["ok"],
        true,
        "{:?}",
        sb.results_lines()
    );
    // Kept (`--keep-scratch`), the scratch on disk holds Leopold's files, not the worker's.
    assert!(sb.run_dir().join("scratch").is_dir());
    assert!(!sb.run_dir().join("scratch/small").exists());
}

/// A flood of guard events past `--max-records` stops the run and the file stops growing; a
/// forged event carrying full URLs lands host-only.
#[test]
fn a_flood_of_events_stops_at_max_records_and_a_forged_url_lands_host_only() {
    let sb = Sandbox::with_user_files();
    let forged = r#"{"event":"persona_guard_block","tool_use_id":"forged-1","host":"https://user:pw@shop.example/reset?token=s3cret","reason":"outside_allowlist","call":{"url":"x","leopold_url":{"scheme":"https","host":"shop.example","path":"/reset?token=s3cret"},"element":"see https://evil.example/?token=s3cret"}}"#;
    let filler = format!(
        r#"{{"event":"persona_guard_block","tool_use_id":"flood","host":"x.example","reason":"outside_allowlist","tool":"{}"}}"#,
        "f".repeat(400)
    );
    stopped_at(
        &sb,
        &format!("@events 1 {forged}\n@events 3000 {filler}\n@sleep 20000\n@exit 0\n"),
        &["--max-records", "64KiB"],
        "--max-records 64 KiB",
    );
    // The run's own events file, new with the run.
    let text = std::fs::read_to_string(sb.run_dir().join("events.jsonl")).unwrap();
    let grown = text.len() as u64;
    // The proof's own event is written by the guard, the rest by the receiver, under the cap.
    assert!(
        grown <= (64 << 10) + 4096,
        "events.jsonl grew by {grown} bytes"
    );
    assert!(grown > 32 << 10, "the flood reached the file: {grown}");
    assert!(!text.contains("s3cret"), "a URL's secret landed");
    let line = text
        .lines()
        .find(|l| l.contains("forged-1"))
        .expect("the forged event");
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["host"], "shop.example");
    assert_eq!(v["call"]["leopold_url"]["path"], "/reset");
}

/// The harness binary kept in the home folder, secrets beside it and in the project, secret
/// variables in the environment: none reaches the worker; the worker runs (the positive
/// control: it reads the flow, bound for it). A script harness there is refused outright.
#[test]
fn a_harness_kept_in_the_home_folder_brings_no_secret_into_the_box() {
    let sb = Sandbox::with_user_files();
    let harness = sb.home.join("claude");
    std::fs::copy(fake_worker(), &harness).unwrap();
    std::fs::create_dir_all(sb.home.join(".aws")).unwrap();
    std::fs::write(
        sb.home.join(".aws/credentials"),
        "aws_secret_access_key = planted\n",
    )
    .unwrap();
    std::fs::write(sb.project.join(".env"), "DB_PASSWORD=planted\n").unwrap();
    let env_dump = sb.kit().join("env.txt");
    sb.set_script(&format!(
        "@read {}\n@read {}\n@read {}\n@sh env > {}\n@exit 0\n",
        sb.home.join(".aws/credentials").display(),
        sb.project.join(".env").display(),
        sb.flow().display(),
        env_dump.display(),
    ));
    let (flow, project, bin, mcp) = (
        sb.flow().display().to_string(),
        sb.project.display().to_string(),
        harness.display().to_string(),
        sb.stub_mcp_config().display().to_string(),
    );
    let args = [
        "persona",
        "run",
        &flow,
        "--harness",
        "claude",
        "--project",
        &project,
        "--harness-bin",
        &bin,
        "--mcp-config",
        &mcp,
    ];
    let out = sb
        .leopold(&args)
        .env("ANTHROPIC_SECRET_OTHER", "planted-anthropic-other")
        .env("AWS_SECRET_ACCESS_KEY", "planted-aws")
        .env("CLAUDE_CODE_SOMETHING_SECRET", "planted-claude-code")
        .env("ANTHROPIC_API_KEY", "the-key")
        .output()
        .unwrap();
    assert_exit_code(&out, 0);
    let results = sb.results_lines();
    let reads = results_for(&results, "read");
    assert_eq!(reads.len(), 3, "{reads:?}");
    assert_eq!(
        reads[0]["ok"], false,
        "~/.aws beside the harness: {:?}",
        reads[0]
    );
    assert_eq!(reads[1]["ok"], false, "the project's .env: {:?}", reads[1]);
    assert_eq!(
        reads[2]["ok"], true,
        "the flow (positive control): {:?}",
        reads[2]
    );
    let env = std::fs::read_to_string(&env_dump).unwrap();
    // The key's variable passes, holding the relay's placeholder: the key is not in the box.
    assert_has(
        &env,
        "ANTHROPIC_API_KEY=the-leopold-placeholder-ANTHROPIC-API-KEY-",
    );
    assert!(!env.contains("the-key"), "{env}");
    assert!(!env.contains("planted"), "{env}");

    std::fs::write(&harness, "#!/bin/sh\nexit 0\n").unwrap();
    let out = sb.leopold(&args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_has(&err, "outside an npm package");
}
