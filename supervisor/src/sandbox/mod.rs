//! The box: the worker's whole process tree runs in a sandbox built with Debian's `bubblewrap`
//! (`bwrap`), so that what the worker can do does not depend on a harness flag (HARNESS-FACTS §1,
//! §9). README "The box".
//!
//! Why bubblewrap: it is what Flatpak and Anthropic's own sandbox runtime use, it is packaged by
//! every distribution (one `apt-get install`), it was seen working on this machine kind (§9), and
//! it gives in one exec everything the box needs: PID, network, mount, IPC and UTS namespaces, a
//! new root built from explicit binds, `--die-with-parent` and `--new-session`. Doing the same
//! with `rustix` namespaces by hand means re-writing bwrap's mount choreography (and its
//! audited corner cases) inside the supervisor; `hakoniwa` is LGPL with an exception and brings
//! seccomp/landlock/cgroup machinery the box does not need; `landlock` alone restricts files but
//! not the network to one endpoint, nor the process lifetime.
//!
//! What the box is, for one run:
//!
//! - **Privilege.** No capabilities (`--cap-drop ALL`, bounding set included), even when the
//!   supervisor runs as root: no remounting the read-only binds, no new namespaces to escape into.
//! - **Processes.** A PID namespace. bwrap's init is PID 1 in it; the kernel kills every process
//!   of a namespace when its PID 1 dies. `--die-with-parent` ties that init (and bwrap) to the
//!   supervisor with `PR_SET_PDEATHSIG`, so a detached `setsid nohup … &` dies when the run ends
//!   and when the supervisor is SIGKILLed. `--new-session`: no controlling terminal to push
//!   input into.
//! - **Files.** A fresh root: the system (`/usr` and its symlinks, `/etc` with every file that is
//!   not world-readable replaced by an empty one), a private `/tmp`, `/proc`, a minimal `/dev`;
//!   read-only: the project's `.leopold/` (earlier runs hidden), the flow file, the harness's
//!   installed package (never the folder holding its binary: [`installed_files`]), `leopold`
//!   itself, the harness configuration; read-write: the run's scratch only, which is also
//!   `HOME`: a tmpfs of `--max-scratch`, seeded from the scratch folder on disk. The rest of the project (sources, `.git`, and any unix
//!   socket in it), the user's home, `/root`, `/var`, `/run` are not there at all; the new
//!   root is read-only.
//! - **Environment.** Cleared; only what the harness needs comes in, each variable by its name
//!   (`PATH`, `TERM`, locale, the harness's credentials, endpoint and switches, `LEOPOLD_*` run
//!   variables: [`passes`]).
//! - **Limits.** Processes and memory of the whole tree (the run's cgroup), the scratch's size,
//!   the bytes Leopold writes for the worker; hitting one stops the run `over_limit`. Why these
//!   mechanisms: [`limits`].
//! - **Network.** A network namespace with only loopback. The model endpoint is reached through
//!   the run's socket directory: inside, `leopold persona box-init` listens on the endpoint's
//!   own loopback address (or on a CONNECT proxy port for a remote https endpoint) and forwards
//!   each connection to `<sock dir>/model.sock`; outside, the supervisor connects it to the one
//!   endpoint and nowhere else (a CONNECT to any other host:port is refused there, outside the
//!   worker's reach).
//! - **The guard** runs inside (the harness starts it); it reads the flow and ACTIVE.json
//!   read-only and sends its event line to `<sock dir>/events.sock` (`LEOPOLD_EVENTS_SOCKET`);
//!   the supervisor appends it to `events.jsonl`.
//!
//! Other systems than Linux get no box: `persona run` refuses unless `--no-contain`.

pub mod browser_box;
mod etc;
pub mod init;
pub mod limits;
mod relay;

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

use crate::harness::Harness;

pub use relay::{make_sock_dir, RunBox};

/// The variable naming the supervisor's event socket, read by the guard.
pub const EVENTS_SOCKET_ENV: &str = leopold_guard::EVENTS_SOCKET_ENV;
/// Inside the box, the CONNECT proxy's port (the network namespace is the run's own: any port
/// is free).
pub const PROXY_PORT: u16 = 3128;

/// Test-only knobs, like the other `__LEOPOLD_*` variables: extra variables passed into the box
/// (comma-separated names) and extra read-only and read-write paths (colon-separated), so the
/// test kit can hand the fake worker its script and a place for its record.
const TEST_PASS_ENV: &str = "__LEOPOLD_BOX_PASS_ENV";
const TEST_RO: &str = "__LEOPOLD_BOX_RO";
const TEST_RW: &str = "__LEOPOLD_BOX_RW";
const TEST_BWRAP: &str = "__LEOPOLD_BWRAP";

/// Where the model endpoint is, and how the box reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// An endpoint on this machine's loopback (a local gateway, the test kit's scripted model):
    /// inside, the same address listens and forwards; outside, the supervisor connects to it.
    Loopback(SocketAddr),
    /// A remote https endpoint: inside, `HTTPS_PROXY` points at a forwarder; outside, the
    /// supervisor admits exactly one `CONNECT host:port`.
    Connect { host: String, port: u16 },
}

impl Endpoint {
    /// For messages: host and port, never a URL.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Loopback(a) => a.to_string(),
            Endpoint::Connect { host, port } => format!("{host}:{port}"),
        }
    }
}

