//! The built-in irreversibility rule sets, switched on by `forbid = ["payment", "deletion"]`.
//!
//! They are deliberately broad: a persona run on staging loses little when a benign "Pay later
//! info" link is refused, and a lot when a real charge goes through. Each pattern is documented in
//! docs/guide.md#built-in-rule-sets; a flow that needs one of these actions names it precisely
//! instead
//! and drops the set.
//!
//! - **labels** match a click/press/submit label, text or element description (case-insensitive,
//!   unanchored, on word boundaries);
//! - **tools** match the whole tool name, so an MCP server's payment or deletion tool is refused
//!   whatever its arguments;
//! - **paths** match a lowercased, percent-decoded URL path by prefix.

use std::sync::OnceLock;

use regex_automata::meta;

use crate::pattern::{build, build_ascii, first_match};
use crate::RuleHit;

/// A built-in rule set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinSet {
    /// Anything that moves money: placing orders, paying, subscribing, charging, refunding.
    Payment,
    /// Anything that destroys data: deleting, erasing, purging, closing accounts.
    Deletion,
}

/// Label patterns of the `payment` set.
pub const PAYMENT_LABELS: &[&str] = &[
    r"(?i)\b(place|submit|confirm|complete|finish|finali[sz]e)\s+(your\s+|my\s+|the\s+)?(order|purchase|payment|checkout|booking|reservation)\b",
    r"(?i)\bpay(\s+(now|securely|with|by|via|in full|\$|€|£|[0-9]))?\b",
    r"(?i)\b(buy|purchase|order)\s+(now|it|this|them)\b",
    r"(?i)^\s*(buy|purchase|checkout|check out|subscribe|donate|tip)\s*$",
    r"(?i)\b(start|confirm|activate|upgrade)\s+(my\s+|your\s+|the\s+)?(paid\s+)?(subscription|plan|membership|trial)\b",
    r"(?i)\b(subscribe|upgrade)\s+(now|for|to\s+(pro|premium|plus|paid))\b",
    r"(?i)\b(charge|refund|payout|transfer|send)\s+(the\s+)?(card|money|funds|payment|\$|€|£|[0-9])",
    r"(?i)\bsave\s+(card|payment method)\b",
    r"(?i)\b(complete|confirm)\s+(purchase|transaction)\b",
];

/// Tool-name patterns of the `payment` set (whole name).
pub const PAYMENT_TOOLS: &[&str] = &[
    r"(?i)^mcp__(stripe|paypal|braintree|adyen|square|klarna|mollie|checkout_?com|razorpay|plaid|wise|coinbase)[a-z0-9_-]*__.*$",
    r"(?i)^.*__(create|confirm|capture|submit|execute|send|make)_?(payment|charge|payout|refund|transfer|invoice|order|purchase|checkout|subscription)s?$",
    r"(?i)^.*__(pay|charge|purchase|refund|payout|checkout|buy)(_.*)?$",
];

/// Words one of which every `payment` tool pattern needs (lowercase substrings). The guard checks
/// these before compiling the patterns: most calls name no such word, and compiling a
/// case-insensitive set of regexes costs more than the rest of the decision. A property test holds
/// the patterns to their words.
const PAYMENT_TOOL_WORDS: &[&str] = &[
    "stripe",
    "pay",
    "braintree",
    "adyen",
    "square",
    "klarna",
    "mollie",
    "checkout",
    "razorpay",
    "plaid",
    "wise",
    "coinbase",
    "charge",
    "refund",
    "transfer",
    "invoice",
    "order",
    "purchase",
    "subscription",
    "buy",
];

/// Words one of which every `payment` label pattern needs (lowercase substrings), checked on
/// ASCII labels before the label patterns are built (see [`PAYMENT_TOOL_WORDS`]).
const PAYMENT_LABEL_WORDS: &[&str] = &[
    "order",
    "purchase",
    "payment",
    "checkout",
    "check out",
    "booking",
    "reservation",
    "pay",
    "buy",
    "subscribe",
    "donate",
    "tip",
    "subscription",
    "plan",
    "membership",
    "trial",
    "upgrade",
    "charge",
    "refund",
    "payout",
    "transfer",
    "send",
    "save",
    "transaction",
];

