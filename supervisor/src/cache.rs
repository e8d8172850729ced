//! Leopold's caches under `$XDG_CACHE_HOME/leopold/` (else `~/.cache/leopold/`; no cache when
//! neither is known): answers that would cost a process or a walk to learn again. What
//! `<harness> --version` printed, so a run does not start a harness process (about 10 ms for the
//! real Claude Code, most of start → spawn) only to read a version that has not changed since
//! the last run; the box's probe; and, with this module's keys ([`cache_file_named`],
//! [`change_times_ns`], [`settled`]), the box's listing of `/etc` (`sandbox::etc`).
//!
//! The versions are kept in `harness-versions.json`, keyed by the binary's canonical path and
//! what `stat` says of it: device, inode, size, mtime and ctime. Replacing, rewriting, touching
//! or `chmod`ing the binary changes the key, so an answer is never trusted past a change of the
//! binary. What the cache cannot see is a wrapper script whose target changed while the script
//! stayed as it was; an entry is therefore also dropped after [`MAX_AGE`]. A cache that is
//! unreadable, of another version, or names another key is ignored and rewritten; it is written
//! without fsync (a cache lost to a power loss costs one probe).
//!
//! Only answers are cached: a failed or timed-out probe runs again next time. A binary modified
//! within the last [`SETTLE`] is not cached, since a second write within the timestamps'
//! granularity could leave its key unchanged.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The cache file's format version; another is ignored.
const CACHE_VERSION: u32 = 1;
/// How long an answer is trusted for an unchanged binary (see the module doc: wrapper scripts).
pub(crate) const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// A binary this recently modified is probed but not cached.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);
/// Entries kept (one per harness binary a user has run; the oldest go first).
const MAX_ENTRIES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    path: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    /// What else the answer depends on, besides the binary (the box probe: the boot and the
    /// kernel's namespace switches); empty for a `--version`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    extra: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    key: Key,
    /// Seconds since the epoch when the probe answered.
    probed_at: u64,
    /// What the probe printed on stdout.
    output: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheFile {
    version: u32,
    entries: Vec<Entry>,
}

/// Where the cache lives, from the environment: `$XDG_CACHE_HOME` when absolute, else
/// `$HOME/.cache`.
pub(crate) fn cache_file() -> Option<PathBuf> {
    cache_file_named("harness-versions.json")
}

/// A cache file of this format named `name`, beside [`cache_file`]'s.
pub(crate) fn cache_file_named(name: &str) -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
        Some(p) if p.is_absolute() => p,
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
    };
    Some(base.join("leopold").join(name))
}

/// What `stat` says of the binary now; `None` when it cannot be told (then nothing is cached).
fn key_of(bin: &Path, extra: &str, now: SystemTime) -> Option<Key> {
    use std::os::unix::fs::MetadataExt as _;
    let path = std::fs::canonicalize(bin).ok()?;
    let m = std::fs::metadata(&path).ok()?;
    let (mtime_ns, ctime_ns) = change_times_ns(&m);
    let key = Key {
        path,
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns,
        ctime_ns,
        extra: extra.to_owned(),
    };
    settled(mtime_ns.max(ctime_ns), now).then_some(key)
}

/// A file's mtime and ctime, in nanoseconds since the epoch.
pub(crate) fn change_times_ns(m: &std::fs::Metadata) -> (i128, i128) {
    use std::os::unix::fs::MetadataExt as _;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (ns(m.mtime(), m.mtime_nsec()), ns(m.ctime(), m.ctime_nsec()))
}