/// What the launch code fills in for one boxed run. Paths are the same inside and outside.
#[derive(Debug, Clone)]
pub struct BoxSpec {
    /// The run's scratch folder: the only place the worker writes; its `HOME`.
    pub scratch: PathBuf,
    /// The worker's working directory (the project).
    pub cwd: PathBuf,
    /// Bound read-only (the project's `.leopold/`, the harness installation, leopold, harness
    /// config, …). Missing paths are skipped.
    pub ro: Vec<PathBuf>,
    /// Emptied (a tmpfs) after the read-only binds: earlier runs' records under `.leopold/`.
    pub hide: Vec<PathBuf>,
    /// Bound read-only after `hide` (the run's own directory, inside a hidden one).
    pub ro_late: Vec<PathBuf>,
    /// Bound read-write (e.g. a per-run harness configuration folder).
    pub rw: Vec<PathBuf>,
    /// Files bound read-only at another place (a login file into the scratch): (source, inside).
    pub ro_at: Vec<(PathBuf, PathBuf)>,
    /// Short per-run directory holding the sockets (bound read-only: connecting to a socket
    /// needs no write access to the mount).
    pub sock_dir: PathBuf,
    /// The worker's whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The one network destination.
    pub endpoint: Endpoint,
    /// The scratch's size (a tmpfs of that size, seeded from the scratch folder on disk), or
    /// `None`: the folder itself, bound read-write.
    pub scratch_size: Option<u64>,
    /// Symbolic links made in the box: (target, at). The harness's `.bin` entry, so that it
    /// resolves into its package as it does outside.
    pub links: Vec<(PathBuf, PathBuf)>,
}

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
fn probe_for_run() -> Availability {
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
fn system_args() -> Vec<OsString> {
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
    let walked = etc::walk_root(
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

/// The bwrap command that runs `program args` in the box described by `spec`: bwrap, then
/// `leopold persona box-init` (the forwarder), then the program.
pub fn command(
    bwrap: &Path,
    leopold: &Path,
    spec: &BoxSpec,
    program: &Path,
    args: &[OsString],
) -> Command {
    let mut cmd = Command::new(bwrap);
    cmd.args(system_args());
    // Order matters: later binds mount over earlier ones (a scratch inside the read-only
    // project stays writable).
    let bind = |cmd: &mut Command, flag: &str, p: &Path| {
        cmd.arg(flag).arg(p).arg(p);
    };
    for p in &spec.ro {
        if p.exists() {
            bind(&mut cmd, "--ro-bind", p);
        }
    }
    for p in &spec.hide {
        if p.is_dir() {
            cmd.arg("--tmpfs").arg(p);
        }
    }
    for p in &spec.ro_late {
        if p.exists() {
            bind(&mut cmd, "--ro-bind", p);
        }
    }
    bind(&mut cmd, "--ro-bind", &spec.sock_dir);
    for p in &spec.rw {
        if p.exists() {
            bind(&mut cmd, "--bind", p);
        }
    }
    match spec.scratch_size {
        Some(size) => {
            cmd.arg("--size")
                .arg(size.to_string())
                .arg("--tmpfs")
                .arg(&spec.scratch);
            cmd.arg("--ro-bind").arg(&spec.scratch).arg(limits::SEED);
        }
        None => bind(&mut cmd, "--bind", &spec.scratch),
    }
    for (target, at) in &spec.links {
        cmd.arg("--symlink").arg(target).arg(at);
    }
    // Names resolve nowhere in the box; box-init answers every lookup "no such name" at once.
    let resolv = spec.sock_dir.join("resolv.conf");
    let host_resolv = std::fs::symlink_metadata("/etc/resolv.conf");
    if host_resolv.is_ok_and(|m| m.is_file())
        && std::fs::write(&resolv, "nameserver 127.0.0.1\n").is_ok()
    {
        cmd.arg("--ro-bind").arg(&resolv).arg("/etc/resolv.conf");
    }
    for (from, inside) in &spec.ro_at {
        cmd.arg("--ro-bind").arg(from).arg(inside);
    }
    // The new root itself (a tmpfs bwrap made, holding the folders the binds above needed) is
    // read-only too: nothing the worker writes outside its scratch and `/tmp` can stand in for a
    // missing file, not even inside the box.
    cmd.args(["--remount-ro", "/"]);
    // `--cap-drop ALL`: bwrap started by root keeps every capability otherwise, and a root worker
    // could `mount -o remount,rw,bind` the read-only project (seen). Dropping the bounding set
    // too means a root `execve` (setuid binaries included) gets none back.
    cmd.args([
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        // Only for box-init to bind the DNS port 53 and then drop every capability itself
        // (bounding set included) before it starts the worker.
        "--cap-add",
        "CAP_NET_BIND_SERVICE",
        "--cap-add",
        "CAP_SETPCAP",
    ])
    .arg("--chdir")
    .arg(&spec.cwd)
    .arg("--")
    .arg(leopold)
    .args(["persona", "box-init", "--forward"]);
    let (listen, sock) = match &spec.endpoint {
        Endpoint::Loopback(a) => (*a, spec.sock_dir.join(relay::MODEL_SOCK)),
        Endpoint::Connect { .. } => (
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), PROXY_PORT),
            spec.sock_dir.join(relay::MODEL_SOCK),
        ),
    };
    let mut fwd = OsString::from(format!("{listen}="));
    fwd.push(sock.as_os_str());
    cmd.arg(fwd).args(["--dns", "127.0.0.1:53"]);
    if spec.scratch_size.is_some() {
        let mut seed = OsString::from(format!("{}=", limits::SEED));
        seed.push(spec.scratch.as_os_str());
        cmd.arg("--seed").arg(seed);
    }
    cmd.arg("--").arg(program).args(args);
    cmd.env_clear().envs(spec.env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// The per-run socket directory: short (a unix socket path holds at most 107 bytes), private.
pub fn sock_dir_for(run_id: &str) -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.as_os_str().len() < 48 && p.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join(format!("leopold-{run_id}"))
}

/// The model endpoint the harness is configured for, and the variables that carry its
/// credentials. Claude: `ANTHROPIC_BASE_URL` (default https://api.anthropic.com). Codex: the
/// `model_provider`'s `base_url` in `$CODEX_HOME/config.toml` (its `env_key` is passed), else
/// `OPENAI_BASE_URL`, else https://api.openai.com.
pub fn model_endpoint(kind: Harness, codex_home: &Path) -> anyhow::Result<(Endpoint, Vec<String>)> {
    let mut keys = Vec::new();
    let url = match kind {
        Harness::Claude => std::env::var("ANTHROPIC_BASE_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "https://api.anthropic.com".into()),
        Harness::Codex => {
            let cfg = codex_home.join("config.toml");
            let text = match std::fs::read_to_string(&cfg) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", cfg.display())),
            };
            let doc: toml_edit::DocumentMut = text
                .parse()
                .with_context(|| format!("{} is not valid TOML", cfg.display()))?;
            let provider = doc.get("model_provider").and_then(|v| v.as_str());
            match provider {
                None | Some("openai") => std::env::var("OPENAI_BASE_URL")
                    .ok()
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "https://api.openai.com".into()),
                Some(p) => {
                    let table = doc.get("model_providers").and_then(|t| t.get(p));
                    if let Some(k) = table
                        .and_then(|t| t.get("env_key"))
                        .and_then(|v| v.as_str())
                    {
                        keys.push(k.to_owned());
                    }
                    table
                        .and_then(|t| t.get("base_url"))
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                        .with_context(|| {
                            format!(
                                "{}: cannot tell the model endpoint of model_provider `{p}` (no `[model_providers.{p}] base_url`)\n(hint: give the provider a base_url, or pass --no-contain to run without the box)",
                                cfg.display()
                            )
                        })?
                }
            }
        }
    };
    Ok((endpoint_of(&url)?, keys))
}

fn endpoint_of(raw: &str) -> anyhow::Result<Endpoint> {
    let u = url::Url::parse(raw).map_err(|e| {
        anyhow::anyhow!("the model endpoint is not a URL ({e})\n(hint: check ANTHROPIC_BASE_URL / the Codex provider's base_url)")
    })?;
    let port = u
        .port_or_known_default()
        .context("the model endpoint has no port")?;
    let host = match u.host() {
        Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => anyhow::bail!("the model endpoint has no host"),
    };
    let loopback = match host.parse::<IpAddr>() {
        Ok(ip) => Some(ip).filter(IpAddr::is_loopback),
        Err(_) if host == "localhost" => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        Err(_) => None,
    };
    match (loopback, u.scheme()) {
        (Some(ip), _) => Ok(Endpoint::Loopback(SocketAddr::new(ip, port))),
        (None, "https") => Ok(Endpoint::Connect { host, port }),
        (None, scheme) => anyhow::bail!(
            "the model endpoint {host}:{port} is {scheme}, not https: the box relays a remote endpoint only as an https CONNECT\n(hint: use an https endpoint, or pass --no-contain to run without the box)"
        ),
    }
}

/// Names passed into the box from the supervisor's environment, each by its name: the basics,
/// what the harness needs (its credentials, its endpoint, its model choice, the switches Leopold
/// and its docs set) and the extra credential variables (a Codex provider's `env_key`). Never a
/// prefix: `ANTHROPIC_*` let any variable of that name in, secrets included (issue #22).
fn passes(kind: Harness, name: &str, extra: &[String]) -> bool {
    const BASIC: &[&str] = &[
        "PATH",
        "TERM",
        "LANG",
        "LANGUAGE",
        "TZ",
        "USER",
        "LOGNAME",
        "COLORTERM",
        "NO_COLOR",
    ];
    const CLAUDE: &[&str] = &[
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "ANTHROPIC_SMALL_FAST_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
        "DISABLE_AUTOUPDATER",
        "DISABLE_TELEMETRY",
        "DISABLE_ERROR_REPORTING",
        "IS_SANDBOX",
    ];
    const CODEX: &[&str] = &[
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORGANIZATION",
        "OPENAI_PROJECT",
        "CODEX_API_KEY",
    ];
    if BASIC.contains(&name) || name.starts_with("LC_") || extra.iter().any(|e| e == name) {
        return true;
    }
    match kind {
        Harness::Claude => CLAUDE.contains(&name),
        Harness::Codex => CODEX.contains(&name),
    }
}

/// Inputs to [`plan_spec`] from the run.
pub struct RunInputs<'a> {
    pub kind: Harness,
    pub project: &'a Path,
    pub harness_bin: &'a Path,
    pub leopold: &'a Path,
    /// The run's own `CODEX_HOME` (inside `scratch`).
    pub codex_home: &'a Path,
    /// The user's Codex login file (`auth.json`), bound read-only into `codex_home`.
    pub codex_login: Option<PathBuf>,
    pub run_id: &'a str,
    pub scratch: PathBuf,
    pub sock_dir: PathBuf,
    /// Extra paths the launch code needs read-only / read-write (e.g. MCP server programs).
    pub ro: Vec<PathBuf>,
    pub rw: Vec<PathBuf>,
    /// `--max-scratch`.
    pub scratch_size: Option<u64>,
}

