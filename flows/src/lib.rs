//! Leopold flow files: parsing, the host allowlist, and the irreversibility rules.
//!
//! # Brief overview
//!
//! A flow file is Markdown with TOML front matter between two `+++` lines. [`Flow::load`] parses
//! and validates it; every error names the file, the key and the fix. The flow then answers the
//! two questions every layer of Leopold asks:
//!
//! - [`Flow::judge_url`]: is this URL inside the allowlist? Hosts are judged exactly as a browser
//!   does: whatever the WHATWG URL parser (the `url` crate) says the host is, is the host.
//! - [`Flow::match_tool`], [`Flow::match_label`], [`Flow::match_path`]: does this action match an
//!   irreversibility rule (the flow's own, or a built-in set, see [`builtin`])?
//!
//! # Example
//!
//! ```
//! use leopold_flows::{Flow, UrlVerdict};
//! let flow = Flow::parse(
//!     "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n+++\nBrief.\n",
//!     std::path::Path::new("flows/checkout.md"),
//! ).unwrap();
//! assert!(matches!(flow.judge_url("https://a.staging.example.com/x"), UrlVerdict::Inside { .. }));
//! assert!(matches!(flow.judge_url("https://staging.example.com@evil.example/"), UrlVerdict::Outside { .. }));
//! ```
#![warn(missing_docs)]

pub mod browser;
pub mod builtin;
pub mod catalogue;
mod expect;
mod host;
mod parse;
mod pattern;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

pub use expect::{Expect, Reach, Severity, DEFAULT_MAX_REPEATS};
pub use host::{normalize_allowlist_entry, AllowEntry};
pub use parse::FlowError;
pub use pattern::Pattern;

/// `max_denials_in_a_row` when a flow does not set it: a persona refused five times running has
/// found its wall; more tries only cost tokens.
pub const DEFAULT_MAX_DENIALS_IN_A_ROW: u32 = 5;

/// A parsed, validated flow.
#[derive(Debug, Clone)]
pub struct Flow {
    /// The flow's name (`name` key): what the guard's messages and the journal call it.
    pub name: String,
    /// The allowlist, normalised by the same host parser used for URLs.
    pub allowlist: Vec<AllowEntry>,
    /// Where the persona starts (`start_url`), if the flow says.
    pub start_url: Option<String>,
    /// The irreversibility rules (`[irreversible]`).
    pub irreversible: Irreversible,
    /// `browser = "playwright"`: the supervisor provisions the worker's browser itself (see
    /// [`browser`]); `leopold persona run --browser` overrides it.
    pub browser: Option<browser::BrowserKind>,
    /// `[hosts]`: allowlisted hosts the provisioned browser reaches at a fixed address (local
    /// staging), sorted by host.
    pub hosts: Vec<browser::HostMapping>,
    /// `allow_tools`: dangerous browser tools this flow opts into by name (see
    /// [`catalogue::Offer::OptIn`]); empty by default.
    pub allow_tools: Vec<String>,
    /// `max_denials_in_a_row`: after this many denials with no allowed action between them the
    /// supervisor stops the worker as `stuck` ([`DEFAULT_MAX_DENIALS_IN_A_ROW`] unless set).
    pub max_denials_in_a_row: u32,
    /// `max_repeats`: the same allowed call on the same target this many times running stops the
    /// run as `looping` ([`DEFAULT_MAX_REPEATS`] unless set).
    pub max_repeats: u32,
    /// `[expect]`: what the app must meet for the run to pass.
    pub expect: Expect,
    /// The persona's brief: the Markdown after the front matter.
    pub brief: String,
    /// The file this flow was read from (as given to [`Flow::load`] or [`Flow::parse`]).
    pub source: PathBuf,
}

/// The `[irreversible]` table, compiled.
#[derive(Debug, Clone, Default)]
pub struct Irreversible {
    /// Built-in rule sets switched on by `forbid`.
    pub forbid: Vec<builtin::BuiltinSet>,
    /// `click_labels`: regexes on a click/press/submit tool's label, text or element description.
    pub click_labels: Vec<Pattern>,
    /// `url_paths`: path prefixes that must never be navigated to or submitted (normalised by
    /// [`normalize_path`]).
    pub url_paths: Vec<String>,
    /// `tools`: tool names that are irreversible outright (regexes, anchored at both ends).
    pub tools: Vec<Pattern>,
}

