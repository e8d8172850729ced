//! `persona report --merge`: run directories copied from several CI jobs (shards) gathered into
//! one folder, `OUT/<run_id>/`, which then reads as a runs folder: self-contained, to upload
//! whole. Everything is checked before anything is written: a run id two inputs give to
//! different runs, or that `OUT` already holds for a different run, refuses the merge.
//! "Different" is by the run's own records: `run.json` and `journal.jsonl`, byte for byte (the
//! journal is hash-chained and `run.json` holds its head, so two runs cannot share both).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::run_dir::RunDir;

/// Deepest folder copied inside a run directory; a run writes far shallower ones.
const MAX_DEPTH: u32 = 16;

/// Copies every run directory of `inputs` into `out/<run_id>/` (one already there with the same
/// records is left as it is) and returns the run directories under `out`, sorted.
///
/// # Errors
///
/// An input that is not a run directory or a folder of them, a run that cannot be read, a run
/// id that is not a plain name, a run id given to two different runs, or a copy that fails.
/// Nothing is written unless every check passes.
pub fn merge(inputs: &[PathBuf], out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut plan: BTreeMap<String, PathBuf> = BTreeMap::new();
    for input in inputs {
        for dir in super::run_dirs(input)? {
            let id = crate::report::read_run_summary(&dir)?.run_id();
            if id.is_empty() || id.starts_with('.') || id.contains(['/', '\\', '\0']) {
                anyhow::bail!(
                    "{}: run id {id:?} is not a folder name; it was not merged\n(hint: leave out this run directory)",
                    dir.display()
                );
            }
            match plan.get(&id) {
                Some(seen) if !same_run(seen, &dir)? => anyhow::bail!(
                    "two different runs have the id {id}: {} and {}; nothing was merged\n(hint: merge one of them)",
                    seen.display(),
                    dir.display()
                ),
                Some(_) => {}
                None => {
                    plan.insert(id, dir);
                }
            }
        }
    }
    let mut copies = Vec::new();
    for (id, src) in &plan {
        let dst = out.join(id);
        if !dst.exists() {
            copies.push((src, dst));
        } else if !same_dir(src, &dst) && !same_run(src, &dst)? {
            anyhow::bail!(
                "{} already holds a different run with the id {id}; nothing was merged\n(hint: merge into an empty folder)",
                out.display()
            );
        }
    }
    for (src, dst) in copies {
        copy_run(src, &dst)?;
    }
    Ok(plan.keys().map(|id| out.join(id)).collect())
}

/// Whether `a` and `b` are one folder.
fn same_dir(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// Whether two run directories hold the same run: the same `run.json` and `journal.jsonl`.
fn same_run(a: &Path, b: &Path) -> anyhow::Result<bool> {
    for name in [RunDir::RUN_JSON, RunDir::JOURNAL] {
        let read = |d: &Path| -> anyhow::Result<Option<Vec<u8>>> {
            let p = d.join(name);
            match std::fs::read(&p) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(|| format!("cannot read {}", p.display())),
            }
        };
        if read(a)? != read(b)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Copies a run directory to `dst` through a temporary sibling, renamed once whole: a merge cut
/// short leaves no half run under its id.
fn copy_run(src: &Path, dst: &Path) -> anyhow::Result<()> {
    let name = dst.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dst.with_file_name(format!(".{name}.merging"));
    let parent = dst.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)
            .with_context(|| format!("cannot remove {}", tmp.display()))?;
    }
    copy_tree(src, &tmp, 0)
        .and_then(|()| std::fs::rename(&tmp, dst).map_err(Into::into))
        .with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))
}

/// Folders and regular files only: a link is never followed (a run folder holds none; one that
/// did could pull a file from outside into an upload).
fn copy_tree(src: &Path, dst: &Path, depth: u32) -> anyhow::Result<()> {
    std::fs::create_dir(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let (from, to) = (e.path(), dst.join(e.file_name()));
        let kind = e.file_type()?;
        if kind.is_dir() && depth < MAX_DEPTH {
            copy_tree(&from, &to, depth + 1)?;
        } else if kind.is_file() {
            std::fs::copy(&from, &to)?;
        }
    }
    Ok(())
}