/// Fills a [`BoxSpec`] for a run: what is bound, the environment, the endpoint.
pub fn plan_spec(r: RunInputs<'_>) -> anyhow::Result<BoxSpec> {
    let (endpoint, cred_keys) = model_endpoint(r.kind, r.codex_home)?;
    // The project is not in the box, only its `.leopold/` (what the guard reads: ACTIVE.json, the
    // run's ref map; the flow file comes in through `r.ro`). A read-only bind is not enough: a
    // unix socket anywhere in it (a dev server's, a database's, an IDE's) stays connectable,
    // since connect(2) needs no write access to the mount (seen: the persona reached a listener
    // outside the box through one), and the persona needs none of the project's files.
    // Earlier runs' records (transcripts, scratch folders) are hidden; the run's own directory
    // is bound back, read-only, its scratch read-write.
    let dot_leopold = r.project.join(".leopold");
    let runs = dot_leopold.join("persona").join("runs");
    let hide: Vec<PathBuf> = r
        .scratch
        .parent()
        .filter(|d| d.parent() == Some(runs.as_path()))
        .map(|_| runs.clone())
        .into_iter()
        .collect();
    let ro_late: Vec<PathBuf> = r
        .scratch
        .parent()
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    let mut ro = vec![dot_leopold, r.leopold.to_path_buf()];
    if let Ok(c) = std::fs::canonicalize(r.leopold) {
        ro.push(c);
    }
    let mut installed = installed_files(r.harness_bin)?;
    if let Some(node) = crate::os::find_executable(Path::new("node")) {
        // `#!/usr/bin/env node` harnesses: a node outside /usr (nvm, a tarball) comes in too, the
        // executable alone (its prefix may be the home folder).
        if std::fs::canonicalize(&node).is_ok_and(|c| !c.starts_with("/usr")) {
            if let Ok(n) = installed_files(&node) {
                installed.ro.extend(n.ro);
                installed.links.extend(n.links);
            }
        }
    }
    ro.extend(installed.ro);
    // Codex writes its home (sessions, logs, its app-server state) and fails on a read-only one:
    // `codex_home` is the run's own (`<scratch>/.codex`, inside the writable scratch: see
    // `harness::run_home`), and the user's login file is bound read-only over an empty
    // placeholder in it (never copied: credentials are not left in the project). The user's
    // folder is not there.
    let mut ro_at: Vec<(PathBuf, PathBuf)> = Vec::new();
    if r.kind == Harness::Codex {
        if let Some(login) = r.codex_login.filter(|p| p.is_file()) {
            std::fs::create_dir_all(r.codex_home)
                .with_context(|| format!("cannot create {}", r.codex_home.display()))?;
            let placeholder = r.codex_home.join("auth.json");
            std::fs::write(&placeholder, b"")
                .with_context(|| format!("cannot create {}", placeholder.display()))?;
            ro_at.push((login, placeholder));
        }
    }
    let codex_home = r.codex_home.to_path_buf();
    ro.extend(r.ro);
    let mut rw = r.rw;
    let split = |var: &str| -> Vec<PathBuf> {
        crate::knobs::var_os(var)
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| p.is_absolute())
                    .collect()
            })
            .unwrap_or_default()
    };
    ro.extend(split(TEST_RO));
    rw.extend(split(TEST_RW));

    let mut extra_names = cred_keys;
    if let Some(v) = crate::knobs::var(TEST_PASS_ENV) {
        extra_names.extend(
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
    }
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| passes(r.kind, k, &extra_names)))
        .filter(|(k, _)| k != "CODEX_HOME")
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env.push(("HOME".into(), r.scratch.clone().into_os_string()));
    for (k, v) in crate::worker::only_the_browser_env(r.kind) {
        env.retain(|(n, _)| n != k);
        env.push(((*k).into(), (*v).into()));
    }
    env.push(("TMPDIR".into(), "/tmp".into()));
    env.push((crate::os::RUN_ID_ENV.into(), r.run_id.into()));
    env.push((
        EVENTS_SOCKET_ENV.into(),
        r.sock_dir.join(relay::EVENTS_SOCK).into_os_string(),
    ));
    if r.kind == Harness::Codex {
        env.push(("CODEX_HOME".into(), codex_home.into_os_string()));
    }
    if let Endpoint::Connect { .. } = endpoint {
        let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
        for k in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            env.push((k.into(), proxy.clone().into()));
        }
    }
    if r.kind == Harness::Claude
        && std::env::var_os("ANTHROPIC_API_KEY").is_none()
        && std::env::var_os("ANTHROPIC_AUTH_TOKEN").is_none()
    {
        // No key variable: Claude's login file, read-only, where it looks for it in HOME.
        if let Some(home) = std::env::var_os("HOME") {
            let cred = Path::new(&home).join(".claude/.credentials.json");
            if cred.is_file() {
                let inside = r.scratch.join(".claude/.credentials.json");
                if let Some(dir) = inside.parent() {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create {}", dir.display()))?;
                }
                std::fs::write(&inside, b"")
                    .with_context(|| format!("cannot create {}", inside.display()))?;
                ro_at.push((cred, inside));
            }
        }
    }
    // A link under a bound folder (a harness in /usr) is there already.
    let links = installed
        .links
        .into_iter()
        .filter(|(_, at)| !at.starts_with("/usr") && !ro.iter().any(|d| at.starts_with(d)))
        .collect();
    Ok(BoxSpec {
        scratch: r.scratch,
        cwd: r.project.to_path_buf(),
        ro,
        hide,
        ro_late,
        rw,
        ro_at,
        sock_dir: r.sock_dir,
        env,
        endpoint,
        scratch_size: r.scratch_size,
        links,
    })
}