/// Path prefixes of the `payment` set.
pub const PAYMENT_PATHS: &[&str] = &[];

/// Label patterns of the `deletion` set.
pub const DELETION_LABELS: &[&str] = &[
    r"(?i)^\s*(delete|erase|destroy|purge|wipe|remove permanently|permanently delete)\b",
    r"(?i)\b(delete|erase|destroy|purge|wipe|remove|close|deactivate|terminate|cancel)\s+(my\s+|the\s+|this\s+|your\s+|all\s+)?(account|profile|project|repository|repo|workspace|organi[sz]ation|org|team|database|data|everything|all|history|subscription)\b",
    r"(?i)\bpermanently\s+(delete|remove|erase)\b",
    r"(?i)\b(empty|clear)\s+(the\s+)?(trash|bin|recycle bin)\b",
    r"(?i)\byes,?\s+(delete|remove|erase|destroy)\b",
];

/// Tool-name patterns of the `deletion` set (whole name).
pub const DELETION_TOOLS: &[&str] = &[
    r"(?i)^.*__(delete|destroy|drop|purge|erase|wipe|truncate|remove|deactivate|terminate)(_.*)?$",
    r"(?i)^.*__[a-z0-9_]*_(delete|destroy|drop|purge|erase|wipe|truncate)$",
];

/// Words one of which every `deletion` tool pattern needs (see [`PAYMENT_TOOL_WORDS`]).
const DELETION_TOOL_WORDS: &[&str] = &[
    "delete",
    "destroy",
    "drop",
    "purge",
    "erase",
    "wipe",
    "truncate",
    "remove",
    "deactivate",
    "terminate",
];

/// Words one of which every `deletion` label pattern needs (see [`PAYMENT_LABEL_WORDS`]).
const DELETION_LABEL_WORDS: &[&str] = &[
    "delete",
    "erase",
    "destroy",
    "purge",
    "wipe",
    "remove",
    "close",
    "deactivate",
    "terminate",
    "cancel",
    "permanently",
    "empty",
    "clear",
];

/// Path prefixes of the `deletion` set.
pub const DELETION_PATHS: &[&str] = &[];

/// The compiled forms of a set's patterns.
#[derive(Debug, Clone, Copy)]
enum Compiled {
    /// The label patterns, Unicode mode.
    Labels,
    /// The label patterns without Unicode mode, for ASCII labels (see `pattern::build_ascii`).
    LabelsAscii,
    /// The tool-name patterns.
    Tools,
}

/// One compiled form of a set, built on first use and on its own: the tool check every call
/// makes never pays for building a label set, the costliest of them.
fn compiled(set: BuiltinSet, which: Compiled) -> &'static meta::Regex {
    static CELLS: [[OnceLock<meta::Regex>; 3]; 2] = [const { [const { OnceLock::new() }; 3] }; 2];
    CELLS[set as usize][which as usize].get_or_init(|| match which {
        Compiled::Labels => {
            build(set.label_patterns()).expect("built-in label patterns compile (tested)")
        }
        Compiled::LabelsAscii => build_ascii(set.label_patterns())
            .expect("built-in label patterns build in ASCII mode (tested)"),
        Compiled::Tools => {
            build(set.tool_patterns()).expect("built-in tool patterns compile (tested)")
        }
    })
}

impl BuiltinSet {
    /// Parses a `forbid` entry.
    pub fn from_name(name: &str) -> Option<BuiltinSet> {
        match name {
            "payment" => Some(BuiltinSet::Payment),
            "deletion" => Some(BuiltinSet::Deletion),
            _ => None,
        }
    }

