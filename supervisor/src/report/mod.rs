//! What a run leaves for people and for CI: `report.html` ([`html`]), a JUnit file ([`junit`]),
//! and the one reader both use, [`RunRecord`], which reads a run directory alone: `run.json`,
//! `journal.jsonl`, `findings.md` when present, and the screenshots the journal names.
//!
//! A run directory is Leopold's own: a `run.json` or journal header it cannot read is refused
//! with the file named, and left as it is. A journal line it cannot read does not hide the rest:
//! the report lists the line as a problem and goes on, as replay does.
//!
//! Here, the record and what it says of the run; the reading itself is in `read`, and the
//! after-run hook with the flow a report shows in `after_run`.

mod after_run;
pub(crate) mod github;
pub mod html;
pub mod junit;
mod read;
pub mod steps;
mod verdict_html;

use std::path::PathBuf;

use leopold_journal::{Action, JournalHeader, Outcome, Verdict};

use crate::run_dir::RunDir;
use crate::state::ActiveState;

pub use after_run::{after_run, FlowSource};
pub use read::{read_run, read_run_summary};

/// Most actions a report shows; a run's journal is far shorter, but a report must stay a page a
/// browser opens (`persona replay` reads a journal of any length).
pub const MAX_ACTIONS: usize = 20_000;

/// One run directory, read.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// The run directory, absolute.
    pub dir: RunDir,
    /// `run.json`: absent while the run is active, or after a crash until `persona recover`.
    pub state: Option<ActiveState>,
    /// The journal's hash, when the run recorded one in `run.json`.
    pub journal_hash: Option<String>,
    /// The journal's header line.
    pub header: Option<JournalHeader>,
    /// Every action the journal holds, in order (the first [`MAX_ACTIONS`]).
    pub actions: Vec<Action>,
    /// Actions past [`MAX_ACTIONS`], counted, not kept.
    pub actions_not_shown: u64,
    /// Journal lines that could not be read (`line N: …`), in order.
    pub journal_problems: Vec<String>,
    /// `findings.md` (cut at 1 MiB, URLs reduced to their hosts), when present.
    pub findings: Option<String>,
    /// What the hash chains of the journal and the gateway's record show was changed after the
    /// run wrote them (docs/reference.md#reports), one line each; empty when both hold.
    pub tampered: Vec<String>,
}

