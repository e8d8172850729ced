use super::judge::MAX_JUDGED;
use super::*;

#[test]
fn parser_messages_lose_their_urls() {
    assert_eq!(
        redact_urls("unknown variant `https://a.example/?token=s`, expected one of"),
        "unknown variant <url redacted> expected one of"
    );
    assert_eq!(redact_urls("expected value"), "expected value");
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// The golden journals' action lines, chained under a version 2 header (or left unchained).
fn journal_lines(chained: bool) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = ["violations.jsonl", "clean.jsonl", "seq_gap.jsonl"]
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(golden(f)).unwrap();
            text.lines()
                .skip(1)
                .map(|l| l.as_bytes().to_vec())
                .collect::<Vec<_>>()
        })
        .collect();
    let header = if chained {
        r#"{"leopold_journal":2,"run_id":"t","flow":"checkout","flow_path":"flow.md","harness":"claude","started_at":"2026-11-30T10:00:00.000Z"}"#
    } else {
        r#"{"leopold_journal":1,"run_id":"t","flow":"checkout","flow_path":"flow.md","harness":"claude","started_at":"2026-11-30T10:00:00.000Z"}"#
    };
    lines.insert(0, header.as_bytes().to_vec());
    if chained {
        let mut prev = GENESIS;
        for l in &mut lines {
            prev = crate::chain::link(l, &prev).unwrap();
        }
    }
    lines
}

fn replay_with(text: &[u8], par: Parallelism) -> (ReplaySummary, Vec<ReplayEvent>) {
    let (s, events) = replay_from(&mut std::io::Cursor::new(text), par);
    (s.unwrap(), events)
}

/// Gives `data` at most `most` bytes a read, as a pipe or a slow disk may, and fails once
/// it has given `ok` bytes.
struct Reads<'a> {
    data: &'a [u8],
    most: usize,
    ok: usize,
}

impl io::Read for Reads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::other("disk gone"));
        }
        let n = buf.len().min(self.most).min(self.ok).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.ok -= n;
        Ok(n)
    }
}

/// Replays what `reader` yields (the golden flow, the header first): the outcome, and every
/// event reported on the way.
fn replay_from<R: BufRead>(
    reader: &mut R,
    par: Parallelism,
) -> (Result<ReplaySummary, ReplayError>, Vec<ReplayEvent>) {
    let flow = Flow::load(&golden("flow.md")).unwrap();
    let path = Path::new("j");
    let (header, hash) = read_header(reader, path).unwrap();
    let mut events = vec![];
    let r = replay_lines(&flow, &header, hash, reader, path, par, &mut |e| {
        events.push(e)
    });
    (r, events)
}

fn par(workers: usize, batch_bytes: usize) -> Parallelism {
    Parallelism {
        workers: NonZeroUsize::new(workers).unwrap(),
        batch_bytes,
    }
}

/// One thread, the golden journals in one batch.
const WHOLE: Parallelism = Parallelism {
    workers: NonZeroUsize::MIN,
    batch_bytes: Parallelism::BATCH_BYTES,
};

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

    /// Whatever was done to a journal, and however its lines are split over threads and
    /// batches, replay finds the same things in the same order as one thread reading it
    /// whole.
    #[test]
    fn findings_do_not_depend_on_threads_or_batches(
        chained in proptest::bool::ANY,
        edits in proptest::collection::vec((0u8..7, 1usize..64), 0..6),
        workers in 2usize..5,
        // Bytes: a batch ends within the first line after them (a golden line is 200 to
        // 450 bytes long), so batches of one line up to a few.
        batch in 1usize..1200,
        torn in proptest::bool::ANY,
        trickle in 1usize..400,
    ) {
        let mut lines = journal_lines(chained);
        for (op, at) in edits {
            let i = 1 + at % (lines.len() - 1).max(1);
            if i >= lines.len() {
                continue;
            }
            match op {
                0 => { lines.remove(i); }
                1 => { let l = lines[i].clone(); lines.insert(i, l); }
                2 if i + 1 < lines.len() => lines.swap(i, i + 1),
                3 => lines[i] = b"{\"seq\":".to_vec(),
                4 => lines.insert(i, b"  ".to_vec()),
                5 => lines[i].push(b'\r'),
                _ => { let n = lines[i].len(); lines[i][n / 2] = b'x'; }
            }
        }
        let mut text = lines.join(&b'\n');
        if torn {
            text.truncate(text.len() - 7);
        } else {
            text.push(b'\n');
        }
        let whole = replay_with(&text, WHOLE);
        proptest::prop_assert_eq!(&whole, &replay_with(&text, par(1, batch)));
        proptest::prop_assert_eq!(&whole, &replay_with(&text, par(workers, batch)));
        // Reads that stop anywhere, a line's middle included, read the same lines.
        let short = Reads {
            data: &text,
            most: trickle,
            ok: usize::MAX,
        };
        let mut short = BufReader::with_capacity(16, short);
        let (s, events) = replay_from(&mut short, par(workers, batch));
        proptest::prop_assert_eq!(&whole, &(s.unwrap(), events));
    }
}

