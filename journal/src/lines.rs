//! Reading lines of bounded length: the one line reader of the journal's replay and of every
//! file, pipe and socket the supervisor reads line by line.
//!
//! A line is what lies before a `\n`, or before the end of the input when something follows the
//! last `\n`. A line longer than the bound is never held: its bytes stream through (hashed, when
//! asked) and it is given as too long, so memory stays flat whatever the input. The bound counts
//! the line's bytes without its `\n` (a `\r` before it counts).
//!
//! [`LineBuf`] holds no reader, so that a blocking reader ([`LineReader`]) and an async one (the
//! supervisor's pipes and sockets) feed it the same way: each chunk their buffer holds, through
//! [`LineBuf::push`], then consume what it took.

use std::io::{self, BufRead};

use crate::chain::{JournalHash, LineHasher};

/// One line read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// Its 1-based number.
    pub no: u64,
    /// Its bytes without the `\n` (a `\r` before it kept); `None` when it was over the bound.
    pub bytes: Option<&'a [u8]>,
    /// Whether a `\n` ended it (else it ran to the end of the input: maybe a torn last line).
    pub terminated: bool,
    /// The hash of its bytes, over the bound or not (with [`LineBuf::hashing`]).
    pub hash: Option<JournalHash>,
}

impl<'a> Line<'a> {
    /// Its bytes without a `\r` before the `\n`, and whether there was one; `None` when it was
    /// over the bound.
    pub fn without_cr(&self) -> Option<(&'a [u8], bool)> {
        self.bytes.map(|b| match b.strip_suffix(b"\r") {
            Some(b) => (b, true),
            None => (b, false),
        })
    }
}

/// A line being read, fed chunk by chunk; keeps at most its bound of it.
#[derive(Clone)]
pub struct LineBuf {
    max: usize,
    buf: Vec<u8>,
    /// Some of the current line was fed.
    started: bool,
    too_long: bool,
    /// The current line has ended: the next push begins another.
    ended: bool,
    terminated: bool,
    no: u64,
    hasher: Option<LineHasher>,
    hash: Option<JournalHash>,
}

impl LineBuf {
    /// Lines of at most `max` bytes (without their `\n`).
    pub fn new(max: usize) -> LineBuf {
        LineBuf {
            max,
            buf: Vec::with_capacity(max.min(4096)),
            started: false,
            too_long: false,
            ended: false,
            terminated: false,
            no: 0,
            hasher: None,
            hash: None,
        }
    }

    /// Hashes every line as a chain does ([`crate::chain`]), those over the bound included.
    pub fn hashing(mut self) -> LineBuf {
        self.hasher = Some(LineHasher::default());
        self
    }

    /// Takes the current line's bytes from the start of `chunk`, up to and including its `\n`:
    /// how many it took, and whether they end the line ([`LineBuf::line`]). An empty `chunk` is
    /// the end of the input: it ends a line begun, and otherwise ends nothing.
    pub fn push(&mut self, chunk: &[u8]) -> (usize, bool) {
        if self.ended {
            self.buf.clear();
            self.started = false;
            self.too_long = false;
            self.ended = false;
        }
        if chunk.is_empty() {
            if self.started {
                self.end(false);
            }
            return (0, self.ended);
        }
        self.started = true;
        let (part, found) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        if let Some(h) = &mut self.hasher {
            h.update(part);
        }
        if !self.too_long {
            if self.buf.len() + part.len() > self.max {
                self.too_long = true;
                self.buf.clear();
            } else {
                self.buf.extend_from_slice(part);
            }
        }
        if found {
            self.end(true);
        }
        (part.len() + usize::from(found), found)
    }

    fn end(&mut self, terminated: bool) {
        self.ended = true;
        self.terminated = terminated;
        self.no += 1;
        self.hash = self.hasher.as_mut().map(LineHasher::finish_line);
    }

    /// Whether the current line is already over the bound (a reader that gives up on such a
    /// line need not read the rest of it).
    pub fn is_too_long(&self) -> bool {
        self.too_long
    }

    /// The line the last [`push`](LineBuf::push) ended.
    pub fn line(&self) -> Line<'_> {
        Line {
            no: self.no,
            bytes: (!self.too_long).then_some(self.buf.as_slice()),
            terminated: self.terminated,
            hash: self.hash,
        }
    }

    /// The number of lines ended so far.
    pub fn lines(&self) -> u64 {
        self.no
    }
}

/// Reads lines of at most a bound from a blocking reader, into one reused buffer.
pub struct LineReader<R> {
    reader: R,
    line: LineBuf,
}

impl<R: BufRead> LineReader<R> {
    /// Lines of at most `max` bytes (without their `\n`) from `reader`.
    pub fn new(reader: R, max: usize) -> LineReader<R> {
        LineReader {
            reader,
            line: LineBuf::new(max),
        }
    }

    /// Hashes every line ([`LineBuf::hashing`]).
    pub fn hashing(mut self) -> LineReader<R> {
        self.line = self.line.hashing();
        self
    }

    /// The next line, or `None` at the end.
    ///
    /// # Errors
    ///
    /// The reader's I/O errors (a line they cut short is not given).
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let end = chunk.is_empty();
            let (used, ended) = self.line.push(chunk);
            self.reader.consume(used);
            if ended {
                return Ok(Some(self.line.line()));
            }
            if end {
                return Ok(None);
            }
        }
    }

    /// The number of lines read so far.
    pub fn lines(&self) -> u64 {
        self.line.lines()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 4 << 20;

    #[test]
    fn lines_longer_than_the_cap_are_skipped_whole() {
        let mut input = vec![b'x'; MAX + 10];
        input.extend_from_slice(b"\nnext\n");
        let mut r = std::io::Cursor::new(input);
        let mut lines = LineReader::new(&mut r, MAX);
        assert!(matches!(
            lines.next_line().unwrap(),
            Some(Line {
                no: 1,
                bytes: None,
                ..
            })
        ));
        match lines.next_line().unwrap() {
            Some(Line {
                no: 2,
                bytes: Some(bytes),
                terminated,
                ..
            }) => {
                assert_eq!(bytes, b"next");
                assert!(terminated);
            }
            _ => panic!("second line"),
        }
        assert!(lines.next_line().unwrap().is_none());
    }
}
