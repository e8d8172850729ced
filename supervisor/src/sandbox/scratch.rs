//! The scratch after the run: made safe to keep with the run's record.

use std::path::Path;

/// Makes what the worker left in its scratch safe to keep with the run's record, once no process
/// of the box is left (the end of a run; `persona recover` after a crash). The worker owned the
/// scratch, and the record is read later, by people and by CI uploads that follow links:
/// - the run's copy of the Codex configuration goes, removed through no symlink (a `.codex` the
///   worker replaced by a link to the user's own `~/.codex` aimed the removal at the user's
///   `config.toml`: seen, issue #12's containment suite);
/// - every symbolic link, socket, FIFO and device goes (a link to `~/.ssh/id_ed25519` or to
///   `/proc/self/environ` would hand the reader's secrets to whoever reads the record; a FIFO
///   hangs any reader);
/// - set-user-ID and set-group-ID bits are cleared.
///
/// Nothing is followed (every step is relative to a folder opened `O_NOFOLLOW`). Below a depth of
/// [`MAX_KEPT_DEPTH`] folders are removed whole rather than walked (a walk that stopped there
/// left whatever was below it: issue #22), with a constant number of open folders however deep
/// they go. Errors are skipped.
pub fn clean_scratch(scratch: &Path) {
    use rustix::fs::{AtFlags, Mode};
    let Ok(top) = rustix::fs::open(scratch, dir_flags(), Mode::empty()) else {
        return;
    };
    if let Ok(codex) = rustix::fs::openat(&top, ".codex", dir_flags(), Mode::empty()) {
        let _ = rustix::fs::unlinkat(&codex, "config.toml", AtFlags::empty());
    }
    clean_dir(&top, 0);
}

/// Removes the folder `dir` with all it holds, at any depth, following no link (the box's
/// scratch and the browser's files when a run ends: docs/reference.md#run-directory). A folder
/// its writer made unreadable or unwritable is made the owner's again first. Whether `dir` is
/// gone (a missing one is).
pub fn remove_whole(dir: &Path) -> bool {
    use rustix::fs::Mode;
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return false;
    };
    let Ok(name) = std::ffi::CString::new(name.as_encoded_bytes()) else {
        return false;
    };
    if let Ok(parent) = rustix::fs::open(parent, dir_flags(), Mode::empty()) {
        remove_tree(&parent, name);
    }
    std::fs::symlink_metadata(dir).is_err()
}

/// Opens folder `name` of `parent` to empty it: made the owner's to read and write (a folder of
/// mode 0500 keeps its files otherwise), through no link.
fn open_to_empty(
    parent: &std::os::fd::OwnedFd,
    name: &std::ffi::CStr,
) -> rustix::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{AtFlags, FileType, Mode};
    let dir = match rustix::fs::openat(parent, name, dir_flags(), Mode::empty()) {
        Err(rustix::io::Errno::ACCESS) => {
            // Not opened, so not yet known to be a folder rather than a link to one.
            let st = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)?;
            if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
                return Err(rustix::io::Errno::NOTDIR);
            }
            rustix::fs::chmodat(parent, name, Mode::RWXU, AtFlags::empty())?;
            rustix::fs::openat(parent, name, dir_flags(), Mode::empty())?
        }
        other => other?,
    };
    let _ = rustix::fs::fchmod(&dir, Mode::RWXU);
    Ok(dir)
}

/// How deep the scratch's folders are kept (and walked) after the run.
const MAX_KEPT_DEPTH: u32 = 64;

/// Removes folder `name` of `parent` with all it holds, at any depth, holding two folders open at
/// a time: each folder's sub-folders are first moved up into `parent` (under a fresh name), so
/// that every folder is emptied at the same depth.
fn remove_tree(parent: &std::os::fd::OwnedFd, name: std::ffi::CString) {
    use rustix::fs::{AtFlags, FileType, RenameFlags};
    let mut queue = vec![name];
    let mut fresh = 0u64;
    while let Some(name) = queue.pop() {
        let Ok(dir) = open_to_empty(parent, name.as_c_str()) else {
            let _ = rustix::fs::unlinkat(parent, name.as_c_str(), AtFlags::empty());
            continue;
        };
        let Some(names) = entry_names(&dir) else {
            continue;
        };
        for n in names {
            let is_dir = rustix::fs::statat(&dir, n.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory);
            if !is_dir {
                let _ = rustix::fs::unlinkat(&dir, n.as_c_str(), AtFlags::empty());
                continue;
            }
            // A name nothing in `parent` has: renameat2 refuses to replace one.
            loop {
                fresh += 1;
                let Ok(up) = std::ffi::CString::new(format!(".leopold-deep-{fresh}")) else {
                    break;
                };
                match rustix::fs::renameat_with(
                    &dir,
                    n.as_c_str(),
                    parent,
                    up.as_c_str(),
                    RenameFlags::NOREPLACE,
                ) {
                    Ok(()) => {
                        queue.push(up);
                        break;
                    }
                    Err(rustix::io::Errno::EXIST) => continue,
                    Err(_) => break,
                }
            }
        }
        drop(dir);
        let _ = rustix::fs::unlinkat(parent, name.as_c_str(), AtFlags::REMOVEDIR);
    }
}

fn dir_flags() -> rustix::fs::OFlags {
    use rustix::fs::OFlags;
    OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY
}

