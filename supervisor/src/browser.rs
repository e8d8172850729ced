//! The provisioned browser: Playwright MCP with Chromium, every request it sends judged by the
//! run's proxy (docs/security.md#the-browsers-network-path, [`crate::web`]).
//!
//! A hook only sees the URL the model asks for; a link click, a redirect, a form post or page
//! script navigates with no URL in any tool call. So when a flow says `browser = "playwright"`
//! (or `persona run --browser playwright`), the supervisor writes into the run directory:
//!
//! - `browser/playwright.json`: Playwright MCP's config; Chromium runs headless from the system
//!   (`/usr/bin/chromium` or `--chromium PATH`) with an isolated profile in the run directory,
//!   background networking off, every request sent to the run's proxy (which maps `[hosts]`
//!   itself), and the per-run CA's key trusted for the proxy's tunnels;
//! - `browser/mcp.json`: the real server as the gateway starts it, outside the worker's box (the
//!   worker gets a relay instead, docs/security.md#the-gateway) and, in a boxed run, inside the
//!   browser's own ([`crate::sandbox::browser_box`]), launched through `env -i` so no `PLAYWRIGHT_MCP_*` or
//!   proxy variable of the caller's environment reaches it;
//! - `browser/refs.json`: the ref map ([`RefTracker`]), read by the guard.
//!
//! The builders are pure; [`provision`] does the writing.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use leopold_guard::browser::{
    parse_snapshot_line, BrowserState, RefEntry, RefMapFile, REF_MAP_VERSION,
};
use serde_json::{json, Value};

use crate::mcp::{McpServer, McpTransport};
use crate::os::find_executable;

/// The MCP server name the worker knows the browser by: tools are `mcp__browser__browser_*`.
pub const SERVER: &str = "browser";

/// The Playwright MCP version the project's set-up installs (`scripts/install-browser.sh`).
pub const PLAYWRIGHT_MCP_VERSION: &str = "0.0.83";

/// Where the browser's programs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserBins {
    /// `playwright-mcp` (the npm package's bin).
    pub playwright_mcp: PathBuf,
    /// `node`, which runs it.
    pub node: PathBuf,
    /// Chromium.
    pub chromium: PathBuf,
}

/// Where Chromium finds the run's proxy ([`crate::web`]).
#[derive(Debug, Clone)]
pub struct ProxyAt {
    /// `127.0.0.1:<port>`: in the browser's box, the port box-init forwards; without the box, a
    /// loopback port the supervisor listens on.
    pub addr: std::net::SocketAddr,
    /// The run's CA key Chromium trusts for the proxy's tunnels, and nothing else does.
    pub spki: String,
}

