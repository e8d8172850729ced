//! What a run leaves for people and for CI: `report.html` ([`html`]), a JUnit file ([`junit`]),
//! and the one reader both use, [`RunRecord`], which reads a run directory alone: `run.json`,
//! `journal.jsonl`, `findings.md` when present, and the screenshots the journal names.
//!
//! A run directory is Leopold's own: a `run.json` or journal header it cannot read is refused
//! with the file named, and left as it is. A journal line it cannot read does not hide the rest:
//! the report lists the line as a problem and goes on, as replay does.

pub mod html;
pub mod junit;

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use leopold_journal::lines::LineReader;
use leopold_journal::{
    Action, JournalHeader, Outcome, Verdict, JOURNAL_VERSION, UNCHAINED_JOURNAL_VERSION,
};

use crate::run_dir::RunDir;
use crate::state::ActiveState;

/// Longest `findings.md` shown; the rest is cut with a note (a model can write a lot).
const MAX_FINDINGS: u64 = 1 << 20;
/// Most actions a report shows; a run's journal is far shorter, but a report must stay a page a
/// browser opens (`persona replay` reads a journal of any length).
pub const MAX_ACTIONS: usize = 20_000;
/// Longest journal line read, as replay (`leopold_journal::replay::MAX_LINE`); a longer one is
/// listed as a problem and skipped.
const MAX_LINE: usize = leopold_journal::replay::MAX_LINE;
/// Unreadable journal lines listed one by one; past that, one line says there are more.
const MAX_PROBLEMS: u64 = 100;

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

/// The screenshot file `name` in `<run dir>/browser/output/`, if it is a plain file name there
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
    let p = dir.browser_output().join(name);
    p.is_file().then_some(p)
}

/// One structured finding as a line: `#3 denied: outside_allowlist: mcp__b__navigate [evil.example]`.
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

/// Reads a run directory: `run.json`, the whole journal, `findings.md`.
///
/// # Errors
///
/// The directory is missing or holds neither `run.json` nor `journal.jsonl`; `run.json` or the
/// journal's header is unreadable. Each error names the file.
pub fn read_run(dir: &Path) -> anyhow::Result<RunRecord> {
    let mut rec = read_run_summary(dir)?;
    let journal = rec.dir.journal();
    if journal.exists() {
        read_journal(&journal, &mut rec)?;
    }
    rec.findings = read_findings(&rec.dir.findings())?;
    rec.tampered = check_chains(&rec)?;
    Ok(rec)
}

/// Checks the hash chains as `persona replay` does: every link of the journal (a chained one)
/// and of the gateway's record, and each file's head against the one `run.json` recorded. A
/// line edited, inserted, removed or moved breaks a link; lines cut from the end, or a file
/// replaced, leave another head. A torn last line (a crash mid-write) is not a break.
fn check_chains(rec: &RunRecord) -> anyhow::Result<Vec<String>> {
    let end = rec.state.as_ref().and_then(|s| s.end.as_ref());
    let chained = rec
        .header
        .as_ref()
        .is_some_and(|h| h.leopold_journal == JOURNAL_VERSION);
    let mut out = Vec::new();
    let files = [
        (
            RunDir::JOURNAL,
            rec.dir.journal(),
            chained,
            rec.journal_hash.as_deref(),
            "the journal",
        ),
        (
            RunDir::GATEWAY_RECORD,
            rec.dir.gateway_record(),
            true,
            end.and_then(|e| e.gateway_hash.as_deref()),
            "the gateway's record",
        ),
    ];
    for (name, path, check, recorded, what) in files {
        let io = |e: std::io::Error| {
            anyhow::Error::new(e).context(format!("cannot read {}", path.display()))
        };
        let head = match std::fs::File::open(&path) {
            Ok(mut f) if check => {
                let torn = ends_torn(&mut f).map_err(io)?;
                let reader = std::io::BufReader::new(f);
                let c = leopold_journal::chain::check_lines(reader, MAX_LINE).map_err(io)?;
                let torn_only =
                    torn && c.breaks == 1 && c.first_break.as_ref().map(|b| b.0) == Some(c.lines);
                if let Some((line, problem)) = c.first_break.filter(|_| !torn_only) {
                    out.push(format!(
                        "{name} line {line}: {problem}: the hash chain breaks there ({}): a line was edited, removed, inserted or moved",
                        crate::output::count(c.breaks, "broken link")
                    ));
                }
                c.head
            }
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(e)),
        };
        if let Some(expected) = recorded {
            let same = head.is_some_and(|h| {
                expected
                    .parse::<leopold_journal::JournalHash>()
                    .is_ok_and(|e| e == h)
            });
            if !same {
                out.push(format!(
                    "{name} does not end on the head run.json recorded for {what}: lines were cut from the end, the last line edited, or the file replaced or removed"
                ));
            }
        }
    }
    Ok(out)
}

