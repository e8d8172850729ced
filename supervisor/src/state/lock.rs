//! The locks under `.leopold/persona/` (docs/reference.md#the-locks):
//!
//! - `run.lock`, the project's, held for a run's whole life: shared by a boxed run and by
//!   `persona recover` (boxed runs of one project run side by side: none edits a file of the
//!   project's, and each guard reads its own run's state), exclusive by a `--no-contain` run,
//!   which wires the project's own settings file and whose guard reads the project's
//!   `ACTIVE.json`, so it runs alone. Only an exclusive holder names itself in the file: shared
//!   holders are many, and each names itself in its state file instead.
//! - `active/<run_id>.lock`, each run's own, held exclusively for the run's whole life. A kernel
//!   lock dies with its process and never lies, where a pid is reused: this is how anyone tells a
//!   live run from a crashed one, and recovery holds a crashed run's lock while it recovers it, so
//!   that two runs starting at once never recover the same crash twice.
//!
//! `run.lock` is never deleted: unlinking a lock file races (a process holding the old inode and
//! one creating a new file could both "hold" it). A run's own lock file is deleted, while held,
//! once its state file is gone: whoever opened it before then and takes it afterwards finds no
//! state file, and leaves the run alone.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::PersonaPaths;

/// How a command holds `run.lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Beside others: a boxed run, `persona recover`.
    Shared,
    /// Alone: a `--no-contain` run.
    Exclusive,
}

/// Who holds the run lock exclusively, as written into `run.lock` by the holder.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockHolder {
    pub pid: u32,
    /// `persona run` (with a flow) or `persona recover`.
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    pub started_at: String,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.flow {
            Some(flow) => write!(
                f,
                "`{}` of flow `{flow}` (pid {}, started {})",
                self.command, self.pid, self.started_at
            ),
            None => write!(
                f,
                "`{}` (pid {}, started {})",
                self.command, self.pid, self.started_at
            ),
        }
    }
}

/// `run.lock`, held. Released (an exclusive holder's description cleared) on drop; the kernel
/// releases it if the process dies.
#[derive(Debug)]
pub struct RunLock {
    file: File,
    mode: LockMode,
}

/// Outcome of [`RunLock::try_acquire`].
#[must_use = "a lock that is not checked is not held"]
pub enum TryLock {
    Acquired(RunLock),
    Busy(Busy),
}

/// Who holds `run.lock` against a contender.
#[derive(Debug)]
pub enum Busy {
    /// One holder, alone: a `--no-contain` run (or an older version's run or recovery), its
    /// self-description if readable.
    Alone(Option<LockHolder>),
    /// Holders beside each other (boxed runs, `persona recover`), against an exclusive
    /// contender: their state files name them.
    Shared,
}

fn contended(e: &std::io::Error) -> bool {
    e.raw_os_error() == fs2::lock_contended_error().raw_os_error()
}

fn no_locks(path: &Path) -> String {
    format!(
        "cannot lock {} (is the project on a file system without locks, such as some NFS mounts?)",
        path.display()
    )
}

impl RunLock {
    /// Takes the lock as `mode` says, without waiting. Creates `.leopold/persona/` and `run.lock`
    /// if needed: the only thing a losing contender may create, and both are inert.
    pub fn try_acquire(
        paths: &PersonaPaths,
        holder: &LockHolder,
        mode: LockMode,
    ) -> anyhow::Result<TryLock> {
        std::fs::create_dir_all(&paths.dir)
            .with_context(|| format!("cannot create {}", paths.dir.display()))?;
        let path = paths.lock();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let taken = match mode {
            LockMode::Shared => fs2::FileExt::try_lock_shared(&file),
            LockMode::Exclusive => fs2::FileExt::try_lock_exclusive(&file),
        };
        match taken {
            Ok(()) => {
                let mut lock = RunLock { file, mode };
                lock.update(holder)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Ok(TryLock::Acquired(lock))
            }
            Err(e) if contended(&e) => {
                // Against an exclusive contender the holders may be shared ones: a shared lock
                // taken (and dropped at once) says so.
                if mode == LockMode::Exclusive && fs2::FileExt::try_lock_shared(&file).is_ok() {
                    let _ = fs2::FileExt::unlock(&file);
                    return Ok(TryLock::Busy(Busy::Shared));
                }
                Ok(TryLock::Busy(Busy::Alone(read_holder(&path))))
            }
            Err(e) => Err(e).with_context(|| no_locks(&path)),
        }
    }

