//! What a finished run directory holds (docs/reference.md#run-directory): a copy of its flow, so
//! that `persona replay` and `persona report` work on it moved elsewhere; and no browser files
//! or scratch, unless `--keep-scratch`.

use crate::kit::*;

fn clean_run(sb: &Sandbox, extra: &[&str]) -> std::process::Output {
    sb.set_script(&format!(
        "{}\n{}\n",
        claude_navigate("t1", "https://staging.example.com/welcome"),
        claude_tool_ok("t1")
    ));
    let out = sb.run_cmd("claude", extra).output().unwrap();
    assert_exit_code(&out, 0);
    out
}

/// The run directory moved to another folder, the flow file it ran gone, and a `flow.md` that
/// is no flow where the commands run: replay and report read the run directory's own copy.
#[test]
fn a_run_directory_moved_elsewhere_replays_and_reports_without_its_flow() {
    let sb = Sandbox::with_user_files();
    clean_run(&sb, &[]);
    let run_dir = sb.run_dirs().pop().unwrap();
    let moved = sb
        .root
        .join("downloaded")
        .join(run_dir.file_name().unwrap());
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&run_dir, &moved).unwrap();
    std::fs::remove_file(sb.flow()).unwrap();
    std::fs::write(sb.root.join("flow.md"), "not a flow").unwrap();
    let moved_arg = moved.display().to_string();

    let replay = sb
        .leopold(&["persona", "replay", &moved_arg])
        .output()
        .unwrap();
    assert_exit_code(&replay, 0);
    assert_has(
        &stdout(&replay),
        "replay: 1 action checked against flow `checkout`: 0 violations",
    );
    assert_has(&stdout(&replay), "hash chain intact");

    let report = sb
        .leopold(&["persona", "report", &moved_arg])
        .output()
        .unwrap();
    assert_exit_code(&report, 0);
    assert!(!stderr(&report).contains("warning"), "{}", stderr(&report));
    let page = std::fs::read_to_string(moved.join("report.html")).unwrap();
    assert!(!page.contains("could not be read now"), "{page}");
    // The flow shown is the run's copy, under the name of the file it was copied from.
    assert!(page.contains("its copy in the run directory"), "{page}");
    assert!(page.contains(&sb.flow().display().to_string()), "{page}");
    assert!(page.contains("staging.example.com"), "{page}");

    // A run directory from before the copy: replay says, in one line, to pass --flow, and
    // does with it.
    std::fs::remove_file(moved.join("flow.md")).unwrap();
    let rj = moved.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rj).unwrap()).unwrap();
    v["flow_path"] = sb.flow().display().to_string().into();
    v.as_object_mut().unwrap().remove("flow_source");
    std::fs::write(&rj, v.to_string()).unwrap();
    let old = sb
        .leopold(&["persona", "replay", &moved_arg])
        .output()
        .unwrap();
    assert_exit_code(&old, 2);
    let err = stderr(&old);
    assert_has(&err, "holds no copy of its flow (flow.md");
    assert_has(&err, "pass the flow with --flow FILE");
    assert!(
        !moved.join("flow.md").exists(),
        "a refused replay writes nothing"
    );
    std::fs::write(sb.flow(), FLOW).unwrap();
    let flow_arg = sb.flow().display().to_string();
    let with_flow = sb
        .leopold(&["persona", "replay", &moved_arg, "--flow", &flow_arg])
        .output()
        .unwrap();
    assert_exit_code(&with_flow, 0);
}

