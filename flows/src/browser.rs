//! The flow's say over a browser Leopold provisions: `browser`, `[hosts]` and `allow_tools`.
//!
//! ```toml
//! browser = "playwright"              # the supervisor launches Playwright MCP with Chromium
//! allow_tools = ["browser_evaluate"]  # opt into a dangerous tool, by its bare name
//!
//! [hosts]                             # allowlisted hosts reached at a fixed address
//! "staging.example.com" = "127.0.0.1:8080"
//! ```
//!
//! The keys are read by every layer: the supervisor builds Chromium's resolver rules from the
//! allowlist and `[hosts]`; the gateway and the guard turn the catalogue's opt-in tools
//! ([`crate::catalogue`]) off unless `allow_tools` names them.

use std::net::SocketAddr;

/// A browser the supervisor knows how to provision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BrowserKind {
    /// `@playwright/mcp` driving Chromium.
    Playwright,
}

impl BrowserKind {
    /// Parses the flow's `browser` value.
    pub fn from_name(name: &str) -> Option<BrowserKind> {
        match name {
            "playwright" => Some(BrowserKind::Playwright),
            _ => None,
        }
    }

    /// The name as written in flows, on the command line and in `ACTIVE.json`.
    pub fn name(self) -> &'static str {
        match self {
            BrowserKind::Playwright => "playwright",
        }
    }
}

/// One `[hosts]` entry: `host` is reached at `to` (an IP address and port) by the provisioned
/// browser, under its own name (the page's URL, cookies and `Host` header stay `host`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostMapping {
    /// The host, lowercase ASCII; a domain (never an IP literal).
    pub host: String,
    /// The address, as `ip:port` (`[v6]:port` for IPv6).
    pub to: SocketAddr,
}

impl HostMapping {
    /// Validates one `[hosts]` entry.
    ///
    /// # Errors
    ///
    /// `(problem, hint)` for the caller's message.
    pub fn new(host: &str, to: &str) -> Result<HostMapping, (String, &'static str)> {
        let h = host.trim().to_ascii_lowercase();
        // Chromium's `--host-resolver-rules` is a comma/space-separated list with `*` and `?`
        // wildcards: anything beyond the plain DNS alphabet would change what the rules say.
        let plain = !h.is_empty()
            && !h.starts_with(['.', '-'])
            && !h.ends_with('.')
            && h.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
            && h.bytes().any(|b| b.is_ascii_lowercase());
        if !plain || h.contains("..") {
            return Err((
                format!("maps {host:?}, which is not a plain host name"),
                "a [hosts] key is a domain name in ASCII (letters, digits, `-`, `.`; punycode for IDNs), \
                 no port, no trailing dot",
            ));
        }
        let to: SocketAddr = to.trim().parse().map_err(|_| {
            (
                format!("maps to {to:?}, which is not an address and port"),
                "map to an IP address and port, e.g. \"127.0.0.1:8080\" or \"[::1]:8080\"",
            )
        })?;
        if to.port() == 0 {
            return Err((
                "maps to port 0".into(),
                "map to the port the staging app listens on, e.g. \"127.0.0.1:8080\"",
            ));
        }
        Ok(HostMapping { host: h, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Flow;
    use std::path::Path;

    fn parse(extra: &str) -> Result<Flow, String> {
        Flow::parse(
            &format!("+++\nname = \"c\"\nallowlist = [\"example.com\"]\n{extra}\n+++\nBrief.\n"),
            Path::new("flows/c.md"),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn browser_hosts_and_allow_tools_parse() {
        let f = parse(
            "browser = \"playwright\"\nallow_tools = [\"browser_evaluate\", \"browser_evaluate\"]\n\
             [hosts]\n\"Staging.Example.com\" = \"127.0.0.1:8080\"\n\"b.example.com\" = \"[::1]:9\"",
        )
        .unwrap();
        assert_eq!(f.browser, Some(BrowserKind::Playwright));
        assert_eq!(f.allow_tools, vec!["browser_evaluate".to_owned()]);
        assert_eq!(f.hosts.len(), 2);
        let staging = f.hosts.iter().find(|m| m.host == "staging.example.com");
        assert_eq!(staging.unwrap().to.to_string(), "127.0.0.1:8080");
        let plain = parse("").unwrap();
        assert_eq!(plain.browser, None);
        assert!(plain.hosts.is_empty() && plain.allow_tools.is_empty());
    }

    #[test]
    fn bad_values_name_the_key_and_the_fix() {
        let e = parse("browser = \"firefox\"").unwrap_err();
        assert!(e.contains("`browser`") && e.contains("playwright"), "{e}");
        let e = parse("allow_tools = [\"browser_click\"]").unwrap_err();
        assert!(
            e.contains("allow_tools[0]") && e.contains("browser_evaluate"),
            "{e}"
        );
        let e = parse("[hosts]\n\"prod.example.org\" = \"127.0.0.1:80\"").unwrap_err();
        assert!(e.contains("hosts.") && e.contains("allowlist"), "{e}");
        for (host, to) in [
            ("a,b.example.com", "127.0.0.1:80"),
            ("*.example.com", "127.0.0.1:80"),
            ("a.example.com.", "127.0.0.1:80"),
            ("a example.com", "127.0.0.1:80"),
            ("127.0.0.1", "127.0.0.1:80"),
            ("a.example.com", "127.0.0.1"),
            ("a.example.com", "localhost:80"),
            ("a.example.com", "127.0.0.1:0"),
            ("a.example.com", "127.0.0.1:80, MAP * 10.0.0.1"),
        ] {
            let e = parse(&format!("[hosts]\n{host:?} = {to:?}")).unwrap_err();
            assert!(
                e.contains("hosts.") && e.contains("hint"),
                "{host} {to}: {e}"
            );
        }
        let e = parse("[hosts]\n\"a.example.com\" = 8080").unwrap_err();
        assert!(e.contains("not a string"), "{e}");
    }
}
