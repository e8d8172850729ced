//! The box's limits (docs/security.md#limits): how many processes the worker's tree may hold,
//! how much memory, how much its scratch may hold, and how much Leopold writes on its behalf.
//!
//! Why these mechanisms (measured, issue #22: a boxed worker started 3,000 processes, allocated
//! 4 GiB and left 3 GiB in its scratch):
//!
//! - **Processes and memory: a cgroup per run** (`pids.max`, `memory.max`; cgroup v1's
//!   `pids.max`, `memory.limit_in_bytes` on hybrid systems), which the worker is put in before
//!   bwrap runs. It is the only bound over the whole tree: `RLIMIT_NPROC` counts a real uid, and
//!   a root supervisor's box keeps uid 0, which the kernel exempts from it; `RLIMIT_AS` and
//!   `RLIMIT_DATA` are per process (V8 also reserves far more address space than it uses). Its
//!   counters (`pids.events`, the OOM kill count) say which limit was hit, after the fact too.
//!   The run's cgroup is made under the supervisor's own (so a container's or a slice's bounds
//!   still hold over it; on cgroup v2 the supervisor first moves into a leaf of its own, since a
//!   cgroup whose children have controllers holds no process; root falls back to the root of
//!   the hierarchy); where this user may make none (cgroup v2 without delegation) the run
//!   refuses, naming the ways out.
//! - **Scratch: a tmpfs of that size** (`bwrap --size`), which the kernel fills to its size and
//!   no further (its pages count against the memory limit too). Nothing the worker writes
//!   reaches the disk, so nothing of it is left after the run; Leopold's own files for the run
//!   (the Codex home's configuration) are copied in by box-init from the scratch folder on disk,
//!   bound read-only beside it ([`SEED`]).
//! - **Records: a byte count per file**, kept by the writer (the event socket's receiver, the
//!   gateway's record): the first line past it is not written, and the run stops.
//!
//! A limit hit trips the run's [`Tripwire`]; supervision stops the worker with the outcome
//! `over_limit` (exit 5).

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

/// Where box-init finds the run's prepared scratch files (read-only) to copy into the tmpfs.
pub const SEED: &str = "/.leopold-seed";

pub const DEFAULT_PROCS: u64 = 512;
pub const DEFAULT_MEMORY: u64 = 4 << 30;
pub const DEFAULT_SCRATCH: u64 = 1 << 30;
pub const DEFAULT_RECORDS: u64 = 64 << 20;

/// A boxed run's limits; `None`: not bounded (`none` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub procs: Option<u64>,
    pub memory: Option<u64>,
    pub scratch: Option<u64>,
    pub records: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            procs: Some(DEFAULT_PROCS),
            memory: Some(DEFAULT_MEMORY),
            scratch: Some(DEFAULT_SCRATCH),
            records: Some(DEFAULT_RECORDS),
        }
    }
}

