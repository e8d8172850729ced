//! Issue #24 item 4, evidence for every step, on both real CLIs through `leopold persona run
//! --browser playwright`, boxed, with the real Chromium against the staging shop: the gateway's
//! own screenshot after each call that can change the page, the run's Playwright trace as
//! `trace.zip`, both linked from report.html, none of it ever reaching the model; and
//! `--evidence none` leaving neither. The report is rendered in headless Chromium at 1280 px.

use std::path::Path;
use std::time::Duration;

use leopold_tests::staging::{call, dumped_dom, nav, require_browser, ShopRun};
use leopold_tests::{leopold_bin, read_jsonl, Harness, Run};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(100);

fn shop(h: Harness, extra: &[&str]) -> Option<(ShopRun, Run)> {
    let mut s = ShopRun::prepare(
        h,
        &leopold_bin(),
        false,
        |port| {
            format!(
                "+++\nname = \"shop\"\nallowlist = [\"staging.example.com\"]\n\
                 [hosts]\n\"staging.example.com\" = \"127.0.0.1:{port}\"\n+++\nLook around the shop.\n"
            )
        },
        // Two pages that differ, a read between them (no screenshot), the first page again.
        |_, _| {
            vec![
                nav("/"),
                call("browser_snapshot", json!({})),
                nav("/cart"),
                nav("/"),
            ]
        },
        // The persona's last words, with a URL the narration keeps as its host only.
        "Looked around https://staging.example.com/cart?t=s3cret and left.",
    )?;
    let run = s.run(extra, TIMEOUT);
    Some((s, run))
}

/// The names of a zip's entries, read from its central directory.
fn zip_names(z: &[u8]) -> Vec<(String, u32)> {
    assert!(z.len() >= 22 && z.starts_with(b"PK\x03\x04"), "not a zip");
    let eocd = (0..=z.len() - 22)
        .rev()
        .find(|&i| z[i..].starts_with(b"PK\x05\x06"))
        .expect("a zip's end record");
    let u16_at = |i: usize| u16::from_le_bytes([z[i], z[i + 1]]) as usize;
    let u32_at = |i: usize| u32::from_le_bytes([z[i], z[i + 1], z[i + 2], z[i + 3]]);
    let n = u16_at(eocd + 10);
    let mut at = u32_at(eocd + 16) as usize;
    let mut names = Vec::new();
    for _ in 0..n {
        assert!(
            z[at..].starts_with(b"PK\x01\x02"),
            "a central header at {at}"
        );
        let size = u32_at(at + 24);
        let (name_len, extra, comment) = (u16_at(at + 28), u16_at(at + 30), u16_at(at + 32));
        let local = u32_at(at + 42) as usize;
        assert!(
            z[local..].starts_with(b"PK\x03\x04"),
            "a local header at {local}"
        );
        names.push((
            String::from_utf8(z[at + 46..at + 46 + name_len].to_vec()).unwrap(),
            size,
        ));
        at += 46 + name_len + extra + comment;
    }
    names
}

/// The steps that hit a wall, from the gateway's record: an errored answer, or one after a
/// request the proxy refused (the answer that tells the persona of it).
fn walled(record: &[Value]) -> Vec<u64> {
    let mut walled = Vec::new();
    let mut refused_since = false;
    for l in record {
        match l["event"].as_str() {
            Some("request") if l["verdict"] == "denied" => refused_since = true,
            Some("result") => {
                if l["is_error"] == true || refused_since {
                    walled.push(l["seq"].as_u64().unwrap());
                }
                refused_since = false;
            }
            _ => {}
        }
    }
    walled
}

fn evidence_lines(dir: &Path) -> Vec<Value> {
    read_jsonl(&dir.join("gateway.jsonl"))
        .into_iter()
        .filter(|l| l["event"] == "evidence")
        .collect()
}

