//! Leopold's own tools, offered beside the browser's and answered here, never by a server
//! (docs/reference.md#the-verdict): `report_finding`, one problem with the app as data, and
//! `finish`, whether the persona reached the goal. Each call is in the gateway's record, hash
//! chained, the moment it is made, so a run stopped for any reason keeps what was reported.

use leopold_guard::{Denial, Reason};
use serde_json::{json, Map, Value};

use crate::verdict::{Finish, Reported, Seen, MAX_REPORTED};

pub const REPORT_FINDING: &str = "report_finding";
pub const FINISH: &str = "finish";

/// Longest title and detail kept, in characters.
const MAX_TITLE: usize = 200;
const MAX_DETAIL: usize = 4000;

/// Whether `tool` (a server's own name for it) is one of Leopold's.
pub fn is_own(tool: &str) -> bool {
    tool == REPORT_FINDING || tool == FINISH
}

/// The tools' definitions, added to the `tools/list` of the server that hosts them.
pub fn definitions() -> [Value; 2] {
    let severities: Vec<&str> = leopold_flows::Severity::ALL
        .iter()
        .rev()
        .map(|s| s.as_str())
        .collect();
    [
        json!({
            "name": REPORT_FINDING,
            "description": "Leopold: report one problem you found with the app, the moment you find it. \
                blocker: the user cannot get through; major: only with trouble or a workaround; \
                minor: wrong, but the user gets through; note: worth knowing. \
                One call per problem; it is recorded even if the run is stopped later.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "severity": {"type": "string", "enum": severities},
                    "title": {"type": "string", "description": "One line: what is wrong."},
                    "detail": {"type": "string", "description": "What you did, what you expected, what happened."},
                    "step": {"type": "integer", "minimum": 1, "description": "Optional: the number of the step it concerns, if you know it."}
                },
                "required": ["severity", "title"],
                "additionalProperties": false
            }
        }),
        json!({
            "name": FINISH,
            "description": "Leopold: call once at the end, saying whether you reached the goal of your brief, then give your final report.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "goal_reached": {"type": "boolean"},
                    "summary": {"type": "string", "description": "One or two sentences: how far you got and why."}
                },
                "required": ["goal_reached", "summary"],
                "additionalProperties": false
            }
        }),
    ]
}

/// A call of one of the tools, judged: what it says, or why it is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Finding {
        severity: leopold_flows::Severity,
        title: String,
        detail: String,
        step: Option<u64>,
    },
    Finish {
        goal_reached: bool,
        summary: String,
    },
}

/// Reads `arguments` of `tool`; a refusal names the argument at fault.
pub fn judge(tool: &str, arguments: &Value) -> Result<Call, Denial> {
    let bad = |what: String| Denial::new(Reason::GatewayUnjudgeable).with_detail(what);
    let Some(args) = arguments.as_object() else {
        return Err(bad("the arguments are not an object".into()));
    };
    let allowed: &[&str] = if tool == FINISH {
        &["goal_reached", "summary"]
    } else {
        &["severity", "title", "detail", "step"]
    };
    if let Some(k) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        let k = leopold_guard::safe_text(k, 40).unwrap_or_default();
        return Err(bad(format!(
            "`{tool}` takes {}, not `{k}`",
            allowed.join(", ")
        )));
    }
    let text =
        |args: &Map<String, Value>, key: &str, max: usize, required: bool| match args.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(clean(s, max)),
            None if !required => Ok(String::new()),
            _ => Err(bad(format!("`{key}` must be a non-empty string"))),
        };
    if tool == FINISH {
        let Some(goal_reached) = args.get("goal_reached").and_then(Value::as_bool) else {
            return Err(bad("`goal_reached` must be true or false".into()));
        };
        return Ok(Call::Finish {
            goal_reached,
            summary: text(args, "summary", MAX_DETAIL, true)?,
        });
    }
    let severity = args
        .get("severity")
        .and_then(Value::as_str)
        .and_then(leopold_flows::Severity::from_name)
        .ok_or_else(|| bad("`severity` must be blocker, major, minor or note".into()))?;
    let step = match args.get("step") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("`step` must be a step number".into()))?,
        ),
    };
    Ok(Call::Finding {
        severity,
        // A title is one line wherever it is shown (a table row, an annotation).
        title: text(args, "title", MAX_TITLE, true)?.replace(['\n', '\t'], " "),
        detail: text(args, "detail", MAX_DETAIL, false)?,
        step,
    })
}