    /// The set's name as written in `forbid`.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinSet::Payment => "payment",
            BuiltinSet::Deletion => "deletion",
        }
    }

    fn paths(self) -> &'static [&'static str] {
        match self {
            BuiltinSet::Payment => PAYMENT_PATHS,
            BuiltinSet::Deletion => DELETION_PATHS,
        }
    }

    fn hit(self, kind: &str, pattern: &str) -> RuleHit {
        RuleHit {
            rule: format!("builtin {}: {kind} {pattern:?}", self.name()),
            source: self.name(),
        }
    }

    /// The first label pattern of this set that matches.
    pub fn match_label(self, label: &str) -> Option<RuleHit> {
        let i = if label.is_ascii() {
            let lower = label.to_ascii_lowercase();
            if !self.label_words().iter().any(|w| lower.contains(w)) {
                return None;
            }
            first_match(compiled(self, Compiled::LabelsAscii), label)?
        } else {
            first_match(compiled(self, Compiled::Labels), label)?
        };
        Some(self.hit("label", self.label_patterns()[i]))
    }

    fn label_patterns(self) -> &'static [&'static str] {
        match self {
            BuiltinSet::Payment => PAYMENT_LABELS,
            BuiltinSet::Deletion => DELETION_LABELS,
        }
    }

    fn tool_patterns(self) -> &'static [&'static str] {
        match self {
            BuiltinSet::Payment => PAYMENT_TOOLS,
            BuiltinSet::Deletion => DELETION_TOOLS,
        }
    }

    fn label_words(self) -> &'static [&'static str] {
        match self {
            BuiltinSet::Payment => PAYMENT_LABEL_WORDS,
            BuiltinSet::Deletion => DELETION_LABEL_WORDS,
        }
    }

    fn tool_words(self) -> &'static [&'static str] {
        match self {
            BuiltinSet::Payment => PAYMENT_TOOL_WORDS,
            BuiltinSet::Deletion => DELETION_TOOL_WORDS,
        }
    }

    /// The first tool-name pattern of this set that matches.
    pub fn match_tool(self, tool: &str) -> Option<RuleHit> {
        // The patterns are ASCII and case-insensitive; `(?i)` also folds a few non-ASCII letters
        // to ASCII ones (KELVIN SIGN to `k`), so only an all-ASCII name may skip the set.
        if tool.is_ascii() {
            let lower = tool.to_ascii_lowercase();
            if !self.tool_words().iter().any(|w| lower.contains(w)) {
                return None;
            }
        }
        let i = first_match(compiled(self, Compiled::Tools), tool)?;
        Some(self.hit("tool", self.tool_patterns()[i]))
    }

    /// The first path prefix of this set that matches an already lowercased, decoded path.
    pub fn match_path(self, decoded_lower_path: &str) -> Option<RuleHit> {
        let p = self
            .paths()
            .iter()
            .find(|p| decoded_lower_path.starts_with(*p))?;
        Some(self.hit("path", p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_sets_agree_in_both_modes() {
        for set in [BuiltinSet::Payment, BuiltinSet::Deletion] {
            for label in [
                "Place order",
                "PLACE YOUR ORDER",
                "Pay now",
                "Pay $12",
                "Buy now",
                "Delete",
                "Delete account",
                "Empty trash",
                "Add to cart",
                "Cancel",
                "paypal",
                "Yes, delete",
                "Subscribe",
                "save card",
                "x",
                "",
            ] {
                assert_eq!(
                    first_match(compiled(set, Compiled::LabelsAscii), label),
                    first_match(compiled(set, Compiled::Labels), label),
                    "{set:?} {label}"
                );
            }
        }
    }

    #[test]
    fn payment_labels() {
        let p = BuiltinSet::Payment;
        for yes in [
            "Place order",
            "PLACE YOUR ORDER",
            "Pay now",
            "Pay $12.99",
            "Buy now",
            "Complete purchase",
            "Subscribe",
            "Start subscription",
            "Confirm payment",
        ] {
            assert!(p.match_label(yes).is_some(), "{yes}");
        }
        for no in [
            "Add to cart",
            "View order history",
            "Payment methods help",
            "Continue to shipping",
            "Search",
            "Paypal info",
            "Apply coupon",
        ] {
            assert!(p.match_label(no).is_none(), "{no}");
        }
    }

    #[test]
    fn deletion_labels() {
        let d = BuiltinSet::Deletion;
        for yes in [
            "Delete",
            "Delete account",
            "Remove my account",
            "Permanently delete",
            "Yes, delete",
            "Close account",
            "Empty trash",
        ] {
            assert!(d.match_label(yes).is_some(), "{yes}");
        }
        for no in [
            "Remove from cart",
            "Edit profile",
            "Cancel",
            "Close",
            "Undo",
        ] {
            assert!(d.match_label(no).is_none(), "{no}");
        }
    }

    proptest::proptest! {
        /// Names assembled from the patterns' own words, separators and noise: whenever a set's
        /// patterns match, the pre-filter's words are there, so skipping the set is sound.
        #[test]
        fn tool_word_prefilter_never_hides_a_match(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(pattern_words()),
                    proptest::sample::select(
                        ["mcp__", "__", "_", "-", "s", "x", "2", "_v1"].map(String::from).to_vec()
                    ),
                    "[a-zA-Z0-9_]{0,4}",
                ],
                1..8,
            )
        ) {
            let name: String = pieces.concat();
            for set in [BuiltinSet::Payment, BuiltinSet::Deletion] {
                let lower = name.to_ascii_lowercase();
                let matched = compiled(set, Compiled::Tools).is_match(name.as_str());
                let worded = set.tool_words().iter().any(|w| lower.contains(w));
                proptest::prop_assert!(!matched || worded, "{name} matches {set:?}");
                proptest::prop_assert_eq!(set.match_tool(&name).is_some(), matched);
            }
        }
    }

    proptest::proptest! {
        /// Labels assembled from the label patterns' own words, spaces and noise: whenever a
        /// set's label patterns match, the pre-filter's words are there.
        #[test]
        fn label_word_prefilter_never_hides_a_match(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(label_pattern_words()),
                    proptest::sample::select(
                        [" ", "  ", ", ", "$", "12", "now", "my ", "the ", "X"].map(String::from).to_vec()
                    ),
                    "[a-zA-Z ]{0,4}",
                ],
                1..7,
            )
        ) {
            // Words apart, as labels are, so `\b` patterns get their chance to match.
            let label: String = pieces.join(" ");
            for set in [BuiltinSet::Payment, BuiltinSet::Deletion] {
                let matched = first_match(compiled(set, Compiled::Labels), &label).is_some();
                let lower = label.to_ascii_lowercase();
                let worded = set.label_words().iter().any(|w| lower.contains(w));
                proptest::prop_assert!(!matched || worded, "{label:?} matches {set:?}");
                proptest::prop_assert_eq!(set.match_label(&label).is_some(), matched, "{:?}", label);
            }
        }
    }

    /// The words of the given patterns (escapes such as `\b` dropped), sorted, plus `extra`.
    fn words_of(patterns: &[&str], extra: &[&str]) -> Vec<String> {
        let word = regex::Regex::new("[a-z]{2,}").unwrap();
        let escape = regex::Regex::new(r"\\[a-zA-Z]").unwrap();
        let mut words: Vec<String> = patterns
            .iter()
            .flat_map(|p| {
                // Drop escapes (`\b`, `\s`) so their letters do not glue onto words.
                let p = escape.replace_all(p, " ");
                word.find_iter(&p)
                    .map(|m| m.as_str().to_owned())
                    .collect::<Vec<_>>()
            })
            .collect();
        words.sort();
        words.dedup();
        words.extend(extra.iter().map(|w| (*w).to_owned()));
        words
    }

    fn label_pattern_words() -> Vec<String> {
        words_of(
            &[PAYMENT_LABELS, DELETION_LABELS].concat(),
            &["check out", "finalise", "finalize", "recycle bin"],
        )
    }

    fn pattern_words() -> Vec<String> {
        words_of(
            &[PAYMENT_TOOLS, DELETION_TOOLS].concat(),
            &["mcp__stripe__", "mcp__shop__"],
        )
    }

    #[test]
    fn tools() {
        assert!(BuiltinSet::Payment
            .match_tool("mcp__stripe__list_customers")
            .is_some());
        assert!(BuiltinSet::Payment
            .match_tool("mcp__shop__create_payment")
            .is_some());
        assert!(BuiltinSet::Payment
            .match_tool("mcp__shop__checkout")
            .is_some());
        assert!(BuiltinSet::Payment
            .match_tool("mcp__browser__browser_click")
            .is_none());
        assert!(BuiltinSet::Deletion
            .match_tool("mcp__github__delete_repository")
            .is_some());
        assert!(BuiltinSet::Deletion
            .match_tool("mcp__db__table_drop")
            .is_some());
        assert!(BuiltinSet::Deletion
            .match_tool("mcp__browser__browser_navigate")
            .is_none());
        assert!(BuiltinSet::Deletion
            .match_tool("mcp__browser__browser_tabs")
            .is_none());
    }
}
