//! Regexes compiled on first use, without a full DFA.
//!
//! The guard loads the flow before every browser tool call and most calls need few or none of
//! its regexes (a navigation never looks at `click_labels`). Building a regex eagerly, with the
//! full DFA that the `leopold` binary's feature set switches on, cost more than the whole rest of
//! the decision (BENCHMARKS.md "The guard"). So a pattern is checked for syntax when the flow is
//! parsed (a bad regex is still an error naming the key) and compiled, with only the lazy DFA and
//! the PikeVM, the first time it is matched.

use std::sync::OnceLock;

use regex_automata::meta;

/// One regex of a flow or a built-in set, compiled on first use.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// As the user wrote it.
    source: String,
    /// What is compiled: `source`, or `^(?:source)$` for whole-name patterns.
    full: String,
    compiled: OnceLock<Option<meta::Regex>>,
}

impl Pattern {
    /// Checks the syntax now; compiles on first match. `whole` anchors it at both ends.
    ///
    /// # Errors
    ///
    /// The parser's message when `source` is not valid regex syntax.
    pub fn new(source: &str, whole: bool) -> Result<Pattern, String> {
        let full = if whole {
            format!("^(?:{source})$")
        } else {
            source.to_owned()
        };
        regex_syntax::Parser::new()
            .parse(&full)
            .map_err(|e| e.to_string())?;
        Ok(Pattern {
            source: source.to_owned(),
            full,
            compiled: OnceLock::new(),
        })
    }

    /// The pattern as written in the flow (without the anchoring added for whole names).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches anywhere in `haystack` (or, for a whole-name pattern, all of
    /// it). A pattern that passed the syntax check but cannot be built (over the size limit)
    /// matches everything: an irreversibility rule that cannot be judged refuses.
    pub fn is_match(&self, haystack: &str) -> bool {
        match self.compiled.get_or_init(|| build(&[self.full.as_str()])) {
            Some(re) => re.is_match(haystack),
            None => true,
        }
    }
}

/// Builds a regex of one or more patterns with the cheap engines only.
pub(crate) fn build(patterns: &[&str]) -> Option<meta::Regex> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .match_kind(regex_automata::MatchKind::All)
                .dfa(false)
                .onepass(false),
        )
        .build_many(patterns)
        .ok()
}

/// The lowest index of the patterns in `re` that match `haystack`.
pub(crate) fn first_match(re: &meta::Regex, haystack: &str) -> Option<usize> {
    let mut set = regex_automata::PatternSet::new(re.pattern_len());
    re.which_overlapping_matches(&regex_automata::Input::new(haystack), &mut set);
    set.iter().next().map(|p| p.as_usize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_is_checked_up_front_and_matching_is_lazy() {
        assert!(Pattern::new("(", false).is_err());
        assert!(Pattern::new(r"\p{NoSuchClass}", false).is_err());
        let p = Pattern::new("(?i)place order", false).unwrap();
        assert!(p.compiled.get().is_none());
        assert!(p.is_match("the PLACE ORDER button"));
        assert!(!p.is_match("add to cart"));
        let t = Pattern::new("mcp__stripe__.*", true).unwrap();
        assert_eq!(t.as_str(), "mcp__stripe__.*");
        assert!(t.is_match("mcp__stripe__charge"));
        assert!(!t.is_match("x_mcp__stripe__charge"));
    }

    #[test]
    fn a_pattern_too_big_to_build_matches_everything() {
        let p = Pattern::new("a{1000}{1000}{1000}", false).unwrap();
        assert!(p.is_match("anything"));
    }

    #[test]
    fn first_match_is_the_lowest_index() {
        let re = build(&["b", "a", "ab"]).unwrap();
        assert_eq!(first_match(&re, "ab"), Some(0));
        assert_eq!(first_match(&re, "a"), Some(1));
        assert_eq!(first_match(&re, "c"), None);
    }
}