/// What a flow says about one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlVerdict {
    /// An http(s) URL whose host is on the allowlist.
    Inside {
        /// The host, as the URL parser serialises it (lowercase, punycode, trailing dots kept).
        host: String,
    },
    /// An http(s) URL whose host is not on the allowlist.
    Outside {
        /// The host, as the URL parser serialises it.
        host: String,
    },
    /// A URL that parses but whose scheme is not `http` or `https` (`javascript:`, `file:`, ...).
    NotWeb {
        /// The scheme, lowercase.
        scheme: String,
    },
    /// Not a URL a parser accepts without a base (scheme-relative, scheme-less, invalid host, ...).
    Unparseable,
}

impl UrlVerdict {
    /// True only for [`UrlVerdict::Inside`].
    pub fn is_inside(&self) -> bool {
        matches!(self, UrlVerdict::Inside { .. })
    }
}

/// Which irreversibility rule matched, for messages and the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleHit {
    /// A stable, human-readable rule name, e.g. `irreversible.click_labels "(?i)place order"` or
    /// `builtin payment: label "(?i)\bpay now\b"`.
    pub rule: String,
    /// The set or key the rule comes from: `payment`, `deletion`, `click_labels`, `url_paths`, `tools`.
    pub source: &'static str,
}

impl Flow {
    /// Reads and parses a flow file.
    ///
    /// # Errors
    ///
    /// [`FlowError`] naming the file, the key at fault and the fix.
    pub fn load(path: &Path) -> Result<Flow, FlowError> {
        let text = std::fs::read_to_string(path).map_err(|source| FlowError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Flow::parse(&text, path)
    }

    /// Parses a flow from its text; `source` is only used in messages and [`Flow::source`].
    ///
    /// # Errors
    ///
    /// [`FlowError`] naming the file, the key at fault and the fix.
    pub fn parse(text: &str, source: &Path) -> Result<Flow, FlowError> {
        parse::parse(text, source)
    }

    /// Judges one URL string as a browser would parse it.
    pub fn judge_url(&self, raw: &str) -> UrlVerdict {
        self.judge_url_parsed(raw).0
    }

    /// Like [`Flow::judge_url`], and also hands back the parsed URL (when it parsed), so a caller
    /// that goes on to check [`Flow::match_path`] judges the very path the parser saw.
    pub fn judge_url_parsed(&self, raw: &str) -> (UrlVerdict, Option<url::Url>) {
        let Ok(url) = url::Url::parse(raw) else {
            return (UrlVerdict::Unparseable, None);
        };
        let scheme = url.scheme();
        if scheme != "http" && scheme != "https" {
            let verdict = UrlVerdict::NotWeb {
                scheme: scheme.to_owned(),
            };
            return (verdict, Some(url));
        }
        let verdict = match url.host() {
            None => UrlVerdict::Unparseable,
            Some(host) => {
                let shown = host.to_string();
                if self.host_allowed(&host) {
                    UrlVerdict::Inside { host: shown }
                } else {
                    UrlVerdict::Outside { host: shown }
                }
            }
        };
        (verdict, Some(url))
    }

    /// Whether a parsed host is on the allowlist: a domain equals an entry or ends with `.` + entry
    /// (trailing dots stripped); an IP address only matches an entry that is that same address.
    pub fn host_allowed(&self, host: &url::Host<&str>) -> bool {
        host::host_allowed(&self.allowlist, host)
    }

    /// Whether a host string (as a URL parser serialises it, or as a journal records it) is on
    /// the allowlist. The string is re-parsed with the URL host parser, so it is judged the same
    /// way as in [`Flow::judge_url`]; anything that does not parse as a host is outside.
    pub fn host_str_allowed(&self, host: &str) -> bool {
        if let Some(d) = host::plain_domain(host) {
            return self.host_allowed(&url::Host::Domain(d));
        }
        match host::parse_host(host) {
            Some(url::Host::Domain(d)) => self.host_allowed(&url::Host::Domain(d.as_str())),
            Some(url::Host::Ipv4(a)) => self.host_allowed(&url::Host::Ipv4(a)),
            Some(url::Host::Ipv6(a)) => self.host_allowed(&url::Host::Ipv6(a)),
            None => false,
        }
    }

    /// The first irreversibility rule that a tool name matches.
    pub fn match_tool(&self, tool: &str) -> Option<RuleHit> {
        if let Some(re) = self.irreversible.tools.iter().find(|re| re.is_match(tool)) {
            return Some(RuleHit {
                rule: format!("irreversible.tools {:?}", re.as_str()),
                source: "tools",
            });
        }
        self.irreversible
            .forbid
            .iter()
            .find_map(|set| set.match_tool(tool))
    }

    /// The first irreversibility rule that a click/press/submit label (or element description)
    /// matches.
    ///
    /// The label is matched as given and as [`normalize_label`] leaves it (invisible characters
    /// removed, full-width letters folded, whitespace collapsed), so `Place\u{200b}order` or
    /// `Ｐｌａｃｅ order` cannot slip past `(?i)place order`.
    pub fn match_label(&self, label: &str) -> Option<RuleHit> {
        let normalized = normalize_label(label);
        let forms: &[&str] = if normalized == label {
            &[label]
        } else {
            &[label, normalized.as_str()]
        };
        forms.iter().find_map(|l| self.match_label_exact(l))
    }

    fn match_label_exact(&self, label: &str) -> Option<RuleHit> {
        if let Some(re) = self
            .irreversible
            .click_labels
            .iter()
            .find(|re| re.is_match(label))
        {
            return Some(RuleHit {
                rule: format!("irreversible.click_labels {:?}", re.as_str()),
                source: "click_labels",
            });
        }
        self.irreversible
            .forbid
            .iter()
            .find_map(|set| set.match_label(label))
    }

    /// The first irreversibility rule that a URL path matches. The path is normalised the way
    /// common servers route it before comparing with the (lowercased) prefixes, see
    /// [`normalize_path`]: `/Checkout/%63onfirm`, `//checkout/./confirm` and
    /// `/checkout;jsessionid=1/confirm` all reach the handler of `/checkout/confirm`.
    pub fn match_path(&self, path: &str) -> Option<RuleHit> {
        let decoded = normalize_path_cow(path);
        if let Some(prefix) = self
            .irreversible
            .url_paths
            .iter()
            .find(|p| decoded.starts_with(p.as_str()))
        {
            return Some(RuleHit {
                rule: format!("irreversible.url_paths {prefix:?}"),
                source: "url_paths",
            });
        }
        self.irreversible
            .forbid
            .iter()
            .find_map(|set| set.match_path(&decoded))
    }

    /// Whether the flow declares any rule a click label could match (own or built-in).
    pub fn has_label_rules(&self) -> bool {
        !self.irreversible.click_labels.is_empty() || !self.irreversible.forbid.is_empty()
    }
}

/// Normalises a URL path for prefix matching, erring towards a match: percent-decoded (once,
/// lossily as UTF-8), lowercased, `\\` read as `/`, `;parameters` dropped from each segment, empty
/// and `.` segments dropped, `..` resolved. Always starts with `/`.
pub fn normalize_path(path: &str) -> String {
    normalize_path_cow(path).into_owned()
}

/// [`normalize_path`], borrowing `path` when it is already normal (most are: a journal's paths
/// and a navigation's are what a URL parser wrote).
fn normalize_path_cow(path: &str) -> Cow<'_, str> {
    if is_normal_path(path) {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(normalize_path_slow(path))
    }
}

