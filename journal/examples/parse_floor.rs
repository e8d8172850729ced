//! The parse-only floor of the replay benchmark (`scripts/bench-replay.sh`): reads a journal the
//! way `leopold persona replay` does (a 256 KiB buffered reader, lines split with `memchr`) and
//! deserialises each action line into a struct that borrows its strings (the line checked as
//! UTF-8 once and parsed as text, as replay parses it), and does nothing else, on one thread.
//! No replay on one thread can be faster than this on the same file; BENCHMARKS.md reports
//! replay's time as a ratio to it.
//!
//! `cargo run --release -p leopold-journal --example parse_floor -- [--hash] <JOURNAL>` prints the
//! number of actions parsed and the number that failed to parse (0 on a generated journal).
//!
//! With `--hash` it also does the one thing a replay of a chained journal cannot skip: the SHA-256
//! of every line (the header's too), the same hasher fed the same way. That is a second floor, for
//! a replay that checks the chain; the plain floor stays the parse-only one.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, BufReader};

use leopold_journal::{ActionKind, Harness, Outcome, UrlRole};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Every field of a journal line: strings borrowed (a line with an escaped string fails and is
/// counted: there is none in a generated journal), the journal's own enums for the closed sets.
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
    browser_blocked: Option<Block<'a>>,
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

#[derive(Deserialize)]
#[allow(dead_code)]
struct Block<'a> {
    how: &'a str,
    #[serde(default)]
    host: Option<&'a str>,
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
    let mut hasher = Sha256::new();
    let mut last = [0u8; 32];
    let mut reader = BufReader::with_capacity(256 << 10, std::fs::File::open(path)?);
    let mut buf = Vec::with_capacity(4096);
    let (mut parsed, mut failed, mut line_no) = (0u64, 0u64, 0u64);
    loop {
        buf.clear();
        // Lines split as replay splits them: `memchr` over the reader's buffer.
        let mut any = false;
        loop {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            any = true;
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    if hash {
                        hasher.update(&chunk[..i]);
                    }
                    buf.extend_from_slice(&chunk[..i]);
                    reader.consume(i + 1);
                    break;
                }
                None => {
                    let n = chunk.len();
                    if hash {
                        hasher.update(chunk);
                    }
                    buf.extend_from_slice(chunk);
                    reader.consume(n);
                }
            }
        }
        if !any {
            break;
        }
        line_no += 1;
        if hash {
            last = hasher.finalize_reset().into();
        }
        if line_no == 1 {
            continue; // the header
        }
        // Parsed as replay parses a line: checked as UTF-8 once, whole, then parsed as text.
        let parsed_line = match std::str::from_utf8(&buf) {
            Ok(text) => serde_json::from_str::<Line<'_>>(text),
            Err(_) => serde_json::from_slice::<Line<'_>>(&buf),
        };
        match parsed_line {
            Ok(l) => {
                std::hint::black_box(&l);
                parsed += 1;
            }
            Err(_) => failed += 1,
        }
    }
    std::hint::black_box(&last);
    println!("parse_floor: {parsed} actions parsed, {failed} failed");
    Ok(())
}
