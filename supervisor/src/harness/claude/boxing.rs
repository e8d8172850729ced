//! What Claude Code's worker needs in the box: its variables, its key (or its login file),
//! its model endpoint, and the switch that leaves it only the browser.

use std::path::Path;

use crate::sandbox::{relay_base, Endpoint, Login, Needs};

/// Claude's variables, each by its name: its credentials, its endpoint, its model choice, the
/// switches Leopold and its docs set.
const PASS: &[&str] = &[
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

/// The variables that carry its key: `x-api-key` and a bearer token.
const KEYS: &[&str] = &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"];

/// The secret fields of its login file, `~/.claude/.credentials.json` (an OAuth login).
const LOGIN_SECRETS: &[&str] = &["/claudeAiOauth/accessToken", "/claudeAiOauth/refreshToken"];

/// Claude's needs for a box whose HOME is `scratch`. Its endpoint is `ANTHROPIC_BASE_URL`
/// (default https://api.anthropic.com); a remote one is reached through the relay's loopback
/// port, the variable pointed there.
pub fn box_needs(scratch: &Path) -> anyhow::Result<Needs> {
    let url = std::env::var("ANTHROPIC_BASE_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://api.anthropic.com".into());
    let (endpoint, path) = Endpoint::parse(&url)?;
    let mut set: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        super::launch::CLAUDE_ONLY_THE_BROWSER_ENV
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
    if let Endpoint::Remote { .. } = endpoint {
        set.push(("ANTHROPIC_BASE_URL".into(), relay_base(&path).into()));
    }
    let mut logins = Vec::new();
    if KEYS.iter().all(|k| std::env::var_os(k).is_none()) {
        // No key variable: its login file, where it looks for it in HOME.
        if let Some(home) = std::env::var_os("HOME") {
            logins.push(Login {
                from: Path::new(&home).join(".claude/.credentials.json"),
                inside: scratch.join(".claude/.credentials.json"),
                secrets: LOGIN_SECRETS,
            });
        }
    }
    Ok(Needs {
        pass: PASS.to_vec(),
        keys: KEYS.iter().map(|k| (*k).to_owned()).collect(),
        extra: Vec::new(),
        set,
        logins,
        endpoint,
        advice: advice(),
    })
}

/// What to do when Claude's endpoint refuses it.
pub fn advice() -> crate::sandbox::Advice {
    crate::sandbox::Advice {
        credentials: "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to a valid key, or run `claude login`".into(),
        model: "check the model name (--model, ANTHROPIC_MODEL) against what the endpoint serves, and ANTHROPIC_BASE_URL".into(),
        endpoint: "check ANTHROPIC_BASE_URL (default: api.anthropic.com) and the network".into(),
    }
}
