//! The staging app (`leopold-staging-app`) and the provisioned browser's programs, for the
//! suites that drive a real Chromium through `leopold persona run --browser playwright`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::{json, Value};

use crate::script::{Script, ToolCall, Turn};
use crate::{read_jsonl, require_cli, start_serving, Harness, ModelServer, Sandbox};

/// The value of the cookie `leopold_session` the staging app's `/account` sets: what a finished
/// runs folder must not hold.
pub const SESSION_COOKIE: &str = "LeopoldSessionS3cret-c00k1e-5d1f";

/// The bearer token `/account`'s script sends as `Authorization` (the page's text holds it
/// reversed).
pub const BEARER_TOKEN: &str = "LeopoldBearerS3cret-t0k3n-9a7e";

/// How the staging app is started: https only (`tls`), and with its review page broken
/// (`seeded_bug`). A `bool` is `tls` alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppOpts {
    /// https only, with a CA of its own.
    pub tls: bool,
    /// `/checkout/review` redirects to an error page.
    pub seeded_bug: bool,
    /// `/checkout/review` redirects to an error page the first time only.
    pub seeded_bug_once: bool,
}

impl From<bool> for AppOpts {
    fn from(tls: bool) -> AppOpts {
        AppOpts {
            tls,
            ..AppOpts::default()
        }
    }
}

/// A running `leopold-staging-app` on 127.0.0.1; killed on drop.
pub struct StagingApp {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its request log (`{"method","path","host"}` lines; `"cookie": true` and `"bearer": true`
    /// on a request that carried `/account`'s cookie or bearer token).
    pub log: PathBuf,
    /// With [`StagingApp::start_tls`]: the PEM file of the CA its certificate comes from.
    pub ca: Option<PathBuf>,
}

impl StagingApp {
    /// Starts the app on a free port, logging into the sandbox's log directory.
    pub fn start(sb: &Sandbox) -> StagingApp {
        StagingApp::start_with(sb, false)
    }

    /// The same app speaking https only, as `staging.example.com`, its CA in [`StagingApp::ca`].
    pub fn start_tls(sb: &Sandbox) -> StagingApp {
        StagingApp::start_with(sb, true)
    }

