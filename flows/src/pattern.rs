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
use regex_syntax::hir::{Class, Hir, HirKind};

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
    /// For patterns matched anywhere (labels): lowercase ASCII strings one of which every match
    /// holds, on an ASCII haystack lowercased, when there is such a set (see [`required`]): a
    /// label holding none of them is refused without building the regex.
    required: Option<Vec<String>>,
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
        let (prefixes, required) = match plain(source, whole) {
            Some(filters) => filters,
            None => analyse(&full, whole)?,
        };
        Ok(Pattern {
            source: source.to_owned(),
            full,
            anchored: whole,
            prefixes,
            required,
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
        if let Some(required) = self.required.as_ref().filter(|_| haystack.is_ascii()) {
            let lower = haystack.to_ascii_lowercase();
            if !required.iter().any(|w| lower.contains(w.as_str())) {
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

/// The literal pre-checks of a pattern: prefixes (whole-name patterns), required strings (others).
type Filters = (Option<Vec<Vec<u8>>>, Option<Vec<String>>);

/// Checks `full`'s syntax with the regex parser and takes its pre-checks from the HIR.
fn analyse(full: &str, whole: bool) -> Result<Filters, String> {
    let hir = regex_syntax::Parser::new()
        .parse(full)
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
    let required = (!whole)
        .then(|| required(&hir))
        .flatten()
        .filter(|set| set.iter().all(|w| !w.is_empty()))
        .map(|set| {
            set.into_iter()
                .map(|w| String::from_utf8(w).expect("lowercase ASCII"))
                .collect()
        });
    Ok((prefixes, required))
}

/// The pre-checks of a plain pattern, without the regex parser: an optional `(?i)`, then
/// letters, digits, `_`, `-` and spaces (none of them special in a regex), then an optional
/// `.*`, as in `mcp__stripe__.*` or `(?i)place order`. Such a pattern is valid by construction,
/// and parsing it (a third of a navigation's decision: the guard loads the flow on every call)
/// would only tell what is written here. `None` for anything else (and for a case-insensitive
/// whole name, whose prefixes are case variants): then [`analyse`] runs. A test holds the two
/// to the same answer on plain patterns.
fn plain(source: &str, whole: bool) -> Option<Filters> {
    let (folded, rest) = match source.strip_prefix("(?i)") {
        Some(rest) => (true, rest),
        None => (false, source),
    };
    let literal = rest.strip_suffix(".*").unwrap_or(rest);
    if literal.is_empty()
        || !literal
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b' '))
    {
        return None;
    }
    if whole {
        (!folded).then(|| (Some(vec![literal.as_bytes().to_vec()]), None))
    } else {
        Some((None, Some(vec![literal.to_ascii_lowercase()])))
    }
}

/// The most strings [`required`] keeps for one pattern: past that, checking them would cost
/// about what building the regex does.
const MAX_REQUIRED: usize = 32;

/// Lowercase ASCII strings one of which every match of `hir` on an ASCII haystack holds, once the
/// haystack is lowercased; `None` when no such set is known. A click label is short and most
/// labels hold none of a flow's words, so this spares the guard compiling the flow's label
/// patterns on most clicks (BENCHMARKS.md "The guard"). Sound by construction: a literal or a
/// class whose ASCII members fold to one letter is one letter of a run; a run of them in a
/// concatenation must appear whole; a concatenation needs each of its parts, an alternation one
/// of its branches, a repetition of at least one its body. Only ASCII haystacks are filtered:
/// case folding maps a few non-ASCII letters (KELVIN SIGN) onto ASCII ones. Property-tested.
fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => None,
        HirKind::Literal(_) | HirKind::Class(_) => letters(hir).map(|run| vec![run]),
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub),
        HirKind::Repetition(_) => None,
        HirKind::Concat(subs) => {
            let mut candidates: Vec<Vec<Vec<u8>>> = Vec::new();
            let mut run: Vec<u8> = Vec::new();
            for sub in subs {
                match letters(sub) {
                    Some(l) => run.extend(l),
                    None => {
                        if !run.is_empty() {
                            candidates.push(vec![std::mem::take(&mut run)]);
                        }
                        candidates.extend(required(sub));
                    }
                }
            }
            if !run.is_empty() {
                candidates.push(vec![run]);
            }
            // The most selective: the set whose shortest string is longest.
            candidates
                .into_iter()
                .max_by_key(|set| set.iter().map(Vec::len).min().unwrap_or(0))
        }
        HirKind::Alternation(subs) => {
            let mut all = Vec::new();
            for sub in subs {
                all.extend(required(sub)?);
                if all.len() > MAX_REQUIRED {
                    return None;
                }
            }
            Some(all)
        }
    }
}

