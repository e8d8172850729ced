//! A run directory made self-contained and safe to upload (docs/reference.md#run-directory), by
//! the run itself and by `persona recover` for a run that crashed:
//! - it carries a copy of the flow the run ran ([`RunDir::FLOW`]), written when the run starts,
//!   so that `persona replay` and `persona report` need nothing outside it;
//! - `run.json`'s paths into the run directory are relative to it, so that it can move (a CI
//!   artifact downloaded elsewhere); ACTIVE.json keeps absolute ones, which the guard reads while
//!   the run lives;
//! - the provisioned browser's files (its profile: the app's cookies) and the box's scratch (the
//!   worker's HOME: the harness's transcripts, with full URLs) are removed when it ends, unless
//!   `--keep-scratch`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::run_dir::RunDir;
use crate::state::{self, ActiveState};

/// What a run kept with `--keep-scratch` says, on stderr when it starts and in its summary.
pub const KEPT: &str = "--keep-scratch: the run directory keeps the browser's profile (the app's cookies) and the worker's scratch (transcripts with full URLs): do not upload it";

/// Copies the flow file `flow` into the run directory. It waits on no disk: a copy a power loss
/// took is made again by recovery ([`has_flow`]).
///
/// # Errors
///
/// The flow cannot be read or the copy written; each names its file.
pub fn copy_flow(flow: &Path, run_dir: &RunDir) -> anyhow::Result<()> {
    let bytes = std::fs::read(flow).with_context(|| format!("cannot read {}", flow.display()))?;
    state::write_atomic_as(&run_dir.flow(), &bytes, state::Durability::Volatile)
}

/// Whether the run directory holds a copy of its flow that reads as a flow (one cut short by a
/// power loss does not).
pub fn has_flow(run_dir: &RunDir) -> bool {
    leopold_flows::Flow::load(&run_dir.flow()).is_ok()
}

/// `run.json` of the run `st` (ACTIVE.json's state), over: its paths into `run_dir` relative to
/// it; `flow_path` names the flow's copy when there is one, and `flow_source` the file it was
/// copied from, relative to `project` when inside it.
pub fn run_json(st: &ActiveState, run_dir: &RunDir, project: &Path) -> ActiveState {
    let inside = |p: &Path| match p.strip_prefix(run_dir.path()) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => p.to_path_buf(),
    };
    let mut fin = st.clone();
    fin.active = false;
    if run_dir.flow().is_file() {
        let source = st.flow_path.strip_prefix(project).unwrap_or(&st.flow_path);
        fin.flow_source = Some(source.to_path_buf());
        fin.flow_path = PathBuf::from(RunDir::FLOW);
    }
    fin.guard_settings = st.guard_settings.as_deref().map(inside);
    for w in &mut fin.wiring {
        w.file = inside(&w.file);
    }
    if let Some(b) = &mut fin.browser {
        b.ref_map = inside(&b.ref_map);
    }
    fin
}

/// Removes the browser's files and the box's scratch of a run that is over, once no process of
/// it is left, unless `keep` (`--keep-scratch`). The persona's own screenshots, which the report
/// shows, move to [`RunDir::SCREENSHOTS`] first. One warning for each folder left behind.
pub fn clear(run_dir: &RunDir, keep: bool) -> Vec<String> {
    host_only_logs(run_dir);
    if keep {
        return Vec::new();
    }
    keep_screenshots(run_dir);
    [run_dir.browser(), run_dir.scratch()]
        .into_iter()
        .filter(|d| !crate::sandbox::remove_whole(d))
        .map(|d| {
            format!(
                "cannot remove {}: the run directory is not safe to upload until it is gone",
                d.display()
            )
        })
        .collect()
}

/// The gateway's servers' stderr logs (`gateway-<server>.log`) with every URL as its host:
/// a server writes what it likes there (Playwright MCP names the page it failed on).
fn host_only_logs(run_dir: &RunDir) {
    let Ok(entries) = std::fs::read_dir(run_dir.path()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("gateway-") && name.ends_with(".log")) {
            continue;
        }
        let Ok(bytes) = std::fs::read(e.path()) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        if text.contains(':') {
            let hosts = crate::redact::strip_urls(&text);
            if hosts != text {
                let volatile = state::Durability::Volatile;
                let _ = state::write_atomic_as(&e.path(), hosts.as_bytes(), volatile);
            }
        }
    }
}