/// Whether [`normalize_path`] would return `path` unchanged: it starts with `/`, holds only ASCII
/// without upper case, `%`, `\` or `;`, and has no empty, `.` or `..` segment but a last empty
/// one (a trailing slash). A property test holds this to the slow way.
fn is_normal_path(path: &str) -> bool {
    let b = path.as_bytes();
    if b.first() != Some(&b'/') {
        return false;
    }
    // One pass: each byte's class, and each segment (between slashes) as it ends.
    let mut seg_start = 1;
    for i in 1..=b.len() {
        let end = match b.get(i) {
            None => true,
            Some(b'/') => true,
            Some(&c) if !c.is_ascii() || c.is_ascii_uppercase() => return false,
            Some(b'%' | b'\\' | b';') => return false,
            Some(_) => false,
        };
        if end {
            match &b[seg_start..i] {
                // An empty segment only as the last one: a trailing slash.
                b"" if i < b.len() => return false,
                b"." | b".." => return false,
                _ => {}
            }
            seg_start = i + 1;
        }
    }
    true
}

fn normalize_path_slow(path: &str) -> String {
    let decoded = percent_decode_lower(path).replace('\\', "/");
    let mut segments: Vec<&str> = Vec::new();
    for seg in decoded.split('/') {
        let seg = seg.split(';').next().unwrap_or("");
        match seg {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(decoded.len() + 1);
    for seg in &segments {
        out.push('/');
        out.push_str(seg);
    }
    // Keep a trailing slash: `/checkout/` is a prefix a user may write.
    if out.is_empty() || (decoded.ends_with('/') && !segments.is_empty()) {
        out.push('/');
    }
    out
}

/// Normalises a click label for matching: drops invisible formatting characters (zero-width
/// spaces and joiners, soft hyphens, bidi controls, BOM), folds full-width ASCII to ASCII, and
/// collapses every run of Unicode whitespace to one space, trimmed.
pub fn normalize_label(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    let mut pending_space = false;
    for c in label.chars() {
        let c = match c as u32 {
            0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        };
        if is_invisible(c) {
            continue;
        }
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
    }
    out
}

fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
        | 0xFEFF | 0xFFA0 | 0xE0000..=0xE0FFF)
}