/// `--max-memory` and the other sizes: a number of bytes with an optional binary unit (`KiB`,
/// `MiB`, `GiB`; `K`, `M`, `G` mean the same), or `none`.
pub fn parse_size(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => {
            return Err(format!(
                "`{s}`: expected a size such as `512MiB`, `4GiB`, or `none`"
            ))
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}`: expected a size such as `512MiB`, `4GiB`, or `none`"))?;
    n.checked_mul(1 << shift)
        .filter(|b| *b > 0)
        .map(Some)
        .ok_or_else(|| format!("`{s}`: expected a size above 0 and below 16 EiB, or `none`"))
}

/// `--max-procs`: a count, or `none`.
pub fn parse_count(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    match t.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!(
            "`{s}`: expected a number of processes above 0, or `none`"
        )),
    }
}

/// For messages: `64 MiB`.
pub fn show_size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// A look at the limits now: `Some(what)` once one was hit.
type Check = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// The first limit a run hit, shared by whatever watches one (the cgroup and scratch watch, the
/// event receiver, the gateway record) and supervision, which stops the worker.
#[derive(Clone, Default)]
pub struct Tripwire(Arc<Wire>);

#[derive(Default)]
struct Wire {
    first: Mutex<Option<String>>,
    notify: tokio::sync::Notify,
    /// The box's own look at its counters, for the end of the run: a worker the kernel killed
    /// may be gone before a watch saw the counter move.
    check: Mutex<Option<Check>>,
}

impl std::fmt::Debug for Tripwire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tripwire").field(&self.tripped()).finish()
    }
}

impl Tripwire {
    /// Records `why` unless a limit was hit before.
    pub fn trip(&self, why: String) {
        let mut first = self.0.first.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(why);
            self.0.notify.notify_waiters();
        }
    }

    pub fn tripped(&self) -> Option<String> {
        self.0
            .first
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets the look [`Tripwire::check`] takes.
    pub fn set_check(&self, check: Check) {
        *self.0.check.lock().unwrap_or_else(|e| e.into_inner()) = Some(check);
    }

    /// The limit hit, looking at the counters once more first.
    pub fn check(&self) -> Option<String> {
        let seen = self
            .0
            .check
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|c| c());
        if let Some(why) = seen {
            self.trip(why);
        }
        self.tripped()
    }

    /// Waits until a limit is hit; returns what it was.
    pub async fn wait(&self) -> String {
        loop {
            let notified = self.0.notify.notified();
            if let Some(why) = self.tripped() {
                return why;
            }
            notified.await;
        }
    }
}

/// The run's cgroup(s): one directory in cgroup v2, one per controller in v1. Dropping it kills
/// whatever is left in it and removes it.
#[derive(Debug)]
pub struct Cgroup {
    /// v2: the one directory; v1: the pids one, then the memory one (each only when bounded).
    dirs: Vec<PathBuf>,
    /// Each directory's `cgroup.procs`, for the child to join itself before exec.
    procs_files: Vec<CString>,
    v2: bool,
}

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

impl Cgroup {
    /// Makes the run's cgroup under the supervisor's own, with the limits given. `Ok(None)` when
    /// neither is bounded.
    pub fn create(
        run_id: &str,
        procs: Option<u64>,
        memory: Option<u64>,
    ) -> anyhow::Result<Option<Cgroup>> {
        if procs.is_none() && memory.is_none() {
            return Ok(None);
        }
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .context("cannot read /proc/self/cgroup")?;
        let name = format!("leopold-{run_id}");
        let made = if Path::new(CGROUP_ROOT).join("cgroup.controllers").is_file() {
            create_v2(
                &own_path(&own, "").unwrap_or_default(),
                &name,
                procs,
                memory,
            )
        } else {
            create_v1(&own, &name, procs, memory)
        };
        made.map(Some).map_err(|e| {
            anyhow::anyhow!(
                "cannot bound the box's processes and memory: {e:#}\n(hint: run as root, or in a cgroup delegated to you (cgroup v2: `systemd-run --user --scope -p Delegate=yes leopold …`); or pass `--max-procs none --max-memory none` to run without these two bounds)"
            )
        })
    }

    /// The cgroup a run made and left (its supervisor died), killed and removed: `persona
    /// recover`'s part. The recovering supervisor's own cgroup is the crashed one's, as a rule
    /// (the same user's shell, slice or container).
    pub fn remove_leftover(run_id: &str) {
        let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
            return;
        };
        let name = format!("leopold-{run_id}");
        let root = Path::new(CGROUP_ROOT);
        let (dirs, v2) = if root.join("cgroup.controllers").is_file() {
            // Where create_v2 may have made it: beside the supervisor, or at the root.
            let rel = own_path(&own, "").unwrap_or_default();
            let rel = rel
                .strip_suffix(&format!("/{SUPERVISOR_LEAF}"))
                .unwrap_or(&rel)
                .to_owned();
            (vec![root.join(rel).join(&name), root.join(&name)], true)
        } else {
            let dirs = ["pids", "memory"]
                .iter()
                .map(|c| {
                    root.join(c)
                        .join(own_path(&own, c).unwrap_or_default())
                        .join(&name)
                })
                .collect();
            (dirs, false)
        };
        // Dropped at once: whatever is left in it is killed, and it is removed.
        drop(Cgroup {
            dirs: dirs.into_iter().filter(|d| d.is_dir()).collect(),
            procs_files: Vec::new(),
            v2,
        });
    }

    /// Puts the child in the run's cgroup before it execs (so bwrap and all it starts are in it
    /// from their first instruction).
    pub fn join_before_exec(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt as _;
        let files = self.procs_files.clone();
        // SAFETY: the closure runs in the forked child before exec; it makes only open, write and
        // close system calls on paths built before the fork, allocates nothing, and builds its
        // error from an errno value.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || {
                for f in &files {
                    let fd = rustix::fs::open(
                        f.as_c_str(),
                        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                        rustix::fs::Mode::empty(),
                    )
                    .map_err(|e| std::io::Error::from_raw_os_error(e.raw_os_error()))?;
                    // "0": the writing process itself.
                    rustix::io::write(&fd, b"0")
                        .map_err(|e| std::io::Error::from_raw_os_error(e.raw_os_error()))?;
                }
                Ok(())
            });
        }
    }

    /// Which limit the tree hit, if any: the kernel's counters, which stay set.
    pub fn hit(&self, procs: Option<u64>, memory: Option<u64>) -> Option<String> {
        let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
        let field = |text: &str, key: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        for d in &self.dirs {
            if let Some(n) = procs {
                if field(&read(d, "pids.events"), "max ") > 0 {
                    return Some(format!("the worker's processes reached --max-procs {n}"));
                }
            }
            if let Some(m) = memory {
                let kills = if self.v2 {
                    field(&read(d, "memory.events"), "oom_kill ")
                } else {
                    field(&read(d, "memory.oom_control"), "oom_kill ")
                };
                if kills > 0 {
                    return Some(format!(
                        "the worker's memory reached --max-memory {} (the kernel killed a process)",
                        show_size(m)
                    ));
                }
            }
        }
        None
    }

    /// A process of the tree inside the box's mount namespace (bwrap's first process stays in
    /// ours), for a look at its mounts through `/proc/<pid>/root`.
    pub fn a_boxed_pid(&self) -> Option<u32> {
        let d = self.dirs.first()?;
        let ours = std::fs::read_link("/proc/self/ns/mnt").ok()?;
        std::fs::read_to_string(d.join("cgroup.procs"))
            .ok()?
            .lines()
            .filter_map(|l| l.trim().parse::<u32>().ok())
            .find(|p| std::fs::read_link(format!("/proc/{p}/ns/mnt")).is_ok_and(|ns| ns != ours))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for d in &self.dirs {
            if self.v2 {
                let _ = std::fs::write(d.join("cgroup.kill"), "1");
            } else if let Ok(pids) = std::fs::read_to_string(d.join("cgroup.procs")) {
                for p in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    // SAFETY: kill(2) with plain integers.
                    #[allow(unsafe_code)]
                    unsafe {
                        libc::kill(p, libc::SIGKILL);
                    }
                }
            }
            // A killed process leaves its cgroup a moment after the signal.
            for _ in 0..50 {
                match std::fs::remove_dir(d) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    _ => break,
                }
            }
        }
    }
}

