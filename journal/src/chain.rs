//! The journal's hash chain: every line carries, as `"prev"`, the SHA-256 of the line before it.
//!
//! What is hashed: a line's exact bytes, up to and not including its `\n` (a `\r` before it, which
//! Leopold never writes, would be hashed too). A line is what lies between two `\n`, or between the
//! last `\n` and the end of the file when something follows it (a torn last line is a line). Line 1
//! (the header) has no predecessor: its `prev` is [`GENESIS`], 64 zeros. The chain's **head** is the
//! SHA-256 of the last line; the supervisor records it as `journal_hash` when the run ends.
//!
//! Why: a line edited, removed or moved breaks the link from the line after it; a tail cut off
//! leaves a valid, shorter chain, caught only against a head saved elsewhere (`--expect`). The
//! chain has no secret: whoever can rewrite the whole file can rewrite the chain with it. Its worth
//! is the head kept out of the run directory's reach (a CI job's log, the `run_ended` event).

use std::fmt;
use std::io::{self, BufRead};
use std::path::Path;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::lines::LineReader;
use sha2::{Digest, Sha256};

/// A SHA-256 digest of a journal line; shown as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct JournalHash(pub [u8; 32]);

/// The predecessor of line 1 (the header's `prev`): 64 zeros.
pub const GENESIS: JournalHash = JournalHash([0; 32]);

impl JournalHash {
    /// The hash of one line's bytes (without its `\n`).
    pub fn of_line(line: &[u8]) -> JournalHash {
        JournalHash(Sha256::digest(line).into())
    }

    /// The 64 lowercase hex digits, without allocating.
    pub fn hex(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (i, b) in self.0.iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(b >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
        }
        out
    }

    /// Whether `s` is this hash as the writer writes it: 64 lowercase hex digits.
    pub fn matches_hex(&self, s: &str) -> bool {
        s.as_bytes() == self.hex()
    }
}

impl fmt::Display for JournalHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The digits are ASCII by construction.
        f.write_str(std::str::from_utf8(&self.hex()).unwrap_or_default())
    }
}

impl fmt::Debug for JournalHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JournalHash({self})")
    }
}

impl Serialize for JournalHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A string that is not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a journal hash: expected 64 hex digits (a SHA-256), as `run_ended` prints `journal_hash`")]
pub struct ParseHashError(pub String);

impl FromStr for JournalHash {
    type Err = ParseHashError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let t = t.strip_prefix("sha256:").unwrap_or(t);
        let bad = || ParseHashError(s.chars().take(80).collect());
        if t.len() != 64 {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, pair) in t.as_bytes().chunks(2).enumerate() {
            let digit = |c: u8| char::from(c).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(h), Some(l)) => out[i] = (h * 16 + l) as u8,
                _ => return Err(bad()),
            }
        }
        Ok(JournalHash(out))
    }
}

/// Links one serialised JSON object line (no newline) into the chain: appends `"prev"`, the hash
/// of the line before, as its last key, and returns the hash of the line as it now is (the next
/// line's `prev`, or the head). The journal writer's one way to write a line; also for anything
/// that writes a journal without it (the replay benchmark's generator).
///
/// # Errors
///
/// [`NotAnObject`] (the buffer left as it was) when `line` does not end with `}`.
pub fn link(line: &mut Vec<u8>, prev: &JournalHash) -> Result<JournalHash, NotAnObject> {
    if line.last() != Some(&b'}') {
        return Err(NotAnObject);
    }
    line.pop();
    line.extend_from_slice(b",\"prev\":\"");
    line.extend_from_slice(&prev.hex());
    line.extend_from_slice(b"\"}");
    Ok(JournalHash::of_line(line))
}

/// [`link`] was given something other than a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a journal line must be a JSON object")]
pub struct NotAnObject;

/// Hashes lines fed in pieces: the reader splits a line across its buffer's refills.
#[derive(Clone, Default)]
pub(crate) struct LineHasher(Sha256);

