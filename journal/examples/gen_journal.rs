//! Writes a synthetic journal of N actions for the replay benchmark (`scripts/bench-replay.sh`):
//! `cargo run --release -p leopold-journal --example gen_journal -- <N> <OUT>`.
//!
//! A realistic mix (navigations with target and page URLs, clicks with labels, typing, snapshots,
//! denials); one action in 1000 is a completed navigation off the allowlist, so replay (and the
//! `jq` peer) have violations to report. Hash-chained as the supervisor writes journals (version
//! 2). Deterministic: the same N gives the same file.
#![allow(clippy::print_stderr)]

use std::io::{BufWriter, Write};
use std::path::Path;

use leopold_journal::{
    chain, Action, ActionKind, Harness, JournalHeader, Outcome, UrlRef, UrlRole, Verdict, GENESIS,
};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(n), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: gen_journal <N> <OUT>");
        std::process::exit(2);
    };
    let n: u64 = n.parse().expect("N is a number");
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&out)?);
    let header = JournalHeader::new(
        "bench",
        "checkout",
        Path::new("flow.md"),
        Harness::Claude,
        "2026-11-30T10:00:00.000Z".into(),
    );
    // Lines chained exactly as the journal writer chains them, buffered rather than one write each.
    let mut line = Vec::with_capacity(512);
    let put = |w: &mut BufWriter<std::fs::File>, prev, line: &mut Vec<u8>| {
        let head = chain::link(line, &prev).map_err(std::io::Error::other)?;
        line.push(b'\n');
        w.write_all(line)?;
        line.clear();
        Ok::<_, std::io::Error>(head)
    };
    serde_json::to_writer(&mut line, &header)?;
    let mut prev = put(&mut w, GENESIS, &mut line)?;
    let paths = [
        "/welcome",
        "/products/42",
        "/cart",
        "/checkout/address",
        "/search",
    ];
    let labels = [
        "Add to cart",
        "Next",
        "Continue to shipping",
        "Search",
        "Accept cookies",
    ];
    for seq in 1..=n {
        let i = seq as usize;
        let host = if seq % 1000 == 0 {
            "prod-dashboard.example.org"
        } else {
            "staging.example.com"
        };
        let path = paths[i % paths.len()];
        let raw = format!("https://{host}{path}?session=abc{seq}");
        let (tool, kind, urls, label, typed_len) = match seq % 5 {
            0 => (
                "mcp__browser__browser_navigate",
                ActionKind::Navigate,
                vec![
                    UrlRef::from_raw(UrlRole::Target, &raw),
                    UrlRef::from_raw(UrlRole::Page, &raw),
                ],
                None,
                None,
            ),
            1 => (
                "mcp__browser__browser_click",
                ActionKind::Click,
                vec![UrlRef::from_raw(
                    UrlRole::Page,
                    &format!("https://staging.example.com{path}"),
                )],
                Some(labels[i % labels.len()].to_owned()),
                None,
            ),
            2 => (
                "mcp__browser__browser_type",
                ActionKind::Type,
                vec![],
                Some("Email".to_owned()),
                Some(17),
            ),
            3 => (
                "mcp__browser__browser_snapshot",
                ActionKind::Other,
                vec![],
                None,
                None,
            ),
            _ => (
                "mcp__browser__browser_navigate",
                ActionKind::Navigate,
                vec![UrlRef::from_raw(UrlRole::Target, "https://evil.example/x")],
                None,
                None,
            ),
        };
        let outcome = if seq % 5 == 4 {
            Outcome::Denied
        } else {
            Outcome::Completed
        };
        let verdict = if host != "staging.example.com" && kind == ActionKind::Navigate {
            Verdict::Violation {
                rule: "hook_failed_open".into(),
                detail: Some(format!("host {host}")),
            }
        } else {
            Verdict::Ok
        };
        let a = Action {
            seq,
            tool_use_id: Some(format!("toolu_{seq:08}")),
            urls,
            label,
            typed_len,
            denied_reason: (outcome == Outcome::Denied).then(|| "outside_allowlist".to_owned()),
            verdict: Some(verdict),
            ..Action::new(
                Harness::Claude,
                "2026-11-30T10:00:00.000Z".into(),
                tool,
                kind,
                outcome,
            )
        };
        serde_json::to_writer(&mut line, &a)?;
        prev = put(&mut w, prev, &mut line)?;
    }
    w.flush()
}
