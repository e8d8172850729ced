//! `report.html`: one self-contained page per run, for people.
//!
//! Everything in it comes from the run directory, and much of that was chosen by someone else: a
//! label is whatever the page named its button, `findings.md` is whatever the model wrote. So
//! the page is built with `maud`, which escapes every value it inserts; the page carries a
//! Content-Security-Policy that allows no script and no request at all (`default-src 'none'`,
//! images only as `data:`), so even a value that escaped the escaping could neither run nor call
//! out. Screenshots are embedded as `data:` URIs; URLs appear only as hosts.

use base64::Engine as _;
use leopold_journal::{Action, Outcome, UrlRole, Verdict};
use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::{denial_reason, FlowSource, RunRecord};

/// Largest screenshot embedded; a larger one is linked by its relative path instead.
const MAX_EMBED: u64 = 4 << 20;

/// The stylesheet of Leopold's pages (a run's report, a suite's page).
const CSS: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;padding:1.5em;color:#1b1f23;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
code,pre,td.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;border:1px solid #e1e4e8;padding:.8em;border-radius:4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dt{font-weight:600;color:#444}dd{margin:0;overflow-wrap:anywhere}
.outcome{display:inline-block;padding:.15em .6em;border-radius:3px;font-weight:700;color:#fff}
.clean{background:#1a7f37}.violated{background:#cf222e}.other{background:#9a6700}.flaky{background:#8250df}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #e1e4e8;padding:.3em .45em;vertical-align:top;text-align:left;overflow-wrap:anywhere}
th{background:#f6f8fa}tr.violation td{background:#ffebe9}tr.denied td{background:#fff8c5}tr.refused td{background:#fff1e5}
.tag{font-weight:700}.muted{color:#57606a}img.shot{max-width:100%;height:auto;border:1px solid #ccc;display:block}
tr.narration td{background:#f6f8fa;white-space:pre-wrap;font-style:italic}table.timeline{table-layout:fixed}table.timeline col.n{width:3.2em}table.timeline col.time{width:8.5em}table.timeline col.shot{width:24%}
ul.plain{margin:.2em 0;padding-left:1.2em}
.sev{display:inline-block;padding:0 .4em;border-radius:3px;font-size:.85em;font-weight:700;color:#fff;background:#57606a}
.sev-blocker{background:#cf222e}.sev-major{background:#bc4c00}.sev-minor{background:#9a6700}
li.unmet{color:#cf222e}li.finding{margin:.4em 0}.md p{margin:.3em 0}.md pre{margin:.3em 0}
"#;

/// Renders the report page.
pub fn render(rec: &RunRecord, flow: &FlowSource<'_>) -> String {
    let outcome = rec.outcome();
    let class = outcome_class(&outcome);
    let title = format!(
        "Leopold run {} — flow {} — {outcome}",
        rec.run_id(),
        rec.flow()
    );
    let end = rec.state.as_ref().and_then(|s| s.end.as_ref());
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            (head(&title))
            body {
                header {
                    h1 { "Persona run " code { (rec.run_id()) } }
                    p {
                        span.outcome.(class) { (outcome) }
                        @if let Some(code) = rec.exit_code() { " exit " (code) }
                        @if let Some(t) = rec.tampered.first() {
                            " — the run's records were changed after it ended: " (t)
                        } @else if let Some(r) = end.and_then(|e| e.reason.as_deref()) { " — " (r) }
                    }
                    @if !rec.tampered.is_empty() {
                        // docs/reference.md#reports: a broken hash chain, so nothing below can be
                        // trusted.
                        section #tampered {
                            p { strong { "Tampered: " } "the hash chains show the run's records were changed after the run wrote them, so nothing below can be taken as clean"
                                @if let Some(e) = end { " (run.json says " code { (e.outcome.as_str()) } ")" } "." }
                            ul.plain { @for t in &rec.tampered { li { (t) } } }
                        }
                    }
                    @if rec.state.is_none() {
                        p.muted { "No run.json: the run is still active, or it crashed and `leopold persona recover` has not archived it yet. Shown from the journal alone." }
                    }
                }
                (super::verdict_html::verdict_section(rec))
                section #summary {
                    h2 { "Run" }
                    dl {
                        dt { "Flow" } dd { code { (rec.flow()) } }
                        dt { "Harness" } dd { (rec.harness()) }
                        @if let Some(s) = rec.started_at() { dt { "Started" } dd { (s) } }
                        @if let Some(e) = end { dt { "Ended" } dd { (e.ended_at) } }
                        @if let Some(d) = rec.duration() { dt { "Duration" } dd { (format_duration(d)) } }
                        @if let Some(ws) = end.and_then(|e| e.worker_status.as_deref()) { dt { "Worker" } dd { (ws) } }
                        @if let Some(c) = end.and_then(|e| e.cause.as_deref()) { dt { "Timed out waiting for" } dd #cause { (c) } }
                        @if let Some(e) = end {
                            dt { "Actions" }
                            dd {
                                (e.counts.actions) " actions: " (e.counts.completed) " completed, "
                                (e.counts.errored) " errored, " (e.counts.denied) " denied, "
                                (e.counts.violations) " violations"
                                @if e.counts.unreadable_lines > 0 { ", " (e.counts.unreadable_lines) " unreadable stream lines" }
                            }
                        } @else {
                            dt { "Actions" } dd { (rec.actions.len()) " in the journal" }
                        }
                        @if let Some(e) = end.filter(|e| !e.gateway_mismatches.is_empty()) {
                            // docs/security.md#the-gateway: the two records of the browser's calls
                            // disagree, call by call; the run is `violated`.
                            dt { "Gateway record" }
                            dd #gateway-mismatches { ul { @for m in &e.gateway_mismatches { li { (m) } } } }
                        }
                        dt { "Journal hash" }
                        dd {
                            @match &rec.journal_hash {
                                Some(h) => code { (h) },
                                None => span.muted { "not recorded by this run" },
                            }
                        }
                        @if let Some(h) = end.and_then(|e| e.gateway_hash.as_deref()) {
                            // docs/security.md#the-gateway: the head of gateway.jsonl's hash chain.
                            dt { "Gateway record hash" }
                            dd #gateway-hash { code { (h) } }
                        }
                        dt { "Run directory" } dd { code { (rec.dir.path().display()) } }
                    }
                }
                (flow_section(rec, flow))
                section #findings {
                    h2 { "The persona's report" }
                    @match &rec.findings {
                        Some(text) => div.md #findings-text { (super::verdict_html::markdown(text)) },
                        None => p.muted { "The run saved no findings.md." },
                    }
                    h3 { "Walls the persona hit" }
                    @let walls = rec.walls();
                    @if walls.is_empty() {
                        p.muted { "None: no action was denied, refused by the browser, or a violation." }
                    } @else {
                        ul.plain { @for w in &walls { li { (w) } } }
                    }
                }
                (timeline(rec))
                @if !rec.journal_problems.is_empty() {
                    section #journal-problems {
                        h2 { "Journal lines not shown" }
                        ul.plain { @for p in &rec.journal_problems { li { (p) } } }
                    }
                }
                footer.muted {
                    p { "Rendered by leopold " (env!("CARGO_PKG_VERSION")) " from the run directory alone (run.json, journal.jsonl, findings.md, screenshots). URLs are shown as hosts only. The page runs no script and loads nothing." }
                }
            }
        }
    };
    page.into_string()
}

/// The badge class of an outcome: `clean`, `violated` (the run went wrong in a way the persona
/// or its records show) or `other` (it never judged the app).
pub(crate) fn outcome_class(outcome: &str) -> &'static str {
    match outcome {
        "clean" => "clean",
        "violated" | "stuck" | "tampered" | "over_limit" | "over_budget" | "looping" | "failed" => {
            "violated"
        }
        _ => "other",
    }
}

/// The `<head>` of Leopold's pages: a policy that allows no script and no request, the
/// stylesheet, `title`.
pub(crate) fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) }
            style { (PreEscaped(CSS)) }
        }
    }
}

