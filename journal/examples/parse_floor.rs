//! The parse-only floor of the replay benchmark (`scripts/bench-replay.sh`): reads a journal the
//! way `leopold persona replay` does (1 MiB at a time into one buffer, lines split in place with
//! `memchr`) and deserialises each action line into a struct that borrows its strings (the line
//! checked as UTF-8 once and parsed as text, as replay parses it), and does nothing else, on one
//! thread.
//! No replay on one thread can be faster than this on the same file; BENCHMARKS.md reports
//! replay's time as a ratio to it.
//!
//! `cargo run --release -p leopold-journal --example parse_floor -- [--hash] <JOURNAL>` prints the
//! number of actions parsed and the number that failed to parse (0 on a generated journal).
//!
//! With `--hash` it also does the one thing a replay of a chained journal cannot skip: the SHA-256
//! of every line (the header's too), each line hashed whole as replay hashes it. That is a second
//! floor, for a replay that checks the chain; the plain floor stays the parse-only one.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Read;

use leopold_journal::{ActionKind, BrowserBlock, Harness, Outcome, UrlRole};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Every field of a journal line: strings borrowed (a line with an escaped string fails and is
/// counted: there is none in a generated journal), the journal's own enums for the closed sets,
/// and a browser's refusal as the journal's own type (replay reads that one owned too).
#[derive(Deserialize)]
#[allow(dead_code)]
struct Line<'a> {
    seq: u64,
    ts: &'a str,
    harness: Harness,
    tool: &'a str,
    #[serde(default)]
    tool_use_id: Option<&'a str>,
    kind: ActionKind,
    #[serde(default)]
    urls: Vec<Url<'a>>,
    #[serde(default)]
    label: Option<&'a str>,
    #[serde(default)]
    element: Option<&'a str>,
    #[serde(default)]
    typed_len: Option<u64>,
    outcome: Outcome,
    #[serde(default)]
    denied_reason: Option<&'a str>,
    #[serde(default)]
    verdict: Option<Verdict<'a>>,
    #[serde(default)]
    browser_blocked: Option<BrowserBlock>,
    #[serde(default)]
    prev: Option<&'a str>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Url<'a> {
    role: UrlRole,
    #[serde(default)]
    scheme: Option<&'a str>,
    #[serde(default)]
    host: Option<&'a str>,
    #[serde(default)]
    path: Option<&'a str>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Verdict<'a> {
    result: &'a str,
    #[serde(default)]
    rule: Option<&'a str>,
    #[serde(default)]
    detail: Option<&'a str>,
}

fn main() -> std::io::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let hash = args.first().is_some_and(|a| a == "--hash");
    if hash {
        args.remove(0);
    }
    let Some(path) = args.pop() else {
        eprintln!("usage: parse_floor [--hash] <JOURNAL>");
        std::process::exit(2);
    };
    let mut file = std::fs::File::open(path)?;
    let mut last = [0u8; 32];
    let (mut parsed, mut failed, mut line_no) = (0u64, 0u64, 0u64);
    // Read as replay reads: 1 MiB at a time straight into one buffer, lines split in place with
    // `memchr`, the start of a line cut off at the end moved to the front for the next read.
    let mut buf = vec![0u8; 1 << 20];
    let mut end = 0;
    loop {
        let n = file.read(&mut buf[end..])?;
        end += n;
        let mut rest = &buf[..end];
        while let Some(i) = memchr::memchr(b'\n', rest) {
            let line = &rest[..i];
            rest = &rest[i + 1..];
            line_no += 1;
            if hash {
                last = Sha256::digest(line).into();
            }
            if line_no == 1 {
                continue; // the header
            }
            // Parsed as replay parses a line: checked as UTF-8 once, whole, then parsed as text.
            let parsed_line = match std::str::from_utf8(line) {
                Ok(text) => serde_json::from_str::<Line<'_>>(text),
                Err(_) => serde_json::from_slice::<Line<'_>>(line),
            };
            match parsed_line {
                Ok(l) => {
                    std::hint::black_box(&l);
                    parsed += 1;
                }
                Err(_) => failed += 1,
            }
        }
        if n == 0 {
            break; // a generated journal ends in a newline: nothing is left
        }
        let kept = rest.len();
        buf.copy_within(end - kept..end, 0);
        end = kept;
        if end == buf.len() {
            buf.resize(2 * buf.len(), 0);
        }
    }
    std::hint::black_box(&last);
    println!("parse_floor: {parsed} actions parsed, {failed} failed");
    Ok(())
}
