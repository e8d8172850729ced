//! Judging a batch's lines, on whichever thread takes it: each line parsed, validated and its
//! link held against the line before it; what depends on earlier batches is left to the merge.

use leopold_flows::Flow;
use serde::Deserialize;

use super::batches::{self, Batch, Lines};
use super::{ReplayEvent, MAX_LINE};
use crate::action::{ActionKind, ActionView, Outcome, Verdict};
use crate::chain::{JournalHash, GENESIS};
use crate::validate::Validator;

/// What a worker needs to judge lines: the flow, and whether to hash them.
pub(super) struct Judge<'f> {
    pub(super) flow: &'f Flow,
    pub(super) chained: bool,
}

/// A batch judged: its lines in order, which [`Merge`] numbers and turns into findings.
pub(super) struct Judgements {
    pub(super) lines: Vec<Judged>,
    /// The first line's `prev`, which only the merge can hold against the line before it.
    pub(super) first_prev: Link,
    /// The hash of the last line judged (when chained; else [`GENESIS`]).
    pub(super) last: JournalHash,
    /// The batch's lines as read, and how many of their bytes were judged: at most
    /// [`MAX_JUDGED`] lines are, and the merge judges the rest ([`merge_judged`]). Handed back
    /// to the reader once merged.
    pub(super) read: Option<(Lines, usize)>,
}

/// The most lines one judgement holds. A batch is a MiB of lines, usually about 3,000 of them;
/// a MiB of empty or one-character lines (a damaged or hostile journal) would be a million
/// judgements in memory at once, times the batches in flight.
pub(super) const MAX_JUDGED: usize = 16 << 10;

/// One line judged.
pub(super) struct Judged {
    pub(super) what: What,
    /// Its `prev` against the line before it (when chained).
    pub(super) linked: Linked,
}

pub(super) enum What {
    TooLong,
    Blank,
    Torn,
    Malformed {
        error: String,
    },
    Action {
        seq: u64,
        denied: bool,
        changed: Option<Box<(Verdict, Verdict)>>,
        violation: Option<Box<Violation>>,
    },
}

/// A line's `prev`, as found.
pub(super) enum Link {
    Absent,
    /// 64 bytes, as the writer writes a hash.
    Hex([u8; 64]),
    /// Anything else: links to nothing.
    Other,
}

impl Link {
    pub(super) fn of(prev: Option<&str>) -> Link {
        match prev {
            None => Link::Absent,
            Some(p) => match <[u8; 64]>::try_from(p.as_bytes()) {
                Ok(hex) => Link::Hex(hex),
                Err(_) => Link::Other,
            },
        }
    }

    /// This link held against the hash of the line before.
    pub(super) fn against(&self, before: &JournalHash) -> Linked {
        match self {
            Link::Absent => Linked::Absent,
            // The hash written out, not the digits read in: decoding them is a branch a digit
            // ([`JournalHash::matches_hex`]).
            Link::Hex(hex) if *hex == before.hex() => Linked::Follows,
            Link::Hex(_) | Link::Other => Linked::Breaks,
        }
    }
}

/// A line's `prev` held against the line before it.
#[derive(Clone, Copy)]
pub(super) enum Linked {
    Absent,
    Follows,
    Breaks,
    /// A batch's first line: the merge holds [`Judgements::first_prev`] against the line before.
    First,
}

