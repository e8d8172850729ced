//! What one box holds, planned from the run's [`Launch`]: the binds, the environment, the
//! credentials' placeholders. The harness's part comes in as [`Needs`], told by its wing
//! (`crate::harness`): the box itself names no harness.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{installed_files, relay, BoxSpec, Credentials, Endpoint, Launch, EVENTS_SOCKET_ENV};

/// Test-only knobs, like the other `__LEOPOLD_*` variables: extra variables passed into the box
/// (comma-separated names) and extra read-only and read-write paths (colon-separated), so the
/// test kit can hand the fake worker its script and a place for its record.
const TEST_PASS_ENV: &str = "__LEOPOLD_BOX_PASS_ENV";
const TEST_RO: &str = "__LEOPOLD_BOX_RO";
const TEST_RW: &str = "__LEOPOLD_BOX_RW";

/// What a harness's worker needs in the box, told by its wing.
#[derive(Debug)]
pub struct Needs {
    /// Variables passed in from the supervisor's environment, each by its name (its
    /// credentials, endpoint, model choice and switches). Never a prefix: `ANTHROPIC_*` let any
    /// variable of that name in, secrets included (issue #22).
    pub pass: Vec<&'static str>,
    /// Of those and of `extra`, the ones that carry a model key: the box gets a placeholder
    /// ([`super::model_relay`]).
    pub keys: Vec<String>,
    /// Passed and kept out like `keys` (a Codex provider's `env_key`).
    pub extra: Vec<String>,
    /// Set in the box, over anything passed.
    pub set: Vec<(OsString, OsString)>,
    /// Login files, copied into the box with their secrets as placeholders.
    pub logins: Vec<Login>,
    /// The model endpoint, the box's one network destination.
    pub endpoint: Endpoint,
    /// What to do when the endpoint refuses the harness: said in the run's cause.
    pub advice: super::Advice,
}

/// A login file the harness reads in the box.
#[derive(Debug)]
pub struct Login {
    /// The user's file, only ever read.
    pub from: PathBuf,
    /// Where the harness looks for it in the box (in the scratch).
    pub inside: PathBuf,
    /// Its secret fields, by JSON pointer.
    pub secrets: &'static [&'static str],
}

/// The base URL a harness in the box is given for a remote endpoint: the relay's loopback port,
/// in plain HTTP, the endpoint's path kept ([`super::model_relay`]).
pub fn relay_base(path: &str) -> String {
    format!("http://127.0.0.1:{}{path}", super::MODEL_PORT)
}

/// Whether `name` passes into the box: the basics, the harness's own, and the extra ones.
fn passes(name: &str, needs: &Needs, knob_names: &[String]) -> bool {
    const BASIC: &[&str] = &[
        "PATH",
        "TERM",
        "LANG",
        "LANGUAGE",
        "TZ",
        "USER",
        "LOGNAME",
        "COLORTERM",
        "NO_COLOR",
    ];
    BASIC.contains(&name)
        || name.starts_with("LC_")
        || needs.pass.contains(&name)
        || needs.extra.iter().chain(knob_names).any(|e| e == name)
}

/// The box's copy of the run's state file, in its socket directory: what its guard reads as
/// `ACTIVE.json`.
const BOX_STATE: &str = "state.json";

