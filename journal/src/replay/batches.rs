//! Replay's reading of a journal: whole lines in batches of about a MiB, read straight from the
//! file into buffers that are handed back and reused once judged. The reading thread neither
//! looks for line ends nor copies lines one by one; whoever judges a batch splits it.
//!
//! A batch ends at its last `\n`; the start of the line it cuts off begins the next one. A line
//! longer than [`MAX_LINE`] is never held whole: it streams through (hashed, when the chain needs
//! it) and becomes a batch of its own, [`Batch::TooLong`]. So a buffer holds at most
//! [`MAX_LINE`] + 1 bytes, and memory stays flat whatever the journal's size.

use std::io::{self, Read};

use super::MAX_LINE;
use crate::chain::{JournalHash, LineHasher};

/// Lines read but not judged.
pub(super) enum Batch {
    /// Whole lines as read, each with its `\n` (and a `\r` before it, which the chain hashes);
    /// only the input's last line may lack the `\n`.
    Lines(Lines),
    /// One line over [`MAX_LINE`], not kept: its hash, when the chain needs it.
    TooLong(Option<JournalHash>),
}

/// A buffer and how much of it the batch's lines fill.
pub(super) struct Lines {
    buf: Vec<u8>,
    len: usize,
}

impl Lines {
    /// The lines.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The buffer, for [`BatchReader::reuse`].
    pub(super) fn into_buffer(self) -> Vec<u8> {
        self.buf
    }
}

/// Splits a batch's bytes into lines: each line without its `\n` (a `\r` kept), and whether a
/// `\n` ended it.
pub(super) fn lines(bytes: &[u8]) -> impl Iterator<Item = (&[u8], bool)> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        Some(match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let line = &rest[..i];
                rest = &rest[i + 1..];
                (line, true)
            }
            None => (std::mem::take(&mut rest), false),
        })
    })
}

/// The first batch's size; each next one is twice the one before, up to the target.
const FIRST_SIZE: usize = 64 << 10;

/// Reads a journal's lines, after its header, in batches.
pub(super) struct BatchReader<'r, R> {
    reader: &'r mut R,
    /// The bytes a batch is read to before it ends at its last whole line.
    target: usize,
    /// The size of the next batch: the first ones are smaller, so a short journal is not read
    /// into a MiB of zeroes.
    size: usize,
    /// Whether a line over [`MAX_LINE`] is hashed as it streams through (a chained journal).
    hash: bool,
    /// The start of the line the last batch cut off.
    carry: Vec<u8>,
    /// Buffers handed back ([`Self::reuse`]), every byte of each initialised: none is zeroed
    /// again.
    spare: Vec<Vec<u8>>,
    eof: bool,
    /// An error met after whole lines were read: those are returned first, the error next.
    pending_error: Option<io::Error>,
}

impl<'r, R: Read> BatchReader<'r, R> {
    pub(super) fn new(reader: &'r mut R, target: usize, hash: bool) -> Self {
        BatchReader {
            reader,
            target: target.clamp(1, MAX_LINE),
            size: target.clamp(1, FIRST_SIZE),
            hash,
            carry: Vec::new(),
            spare: Vec::new(),
            eof: false,
            pending_error: None,
        }
    }

    /// Takes back a judged batch's buffer for a later batch. One that grew for a long line
    /// goes back to the usual size.
    pub(super) fn reuse(&mut self, mut buf: Vec<u8>) {
        if buf.len() > 2 * self.target {
            buf.truncate(self.target);
            buf.shrink_to_fit();
        }
        self.spare.push(buf);
    }

