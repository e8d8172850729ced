//! The one validation function, used live by the supervisor and after the fact by replay.
//!
//! Rules, in the order they are checked (the first that matches decides):
//!
//! 1. a `denied` action never ran: always [`Verdict::Ok`] (it is still journaled);
//! 2. `hook_failed_open`: a navigation or fetch, or any call of a tool the guard judges
//!    (`mcp__*`, `WebFetch`), carrying a URL (found as the guard finds them: nested, batched,
//!    navigation-looking) that is outside the allowlist, not `http`/`https`, or unparseable, and
//!    which was not denied. `errored` counts: an error comes
//!    from the tool, so the call got past the hook, which is the failure; whether the network then
//!    failed is luck. `unfinished` counts too: it may have run;
//! 3. irreversibility: the tool name (`match_tool`), the label and element description of a click
//!    or submit (`match_label`), and the path of every URL the action carries or caused
//!    (`match_path`): the flow's own rules and its built-in `payment`/`deletion` sets. Errored
//!    actions count: a submit that "times out" waiting for the next page has usually been sent;
//! 4. `left_allowlist`: a clicked link's `href` or the page the browser ended on is outside the
//!    allowlist (a link click or a redirect that took the browser away), for a completed or
//!    unfinished action.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use leopold_flows::{Flow, RuleHit};

use crate::action::{Action, ActionKind, ActionView, Outcome, UrlRole, UrlView, Verdict};

/// Rule name: a navigation or fetch outside the allowlist got past the guard.
pub const RULE_HOOK_FAILED_OPEN: &str = "hook_failed_open";
/// Rule name: a click or redirect took the browser to a page outside the allowlist.
pub const RULE_LEFT_ALLOWLIST: &str = "left_allowlist";

/// Whether the wired guard judges this tool's calls (its matcher is `mcp__.*|WebFetch`): such a
/// call that ran with a URL outside the allowlist, whatever its kind, got past the hook.
fn guard_judges(tool: &str) -> bool {
    tool.starts_with("mcp__") || tool == "WebFetch"
}

/// Judges one action against a flow. Pure: the same (flow, action) always gives the same verdict,
/// live or in replay. The action's own `verdict` field is ignored.
pub fn validate(flow: &Flow, action: &Action) -> Verdict {
    Validator::new(flow).validate(&action.view())
}

/// [`validate`] for many actions against one flow, as replay runs it: it remembers what the flow
/// said about each tool name and label seen (the costliest questions, and the ones a journal asks
/// again and again). The answers are the flow's own, so the verdicts are [`validate`]'s exactly.
pub(crate) struct Validator<'f> {
    flow: &'f Flow,
    tools: Memo,
    labels: Memo,
    /// The last host judged and whether the allowlist holds it: a journal names the same host
    /// line after line.
    last_host: Option<(Box<str>, bool)>,
}

/// Answers by tool name or label. Keyed by FNV-1a, not std's SipHash: the keys are a journal's
/// own short names, and a key set built to collide costs time (bounded by [`MEMO_MAX`]), never a
/// wrong answer.
type Memo = HashMap<Box<str>, Option<RuleHit>, BuildHasherDefault<Fnv1a>>;

/// The 64-bit FNV-1a hash.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The most tool names, and labels, a [`Validator`] remembers; past that it starts afresh, so
/// memory stays flat over any journal.
const MEMO_MAX: usize = 4096;

/// `memo[key]`, computed by `answer` on a miss.
fn memoized(
    memo: &mut Memo,
    key: &str,
    answer: impl FnOnce(&str) -> Option<RuleHit>,
) -> Option<RuleHit> {
    if let Some(hit) = memo.get(key) {
        return hit.clone();
    }
    let hit = answer(key);
    if memo.len() >= MEMO_MAX {
        memo.clear();
    }
    memo.insert(key.into(), hit.clone());
    hit
}

impl<'f> Validator<'f> {
    pub(crate) fn new(flow: &'f Flow) -> Self {
        Validator {
            flow,
            tools: Memo::default(),
            labels: Memo::default(),
            last_host: None,
        }
    }