impl RunRecord {
    /// The run's id: `run.json`'s, else the journal header's, else the directory's name.
    pub fn run_id(&self) -> String {
        self.state
            .as_ref()
            .map(|s| s.run_id.clone())
            .or_else(|| self.header.as_ref().map(|h| h.run_id.clone()))
            .unwrap_or_else(|| {
                self.dir
                    .path()
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
    }

    /// The flow's name.
    pub fn flow(&self) -> String {
        self.state
            .as_ref()
            .map(|s| s.flow.clone())
            .or_else(|| self.header.as_ref().map(|h| h.flow.clone()))
            .unwrap_or_else(|| "?".into())
    }

    /// `claude` or `codex`.
    pub fn harness(&self) -> String {
        self.state
            .as_ref()
            .map(|s| s.harness.as_str().to_owned())
            .or_else(|| self.header.as_ref().map(|h| h.harness.as_str().to_owned()))
            .unwrap_or_else(|| "?".into())
    }

    /// When the run started, RFC 3339.
    pub fn started_at(&self) -> Option<String> {
        self.state
            .as_ref()
            .map(|s| s.started_at.clone())
            .or_else(|| self.header.as_ref().map(|h| h.started_at.clone()))
    }

    /// The outcome as `run.json` names it, `unfinished` when the run has no `run.json` (still
    /// running, or crashed and not yet recovered), or `tampered` when a hash chain shows its
    /// records were changed: then nothing they say can be taken as clean.
    pub fn outcome(&self) -> String {
        if !self.tampered.is_empty() {
            return "tampered".into();
        }
        match self.state.as_ref().and_then(|s| s.end.as_ref()) {
            Some(end) => end.outcome.as_str().to_owned(),
            None => "unfinished".into(),
        }
    }

    /// The run's exit code, when it ended.
    pub fn exit_code(&self) -> Option<u8> {
        self.state
            .as_ref()
            .and_then(|s| s.end.as_ref())
            .map(|e| e.exit_code)
    }

    /// The flow file the run used.
    pub fn flow_path(&self) -> Option<PathBuf> {
        self.state
            .as_ref()
            .map(|s| s.flow_path.clone())
            .or_else(|| self.header.as_ref().map(|h| h.flow_path.clone()))
    }

    /// The run's duration, when it ended and both times parse.
    pub fn duration(&self) -> Option<std::time::Duration> {
        let st = self.state.as_ref()?;
        let end = st.end.as_ref()?;
        let a = humantime::parse_rfc3339_weak(&st.started_at).ok()?;
        let b = humantime::parse_rfc3339_weak(&end.ended_at).ok()?;
        b.duration_since(a).ok()
    }

    /// The walls the persona hit, one line each: `run.json`'s structured findings when the run
    /// recorded them (they include a `stuck` stop), else every denied, refused or violating
    /// action of the journal.
    pub fn walls(&self) -> Vec<String> {
        if let Some(end) = self.state.as_ref().and_then(|s| s.end.as_ref()) {
            if !end.findings.is_empty() {
                let mut out: Vec<String> = end.findings.iter().map(finding_line).collect();
                if end.findings_not_kept > 0 {
                    out.push(format!(
                        "… and {} more (the journal holds every one)",
                        end.findings_not_kept
                    ));
                }
                return out;
            }
        }
        self.actions
            .iter()
            .filter_map(|a| {
                let what = describe_action(a);
                if let Some(Verdict::Violation { rule, detail }) = &a.verdict {
                    let detail = detail
                        .as_deref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default();
                    return Some(format!("#{} violation: {rule}{detail}: {what}", a.seq));
                }
                if a.outcome == Outcome::Denied {
                    return Some(format!("#{} blocked: {}: {what}", a.seq, denial_reason(a)));
                }
                a.browser_blocked.as_ref().map(|b| {
                    format!(
                        "#{} browser refused ({}{}): {what}",
                        a.seq,
                        b.how,
                        b.host
                            .as_deref()
                            .map(|h| format!(", host {h}"))
                            .unwrap_or_default()
                    )
                })
            })
            .collect()
    }

    /// The screenshot an action references, as a file inside this run's browser output folder.
    pub fn screenshot_of(&self, action: &Action) -> Option<PathBuf> {
        let name = action.screenshot.as_deref()?;
        screenshot_path(&self.dir, name)
    }
}

/// The screenshot file `name` in `<run dir>/browser/output/` (while the run lives) or
/// `<run dir>/screenshots/` (once the browser's files are gone), if it is a plain file name there
/// (a name with a path separator or `..` is never followed: the journal names files, it does not
/// point at them).
fn screenshot_path(dir: &RunDir, name: &str) -> Option<PathBuf> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.starts_with('.');
    if !plain {
        return None;
    }
    [dir.browser_output(), dir.screenshots()]
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// One structured finding as a line: `#3 denied: outside_allowlist: mcp__b__navigate [evil.example]`.
/// The verdict as plain text, for JUnit and the terminal: the reported findings (detail
/// indented), `finish`, and each expectation. Starts with a blank line; empty when there is
/// nothing to say.
pub fn findings_text(v: &crate::verdict::Verdict) -> String {
    let mut t = String::new();
    if !v.reported.is_empty() {
        t.push_str("\nfindings the persona reported:\n");
        for f in &v.reported {
            let step = f.step.map(|s| format!(" (step {s})")).unwrap_or_default();
            t.push_str(&format!("  [{}] {}{step}\n", f.severity, f.title));
            for line in f.detail.lines() {
                t.push_str(&format!("      {line}\n"));
            }
        }
        if v.reported_not_kept > 0 {
            t.push_str(&format!("  … and {} more, not kept\n", v.reported_not_kept));
        }
    }
    if let Some(f) = &v.finish {
        let said = if f.goal_reached {
            "reached"
        } else {
            "not reached"
        };
        t.push_str(&format!("\ngoal {said}: {}\n", f.summary));
    }
    if !v.expectations.is_empty() {
        t.push_str("\nexpectations:\n");
        for e in &v.expectations {
            let mark = if e.met { "met  " } else { "UNMET" };
            t.push_str(&format!("  {mark} reach {}\n", e.reach));
        }
    }
    t
}

pub fn finding_line(f: &crate::state::Finding) -> String {
    let mut s = String::new();
    if let Some(seq) = f.seq {
        s.push_str(&format!("#{seq} "));
    }
    let kind = match f.kind.as_str() {
        "denied" => "blocked",
        "browser_refused" => "browser refused",
        k => k,
    };
    if f.kind == "stuck" {
        s.push_str(&f.reason);
    } else {
        s.push_str(&format!("{kind}: {}", f.reason));
    }
    if let Some(t) = &f.tool {
        s.push_str(&format!(": {t}"));
    }
    if let Some(l) = &f.label {
        s.push_str(&format!(" {l:?}"));
    }
    if !f.hosts.is_empty() {
        s.push_str(&format!(" [{}]", f.hosts.join(", ")));
    }
    s
}

/// Why a denied action was denied, as far as the journal says.
pub fn denial_reason(a: &Action) -> String {
    a.denied_reason
        .clone()
        .unwrap_or_else(|| "denied by the guard or the harness (no reason recorded)".into())
}

/// One line naming an action: tool, label, hosts (never a URL).
pub fn describe_action(a: &Action) -> String {
    let mut s = a.tool.clone();
    if let Some(l) = &a.label {
        s.push_str(&format!(" {l:?}"));
    }
    let hosts = a.hosts();
    if !hosts.is_empty() {
        s.push_str(&format!(" [{}]", hosts.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screenshots_are_plain_names_in_the_run_s_browser_output_only() {
        let (d, out) = crate::test_support::temp_path("browser/output");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("page-1.png"), b"x").unwrap();
        std::fs::write(d.path().join("secret.png"), b"x").unwrap();
        assert_eq!(
            screenshot_path(&RunDir::new(d.path()), "page-1.png"),
            Some(out.join("page-1.png"))
        );
        for bad in [
            "../../secret.png",
            "../secret.png",
            "/etc/passwd",
            "..",
            ".",
            "",
            "a/../../../secret.png",
            "missing.png",
        ] {
            assert_eq!(screenshot_path(&RunDir::new(d.path()), bad), None, "{bad}");
        }
    }
}
