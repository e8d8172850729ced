//! What the provisioned browser may send: one request, judged by host, method and path against
//! the flow. Pure; the proxy in [`super`] asks it about every request before anything reaches
//! the app (docs/security.md#the-browsers-network-path).
//!
//! The irreversibility rules were written for the persona's gestures (a click's label, a
//! navigation's URL). At this layer they read:
//!
//! - the allowlist: the request's host (the `CONNECT` target for a tunnel, the absolute URL's
//!   host for plain http) must be on it;
//! - `url_paths`: a request of any method whose path starts with one of them is refused, with the
//!   same normalisation as a navigation ([`Flow::match_path`]): a form's POST, a `fetch`, a
//!   beacon and a WebSocket upgrade alike;
//! - `forbid = ["deletion"]`: also every HTTP `DELETE`, whatever the path;
//! - `forbid = ["payment"]`: its paths (none are built in: an app's order endpoint has no
//!   common name; list it in `url_paths`). Its label rules keep judging the gestures.

use leopold_flows::builtin::BuiltinSet;
use leopold_flows::Flow;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// A stable id, as the gateway record and the journal's reasons spell them.
    pub reason: &'static str,
    /// The rule that refused it, for messages (`irreversible.url_paths "/checkout/confirm"`).
    pub rule: String,
}

impl Refusal {
    fn new(reason: &'static str, rule: impl Into<String>) -> Refusal {
        Refusal {
            reason,
            rule: rule.into(),
        }
    }
}

/// Judges a tunnel before it is opened: only its host is known.
///
/// # Errors
///
/// The refusal, when the host is not on the allowlist.
pub fn judge_host(flow: &Flow, host: &str) -> Result<(), Refusal> {
    if flow.host_str_allowed(host) {
        Ok(())
    } else {
        Err(Refusal::new("outside_allowlist", "allowlist"))
    }
}

/// Judges one request. `path` is the request target's path (no query).
///
/// # Errors
///
/// The first rule that refuses it.
pub fn judge(flow: &Flow, method: &str, host: &str, path: &str) -> Result<(), Refusal> {
    judge_host(flow, host)?;
    // A tunnel inside a tunnel would be a host judged twice by different names.
    if method.eq_ignore_ascii_case("CONNECT") {
        return Err(Refusal::new("method", "CONNECT inside a tunnel"));
    }
    if method.eq_ignore_ascii_case("DELETE")
        && flow.irreversible.forbid.contains(&BuiltinSet::Deletion)
    {
        return Err(Refusal::new(
            "irreversible",
            "builtin deletion: method DELETE",
        ));
    }
    match flow.match_path(path) {
        Some(hit) => Err(Refusal::new("irreversible", hit.rule)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(irreversible: &str) -> Flow {
        crate::test_support::checkout_flow(&format!("[irreversible]\n{irreversible}"))
    }

    #[test]
    fn a_path_rule_refuses_every_method_and_spelling() {
        let f = flow("url_paths = [\"/checkout/confirm\"]");
        for (method, path) in [
            ("POST", "/checkout/confirm"),
            ("GET", "/checkout/confirm"),
            ("PUT", "/Checkout/%63onfirm"),
            ("POST", "//checkout/./confirm"),
            ("POST", "/checkout;jsessionid=1/confirm"),
            ("GET", "/checkout/confirm/ws"),
        ] {
            let r = judge(&f, method, "staging.example.com", path).unwrap_err();
            assert_eq!(r.reason, "irreversible", "{method} {path}");
            assert!(r.rule.contains("/checkout/confirm"), "{r:?}");
        }
        for path in ["/", "/checkout", "/checkout/review", "/cart"] {
            assert_eq!(judge(&f, "POST", "staging.example.com", path), Ok(()));
        }
    }

    #[test]
    fn hosts_off_the_allowlist_and_nested_tunnels_are_refused() {
        let f = flow("");
        for host in [
            "127.0.0.1",
            "localhost",
            "evil.example.org",
            "staging.example.com.evil.org",
        ] {
            assert_eq!(
                judge(&f, "GET", host, "/").unwrap_err().reason,
                "outside_allowlist"
            );
            assert!(judge_host(&f, host).is_err());
        }
        assert!(judge_host(&f, "staging.example.com").is_ok());
        assert!(judge_host(&f, "cdn.staging.example.com").is_ok());
        assert_eq!(
            judge(&f, "CONNECT", "staging.example.com", "/")
                .unwrap_err()
                .reason,
            "method"
        );
    }

    #[test]
    fn deletion_forbids_the_delete_method() {
        let f = flow("forbid = [\"deletion\"]");
        let r = judge(&f, "DELETE", "staging.example.com", "/cart/items/1").unwrap_err();
        assert_eq!(r.rule, "builtin deletion: method DELETE");
        assert_eq!(
            judge(&f, "delete", "staging.example.com", "/")
                .unwrap_err()
                .reason,
            "irreversible"
        );
        assert_eq!(
            judge(&f, "POST", "staging.example.com", "/cart/items/1"),
            Ok(())
        );
        // Without the set, DELETE is an ordinary method.
        assert_eq!(
            judge(&flow(""), "DELETE", "staging.example.com", "/cart/items/1"),
            Ok(())
        );
    }
}
