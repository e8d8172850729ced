//! The staging app (`leopold-staging-app`) and the provisioned browser's programs, for the
//! suites that drive a real Chromium through `leopold persona run --browser playwright`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{kit_bin, read_jsonl, Sandbox};

/// A running `leopold-staging-app` on 127.0.0.1; killed on drop.
pub struct StagingApp {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its request log (`{"method","path","host"}` lines).
    pub log: PathBuf,
}

impl StagingApp {
    /// Starts the app on a free port, logging into the sandbox's log directory.
    pub fn start(sb: &Sandbox) -> StagingApp {
        let log = sb.logs.join("staging-requests.jsonl");
        let port_file = sb.logs.join("staging-port.json");
        let mut child = Command::new(kit_bin("leopold-staging-app"))
            .arg("--log")
            .arg(&log)
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start leopold-staging-app");
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Some(p) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| v["port"].as_u64())
            {
                break u16::try_from(p).expect("port");
            }
            if let Some(st) = child.try_wait().expect("wait") {
                panic!("leopold-staging-app exited early: {st}");
            }
            assert!(
                Instant::now() < deadline,
                "leopold-staging-app wrote no port file in 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        StagingApp { child, port, log }
    }

    /// Every request the app received, in order.
    pub fn requests(&self) -> Vec<Value> {
        read_jsonl(&self.log)
    }

    /// `(method, path, host)` of every request.
    pub fn seen(&self) -> Vec<(String, String, String)> {
        self.requests()
            .iter()
            .map(|r| {
                let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
                (s("method"), s("path"), s("host"))
            })
            .collect()
    }
}

impl Drop for StagingApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The provisioned browser's programs: Chromium and `playwright-mcp`, as
/// `scripts/install-browser.sh` installs them (`scripts/test.sh` exports
/// `LEOPOLD_CHROMIUM` and `LEOPOLD_PLAYWRIGHT_MCP`). In CI a missing one fails the test;
/// elsewhere the test skips loudly, like [`crate::require_cli`].
pub fn require_browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = std::env::var_os("LEOPOLD_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let pw = std::env::var_os("LEOPOLD_PLAYWRIGHT_MCP").map(PathBuf::from);
    let ok = |p: &Path| p.is_file();
    match pw {
        Some(pw) if ok(&chromium) && ok(&pw) => Some((chromium, pw)),
        _ => {
            let msg = format!(
                "the provisioned browser is not installed (chromium at {}, LEOPOLD_PLAYWRIGHT_MCP={:?}); \
                 run ./scripts/install-browser.sh or ./scripts/test.sh",
                chromium.display(),
                std::env::var_os("LEOPOLD_PLAYWRIGHT_MCP")
            );
            assert!(std::env::var_os("CI").is_none(), "{msg}");
            #[allow(clippy::print_stderr)]
            {
                eprintln!("*** SKIPPED: {msg}");
            }
            None
        }
    }
}
