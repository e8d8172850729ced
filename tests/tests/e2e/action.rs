//! Issue #25, items 6 and 7: the GitHub Action (`action.yml`) and the Kubernetes Job
//! (`deploy/k8s/indexed-job.yaml`), whose every shell step is `scripts/action.sh`.
//!
//! The script runs here with the inputs exactly as action.yml passes them (`INPUT_*`), and the
//! GitHub files (`GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `GITHUB_PATH`, `GITHUB_ENV`) as
//! temporary files. Witnesses: a real `leopold persona run` with the fake worker (its run
//! directory, JUnit file and exit code); a stand-in `leopold` or `cargo` that records the argv
//! it was given; a stand-in sysctl file. actionlint checks action.yml through a workflow that
//! uses it as `./`, the way it reads a local action's metadata (it would take action.yml itself
//! for a workflow); the linters come from `scripts/install-lint.sh`, and in CI a missing one
//! fails the test.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use leopold_tests::fake_run::{claude_navigate, claude_tool_ok, fake_worker};
use leopold_tests::{leopold_bin, require_cli, Harness, Sandbox};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the repository")
        .to_path_buf()
}

fn script() -> PathBuf {
    repo().join("scripts/action.sh")
}

/// The folder `scripts/install-lint.sh` filled (`LEOPOLD_LINT_DIR`, set by `scripts/test.sh`).
/// Missing: panics when `CI` is set, else says SKIPPED loudly and returns `None`.
#[allow(clippy::print_stderr)]
fn lint_dir() -> Option<PathBuf> {
    match std::env::var_os("LEOPOLD_LINT_DIR").filter(|v| !v.is_empty()) {
        Some(d) => Some(PathBuf::from(d)),
        None if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) => {
            panic!("LEOPOLD_LINT_DIR is not set and CI is: run the tests through ./scripts/test.sh, which installs actionlint")
        }
        None => {
            eprintln!("\n*** SKIPPED: LEOPOLD_LINT_DIR is not set; run ./scripts/test.sh (it runs scripts/install-lint.sh).\n");
            None
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A temporary folder of stand-ins and files the script writes to.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            dir: tempfile::Builder::new()
                .prefix("leopold-action-")
                .tempdir()
                .unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `bin/NAME`: records its argv (one per line) and working directory in `NAME.argv`, prints
    /// `say`, exits `code`.
    fn stand_in(&self, name: &str, say: &str, code: i32) {
        let bin = self.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let rec = self.path(&format!("{name}.argv"));
        let body = format!(
            "#!/bin/sh\n{{ pwd; printf '%s\\n' \"$@\"; }} > '{}'\necho '{say}'\nexit {code}\n",
            rec.display()
        );
        let p = bin.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// `bin/leopold` as the real one (a symlink to the binary under test).
    fn real_leopold(&self) {
        std::fs::create_dir_all(self.path("bin")).unwrap();
        std::os::unix::fs::symlink(leopold_bin(), self.path("bin/leopold")).unwrap();
    }

    /// What stand-in `name` was given: its working directory, then its arguments.
    fn argv(&self, name: &str) -> Option<Vec<String>> {
        let t = std::fs::read_to_string(self.path(&format!("{name}.argv"))).ok()?;
        Some(t.lines().map(str::to_owned).collect())
    }

    /// `scripts/action.sh STEP` with this bench's `bin/` first on PATH and the GitHub files here.
    fn command(&self, step: &str) -> Command {
        let mut cmd = Command::new(script());
        self.prepare(&mut cmd, step);
        cmd
    }

    fn prepare(&self, cmd: &mut Command, step: &str) {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.arg(step)
            .env("PATH", path)
            .env("GITHUB_ACTIONS", "true");
        for (var, file) in [
            ("GITHUB_OUTPUT", "output"),
            ("GITHUB_STEP_SUMMARY", "summary.md"),
            ("GITHUB_PATH", "path"),
            ("GITHUB_ENV", "env"),
        ] {
            cmd.env(var, self.path(file));
        }
        for var in ["INPUT_FLOWS", "INPUT_MERGE", "JOB_COMPLETION_INDEX"] {
            cmd.env_remove(var);
        }
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// `$GITHUB_OUTPUT`'s `key=value` lines.
    fn outputs(&self) -> BTreeMap<String, String> {
        self.file("output")
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

// --- lint -----------------------------------------------------------------------------------

/// actionlint over a repository holding action.yml, the scripts, and the example workflow using
/// the action as `./` with `with` (an extra line of inputs for the second job's step, "" for none).
fn actionlint_example(lint: &Path, extra_input: &str) -> Output {
    let b = Bench::new();
    let root = b.path("repo");
    std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::copy(repo().join("action.yml"), root.join("action.yml")).unwrap();
    let example =
        std::fs::read_to_string(repo().join("docs/examples/github-workflow.yml")).unwrap();
    assert_eq!(example.matches("uses: your-org/leopold@v0.1.0").count(), 2);
    let mut wf = example.replace("uses: your-org/leopold@v0.1.0", "uses: ./");
    wf = wf.replace(
        "          merge: shards/*",
        &format!("          merge: shards/*\n{extra_input}"),
    );
    std::fs::write(root.join(".github/workflows/personas.yml"), wf).unwrap();
    let shellcheck = format!("-shellcheck={}", lint.join("tools/shellcheck").display());
    Command::new(lint.join("tools/actionlint"))
        .args(["-oneline", &shellcheck, "-pyflakes="])
        .current_dir(&root)
        .output()
        .unwrap()
}

#[test]
fn actionlint_passes_on_the_action_and_the_example_workflow() {
    let Some(lint) = lint_dir() else {
        return;
    };
    let out = actionlint_example(&lint, "");
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        text(&out)
    );
    // The control: the same check reads action.yml's inputs, so an undeclared one fails.
    let out = actionlint_example(&lint, "          floows: flows/");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("input \"floows\" is not defined"),
        "{}",
        text(&out)
    );
}

#[test]
fn shellcheck_passes_on_the_action_script() {
    let Some(lint) = lint_dir() else {
        return;
    };
    let out = Command::new(lint.join("tools/shellcheck"))
        .arg(script())
        .arg(repo().join("scripts/install-lint.sh"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// The JSON that Python program `py` prints about the repository's file `rel` (PyYAML from the
/// lint folder).
fn python_json(lint: &Path, py: &str, rel: &str) -> serde_json::Value {
    let out = Command::new("python3")
        .args(["-c", py])
        .arg(repo().join(rel))
        .env("PYTHONPATH", lint)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Kubernetes manifests parse, hold no field the Kubernetes API does not know (each object
/// goes through the Kubernetes Python client's model and back unchanged: a misspelt field is
/// dropped on the way), and the Job's partition names its own completions.
#[test]
fn the_indexed_job_has_only_kubernetes_fields_and_its_partition_matches_its_completions() {
    let Some(lint) = lint_dir() else {
        return;
    };
    let py = r#"
import json, sys, yaml
from kubernetes.client import ApiClient
api = ApiClient()
def present(v):
    if isinstance(v, dict):
        return {k: present(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [present(x) for x in v]
    return v
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kept = {}
for d in docs:
    model = api._ApiClient__deserialize(d, "V1" + d["kind"])
    kept[d["kind"]] = present(api.sanitize_for_serialization(model)) == d
job = next(d for d in docs if d["kind"] == "Job")
spec = job["spec"]
pod = spec["template"]["spec"]
env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
print(json.dumps({"mode": spec["completionMode"], "completions": spec["completions"],
    "parallelism": spec["parallelism"], "hostUsers": pod["hostUsers"],
    "partition": env["INPUT_PARTITION"], "kept": kept}))
"#;
    let v = python_json(&lint, py, "deploy/k8s/indexed-job.yaml");
    assert_eq!(
        v["kept"],
        serde_json::json!({"ConfigMap": true, "Job": true}),
        "{v}"
    );
    assert_eq!(v["mode"], "Indexed", "{v}");
    assert_eq!(v["hostUsers"], false, "{v}");
    assert!(v["parallelism"].as_u64().unwrap() >= 1, "{v}");
    let n = v["completions"].as_u64().unwrap();
    assert_eq!(v["partition"], format!("count:k8s/{n}"), "{v}");
}

#[test]
fn hadolint_passes_on_the_dockerfile() {
    let Some(lint) = lint_dir() else {
        return;
    };
    let out = Command::new(lint.join("tools/hadolint"))
        .arg(repo().join("deploy/Dockerfile"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

// --- userns ---------------------------------------------------------------------------------

fn userns(b: &Bench, file: &Path) -> Output {
    b.command("userns")
        .env("LEOPOLD_USERNS_SYSCTL", file)
        .output()
        .unwrap()
}

#[test]
fn userns_sets_the_apparmor_restriction_to_0_only_where_it_is_1() {
    let b = Bench::new();
    let file = b.path("apparmor_restrict_unprivileged_userns");
    // Absent (Debian, older Ubuntu): nothing to do, nothing created.
    let out = userns(&b, &file);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("absent"), "{}", text(&out));
    assert!(!file.exists());
    // 0: left as it is.
    std::fs::write(&file, "0\n").unwrap();
    let out = userns(&b, &file);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("is 0"), "{}", text(&out));
    // 1 (ubuntu-24.04): set to 0, and said so.
    std::fs::write(&file, "1\n").unwrap();
    let out = userns(&b, &file);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), "0");
    assert!(text(&out).contains("was 1"), "{}", text(&out));
}

// --- install --------------------------------------------------------------------------------

#[test]
fn install_keeps_a_leopold_of_the_same_version_and_hands_on_the_clis_and_the_browser() {
    let Some(claude) = require_cli(Harness::Claude) else {
        return;
    };
    let b = Bench::new();
    b.real_leopold();
    b.stand_in("cargo", "", 0);
    let out = b.command("install").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("is already installed") && text(&out).contains("not rebuilding"),
        "{}",
        text(&out)
    );
    assert_eq!(b.argv("cargo"), None, "cargo ran: {}", text(&out));
    let clis = claude.parent().unwrap().display().to_string();
    assert!(
        b.file("path").lines().any(|l| l == clis),
        "GITHUB_PATH: {}",
        b.file("path")
    );
    let pw = b
        .file("env")
        .lines()
        .find_map(|l| l.strip_prefix("LEOPOLD_PLAYWRIGHT_MCP=").map(PathBuf::from))
        .expect("GITHUB_ENV names the Playwright MCP");
    assert!(
        pw.ends_with("node_modules/.bin/playwright-mcp") && pw.is_file(),
        "{pw:?}"
    );
}

#[test]
fn install_builds_leopold_from_the_checkout_when_another_version_is_installed() {
    let b = Bench::new();
    b.stand_in("leopold", "leopold 0.0.9", 0);
    b.stand_in("cargo", "", 0);
    let out = b
        .command("install")
        .env("CARGO_HOME", b.path("cargo-home"))
        .output()
        .unwrap();
    let argv = b.argv("cargo").expect("cargo install ran");
    assert_eq!(
        argv,
        [
            repo().display().to_string().as_str(),
            "install",
            "--locked",
            "--path",
            "supervisor"
        ]
    );
    // The stand-in built nothing: the script checks what it installed, and says so.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("says '0.0.9', want 0.1.0"),
        "{}",
        text(&out)
    );
    let cargo_bin = b.path("cargo-home/bin").display().to_string();
    assert!(
        b.file("path").lines().any(|l| l == cargo_bin),
        "{}",
        b.file("path")
    );
}

// --- run --------------------------------------------------------------------------------------

/// `action.sh run` of the sandbox's flow under the fake worker playing `script`, with the real
/// leopold, as action.yml passes the inputs (`browser` empty: the kit's stub browser comes by
/// `--mcp-config` in `args`).
fn run_suite(sb: &Sandbox, b: &Bench, worker: &str, extra: &[(&str, &str)]) -> Output {
    sb.set_script(worker);
    b.real_leopold();
    let args = format!(
        "--harness-bin '{}' --mcp-config '{}' --timeout 60s",
        fake_worker().display(),
        sb.stub_mcp_config().display()
    );
    let mut cmd = sb.leopold_command(&script(), &[]);
    b.prepare(&mut cmd, "run");
    cmd.env("INPUT_FLOWS", sb.flow())
        .env("INPUT_HARNESS", "claude")
        .env("INPUT_PROJECT", &sb.project)
        .env("INPUT_BROWSER", "")
        .env("INPUT_ARGS", args)
        .envs(extra.iter().copied());
    cmd.output().unwrap()
}

#[test]
fn run_passes_a_clean_suite_on_with_its_outputs_summary_and_junit() {
    let sb = Sandbox::with_user_files();
    let b = Bench::new();
    let worker = format!(
        "{}\n{}\n",
        claude_navigate("t1", "https://staging.example.com/welcome"),
        claude_tool_ok("t1")
    );
    let out = run_suite(&sb, &b, &worker, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let o = b.outputs();
    assert_eq!(o["exit-code"], "0", "{o:?}");
    let runs = sb.project.join(".leopold/persona/runs");
    assert_eq!(Path::new(&o["runs-dir"]), runs, "{o:?}");
    let run_dir = sb.run_dir();
    let rj: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(rj["end"]["outcome"], "clean", "{rj}");
    let junit = sb.project.join(".leopold/persona/junit.xml");
    assert_eq!(Path::new(&o["junit"]), junit, "{o:?}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testcase") && !xml.contains("<failure"),
        "{xml}"
    );
    assert_eq!(o["artifact-name"], "leopold-runs", "{o:?}");
    let summary = b.file("summary.md");
    assert!(
        summary.contains("Leopold: flow `checkout` under claude: clean"),
        "leopold's own block: {summary}"
    );
    assert!(
        summary.contains("**Leopold** `persona run`: exit 0, clean."),
        "{summary}"
    );
}

#[test]
fn run_propagates_a_failed_runs_exit_code_unless_told_not_to_fail() {
    let sb = Sandbox::with_user_files();
    let b = Bench::new();
    let out = run_suite(&sb, &b, "@exit 7\n", &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let o = b.outputs();
    assert_eq!(o["exit-code"], "3", "{o:?}");
    let xml = std::fs::read_to_string(&o["junit"]).unwrap();
    assert!(xml.contains("<failure"), "{xml}");
    assert!(
        b.file("summary.md")
            .contains("exit 3, a worker or its model failed"),
        "{}",
        b.file("summary.md")
    );

    let sb = Sandbox::with_user_files();
    let b = Bench::new();
    let out = run_suite(&sb, &b, "@exit 7\n", &[("INPUT_FAIL_ON_ERROR", "false")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(b.outputs()["exit-code"], "3");
}

/// `action.sh run` with a stand-in leopold: what it was given.
fn run_stand_in(b: &Bench, env: &[(&str, &str)]) -> (Output, Option<Vec<String>>) {
    b.stand_in("leopold", "", 0);
    let out = b
        .command("run")
        .current_dir(b.dir.path())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let argv = b.argv("leopold").map(|a| a[1..].to_vec());
    (out, argv)
}

#[test]
fn run_passes_each_input_as_its_flag_and_quoted_args_whole() {
    let b = Bench::new();
    let (out, argv) = run_stand_in(
        &b,
        &[
            ("INPUT_FLOWS", "flows/\n'my flows/a b.md'"),
            ("INPUT_HARNESS", "claude,codex"),
            ("INPUT_PARTITION", "hash:2/3"),
            ("INPUT_ATTEMPTS", "2"),
            ("INPUT_JOBS", "4"),
            ("INPUT_EVIDENCE", "walls"),
            ("INPUT_BROWSER", "playwright"),
            (
                "INPUT_ARGS",
                "--timeout 20m -- --append-system-prompt \"be $HOME; brief\"",
            ),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let project = b.dir.path().canonicalize().unwrap().display().to_string();
    let junit = format!("{project}/.leopold/persona/junit.xml");
    let want = [
        "persona",
        "run",
        "flows/",
        "my flows/a b.md",
        "--harness",
        "claude,codex",
        "--project",
        &project,
        "--junit",
        &junit,
        "--jobs",
        "4",
        "--attempts",
        "2",
        "--partition",
        "hash:2/3",
        "--evidence",
        "walls",
        "--browser",
        "playwright",
        "--timeout",
        "20m",
        "--",
        "--append-system-prompt",
        "be $HOME; brief",
    ];
    assert_eq!(argv.unwrap(), want);
    assert_eq!(b.outputs()["artifact-name"], "leopold-runs-hash-2-3");
}

#[test]
fn run_maps_a_kubernetes_completion_index_to_the_partition() {
    let b = Bench::new();
    let k8s = [
        ("INPUT_FLOWS", "flows/"),
        ("INPUT_PARTITION", "count:k8s/3"),
    ];
    let (out, argv) = run_stand_in(&b, &[k8s[0], k8s[1], ("JOB_COMPLETION_INDEX", "2")]);
    assert!(out.status.success(), "{}", text(&out));
    let argv = argv.unwrap();
    let at = argv.iter().position(|a| a == "--partition").unwrap();
    assert_eq!(argv[at + 1], "count:3/3", "{argv:?}");
    assert_eq!(b.outputs()["artifact-name"], "leopold-runs-count-3-3");

    // Outside an Indexed Job, or an index the Job's completions do not reach: one line, exit 2,
    // and leopold never started.
    for index in [None, Some("3"), Some("x")] {
        let b = Bench::new();
        let mut env = k8s.to_vec();
        env.extend(index.map(|i| ("JOB_COMPLETION_INDEX", i)));
        let (out, argv) = run_stand_in(&b, &env);
        assert_eq!(out.status.code(), Some(2), "{index:?}: {}", text(&out));
        assert_eq!(argv, None, "{index:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{}",
            text(&out)
        );
    }
}

#[test]
fn run_merges_the_shards_runs_folders_it_is_given() {
    let b = Bench::new();
    for shard in ["leopold-runs-count-2-2", "leopold-runs-count-1-2"] {
        std::fs::create_dir_all(b.path(&format!("shards/{shard}"))).unwrap();
    }
    let (out, argv) = run_stand_in(&b, &[("INPUT_MERGE", "shards/*"), ("INPUT_OUT", "merged")]);
    assert!(out.status.success(), "{}", text(&out));
    let argv = argv.unwrap();
    assert_eq!(
        argv,
        [
            "persona",
            "report",
            "--merge",
            "shards/leopold-runs-count-1-2",
            "shards/leopold-runs-count-2-2",
            "--out",
            &b.path("merged").display().to_string()
        ]
    );
    assert_eq!(b.outputs()["artifact-name"], "leopold-report");
    // Both at once is a mistake in the workflow: said, exit 2.
    let (out, argv) = run_stand_in(
        &Bench::new(),
        &[("INPUT_MERGE", "shards/*"), ("INPUT_FLOWS", "flows/")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(argv, None);
}

/// The guide shows the example workflow as the repository keeps it (the file actionlint checks).
#[test]
fn the_guide_shows_the_example_workflow_as_it_is() {
    let example =
        std::fs::read_to_string(repo().join("docs/examples/github-workflow.yml")).unwrap();
    let guide = std::fs::read_to_string(repo().join("docs/guide.md")).unwrap();
    assert!(
        guide.contains(&format!("```yaml\n{example}```\n")),
        "docs/guide.md#ci differs from docs/examples/github-workflow.yml"
    );
}

/// action.yml passes every input the script reads, each as `INPUT_<NAME>` from its own input,
/// and uploads the folder the script names: the tests' `INPUT_*` are then the Action's.
#[test]
fn action_yml_passes_the_script_the_inputs_it_reads() {
    let Some(lint) = lint_dir() else {
        return;
    };
    let py = r#"
import json, sys, yaml
a = yaml.safe_load(open(sys.argv[1]))
steps = a["runs"]["steps"]
run = next(s for s in steps if s.get("id") == "run")
up = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
print(json.dumps({"inputs": sorted(a["inputs"]), "env": run["env"], "run": run["run"],
    "calls": [s.get("run") for s in steps if "run" in s], "upload": up["with"]}))
"#;
    let v = python_json(&lint, py, "action.yml");
    let env = v["env"].as_object().unwrap();
    for (var, value) in env {
        let input = var.strip_prefix("INPUT_").unwrap().to_lowercase();
        assert_eq!(
            value.as_str().unwrap(),
            format!("${{{{ inputs.{} }}}}", input.replace('_', "-")),
            "{var}"
        );
    }
    // Every input but the two that steer action.yml's own steps reaches the script.
    let passed: Vec<String> = env
        .keys()
        .map(|k| k["INPUT_".len()..].to_lowercase().replace('_', "-"))
        .collect();
    for input in v["inputs"].as_array().unwrap() {
        let input = input.as_str().unwrap();
        assert!(
            passed.iter().any(|p| p == input) || ["install", "upload"].contains(&input),
            "input {input} never reaches scripts/action.sh"
        );
    }
    // And every INPUT_ the script reads is passed.
    let script_text = std::fs::read_to_string(script()).unwrap();
    for word in script_text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("INPUT_") && word.len() > "INPUT_".len() {
            assert!(
                env.contains_key(word),
                "scripts/action.sh reads {word}, action.yml never sets it"
            );
        }
    }
    for call in v["calls"].as_array().unwrap() {
        let call = call.as_str().unwrap();
        assert!(
            call.starts_with("\"$GITHUB_ACTION_PATH/scripts/action.sh\" ") && !call.contains('\n'),
            "a shell step is one call of scripts/action.sh: {call}"
        );
    }
    assert_eq!(v["upload"]["path"], "${{ steps.run.outputs.runs-dir }}");
    assert_eq!(
        v["upload"]["name"],
        "${{ steps.run.outputs.artifact-name }}"
    );
}
