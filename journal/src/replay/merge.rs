//! Replay's state across lines, in input order: the chain's links, `seq`, the totals.

use super::batches::Lines;
use super::judge::{Judgements, Linked, What};
use super::{report_malformed, report_too_long, tally, ReplayEvent, ReplaySummary};
use crate::chain::JournalHash;

/// Replay's state across lines, in input order: the chain, `seq`, the totals.
pub(super) struct Merge {
    pub(super) s: ReplaySummary,
    pub(super) chain: Chain,
    pub(super) expected_seq: Option<u64>,
    /// The number of the last line merged (1: the header).
    pub(super) line_no: u64,
}

impl Merge {
    /// The next judgement, in order; gives back the lines it was made of, and how far into them
    /// it went.
    pub(super) fn batch(
        &mut self,
        judged: Judgements,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) -> Option<(Lines, usize)> {
        let first = judged.first_prev.against(&self.chain.last);
        for j in judged.lines {
            let linked = match j.linked {
                Linked::First => first,
                other => other,
            };
            self.line(j.what, linked, on_event);
        }
        self.chain.last = judged.last;
        judged.read
    }

    /// The next line.
    pub(super) fn line(
        &mut self,
        what: What,
        linked: Linked,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) {
        self.line_no += 1;
        let line_no = self.line_no;
        let s = &mut self.s;
        // Every line is a link, whatever it holds: a blank or malformed line breaks the chain at
        // the line after it.
        match what {
            What::TooLong => {
                self.expected_seq = None;
                report_too_long(s, line_no, on_event);
            }
            What::Blank => {
                // The writer never writes one: in a chained journal it is a line that links to
                // nothing.
                if self.chain.on {
                    self.chain.check(s, line_no, linked, on_event);
                }
            }
            What::Torn => {
                s.torn_last_line = true;
                on_event(ReplayEvent::Torn { line: line_no });
            }
            What::Malformed { error } => {
                self.expected_seq = None;
                report_malformed(s, line_no, &error, on_event);
                if self.chain.on {
                    self.chain.check(s, line_no, linked, on_event);
                }
            }
            What::Action {
                seq,
                denied,
                changed,
                violation,
            } => {
                self.chain.check(s, line_no, linked, on_event);
                if let Some(expected) = self.expected_seq.filter(|e| *e != seq) {
                    s.seq_gaps += 1;
                    on_event(ReplayEvent::SeqGap {
                        line: line_no,
                        expected,
                        found: seq,
                    });
                }
                self.expected_seq = seq.checked_add(1);
                if let Some(change) = changed {
                    let (recorded, now) = *change;
                    s.verdicts_changed += 1;
                    on_event(ReplayEvent::VerdictChanged {
                        line: line_no,
                        seq,
                        recorded,
                        now,
                    });
                }
                tally(s, denied, violation.map(|v| v.at(line_no)), on_event);
            }
        }
    }
}

/// The chain as replay walks it.
pub(super) struct Chain {
    /// Whether the journal is chained (version 2).
    pub(super) on: bool,
    /// The hash of the last line read.
    pub(super) last: JournalHash,
    /// Whether a version 1 header over chained lines was reported (once is enough).
    pub(super) relabelled: bool,
}

impl Chain {
    /// Checks one line's link to the line before.
    pub(super) fn check(
        &mut self,
        s: &mut ReplaySummary,
        line: u64,
        linked: Linked,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) {
        let before = line - 1;
        let present = !matches!(linked, Linked::Absent);
        let problem = match (self.on, present) {
            (true, true) if matches!(linked, Linked::Follows) => return,
            (false, false) => return,
            (true, true) => format!("line {line} does not follow line {before}"),
            (true, false) => {
                format!("line {line} carries no `prev`: it does not follow line {before}")
            }
            // A version 1 header over chained lines: the header was rewritten to the version
            // before the chain, which turns the chain's check off. Said once.
            (false, true) if self.relabelled => return,
            (false, true) => {
                self.relabelled = true;
                format!("line {line} carries a hash-chain `prev`, but line 1 says version 1 (before the chain): the header was changed")
            }
        };
        self.broken(s, line, problem, on_event);
    }

    pub(super) fn broken(
        &self,
        s: &mut ReplaySummary,
        line: u64,
        problem: String,
        on_event: &mut dyn FnMut(ReplayEvent),
    ) {
        s.chain_breaks += 1;
        s.chain_broken_at.get_or_insert(line);
        on_event(ReplayEvent::ChainBreak { line, problem });
    }
}