    /// Starts the app as `opts` says (https only, a seeded bug).
    pub fn start_with(sb: &Sandbox, opts: impl Into<AppOpts>) -> StagingApp {
        let AppOpts {
            tls,
            seeded_bug,
            seeded_bug_once,
        } = opts.into();
        let log = sb.logs.join("staging-requests.jsonl");
        let port_file = sb.logs.join("staging-port.json");
        let mut args: Vec<&std::ffi::OsStr> = vec!["--log".as_ref(), log.as_os_str()];
        if tls {
            args.extend(["--tls".as_ref(), sb.logs.as_os_str()]);
        }
        if seeded_bug {
            args.push("--seeded-bug".as_ref());
        }
        if seeded_bug_once {
            args.push("--seeded-bug-once".as_ref());
        }
        let (child, v) = start_serving("leopold-staging-app", args, &port_file);
        let port = v["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .expect("port");
        let ca = tls.then(|| sb.logs.join("ca.pem"));
        StagingApp {
            child,
            port,
            log,
            ca,
        }
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

/// The flow `flows/shop.md` of the provisioned-browser suites: `staging.example.com` only,
/// mapped to the staging app on `port`, with the payment set and `/checkout/confirm` as
/// irreversible; `extra` goes among the top-level keys (`allow_tools = [...]`, say).
pub fn shop_flow(port: u16, extra: &str) -> String {
    format!(
        "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\n{extra}\n\
         [hosts]\n\"staging.example.com\" = \"127.0.0.1:{port}\"\n\
         [irreversible]\nforbid = [\"payment\"]\nurl_paths = [\"/checkout/confirm\"]\n+++\n\
         Walk the shop as a first-time buyer.\n"
    )
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

/// A turn calling the provisioned browser's `tool` (`mcp__browser__<tool>`) with `input`.
pub fn call(tool: &str, input: Value) -> Turn {
    Turn {
        calls: vec![ToolCall {
            tool: format!("mcp__browser__{tool}"),
            input,
        }],
        delay_ms: 0,
    }
}

/// A turn navigating the provisioned browser to `path` on `http://staging.example.com`.
pub fn nav(path: &str) -> Turn {
    call(
        "browser_navigate",
        json!({ "url": format!("http://staging.example.com{path}") }),
    )
}

/// Adds `--browser playwright` with its programs to a `persona run` command.
pub fn browser_args(cmd: &mut Command, chromium: &Path, playwright_mcp: &Path) {
    cmd.args(["--browser", "playwright", "--timeout", "90s"])
        .arg("--chromium")
        .arg(chromium)
        .arg("--playwright-mcp")
        .arg(playwright_mcp);
}

/// `leopold persona run flows/shop.md --browser playwright` against a fresh staging app, boxed
/// (the browser runs outside the box, behind the gateway: docs/security.md#the-gateway) and hermetic,
/// prepared and not yet run.
pub struct ShopRun {
    /// The sandbox: the project holds `flows/shop.md`.
    pub sb: Sandbox,
    /// The staging app, as `staging.example.com`.
    pub app: StagingApp,
    /// The scripted model.
    pub model: ModelServer,
    /// The `persona run` command; add arguments (`--no-contain`, `--junit`) before running it.
    pub cmd: Command,
}

impl ShopRun {
    /// Runs the prepared command with `extra` arguments added, bounded by `timeout` (the command
    /// is then spent).
    pub fn run(&mut self, extra: &[&str], timeout: std::time::Duration) -> crate::Run {
        self.cmd.args(extra);
        let cmd = std::mem::replace(&mut self.cmd, Command::new("true"));
        self.sb.run(cmd, timeout)
    }

    /// Runs the prepared command to its end, bounded by `timeout`.
    pub fn run_to_end(mut self, timeout: std::time::Duration) -> ShopDone {
        let run = self.run(&[], timeout);
        let ShopRun { sb, app, model, .. } = self;
        ShopDone {
            sb,
            app,
            model,
            run,
        }
    }

    /// Prepares the run of `leopold` under `harness`: the app as `app` says (https only with
    /// `tls`, its CA then given as `--ca-cert`), `flow` writes `flows/shop.md` for the app's port, and the
    /// model plays `turns` (given the app's port and the project), then says `final_answer`.
    /// `None` where the harness or the browser is not installed (see [`require_browser`]).
    pub fn prepare(
        harness: Harness,
        leopold: &Path,
        app: impl Into<AppOpts>,
        flow: impl FnOnce(u16) -> String,
        turns: impl FnOnce(u16, &Path) -> Vec<Turn>,
        final_answer: &str,
    ) -> Option<ShopRun> {
        let bin = require_cli(harness)?;
        let (chromium, playwright_mcp) = require_browser()?;
        let sb = Sandbox::new();
        let app = StagingApp::start_with(&sb, app);
        let script = Script {
            turns: turns(app.port, &sb.project),
            final_answer: final_answer.into(),
        };
        let model = ModelServer::start(&sb, &script);
        if harness == Harness::Codex {
            sb.write_codex_config(&model, "");
        }
        let flows = sb.project.join("flows");
        std::fs::create_dir_all(&flows).unwrap();
        std::fs::write(flows.join("shop.md"), flow(app.port)).unwrap();
        let mut cmd = Command::new(leopold);
        cmd.args([
            "persona",
            "run",
            "flows/shop.md",
            "--harness",
            harness.as_str(),
        ])
        .arg("--harness-bin")
        .arg(&bin);
        browser_args(&mut cmd, &chromium, &playwright_mcp);
        if let Some(ca) = &app.ca {
            cmd.arg("--ca-cert").arg(ca);
        }
        sb.hermetic(&mut cmd, &model);
        Some(ShopRun {
            sb,
            app,
            model,
            cmd,
        })
    }
}

/// A [`ShopRun`] run to its end: the world it ran in, and what it left.
pub struct ShopDone {
    /// The sandbox: the run's record is under its project.
    pub sb: Sandbox,
    /// The staging app, its request log complete.
    pub app: StagingApp,
    /// The scripted model, its request log complete.
    pub model: ModelServer,
    /// The `persona run` process's end.
    pub run: crate::Run,
}

impl ShopDone {
    /// The journal's actions (the header line, which has no `tool`, skipped).
    pub fn journal(&self) -> Vec<Value> {
        self.journal_lines()
            .into_iter()
            .filter(|l| l.get("tool").is_some())
            .collect()
    }

    /// The tools of the calls the guard or the gateway refused, from the journal.
    pub fn denied_calls(&self) -> Vec<String> {
        self.journal_lines()
            .into_iter()
            .filter(|a| a["outcome"] == "denied")
            .map(|a| a["tool"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn journal_lines(&self) -> Vec<Value> {
        read_jsonl(&self.sb.run_dir().join("journal.jsonl"))
    }

    /// The guard's denials of this run: `(tool, reason)`.
    pub fn guard_denials(&self) -> Vec<(String, String)> {
        let (_proofs, denials) = self.sb.run_events();
        denials
            .iter()
            .map(|e| {
                let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                (s("tool"), s("reason"))
            })
            .collect()
    }

    /// The proxy's refusals of requests to the app in the gateway record (Chromium's own
    /// background requests to its update service are refused too, and not the tests' concern).
    pub fn refusals(&self) -> Vec<Value> {
        read_jsonl(&self.sb.run_dir().join("gateway.jsonl"))
            .into_iter()
            .filter(|l| l["event"] == "request" && l["host"] == "staging.example.com")
            .collect()
    }

    /// `(method, path)` of every request the app received.
    pub fn seen(&self) -> Vec<(String, String)> {
        self.app
            .seen()
            .into_iter()
            .map(|(m, p, _)| (m, p))
            .collect()
    }

    /// How many orders the app received (requests to `/checkout/confirm`).
    pub fn orders(&self) -> usize {
        self.seen()
            .iter()
            .filter(|(_, p)| p.starts_with("/checkout/confirm"))
            .count()
    }
}

/// The DOM headless Chromium holds for the HTML file `page` once loaded, at 1280 × 900 (its
/// scripts, where the page allows them, given 5 s of virtual time).
pub fn dumped_dom(chromium: &Path, page: &Path) -> String {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1280,900",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| panic!("start {}: {e}", chromium.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The text headless Chromium renders for the HTML file `page` ([`dumped_dom`]), as a reader
/// would see it.
pub fn rendered_text(chromium: &Path, page: &Path) -> String {
    let dom = dumped_dom(chromium, page);
    // The DOM's text: tags dropped, entities of the escaped text read back.
    let mut text = String::new();
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
