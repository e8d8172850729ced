//! The supervisor's view of harness wiring (issue #3's `harness` module).
//!
//! TEMPORARY: until the `wiring` branch lands, this is a minimal byte-restore stand-in with the
//! agreed API, so the lifecycle can be built and tested. It is replaced by re-exports of
//! `crate::harness` on merge.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// The tag on every handler Leopold adds.
pub const TAG: &str = "leopold-persona-guard";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HarnessKind {
    Claude,
    Codex,
}

impl HarnessKind {
    pub fn name(self) -> &'static str {
        match self {
            HarnessKind::Claude => "claude",
            HarnessKind::Codex => "codex",
        }
    }
    pub fn from_name(s: &str) -> Option<HarnessKind> {
        match s {
            "claude" => Some(HarnessKind::Claude),
            "codex" => Some(HarnessKind::Codex),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Context {
    pub project: PathBuf,
    pub codex_home: PathBuf,
    pub guard_command: String,
    pub claude_on_failure: bool,
}

#[derive(Debug, Clone)]
pub struct WireRecord {
    pub harness: HarnessKind,
    pub file: PathBuf,
    pub tag: String,
}

#[derive(Debug, Clone)]
pub struct WireOutcome {
    pub record: WireRecord,
    pub changed: bool,
    pub warnings: Vec<String>,
}

pub fn guard_command(leopold_exe: &Path) -> String {
    let s = leopold_exe.display().to_string();
    let quoted = format!("'{}'", s.replace('\'', "'\\''"));
    format!("{quoted} persona guard")
}

pub fn target_file(kind: HarnessKind, ctx: &Context) -> PathBuf {
    match kind {
        HarnessKind::Claude => ctx.project.join(".claude").join("settings.json"),
        HarnessKind::Codex => ctx.codex_home.join("config.toml"),
    }
}

fn backup_dir(ctx: &Context) -> PathBuf {
    ctx.project.join(".leopold/persona/wiring")
}

fn backup_path(kind: HarnessKind, ctx: &Context) -> PathBuf {
    backup_dir(ctx).join(format!("{}.orig", kind.name()))
}

fn absent_path(kind: HarnessKind, ctx: &Context) -> PathBuf {
    backup_dir(ctx).join(format!("{}.absent", kind.name()))
}

fn hook_json(ctx: &Context) -> serde_json::Value {
    let mut h = serde_json::json!({"type":"command","command":ctx.guard_command,"timeout":10,"leopoldTag":TAG});
    if ctx.claude_on_failure {
        h["onFailure"] = "block".into();
    }
    serde_json::json!({"matcher":"mcp__.*|WebFetch","hooks":[h]})
}

pub fn claude_guard_settings_json(ctx: &Context) -> String {
    serde_json::to_string_pretty(&serde_json::json!({"hooks":{"PreToolUse":[hook_json(ctx)]}}))
        .expect("json")
}

pub fn wire(kind: HarnessKind, ctx: &Context) -> anyhow::Result<WireOutcome> {
    let file = target_file(kind, ctx);
    let record = WireRecord {
        harness: kind,
        file: file.clone(),
        tag: TAG.into(),
    };
    if backup_path(kind, ctx).exists() || absent_path(kind, ctx).exists() {
        return Ok(WireOutcome {
            record,
            changed: false,
            warnings: vec![],
        });
    }
    std::fs::create_dir_all(backup_dir(ctx))?;
    let original = match std::fs::read(&file) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let new = match kind {
        HarnessKind::Claude => {
            let mut doc: serde_json::Value = match &original {
                Some(b) => serde_json::from_slice(b)
                    .with_context(|| format!("{} is not valid JSON", file.display()))?,
                None => serde_json::json!({}),
            };
            let hooks = doc
                .as_object_mut()
                .context("settings is not an object")?
                .entry("hooks")
                .or_insert_with(|| serde_json::json!({}));
            let pre = hooks
                .as_object_mut()
                .context("hooks is not an object")?
                .entry("PreToolUse")
                .or_insert_with(|| serde_json::json!([]));
            pre.as_array_mut()
                .context("PreToolUse is not an array")?
                .push(hook_json(ctx));
            serde_json::to_vec_pretty(&doc)?
        }
        HarnessKind::Codex => {
            let mut text = original.clone().unwrap_or_default();
            text.extend_from_slice(
                format!(
                    "\n[[hooks.PreToolUse]]\nmatcher = \"mcp__.*|WebFetch\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = {}\ntimeout = 10\n# {TAG}\n",
                    toml_edit::Value::from(ctx.guard_command.as_str())
                )
                .as_bytes(),
            );
            text
        }
    };
    match &original {
        Some(b) => crate::state::write_atomic(&backup_path(kind, ctx), b)?,
        None => crate::state::write_atomic(&absent_path(kind, ctx), b"")?,
    }
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)?;
    }
    crate::state::write_atomic(&file, &new)?;
    Ok(WireOutcome {
        record,
        changed: true,
        warnings: vec![],
    })
}

pub fn unwire(kind: HarnessKind, ctx: &Context) -> anyhow::Result<bool> {
    let file = target_file(kind, ctx);
    let b = backup_path(kind, ctx);
    let a = absent_path(kind, ctx);
    let changed = if let Ok(orig) = std::fs::read(&b) {
        crate::state::write_atomic(&file, &orig)?;
        std::fs::remove_file(&b)?;
        true
    } else if a.exists() {
        let _ = std::fs::remove_file(&file);
        if kind == HarnessKind::Claude {
            let _ = std::fs::remove_dir(ctx.project.join(".claude"));
        }
        std::fs::remove_file(&a)?;
        true
    } else {
        false
    };
    let _ = std::fs::remove_dir(backup_dir(ctx));
    Ok(changed)
}

/// Tagged handler commands currently in the harness's file.
pub fn wired_handlers(kind: HarnessKind, ctx: &Context) -> anyhow::Result<Vec<String>> {
    let file = target_file(kind, ctx);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    Ok(if text.contains(TAG) {
        vec![ctx.guard_command.clone()]
    } else {
        vec![]
    })
}
