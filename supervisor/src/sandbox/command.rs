//! The bwrap command line of the worker's box, from its [`BoxSpec`].

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;

use super::{limits, relay, system_args, BoxSpec, Endpoint, MODEL_PORT};

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
    // Not skipped when missing: a box without its run's state would hold an inert guard.
    for (from, at) in &spec.ro_late {
        cmd.arg("--ro-bind").arg(from).arg(at);
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
    // The new root itself (a tmpfs bwrap made, holding the folders the binds above needed) is
    // read-only too: nothing the worker writes outside its scratch and `/tmp` can stand in for a
    // missing file, not even inside the box.
    cmd.args(["--remount-ro", "/"]);
    // The folders emptied above too, once every mount under them is made: nothing written there
    // could stand in for the run's state.
    for p in spec.hide.iter().filter(|p| p.is_dir()) {
        cmd.arg("--remount-ro").arg(p);
    }
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
        Endpoint::Remote { .. } => (
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), MODEL_PORT),
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
