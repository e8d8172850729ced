//! What of `/etc` the box hides: every file and folder that others may not read
//! (`/etc/shadow`, `/etc/sudoers`, `/etc/ssl/private`). The worker may run as root (CI does), and
//! root reads them whatever their mode, so the box replaces them by an empty file or folder.
//!
//! Finding them is a walk of `/etc`, nothing but system calls, slow on a virtual machine (2–4 ms
//! for Debian's `/etc`, on the path to every boxed worker's spawn). Three quarters of it is
//! *listing* folders (open, read the entries, close); a folder's listing changes only when an
//! entry is added, removed or renamed, and each of those changes the folder's mtime and ctime.
//! So the listings are cached (`$XDG_CACHE_HOME/leopold/etc-listing.json`, beside the harness
//! version cache), each keyed by what `stat` says of its folder (device, inode, mtime, ctime),
//! and a folder whose key is unchanged is not listed again. Modes are never cached: every entry
//! is stat'ed on every walk, so a file `chmod`ed to root-only since the last run is hidden in
//! the next.
//!
//! What the cache could miss, and why it does not: a folder changed twice within the
//! timestamps' granularity keeps its key; a listing is therefore cached only when its folder has
//! been left alone for [`crate::cache::SETTLE`] (as the version cache does for binaries). A
//! folder replaced by another (a rename, a mount over it) has another device or inode. A cache
//! that cannot be read, is of another version or for another root is ignored and rewritten,
//! without fsync (a cache lost to a power loss costs one full walk).
//!
//! Whoever can write the cache can leave a name out of a listing, and so a root-only file in
//! the box's view: the cache is trusted as the rest of the user's `~/.cache/leopold` is, which
//! already holds code the run executes (the provisioned browser's Playwright MCP). The worker
//! cannot reach it: the box holds none of the user's home.

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The cache file's format version; another is ignored.
const CACHE_VERSION: u32 = 1;
/// Folders deeper than this below the root are not listed (their own entry is still judged).
const MAX_DEPTH: u32 = 6;

/// What one walk found and how.
#[derive(Debug)]
pub(super) struct Walked {
    /// Entries others may not read, sorted.
    pub hidden: Vec<PathBuf>,
    /// Folders listed from the disk.
    pub listed: usize,
    /// Folders whose listing came from the cache.
    pub cached: usize,
}

