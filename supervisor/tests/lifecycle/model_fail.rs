//! Failing fast on the model (issue #24, item 6): a boxed run whose endpoint refuses the key
//! (401), has no such model (404) or cannot be reached stops within 10 s as `model_failed`
//! (exit 3), its cause naming the endpoint's host and what to do, and nothing the harness said
//! then is saved as findings. A 429 or a 500 does not stop a run: harnesses retry them. The
//! witness of the timing is the clock around the whole `leopold` process, with a `--timeout`
//! far beyond it.

use std::io::{BufRead as _, Read as _, Write as _};
use std::time::{Duration, Instant};

use crate::kit::*;

/// A model endpoint on a free loopback port answering the `statuses` in turn (the last one
/// from then on), with an Anthropic-style error body.
fn endpoint(statuses: &[u16]) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let statuses = statuses.to_vec();
    std::thread::spawn(move || {
        for (n, conn) in l.incoming().flatten().enumerate() {
            let status = statuses[n.min(statuses.len() - 1)];
            std::thread::spawn(move || {
                let mut r = std::io::BufReader::new(&conn);
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0u8; len];
                let _ = r.read_exact(&mut body);
                let text = format!("{{\"type\":\"error\",\"error\":{{\"type\":\"status_{status}\",\"message\":\"scripted {status}\"}}}}");
                let mut w = &conn;
                let _ = write!(
                    w,
                    "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
            });
        }
    });
    port
}

/// A port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A model call through the box's relay, as a harness makes it: `POST <base>/v1/messages` with
/// the key the box holds; the status goes to the results.
fn ask_model(path: &str) -> String {
    format!(
        "@sh curl -s -o /dev/null -w '%{{http_code}}' -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'content-type: application/json' --data '{{\"model\":\"m\",\"messages\":[]}}' \"$ANTHROPIC_BASE_URL{path}\" > /dev/null\n"
    )
}

/// A sandbox whose worker makes a model call to each of `paths`, then follows `then`.
fn asking(paths: &[&str], then: &str) -> Sandbox {
    let calls: String = paths.iter().map(|p| ask_model(p)).collect();
    Sandbox::scripted(&format!("{calls}{then}"))
}

/// What a Claude run's result line says, as the real CLI prints it.
fn claude_result(text: &str, is_error: bool) -> String {
    serde_json::json!({"type":"result","subtype":"success","is_error":is_error,"result":text})
        .to_string()
}

/// Runs the sandbox's flow under Claude against the endpoint on loopback `port`, with
/// `--timeout 60s`: the output and the time from the process's start to its exit.
fn run_against(sb: &Sandbox, port: u16) -> (std::process::Output, Duration) {
    let mut cmd = sb.run_cmd("claude", &["--timeout", "60s"]);
    cmd.env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-api03-THEWRONGKEY");
    let t = Instant::now();
    let out = cmd.output().unwrap();
    (out, t.elapsed())
}

/// The run stopped as `model_failed`, with exit 3, in well under its timeout, no findings.md,
/// and its reason holding each of `says`. Returns the reason.
fn assert_model_failed(
    sb: &Sandbox,
    out: &std::process::Output,
    took: Duration,
    says: &[&str],
) -> String {
    let err = stderr(out);
    assert_exit_code(out, 3);
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} to stop (a timeout would take 60 s)\n{err}"
    );
    let end = &sb.run_json()["end"];
    assert_eq!(end["outcome"], "model_failed", "{end}");
    let reason = end["reason"].as_str().unwrap_or_default().to_owned();
    for s in says {
        assert!(reason.contains(s), "{s:?} not in the reason: {reason}");
    }
    assert!(!reason.contains("http://"), "a host, never a URL: {reason}");
    assert!(!reason.contains("THEWRONGKEY"), "{reason}");
    assert!(!err.contains("THEWRONGKEY"), "{err}");
    assert!(
        !sb.run_dir().join("findings.md").exists(),
        "the harness's error is not findings"
    );
    assert!(!err.contains("leopold: findings"), "{err}");
    assert!(!sb.active().exists(), "the run was archived");
    reason
}

/// A 401: the credentials were refused. The harness's own words (its result) are in the
/// cause, never in findings; the hint names the key variable and `claude login`.
#[test]
fn a_401_stops_the_run_within_10s_naming_the_host_and_the_key() {
    let port = endpoint(&[401]);
    let sb = asking(
        &["/v1/messages"],
        &format!(
            "{}\n@sleep 60000\n",
            claude_result("Invalid API key · Please run /login", true)
        ),
    );
    let (out, took) = run_against(&sb, port);
    let reason = assert_model_failed(
        &sb,
        &out,
        took,
        &[
            &format!("127.0.0.1:{port}"),
            "401",
            "ANTHROPIC_API_KEY",
            "claude login",
            "Invalid API key · Please run /login",
        ],
    );
    // The harness's words come before the hint, which the warning shows on its own line.
    assert!(
        reason.find("Invalid API key") < reason.find("\n(hint: "),
        "{reason}"
    );
    assert_has(&stderr(&out), "hint: set ANTHROPIC_API_KEY");
    assert_has(
        &format!("{}{}", stdout(&out), stderr(&out)),
        "model_failed (exit 3)",
    );
}

