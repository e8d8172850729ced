//! `leopold doctor`: per harness, which bound is actually in force, and what to fix.
//!
//! Each finding is `ok`, `note` (worth knowing, nothing wrong) or `problem` (with its fix); any
//! problem makes the exit code 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::DoctorArgs;
use crate::exit::RunExit;
use crate::output::outln;
use crate::project::shown;
use crate::state::{self, PersonaPaths};

use crate::harness::{self, Harness};

pub use crate::harness::doctor::{finding as f, Finding, Status};

/// `<bin> --version`, bounded ([`crate::process::version_output`]); the first line it printed,
/// whatever its exit status.
pub fn harness_version(bin: &Path) -> Option<String> {
    use crate::process::{version_output, version_timeout, ProbeError};
    let text = match version_output(bin, version_timeout()) {
        Ok(text) | Err(ProbeError::Failed { output: text, .. }) => text,
        Err(_) => return None,
    };
    text.lines()
        .next()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
}

/// The shared libraries mapped into a process, from the text of its `/proc/<pid>/maps`: none for
/// a static build.
pub fn shared_libraries(maps: &str) -> Vec<&str> {
    let mut libs: Vec<&str> = maps
        .lines()
        // The path is the rest of the line from its first '/': no field before it has one, and
        // a path may hold spaces.
        .filter_map(|line| line.find('/').map(|at| &line[at..]))
        .filter_map(|path| path.rsplit('/').next())
        .filter(|name| name.ends_with(".so") || name.contains(".so."))
        .collect();
    libs.sort_unstable();
    libs.dedup();
    libs
}

/// Whether this binary, the one the wiring runs as the guard, starts without the dynamic loader:
/// the guard is started before every browser tool call, and a dynamic start costs it about 2x.
fn linking_finding() -> Option<Finding> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let libs = shared_libraries(&maps);
    Some(if libs.is_empty() {
        f(
            "leopold",
            "linking",
            Status::Ok,
            "leopold is statically linked: `leopold persona guard` starts without the dynamic loader"
                .into(),
            None,
        )
    } else {
        f(
            "leopold",
            "linking",
            Status::Note,
            format!(
                "leopold is dynamically linked ({}): `leopold persona guard`, started before every browser tool call, takes about twice as long to start as a static build",
                libs.join(", ")
            ),
            Some("rebuild from the repository root with `cargo build --release` (its .cargo/config.toml links leopold statically), without LEOPOLD_DYNAMIC_LINK or another RUSTC_WORKSPACE_WRAPPER, with the static C library installed (libc6-dev, glibc-static)".into()),
        )
    })
}

/// How long `--online` waits for an endpoint's answer.
const ONLINE_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

