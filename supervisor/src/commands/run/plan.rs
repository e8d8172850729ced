//! Step 1: everything resolved before any side effect (a bad flow, MCP config or harness argument
//! stops here, touching nothing).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use leopold_flows::Flow;

use crate::cli::RunArgs;
use crate::harness::{self, Harness};
use crate::state::{self, PersonaPaths};

/// Default grace between SIGTERM and SIGKILL.
const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// Test-only: grace period in milliseconds between SIGTERM and SIGKILL.
const GRACE_ENV: &str = "__LEOPOLD_STOP_GRACE_MS";

/// Everything resolved before any side effect.
pub struct Plan {
    pub paths: PersonaPaths,
    pub flow: Flow,
    pub flow_path: PathBuf,
    pub kind: Harness,
    pub bin: PathBuf,
    pub mcp_servers: Vec<crate::mcp::McpServer>,
    /// The provisioned browser's programs, when the run provisions one.
    pub browser: Option<crate::browser::BrowserBins>,
    pub extra: Vec<String>,
    pub timeout: Option<Duration>,
    pub grace: Duration,
    pub ctx: harness::Context,
    /// `--junit FILE`, absolute.
    pub junit: Option<PathBuf>,
    /// The box (docs/security.md#the-box): bwrap's path, or `None` with `--no-contain`.
    pub bwrap: Option<PathBuf>,
    /// Codex: its model catalog with every model's own tools off
    /// (docs/security.md#only-the-browser).
    pub codex_catalog: Option<String>,
    /// `--ca-cert`: extra roots the browser's proxy trusts for the app's own certificate.
    pub ca_certs: Vec<PathBuf>,
    /// `--max-procs` and the other limits (docs/security.md#limits).
    pub limits: crate::sandbox::limits::Limits,
    /// Tripped by whatever sees a limit hit; supervision stops the worker.
    pub tripwire: crate::sandbox::limits::Tripwire,
    /// Tripped by the model relay when the endpoint refuses the harness or cannot be reached
    /// (the cause, to say as it is); supervision stops the worker as `model_failed`.
    pub model_alarm: crate::sandbox::limits::Tripwire,
    /// `--model` and the budgets (docs/reference.md#cost-and-budgets).
    pub budget: crate::cli::BudgetArgs,
    /// The model the run asks for, as far as Leopold knows it before the stream names one.
    pub model: Option<String>,
    /// `--evidence`: the gateway's screenshots and trace of the provisioned browser.
    pub evidence: crate::run_dir::Evidence,
    /// The suite that started this run, and which attempt it is (run.json's `suite`).
    pub suite: Option<leopold_guard::SuiteMember>,
    /// `--keep-scratch`: the browser's files and the box's scratch outlive the run.
    pub keep_scratch: bool,
}

/// Whether the run provisions its browser: `--browser`, or the flow's `browser` key.
pub fn provisions_browser(args: &RunArgs, flow: &Flow) -> bool {
    args.browser.is_some() || flow.browser == Some(leopold_flows::browser::BrowserKind::Playwright)
}

/// The grace period: the test override in milliseconds, else [`DEFAULT_GRACE`].
fn grace(env: Option<&str>) -> Duration {
    env.and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_GRACE, Duration::from_millis)
}

/// What loosens one of a run's bounds, one line each: every run says them as warnings, and
/// `doctor` names a flow's. `--no-contain` (no box), the flow's `allow_tools` (a dangerous
/// browser tool offered) and harness arguments passed after `--` (checked against the refusals,
/// but their effect is the harness's): a user who did not mean one sees it on every run.
pub fn loosened(no_contain: bool, flow: &Flow, extra: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if no_contain {
        out.push(
            "--no-contain: the worker runs WITHOUT the box: it can use the network, read and write your files, and leave processes behind; only the guard, the browser's rules and the journal bound it"
                .to_owned(),
        );
    }
    if !flow.allow_tools.is_empty() {
        out.push(format!(
            "flow `{}` opts into dangerous browser tools (`allow_tools`): {}; the worker is offered them",
            flow.name,
            flow.allow_tools.join(", ")
        ));
    }
    if !extra.is_empty() {
        // Flags only: a value passed after `--` may be a secret or a path.
        let flags: Vec<&str> = extra
            .iter()
            .filter(|a| a.starts_with('-'))
            .map(|a| a.split_once('=').map_or(a.as_str(), |(f, _)| f))
            .collect();
        out.push(format!(
            "{} passed to the harness after `--`{}: Leopold refuses the ones it knows to disable a bound, and cannot vouch for what the others do",
            crate::output::count(extra.len() as u64, "argument"),
            if flags.is_empty() {
                String::new()
            } else {
                format!(" ({})", flags.join(" "))
            }
        ));
    }
    out
}

