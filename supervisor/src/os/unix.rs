//! Unix process control for the worker: finding executables, its own process group, a
//! parent-death signal, signals to the whole group, and finding a crashed run's leftover processes.
//!
//! A PID is a hint, not an identity: recovery only signals a process group after finding, in
//! `/proc`, a member whose environment carries the crashed run's `LEOPOLD_RUN_ID`. A reused PID
//! belongs to some other program and is left alone.
//!
//! System calls go through `rustix` (safe wrappers, raw syscalls on Linux); the one `unsafe` left
//! is `pre_exec` itself, whose closure must be async-signal-safe.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Finds an executable file: a path with a `/` as is, else the first match on `PATH`.
pub fn find_executable(name: &Path) -> Option<PathBuf> {
    match executable(name) {
        Lookup::Found(p) => Some(p),
        _ => None,
    }
}

/// What [`executable`] found for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Found(PathBuf),
    /// Nothing at that path (or on `PATH`).
    NotFound,
    /// A file without execute permission (the first one on `PATH`, for a bare name).
    NotExecutable(PathBuf),
    /// Something that is not a file (a directory).
    NotAFile(PathBuf),
}

/// Looks `name` up as a shell would: a path with a `/` as is, else the first executable match on
/// `PATH`; says why when there is none.
pub fn executable(name: &Path) -> Lookup {
    use std::os::unix::fs::PermissionsExt as _;
    let check = |p: &Path| match std::fs::metadata(p) {
        Err(_) => Lookup::NotFound,
        Ok(m) if !m.is_file() => Lookup::NotAFile(p.to_path_buf()),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Lookup::NotExecutable(p.to_path_buf()),
        Ok(_) => Lookup::Found(p.to_path_buf()),
    };
    if name.components().count() > 1 || name.is_absolute() {
        return check(name);
    }
    let Some(path) = std::env::var_os("PATH") else {
        return Lookup::NotFound;
    };
    let mut first_miss = Lookup::NotFound;
    for dir in std::env::split_paths(&path) {
        match check(&dir.join(name)) {
            found @ Lookup::Found(_) => return found,
            Lookup::NotFound => {}
            other => {
                if first_miss == Lookup::NotFound {
                    first_miss = other;
                }
            }
        }
    }
    first_miss
}

/// The harness executable `wanted` (`--harness-bin`, or `claude`/`codex` looked up on `PATH`),
/// or an error saying what is wrong with it and what to do.
///
/// # Errors
/// Not found, not executable, or not a file.
pub fn harness_executable(wanted: &Path, named: bool) -> anyhow::Result<PathBuf> {
    let hint = "(hint: install it (README.md#set-up) or pass --harness-bin PATH)";
    match executable(wanted) {
        Lookup::Found(p) => Ok(p),
        Lookup::NotFound => anyhow::bail!(
            "harness executable `{}` not found{}\n{hint}",
            wanted.display(),
            if named { "" } else { " on PATH" }
        ),
        Lookup::NotExecutable(p) => anyhow::bail!(
            "harness executable `{}` is not executable (no execute permission)\n(hint: `chmod +x {}`, or pass --harness-bin PATH)",
            p.display(),
            p.display()
        ),
        Lookup::NotAFile(p) => anyhow::bail!(
            "harness executable `{}` is not a file\n(hint: pass --harness-bin with the program itself)",
            p.display()
        ),
    }
}

/// The environment variable every worker inherits, naming its run.
pub const RUN_ID_ENV: &str = "LEOPOLD_RUN_ID";

/// Puts the command in its own process group and, on Linux, has the kernel SIGKILL it when the
/// supervisor dies (so a SIGKILLed supervisor never leaves a worker running unbounded).
pub fn configure_worker(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    die_with_parent(cmd, libc::SIGKILL);
}

/// On Linux, has the kernel send `sig` to the command when this process dies: SIGKILL for a
/// worker (nothing of it may outlive its supervisor), SIGTERM for a suite's run (its supervisor
/// then stops its worker and unwires, as on Ctrl-C).
pub fn die_with_parent(cmd: &mut Command, sig: libc::c_int) {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getppid, set_parent_process_death_signal, Pid, Signal};
        use std::os::unix::process::CommandExt;
        let parent = Pid::from_raw(std::process::id() as i32);
        let signal = Signal::from_named_raw(sig).unwrap_or(Signal::KILL);
        // SAFETY: the closure runs in the forked child before exec. It makes two raw system calls
        // through rustix (prctl, getppid: no allocation, no lock, async-signal-safe) and builds
        // its errors from errno values (`io::Error::from_raw_os_error` does not allocate); it
        // touches no memory shared with the parent.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || {
                set_parent_process_death_signal(Some(signal))
                    .map_err(|e| io::Error::from_raw_os_error(e.raw_os_error()))?;
                // The parent may have died between fork and prctl: then nobody would send the
                // signal, so do not exec (spawn fails with ESRCH, reported to nobody).
                if getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, sig);
}

