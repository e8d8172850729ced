//! The harness behaviours Leopold's design rests on (docs/harness-facts.md#1-what-fails-open,
//! docs/harness-facts.md#2-when-hooks-are-not-in-force), pinned on the real
//! CLIs: if an upgrade changes one, these fail before a persona run silently loses its guard.

use std::time::Duration;

use leopold_tests::{checkout, record_fixture, require_cli, Harness, ModelServer, Sandbox};

const PROMPT: &str = "Walk the checkout flow.";
const TIMEOUT: Duration = Duration::from_secs(60);

/// Scenario 2's premise, at the hook level: the guard's command cannot run (binary moved away).
/// Claude with `onFailure: "block"` denies every matched call; Codex fails open and lets every
/// call through, which is why the supervisor must validate the stream itself.
#[test]
fn an_unrunnable_guard_blocks_on_claude_and_fails_open_on_codex() {
    for h in Harness::ALL {
        let Some(bin) = require_cli(h) else { continue };
        let sb = Sandbox::new();
        let model = ModelServer::start(&sb, &checkout::script());
        let browser = sb.stub_browser(checkout::SERVER);
        let missing = sb.root.join("moved-away/leopold");
        let command = format!("'{}' persona guard", missing.display());
        let cmd = sb.harness_command(h, &bin, &model, &browser, PROMPT, Some(&command));
        let run = sb.run(cmd, TIMEOUT);
        assert!(run.status.success(), "{run}");
        record_fixture(
            &format!("{}-unrunnable-guard-stream.jsonl", h.as_str()),
            &sb.scrub(&run.stdout, &[&bin, &browser.bin]),
        );
        let reached = browser.calls().len();
        match h {
            Harness::Claude => assert_eq!(reached, 0, "Claude let calls past a failed hook\n{run}"),
            Harness::Codex => assert_eq!(
                reached,
                checkout::script().call_count(),
                "Codex no longer fails open on an unrunnable hook: update docs/harness-facts.md and the supervisor\n{run}"
            ),
        }
    }
}

/// Scenario 3's premise: one invalid field in the project's `.claude/settings.json` makes Claude
/// skip the whole file, hooks included, silently under `-p`; the same hook given again through
/// `--settings` still fires (and runs once, not twice).
#[test]
fn claude_skips_an_invalid_project_settings_file_but_honours_dash_dash_settings() {
    let Some(bin) = require_cli(Harness::Claude) else {
        return;
    };
    for with_flag in [false, true] {
        let sb = Sandbox::new();
        let model = ModelServer::start(&sb, &checkout::script());
        let browser = sb.stub_browser(checkout::SERVER);
        // Counts its own invocations, denies everything.
        let counter = sb.logs.join("hook-calls");
        let hook = sb.root.join("deny-all.sh");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\ncat >/dev/null\necho x >> '{}'\necho 'deny-all hook: denied' >&2\nexit 2\n",
                counter.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let command = format!("'{}'", hook.display());
        let settings = sb.wire_claude_hook(&command);
        // The field Claude rejects: `permissions.allow` must be a list.
        let mut doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
        doc["permissions"] = serde_json::json!({"allow": 5});
        std::fs::write(&settings, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();

        let mut cmd = sb.claude_command(&bin, &model, &browser, PROMPT);
        if with_flag {
            // The same handler, through --settings (what `persona run` adds).
            let extra = sb.logs.join("guard-settings.json");
            let hooks = serde_json::json!({"hooks": doc["hooks"].clone()});
            std::fs::write(&extra, serde_json::to_vec(&hooks).unwrap()).unwrap();
            cmd.arg("--settings").arg(&extra);
        }
        let run = sb.run(cmd, TIMEOUT);
        assert!(run.status.success(), "{run}");
        let hook_runs = std::fs::read_to_string(&counter)
            .unwrap_or_default()
            .lines()
            .count();
        let calls = checkout::script().call_count();
        if with_flag {
            assert_eq!(
                browser.calls().len(),
                0,
                "--settings hook did not fire\n{run}"
            );
            assert_eq!(hook_runs, calls, "the hook ran once per call\n{run}");
        } else {
            assert_eq!(
                browser.calls().len(),
                calls,
                "Claude now loads an invalid file?\n{run}"
            );
            assert_eq!(hook_runs, 0, "{run}");
        }
    }
}
