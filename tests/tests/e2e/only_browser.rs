//! Only the browser (issue #12 item 1): through `leopold persona run`, on the real pinned CLIs,
//! the worker is offered the flow's browser tools and nothing else, whatever the user's or the
//! project's harness settings say.
//!
//! - The exact tool list each harness sends the model in its first request is pinned here: a
//!   harness release that adds a tool (or a switch that stops working) fails this test.
//! - A scripted model calls the tools a persona must not have (Claude: Bash, Read, Write, Edit,
//!   WebFetch; Codex: exec_command, shell, apply_patch, web_search, view_image, spawn_agent,
//!   request_user_input) with a permissive developer's settings planted where the worker looks,
//!   and `--no-contain`, so that the harness's own switches are tested apart from the box: each
//!   call is refused by the harness as not available, nothing reaches the forbidden host (a
//!   listener on 127.0.0.1 that counts every connection), no file changes, no secret reaches the
//!   model.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leopold_tests::checkout::{self, CheckoutWorld};
use leopold_tests::offered::{first_request, first_request_tools};
use leopold_tests::script::{Script, ToolCall, Turn};
use leopold_tests::{leopold_bin, require_cli, run_bounded, Harness, ModelServer, Run, Sandbox};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(60);

/// What Claude Code 2.1.332 offers the model under `persona run` (sorted): the stub browser's
/// three tools and Leopold's own two, which the gateway lists beside them
/// (docs/reference.md#the-verdict), whatever `--model`. Without Leopold's
/// `ENABLE_TOOL_SEARCH=false` it also offered `DeferredToolPlaceholder` (deferred loading on).
const CLAUDE_TOOLS: &[&str] = &[
    "mcp__browser__click",
    "mcp__browser__finish",
    "mcp__browser__navigate",
    "mcp__browser__report_finding",
    "mcp__browser__type",
];

/// What Codex 0.171.0 offers the model under `persona run` (sorted; a namespace as
/// `name:[its tools]`), whatever the model: the stub browser's namespace and the three MCP
/// resource tools, which Codex adds whenever an MCP server is configured and which no switch
/// removes (they reach only the configured servers: the flow's browser, through the gateway).
const CODEX_TOOLS: &[&str] = &[
    "list_mcp_resource_templates",
    "list_mcp_resources",
    "mcp__browser:[click,finish,navigate,report_finding,type]",
    "read_mcp_resource",
];

/// A secret a persona must never read.
const SECRET: &str = "leopold-e2e-secret-3f9a1c";

