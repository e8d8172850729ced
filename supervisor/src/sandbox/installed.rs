//! What of a program's installation the box binds: its npm package and the packages it names,
//! or a native executable alone.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// What of the harness's installation the box holds: its npm package (the one whose files hold
/// the binary the `.bin` entry resolves to) and the packages it names (the platform package
/// holding the native binary), or a native executable alone; the `.bin` symlinks leading there
/// are made again in the box. Never the folder that happens to hold the binary: kept in the
/// home folder or the project, that brought `~/.ssh`, `~/.aws` and the project's `.env` in
/// (issue #22). A script outside an npm package is refused: which files it needs cannot be told
/// apart from what lies beside it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Installed {
    pub ro: Vec<PathBuf>,
    /// (target, at)
    pub links: Vec<(PathBuf, PathBuf)>,
}

pub fn installed_files(bin: &Path) -> anyhow::Result<Installed> {
    let found = crate::os::find_executable(bin).unwrap_or_else(|| bin.to_path_buf());
    let mut out = Installed::default();
    let mut p = std::path::absolute(&found).unwrap_or(found);
    for _ in 0..16 {
        let Ok(target) = std::fs::read_link(&p) else {
            break;
        };
        let next = match p.parent() {
            Some(dir) if target.is_relative() => dir.join(&target),
            _ => target.clone(),
        };
        out.links.push((target, p));
        p = next;
    }
    let real = std::fs::canonicalize(&p)
        .with_context(|| format!("cannot resolve the harness binary {}", bin.display()))?;
    if let Some(pkg) = npm_package(&real) {
        out.ro.extend(named_packages(&pkg));
        out.ro.insert(0, pkg);
    } else if is_native(&real) {
        out.ro.push(real);
    } else {
        anyhow::bail!(
            "cannot tell which files the harness {} needs: it is a script outside an npm package, and the box never takes in the folder that holds it\n(hint: install the harness with npm (its `node_modules/.bin` entry is bound with its package only), or pass --no-contain to run without the box)",
            bin.display()
        );
    }
    Ok(out)
}

/// The npm package holding `file`: its nearest folder with a `package.json`, if that folder is
/// a package under `node_modules` (`node_modules/<name>` or `node_modules/@scope/<name>`).
fn npm_package(file: &Path) -> Option<PathBuf> {
    let dir = file
        .ancestors()
        .skip(1)
        .find(|a| a.join("package.json").is_file())?;
    let parent = dir.parent()?;
    let is_nm = |p: &Path| p.file_name().is_some_and(|n| n == "node_modules");
    let scoped = parent
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('@'))
        && parent.parent().is_some_and(is_nm);
    (is_nm(parent) || scoped).then(|| dir.to_path_buf())
}

/// The installed packages `pkg`'s `package.json` names (dependencies and optional ones: the
/// platform packages), found as Node finds them: in its own `node_modules`, then in each
/// enclosing `node_modules`.
fn named_packages(pkg: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(pkg.join("package.json")) else {
        return Vec::new();
    };
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut out = Vec::new();
    for key in ["dependencies", "optionalDependencies"] {
        for name in doc[key].as_object().into_iter().flat_map(|m| m.keys()) {
            // A package name, never a path out of node_modules.
            if name.split('/').any(|part| part.is_empty() || part == "..") {
                continue;
            }
            let found = std::iter::once(pkg.join("node_modules"))
                .chain(
                    pkg.ancestors()
                        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
                        .map(Path::to_path_buf),
                )
                .map(|nm| nm.join(name))
                .find(|d| d.join("package.json").is_file())
                .and_then(|d| std::fs::canonicalize(d).ok());
            out.extend(found.filter(|d| !out.contains(d)));
        }
    }
    out
}

/// An ELF executable: one file, needing only the system's libraries.
fn is_native(file: &Path) -> bool {
    use std::io::Read as _;
    let mut magic = [0u8; 4];
    std::fs::File::open(file)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An npm install as `npm install --prefix` leaves it: a `.bin` link into the package, a
    /// platform package beside it, and secrets beside the prefix.
    #[test]
    fn only_the_harness_package_and_its_platform_package_are_bound() {
        let dir = leopold_tests::temp_tree(&[
            (
                "node_modules/@openai/codex/package.json",
                r#"{"name":"@openai/codex","optionalDependencies":{"@openai/codex-linux-x64":"1","@openai/codex-darwin-arm64":"1","../../evil":"1"}}"#,
            ),
            (
                "node_modules/@openai/codex/bin/codex.js",
                "#!/usr/bin/env node\n",
            ),
            ("node_modules/@openai/codex-linux-x64/package.json", "{}"),
            (".env", "SECRET=1"),
        ]);
        let nm = dir.path().join("node_modules");
        let pkg = nm.join("@openai/codex");
        let platform = nm.join("@openai/codex-linux-x64");
        std::fs::create_dir_all(nm.join(".bin")).unwrap();
        std::os::unix::fs::symlink("../@openai/codex/bin/codex.js", nm.join(".bin/codex")).unwrap();

        let got = installed_files(&nm.join(".bin/codex")).unwrap();
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert_eq!(got.ro, [canon(&pkg), canon(&platform)]);
        assert_eq!(
            got.links,
            [(
                PathBuf::from("../@openai/codex/bin/codex.js"),
                nm.join(".bin/codex")
            )]
        );

        // A native binary alone is bound as the one file; a bare script is refused.
        std::fs::copy("/usr/bin/true", dir.path().join("claude")).unwrap();
        let got = installed_files(&dir.path().join("claude")).unwrap();
        assert_eq!(got.ro, [canon(&dir.path().join("claude"))]);
        std::fs::write(dir.path().join("script"), "#!/bin/sh\n").unwrap();
        let e = format!(
            "{:#}",
            installed_files(&dir.path().join("script")).unwrap_err()
        );
        assert!(
            e.contains("outside an npm package") && e.contains("--no-contain"),
            "{e}"
        );
    }
}
