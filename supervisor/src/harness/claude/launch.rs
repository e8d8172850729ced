//! How Claude Code is launched headless (docs/harness-facts.md#5-headless-worker-invocations):
//! `-p` with the prompt, the stream Leopold reads, the guard's `--settings` file, the switches
//! that leave it only the browser, and the arguments after `--` that would undo any of them.

use crate::harness::WorkerSpec;

/// Claude's switches that leave the worker the browser and nothing else
/// (docs/reference.md#what-a-run-does, step 6;
/// docs/harness-facts.md#9-what-the-worker-can-do-besides-the-browser): no built-in tool at all
/// (`--tools ""`: Bash, Read, Write, Edit, WebFetch, WebSearch, Agent, … are not offered, whatever a permission rule says); only the
/// project's settings and the `--settings` file load (`--setting-sources project`: a user's
/// `~/.claude/settings.json` allowing Bash or setting a `defaultMode` is not read); and the
/// permission mode is the default one whatever a settings file says (`--permission-mode
/// default`: a project's `defaultMode` such as `acceptEdits` or `bypassPermissions` does not
/// apply). The MCP servers are then allowed by name (`--allowedTools mcp__<server>`).
pub const CLAUDE_ONLY_THE_BROWSER: [&str; 6] = [
    "--setting-sources",
    "project",
    "--permission-mode",
    "default",
    "--tools",
    "",
];

/// Claude's environment that offers the browser's tools directly: without
/// `ENABLE_TOOL_SEARCH=false`, Claude Code 2.1.332 keeps deferred tool loading on and offers the
/// model a `DeferredToolPlaceholder` tool (`defer_loading`) beside them, whatever `--model`
/// (seen with `sonnet`, `haiku`, `opus`; docs/security.md#only-the-browser). Set over the user's
/// own value, boxed or not.
pub const CLAUDE_ONLY_THE_BROWSER_ENV: &[(&str, &str)] = &[("ENABLE_TOOL_SEARCH", "false")];

/// Claude's argument vector (without the program).
pub fn args(spec: &WorkerSpec<'_>) -> Vec<String> {
    let mut a: Vec<String> = [
        "-p",
        &spec.prompt,
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(settings) = spec.guard_settings {
        a.push("--settings".into());
        a.push(settings.display().to_string());
    }
    a.extend(CLAUDE_ONLY_THE_BROWSER.map(str::to_owned));
    if let Some(cfg) = spec.mcp_config {
        a.push("--mcp-config".into());
        a.push(cfg.display().to_string());
        a.push("--strict-mcp-config".into());
        if !spec.mcp_servers.is_empty() {
            a.push("--allowedTools".into());
            a.push(
                spec.mcp_servers
                    .iter()
                    .map(|s| format!("mcp__{}", s.name))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    a.extend(spec.extra.iter().cloned());
    a
}

/// Why an extra argument is refused: it would switch hooks off, give the worker a tool besides
/// the browser, or break the stream Leopold reads. `flag` is the argument up to its `=`, `value`
/// its value (inline or the next argument).
pub fn refusal(flag: &str, value: impl Fn() -> Option<String>) -> Option<String> {
    match flag {
        "--bare" | "--safe-mode" => Some(format!(
            "`{flag}` makes Claude Code skip hooks: the guard would not run"
        )),
        "--settings" => {
            // Claude keeps one `--settings`: a second could replace the guard's, which in the box
            // is the guard's only layer. Inline settings may carry a URL (an `apiKeyHelper`
            // command): hosts only.
            let v = crate::redact::strip_urls(&value().unwrap_or_default());
            Some(format!(
                "`--settings {v}`: Leopold passes its own `--settings` file, which carries the guard, and Claude Code keeps only one: the guard could be replaced"
            ))
        }
        "--setting-sources" => Some("`--setting-sources` changes which settings (and hooks) load; Leopold passes `--setting-sources project` and the guard itself".into()),
        "--tools" | "--allowedTools" | "--allowed-tools" | "--add-dir" | "--permission-mode"
        | "--dangerously-skip-permissions" | "--allow-dangerously-skip-permissions"
        | "--permission-prompt-tool" | "--plugin-dir" | "--chrome" | "--ide" | "--agents" => {
            Some(format!(
                "`{flag}` would give the worker tools or permissions besides the browser: Leopold passes `--tools \"\"`, `--permission-mode default` and allows only the flow's MCP servers"
            ))
        }
        "--model" | "--max-turns" | "--max-budget-usd" => Some(format!(
            "`{flag}` after `--`: give Leopold's {} before `--` instead (Leopold records it and passes it on)",
            crate::harness::launch::leopold_flag(flag)
        )),
        "-p" | "--print" | "--output-format" | "--input-format" | "--mcp-config"
        | "--strict-mcp-config" => Some(format!(
            "`{flag}` is set by Leopold (use `--mcp-config` before `--`)"
        )),
        _ => None,
    }
}
