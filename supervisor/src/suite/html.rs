//! `suite.html`: the suite on one page, next to its runs: the totals, and one row per case with
//! a link to every attempt's `report.html`. Built as a run's report is (`maud` escapes every
//! value; the same policy allows no script and no request), and its links are relative to the
//! page's folder, so the folder can be moved, zipped or uploaded whole.

use std::path::{Component, Path, PathBuf};

use maud::{html, Markup, DOCTYPE};

use super::{case_figures, findings, Case, Status, Totals};
use crate::report::html::{format_duration, head, outcome_class};
use crate::usage::{dollars, grouped};

/// Renders the suite's page, linking each run's report relative to `links_from` (the folder
/// the page is written to).
pub fn html(cases: &[Case], links_from: &Path) -> String {
    let t = Totals::of(cases);
    let from = std::path::absolute(links_from).unwrap_or_else(|_| links_from.to_path_buf());
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            (head("Leopold suite"))
            body {
                header { h1 { "Persona suite" } }
                section #totals {
                    h2 { "Totals" }
                    dl {
                        dt { "Cases" } dd { (cases.len()) }
                        dt { "Runs" } dd #runs { (t.runs) }
                        dt { "Passed" } dd #passed { (t.passed) }
                        dt { "Flaky" } dd #flaky { (t.flaky) }
                        dt { "Failed" }
                        dd #failed {
                            (t.failed_total())
                            @for (outcome, n) in &t.failed { " · " (outcome) " " (n) }
                        }
                        @if let Some(w) = t.wall { dt { "Wall time" } dd #wall { (format_duration(w)) } }
                        dt { "Tokens" } dd #tokens { (grouped(t.tokens)) }
                        @if let Some(c) = t.cost_usd { dt { "Cost" } dd #cost { (dollars(c)) } }
                    }
                    @for note in super::notes(cases) { p.muted { (note) } }
                }
                section #cases {
                    h2 { "Cases" }
                    table {
                        thead { tr {
                            th { "Flow" } th { "Harness" } th { "Attempts" } th { "Outcome" }
                            th { "Duration" } th { "Tokens" } th { "Cost" } th { "Findings" } th { "Reports" }
                        } }
                        tbody { @for c in cases { (row(c, &from)) } }
                    }
                }
                footer.muted {
                    p { "Rendered by leopold " (env!("CARGO_PKG_VERSION")) " from the run directories alone. The page runs no script and loads nothing." }
                }
            }
        }
    };
    page.into_string()
}

fn row(c: &Case, from: &Path) -> Markup {
    let outcome = c.last().outcome();
    let (label, class) = match c.status {
        Status::Flaky => (c.status.as_str().to_owned(), "flaky"),
        _ => (outcome.clone(), outcome_class(&outcome)),
    };
    let (duration, tokens, cost) = case_figures(c);
    let (found, worst) = findings(c);
    html! {
        tr.case {
            td { code { (c.flow) } }
            td { (c.harness) }
            td.attempts { (c.attempts.len()) }
            td {
                span.outcome.(class) { (label) }
                @if let Some(code) = c.last().exit_code() { " exit " (code) }
            }
            td { (format_duration(duration)) }
            td { (grouped(tokens)) }
            td { @if let Some(x) = cost { (dollars(x)) } }
            td {
                (found)
                @if let Some(s) = worst { " " span.sev.(format!("sev-{}", s.as_str())) { (s.as_str()) } }
            }
            td {
                @for (i, r) in c.attempts.iter().enumerate() {
                    @if i > 0 { br; }
                    @let report = r.dir.report();
                    @if report.is_file() {
                        a href=(href(from, &report)) { "attempt " (i + 1) } " " span.muted { (r.outcome()) }
                    } @else {
                        span.muted { "attempt " (i + 1) " (" (r.outcome()) "): no report.html" }
                    }
                }
            }
        }
    }
}

/// `to` relative to the folder `from` (both absolute), with `/` between the parts.
pub(super) fn href(from: &Path, to: &Path) -> String {
    fn parts(p: &Path) -> Vec<Component<'_>> {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect()
    }
    let (f, t) = (parts(from), parts(to));
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..f.len() {
        rel.push("..");
    }
    for c in &t[common..] {
        rel.push(c);
    }
    rel.to_string_lossy().replace('\\', "/")
}
