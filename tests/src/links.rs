//! Every link from the code and the docs to a file or a heading of this repository resolves
//! (issue #23). The docs (README.md, BENCHMARKS.md, `docs/*.md`) link with Markdown,
//! `[text](path#anchor)`; the code (Rust sources, scripts, TOML) cites a doc in its comments and
//! strings as `docs/security.md#the-gateway`. An anchor is the one GitHub gives the heading: its
//! text lowercased, punctuation dropped, spaces as `-`, `-1`, `-2`… on a repeated heading. Reads
//! only the repository.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The repository's files, by path relative to its root, and the text of those the check reads.
#[derive(Default)]
struct Repo {
    /// Every file and folder (`docs`, `docs/guide.md`).
    paths: BTreeSet<String>,
    /// The text of every file whose links are checked or whose headings are linked to.
    texts: BTreeMap<String, String>,
}

/// Where a link's text says it goes, and why it does not.
#[derive(Debug, PartialEq, Eq)]
struct Broken {
    file: String,
    line: usize,
    link: String,
    why: String,
}

/// Whether a file's links are checked: the docs as Markdown, the code for cited docs.
fn kind(path: &str) -> Option<Kind> {
    let is_doc = matches!(path, "README.md" | "BENCHMARKS.md")
        || (path.starts_with("docs/") && path.ends_with(".md") && !path[5..].contains('/'));
    if is_doc {
        Some(Kind::Doc)
    } else if [".rs", ".sh", ".toml"].iter().any(|e| path.ends_with(e)) || path == ".ci/run" {
        Some(Kind::Code)
    } else {
        None
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Doc,
    Code,
}

impl Repo {
    /// Reads the repository at `root`: every path, and the text of the files `kind` names and of
    /// every Markdown file (a link may point at any heading).
    fn read(root: &Path) -> Repo {
        let mut repo = Repo::default();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let entries = std::fs::read_dir(root.join(&rel)).unwrap();
            for entry in entries {
                let entry = entry.unwrap();
                let name = entry.file_name().into_string().unwrap();
                let path = rel.join(&name);
                // Build output, git's own folder, installs and fuzzing's generated inputs.
                if matches!(name.as_str(), "target" | ".git" | "node_modules")
                    || path == Path::new("fuzz/corpus")
                {
                    continue;
                }
                let key = path.to_str().unwrap().to_string();
                let ty = entry.file_type().unwrap();
                if ty.is_dir() {
                    stack.push(path);
                } else if ty.is_file() && (kind(&key).is_some() || key.ends_with(".md")) {
                    let text = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
                    repo.texts.insert(key.clone(), text);
                }
                repo.paths.insert(key);
            }
        }
        repo
    }

    /// Every broken link, in file order.
    fn broken(&self) -> Vec<Broken> {
        let mut broken = Vec::new();
        for (file, text) in &self.texts {
            // The checker's own tests hold broken links on purpose.
            if file == "tests/src/links.rs" {
                continue;
            }
            let links = match kind(file) {
                Some(Kind::Doc) => markdown_links(text),
                Some(Kind::Code) => cited_docs(text),
                None => continue,
            };
            for (line, link) in links {
                if let Err(why) = self.resolve(file, &link, kind(file).unwrap()) {
                    broken.push(Broken {
                        file: file.clone(),
                        line,
                        link,
                        why,
                    });
                }
            }
            if let Some(Kind::Code) = kind(file) {
                for (line, old) in old_citations(text) {
                    broken.push(Broken {
                        file: file.clone(),
                        line,
                        link: old,
                        why: "cites a heading by name: cite the doc and its anchor, \
                              `docs/<file>.md#<anchor>`"
                            .into(),
                    });
                }
            }
        }
        broken
    }

    /// Whether `link`, written in `file`, names an existing file (and heading).
    fn resolve(&self, file: &str, link: &str, kind: Kind) -> Result<(), String> {
        let (path, anchor) = match link.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (link, None),
        };
        let target = if path.is_empty() {
            file.to_string()
        } else {
            // A doc's link is relative to the doc; the code cites from the repository's root.
            let base = match kind {
                Kind::Doc => Path::new(file).parent().unwrap_or(Path::new("")),
                Kind::Code => Path::new(""),
            };
            normalise(&base.join(path)).ok_or_else(|| "leaves the repository".to_string())?
        };
        if !self.paths.contains(target.trim_end_matches('/')) {
            return Err(format!("no file {target}"));
        }
        let Some(anchor) = anchor else { return Ok(()) };
        let Some(text) = self.texts.get(&target).filter(|_| target.ends_with(".md")) else {
            return Err(format!("{target} is not a Markdown file with headings"));
        };
        if anchors(text).contains(anchor) {
            Ok(())
        } else {
            Err(format!("{target} has no heading #{anchor}"))
        }
    }
}

/// `a/./b/../c` as `a/c`; `None` when it climbs out of the root.
fn normalise(path: &Path) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// The lines of a Markdown text outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(i, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((i + 1, line))
    })
}

/// The text with every inline code span blanked out, so a bracket in code is not a link.
fn without_code_spans(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code && c != '\n' { ' ' } else { c });
        }
    }
    out
}