    /// Renames the holder (e.g. once the run id is known); an exclusive holder only, since
    /// shared holders are many and name themselves in their state files.
    pub fn update(&mut self, holder: &LockHolder) -> std::io::Result<()> {
        if self.mode == LockMode::Shared {
            return Ok(());
        }
        let text = serde_json::to_string(holder).expect("holder serialises");
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(text.as_bytes())?;
        // No fsync: the description is advisory, for a contender's message while the lock is
        // held, and a kernel lock does not outlive a reboot.
        self.file.write_all(b"\n")
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Clear the holder first so nobody reads a stale name, then unlock.
        if self.mode == LockMode::Exclusive {
            let _ = self.file.set_len(0);
        }
        let _ = fs2::FileExt::unlock(&self.file);
    }
}

/// Reads the lock holder's self-description. The holder writes it right after taking the lock,
/// so a contender may briefly see it empty or half-written: retry for a short while.
pub fn read_holder(path: &Path) -> Option<LockHolder> {
    for _ in 0..20 {
        let mut text = String::new();
        if let Ok(mut f) = File::open(path) {
            let _ = f.read_to_string(&mut text);
            if let Ok(h) = serde_json::from_str::<LockHolder>(text.trim()) {
                return Some(h);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
}

/// Whether one process holds `run.lock` alone right now (`doctor`), and its description. Never
/// creates anything; shared holders are told by their own locks ([`is_live`]).
pub fn held_alone(paths: &PersonaPaths) -> anyhow::Result<Option<Option<LockHolder>>> {
    let path = paths.lock();
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    match fs2::FileExt::try_lock_shared(&file) {
        Ok(()) => {
            let _ = fs2::FileExt::unlock(&file);
            Ok(None)
        }
        Err(e) if contended(&e) => Ok(Some(read_holder(&path))),
        Err(e) => Err(e).with_context(|| format!("cannot test the lock {}", path.display())),
    }
}

/// A run's own lock, `active/<run_id>.lock`, held exclusively while the run (or its recovery)
/// lives.
#[derive(Debug)]
pub struct OwnLock {
    file: File,
    path: PathBuf,
}

impl OwnLock {
    /// A new run's own lock. It waits (a run id is new: only a moment's check can hold it).
    pub fn take(paths: &PersonaPaths, run_id: &str) -> anyhow::Result<OwnLock> {
        let path = paths.own_lock(run_id);
        let file = open_creating(&path)?;
        fs2::FileExt::lock_exclusive(&file).with_context(|| no_locks(&path))?;
        Ok(OwnLock { file, path })
    }

    /// A run's own lock for its recovery, or `None` while a live process holds it (the run
    /// itself, or another recovery of it).
    pub fn try_take(paths: &PersonaPaths, run_id: &str) -> anyhow::Result<Option<OwnLock>> {
        let path = paths.own_lock(run_id);
        let file = open_creating(&path)?;
        match fs2::FileExt::try_lock_exclusive(&file) {
            Ok(()) => Ok(Some(OwnLock { file, path })),
            Err(e) if contended(&e) => Ok(None),
            Err(e) => Err(e).with_context(|| no_locks(&path)),
        }
    }

    /// Ends the claim, once the run's state file is gone: the lock file is deleted while still
    /// held, then `active/` if that left it empty, then the lock is released.
    pub fn release(self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        drop(self.file);
    }
}

/// Opens (creating) a run's lock file in `active/`, which a finishing run may remove when it
/// leaves it empty: made again and retried a few times.
fn open_creating(path: &Path) -> anyhow::Result<File> {
    let mut tries = 0;
    loop {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
        {
            Ok(f) => return Ok(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 8 => tries += 1,
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
        }
    }
}

/// Whether a live process holds run `run_id`'s own lock. Never creates anything.
pub fn is_live(paths: &PersonaPaths, run_id: &str) -> bool {
    let Ok(file) = File::open(paths.own_lock(run_id)) else {
        return false;
    };
    match fs2::FileExt::try_lock_shared(&file) {
        Ok(()) => {
            let _ = fs2::FileExt::unlock(&file);
            false
        }
        Err(e) => contended(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(pid: u32) -> LockHolder {
        LockHolder {
            pid,
            command: "persona run".into(),
            flow: Some("checkout".into()),
            started_at: super::super::now_rfc3339(),
        }
    }

    fn take(paths: &PersonaPaths, pid: u32, mode: LockMode) -> TryLock {
        RunLock::try_acquire(paths, &holder(pid), mode).unwrap()
    }

    #[test]
    fn an_exclusive_holder_is_alone_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PersonaPaths::new(dir.path());
        let TryLock::Acquired(lock) = take(&paths, 11, LockMode::Exclusive) else {
            panic!("first lock must be acquired");
        };
        for mode in [LockMode::Exclusive, LockMode::Shared] {
            match take(&paths, 22, mode) {
                TryLock::Busy(Busy::Alone(Some(h))) => assert_eq!(h.pid, 11),
                _ => panic!("{mode:?}: busy, naming pid 11"),
            }
        }
        assert!(held_alone(&paths).unwrap().is_some());
        drop(lock);
        assert_free(&paths);
    }

    /// Nobody holds the lock: its file is empty and a holder alone takes it.
    fn assert_free(paths: &PersonaPaths) {
        assert!(held_alone(paths).unwrap().is_none());
        assert_eq!(std::fs::read(paths.lock()).unwrap(), b"");
        assert!(matches!(
            take(paths, 33, LockMode::Exclusive),
            TryLock::Acquired(_)
        ));
    }

    #[test]
    fn shared_holders_run_beside_each_other_and_keep_an_exclusive_one_out() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PersonaPaths::new(dir.path());
        let a = take(&paths, 1, LockMode::Shared);
        let b = take(&paths, 2, LockMode::Shared);
        assert!(matches!(
            (&a, &b),
            (TryLock::Acquired(_), TryLock::Acquired(_))
        ));
        assert!(matches!(
            take(&paths, 3, LockMode::Exclusive),
            TryLock::Busy(Busy::Shared)
        ));
        // A shared holder writes nothing into the file, and doctor sees no one alone.
        assert_eq!(std::fs::read(paths.lock()).unwrap(), b"");
        assert!(held_alone(&paths).unwrap().is_none());
        drop((a, b));
        assert_free(&paths);
    }

    #[test]
    fn a_runs_own_lock_tells_live_from_crashed() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PersonaPaths::new(dir.path());
        assert!(!is_live(&paths, "r1"));
        assert!(!paths.own_lock("r1").exists(), "a check creates nothing");
        let own = OwnLock::take(&paths, "r1").unwrap();
        assert!(is_live(&paths, "r1"));
        assert!(OwnLock::try_take(&paths, "r1").unwrap().is_none());
        own.release();
        assert!(!paths.own_lock("r1").exists());
        assert!(!paths.active_dir().exists(), "the empty active/ goes too");
        // A crashed run's lock is free: recovery takes it.
        let again = OwnLock::try_take(&paths, "r1").unwrap().expect("free");
        assert!(is_live(&paths, "r1"));
        again.release();
    }
}