/// The names in an open folder but `.` and `..`; `None` when it cannot be read. Names first:
/// the folder is changed while it is read otherwise.
fn entry_names(dir: &std::os::fd::OwnedFd) -> Option<Vec<std::ffi::CString>> {
    let entries = rustix::fs::Dir::read_from(dir).ok()?;
    Some(
        entries
            .flatten()
            .map(|e| e.file_name().to_owned())
            .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
            .collect(),
    )
}

fn clean_dir(dir: &std::os::fd::OwnedFd, depth: u32) {
    use rustix::fs::{AtFlags, FileType, Mode};
    let Some(names) = entry_names(dir) else {
        return;
    };
    for name in names {
        let Ok(st) = rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                if depth < MAX_KEPT_DEPTH {
                    if let Ok(sub) =
                        rustix::fs::openat(dir, name.as_c_str(), dir_flags(), Mode::empty())
                    {
                        clean_dir(&sub, depth + 1);
                    }
                } else {
                    remove_tree(dir, name);
                }
            }
            FileType::RegularFile => {
                if st.st_mode & 0o6000 != 0 {
                    let mode = Mode::from_raw_mode(st.st_mode & 0o1777);
                    let _ = rustix::fs::chmodat(dir, name.as_c_str(), mode, AtFlags::empty());
                }
            }
            _ => {
                let _ = rustix::fs::unlinkat(dir, name.as_c_str(), AtFlags::empty());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_cleanup_follows_no_symlink_the_worker_planted() {
        let dir = tempfile::tempdir().unwrap();
        let (scratch, users) = (dir.path().join("scratch"), dir.path().join("users-codex"));
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::create_dir_all(&users).unwrap();
        std::fs::write(users.join("config.toml"), "mine").unwrap();
        std::os::unix::fs::symlink(&users, scratch.join(".codex")).unwrap();
        clean_scratch(&scratch);
        assert_eq!(
            std::fs::read_to_string(users.join("config.toml")).unwrap(),
            "mine"
        );

        assert!(
            std::fs::symlink_metadata(scratch.join(".codex")).is_err(),
            "the link goes"
        );
        std::fs::create_dir(scratch.join(".codex")).unwrap();
        std::fs::write(scratch.join(".codex/config.toml"), "copy").unwrap();
        clean_scratch(&scratch);
        assert!(!scratch.join(".codex/config.toml").exists());
    }

    #[test]
    fn the_scratch_keeps_no_link_socket_fifo_or_setuid_bit() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(scratch.join("a/b")).unwrap();
        let secret = dir.path().join("id_ed25519");
        std::fs::write(&secret, "key").unwrap();
        std::os::unix::fs::symlink(&secret, scratch.join("evidence.txt")).unwrap();
        std::os::unix::fs::symlink("../../../id_ed25519", scratch.join("a/b/rel")).unwrap();
        std::os::unix::fs::symlink(dir.path(), scratch.join("a/up")).unwrap();
        let _sock = std::os::unix::net::UnixListener::bind(scratch.join("a/sock")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(scratch.join("a/b/fifo"))
            .status()
            .unwrap();
        assert!(fifo.success());
        std::fs::write(scratch.join("a/tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            scratch.join("a/tool"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap();
        std::fs::write(scratch.join("a/b/transcript.jsonl"), "kept").unwrap();

        clean_scratch(&scratch);

        let mut left = Vec::new();
        let mut stack = vec![scratch.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let m = std::fs::symlink_metadata(e.path()).unwrap();
                if m.is_dir() {
                    stack.push(e.path());
                }
                left.push(
                    e.path()
                        .strip_prefix(&scratch)
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        }
        left.sort();
        assert_eq!(left, ["a", "a/b", "a/b/transcript.jsonl", "a/tool"]);
        let mode = std::fs::metadata(scratch.join("a/tool"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755);
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "key");
    }

    #[test]
    fn the_scratch_keeps_nothing_below_its_depth_and_no_link_at_any_depth() {
        let (dir, secret) = leopold_tests::temp_file("id_ed25519", "key");
        let scratch = dir.path().join("scratch");
        // 200 levels, with a link, a FIFO and a file at the bottom and half way down.
        let mut deep = scratch.clone();
        for i in 0..200 {
            deep.push("d");
            if i == 100 || i == 199 {
                std::fs::create_dir_all(&deep).unwrap();
                std::os::unix::fs::symlink(&secret, deep.join("link")).unwrap();
                std::fs::write(deep.join("file"), "x").unwrap();
            }
        }
        std::fs::write(scratch.join("d/top.txt"), "kept").unwrap();
        clean_scratch(&scratch);

        let (mut links, mut depth_max) = (0, 0);
        let mut stack = vec![(scratch.clone(), 0u32)];
        while let Some((d, depth)) = stack.pop() {
            depth_max = depth_max.max(depth);
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let m = std::fs::symlink_metadata(e.path()).unwrap();
                if m.file_type().is_symlink() {
                    links += 1;
                }
                if m.is_dir() {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
        assert_eq!(links, 0);
        assert!(depth_max <= MAX_KEPT_DEPTH, "{depth_max}");
        assert_eq!(
            std::fs::read_to_string(scratch.join("d/top.txt")).unwrap(),
            "kept"
        );
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "key");
        let leftovers: Vec<_> = std::fs::read_dir(&scratch)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leftovers, ["d"], "nothing hoisted is left behind");
    }
}