fn flow_section(rec: &RunRecord, flow: &FlowSource<'_>) -> Markup {
    html! {
        section #flow {
            h2 { "Flow" }
            @match flow.flow() {
                None => {
                    p.muted {
                        "The flow file "
                        @if let Some(p) = rec.flow_path() { code { (p.display()) } " " }
                        "could not be read now, so its allowlist and rules are not shown: "
                        @if let FlowSource::Missing(why) = flow { (why) }
                    }
                }
                Some(f) => {
                    @if f.name != rec.flow() {
                        p.muted { "Note: the flow file now names flow " code { (f.name) } ", not the run's " code { (rec.flow()) } ": it changed since the run." }
                    }
                    @if matches!(flow, FlowSource::Loaded(_)) {
                        p.muted { "Read again from the flow file for this report; it may have changed since the run." }
                    }
                    dl {
                        dt { "Name" } dd { code { (f.name) } }
                        dt { "File" }
                        @match (flow, rec.state.as_ref().and_then(|s| s.flow_source.as_ref())) {
                            (FlowSource::Copied(_), Some(source)) => dd {
                                code { (source.display()) } span.muted { " (its copy in the run directory, " code { "flow.md" } ", shown)" }
                            },
                            _ => dd { code { (f.source.display()) } },
                        }
                        dt { "Allowlist" }
                        dd { ul.plain { @for e in &f.allowlist { li { code { (e) } } } } }
                        @if let Some(start) = &f.start_url {
                            dt { "Starts on" } dd { (host_of_raw(start)) }
                        }
                        @if let Some(b) = &f.browser { dt { "Browser" } dd { (format!("{b:?}").to_lowercase()) " (provisioned)" } }
                        @if !f.allow_tools.is_empty() {
                            dt { "Dangerous tools allowed" } dd { (f.allow_tools.join(", ")) }
                        }
                        dt { "Irreversible" }
                        dd {
                            @let irr = &f.irreversible;
                            @if irr.forbid.is_empty() && irr.click_labels.is_empty() && irr.url_paths.is_empty() && irr.tools.is_empty() {
                                span.muted { "no rules" }
                            }
                            ul.plain {
                                @for s in &irr.forbid { li { "built-in set " code { (s.name()) } } }
                                @for p in &irr.click_labels { li { "click label " code { (p.as_str()) } } }
                                @for p in &irr.url_paths { li { "path " code { (p) } } }
                                @for p in &irr.tools { li { "tool " code { (p.as_str()) } } }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn timeline(rec: &RunRecord) -> Markup {
    let start = rec
        .started_at()
        .and_then(|s| humantime::parse_rfc3339_weak(&s).ok());
    html! {
        section #timeline {
            h2 { "Timeline" }
            @if rec.actions.is_empty() {
                p.muted { "The journal holds no action." }
            } @else {
                @let steps = super::steps::steps(&rec.dir, &rec.actions);
                @let said = crate::narration::read(&rec.dir.path().join(crate::run_dir::RunDir::NARRATION));
                // Fixed columns: a long tool name or label wraps in its cell, and the screenshot
                // column keeps its share at any width (a page 1280 px wide shows it whole).
                table.timeline {
                    colgroup {
                        col.n; col.time; col; col; col; col; col; col; col.shot;
                    }
                    thead { tr {
                        th { "#" } th { "Time, took" } th { "Tool" } th { "Hosts" } th { "Label" }
                        th { "Outcome" } th { "Reason" } th { "Page after" } th { "Screenshot" }
                    } }
                    tbody {
                        (narration(said.get(&0)))
                        @for a in &rec.actions {
                            (row(rec, a, start, steps.get(&a.seq)))
                            (narration(said.get(&a.seq)))
                        }
                    }
                }
                @if rec.actions_not_shown > 0 {
                    p.muted {
                        (rec.actions_not_shown) " more actions are in the journal and not shown here (nor in the walls above): `leopold persona replay` reads them all."
                    }
                }
            }
        }
    }
}

fn row(
    rec: &RunRecord,
    a: &Action,
    start: Option<std::time::SystemTime>,
    step: Option<&super::steps::Step>,
) -> Markup {
    let violation = match &a.verdict {
        Some(Verdict::Violation { rule, detail }) => Some((rule, detail)),
        _ => None,
    };
    let class = if violation.is_some() {
        "violation"
    } else if a.outcome == Outcome::Denied {
        "denied"
    } else if a.browser_blocked.is_some() {
        "refused"
    } else {
        ""
    };
    let offset = start
        .zip(humantime::parse_rfc3339_weak(&a.ts).ok())
        .and_then(|(s, t)| t.duration_since(s).ok());
    let page = a
        .urls
        .iter()
        .rev()
        .find(|u| u.role == UrlRole::Page)
        .and_then(|u| u.host.clone());
    html! {
        tr.(class) id=(format!("seq-{}", a.seq)) {
            td { (a.seq) }
            td.mono title=(a.ts) {
                (a.ts.split_once('T').map_or(a.ts.as_str(), |(_, t)| t))
                @if let Some(o) = offset { br; span.muted { "+" (format_offset(o)) } }
                @if let Some(t) = step.and_then(|s| s.took) { br; span.took { "took " (format_offset(t)) } }
            }
            td.mono { (a.tool) br; span.muted { (kind_name(a)) } }
            td { (a.hosts().join(", ")) }
            td {
                @if let Some(l) = &a.label { div { (l) } }
                @if let Some(e) = &a.element { div.muted { "described as: " (e) } }
                @if let Some(n) = a.typed_len { div.muted { "typed " (n) " characters" } }
            }
            td {
                span.tag {
                    @if violation.is_some() { "VIOLATION" }
                    @else if a.outcome == Outcome::Denied { "blocked" }
                    // The call ran, but the browser refused to go where it led.
                    @else if a.browser_blocked.is_some() { "refused" }
                    @else { (outcome_name(a.outcome)) }
                }
                @if violation.is_some() && a.outcome != Outcome::Completed { br; span.muted { (outcome_name(a.outcome)) } }
            }
            td {
                @if let Some((rule, detail)) = violation {
                    code { (rule) }
                    @if let Some(d) = detail { br; (d) }
                } @else if a.outcome == Outcome::Denied {
                    (denial_reason(a))
                }
                @if let Some(b) = &a.browser_blocked {
                    @if violation.is_some() || a.outcome == Outcome::Denied { br; }
                    "browser refused (" (b.how) ")"
                    @if let Some(h) = &b.host { ": " (h) }
                }
            }
            td { @if let Some(p) = page { (p) } }
            td {
                @if let Some(shot) = step.and_then(|s| s.shot.as_deref()) { (evidence_shot(rec, a, shot)) }
                (screenshot(rec, a))
            }
        }
    }
}

fn screenshot(rec: &RunRecord, a: &Action) -> Markup {
    let Some(name) = a.screenshot.as_deref() else {
        return html! {};
    };
    let Some(path) = rec.screenshot_of(a) else {
        return html! { span.muted { "screenshot " code { (name) } " not in screenshots/" } };
    };
    let mime = match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("webp") => "image/webp",
        _ => "image/png",
    };
    let size = std::fs::metadata(&path)
        .map(|m| m.len())
        .unwrap_or(u64::MAX);
    // Where it is in the run directory: `screenshots/` once the run ended.
    let rel = path
        .strip_prefix(rec.dir.path())
        .map_or_else(|_| name.to_owned(), |p| p.display().to_string());
    match (size <= MAX_EMBED)
        .then(|| std::fs::read(&path).ok())
        .flatten()
    {
        Some(bytes) => {
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            html! {
                img.shot src=(format!("data:{mime};base64,{data}")) alt=(format!("screenshot after #{}", a.seq));
                span.muted { (rel) }
            }
        }
        None => html! { a href=(rel) { (rel) } span.muted { " (not embedded: over 4 MiB)" } },
    }
}

/// What the model wrote between two calls, as a row of its own (`narration.jsonl`).
fn narration(texts: Option<&Vec<String>>) -> Markup {
    html! {
        @for t in texts.into_iter().flatten() {
            tr.narration { td colspan="9" { span.muted { "the persona: " } span.said { (t) } } }
        }
    }
}

/// The gateway's screenshot after the step: a thumbnail linking to the file, which opens full
/// size with no script (the page's policy allows images only as `data:`).
fn evidence_shot(rec: &RunRecord, a: &Action, rel: &str) -> Markup {
    let Some(path) = super::steps::shot_path(&rec.dir, rel) else {
        return html! { span.muted { "screenshot " code { (rel) } " is gone" } };
    };
    let size = std::fs::metadata(&path).map_or(u64::MAX, |m| m.len());
    let data = (size <= MAX_EMBED)
        .then(|| std::fs::read(&path).ok())
        .flatten()
        .map(|b| base64::engine::general_purpose::STANDARD.encode(b));
    html! {
        a.evidence href=(rel) title="open full size" {
            @match data {
                Some(d) => img.shot src=(format!("data:image/png;base64,{d}")) alt=(format!("the page after #{}", a.seq));,
                None => (rel),
            }
        }
    }
}

fn kind_name(a: &Action) -> String {
    serde_json::to_value(a.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed => "completed",
        Outcome::Errored => "errored",
        Outcome::Denied => "denied",
        Outcome::Unfinished => "unfinished",
    }
}

/// A URL from a flow file, shown by its host only (a start URL may carry a token).
fn host_of_raw(raw: &str) -> String {
    url::Url::parse(raw)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "(not a URL)".into())
}

/// An action's time since the run started: `+0.412s`, `+12.3s`, `+2m 5s`.
fn format_offset(d: std::time::Duration) -> String {
    match d.as_secs() {
        0..10 => format!("{:.3}s", d.as_secs_f64()),
        10..60 => format!("{:.1}s", d.as_secs_f64()),
        _ => format_duration(d),
    }
}

/// `1m 4s`, `850ms`: what a person reads.
pub fn format_duration(d: std::time::Duration) -> String {
    if d.as_secs() == 0 {
        return format!("{}ms", d.as_millis());
    }
    let secs = std::time::Duration::from_secs(d.as_secs());
    humantime::format_duration(secs).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(
            format_duration(std::time::Duration::from_millis(850)),
            "850ms"
        );
        assert_eq!(
            format_duration(std::time::Duration::from_millis(64_400)),
            "1m 4s"
        );
    }

    #[test]
    fn offsets_keep_the_milliseconds_that_tell_actions_apart() {
        use std::time::Duration;
        assert_eq!(format_offset(Duration::from_millis(1033)), "1.033s");
        assert_eq!(format_offset(Duration::from_millis(12_345)), "12.3s");
        assert_eq!(format_offset(Duration::from_secs(125)), "2m 5s");
    }

    #[test]
    fn start_urls_are_shown_by_host() {
        assert_eq!(
            host_of_raw("https://u:p@staging.example.com/x?t=secret"),
            "staging.example.com"
        );
    }
}