/// Plans the run of the flow file `flow` under `kind`, with the rest of `args`.
pub fn plan(args: &RunArgs, flow: &std::path::Path, kind: Harness) -> anyhow::Result<Plan> {
    let project = state::resolve_project(args.project.project.as_deref())?;
    let (flow_path, flow) = crate::project::load_flow(flow)?;
    crate::harness::check_extra_args(kind, &args.extra).map_err(|why| {
        // The model and the limits have one source, Leopold's flags; the rest is the guard's.
        let hint = if why.contains("before `--` instead") {
            "the model and the limits are recorded and budgeted by Leopold: move it before `--`"
        } else {
            "Leopold's guard must stay in force; remove it from after `--`"
        };
        anyhow::anyhow!("refused harness argument: {why}\n(hint: {hint})")
    })?;
    let mcp_servers = match &args.mcp_config {
        Some(p) => {
            let abs = std::path::absolute(p)
                .with_context(|| format!("cannot resolve {}", p.display()))?;
            crate::mcp::read_mcp_config(&abs)?
        }
        None => Vec::new(),
    };
    let provision = provisions_browser(args, &flow);
    if !provision && args.mcp_config.is_none() {
        // The worker would get no tool at all, and the run would end as a violation of a
        // bound it never had a chance to keep (#24).
        anyhow::bail!(
            "flow `{}` gives the persona no browser\n(hint: add `browser = \"playwright\"` to the flow, or pass --browser playwright, or --mcp-config FILE naming your browser's MCP server)",
            flow.name
        );
    }
    if provision && args.mcp_config.is_some() {
        anyhow::bail!(
            "flow `{}` provisions its browser (`browser = \"playwright\"`), and --mcp-config gives the worker another\n(hint: drop --mcp-config; the supervisor writes the browser's MCP config itself)",
            flow.name
        );
    }
    let browser = if provision {
        Some(crate::browser::find_bins(
            args.chromium.as_deref(),
            args.playwright_mcp.as_deref(),
        )?)
    } else {
        None
    };
    let given = crate::cli::suite::harness_bin(&args.harness_bin, kind);
    let wanted = given.map_or_else(|| PathBuf::from(kind.as_str()), PathBuf::from);
    let bin = crate::os::harness_executable(&wanted, given.is_some())?;
    // Before any side effect: a catalog that cannot be made leaves tools Leopold cannot switch
    // off, so the run refuses (exit 2).
    let codex_catalog = harness::model_catalog(kind, &bin).map_err(|why| {
        anyhow::anyhow!("refused: {why}\n(hint: run the pinned Codex, `leopold setup` installs it)")
    })?;
    let junit = match &args.junit {
        Some(p) => Some(
            std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display()))?,
        ),
        None => None,
    };
    let bwrap = crate::sandbox::for_run(args.no_contain)?;
    if bwrap.is_some() {
        crate::sandbox::check_plan(&mcp_servers)?;
    }
    let mut ctx = crate::commands::harness_context(&project)?;
    harness::probe_binary(kind, &mut ctx, &bin);
    let model = super::budget::asked_model(kind, &args.budget, &ctx.codex_home);
    let mut extra = args.extra.clone();
    extra.extend(super::budget::harness_args(kind, &args.budget));
    Ok(Plan {
        paths: PersonaPaths::new(&project),
        flow,
        flow_path,
        kind,
        bin,
        mcp_servers,
        browser,
        extra,
        timeout: (!args.timeout.is_zero()).then_some(args.timeout),
        grace: grace(crate::knobs::var(GRACE_ENV).as_deref()),
        ctx,
        junit,
        bwrap,
        codex_catalog,
        ca_certs: args
            .ca_cert
            .iter()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
            .collect(),
        limits: crate::sandbox::limits::Limits {
            procs: args.limits.max_procs,
            memory: args.limits.max_memory,
            scratch: args.limits.max_scratch,
            records: args.limits.max_records,
        },
        tripwire: crate::sandbox::limits::Tripwire::default(),
        model_alarm: crate::sandbox::limits::Tripwire::default(),
        budget: args.budget.clone(),
        model,
        evidence: args.evidence,
        suite: args
            .suite
            .suite_member
            .clone()
            .map(|(id, attempt)| leopold_guard::SuiteMember { id, attempt }),
        keep_scratch: args.keep_scratch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn args(extra: &[&str]) -> RunArgs {
        let cli = crate::cli::Cli::try_parse_from(
            [
                "leopold",
                "persona",
                "run",
                "flows/checkout.md",
                "--harness",
                "codex",
            ]
            .iter()
            .chain(extra),
        )
        .unwrap();
        match cli.command {
            crate::cli::Command::Persona(crate::cli::PersonaCommand::Run(a)) => *a,
            other => panic!("{other:?}"),
        }
    }

    fn write_flow(dir: &std::path::Path, extra: &str) -> PathBuf {
        let p = dir.join("checkout.md");
        std::fs::write(
            &p,
            format!("+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n{extra}+++\nBrief.\n"),
        )
        .unwrap();
        p
    }

    /// An MCP config giving the worker a browser (never started by planning).
    fn mcp(dir: &std::path::Path) -> Option<PathBuf> {
        let p = dir.join("mcp.json");
        std::fs::write(
            &p,
            r#"{"mcpServers":{"browser":{"command":"/opt/playwright-mcp"}}}"#,
        )
        .unwrap();
        Some(p)
    }

    #[test]
    fn grace_defaults_and_takes_the_test_override() {
        assert_eq!(grace(None), DEFAULT_GRACE);
        assert_eq!(grace(Some("250")), Duration::from_millis(250));
        assert_eq!(grace(Some("soon")), DEFAULT_GRACE);
    }

    #[test]
    fn a_plan_resolves_the_flow_the_harness_and_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let flow = write_flow(dir.path(), "");
        let bin = dir.path().join("codex");
        // Answers `debug models` as Codex 0.171.0 does, with one catalog model.
        std::fs::write(
            &bin,
            "#!/bin/sh\necho '{\"models\":[{\"slug\":\"gpt-5.5\",\"supports_search_tool\":true}]}'\n",
        )
        .unwrap();
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut a = args(&[
            "--no-contain",
            "--timeout",
            "90s",
            "--model",
            "x",
            "--",
            "--disable",
            "goals",
        ]);
        a.project.project = Some(dir.path().to_path_buf());
        a.harness_bin = vec![crate::cli::suite::parse_harness_bin(bin.to_str().unwrap()).unwrap()];
        a.mcp_config = mcp(dir.path());
        let p = plan(&a, &flow, Harness::Codex).unwrap();
        assert_eq!(p.flow.name, "checkout");
        assert_eq!(p.flow_path, flow);
        assert_eq!(p.kind, Harness::Codex);
        assert_eq!(p.bin, bin);
        let catalog: serde_json::Value =
            serde_json::from_str(p.codex_catalog.as_deref().unwrap()).unwrap();
        assert_eq!(catalog["models"][0]["supports_search_tool"], false);
        assert_eq!(p.timeout, Some(Duration::from_secs(90)));
        // Never endless unless asked: 30 minutes by default, `0` for none.
        for (given, want) in [
            (None, Some(Duration::from_secs(30 * 60))),
            (Some("0"), None),
            (Some("2m"), Some(Duration::from_secs(120))),
        ] {
            let mut extra = vec!["--no-contain"];
            extra.extend(given.map(|g| ["--timeout", g]).into_iter().flatten());
            let mut b = args(&extra);
            b.project.project = Some(dir.path().to_path_buf());
            b.harness_bin.clone_from(&a.harness_bin);
            b.mcp_config = a.mcp_config.clone();
            assert_eq!(
                plan(&b, &flow, Harness::Codex).unwrap().timeout,
                want,
                "{given:?}"
            );
        }
        // `--model` reaches Codex as `-m`, after what the user passed.
        assert_eq!(p.extra, ["--disable", "goals", "-m", "x"]);
        assert_eq!(p.model.as_deref(), Some("x"));
        assert!(p.browser.is_none() && p.mcp_servers.len() == 1 && p.bwrap.is_none());
        assert_eq!(p.paths.project, std::fs::canonicalize(dir.path()).unwrap());
        // Nothing was touched: planning has no side effect.
        assert!(!dir.path().join(".leopold").exists());
    }

    #[test]
    fn a_plan_refuses_before_touching_anything() {
        let dir = tempfile::tempdir().unwrap();
        let flow = write_flow(dir.path(), "");
        let mut a = args(&["--", "-c", "features.codex_hooks=false"]);
        a.project.project = Some(dir.path().to_path_buf());
        let err = format!("{:#}", plan(&a, &flow, Harness::Codex).err().unwrap());
        assert!(err.starts_with("refused harness argument"), "{err}");
        let mut a = args(&[]);
        a.project.project = Some(dir.path().to_path_buf());
        a.harness_bin = vec![crate::cli::suite::parse_harness_bin(&format!(
            "codex={}",
            dir.path().join("no-such-codex").display()
        ))
        .unwrap()];
        a.mcp_config = mcp(dir.path());
        let err = format!("{:#}", plan(&a, &flow, Harness::Codex).err().unwrap());
        assert!(err.contains("no-such-codex` not found"), "{err}");
        // No browser: no `browser` key, no --browser, no --mcp-config.
        a.mcp_config = None;
        let err = format!("{:#}", plan(&a, &flow, Harness::Codex).err().unwrap());
        assert!(
            err.starts_with("flow `checkout` gives the persona no browser\n(hint: "),
            "{err}"
        );
        assert!(!dir.path().join(".leopold").exists());
        // A flow that provisions its browser cannot also take --mcp-config.
        let f = write_flow(dir.path(), "browser = \"playwright\"\n");
        let a = args(&["--mcp-config", "m.json"]);
        assert!(provisions_browser(&a, &Flow::load(&f).unwrap()));
    }
}