/// What of the harness's installation the box holds: its npm package (the one whose files hold
/// the binary the `.bin` entry resolves to) and the packages it names (the platform package
/// holding the native binary), or a native executable alone; the `.bin` symlinks leading there
/// are made again in the box. Never the folder that happens to hold the binary: kept in the
/// home folder or the project, that brought `~/.ssh`, `~/.aws` and the project's `.env` in
/// (issue #22). A script outside an npm package is refused: which files it needs cannot be told
/// apart from what lies beside it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Installed {
    pub ro: Vec<PathBuf>,
    /// (target, at)
    pub links: Vec<(PathBuf, PathBuf)>,
}

pub fn installed_files(bin: &Path) -> anyhow::Result<Installed> {
    let found = crate::os::find_executable(bin).unwrap_or_else(|| bin.to_path_buf());
    let mut out = Installed::default();
    let mut p = std::path::absolute(&found).unwrap_or(found);
    for _ in 0..16 {
        let Ok(target) = std::fs::read_link(&p) else {
            break;
        };
        let next = match p.parent() {
            Some(dir) if target.is_relative() => dir.join(&target),
            _ => target.clone(),
        };
        out.links.push((target, p));
        p = next;
    }
    let real = std::fs::canonicalize(&p)
        .with_context(|| format!("cannot resolve the harness binary {}", bin.display()))?;
    if let Some(pkg) = npm_package(&real) {
        out.ro.extend(named_packages(&pkg));
        out.ro.insert(0, pkg);
    } else if is_native(&real) {
        out.ro.push(real);
    } else {
        anyhow::bail!(
            "cannot tell which files the harness {} needs: it is a script outside an npm package, and the box never takes in the folder that holds it\n(hint: install the harness with npm (its `node_modules/.bin` entry is bound with its package only), or pass --no-contain to run without the box)",
            bin.display()
        );
    }
    Ok(out)
}