/// A loopback listener that counts every connection: the host no flow allows.
struct Forbidden {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Forbidden {
    fn start() -> Forbidden {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind the forbidden host");
        let port = l.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                h.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
        Forbidden { port, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Every file under `dir` (but `<dir>/.leopold`, the run's own record) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p == root.join(".leopold") {
                continue;
            }
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The checkout world for these personas. `codex_user_tail`: TOML appended to the user's Codex
/// config (after the provider table, so it must open its own tables); `codex_user_head`:
/// top-level keys before it. `script` is built from the sandbox (it names the sandbox's paths).
fn world(
    h: Harness,
    script: impl FnOnce(&Sandbox) -> Script,
    codex_user_head: &str,
    codex_user_tail: &str,
) -> Option<CheckoutWorld> {
    let w = CheckoutWorld::new(h, script)?;
    let flows = w.sb.project.join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    // Every refusal must be answered, not cut short as `stuck` after the default five
    // denials in a row: these personas are refused many times on purpose.
    let text = std::fs::read_to_string(checkout::flow_path()).unwrap();
    std::fs::write(
        flows.join("checkout.md"),
        text.replacen("+++\n", "+++\nmax_denials_in_a_row = 100\n", 1),
    )
    .unwrap();
    if h == Harness::Codex {
        let path = w.sb.write_codex_config(&w.model, codex_user_tail);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{codex_user_head}{text}")).unwrap();
    }
    Some(w)
}

/// `persona run` in `w` with `extra` arguments, to its end.
fn persona_run(w: &CheckoutWorld, extra: &[&str]) -> Run {
    persona_run_env(w, extra, &[])
}

/// As [`persona_run`], with `env` in the user's environment.
fn persona_run_env(w: &CheckoutWorld, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = w.persona_run(&leopold_bin());
    cmd.args(extra);
    cmd.envs(env.iter().copied());
    run_bounded(cmd, TIMEOUT)
}

fn call(tool: &str, input: Value) -> Turn {
    Turn {
        calls: vec![ToolCall {
            tool: tool.to_owned(),
            input,
        }],
        delay_ms: 0,
    }
}

fn navigate() -> Turn {
    call(
        "mcp__browser__navigate",
        json!({"url": "https://staging.example.com/products/1"}),
    )
}

// ---------------------------------------------------------------------------------------------
// The exact tool list.

fn tool_list(h: Harness, want: &[&str]) {
    let script = |_: &Sandbox| Script {
        turns: vec![navigate()],
        final_answer: "Walked the product page.".into(),
    };
    let Some(w) = world(h, script, "", "") else {
        return;
    };
    let run = persona_run(&w, &[]);
    assert_eq!(run.status.code(), Some(0), "{run}");
    assert_eq!(
        first_request_tools(&w.model),
        want,
        "the tools {h} offers the model under `persona run` changed: a new tool must be switched off (worker.rs) or, if harmless, added here with why"
    );
    // The browser still works: its one call arrived.
    assert_eq!(w.browser.seen().len(), 1, "{run}");
}

#[test]
fn claude_offers_the_model_exactly_the_browser_tools() {
    tool_list(Harness::Claude, CLAUDE_TOOLS);
}

#[test]
fn codex_offers_the_model_exactly_the_browser_tools() {
    tool_list(Harness::Codex, CODEX_TOOLS);
}

/// Claude Code's model aliases each get the same list, directly: no deferred-loading
/// placeholder even when the user's environment turns tool search on (`ENABLE_TOOL_SEARCH=true`).
#[test]
fn claude_offers_exactly_the_browser_tools_whatever_the_model() {
    if require_cli(Harness::Claude).is_none() {
        return;
    }
    for alias in ["sonnet", "haiku", "opus"] {
        let script = |_: &Sandbox| Script {
            turns: vec![navigate()],
            final_answer: "Walked the product page.".into(),
        };
        let w = world(Harness::Claude, script, "", "").unwrap();
        let run = persona_run_env(&w, &["--model", alias], &[("ENABLE_TOOL_SEARCH", "true")]);
        assert_eq!(run.status.code(), Some(0), "--model {alias}\n{run}");
        let (model, tools) = first_request(&w.model);
        assert!(model.contains(alias), "--model {alias} asked {model}");
        assert_eq!(tools, CLAUDE_TOOLS, "--model {alias}");
        assert_eq!(w.browser.seen().len(), 1, "--model {alias}\n{run}");
    }
}

/// The slugs of the pinned Codex's own model catalog (`codex debug models`, in a scratch home).
fn codex_catalog_models(cli: &Path) -> Vec<String> {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(cli)
        .args(["debug", "models"])
        .env_clear()
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("run codex debug models");
    assert!(out.status.success(), "{out:?}");
    let cat: Value = serde_json::from_slice(&out.stdout).expect("the catalog is JSON");
    cat["models"]
        .as_array()
        .expect("a models array")
        .iter()
        .map(|m| m["slug"].as_str().expect("a slug").to_owned())
        .collect()
}

/// Issue #22: on a catalog model, Codex offered `apply_patch` and `tool_search` with the browser
/// hidden behind it (`gpt-5.5`), or a JavaScript `exec`, `wait` and sub-agent tools with the
/// browser nested inside (`gpt-6.2-sol` and the other code-mode models). Every model of the
/// catalog, chosen with Leopold's `--model` (Codex `-m`), must be offered exactly what the scripted model's name
/// is offered, directly, and the browser call must reach the browser.
#[test]
fn codex_offers_exactly_the_browser_tools_on_every_catalog_model() {
    let Some(cli) = require_cli(Harness::Codex) else {
        return;
    };
    let models = codex_catalog_models(&cli);
    for want in ["gpt-5.5", "gpt-6.2-sol"] {
        assert!(
            models.iter().any(|m| m == want),
            "{want} left the catalog: {models:?}"
        );
    }
    for slug in &models {
        let script = |_: &Sandbox| Script {
            turns: vec![navigate()],
            final_answer: "Walked the product page.".into(),
        };
        let w = world(Harness::Codex, script, "", "").unwrap();
        let run = persona_run(&w, &["--model", slug]);
        assert_eq!(run.status.code(), Some(0), "-m {slug}\n{run}");
        let (model, tools) = first_request(&w.model);
        assert_eq!(&model, slug, "`-m {slug}` was not the model asked");
        assert_eq!(
            tools, CODEX_TOOLS,
            "-m {slug}: Codex offered the model more than the browser, or hid it"
        );
        assert_eq!(
            w.browser.seen().len(),
            1,
            "-m {slug}: the browser call\n{run}"
        );
    }
}

/// The three resource tools Codex offers with any MCP server have no switch: they reach only the
/// flow's servers, through the gateway, which offers no `resources` capability and refuses every
/// `resources/*` message. Seen: Codex answers `list_mcp_resources` itself (empty), the gateway
/// refuses the templates list, and the guard stops the run on a `file:` URI read (violated,
/// exit 1). No byte of the file reaches the model, and the browser is never asked.
#[test]
fn codex_resource_tools_reach_only_the_gateway_which_refuses_them() {
    let script = |_: &Sandbox| Script {
        turns: vec![
            call("list_mcp_resources", json!({})),
            call("list_mcp_resource_templates", json!({"server": "browser"})),
            call(
                "read_mcp_resource",
                json!({"server": "browser", "uri": "file:///etc/passwd"}),
            ),
        ],
        final_answer: "Done.".into(),
    };
    let Some(w) = world(Harness::Codex, script, "", "") else {
        return;
    };
    let run = persona_run(&w, &[]);
    assert_eq!(run.status.code(), Some(1), "{run}");
    assert!(run.stdout.contains("read_mcp_resource"), "{run}");
    let reqs = w.model.requests();
    assert!(
        !reqs.iter().any(|r| r.to_string().contains("root:x:0")),
        "a file reached the model\n{run}"
    );
    let results = w.model.tool_results();
    assert_eq!(results[0], r#"{"resources":[]}"#, "{results:#?}");
    assert!(
        results[1].contains("gateway does not pass on `resources/templates/list`"),
        "{results:#?}"
    );
    assert!(w.browser.seen().is_empty(), "{run}");
}

/// A Codex whose model catalog Leopold cannot read, or reads in a shape it does not know,
/// would leave `tool_search`, `apply_patch` and code mode on: the run refuses before it starts
/// (exit 2), naming them, and no worker runs (the scripted model is never asked).
#[test]
fn a_codex_whose_catalog_cannot_be_switched_off_is_refused() {
    let script = |_: &Sandbox| Script {
        turns: vec![navigate()],
        final_answer: "Walked.".into(),
    };
    // A stand-in for the harness binary; no real CLI is needed.
    let cases = [
        ("exit 3", "cannot read the model catalog"),
        (
            r#"echo '{"models":[{"name":"gpt-9","apply_patch_tool_type":"freeform"}]}'"#,
            "a model entry has no `slug`",
        ),
    ];
    for (body, says) in cases {
        let sb = Sandbox::new();
        let model = ModelServer::start(&sb, &script(&sb));
        let browser = sb.stub_browser(checkout::SERVER);
        let mcp_config = sb.write_claude_mcp_config(&browser);
        sb.add_checkout_flow();
        sb.write_codex_config(&model, "");
        let fake = sb.logs.join("codex");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\necho called >> {}/fake-codex.log\n{body}\n",
                sb.logs.display()
            ),
        )
        .unwrap();
        let mut perms = std::fs::metadata(&fake).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&fake, perms).unwrap();
        let mut cmd = sb.persona_run(
            &leopold_bin(),
            "flows/checkout.md",
            Harness::Codex,
            &fake,
            &model,
        );
        cmd.arg("--mcp-config").arg(&mcp_config);
        let run = run_bounded(cmd, TIMEOUT);
        assert_eq!(run.status.code(), Some(2), "{run}");
        assert!(run.stderr.contains(says), "{run}");
        assert!(
            run.stderr.contains("`tool_search`") && run.stderr.contains("`apply_patch`"),
            "the refusal names the tools it would leave on\n{run}"
        );
        assert_eq!(
            std::fs::read_to_string(sb.logs.join("fake-codex.log"))
                .unwrap()
                .lines()
                .count(),
            1,
            "the binary was run once, to read its catalog, and never as the worker\n{run}"
        );
        assert!(model.requests().is_empty(), "a worker ran\n{run}");
    }
}

// ---------------------------------------------------------------------------------------------
// Everything else, asked for by name.

/// Runs `turns` (one browser call, then the forbidden ones) with `--no-contain` and checks
/// the bound: each forbidden call refused as `refusal`, nothing reached the forbidden host, no
/// file changed in the project or the user's home, the secret never reached the model, and the
/// run ended 0 (nothing ran, so nothing was violated; `case` opens that failure's message).
fn refused(
    w: &CheckoutWorld,
    forbidden: &Forbidden,
    n_forbidden: usize,
    refusal: &str,
    case: &str,
) {
    let project_before = snapshot(&w.sb.project);
    let home_before = snapshot(&w.sb.home);
    let run = persona_run(w, &["--no-contain"]);
    // Whatever the outcome, what the harness refused must be in the results.
    let results = w.model.tool_results();
    assert_eq!(results.len(), 1 + n_forbidden, "{results:#?}\n{run}");
    for r in &results[1..] {
        assert!(
            r.contains(refusal),
            "a forbidden tool ran: {r:?}\n{results:#?}\n{run}"
        );
    }
    assert_eq!(forbidden.hits(), 0, "the forbidden host was reached\n{run}");
    assert!(
        !w.model.received(SECRET),
        "the secret reached the model\n{run}"
    );
    assert_eq!(
        snapshot(&w.sb.project),
        project_before,
        "a project file changed\n{run}"
    );
    // The harness keeps its own state in HOME (sessions, caches): only the files that were
    // there before are compared.
    let home_after = snapshot(&w.sb.home);
    for (p, bytes) in &home_before {
        assert_eq!(
            home_after.get(p),
            Some(bytes),
            "{} changed\n{run}",
            p.display()
        );
    }
    assert_eq!(w.browser.seen().len(), 1, "the browser call ran\n{run}");
    assert_eq!(
        run.status.code(),
        Some(0),
        "{case}nothing ran, so nothing was violated\n{run}"
    );
}

/// A developer's own Claude settings that allow everything a persona must not have.
/// A developer's own Claude settings allowing what a persona must not have, with `defaultMode`
/// set to `{mode}`.
fn permissive_user_claude(mode: &str) -> String {
    format!(
        r#"{{"permissions":{{"allow":["Bash","WebFetch","Read","Write","Edit","Glob","Grep","Agent"],"defaultMode":"{mode}"}}}}"#
    )
}

/// The user's `defaultMode`s tried: each would widen what runs unasked.
const USER_MODES: [&str; 3] = ["bypassPermissions", "acceptEdits", "dontAsk"];
/// A project's Claude settings that let Write/Edit run unasked
/// (docs/harness-facts.md#9-what-the-worker-can-do-besides-the-browser).
const PERMISSIVE_PROJECT_CLAUDE: &str = r#"{"permissions":{"defaultMode":"acceptEdits","allow":["Bash","Read","Write","Edit","WebFetch"]}}"#;

/// Plants the secret and returns its path.
fn plant_secret(sb: &Sandbox) -> PathBuf {
    let ssh = sb.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    let secret = ssh.join("id_ed25519");
    std::fs::write(&secret, SECRET).unwrap();
    secret
}

/// The world of [`refused`]: the secret planted, the model makes the browser call, then the
/// `forbidden` calls one per turn (given the sandbox, the secret's path and the flow's, which
/// they go for). Returns it with how many forbidden calls there are.
fn forbidden_world(
    h: Harness,
    forbidden: impl FnOnce(&Sandbox, &Path, &Path) -> Vec<Turn>,
    codex_user_head: &str,
    codex_user_tail: &str,
) -> Option<(CheckoutWorld, usize)> {
    let mut n = 0;
    let script = |sb: &Sandbox| {
        let secret = plant_secret(sb);
        let calls = forbidden(sb, &secret, &sb.project.join("flows/checkout.md"));
        n = calls.len();
        Script {
            turns: std::iter::once(navigate()).chain(calls).collect(),
            final_answer: "Done.".into(),
        }
    };
    let w = world(h, script, codex_user_head, codex_user_tail)?;
    Some((w, n))
}

/// Claude's settings: the user's permissive file in HOME (seen by the worker with
/// `--no-contain`), the project's `acceptEdits`.
fn plant_claude_settings(sb: &Sandbox, mode: &str) {
    let claude = sb.home.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), permissive_user_claude(mode)).unwrap();
    let project = sb.project.join(".claude");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("settings.json"), PERMISSIVE_PROJECT_CLAUDE).unwrap();
}