#[test]
fn what_was_read_before_an_io_error_is_still_reported() {
    let lines = journal_lines(true);
    let mut text = lines.join(&b'\n');
    text.push(b'\n');
    // The error comes right after line 6: lines 2 to 6 hold violations to report.
    let cut = lines[..6].iter().map(|l| l.len() + 1).sum::<usize>();
    let (_, expected) = replay_with(&text[..cut], WHOLE);
    assert!(
        expected
            .iter()
            .any(|e| matches!(e, ReplayEvent::Violation { .. })),
        "{expected:?}"
    );
    // The error right after line 6's `\n`, and in the middle of line 7: the line it cuts is
    // neither judged nor taken for a torn last line.
    for ok in [cut, cut + lines[6].len() / 2] {
        for p in [WHOLE, par(1, 2), par(3, 2)] {
            let fails = Reads {
                data: &text,
                most: usize::MAX,
                ok,
            };
            let mut reader = BufReader::with_capacity(64, fails);
            let (r, events) = replay_from(&mut reader, p);
            assert!(matches!(r, Err(ReplayError::Read { .. })), "{ok} {p:?}");
            assert_eq!(events, expected, "{ok} {p:?}");
        }
    }
}

#[test]
fn a_chain_over_crlf_lines_hashes_each_line_with_its_cr() {
    // Leopold never writes a `\r`, but a journal that went through a Windows editor has one
    // at the end of every line; the chain is the hash of the bytes, `\r` included.
    let mut lines = journal_lines(false);
    let mut prev = GENESIS;
    for l in &mut lines {
        if l.starts_with(br#"{"leopold_journal":1"#) {
            l.splice(..20, br#"{"leopold_journal":2"#.iter().copied());
        }
        crate::chain::link(l, &prev).unwrap();
        l.push(b'\r');
        prev = JournalHash::of_line(l);
    }
    let mut text = lines.join(&b'\n');
    text.push(b'\n');
    for p in [WHOLE, par(1, 300), par(3, 300)] {
        let (s, _) = replay_with(&text, p);
        assert!(s.chained, "{p:?}");
        assert_eq!((s.chain_breaks, s.malformed), (0, 0), "{p:?}");
        assert_eq!(s.journal_hash, Some(prev.to_string()), "{p:?}");
    }
    // The same lines hashed without their `\r`: every link breaks.
    let without_cr: Vec<u8> = text.iter().copied().filter(|&b| b != b'\r').collect();
    let (s, _) = replay_with(&without_cr, WHOLE);
    assert_eq!(s.chain_breaks, (lines.len() - 1) as u64);
}

#[test]
fn a_batch_of_very_short_lines_is_judged_a_bounded_number_of_lines_at_a_time() {
    // Between two stretches of actions, more one-character and empty lines than one
    // judgement holds: the findings are those of one thread reading it whole, and no
    // judgement holds more than MAX_JUDGED lines.
    let lines = journal_lines(true);
    let mut text = lines[..8].join(&b'\n');
    text.push(b'\n');
    for i in 0..(MAX_JUDGED + MAX_JUDGED / 2) {
        text.extend_from_slice(if i % 3 == 0 { b"x\n" } else { b"\n" });
    }
    text.extend_from_slice(&lines[8..].join(&b'\n'));
    text.push(b'\n');
    let (whole, whole_events) = replay_with(&text, par(1, 64));
    assert_eq!(
        whole.malformed,
        (MAX_JUDGED as u64 + MAX_JUDGED as u64 / 2).div_ceil(3)
    );
    assert!(whole.violations > 0);
    for p in [WHOLE, par(2, Parallelism::BATCH_BYTES), par(3, 4096)] {
        assert_eq!(
            replay_with(&text, p),
            (whole.clone(), whole_events.clone()),
            "{p:?}"
        );
    }
    let flow = Flow::load(&golden("flow.md")).unwrap();
    let judge = Judge {
        flow: &flow,
        chained: true,
    };
    let mut validator = Validator::new(&flow);
    let short = b"\n".repeat(MAX_JUDGED + 5);
    let (judged, used) = judge.lines(&mut validator, &short);
    assert_eq!((judged.lines.len(), used), (MAX_JUDGED, MAX_JUDGED));
}

#[test]
fn a_line_over_the_cap_is_malformed_but_still_a_link() {
    let mut lines = journal_lines(true);
    // A line too long to keep, chained like any other: the next line links to its hash.
    let mut long = vec![b'x'; MAX_LINE + 10];
    let before = JournalHash::of_line(&lines[3]);
    let long_hash = JournalHash::of_line(&long);
    long.truncate(MAX_LINE + 10);
    lines.insert(4, long);
    let mut prev = long_hash;
    for l in &mut lines[5..] {
        let n = l.len();
        l.truncate(n - 75); // drop `,"prev":"…"}` and chain again
        l.push(b'}');
        prev = crate::chain::link(l, &prev).unwrap();
    }
    assert_eq!(JournalHash::of_line(&lines[3]), before);
    let mut text = lines.join(&b'\n');
    text.push(b'\n');
    for p in [WHOLE, par(3, 2)] {
        let (s, _) = replay_with(&text, p);
        assert_eq!((s.malformed, s.chain_breaks), (1, 0), "{p:?}");
        assert_eq!(s.journal_hash, Some(prev.to_string()));
    }
}
