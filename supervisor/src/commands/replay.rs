//! `leopold persona replay`: prints what `leopold_journal::replay` finds. The logic lives in the
//! journal crate; this module only renders (text or JSON lines) and maps to the exit code.
use std::io::Write;
use std::process::ExitCode;

use leopold_journal::{replay, ReplayEvent, ReplayOptions, Verdict};

use crate::cli::ReplayArgs;
use crate::output::{count, Failure};

pub fn run(args: ReplayArgs) -> Result<ExitCode, Failure> {
    let opts = ReplayOptions {
        input: args.input.clone(),
        flow: args.flow.clone(),
        from: args.from,
        expect: args.expect,
        threads: args.threads,
    };
    let mut out = std::io::BufWriter::new(crate::output::Stdout);
    let shown = args.input.display().to_string();
    let json = args.json;
    let mut write_err = None;
    let result = replay(&opts, &mut |ev| {
        let r = if json {
            serde_json::to_writer(&mut out, &ev)
                .map_err(std::io::Error::other)
                .and_then(|()| out.write_all(b"\n"))
        } else {
            writeln!(out, "{}", render(&shown, &ev))
        };
        if let Err(e) = r {
            write_err.get_or_insert(e);
        }
    });
    let summary = match result {
        Ok(s) => s,
        Err(err) => {
            // What was found before the error comes first; main prints the error (as JSON too).
            out.flush()?;
            return Err(Failure::config(err));
        }
    };
    if let Some(e) = write_err {
        return Err(e.into());
    }
    let code = summary.exit_code();
    if json {
        let mut v = serde_json::to_value(&summary)?;
        v["type"] = "summary".into();
        v["exit_code"] = code.into();
        writeln!(out, "{v}")?;
    } else {
        let mut line = format!(
            "replay: {} checked against flow `{}`: {}, {} denied",
            count(summary.actions, "action"),
            summary.flow,
            count(summary.violations, "violation"),
            summary.denied,
        );
        if summary.malformed > 0 {
            line += &format!(", {} skipped", count(summary.malformed, "malformed line"));
        }
        if summary.seq_gaps > 0 {
            line += &format!(", {}", count(summary.seq_gaps, "seq gap"));
        }
        if summary.torn_last_line {
            line += ", torn last line skipped";
        }
        if summary.chain_breaks > 0 {
            line += &format!(
                ", hash chain broken at line {}",
                summary.chain_broken_at.unwrap_or(0)
            );
        }
        if summary.gateway_chain_breaks > 0 {
            line += ", the gateway record's hash chain broken";
        }
        if summary.gateway_disagreements > 0 {
            let n = summary.gateway_disagreements;
            line += &format!(
                ", {} between the stream and the gateway record",
                count(n, "disagreement")
            );
        }
        if summary.head_mismatches > 0 {
            line += ", head differs from the one expected";
        }
        if summary.verdicts_changed > 0 {
            let n = summary.verdicts_changed;
            let verb = if n == 1 {
                "differs from the recorded one"
            } else {
                "differ from the recorded ones"
            };
            line += &format!(", {} {verb}", count(n, "verdict"));
        }
        writeln!(out, "{line}")?;
        if args.from.is_none() {
            let chain = match (&summary.journal_hash, summary.chain_breaks) {
                (Some(h), 0) => format!("replay: hash chain intact; journal_hash {h}"),
                (Some(h), n) => format!(
                    "replay: hash chain BROKEN ({}, the first at line {}); journal_hash as it is now {h}",
                    count(n, "broken link"),
                    summary.chain_broken_at.unwrap_or(0)
                ),
                (None, _) => "replay: unchained journal (version 1, written before the hash chain): no tamper evidence".to_owned(),
            };
            writeln!(out, "{chain}")?;
            if let Some(h) = &summary.gateway_hash {
                let n = summary.gateway_chain_breaks;
                let state = if n == 0 {
                    "hash chain intact".to_owned()
                } else {
                    format!("hash chain BROKEN ({})", count(n, "broken link"))
                };
                writeln!(
                    out,
                    "replay: gateway record ({}): {state}; gateway_hash {h}",
                    count(summary.gateway_lines, "line")
                )?;
            }
        }
        if !summary.unknown_types.is_empty() {
            let names: Vec<String> = summary
                .unknown_types
                .iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect();
            writeln!(
                out,
                "replay: unknown event types ignored: {}",
                names.join(", ")
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::from(code))
}

fn render(input: &str, ev: &ReplayEvent) -> String {
    match ev {
        ReplayEvent::Violation {
            line,
            seq,
            tool,
            kind,
            outcome,
            rule,
            detail,
        } => {
            let detail = detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            let kind = serde_json::to_value(kind).unwrap_or_default();
            let outcome = serde_json::to_value(outcome).unwrap_or_default();
            format!(
                "{input}:{line}: violation: {rule}{detail}: seq {seq} {tool} {} {}",
                kind.as_str().unwrap_or("?"),
                outcome.as_str().unwrap_or("?")
            )
        }
        ReplayEvent::Malformed { line, error } => {
            format!("{input}:{line}: malformed line skipped: {error}")
        }
        ReplayEvent::Torn { line } => {
            format!("{input}:{line}: torn last line (no newline, incomplete JSON) skipped")
        }
        ReplayEvent::SeqGap {
            line,
            expected,
            found,
        } => format!("{input}:{line}: seq {found} where {expected} was expected: lines are missing or out of order"),
        ReplayEvent::ChainBreak { line, problem } => format!(
            "{input}:{line}: tampered: {problem} (the hash chain breaks here: a line was edited, removed, inserted or moved)"
        ),
        ReplayEvent::HeadMismatch {
            from,
            expected,
            found: Some(found),
        } => format!(
            "{input}: tampered: the journal ends on {found}, not on {expected} ({from}): lines were cut from the end, the last line edited, or the journal replaced"
        ),
        ReplayEvent::HeadMismatch {
            from,
            expected,
            found: None,
        } => format!(
            "{input}: cannot check the head {expected} ({from}): the journal is unchained (version 1, written before the hash chain)"
        ),
        ReplayEvent::GatewayChainBreak {
            file,
            line,
            problem,
        } => format!(
            "{}:{line}: tampered: {problem} (the gateway record's hash chain breaks here: a line was edited, removed, inserted or moved)",
            file.display()
        ),
        ReplayEvent::GatewayHeadMismatch {
            file,
            expected,
            found: Some(found),
        } => format!(
            "{}: tampered: the gateway record ends on {found}, not on {expected} (run.json): lines were cut from the end, the last line edited, or the record replaced",
            file.display()
        ),
        ReplayEvent::GatewayHeadMismatch {
            file,
            expected,
            found: None,
        } => format!(
            "{}: tampered: run.json records the gateway record's head {expected}, and the record is gone or empty",
            file.display()
        ),
        ReplayEvent::GatewayDisagreement { file, line, what } => format!(
            "{}:{line}: violation: the gateway's record disagrees with the harness's stream: {what}",
            file.display()
        ),
        ReplayEvent::VerdictChanged {
            line,
            seq,
            recorded,
            now,
        } => format!(
            "{input}:{line}: note: seq {seq} was recorded {} and is now {}",
            verdict_text(recorded),
            verdict_text(now)
        ),
        _ => format!("{input}: {ev:?}"),
    }
}

fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Ok => "ok".to_owned(),
        Verdict::Violation { rule, .. } => format!("violation ({rule})"),
    }
}