    /// [`Flow::host_str_allowed`], remembering the last answer.
    fn host_allowed(&mut self, host: &str) -> bool {
        match &self.last_host {
            Some((last, allowed)) if **last == *host => *allowed,
            _ => {
                let allowed = self.flow.host_str_allowed(host);
                self.last_host = Some((host.into(), allowed));
                allowed
            }
        }
    }

    /// The verdict on one action; see the module's rules.
    pub(crate) fn validate(&mut self, action: &ActionView<'_>) -> Verdict {
        let flow = self.flow;
        if action.outcome == Outcome::Denied {
            return Verdict::Ok;
        }

        if matches!(action.kind, ActionKind::Navigate | ActionKind::Fetch)
            || guard_judges(&action.tool)
        {
            for u in action.urls.iter().filter(|u| u.role == UrlRole::Target) {
                let inside = u.is_web() && u.host.as_deref().is_some_and(|h| self.host_allowed(h));
                if !inside {
                    return Verdict::Violation {
                        rule: RULE_HOOK_FAILED_OPEN.to_owned(),
                        detail: Some(describe_outside(u)),
                    };
                }
            }
        }

        if let Some(hit) = memoized(&mut self.tools, &action.tool, |t| flow.match_tool(t)) {
            return Verdict::Violation {
                rule: hit.rule,
                detail: Some(format!("tool {}", action.tool)),
            };
        }
        if matches!(action.kind, ActionKind::Click | ActionKind::Submit) {
            for label in [&action.label, &action.element].into_iter().flatten() {
                if let Some(hit) = memoized(&mut self.labels, label, |l| flow.match_label(l)) {
                    return Verdict::Violation {
                        rule: hit.rule,
                        detail: Some(format!("label {label:?}")),
                    };
                }
            }
        }
        for u in &action.urls {
            if let Some(path) = u.path.as_deref() {
                if let Some(hit) = flow.match_path(path) {
                    return Verdict::Violation {
                        rule: hit.rule,
                        detail: Some(format!("path {path}")),
                    };
                }
            }
        }

        // A link the browser refused to follow (its resolver rules sent the host nowhere) did not
        // leave the allowlist: it is journaled as blocked by the browser, not a violation. A page
        // that actually loaded off the allowlist (`Page` role) is never excused.
        if action.outcome != Outcome::Errored {
            for u in action.urls.iter().filter(|u| match u.role {
                UrlRole::Page => true,
                UrlRole::Href => action.browser_blocked.is_none(),
                UrlRole::Target => false,
            }) {
                // Only web URLs are recorded for these roles' judgement: a browser's own error
                // page (`chrome-error://`) or `about:blank` is not a host the browser contacted.
                if u.is_web() && !u.host.as_deref().is_some_and(|h| self.host_allowed(h)) {
                    return Verdict::Violation {
                        rule: RULE_LEFT_ALLOWLIST.to_owned(),
                        detail: Some(describe_outside(u)),
                    };
                }
            }
        }
        Verdict::Ok
    }
}

