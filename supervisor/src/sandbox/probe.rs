//! Whether this machine can build the box: bwrap found, a trivial box built once per boot and
//! namespace settings (cached), and the system folders every box binds.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Test-only knob: the bwrap to use.
const TEST_BWRAP: &str = "__LEOPOLD_BWRAP";

/// Whether this machine can build the box.
#[derive(Debug, Clone)]
pub enum Availability {
    Ready { bwrap: PathBuf, version: String },
    Missing(String),
}

/// Finds bwrap and builds a trivial box with it (namespaces can be forbidden, e.g. in a
/// container without `CLONE_NEWUSER`/`CLONE_NEWNET`: then the message says so).
pub fn probe() -> Availability {
    match find_bwrap() {
        Ok(bwrap) => match trial_box(&bwrap) {
            Ok(()) => {
                let version = bwrap_version(&bwrap);
                Availability::Ready { bwrap, version }
            }
            Err(why) => Availability::Missing(why),
        },
        Err(why) => Availability::Missing(why),
    }
}

/// [`probe`] for a run: the trial box is skipped when the cache (beside the harness version
/// cache, `box-probe.json`) says this very bwrap (path, inode, size, mtime, ctime) built one in
/// this boot with the kernel's namespace switches as they are now. It cost every boxed run
/// about 15 ms (BENCHMARKS "Quiet re-measure"). Only a success is cached; if namespaces were
/// forbidden since in a way the key cannot see, bwrap fails at launch and no worker runs.
pub(super) fn probe_for_run() -> Availability {
    let bwrap = match find_bwrap() {
        Ok(b) => b,
        Err(why) => return Availability::Missing(why),
    };
    let answer = crate::cache::cached_answer(
        crate::cache::cache_file_named("box-probe.json").as_deref(),
        &bwrap,
        &namespace_fingerprint(),
        std::time::SystemTime::now(),
        |b| trial_box(b).map(|()| "box ok".to_owned()),
    );
    match answer {
        Ok(_) => Availability::Ready {
            bwrap,
            version: String::new(),
        },
        Err(why) => Availability::Missing(why),
    }
}

/// What, besides bwrap itself, decides whether a box can be built: the boot, the caller's uid,
/// and the kernel's namespace switches (Debian's and Ubuntu's included).
fn namespace_fingerprint() -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "-".into())
    };
    let mut parts = vec![format!("uid={}", rustix::process::geteuid().as_raw())];
    for p in [
        "/proc/sys/kernel/random/boot_id",
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/user/max_pid_namespaces",
        "/proc/sys/user/max_net_namespaces",
        "/proc/sys/user/max_mnt_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ] {
        parts.push(format!("{}={}", p.rsplit('/').next().unwrap_or(p), read(p)));
    }
    parts.join(" ")
}

fn find_bwrap() -> Result<PathBuf, String> {
    if !cfg!(target_os = "linux") {
        return Err(
            "the box is built with Linux namespaces (bubblewrap); this system has none".into(),
        );
    }
    // Test-only: a bwrap path, to prove the refusal on a machine that has one.
    let wanted = crate::knobs::var_os(TEST_BWRAP).map(PathBuf::from);
    let found = match &wanted {
        Some(p) => crate::os::find_executable(p),
        None => crate::os::find_executable(Path::new("bwrap"))
            .or_else(|| crate::os::find_executable(Path::new("/usr/bin/bwrap"))),
    };
    found.ok_or_else(|| {
        "`bwrap` (bubblewrap) is not installed (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`)".into()
    })
}

fn bwrap_version(bwrap: &Path) -> String {
    Command::new(bwrap)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Builds a trivial box: `Err` says why it could not.
fn trial_box(bwrap: &Path) -> Result<(), String> {
    let mut cmd = Command::new(bwrap);
    cmd.args(system_args())
        .args([
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--",
        ])
        .arg("/bin/true")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "{} cannot create namespaces here ({}): {}",
            bwrap.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {}: {e}", bwrap.display())),
    }
}

/// [`system_args`], computed once per process: by [`prefetch_system_args`]'s thread while the
/// run writes its files and starts the gateway, or by the first box built.
static SYSTEM_ARGS: std::sync::LazyLock<Vec<OsString>> = std::sync::LazyLock::new(walk_system);

/// Starts computing the box's system binds (a walk of `/etc`, about a millisecond of system
/// calls once its listings are cached: [`etc`]) on a thread of its own, so that a run does not
/// wait for it on top of the disk: `persona run` starts it once ACTIVE.json is written (beside
/// that write's fsync, the walk slowed the fsync from 0.6 to 5 ms).
pub fn prefetch_system_args() {
    let _ = std::thread::Builder::new()
        .name("leopold-box-etc".into())
        .spawn(|| {
            std::sync::LazyLock::force(&SYSTEM_ARGS);
        });
}

/// The system part of the new root: `/usr` and the merged-usr symlinks (or directories), `/etc`
/// minus what only root may read, `/proc`, a minimal `/dev`, a private `/tmp`.
pub(crate) fn system_args() -> Vec<OsString> {
    SYSTEM_ARGS.clone()
}

fn walk_system() -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(OsString::from));
    push(&["--ro-bind", "/usr", "/usr"]);
    for d in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
        match std::fs::read_link(d) {
            Ok(target) => {
                a.push("--symlink".into());
                a.push(target.into_os_string());
                a.push(d.into());
            }
            Err(_) if Path::new(d).is_dir() => {
                a.extend(["--ro-bind", d, d].map(OsString::from));
            }
            Err(_) => {}
        }
    }
    a.extend(["--ro-bind", "/etc", "/etc"].map(OsString::from));
    let cache = crate::cache::cache_file_named("etc-listing.json");
    let walked = super::etc::walk_root(
        "/etc".as_ref(),
        cache.as_deref(),
        std::time::SystemTime::now(),
    );
    tracing::debug!(
        listed = walked.listed,
        from_cache = walked.cached,
        hidden = walked.hidden.len(),
        "walked /etc"
    );
    for hidden in walked.hidden {
        if hidden.is_dir() {
            a.push("--tmpfs".into());
        } else {
            a.extend(["--ro-bind", "/dev/null"].map(OsString::from));
        }
        a.push(hidden.into_os_string());
    }
    a.extend(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"].map(OsString::from));
    a
}
