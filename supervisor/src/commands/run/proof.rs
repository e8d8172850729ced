//! Step 5's proof: the guard, as wired, denies an off-allowlist navigation before the worker
//! starts.

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

use super::plan::Plan;
use crate::process::{describe_status, wait_or_kill};

/// The proof's own deadline for the wired guard command.
const PROOF_TIMEOUT: Duration = Duration::from_secs(10);

/// A host the flow does not allow, for the probe; `None` when the flow allows every candidate.
pub fn probe_host(flow: &leopold_flows::Flow) -> Option<&'static str> {
    [
        "leopold-proof.invalid",
        "leopold-proof.example.net",
        "leopold-proof.test",
    ]
    .into_iter()
    .find(|h| !flow.judge_url(&format!("https://{h}/")).is_inside())
}

/// Runs the exact wired command through `sh -c` on an off-allowlist navigation for this project
/// and requires exit 2: a guard that is wired but cannot run (bad path, broken binary, unreadable
/// ACTIVE.json) is caught before the worker starts.
pub fn prove_guard(plan: &Plan) -> anyhow::Result<()> {
    use std::io::Read as _;
    let host = probe_host(&plan.flow)
        .context("the flow allows every probe host; cannot prove the guard")?;
    let payload = json!({
        "session_id": "leopold-proof",
        "hook_event_name": "PreToolUse",
        "cwd": plan.paths.project,
        "permission_mode": "default",
        "tool_name": "mcp__leopold_proof__navigate",
        "tool_input": {"url": format!("https://{host}/")},
        "tool_use_id": "leopold-proof",
    });
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&plan.ctx.guard_command)
        .current_dir(&plan.paths.project)
        .env("CLAUDE_PROJECT_DIR", &plan.paths.project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("cannot run `sh` to prove the wired guard")?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(payload.to_string().as_bytes());
    }
    let status = wait_or_kill(&mut child, PROOF_TIMEOUT)?;
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.by_ref().take(4096).read_to_string(&mut stderr);
    }
    match status {
        Some(s) if s.code() == Some(2) => Ok(()),
        Some(s) => anyhow::bail!(
            "the wired guard did not deny an off-allowlist navigation ({}; stderr: {:?}): refusing to start the worker\n(command: {})\n(hint: run `leopold doctor`)",
            describe_status(&s),
            stderr.trim(),
            plan.ctx.guard_command
        ),
        None => anyhow::bail!(
            "the wired guard did not answer within {}s: refusing to start the worker\n(command: {})",
            PROOF_TIMEOUT.as_secs(),
            plan.ctx.guard_command
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_host_is_one_the_flow_does_not_allow() {
        let flow = |list: &str| {
            leopold_flows::Flow::parse(
                &format!("+++\nname = \"f\"\nallowlist = [{list}]\n+++\n"),
                std::path::Path::new("f.md"),
            )
            .unwrap()
        };
        assert_eq!(
            probe_host(&flow("\"staging.example.com\"")),
            Some("leopold-proof.invalid")
        );
        assert_eq!(
            probe_host(&flow("\"invalid\"")),
            Some("leopold-proof.example.net")
        );
        assert_eq!(
            probe_host(&flow("\"invalid\", \"example.net\", \"test\"")),
            None
        );
    }
}