/// A 404 on the model call: no such model. The hint names the model's variable.
#[test]
fn a_404_on_the_model_call_stops_the_run_as_no_such_model() {
    let port = endpoint(&[404]);
    a_model_call_fails_the_run(
        port,
        &[
            &format!("127.0.0.1:{port}"),
            "404",
            "no such model",
            "ANTHROPIC_MODEL",
        ],
    );
}

/// A worker that makes one model call to `port` and waits: the run ends `model_failed`, its
/// reason holding each of `needles`.
fn a_model_call_fails_the_run(port: u16, needles: &[&str]) {
    let sb = asking(&["/v1/messages"], "@sleep 60000\n");
    let (out, took) = run_against(&sb, port);
    assert_model_failed(&sb, &out, took, needles);
}

/// An endpoint that refuses connections (a closed port), never reached: the run stops at the
/// first failure, naming the host.
#[test]
fn an_endpoint_that_cannot_be_reached_stops_the_run() {
    let port = closed_port();
    a_model_call_fails_the_run(
        port,
        &[
            &format!("cannot reach the model endpoint 127.0.0.1:{port}"),
            "ANTHROPIC_BASE_URL",
        ],
    );
}

/// A 500 and a 429 are retried by harnesses: the run goes on, and its answer is findings.
#[test]
fn a_500_or_a_429_does_not_stop_the_run() {
    let port = endpoint(&[500, 429, 200]);
    let sb = asking(
        &["/v1/messages"; 3],
        &format!(
            "@sleep 2500\n{}\n@exit 0\n",
            claude_result("Walked the shop.", false)
        ),
    );
    let (out, _) = run_against(&sb, port);
    assert_exit_code(&out, 0);
    assert_eq!(sb.run_json()["end"]["outcome"], "clean");
    assert_eq!(
        std::fs::read_to_string(sb.run_dir().join("findings.md")).unwrap(),
        "Walked the shop."
    );
    // The worker's three calls got the endpoint's answers, in turn (the relay changed none).
    let codes: Vec<String> = sb
        .results_lines()
        .iter()
        .filter(|l| l["op"] == "sh")
        .map(|l| l["code"].to_string())
        .collect();
    assert_eq!(codes.len(), 3, "{:?}", sb.results_lines());
}

/// A 401 on a side request of the harness's (not a model call) is the harness's to handle:
/// the run goes on.
#[test]
fn a_401_on_a_side_request_does_not_stop_the_run() {
    let port = endpoint(&[401]);
    let sb = asking(
        &["/api/oauth/profile"],
        &format!("@sleep 2500\n{}\n@exit 0\n", claude_result("Done.", false)),
    );
    let (out, _) = run_against(&sb, port);
    assert_exit_code(&out, 0);
    assert_eq!(sb.run_json()["end"]["outcome"], "clean");
}

/// Claude with no key never asks the endpoint: it says "Not logged in" as its result and
/// exits 1. That is the model's failure, not the persona's findings, boxed or not.
#[test]
fn claude_not_logged_in_is_model_failed_not_findings() {
    for unboxed in [false, true] {
        let sb = if unboxed {
            Sandbox::unboxed()
        } else {
            Sandbox::with_user_files()
        };
        sb.set_script(&format!(
            "{}\n@exit 1\n",
            claude_result("Not logged in · Please run /login", true)
        ));
        let t = Instant::now();
        let out = sb
            .run_cmd("claude", &["--timeout", "60s"])
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        let took = t.elapsed();
        let reason = assert_model_failed(
            &sb,
            &out,
            took,
            &["Not logged in · Please run /login", "claude login"],
        );
        assert!(reason.starts_with("the harness gave up"), "{reason}");
        assert!(
            !stdout(&out).contains("leopold: findings")
                && !stdout(&out).contains("Not logged in ·\n"),
            "unboxed={unboxed}: {}",
            stdout(&out)
        );
    }
}

/// Codex through a provider whose `env_key` is `MOCK_API_KEY`: a 401 names that variable.
#[test]
fn codex_a_401_names_the_providers_env_key() {
    let port = endpoint(&[401]);
    let sb = Sandbox::with_user_files();
    std::fs::write(
        sb.codex_home.join("config.toml"),
        format!("model_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n"),
    )
    .unwrap();
    sb.set_script(&format!(
        "@sh curl -s -o /dev/null -H \"authorization: Bearer $MOCK_API_KEY\" --data '{{}}' http://127.0.0.1:{port}/v1/responses\n@sleep 60000\n"
    ));
    let t = Instant::now();
    let out = sb
        .run_cmd("codex", &["--timeout", "60s"])
        .env("MOCK_API_KEY", "sk-proj-THEWRONGKEY")
        .output()
        .unwrap();
    assert_model_failed(
        &sb,
        &out,
        t.elapsed(),
        &[
            &format!("127.0.0.1:{port}"),
            "401",
            "MOCK_API_KEY",
            "`mock`",
        ],
    );
}