/// A provisioned browser (its MCP server a stand-in that browses nothing, so outside the
/// browser's box: `--no-contain`), and a boxed run: the browser's files and the scratch are gone
/// once the run ended; `--keep-scratch` keeps them and says so, on stderr and in the summary.
#[test]
fn the_browser_files_and_the_scratch_go_when_a_run_ends_unless_kept() {
    for keep in [false, true] {
        let sb = Sandbox::unboxed();
        sb.set_script(&mcp_script(&[(
            "browser_navigate",
            serde_json::json!({"url": "https://staging.example.com/welcome"}),
        )]));
        let args = stand_in_browser(&sb, keep);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sb.run_cmd("claude", &args).output().unwrap();
        assert_exit_code(&out, 0);
        // The gateway started the stand-in as the run's provisioned browser.
        assert!(sb.kit().join("server-started").exists(), "{}", stderr(&out));
        let run_dir = sb.run_dirs().pop().unwrap();
        assert_eq!(run_dir.join("browser/profile").is_dir(), keep);
        assert_kept_says_so(&out, keep);

        let sb = Sandbox::with_user_files();
        let out = clean_run(&sb, if keep { &["--keep-scratch"] } else { &[] });
        let run_dir = sb.run_dirs().pop().unwrap();
        assert_eq!(run_dir.join("scratch").is_dir(), keep);
        assert_kept_says_so(&out, keep);
    }
}

/// A run with a provisioned browser SIGKILLed once its worker runs: `persona recover` archives
/// it as a finished run is, its flow's copy named relatively and its browser's files gone, or
/// kept when the run was given `--keep-scratch`.
#[test]
fn a_crashed_run_is_archived_self_contained_and_without_its_browser_files_unless_kept() {
    for keep in [false, true] {
        let sb = Sandbox::unboxed();
        sb.set_script("@sleep 60000\n");
        let args = stand_in_browser(&sb, keep);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = sb
            .run_cmd("claude", &args)
            .env("__LEOPOLD_PAUSE_AT", "launched")
            .env("__LEOPOLD_PAUSE_MARKER", sb.marker())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_for(15, "the supervisor to pause once launched", || {
            sb.marker().exists()
        });
        let run_dir = sb.run_dirs().pop().unwrap();
        assert!(run_dir.join("browser/profile").is_dir());
        signal(child.id(), "KILL");
        let _ = child.wait();

        let out = sb.recover();
        assert_exit_code(&out, 0);
        assert_has(&stdout(&out), "crashed run");
        assert_eq!(run_dir.join("browser/profile").is_dir(), keep);
        let rj = sb.run_json();
        assert_eq!(rj["end"]["outcome"], "recovered");
        assert_eq!(rj["flow_path"], "flow.md");
        assert_eq!(rj["browser"]["ref_map"], "browser/refs.json");
        assert_eq!(
            std::fs::read(run_dir.join("flow.md")).unwrap(),
            std::fs::read(sb.flow()).unwrap()
        );
    }
}

/// `persona run`'s arguments for a provisioned browser whose `playwright-mcp` is a stand-in (the
/// stub browser, which takes none of its arguments, and a file that says it was started), no
/// evidence, and `--keep-scratch` if `keep`.
fn stand_in_browser(sb: &Sandbox, keep: bool) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let stub = sb.stub_browser("browser");
    let server = sb.kit().join("playwright-mcp");
    std::fs::create_dir_all(sb.kit()).unwrap();
    std::fs::write(
        &server,
        format!(
            "#!/bin/sh\necho started >> {}\nexec {} --log {}\n",
            sb.kit().join("server-started").display(),
            stub.bin.display(),
            stub.log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = server.display().to_string();
    let mut args = ["--browser", "playwright", "--chromium", "/bin/true"]
        .into_iter()
        .chain(["--playwright-mcp", &server, "--evidence", "none"])
        .map(str::to_owned)
        .collect::<Vec<_>>();
    if keep {
        args.push("--keep-scratch".into());
    }
    args
}

fn assert_kept_says_so(out: &std::process::Output, keep: bool) {
    let kept = "--keep-scratch: the run directory keeps the browser's profile";
    assert_eq!(stderr(out).contains(kept), keep, "{}", stderr(out));
    let summary = format!("leopold: warning: {kept}");
    assert_eq!(stdout(out).contains(&summary), keep, "{}", stdout(out));
}