fn describe_outside(u: &UrlView<'_>) -> String {
    match (&u.host, &u.scheme) {
        (Some(h), _) => format!("host {h}"),
        (None, Some(s)) => format!("scheme {s}"),
        (None, None) => "unparseable url".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{Harness, UrlRef};
    use std::path::Path;

    fn flow() -> Flow {
        Flow::parse(
            "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n\
             [irreversible]\nforbid = [\"payment\", \"deletion\"]\n\
             click_labels = [\"(?i)launch missiles\"]\nurl_paths = [\"/checkout/confirm\"]\n\
             tools = [\"mcp__bank__.*\"]\n+++\nbrief\n",
            Path::new("checkout.md"),
        )
        .unwrap()
    }

    fn action(tool: &str, kind: ActionKind, outcome: Outcome) -> Action {
        Action::new(
            Harness::Claude,
            "2026-11-30T10:00:00.000Z".into(),
            tool,
            kind,
            outcome,
        )
    }

    fn nav(url: &str, outcome: Outcome) -> Action {
        let mut a = action(
            "mcp__browser__browser_navigate",
            ActionKind::Navigate,
            outcome,
        );
        a.urls.push(UrlRef::from_raw(UrlRole::Target, url));
        a
    }

    fn click(label: &str, outcome: Outcome) -> Action {
        let mut a = action("mcp__browser__browser_click", ActionKind::Click, outcome);
        a.label = Some(label.into());
        a
    }

    /// A completed click on `label` that carries (or reached) `url` in this role.
    fn click_with(label: &str, role: UrlRole, url: &str) -> Action {
        let mut a = click(label, Outcome::Completed);
        a.urls.push(UrlRef::from_raw(role, url));
        a
    }

    fn rule(v: &Verdict) -> &str {
        match v {
            Verdict::Ok => "ok",
            Verdict::Violation { rule, .. } => rule,
        }
    }

    #[test]
    fn validation_table() {
        let f = flow();
        use Outcome::*;
        let cases: Vec<(&str, Action, &str)> = vec![
            (
                "inside navigation",
                nav("https://staging.example.com/a", Completed),
                "ok",
            ),
            (
                "subdomain inside",
                nav("https://a.staging.example.com/", Completed),
                "ok",
            ),
            (
                "outside completed",
                nav("https://prod.example.org/x", Completed),
                RULE_HOOK_FAILED_OPEN,
            ),
            (
                "outside errored",
                nav("https://prod.example.org/x", Errored),
                RULE_HOOK_FAILED_OPEN,
            ),
            (
                "outside unfinished",
                nav("https://prod.example.org/x", Unfinished),
                RULE_HOOK_FAILED_OPEN,
            ),
            (
                "outside denied",
                nav("https://prod.example.org/x", Denied),
                "ok",
            ),
            (
                "userinfo trick",
                nav("https://staging.example.com@evil.example/", Completed),
                RULE_HOOK_FAILED_OPEN,
            ),
            (
                "javascript scheme",
                nav("javascript:alert(1)", Completed),
                RULE_HOOK_FAILED_OPEN,
            ),
            (
                "unparseable",
                nav("//staging.example.com/", Completed),
                RULE_HOOK_FAILED_OPEN,
            ),
            (
                "irreversible path",
                nav("https://staging.example.com/Checkout/%63onfirm", Completed),
                "irreversible.url_paths \"/checkout/confirm\"",
            ),
            (
                "flow label",
                click("Launch missiles", Completed),
                "irreversible.click_labels \"(?i)launch missiles\"",
            ),
            (
                "builtin payment label",
                click("Place order", Completed),
                "builtin payment",
            ),
            (
                "builtin payment label errored",
                click("Place order", Errored),
                "builtin payment",
            ),
            (
                "builtin payment label denied",
                click("Place order", Denied),
                "ok",
            ),
            (
                "builtin deletion label",
                click("Delete my account", Completed),
                "builtin deletion",
            ),
            ("harmless label", click("Add to cart", Completed), "ok"),
            (
                "flow tool",
                action("mcp__bank__anything", ActionKind::Other, Completed),
                "irreversible.tools \"mcp__bank__.*\"",
            ),
            (
                "builtin payment tool",
                action("mcp__stripe__create_charge", ActionKind::Other, Completed),
                "builtin payment",
            ),
            (
                "builtin deletion tool",
                action("mcp__db__delete_user", ActionKind::Other, Completed),
                "builtin deletion",
            ),
            (
                "other tool",
                action(
                    "mcp__browser__browser_snapshot",
                    ActionKind::Other,
                    Completed,
                ),
                "ok",
            ),
        ];
        let mut failures = vec![];
        for (name, a, want) in &cases {
            let got = validate(&f, a);
            if !rule(&got).starts_with(want) {
                failures.push(format!("{name}: want {want}, got {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn element_description_is_checked_too() {
        let mut a = click("the blue button", Outcome::Completed);
        assert_eq!(validate(&flow(), &a), Verdict::Ok);
        a.element = Some("Pay now".into());
        assert!(rule(&validate(&flow(), &a)).starts_with("builtin payment"));
    }

    #[test]
    fn a_link_off_the_allowlist_is_left_allowlist_unless_errored() {
        let mut a = click_with(
            "Admin dashboard",
            UrlRole::Href,
            "http://prod-dashboard.example.org/admin",
        );
        let v = validate(&flow(), &a);
        assert_eq!(
            v,
            Verdict::Violation {
                rule: RULE_LEFT_ALLOWLIST.into(),
                detail: Some("host prod-dashboard.example.org".into())
            }
        );
        a.outcome = Outcome::Errored;
        assert_eq!(validate(&flow(), &a), Verdict::Ok);
    }

    #[test]
    fn the_page_reached_is_judged_by_path_and_host() {
        let a = click_with(
            "the blue button",
            UrlRole::Page,
            "http://staging.example.com/checkout/confirm",
        );
        assert!(rule(&validate(&flow(), &a)).starts_with("irreversible.url_paths"));
        let b = click_with("Next", UrlRole::Page, "https://evil.example/");
        assert_eq!(rule(&validate(&flow(), &b)), RULE_LEFT_ALLOWLIST);
        let c = click_with("Next", UrlRole::Page, "chrome-error://chromewebdata/");
        assert_eq!(validate(&flow(), &c), Verdict::Ok);
    }

    #[test]
    fn fetch_off_allowlist_is_hook_failed_open() {
        let mut a = action("WebFetch", ActionKind::Fetch, Outcome::Completed);
        a.urls.push(UrlRef::from_raw(
            UrlRole::Target,
            "https://evil.example/x?k=v",
        ));
        assert_eq!(rule(&validate(&flow(), &a)), RULE_HOOK_FAILED_OPEN);
    }

    #[test]
    fn validation_ignores_a_recorded_verdict() {
        let mut a = nav("https://prod.example.org/", Outcome::Completed);
        a.verdict = Some(Verdict::Ok);
        assert!(validate(&flow(), &a).is_violation());
    }

    /// The action the adapters build for a call that completed with these arguments.
    fn ran(harness: Harness, tool: &str, args: &serde_json::Value) -> Action {
        crate::classify::build_action(
            harness,
            tool,
            None,
            args,
            Outcome::Completed,
            None,
            &crate::classify::RefMap::default(),
            "2026-11-30T00:00:00Z".into(),
        )
    }

    #[test]
    fn a_batch_that_ran_with_one_nested_url_outside_is_a_failed_open_hook() {
        let args = serde_json::json!({
            "url": "https://staging.example.com/cart",
            "batch": [{"url": "https://staging.example.com/a"}, {"url": "https://evil.example/collect?t=1"}]
        });
        let a = ran(Harness::Codex, "mcp__browser__navigate", &args);
        let mut hosts: Vec<_> = a.urls.iter().filter_map(|u| u.host.as_deref()).collect();
        hosts.sort_unstable();
        assert_eq!(
            hosts,
            ["evil.example", "staging.example.com", "staging.example.com"]
        );
        match validate(&flow(), &a) {
            Verdict::Violation { rule, detail } => {
                assert_eq!(rule, RULE_HOOK_FAILED_OPEN);
                assert!(detail.unwrap().contains("evil.example"));
            }
            v => panic!("{v:?}"),
        }
        // Control: the same batch without the bad URL is fine.
        let args = serde_json::json!({"url": "https://staging.example.com/cart",
            "batch": [{"url": "https://staging.example.com/a"}]});
        let a = ran(Harness::Codex, "mcp__browser__navigate", &args);
        assert_eq!(validate(&flow(), &a), Verdict::Ok);
    }

    #[test]
    fn any_guarded_tool_that_ran_with_a_url_outside_is_a_failed_open_hook() {
        // A click is not a navigation, but the guard judges every URL an MCP call carries.
        let args = serde_json::json!({"element": "Docs", "target": "e3",
            "options": {"referrer": "https://evil.example/"}});
        let build = |tool: &str| ran(Harness::Claude, tool, &args);
        assert!(matches!(
            validate(&flow(), &build("mcp__browser__browser_click")),
            Verdict::Violation { rule, .. } if rule == RULE_HOOK_FAILED_OPEN
        ));
        // A tool the guard is not wired for (its matcher is `mcp__.*|WebFetch`) is not judged
        // by this rule: its hook did not fail, it was never asked.
        assert_eq!(validate(&flow(), &build("Write")), Verdict::Ok);
    }
}