/// The npm package holding `file`: its nearest folder with a `package.json`, if that folder is
/// a package under `node_modules` (`node_modules/<name>` or `node_modules/@scope/<name>`).
fn npm_package(file: &Path) -> Option<PathBuf> {
    let dir = file
        .ancestors()
        .skip(1)
        .find(|a| a.join("package.json").is_file())?;
    let parent = dir.parent()?;
    let is_nm = |p: &Path| p.file_name().is_some_and(|n| n == "node_modules");
    let scoped = parent
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('@'))
        && parent.parent().is_some_and(is_nm);
    (is_nm(parent) || scoped).then(|| dir.to_path_buf())
}

/// The installed packages `pkg`'s `package.json` names (dependencies and optional ones: the
/// platform packages), found as Node finds them: in its own `node_modules`, then in each
/// enclosing `node_modules`.
fn named_packages(pkg: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(pkg.join("package.json")) else {
        return Vec::new();
    };
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut out = Vec::new();
    for key in ["dependencies", "optionalDependencies"] {
        for name in doc[key].as_object().into_iter().flat_map(|m| m.keys()) {
            // A package name, never a path out of node_modules.
            if name.split('/').any(|part| part.is_empty() || part == "..") {
                continue;
            }
            let found = std::iter::once(pkg.join("node_modules"))
                .chain(
                    pkg.ancestors()
                        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
                        .map(Path::to_path_buf),
                )
                .map(|nm| nm.join(name))
                .find(|d| d.join("package.json").is_file())
                .and_then(|d| std::fs::canonicalize(d).ok());
            out.extend(found.filter(|d| !out.contains(d)));
        }
    }
    out
}

