//! Never print a full URL: URLs carry credentials and tokens. Text from the worker (its stderr)
//! is reduced to hosts before it reaches a message.

/// Replaces every `scheme://rest` token in `text` with `<host>` (userinfo, path, query dropped).
pub fn strip_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        // The scheme: the run of scheme characters right before `://`.
        let before = &rest[..i];
        let scheme_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.'))
            .map_or(0, |p| p + 1);
        out.push_str(&before[..scheme_start]);
        let after = &rest[i + 3..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')'))
            .unwrap_or(after.len());
        let authority = after[..end].split(['/', '?', '#']).next().unwrap_or("");
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
}
