//! The red-team corpus: every case of `redteam.toml` through the whole in-process guard
//! (`evaluate` + `report`) in a project directory of its own. Collects every failure, then panics
//! once, listing them all.

use std::collections::BTreeMap;
use std::path::Path;

use leopold_guard::{evaluate, report, Verdict, PREFIX};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    flows: BTreeMap<String, String>,
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    why: String,
    /// `allow`, or the reason id the call must be denied with.
    expect: String,
    /// The host the denial must name.
    host: Option<String>,
    #[serde(default = "default_tool")]
    tool: String,
    /// `tool_input` as JSON text.
    input: Option<String>,
    #[serde(default = "default_flow")]
    flow: String,
    /// The whole payload, raw (`{cwd}` is replaced by the JSON-quoted cwd).
    payload: Option<String>,
    /// Pads the payload with this many spaces.
    #[serde(default)]
    pad: usize,
    /// `absolute` (default), `relative` or `none`.
    cwd: Option<String>,
    /// ACTIVE.json, raw (`{flow_path}` is replaced by the flow file's relative path).
    active_json: Option<String>,
    /// The flow file's text, instead of `flows[flow]`.
    flow_text: Option<String>,
    /// State set-ups: `no_leopold`, `leopold_is_file`, `no_active`, `active_is_dir`,
    /// `no_flow_file`, `flow_is_dir`, `absolute_flow_path`.
    state: Option<String>,
}

fn default_tool() -> String {
    "mcp__browser__browser_navigate".into()
}
fn default_flow() -> String {
    "checkout".into()
}

const STANDARD_ACTIVE: &str = r#"{"version":1,"active":true,"run_id":"r1","flow":"{flow}","flow_path":"{flow_path}","harness":"claude","supervisor_pid":1,"started_at":"2026-01-01T00:00:00Z","wiring":[{"harness":"claude","file":".claude/settings.json","tag":"leopold-persona-guard"}]}"#;

