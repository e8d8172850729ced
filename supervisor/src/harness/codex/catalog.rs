//! Codex's model catalog, with every tool a model entry adds switched off
//! (docs/security.md#only-the-browser).
//!
//! Which tools Codex offers depends on the model as much as on `features.*`: each entry of the
//! catalog it embeds decides whether the MCP tools hide behind `tool_search`
//! (`supports_search_tool`), whether `apply_patch` is offered (`apply_patch_tool_type`), whether
//! the model gets a JavaScript `exec` with the other tools nested inside it (`tool_mode =
//! "code_mode_only"`), sub-agents (`multi_agent_version`) and extra tools
//! (`experimental_supported_tools`). Seen on Codex 0.171.0: `-m gpt-5.5` offered `apply_patch`,
//! `tool_search` and no browser tool directly; `-m gpt-6.2-sol` offered `exec`, `wait`,
//! `send_message_to_user_async` and six sub-agent tools. No `-c`/`features` switch removes these;
//! a catalog does: Leopold reads the pinned binary's own catalog (`codex debug models`, in a
//! scratch home so that no user file decides it), sets those fields off in every entry, and
//! passes the result with `-c model_catalog_json=…`. The instructions, reasoning levels and wire
//! format of each model are left as they are.

use std::io::{Read as _, Seek as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The run's catalog, in the run's own Codex home (which the worker reads inside the box);
/// removed with the run's copy of the configuration
/// ([`crate::harness::run_home::remove_codex_copy`]).
pub const CATALOG_FILE: &str = "leopold-model-catalog.json";

/// The fields of a catalog entry that add tools, each with its off value.
pub const TOOL_FIELDS: &[(&str, &str)] = &[
    ("supports_search_tool", "false"),
    ("apply_patch_tool_type", "null"),
    ("tool_mode", "null"),
    ("multi_agent_version", "null"),
    ("experimental_supported_tools", "[]"),
];

/// What the run refuses with when the catalog cannot be made: the tools it would leave on.
const WOULD_LEAVE: &str = "without it, Codex's catalog models are offered `tool_search` (the browser hidden behind it), `apply_patch`, a JavaScript `exec` and sub-agents";

/// Generous: the answer is cached, so a slow first probe costs once, and a refusal stops the run.
const CATALOG_TIMEOUT: Duration = Duration::from_secs(45);
/// Codex 0.171.0's catalog is about 0.9 MB.
const MAX_CATALOG: u64 = 32 * 1024 * 1024;

/// The catalog of the Codex at `bin` with every tool field off, as JSON text.
///
/// # Errors
/// One line naming what failed and the tools it would leave on: the run refuses to start.
pub fn catalog_without_tools(bin: &Path) -> Result<String, String> {
    // Cached for the binary as it is (crate::cache's key: path, inode, size, times): the probe
    // starts a node process that takes seconds on a loaded machine, and a suite starts several
    // Codex runs at once (seen: 20 s passed with a suite and a build sharing two cores).
    let raw = crate::cache::cached_answer(
        crate::cache::cache_file_named("codex-catalog.json").as_deref(),
        bin,
        "debug models",
        std::time::SystemTime::now(),
        read_catalog,
    )
    .map_err(|e| {
        format!(
            "cannot read the model catalog of {} (`codex debug models`): {e}; {WOULD_LEAVE}",
            bin.display()
        )
    })?;
    switch_off(&raw).map_err(|e| {
        format!(
            "the model catalog of {} has an unknown shape ({e}); {WOULD_LEAVE}",
            bin.display()
        )
    })
}

fn read_catalog(bin: &Path) -> Result<String, String> {
    let home = tempfile::tempdir().map_err(|e| format!("no scratch directory: {e}"))?;
    let mut out = tempfile::tempfile().map_err(|e| format!("no scratch file: {e}"))?;
    let mut cmd = Command::new(bin);
    cmd.args(["debug", "models"])
        .env_clear()
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(|e| e.to_string())?)
        .stderr(Stdio::null())
        .process_group(0);
    // The npm wrapper is a node script: it needs a PATH to find node.
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    let mut child = cmd.spawn().map_err(|e| format!("it cannot be run: {e}"))?;
    let pgid = child.id();
    let status = crate::process::wait_or_kill(&mut child, CATALOG_TIMEOUT);
    let _ = crate::os::signal_group(pgid, libc::SIGKILL);
    match status {
        Ok(Some(s)) if s.success() => {}
        Ok(Some(s)) => return Err(format!("it failed ({s})")),
        Ok(None) => {
            return Err(format!(
                "it did not answer within {}s (killed)",
                CATALOG_TIMEOUT.as_secs()
            ))
        }
        Err(e) => return Err(e.to_string()),
    }
    out.rewind().map_err(|e| e.to_string())?;
    let mut text = String::new();
    out.take(MAX_CATALOG)
        .read_to_string(&mut text)
        .map_err(|e| format!("its output is not text: {e}"))?;
    Ok(text)
}

