//! The flow file: TOML front matter between two `+++` lines, then the persona's brief.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::builtin::BuiltinSet;
use crate::host::normalize_allowlist_entry;
use crate::{Flow, Irreversible};

/// A flow file that cannot be used. Each message names the file, the key and the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlowError {
    /// The file could not be read.
    #[error("cannot read flow file {}: {source}", path.display())]
    Read {
        /// The flow file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// No `+++` front matter.
    #[error("flow file {} has no front matter\n(hint: start the file with a line `+++`, the TOML keys, then another `+++` line; see docs/guide.md#flow-files)", path.display())]
    NoFrontMatter {
        /// The flow file.
        path: PathBuf,
    },
    /// The front matter is not valid TOML, or has an unknown key or a wrong type.
    #[error("flow file {} has invalid front matter: {message}\n(hint: {hint})", path.display())]
    Toml {
        /// The flow file.
        path: PathBuf,
        /// The TOML parser's message, with line and column.
        message: String,
        /// What to do.
        hint: String,
    },
    /// A key's value is not acceptable.
    #[error("flow file {}: key `{key}` {problem}\n(hint: {hint})", path.display())]
    Key {
        /// The flow file.
        path: PathBuf,
        /// The key at fault, e.g. `allowlist[2]`.
        key: String,
        /// What is wrong with its value.
        problem: String,
        /// What to do.
        hint: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: String,
    allowlist: Vec<String>,
    start_url: Option<String>,
    #[serde(default)]
    irreversible: RawIrreversible,
    browser: Option<String>,
    #[serde(default)]
    hosts: toml::Table,
    #[serde(default)]
    allow_tools: Vec<String>,
    max_denials_in_a_row: Option<i64>,
    max_repeats: Option<i64>,
    #[serde(default)]
    expect: RawExpect,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    reach: Vec<String>,
    fail_on: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawIrreversible {
    #[serde(default)]
    forbid: Vec<String>,
    #[serde(default)]
    click_labels: Vec<String>,
    #[serde(default)]
    url_paths: Vec<String>,
    #[serde(default)]
    tools: Vec<String>,
}

/// Splits `+++\n<toml>\n+++\n<brief>`; a UTF-8 BOM and CRLF line endings are accepted.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("+++\r\n")
        .or_else(|| text.strip_prefix("+++\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "+++" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

pub(crate) fn parse(text: &str, source: &Path) -> Result<Flow, FlowError> {
    let path = source.to_path_buf();
    let (front, brief) =
        split_front_matter(text).ok_or_else(|| FlowError::NoFrontMatter { path: path.clone() })?;
    let raw: RawFlow = toml::from_str(front).map_err(|e| FlowError::Toml {
        path: path.clone(),
        // Lines are counted from the line after the opening `+++`; say so by offsetting.
        message: toml_message_at_file_line(&e, front),
        hint: "the keys are `name`, `allowlist`, `start_url`, `browser`, `allow_tools`, \
               `max_denials_in_a_row`, `max_repeats`, the table \
               `[irreversible]` (`forbid`, `click_labels`, `url_paths`, `tools`), the table \
               `[expect]` (`reach`, `fail_on`) and the table `[hosts]`; see docs/guide.md#flow-files"
            .into(),
    })?;
    let key_err = |key: String, problem: String, hint: &str| FlowError::Key {
        path: path.clone(),
        key,
        problem,
        hint: hint.to_owned(),
    };

    let name = raw.name.trim().to_owned();
    if name.is_empty() || name.len() > 64 || name.chars().any(|c| c.is_control() || c == '"') {
        return Err(key_err(
            "name".into(),
            format!("is {:?}, not a usable flow name", raw.name),
            "a short name of 1 to 64 characters, without quotes or control characters, e.g. \"checkout\"",
        ));
    }

    if raw.allowlist.is_empty() {
        return Err(key_err(
            "allowlist".into(),
            "is empty: the persona could go nowhere".into(),
            "list the hosts the persona may visit, e.g. allowlist = [\"staging.example.com\"]",
        ));
    }
    let mut allowlist = Vec::with_capacity(raw.allowlist.len());
    for (i, entry) in raw.allowlist.iter().enumerate() {
        let norm = normalize_allowlist_entry(entry).map_err(|p| {
            key_err(
                format!("allowlist[{i}]"),
                format!("has the entry {entry:?}, which is not a bare host"),
                p.hint(),
            )
        })?;
        if !allowlist.contains(&norm) {
            allowlist.push(norm);
        }
    }

    let mut flow = Flow {
        name,
        allowlist,
        start_url: None,
        irreversible: Irreversible::default(),
        browser: None,
        hosts: Vec::new(),
        allow_tools: Vec::new(),
        max_denials_in_a_row: crate::DEFAULT_MAX_DENIALS_IN_A_ROW,
        max_repeats: crate::expect::DEFAULT_MAX_REPEATS,
        expect: crate::Expect::default(),
        brief: brief.to_owned(),
        source: path.clone(),
    };

    // A count within `range`, or an error naming the key, the range and what the count does.
    let count = |n: i64, key: &str, range: std::ops::RangeInclusive<u32>, does: &str| {
        u32::try_from(n)
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(|| {
                key_err(
                    key.into(),
                    format!(
                        "is {n}, not a count from {} to {}",
                        range.start(),
                        range.end()
                    ),
                    &format!("{does}; leave it out for the default, 5"),
                )
            })
    };
    for (given, slot, key, range, does) in [
        (
            raw.max_denials_in_a_row,
            &mut flow.max_denials_in_a_row,
            "max_denials_in_a_row",
            1..=10_000,
            "the number of denials in a row after which the run stops as `stuck`",
        ),
        (
            raw.max_repeats,
            &mut flow.max_repeats,
            "max_repeats",
            2..=10_000,
            "the number of times running the same allowed call on the same target stops the run as `looping`",
        ),
    ] {
        if let Some(n) = given {
            *slot = count(n, key, range, does)?;
        }
    }
    for (i, entry) in raw.expect.reach.iter().enumerate() {
        let reach = crate::expect::parse_reach(entry)
            .map_err(|(problem, hint)| key_err(format!("expect.reach[{i}]"), problem, hint))?;
        flow.expect.reach.push(reach);
    }
    if let Some(s) = &raw.expect.fail_on {
        flow.expect.fail_on = crate::Severity::from_name(s).ok_or_else(|| {
            key_err(
                "expect.fail_on".into(),
                format!("is {s:?}, not a severity"),
                "one of \"blocker\" (the default), \"major\", \"minor\" or \"note\": a reported finding this bad or worse fails the run",
            )
        })?;
    }

    if let Some(start) = raw.start_url {
        if !flow.judge_url(&start).is_inside() {
            return Err(key_err(
                "start_url".into(),
                "is not an http(s) URL on the flow's allowlist".into(),
                "start the persona on a page of an allowlisted host, or add its host to `allowlist`",
            ));
        }
        flow.start_url = Some(start);
    }

    let ir = raw.irreversible;
    for (i, set) in ir.forbid.iter().enumerate() {
        let parsed = BuiltinSet::from_name(set).ok_or_else(|| {
            key_err(
                format!("irreversible.forbid[{i}]"),
                format!("names the unknown rule set {set:?}"),
                "the built-in sets are \"payment\" and \"deletion\"",
            )
        })?;
        if !flow.irreversible.forbid.contains(&parsed) {
            flow.irreversible.forbid.push(parsed);
        }
    }
    // Each regex of a list key, checked now; an error names the key and the entry.
    let patterns = |list: &[String], key: &str, whole: bool, hint: &str| {
        list.iter()
            .enumerate()
            .map(|(i, pat)| {
                crate::Pattern::new(pat, whole).map_err(|e| {
                    key_err(
                        format!("{key}[{i}]"),
                        format!("is not a valid regex:\n{}", indented(&e)),
                        hint,
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    flow.irreversible.click_labels = patterns(
        &ir.click_labels,
        "irreversible.click_labels",
        false,
        "use Rust regex syntax (https://docs.rs/regex); `(?i)` makes it case-insensitive",
    )?;
    for (i, p) in ir.url_paths.iter().enumerate() {
        if !p.starts_with('/') || p.contains(['?', '#']) {
            return Err(key_err(
                format!("irreversible.url_paths[{i}]"),
                format!("is {p:?}, not a path prefix"),
                "a path prefix starts with `/` and has no query or fragment, e.g. \"/checkout/confirm\"",
            ));
        }
        flow.irreversible.url_paths.push(crate::normalize_path(p));
    }
    flow.irreversible.tools = patterns(
        &ir.tools,
        "irreversible.tools",
        true,
        "a tool-name regex matched against the whole name, e.g. \"mcp__stripe__.*\"",
    )?;

    if let Some(b) = &raw.browser {
        flow.browser = Some(crate::browser::BrowserKind::from_name(b).ok_or_else(|| {
            key_err(
                "browser".into(),
                format!("is {b:?}, not a browser Leopold provisions"),
                "the only provisioned browser is \"playwright\" (Playwright MCP with Chromium); \
                 leave the key out to bring your own with `--mcp-config`",
            )
        })?);
    }
    for (host, to) in &raw.hosts {
        let key = format!("hosts.{host:?}");
        let to = to.as_str().ok_or_else(|| {
            key_err(
                key.clone(),
                "is not a string".into(),
                "map a host to an address and port, e.g. \"staging.example.com\" = \"127.0.0.1:8080\"",
            )
        })?;
        let mapping = crate::browser::HostMapping::new(host, to)
            .map_err(|(problem, hint)| key_err(key.clone(), problem, hint))?;
        if !flow.host_str_allowed(&mapping.host) {
            return Err(key_err(
                key,
                "maps a host that is not on the flow's allowlist".into(),
                "only allowlisted hosts can be mapped; add the host to `allowlist` or drop the mapping",
            ));
        }
        flow.hosts.push(mapping);
    }
    for (i, tool) in raw.allow_tools.iter().enumerate() {
        let opt_in = crate::catalogue::find(tool).is_some_and(|t| {
            t.offer == crate::catalogue::Offer::OptIn && tool.starts_with("browser_")
        });
        if !opt_in {
            return Err(key_err(
                format!("allow_tools[{i}]"),
                format!("is {tool:?}, not a browser tool Leopold turns off"),
                &format!(
                    "name a Playwright MCP tool among: {}",
                    crate::catalogue::opt_in_names()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if !flow.allow_tools.contains(tool) {
            flow.allow_tools.push(tool.clone());
        }
    }
    Ok(flow)
}

/// The regex crate's message as it is, indented: it spans several lines, with a caret under the
/// offending character that only lines up if the lines stay whole.
fn indented(s: &str) -> String {
    s.trim_end()
        .lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The toml error's position counts from the front matter's first byte; report it as the file's
/// line and column (the opening `+++` is line 1).
fn toml_message_at_file_line(e: &toml::de::Error, front: &str) -> String {
    let msg = one_line(e.message());
    match e.span() {
        Some(span) => {
            let before = &front[..span.start.min(front.len())];
            let line = before.matches('\n').count() + 2;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {col}: {msg}")
        }
        None => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, Path::new("flows/x.md"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn full_example_parses() {
        let f = parse(
            "+++\r\nname = \"checkout\"\r\nallowlist = [\"staging.example.com\", \"accounts.example.com\"]\r\n\
             start_url = \"https://staging.example.com/\"\r\n[irreversible]\r\nforbid = [\"payment\", \"deletion\"]\r\n\
             click_labels = [\"(?i)place order\"]\r\nurl_paths = [\"/checkout/confirm\"]\r\ntools = [\"mcp__stripe__.*\"]\r\n+++\r\n# Brief\r\n",
            Path::new("f.md"),
        )
        .unwrap();
        assert_eq!(f.name, "checkout");
        assert_eq!(f.allowlist.len(), 2);
        assert_eq!(f.irreversible.forbid.len(), 2);
        assert_eq!(f.brief, "# Brief\r\n");
    }

    #[test]
    fn errors_name_file_key_and_fix() {
        let e = err("+++\nname=\"c\"\nallowlist=[]\n+++\n");
        assert!(
            e.contains("flows/x.md") && e.contains("`allowlist`") && e.contains("hint"),
            "{e}"
        );
        let e = err("+++\nname=\"c\"\nallowlist=[\"a.example\", \"https://b.example\"]\n+++\n");
        assert!(e.contains("allowlist[1]") && e.contains("scheme"), "{e}");
        let e = err("+++\nname=\"c\"\nallowlist=[\"a.example:8080\"]\n+++\n");
        assert!(e.contains("port"), "{e}");
        let e = err("+++\nname=\"c\"\nallowlist=[\"*.a.example\"]\n+++\n");
        assert!(e.contains("wildcard"), "{e}");
        let e = err("+++\nname=\"c\"\nallowlist=[\"a.example/x\"]\n+++\n");
        assert!(e.contains("path"), "{e}");
        let e = err("+++\nname=\"c\"\nallowlist=[\"a.example\"]\ncolour=1\n+++\n");
        assert!(e.contains("colour"), "{e}");
        let e = err("+++\nname=\"c\"\nallowlist=[\"a.example\"]\n[irreversible]\nclick_labels=[\"(\"]\n+++\n");
        assert!(
            e.contains("irreversible.click_labels[0]") && e.contains("regex"),
            "{e}"
        );
        let e = err("+++\nname=\"c\"\nallowlist=[\"a.example\"]\n[irreversible]\nforbid=[\"refunds\"]\n+++\n");
        assert!(
            e.contains("irreversible.forbid[0]") && e.contains("payment"),
            "{e}"
        );
        let e = err("name=\"c\"\n");
        assert!(e.contains("front matter"), "{e}");
        let e = err(
            "+++\nname=\"c\"\nallowlist=[\"a.example\"]\nstart_url=\"https://b.example/\"\n+++\n",
        );
        assert!(e.contains("start_url"), "{e}");
        let e = err(
            "+++\nname=\"c\"\nallowlist=[\"a.example\"]\n[expect]\nreach=[\"/a\", \"cart\"]\n+++\n",
        );
        assert!(e.contains("expect.reach[1]") && e.contains("regex:"), "{e}");
        let e =
            err("+++\nname=\"c\"\nallowlist=[\"a.example\"]\n[expect]\nreach=[\"regex:(\"]\n+++\n");
        assert!(e.contains("expect.reach[0]") && e.contains("regex"), "{e}");
        let e = err(
            "+++\nname=\"c\"\nallowlist=[\"a.example\"]\n[expect]\nfail_on=\"critical\"\n+++\n",
        );
        assert!(e.contains("expect.fail_on") && e.contains("blocker"), "{e}");
        let e = err("+++\nname=\"c\"\nallowlist=[\"a.example\"]\nmax_repeats=1\n+++\n");
        assert!(e.contains("max_repeats") && e.contains("looping"), "{e}");
    }

    #[test]
    fn max_denials_in_a_row_defaults_to_5_and_refuses_what_is_not_a_count() {
        let ok = |front: &str| Flow::parse(front, Path::new("t.md")).unwrap();
        let f = ok("+++\nname=\"c\"\nallowlist=[\"a.example\"]\n+++\n");
        assert_eq!(f.max_denials_in_a_row, crate::DEFAULT_MAX_DENIALS_IN_A_ROW);
        let f = ok("+++\nname=\"c\"\nallowlist=[\"a.example\"]\nmax_denials_in_a_row=2\n+++\n");
        assert_eq!(f.max_denials_in_a_row, 2);
        for bad in ["0", "-1", "10001", "\"5\""] {
            let e = Flow::parse(
                &format!(
                    "+++\nname=\"c\"\nallowlist=[\"a.example\"]\nmax_denials_in_a_row={bad}\n+++\n"
                ),
                Path::new("t.md"),
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("max_denials_in_a_row") && e.contains("t.md"),
                "{bad}: {e}"
            );
        }
    }
}
