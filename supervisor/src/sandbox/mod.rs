//! The box: the worker's whole process tree runs in a sandbox built with Debian's `bubblewrap`
//! (`bwrap`), so that what the worker can do does not depend on a harness flag
//! (docs/harness-facts.md#1-what-fails-open,
//! docs/harness-facts.md#9-what-the-worker-can-do-besides-the-browser). docs/security.md#the-box.
//!
//! Why bubblewrap: it is what Flatpak and Anthropic's own sandbox runtime use, it is packaged by
//! every distribution (one `apt-get install`), it was seen working on this machine kind
//! (docs/harness-facts.md#9-what-the-worker-can-do-besides-the-browser), and
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
//!   (`PATH`, `TERM`, locale, the harness's endpoint and switches, `LEOPOLD_*` run variables).
//!   What a harness needs is told by its wing in `crate::harness` as [`Needs`]: the box names
//!   no harness.
//! - **Limits.** Processes and memory of the whole tree (the run's cgroup), the scratch's size,
//!   the bytes Leopold writes for the worker; hitting one stops the run `over_limit`. Why these
//!   mechanisms: [`limits`].
//! - **Network.** A network namespace with only loopback. The model endpoint is reached through
//!   the run's socket directory: inside, `leopold persona box-init` listens on the endpoint's
//!   own loopback address (or, for a remote https endpoint, on a loopback port the harness's
//!   base URL is pointed at, in plain HTTP) and forwards each connection to
//!   `<sock dir>/model.sock`; outside, the supervisor's model relay sends each request to the
//!   one endpoint and nowhere else ([`model_relay`]).
//! - **Credentials.** Not in the box: the harness's key variables and login files hold
//!   placeholders, and the model relay puts the real values back into each request's
//!   credential header, outside the worker's reach ([`model_relay`]).
//! - **The guard** runs inside (the harness starts it); it reads the flow and ACTIVE.json
//!   read-only and sends its event line to `<sock dir>/events.sock` (`LEOPOLD_EVENTS_SOCKET`);
//!   the supervisor appends it to `events.jsonl`.
//!
//! Other systems than Linux get no box: `persona run` refuses unless `--no-contain`.

pub mod browser_box;
mod command;
mod etc;
pub mod init;
mod installed;
pub mod limits;
mod model_relay;
mod probe;
mod relay;
mod scratch;
mod spec;

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

pub use command::command;
pub use installed::installed_files;
pub use model_relay::{cause as model_cause, probe_status, Advice, Credentials};
use probe::probe_for_run;
pub(crate) use probe::system_args;
pub use probe::{prefetch_system_args, probe, Availability};
pub use relay::{make_sock_dir, RunBox};
pub use scratch::{clean_scratch, remove_whole};
pub use spec::{relay_base, Login, Needs};

/// The variable naming the supervisor's event socket, read by the guard.
pub const EVENTS_SOCKET_ENV: &str = leopold_guard::EVENTS_SOCKET_ENV;
/// Inside the box, the port a remote endpoint's relay listens on (the network namespace is the
/// run's own: any port is free).
pub const MODEL_PORT: u16 = 3128;

/// Where the model endpoint is, and how the box reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// An endpoint on this machine's loopback (a local gateway, the test kit's scripted model):
    /// inside, the same address listens and forwards; outside, the supervisor connects to it.
    Loopback(SocketAddr),
    /// A remote https endpoint: inside, the harness's base URL points at
    /// `http://127.0.0.1:MODEL_PORT` (its path kept); outside, the relay speaks TLS to it.
    Remote { host: String, port: u16 },
}

impl Endpoint {
    /// The endpoint of a base URL, and the URL's path (`/v1`, kept when the harness in the
    /// box is pointed at the relay: [`relay_base`]).
    pub fn parse(raw: &str) -> anyhow::Result<(Endpoint, String)> {
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
        let endpoint = match (loopback, u.scheme()) {
            (Some(ip), _) => Endpoint::Loopback(SocketAddr::new(ip, port)),
            (None, "https") => Endpoint::Remote { host, port },
            (None, scheme) => anyhow::bail!(
                "the model endpoint {host}:{port} is {scheme}, not https: the box relays a remote endpoint only over https\n(hint: use an https endpoint, or pass --no-contain to run without the box)"
            ),
        };
        Ok((endpoint, u.path().trim_end_matches('/').to_owned()))
    }