/// `raw` (`{"models":[{…}, …]}`) with every [`TOOL_FIELDS`] field off in every entry (set where
/// an entry leaves it out: Codex reads a missing one as off already).
///
/// # Errors
/// What is not as Codex 0.171.0 writes it: no `models` array, or an entry without a `slug`.
pub fn switch_off(raw: &str) -> Result<String, String> {
    let mut doc: Value = serde_json::from_str(raw).map_err(|e| format!("not JSON: {e}"))?;
    let models = doc
        .get_mut("models")
        .and_then(Value::as_array_mut)
        .ok_or("no `models` array")?;
    if models.is_empty() {
        return Err("no model in it".into());
    }
    for m in models.iter_mut() {
        let entry = m.as_object_mut().ok_or("a model entry is not an object")?;
        if !entry.get("slug").is_some_and(Value::is_string) {
            return Err("a model entry has no `slug`".into());
        }
        for (field, off) in TOOL_FIELDS {
            entry.insert(
                (*field).to_owned(),
                serde_json::from_str(off).expect("a JSON literal"),
            );
        }
    }
    serde_json::to_string(&doc).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(slug: &str) -> Value {
        serde_json::json!({"slug": slug, "base_instructions": "be kind",
            "supports_search_tool": true, "apply_patch_tool_type": "freeform",
            "tool_mode": "code_mode_only", "multi_agent_version": "v2",
            "experimental_supported_tools": ["clock"], "use_responses_lite": true})
    }

    #[test]
    fn every_tool_field_of_every_model_is_switched_off_and_the_rest_kept() {
        let raw = serde_json::json!({"models": [entry("a"), entry("b")]}).to_string();
        let out: Value = serde_json::from_str(&switch_off(&raw).unwrap()).unwrap();
        for m in out["models"].as_array().unwrap() {
            assert_eq!(m["supports_search_tool"], false);
            assert!(m["apply_patch_tool_type"].is_null());
            assert!(m["tool_mode"].is_null());
            assert!(m["multi_agent_version"].is_null());
            assert_eq!(m["experimental_supported_tools"], serde_json::json!([]));
            assert_eq!(m["base_instructions"], "be kind");
            assert_eq!(m["use_responses_lite"], true);
        }
    }

    #[test]
    fn a_field_an_entry_leaves_out_is_set_off_too() {
        let mut e = entry("gpt-x");
        e.as_object_mut().unwrap().remove("tool_mode");
        let raw = serde_json::json!({"models": [e]}).to_string();
        let out: Value = serde_json::from_str(&switch_off(&raw).unwrap()).unwrap();
        assert!(out["models"][0]
            .as_object()
            .unwrap()
            .get("tool_mode")
            .is_some_and(Value::is_null));
    }

    #[test]
    fn a_catalog_of_another_shape_is_refused_naming_what_is_missing() {
        let raw = serde_json::json!({"models": [{"name": "gpt-x"}]}).to_string();
        assert_eq!(switch_off(&raw).unwrap_err(), "a model entry has no `slug`");
        assert!(switch_off("{}").unwrap_err().contains("no `models`"));
        assert!(switch_off(r#"{"models":[]}"#).is_err());
        assert!(switch_off("nope").is_err());
    }

    #[test]
    fn a_binary_that_cannot_answer_refuses_the_run_naming_the_tools() {
        let e = catalog_without_tools(Path::new("/nonexistent/codex")).unwrap_err();
        assert!(
            e.contains("tool_search") && e.contains("apply_patch"),
            "{e}"
        );
    }
}
