//! Witnesses that cannot lie, for the containment suites (issue #12, "Prove it"): what got out
//! of a run is measured outside the worker's reach, never by asking the worker.
//!
//! - [`ForbiddenHost`]: a second local HTTP app, on a host no flow allows, that logs every
//!   connection it accepts (before reading a byte) in the test process's own memory: nothing
//!   the worker writes can add to or erase that log.
//! - [`snapshot`] / [`diff_snapshots`]: every file under some folders with its bytes (symlinks
//!   as their target text, never followed), compared byte for byte.
//! - [`RunWatch`]: the process table, polled from outside while a run goes on: which processes
//!   belong to the run (by the run's id in their environment, and by the box's PID namespace,
//!   which a process cannot leave or lie about), so that afterwards "no process of the run is
//!   left" is checked by namespace, by environment and by a marker in the command line alike.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A local HTTP app on 127.0.0.1 that no flow allows: every connection it accepts is logged
/// (`connection`), then the request line and `Host` header it reads (`GET /x host=...`); it
/// answers `200 forbidden-host-reached`. Stops with the test process.
pub struct ForbiddenHost {
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

/// What the forbidden host answers: a tool result carrying it means a request got there.
pub const FORBIDDEN_REPLY: &str = "forbidden-host-reached";

impl ForbiddenHost {
    /// Binds a free port on 127.0.0.1 and serves on a thread of its own.
    pub fn start() -> ForbiddenHost {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind the forbidden host");
        let port = l.local_addr().expect("local addr").port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = Arc::clone(&log);
        std::thread::spawn(move || {
            for conn in l.incoming().flatten() {
                serve_one(conn, &log2);
            }
        });
        ForbiddenHost { port, log }
    }

    /// The same app on a unix socket at `path` (a dev server's socket in the project, say):
    /// `port` is 0.
    pub fn start_unix(path: &Path) -> ForbiddenHost {
        let l = std::os::unix::net::UnixListener::bind(path)
            .unwrap_or_else(|e| panic!("bind {}: {e}", path.display()));
        Self::serve_unix(l)
    }

    /// The same app on a bound unix listener (an abstract socket, say): `port` is 0.
    pub fn serve_unix(l: std::os::unix::net::UnixListener) -> ForbiddenHost {
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = Arc::clone(&log);
        std::thread::spawn(move || {
            for conn in l.incoming().flatten() {
                serve_one(conn, &log2);
            }
        });
        ForbiddenHost { port: 0, log }
    }

    /// Everything it saw so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Logs one accepted connection, then its request line and `Host`, and answers
/// [`FORBIDDEN_REPLY`], on a thread of its own.
fn serve_one<S>(conn: S, log: &Arc<Mutex<Vec<String>>>)
where
    S: std::io::Read + std::io::Write + Send + 'static,
{
    log.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push("connection".into());
    let log = Arc::clone(log);
    std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(conn);
        let mut first = String::new();
        let _ = r.read_line(&mut first);
        let mut host = String::new();
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if line.trim().is_empty() => break,
                Ok(_) => {
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("host") {
                            host = v.trim().to_owned();
                        }
                    }
                }
            }
        }
        log.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{} host={host}", first.trim()));
        let body = FORBIDDEN_REPLY;
        let mut w = r.into_inner();
        let _ = w.write_all(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
    });
}

/// One file's content in a [`snapshot`]: its bytes, or a symlink's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file's bytes.
    File(Vec<u8>),
    /// A symbolic link's target (never followed).
    Link(PathBuf),
    /// A directory (listed, so an empty new folder shows too).
    Dir,
    /// A socket, FIFO or device (never opened: reading a FIFO would block).
    Special,
}

/// Every entry under each of `roots` (files with their bytes, symlinks by target, folders),
/// except under any of `skip`.
pub fn snapshot(roots: &[&Path], skip: &[PathBuf]) -> BTreeMap<PathBuf, Entry> {
    fn walk(dir: &Path, skip: &[PathBuf], out: &mut BTreeMap<PathBuf, Entry>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if skip.iter().any(|s| p.starts_with(s)) {
                continue;
            }
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap_or_default();
                out.insert(p, Entry::Link(t));
            } else if m.is_dir() {
                out.insert(p.clone(), Entry::Dir);
                walk(&p, skip, out);
            } else if !m.is_file() {
                out.insert(p, Entry::Special);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                out.insert(p, Entry::File(bytes));
            }
        }
    }
    let mut out = BTreeMap::new();
    for r in roots {
        walk(r, skip, &mut out);
    }
    out
}

