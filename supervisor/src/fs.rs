//! Atomic file writes, the one place they live: Leopold's own files ([`write_own_file_as`]:
//! ACTIVE.json, run records, wiring records) and careful replacement of a file someone else owns
//! ([`replace_if_unchanged`]: the harnesses' settings files).
//!
//! The hazards, and what this module does about each:
//! - A crash mid-write must not leave a truncated settings file: the new bytes go to a temp file in
//!   the *target's* directory (same mount, so the rename is atomic), are fsynced, then renamed over
//!   the target; the directory is fsynced after.
//! - Leopold's own files are atomic the same way, but wait on the disk only as much as their
//!   [`Durability`] says: a power loss must not cost the record, and nothing else is worth a stall.
//! - The user's file mode (and, when we may, owner) survives: the temp file gets them before rename.
//! - A symlinked settings file (dotfile managers) stays a link: we resolve the link chain and
//!   replace the file it points to, never the link.
//! - Someone else (the user, the harness) may write the file between our read and our rename: just
//!   before renaming we re-read the target and, if it no longer holds what we read, give up with
//!   [`Replace::Conflict`] so the caller re-reads and redoes its edit. A write landing in the
//!   microseconds between that check and the rename is still lost; no lock the harnesses honour
//!   exists to close that window.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What a path held when read: nothing, or these bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileState {
    Absent,
    Present(Vec<u8>),
}

impl FileState {
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match self {
            FileState::Absent => None,
            FileState::Present(b) => Some(b),
        }
    }
}

/// The outcome of [`replace_if_unchanged`].
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a conflict means nothing was written: re-read and redo"]
pub(crate) enum Replace {
    Done,
    /// The file no longer held the expected state just before the rename; nothing was written.
    Conflict,
}

/// Longest symlink chain we follow before calling it a loop.
const MAX_LINK_HOPS: usize = 32;

/// Follows `path`'s symlink chain to the file that would be written. Works for a dangling link
/// (the target need not exist yet) and for a path that does not exist at all (returned as is).
pub(crate) fn resolve_target(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = if link.is_absolute() {
                    link
                } else {
                    current.parent().unwrap_or(Path::new(".")).join(link)
                };
            }
            Ok(_) => return Ok(current),
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINK_HOPS} symlinks to follow (a loop?)"
    )))
}

/// Reads what `path` holds now, following symlinks.
pub(crate) fn read_state(path: &Path) -> io::Result<FileState> {
    match fs::read(path) {
        Ok(bytes) => Ok(FileState::Present(bytes)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            // A dangling symlink reads as NotFound too: that is "absent", and writing goes through
            // the link to create its target.
            Ok(FileState::Absent)
        }
        Err(err) => Err(err),
    }
}

/// Replaces `path` (through its symlinks) with `new` (`None`: remove it), but only if it still
/// holds `expected`. `before_rename` runs after the temp file is ready and before the final check;
/// tests use it to inject a concurrent change.
pub(crate) fn replace_if_unchanged(
    path: &Path,
    expected: &FileState,
    new: Option<&[u8]>,
    before_rename: &mut dyn FnMut(&Path),
    durability: Durability,
) -> io::Result<Replace> {
    let target = resolve_target(path)?;
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };

    let Some(new) = new else {
        before_rename(path);
        if read_state(path)? != *expected {
            return Ok(Replace::Conflict);
        }
        // Removing means "the path did not exist before us": remove the path itself.
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        if durability == Durability::Durable {
            sync_dir(&dir);
        }
        return Ok(Replace::Done);
    };

    fs::create_dir_all(&dir)?;
    let file_name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{file_name}.leopold-"))
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    temp.write_all(new)?;
    match fs::metadata(&target) {
        Ok(meta) => {
            temp.as_file().set_permissions(meta.permissions())?;
            copy_owner(temp.as_file(), &meta);
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            // tempfile creates 0600; a new settings file should be readable like any config.
            set_new_file_mode(temp.as_file())?;
        }
        Err(err) => return Err(err),
    }
    if durability != Durability::Volatile {
        sync_file(temp.as_file())?;
    }

    before_rename(path);
    if read_state(path)? != *expected {
        // Dropping `temp` removes it.
        return Ok(Replace::Conflict);
    }
    temp.persist(&target).map_err(|e| e.error)?;
    if durability == Durability::Durable {
        sync_dir(&dir);
    }
    Ok(Replace::Done)
}

/// How much of a power loss a file Leopold owns must survive. Every write is atomic (temp file
/// and rename), so a crashed *process* never leaves one torn; what differs is how long the writer
/// waits on the disk, which under a neighbour writing with fsync is tens of milliseconds a call.
/// docs/reference.md#what-reaches-the-disk lists which file gets which, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Survives a power loss: the file is fsynced, renamed, then its directory fsynced. For what
    /// recovery and the record need after a reboot (ACTIVE.json as first written, the wiring
    /// record, run.json).
    Durable,
    /// The file is fsynced but not its directory: after a power loss the path holds the old
    /// version or the new, each whole. For a rewrite whose news means nothing after a reboot but
    /// whose file must stay readable (ACTIVE.json's worker pid: recovery refuses an unreadable
    /// ACTIVE.json), and for a file whose directory a later [`Durability::Durable`] write in the
    /// same directory syncs (findings.md before run.json).
    Whole,
    /// Nothing waits on the disk: the file is only used while the run lives or can be made again
    /// from the record (the `--settings` file, the browser's config, report.html, JUnit).
    Volatile,
}

/// Writes a file Leopold owns: temp file, fsync as `durability` says, rename, fsync of the
/// directory if [`Durability::Durable`]. Creates the directory if needed.
pub(crate) fn write_own_file_as(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".leopold-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if durability != Durability::Volatile {
        sync_file(temp.as_file())?;
    }
    temp.persist(path).map_err(|e| e.error)?;
    if durability == Durability::Durable {
        sync_dir(dir);
    }
    Ok(())
}

/// Every fsync/fdatasync the supervisor makes goes through [`sync_file`], [`sync_dir`] or
/// [`note_sync`], which count them: `__LEOPOLD_TIMINGS` reports the count, and a lifecycle test
/// fails if a run's count creeps up.
static SYNCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many fsync/fdatasync calls this process has made through this module.
pub(crate) fn syncs() -> u64 {
    SYNCS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts an fsync made elsewhere (the journal writer's `fdatasync`).
pub(crate) fn note_sync() {
    SYNCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

fn sync_file(file: &fs::File) -> io::Result<()> {
    note_sync();
    file.sync_all()
}

/// Makes a [`Durability::Whole`] write of `path` [`Durability::Durable`]: syncs its directory,
/// so that the rename survives a power loss too. For a caller with other work to start first.
pub(crate) fn sync_dir_of(path: &Path) {
    sync_dir(path.parent().unwrap_or(Path::new(".")));
}

/// Makes the rename itself durable. Best effort: some filesystems refuse to fsync a directory.
fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        note_sync();
        let _ = d.sync_all();
    }
}

#[cfg(unix)]
fn copy_owner(file: &fs::File, meta: &fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    // Only root can give a file away; for anyone else this fails (harmlessly) unless the owner is
    // already ours, which is the common case.
    let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
}

#[cfg(not(unix))]
fn copy_owner(_file: &fs::File, _meta: &fs::Metadata) {}

#[cfg(unix)]
fn set_new_file_mode(file: &fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_new_file_mode(_file: &fs::File) -> io::Result<()> {
    Ok(())
}
