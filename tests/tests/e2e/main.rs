//! End-to-end suites: the real Claude Code and Codex CLIs (pinned, installed by
//! `scripts/install-clis.sh`), driven hermetically by the scripted model and the stub browser.
//!
//! Each test runs one harness in its own sandbox and its own ports, so they can run in any order
//! or in parallel; `.config/nextest.toml` still runs them one at a time (2 cores).
//!
//! - `action`: issue #25: the GitHub Action's and the Kubernetes Job's steps (`scripts/action.sh`)
//!   with the inputs action.yml passes; actionlint on action.yml and the example workflow.
//! - `guard_wired`: the guard wired straight into the harness's settings/config (no supervisor),
//!   proving the hook level on both harnesses.
//! - `browser`: `persona run --browser playwright` in real Chromium against the staging app.
//! - `catalogue`: the browser tool catalogue against the real Playwright MCP's `tools/list`.
//! - `demo`: the README demo over both CLIs.
//! - `persona_run`: the scenarios through `leopold persona run`.
//! - `contained`: issue #12 "Prove it": a persona trying every way out of the box, on both CLIs.
//! - `contained_browser`: the same adversary with the real provisioned browser in the run:
//!   nothing gets out, no byte changes, no browser process outlives the run or a SIGKILL.
//! - `evidence`: issue #24: the gateway's screenshot after every page-changing step and the
//!   run's trace.zip, linked from report.html (rendered at 1280 px), never seen by the model.
//! - `harness_facts`: the fail-open and settings-skipping behaviours the design rests on.
//! - `model_key`: issue #22: the model key stays outside the box; the relay fills it in.
//! - `model_fail`: issue #24: a 401 from the model stops the run within 10 s as model_failed.
//! - `only_browser`: the worker is offered the browser tools and nothing else (issue #12).
//! - `requests`: issue #22: every gesture and page script that places an order, refused as a
//!   request by the browser's proxy; https staging; WebRTC's UDP kept in the browser's box.
//! - `report`: a screenshot in real Chromium lands, embedded, in the run's report.html.
//! - `suite`: issue #25: four flows × both CLIs side by side, attempts and flaky, shards merged,
//!   a suite SIGKILLed and recovered.
//! - `two_projects`: two Codex runs in two projects sharing one user `CODEX_HOME` (issue #12).

/// A test per harness, each calling one scenario with its harness (then the scenario's other
/// arguments, if it takes any): `scenario => claude_test, codex_test;` or `scenario(arg, ...) =>
/// claude_test, codex_test;`, the names as the tests are listed.
macro_rules! per_harness {
    ($($scenario:ident $(($($arg:expr),*))? => $claude:ident, $codex:ident;)*) => {$(
        #[test]
        fn $claude() {
            $scenario(leopold_tests::Harness::Claude $($(, $arg)*)?);
        }

        #[test]
        fn $codex() {
            $scenario(leopold_tests::Harness::Codex $($(, $arg)*)?);
        }
    )*};
}

/// Each scenario `fn(Harness)` as a module of two tests, `<scenario>::claude` and
/// `<scenario>::codex`.
macro_rules! both_harnesses {
    ($($name:ident;)*) => {$(
        mod $name {
            #[test]
            fn claude() {
                super::$name(leopold_tests::Harness::Claude);
            }
            #[test]
            fn codex() {
                super::$name(leopold_tests::Harness::Codex);
            }
        }
    )*};
}

mod action;
mod browser;
mod catalogue;
mod contained;
mod contained_browser;
mod demo;
mod evidence;
mod fixtures;
mod guard_wired;
mod harness_facts;
mod model_fail;
mod model_key;
mod only_browser;
mod persona_run;
mod report;
mod requests;
mod suite;
mod two_projects;
mod upload;
mod verdict;