/// An ELF executable: one file, needing only the system's libraries.
fn is_native(file: &Path) -> bool {
    use std::io::Read as _;
    let mut magic = [0u8; 4];
    std::fs::File::open(file)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

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

/// How deep the scratch's folders are kept (and walked) after the run.
const MAX_KEPT_DEPTH: u32 = 64;

/// Removes folder `name` of `parent` with all it holds, at any depth, holding two folders open at
/// a time: each folder's sub-folders are first moved up into `parent` (under a fresh name), so
/// that every folder is emptied at the same depth.
fn remove_tree(parent: &std::os::fd::OwnedFd, name: std::ffi::CString) {
    use rustix::fs::{AtFlags, FileType, Mode, RenameFlags};
    let mut queue = vec![name];
    let mut fresh = 0u64;
    while let Some(name) = queue.pop() {
        let Ok(dir) = rustix::fs::openat(parent, name.as_c_str(), dir_flags(), Mode::empty())
        else {
            let _ = rustix::fs::unlinkat(parent, name.as_c_str(), AtFlags::empty());
            continue;
        };
        let Ok(entries) = rustix::fs::Dir::read_from(&dir) else {
            continue;
        };
        let names: Vec<std::ffi::CString> = entries
            .flatten()
            .map(|e| e.file_name().to_owned())
            .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
            .collect();
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

fn clean_dir(dir: &std::os::fd::OwnedFd, depth: u32) {
    use rustix::fs::{AtFlags, FileType, Mode};
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
        return;
    };
    // Names first: the folder is changed while it is read otherwise.
    let names: Vec<std::ffi::CString> = entries
        .flatten()
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .collect();
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

/// `persona run`'s decision, before any side effect: the bwrap to box the worker with, or `None`
/// with `--no-contain` (which the run says on every run: `plan::loosened`). A machine that
/// cannot build the box is an error naming what is missing (exit 2).
pub fn for_run(no_contain: bool) -> anyhow::Result<Option<PathBuf>> {
    if no_contain {
        return Ok(None);
    }
    match probe_for_run() {
        Availability::Ready { bwrap, .. } => Ok(Some(bwrap)),
        Availability::Missing(why) => anyhow::bail!(
            "cannot build the box for the worker: {why}\n(hint: install bubblewrap, or pass --no-contain to run without the box (README \"The box\"))"
        ),
    }
}

/// What the box cannot serve, refused before any side effect (exit 2) instead of failing
/// inside it: MCP servers reached over HTTP (the box's network reaches the model endpoint only,
/// and the gateway relays stdio servers only). The provisioned browser and stdio servers run
/// outside the box, behind the gateway (README "The gateway").
pub fn check_plan(servers: &[crate::mcp::McpServer]) -> anyhow::Result<()> {
    if let Some(s) = servers
        .iter()
        .find(|s| matches!(s.transport, crate::mcp::McpTransport::Http { .. }))
    {
        anyhow::bail!(
            "MCP server `{}` is reached over HTTP, and the box's network reaches only the model endpoint\n(hint: give it as a stdio server (`command`), which the gateway relays, or pass --no-contain to run without the box)",
            s.name
        );
    }
    Ok(())
}

/// Everything the launch code hands over to box one worker.
pub struct Launch<'a> {
    pub bwrap: &'a Path,
    pub kind: Harness,
    pub project: &'a Path,
    pub harness_bin: &'a Path,
    /// The run's own `CODEX_HOME` (`harness::run_home`).
    pub codex_home: &'a Path,
    /// The user's Codex login file, when there is one.
    pub codex_login: Option<PathBuf>,
    pub run_id: &'a str,
    pub run_dir: &'a crate::run_dir::RunDir,
    pub events_file: PathBuf,
    /// Programs the worker starts itself (stdio MCP servers): their installation, read-only.
    pub programs: Vec<PathBuf>,
    /// Files and folders the worker or the guard reads (the flow file), read-only.
    pub ro: Vec<PathBuf>,
    /// Folders the worker must write besides its scratch (a per-run harness configuration).
    pub rw: Vec<PathBuf>,
    /// `--max-procs` and the other limits ([`limits`]).
    pub limits: limits::Limits,
    /// Tripped when the worker hits one of them.
    pub tripwire: limits::Tripwire,
}

/// A started box: its relay is running; [`Boxed::wrap`] turns the worker command into the boxed
/// one. Dropping it removes the socket directory and the run's cgroup, killing what is left in
/// it.
pub struct Boxed {
    pub run_box: RunBox,
    bwrap: PathBuf,
    leopold: PathBuf,
    cgroup: Option<std::sync::Arc<limits::Cgroup>>,
    watch: Option<tokio::task::JoinHandle<()>>,
}

/// How often the cgroup's counters and the scratch's fill are read.
const LIMITS_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Creates the scratch folder (`<run dir>/scratch`: Leopold's own files for the run, copied into
/// the box's scratch) and the socket directory, the run's cgroup, fills the spec and starts the
/// relay. Inside a tokio runtime.
pub fn start(l: Launch<'_>) -> anyhow::Result<Boxed> {
    let leopold = std::env::current_exe().context("cannot find the leopold executable's path")?;
    let scratch = l.run_dir.scratch();
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let mut programs = Vec::new();
    for p in &l.programs {
        programs.extend(installed_files(p)?.ro);
    }
    let cgroup =
        limits::Cgroup::create(l.run_id, l.limits.procs, l.limits.memory)?.map(std::sync::Arc::new);
    let sock_dir = sock_dir_for(l.run_id);
    relay::make_sock_dir(&sock_dir)?;
    let spec = plan_spec(RunInputs {
        kind: l.kind,
        project: l.project,
        harness_bin: l.harness_bin,
        leopold: &leopold,
        codex_home: l.codex_home,
        codex_login: l.codex_login,
        run_id: l.run_id,
        scratch,
        sock_dir: sock_dir.clone(),
        ro: programs.into_iter().chain(l.ro).collect(),
        rw: l.rw,
        scratch_size: l.limits.scratch,
    })
    .inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&sock_dir);
    })?;
    let run_box = RunBox::start(spec, l.events_file, l.limits.records, l.tripwire.clone())
        .inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&sock_dir);
        })?;
    if let Some(cg) = &cgroup {
        let (cg, lim) = (std::sync::Arc::downgrade(cg), l.limits);
        l.tripwire
            .set_check(Box::new(move || cg.upgrade()?.hit(lim.procs, lim.memory)));
    }
    let watch = cgroup.as_ref().map(|cg| {
        tokio::spawn(watch_limits(
            std::sync::Arc::downgrade(cg),
            l.limits,
            run_box.spec.scratch.clone(),
            l.tripwire,
        ))
    });
    Ok(Boxed {
        run_box,
        bwrap: l.bwrap.to_path_buf(),
        leopold,
        cgroup,
        watch,
    })
}

