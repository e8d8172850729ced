//! The suite as one JUnit file, shaped as nextest writes retries: `<testsuites>` with the
//! totals, one `<testsuite>` per flow (its name), one `<testcase>` per harness (name: the
//! harness; classname: the flow). A case's last attempt decides it; each earlier attempt that
//! was not clean is a `<flakyFailure>` (the case passed in the end) or a `<rerunFailure>` (it did
//! not), `…Error` for an attempt that never judged the app. The test case itself is the per-run
//! file's ([`crate::report::junit::write_testcase`]), so both say the same of a run; its
//! properties (run id, outcome, usage, …) sit inside it, as a flow's suite holds several runs.

use quick_xml::events::{BytesDecl, Event};
use quick_xml::Writer;

use super::{Case, Totals};
use crate::report::junit::{clean, write_testcase, CaseResult};
use crate::report::RunRecord;

/// Renders the suite's JUnit XML.
pub fn junit(cases: &[Case]) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    write(&mut w, cases).expect("writing XML to memory does not fail");
    let mut out = String::from_utf8(w.into_inner()).expect("quick-xml writes UTF-8 from str");
    out.push('\n');
    out
}

/// `tests`, `failures` and `errors` of some cases.
fn counts<'a>(cases: impl Iterator<Item = &'a Case>) -> [String; 3] {
    let (mut tests, mut failures, mut errors) = (0, 0, 0);
    for c in cases {
        tests += 1;
        match CaseResult::of(&c.last().outcome()) {
            CaseResult::Pass => {}
            CaseResult::Failure => failures += 1,
            CaseResult::Error => errors += 1,
        }
    }
    [tests, failures, errors].map(|n: u32| n.to_string())
}

fn secs(d: std::time::Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

fn write(w: &mut Writer<Vec<u8>>, cases: &[Case]) -> std::io::Result<()> {
    let [tests, failures, errors] = counts(cases.iter());
    let wall = Totals::of(cases).wall.map_or_else(|| "0".into(), secs);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attribute(("name", "leopold"))
        .with_attribute(("tests", tests.as_str()))
        .with_attribute(("failures", failures.as_str()))
        .with_attribute(("errors", errors.as_str()))
        .with_attribute(("time", wall.as_str()))
        .write_inner_content(|w| {
            let mut rest = cases;
            while let Some(first) = rest.first() {
                let n = rest.iter().take_while(|c| c.flow == first.flow).count();
                let (flow, others) = rest.split_at(n);
                testsuite(w, flow)?;
                rest = others;
            }
            Ok(())
        })?;
    Ok(())
}

/// One flow's `<testsuite>`: its cases, one per harness (`cases` share the flow). Its time is
/// every attempt's; a case's is its last attempt's, as nextest's.
fn testsuite(w: &mut Writer<Vec<u8>>, cases: &[Case]) -> std::io::Result<()> {
    let [tests, failures, errors] = counts(cases.iter());
    let runs = || cases.iter().flat_map(|c| &c.attempts);
    let time = secs(runs().filter_map(RunRecord::duration).sum());
    let started = runs().filter_map(RunRecord::started_at).min();
    let flow = clean(&cases[0].flow);
    let mut el = w
        .create_element("testsuite")
        .with_attribute(("name", flow.as_str()))
        .with_attribute(("tests", tests.as_str()))
        .with_attribute(("failures", failures.as_str()))
        .with_attribute(("errors", errors.as_str()))
        .with_attribute(("skipped", "0"))
        .with_attribute(("time", time.as_str()));
    if let Some(s) = started.map(|s| clean(&s)) {
        el = el.with_attribute(("timestamp", s.as_str()));
    }
    el.write_inner_content(|w| {
        for c in cases {
            let attempts: Vec<&RunRecord> = c.attempts.iter().collect();
            write_testcase(w, &clean(&c.harness), &flow, &attempts, true)?;
        }
        Ok(())
    })?;
    Ok(())
}