    /// The next batch, or `None` at the end of the input.
    pub(super) fn next_batch(&mut self) -> io::Result<Option<Batch>> {
        if let Some(e) = self.pending_error.take() {
            return Err(e);
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        let carried = self.carry.len();
        let size = self.size.max(carried + 1);
        self.size = (2 * self.size).min(self.target);
        if buf.len() < size {
            buf.resize(size, 0);
        }
        buf[..carried].copy_from_slice(&self.carry);
        self.carry.clear();
        let mut filled = carried;
        loop {
            if self.eof {
                if filled == 0 {
                    self.spare.push(buf);
                    return Ok(None);
                }
                return Ok(Some(Batch::Lines(Lines { buf, len: filled })));
            }
            if filled == buf.len() {
                match memchr::memrchr(b'\n', &buf[..filled]) {
                    Some(i) => return Ok(Some(self.cut(buf, i, filled))),
                    // One line, with no end in sight: longer than the cap, or the buffer grows.
                    None if filled > MAX_LINE => return self.rest_of_long_line(buf, filled),
                    None => buf.resize((2 * filled).clamp(filled + 1, MAX_LINE + 1), 0),
                }
            }
            match self.reader.read(&mut buf[filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // The whole lines read before the error are judged first, as they would be
                    // one at a time; the line the error cut is lost.
                    return match memchr::memrchr(b'\n', &buf[..filled]) {
                        Some(i) => {
                            self.pending_error = Some(e);
                            Ok(Some(Batch::Lines(Lines { buf, len: i + 1 })))
                        }
                        None => Err(e),
                    };
                }
            }
        }
    }

    /// The batch of the lines up to the `\n` at `end`; what follows it is carried over.
    fn cut(&mut self, buf: Vec<u8>, end: usize, filled: usize) -> Batch {
        self.carry.extend_from_slice(&buf[end + 1..filled]);
        Batch::Lines(Lines { buf, len: end + 1 })
    }

    /// A line over [`MAX_LINE`], of which `buf[..filled]` is the start: read to its end, hashed
    /// when asked, not kept.
    fn rest_of_long_line(&mut self, mut buf: Vec<u8>, filled: usize) -> io::Result<Option<Batch>> {
        let mut hasher = self.hash.then(LineHasher::default);
        let mut feed = |part: &[u8]| {
            if let Some(h) = &mut hasher {
                h.update(part);
            }
        };
        feed(&buf[..filled]);
        loop {
            let n = match self.reader.read(&mut buf) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                feed(&buf[..i]);
                self.carry.extend_from_slice(&buf[i + 1..n]);
                break;
            }
            feed(&buf[..n]);
        }
        self.reuse(buf);
        Ok(Some(Batch::TooLong(
            hasher.as_mut().map(LineHasher::finish_line),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as read, and whether a `\n` ended it; `None` for one over the cap.
    type ReadLine = Option<(Vec<u8>, bool)>;

    /// Every batch of `input` read with `target`, as lines.
    fn read_all(input: &[u8], target: usize) -> Vec<Vec<ReadLine>> {
        let mut r = std::io::Cursor::new(input);
        let mut reader = BatchReader::new(&mut r, target, true);
        let mut out = vec![];
        while let Some(b) = reader.next_batch().unwrap() {
            out.push(match b {
                Batch::Lines(l) => {
                    let v = lines(l.bytes())
                        .map(|(b, t)| Some((b.to_vec(), t)))
                        .collect();
                    reader.reuse(l.into_buffer());
                    v
                }
                Batch::TooLong(_) => vec![None],
            });
        }
        out
    }

    #[test]
    fn batches_hold_whole_lines_whatever_the_target() {
        let input = b"one\ntwo\r\nthree\n\nfour";
        let expected: Vec<(Vec<u8>, bool)> = vec![
            (b"one".to_vec(), true),
            (b"two\r".to_vec(), true),
            (b"three".to_vec(), true),
            (b"".to_vec(), true),
            (b"four".to_vec(), false),
        ];
        for target in [1, 2, 3, 5, 8, 13, 64, 1 << 20] {
            let batches = read_all(input, target);
            assert!(batches.iter().all(|b| !b.is_empty()), "{target}");
            let all: Vec<_> = batches.into_iter().flatten().map(Option::unwrap).collect();
            assert_eq!(all, expected, "target {target}");
        }
    }

    #[test]
    fn a_batch_ends_at_its_target_after_a_whole_line() {
        let line = format!("{{\"x\":\"{}\"}}\n", "a".repeat(100 << 10));
        let text = line.repeat(40);
        let batches = read_all(text.as_bytes(), 1 << 20);
        assert!(batches.len() > 1, "{} batches", batches.len());
        for b in &batches {
            assert!(b.len() <= (1 << 20) / line.len() + 1, "{} lines", b.len());
        }
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), 40);
    }

    #[test]
    fn lines_longer_than_the_cap_stream_through_hashed() {
        for (tail, terminated) in [(&b"\nnext\n"[..], true), (&b""[..], false)] {
            let mut input = vec![b'x'; MAX_LINE + 10];
            input.extend_from_slice(tail);
            let long_hash = JournalHash::of_line(&input[..MAX_LINE + 10]);
            let mut r = std::io::Cursor::new(&input);
            let mut reader = BatchReader::new(&mut r, 1 << 20, true);
            assert!(matches!(
                reader.next_batch().unwrap(),
                Some(Batch::TooLong(Some(h))) if h == long_hash
            ));
            if terminated {
                match reader.next_batch().unwrap() {
                    Some(Batch::Lines(l)) => assert_eq!(l.bytes(), b"next\n"),
                    _ => panic!("the line after the long one"),
                }
            }
            assert!(reader.next_batch().unwrap().is_none());
        }
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_kept_its_cr_counted() {
        // (bytes before the `\r\n`, whether a `\r` ends it, kept?)
        for (n, cr, kept) in [
            (MAX_LINE, false, true),
            (MAX_LINE - 1, true, true),
            (MAX_LINE, true, false),
            (MAX_LINE + 1, false, false),
        ] {
            let mut input = vec![b'x'; n];
            if cr {
                input.push(b'\r');
            }
            input.extend_from_slice(b"\nnext\n");
            // Read from a buffer that already grew for a line, as a reused one may have.
            for target in [1 << 20, MAX_LINE] {
                let all: Vec<_> = read_all(&input, target).into_iter().flatten().collect();
                assert_eq!(all.len(), 2, "{n} {cr} {target}");
                let first = all[0].as_ref().map(|(b, _)| b.len());
                let expected = kept.then_some(n + usize::from(cr));
                assert_eq!(first, expected, "{n} {cr} {target}");
                assert_eq!(all[1], Some((b"next".to_vec(), true)), "{n} {cr} {target}");
            }
        }
    }
}
