//! Reading a journal's header or a raw stream line by line, bounded.

use std::io::{self, BufRead};

use super::MAX_LINE;

pub(super) enum Line<'a> {
    /// A line without its `\n` or `\r` (`cr`: whether it ended in one, which the chain hashes).
    Bytes {
        bytes: &'a [u8],
        terminated: bool,
        cr: bool,
    },
    TooLong,
}

/// Reads lines into one reused buffer, never holding more than [`MAX_LINE`] bytes of a line:
/// a journal's header, a raw harness stream.
pub(super) struct LineReader<'r, R> {
    pub(super) reader: &'r mut R,
    pub(super) buf: Vec<u8>,
    pub(super) line_no: u64,
}

impl<'r, R: BufRead> LineReader<'r, R> {
    pub(super) fn new(reader: &'r mut R) -> Self {
        LineReader {
            reader,
            buf: Vec::with_capacity(4096),
            line_no: 0,
        }
    }

    /// The next line with its 1-based number, or `None` at the end.
    pub(super) fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        let terminated = loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break false;
            }
            any = true;
            let (part, found) = match memchr_newline(chunk) {
                Some(i) => (&chunk[..i], Some(i)),
                None => (chunk, None),
            };
            if !too_long {
                if self.buf.len() + part.len() > MAX_LINE {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            match found {
                Some(i) => {
                    self.reader.consume(i + 1);
                    break true;
                }
                None => {
                    let n = chunk.len();
                    self.reader.consume(n);
                }
            }
        };
        if !any {
            return Ok(None);
        }
        self.line_no += 1;
        if too_long {
            return Ok(Some((self.line_no, Line::TooLong)));
        }
        let cr = self.buf.last() == Some(&b'\r');
        if cr {
            self.buf.pop();
        }
        Ok(Some((
            self.line_no,
            Line::Bytes {
                bytes: &self.buf,
                terminated,
                cr,
            },
        )))
    }
}

pub(super) fn memchr_newline(s: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', s)
}