impl Judge<'_> {
    /// Judges a batch's lines in order, each line's link against the line before it but the
    /// first's.
    pub(super) fn batch(&self, validator: &mut Validator<'_>, batch: Batch) -> Judgements {
        match batch {
            Batch::TooLong(hash) => Judgements {
                lines: vec![Judged {
                    what: What::TooLong,
                    linked: Linked::First,
                }],
                first_prev: Link::Absent,
                last: hash.unwrap_or(GENESIS),
                read: None,
            },
            Batch::Lines(lines) => {
                let (mut out, used) = self.lines(validator, lines.bytes());
                out.read = Some((lines, used));
                out
            }
        }
    }

    /// Judges the first [`MAX_JUDGED`] lines of `bytes` (whole lines, as a batch holds them),
    /// each line's link against the line before it but the first's; and how many bytes they
    /// took.
    pub(super) fn lines(&self, validator: &mut Validator<'_>, bytes: &[u8]) -> (Judgements, usize) {
        let mut out = Judgements {
            // About as many lines as a journal's usual 200 to 450 bytes make.
            lines: Vec::with_capacity((bytes.len() / 256 + 1).min(MAX_JUDGED)),
            first_prev: Link::Absent,
            last: GENESIS,
            read: None,
        };
        let mut used = 0;
        for (i, (whole, terminated)) in batches::lines(bytes).take(MAX_JUDGED).enumerate() {
            used += whole.len() + usize::from(terminated);
            let (what, link) = self.line_read(validator, whole, terminated);
            let before = std::mem::replace(&mut out.last, self.hash(whole));
            let linked = if i == 0 {
                out.first_prev = link;
                Linked::First
            } else {
                link.against(&before)
            };
            out.lines.push(Judged { what, linked });
        }
        (out, used)
    }

    /// A line's hash, when the chain needs it.
    pub(super) fn hash(&self, whole: &[u8]) -> JournalHash {
        if self.chained {
            JournalHash::of_line(whole)
        } else {
            GENESIS
        }
    }

    /// One line as read (its `\r` kept, as the chain hashes it; `terminated`: whether a `\n`
    /// ended it), and its `prev`.
    pub(super) fn line_read(
        &self,
        validator: &mut Validator<'_>,
        whole: &[u8],
        terminated: bool,
    ) -> (What, Link) {
        if whole.len() > MAX_LINE {
            return (What::TooLong, Link::Absent);
        }
        let bytes = whole.strip_suffix(b"\r").unwrap_or(whole);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return (What::Blank, Link::Absent);
        }
        let action = match parse_view(bytes) {
            Ok(a) => a,
            Err(_) if !terminated => return (What::Torn, Link::Absent),
            Err(e) => {
                // Not an action, but maybe a link all the same (a second header).
                let link = if self.chained {
                    let link = serde_json::from_slice::<PrevOnly<'_>>(bytes).ok();
                    Link::of(link.as_ref().and_then(|l| l.prev.as_deref()))
                } else {
                    Link::Absent
                };
                let error = e.to_string();
                return (What::Malformed { error }, link);
            }
        };
        let now = validator.validate(&action);
        let changed = match &action.verdict {
            Some(recorded) if **recorded != now => {
                Some(Box::new((recorded.as_ref().clone(), now.clone())))
            }
            _ => None,
        };
        let what = What::Action {
            seq: action.seq,
            denied: action.outcome == Outcome::Denied,
            changed,
            violation: Violation::of(&action, now).map(Box::new),
        };
        (what, Link::of(action.prev.as_deref()))
    }
}

/// Parses a journal line. A line that is UTF-8 throughout (every line the writer writes) is
/// checked once, whole, and parsed as text: the parser then skips checking each string it
/// borrows. Any other line goes to the byte parser, which accepts and refuses exactly what it
/// always did.
pub(super) fn parse_view(bytes: &[u8]) -> serde_json::Result<ActionView<'_>> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// A violation, before it is known on which line (a worker judges lines it cannot number).
pub(super) struct Violation {
    pub(super) seq: u64,
    pub(super) tool: String,
    pub(super) kind: ActionKind,
    pub(super) outcome: Outcome,
    pub(super) rule: String,
    pub(super) detail: Option<String>,
}

impl Violation {
    /// The violation a verdict makes, if any.
    pub(super) fn of(action: &ActionView<'_>, now: Verdict) -> Option<Violation> {
        match now {
            Verdict::Violation { rule, detail } => Some(Violation {
                seq: action.seq,
                tool: action.tool.as_ref().to_owned(),
                kind: action.kind,
                outcome: action.outcome,
                rule,
                detail,
            }),
            Verdict::Ok => None,
        }
    }

    pub(super) fn at(self, line: u64) -> ReplayEvent {
        ReplayEvent::Violation {
            line,
            seq: self.seq,
            tool: self.tool,
            kind: self.kind,
            outcome: self.outcome,
            rule: self.rule,
            detail: self.detail,
        }
    }
}

/// Any JSON object's chain link.
#[derive(Deserialize)]
struct PrevOnly<'a> {
    #[serde(default, borrow)]
    prev: Option<std::borrow::Cow<'a, str>>,
}