impl LineHasher {
    pub(crate) fn update(&mut self, part: &[u8]) {
        self.0.update(part);
    }

    /// The hash of everything fed since the last call.
    pub(crate) fn finish_line(&mut self) -> JournalHash {
        JournalHash(self.0.finalize_reset().into())
    }
}

/// The head of the journal `reader` holds: the hash of its last line, or `None` when it is empty.
/// Streams (one buffer of memory whatever the size); does not check the links.
///
/// # Errors
///
/// The reader's I/O errors.
pub fn head_of<R: BufRead>(mut reader: R) -> io::Result<Option<JournalHash>> {
    let mut hasher = LineHasher::default();
    let mut head = None;
    let mut open = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        let mut rest = chunk;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            hasher.update(&rest[..i]);
            head = Some(hasher.finish_line());
            open = false;
            rest = &rest[i + 1..];
        }
        if !rest.is_empty() {
            hasher.update(rest);
            open = true;
        }
        let n = chunk.len();
        reader.consume(n);
    }
    if open {
        head = Some(hasher.finish_line());
    }
    Ok(head)
}

/// The head of a chained file on disk ([`head_of`]), as the file is now: for a run whose writer
/// is gone (set-up failed, or a crash recovered), or a record to be continued. `None` when there
/// is no file to read, or it is empty.
pub fn head_of_file(path: &Path) -> Option<JournalHash> {
    let f = std::fs::File::open(path).ok()?;
    head_of(io::BufReader::new(f)).ok().flatten()
}

/// What [`check_lines`] found of a chained file's links.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChainCheck {
    /// Lines read (a torn last line counts).
    pub lines: u64,
    /// Lines whose `prev` is not the hash of the line before (or that carry none).
    pub breaks: u64,
    /// The first of them: its line number and what is wrong with it.
    pub first_break: Option<(u64, String)>,
    /// The hash of the last line: the chain's head; `None` for an empty file.
    pub head: Option<JournalHash>,
}

