//! The checkout scenario (issue #6, scenario 1): the script the model follows and what a
//! guarded run must show. The script lives in `tests/scripts/checkout.toml` so the demo and a
//! user rehearsing by hand use the very same one.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::script::Script;

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
