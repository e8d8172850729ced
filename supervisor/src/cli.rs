//! Command-line definitions. Every flag's `--help` text is part of the docs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::harness::Harness;

pub mod suite;

/// Leopold bounds an autonomous coding agent (Claude Code, Codex CLI) walking a user flow on a
/// staging web app: a guard hook, a browser held to the flow's allowlist, and a supervisor that
/// journals and validates every action.
#[derive(Debug, Parser)]
#[command(
    name = "leopold",
    version,
    propagate_version = true,
    after_help = EXIT_CODES_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Trace each step on stderr with its timing (`-v`: lifecycle steps; `-vv`: more detail).
    /// `RUST_LOG` (e.g. `RUST_LOG=leopold=debug`) overrides it. Never on stdout, so `--json`
    /// output stays machine-readable.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

impl Cli {
    /// Parses the command line; `persona run` keeps clap's record of it, so that a suite gives
    /// its runs the flags it was given ([`RunArgs::matches`]).
    pub fn parse_keeping_matches() -> Result<Cli, clap::Error> {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let matches = Cli::command().try_get_matches()?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        if let Command::Persona(PersonaCommand::Run(args)) = &mut cli.command {
            args.matches = matches
                .subcommand_matches("persona")
                .and_then(|p| p.subcommand_matches("run"))
                .cloned();
        }
        Ok(cli)
    }
}

/// The exit codes every command shares (README.md#exit-codes).
pub const EXIT_CODES_HELP: &str = "\
Exit codes (every command; docs/reference.md#exit-codes-and-output):
  0  success: a clean run, a clean replay, valid flows, a healthy doctor
  1  violations (run, replay), or a problem found (doctor)
  2  usage or configuration error: bad flow, argument or file; nothing is left wired
  3  the worker failed, timed out or was interrupted, or the model endpoint refused the
     harness or could not be reached (model_failed) (run)
  4  the project is busy: a --no-contain run (it runs alone) beside other runs, or any run or
     recovery beside a live --no-contain run; nothing was touched (run, recover)
  5  the supervisor stopped the persona: stuck (denied `max_denials_in_a_row` times running),
     looping (the same call `max_repeats` times), over a budget (--max-tokens, --max-cost-usd,
     --max-turns) or a limit (--max-procs, --max-memory, --max-scratch, --max-records) (run)
  6  the app did not meet the flow (failed): a `reach` expectation unmet, a finding at or
     above the flow's `fail_on`, or `finish` with the goal not reached (run)

The project (where `.leopold/` lives) is found like git finds a repository: the nearest
ancestor of the current directory holding `.leopold/`, else the repository root (the nearest
holding `.git`), else the current directory; `--project DIR` overrides.

With `--json`, an error is one line on stdout:
  {\"type\":\"error\",\"exit_code\":N,\"message\":\"…\",\"hints\":[\"…\"]}";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Persona runs: run, guard, wiring, recovery, replay, reports, past runs.
    #[command(subcommand)]
    Persona(PersonaCommand),
    /// State, per harness, which bound is actually in force, and what to fix.
    Doctor(DoctorArgs),
    /// Flow files: check them without running anything.
    #[command(subcommand)]
    Flow(FlowCommand),
    /// Print a shell completion script (e.g. `leopold completions bash > ~/.local/share/bash-completion/completions/leopold`).
    Completions(CompletionsArgs),
}