/// The GitHub anchor of every heading.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug = slug(&line[hashes..]);
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 { slug } else { format!("{slug}-{n}") });
        *n += 1;
    }
    out
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every `[text](target)` of a Markdown text with no scheme (`https:`, `mailto:`), with its
/// line. A link's text may span lines.
fn markdown_links(text: &str) -> Vec<(usize, String)> {
    let mut prose = String::new();
    let mut line_of = Vec::new();
    for (n, line) in prose_lines(text) {
        prose.push_str(line);
        prose.push('\n');
        line_of.resize(prose.len(), n);
    }
    let prose = without_code_spans(&prose);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = prose[from..].find("](") {
        let start = from + at + 2;
        from = start;
        let Some(len) = prose[start..].find([')', ' ', '\n']) else {
            break;
        };
        let target = &prose[start..start + len];
        if prose[start + len..].starts_with(')') && !target.is_empty() && !has_scheme(target) {
            out.push((line_of[start], target.to_string()));
        }
    }
    out
}

fn has_scheme(target: &str) -> bool {
    target
        .split_once(':')
        .is_some_and(|(s, _)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphabetic()))
}

/// Every doc a code file cites: a path ending `.md`, with its anchor if it has one.
fn cited_docs(text: &str) -> Vec<(usize, String)> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    let anchor_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-');
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find(".md") {
            let end = from + at + 3;
            from = end;
            if line[end..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
                continue;
            }
            let start = line[..end]
                .rfind(|c: char| !path_char(c))
                .map_or(0, |p| p + 1);
            let mut link = line[start..end].to_string();
            if let Some(rest) = line[end..].strip_prefix('#') {
                let len = rest.find(|c: char| !anchor_char(c)).unwrap_or(rest.len());
                link.push('#');
                link.push_str(&rest[..len]);
            }
            // Code names flow files (`flows/shop.md`) of projects it makes: only a doc is a link.
            let path = link.split('#').next().unwrap_or_default();
            if path.starts_with("docs/") || path.ends_with("README.md") || path == "BENCHMARKS.md" {
                out.push((i + 1, link));
            }
        }
    }
    out
}

/// Citations in the forms the docs' move retired: a heading by name (`README "The box"`) or the
/// harness facts outside the repository.
fn old_citations(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for old in ["README \"", "README \\\"", "HARNESS-FACTS"] {
            if line.contains(old) {
                out.push((i + 1, old.to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_link_from_the_code_and_the_docs_resolves() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let repo = Repo::read(root);
        assert!(repo.texts.contains_key("docs/security.md"), "no docs read");
        let broken = repo.broken();
        let list: Vec<String> = broken
            .iter()
            .map(|b| format!("{}:{}: {}: {}", b.file, b.line, b.link, b.why))
            .collect();
        assert!(broken.is_empty(), "broken links:\n{}", list.join("\n"));
    }

    fn repo(files: &[(&str, &str)]) -> Repo {
        let mut repo = Repo::default();
        for (path, text) in files {
            repo.texts.insert(path.to_string(), text.to_string());
            let mut dir = Path::new(path).parent();
            while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
                repo.paths.insert(d.to_str().unwrap().to_string());
                dir = d.parent();
            }
            repo.paths.insert(path.to_string());
        }
        repo
    }

    #[test]
    fn the_checker_names_each_broken_link_and_passes_good_ones() {
        let repo = repo(&[
            (
                "README.md",
                "# Leopold\n\n## Exit codes\n\nSee [the box](docs/security.md#the-box), \
                 [limits](docs/security.md#limits), [a file](docs/gone.md) and [exit\ncodes](#exit-codes).\n\
                 ```\n[not a link](nowhere.md)\n```\n`[nor this](nowhere.md)` [web](https://example.com/x)\n",
            ),
            (
                "docs/security.md",
                "# Security\n\n## The box\n\n### `--json` events\n\n## The box\n\n\
                 [back](../README.md#exit-codes) [up](../README.md#set-up)\n",
            ),
            (
                "supervisor/src/lib.rs",
                "// docs/security.md#--json-events, docs/security.md#the-box-1's\n\
                 // docs/security.md#the-gateway.\n// README \"The box\"\n",
            ),
        ]);
        let broken = repo.broken();
        let got: Vec<(&str, usize, &str)> = broken
            .iter()
            .map(|b| (b.file.as_str(), b.line, b.link.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("README.md", 5, "docs/security.md#limits"),
                ("README.md", 5, "docs/gone.md"),
                ("docs/security.md", 9, "../README.md#set-up"),
                ("supervisor/src/lib.rs", 2, "docs/security.md#the-gateway"),
                ("supervisor/src/lib.rs", 3, "README \""),
            ]
        );
        assert_eq!(broken[0].why, "docs/security.md has no heading #limits");
        assert_eq!(broken[1].why, "no file docs/gone.md");
    }

    #[test]
    fn anchors_are_githubs() {
        let text = "# Leopold\n## Start-up cost, and how `leopold` is built\n## The browser's tools\n\
                    ## `--json` events\n## 1. What fails open\n## Ünïcode\n## The box\n## The box\n";
        let want = [
            "leopold",
            "start-up-cost-and-how-leopold-is-built",
            "the-browsers-tools",
            "--json-events",
            "1-what-fails-open",
            "ünïcode",
            "the-box",
            "the-box-1",
        ];
        assert_eq!(anchors(text), want.iter().map(|s| s.to_string()).collect());
    }
}