/// Chromium's arguments (Playwright adds `--headless` and the profile itself).
pub fn chromium_args(proxy: &ProxyAt, as_root: bool) -> Vec<String> {
    let mut args = vec![
        // Every request goes to the run's proxy, which judges it (crate::web). `<-loopback>`
        // takes away Chromium's implicit bypass of localhost and 127.0.0.1, which would
        // otherwise go direct.
        format!("--proxy-server=http://{}", proxy.addr),
        "--proxy-bypass-list=<-loopback>".into(),
        format!("--ignore-certificate-errors-spki-list={}", proxy.spki),
        // Defence in depth: in the box UDP has nowhere to go anyway.
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
        "--disable-quic".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-default-apps".into(),
        "--disable-domain-reliability".into(),
        "--no-first-run".into(),
        "--no-default-browser-check".into(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
    ];
    if as_root {
        // Chromium refuses to start as root with its sandbox on.
        args.push("--no-sandbox".into());
    }
    args
}

/// Playwright MCP's config file.
pub fn playwright_config(
    proxy: &ProxyAt,
    chromium: &Path,
    browser_dir: &Path,
    as_root: bool,
) -> Value {
    json!({
        "browser": {
            "browserName": "chromium",
            "userDataDir": browser_dir.join("profile"),
            "launchOptions": {
                "executablePath": chromium,
                "headless": true,
                "args": chromium_args(proxy, as_root),
            },
        },
        "outputDir": browser_dir.join("output"),
        "imageResponses": "omit",
        // The tracing tools, which the gateway alone calls (`--evidence steps`): the catalogue
        // never offers them to the persona.
        "capabilities": ["devtools"],
        // A page must not register tools of its own (`navigator.modelContext`,
        // docs/harness-facts.md#9-what-the-worker-can-do-besides-the-browser).
        "webmcp": false,
    })
}

/// The MCP server the worker launches: `env -i` with a minimal environment, then the server.
pub fn mcp_server(
    bins: &BrowserBins,
    config: &Path,
    browser_dir: &Path,
    run_id: &str,
) -> McpServer {
    let node_dir = bins
        .node
        .parent()
        .map_or_else(|| "/usr/bin".to_owned(), |p| p.display().to_string());
    McpServer {
        name: SERVER.into(),
        transport: McpTransport::Stdio {
            command: "/usr/bin/env".into(),
            args: vec![
                "-i".into(),
                format!("PATH={node_dir}:/usr/bin:/bin"),
                format!("HOME={}", browser_dir.join("home").display()),
                // Kept so Chromium (which Playwright starts in its own session, out of the
                // worker's process group) is found and stopped by the run's id.
                format!("{}={run_id}", crate::os::RUN_ID_ENV),
                bins.playwright_mcp.display().to_string(),
                "--config".into(),
                config.display().to_string(),
                // Also on the command line: a config key a later version renames must not
                // turn WebMCP back on silently.
                "--no-webmcp".into(),
            ],
            env: Vec::new(),
        },
    }
}

/// What provisioning wrote.
#[derive(Debug, Clone)]
pub struct Provisioned {
    pub server: McpServer,
    pub state: BrowserState,
    /// The run's `browser/` folder.
    pub dir: PathBuf,
    pub output_dir: PathBuf,
    /// The run's CA, which the proxy signs its tunnels with.
    pub authority: Arc<crate::web::tls::Authority>,
    /// Without the box: the loopback port Chromium was told, bound already, for the proxy to
    /// take when it starts. In the box the proxy listens on the run's `web.sock` instead.
    pub listener: Arc<Mutex<Option<std::net::TcpListener>>>,
}

/// Writes the browser's files into `<run_dir>/browser/`. `boxed`: Chromium will run in the
/// browser's box ([`crate::sandbox::browser_box`]), reaching the proxy on box-init's port.
///
/// # Errors
///
/// A file that cannot be written, with its path.
pub fn provision(
    bins: &BrowserBins,
    run_dir: &crate::run_dir::RunDir,
    boxed: bool,
) -> anyhow::Result<Provisioned> {
    let dir = run_dir.browser();
    for d in [
        dir.clone(),
        dir.join("profile"),
        run_dir.browser_output(),
        dir.join("home"),
    ] {
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    // `/proc/self` belongs to the process's effective user.
    let as_root = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata("/proc/self").map_or(true, |m| m.uid() == 0)
    };
    let authority = Arc::new(crate::web::tls::Authority::new()?);
    let (addr, listener) = if boxed {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], crate::web::BOX_PORT));
        (addr, None)
    } else {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0))
            .context("cannot listen on a loopback port for the browser's proxy")?;
        (l.local_addr()?, Some(l))
    };
    let proxy = ProxyAt {
        addr,
        spki: authority.spki_sha256(),
    };
    let config_path = dir.join("playwright.json");
    let config = playwright_config(&proxy, &bins.chromium, &dir, as_root);
    // The browser's files are only read while this run lives: nothing waits on the disk.
    let volatile = crate::state::Durability::Volatile;
    crate::state::write_atomic_as(&config_path, pretty(&config).as_bytes(), volatile)?;
    let run_id = run_dir
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let server = mcp_server(bins, &config_path, &dir, &run_id);
    let mcp_config = dir.join("mcp.json");
    crate::state::write_atomic_as(
        &mcp_config,
        pretty(&crate::mcp::mcp_config_json(std::slice::from_ref(&server))).as_bytes(),
        volatile,
    )?;
    Ok(Provisioned {
        server,
        state: BrowserState {
            kind: "playwright".into(),
            server: SERVER.into(),
            ref_map: dir.join("refs.json"),
        },
        output_dir: run_dir.browser_output(),
        dir,
        authority,
        listener: Arc::new(Mutex::new(listener)),
    })
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("json serialises");
    s.push('\n');
    s
}

