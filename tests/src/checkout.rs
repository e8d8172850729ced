//! The checkout scenario (issue #6, scenario 1): the script the model follows and what a
//! guarded run must show. The script lives in `tests/scripts/checkout.toml` so the demo and a
//! user rehearsing by hand use the very same one.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::script::Script;
use crate::{require_cli, Harness, ModelServer, Sandbox, StubBrowser};

/// The MCP server name the checkout script calls (`mcp__browser__*`).
pub const SERVER: &str = "browser";

/// `tests/scripts/checkout.toml`.
pub fn script_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/checkout.toml"
    ))
}

/// The parsed checkout script.
pub fn script() -> Script {
    Script::load(&script_path()).expect("tests/scripts/checkout.toml")
}

/// The repository's `flows/checkout.md`.
pub fn flow_path() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../flows/checkout.md"))
}

/// The calls that must reach the browser, in order: `(tool, arguments)` as the stub logs them
/// (compare with [`crate::StubBrowser::seen`]).
pub fn allowed_calls() -> Vec<(String, Value)> {
    vec![
        (
            "navigate".into(),
            json!({"url": "https://staging.example.com/products/1"}),
        ),
        (
            "type".into(),
            json!({"selector": "#email", "text": "first.buyer@example.com"}),
        ),
    ]
}

/// The hosts the guard must name in its blocks, in order (the batch names its bad host).
pub const BLOCKED_HOSTS: [&str; 4] = [
    "prod-dashboard.example.org",
    "evil.example",
    "evil.example",
    "evil.example",
];

/// How many calls the guard must deny: the four hosts above and the `Place order` click.
pub const BLOCKED_CALLS: usize = 5;

/// One harness in a sandbox of its own, the scripted model and the checkout server's stub
/// browser, ready for `leopold persona run flows/checkout.md`: the scenario plants the flow and
/// the harness settings it needs.
pub struct CheckoutWorld {
    /// The harness under test.
    pub h: Harness,
    /// Its CLI ([`require_cli`]).
    pub cli: PathBuf,
    /// The user's HOME and project.
    pub sb: Sandbox,
    /// The scripted model.
    pub model: ModelServer,
    /// The stub browser, named [`SERVER`].
    pub browser: StubBrowser,
    /// The browser's `--mcp-config` file.
    pub mcp_config: PathBuf,
}

impl CheckoutWorld {
    /// The model plays `script` (built from the sandbox: it may name the sandbox's paths).
    /// `None` where the harness is not installed (see [`require_cli`]).
    pub fn new(h: Harness, script: impl FnOnce(&Sandbox) -> Script) -> Option<CheckoutWorld> {
        let cli = require_cli(h)?;
        let sb = Sandbox::new();
        let model = ModelServer::start(&sb, &script(&sb));
        let browser = sb.stub_browser(SERVER);
        let mcp_config = sb.write_claude_mcp_config(&browser);
        Some(CheckoutWorld {
            h,
            cli,
            sb,
            model,
            browser,
            mcp_config,
        })
    }

    /// `leopold persona run flows/checkout.md --harness <h> ... --mcp-config <the stub>`,
    /// hermetic, from the project.
    pub fn persona_run(&self, leopold: &Path) -> Command {
        let mut cmd =
            self.sb
                .persona_run(leopold, "flows/checkout.md", self.h, &self.cli, &self.model);
        cmd.arg("--mcp-config").arg(&self.mcp_config);
        cmd
    }
}
