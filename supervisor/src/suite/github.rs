//! The suite in a GitHub Actions job summary: one Markdown table, a row per case, as
//! `report::github` writes one run (whose `append_summary` appends it to the job's summary).

use super::{case_figures, findings, Case, Status, Totals};
use crate::report::github::cell;
use crate::report::html::format_duration;
use crate::usage::{dollars, grouped};

/// The job summary's Markdown for the suite.
pub fn step_summary(cases: &[Case]) -> String {
    let t = Totals::of(cases);
    let mark = if t.failed_total() > 0 { "❌" } else { "✅" };
    let mut md = format!(
        "### {mark} Leopold suite: {} passed, {} flaky, {} failed ({})\n\n",
        t.passed,
        t.flaky,
        t.failed_total(),
        crate::output::count(t.runs as u64, "run")
    );
    md.push_str("| Flow | Harness | Attempts | Outcome | Duration | Tokens | Cost | Findings |\n");
    md.push_str("|---|---|---|---|---|---|---|---|\n");
    for c in cases {
        let outcome = match c.status {
            Status::Flaky => c.status.as_str().to_owned(),
            Status::Passed => c.last().outcome(),
            Status::Failed => format!("**{}** (exit {})", c.last().outcome(), c.exit_code()),
        };
        let (d, tokens, cost) = case_figures(c);
        let (found, worst) = findings(c);
        let worst = worst
            .map(|s| format!(" ({})", s.as_str()))
            .unwrap_or_default();
        md.push_str(&format!(
            "| `{}` | {} | {} | {outcome} | {} | {} | {} | {found}{worst} |\n",
            cell(&c.flow),
            cell(&c.harness),
            c.attempts.len(),
            format_duration(d),
            grouped(tokens),
            cost.map(dollars).unwrap_or_default(),
        ));
    }
    md.push('\n');
    if let Some(w) = t.wall {
        md.push_str(&format!("Wall time: {}. ", format_duration(w)));
    }
    md.push_str(&format!("Tokens: {}", grouped(t.tokens)));
    if let Some(c) = t.cost_usd {
        md.push_str(&format!(", cost: {}", dollars(c)));
    }
    md.push_str(".\n\n");
    md
}