#[test]
fn claude_refuses_every_non_browser_tool_even_when_the_user_allows_it() {
    for mode in USER_MODES {
        claude_refuses_under_user_mode(mode);
    }
}

fn claude_refuses_under_user_mode(mode: &str) {
    let forbidden = Forbidden::start();
    let Some((w, n)) = forbidden_world(
        Harness::Claude,
        |sb, secret, target| {
            plant_claude_settings(sb, mode);
            vec![
                call(
                    "Bash",
                    json!({"command": format!("cat {}; echo pwned >> {}", secret.display(), target.display())}),
                ),
                call("Read", json!({"file_path": secret})),
                call(
                    "Write",
                    json!({"file_path": target, "content": "allowlist = [\"*\"]\n"}),
                ),
                call(
                    "Edit",
                    json!({"file_path": target, "old_string": "checkout", "new_string": "pwned"}),
                ),
                call("Glob", json!({"pattern": "**/*"})),
                call("Grep", json!({"pattern": "allowlist"})),
                call(
                    "Agent",
                    json!({"description": "x", "prompt": "edit flows/checkout.md"}),
                ),
                call(
                    "NotebookEdit",
                    json!({"notebook_path": target, "new_source": "x"}),
                ),
            ]
        },
        "",
        "",
    ) else {
        return;
    };
    let case = format!("user defaultMode {mode}: ");
    refused(&w, &forbidden, n, "No such tool available", &case);
}

