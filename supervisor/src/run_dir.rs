//! One run's directory, `.leopold/persona/runs/<run_id>/`, and the name of every file in it,
//! spelled here once: the run writes them, recovery and teardown archive them, `persona report`
//! and `persona runs` read them. (`persona replay` is the journal crate's, which cannot depend on
//! this one: `leopold_journal::replay` names the journal, `run.json` and the gateway's record
//! itself; a test holds the two spellings equal, and this file imports nothing of Leopold's, so
//! every layer can name a run's files.)

use std::path::{Path, PathBuf};

/// A run directory. Its files are named by its methods; nothing else joins a name onto it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct RunDir(PathBuf);

impl RunDir {
    /// `run.json`: ACTIVE.json's final state, with `end`, once the run ended.
    pub const RUN_JSON: &'static str = "run.json";
    /// The journal, hash-chained (docs/reference.md#journal).
    pub const JOURNAL: &'static str = "journal.jsonl";
    /// The gateway's record of every call it saw, hash-chained (docs/security.md#the-gateway).
    pub const GATEWAY_RECORD: &'static str = "gateway.jsonl";
    /// The persona's final answer, saved verbatim (when it gave one).
    pub const FINDINGS: &'static str = "findings.md";
    /// The run's report page.
    pub const REPORT: &'static str = "report.html";
    /// What the model wrote between its calls, host-only (`report::narration`).
    pub const NARRATION: &'static str = "narration.jsonl";
    /// The folder of the gateway's screenshots, one a step (`--evidence`).
    pub const EVIDENCE: &'static str = "evidence";
    /// A boxed run's guard events (its denials, host-only), one JSON line each.
    pub const EVENTS: &'static str = "events.jsonl";
    /// The run's Playwright trace (`--evidence steps`).
    pub const TRACE: &'static str = "trace.zip";
    /// The copy of the flow the run ran, written when it starts: replay and reports read it, so
    /// that the run directory needs nothing outside it (docs/reference.md#run-directory).
    pub const FLOW: &'static str = "flow.md";
    /// The screenshots the persona took itself, kept from the browser's files when they go.
    pub const SCREENSHOTS: &'static str = "screenshots";

    pub fn new(path: impl Into<PathBuf>) -> RunDir {
        RunDir(path.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn run_json(&self) -> PathBuf {
        self.0.join(Self::RUN_JSON)
    }

    pub fn journal(&self) -> PathBuf {
        self.0.join(Self::JOURNAL)
    }

    pub fn gateway_record(&self) -> PathBuf {
        self.0.join(Self::GATEWAY_RECORD)
    }

    /// What the gateway's server `server` wrote on its stderr.
    pub fn gateway_log(&self, server: &str) -> PathBuf {
        self.0.join(format!("gateway-{server}.log"))
    }

    pub fn flow(&self) -> PathBuf {
        self.0.join(Self::FLOW)
    }

    pub fn screenshots(&self) -> PathBuf {
        self.0.join(Self::SCREENSHOTS)
    }

    pub fn events(&self) -> PathBuf {
        self.0.join(Self::EVENTS)
    }

    pub fn findings(&self) -> PathBuf {
        self.0.join(Self::FINDINGS)
    }

    pub fn report(&self) -> PathBuf {
        self.0.join(Self::REPORT)
    }

    /// Leopold's own files for the run, copied into the box's scratch (docs/security.md#the-box),
    /// and the worker's HOME there; removed when the run ends, unless `--keep-scratch`.
    pub fn scratch(&self) -> PathBuf {
        self.0.join("scratch")
    }

    /// The provisioned browser's files: its configuration, profile and home; removed when the
    /// run ends, unless `--keep-scratch`.
    pub fn browser(&self) -> PathBuf {
        self.0.join("browser")
    }

    /// Where the browser saves screenshots and snapshots: its MCP servers' working directory.
    pub fn browser_output(&self) -> PathBuf {
        self.browser().join("output")
    }

    /// Claude's `--settings` file, while the run lives.
    pub fn guard_settings(&self) -> PathBuf {
        self.0.join("guard-settings.json")
    }

    /// The MCP configuration the worker is given: the gateway's relay for each server.
    pub fn mcp_relay(&self) -> PathBuf {
        self.0.join("mcp-relay.json")
    }
}

#[cfg(test)]
mod tests {
    use super::RunDir;

    #[test]
    fn the_journal_crate_names_the_same_files() {
        assert_eq!(
            RunDir::GATEWAY_RECORD,
            leopold_journal::replay::GATEWAY_RECORD
        );
        assert_eq!(RunDir::FLOW, leopold_journal::replay::FLOW);
    }
}

/// `--evidence`: what the gateway keeps of the provisioned browser's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Evidence {
    /// A screenshot after every call that can change the page (and after every denied call),
    /// and the run's Playwright trace (`trace.zip`).
    #[default]
    Steps,
    /// A screenshot only after a call that was denied, errored, or whose requests the browser's
    /// proxy refused: the walls the persona hit. No trace.
    Walls,
    /// No screenshot, no trace.
    None,
}