impl Command {
    /// Whether the command was asked for JSON output (its errors are then JSON too).
    pub fn json(&self) -> bool {
        match self {
            Command::Persona(PersonaCommand::Run(a)) => a.json,
            Command::Persona(PersonaCommand::Replay(a)) => a.json,
            Command::Doctor(a) => a.json,
            Command::Flow(FlowCommand::Check(a)) => a.json,
            _ => false,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum FlowCommand {
    /// Validate flow files without running anything.
    ///
    /// Every file is checked, and every invalid one reported with the message `persona run`
    /// would give. Exit 0 when all are valid, 2 when one is not.
    Check(FlowCheckArgs),
}

#[derive(Debug, Args)]
pub struct FlowCheckArgs {
    /// The flow files (Markdown with TOML front matter).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON object per file: `{"type":"flow","file","ok","name"|"message","hints"}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Subcommand)]
pub enum PersonaCommand {
    /// Run a persona flow under a harness, guarded, journaled and validated.
    ///
    /// Exit codes: 0 clean run; 1 violations (the worker was stopped); 2 usage or configuration
    /// error (nothing left wired; a flow that gives the persona no browser is one); 3 the worker
    /// failed, timed out or was interrupted, or its model failed (`model_failed`: the endpoint
    /// refused the key or the model, or could not be reached; stopped within seconds); 4 another
    /// persona run is active in this project (nothing touched); 5 the worker was stopped: stuck
    /// (the flow's `max_denials_in_a_row` denials with no allowed action between), looping (the
    /// same allowed call `max_repeats` times running), over a budget (`--max-tokens`,
    /// `--max-cost-usd`, `--max-turns` or the harness's own turn limit) or over a limit; 6 failed: the app did not meet the flow (an `[expect]` page never reached,
    /// a reported finding at or above `fail_on`, or `finish` with the goal not reached).
    ///
    /// Beside the browser's tools the persona gets Leopold's own: `report_finding` (a problem with
    /// the app, as data) and `finish` (whether it reached the goal). Its findings go into
    /// run.json, report.html, JUnit and `persona runs`; its final answer is saved as `findings.md`
    /// and printed after the summary. The model, turns, tokens and cost go in run.json
    /// (`end.usage`), the summary, `persona runs` and JUnit. See docs/guide.md#running-a-persona,
    /// docs/reference.md#the-verdict, docs/reference.md#cost-and-budgets.
    ///
    /// The worker is offered the flow's browser tools and nothing else, whatever the user's or
    /// the project's harness settings say (Claude `--tools ""`, `--setting-sources project`,
    /// `--permission-mode default`; Codex `-s read-only`, the shell, web search and sub-agents
    /// off). A Codex run wires the guard into its own copy of the user's `config.toml`
    /// (`<run dir>/scratch/.codex`), never the user's file; a boxed Claude run passes it with its
    /// own `--settings` file and edits no file of the user's (with `--no-contain`, the project's
    /// `.claude/settings.json` is wired too). docs/security.md#only-the-browser,
    /// docs/reference.md#wiring.
    Run(Box<RunArgs>),
    /// The PreToolUse hook: reads the harness payload on stdin; exit 0 allows, exit 2 denies.
    ///
    /// Wired into the harness by `persona run` (or `persona wire`); not meant to be run by hand.
    Guard,
    /// Wire the persona guard into a harness's PreToolUse hooks.
    ///
    /// Adds one hook group, matcher `mcp__.*|WebFetch`, whose one command handler runs this
    /// binary's guard: `'<path of leopold>' persona guard # leopold-persona-guard` (the tag is a
    /// shell comment that marks the handler as Leopold's), with a timeout of 5 s and, for Claude
    /// Code 2.1.295 and later, `"onFailure": "block"`.
    ///
    /// Claude: the project's `.claude/settings.json` (created if missing). Codex:
    /// `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), as `[[hooks.PreToolUse]]`.
    /// Idempotent; everything else in the file is kept as it is, byte for byte. What the file was
    /// before is recorded in `.leopold/persona/wiring/<harness>.json` for `persona unwire`.
    /// A file that is not valid JSON/TOML, or whose hooks have an unexpected shape, is refused
    /// and left untouched.
    ///
    /// Wiring made here is recorded as made by hand: `doctor` reports it as a note, and neither a
    /// run nor `persona recover` removes it; `persona unwire` does.
    Wire(WireArgs),
    /// Remove the persona guard's wiring (only handlers tagged `leopold-persona-guard`).
    ///
    /// If the settings file still holds exactly what `persona wire` wrote, it is restored byte for
    /// byte (or removed again, with `.claude/`, if wire created them). Otherwise only the handlers
    /// tagged `leopold-persona-guard` are removed (with a group, or a `hooks`/`PreToolUse` key
    /// wire added, that this leaves empty), keeping your edits. Nothing wired: a no-op that
    /// succeeds.
    Unwire(UnwireArgs),
    /// Clean up after crashed runs: stop each one's worker, unwire, archive its state.
    ///
    /// Every run the project names as active is checked by its own lock: a crashed one is
    /// recovered, a live one (a boxed run of a suite, say) is left alone and listed. Also removes
    /// tagged guard wiring no active run accounts for (wiring made with `persona wire` is yours
    /// and stays). Refuses (exit 4) only while a live `--no-contain` run holds the project
    /// alone. See docs/reference.md#recovery.
    Recover(ProjectArgs),
    /// Re-validate a recorded journal (or a raw harness stream) against its flow, and check its
    /// hash chain.
    ///
    /// Exit codes: 0 clean; 1 a violation, a disagreement the run recorded between the stream and
    /// the gateway's record, a broken hash chain (a line edited, removed or moved:
    /// the first line that does not follow the one before is named), or a head other than
    /// `--expect` or `run.json`'s `journal_hash`; 2 unreadable input, or malformed lines or `seq`
    /// gaps. A journal from before the chain (version 1) is reported as unchained: no tamper
    /// evidence. See docs/reference.md#replay, docs/reference.md#journal.
    Replay(ReplayArgs),
    /// Render a run's report.html again, from its run directory alone.
    ///
    /// One self-contained page (inline CSS, no script, no network): the flow (name, allowlist,
    /// rules), the outcome and exit code, the findings, and a timeline of every action with its
    /// hosts, label, outcome, the reason for each block or violation, the page it ended on and
    /// the screenshot after it. `persona run` writes it at the end of every run. Prints the path
    /// written.
    ///
    /// The hash chains of the journal and the gateway's record are checked first, as `persona
    /// replay` checks them: a run whose records were changed after it ended (a line edited,
    /// removed or moved, lines cut, a head other than run.json's) is rendered `tampered`, never
    /// clean, and the command exits 1. See docs/reference.md#reports.
    ///
    /// With `--merge DIR... --out DIR`: gathers the run directories of several jobs into one
    /// folder and writes the suite's `suite.html` and `junit.xml` there
    /// (docs/reference.md#merging-shards).
    Report(ReportArgs),
    /// List the project's persona runs, newest first.
    ///
    /// Id, flow, harness, start, duration, outcome (exit code), action counts and run directory.
    /// A run with no run.json is `active` (it is live: its own lock is held) or `unfinished` (it
    /// crashed: `leopold persona recover`). See docs/reference.md#past-runs.
    Runs(RunsArgs),
    /// The worker's MCP server: relays its stdio to the supervisor's gateway socket.
    ///
    /// `persona run` gives the worker this command instead of each MCP server (the provisioned
    /// browser, and every stdio server of `--mcp-config`); the harness starts it inside the box.
    /// It judges nothing: the supervisor's end of the socket (the gateway, outside the box)
    /// starts the real server and judges every message. It exits when either side closes. Not
    /// meant to be run by hand. See docs/security.md#the-gateway.
    McpRelay(McpRelayArgs),
}

#[derive(Debug, Args)]
pub struct McpRelayArgs {
    /// The gateway's socket (`<run socket dir>/mcp-<server>.sock`).
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
}

/// `--harness claude|codex`, parsed straight into the one [`Harness`] enum.
fn harness_parser() -> impl clap::builder::TypedValueParser<Value = Harness> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new(
        Harness::ALL.map(|h| PossibleValue::new(h.as_str()).help(crate::harness::describe(h))),
    )
    .try_map(|s| s.parse::<Harness>())
}

/// `--harness claude|codex|all`: one harness, or every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HarnessChoice(pub Option<Harness>);

impl HarnessChoice {
    /// The harnesses chosen.
    pub fn harnesses(self) -> Vec<Harness> {
        self.0.map_or_else(|| Harness::ALL.to_vec(), |h| vec![h])
    }
}

/// `--harness claude|codex|all`, each harness's name from the one [`Harness`] enum.
fn harness_choice_parser() -> impl clap::builder::TypedValueParser<Value = HarnessChoice> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    let each =
        Harness::ALL.map(|h| PossibleValue::new(h.as_str()).help(crate::harness::describe(h)));
    PossibleValuesParser::new(
        each.into_iter()
            .chain([PossibleValue::new("all").help("Both")]),
    )
    .map(|s| HarnessChoice(s.parse::<Harness>().ok()))
}

/// `--from claude-stream|codex-json`: the harness whose raw stream it is.
fn stream_format_parser() -> impl clap::builder::TypedValueParser<Value = Harness> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    let names = Harness::ALL.map(|h| {
        let (name, what) = crate::harness::stream_format(h);
        PossibleValue::new(name).help(what)
    });
    PossibleValuesParser::new(names).map(|s| {
        Harness::ALL
            .into_iter()
            .find(|h| crate::harness::stream_format(*h).0 == s)
            .expect("one of the possible values")
    })
}

#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The project root (holds `.leopold/`). Default: the nearest ancestor of the current
    /// directory holding `.leopold/`, else the repository root (holding `.git`), else the
    /// current directory.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WireArgs {
    /// Which harness to wire.
    #[arg(long, value_parser = harness_parser())]
    pub harness: Harness,
    #[command(flatten)]
    pub project: ProjectArgs,
    /// The Claude Code executable whose version decides whether the hook gets
    /// `"onFailure": "block"` (2.1.295 and later). Default: `claude` on PATH (if it is not
    /// there, wire warns and leaves `onFailure` out). A PATH that cannot be run is refused.
    #[arg(long, value_name = "PATH")]
    pub harness_bin: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UnwireArgs {
    /// Which harness to unwire (`all` for both).
    #[arg(long, value_parser = harness_choice_parser())]
    pub harness: HarnessChoice,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The flow files (Markdown with TOML front matter), e.g. `flows/checkout.md`, or folders
    /// of them (every `*.md` in the folder, by name). One flow under one harness is one run;
    /// more flows, more harnesses, `--attempts` above 1 or `--partition` make a suite, each flow ×
    /// harness pair its own boxed run (docs/reference.md#suites).
    #[arg(value_name = "FLOW", required = true)]
    pub flows: Vec<PathBuf>,
    /// Which harness runs the persona: `claude`, `codex`, both as `claude,codex`, or `all`.
    #[arg(long, value_parser = harness_choice_parser(), value_delimiter = ',', required = true)]
    pub harness: Vec<HarnessChoice>,
    /// Running several flows or harnesses: a suite.
    #[command(flatten)]
    pub suite: suite::SuiteArgs,
    /// The command line as clap read it, for a suite's runs to be given the same flags.
    #[arg(skip)]
    pub matches: Option<clap::ArgMatches>,
    #[command(flatten)]
    pub project: ProjectArgs,
    /// The harness executable: `PATH` for every harness of the run, or `HARNESS=PATH` for one
    /// (repeatable: `--harness-bin claude=/opt/claude --harness-bin codex=/opt/codex`).
    /// Default: `claude` or `codex` on PATH.
    #[arg(long, value_name = "[HARNESS=]PATH", value_parser = suite::parse_harness_bin)]
    pub harness_bin: Vec<suite::HarnessBin>,
    /// Stop the worker after this long (e.g. `90s`, `10m`; `0` for no limit). Exit code 3;
    /// run.json and the summary say what the run was waiting for when time ran out.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout, default_value = "30m")]
    pub timeout: std::time::Duration,
    /// An MCP config file (Claude `--mcp-config` format) giving the worker its browser tools.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Provision the worker's browser: Playwright MCP with Chromium, every request it sends
    /// judged by Leopold's proxy against the flow (overrides the flow's `browser` key;
    /// docs/security.md#the-browsers-network-path).
    #[arg(
        long,
        value_enum,
        value_name = "BROWSER",
        conflicts_with = "mcp_config"
    )]
    pub browser: Option<BrowserName>,
    /// Chromium for the provisioned browser. Default: /usr/bin/chromium.
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
    /// The `playwright-mcp` executable. Default: $LEOPOLD_PLAYWRIGHT_MCP, else the one
    /// `scripts/install-browser.sh` put in ${LEOPOLD_CACHE:-~/.cache/leopold}.
    #[arg(long, value_name = "PATH")]
    pub playwright_mcp: Option<PathBuf>,
    /// A PEM file of CA certificates the provisioned browser's proxy trusts for your app's own
    /// certificate (an https staging app with a private CA), besides the system's. Repeatable.
    /// docs/security.md#the-browsers-network-path.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Vec<PathBuf>,
    /// What the gateway keeps of the provisioned browser's pages, in the run directory
    /// (docs/reference.md#evidence): `steps`, a screenshot after every call that can change the
    /// page and the run's Playwright trace (`trace.zip`); `walls`, a screenshot only after a call
    /// that was denied, errored or refused, and no trace; `none`, neither. Screenshots and
    /// traces show what the pages showed, data included. The model never sees them.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "steps")]
    pub evidence: crate::run_dir::Evidence,
    /// Keep the provisioned browser's files (its profile: the app's cookies) and the box's
    /// scratch (the worker's HOME: the harness's transcripts, with full URLs) in the run
    /// directory when the run ends, for debugging. By default both are removed, so that the runs
    /// folder is safe to upload (docs/reference.md#run-directory); a kept run directory is not,
    /// and the run says so on stderr and in its summary.
    #[arg(long)]
    pub keep_scratch: bool,
    /// Print only the final summary.
    #[arg(long, conflicts_with = "json")]
    pub quiet: bool,
    /// Print one JSON object per event, for machines: each with `event`, `ts` (RFC 3339) and
    /// `schema_version`; paths absolute. docs/reference.md#--json-events.
    #[arg(long)]
    pub json: bool,
    /// Also write the run as a JUnit XML report to FILE (one test suite for the run, one test
    /// case for the flow; a violation or a worker failure is a failure with its reason; the
    /// findings go in `system-out`), for CI. A suite writes one file: a test suite per flow, a
    /// test case per harness, earlier attempts as `<flakyFailure>`/`<rerunFailure>`. See
    /// docs/guide.md#ci.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Run the worker without the box (docs/security.md#the-box): no PID, network or file
    /// isolation,
    /// only the guard, the browser's rules and the journal. Said again on every run. Without this
    /// flag a machine that cannot build the box (no bubblewrap, no namespaces, not Linux) refuses
    /// to run (exit 2).
    #[arg(long)]
    pub no_contain: bool,
    /// The box's limits.
    #[command(flatten)]
    pub limits: Box<LimitArgs>,
    /// The model and the run's budgets.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Extra arguments passed to the harness, refused (exit 2) if they would disable hooks or
    /// give the worker a tool besides the browser (Claude `--tools`, `--allowedTools`,
    /// `--permission-mode`, …; Codex `-s`, `--full-auto`, `-c features.…`, `-c mcp_servers.…`, …:
    /// docs/reference.md#what-a-run-does, step 6), or if they pick the model or a limit that
    /// `--model`, `--max-turns` and `--max-cost-usd` set (Claude `--model`, `--max-turns`,
    /// `--max-budget-usd`; Codex `-m`, `-c model=…`).
    #[arg(last = true, value_name = "HARNESS ARGS")]
    pub extra: Vec<String>,
}

