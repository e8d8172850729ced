//! The top of `report.html`: the verdict on the app (the causes it failed by, the expectations
//! met and unmet, the persona's reported findings and `finish`), the cost line, and the model's
//! Markdown rendered safely.
//!
//! Markdown comes from the model, so it is rendered with `pulldown-cmark` and then made as
//! plain as the rest of the page: raw HTML is shown as text (escaped), a link keeps its text and
//! shows its host only, an image shows its alt text, and any URL written in the text is reduced
//! to its host. What remains is the HTML `pulldown-cmark` writes for Markdown's own structure
//! (paragraphs, lists, emphasis, code), with every text escaped.

use maud::{html, Markup, PreEscaped};
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

use super::RunRecord;
use crate::verdict::Verdict;

/// `text` (Markdown) as HTML that carries no markup of the text's own and no URL.
pub fn markdown(text: &str) -> Markup {
    let mut out = String::new();
    let mut link_host: Vec<Option<String>> = Vec::new();
    let events = Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH)
        .filter_map(|e| match e {
            Event::Html(h) | Event::InlineHtml(h) => Some(Event::Text(h)),
            Event::Start(Tag::Link { dest_url, .. }) => {
                link_host.push(host_of(&dest_url));
                None
            }
            Event::End(TagEnd::Link) => link_host
                .pop()
                .flatten()
                .map(|h| Event::Text(CowStr::from(format!(" ({h})")))),
            Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
            Event::Text(t) => Some(Event::Text(CowStr::from(crate::redact::strip_urls(&t)))),
            Event::Code(t) => Some(Event::Code(CowStr::from(crate::redact::strip_urls(&t)))),
            other => Some(other),
        });
    pulldown_cmark::html::push_html(&mut out, events);
    PreEscaped(out)
}

fn host_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
}

/// The verdict section, first after the header; nothing for a run without one.
pub fn verdict_section(rec: &RunRecord) -> Markup {
    let end = rec.state.as_ref().and_then(|s| s.end.as_ref());
    let usage = end.and_then(|e| e.usage.as_ref());
    let Some(v) = end.and_then(|e| e.verdict.as_ref()) else {
        return html! {};
    };
    let causes: Vec<&String> = v.failed_by.iter().chain(&v.unmet).collect();
    let failed = rec.outcome() == "failed";
    html! {
        section #verdict {
            h2 { "Verdict" }
            @if failed {
                p { strong { "The app did not meet the flow:" } }
                ul.plain #failed-by { @for c in &causes { li { (c) } } }
            } @else if causes.is_empty() {
                p #met { "The app met the flow: "
                    @if v.expectations.is_empty() { "no finding at or above " }
                    @else { "every expectation met, and no finding at or above " }
                    code { (v.fail_on) } "." }
            } @else {
                p { "The run ended " code { (rec.outcome()) } " before its verdict on the app was complete; it had found:" }
                ul.plain #failed-by { @for c in &causes { li { (c) } } }
            }
            @if let Some(u) = usage {
                p #cost { "Cost: " (u.line()) }
            }
            @if !v.expectations.is_empty() {
                h3 { "Expectations" }
                ul.plain #expectations {
                    @for e in &v.expectations {
                        li.(if e.met { "met" } else { "unmet" }) {
                            span.tag { @if e.met { "met" } @else { "UNMET" } } " reach " code { (e.reach) }
                        }
                    }
                }
            }
            (reported(v))
        }
    }
}

fn reported(v: &Verdict) -> Markup {
    html! {
        h3 { "Findings the persona reported" }
        @if v.reported.is_empty() {
            p.muted { "None: the persona called " code { "report_finding" } " for nothing." }
        } @else {
            ol #reported {
                @for f in &v.reported {
                    li.finding {
                        span.(format!("sev sev-{}", f.severity)) { (f.severity) } " "
                        strong { (f.title) }
                        @if let Some(s) = f.step { span.muted { " (step " (s) ")" } }
                        @if !f.detail.is_empty() { div.md { (markdown(&f.detail)) } }
                    }
                }
            }
            @if v.reported_not_kept > 0 {
                p.muted { (v.reported_not_kept) " more were reported and not kept." }
            }
        }
        @if let Some(f) = &v.finish {
            p #finish {
                strong { "Goal " @if f.goal_reached { "reached" } @else { "not reached" } }
                ", the persona said: " (f.summary)
            }
        } @else {
            p.muted #finish { "The persona never called " code { "finish" } "." }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_keeps_its_structure_and_no_markup_or_url_of_the_text() {
        let md = "**Total** is wrong:\n\n- step 1\n- <script>alert(1)</script>\n\n\
                  See [the cart](https://u:p@shop.example/cart?token=s3cret) and \
                  https://evil.example/x?k=1 ![img](https://t.example/p.png)\n\n<img src=x onerror=y>";
        let out = markdown(md).into_string();
        assert!(out.contains("<strong>Total</strong>"), "{out}");
        assert!(out.contains("<li>step 1</li>"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
        assert!(
            !out.contains("<script") && !out.contains("<img") && !out.contains("<a "),
            "{out}"
        );
        assert!(out.contains("the cart (shop.example)"), "{out}");
        assert!(
            !out.contains("s3cret") && !out.contains("k=1") && !out.contains("p.png"),
            "{out}"
        );
        assert!(out.contains("evil.example"), "{out}");
    }
}