/// Fills a [`BoxSpec`] for a run: what is bound, the environment, the credentials, the
/// endpoint.
pub fn plan_spec(
    l: &Launch<'_>,
    leopold: &Path,
    scratch: PathBuf,
    sock_dir: PathBuf,
    programs: Vec<PathBuf>,
) -> anyhow::Result<BoxSpec> {
    let mut credentials = Credentials::default();
    // The project is not in the box, only its `.leopold/` (what the guard reads: ACTIVE.json, the
    // run's ref map; the flow file comes in through `l.ro`). A read-only bind is not enough: a
    // unix socket anywhere in it (a dev server's, a database's, an IDE's) stays connectable,
    // since connect(2) needs no write access to the mount (seen: the persona reached a listener
    // outside the box through one), and the persona needs none of the project's files.
    // Of `.leopold/persona/` the box shows only this run: an empty folder over it hides earlier
    // runs' records (transcripts, scratch folders), the project's event log and the state of
    // the runs beside this one; the run's own state file is bound at its ACTIVE.json, where the
    // guard reads it, and its own directory back, read-only, its scratch read-write. The state
    // file is bound as it is at launch, which already holds all the guard reads (`active`,
    // `flow`, `flow_path`, `browser`: docs/security.md#state-when-the-guard-judges-at-all).
    // What is bound is a copy in the run's socket directory, which nothing replaces: the run
    // rewrites its state file by rename once the worker is spawned (the worker's pid, for
    // recovery), which can land while bwrap is still making its mounts, and a bind whose source
    // was just replaced fails the box ("Unable to find … (deleted) in mount table": seen with
    // eight runs starting at once).
    let dot_leopold = l.project.join(".leopold");
    let paths = crate::state::PersonaPaths::new(l.project);
    let runs = paths.runs();
    let own_dir = scratch
        .parent()
        .filter(|d| d.parent() == Some(runs.as_path()));
    let hide: Vec<PathBuf> = own_dir.map(|_| paths.dir.clone()).into_iter().collect();
    let mut ro_late: Vec<(PathBuf, PathBuf)> = Vec::new();
    if let Some(d) = own_dir {
        let (state, copy) = (paths.state_of(l.run_id), sock_dir.join(BOX_STATE));
        std::fs::copy(&state, &copy).with_context(|| {
            format!(
                "cannot copy the run's state {} for its box to {}",
                state.display(),
                copy.display()
            )
        })?;
        ro_late.push((copy, paths.active()));
        ro_late.push((d.to_path_buf(), d.to_path_buf()));
    }
    let mut ro = vec![dot_leopold, leopold.to_path_buf()];
    if let Ok(c) = std::fs::canonicalize(leopold) {
        ro.push(c);
    }
    let mut installed = installed_files(l.harness_bin)?;
    if let Some(node) = crate::os::find_executable(Path::new("node")) {
        // `#!/usr/bin/env node` harnesses: a node outside /usr (nvm, a tarball) comes in too, the
        // executable alone (its prefix may be the home folder).
        if std::fs::canonicalize(&node).is_ok_and(|c| !c.starts_with("/usr")) {
            if let Ok(n) = installed_files(&node) {
                installed.ro.extend(n.ro);
                installed.links.extend(n.links);
            }
        }
    }
    ro.extend(installed.ro);
    ro.extend(programs);
    ro.extend(l.ro.iter().cloned());
    let mut rw = l.rw.clone();
    let split = |var: &str| -> Vec<PathBuf> {
        crate::knobs::var_os(var)
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| p.is_absolute())
                    .collect()
            })
            .unwrap_or_default()
    };
    ro.extend(split(TEST_RO));
    rw.extend(split(TEST_RW));

    let knob_names: Vec<String> = crate::knobs::var(TEST_PASS_ENV)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let needs = &l.needs;
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| passes(k, needs, &knob_names)))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env.push(("HOME".into(), scratch.clone().into_os_string()));
    env.push(("TMPDIR".into(), "/tmp".into()));
    env.push((crate::os::RUN_ID_ENV.into(), l.run_id.into()));
    env.push((
        EVENTS_SOCKET_ENV.into(),
        sock_dir.join(relay::EVENTS_SOCK).into_os_string(),
    ));
    for (k, v) in &needs.set {
        env.retain(|(n, _)| n != k);
        env.push((k.clone(), v.clone()));
    }
    // The key is not in the box: a placeholder stands for it, and the relay puts it back.
    for (k, v) in env.iter_mut() {
        let name = k.to_string_lossy().into_owned();
        let is_key = needs.keys.iter().chain(&needs.extra).any(|n| *n == name);
        if is_key && !v.is_empty() {
            *v = credentials
                .placeholder(&name, &v.to_string_lossy(), l.run_id)
                .into();
        }
    }
    for login in &needs.logins {
        if login.from.is_file() {
            placeholder_login(login, &mut credentials, l.run_id)?;
        }
    }
    // A link under a bound folder (a harness in /usr) is there already.
    let links = installed
        .links
        .into_iter()
        .filter(|(_, at)| !at.starts_with("/usr") && !ro.iter().any(|d| at.starts_with(d)))
        .collect();
    Ok(BoxSpec {
        scratch,
        cwd: l.project.to_path_buf(),
        ro,
        hide,
        ro_late,
        rw,
        sock_dir,
        env,
        endpoint: needs.endpoint.clone(),
        credentials,
        scratch_size: l.limits.scratch,
        links,
    })
}