/// Sends `sig` to process group `pgid`. `Ok(false)` if the group no longer exists.
pub fn signal_group(pgid: u32, sig: libc::c_int) -> io::Result<bool> {
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to signal process group 0 or 1",
        ));
    }
    let Some(group) = rustix::process::Pid::from_raw(pgid as i32) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("process group {pgid} out of range"),
        ));
    };
    // Signal 0 only asks whether the group exists (kill(2)'s convention).
    let sent = match rustix::process::Signal::from_named_raw(sig) {
        _ if sig == 0 => rustix::process::test_kill_process_group(group),
        Some(sig) => rustix::process::kill_process_group(group, sig),
        None => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{sig} is not a signal"),
            ))
        }
    };
    match sent {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::SRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The pids of live (non-zombie) processes in group `pgid` whose environment carries
/// `LEOPOLD_RUN_ID=<run_id>`. Linux only (reads `/proc`); elsewhere empty.
#[cfg(test)]
pub fn run_group_members(pgid: u32, run_id: &str) -> Vec<u32> {
    scan(Some(pgid), run_id)
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// `pid`'s state letter, parent and process group, from `/proc/<pid>/stat`. Linux only.
fn stat_of(pid: u32) -> Option<(char, u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    let (_, after) = stat.rsplit_once(')')?;
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

fn proc_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

/// SIGKILLs `pid`; one that is gone already is no error.
pub fn kill(pid: u32) {
    signal_process(pid, libc::SIGKILL);
}

/// Sends `sig` to process `pid` alone; a process already gone is not an error.
pub fn signal_process(pid: u32, sig: libc::c_int) {
    let sig = rustix::process::Signal::from_named_raw(sig);
    if let (Some(pid), Some(sig)) = (rustix::process::Pid::from_raw(pid as i32), sig) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// The pids of `pid`'s live (non-zombie) children. Linux only (reads `/proc`); elsewhere empty.
pub fn children(pid: u32) -> Vec<u32> {
    proc_pids()
        .into_iter()
        .filter(|&c| stat_of(c).is_some_and(|(state, ppid, _)| ppid == pid && state != 'Z'))
        .collect()
}

/// Whether `pid` has ended: no such process, or a zombie waiting only for its parent's `wait`.
pub fn ended(pid: u32) -> bool {
    stat_of(pid).is_none_or(|(state, _, _)| state == 'Z' || state == 'X')
}

fn scan(want_pgid: Option<u32>, run_id: &str) -> Vec<(u32, u32)> {
    #[cfg(target_os = "linux")]
    {
        let needle = format!("{RUN_ID_ENV}={run_id}");
        let mut found = Vec::new();
        for pid in proc_pids() {
            let Some((state, _, pgrp)) = stat_of(pid) else {
                continue;
            };
            if want_pgid.is_some_and(|g| g != pgrp) || state == 'Z' {
                continue;
            }
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
                found.push((pid, pgrp));
            }
        }
        found
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (want_pgid, run_id);
        Vec::new()
    }
}

/// Kills what is left of a crashed run: its worker group (if `pgid` is known and a member still
/// carries the run's id) and any other process carrying the run's id (a worker spawned just before
/// the crash, before its pid was recorded). Returns the pids found, all SIGKILLed.
pub fn kill_crashed_run(pgid: Option<u32>, run_id: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for _ in 0..200 {
        let members = run_processes(run_id);
        if members.is_empty() {
            break;
        }
        for &(pid, pgrp) in &members {
            if !found.contains(&pid) {
                found.push(pid);
            }
            if Some(pgrp) == pgid {
                let _ = signal_group(pgrp, libc::SIGKILL);
            }
            kill(pid);
        }
        // Gone once reaped by their parent (or init): wait so "worker gone" is true when we say so.
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    found
}

/// Every live (non-zombie) process whose environment carries `LEOPOLD_RUN_ID=<run_id>`, with its
/// process group. Linux only (reads `/proc`); elsewhere empty.
pub fn run_processes(run_id: &str) -> Vec<(u32, u32)> {
    scan(None, run_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_and_ended_once_killed() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let shell = child.id();
        let mut found = Vec::new();
        for _ in 0..200 {
            found = children(shell);
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(found.len(), 1, "the shell's sleep: {found:?}");
        assert!(!ended(found[0]));
        let pid = rustix::process::Pid::from_raw(found[0] as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
        let _ = child.wait();
        assert!(ended(found[0]));
        assert!(!children(std::process::id()).contains(&shell));
    }

    #[test]
    fn a_worker_group_is_found_by_run_id_and_killed() {
        let run_id = format!("test-{}", std::process::id());
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30"])
            .env(RUN_ID_ENV, &run_id);
        configure_worker(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let pgid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(run_group_members(pgid, "some-other-run").is_empty());
        let members = run_group_members(pgid, &run_id);
        assert!(members.len() >= 2, "sh and its sleeps: {members:?}");
        let killed = kill_crashed_run(Some(pgid), &run_id);
        for m in &members {
            assert!(killed.contains(m));
        }
        let _ = child.wait();
        assert!(run_group_members(pgid, &run_id).is_empty());
        assert!(!signal_group(pgid, 0).unwrap() || run_group_members(pgid, &run_id).is_empty());
    }

    #[test]
    fn signalling_group_one_is_refused() {
        assert!(signal_group(1, 0).is_err());
        assert!(signal_group(0, 0).is_err());
    }
}
