//! Which project a command acts on, and how to show a path to the person who ran it.
//!
//! The project is found the way git finds a repository and cargo a workspace, so that running
//! from a subfolder (`cd flows && leopold persona run checkout.md …`) acts on the project rather
//! than creating `flows/.leopold/`:
//! 1. the nearest ancestor of the current directory (itself included) holding `.leopold/`: the
//!    guard finds its project with the same function ([`leopold_guard::find_root`]), so the two
//!    always agree;
//! 2. else the repository root: the nearest ancestor holding `.git` (a directory, or the file a
//!    worktree or submodule has);
//! 3. else the current directory.
//!
//! `--project DIR` overrides all three.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use leopold_flows::{Flow, FlowError};

/// Resolves `--project` (or discovers the project from the current directory) to an absolute,
/// existing directory.
///
/// # Errors
/// When the current directory cannot be read, `--project` does not exist or is not a directory,
/// or looking for `.leopold/` failed with an I/O error other than "not found".
pub fn resolve(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    let raw = match arg {
        Some(p) => p.to_path_buf(),
        None => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            discover(&cwd)?
        }
    };
    let abs = std::fs::canonicalize(&raw)
        .with_context(|| format!("project directory {} does not exist", raw.display()))?;
    if !abs.is_dir() {
        anyhow::bail!("project {} is not a directory", abs.display());
    }
    Ok(abs)
}

/// The project `start` belongs to (see the module docs).
///
/// # Errors
/// When looking for `.leopold/` failed with an I/O error other than "not found".
pub fn discover(start: &Path) -> anyhow::Result<PathBuf> {
    if let Some(root) = leopold_guard::find_root(start).map_err(|d| {
        anyhow::anyhow!(
            "cannot look for `.leopold/` above {}: {}",
            start.display(),
            d.reason.id()
        )
    })? {
        return Ok(root);
    }
    Ok(start
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(start)
        .to_path_buf())
}

/// `path` as the user can paste it where they stand: relative to the current directory when it
/// lies inside it, else absolute.
pub fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|c| std::fs::canonicalize(&c).ok().or(Some(c)));
    match cwd.as_deref().map(|c| path.strip_prefix(c)) {
        Some(Ok(rel)) if rel.as_os_str().is_empty() => ".".to_owned(),
        Some(Ok(rel)) => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// Loads a flow file named as the user named it, so every message shows the path they typed;
/// the flow remembers its absolute path (journals and ACTIVE.json record it).
///
/// `persona run` and `flow check` both load flows here: they give the same messages.
///
/// # Errors
/// [`FlowError`], naming the file, the key and the fix.
pub fn load_flow(arg: &Path) -> Result<(PathBuf, Flow), FlowError> {
    let mut flow = Flow::load(arg)?;
    let abs = std::path::absolute(arg).unwrap_or_else(|_| arg.to_path_buf());
    flow.source.clone_from(&abs);
    Ok((abs, flow))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_leopold_dir_wins_then_the_repository_root_then_the_start() {
        let (_tmp, repo) = crate::test_support::temp_path("repo");
        let sub = repo.join("flows").join("deep");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(discover(&sub).unwrap(), sub, "nothing above: the start");
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(discover(&sub).unwrap(), repo, "a repository: its root");
        std::fs::create_dir(repo.join("flows").join(".leopold")).unwrap();
        assert_eq!(
            discover(&sub).unwrap(),
            repo.join("flows"),
            "a nearer .leopold/ wins"
        );
    }

    #[test]
    fn a_worktree_git_file_marks_a_repository_root() {
        let tmp = leopold_tests::temp_tree(&[("wt/.git", "gitdir: /elsewhere\n")]);
        let sub = tmp.path().join("wt").join("src");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(discover(&sub).unwrap(), tmp.path().join("wt"));
    }
}
