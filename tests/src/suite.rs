//! A suite's world (issue #25): one staging shop, one scripted model (it answers from each
//! request's own history, so runs at once do not disturb each other), flows in
//! `<project>/flows/`, and both real CLIs with the provisioned browser. For the e2e suite and
//! `leopold-suite-bench`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::script::{Script, Turn};
use crate::staging::{browser_args, call, require_browser, AppOpts, StagingApp};
use crate::{leopold_bin, require_cli, Harness, ModelServer, Run, Sandbox};

/// How long a suite may take before the test fails.
const TIMEOUT: Duration = Duration::from_secs(300);

/// The shop, the model, the flows and both CLIs, in one project.
pub struct Suite {
    /// The sandbox: the project holds `flows/`.
    pub sb: Sandbox,
    /// The shop, as `staging.example.com`.
    pub app: StagingApp,
    /// The scripted model every run talks to.
    pub model: ModelServer,
    /// Both CLIs and the browser's programs, as `persona run` arguments.
    args: Vec<std::ffi::OsString>,
}

/// The shop's flow `name`: `staging.example.com` mapped to the shop on `port`, `expect` added.
pub fn flow(name: &str, port: u16, expect: &str) -> String {
    format!(
        "+++\nname = \"{name}\"\nallowlist = [\"staging.example.com\"]\n\
         [hosts]\n\"staging.example.com\" = \"127.0.0.1:{port}\"\n{expect}\n+++\n\
         Walk the shop as a first-time buyer.\n"
    )
}

/// The persona's `finish`: the goal reached.
pub fn finish() -> Turn {
    call(
        "finish",
        json!({"goal_reached": true, "summary": "Walked the shop."}),
    )
}

impl Suite {
    /// `flows/<name>.md` for each name, `turns` for every run; `None` where a CLI or the
    /// browser is missing (a panic in CI).
    pub fn new(app: AppOpts, names: &[&str], expect: &str, turns: Vec<Turn>) -> Option<Suite> {
        let claude = require_cli(Harness::Claude)?;
        let codex = require_cli(Harness::Codex)?;
        let (chromium, playwright_mcp) = require_browser()?;
        let sb = Sandbox::new();
        let app = StagingApp::start_with(&sb, app);
        let model = ModelServer::start(
            &sb,
            &Script {
                turns,
                final_answer: "Done.".into(),
            },
        );
        sb.write_codex_config(&model, "");
        let dir = sb.project.join("flows");
        std::fs::create_dir_all(&dir).unwrap();
        for n in names {
            std::fs::write(dir.join(format!("{n}.md")), flow(n, app.port, expect)).unwrap();
        }
        let mut bins = Command::new("unused");
        bins.arg(format!("--harness-bin=claude={}", claude.display()))
            .arg(format!("--harness-bin=codex={}", codex.display()));
        browser_args(&mut bins, &chromium, &playwright_mcp);
        let args = bins.get_args().map(ToOwned::to_owned).collect();
        Some(Suite {
            sb,
            app,
            model,
            args,
        })
    }

    /// `persona run <args…>` with both CLIs and the browser, in the project, hermetic.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(leopold_bin());
        cmd.args(["persona", "run"]).args(args).args(&self.args);
        self.sb.hermetic(&mut cmd, &self.model);
        cmd
    }

    /// [`Suite::cmd`], run to its end.
    pub fn run(&self, args: &[&str]) -> Run {
        self.sb.run(self.cmd(args), TIMEOUT)
    }

    /// The project's runs folder.
    pub fn runs_dir(&self) -> PathBuf {
        self.sb.project.join(".leopold/persona/runs")
    }
}
