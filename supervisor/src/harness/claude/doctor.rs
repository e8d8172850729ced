//! What `leopold doctor` says of Claude Code: whether a guard that cannot run denies
//! (`onFailure`, from its version), and whether each settings file it reads loads (a file it
//! skips loses its hooks; one wiring cannot parse refuses a `--no-contain` run).

use std::path::{Path, PathBuf};

use crate::harness::finding::{finding, Finding, Status};
use crate::harness::{parse_version, Context, Harness, CLAUDE_ON_FAILURE_SINCE};
use crate::project::shown;

/// Claude's own checks, `version` its `--version` line.
pub fn checks(ctx: &Context, project: &Path, version: Option<&str>) -> Vec<Finding> {
    let scope = "claude";
    let mut out = Vec::new();
    if let Some(v) = version.and_then(parse_version) {
        if v >= CLAUDE_ON_FAILURE_SINCE {
            out.push(finding(
                scope,
                "on_failure",
                Status::Ok,
                "onFailure \"block\" is honoured: a guard that cannot run denies".into(),
                None,
            ));
        } else {
            out.push(finding(
                    scope,
                    "on_failure",
                    Status::Problem,
                    format!("Claude Code {}.{}.{} ignores onFailure: a guard that cannot run (crash, timeout, not found) lets the call through; the supervisor's journal is then the only bound", v.0, v.1, v.2),
                    Some("upgrade Claude Code to 2.1.295 or later".into()),
                ));
        }
    }
    let mut files = vec![
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        files.push(PathBuf::from(home).join(".claude/settings.json"));
    }
    let wired_file = ctx.settings_path(Harness::Claude);
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let problems = settings_problems(&text);
        // The file a `--no-contain` run wires must also be one wiring can edit;
        // otherwise that run refuses to start
        // (docs/reference.md#what-you-can-count-on),
        // whatever --settings does. A boxed run leaves the file alone.
        let refused = if file == wired_file {
            crate::harness::check_wirable(Harness::Claude, ctx).err()
        } else {
            None
        };
        if let Some(why) = refused {
            out.push(finding(
                    scope,
                    "settings",
                    Status::Problem,
                    format!(
                        "{}: {}. Claude Code skips the whole file (silently under -p), and `persona run --harness claude --no-contain` refuses to start (exit 2, setup_failed): wiring never edits a file it cannot parse ({}); a boxed run neither reads nor edits it",
                        shown(&file),
                        if problems.is_empty() { "unexpected shape".to_owned() } else { problems.join("; ") },
                        why.to_string().lines().next().unwrap_or("")
                    ),
                    Some(format!("correct {}", shown(&file))),
                ));
        } else if problems.is_empty() {
            out.push(finding(
                scope,
                "settings",
                Status::Ok,
                format!("{} loads", shown(&file)),
                None,
            ));
        } else {
            out.push(finding(
                    scope,
                    "settings",
                    Status::Problem,
                    format!(
                        "{}: {}. Claude Code skips the whole file (silently under -p); `persona run` still passes the guard with --settings, but the file's other settings are lost",
                        shown(&file),
                        problems.join("; ")
                    ),
                    Some(format!("correct {}", shown(&file))),
                ));
        }
    }
    out
}

/// Claude's credentials: its key variables, then its login file (`~/.claude/.credentials.json`
/// with an access token). What is set, said by name only, and the key `--online` can try
/// (a login's token is not tried: it is an OAuth token for Claude's own client).
pub fn credentials() -> (Option<String>, Option<crate::harness::doctor::Key>) {
    let base = std::env::var("ANTHROPIC_BASE_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://api.anthropic.com".into());
    let set = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let version = ("anthropic-version", "2023-06-01".to_owned());
    let key = |name: &str, header: (&'static str, String)| {
        let key = crate::harness::doctor::Key {
            name: name.into(),
            base: base.clone(),
            models_path: "/v1/models".into(),
            headers: vec![header, version.clone()],
        };
        (Some(format!("{name} is set")), Some(key))
    };
    if let Some(v) = set("ANTHROPIC_API_KEY") {
        return key("ANTHROPIC_API_KEY", ("x-api-key", v));
    }
    if let Some(v) = set("ANTHROPIC_AUTH_TOKEN") {
        return key(
            "ANTHROPIC_AUTH_TOKEN",
            ("authorization", format!("Bearer {v}")),
        );
    }
    let file = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude/.credentials.json"));
    let logged_in = file.as_ref().is_some_and(|f| {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| {
                v.pointer("/claudeAiOauth/accessToken")
                    .and_then(|t| t.as_str())
                    .map(|t| !t.is_empty())
            })
            .unwrap_or(false)
    });
    match file {
        Some(f) if logged_in => (Some(format!("logged in ({})", shown(&f))), None),
        _ => (None, None),
    }
}

/// Known shapes that make Claude Code skip a settings file, or switch hooks off.
pub fn settings_problems(text: &str) -> Vec<String> {
    let doc: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return vec![format!("not valid JSON ({e})")],
    };
    let Some(obj) = doc.as_object() else {
        return vec!["the top level is not a JSON object".into()];
    };
    let mut out = super::settings::schema_problems(obj);
    if obj.get("disableAllHooks") == Some(&serde_json::Value::Bool(true)) {
        out.push("`disableAllHooks` is true: no hook runs, the guard included".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_settings_shapes_known_to_be_rejected_are_found() {
        assert!(settings_problems(r#"{"permissions":{"allow":["Bash"]}}"#).is_empty());
        assert!(!settings_problems(r#"{"permissions":{"allow":5}}"#).is_empty());
        assert!(!settings_problems(r#"{"hooks":{"PreToolUse":{}}}"#).is_empty());
        // The fields wiring warns about are doctor's problems too.
        assert!(!settings_problems(r#"{"model":5}"#).is_empty());
        assert!(!settings_problems(r#"{"env":{"A":1}}"#).is_empty());
        assert!(!settings_problems(r#"{"disableAllHooks":true}"#).is_empty());
        assert!(!settings_problems("{").is_empty());
        assert!(!settings_problems("[]").is_empty());
    }
}
