//! `persona run --junit FILE`: the run as JUnit XML, the format GitHub Actions, GitLab and
//! Jenkins read. One `<testsuite>` for the run, one `<testcase>` for its flow:
//!
//! - `clean`: the test case passes;
//! - `failed` (the app did not meet the flow): a `<failure>` whose `message` names every cause
//!   (each finding at or above `fail_on`, a goal not reached, each page never reached) and whose
//!   text lists them and every finding the persona reported;
//! - `violated`, `worker_failed`, `timed_out`, `interrupted`, `stuck`, `over_limit`,
//!   `over_budget`, `looping`: a `<failure>` whose `message` is the run's reason and whose `type`
//!   is the outcome; its text lists the violations and walls;
//! - `tampered` (a hash chain of the run's records broken after the run, whatever `run.json`
//!   says): a `<failure>` whose `message` is the first break;
//! - any other outcome (`setup_failed`, `model_failed`, `recovered`, a run with no `run.json`):
//!   an `<error>`: the persona never got to judge the app;
//! - the findings (`findings.md`, then the walls) go in the test case's `<system-out>`.
//!
//! Text from the run (a label, the model's findings) is escaped by `quick-xml`; characters XML 1.0
//! cannot carry at all (most control characters) are replaced with U+FFFD first.

use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;

use super::RunRecord;

/// Renders the JUnit XML of one run.
pub fn render(rec: &RunRecord) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    write(&mut w, rec).expect("writing XML to memory does not fail");
    let mut out = String::from_utf8(w.into_inner()).expect("quick-xml writes UTF-8 from str");
    out.push('\n');
    out
}

fn write(w: &mut Writer<Vec<u8>>, rec: &RunRecord) -> std::io::Result<()> {
    let time = time_of(rec);
    let (failures, errors) = CaseResult::of(&rec.outcome()).counts();
    let flow = clean(&rec.flow());
    let harness = clean(&rec.harness());
    let suite = format!(
        "leopold persona {flow} ({harness}) {}",
        clean(&rec.run_id())
    );
    let started = rec.started_at().map(|s| clean(&s)).unwrap_or_default();

    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attribute(("name", "leopold"))
        .with_attribute(("tests", "1"))
        .with_attribute(("failures", failures))
        .with_attribute(("errors", errors))
        .with_attribute(("time", time.as_str()))
        .write_inner_content(|w| {
            let mut suite_el = w
                .create_element("testsuite")
                .with_attribute(("name", suite.as_str()))
                .with_attribute(("tests", "1"))
                .with_attribute(("failures", failures))
                .with_attribute(("errors", errors))
                .with_attribute(("skipped", "0"))
                .with_attribute(("time", time.as_str()));
            if !started.is_empty() {
                suite_el = suite_el.with_attribute(("timestamp", started.as_str()));
            }
            suite_el.write_inner_content(|w| {
                properties(w, rec)?;
                let classname = format!("leopold.persona.{harness}");
                write_testcase(w, &flow, &classname, &[rec], false)
            })?;
            Ok(())
        })?;
    Ok(())
}

/// Writes one `<testcase>`: the last of `attempts` decides it (a `<failure>` or `<error>` when
/// it is not clean), and each earlier attempt that was not clean is a rerun, as nextest writes
/// retries: `<flakyFailure>`/`<flakyError>` when the last passed, `<rerunFailure>`/`<rerunError>`
/// when it did not, each with its time, reason, text and `<system-out>`. `properties_inside` puts
/// the last attempt's properties in the test case (a suite's test suite holds several runs).
pub(crate) fn write_testcase(
    w: &mut Writer<Vec<u8>>,
    name: &str,
    classname: &str,
    attempts: &[&RunRecord],
    properties_inside: bool,
) -> std::io::Result<()> {
    let Some((last, earlier)) = attempts.split_last() else {
        return Ok(());
    };
    let outcome = last.outcome();
    let verdict = CaseResult::of(&outcome);
    w.create_element("testcase")
        .with_attribute(("name", name))
        .with_attribute(("classname", classname))
        .with_attribute(("time", time_of(last).as_str()))
        .write_inner_content(|w| {
            if properties_inside {
                properties(w, last)?;
            }
            if let Some(tag) = verdict.tag() {
                w.create_element(tag)
                    .with_attribute(("message", reason_of(last).as_str()))
                    .with_attribute(("type", outcome.as_str()))
                    .write_text_content(BytesText::new(&failure_text(last, &outcome)))?;
            }
            for rec in earlier.iter().filter(|r| r.outcome() != "clean") {
                rerun(w, rec, verdict == CaseResult::Pass)?;
            }
            w.create_element("system-out")
                .write_text_content(BytesText::new(&system_out(last)))?;
            Ok(())
        })?;
    Ok(())
}

