//! Issue #24, item 6, on the real CLIs: the model endpoint (the scripted model) answers every
//! model call 401, as one refusing the key does. The run stops within 10 s, far inside its
//! `--timeout`, as `model_failed` (exit 3): its reason names the endpoint's host, the status and
//! the variable to set, and nothing the harness said is saved as findings. (The same with the
//! fake worker, and 404, a closed port, a 429 or a 500: supervisor/tests/lifecycle/model_fail.rs.)

use std::time::{Duration, Instant};

use leopold_tests::{leopold_bin, require_cli, run_bounded, Harness, ModelServer, Sandbox};

fn a_401_stops_the_run(h: Harness) {
    let Some(cli) = require_cli(h) else {
        return;
    };
    let sb = Sandbox::new();
    let model = ModelServer::start_answering(&sb, 401);
    let mcp_config = sb.checkout_setup(h, &model);
    let mut cmd = sb.persona_run(&leopold_bin(), "flows/checkout.md", h, &cli, &model);
    cmd.arg("--mcp-config")
        .arg(&mcp_config)
        .args(["--timeout", "60s"]);
    let t = Instant::now();
    let run = run_bounded(cmd, Duration::from_secs(90));
    let took = t.elapsed();
    assert_eq!(run.status.code(), Some(3), "{run}");
    assert!(
        took <= Duration::from_secs(10),
        "took {took:?} to stop on a 401 (the timeout is 60 s)\n{run}"
    );
    assert!(
        model.requests().iter().any(|r| r["reply"] == "status"),
        "the model was never asked\n{run}"
    );
    let rj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.run_dir().join("run.json")).unwrap())
            .unwrap();
    assert_eq!(rj["end"]["outcome"], "model_failed", "{run}");
    let reason = rj["end"]["reason"].as_str().unwrap_or_default();
    let (port, var) = match h {
        Harness::Claude => (model.anthropic_port, "ANTHROPIC_API_KEY"),
        // The kit's Codex provider is `mock`, its env_key MOCK_API_KEY.
        Harness::Codex => (model.openai_port, "MOCK_API_KEY"),
    };
    for needle in [format!("127.0.0.1:{port}"), "401".into(), var.to_owned()] {
        assert!(reason.contains(&needle), "{needle} not in {reason}\n{run}");
    }
    assert!(!reason.contains("http://"), "{reason}");
    assert!(
        !sb.run_dir().join("findings.md").exists(),
        "the harness's error is not findings\n{run}"
    );
}

per_harness! {
    a_401_stops_the_run =>
        claude_a_401_from_the_model_stops_the_run_within_10s,
        codex_a_401_from_the_model_stops_the_run_within_10s;
}
