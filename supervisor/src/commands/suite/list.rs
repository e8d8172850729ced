//! The suite's list: every flow (files, and the `*.md` of folders) under every harness asked
//! for, in a fixed order, cut to `--partition`'s share. Every flow is parsed here, before any
//! run starts: a bad flow stops the suite with the message `flow check` gives, touching nothing.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::cli::HarnessChoice;
use crate::harness::Harness;
use crate::partition::Partition;

/// One flow under one harness: one run (and its retries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The flow file, absolute.
    pub flow: PathBuf,
    /// The flow's `name`: a suite tells its runs apart by it.
    pub name: String,
    pub harness: Harness,
}

impl Pair {
    /// What `--partition hash:` hashes, and how the suite names the run.
    pub fn key(&self) -> String {
        format!("{}/{}", self.name, self.harness)
    }
}

/// The flow files given: a file as it is, a folder as its `*.md` files by name. The same file
/// named twice runs once.
pub fn flow_files(given: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for g in given {
        let found = if g.is_dir() {
            let mut md = markdown_in(g)?;
            if md.is_empty() {
                anyhow::bail!(
                    "folder {} holds no flow (no `*.md` file)\n(hint: name flow files, or a folder of `*.md` flows)",
                    g.display()
                );
            }
            md.sort();
            md
        } else {
            vec![g.clone()]
        };
        for f in found {
            // Kept as typed, so that every message names the file the way the user did.
            let abs = std::path::absolute(&f).unwrap_or_else(|_| f.clone());
            if !seen.contains(&abs) {
                seen.push(abs);
                out.push(f);
            }
        }
    }
    Ok(out)
}

fn markdown_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut out = Vec::new();
    for e in rd {
        let p = e
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        if p.extension().is_some_and(|x| x == "md") && p.is_file() {
            out.push(p);
        }
    }
    Ok(out)
}

/// The harnesses asked for, in the order given, each once.
pub fn harnesses(choices: &[HarnessChoice]) -> Vec<Harness> {
    let mut out = Vec::new();
    for h in choices.iter().flat_map(|c| c.harnesses()) {
        if !out.contains(&h) {
            out.push(h);
        }
    }
    out
}

/// Every flow × harness pair, flows first, each flow parsed; two flows of one name are refused
/// (a suite's results, its JUnit test suites and `--partition hash:`, go by name).
pub fn pairs(flows: &[PathBuf], harnesses: &[Harness]) -> anyhow::Result<Vec<Pair>> {
    let mut named: Vec<(String, PathBuf)> = Vec::new();
    for f in flows {
        let (abs, flow) = crate::project::load_flow(f)?;
        if let Some((_, other)) = named.iter().find(|(n, _)| *n == flow.name) {
            anyhow::bail!(
                "flows {} and {} are both named `{}`\n(hint: a suite tells its runs apart by flow name: rename one)",
                crate::project::shown(other),
                crate::project::shown(&abs),
                flow.name
            );
        }
        named.push((flow.name, abs));
    }
    Ok(named
        .iter()
        .flat_map(|(name, flow)| {
            harnesses.iter().map(|&harness| Pair {
                flow: flow.clone(),
                name: name.clone(),
                harness,
            })
        })
        .collect())
}

/// The pairs `partition` keeps, in order.
pub fn shard(pairs: Vec<Pair>, partition: Option<&Partition>) -> Vec<Pair> {
    match partition {
        None => pairs,
        Some(p) => pairs
            .into_iter()
            .enumerate()
            .filter(|(i, pair)| p.keeps(*i, &pair.key()))
            .map(|(_, pair)| pair)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(dir: &Path, file: &str, name: &str) -> PathBuf {
        let p = dir.join(file);
        std::fs::write(
            &p,
            format!("+++\nname = \"{name}\"\nallowlist = [\"shop.test\"]\nbrowser = \"playwright\"\n+++\nBrief.\n"),
        )
        .unwrap();
        p
    }

    #[test]
    fn folders_expand_by_name_and_every_pair_is_listed_once() {
        let (dir, sub) = crate::test_support::temp_path("flows");
        std::fs::create_dir(&sub).unwrap();
        flow(&sub, "b.md", "browse");
        flow(&sub, "a.md", "checkout");
        std::fs::write(sub.join("notes.txt"), "not a flow").unwrap();
        let single = flow(dir.path(), "c.md", "search");
        let files = flow_files(&[sub.clone(), single.clone(), sub.join("a.md")]).unwrap();
        assert_eq!(files, [sub.join("a.md"), sub.join("b.md"), single]);
        let hs = harnesses(&[
            "codex"
                .parse::<Harness>()
                .map(Some)
                .map(HarnessChoice)
                .unwrap(),
            HarnessChoice(None),
        ]);
        assert_eq!(hs, [Harness::Codex, Harness::Claude]);
        let all = pairs(&files, &hs).unwrap();
        let keys: Vec<String> = all.iter().map(Pair::key).collect();
        assert_eq!(
            keys,
            [
                "checkout/codex",
                "checkout/claude",
                "browse/codex",
                "browse/claude",
                "search/codex",
                "search/claude"
            ]
        );
        let p: Partition = "count:2/2".parse().unwrap();
        let half: Vec<String> = shard(all, Some(&p)).iter().map(Pair::key).collect();
        assert_eq!(half, ["checkout/claude", "browse/claude", "search/claude"]);
    }

    #[test]
    fn an_empty_folder_and_a_shared_name_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = flow_files(&[dir.path().to_path_buf()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no flow"), "{err}");
        let a = flow(dir.path(), "a.md", "checkout");
        let b = flow(dir.path(), "b.md", "checkout");
        let err = pairs(&[a, b], &[Harness::Claude]).unwrap_err().to_string();
        assert!(err.contains("both named `checkout`"), "{err}");
    }
}