/// Trips the run's wire when the tree hits a limit: the cgroup's counters, and the scratch
/// tmpfs's fill seen through a process of the tree. (The limits hold whether or not this sees
/// them hit; this names the outcome.)
async fn watch_limits(
    cgroup: std::sync::Weak<limits::Cgroup>,
    l: limits::Limits,
    scratch: PathBuf,
    tripwire: limits::Tripwire,
) {
    loop {
        tokio::time::sleep(LIMITS_POLL).await;
        let Some(cg) = cgroup.upgrade() else {
            return;
        };
        let hit = cg.hit(l.procs, l.memory).or_else(|| {
            let size = l.scratch?;
            let pid = cg.a_boxed_pid()?;
            limits::scratch_full(pid, &scratch).then(|| {
                format!(
                    "the worker's scratch reached --max-scratch {}",
                    limits::show_size(size)
                )
            })
        });
        if let Some(why) = hit {
            tripwire.trip(why);
            return;
        }
    }
}

impl Drop for Boxed {
    fn drop(&mut self) {
        if let Some(w) = &self.watch {
            w.abort();
        }
    }
}

impl Boxed {
    /// The boxed form of `worker` (program and arguments kept; its environment replaced by the
    /// box's), with the worker's stdio, its own process group and the parent-death signal.
    pub fn wrap(&self, worker: &Command) -> Command {
        let args: Vec<OsString> = worker.get_args().map(|a| a.to_owned()).collect();
        let mut cmd = command(
            &self.bwrap,
            &self.leopold,
            &self.run_box.spec,
            Path::new(worker.get_program()),
            &args,
        );
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        crate::os::configure_worker(&mut cmd);
        if let Some(cg) = &self.cgroup {
            cg.join_before_exec(&mut cmd);
        }
        cmd
    }

    /// Lets the worker reach its model (and the guard's events land): once the guard's proof has
    /// answered ([`RunBox`]).
    pub fn open(&self) {
        self.run_box.open();
    }