/// Checks every link of a file written with [`link`] from [`GENESIS`] on, line 1 included (the
/// supervisor's gateway record: no header, every line a JSON object with `prev` as its last key).
/// Streams, one line of at most `max_line` bytes in memory at a time: a longer line is a break
/// (its `prev` is not read), and still a link.
///
/// # Errors
///
/// The reader's I/O errors.
pub fn check_lines<R: BufRead>(reader: R, max_line: usize) -> io::Result<ChainCheck> {
    #[derive(serde::Deserialize)]
    struct Prev<'a> {
        #[serde(borrow, default)]
        prev: Option<&'a str>,
    }
    let mut out = ChainCheck::default();
    let mut expected = GENESIS;
    let mut lines = LineReader::new(reader, max_line).hashing();
    while let Some(line) = lines.next_line()? {
        out.lines += 1;
        let problem = match line.bytes.map(serde_json::from_slice::<Prev<'_>>) {
            Some(Ok(Prev { prev: Some(p) })) if expected.matches_hex(p) => None,
            Some(Ok(Prev { prev: Some(_) })) => {
                Some("its `prev` is not the hash of the line before")
            }
            Some(Ok(Prev { prev: None })) => Some("it carries no `prev`"),
            Some(Err(_)) => Some("it is not a JSON object with a string `prev`"),
            None => Some("it is too long to be one of the file's lines"),
        };
        if let Some(problem) = problem {
            out.breaks += 1;
            out.first_break
                .get_or_insert((out.lines, problem.to_owned()));
        }
        expected = line.hash.unwrap_or(GENESIS);
        out.head = Some(expected);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_matches_the_reference_digest() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        let h = JournalHash::of_line(b"abc");
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(h.to_string(), hex);
        assert_eq!(hex.parse::<JournalHash>().unwrap(), h);
        assert_eq!(hex.to_uppercase().parse::<JournalHash>().unwrap(), h);
        assert_eq!(format!("sha256:{hex}").parse::<JournalHash>().unwrap(), h);
        assert!(h.matches_hex(hex) && !h.matches_hex(&hex[1..]));
        assert!(!h.matches_hex(&hex.to_uppercase()));
        assert!("abc".parse::<JournalHash>().is_err());
        assert!(hex.replace('a', "g").parse::<JournalHash>().is_err());
        assert_eq!(GENESIS.to_string(), "0".repeat(64));
    }

    /// Lines linked as the gateway writes them.
    fn chained(objects: &[&str]) -> Vec<Vec<u8>> {
        let mut prev = GENESIS;
        objects
            .iter()
            .map(|o| {
                let mut line = o.as_bytes().to_vec();
                prev = link(&mut line, &prev).unwrap();
                line
            })
            .collect()
    }

    fn check(lines: &[Vec<u8>]) -> ChainCheck {
        let mut text = lines.join(&b'\n');
        text.push(b'\n');
        check_lines(io::Cursor::new(text), 1 << 20).unwrap()
    }

    #[test]
    fn every_link_of_a_chained_file_is_checked_from_line_one() {
        let lines = chained(&[r#"{"seq":1}"#, r#"{"seq":2}"#, r#"{"seq":3}"#]);
        let intact = check(&lines);
        assert_eq!(
            (intact.lines, intact.breaks, intact.first_break),
            (3, 0, None)
        );
        assert_eq!(intact.head, Some(JournalHash::of_line(&lines[2])));
        assert_eq!(
            check_lines(io::Cursor::new(Vec::new()), 1 << 20)
                .unwrap()
                .head,
            None
        );

        // A line edited: the link after it breaks (the edited line's own link still holds).
        let mut edited = lines.clone();
        edited[1] = String::from_utf8(edited[1].clone())
            .unwrap()
            .replace("\"seq\":2", "\"seq\":9")
            .into_bytes();
        let c = check(&edited);
        assert_eq!((c.breaks, c.first_break.map(|b| b.0)), (1, Some(3)));
        // Removed, moved, or a first line that does not start from genesis.
        let c = check(&[lines[0].clone(), lines[2].clone()]);
        assert_eq!(c.first_break.map(|b| b.0), Some(2));
        let c = check(&[lines[1].clone(), lines[0].clone(), lines[2].clone()]);
        assert_eq!(c.first_break.map(|b| b.0), Some(1));
        // A line with no `prev`, or not JSON.
        let c = check(&[lines[0].clone(), b"{\"seq\":2}".to_vec()]);
        assert_eq!(c.first_break, Some((2, "it carries no `prev`".into())));
        let c = check(&[lines[0].clone(), b"not json".to_vec()]);
        assert_eq!(c.breaks, 1);
        // A tail cut off leaves a valid, shorter chain: only a head kept elsewhere tells.
        let c = check(&lines[..2]);
        assert_eq!(c.breaks, 0);
        assert_ne!(c.head, intact.head);
    }

    #[test]
    fn the_head_is_the_last_line_torn_or_not() {
        let head = |s: &[u8]| head_of(io::Cursor::new(s.to_vec())).unwrap();
        assert_eq!(head(b""), None);
        assert_eq!(head(b"a\nb\n"), Some(JournalHash::of_line(b"b")));
        assert_eq!(head(b"a\nb"), Some(JournalHash::of_line(b"b")));
        assert_eq!(head(b"a\nb\r\n"), Some(JournalHash::of_line(b"b\r")));
        assert_eq!(head(b"a\n\n"), Some(JournalHash::of_line(b"")));
        // Split across refills.
        let r = io::BufReader::with_capacity(3, io::Cursor::new(b"first\nsecond line\n".to_vec()));
        assert_eq!(
            head_of(r).unwrap(),
            Some(JournalHash::of_line(b"second line"))
        );
    }
}
