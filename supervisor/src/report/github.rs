//! In GitHub Actions (`GITHUB_ACTIONS=true`): the run as a Markdown block appended to the job's
//! summary (`$GITHUB_STEP_SUMMARY`), and one annotation per finding at or above the flow's
//! `fail_on` and per unmet expectation, so that a reviewer sees the app's failures on the run's
//! page without opening a log (docs/guide.md#ci).
//!
//! Annotations are workflow commands on stderr (the runner reads both streams; stdout stays
//! `--json`'s). Their text is the model's, escaped as the runner unescapes it, so a finding
//! cannot end its own line into a command of its choosing.

use super::RunRecord;

/// Whether this process runs in a GitHub Actions job.
pub fn in_actions() -> bool {
    std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true")
}

/// Appends `md` to the job summary, `$GITHUB_STEP_SUMMARY`, when it is set; `Ok(false)` when
/// it is not.
pub fn append_summary(md: &str) -> std::io::Result<bool> {
    use std::io::Write as _;
    let Some(file) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|f| !f.is_empty()) else {
        return Ok(false);
    };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| f.write_all(md.as_bytes()))?;
    Ok(true)
}

/// The job summary's Markdown for one run.
pub fn summary(rec: &RunRecord) -> String {
    let outcome = rec.outcome();
    let end = rec.state.as_ref().and_then(|s| s.end.as_ref());
    let mark = match outcome.as_str() {
        "clean" => "✅",
        "failed" => "❌",
        _ => "⚠️",
    };
    let mut md = format!(
        "### {mark} Leopold: flow `{}` under {}: {outcome}",
        cell(&rec.flow()),
        cell(&rec.harness())
    );
    if let Some(code) = rec.exit_code() {
        md.push_str(&format!(" (exit {code})"));
    }
    md.push_str("\n\n");
    if let Some(r) = end.and_then(|e| e.reason.as_deref()) {
        md.push_str(&format!("{}\n\n", cell(r)));
    }
    if let Some(v) = end.and_then(|e| e.verdict.as_ref()) {
        if !v.expectations.is_empty() {
            md.push_str("| Expectation | |\n|---|---|\n");
            for e in &v.expectations {
                let met = if e.met { "met" } else { "**unmet**" };
                md.push_str(&format!("| reach `{}` | {met} |\n", cell(&e.reach)));
            }
            md.push('\n');
        }
        if !v.reported.is_empty() {
            md.push_str("| Severity | Finding |\n|---|---|\n");
            for f in &v.reported {
                md.push_str(&format!("| {} | {} |\n", f.severity, cell(&f.title)));
            }
            md.push('\n');
        }
    }
    if let Some(u) = end.and_then(|e| e.usage.as_ref()) {
        md.push_str(&format!("Cost: {}\n\n", u.line()));
    }
    md.push_str(&format!(
        "Report: `{}`\n\n",
        cell(&rec.dir.report().display().to_string())
    ));
    md
}

/// One workflow command per finding at or above `fail_on` and per unmet expectation: `::error`
/// when the run failed by them, `::warning` when it ended otherwise.
pub fn annotations(rec: &RunRecord) -> Vec<String> {
    let Some(v) = rec
        .state
        .as_ref()
        .and_then(|s| s.end.as_ref())
        .and_then(|e| e.verdict.as_ref())
    else {
        return Vec::new();
    };
    let level = if rec.outcome() == "failed" {
        "error"
    } else {
        "warning"
    };
    let title = property(&format!("Leopold {} ({})", rec.flow(), rec.harness()));
    let fail_on = leopold_flows::Severity::from_name(&v.fail_on);
    let mut out: Vec<String> = v
        .reported
        .iter()
        .filter(|f| fail_on.is_some_and(|at| f.fails_at(at)))
        .map(|f| {
            let mut text = format!("{} finding: {}", f.severity, f.title);
            if !f.detail.is_empty() {
                text.push_str(&format!("\n{}", f.detail));
            }
            format!("::{level} title={title}::{}", data(&text))
        })
        .collect();
    if rec.outcome() == "failed" {
        out.extend(
            v.unmet
                .iter()
                .map(|u| format!("::error title={title}::{}", data(u))),
        );
    }
    out
}

/// A command's message, escaped as the runner unescapes it.
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A command's property value.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

/// Text for one line of a Markdown table: no line break, no `|`.
pub(crate) fn cell(s: &str) -> String {
    s.replace(['\r', '\n'], " ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_cannot_start_a_command_of_its_own() {
        let d = data("bad\n::error::forged %0A");
        assert_eq!(d, "bad%0A::error::forged %250A");
        assert!(!d.contains('\n'));
        assert_eq!(property("a: b, c"), "a%3A b%2C c");
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