/// `persona run`'s limits on the boxed worker (docs/security.md#limits), boxed: they would
/// make every command's arguments larger.
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// The most processes the boxed worker's whole tree may hold at once (a count, or `none`).
    /// Past it, `fork` fails inside the box and the run stops: outcome `over_limit`, exit 5
    /// (docs/security.md#limits).
    #[arg(long, value_name = "N", value_parser = crate::sandbox::limits::parse_count, default_value = "512")]
    pub max_procs: ::std::option::Option<u64>,
    /// The most memory the boxed worker's tree may use, its scratch included (e.g. `4GiB`,
    /// `512MiB`, or `none`). Past it, the kernel kills a process of the tree and the run stops:
    /// `over_limit`, exit 5.
    #[arg(long, value_name = "SIZE", value_parser = crate::sandbox::limits::parse_size, default_value = "4GiB")]
    pub max_memory: ::std::option::Option<u64>,
    /// The most the boxed worker's scratch (its HOME, a tmpfs) may hold (e.g. `1GiB`, or
    /// `none`: the scratch folder on disk, unbounded). Full, a write fails with "no space left"
    /// and the run stops: `over_limit`, exit 5. Nothing the worker wrote is left after the run.
    #[arg(long, value_name = "SIZE", value_parser = crate::sandbox::limits::parse_size, default_value = "1GiB")]
    pub max_scratch: ::std::option::Option<u64>,
    /// The most Leopold writes on the worker's behalf into each of the run's records: the guard
    /// events from the box (`events.jsonl`) and the gateway record (`gateway.jsonl`) (e.g.
    /// `64MiB`, or `none`). Past it, nothing more is written, a call is refused unrecorded, and
    /// the run stops: `over_limit`, exit 5.
    #[arg(long, value_name = "SIZE", value_parser = crate::sandbox::limits::parse_size, default_value = "64MiB")]
    pub max_records: ::std::option::Option<u64>,
}