pub fn findings(project: &Path, online: bool) -> anyhow::Result<Vec<Finding>> {
    let paths = PersonaPaths::new(project);
    let ctx = super::harness_context(project)?;
    let mut out = Vec::new();
    out.extend(linking_finding());
    out.push(box_finding());
    out.extend(loosened_findings(project, &state::active_runs(&paths)));

    // The locks and the runs' state files: each run live or crashed.
    let runs = state::active_runs(&paths);
    out.extend(run_findings(project, state::held_alone(&paths)?, &runs));

    for kind in Harness::ALL {
        let scope = kind.as_str();
        // Binary and version.
        let bin = crate::os::find_executable(Path::new(kind.as_str()));
        let version = bin.as_deref().and_then(harness_version);
        match (&bin, &version) {
            (Some(b), Some(v)) => out.push(f(
                scope,
                "binary",
                Status::Ok,
                format!("{} ({v})", b.display()),
                None,
            )),
            (Some(b), None) => out.push(f(
                scope,
                "binary",
                Status::Problem,
                format!("{} found but `--version` failed", b.display()),
                Some(format!("check that `{} --version` runs", b.display())),
            )),
            (None, _) => out.push(f(
                scope,
                "binary",
                Status::Note,
                format!(
                    "`{}` not on PATH (pass --harness-bin to `persona run` if it lives elsewhere)",
                    kind.as_str()
                ),
                None,
            )),
        }
        // Its credentials, and with --online whether its endpoint takes them.
        let (creds, key) = harness::doctor::credentials(kind, &ctx, bin.is_some());
        out.push(creds);
        if online {
            out.push(online_finding(kind, &ctx, key.as_ref()));
        }
        // Wired now?
        let target = ctx.settings_path(kind);
        let wired = harness::wired_handlers(kind, &ctx);
        match wired {
            Ok(h) if h.is_empty() => out.push(f(
                scope,
                "wired",
                Status::Ok,
                harness::doctor::not_wired_note(kind, &target),
                None,
            )),
            Ok(h) => {
                // Say what the file holds, as `persona wire` said it when it wrote it: the
                // context asks for onFailure, so a handler that is not `current` lacks it (or
                // names another leopold).
                let as_now = crate::harness::wired_handlers(kind, &ctx)
                    .is_ok_and(|hs| hs.iter().all(|h| h.current));
                let how = harness::doctor::wired_how(kind, as_now);
                let msg = format!(
                    "guard wired in {} ({}{how})",
                    shown(&target),
                    crate::output::count(h.len() as u64, "handler"),
                );
                // A Codex run wires its own copy, never the user's file: tagged handlers there
                // are the user's (by hand) or an older version's leftovers, run or no run.
                // A live run's own wiring is the file its state names (a `--no-contain` Claude
                // run); a boxed run wires no file of the user's.
                let the_runs = harness::wires_the_users_file(kind)
                    && runs.iter().any(|r| {
                        r.live
                            && r.state
                                .as_ref()
                                .is_ok_and(|st| st.wiring.iter().any(|w| w.file == target))
                    });
                if the_runs {
                    out.push(f(scope, "wired", Status::Ok, msg, None));
                } else if crate::harness::wired_by_hand(kind, &ctx) {
                    out.push(f(
                        scope,
                        "wired",
                        Status::Note,
                        format!("{msg}, wired by hand (`persona wire`): inert until a persona run is active; runs and `persona recover` leave it in place"),
                        Some(format!("to remove it: leopold persona unwire --harness {kind}{}", project_arg(project))),
                    ));
                } else {
                    out.push(f(
                        scope,
                        "wired",
                        Status::Problem,
                        format!("{msg}, but no run is active and `persona wire` did not make it: orphaned wiring (a crashed run's leftovers)"),
                        Some(format!(
                            "leopold persona recover{}",
                            project_arg(project)
                        )),
                    ));
                }
            }
            Err(e) => out.push(f(
                scope,
                "wired",
                Status::Problem,
                format!("cannot read {}: {e:#}", shown(&target)),
                Some(format!("fix or move aside {}", shown(&target))),
            )),
        }
        out.extend(harness::doctor::checks(
            kind,
            &ctx,
            project,
            version.as_deref(),
        ));
    }
    out.extend(browser_findings(project));
    Ok(out)
}

/// `--online`: the endpoint's answer to `key`, asking for its model list.
fn online_finding(
    kind: Harness,
    ctx: &harness::Context,
    key: Option<&harness::doctor::Key>,
) -> Finding {
    let scope = kind.as_str();
    let Some(key) = key else {
        return f(
            scope,
            "endpoint",
            Status::Note,
            "not checked: no key variable to try (a login file's token is the harness's own to use)".into(),
            None,
        );
    };
    let advice = harness::model_advice(kind, &ctx.codex_home);
    let (endpoint, path) = match crate::sandbox::Endpoint::parse(&key.base) {
        Ok(e) => e,
        // An http endpoint off this machine: the box refuses it, and so does the probe.
        Err(e) => {
            let r = crate::output::Rendered::from_text(&format!("{e:#}"));
            return f(
                scope,
                "endpoint",
                Status::Problem,
                r.message,
                r.hints.into_iter().next(),
            );
        }
    };
    let host = endpoint.describe();
    let path = format!("{path}{}", key.models_path);
    match crate::sandbox::probe_status(&endpoint, &path, &key.headers, ONLINE_WITHIN) {
        Ok(s) if (200..300).contains(&s) => f(
            scope,
            "endpoint",
            Status::Ok,
            format!("the model endpoint {host} takes the key in {} ({s})", key.name),
            None,
        ),
        Ok(s @ (401 | 403)) => f(
            scope,
            "endpoint",
            Status::Problem,
            format!("the model endpoint {host} refused the key in {} ({s}): a run would stop at once as model_failed", key.name),
            Some(advice.credentials),
        ),
        Ok(404) => f(
            scope,
            "endpoint",
            Status::Problem,
            format!("the model endpoint {host} answered 404 to its model list: not the API the harness speaks"),
            Some(format!("check the base URL; {}", advice.model)),
        ),
        Ok(s) => f(
            scope,
            "endpoint",
            Status::Note,
            format!("the model endpoint {host} answered {s} (busy or failing: harnesses retry this)"),
            None,
        ),
        Err(e) => f(
            scope,
            "endpoint",
            Status::Problem,
            format!(
                "cannot reach the model endpoint {host}: {}",
                crate::redact::strip_urls(&format!("{e:#}"))
            ),
            Some(advice.endpoint),
        ),
    }
}