/// Finds the browser's programs: `--chromium` or `/usr/bin/chromium`; `--playwright-mcp`,
/// `$LEOPOLD_PLAYWRIGHT_MCP`, or the set-up's cache; `node` on PATH.
///
/// # Errors
///
/// Which program is missing and how to install it.
pub fn find_bins(
    chromium: Option<&Path>,
    playwright_mcp: Option<&Path>,
) -> anyhow::Result<BrowserBins> {
    let hint =
        "(hint: run ./scripts/install-browser.sh, or pass --chromium PATH / --playwright-mcp PATH)";
    let chromium_want =
        chromium.map_or_else(|| PathBuf::from("/usr/bin/chromium"), Path::to_path_buf);
    let chromium = find_executable(&chromium_want)
        .with_context(|| format!("Chromium not found at {}\n{hint}", chromium_want.display()))?;
    let pw_want = match playwright_mcp {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os("LEOPOLD_PLAYWRIGHT_MCP").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => {
                let cache = match std::env::var_os("LEOPOLD_CACHE").filter(|v| !v.is_empty()) {
                    Some(c) => PathBuf::from(c),
                    None => PathBuf::from(
                        std::env::var_os("HOME")
                            .context("HOME is not set: cannot find the Playwright MCP cache")?,
                    )
                    .join(".cache/leopold"),
                };
                cache.join("playwright-mcp/node_modules/.bin/playwright-mcp")
            }
        },
    };
    let playwright_mcp = find_executable(&pw_want).with_context(|| {
        format!(
            "Playwright MCP ({PLAYWRIGHT_MCP_VERSION}) not found at {}\n{hint}",
            pw_want.display()
        )
    })?;
    let playwright_mcp = std::path::absolute(&playwright_mcp)?;
    let node = find_executable(Path::new("node")).context(
        "`node` not found on PATH: Playwright MCP needs Node 18+\n(hint: install Node.js)",
    )?;
    Ok(BrowserBins {
        playwright_mcp,
        node,
        chromium: std::path::absolute(&chromium)?,
    })
}

/// Keeps the run's ref map current from the browser's tool results, as the journal's adapter
/// reads them from the worker's stream (one parse of the stream for both): every result that
/// carries a snapshot (inline YAML, or a `[Snapshot](…)` file in the output directory) is folded
/// in; a change of page URL starts the map afresh (refs of another page are stale).
pub struct RefTracker {
    path: PathBuf,
    output_dir: PathBuf,
    map: RefMapFile,
    page: Option<String>,
    /// `mcp__<server>__`: only the provisioned browser's results count.
    prefix: String,
}

impl RefTracker {
    pub fn new(state: &BrowserState, output_dir: &Path) -> RefTracker {
        RefTracker {
            path: state.ref_map.clone(),
            output_dir: output_dir.to_path_buf(),
            map: RefMapFile {
                version: REF_MAP_VERSION,
                ..RefMapFile::default()
            },
            page: None,
            prefix: format!("mcp__{}__", state.server),
        }
    }

    /// The current map.
    pub fn map(&self) -> &RefMapFile {
        &self.map
    }

    /// Folds in the result of a completed call ([`leopold_journal::AdapterEvent::ToolResult`]);
    /// writes the map when it changed. Results of other servers' tools are ignored.
    ///
    /// # Errors
    ///
    /// The ref map could not be written.
    pub fn tool_result(&mut self, tool: &str, text: &str) -> anyhow::Result<()> {
        if !tool.starts_with(&self.prefix) {
            return Ok(());
        }
        // An answered dialog is gone, whether or not the answer shows the page (seen: 0.0.83
        // answers a dismissal with no text); a message seen later is a new dialog's.
        let answered = tool.ends_with("browser_handle_dialog") && self.map.dialog.take().is_some();
        if self.result(text) || answered {
            self.write()?;
        }
        Ok(())
    }