/// The supervisor's own cgroup path in hierarchy `controller` (`""`: the v2 one) from
/// `/proc/self/cgroup` (`ID:CONTROLLERS:PATH` lines), without its leading `/`.
fn own_path(text: &str, controller: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            ctrls.is_empty()
        } else {
            ctrls.split(',').any(|c| c == controller)
        };
        matches.then(|| path.trim_start_matches('/').to_owned())
    })
}

/// The leaf of the supervisor's own cgroup it moves into (cgroup v2), shared by the supervisors
/// of one cgroup: a cgroup that gives its children controllers holds no process itself.
const SUPERVISOR_LEAF: &str = "leopold-supervisor";

/// cgroup v2: the run's cgroup beside the supervisor, in the supervisor's own cgroup (`own`,
/// relative to the root), which the supervisor leaves for a leaf of it first (the way a
/// delegated subtree is used: `systemd-run --user --scope -p Delegate=yes`). Where that cannot be
/// done (the cgroup holds other processes, such as a login shell's session, or is not this
/// user's), root makes it at the root of the hierarchy instead.
fn create_v2(
    own: &str,
    name: &str,
    procs: Option<u64>,
    memory: Option<u64>,
) -> anyhow::Result<Cgroup> {
    let root = Path::new(CGROUP_ROOT);
    if own.is_empty() {
        return make_v2(root, name, procs, memory);
    }
    let own = own
        .strip_suffix(&format!("/{SUPERVISOR_LEAF}"))
        .unwrap_or(own);
    let parent = root.join(own);
    let in_own = enable_v2(&parent, procs, memory)
        .or_else(|_| {
            let leaf = parent.join(SUPERVISOR_LEAF);
            match std::fs::create_dir(&leaf) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(e).with_context(|| format!("cannot create {}", leaf.display()));
                }
                _ => {}
            }
            std::fs::write(leaf.join("cgroup.procs"), "0")
                .with_context(|| format!("cannot move the supervisor into {}", leaf.display()))?;
            enable_v2(&parent, procs, memory).inspect_err(|_| {
                // Back where it was: the leaf served nothing.
                let _ = std::fs::write(parent.join("cgroup.procs"), "0");
                let _ = std::fs::remove_dir(&leaf);
            })
        })
        .and_then(|()| make_v2(&parent, name, procs, memory));
    match in_own {
        Err(e) if rustix::process::geteuid().is_root() => {
            make_v2(root, name, procs, memory).map_err(|root_e| e.context(format!("{root_e:#}")))
        }
        other => other,
    }
}

/// Gives the children of `parent` the controllers the limits need.
fn enable_v2(parent: &Path, procs: Option<u64>, memory: Option<u64>) -> anyhow::Result<()> {
    let ctrl = parent.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&ctrl).unwrap_or_default();
    for (want, c) in [(procs.is_some(), "pids"), (memory.is_some(), "memory")] {
        if want && !enabled.split_whitespace().any(|e| e == c) {
            // Refused (EBUSY) where the parent holds processes itself, unless it is the root.
            std::fs::write(&ctrl, format!("+{c}")).with_context(|| {
                format!("cannot enable the {c} controller in {}", ctrl.display())
            })?;
        }
    }
    Ok(())
}