/// An earlier attempt that did not pass: `<flakyFailure>` (the case passed in the end) or
/// `<rerunFailure>`, `…Error` for an attempt that never judged the app.
fn rerun(w: &mut Writer<Vec<u8>>, rec: &RunRecord, flaky: bool) -> std::io::Result<()> {
    let outcome = rec.outcome();
    let tag = match (flaky, CaseResult::of(&outcome)) {
        (true, CaseResult::Error) => "flakyError",
        (true, _) => "flakyFailure",
        (false, CaseResult::Error) => "rerunError",
        (false, _) => "rerunFailure",
    };
    let mut el = w.create_element(tag);
    if let Some(s) = rec.started_at() {
        el = el.with_attribute(("timestamp", clean(&s).as_str()));
    }
    el.with_attribute(("time", time_of(rec).as_str()))
        .with_attribute(("message", reason_of(rec).as_str()))
        .with_attribute(("type", outcome.as_str()))
        .write_inner_content(|w| {
            w.write_event(Event::Text(BytesText::new(&failure_text(rec, &outcome))))?;
            w.write_indent()?;
            w.create_element("system-out")
                .write_text_content(BytesText::new(&system_out(rec)))?;
            Ok(())
        })?;
    Ok(())
}

/// The run's `<properties>`: its id, flow, harness, outcome, folder, report, exit code, hashes
/// and usage.
fn properties(w: &mut Writer<Vec<u8>>, rec: &RunRecord) -> std::io::Result<()> {
    let end = rec.state.as_ref().and_then(|s| s.end.as_ref());
    w.create_element("properties").write_inner_content(|w| {
        let mut props: Vec<(&str, String)> = vec![
            ("run_id", clean(&rec.run_id())),
            ("flow", clean(&rec.flow())),
            ("harness", clean(&rec.harness())),
            ("outcome", clean(&rec.outcome())),
            ("run_dir", clean(&rec.dir.path().display().to_string())),
            ("report", clean(&rec.dir.report().display().to_string())),
        ];
        if let Some(code) = rec.exit_code() {
            props.push(("exit_code", code.to_string()));
        }
        if let Some(h) = &rec.journal_hash {
            props.push(("journal_hash", clean(h)));
        }
        if let Some(h) = end.and_then(|e| e.gateway_hash.as_deref()) {
            props.push(("gateway_hash", clean(h)));
        }
        props.extend(usage_properties(end.and_then(|e| e.usage.as_ref())));
        for (k, v) in &props {
            w.create_element("property")
                .with_attribute(("name", *k))
                .with_attribute(("value", v.as_str()))
                .write_empty()?;
        }
        Ok(())
    })?;
    Ok(())
}

/// The run's duration in seconds, as JUnit writes it (`0` when it did not end).
fn time_of(rec: &RunRecord) -> String {
    rec.duration()
        .map(|d| format!("{:.3}", d.as_secs_f64()))
        .unwrap_or_else(|| "0".into())
}

/// Why the run did not pass, in a line: the first break of a hash chain, else the run's reason,
/// else its outcome.
fn reason_of(rec: &RunRecord) -> String {
    rec.tampered
        .first()
        .or(rec
            .state
            .as_ref()
            .and_then(|s| s.end.as_ref())
            .and_then(|e| e.reason.as_ref()))
        .map(|r| clean(r))
        .unwrap_or_else(|| rec.outcome())
}

/// How JUnit counts a run: passed, failed (the persona judged, and the run did not pass), or an
/// error (it never got to judge the app).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseResult {
    Pass,
    Failure,
    Error,
}

/// The model, turns, tokens and cost as `leopold.*` properties (docs/reference.md#cost-and-budgets),
/// the figures the harness did not report left out.
fn usage_properties(u: Option<&crate::usage::Usage>) -> Vec<(&'static str, String)> {
    let Some(u) = u else {
        return Vec::new();
    };
    let mut p = Vec::new();
    if let Some(m) = &u.model {
        p.push(("leopold.model", clean(m)));
    }
    p.extend([
        ("leopold.turns", u.turns.to_string()),
        ("leopold.tokens.input", u.input_tokens.to_string()),
        ("leopold.tokens.output", u.output_tokens.to_string()),
        ("leopold.tokens.cache_read", u.cache_read_tokens.to_string()),
        (
            "leopold.tokens.cache_write",
            u.cache_write_tokens.to_string(),
        ),
        ("leopold.tokens.total", u.tokens().to_string()),
    ]);
    if let Some(c) = u.cost_usd {
        p.push(("leopold.cost_usd", c.to_string()));
    }
    p
}