/// Whether the provisioned browser is there and starts: Chromium and Playwright MCP, found as
/// `persona run` finds them (crate::browser::find_bins), each asked its `--version`. Missing,
/// it is a problem when a flow here provisions it (`browser = "playwright"`), else a note (a
/// run may bring its own with --mcp-config).
fn browser_findings(project: &Path) -> Vec<Finding> {
    let wanted = std::fs::read_dir(project.join("flows"))
        .map(|d| {
            d.filter_map(Result::ok).any(|e| {
                leopold_flows::Flow::load(&e.path()).is_ok_and(|fl| {
                    fl.browser == Some(leopold_flows::browser::BrowserKind::Playwright)
                })
            })
        })
        .unwrap_or(false);
    let missing = if wanted {
        Status::Problem
    } else {
        Status::Note
    };
    let bins = match crate::browser::find_bins(None, None) {
        Ok(b) => b,
        Err(e) => {
            let r = crate::output::Rendered::from_text(&format!("{e:#}"));
            return vec![f(
                "browser",
                "installed",
                missing,
                format!("{}: `--browser playwright` and flows with `browser = \"playwright\"` cannot run", r.message),
                Some("run ./scripts/install-browser.sh, or pass --chromium PATH / --playwright-mcp PATH to `persona run`".into()),
            )];
        }
    };
    [
        ("chromium", &bins.chromium),
        ("playwright_mcp", &bins.playwright_mcp),
    ]
    .into_iter()
    .map(|(check, bin)| {
        // Playwright MCP's `--version` loads its whole Node bundle, about a second of CPU: past
        // the harnesses' 5 s on a loaded CI machine (seen with a dozen processes runnable on two
        // cores). A doctor is no run waiting to start: four times that bound.
        let within = crate::process::version_timeout() * 4;
        match crate::process::version_output(bin, within) {
            Ok(v) => f(
                "browser",
                check,
                Status::Ok,
                format!(
                    "{} starts ({})",
                    bin.display(),
                    v.lines().next().unwrap_or("").trim()
                ),
                None,
            ),
            Err(e) => f(
                "browser",
                check,
                Status::Problem,
                format!("{} does not start: {e}", bin.display()),
                Some("run ./scripts/install-browser.sh again".into()),
            ),
        }
    })
    .collect()
}

/// ` --project DIR` when the project is not where the user stands (a command to paste).
fn project_arg(project: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    let here = cwd
        .as_deref()
        .and_then(|c| crate::project::discover(c).ok());
    let here = here.and_then(|h| std::fs::canonicalize(h).ok());
    if here.as_deref() == Some(project) {
        String::new()
    } else {
        format!(" --project {}", shown(project))
    }
}

pub fn doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let project = state::resolve_project(args.project.project.as_deref())?;
    let all = findings(&project, args.online)?;
    let bad = all.iter().any(|x| x.status == Status::Problem);
    if args.json {
        let v = serde_json::json!({"ok": !bad, "project": project, "findings": all});
        outln!("{v}");
    } else {
        for x in &all {
            let mark = match x.status {
                Status::Ok => "ok     ",
                Status::Note => "note   ",
                Status::Problem => "PROBLEM",
            };
            outln!("{mark} {:<7} {:<12} {}", x.scope, x.check, x.message);
            if let Some(fix) = &x.fix {
                outln!("        fix: {fix}");
            }
        }
    }
    Ok(ExitCode::from(if bad {
        RunExit::VIOLATIONS
    } else {
        RunExit::CLEAN
    }))
}

/// What loosens a bound that `doctor` can see before a run: a flow (in the project's `flows/`,
/// or an active run's) that opts into dangerous browser tools. `--no-contain` and harness
/// arguments after `--` belong to one run, which says them on every run; the line says so.
fn loosened_findings(project: &Path, runs: &[state::ActiveRun]) -> Vec<Finding> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(project.join("flows"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .collect()
        })
        .unwrap_or_default();
    files.extend(
        runs.iter()
            .filter_map(|r| r.state.as_ref().ok())
            .map(|st| st.flow_path.clone()),
    );
    files.sort();
    files.dedup();
    let mut out: Vec<Finding> = files
        .iter()
        // A flow that does not parse is `flow check`'s to report: no run starts with it.
        .filter_map(|p| leopold_flows::Flow::load(p).ok().map(|fl| (p, fl)))
        .flat_map(|(p, fl)| {
            super::run::plan::loosened(false, &fl, &[])
                .into_iter()
                .map(move |w| {
                    f(
                        "project",
                        "loosened",
                        Status::Note,
                        format!("{}: {w}", shown(p)),
                        Some(format!(
                            "remove `allow_tools` from {} unless the persona needs those tools",
                            shown(p)
                        )),
                    )
                })
        })
        .collect();
    if out.is_empty() {
        out.push(f(
            "project",
            "loosened",
            Status::Ok,
            "no flow here opts into a dangerous browser tool (`allow_tools`); `--no-contain` and harness arguments after `--` loosen a run's bounds, and the run says so".into(),
            None,
        ));
    }
    out
}