/// The model's text as Leopold keeps it: URLs reduced to their hosts, control characters but
/// line breaks and tabs dropped, at most `max` characters.
fn clean(s: &str, max: usize) -> String {
    let s = crate::redact::strip_urls(s.trim());
    let mut out: String = s
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .take(max)
        .collect();
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

/// Notes a judged call, recorded as record line `seq`: the record's line for it, and the text
/// the persona is answered with (an error when no more findings are kept).
pub fn take(seen: &mut Seen, call: Call, seq: u64) -> (Value, Result<String, String>) {
    match call {
        Call::Finding {
            severity,
            title,
            detail,
            step,
        } => {
            let line = json!({"event": "finding", "seq": seq, "severity": severity.as_str(),
                "title": title, "detail": detail, "step": step});
            if seen.reported.len() >= MAX_REPORTED {
                seen.not_kept += 1;
                return (
                    line,
                    Err(format!(
                        "Leopold keeps {MAX_REPORTED} findings a run; this one is counted, not kept. Put what matters most in your final report."
                    )),
                );
            }
            let n = seen.reported.len() + 1;
            let answer = format!("Leopold recorded finding {n} ({severity}): {title}");
            seen.reported.push(Reported {
                seq,
                severity: severity.as_str().to_owned(),
                title,
                detail,
                step,
                at: leopold_journal::now_rfc3339(),
            });
            (line, Ok(answer))
        }
        Call::Finish {
            goal_reached,
            summary,
        } => {
            let line = json!({"event": "finish", "seq": seq, "goal_reached": goal_reached,
                "summary": summary});
            seen.finish = Some(Finish {
                seq,
                goal_reached,
                summary,
            });
            let said = if goal_reached {
                "reached"
            } else {
                "not reached"
            };
            (
                line,
                Ok(format!(
                    "Leopold recorded: goal {said}. Now end with your final report; make no more browser calls."
                )),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_read_cleaned_and_kept() {
        let call = judge(
            REPORT_FINDING,
            &json!({"severity": "major", "title": "Total wrong on https://u:p@shop.example/cart?token=s3cret",
                    "detail": "line 1\nline 2\u{7}", "step": 4}),
        )
        .unwrap();
        let mut seen = Seen::default();
        let (line, answer) = take(&mut seen, call, 7);
        assert_eq!(
            answer.unwrap(),
            "Leopold recorded finding 1 (major): Total wrong on <shop.example>"
        );
        assert_eq!(seen.reported[0].title, "Total wrong on <shop.example>");
        assert_eq!(seen.reported[0].detail, "line 1\nline 2");
        assert_eq!(seen.reported[0].step, Some(4));
        assert_eq!(line["seq"], 7);
        assert!(!line.to_string().contains("s3cret"));
    }

    #[test]
    fn a_call_that_is_not_as_the_schema_says_is_refused_naming_the_argument() {
        for (tool, args, needle) in [
            (
                REPORT_FINDING,
                json!({"severity": "critical", "title": "x"}),
                "severity",
            ),
            (REPORT_FINDING, json!({"severity": "minor"}), "title"),
            (
                REPORT_FINDING,
                json!({"severity": "minor", "title": " "}),
                "title",
            ),
            (
                REPORT_FINDING,
                json!({"severity": "minor", "title": "x", "url": "y"}),
                "url",
            ),
            (
                REPORT_FINDING,
                json!({"severity": "minor", "title": "x", "step": -1}),
                "step",
            ),
            (FINISH, json!({"summary": "done"}), "goal_reached"),
            (
                FINISH,
                json!({"goal_reached": "yes", "summary": "done"}),
                "goal_reached",
            ),
            (FINISH, json!([]), "object"),
        ] {
            let d = judge(tool, &args).unwrap_err();
            assert!(
                d.detail.as_deref().unwrap_or("").contains(needle),
                "{tool} {args}: {d:?}"
            );
        }
    }

    #[test]
    fn past_the_most_kept_a_finding_is_counted_and_answered_with_an_error() {
        let mut seen = Seen::default();
        for i in 0..MAX_REPORTED as u64 + 2 {
            let call = judge(REPORT_FINDING, &json!({"severity": "note", "title": "n"})).unwrap();
            let (_, answer) = take(&mut seen, call, i);
            assert_eq!(answer.is_ok(), i < MAX_REPORTED as u64);
        }
        assert_eq!((seen.reported.len(), seen.not_kept), (MAX_REPORTED, 2));
        let call = judge(FINISH, &json!({"goal_reached": false, "summary": "stuck"})).unwrap();
        assert!(take(&mut seen, call, 99).1.is_ok());
        assert_eq!(seen.finish.as_ref().map(|f| f.goal_reached), Some(false));
    }
}