impl CaseResult {
    /// The `failures` and `errors` counts of one case with this result.
    pub(crate) fn counts(self) -> (&'static str, &'static str) {
        match self {
            CaseResult::Pass => ("0", "0"),
            CaseResult::Failure => ("1", "0"),
            CaseResult::Error => ("0", "1"),
        }
    }

    /// The element naming why the case did not pass, if it did not.
    fn tag(self) -> Option<&'static str> {
        match self {
            CaseResult::Pass => None,
            CaseResult::Failure => Some("failure"),
            CaseResult::Error => Some("error"),
        }
    }

    pub(crate) fn of(outcome: &str) -> CaseResult {
        match outcome {
            "clean" => CaseResult::Pass,
            "violated" | "worker_failed" | "timed_out" | "interrupted" | "stuck" | "tampered"
            | "over_limit" | "over_budget" | "looping" | "failed" => CaseResult::Failure,
            _ => CaseResult::Error,
        }
    }
}

fn failure_text(rec: &RunRecord, outcome: &str) -> String {
    let end = rec.state.as_ref().and_then(|s| s.end.as_ref());
    let mut t = format!("outcome: {outcome}");
    if let Some(code) = rec.exit_code() {
        t.push_str(&format!(" (exit {code})"));
    }
    t.push('\n');
    for p in &rec.tampered {
        t.push_str(&format!("tampered: {p}\n"));
    }
    if let Some(e) = end.filter(|_| !rec.tampered.is_empty()) {
        t.push_str(&format!("run.json says: {}\n", e.outcome.as_str()));
    }
    if let Some(r) = end.and_then(|e| e.reason.as_deref()) {
        t.push_str(&format!("reason: {r}\n"));
    }
    if let Some(ws) = end.and_then(|e| e.worker_status.as_deref()) {
        t.push_str(&format!("worker: {ws}\n"));
    }
    if rec.state.is_none() {
        t.push_str("the run directory has no run.json: the run never finished (see `leopold persona recover`)\n");
    }
    if let Some(v) = end.and_then(|e| e.verdict.as_ref()) {
        let causes: Vec<&String> = v.failed_by.iter().chain(&v.unmet).collect();
        if !causes.is_empty() {
            t.push_str("\nthe app did not meet the flow:\n");
            for c in causes {
                t.push_str(&format!("  - {c}\n"));
            }
        }
        t.push_str(&super::findings_text(v));
    }
    let walls = rec.walls();
    if !walls.is_empty() {
        t.push_str("\nviolations and walls:\n");
        for w in walls {
            t.push_str(&format!("  {w}\n"));
        }
    }
    clean(&t)
}

fn system_out(rec: &RunRecord) -> String {
    let mut t = String::new();
    if let Some(v) = rec
        .state
        .as_ref()
        .and_then(|s| s.end.as_ref())
        .and_then(|e| e.verdict.as_ref())
    {
        t.push_str(super::findings_text(v).trim_start());
    }
    match &rec.findings {
        Some(f) => {
            t.push_str("Findings (findings.md):\n");
            t.push_str(f);
            if !f.ends_with('\n') {
                t.push('\n');
            }
        }
        None => t.push_str("The run saved no findings.md.\n"),
    }
    let walls = rec.walls();
    if !walls.is_empty() {
        t.push_str("\nWalls the persona hit:\n");
        for w in walls {
            t.push_str(&format!("  {w}\n"));
        }
    }
    t.push_str(&format!("\nReport: {}\n", rec.dir.report().display()));
    clean(&t)
}

/// Replaces what XML 1.0 cannot carry, even escaped (control characters other than tab, line
/// feed and carriage return; U+FFFE and U+FFFF), with U+FFFD.
pub(crate) fn clean(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{clean, CaseResult};

    #[test]
    fn violations_and_worker_failures_fail_setup_errors_are_errors() {
        assert_eq!(CaseResult::of("clean"), CaseResult::Pass);
        for o in [
            "violated",
            "worker_failed",
            "timed_out",
            "interrupted",
            "tampered",
            "stuck",
            "over_limit",
            "over_budget",
            "looping",
            "failed",
        ] {
            assert_eq!(CaseResult::of(o), CaseResult::Failure, "{o}");
        }
        for o in [
            "setup_failed",
            "model_failed",
            "recovered",
            "unfinished",
            "something new",
        ] {
            assert_eq!(CaseResult::of(o), CaseResult::Error, "{o}");
        }
    }

    #[test]
    fn characters_xml_cannot_carry_are_replaced() {
        assert_eq!(clean("a\u{1}b\tc\u{FFFF}"), "a\u{FFFD}b\tc\u{FFFD}");
    }
}
