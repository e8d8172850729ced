//! The flow's `[expect]` table: what the app must meet for the run to pass, judged by Leopold
//! from what the browser reported rather than from the model's word (docs/reference.md#expect).

use crate::{Flow, Pattern};

/// `max_repeats` when a flow does not set it: the same allowed call on the same target five times
/// running is a persona going round in circles.
pub const DEFAULT_MAX_REPEATS: u32 = 5;

/// How bad a finding the persona reported is, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Note,
    /// Wrong, but the user gets through.
    Minor,
    /// Wrong, and the user gets through only with trouble or a workaround.
    Major,
    /// The user cannot get through.
    Blocker,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 4] = [
        Severity::Note,
        Severity::Minor,
        Severity::Major,
        Severity::Blocker,
    ];

    /// The name flows, tools and records use.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Minor => "minor",
            Severity::Major => "major",
            Severity::Blocker => "blocker",
        }
    }

    /// The severity named `name` (exactly, lowercase).
    pub fn from_name(name: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `reach` entry: a page the persona must have been on.
#[derive(Debug, Clone)]
pub enum Reach {
    /// A path, matched exactly (a trailing `/` aside; case kept: `/Cart` is another page).
    Path(String),
    /// `regex:<pattern>`, matched anywhere in the path and query (`/order?id=7`).
    Regex(Pattern),
}

impl Reach {
    /// As the flow wrote it (`/cart`, `regex:^/orders/\d+$`).
    pub fn as_written(&self) -> String {
        match self {
            Reach::Path(p) => p.clone(),
            Reach::Regex(r) => format!("regex:{}", r.as_str()),
        }
    }

    /// Whether a page at `path` (and `query`, without its `?`) meets this entry.
    pub fn matches(&self, path: &str, query: Option<&str>) -> bool {
        match self {
            Reach::Path(p) => trim_slash(path) == trim_slash(p),
            Reach::Regex(r) => match query {
                Some(q) => r.is_match(&format!("{path}?{q}")),
                None => r.is_match(path),
            },
        }
    }
}

fn trim_slash(p: &str) -> &str {
    match p.strip_suffix('/') {
        Some(t) if !t.is_empty() => t,
        _ => p,
    }
}

/// The `[expect]` table, compiled.
#[derive(Debug, Clone)]
pub struct Expect {
    /// `reach`: pages the persona must have been on, in the flow's order.
    pub reach: Vec<Reach>,
    /// `fail_on`: the lowest severity of a reported finding that fails the run.
    pub fail_on: Severity,
}

impl Default for Expect {
    fn default() -> Expect {
        Expect {
            reach: Vec::new(),
            fail_on: Severity::Blocker,
        }
    }
}

impl Flow {
    /// Which `reach` entries (by index) a page the browser reported being on meets: none unless
    /// `url` is an http(s) URL on the allowlist, since a page elsewhere is not the app's.
    pub fn reached(&self, url: &str) -> Vec<usize> {
        if self.expect.reach.is_empty() || !self.judge_url(url).is_inside() {
            return Vec::new();
        }
        let Ok(u) = url::Url::parse(url) else {
            return Vec::new();
        };
        self.expect
            .reach
            .iter()
            .enumerate()
            .filter(|(_, r)| r.matches(u.path(), u.query()))
            .map(|(i, _)| i)
            .collect()
    }
}

/// Parses one `reach` entry; `Err` is the problem and the hint.
pub(crate) fn parse_reach(entry: &str) -> Result<Reach, (String, &'static str)> {
    if let Some(re) = entry.strip_prefix("regex:") {
        return Pattern::new(re, false).map(Reach::Regex).map_err(|e| {
            (
                format!("is not a valid regex:\n{e}"),
                "use Rust regex syntax (https://docs.rs/regex) after `regex:`, e.g. \"regex:^/orders/\\\\d+$\"",
            )
        });
    }
    if !entry.starts_with('/') || entry.contains(['?', '#']) {
        return Err((
            format!("is {entry:?}, neither a path nor a `regex:` pattern"),
            "a path starts with `/` and has no query or fragment, e.g. \"/checkout/review\"; \
             write \"regex:<pattern>\" to match path and query by a regex",
        ));
    }
    Ok(Reach::Path(entry.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(expect: &str) -> Flow {
        Flow::parse(
            &format!("+++\nname=\"c\"\nallowlist=[\"shop.example\"]\n{expect}\n+++\n"),
            std::path::Path::new("t.md"),
        )
        .unwrap()
    }

    #[test]
    fn a_path_is_met_exactly_and_only_on_an_allowlisted_host() {
        let f = flow("[expect]\nreach = [\"/cart\", \"/checkout/review/\"]");
        assert_eq!(f.reached("https://shop.example/cart"), vec![0]);
        assert_eq!(f.reached("https://shop.example/cart/?x=1"), vec![0]);
        assert_eq!(f.reached("https://shop.example/checkout/review"), vec![1]);
        assert!(f.reached("https://shop.example/cart/items").is_empty());
        assert!(f.reached("https://shop.example/Cart").is_empty());
        assert!(f.reached("https://evil.example/cart").is_empty());
        assert!(f
            .reached("https://shop.example@evil.example/cart")
            .is_empty());
        assert!(f.reached("not a url").is_empty());
    }

    #[test]
    fn a_regex_is_matched_against_path_and_query() {
        let f = flow("[expect]\nreach = [\"regex:^/orders/\\\\d+$\", \"regex:[?&]paid=1\"]");
        assert_eq!(f.reached("https://shop.example/orders/42"), vec![0]);
        assert!(f.reached("https://shop.example/orders/x").is_empty());
        assert_eq!(f.reached("https://shop.example/done?paid=1"), vec![1]);
        assert_eq!(f.expect.reach[0].as_written(), "regex:^/orders/\\d+$");
    }

    #[test]
    fn fail_on_defaults_to_blocker_and_orders_severities() {
        assert_eq!(flow("").expect.fail_on, Severity::Blocker);
        assert_eq!(
            flow("[expect]\nfail_on = \"major\"").expect.fail_on,
            Severity::Major
        );
        assert!(Severity::Major >= Severity::Minor && Severity::Blocker > Severity::Major);
        assert_eq!(Severity::from_name("note"), Some(Severity::Note));
        assert_eq!(Severity::from_name("Major"), None);
    }
}