    /// What the relay refused during the run, for the summary.
    pub fn refusals(&self) -> Option<String> {
        use std::sync::atomic::Ordering;
        let n = self.run_box.refused.load(Ordering::Relaxed);
        let d = self.run_box.dropped_events.load(Ordering::Relaxed);
        let mut parts = Vec::new();
        if n > 0 {
            parts.push(format!(
                "the box refused {n} connection(s) to hosts other than the model endpoint {}",
                self.run_box.spec.endpoint.describe()
            ));
        }
        if d > 0 {
            parts.push(format!(
                "the box dropped {d} message(s) on the guard's event socket that were not guard events"
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_classified_by_host() {
        assert_eq!(
            endpoint_of("http://127.0.0.1:4000/v1").unwrap(),
            Endpoint::Loopback("127.0.0.1:4000".parse().unwrap())
        );
        assert_eq!(
            endpoint_of("http://localhost:9").unwrap(),
            Endpoint::Loopback("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(
            endpoint_of("https://api.anthropic.com").unwrap(),
            Endpoint::Connect {
                host: "api.anthropic.com".into(),
                port: 443
            }
        );
        let e = format!(
            "{:#}",
            endpoint_of("http://gateway.corp:8080/").unwrap_err()
        );
        assert!(e.contains("--no-contain") && !e.contains("http://"), "{e}");
    }

    #[test]
    fn codex_endpoint_comes_from_the_provider_and_passes_its_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "model_provider = \"mock\"\n[model_providers.mock]\nbase_url = \"http://127.0.0.1:5555/v1\"\nenv_key = \"MOCK_API_KEY\"\n",
        )
        .unwrap();
        let (e, keys) = model_endpoint(Harness::Codex, dir.path()).unwrap();
        assert_eq!(e, Endpoint::Loopback("127.0.0.1:5555".parse().unwrap()));
        assert_eq!(keys, ["MOCK_API_KEY"]);
    }

    #[test]
    fn only_the_harness_variables_pass() {
        assert!(passes(Harness::Claude, "ANTHROPIC_API_KEY", &[]));
        assert!(!passes(Harness::Claude, "OPENAI_API_KEY", &[]));
        assert!(passes(Harness::Codex, "OPENAI_API_KEY", &[]));
        for secret in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "SSH_AUTH_SOCK",
            "HTTPS_PROXY",
            "LD_PRELOAD",
        ] {
            assert!(!passes(Harness::Claude, secret, &[]), "{secret}");
            assert!(!passes(Harness::Codex, secret, &[]), "{secret}");
        }
        assert!(passes(
            Harness::Codex,
            "MOCK_API_KEY",
            &["MOCK_API_KEY".into()]
        ));
        // By name, not by prefix: the harness's namespace holds secrets too.
        for other in [
            "ANTHROPIC_SECRET_OTHER",
            "CLAUDE_CODE_OAUTH_TOKEN_OF_SOMEONE",
            "DISABLE_ANYTHING",
        ] {
            assert!(!passes(Harness::Claude, other, &[]), "{other}");
        }
        assert!(passes(
            Harness::Claude,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            &[]
        ));
        assert!(!passes(Harness::Codex, "OPENAI_SECRET_OTHER", &[]));
        assert!(!passes(Harness::Codex, "CODEX_HOME", &[]));
    }

    #[test]
    fn what_the_box_cannot_serve_is_refused_up_front() {
        use crate::mcp::{McpServer, McpTransport};
        let stdio = McpServer {
            name: "browser".into(),
            transport: McpTransport::Stdio {
                command: "x".into(),
                args: vec![],
                env: vec![],
            },
        };
        let http = McpServer {
            name: "remote".into(),
            transport: McpTransport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
            },
        };
        assert!(check_plan(std::slice::from_ref(&stdio)).is_ok());
        let e = format!("{:#}", check_plan(&[stdio, http]).unwrap_err());
        assert!(e.contains("`remote`") && e.contains("--no-contain"), "{e}");
        // The provisioned browser runs outside the box, behind the gateway: nothing to refuse.
        assert!(check_plan(&[]).is_ok());
    }

    #[test]
    fn the_project_is_not_bound_only_its_dot_leopold_with_earlier_runs_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        let run_dir = project.join(".leopold/persona/runs/r1");
        std::fs::create_dir_all(run_dir.join("scratch")).unwrap();
        let spec = plan_spec(RunInputs {
            kind: Harness::Claude,
            project: &project,
            harness_bin: Path::new("/usr/bin/true"),
            leopold: Path::new("/usr/bin/true"),
            codex_home: dir.path(),
            run_id: "r1",
            scratch: run_dir.join("scratch"),
            sock_dir: dir.path().join("s"),
            ro: vec![],
            rw: vec![],
            codex_login: None,
            scratch_size: Some(64 << 20),
        })
        .unwrap();
        assert!(!spec.ro.iter().any(|p| p == &project), "{:?}", spec.ro);
        assert!(spec.ro.contains(&project.join(".leopold")));
        assert_eq!(spec.hide, [project.join(".leopold/persona/runs")]);
        assert_eq!(spec.ro_late, std::slice::from_ref(&run_dir));
        let cmd = command(
            Path::new("/usr/bin/bwrap"),
            Path::new("/usr/bin/true"),
            &spec,
            Path::new("/bin/true"),
            &[],
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |needle: &[&str]| {
            args.windows(needle.len())
                .position(|w| w == needle)
                .unwrap_or_else(|| panic!("{needle:?} not in {args:?}"))
        };
        let runs = project.join(".leopold/persona/runs").display().to_string();
        let rd = run_dir.display().to_string();
        // The tmpfs over earlier runs comes before the run's own directory is bound back.
        assert!(at(&["--tmpfs", &runs]) < at(&["--ro-bind", &rd, &rd]));
        assert!(at(&["--remount-ro", "/"]) < at(&["--"]));
        // The scratch is a tmpfs of its size, seeded from the folder bound read-only elsewhere.
        let scratch = run_dir.join("scratch").display().to_string();
        assert!(at(&["--size", "67108864", "--tmpfs", &scratch]) > at(&["--ro-bind", &rd, &rd]));
        assert!(at(&["--ro-bind", &scratch, limits::SEED]) > 0);
        assert!(
            !args.windows(3).any(|w| w[0] == "--bind" && w[1] == scratch),
            "the scratch folder itself is not writable in the box: {args:?}"
        );
    }

    /// An npm install as `npm install --prefix` leaves it: a `.bin` link into the package, a
    /// platform package beside it, and secrets beside the prefix.
    #[test]
    fn only_the_harness_package_and_its_platform_package_are_bound() {
        let dir = tempfile::tempdir().unwrap();
        let nm = dir.path().join("node_modules");
        let pkg = nm.join("@openai/codex");
        let platform = nm.join("@openai/codex-linux-x64");
        std::fs::create_dir_all(pkg.join("bin")).unwrap();
        std::fs::create_dir_all(&platform).unwrap();
        std::fs::create_dir_all(nm.join(".bin")).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name":"@openai/codex","optionalDependencies":{"@openai/codex-linux-x64":"1","@openai/codex-darwin-arm64":"1","../../evil":"1"}}"#,
        )
        .unwrap();
        std::fs::write(platform.join("package.json"), "{}").unwrap();
        std::fs::write(pkg.join("bin/codex.js"), "#!/usr/bin/env node\n").unwrap();
        std::os::unix::fs::symlink("../@openai/codex/bin/codex.js", nm.join(".bin/codex")).unwrap();
        std::fs::write(dir.path().join(".env"), "SECRET=1").unwrap();

        let got = installed_files(&nm.join(".bin/codex")).unwrap();
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert_eq!(got.ro, [canon(&pkg), canon(&platform)]);
        assert_eq!(
            got.links,
            [(
                PathBuf::from("../@openai/codex/bin/codex.js"),
                nm.join(".bin/codex")
            )]
        );

        // A native binary alone is bound as the one file; a bare script is refused.
        std::fs::copy("/usr/bin/true", dir.path().join("claude")).unwrap();
        let got = installed_files(&dir.path().join("claude")).unwrap();
        assert_eq!(got.ro, [canon(&dir.path().join("claude"))]);
        std::fs::write(dir.path().join("script"), "#!/bin/sh\n").unwrap();
        let e = format!(
            "{:#}",
            installed_files(&dir.path().join("script")).unwrap_err()
        );
        assert!(
            e.contains("outside an npm package") && e.contains("--no-contain"),
            "{e}"
        );
    }

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
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("scratch");
        let secret = dir.path().join("id_ed25519");
        std::fs::write(&secret, "key").unwrap();
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

    #[test]
    fn sock_paths_stay_short() {
        let d = sock_dir_for("20261130T101055Z-4821");
        assert!(
            d.join("mcp-browser_long_name.sock").as_os_str().len() < 100,
            "{d:?}"
        );
    }
}
