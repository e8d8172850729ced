//! Each run's own Codex configuration (docs/reference.md#wiring; issue #12 item 3).
//!
//! Codex reads its hooks from `$CODEX_HOME/config.toml`, one file per user. Wiring the guard
//! there made two runs in two projects share it: the second run's unwire removed the first's
//! handler, and a crash left the user's file wired. A run therefore gets its own `CODEX_HOME`,
//! `<run dir>/scratch/.codex` (boxed or not), holding:
//!
//! - `config.toml`: a copy of the user's, its `[mcp_servers]` left out (the worker is offered the
//!   flow's browser and no server of the user's), with the guard wired into the copy. The
//!   wiring record goes to `<run dir>/wiring/` ([`run_context`]), apart from what the user wired
//!   by hand in the project's `.leopold/persona/wiring/`.
//! - `auth.json`, the login file, never copied: in the box, the user's file is bound read-only
//!   over an empty placeholder; with `--no-contain`, a symlink to it.
//!
//! When the run ends (teardown, or recovery of a crashed run) the copy is unwired like any wired
//! file, then `config.toml` and `auth.json` are removed; the rest (Codex's sessions and logs)
//! stays with the run's record. The user's `config.toml` is never written by `persona run`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::harness::Context;

/// `<run dir>/scratch/.codex`: the run's `CODEX_HOME`.
pub fn codex_home_for_run(run_dir: &Path) -> PathBuf {
    run_dir.join("scratch").join(".codex")
}

/// Where the run's wiring record is kept: `<run dir>/wiring`.
pub fn record_dir_for_run(run_dir: &Path) -> PathBuf {
    run_dir.join("wiring")
}

/// The wiring context of one run: `ctx` with the run's own `CODEX_HOME` and record folder.
pub fn run_context(ctx: &Context, run_dir: &Path) -> Context {
    Context {
        codex_home: codex_home_for_run(run_dir),
        record_dir: Some(record_dir_for_run(run_dir)),
        by_hand: false,
        ..ctx.clone()
    }
}

/// Whether `file` (a wiring entry of ACTIVE.json) is the run's own copy for `run_dir`.
pub fn is_run_copy(file: &Path, run_dir: &Path) -> bool {
    file == codex_home_for_run(run_dir).join("config.toml")
}

/// Creates the run's `CODEX_HOME` from the user's `user_home`: `config.toml` copied without its
/// MCP servers (absent stays absent), and with `link_login` (no box) `auth.json` as a symlink
/// to the user's login file when there is one.
///
/// # Errors
/// The user's config cannot be read or is not TOML (the message names it; nothing is left
/// half-written in the user's folder, which is only read), or the run's folder cannot be written.
pub fn prepare_codex_home(
    user_home: &Path,
    run_home: &Path,
    link_login: bool,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(run_home)
        .with_context(|| format!("cannot create {}", run_home.display()))?;
    let user_cfg = user_home.join("config.toml");
    match std::fs::read(&user_cfg) {
        Ok(bytes) => {
            let copy = without_mcp_servers(&user_cfg, &bytes)?;
            crate::state::write_atomic_as(
                &run_home.join("config.toml"),
                &copy,
                crate::state::Durability::Volatile,
            )?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", user_cfg.display())),
    }
    let login = user_home.join("auth.json");
    if link_login && login.is_file() {
        let link = run_home.join("auth.json");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&login, &link)
            .with_context(|| format!("cannot link {} to the login file", link.display()))?;
    }
    Ok(())
}

/// The user's config text with every `[mcp_servers]` entry left out, every other byte kept
/// (unchanged bytes when it has none).
fn without_mcp_servers(file: &Path, bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let text = std::str::from_utf8(bytes)
        .with_context(|| format!("{} is not UTF-8 text", file.display()))?;
    let mut doc: toml_edit::DocumentMut = text.parse().with_context(|| {
        format!(
            "{} is not valid TOML; the file was left untouched\n(hint: fix it, then run again)",
            file.display()
        )
    })?;
    if doc.remove("mcp_servers").is_none() {
        return Ok(bytes.to_vec());
    }
    Ok(doc.to_string().into_bytes())
}

