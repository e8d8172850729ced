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
    anchored: bool,
    /// Literals every match starts with (from the regex's own HIR), when there is such a finite
    /// set: a haystack holding none of them cannot match, and the regex is never built for it.
    prefixes: Option<Vec<Vec<u8>>>,
    compiled: OnceLock<Option<meta::Regex>>,
    /// The same pattern without Unicode classes, for ASCII haystacks (see [`Matcher`]).
    compiled_ascii: OnceLock<Option<meta::Regex>>,
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
        let hir = regex_syntax::Parser::new()
            .parse(&full)
            .map_err(|e| e.to_string())?;
        // Only whole-name (tool) patterns: every call checks the tool name, and their prefixes
        // are plain names. Labels are matched only on clicks, and `(?i)` makes their literal
        // sets large and costly to extract.
        let prefixes = whole
            .then(|| regex_syntax::hir::literal::Extractor::new().extract(&hir))
            .and_then(|seq| {
                seq.literals().map(|lits| {
                    lits.iter()
                        .map(|l| l.as_bytes().to_vec())
                        .collect::<Vec<_>>()
                })
            })
            .filter(|lits| !lits.is_empty() && lits.iter().all(|l| !l.is_empty()));
        Ok(Pattern {
            source: source.to_owned(),
            full,
            anchored: whole,
            prefixes,
            compiled: OnceLock::new(),
            compiled_ascii: OnceLock::new(),
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
        if let Some(prefixes) = &self.prefixes {
            let hay = haystack.as_bytes();
            let found = prefixes.iter().any(|p| {
                if self.anchored {
                    hay.starts_with(p)
                } else {
                    hay.windows(p.len()).any(|w| w == p.as_slice())
                }
            });
            if !found {
                return false;
            }
        }
        let ascii = haystack.is_ascii().then(|| {
            self.compiled_ascii
                .get_or_init(|| build_ascii(&[self.full.as_str()]))
                .as_ref()
        });
        if let Some(Some(re)) = ascii {
            return re.is_match(haystack);
        }
        match self.compiled.get_or_init(|| build(&[self.full.as_str()])) {
            Some(re) => re.is_match(haystack),
            None => true,
        }
    }
}

/// Builds the patterns with Unicode mode off, for ASCII haystacks only: Unicode `\b`, `\w` and
/// case folding compile into large automata (milliseconds, hundreds of page faults per call),
/// while on an ASCII haystack the ASCII forms match exactly the same (a property test holds them
/// to it). `None` when a pattern needs Unicode mode (`\p{…}`, a negated class that could match a
/// non-ASCII byte): then the Unicode build is used.
pub(crate) fn build_ascii(patterns: &[&str]) -> Option<meta::Regex> {
    cheap_builder()
        .syntax(regex_automata::util::syntax::Config::new().unicode(false))
        .build_many(patterns)
        .ok()
}

/// Builds a regex of one or more patterns with the cheap engines only.
pub(crate) fn build(patterns: &[&str]) -> Option<meta::Regex> {
    cheap_builder().build_many(patterns).ok()
}

/// The builder both builds share: every pattern reported, only the cheap engines.
fn cheap_builder() -> meta::Builder {
    let mut builder = meta::Builder::new();
    builder.configure(
        meta::Config::new()
            .match_kind(regex_automata::MatchKind::All)
            // Haystacks are a tool name or a label: a literal prefilter costs more to build
            // than it could ever save.
            .auto_prefilter(false)
            .dfa(false)
            .onepass(false),
    );
    builder
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
    fn a_literal_prefix_spares_the_build() {
        let t = Pattern::new("mcp__stripe__.*", true).unwrap();
        assert!(!t.is_match("mcp__browser__browser_navigate"));
        assert!(t.compiled.get().is_none());
        assert!(t.is_match("mcp__stripe__x"));
        assert!(t.compiled.get().is_some());
    }

    proptest::proptest! {
        /// On ASCII haystacks the ASCII build matches exactly when the Unicode build does.
        #[test]
        fn the_ascii_build_agrees_on_ascii_haystacks(
            pat in proptest::collection::vec(
                proptest::sample::select(vec![
                    "(?i)", r"\b", r"\s+", r"\w", r"\d", "[a-z]", "[^x]", "pay", "Order", " ", "$",
                    "^", "€", "(now|it)", "?", r"\B", "[[:alpha:]]", "k", "s", ".",
                ]),
                1..7,
            ),
            hay in "[a-zA-Z0-9 _.,$kKsS-]{0,12}",
        ) {
            let source: String = pat.concat();
            if let (Some(u), Some(a)) = (build(&[source.as_str()]), build_ascii(&[source.as_str()])) {
                proptest::prop_assert_eq!(u.is_match(hay.as_str()), a.is_match(hay.as_str()), "{}", source);
            }
        }

        /// The literal pre-check never refuses a haystack the regex matches.
        #[test]
        fn the_prefix_check_is_sound(
            pat in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "b", "ab", "(?i)a", ".", ".*", "[ab]", "a?", "b+", "(a|bc)", "x{2}", "_",
                    "^", "$", r"\w", "é", "(?i)é", "|",
                ]),
                1..6,
            ),
            whole in proptest::bool::ANY,
            hay in "[abcxé_A-C]{0,8}",
        ) {
            let source: String = pat.concat();
            if let Ok(p) = Pattern::new(&source, whole) {
                let re = build(&[p.full.as_str()]).unwrap();
                proptest::prop_assert_eq!(p.is_match(&hay), re.is_match(hay.as_str()), "{}", source);
            }
        }
    }

    #[test]
    fn a_pattern_too_big_to_build_matches_everything() {
        let p = Pattern::new(".{1000}{1000}{1000}", false).unwrap();
        assert!(p.prefixes.is_none());
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