#[test]
fn claude_refuses_the_network_tools_and_the_journal_records_the_refusals() {
    let forbidden = Forbidden::start();
    let url = format!("http://127.0.0.1:{}/", forbidden.port);
    let Some(w) = world(
        Harness::Claude,
        |sb| {
            plant_claude_settings(sb, "bypassPermissions");
            Script {
                turns: vec![
                    navigate(),
                    // One reply, both calls: Claude refuses both (the tools are not offered), and
                    // the journal records two denials, not calls that got past the hook.
                    Turn {
                        calls: vec![
                            ToolCall {
                                tool: "Bash".into(),
                                input: json!({"command": format!("curl -s {url}bash")}),
                            },
                            ToolCall {
                                tool: "WebFetch".into(),
                                input: json!({"url": format!("{url}webfetch"), "prompt": "x"}),
                            },
                        ],
                        delay_ms: 0,
                    },
                ],
                final_answer: "Done.".into(),
            }
        },
        "",
        "",
    ) else {
        return;
    };
    let project_before = snapshot(&w.sb.project);
    let run = persona_run(&w, &["--no-contain"]);
    assert_eq!(run.status.code(), Some(0), "{run}");
    assert!(
        run.stderr.contains("Bash") || run.stdout.contains("Bash"),
        "{run}"
    );
    assert_eq!(forbidden.hits(), 0, "the forbidden host was reached\n{run}");
    assert_eq!(
        snapshot(&w.sb.project),
        project_before,
        "a project file changed\n{run}"
    );
    // Both journaled as denied: Claude answered "No such tool available", which only Claude
    // says of a built-in it does not offer (an MCP error saying so proves nothing: unit test
    // `a_built_in_claude_does_not_offer_is_denied_but_an_mcp_error_saying_so_is_not`).
    let journal = leopold_tests::read_jsonl(&w.sb.run_dir().join("journal.jsonl"));
    let by_tool = |t: &str| {
        journal
            .iter()
            .find(|a| a["tool"] == t)
            .unwrap_or_else(|| panic!("{t} not journaled: {journal:#?}"))
            .clone()
    };
    for t in ["Bash", "WebFetch"] {
        let a = by_tool(t);
        assert_eq!(a["outcome"], "denied", "{a}");
        assert_eq!(a["denied_reason"], "harness_tool_unavailable", "{a}");
        assert_eq!(a["verdict"]["result"], "ok", "{a}");
    }
}

