//! The browser's box: Playwright MCP and Chromium in namespaces of their own, whose only way out
//! is the run's request-judging proxy (docs/security.md#the-browsers-network-path).
//!
//! The worker's box keeps the worker from the network; this one keeps the *browser* from it. A
//! Chromium flag did not stop a page's WebRTC from sending UDP to a local port (seen, with
//! `--force-webrtc-ip-handling-policy`), and a proxy setting binds only what Chromium chooses to
//! send through it. Here the network namespace has loopback alone: inside it `leopold persona
//! box-init` listens on the proxy port Chromium is given and forwards each connection to the
//! run's `web.sock`, outside, where every request is judged. UDP, QUIC and direct connections
//! have nowhere to go.
//!
//! What it sees: the system (as the worker's box does: `/usr`, `/etc` minus what only root may
//! read), the Playwright MCP installation and, when they live outside `/usr`, Node's and
//! Chromium's, read-only; the run's `browser/` folder (profile, output, home) read-write; the
//! run's socket folder, to reach the proxy. Not the project, not the user's home.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What the browser's box is built from.
#[derive(Debug, Clone)]
pub struct BrowserBox<'a> {
    pub bwrap: &'a Path,
    pub leopold: &'a Path,
    /// The run's `browser/` folder: the only place it writes.
    pub browser_dir: &'a Path,
    /// Its working directory (the output folder, inside `browser_dir`).
    pub cwd: &'a Path,
    /// The run's socket folder, holding `web.sock`.
    pub sock_dir: &'a Path,
    /// Programs to make visible (Playwright MCP, Node, Chromium): each is bound by the folder
    /// that holds its installation ([`install_root`]).
    pub programs: &'a [PathBuf],
}

/// The folder that holds a program's installation: the `node_modules` folder above an npm
/// package's file, else the program's own folder's parent (`<prefix>/bin/node` gives
/// `<prefix>`). `None` for a program under `/usr`, which the box has anyway.
pub fn install_root(program: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    if real.starts_with("/usr") {
        return None;
    }
    if let Some(nm) = real
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
    {
        return Some(nm.to_path_buf());
    }
    let dir = real.parent()?;
    Some(match dir.file_name() {
        Some(n) if n == "bin" => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    })
}

/// The command that runs `program args` in the browser's box: bwrap, then box-init forwarding
/// the proxy port to `web.sock`, then the program. As strings: the gateway starts it as any
/// MCP server.
pub fn command(b: &BrowserBox<'_>, program: &str, args: &[String]) -> (String, Vec<String>) {
    let mut a: Vec<OsString> = super::system_args();
    let mut roots: Vec<PathBuf> = Vec::new();
    for p in b.programs {
        if let Some(r) = install_root(p) {
            if !roots.iter().any(|x| r.starts_with(x)) {
                roots.retain(|x| !x.starts_with(&r));
                roots.push(r);
            }
        }
    }
    let mut bind = |flag: &str, p: &Path| {
        a.push(flag.into());
        a.push(p.into());
        a.push(p.into());
    };
    for r in &roots {
        bind("--ro-bind", r);
    }
    // box-init, the first program inside.
    bind("--ro-bind", b.leopold);
    bind("--ro-bind", b.sock_dir);
    bind("--bind", b.browser_dir);
    a.extend(
        [
            "--remount-ro",
            "/",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--chdir",
        ]
        .map(OsString::from),
    );
    a.push(b.cwd.into());
    a.push("--".into());
    a.push(b.leopold.into());
    a.extend(["persona", "box-init", "--forward"].map(OsString::from));
    let mut fwd = OsString::from(format!("127.0.0.1:{}=", crate::web::BOX_PORT));
    fwd.push(b.sock_dir.join(crate::web::SOCK));
    a.push(fwd);
    a.push("--".into());
    a.push(program.into());
    a.extend(args.iter().map(OsString::from));
    (
        b.bwrap.display().to_string(),
        a.into_iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installations_are_bound_by_their_package_folder_never_a_home() {
        assert_eq!(install_root(Path::new("/usr/bin/chromium")), None);
        let dir = leopold_tests::temp_tree(&[("cache/pw/node_modules/@playwright/mcp/cli.js", "")]);
        let bin = dir.path().join("cache/pw/node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink("../@playwright/mcp/cli.js", bin.join("playwright-mcp"))
            .unwrap();
        let root = install_root(&bin.join("playwright-mcp")).unwrap();
        assert_eq!(
            root,
            std::fs::canonicalize(dir.path().join("cache/pw/node_modules")).unwrap()
        );
        let node = dir.path().join("nvm/v20/bin/node");
        std::fs::create_dir_all(node.parent().unwrap()).unwrap();
        std::fs::write(&node, "").unwrap();
        assert_eq!(
            install_root(&node).unwrap(),
            std::fs::canonicalize(dir.path().join("nvm/v20")).unwrap()
        );
    }

    #[test]
    fn the_box_forwards_only_the_proxy_port_and_writes_only_the_browser_folder() {
        let (cmd, args) = command(
            &BrowserBox {
                bwrap: Path::new("/usr/bin/bwrap"),
                leopold: Path::new("/opt/leopold"),
                browser_dir: Path::new("/p/.leopold/runs/r1/browser"),
                cwd: Path::new("/p/.leopold/runs/r1/browser/output"),
                sock_dir: Path::new("/tmp/leopold-r1"),
                programs: &[PathBuf::from("/usr/bin/node")],
            },
            "/usr/bin/env",
            &["-i".into(), "PATH=/usr/bin".into()],
        );
        assert_eq!(cmd, "/usr/bin/bwrap");
        let s = args.join(" ");
        assert!(s.contains("--unshare-all"), "{s}");
        assert!(s.contains("--bind /p/.leopold/runs/r1/browser /p/.leopold/runs/r1/browser"));
        assert!(s.contains("--ro-bind /tmp/leopold-r1 /tmp/leopold-r1"));
        assert!(s.ends_with(
            "/opt/leopold persona box-init --forward 127.0.0.1:3128=/tmp/leopold-r1/web.sock -- /usr/bin/env -i PATH=/usr/bin"
        ), "{s}");
        // Read-write: the browser's folder alone (the system binds are read-only).
        let rw: Vec<&String> = args
            .iter()
            .zip(args.iter().skip(1))
            .filter(|(f, _)| *f == "--bind")
            .map(|(_, p)| p)
            .collect();
        assert_eq!(rw, ["/p/.leopold/runs/r1/browser"]);
        assert!(!s.contains("/p "), "the project is not bound");
    }
}