/// Whether the file's last byte is not a newline (its last line torn); the file is left at its
/// start.
fn ends_torn(f: &mut std::fs::File) -> std::io::Result<bool> {
    use std::io::{Seek as _, SeekFrom};
    let len = f.seek(SeekFrom::End(0))?;
    let torn = if len == 0 {
        false
    } else {
        f.seek(SeekFrom::End(-1))?;
        let mut b = [0u8; 1];
        f.read_exact(&mut b)?;
        b[0] != b'\n'
    };
    f.seek(SeekFrom::Start(0))?;
    Ok(torn)
}

/// Reads what a listing needs: `run.json` and the journal's header line only.
///
/// # Errors
///
/// As [`read_run`].
pub fn read_run_summary(dir: &Path) -> anyhow::Result<RunRecord> {
    let dir = std::path::absolute(dir)
        .with_context(|| format!("cannot resolve run directory {}", dir.display()))?;
    if !dir.is_dir() {
        anyhow::bail!(
            "run directory {} does not exist\n(hint: runs are under .leopold/persona/runs/; `leopold persona runs` lists them)",
            dir.display()
        );
    }
    let dir = RunDir::new(dir);
    let run_json = dir.run_json();
    let journal = dir.journal();
    if !run_json.exists() && !journal.exists() {
        anyhow::bail!(
            "{} is not a run directory: it holds neither run.json nor journal.jsonl\n(hint: runs are under .leopold/persona/runs/; `leopold persona runs` lists them)",
            dir.path().display()
        );
    }
    let (state, journal_hash) = if run_json.exists() {
        let (s, h) = read_run_json(&run_json)?;
        (Some(s), h)
    } else {
        (None, None)
    };
    let header = if journal.exists() {
        Some(read_header(&journal)?)
    } else {
        None
    };
    Ok(RunRecord {
        dir,
        state,
        journal_hash,
        header,
        actions: Vec::new(),
        actions_not_shown: 0,
        journal_problems: Vec::new(),
        findings: None,
        tampered: Vec::new(),
    })
}

/// `run.json`, strictly (it is Leopold's own file), plus its `journal_hash` wherever this or a
/// later version puts it (top level or under `end`).
fn read_run_json(path: &Path) -> anyhow::Result<(ActiveState, Option<String>)> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut v: serde_json::Value = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{} is not valid JSON; it was left as it is\n(hint: `leopold persona replay {}` still reads the journal)",
            path.display(),
            path.parent().unwrap_or(Path::new(".")).display()
        )
    })?;
    let mut hash = None;
    if let Some(o) = v.as_object_mut() {
        if let Some(serde_json::Value::String(h)) = o.remove("journal_hash") {
            hash = Some(h);
        }
        if let Some(end) = o.get_mut("end").and_then(|e| e.as_object_mut()) {
            if let Some(serde_json::Value::String(h)) = end.remove("journal_hash") {
                hash.get_or_insert(h);
            }
        }
    }
    let state: ActiveState = serde_json::from_value(v).with_context(|| {
        format!(
            "{} is not a run.json this version of leopold understands; it was left as it is\n(hint: render it with the leopold that wrote it)",
            path.display()
        )
    })?;
    Ok((state, hash))
}

fn read_header(path: &Path) -> anyhow::Result<JournalHeader> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = LineReader::new(std::io::BufReader::new(f), 1 << 20);
    let line = lines
        .next_line()
        .with_context(|| format!("cannot read {}", path.display()))?;
    // A header too long to read is read as none.
    let line = line.and_then(|l| l.bytes).unwrap_or_default();
    parse_header(line).with_context(|| format!("{} is not a Leopold journal", path.display()))
}

fn parse_header(line: &[u8]) -> anyhow::Result<JournalHeader> {
    let v: serde_json::Value =
        serde_json::from_slice(line).context("line 1 is not a JSON header")?;
    match v.get("leopold_journal").and_then(|x| x.as_u64()) {
        Some(n) if n == u64::from(JOURNAL_VERSION) || n == u64::from(UNCHAINED_JOURNAL_VERSION) => {}
        Some(n) => anyhow::bail!(
            "line 1: version {n} journal; this leopold reads versions {UNCHAINED_JOURNAL_VERSION} and {JOURNAL_VERSION}"
        ),
        None => anyhow::bail!("line 1 has no `leopold_journal` version"),
    }
    serde_json::from_value(v).context("line 1 is not a valid header")
}