/// `--setting-sources project`: the project's settings (and so the project's wired hook) still
/// load, the user's do not; the guard's own `--settings` file loads whatever the sources.
#[test]
fn claude_loads_the_project_hooks_and_not_the_users() {
    let mut logs = PathBuf::new();
    let Some(w) = world(
        Harness::Claude,
        |sb| {
            logs = sb.logs.clone();
            let hook = |who: &str| {
                json!({"hooks": {"PreToolUse": [{"matcher": "mcp__.*", "hooks": [{"type": "command",
                    "command": format!("echo {who} >> {}", sb.logs.join(format!("{who}-hook.log")).display())}]}]}})
            };
            let user = sb.home.join(".claude");
            std::fs::create_dir_all(&user).unwrap();
            std::fs::write(user.join("settings.json"), hook("user").to_string()).unwrap();
            let project = sb.project.join(".claude");
            std::fs::create_dir_all(&project).unwrap();
            std::fs::write(project.join("settings.json"), hook("project").to_string()).unwrap();
            Script {
                turns: vec![
                    navigate(),
                    // Off the allowlist: the guard (from `--settings` and the project file, run
                    // once) must deny it.
                    call(
                        "mcp__browser__navigate",
                        json!({"url": "https://evil.example/"}),
                    ),
                ],
                final_answer: "Done.".into(),
            }
        },
        "",
        "",
    ) else {
        return;
    };
    let run = persona_run(&w, &["--no-contain"]);
    assert_eq!(run.status.code(), Some(0), "{run}");
    let project_hook = std::fs::read_to_string(logs.join("project-hook.log")).unwrap_or_default();
    assert_eq!(
        project_hook.lines().count(),
        2,
        "the project's hook ran for each call\n{run}"
    );
    assert!(
        !logs.join("user-hook.log").exists(),
        "the user's settings were loaded\n{run}"
    );
    assert_eq!(
        w.browser.seen().len(),
        1,
        "the guard denied the second call\n{run}"
    );
    assert!(
        w.model.tool_results()[1].contains("outside the domain allowlist"),
        "{:#?}",
        w.model.tool_results()
    );
}