/// Removes the run's copy of the configuration, its model catalog and its login entry
/// (symlink, placeholder, or a file the harness wrote in its place), once unwired. Codex's own
/// sessions and logs stay.
pub fn remove_codex_copy(run_home: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for name in ["config.toml", super::catalog::CATALOG_FILE, "auth.json"] {
        let p = run_home.join(name);
        if std::fs::remove_file(&p).is_ok() {
            removed.push(p);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_leaves_out_mcp_servers_and_keeps_every_other_byte() {
        let text = "model = \"m\" # mine\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\n\n[history]\npersistence = \"none\"\n";
        let dir = leopold_tests::temp_tree(&[
            ("user/config.toml", text),
            ("user/auth.json", "{\"token\":\"t\"}"),
        ]);
        let user = dir.path().join("user");
        let run = dir.path().join("run/scratch/.codex");
        prepare_codex_home(&user, &run, true).unwrap();
        let copy = std::fs::read_to_string(run.join("config.toml")).unwrap();
        assert!(
            !copy.contains("mcp_servers") && !copy.contains("gh-mcp"),
            "{copy}"
        );
        assert!(copy.contains("model = \"m\" # mine") && copy.contains("persistence = \"none\""));
        // The user's files: read, never written.
        assert_eq!(
            std::fs::read_to_string(user.join("config.toml")).unwrap(),
            text
        );
        let link = run.join("auth.json");
        assert_eq!(std::fs::read_link(&link).unwrap(), user.join("auth.json"));
        let catalog = run.join(crate::harness::codex_catalog::CATALOG_FILE);
        std::fs::write(&catalog, "{}").unwrap();
        assert_eq!(
            remove_codex_copy(&run),
            vec![run.join("config.toml"), catalog, link.clone()]
        );
        assert!(
            user.join("auth.json").is_file(),
            "the login file itself stays"
        );

        // Without MCP servers the copy is byte-identical; without a config there is none; in
        // the box the login is bound by the box, not linked.
        std::fs::write(user.join("config.toml"), "a = 1\n").unwrap();
        prepare_codex_home(&user, &run, false).unwrap();
        assert_eq!(std::fs::read(run.join("config.toml")).unwrap(), b"a = 1\n");
        assert!(std::fs::symlink_metadata(run.join("auth.json")).is_err());
        std::fs::remove_file(user.join("config.toml")).unwrap();
        remove_codex_copy(&run);
        prepare_codex_home(&user, &run, false).unwrap();
        assert!(!run.join("config.toml").exists());
    }

    #[test]
    fn a_broken_user_config_is_refused_by_name() {
        let (dir, _) = leopold_tests::temp_file("config.toml", "model = [");
        let e = format!(
            "{:#}",
            prepare_codex_home(dir.path(), &dir.path().join("run"), false).unwrap_err()
        );
        assert!(
            e.contains("config.toml") && e.contains("not valid TOML"),
            "{e}"
        );
    }

    #[test]
    fn a_run_context_points_at_the_run() {
        let ctx = Context {
            project: "/p".into(),
            codex_home: "/home/u/.codex".into(),
            guard_command: "g".into(),
            claude_on_failure: true,
            by_hand: true,
            record_dir: None,
        };
        let run_dir = Path::new("/p/.leopold/persona/runs/r1");
        let c = run_context(&ctx, run_dir);
        assert_eq!(
            c.settings_path(crate::harness::Harness::Codex),
            run_dir.join("scratch/.codex/config.toml")
        );
        assert_eq!(
            c.record_path(crate::harness::Harness::Codex),
            run_dir.join("wiring/codex.json")
        );
        assert!(!c.by_hand);
        assert!(is_run_copy(
            &run_dir.join("scratch/.codex/config.toml"),
            run_dir
        ));
        assert!(!is_run_copy(
            Path::new("/home/u/.codex/config.toml"),
            run_dir
        ));
    }
}
