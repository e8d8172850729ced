//! The MCP servers a run hands its worker: read from a `--mcp-config` file (Claude's format),
//! and written back in that format for the worker (the gateway's relays) and for the record of a
//! provisioned browser's real server.

use std::path::Path;

use anyhow::Context as _;

/// One MCP server from a `--mcp-config` file (Claude's format: `{"mcpServers": {name: {...}}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub name: String,
    pub transport: McpTransport,
}

#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// `type: "http"` (or `"sse"`) with a `url`.
    Http { url: String },
}

/// Reads a Claude-format MCP config file.
///
/// # Errors
///
/// Unreadable file, invalid JSON, or a server entry without `command` or `url`; each names the
/// file and the server.
pub fn read_mcp_config(path: &Path) -> anyhow::Result<Vec<McpServer>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read MCP config {}", path.display()))?;
    let doc: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "MCP config {} is not valid JSON\n(hint: use Claude's `--mcp-config` format: {{\"mcpServers\": {{\"browser\": {{\"command\": \"…\", \"args\": […]}}}}}})",
            path.display()
        )
    })?;
    let servers = doc
        .get("mcpServers")
        .and_then(|v| v.as_object())
        .with_context(|| {
            format!(
                "MCP config {} has no `mcpServers` object\n(hint: {{\"mcpServers\": {{\"browser\": {{\"command\": \"…\", \"args\": […]}}}}}})",
                path.display()
            )
        })?;
    let mut out = Vec::new();
    for (name, spec) in servers {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            anyhow::bail!(
                "MCP config {}: server name {name:?} must be letters, digits, `_` or `-`\n(hint: the name becomes part of tool names `mcp__<server>__<tool>` and of Codex config keys)",
                path.display()
            );
        }
        let str_field = |k: &str| spec.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let transport = if let Some(command) = str_field("command") {
            let args = match spec.get("args") {
                None => Vec::new(),
                Some(serde_json::Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .with_context(|| {
                        format!(
                            "MCP config {}: server `{name}`: `args` must be strings",
                            path.display()
                        )
                    })?,
                Some(_) => anyhow::bail!(
                    "MCP config {}: server `{name}`: `args` must be an array of strings",
                    path.display()
                ),
            };
            let mut env = Vec::new();
            if let Some(e) = spec.get("env") {
                let obj = e.as_object().with_context(|| {
                    format!(
                        "MCP config {}: server `{name}`: `env` must be an object",
                        path.display()
                    )
                })?;
                for (k, v) in obj {
                    let v = v.as_str().with_context(|| {
                        format!(
                            "MCP config {}: server `{name}`: env `{k}` must be a string",
                            path.display()
                        )
                    })?;
                    env.push((k.clone(), v.to_owned()));
                }
            }
            McpTransport::Stdio { command, args, env }
        } else if let Some(url) = str_field("url") {
            McpTransport::Http { url }
        } else {
            anyhow::bail!(
                "MCP config {}: server `{name}` has neither `command` nor `url`",
                path.display()
            );
        };
        out.push(McpServer {
            name: name.clone(),
            transport,
        });
    }
    Ok(out)
}

/// The Claude-format MCP config (`{"mcpServers": {name: {...}}}`) naming `servers`: the
/// worker's `--mcp-config` file, and the record of a provisioned browser's real server.
pub fn mcp_config_json(servers: &[McpServer]) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for s in servers {
        let v = match &s.transport {
            McpTransport::Stdio { command, args, .. } => {
                serde_json::json!({"command": command, "args": args})
            }
            McpTransport::Http { url } => serde_json::json!({"type": "http", "url": url}),
        };
        m.insert(s.name.clone(), v);
    }
    serde_json::json!({"mcpServers": m})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_config_errors_name_the_file() {
        let (_dir, cfg) =
            leopold_tests::temp_file("mcp.json", r#"{"mcpServers":{"b":{"args":[]}}}"#);
        let e = format!("{:#}", read_mcp_config(&cfg).unwrap_err());
        assert!(e.contains("mcp.json") && e.contains("`b`"), "{e}");
    }
}