/// Whether something last changed at `changed_ns` (nanoseconds since the epoch) was left alone
/// for [`SETTLE`] before `now`: a second change within the timestamps' granularity could leave
/// its stat unchanged, so only a settled one is trusted as a key.
pub(crate) fn settled(changed_ns: i128, now: SystemTime) -> bool {
    let now_ns = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    now_ns - changed_ns >= SETTLE.as_nanos() as i128
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn load(file: &Path) -> CacheFile {
    std::fs::read(file)
        .ok()
        .and_then(|b| serde_json::from_slice::<CacheFile>(&b).ok())
        .filter(|c| c.version == CACHE_VERSION)
        .unwrap_or_default()
}

/// `probe(bin)`'s answer, from the cache at `file` when it holds one for this very binary, else
/// from `probe` (and then cached).
pub(crate) fn version_output<E>(
    file: Option<&Path>,
    bin: &Path,
    now: SystemTime,
    probe: impl FnOnce(&Path) -> Result<String, E>,
) -> Result<String, E> {
    cached_answer(file, bin, "", now, probe)
}

/// [`version_output`] for any answer that depends on `bin` and on `extra` (part of the key).
pub(crate) fn cached_answer<E>(
    file: Option<&Path>,
    bin: &Path,
    extra: &str,
    now: SystemTime,
    probe: impl FnOnce(&Path) -> Result<String, E>,
) -> Result<String, E> {
    let Some(file) = file else {
        return probe(bin);
    };
    let before = key_of(bin, extra, now);
    let mut cache = load(file);
    if let Some(key) = &before {
        let fresh =
            |e: &&Entry| e.key == *key && secs(now).saturating_sub(e.probed_at) < MAX_AGE.as_secs();
        if let Some(hit) = cache.entries.iter().find(fresh) {
            tracing::debug!("{} --version from the cache", bin.display());
            return Ok(hit.output.clone());
        }
    }
    let output = probe(bin)?;
    // Cached only if the binary stayed the same through the probe.
    if let Some(key) = before.filter(|k| key_of(bin, extra, now).as_ref() == Some(k)) {
        cache.version = CACHE_VERSION;
        cache
            .entries
            .retain(|e| e.key.path != key.path || e.key.extra != key.extra);
        cache.entries.push(Entry {
            key,
            probed_at: secs(now),
            output: output.clone(),
        });
        let excess = cache.entries.len().saturating_sub(MAX_ENTRIES);
        cache.entries.drain(..excess);
        let mut bytes = serde_json::to_vec_pretty(&cache).expect("cache serialises");
        bytes.push(b'\n');
        if let Err(e) = crate::fs::write_own_file_as(file, &bytes, crate::fs::Durability::Volatile)
        {
            tracing::debug!("cannot write the version cache {}: {e}", file.display());
        }
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::os::unix::fs::PermissionsExt as _;

    /// Writes an executable at `path`.
    fn binary(path: &Path, body: &str) {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A clock far enough after the binary's last change for it to count as settled.
    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(60)
    }

    /// What every test probes: an executable holding `body` and a cache file, in a fresh
    /// temporary directory, and the count of the probes made.
    struct Probed {
        dir: tempfile::TempDir,
        file: PathBuf,
        bin: PathBuf,
        calls: Cell<u32>,
    }

    fn probed(cache: &str, bin: &str, body: &str) -> Probed {
        let dir = tempfile::tempdir().unwrap();
        let (file, bin) = (dir.path().join(cache), dir.path().join(bin));
        binary(&bin, body);
        Probed {
            dir,
            file,
            bin,
            calls: Cell::new(0),
        }
    }

    impl Probed {
        /// Calls through the cache with a probe that counts its calls and answers `answer`.
        fn ask(&self, now: SystemTime, answer: &str) -> String {
            self.ask_for(&self.bin, now, answer)
        }

        /// [`Probed::ask`] about `bin`.
        fn ask_for(&self, bin: &Path, now: SystemTime, answer: &str) -> String {
            version_output::<()>(Some(&self.file), bin, now, |_| {
                self.calls.set(self.calls.get() + 1);
                Ok(answer.to_owned())
            })
            .unwrap()
        }
    }

    #[test]
    fn the_extra_key_is_part_of_the_answer_and_entries_of_both_are_kept() {
        let p = probed("c/box.json", "bwrap", "#!/bin/sh\n");
        let ask_with = |extra: &str| {
            cached_answer::<()>(Some(&p.file), &p.bin, extra, later(), |_| {
                p.calls.set(p.calls.get() + 1);
                Ok("box ok".to_owned())
            })
            .unwrap()
        };
        ask_with("boot=a");
        ask_with("boot=a");
        assert_eq!(p.calls.get(), 1, "same binary, same boot: probed once");
        // Another boot (or namespace switch) is another question.
        ask_with("boot=b");
        assert_eq!(p.calls.get(), 2);
        ask_with("boot=a");
        ask_with("boot=b");
        assert_eq!(p.calls.get(), 2, "both answers kept");
        // A failure is never cached, whatever the extra key.
        let failed = cached_answer(Some(&p.file), &p.bin, "boot=c", later(), |_| {
            Err("no userns")
        });
        assert_eq!(failed, Err("no userns"));
        let again = cached_answer::<&str>(Some(&p.file), &p.bin, "boot=c", later(), |_| {
            Ok("box ok".to_owned())
        });
        assert_eq!(again, Ok("box ok".to_owned()));
    }

    #[test]
    fn an_unchanged_binary_is_probed_once() {
        let p = probed("c/v.json", "claude", "#!/bin/sh\necho 2.1.332\n");
        let now = later();
        assert_eq!(p.ask(now, "2.1.332\n"), "2.1.332\n");
        assert_eq!(p.ask(now, "other"), "2.1.332\n");
        assert_eq!(p.calls.get(), 1);
        // Through a symlink, the same binary: still the cached answer.
        let link = p.dir.path().join("link");
        std::os::unix::fs::symlink(&p.bin, &link).unwrap();
        assert_eq!(p.ask_for(&link, now, "other"), "2.1.332\n");
        assert_eq!(p.calls.get(), 1);
    }

    #[test]
    fn any_change_of_the_binary_probes_again() {
        let p = probed("v.json", "claude", "#!/bin/sh\necho 2.1.100\n");
        assert_eq!(p.ask(later(), "old"), "old");

        // Rewritten in place, same size: mtime and ctime move.
        std::thread::sleep(Duration::from_millis(20));
        binary(&p.bin, "#!/bin/sh\necho 2.1.332\n");
        assert_eq!(p.ask(later(), "new"), "new");
        assert_eq!(p.calls.get(), 2);

        // Replaced by rename (a new inode), then given its old mtime back: the inode and ctime
        // still tell.
        let old_mtime = std::fs::metadata(&p.bin).unwrap().modified().unwrap();
        let tmp = p.dir.path().join("claude.new");
        binary(&tmp, "#!/bin/sh\necho 2.1.400\n");
        std::fs::File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_modified(old_mtime)
            .unwrap();
        std::fs::rename(&tmp, &p.bin).unwrap();
        assert_eq!(p.ask(later(), "newer"), "newer");
        assert_eq!(p.calls.get(), 3);

        // A chmod changes ctime.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::set_permissions(&p.bin, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(p.ask(later(), "chmod"), "chmod");
        assert_eq!(p.calls.get(), 4);
    }

    #[test]
    fn an_old_entry_and_a_just_written_binary_are_probed() {
        let p = probed("v.json", "claude", "#!/bin/sh\n");
        // Just written: probed, not cached.
        let now = SystemTime::now();
        p.ask(now, "a");
        p.ask(now, "a");
        assert_eq!(p.calls.get(), 2);
        assert!(!p.file.exists());
        // Cached, then past MAX_AGE: probed again.
        p.ask(later(), "b");
        p.ask(later() + MAX_AGE, "c");
        assert_eq!(p.calls.get(), 4);
    }

    #[test]
    fn a_corrupt_or_foreign_cache_is_ignored_and_rewritten() {
        let p = probed("v.json", "claude", "#!/bin/sh\n");
        for junk in [
            "not json".to_owned(),
            String::new(),
            "{\"version\":99,\"entries\":[]}".to_owned(),
            "{\"version\":1,\"entries\":[{\"key\":7}]}".to_owned(),
        ] {
            std::fs::write(&p.file, &junk).unwrap();
            assert_eq!(p.ask(later(), "v"), "v", "{junk}");
        }
        assert_eq!(p.calls.get(), 4);
        // Rewritten valid: the next call is a hit.
        p.ask(later(), "x");
        assert_eq!(p.calls.get(), 4);
        // An entry whose key names this path but another inode is another binary.
        let text = std::fs::read_to_string(&p.file).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["entries"][0]["key"]["ino"] = serde_json::json!(1);
        std::fs::write(&p.file, v.to_string()).unwrap();
        assert_eq!(p.ask(later(), "y"), "y");
        assert_eq!(p.calls.get(), 5);
    }

    #[test]
    fn a_failure_is_not_cached_and_no_cache_means_a_probe_each_time() {
        let p = probed("v.json", "claude", "#!/bin/sh\n");
        let fail = version_output(Some(&p.file), &p.bin, later(), |_| {
            p.calls.set(p.calls.get() + 1);
            Err("timed out")
        });
        assert_eq!(fail, Err("timed out"));
        assert!(!p.file.exists());
        assert_eq!(p.ask(later(), "v"), "v");
        assert_eq!(p.calls.get(), 2);
        for _ in 0..2 {
            version_output::<()>(None, &p.bin, later(), |_| {
                p.calls.set(p.calls.get() + 1);
                Ok("v".into())
            })
            .unwrap();
        }
        assert_eq!(p.calls.get(), 4);
    }

    #[test]
    fn a_binary_changed_during_the_probe_is_not_cached() {
        let p = probed("v.json", "claude", "#!/bin/sh\n");
        version_output::<()>(Some(&p.file), &p.bin, later(), |b| {
            std::thread::sleep(Duration::from_millis(20));
            binary(b, "#!/bin/sh\necho upgraded\n");
            Ok("2.1.100".into())
        })
        .unwrap();
        assert_eq!(p.ask(later(), "v"), "v");
        assert_eq!(p.calls.get(), 1);
    }
}