/// `persona run`'s model and budgets (docs/reference.md#cost-and-budgets): each over-budget stop
/// is outcome `over_budget`, exit 5.
#[derive(Debug, Clone, Args)]
pub struct BudgetArgs {
    /// The model the harness uses (Claude `--model`, an alias such as `sonnet` or a full name;
    /// Codex `-m`). Default: the harness's own. Not to be given after `--` as well.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Stop the run after this many model turns: Claude stops itself (`--max-turns`); Codex has
    /// no such limit, and Leopold counts each call and message of its stream as a turn.
    /// `over_budget`, exit 5.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_turns: Option<u64>,
    /// Stop the run once the tokens the harness reports (input, output, cache read and write)
    /// pass N: `over_budget`, exit 5.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Stop the run once its cost passes USD (e.g. `0.50`). Claude reports its cost and stops
    /// itself (`--max-budget-usd`); Codex reports none, so this flag does not bound it.
    /// `over_budget`, exit 5.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BrowserName {
    /// `@playwright/mcp` driving the system's Chromium.
    Playwright,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A `journal.jsonl`, a run directory holding one, or (with `--from`) a raw harness stream.
    #[arg(value_name = "JOURNAL|RUN_DIR")]
    pub input: PathBuf,
    /// Check against this flow instead of the run directory's own copy (`flow.md`), or, for an
    /// older run directory without one, the flow file its `run.json` names.
    #[arg(long, value_name = "FILE")]
    pub flow: Option<PathBuf>,
    /// Print violations and the summary as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Read a raw harness stream instead of a Leopold journal (needs `--flow`).
    #[arg(long, value_name = "FORMAT", value_parser = stream_format_parser())]
    pub from: Option<Harness>,
    /// The head the journal must end on: the `journal_hash` saved when the run ended (its
    /// `run_ended` event or summary). Exit 1 when it differs, so a cut tail or an edited last
    /// line, which the chain alone cannot show, is caught.
    #[arg(long, value_name = "HEX", value_parser = parse_hash)]
    pub expect: Option<leopold_journal::JournalHash>,
    /// Threads checking the journal's lines (default: one per CPU, at most 8). The findings,
    /// their order and the exit code are the same with any number; `--threads 1` reads and
    /// checks on one thread.
    #[arg(long, value_name = "N")]
    pub threads: Option<std::num::NonZeroUsize>,
}

