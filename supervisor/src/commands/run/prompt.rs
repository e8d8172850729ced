//! The persona's prompt, built from the flow.

use leopold_flows::Flow;

/// The persona's prompt: brief, start URL, allowlist, irreversibility rules, and what to do at a
/// wall.
pub fn build_prompt(flow: &Flow) -> String {
    let mut p = String::new();
    p.push_str(&format!(
        "You are a persona walking the flow `{}` on a staging web app, using only the browser tools you were given.\n\n",
        flow.name
    ));
    p.push_str("## Your brief\n\n");
    p.push_str(flow.brief.trim());
    p.push_str("\n\n## Rules Leopold enforces\n\n");
    if let Some(start) = &flow.start_url {
        p.push_str(&format!("- Start at {start}\n"));
    }
    let hosts: Vec<String> = flow.allowlist.iter().map(|e| e.to_string()).collect();
    p.push_str(&format!(
        "- Only these hosts (and their subdomains) may be visited: {}. Anything else is refused.\n",
        hosts.join(", ")
    ));
    let irr = &flow.irreversible;
    let mut rules = Vec::new();
    for set in &irr.forbid {
        rules.push(format!("any {} action", set.name()));
    }
    for re in &irr.click_labels {
        // Every way the browser tool catalogue says a call activates an element is judged.
        rules.push(format!(
            "clicking, ticking, choosing, dragging or submitting anything labelled like /{}/",
            re.as_str()
        ));
    }
    for path in &irr.url_paths {
        rules.push(format!("visiting or submitting to a path starting {path}"));
    }
    for re in &irr.tools {
        rules.push(format!("calling tools matching /{}/", re.as_str()));
    }
    if !rules.is_empty() {
        p.push_str(&format!(
            "- Irreversible, never do: {}. Doing one stops the run.\n",
            rules.join("; ")
        ));
    }
    if flow.has_label_rules() {
        p.push_str(
            "- Act on elements by the refs of the latest page snapshot. On a page showing an irreversible element, keys other than Tab and Escape are refused (Leopold cannot tell which element has focus), and a dialog can be accepted only once its message was shown.\n",
        );
    }
    p.push_str(
        "- When a step is refused (by Leopold's guard or by the browser), do not retry it or work around it: note the wall in your final report and go on.\n",
    );
    p.push_str(&format!(
        "\n## Reporting\n\n- Each time you find a problem with the app, report it at once with the tool `{}`: a severity (blocker: a user cannot get through; major: only with trouble or a workaround; minor: wrong, but a user gets through; note: worth knowing), a one-line title, and what you did, expected and saw. Name hosts and paths, never full URLs. A refusal by Leopold is not a problem with the app.\n- When you are done, call `{}` once, saying whether you reached the goal of your brief.\n\nThen end with a short report of your findings.\n",
        crate::gateway::REPORT_FINDING,
        crate::gateway::FINISH,
    ));
    p
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn prompt_names_brief_start_allowlist_and_walls() {
        let flow = Flow::parse(
            "+++\nname=\"checkout\"\nallowlist=[\"staging.example.com\"]\nstart_url=\"https://staging.example.com/\"\n[irreversible]\nforbid=[\"payment\"]\nclick_labels=[\"(?i)place order\"]\n+++\nBuy a hat.\n",
            Path::new("f.md"),
        )
        .unwrap();
        let p = build_prompt(&flow);
        for needle in [
            "Buy a hat.",
            "https://staging.example.com/",
            "staging.example.com",
            "payment",
            "place order",
            "finding",
            "ticking, choosing, dragging or submitting",
            "Tab and Escape",
            "report_finding",
            "`finish`",
        ] {
            assert!(p.contains(needle), "{needle} missing from {p}");
        }
    }
}