fn every_page_changing_step_leaves_a_screenshot_and_the_trace(h: Harness) {
    let Some((s, run)) = shop(h, &[]) else { return };
    assert_eq!(run.status.code(), Some(0), "{run}");
    let dir = s.sb.run_dir();
    let record = read_jsonl(&dir.join("gateway.jsonl"));
    // The steps that can change the page: the three navigations, by the gateway's own record.
    let navs: Vec<u64> = record
        .iter()
        .filter(|l| l["event"] == "call" && l["tool"] == "browser_navigate")
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(navs.len(), 3, "{record:?}");
    let shots: Vec<(u64, String)> = evidence_lines(&dir)
        .iter()
        .filter(|l| l["file"] != "trace.zip")
        .map(|l| {
            (
                l["seq"].as_u64().unwrap(),
                l["file"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{l}"))
                    .to_owned(),
            )
        })
        .collect();
    // And any other step that hit a wall (Chromium's own background requests, refused by the
    // allowlist, are told with whichever answer comes next: here, perhaps the snapshot's).
    let mut want: Vec<u64> = navs.iter().copied().chain(walled(&record)).collect();
    want.sort_unstable();
    want.dedup();
    assert_eq!(
        shots.iter().map(|s| s.0).collect::<Vec<_>>(),
        want,
        "{shots:?}"
    );
    let on_disk = std::fs::read_dir(dir.join("evidence")).unwrap().count();
    assert_eq!(on_disk, want.len());
    let pngs: Vec<Vec<u8>> = shots
        .iter()
        .filter(|(seq, _)| navs.contains(seq))
        .map(|(_, f)| std::fs::read(dir.join(f)).unwrap())
        .collect();
    for p in &pngs {
        assert!(p.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    }
    // The front page and the cart differ; so do their screenshots.
    assert_ne!(
        pngs[0], pngs[1],
        "the cart's screenshot is the front page's"
    );

    let zip = std::fs::read(dir.join("trace.zip")).unwrap();
    let names = zip_names(&zip);
    assert!(
        names
            .iter()
            .any(|(n, size)| n == "trace.trace" && *size > 0),
        "{names:?}"
    );
    assert!(names.iter().any(|(n, _)| n == "trace.network"), "{names:?}");
    let trace = String::from_utf8_lossy(&zip);
    assert!(
        trace.contains("\"type\":\"context-options\""),
        "no trace events"
    );

    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for (_, f) in &shots {
        assert!(
            report.contains(&format!("href=\"{f}\"")),
            "{f} is not linked"
        );
    }
    // The model never saw a screenshot the gateway took, nor a tracing call.
    let asked = serde_json::to_string(&s.model.requests()).unwrap();
    for never in ["leopold-evidence", "step-0", "tracing", "\"image\""] {
        assert!(!asked.contains(never), "the model saw {never}");
    }
    // Nor the harness: its stream, the journal, has the persona's calls only.
    let journal = read_jsonl(&dir.join("journal.jsonl"));
    assert!(journal.iter().all(|a| a["tool"]
        .as_str()
        .is_none_or(|t| !t.contains("screenshot") && !t.contains("tracing"))));

    // What the model wrote, kept apart from the journal, host-only, shown in the timeline.
    let said = std::fs::read_to_string(dir.join("narration.jsonl")).unwrap();
    assert!(
        said.contains("Looked around <staging.example.com> and left."),
        "{said}"
    );
    assert!(!said.contains("s3cret"), "{said}");
    assert!(!std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap()
        .contains("Looked around"));

    renders_at_1280(&dir, &shots);
}

/// report.html in headless Chromium at 1280 px: nothing overflows sideways, and each step's
/// screenshot and duration are in the rendered page.
fn renders_at_1280(dir: &Path, shots: &[(u64, String)]) {
    let Some((chromium, _)) = require_browser() else {
        return;
    };
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // A copy that measures itself: its policy allows no script, so the copy drops it.
    let csp_at = report
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let csp_end = csp_at + report[csp_at..].find('>').unwrap() + 1;
    let measured = format!("{}{}", &report[..csp_at], &report[csp_end..])
    .replace(
        "</body>",
        "<script>addEventListener('load',()=>{const r=document.createElement('p');r.id='measure';\
         r.textContent=document.documentElement.scrollWidth+' '+document.documentElement.clientWidth+' '+\
         [...document.querySelectorAll('img.shot')].filter(i=>i.naturalWidth>0&&i.getBoundingClientRect().right<=document.documentElement.clientWidth).length;\
         document.body.appendChild(r);});</script></body>",
    );
    let copy = dir.join("report-measure.html");
    std::fs::write(&copy, measured).unwrap();
    let dom = dumped_dom(&chromium, &copy);
    let _ = std::fs::remove_file(&copy);
    let m = dom
        .split("<p id=\"measure\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap_or_else(|| panic!("no measure in the DOM: {dom}"));
    let v: Vec<u32> = m.split(' ').map(|x| x.parse().unwrap()).collect();
    assert!(v[0] <= v[1], "report.html overflows at 1280 px: {m}");
    assert_eq!(
        v[2] as usize,
        shots.len(),
        "screenshots shown whole in the viewport: {m}"
    );
    assert!(
        dom.contains("took "),
        "no step duration in the rendered page"
    );
    assert!(
        dom.contains("Looked around &lt;staging.example.com&gt; and left."),
        "no narration in the rendered page"
    );
}

fn evidence_none_leaves_neither(h: Harness) {
    let Some((s, run)) = shop(h, &["--evidence", "none"]) else {
        return;
    };
    assert_eq!(run.status.code(), Some(0), "{run}");
    let dir = s.sb.run_dir();
    assert!(!dir.join("evidence").exists());
    assert!(!dir.join("trace.zip").exists());
    assert!(!dir.join("browser/output/traces").exists());
    assert_eq!(evidence_lines(&dir), Vec::<Value>::new());
    // The control: the same run did go through the pages.
    let paths: Vec<String> = s.app.seen().into_iter().map(|(_, p, _)| p).collect();
    assert!(paths.contains(&"/cart".to_owned()), "{paths:?}");
}

/// `walls`: a screenshot only after a step that hit a wall: in this walk, an answer that
/// carried the proxy's refusals (Chromium's own background requests, refused by the flow's
/// allowlist, are told with the next answer) or an error; every other step has none, and there is
/// no trace.
fn walls_screenshots_only_the_steps_that_hit_a_wall(h: Harness) {
    let Some((s, run)) = shop(h, &["--evidence", "walls"]) else {
        return;
    };
    assert_eq!(run.status.code(), Some(0), "{run}");
    let dir = s.sb.run_dir();
    let record = read_jsonl(&dir.join("gateway.jsonl"));
    let walled = walled(&record);
    let shot: Vec<u64> = evidence_lines(&dir)
        .iter()
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(shot, walled, "{record:#?}");
    let navs = record
        .iter()
        .filter(|l| l["event"] == "call" && l["tool"] == "browser_navigate")
        .count();
    assert!(shot.len() < navs, "every navigation walled? {record:#?}");
    assert!(!dir.join("trace.zip").exists());
    let paths: Vec<String> = s.app.seen().into_iter().map(|(_, p, _)| p).collect();
    assert!(paths.contains(&"/cart".to_owned()), "{paths:?}");
}

both_harnesses! {
    every_page_changing_step_leaves_a_screenshot_and_the_trace;
    evidence_none_leaves_neither;
    walls_screenshots_only_the_steps_that_hit_a_wall;
}
