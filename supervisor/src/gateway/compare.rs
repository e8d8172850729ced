//! What the gateway and the observer share in-process: the calls the gateway forwarded and
//! denied, and the comparison of that record with the harness's stream at the end of the run
//! (docs/security.md#the-gateway). Apart from the serving: it is a pure function of the two
//! records, tested on its own.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;

/// A call the gateway refused, waiting for the observer to meet it in the harness's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayDenial {
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The reason id.
    pub reason: String,
}

/// A call the gateway forwarded to a server, as its record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    /// The record's `seq` of the call's line.
    pub seq: u64,
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The arguments, reduced as the record keeps them ([`leopold_guard::reduced_call`]).
    pub call: Value,
    /// The server's answer, once it came.
    pub answer: Option<Answer>,
}

/// A server's answer to a forwarded call, as the record keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// An MCP tool error, or a JSON-RPC error.
    pub is_error: bool,
    /// The host of the page the browser was on after the call (Playwright's `Page URL:`).
    pub page_host: Option<String>,
}

/// A call of one of the gateway's servers as the harness's stream shows it, journaled (a call
/// the stream shows denied is not one: it never reached a server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamCall {
    /// The journal's `seq`.
    pub seq: u64,
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The arguments the stream shows, reduced as the gateway reduces them.
    pub call: Value,
    pub outcome: leopold_journal::Outcome,
    /// The host of the page the stream's result names, when it names one.
    pub page_host: Option<String>,
}

/// One place where the harness's stream and the gateway's record of the browser's calls
/// disagree (docs/security.md#the-gateway): it makes the run `violated`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// `mcp__<server>__<tool>`.
    pub tool: String,
    /// The journal's `seq` of the stream's call, when the stream shows one.
    pub journal_seq: Option<u64>,
    /// The record's `seq` of the gateway's call, when the gateway has one.
    pub gateway_seq: Option<u64>,
    /// One sentence naming the tool and both seqs; hosts, never a URL.
    pub what: String,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

/// What the gateway and the observer share, in-process.
#[derive(Debug, Default)]
pub struct Shared {
    /// Denials the observer has not matched to a stream action yet.
    pub denials: VecDeque<GatewayDenial>,
    /// Calls forwarded to a server, in the record's order, with their answers.
    pub forwarded: Vec<Forwarded>,
    /// Calls denied, by tool.
    pub denied: BTreeMap<String, u64>,
    /// The servers behind the gateway.
    pub servers: Vec<String>,
    /// What the persona reported with Leopold's own tools, and the `[expect]` pages reached.
    pub verdict: crate::verdict::Seen,
}

impl Shared {
    /// Whether `tool` is one of the gateway's servers' tools.
    pub fn covers(&self, tool: &str) -> bool {
        self.servers.iter().any(|s| {
            tool.strip_prefix("mcp__")
                .and_then(|r| r.strip_prefix(s.as_str()))
                .is_some_and(|r| r.starts_with("__"))
        })
    }

    /// Takes the first unmatched denial of `tool`.
    pub fn take_denial(&mut self, tool: &str) -> Option<GatewayDenial> {
        let i = self.denials.iter().position(|d| d.tool == tool)?;
        self.denials.remove(i)
    }

    /// Notes the answer to the forwarded call the record numbered `seq`.
    pub fn answered(&mut self, seq: u64, answer: Answer) {
        // Answers come soon after their calls: search from the end.
        if let Some(f) = self.forwarded.iter_mut().rev().find(|f| f.seq == seq) {
            f.answer = Some(answer);
        }
    }