    /// For messages: host and port, never a URL.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Loopback(a) => a.to_string(),
            Endpoint::Remote { host, port } => format!("{host}:{port}"),
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
    /// Emptied (a tmpfs, read-only once the mounts under it are made) after the read-only binds:
    /// `.leopold/persona/`, earlier runs' records and the other runs' states.
    pub hide: Vec<PathBuf>,
    /// Bound read-only after `hide`, each (from, at): the run's own state file at the box's
    /// ACTIVE.json and its own directory, inside the hidden one. Never skipped.
    pub ro_late: Vec<(PathBuf, PathBuf)>,
    /// Bound read-write (e.g. a per-run harness configuration folder).
    pub rw: Vec<PathBuf>,
    /// Short per-run directory holding the sockets (bound read-only: connecting to a socket
    /// needs no write access to the mount).
    pub sock_dir: PathBuf,
    /// The worker's whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The one network destination.
    pub endpoint: Endpoint,
    /// What the box's placeholders stand for, put back by the relay.
    pub credentials: Credentials,
    /// The scratch's size (a tmpfs of that size, seeded from the scratch folder on disk), or
    /// `None`: the folder itself, bound read-write.
    pub scratch_size: Option<u64>,
    /// Symbolic links made in the box: (target, at). The harness's `.bin` entry, so that it
    /// resolves into its package as it does outside.
    pub links: Vec<(PathBuf, PathBuf)>,
}

/// The per-run socket directory: short (a unix socket path holds at most 107 bytes), private.
pub fn sock_dir_for(run_id: &str) -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.as_os_str().len() < 48 && p.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join(format!("leopold-{run_id}"))
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
            "cannot build the box for the worker: {why}\n(hint: install bubblewrap, or pass --no-contain to run without the box (docs/security.md#the-box))"
        ),
    }
}

/// What the box cannot serve, refused before any side effect (exit 2) instead of failing
/// inside it: MCP servers reached over HTTP (the box's network reaches the model endpoint only,
/// and the gateway relays stdio servers only). The provisioned browser and stdio servers run
/// outside the box, behind the gateway (docs/security.md#the-gateway).
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
    pub project: &'a Path,
    pub harness_bin: &'a Path,
    /// What the harness needs in the box, told by its wing.
    pub needs: Needs,
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
    /// The run's model alarm: tripped by the relay when the endpoint refuses the harness (401,
    /// 403, 404) or cannot be reached ([`model_relay::Alarm`]).
    pub model_alarm: limits::Tripwire,
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
    let spec =
        spec::plan_spec(&l, &leopold, scratch, sock_dir.clone(), programs).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&sock_dir);
        })?;
    let alarm = model_relay::Alarm::new(l.model_alarm.clone(), l.needs.advice.clone());
    let run_box = RunBox::start(
        spec,
        l.events_file,
        l.limits.records,
        l.tripwire.clone(),
        alarm,
    )
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
                "the box refused {n} request(s) for hosts other than the model endpoint {}",
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
            Endpoint::parse("http://127.0.0.1:4000/v1").unwrap().0,
            Endpoint::Loopback("127.0.0.1:4000".parse().unwrap())
        );
        assert_eq!(
            Endpoint::parse("http://localhost:9").unwrap().0,
            Endpoint::Loopback("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(
            Endpoint::parse("https://api.anthropic.com").unwrap().0,
            Endpoint::Remote {
                host: "api.anthropic.com".into(),
                port: 443
            }
        );
        let e = format!(
            "{:#}",
            Endpoint::parse("http://gateway.corp:8080/").unwrap_err()
        );
        assert!(e.contains("--no-contain") && !e.contains("http://"), "{e}");
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
    fn sock_paths_stay_short() {
        let d = sock_dir_for("20261130T101055Z-4821");
        assert!(
            d.join("mcp-browser_long_name.sock").as_os_str().len() < 100,
            "{d:?}"
        );
    }
}