    /// Folds one result text in; true when the map changed.
    pub fn result(&mut self, text: &str) -> bool {
        let mut changed = false;
        if let Some(url) = text
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("- Page URL:"))
            .map(str::trim)
        {
            if self.page.as_deref() != Some(url) {
                self.page = Some(url.to_owned());
                self.map.refs.clear();
                self.map.page_host = url::Url::parse(url)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .and_then(|u| u.host_str().map(str::to_owned));
                changed = true;
            }
        }
        // The dialog the page shows, which the guard judges an accepted dialog by.
        if let Some(dialog) = leopold_guard::browser::modal_dialog(text) {
            if self.map.dialog != dialog {
                self.map.dialog = dialog;
                changed = true;
            }
        }
        let snapshot = match inline_snapshot(text) {
            Some(s) => Some(s.to_owned()),
            None => snapshot_file(text).and_then(|name| read_bounded(&self.output_dir.join(name))),
        };
        if let Some(s) = snapshot {
            let refs = parse_snapshot(&s);
            if !refs.is_empty() {
                self.map.snapshots += 1;
                self.map.refs.extend(refs);
                changed = true;
            }
        }
        changed
    }

    fn write(&self) -> anyhow::Result<()> {
        // Atomic (temp file + rename in the same directory) so the guard reads a whole map; no
        // fsync: the map is only useful while the run lives.
        let dir = self
            .path
            .parent()
            .context("ref map has no parent directory")?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".refs-")
            .tempfile_in(dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        tmp.write_all(&self.map.to_json())?;
        tmp.persist(&self.path)
            .map_err(|e| e.error)
            .with_context(|| format!("cannot replace {}", self.path.display()))?;
        Ok(())
    }
}

/// The YAML block after `### Snapshot`, when the result carries it inline.
fn inline_snapshot(text: &str) -> Option<&str> {
    let after = &text[text.find("### Snapshot")?..];
    let start = after.find("```yaml\n")? + "```yaml\n".len();
    let body = &after[start..];
    Some(&body[..body.find("\n```").unwrap_or(body.len())])
}

