//! Collecting a run: its directory read into a [`RunRecord`], the hash chains checked as
//! `persona replay` checks them. Apart from what the record says of itself (`mod.rs`) because
//! this is the part that meets files a crash cut short or a hand edited.

use std::io::Read as _;
use std::path::Path;

use anyhow::Context as _;
use leopold_journal::lines::LineReader;
use leopold_journal::{Action, JournalHeader, Verdict, JOURNAL_VERSION, UNCHAINED_JOURNAL_VERSION};

use super::{RunRecord, MAX_ACTIONS};
use crate::run_dir::RunDir;
use crate::state::ActiveState;

/// Longest `findings.md` shown; the rest is cut with a note (a model can write a lot).
const MAX_FINDINGS: u64 = 1 << 20;
/// Longest journal line read, as replay (`leopold_journal::replay::MAX_LINE`); a longer one is
/// listed as a problem and skipped.
const MAX_LINE: usize = leopold_journal::replay::MAX_LINE;
/// Unreadable journal lines listed one by one; past that, one line says there are more.
const MAX_PROBLEMS: u64 = 100;

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
}
