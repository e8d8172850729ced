//! Host semantics shared by allowlist entries and URLs: one parser (the `url` crate's WHATWG host
//! parser) for both, so an IDN or full-width entry means exactly what a browser would resolve.

use std::net::{Ipv4Addr, Ipv6Addr};

/// One normalised allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowEntry {
    /// A domain, lowercase ASCII (punycode), no trailing dot. Matches itself and its subdomains.
    Domain(String),
    /// An IPv4 address: matches only that address.
    Ipv4(Ipv4Addr),
    /// An IPv6 address: matches only that address.
    Ipv6(Ipv6Addr),
}

impl std::fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllowEntry::Domain(d) => f.write_str(d),
            AllowEntry::Ipv4(a) => write!(f, "{a}"),
            AllowEntry::Ipv6(a) => write!(f, "[{a}]"),
        }
    }
}

/// Why an allowlist entry was refused; the caller adds the file and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryProblem {
    /// `https://…`
    Scheme,
    /// `host/path`, `host?q`, `host#f`
    Path,
    /// `host:8080`
    Port,
    /// `*.example.com`
    Wildcard,
    /// `user@host`
    Userinfo,
    /// Empty, or only dots.
    Empty,
    /// The URL host parser refused it (forbidden code point, bad IDN, ...).
    Invalid,
}

impl EntryProblem {
    /// One line: what is wrong and how to fix it.
    pub fn hint(&self) -> &'static str {
        match self {
            EntryProblem::Scheme => "an entry is a bare host: drop the scheme (`https://`)",
            EntryProblem::Path => "an entry is a bare host: drop the path, query or fragment",
            EntryProblem::Port => {
                "an entry is a bare host: drop the port (the allowlist judges hosts, every port)"
            }
            EntryProblem::Wildcard => {
                "wildcards are not needed: an entry already allows its subdomains (`example.com` allows `a.example.com`)"
            }
            EntryProblem::Userinfo => "an entry is a bare host: drop the `user@` part",
            EntryProblem::Empty => "an entry must name a host",
            EntryProblem::Invalid => "the host parser rejects it: check for forbidden characters",
        }
    }
}

/// Normalises one allowlist entry with the URL host parser.
///
/// # Errors
///
/// The [`EntryProblem`] that makes it unusable.
pub fn normalize_allowlist_entry(raw: &str) -> Result<AllowEntry, EntryProblem> {
    let s = raw.trim();
    if s.is_empty() {
        return Err(EntryProblem::Empty);
    }
    if s.contains("://") || s.starts_with("//") {
        return Err(EntryProblem::Scheme);
    }
    if s.contains('*') {
        return Err(EntryProblem::Wildcard);
    }
    if s.contains('@') {
        return Err(EntryProblem::Userinfo);
    }
    if s.contains(['/', '\\', '?', '#']) {
        return Err(EntryProblem::Path);
    }
    // A colon is a port unless the entry is a bracketed IPv6 literal.
    let bracketed = s.starts_with('[') && s.ends_with(']');
    if s.contains(':') && !bracketed {
        // `https:` without slashes is still a scheme to the user's eye.
        let after = &s[s.find(':').unwrap_or(0) + 1..];
        if !after.is_empty() && after.bytes().all(|b| b.is_ascii_digit()) {
            return Err(EntryProblem::Port);
        }
        // A bare IPv6 address without brackets: accept it as the address it is.
        if let Ok(v6) = s.parse::<Ipv6Addr>() {
            return Ok(AllowEntry::Ipv6(v6));
        }
        return Err(EntryProblem::Scheme);
    }
    let host = parse_host(s).ok_or(EntryProblem::Invalid)?;
    match host {
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.');
            if d.is_empty() {
                Err(EntryProblem::Empty)
            } else {
                Ok(AllowEntry::Domain(d.to_owned()))
            }
        }
        url::Host::Ipv4(a) => Ok(AllowEntry::Ipv4(a)),
        url::Host::Ipv6(a) => Ok(AllowEntry::Ipv6(a)),
    }
}

/// Parses a host string the way a special (http) URL's host is parsed: IDNA, IPv4 number forms,
/// percent-decoding. `url::Host::parse` alone applies the non-special rules, so go through a URL.
pub(crate) fn parse_host(s: &str) -> Option<url::Host<String>> {
    if s.contains(['/', '\\', '?', '#', '@']) {
        return None;
    }
    let url = url::Url::parse(&format!("http://{s}/")).ok()?;
    if url.port().is_some() || url.path() != "/" {
        return None;
    }
    url.host().map(|h| h.to_owned())
}

/// `s` itself when the host parser would give it back unchanged as a domain, so it need not run:
/// lowercase ASCII letters, digits, `-` and `.`, no empty label (no trailing dot), no punycode
/// label (`xn--`, which the parser validates), and a last label that does not start with a digit
/// (one that is a number makes the whole host an IPv4 address). A journal records hosts as the
/// parser wrote them, so nearly every host there takes this way; anything else goes through
/// [`parse_host`]. A property test holds the two to the same answer.
pub(crate) fn plain_domain(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 253 {
        return None;
    }
    let mut label_start = 0;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => {}
            b'.' if i > label_start => label_start = i + 1,
            _ => return None,
        }
        if i == label_start && b[i..].starts_with(b"xn--") {
            return None;
        }
    }
    // Not empty after the last dot, and not a number.
    match b.get(label_start) {
        Some(c) if !c.is_ascii_digit() => Some(s),
        _ => None,
    }
}