/// `- [Snapshot](<path>/page-….yml)`: only the file name is used, looked up in the run's own
/// output directory (a path from the stream is never followed).
fn snapshot_file(text: &str) -> Option<&str> {
    let after = &text[text.find("[Snapshot](")? + "[Snapshot](".len()..];
    let path = &after[..after.find(')')?];
    let name = path.rsplit('/').next()?;
    (name.starts_with("page-")
        && name.ends_with(".yml")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')))
    .then_some(name)
}

fn read_bounded(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > 8 << 20 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The elements with a ref among snapshot lines `- <role> "<name>" [ref=<r>] …`
/// ([`parse_snapshot_line`], shared with the journal).
pub fn parse_snapshot(yaml: &str) -> Vec<(String, RefEntry)> {
    yaml.lines()
        .filter_map(parse_snapshot_line)
        .filter_map(|el| {
            let r = el.reference?.to_owned();
            Some((
                r,
                RefEntry {
                    role: el.role.to_owned(),
                    name: el.name.unwrap_or_default(),
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy() -> ProxyAt {
        ProxyAt {
            addr: "127.0.0.1:3128".parse().unwrap(),
            spki: "c3BraQ==".into(),
        }
    }

    #[test]
    fn chromium_args_and_config() {
        let args = chromium_args(&proxy(), true);
        for want in [
            "--proxy-server=http://127.0.0.1:3128",
            "--proxy-bypass-list=<-loopback>",
            "--ignore-certificate-errors-spki-list=c3BraQ==",
            "--disable-quic",
            "--disable-background-networking",
            "--no-sandbox",
            "--disable-gpu",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
        }
        // Nothing may send the browser around the proxy.
        for gone in ["--no-proxy-server", "--proxy-bypass-list=*"] {
            assert!(!args.iter().any(|a| a == gone), "{gone} in {args:?}");
        }
        assert!(!chromium_args(&proxy(), false)
            .iter()
            .any(|a| a == "--no-sandbox"));
        let c = playwright_config(
            &proxy(),
            Path::new("/usr/bin/chromium"),
            Path::new("/run/x/browser"),
            false,
        );
        assert_eq!(c["browser"]["launchOptions"]["headless"], true);
        assert_eq!(
            c["browser"]["launchOptions"]["executablePath"],
            "/usr/bin/chromium"
        );
        assert_eq!(c["browser"]["userDataDir"], "/run/x/browser/profile");
        assert_eq!(c["outputDir"], "/run/x/browser/output");
        assert_eq!(c["webmcp"], false);
        let args = c["browser"]["launchOptions"]["args"].as_array().unwrap();
        assert_eq!(args[0], "--proxy-server=http://127.0.0.1:3128");
    }

    #[test]
    fn the_worker_config_launches_the_server_with_a_clean_environment() {
        let bins = BrowserBins {
            playwright_mcp: "/c/pw/playwright-mcp".into(),
            node: "/opt/node/bin/node".into(),
            chromium: "/usr/bin/chromium".into(),
        };
        let s = mcp_server(
            &bins,
            Path::new("/r/browser/playwright.json"),
            Path::new("/r/browser"),
            "r1",
        );
        let c = crate::mcp::mcp_config_json(std::slice::from_ref(&s));
        assert_eq!(c["mcpServers"]["browser"]["command"], "/usr/bin/env");
        let args: Vec<&str> = c["mcpServers"]["browser"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "-i",
                "PATH=/opt/node/bin:/usr/bin:/bin",
                "HOME=/r/browser/home",
                "LEOPOLD_RUN_ID=r1",
                "/c/pw/playwright-mcp",
                "--config",
                "/r/browser/playwright.json",
                "--no-webmcp"
            ]
        );
    }

    #[test]
    fn snapshot_lines_parse_and_a_name_cannot_smuggle_a_ref() {
        let refs = parse_snapshot(
            "- generic [active] [ref=e1]:\n  - heading \"Shop\" [level=1] [ref=e2]\n  \
             - link \"Admin dashboard\" [ref=e3] [cursor=pointer]:\n    - /url: http://prod.example.org/admin\n  \
             - button \"Continue [ref=e5]\" [ref=e4]\n  - button \"Say \\\"hi\\\"\" [ref=e6]\n  - button \"Place order\" [ref=e5]\n  - text: Total [ref=e9]",
        );
        let get = |r: &str| {
            refs.iter()
                .find(|(k, _)| k == r)
                .map(|(_, e)| e.name.as_str())
        };
        assert_eq!(get("e1"), Some(""));
        assert_eq!(get("e2"), Some("Shop"));
        assert_eq!(get("e3"), Some("Admin dashboard"));
        assert_eq!(get("e4"), Some("Continue [ref=e5]"));
        assert_eq!(get("e5"), Some("Place order"));
        assert_eq!(get("e6"), Some("Say \"hi\""));
        assert_eq!(refs.iter().filter(|(k, _)| k == "e5").count(), 1);
        assert_eq!(get("e9"), None, "text after `:` is not an attribute");
    }

    #[test]
    fn the_tracker_follows_the_real_streams_and_writes_the_map() {
        for (file, last) in [
            ("claude-playwright-stream.jsonl", "f2e5"),
            ("codex-playwright-stream.jsonl", "e5"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let state = BrowserState {
                kind: "playwright".into(),
                server: SERVER.into(),
                ref_map: dir.path().join("refs.json"),
            };
            let mut t = RefTracker::new(&state, &dir.path().join("output"));
            let stream = std::fs::read_to_string(leopold_tests::capture(file)).unwrap();
            let harness = if file.starts_with("claude") {
                leopold_journal::Harness::Claude
            } else {
                leopold_journal::Harness::Codex
            };
            // The stream goes through the journal's adapter, as in a run: the tracker sees only
            // the results it yields.
            let mut adapter = leopold_journal::Adapter::new(harness).with_tool_results();
            let mut seen_place_order = false;
            for (n, line) in stream.lines().enumerate() {
                for ev in adapter.push_line(n as u64 + 1, line) {
                    if let leopold_journal::AdapterEvent::ToolResult { tool, text } = ev {
                        t.tool_result(&tool, &text).unwrap();
                    }
                }
                if let Some(e) = t.map().refs.get(last) {
                    seen_place_order |= e.name == "Place order" && e.role == "button";
                }
            }
            assert!(seen_place_order, "{file}");
            let on_disk = RefMapFile::from_slice(&std::fs::read(&state.ref_map).unwrap()).unwrap();
            assert_eq!(on_disk.version, REF_MAP_VERSION);
            // The last result is the confirm page: a new URL, so the old refs are gone.
            assert!(on_disk.refs.is_empty(), "{file}: {on_disk:?}");
            assert_eq!(on_disk.page_host.as_deref(), Some("staging.example.com"));
            assert!(!std::fs::read_to_string(&state.ref_map)
                .unwrap()
                .contains("://"));
        }
    }

    #[test]
    fn snapshot_files_are_read_from_the_output_dir_only() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("output");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            out.join("page-1.yml"),
            "- button \"Place order\" [ref=e5]\n",
        )
        .unwrap();
        let state = BrowserState {
            kind: "playwright".into(),
            server: SERVER.into(),
            ref_map: dir.path().join("refs.json"),
        };
        let mut t = RefTracker::new(&state, &out);
        // Another server's result is not the provisioned browser's page.
        t.tool_result(
            "mcp__other__browser_snapshot",
            "### Page\n- Page URL: http://staging.example.com/\n### Snapshot\n- [Snapshot](page-1.yml)",
        )
        .unwrap();
        assert!(t.map().refs.is_empty());
        assert!(!state.ref_map.exists());
        assert!(t.result("### Page\n- Page URL: http://staging.example.com/\n### Snapshot\n- [Snapshot](../elsewhere/page-1.yml)"));
        assert_eq!(t.map().refs["e5"].name, "Place order");
        assert_eq!(snapshot_file("- [Snapshot](/etc/passwd)"), None);
        assert_eq!(snapshot_file("- [Snapshot](x/page-../../a.yml)"), None);
    }

    #[test]
    fn the_map_keeps_the_dialog_the_page_shows() {
        let dir = tempfile::tempdir().unwrap();
        let state = BrowserState {
            kind: "playwright".into(),
            server: SERVER.into(),
            ref_map: dir.path().join("refs.json"),
        };
        let mut t = RefTracker::new(&state, dir.path());
        // The text Playwright MCP 0.0.83 renders for a pending `confirm()`.
        let shown = "### Ran Playwright code\n```js\nawait page.getByRole('button', { name: 'Continue' }).click();\n```\n\
                     ### Page\n- Page URL: http://staging.example.com/checkout\n### Modal state\n\
                     - [\"confirm\" dialog with message \"Place the order?\"]: can be handled by browser_handle_dialog\n";
        t.tool_result("mcp__browser__browser_click", shown).unwrap();
        let on_disk = RefMapFile::from_slice(&std::fs::read(&state.ref_map).unwrap()).unwrap();
        assert_eq!(on_disk.dialog.as_deref(), Some("Place the order?"));
        // An error says nothing about the page; the next page without a modal clears it.
        assert!(!t.result("### Error\nTimeout"));
        assert!(t.result("### Page\n- Page URL: http://staging.example.com/checkout\n"));
        assert_eq!(t.map().dialog, None);
        // Answering the dialog forgets it, even when the answer shows nothing.
        t.tool_result("mcp__browser__browser_click", shown).unwrap();
        t.tool_result("mcp__browser__browser_handle_dialog", "")
            .unwrap();
        let on_disk = RefMapFile::from_slice(&std::fs::read(&state.ref_map).unwrap()).unwrap();
        assert_eq!(on_disk.dialog, None);
    }
}
