//! Step 5's proof: the guard, as wired, denies an off-allowlist navigation before the worker
//! starts, or, in the box, before the worker can reach its model.

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

/// Runs the exact wired command through `/bin/sh -c` on an off-allowlist navigation for this
/// project and requires exit 2: a guard that is wired but cannot run (bad path, broken binary,
/// unreadable ACTIVE.json) is caught before the worker starts.
///
/// The command runs on a thread of its own: without the box from the moment ACTIVE.json exists
/// (all it reads), while the run wires, and [`Proof::verdict`] waits for its answer before the
/// worker is spawned; in the box from the moment the worker is spawned, and the verdict comes
/// before the worker may reach its model (the box holds that connection: no model answer, no
/// tool call). A proof dropped unjudged (the run stopped before) is still waited for, and the
/// run drops it before its teardown: no proof outlives the run's lock.
pub fn start_proof(plan: &Plan, started: &super::Started) -> anyhow::Result<Proof> {
    let root = match &plan.bwrap {
        Some(_) => boxed_view(
            &plan.paths,
            &started.run_id,
            &started.state_file,
            &started.events_file(plan),
        )?,
        None => plan.paths.project.clone(),
    };
    start(
        &plan.flow,
        plan.ctx.guard_command.clone(),
        plan.paths.project.clone(),
        root,
    )
}

/// A boxed run's guard finds its run's state as the project's ACTIVE.json (the box binds the
/// state file there, and shows nothing of other runs). The proof, outside the box, is given the
/// same view: a root of its own, `active/<run_id>.proof/`, whose `.leopold/persona/ACTIVE.json`
/// links to the run's state file and whose `events.jsonl` links to the run's own events file,
/// where the guard's denial lands beside the boxed worker's. Removed once the proof has answered (and by
/// recovery after a crash).
fn boxed_view(
    paths: &crate::state::PersonaPaths,
    run_id: &str,
    state_file: &std::path::Path,
    events_file: &std::path::Path,
) -> anyhow::Result<std::path::PathBuf> {
    let root = paths.proof_root(run_id);
    let persona = root.join(".leopold").join("persona");
    let made = std::fs::create_dir_all(&persona).and_then(|()| {
        std::os::unix::fs::symlink(state_file, persona.join("ACTIVE.json"))?;
        std::os::unix::fs::symlink(events_file, persona.join("events.jsonl"))
    });
    made.with_context(|| format!("cannot make the guard's proof view {}", root.display()))?;
    Ok(root)
}

/// Starts the wired `command` in `root` (the project, or a boxed run's view of it).
fn start(
    flow: &leopold_flows::Flow,
    command: String,
    project: std::path::PathBuf,
    root: std::path::PathBuf,
) -> anyhow::Result<Proof> {
    let host =
        probe_host(flow).context("the flow allows every probe host; cannot prove the guard")?;
    let payload = json!({
        "session_id": "leopold-proof",
        "hook_event_name": "PreToolUse",
        "cwd": root,
        "permission_mode": "default",
        "tool_name": "mcp__leopold_proof__navigate",
        "tool_input": {"url": format!("https://{host}/")},
        "tool_use_id": "leopold-proof",
    })
    .to_string();
    let thread = std::thread::Builder::new()
        .name("leopold-proof".into())
        .spawn(move || {
            let verdict = run_proof(&command, &root, &project, &payload);
            if root != project {
                let _ = std::fs::remove_dir_all(&root);
            }
            verdict
        })
        .context("cannot start a thread to prove the wired guard")?;
    Ok(Proof {
        thread: Some(thread),
    })
}

/// The wired guard command, running on the proof's payload.
pub struct Proof {
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Proof {
    /// Waits for the guard's answer: `Ok` only when it denied (exit 2).
    pub fn verdict(mut self) -> anyhow::Result<()> {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(verdict)) => verdict,
            _ => anyhow::bail!(
                "the guard's proof stopped without a verdict: stopping the run before the worker acts"
            ),
        }
    }
}

impl Drop for Proof {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run_proof(
    command: &str,
    root: &std::path::Path,
    project: &std::path::Path,
    payload: &str,
) -> anyhow::Result<()> {
    use std::io::Read as _;
    // `/bin/sh`, as Node's `shell: true` runs a hook: no search of PATH (a failed exec per entry
    // before the shell is found).
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("cannot run `/bin/sh` to prove the wired guard")?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(payload.as_bytes());
    }
    let status = wait_or_kill(&mut child, PROOF_TIMEOUT)?;
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.by_ref().take(4096).read_to_string(&mut stderr);
    }
    match status {
        Some(s) if s.code() == Some(2) => Ok(()),
        Some(s) => anyhow::bail!(
            "the wired guard did not deny an off-allowlist navigation ({}; stderr: {:?}): stopping the run before the worker acts\n(command: {command})\n(hint: run `leopold doctor`)",
            describe_status(&s),
            stderr.trim(),
        ),
        None => anyhow::bail!(
            "the wired guard did not answer within {}s: stopping the run before the worker acts\n(command: {command})",
            PROOF_TIMEOUT.as_secs(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::checkout_flow;

    fn prove(command: &str) -> anyhow::Result<()> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().to_path_buf();
        start(&checkout_flow(""), command.to_owned(), p.clone(), p)
            .unwrap()
            .verdict()
    }

    #[test]
    fn only_a_denial_proves_the_guard() {
        prove("cat > /dev/null; exit 2").unwrap();
        let e = format!("{:#}", prove("exit 0").unwrap_err());
        assert!(e.contains("did not deny") && e.contains("exit 0"), "{e}");
        let e = format!("{:#}", prove("echo broken >&2; exit 1").unwrap_err());
        assert!(
            e.contains("broken") && e.contains("stopping the run before the worker acts"),
            "{e}"
        );
    }

    #[test]
    fn the_guard_is_given_the_probe_on_stdin_and_runs_in_the_project() {
        let (dir, seen) = crate::test_support::temp_path("seen");
        let cmd = format!(
            "cat > '{}'; pwd >> '{}'; exit 2",
            seen.display(),
            seen.display()
        );
        let p = dir.path().to_path_buf();
        start(&checkout_flow(""), cmd, p.clone(), p)
            .unwrap()
            .verdict()
            .unwrap();
        let text = std::fs::read_to_string(&seen).unwrap();
        assert!(text.contains("https://leopold-proof.invalid/"), "{text}");
        assert!(
            text.trim_end()
                .ends_with(&dir.path().canonicalize().unwrap().display().to_string()),
            "{text}"
        );
    }

    #[test]
    fn a_proof_dropped_unjudged_is_waited_for() {
        let (dir, done) = crate::test_support::temp_path("done");
        let cmd = format!("sleep 0.3; touch '{}'; exit 2", done.display());
        let p = dir.path().to_path_buf();
        let proof = start(&checkout_flow(""), cmd, p.clone(), p).unwrap();
        drop(proof);
        // Dropping returned only once the guard had exited: nothing of it is left running.
        assert!(done.exists());
    }

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
