//! Short-lived helper processes the supervisor waits for: the guard's proof, a harness's
//! `--version`. Each is bounded: a helper that hangs is killed, never waited for forever.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long `<harness> --version` may take. `claude --version` answers in well under a second; a
/// stuck one must not hold a run before it starts.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// Test-only: overrides [`VERSION_TIMEOUT`], in milliseconds.
const VERSION_TIMEOUT_ENV: &str = "__LEOPOLD_VERSION_TIMEOUT_MS";

/// Waits up to `within` for a short-lived helper process. Past that, or when it cannot be
/// waited for, it is killed and reaped: `Ok(None)` for a timeout.
///
/// The wait sleeps in `poll` on a pidfd, which the kernel wakes the moment the child exits: a
/// polling loop would add up to its period to every proof and probe (2 ms a turn, more on a busy
/// machine). Where pidfds are missing (Linux before 5.3) it falls back to that loop.
pub fn wait_or_kill(child: &mut Child, within: Duration) -> std::io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + within;
    // The child is not reaped before `try_wait` says so, so its pid cannot be reused meanwhile.
    let pidfd = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .and_then(|pid| {
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
        });
    let gave_up = loop {
        match child.try_wait() {
            Ok(Some(s)) => return Ok(Some(s)),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Ok(None);
        }
        match &pidfd {
            Some(fd) => {
                let timeout = rustix::event::Timespec::try_from(left).ok();
                let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
                match rustix::event::poll(&mut fds, timeout.as_ref()) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => break Err(e.into()),
                }
            }
            None => std::thread::sleep(left.min(Duration::from_millis(2))),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    gave_up
}

/// An exit status as run.json and messages show it: `exit 3`, `signal 9`.
pub fn describe_status(s: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "unknown".into(),
    }
}

/// Why `<bin> --version` gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("it cannot be run: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("it did not answer `--version` within {}s (killed)", .0.as_secs_f32())]
    TimedOut(Duration),
    #[error("it exited with {status}")]
    Failed {
        /// `exit 3`, `signal 9`.
        status: String,
        /// What it printed on stdout all the same.
        output: String,
    },
}

/// The timeout for version probes: [`VERSION_TIMEOUT`], or the test override.
pub fn version_timeout() -> Duration {
    crate::knobs::var(VERSION_TIMEOUT_ENV)
        .and_then(|v| v.parse().ok())
        .map_or(VERSION_TIMEOUT, Duration::from_millis)
}

/// Runs `<bin> --version` with stdin closed and returns what it printed on stdout (at most
/// 4 KiB), bounded by `within`.
///
/// The probe leads its own process group and the whole group is killed on a timeout, so a
/// wrapper script's own children go too. Its stdout is a temporary file, not a pipe: a child that
/// outlives it while holding the output cannot block the read.
pub fn version_output(bin: &Path, within: Duration) -> Result<String, ProbeError> {
    use std::io::{Read as _, Seek as _};
    use std::os::unix::process::CommandExt as _;
    let mut out = tempfile::tempfile().map_err(ProbeError::Spawn)?;
    let mut child = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(ProbeError::Spawn)?)
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(ProbeError::Spawn)?;
    let pgid = child.id();
    let status = wait_or_kill(&mut child, within);
    // Whatever the leader left in its group goes with it (a no-op when the group is empty).
    let _ = crate::os::signal_group(pgid, libc::SIGKILL);
    let status = match status {
        Ok(Some(s)) => s,
        Ok(None) => return Err(ProbeError::TimedOut(within)),
        Err(e) => return Err(ProbeError::Spawn(e)),
    };
    out.rewind().map_err(ProbeError::Spawn)?;
    let mut bytes = Vec::new();
    out.take(4096)
        .read_to_end(&mut bytes)
        .map_err(ProbeError::Spawn)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if !status.success() {
        return Err(ProbeError::Failed {
            status: describe_status(&status),
            output: text,
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, body: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let p = dir.join("fake-harness");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn the_wait_returns_the_exit_status_and_a_timeout_kills_and_reaps() {
        let mut child = Command::new("sh").args(["-c", "exit 7"]).spawn().unwrap();
        let s = wait_or_kill(&mut child, Duration::from_secs(30)).unwrap();
        assert_eq!(s.and_then(|s| s.code()), Some(7));

        let mut child = Command::new("sleep").arg("300").spawn().unwrap();
        let pid = child.id();
        assert!(wait_or_kill(&mut child, Duration::from_millis(200))
            .unwrap()
            .is_none());
        // Killed and reaped: not even a zombie is left (witness: the process table).
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{pid} left");
    }

    #[test]
    fn a_version_is_read_from_stdout() {
        let dir = tempfile::tempdir().unwrap();
        let bin = script(dir.path(), "echo '2.1.332 (Claude Code)'");
        assert_eq!(
            version_output(&bin, Duration::from_secs(10)).unwrap(),
            "2.1.332 (Claude Code)\n"
        );
        let bin = script(dir.path(), "echo 0.1.0; exit 3");
        assert!(matches!(
            version_output(&bin, Duration::from_secs(10)),
            Err(ProbeError::Failed { status, output }) if status == "exit 3" && output == "0.1.0\n"
        ));
        assert!(matches!(
            version_output(&dir.path().join("nope"), Duration::from_secs(10)),
            Err(ProbeError::Spawn(_))
        ));
    }

    #[test]
    fn a_harness_that_hangs_is_killed_with_its_children() {
        let (dir, pidfile) = crate::test_support::temp_path("child.pid");
        // The wrapper starts a child that holds stdout too, the way an npm shim runs the native
        // binary, then both sleep.
        let bin = script(
            dir.path(),
            &format!("sleep 300 & echo $! > '{}'; wait", pidfile.display()),
        );
        let started = Instant::now();
        let err = version_output(&bin, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(err, ProbeError::TimedOut(_)), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the probe returned only after {:?}",
            started.elapsed()
        );
        // The grandchild is gone too (witness: the process table).
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let pid = pid.trim();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.contains(") Z "));
            if !alive {
                break;
            }
            assert!(Instant::now() < deadline, "sleep {pid} outlived the probe");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