fn read_journal(path: &Path, rec: &mut RunRecord) -> anyhow::Result<()> {
    let io = |e: std::io::Error| {
        anyhow::Error::new(e).context(format!("cannot read {}", path.display()))
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut lines = LineReader::new(std::io::BufReader::new(f), MAX_LINE);
    let mut problems: u64 = 0;
    let mut problem = |rec: &mut RunRecord, text: String| {
        problems += 1;
        if problems <= MAX_PROBLEMS {
            rec.journal_problems.push(text);
        } else if problems == MAX_PROBLEMS + 1 {
            rec.journal_problems
                .push("… more unreadable lines: `leopold persona replay` lists them all".into());
        }
    };
    while let Some(l) = lines.next_line().map_err(io)? {
        let (n, terminated) = (l.no, l.terminated);
        let Some(line) = l.bytes else {
            problem(rec, format!("line {n}: longer than 4 MiB; skipped"));
            continue;
        };
        if n == 1 || line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // The chain's link is accepted and not checked here: `persona replay` checks the chain.
        match Action::from_journal_line(line) {
            Ok(_) if rec.actions.len() >= MAX_ACTIONS => rec.actions_not_shown += 1,
            Ok(a) => rec.actions.push(hosts_only(a)),
            Err(_) if !terminated => problem(
                rec,
                format!("line {n}: torn last line (a write cut short) skipped"),
            ),
            Err(e) => problem(
                rec,
                format!("line {n}: not a journal action ({e}); skipped"),
            ),
        }
    }
    Ok(())
}

/// The journal keeps no URL of its own, but a label, a description or a rule's detail is text a
/// page or a model chose, and may hold one: shown, it is reduced to its host.
fn hosts_only(mut a: Action) -> Action {
    let strip = |t: &mut Option<String>| {
        if let Some(s) = t.as_mut().filter(|s| s.contains("://")) {
            *s = crate::redact::strip_urls(s);
        }
    };
    strip(&mut a.label);
    strip(&mut a.element);
    strip(&mut a.denied_reason);
    if let Some(Verdict::Violation { detail, .. }) = &mut a.verdict {
        strip(detail);
    }
    a
}

fn read_findings(path: &Path) -> anyhow::Result<Option<String>> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut bytes = Vec::new();
    f.take(MAX_FINDINGS + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let cut = bytes.len() as u64 > MAX_FINDINGS;
    bytes.truncate(MAX_FINDINGS as usize);
    // Verbatim in findings.md; in a report or a CI log, a URL the model wrote is shown as its
    // host (it may carry a token).
    let mut text = crate::redact::strip_urls(&String::from_utf8_lossy(&bytes));
    if cut {
        text.push_str("\n\n[… cut at 1 MiB; the whole text is in findings.md]");
    }
    Ok(Some(text))
}

/// Resolves a recorded flow path: absolute, or relative to the project that holds the run
/// directory (`<project>/.leopold/persona/runs/<id>`), or to the current directory.
pub fn resolve_flow_path(recorded: &Path, run_dir: &Path) -> PathBuf {
    if recorded.is_absolute() {
        return recorded.to_path_buf();
    }
    run_dir
        .ancestors()
        .nth(4)
        .map(|root| root.join(recorded))
        .filter(|p| p.exists())
        .unwrap_or_else(|| recorded.to_path_buf())
}

/// What `persona run` does once `run.json` is final: writes `report.html` into the run
/// directory and, with `--junit FILE`, the JUnit report, both atomically and both from the run
/// directory (so they say what `persona report` would). Returns a warning per file that could
/// not be written: the run's outcome and exit code stand either way.
pub fn after_run(
    run_dir: &RunDir,
    flow: &leopold_flows::Flow,
    junit: Option<&Path>,
) -> Vec<String> {
    let rec = match read_run(run_dir.path()) {
        Ok(r) => r,
        Err(e) => return vec![format!("no report written: {e:#}")],
    };
    let mut warnings = Vec::new();
    let page = html::render(&rec, &FlowSource::Given(flow));
    // Both made from run.json, and `persona report` makes them again: nothing waits on the disk.
    let volatile = crate::state::Durability::Volatile;
    if let Err(e) = crate::state::write_atomic_as(&rec.dir.report(), page.as_bytes(), volatile) {
        warnings.push(format!("no report written: {e:#}"));
    }
    if let Some(path) = junit {
        // A CI job names a file under a folder it has not made yet (`reports/junit.xml`).
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Err(e) =
            crate::state::write_atomic_as(path, junit::render(&rec).as_bytes(), volatile)
        {
            warnings.push(format!("no JUnit report written: {e:#}"));
        }
    }
    warnings
}

/// Where the report's flow section comes from.
pub enum FlowSource<'a> {
    /// The flow the run itself used (at the end of a run).
    Given(&'a leopold_flows::Flow),
    /// Read again from the flow file `run.json` names.
    Loaded(Box<leopold_flows::Flow>),
    /// The flow file could not be read now: why.
    Missing(String),
}

impl FlowSource<'_> {
    /// Loads the flow the run names, for a report rendered after the fact.
    pub fn load(rec: &RunRecord) -> FlowSource<'static> {
        let Some(recorded) = rec.flow_path() else {
            return FlowSource::Missing("the run records no flow file".into());
        };
        let path = resolve_flow_path(&recorded, rec.dir.path());
        match leopold_flows::Flow::load(&path) {
            Ok(f) => FlowSource::Loaded(Box::new(f)),
            Err(e) => FlowSource::Missing(format!("{e}")),
        }
    }

    /// The flow, when there is one.
    pub fn flow(&self) -> Option<&leopold_flows::Flow> {
        match self {
            FlowSource::Given(f) => Some(f),
            FlowSource::Loaded(f) => Some(f),
            FlowSource::Missing(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = r#"{"version":1,"active":false,"run_id":"r1","flow":"checkout","flow_path":"/p/flows/checkout.md","harness":"claude","supervisor_pid":1,"worker_pid":null,"started_at":"2026-11-30T10:00:00.000Z","wiring":[],HEADHASH"end":{"outcome":"clean","exit_code":0,"ended_at":"2026-11-30T10:00:02.500Z","counts":{"actions":0,"completed":0,"errored":0,"denied":0,"violations":0,"unreadable_lines":0}TAILHASH}}"#;

    fn run_dir(run_json: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("run.json"), run_json).unwrap();
        d
    }

    #[test]
    fn the_journal_hash_is_read_at_the_top_level_or_under_end() {
        let top = run_dir(
            &RUN.replace("HEADHASH", r#""journal_hash":"sha256:aa","#)
                .replace("TAILHASH", ""),
        );
        let rec = read_run(top.path()).unwrap();
        assert_eq!(rec.journal_hash.as_deref(), Some("sha256:aa"));
        assert_eq!(rec.duration(), Some(std::time::Duration::from_millis(2500)));
        let under = run_dir(
            &RUN.replace("HEADHASH", "")
                .replace("TAILHASH", r#","journal_hash":"sha256:bb""#),
        );
        assert_eq!(
            read_run(under.path()).unwrap().journal_hash.as_deref(),
            Some("sha256:bb")
        );
        let none = run_dir(&RUN.replace("HEADHASH", "").replace("TAILHASH", ""));
        assert_eq!(read_run(none.path()).unwrap().journal_hash, None);
    }

    #[test]
    fn an_unknown_run_json_field_is_refused_naming_the_file() {
        let d = run_dir(
            &RUN.replace("HEADHASH", r#""surprise":1,"#)
                .replace("TAILHASH", ""),
        );
        let before = std::fs::read(d.path().join("run.json")).unwrap();
        let err = format!("{:#}", read_run(d.path()).unwrap_err());
        assert!(
            err.contains("run.json") && err.contains("surprise"),
            "{err}"
        );
        assert_eq!(std::fs::read(d.path().join("run.json")).unwrap(), before);
    }

    #[test]
    fn an_overlong_or_malformed_journal_line_is_listed_and_the_rest_is_read() {
        let d = tempfile::tempdir().unwrap();
        let header = r#"{"leopold_journal":1,"run_id":"r1","flow":"checkout","flow_path":"f.md","harness":"codex","started_at":"2026-11-30T10:00:00Z"}"#;
        let action = |seq: u64| {
            format!(
                r#"{{"seq":{seq},"ts":"2026-11-30T10:00:01Z","harness":"codex","tool":"t","kind":"other","outcome":"completed"}}"#
            )
        };
        let long = "x".repeat(MAX_LINE + 10);
        let text = format!(
            "{header}\n{}\n{long}\nnot json\n{}\n{{\"seq\":4",
            action(1),
            action(3)
        );
        std::fs::write(d.path().join("journal.jsonl"), text).unwrap();
        let rec = read_run(d.path()).unwrap();
        let seqs: Vec<u64> = rec.actions.iter().map(|a| a.seq).collect();
        assert_eq!(seqs, [1, 3]);
        assert_eq!(rec.journal_problems.len(), 3, "{:?}", rec.journal_problems);
        assert!(rec.journal_problems[0].starts_with("line 3: longer than 4 MiB"));
        assert!(rec.journal_problems[1].starts_with("line 4: not a journal action"));
        assert!(rec.journal_problems[2].starts_with("line 6: torn last line"));
        assert_eq!(rec.outcome(), "unfinished");
    }

    #[test]
    fn screenshots_are_plain_names_in_the_run_s_browser_output_only() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("browser/output");
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