/// Whether `persona run` can build the box (docs/security.md#the-box).
fn box_finding() -> Finding {
    match crate::sandbox::probe() {
        crate::sandbox::Availability::Ready { bwrap, version } => f(
            "leopold",
            "box",
            Status::Ok,
            format!(
                "the worker runs in a box: {} ({version}) builds PID, network and mount namespaces here",
                bwrap.display()
            ),
            None,
        ),
        crate::sandbox::Availability::Missing(why) => f(
            "leopold",
            "box",
            Status::Problem,
            format!("persona run cannot box the worker and refuses to run without --no-contain: {why}"),
            Some("install bubblewrap (`apt-get install bubblewrap`) on Linux with unprivileged namespaces allowed; or accept running unboxed with `persona run --no-contain`".into()),
        ),
    }
}

/// `project/lock`: which runs are live (and whether one holds the project alone);
/// `project/stale_active`: each state file whose run crashed, or that cannot be read.
fn run_findings(
    project: &Path,
    alone: Option<Option<state::LockHolder>>,
    runs: &[state::ActiveRun],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let live: Vec<String> = runs
        .iter()
        .filter(|r| r.live)
        .map(state::ActiveRun::describe)
        .collect();
    let holder = |h: &Option<state::LockHolder>| {
        h.as_ref()
            .map_or_else(|| "holder unknown".into(), ToString::to_string)
    };
    let message = match (&alone, live.is_empty()) {
        (None, true) => None,
        (Some(h), true) => Some(format!(
            "a persona run holds the project alone: {}",
            holder(h)
        )),
        (alone, false) => Some(format!(
            "{} active: {}{}",
            crate::output::count(live.len() as u64, "persona run"),
            live.join("; "),
            alone.as_ref().map_or_else(String::new, |h| format!(
                " (holding the project alone, a --no-contain run: {})",
                holder(h)
            ))
        )),
    };
    out.push(match message {
        None => f(
            "project",
            "lock",
            Status::Ok,
            "no persona run is active".into(),
            None,
        ),
        Some(m) => f("project", "lock", Status::Note, m, None),
    });
    for r in runs.iter().filter(|r| !r.live) {
        let why = match &r.state {
            Ok(_) => format!(
                "{} names {}, whose own lock no process holds: a run crashed",
                shown(&r.slot.file),
                r.describe()
            ),
            Err(_) => r.describe(),
        };
        out.push(f(
            "project",
            "stale_active",
            Status::Problem,
            why,
            Some(format!("leopold persona recover{}", project_arg(project))),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::parse_version;

    #[test]
    fn versions_parse_from_version_lines() {
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some((2, 1, 332)));
        assert_eq!(parse_version("codex-cli 0.171.0"), Some((0, 171, 0)));
        assert_eq!(parse_version("unknown"), None);
    }

    #[test]
    fn shared_libraries_are_read_from_proc_maps() {
        let dynamic = "\
00400000-00401000 r--p 00000000 fe:00 12 /work/target/release/leopold
7f00-7f01 r-xp 00026000 fe:00 34 /usr/lib/x86_64-linux-gnu/libc.so.6
7f02-7f03 r--p 00000000 fe:00 35 /opt/my libs/libgcc_s.so.1
7f04-7f05 rw-p 00003000 fe:00 35 /opt/my libs/libgcc_s.so.1
7f06-7f07 r--p 00000000 fe:00 36 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7f08-7f09 rw-p 00000000 00:00 0
7ffd-7ffe rw-p 00000000 00:00 0 [stack]
7ffe-7fff r-xp 00000000 00:00 0 [vdso]
";
        assert_eq!(
            shared_libraries(dynamic),
            ["ld-linux-x86-64.so.2", "libc.so.6", "libgcc_s.so.1"]
        );
        let static_ = "\
00200000-0038f000 r--p 00000000 fe:00 12 /work/target/release/leopold
00771000-00777000 rw-p 00571000 fe:00 12 /work/target/release/leopold
7ffd-7ffe rw-p 00000000 00:00 0 [stack]
7ffe-7fff r-xp 00000000 00:00 0 [vdso]
";
        assert!(shared_libraries(static_).is_empty());
        // A project path that merely mentions ".so" is not a library.
        assert!(shared_libraries("1-2 r--p 0 fe:00 1 /srv/a.solr/leopold\n").is_empty());
    }
}