/// Each path that appeared, vanished or changed between two [`snapshot`]s, described (with the
/// text before and after for a changed file); empty when they are the same.
pub fn diff_snapshots(
    before: &BTreeMap<PathBuf, Entry>,
    after: &BTreeMap<PathBuf, Entry>,
) -> Vec<String> {
    let show = |e: &Entry| match e {
        Entry::File(b) => String::from_utf8_lossy(b).into_owned(),
        Entry::Link(t) => format!("symlink -> {}", t.display()),
        Entry::Dir => "(folder)".into(),
        Entry::Special => "(socket, FIFO or device)".into(),
    };
    let mut out = Vec::new();
    for (p, b) in before {
        match after.get(p) {
            None => out.push(format!("removed {}", p.display())),
            Some(a) if a != b => out.push(format!(
                "changed {}:\n--- before\n{}\n--- after\n{}",
                p.display(),
                show(b),
                show(a)
            )),
            Some(_) => {}
        }
    }
    for (p, a) in after {
        if !before.contains_key(p) {
            out.push(format!("added {}: {}", p.display(), show(a)));
        }
    }
    out
}

/// A process seen from outside: its pid, its PID namespace, its run id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    /// Its pid in this (the test's) namespace.
    pub pid: u32,
    /// `readlink /proc/<pid>/ns/pid`, e.g. `pid:[4026532451]`.
    pub pid_ns: String,
    /// Its `LEOPOLD_RUN_ID`.
    pub run_id: String,
    /// Its program's name as the kernel keeps it (`/proc/<pid>/comm`: `node`, `chromium`), so a
    /// test can show which programs of the run were seen (a witness that saw no Chromium cannot
    /// say none was left).
    pub comm: String,
}

/// Polls the process table on a thread of its own while a run goes on, collecting every
/// process whose environment carries a `LEOPOLD_RUN_ID` and whose working directory is under
/// `project` (so another suite's runs on the same machine are not counted).
pub struct RunWatch {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeSet<Seen>>>,
    project: PathBuf,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunWatch {
    /// Starts polling (every 20 ms).
    pub fn start(project: &Path) -> RunWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let (stop2, seen2, project2) = (Arc::clone(&stop), Arc::clone(&seen), project.to_owned());
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let now = run_processes(&project2);
                seen2.lock().unwrap_or_else(|p| p.into_inner()).extend(now);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        RunWatch {
            stop,
            seen,
            project: project.to_owned(),
            thread: Some(thread),
        }
    }

    /// Every process of a run seen so far.
    pub fn seen(&self) -> BTreeSet<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The PID namespaces the run's processes were seen in, the test's own excepted: the box's.
    pub fn box_namespaces(&self) -> BTreeSet<String> {
        let own = pid_ns("self");
        self.seen()
            .into_iter()
            .map(|s| s.pid_ns)
            .filter(|ns| Some(ns) != own.as_ref())
            .collect()
    }

    /// Stops polling.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Polls [`RunWatch::leftovers`] by each of `markers` until none is left or `within` has
    /// passed (checked once at least); returns those left then.
    pub fn leftovers_within(&self, markers: &[&str], within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        loop {
            let left: Vec<String> = markers
                .iter()
                .flat_map(|m| self.leftovers(Some(m)))
                .collect();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every live process that still belongs to the run: in one of the box's PID namespaces,
    /// or carrying one of the run ids seen, or (whatever its environment) with `marker` in its
    /// command line, or one of the run's processes under the project. Each as
    /// `pid: cmdline (why)`.
    pub fn leftovers(&self, marker: Option<&str>) -> Vec<String> {
        let nss = self.box_namespaces();
        let ids: BTreeSet<String> = self.seen().into_iter().map(|s| s.run_id).collect();
        let mut out = Vec::new();
        for pid in pids() {
            if !crate::fake_run::alive(pid) {
                continue;
            }
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default();
            let mut why = Vec::new();
            if pid_ns(&pid.to_string()).is_some_and(|ns| nss.contains(&ns)) {
                why.push("in the box's PID namespace".to_owned());
            }
            if run_id_of(pid).is_some_and(|id| ids.contains(&id)) {
                why.push("carries the run's LEOPOLD_RUN_ID".to_owned());
            }
            if marker.is_some_and(|m| cmdline.contains(m)) && pid != std::process::id() {
                why.push("carries the adversary's marker".to_owned());
            }
            if why.is_empty() && run_processes(&self.project).iter().any(|s| s.pid == pid) {
                why.push("a run's process under the project".to_owned());
            }
            if !why.is_empty() {
                out.push(format!("{pid}: {} ({})", cmdline.trim(), why.join(", ")));
            }
        }
        out
    }
}

impl Drop for RunWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

fn pid_ns(pid: &str) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|p| p.display().to_string())
}

fn run_id_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0).find_map(|kv| {
        kv.strip_prefix(b"LEOPOLD_RUN_ID=")
            .map(|v| String::from_utf8_lossy(v).into_owned())
    })
}

fn run_processes(project: &Path) -> Vec<Seen> {
    pids()
        .into_iter()
        .filter_map(|pid| {
            let run_id = run_id_of(pid)?;
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
            if !cwd.starts_with(project) {
                return None;
            }
            Some(Seen {
                pid,
                pid_ns: pid_ns(&pid.to_string())?,
                run_id,
                comm: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim().to_owned())
                    .unwrap_or_default(),
            })
        })
        .collect()
}
