//! Issue #25 item 5, a finished runs folder safe to upload (docs/reference.md#run-directory), on
//! both real CLIs through `leopold persona run --browser playwright`, boxed, with the real
//! Chromium against the staging shop: its `/account` page sets a session cookie and its script
//! sends a bearer token, and the app's log proves the browser held and sent both. Then every file
//! of the runs folder is read back:
//!
//! - none holds the cookie's value or the token, `trace.zip` included;
//! - no `Cookies` store (Chromium's SQLite file of cookies) is left, nor the browser's files or
//!   the box's scratch;
//! - no file holds `://` but these, which are exempt: `trace.zip` (Playwright's trace: the pages
//!   as they were, URLs and all, is the evidence `--evidence steps` asks for; its cookies and
//!   credential headers are taken out, which is tested above), the PNG screenshots (pixels), and
//!   `flow.md` (the copy of the flow file, the user's own from their repository, `start_url`
//!   and all).

use std::path::{Path, PathBuf};
use std::time::Duration;

use leopold_tests::staging::{call, nav, ShopRun, BEARER_TOKEN, SESSION_COOKIE};
use leopold_tests::{leopold_bin, Harness};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(100);

/// Every file under `dir`, links and all (none is followed).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn a_finished_runs_folder_holds_no_cookie_token_or_url(h: Harness) {
    let Some(mut s) = ShopRun::prepare(
        h,
        &leopold_bin(),
        false,
        |port| {
            format!(
                "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\n\
                 start_url = \"http://staging.example.com/account\"\n\
                 [hosts]\n\"staging.example.com\" = \"127.0.0.1:{port}\"\n+++\n\
                 Sign in, then look at the cart.\n"
            )
        },
        |_, _| {
            vec![
                nav("/account"),
                nav("/cart?from=account"),
                call("browser_take_screenshot", json!({"filename": "cart.png"})),
            ]
        },
        // The persona's last words, with a full URL.
        "Signed in, then saw the cart at http://staging.example.com/cart?from=account#top.",
    ) else {
        return;
    };
    let run = s.run(&[], TIMEOUT);
    assert_eq!(run.status.code(), Some(0), "{run}");

    // The witness: the browser was given the cookie and sent it back, and the page's script
    // sent the token.
    let reqs = s.app.requests();
    assert!(
        reqs.iter()
            .any(|r| r["path"] == "/cart" && r["cookie"] == true),
        "the browser never sent the session cookie: {reqs:?}"
    );
    assert!(
        reqs.iter().any(|r| r["bearer"] == true),
        "the page's script never sent the token: {reqs:?}"
    );

    let runs = s.sb.project.join(".leopold/persona/runs");
    let dir = s.sb.run_dir();
    assert!(!dir.join("browser").exists() && !dir.join("scratch").exists());
    // The persona's own screenshot is kept, and the trace was written.
    assert!(
        dir.join("screenshots/cart.png").is_file(),
        "{:?}",
        files(&runs)
    );
    let zip = std::fs::read(dir.join("trace.zip")).unwrap();
    assert!(contains(&zip, "/account"), "the trace holds the pages");
    assert!(
        contains(&zip, "<removed by Leopold>"),
        "nothing was taken out"
    );

    let mut urls = Vec::new();
    for f in files(&runs) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name.starts_with("Cookies"),
            "a cookie store: {}",
            f.display()
        );
        let bytes = std::fs::read(&f).unwrap();
        for secret in [SESSION_COOKIE, BEARER_TOKEN] {
            assert!(!contains(&bytes, secret), "{} holds {secret}", f.display());
        }
        let exempt = name == "trace.zip" || name == "flow.md" || name.ends_with(".png");
        if !exempt && contains(&bytes, "://") {
            urls.push(f.strip_prefix(&runs).unwrap().display().to_string());
        }
    }
    assert_eq!(urls, Vec::<String>::new(), "files holding a full URL");
}

both_harnesses! {
    a_finished_runs_folder_holds_no_cookie_token_or_url;
}