fn make_v2(
    parent: &Path,
    name: &str,
    procs: Option<u64>,
    memory: Option<u64>,
) -> anyhow::Result<Cgroup> {
    enable_v2(parent, procs, memory)?;
    let dir = parent.join(name);
    std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let cg = Cgroup {
        procs_files: vec![c_path(&dir.join("cgroup.procs"))?],
        dirs: vec![dir.clone()],
        v2: true,
    };
    if let Some(n) = procs {
        write_limit(&dir, "pids.max", n)?;
    }
    if let Some(m) = memory {
        write_limit(&dir, "memory.max", m)?;
        // Swap would let the tree hold more than the limit, only slower.
        let _ = std::fs::write(dir.join("memory.swap.max"), "0");
    }
    Ok(cg)
}

fn create_v1(
    own: &str,
    name: &str,
    procs: Option<u64>,
    memory: Option<u64>,
) -> anyhow::Result<Cgroup> {
    let mut cg = Cgroup {
        dirs: Vec::new(),
        procs_files: Vec::new(),
        v2: false,
    };
    for (limit, controller) in [(procs, "pids"), (memory, "memory")] {
        let Some(n) = limit else { continue };
        let mount = Path::new(CGROUP_ROOT).join(controller);
        if !mount.join("cgroup.procs").is_file() {
            anyhow::bail!(
                "no cgroup {controller} controller is mounted at {}",
                mount.display()
            );
        }
        let parent = mount.join(own_path(own, controller).unwrap_or_default());
        let dir = parent.join(name);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        cg.dirs.push(dir.clone());
        cg.procs_files.push(c_path(&dir.join("cgroup.procs"))?);
        if controller == "pids" {
            write_limit(&dir, "pids.max", n)?;
        } else {
            write_limit(&dir, "memory.limit_in_bytes", n)?;
            let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), n.to_string());
        }
    }
    Ok(cg)
}

fn write_limit(dir: &Path, file: &str, n: u64) -> anyhow::Result<()> {
    let p = dir.join(file);
    std::fs::write(&p, n.to_string()).with_context(|| format!("cannot write {}", p.display()))
}

fn c_path(p: &Path) -> anyhow::Result<CString> {
    use std::os::unix::ffi::OsStrExt as _;
    CString::new(p.as_os_str().as_bytes()).context("a cgroup path holds a NUL byte")
}

/// Whether the scratch tmpfs, seen through a process of the box, is full: a worker that hit
/// `--max-scratch` got "no space left" and holds it.
pub fn scratch_full(pid: u32, scratch: &Path) -> bool {
    let inside = Path::new("/proc")
        .join(pid.to_string())
        .join("root")
        .join(scratch.strip_prefix("/").unwrap_or(scratch));
    match rustix::fs::statvfs(&inside) {
        // tmpfs reserves nothing for root: full is no free block at all.
        Ok(st) => st.f_blocks > 0 && st.f_bfree == 0,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_parse_with_binary_units_or_none() {
        assert_eq!(parse_size("4GiB"), Ok(Some(4 << 30)));
        assert_eq!(parse_size("256MiB"), Ok(Some(256 << 20)));
        assert_eq!(parse_size("64M"), Ok(Some(64 << 20)));
        assert_eq!(parse_size("1024"), Ok(Some(1024)));
        assert_eq!(parse_size("none"), Ok(None));
        for bad in ["", "0", "4GB", "-1", "1.5GiB", "99999999999GiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_count("512"), Ok(Some(512)));
        assert_eq!(parse_count("NONE"), Ok(None));
        assert!(parse_count("0").is_err());
        assert_eq!(show_size(64 << 20), "64 MiB");
        assert_eq!(show_size(4 << 30), "4 GiB");
    }

    #[test]
    fn the_own_cgroup_is_read_per_hierarchy() {
        let text =
            "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n0::/user.slice/x.scope\n";
        assert_eq!(own_path(text, "memory").as_deref(), Some("process_api/abc"));
        assert_eq!(own_path(text, "pids").as_deref(), Some(""));
        assert_eq!(own_path(text, "").as_deref(), Some("user.slice/x.scope"));
        assert_eq!(own_path(text, "cpu"), None);
    }

    #[tokio::test]
    async fn the_tripwire_keeps_the_first_limit() {
        let t = Tripwire::default();
        let waiter = tokio::spawn({
            let t = t.clone();
            async move { t.wait().await }
        });
        tokio::task::yield_now().await;
        t.trip("processes".into());
        t.trip("memory".into());
        assert_eq!(waiter.await.unwrap(), "processes");
        assert_eq!(t.tripped().as_deref(), Some("processes"));
    }
}