/// Percent-decodes (lossily, as UTF-8) and lowercases a URL path for prefix matching.
fn percent_decode_lower(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(front: &str) -> Flow {
        Flow::parse(&format!("+++\n{front}\n+++\nbrief\n"), Path::new("t.md")).unwrap()
    }

    #[test]
    fn percent_decoding_handles_edges() {
        assert_eq!(percent_decode_lower("/A%2Fb%"), "/a/b%");
        assert_eq!(percent_decode_lower("/%6"), "/%6");
        assert_eq!(percent_decode_lower("/%63onfirm"), "/confirm");
    }

    proptest::proptest! {
        /// A path the fast way passes through unchanged is one the slow way leaves unchanged too.
        #[test]
        fn the_fast_path_check_agrees_with_normalising(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "/", "//", "a", "B", ".", "..", "%63", "%", ";x=1", "\\\\", "é", "checkout",
                    "-", "_", "~", "?",
                ]),
                0..8,
            )
        ) {
            let p: String = pieces.concat();
            let slow = normalize_path_slow(&p);
            let fast = normalize_path_cow(&p);
            proptest::prop_assert_eq!(fast.as_ref(), slow.as_str(), "{}", p);
            if is_normal_path(&p) {
                proptest::prop_assert_eq!(&slow, &p);
            }
        }
    }

    #[test]
    fn paths_normalise_as_servers_route_them() {
        for (given, routed) in [
            ("/", "/"),
            ("", "/"),
            ("//Checkout/./confirm", "/checkout/confirm"),
            ("/x/..%2fcheckout/confirm", "/checkout/confirm"),
            ("/checkout;jsessionid=1/confirm", "/checkout/confirm"),
            ("/checkout%5cconfirm", "/checkout/confirm"),
            ("/checkout/", "/checkout/"),
            ("/../../a", "/a"),
        ] {
            assert_eq!(normalize_path(given), routed, "{given:?}");
        }
    }

    #[test]
    fn labels_lose_invisible_characters_and_full_width_forms() {
        assert_eq!(
            normalize_label("  Place\u{200b}\u{00ad}  order\n"),
            "Place order"
        );
        assert_eq!(
            normalize_label("Ｐｌａｃｅ\u{3000}ｏｒｄｅｒ"),
            "Place order"
        );
        let f = flow(
            "name=\"c\"\nallowlist=[\"a.example\"]\n[irreversible]\nclick_labels=[\"(?i)^place order$\"]",
        );
        assert!(f.match_label("Place\u{200b} order").is_some());
        assert!(f.match_label("Ｐｌａｃｅ ｏｒｄｅｒ").is_some());
        assert!(f.match_label("Place an order").is_none());
    }

    #[test]
    fn path_rules_match_decoded_lowercased_prefixes() {
        let f = flow(
            "name=\"c\"\nallowlist=[\"a.example\"]\n[irreversible]\nurl_paths=[\"/checkout/confirm\"]",
        );
        assert!(f.match_path("/Checkout/%63onfirm").is_some());
        assert!(f.match_path("/checkout/confirm/step").is_some());
        assert!(f.match_path("/checkout/cart").is_none());
        assert!(f.match_path("//checkout//confirm").is_some());
        assert!(f.match_path("/shop/..%2Fcheckout/confirm").is_some());
    }

    #[test]
    fn tool_rules_are_anchored() {
        let f = flow(
            "name=\"c\"\nallowlist=[\"a.example\"]\n[irreversible]\ntools=[\"mcp__stripe__.*\"]",
        );
        assert!(f.match_tool("mcp__stripe__charge").is_some());
        assert!(f.match_tool("x_mcp__stripe__charge").is_none());
        assert_eq!(
            f.match_tool("mcp__stripe__charge").unwrap().rule,
            "irreversible.tools \"mcp__stripe__.*\""
        );
    }
}