/// The lowercase ASCII letters `hir` matches in order, when it is a literal or a one-letter
/// class on an ASCII haystack: `[Pp]` (what `(?i)p` parses to) is `p`.
fn letters(hir: &Hir) -> Option<Vec<u8>> {
    match hir.kind() {
        HirKind::Literal(lit) if lit.0.is_ascii() => Some(lit.0.to_ascii_lowercase()),
        HirKind::Class(class) => {
            let mut folded: Option<u8> = None;
            let mut one = |lo: u32, hi: u32| -> bool {
                for c in lo..=hi.min(0x7F) {
                    let b = (c as u8).to_ascii_lowercase();
                    if *folded.get_or_insert(b) != b {
                        return false;
                    }
                }
                true
            };
            let ok = match class {
                Class::Unicode(u) => u
                    .ranges()
                    .iter()
                    .all(|r| one(r.start().into(), r.end().into())),
                Class::Bytes(b) => b
                    .ranges()
                    .iter()
                    .all(|r| one(r.start().into(), r.end().into())),
            };
            folded.filter(|_| ok).map(|b| vec![b])
        }
        _ => None,
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

    proptest::proptest! {
        /// Label patterns: the required-strings check never refuses a label the regex matches,
        /// and it does refuse some (it is not a no-op).
        #[test]
        fn the_required_strings_check_is_sound(
            pat in proptest::collection::vec(
                proptest::sample::select(vec![
                    "(?i)", r"\b", r"\s+", " ", "place", "Order", "(pay|buy)", "k", "s", "[Kk]",
                    "x?", "(now)?", "[a-c]", ".", "+", "*", "{2}", "é", "|", "^", "$", "[^a]",
                ]),
                1..7,
            ),
            hay in "[a-zA-Z kKsS.]{0,14}|(?i)(place|order|pay|buy|now|k|s| ){0,5}",
        ) {
            let source: String = pat.concat();
            if let Ok(p) = Pattern::new(&source, false) {
                if let Some(re) = build(&[p.full.as_str()]) {
                    proptest::prop_assert_eq!(p.is_match(&hay), re.is_match(hay.as_str()), "{}", source);
                }
            }
        }
    }

    #[test]
    fn a_label_holding_none_of_a_pattern_s_words_spares_the_build() {
        let p = Pattern::new("(?i)place order", false).unwrap();
        assert_eq!(p.required.as_deref(), Some(&["place order".to_owned()][..]));
        assert!(!p.is_match("Add to cart button"));
        assert!(p.compiled.get().is_none() && p.compiled_ascii.get().is_none());
        assert!(p.is_match("PLACE ORDER now"));
        let alt = Pattern::new(r"(?i)\b(buy|pay)\s+it", false).unwrap();
        let mut req = alt.required.clone().unwrap();
        req.sort();
        assert_eq!(req, ["buy", "pay"]);
        // The Kelvin sign folds to `k`: a non-ASCII label is never filtered.
        let k = Pattern::new("(?i)kilo", false).unwrap();
        assert!(k.is_match("\u{212A}ilo"));
        assert!(Pattern::new("(?i)a|[a-z]+", false)
            .unwrap()
            .required
            .is_none());
    }

    proptest::proptest! {
        /// A plain pattern's pre-checks, taken without the parser, are the parser's.
        #[test]
        fn plain_patterns_get_the_parsers_pre_checks(
            folded in proptest::bool::ANY,
            literal in "[a-zA-Z0-9_ -]{1,12}",
            tail in proptest::bool::ANY,
            whole in proptest::bool::ANY,
        ) {
            let source = format!("{}{literal}{}", if folded { "(?i)" } else { "" }, if tail { ".*" } else { "" });
            let full = if whole { format!("^(?:{source})$") } else { source.clone() };
            if let Some(fast) = plain(&source, whole) {
                proptest::prop_assert_eq!(fast, analyse(&full, whole).unwrap(), "{}", source);
            } else {
                proptest::prop_assert!(whole && folded, "{}", source);
            }
        }
    }

    #[test]
    fn only_plain_patterns_skip_the_parser() {
        assert!(plain("mcp__stripe__.*", true).is_some());
        assert!(plain("(?i)place order", false).is_some());
        for not in [
            "a.b",
            "a|b",
            "(?i)mcp__x",
            "[a]",
            "a.*b",
            r"\bpay",
            "",
            "(?i)",
            ".*",
            "é",
        ] {
            assert!(plain(not, not.starts_with("(?i)m")).is_none(), "{not}");
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