/// Moves the images in the browser's output folder (plain files, no link) to
/// [`RunDir::SCREENSHOTS`].
fn keep_screenshots(run_dir: &RunDir) {
    let Ok(entries) = std::fs::read_dir(run_dir.browser_output()) else {
        return;
    };
    let to = run_dir.screenshots();
    for e in entries.flatten() {
        let name = e.file_name();
        let image = Path::new(&name)
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| {
                ["png", "jpg", "jpeg", "webp"].contains(&x.to_ascii_lowercase().as_str())
            });
        if image && e.file_type().is_ok_and(|t| t.is_file()) && std::fs::create_dir_all(&to).is_ok()
        {
            let _ = std::fs::rename(e.path(), to.join(&name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leopold_guard::browser::BrowserState;
    use leopold_guard::{Harness, WiringEntry};

    #[test]
    fn run_json_points_into_the_run_directory_relatively() {
        let (_dir, project) = crate::test_support::temp_path("p");
        let run_dir = RunDir::new(project.join(".leopold/persona/runs/r1"));
        std::fs::create_dir_all(run_dir.path()).unwrap();
        let st = ActiveState {
            version: state::ACTIVE_VERSION,
            active: true,
            run_id: "r1".into(),
            flow: "checkout".into(),
            flow_path: project.join("flows/checkout.md"),
            flow_source: None,
            harness: Harness::Codex,
            supervisor_pid: 1,
            worker_pid: Some(2),
            started_at: state::now_rfc3339(),
            wiring: vec![WiringEntry {
                harness: Harness::Codex,
                file: run_dir.path().join("codex-home/config.toml"),
                tag: "t".into(),
            }],
            guard_settings: Some(run_dir.guard_settings()),
            browser: Some(BrowserState {
                kind: "playwright".into(),
                server: "browser".into(),
                ref_map: run_dir.browser().join("refs.json"),
            }),
            suite: None,
            keep_scratch: false,
            end: None,
        };
        // No copy (a run that failed before it was written): the flow's path stays as it was.
        let fin = run_json(&st, &run_dir, &project);
        assert_eq!(fin.flow_path, st.flow_path);
        assert_eq!(fin.flow_source, None);
        std::fs::write(run_dir.flow(), "x").unwrap();
        let fin = run_json(&st, &run_dir, &project);
        assert!(!fin.active);
        assert_eq!(fin.flow_path, Path::new("flow.md"));
        assert_eq!(
            fin.flow_source.as_deref(),
            Some(Path::new("flows/checkout.md"))
        );
        assert_eq!(fin.wiring[0].file, Path::new("codex-home/config.toml"));
        assert_eq!(
            fin.guard_settings.as_deref(),
            Some(Path::new("guard-settings.json"))
        );
        assert_eq!(fin.browser.unwrap().ref_map, Path::new("browser/refs.json"));
        // A file of the user's stays absolute.
        let mut users = st.clone();
        users.wiring[0].file = project.join(".claude/settings.json");
        assert_eq!(
            run_json(&users, &run_dir, &project).wiring[0].file,
            users.wiring[0].file
        );
    }

    #[test]
    fn clearing_keeps_the_screenshots_and_nothing_else_of_the_browser_or_scratch() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = RunDir::new(dir.path().join("r1"));
        let profile = run_dir.browser().join("profile/Default");
        std::fs::create_dir_all(&profile).unwrap();
        std::fs::write(profile.join("Cookies"), "session=s3cret").unwrap();
        std::fs::create_dir_all(run_dir.browser_output()).unwrap();
        std::fs::write(run_dir.browser_output().join("cart.png"), "png").unwrap();
        std::fs::write(run_dir.browser_output().join("page.yml"), "http://x/").unwrap();
        let outside = dir.path().join("mine.png");
        std::fs::write(&outside, "mine").unwrap();
        std::os::unix::fs::symlink(&outside, run_dir.browser_output().join("link.png")).unwrap();
        let home = run_dir.scratch().join("home/.claude/projects");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("t.jsonl"), "https://x/?token=1").unwrap();
        // A folder its writer closed to everyone.
        use std::os::unix::fs::PermissionsExt as _;
        let closed = run_dir.scratch().join("home");
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();

        let log = run_dir.gateway_log("browser");
        std::fs::write(&log, "Error: page https://app.test/a?token=t1 crashed\n").unwrap();
        assert_eq!(clear(&run_dir, true), Vec::<String>::new());
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "Error: page <app.test> crashed\n",
            "a server's log is host-only, kept or not"
        );
        assert!(profile.join("Cookies").exists(), "--keep-scratch keeps it");
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();

        assert_eq!(clear(&run_dir, false), Vec::<String>::new());
        assert!(!run_dir.browser().exists());
        assert!(!run_dir.scratch().exists());
        let kept: Vec<_> = std::fs::read_dir(run_dir.screenshots())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(kept, ["cart.png"]);
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine");
    }
}