pub(crate) fn host_allowed(allow: &[AllowEntry], host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.');
            if d.is_empty() {
                return false;
            }
            allow.iter().any(|e| match e {
                // The URL parser lowercases special-scheme hosts already; a caller passing a host
                // string of its own (a journal line) may not have, so compare ASCII-insensitively.
                AllowEntry::Domain(entry) => {
                    let (d, e) = (d.as_bytes(), entry.as_bytes());
                    d.eq_ignore_ascii_case(e)
                        || (d.len() > e.len()
                            && d[d.len() - e.len()..].eq_ignore_ascii_case(e)
                            && d[d.len() - e.len() - 1] == b'.')
                }
                _ => false,
            })
        }
        url::Host::Ipv4(a) => allow.iter().any(|e| e == &AllowEntry::Ipv4(*a)),
        url::Host::Ipv6(a) => allow.iter().any(|e| e == &AllowEntry::Ipv6(*a)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_normalise_with_the_url_host_parser() {
        assert_eq!(
            normalize_allowlist_entry("Staging.Example.COM.").unwrap(),
            AllowEntry::Domain("staging.example.com".into())
        );
        assert_eq!(
            normalize_allowlist_entry("bücher.example").unwrap(),
            AllowEntry::Domain("xn--bcher-kva.example".into())
        );
        assert_eq!(
            normalize_allowlist_entry("ｓｔａｇｉｎｇ．example.com").unwrap(),
            AllowEntry::Domain("staging.example.com".into())
        );
        assert_eq!(
            normalize_allowlist_entry("127.0.0.1").unwrap(),
            AllowEntry::Ipv4(Ipv4Addr::LOCALHOST)
        );
        assert_eq!(
            normalize_allowlist_entry("[::1]").unwrap(),
            AllowEntry::Ipv6(Ipv6Addr::LOCALHOST)
        );
    }

    #[test]
    fn bad_entries_say_why() {
        assert_eq!(
            normalize_allowlist_entry("https://a.example"),
            Err(EntryProblem::Scheme)
        );
        assert_eq!(
            normalize_allowlist_entry("a.example/x"),
            Err(EntryProblem::Path)
        );
        assert_eq!(
            normalize_allowlist_entry("a.example:443"),
            Err(EntryProblem::Port)
        );
        assert_eq!(
            normalize_allowlist_entry("*.a.example"),
            Err(EntryProblem::Wildcard)
        );
        assert_eq!(
            normalize_allowlist_entry("u@a.example"),
            Err(EntryProblem::Userinfo)
        );
        assert_eq!(normalize_allowlist_entry(" "), Err(EntryProblem::Empty));
        assert_eq!(normalize_allowlist_entry("..."), Err(EntryProblem::Empty));
        assert_eq!(
            normalize_allowlist_entry("a b.example"),
            Err(EntryProblem::Invalid)
        );
    }

    proptest::proptest! {
        /// Whatever the fast way takes, the host parser gives back unchanged, as a domain.
        #[test]
        fn a_plain_domain_is_what_the_parser_returns(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "staging", "example", "com", ".", "..", "-", "xn--", "xn--bcher-kva",
                    "0", "1", "255", "0x", "0x1f", "e", "A", "_", "%41", " ", "é", "[", "::1", "09",
                ]),
                1..8,
            )
        ) {
            let s: String = pieces.concat();
            if let Some(d) = plain_domain(&s) {
                proptest::prop_assert_eq!(parse_host(&s), Some(url::Host::Domain(d.to_owned())), "{}", s);
            }
        }
    }

    #[test]
    fn plain_domains_take_the_fast_way_and_nothing_else_does() {
        for yes in [
            "staging.example.com",
            "a-b.example",
            "localhost",
            "x1.example",
            "a.b2c",
        ] {
            assert_eq!(plain_domain(yes), Some(yes));
        }
        for no in [
            "",
            "Staging.example.com",
            "example.com.",
            "a..b",
            ".a",
            "xn--bcher-kva.example",
            "a.xn--p1ai",
            "1.2.3.4",
            "a.0x1f",
            "a.9z",
            "[::1]",
            "a_b.example",
            "bücher.example",
        ] {
            assert_eq!(plain_domain(no), None, "{no}");
        }
    }

    #[test]
    fn domains_match_exactly_or_as_subdomains_never_substrings() {
        let allow = [AllowEntry::Domain("example.com".into())];
        let yes = |h: &str| host_allowed(&allow, &url::Host::Domain(h));
        assert!(yes("example.com"));
        assert!(yes("example.com."));
        assert!(yes("a.b.example.com"));
        assert!(!yes("badexample.com"));
        assert!(!yes("example.com.evil"));
        assert!(!yes("."));
        assert!(yes("A.Example.COM"));
        assert!(!yes("xexample.com"));
    }
}
