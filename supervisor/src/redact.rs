//! Never print a full URL: URLs carry credentials and tokens. Text from the worker (its stderr)
//! is reduced to hosts before it reaches a message.

/// Schemes the WHATWG URL parser treats as special: after `scheme:` it skips any run of `/` and
/// `\`, so `http:\\host/p` and `https:/host/p` reach a host as surely as `https://host/p`.
const SPECIAL: &[&str] = &["http", "https", "ws", "wss", "ftp", "file"];

/// Replaces every URL token in `text` with `<host>` (userinfo, path, query dropped): any
/// `scheme://rest`, and a special scheme followed by any mix of slashes and backslashes.
pub fn strip_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut from = 0;
    while let Some(off) = rest[from..].find(':') {
        let i = from + off;
        // The scheme: the run of scheme characters right before `:`.
        let before = &rest[..i];
        let scheme_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.'))
            .map_or(0, |p| p + 1);
        let scheme = &before[scheme_start..];
        let tail = &rest[i + 1..];
        let seps = tail.len() - tail.trim_start_matches(['/', '\\']).len();
        let generic = tail.starts_with("//");
        let special = seps > 0 && SPECIAL.iter().any(|s| s.eq_ignore_ascii_case(scheme));
        if scheme.is_empty() || !(generic || special) {
            from = i + 1;
            continue;
        }
        out.push_str(&before[..scheme_start]);
        let after = &tail[if special { seps } else { 2 }..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')'))
            .unwrap_or(after.len());
        let authority = after[..end]
            .split(['/', '\\', '?', '#'])
            .next()
            .unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or("");
        let host = host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        });
        out.push('<');
        out.push_str(host);
        out.push('>');
        rest = &after[end..];
        from = 0;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::strip_urls;

    #[test]
    fn urls_become_hosts() {
        assert_eq!(
            strip_urls("error: GET https://user:pw@api.example.com:8443/v1?token=abc failed"),
            "error: GET <api.example.com> failed"
        );
        assert_eq!(strip_urls("no url here"), "no url here");
        assert_eq!(strip_urls("a http://x/y b ws://z"), "a <x> b <z>");
        assert!(!strip_urls("see \"https://h/p?q=secret\"").contains("secret"));
    }

    #[test]
    fn special_schemes_with_backslashes_or_one_slash_are_urls_too() {
        assert_eq!(
            strip_urls(r"GET http:\\user:pw@evil.example\p?token=1 failed"),
            "GET <evil.example> failed"
        );
        assert_eq!(strip_urls("https:/h.example/x?k=s"), "<h.example>");
        assert_eq!(strip_urls(r"HTTP:/\h.example/a"), "<h.example>");
        // Not URLs: a time, a key: value, a scheme-less colon.
        assert_eq!(strip_urls("at 10:30 key: v"), "at 10:30 key: v");
        assert_eq!(strip_urls("mailto:a@b"), "mailto:a@b");
    }
}
