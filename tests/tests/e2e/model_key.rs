//! Issue #22: the model key is not in the box, on the real CLIs. Each harness runs boxed with
//! its key variable set on the supervisor; the box holds a placeholder, and the model (the
//! scripted model, which logs the credential header of every request) must still receive the
//! real key on every request: the relay filled it in, and the real CLI worked with the
//! placeholder. No file the run left holds the key. (What the box holds, read from inside by an
//! adversary: `supervisor/tests/lifecycle/model_key.rs`.)

use std::process::Command;
use std::time::Duration;

use leopold_tests::script::Script;
use leopold_tests::witness::{snapshot, Entry};
use leopold_tests::{leopold_bin, require_cli, run_bounded, Harness, ModelServer, Sandbox};

/// The key the kit's hermetic environment gives both harnesses.
const KEY: &str = "scripted-model-no-secret";

fn scenario(h: Harness) {
    let Some(cli) = require_cli(h) else {
        return;
    };
    let sb = Sandbox::new();
    let model = ModelServer::start(
        &sb,
        &Script {
            turns: Vec::new(),
            final_answer: "Nothing to report.".into(),
        },
    );
    let mcp_config = sb.checkout_setup(h, &model);
    let mut cmd = Command::new(leopold_bin());
    cmd.args([
        "persona",
        "run",
        "flows/checkout.md",
        "--harness",
        h.as_str(),
    ])
    .arg("--project")
    .arg(&sb.project)
    .arg("--harness-bin")
    .arg(&cli)
    .arg("--mcp-config")
    .arg(&mcp_config);
    sb.hermetic(&mut cmd, &model);
    let run = run_bounded(cmd, Duration::from_secs(50));
    assert_eq!(run.status.code(), Some(0), "{run}");
    let requests = model.requests();
    assert!(!requests.is_empty(), "the model was never asked\n{run}");
    let want = match h {
        Harness::Claude => KEY.to_owned(),
        Harness::Codex => format!("Bearer {KEY}"),
    };
    for r in &requests {
        assert_eq!(
            r["credential"],
            want.as_str(),
            "{} {}\n{run}",
            r["method"],
            r["path"]
        );
    }
    // Every file the run left, read as it is (links not followed, FIFOs not opened).
    for (path, entry) in snapshot(&[&sb.run_dir()], &[]) {
        if let Entry::File(bytes) = entry {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(KEY),
                "{} holds the key",
                path.display()
            );
        }
    }
}

per_harness! {
    scenario =>
        claude_gets_its_key_from_the_relay_not_the_box,
        codex_gets_its_key_from_the_relay_not_the_box;
}