    /// The harness's stream against the gateway's record, call by call; empty when they agree.
    ///
    /// Each stream call takes the first gateway call not taken yet of the same tool with equal
    /// reduced arguments (calls of different tools, or with different arguments, may interleave
    /// differently in the two records: parallel calls reach the server in any order), preferring
    /// one whose answer agrees with the stream's. They disagree when:
    /// - the stream shows a call completed that no forwarded call matches (a forged line);
    /// - the stream shows a call completed that the server answered with an error, never
    ///   answered, or answered on another page's host than the stream shows;
    /// - the gateway forwarded a call that no stream call matches (a call hidden from the
    ///   stream, or shown with other arguments), or denied one the stream never showed.
    ///
    /// A call the stream shows failed or unanswered that the gateway never forwarded claims
    /// nothing the browser did (the harness refused it, or gave up on it), and a call the stream
    /// shows failed that the server answered is a harness's own timeout: neither disagrees.
    /// In order: the stream's calls, then the gateway's left over, then its denials.
    pub fn compare(&self, stream: &[StreamCall]) -> Vec<Disagreement> {
        use leopold_journal::Outcome;
        let agrees = |s: &StreamCall, a: Option<&Answer>| {
            s.outcome != Outcome::Completed
                || a.is_some_and(|a| {
                    !a.is_error && (s.page_host.is_none() || s.page_host == a.page_host)
                })
        };
        // The answer that says what the stream says: preferred among calls alike.
        let fits = |s: &StreamCall, a: Option<&Answer>| match (s.outcome, a) {
            (Outcome::Errored, Some(a)) => a.is_error,
            (Outcome::Unfinished, None) => true,
            (Outcome::Completed, a) => agrees(s, a),
            _ => false,
        };
        // A stream's tool name is the worker's text: shown only if it carries no URL.
        let shown = |t: &str| {
            leopold_guard::safe_text(t, 128).unwrap_or_else(|| "(a tool name holding a URL)".into())
        };
        let mut taken = vec![false; self.forwarded.len()];
        let mut out = Vec::new();
        for s in stream {
            let candidates: Vec<usize> = (0..self.forwarded.len())
                .filter(|&i| {
                    let f = &self.forwarded[i];
                    !taken[i] && f.tool == s.tool && f.call == s.call
                })
                .collect();
            let Some(&first) = candidates.first() else {
                if s.outcome == Outcome::Completed {
                    out.push(Disagreement {
                        tool: shown(&s.tool),
                        journal_seq: Some(s.seq),
                        gateway_seq: None,
                        what: format!(
                            "the harness's stream shows a `{}` call completed (journal #{}) that the gateway never forwarded with those arguments",
                            shown(&s.tool),
                            s.seq
                        ),
                    });
                }
                continue;
            };
            let answer = |i: &&usize| self.forwarded[**i].answer.as_ref();
            let i = candidates
                .iter()
                .find(|i| fits(s, answer(i)))
                .or_else(|| candidates.iter().find(|i| agrees(s, answer(i))))
                .copied()
                .unwrap_or(first);
            taken[i] = true;
            let f = &self.forwarded[i];
            if agrees(s, f.answer.as_ref()) {
                continue;
            }
            let server_said = match &f.answer {
                None => "the server never answered it".to_owned(),
                Some(a) if a.is_error => "the server answered it with an error".to_owned(),
                Some(a) => format!(
                    "the server's answer was on {}",
                    a.page_host
                        .as_deref()
                        .map_or_else(|| "no page".to_owned(), |h| format!("host {h}"))
                ),
            };
            let stream_said = match &s.page_host {
                Some(h) if f.answer.as_ref().is_some_and(|a| !a.is_error) => {
                    format!("completed on host {h}")
                }
                _ => "completed".to_owned(),
            };
            out.push(Disagreement {
                tool: shown(&s.tool),
                journal_seq: Some(s.seq),
                gateway_seq: Some(f.seq),
                what: format!(
                    "the harness's stream shows the `{}` call (journal #{}, gateway #{}) {stream_said}; {server_said}",
                    shown(&s.tool),
                    s.seq,
                    f.seq
                ),
            });
        }
        for (f, _) in self.forwarded.iter().zip(&taken).filter(|(_, t)| !**t) {
            out.push(Disagreement {
                tool: shown(&f.tool),
                journal_seq: None,
                gateway_seq: Some(f.seq),
                what: format!(
                    "the gateway forwarded a `{}` call (gateway #{}) that the harness's stream does not show with those arguments",
                    shown(&f.tool),
                    f.seq
                ),
            });
        }
        for d in &self.denials {
            out.push(Disagreement {
                tool: shown(&d.tool),
                journal_seq: None,
                gateway_seq: None,
                what: format!(
                    "the gateway denied a `{}` call ({}) that the harness's stream never showed",
                    shown(&d.tool),
                    d.reason
                ),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_records_are_compared_call_by_call() {
        use leopold_journal::Outcome;
        let nav = |path: &str| json!({"url": {"leopold_url": {"scheme": "https", "host": "staging.example.com", "path": path}}});
        let fwd = |seq: u64, tool: &str, call: Value, answer: Option<(bool, &str)>| Forwarded {
            seq,
            tool: tool.into(),
            call,
            answer: answer.map(|(is_error, h)| Answer {
                is_error,
                page_host: Some(h.to_owned()),
            }),
        };
        let st =
            |seq: u64, tool: &str, call: Value, outcome: Outcome, host: Option<&str>| StreamCall {
                seq,
                tool: tool.into(),
                call,
                outcome,
                page_host: host.map(str::to_owned),
            };
        const NAV: &str = "mcp__browser__browser_navigate";
        const CLICK: &str = "mcp__browser__browser_click";
        let click = json!({"element": "Place order", "ref": "e5"});
        let mut sh = Shared {
            servers: vec!["browser".into()],
            ..Shared::default()
        };
        assert!(sh.covers("mcp__browser__browser_click"));
        assert!(!sh.covers("mcp__browserx__click"));
        assert!(!sh.covers("WebFetch"));
        sh.forwarded = vec![
            fwd(1, NAV, nav("/cart"), Some((false, "staging.example.com"))),
            fwd(2, NAV, nav("/cart"), Some((true, "staging.example.com"))),
            fwd(
                3,
                CLICK,
                click.clone(),
                Some((false, "staging.example.com")),
            ),
        ];
        // Honest, the tools interleaved otherwise and two alike calls paired by their answers; a call the harness refused itself (errored, never forwarded) claims nothing.
        let honest = [
            st(
                1,
                CLICK,
                click.clone(),
                Outcome::Completed,
                Some("staging.example.com"),
            ),
            st(2, NAV, nav("/cart"), Outcome::Errored, None),
            st(
                3,
                NAV,
                nav("/cart"),
                Outcome::Completed,
                Some("staging.example.com"),
            ),
            st(4, NAV, nav("/x"), Outcome::Errored, None),
        ];
        assert_eq!(sh.compare(&honest), []);
        // Forged: the same tools and counts, the click shown as a navigation to `/`.
        let forged = [
            st(1, NAV, nav("/cart"), Outcome::Completed, None),
            st(2, NAV, nav("/cart"), Outcome::Errored, None),
            st(3, NAV, nav("/"), Outcome::Completed, None),
        ];
        let got = sh.compare(&forged);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            (got[0].tool.as_str(), got[0].journal_seq, got[0].gateway_seq),
            (NAV, Some(3), None)
        );
        assert_eq!(got[0].to_string(), "the harness's stream shows a `mcp__browser__browser_navigate` call completed (journal #3) that the gateway never forwarded with those arguments");
        assert_eq!(
            (got[1].tool.as_str(), got[1].journal_seq, got[1].gateway_seq),
            (CLICK, None, Some(3))
        );
        assert!(got[1].what.contains("(gateway #3)") && !got[1].what.contains("://"));
        // Hidden: the click left out of the stream.
        let got = sh.compare(&honest[1..]);
        assert_eq!((got.len(), got[0].gateway_seq), (1, Some(3)), "{got:?}");
        // The result: an error answer, or another page, shown as a completion.
        let mut lied = honest.clone();
        lied[1].outcome = Outcome::Completed;
        let got = sh.compare(&lied);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].to_string(), "the harness's stream shows the `mcp__browser__browser_navigate` call (journal #3, gateway #2) completed; the server answered it with an error");
        let mut lied = honest.clone();
        lied[2].page_host = Some("evil.example".into());
        let got = sh.compare(&lied);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].what.ends_with("completed on host evil.example; the server's answer was on host staging.example.com"),
            "{got:?}"
        );
        // A completion the server never answered; a denial the stream never showed.
        sh.forwarded.push(fwd(4, NAV, nav("/a"), None));
        sh.denials.push_back(GatewayDenial {
            tool: NAV.into(),
            reason: "outside_allowlist".into(),
        });
        let mut more = honest.to_vec();
        more.push(st(5, NAV, nav("/a"), Outcome::Completed, None));
        let got = sh.compare(&more);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].what.ends_with("the server never answered it"),
            "{got:?}"
        );
        assert!(got[1].what.contains("never showed"), "{got:?}");
        // A forged tool name is the worker's text: one carrying a URL is not repeated.
        let got = sh.compare(&[st(
            9,
            "mcp__browser__https://evil.example/?t=1",
            json!({}),
            Outcome::Completed,
            None,
        )]);
        assert!(
            got[0].what.contains("`(a tool name holding a URL)`") && !got[0].what.contains("://"),
            "{got:?}"
        );
        let d = sh.take_denial(NAV).unwrap();
        assert_eq!(d.reason, "outside_allowlist");
        assert!(sh.take_denial(NAV).is_none());
    }
}