/// A folder's entries worth a `stat` (files, folders, and entries of unknown type; symlinks and
/// the rest are left: a symlink's target is judged where it lies), under the key it had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Listing {
    key: Key,
    /// The names, each followed by a `/` (which no name holds): one string a folder, so that
    /// reading the cache is not most of what it saves.
    names: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Key {
    fn of(m: &Metadata) -> Key {
        let (mtime_ns, ctime_ns) = crate::cache::change_times_ns(m);
        Key {
            dev: m.dev(),
            ino: m.ino(),
            mtime_ns,
            ctime_ns,
        }
    }

    /// Whether the folder was left alone long enough before `now` for its key to be trusted.
    fn settled(&self, now: SystemTime) -> bool {
        crate::cache::settled(self.mtime_ns.max(self.ctime_ns), now)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheFile {
    version: u32,
    root: String,
    /// By the folder's path.
    dirs: HashMap<String, Listing>,
}

fn load(file: Option<&Path>, root: &str) -> HashMap<String, Listing> {
    file.and_then(|f| std::fs::read(f).ok())
        .and_then(|b| serde_json::from_slice::<CacheFile>(&b).ok())
        .filter(|c| c.version == CACHE_VERSION && c.root == root)
        .map(|c| c.dirs)
        .unwrap_or_default()
}

/// What a walk (or one thread's share of it) found, and the listings of the folders it went
/// through.
#[derive(Default)]
struct Share {
    hidden: Vec<PathBuf>,
    listings: Vec<(String, Listing)>,
    listed: usize,
    cached: usize,
}

/// The entries below `dir` others may not read, with the listings cached in `cache_file` (see
/// the module doc); `now` decides which folders have settled.
pub(super) fn walk_root(dir: &Path, cache_file: Option<&Path>, now: SystemTime) -> Walked {
    let root = dir.to_string_lossy().into_owned();
    let cache = load(cache_file, &root);
    let mut all = Share::default();
    let below = match std::fs::metadata(dir) {
        Ok(m) => all.folder(dir, &m, &cache, now),
        Err(_) => Vec::new(),
    };
    // The folders below the top level are walked on two threads: a boxed worker's spawn waits
    // for the walk, with a core to spare.
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for (i, d) in below.into_iter().enumerate() {
        if i % 2 == 0 {
            mine.push(d)
        } else {
            theirs.push(d)
        }
    }
    let walk_all = |dirs: &[(PathBuf, Metadata)]| {
        let mut share = Share::default();
        for (d, m) in dirs {
            share.walk(d, m, 1, &cache, now);
        }
        share
    };
    let (a, b) = std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("leopold-box-etc-2".into())
            .spawn_scoped(s, || walk_all(&theirs));
        let a = walk_all(&mine);
        let b = match helper {
            // A panic there is a panic here: half a walk would leave root-only files visible.
            Ok(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            Err(_) => walk_all(&theirs),
        };
        (a, b)
    });
    for share in [a, b] {
        all.hidden.extend(share.hidden);
        all.listings.extend(share.listings);
        all.listed += share.listed;
        all.cached += share.cached;
    }
    all.hidden.sort();
    let fresh: HashMap<String, Listing> = all.listings.into_iter().collect();
    if let Some(file) = cache_file.filter(|_| fresh != cache) {
        let body = CacheFile {
            version: CACHE_VERSION,
            root,
            dirs: fresh,
        };
        let bytes = serde_json::to_vec(&body).expect("the listing cache serialises");
        if let Err(e) = crate::fs::write_own_file_as(file, &bytes, crate::fs::Durability::Volatile)
        {
            tracing::debug!(
                "cannot write the /etc listing cache {}: {e}",
                file.display()
            );
        }
    }
    Walked {
        hidden: all.hidden,
        listed: all.listed,
        cached: all.cached,
    }
}

impl Share {
    /// Walks `dir`, `depth` folders below the root, and the folders below it others may list.
    fn walk(
        &mut self,
        dir: &Path,
        meta: &Metadata,
        depth: u32,
        cache: &HashMap<String, Listing>,
        now: SystemTime,
    ) {
        for (d, m) in self.folder(dir, meta, cache, now) {
            if depth < MAX_DEPTH {
                self.walk(&d, &m, depth + 1, cache, now);
            }
        }
    }

    /// Judges the entries of `dir` (whose `stat` is `meta`, taken before it is listed): the
    /// listing comes from the cache when `dir`'s key is unchanged, else from the disk (and is
    /// kept for the cache if `dir` has settled and was read whole). Returns the folders among
    /// the entries that others may list.
    fn folder(
        &mut self,
        dir: &Path,
        meta: &Metadata,
        cache: &HashMap<String, Listing>,
        now: SystemTime,
    ) -> Vec<(PathBuf, Metadata)> {
        let key = Key::of(meta);
        let path = dir.to_str();
        let mut below = Vec::new();
        if let Some((path, hit)) = path
            .and_then(|p| Some((p, cache.get(p)?)))
            .filter(|(_, l)| l.key == key)
        {
            self.cached += 1;
            for name in hit.names.split_terminator('/') {
                let p = dir.join(name);
                if let Ok(m) = std::fs::symlink_metadata(&p) {
                    self.judge(p, m, &mut below);
                }
            }
            self.listings.push((path.to_owned(), hit.clone()));
            return below;
        }
        let Ok(rd) = std::fs::read_dir(dir) else {
            return below;
        };
        self.listed += 1;
        let mut names = String::new();
        let mut whole = true;
        for e in rd {
            let Ok(e) = e else {
                whole = false;
                continue;
            };
            // The entry's type comes with the listing; only files and folders are stat'ed, and
            // relative to the open folder (no walk of the whole path again per entry).
            match e.file_type() {
                Ok(ft) if ft.is_file() || ft.is_dir() => {}
                Ok(_) => continue,
                Err(_) => {}
            }
            match e.file_name().to_str() {
                Some(n) => {
                    names.push_str(n);
                    names.push('/');
                }
                None => whole = false,
            }
            if let Ok(m) = e.metadata() {
                self.judge(e.path(), m, &mut below);
            }
        }
        if let Some(path) = path.filter(|_| whole && key.settled(now)) {
            self.listings
                .push((path.to_owned(), Listing { key, names }));
        }
        below
    }

    /// An entry others may not read goes to `hidden`; a folder they may list, to `below`.
    fn judge(&mut self, p: PathBuf, m: Metadata, below: &mut Vec<(PathBuf, Metadata)>) {
        let ft = m.file_type();
        if ft.is_symlink() || !(ft.is_file() || ft.is_dir()) {
            return;
        }
        let others = m.permissions().mode() & 0o005;
        if (ft.is_file() && others & 0o004 == 0) || (ft.is_dir() && others != 0o005) {
            self.hidden.push(p);
        } else if ft.is_dir() {
            below.push((p, m));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_only_files_are_found() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = leopold_tests::temp_tree(&[("shadow", "x"), ("hosts", "x")]);
        let (secret, open) = (dir.path().join("shadow"), dir.path().join("hosts"));
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        let private = dir.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        let found = walk_root(dir.path(), None, SystemTime::now()).hidden;
        assert!(
            found.contains(&secret) && found.contains(&private),
            "{found:?}"
        );
        assert!(!found.contains(&open));
    }

    #[test]
    fn root_only_entries_are_found_in_every_folder_both_threads_walk() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        };
        let mut want = Vec::new();
        // Seven folders (both halves of the top level), each with a root-only file, a readable
        // one, and a root-only file two levels down; and one folder six levels deep.
        for i in 0..7 {
            let d = dir.path().join(format!("d{i}"));
            let deep = d.join("a/b");
            std::fs::create_dir_all(&deep).unwrap();
            for (name, m) in [("secret", 0o600), ("open", 0o644)] {
                std::fs::write(d.join(name), "x").unwrap();
                mode(&d.join(name), m);
            }
            std::fs::write(deep.join("key"), "x").unwrap();
            mode(&deep.join("key"), 0o640);
            want.extend([d.join("secret"), deep.join("key")]);
        }
        let deepest = dir.path().join("d0/1/2/3/4/5/6");
        std::fs::create_dir_all(&deepest).unwrap();
        std::fs::write(deepest.join("too-deep"), "x").unwrap();
        mode(&deepest.join("too-deep"), 0o600);
        std::fs::write(deepest.parent().unwrap().join("deep-enough"), "x").unwrap();
        mode(&deepest.parent().unwrap().join("deep-enough"), 0o600);
        want.push(deepest.parent().unwrap().join("deep-enough"));
        want.sort();
        assert_eq!(walk_root(dir.path(), None, SystemTime::now()).hidden, want);
    }

    fn mode(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    /// A clock late enough for every folder made by the test to have settled.
    fn later() -> SystemTime {
        SystemTime::now() + std::time::Duration::from_secs(60)
    }

    /// Four folders, each with a readable file and a root-only one, one of them two deep.
    fn tree(root: &Path) {
        for i in 0..4 {
            let d = root.join(format!("d{i}"));
            std::fs::create_dir_all(d.join("sub")).unwrap();
            for (name, m) in [("open", 0o644), ("secret", 0o600)] {
                std::fs::write(d.join(name), "x").unwrap();
                mode(&d.join(name), m);
            }
            std::fs::write(d.join("sub/key"), "x").unwrap();
            mode(&d.join("sub/key"), 0o640);
        }
    }

    /// Walks with the cache and checks the answer against a walk without it.
    fn walk_cached(root: &Path, cache: &Path, now: SystemTime) -> Walked {
        let walked = walk_root(root, Some(cache), now);
        assert_eq!(walked.hidden, walk_root(root, None, now).hidden);
        walked
    }

    #[test]
    fn a_settled_folder_is_listed_once_and_its_entries_are_judged_on_every_walk() {
        let dir = tempfile::tempdir().unwrap();
        let (root, cache) = (dir.path().join("etc"), dir.path().join("cache/etc.json"));
        tree(&root);
        let first = walk_cached(&root, &cache, later());
        // The root, four folders and their four `sub`s.
        assert_eq!((first.listed, first.cached), (9, 0));
        assert_eq!(first.hidden.len(), 8, "{:?}", first.hidden);
        let again = walk_cached(&root, &cache, later());
        assert_eq!((again.listed, again.cached), (0, 9));
        assert_eq!(again.hidden, first.hidden);
        // A `chmod` changes no folder's key: the listing still comes from the cache, and the
        // entry is judged by its mode now.
        mode(&root.join("d2/open"), 0o600);
        mode(&root.join("d3/sub"), 0o700);
        let after = walk_cached(&root, &cache, later());
        assert_eq!((after.listed, after.cached), (0, 8), "d3/sub is not walked");
        assert!(after.hidden.contains(&root.join("d2/open")));
        assert!(after.hidden.contains(&root.join("d3/sub")));
        assert!(!after.hidden.contains(&root.join("d3/sub/key")));
    }

    #[test]
    fn a_folder_changed_since_its_listing_was_cached_is_listed_again() {
        let dir = tempfile::tempdir().unwrap();
        let (root, cache) = (dir.path().join("etc"), dir.path().join("etc.json"));
        tree(&root);
        walk_cached(&root, &cache, later());
        // Past the timestamps' granularity, so that every change below moves a key.
        std::thread::sleep(std::time::Duration::from_millis(50));
        // A new root-only file; a folder replaced by another (a new inode) holding one; a file
        // renamed into a folder.
        std::fs::write(root.join("d1/new-secret"), "x").unwrap();
        mode(&root.join("d1/new-secret"), 0o600);
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("token"), "x").unwrap();
        mode(&other.join("token"), 0o600);
        std::fs::remove_dir_all(root.join("d2/sub")).unwrap();
        std::fs::rename(&other, root.join("d2/sub")).unwrap();
        std::fs::write(dir.path().join("moved"), "x").unwrap();
        mode(&dir.path().join("moved"), 0o640);
        std::fs::rename(dir.path().join("moved"), root.join("d3/sub/moved")).unwrap();
        let after = walk_cached(&root, &cache, later());
        // d1, d2, d2/sub (another folder now) and d3/sub; the root, d0, d0/sub, d1/sub, d3
        // from the cache.
        assert_eq!((after.listed, after.cached), (4, 5));
        for p in ["d1/new-secret", "d2/sub/token", "d3/sub/moved"] {
            assert!(
                after.hidden.contains(&root.join(p)),
                "{p}: {:?}",
                after.hidden
            );
        }
        let settled = walk_cached(&root, &cache, later());
        assert_eq!((settled.listed, settled.cached), (0, 9));
    }

    #[test]
    fn a_folder_changed_within_the_settle_time_is_listed_on_every_walk() {
        let dir = tempfile::tempdir().unwrap();
        let (root, cache) = (dir.path().join("etc"), dir.path().join("etc.json"));
        tree(&root);
        // Made just now: a second change within the timestamps' granularity could leave a key
        // unchanged, so no listing is kept.
        let now = SystemTime::now();
        assert_eq!(walk_cached(&root, &cache, now).listed, 9);
        let again = walk_cached(&root, &cache, now);
        assert_eq!((again.listed, again.cached), (9, 0));
    }

    #[test]
    fn a_cache_unreadable_or_for_another_root_is_ignored_and_rewritten() {
        let (dir, cache) = crate::test_support::temp_path("etc.json");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        tree(&a);
        tree(&b);
        std::fs::write(&cache, "{\"version\":1,\"root\":").unwrap();
        assert_eq!(walk_cached(&a, &cache, later()).listed, 9);
        assert_eq!(walk_cached(&a, &cache, later()).cached, 9);
        // The cache holds `a`'s listings; `b` is walked from the disk, and then cached.
        assert_eq!(walk_cached(&b, &cache, later()).listed, 9);
        assert_eq!(walk_cached(&b, &cache, later()).cached, 9);
        let mut other_version: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
        other_version["version"] = serde_json::json!(CACHE_VERSION + 1);
        std::fs::write(&cache, other_version.to_string()).unwrap();
        assert_eq!(walk_cached(&b, &cache, later()).listed, 9);
    }
}