fn parse_hash(s: &str) -> Result<leopold_journal::JournalHash, String> {
    s.parse()
        .map_err(|e: leopold_journal::chain::ParseHashError| e.to_string())
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory, `.leopold/persona/runs/<run_id>`.
    #[arg(value_name = "RUN_DIR", required_unless_present = "merge")]
    pub run_dir: Option<PathBuf>,
    /// Write the page here instead of `<RUN_DIR>/report.html`; with `--merge`, the folder to
    /// merge into.
    #[arg(long, value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
    /// Also write the run as a JUnit XML report to FILE, as `persona run --junit` does (a
    /// `tampered` run is a failure). See docs/guide.md#ci.
    #[arg(long, value_name = "FILE", conflicts_with = "merge")]
    pub junit: Option<PathBuf>,
    /// Merge runs from several jobs (shards) into one suite: copy every run directory of each
    /// DIR (a run directory, or a folder of them such as a downloaded runs folder) into
    /// `--out DIR/<run_id>/`, then write `DIR/suite.html` and `DIR/junit.xml` for them all.
    /// Refuses, writing nothing, when two different runs share an id. Exits with the worst case's code
    /// (0 when every case passed or was flaky). See docs/reference.md#merging-shards.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with = "run_dir", requires = "out")]
    pub merge: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Print `{"project", "runs": [...]}` as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Print the findings as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also ask each harness's model endpoint, with its key, for its model list: a refused key
    /// (401, 403), a wrong base URL (404) or an endpoint that cannot be reached is a problem.
    /// Sends the key to the endpoint it is for, and nothing else; a login file's token is not
    /// tried.
    #[arg(long)]
    pub online: bool,
}

/// `--timeout`: a humantime duration, or a bare `0` for no limit.
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    if s.trim() == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("{e} (e.g. `90s`, `10m`, `1h`; `0` for no limit)"))
}

/// `--max-cost-usd`: a positive amount in USD.
fn parse_usd(s: &str) -> Result<f64, String> {
    match s.trim().trim_start_matches('$').parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not an amount in USD above 0 (e.g. `0.50`, `2`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn an_amount_must_be_positive() {
        assert_eq!(parse_usd("0.50"), Ok(0.5));
        assert_eq!(parse_usd("$2"), Ok(2.0));
        for bad in ["0", "-1", "x", "NaN", "inf"] {
            assert!(parse_usd(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