/// Writes the box's copy of a login file, each secret field a placeholder, mode 0600 (in the
/// scratch, never the user's folder, which is not in the box). The user's file is only read.
fn placeholder_login(
    login: &Login,
    credentials: &mut Credentials,
    run_id: &str,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&login.from)
        .with_context(|| format!("cannot read the login file {}", login.from.display()))?;
    let mut v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{} is not JSON ({e})\n(hint: log in with the harness again, or give its key in its variable)",
            login.from.display()
        )
    })?;
    let file = login
        .from
        .file_name()
        .map_or_else(|| "login".to_owned(), |f| f.to_string_lossy().into_owned());
    for ptr in login.secrets {
        if let Some(serde_json::Value::String(secret)) = v.pointer_mut(ptr) {
            if !secret.is_empty() {
                *secret = credentials.placeholder(&format!("{file}{ptr}"), secret, run_id);
            }
        }
    }
    if let Some(dir) = login.inside.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut bytes = serde_json::to_vec_pretty(&v)?;
    bytes.push(b'\n');
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&login.inside)
        .and_then(|mut f| f.write_all(&bytes))
        .with_context(|| format!("cannot write {}", login.inside.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harness;
    use crate::sandbox::{command, limits};

    /// The needs of `kind`'s wing (no configuration, no login), with `extra` names.
    fn needs(kind: Harness, extra: &[&str]) -> Needs {
        let dir = tempfile::tempdir().unwrap();
        let mut n = crate::harness::box_needs(kind, dir.path(), dir.path(), None).unwrap();
        n.extra.extend(extra.iter().map(|e| (*e).to_owned()));
        n
    }

    #[test]
    fn only_the_harness_variables_pass() {
        let pass =
            |kind: Harness, name: &str, extra: &[&str]| passes(name, &needs(kind, extra), &[]);
        assert!(pass(Harness::Claude, "ANTHROPIC_API_KEY", &[]));
        assert!(!pass(Harness::Claude, "OPENAI_API_KEY", &[]));
        assert!(pass(Harness::Codex, "OPENAI_API_KEY", &[]));
        for secret in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "SSH_AUTH_SOCK",
            "HTTPS_PROXY",
            "LD_PRELOAD",
        ] {
            assert!(!pass(Harness::Claude, secret, &[]), "{secret}");
            assert!(!pass(Harness::Codex, secret, &[]), "{secret}");
        }
        assert!(pass(Harness::Codex, "MOCK_API_KEY", &["MOCK_API_KEY"]));
        // By name, not by prefix: the harness's namespace holds secrets too.
        for other in [
            "ANTHROPIC_SECRET_OTHER",
            "CLAUDE_CODE_OAUTH_TOKEN_OF_SOMEONE",
            "DISABLE_ANYTHING",
        ] {
            assert!(!pass(Harness::Claude, other, &[]), "{other}");
        }
        assert!(pass(
            Harness::Claude,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            &[]
        ));
        assert!(!pass(Harness::Codex, "OPENAI_SECRET_OTHER", &[]));
        assert!(!pass(Harness::Codex, "CODEX_HOME", &[]));
    }

    #[test]
    fn the_project_is_not_bound_only_its_dot_leopold_with_all_but_this_run_hidden() {
        let (dir, project) = crate::test_support::temp_path("p");
        let run_dir = project.join(".leopold/persona/runs/r1");
        std::fs::create_dir_all(run_dir.join("scratch")).unwrap();
        std::fs::create_dir_all(project.join(".leopold/persona/active")).unwrap();
        std::fs::write(project.join(".leopold/persona/active/r1.json"), "{}").unwrap();
        let sock_dir = dir.path().join("s");
        std::fs::create_dir_all(&sock_dir).unwrap();
        let needs = crate::harness::box_needs(
            crate::harness::Harness::Claude,
            &run_dir.join("scratch"),
            dir.path(),
            None,
        )
        .unwrap();
        let launch = Launch {
            bwrap: Path::new("/usr/bin/bwrap"),
            project: &project,
            harness_bin: Path::new("/usr/bin/true"),
            needs,
            run_id: "r1",
            run_dir: &crate::run_dir::RunDir::new(&run_dir),
            events_file: dir.path().join("events.jsonl"),
            programs: vec![],
            ro: vec![],
            rw: vec![],
            limits: limits::Limits {
                scratch: Some(64 << 20),
                ..limits::Limits::default()
            },
            tripwire: limits::Tripwire::default(),
            model_alarm: limits::Tripwire::default(),
        };
        let spec = plan_spec(
            &launch,
            Path::new("/usr/bin/true"),
            run_dir.join("scratch"),
            sock_dir.clone(),
            vec![],
        )
        .unwrap();
        assert!(!spec.ro.iter().any(|p| p == &project), "{:?}", spec.ro);
        assert!(spec.ro.contains(&project.join(".leopold")));
        let persona = project.join(".leopold/persona");
        assert_eq!(spec.hide, std::slice::from_ref(&persona));
        assert_eq!(
            spec.ro_late,
            [
                (sock_dir.join(BOX_STATE), persona.join("ACTIVE.json")),
                (run_dir.clone(), run_dir.clone())
            ]
        );
        // A copy of the state as it is now, which the run's later rewrites of its own state
        // file (by rename) leave in place under the box's bind.
        assert_eq!(std::fs::read(sock_dir.join(BOX_STATE)).unwrap(), b"{}");
        let cmd = command(
            Path::new("/usr/bin/bwrap"),
            Path::new("/usr/bin/true"),
            &spec,
            Path::new("/bin/true"),
            &[],
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |needle: &[&str]| {
            args.windows(needle.len())
                .position(|w| w == needle)
                .unwrap_or_else(|| panic!("{needle:?} not in {args:?}"))
        };
        let shown = |p: &Path| p.display().to_string();
        let (persona_s, rd) = (shown(&persona), shown(&run_dir));
        let (own, active) = (
            shown(&sock_dir.join(BOX_STATE)),
            shown(&persona.join("ACTIVE.json")),
        );
        // The tmpfs over the project's runs and states comes before the run's own state and
        // directory are bound back, and is read-only once every mount under it is made.
        assert!(at(&["--tmpfs", &persona_s]) < at(&["--ro-bind", &own, &active]));
        assert!(at(&["--tmpfs", &persona_s]) < at(&["--ro-bind", &rd, &rd]));
        assert!(at(&["--remount-ro", &persona_s]) > at(&["--ro-bind", &rd, &rd]));
        assert!(at(&["--remount-ro", "/"]) < at(&["--"]));
        // The scratch is a tmpfs of its size, seeded from the folder bound read-only elsewhere.
        let scratch = run_dir.join("scratch").display().to_string();
        assert!(at(&["--size", "67108864", "--tmpfs", &scratch]) > at(&["--ro-bind", &rd, &rd]));
        assert!(at(&["--ro-bind", &scratch, limits::SEED]) > 0);
        assert!(
            !args.windows(3).any(|w| w[0] == "--bind" && w[1] == scratch),
            "the scratch folder itself is not writable in the box: {args:?}"
        );
    }
}
