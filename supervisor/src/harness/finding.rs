//! A finding of `leopold doctor`: the shape every check, the wings' included, reports in.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Note,
    Problem,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `claude`, `codex`, `project`, or `leopold` (this binary itself).
    pub scope: &'static str,
    pub check: &'static str,
    pub status: Status,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

pub fn finding(
    scope: &'static str,
    check: &'static str,
    status: Status,
    message: String,
    fix: Option<String>,
) -> Finding {
    Finding {
        scope,
        check,
        status,
        message,
        fix,
    }
}