#[test]
fn codex_refuses_every_non_browser_tool_even_when_the_user_config_allows_it() {
    let forbidden = Forbidden::start();
    let url = format!("http://127.0.0.1:{}/", forbidden.port);
    // A developer's own config.toml: no sandbox, never ask, every tool on, an MCP server of
    // their own (a second stub that logs what it is asked).
    let head = "sandbox_mode = \"danger-full-access\"\napproval_policy = \"never\"\nweb_search = \"live\"\n";
    let Some((w, n)) = forbidden_world(
        Harness::Codex,
        |_, secret, target| {
            vec![
                call(
                    "exec_command",
                    json!({"cmd": format!("curl -s {url}exec; cat {}; echo pwned >> {}", secret.display(), target.display())}),
                ),
                call(
                    "shell",
                    json!({"command": ["sh", "-c", format!("curl -s {url}shell")]}),
                ),
                call("write_stdin", json!({"session_id": 1, "chars": "curl\n"})),
                call(
                    "apply_patch",
                    json!({"input": format!("*** Begin Patch\n*** Update File: {}\n@@\n-+++\n+pwned\n*** End Patch\n", target.display())}),
                ),
                call("web_search", json!({"query": "x"})),
                call("view_image", json!({"path": secret})),
                call("spawn_agent", json!({"message": format!("curl {url}agent")})),
                call("request_user_input", json!({"questions": []})),
                call("create_goal", json!({"objective": "x"})),
                // On the allowlist, so that the guard lets it through and only the harness can refuse.
                call(
                    "mcp__evil__navigate",
                    json!({"url": "https://staging.example.com/evil"}),
                ),
            ]
        },
        head,
        &format!(
            "\n[features]\nshell_tool = true\nunified_exec = true\nmulti_agent = true\ngoals = true\nview_image = true\n\n[mcp_servers.evil]\ncommand = {:?}\ndefault_tools_approval_mode = \"approve\"\n",
            leopold_tests::kit_bin("leopold-stub-browser").display().to_string(),
        ),
    ) else {
        return;
    };
    refused(&w, &forbidden, n, "unsupported call", "");
    assert_eq!(
        first_request_tools(&w.model),
        CODEX_TOOLS,
        "the user's config widened the tool list"
    );
}
