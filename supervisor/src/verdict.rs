//! The verdict on the app (docs/reference.md#the-verdict): what the persona reported through
//! Leopold's own tools (`report_finding`, `finish`), which of the flow's `[expect]` pages the
//! browser reported being on, and from those, whether the app failed the flow. Pure: the gateway
//! gathers what it saw ([`Seen`]) and [`judge`] decides.

use leopold_flows::{Flow, Severity};
use serde::{Deserialize, Serialize};

/// Most findings a run keeps; past it `report_finding` answers with an error and the rest are
/// counted (the gateway record bounds the bytes as well, with `--max-records`).
pub const MAX_REPORTED: usize = 200;

/// One finding the persona reported with `report_finding`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Reported {
    /// The gateway record's line of the call.
    pub seq: u64,
    /// `blocker`, `major`, `minor` or `note`.
    pub severity: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// The step (a gateway record line) it concerns, when the persona named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// When it was reported (RFC 3339).
    pub at: String,
}

impl Reported {
    /// Whether this finding is at or above `fail_on` (one of an unknown severity never is).
    pub fn fails_at(&self, fail_on: Severity) -> bool {
        Severity::from_name(&self.severity).is_some_and(|s| s >= fail_on)
    }
}

/// The persona's `finish` call.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Finish {
    pub seq: u64,
    pub goal_reached: bool,
    pub summary: String,
}

/// One `reach` expectation and whether the browser reported being there.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// As the flow wrote it (`/cart`, `regex:…`).
    pub reach: String,
    pub met: bool,
    /// The gateway record's line of the first answer on a page meeting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

/// What the gateway saw of the verdict while the run went on.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub reported: Vec<Reported>,
    /// `report_finding` calls past [`MAX_REPORTED`].
    pub not_kept: u64,
    /// The last `finish` call.
    pub finish: Option<Finish>,
    /// For each `reach` entry of the flow, the record line of the first answer meeting it.
    pub reached: Vec<Option<u64>>,
}

impl Seen {
    /// Notes the entries a page at record line `seq` meets (the first meeting is kept), and
    /// returns them as the flow wrote them.
    pub fn reach(&mut self, flow: &Flow, seq: u64, page_url: &str) -> Vec<String> {
        let met = flow.reached(page_url);
        if met.is_empty() {
            return Vec::new();
        }
        met.into_iter()
            .map(|i| {
                self.met(flow, i, seq);
                flow.expect.reach[i].as_written()
            })
            .collect()
    }

    /// Notes that `reach` entry `i` of `flow` was met at record line `seq`, unless it was before.
    pub fn met(&mut self, flow: &Flow, i: usize, seq: u64) {
        self.reached.resize(flow.expect.reach.len(), None);
        self.reached[i].get_or_insert(seq);
    }
}

/// The verdict, in `run.json`'s `end.verdict` and `run_ended`. Every key is always there (an
/// empty list, `0`, `null`), so that a reader needs no default of its own.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// The flow's `fail_on`.
    pub fail_on: String,
    pub expectations: Vec<Expectation>,
    pub reported: Vec<Reported>,
    /// `report_finding` calls past [`MAX_REPORTED`].
    pub reported_not_kept: u64,
    pub finish: Option<Finish>,
    /// Why the app failed the flow, whatever else happened: each finding at or above
    /// `fail_on`, and `finish` with the goal not reached.
    pub failed_by: Vec<String>,
    /// Each expectation unmet: a failure of the app for a run the persona saw through.
    pub unmet: Vec<String>,
}

/// The verdict on what was seen, by the flow's `[expect]`.
pub fn judge(flow: &Flow, seen: Seen) -> Verdict {
    let expectations: Vec<Expectation> = flow
        .expect
        .reach
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let seq = seen.reached.get(i).copied().flatten();
            Expectation {
                reach: r.as_written(),
                met: seq.is_some(),
                seq,
            }
        })
        .collect();
    let mut failed_by: Vec<String> = seen
        .reported
        .iter()
        .filter(|f| f.fails_at(flow.expect.fail_on))
        .map(|f| format!("{} finding: {}", f.severity, f.title))
        .collect();
    if let Some(f) = seen.finish.as_ref().filter(|f| !f.goal_reached) {
        let summary = f.summary.lines().next().unwrap_or("").trim();
        failed_by.push(if summary.is_empty() {
            "the persona did not reach the goal".to_owned()
        } else {
            format!("the persona did not reach the goal: {summary}")
        });
    }
    let unmet = expectations
        .iter()
        .filter(|e| !e.met)
        .map(|e| format!("never reached {}", e.reach))
        .collect();
    Verdict {
        fail_on: flow.expect.fail_on.as_str().to_owned(),
        expectations,
        reported: seen.reported,
        reported_not_kept: seen.not_kept,
        finish: seen.finish,
        failed_by,
        unmet,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::checkout_flow;

    fn finding(seq: u64, severity: &str, title: &str) -> Reported {
        Reported {
            seq,
            severity: severity.into(),
            title: title.into(),
            detail: String::new(),
            step: None,
            at: "2026-12-03T00:00:00Z".into(),
        }
    }

    #[test]
    fn findings_at_or_above_fail_on_and_a_goal_not_reached_fail_the_app() {
        let f = checkout_flow("[expect]\nfail_on = \"major\"");
        let seen = Seen {
            reported: vec![
                finding(3, "minor", "typo"),
                finding(5, "major", "total is wrong"),
                finding(6, "blocker", "cannot pay"),
            ],
            finish: Some(Finish {
                seq: 9,
                goal_reached: false,
                summary: "stopped at payment\nmore".into(),
            }),
            ..Seen::default()
        };
        let v = judge(&f, seen);
        assert_eq!(
            v.failed_by,
            [
                "major finding: total is wrong",
                "blocker finding: cannot pay",
                "the persona did not reach the goal: stopped at payment"
            ]
        );
        assert!(v.unmet.is_empty());
        // The default, blocker: only the blocker fails it.
        let v = judge(
            &checkout_flow(""),
            Seen {
                reported: vec![finding(5, "major", "total is wrong")],
                ..Seen::default()
            },
        );
        assert!(v.failed_by.is_empty(), "{v:?}");
        assert_eq!(v.fail_on, "blocker");
    }

    #[test]
    fn an_expectation_is_met_by_the_first_page_on_it() {
        let f = checkout_flow("[expect]\nreach = [\"/cart\", \"/checkout/review\"]");
        let mut seen = Seen::default();
        seen.reach(&f, 4, "https://staging.example.com/cart");
        seen.reach(&f, 7, "https://staging.example.com/cart");
        seen.reach(&f, 8, "https://evil.example/checkout/review");
        let v = judge(&f, seen);
        assert_eq!(
            v.expectations,
            [
                Expectation {
                    reach: "/cart".into(),
                    met: true,
                    seq: Some(4)
                },
                Expectation {
                    reach: "/checkout/review".into(),
                    met: false,
                    seq: None
                }
            ]
        );
        assert_eq!(v.unmet, ["never reached /checkout/review"]);
    }
}