fn run_case(corpus: &Corpus, case: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = tmp.path().join("proj");
    let sub = root.join("app/src");
    std::fs::create_dir_all(&sub).unwrap();
    let state = case.state.as_deref().unwrap_or("");
    let flow_rel = format!("flows/{}.md", case.flow);
    if state == "leopold_is_file" {
        std::fs::write(root.join(".leopold"), "").unwrap();
    } else if state != "no_leopold" {
        std::fs::create_dir_all(root.join(".leopold/persona")).unwrap();
        std::fs::create_dir_all(root.join("flows")).unwrap();
        let flow_text = match &case.flow_text {
            Some(t) => t.clone(),
            None => corpus
                .flows
                .get(&case.flow)
                .ok_or_else(|| format!("no flow {:?} in [flows]", case.flow))?
                .clone(),
        };
        match state {
            "no_flow_file" => {}
            "flow_is_dir" => std::fs::create_dir_all(root.join(&flow_rel)).unwrap(),
            _ => std::fs::write(root.join(&flow_rel), flow_text).unwrap(),
        }
        let flow_path = if state == "absolute_flow_path" {
            root.join(&flow_rel).display().to_string()
        } else {
            flow_rel.clone()
        };
        let active = case
            .active_json
            .as_deref()
            .unwrap_or(STANDARD_ACTIVE)
            .replace("{flow}", &case.flow)
            .replace("{flow_path}", &flow_path);
        match state {
            "no_active" => {}
            "active_is_dir" => {
                std::fs::create_dir_all(root.join(".leopold/persona/ACTIVE.json")).unwrap()
            }
            _ => std::fs::write(root.join(".leopold/persona/ACTIVE.json"), active).unwrap(),
        }
    }

    let cwd_json = match case.cwd.as_deref().unwrap_or("absolute") {
        "absolute" => serde_json::Value::String(sub.display().to_string()),
        "relative" => serde_json::Value::String("app/src".into()),
        "none" => serde_json::Value::Null,
        other => return Err(format!("bad cwd mode {other:?}")),
    };
    let mut payload = match &case.payload {
        Some(raw) => raw.replace("{cwd}", &cwd_json.to_string()),
        None => {
            let input: serde_json::Value =
                serde_json::from_str(case.input.as_deref().unwrap_or("{}"))
                    .map_err(|e| format!("input is not JSON: {e}"))?;
            let mut p = serde_json::json!({
                "session_id": "s1",
                "transcript_path": "/tmp/t.jsonl",
                "hook_event_name": "PreToolUse",
                "tool_name": case.tool,
                "tool_input": input,
                "tool_use_id": "toolu_01",
            });
            if !cwd_json.is_null() {
                p["cwd"] = cwd_json.clone();
            }
            p.to_string()
        }
    };
    payload.push_str(&" ".repeat(case.pad));

    // The fallback cwd (the process's own) is the project root: `cwd: none` and relative cwds
    // resolve against it, as they would for a hook run in the project.
    let eval = evaluate(payload.as_bytes(), Some(&root));
    let mut stderr = Vec::new();
    let code = report(&eval, &mut stderr);
    let stderr = String::from_utf8(stderr).map_err(|e| e.to_string())?;
    let events =
        std::fs::read_to_string(root.join(".leopold/persona/events.jsonl")).unwrap_or_default();

    let got = match &eval.verdict {
        Verdict::Allow => "allow".to_owned(),
        Verdict::Deny(d) => d.reason.id().to_owned(),
    };
    if got != case.expect {
        return Err(format!("expected {}, got {got}: {stderr}", case.expect));
    }
    if case.expect == "allow" {
        if code != 0 || !stderr.is_empty() || !events.is_empty() {
            return Err(format!(
                "allow must be silent exit 0; got {code} {stderr:?}"
            ));
        }
        return Ok(());
    }
    if code != 2 {
        return Err(format!("deny must exit 2, got {code}"));
    }
    if !stderr.starts_with(PREFIX) || stderr.lines().count() != 1 || !stderr.ends_with('\n') {
        return Err(format!("deny must print one prefixed line: {stderr:?}"));
    }
    if stderr.contains("://") || events.contains("://") {
        return Err(format!("a URL leaked: {stderr:?} {events:?}"));
    }
    if let Some(host) = &case.host {
        let Verdict::Deny(d) = &eval.verdict else {
            unreachable!()
        };
        if d.host.as_deref() != Some(host.as_str()) {
            return Err(format!("expected host {host:?}, got {:?}", d.host));
        }
        if !stderr.contains(&format!("host {host:?}")) {
            return Err(format!("stderr does not name host {host:?}: {stderr}"));
        }
    }
    // Every deny with a project root journals one line; without a root there is nowhere to.
    if eval.root.is_some() {
        let lines: Vec<&str> = events.lines().collect();
        if lines.len() != 1 {
            return Err(format!("expected one event line, got {events:?}"));
        }
        let ev: serde_json::Value = serde_json::from_str(lines[0]).map_err(|e| e.to_string())?;
        if ev["reason"] != case.expect.as_str() {
            return Err(format!("event reason mismatch: {ev}"));
        }
    }
    Ok(())
}

#[test]
fn redteam_corpus() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redteam.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let corpus: Corpus = toml::from_str(&text).unwrap();
    assert!(
        corpus.case.len() >= 150,
        "the corpus has {} cases",
        corpus.case.len()
    );
    let mut failures = Vec::new();
    for (i, case) in corpus.case.iter().enumerate() {
        assert!(!case.why.trim().is_empty(), "case {i} says no why");
        if case.expect != "allow" && leopold_guard::Reason::from_id(&case.expect).is_none() {
            failures.push(format!("case {i}: unknown expect {:?}", case.expect));
            continue;
        }
        if let Err(e) = run_case(&corpus, case) {
            failures.push(format!(
                "case {i} ({}; input {:?}): {e}",
                case.why,
                case.input
                    .as_deref()
                    .or(case.payload.as_deref())
                    .unwrap_or("")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} red-team cases failed:\n{}",
        failures.len(),
        corpus.case.len(),
        failures.join("\n")
    );
}
