//! `persona run`'s suite flags (docs/reference.md#suites): how many runs at once, how many
//! attempts, which shard.

use std::num::NonZeroUsize;

use clap::Args;

use crate::partition::Partition;

#[derive(Debug, Clone, Args)]
pub struct SuiteArgs {
    /// Run up to N of the suite's runs at once, each in its own box with its own browser.
    /// Default: what the machine's cores and available memory allow (at most one a core, and a
    /// boxed real-browser run's peak memory each; the suite says what it picked). A
    /// `--no-contain` suite runs one at a time: it wires the project's own settings.
    #[arg(long, value_name = "N")]
    pub jobs: Option<NonZeroUsize>,
    /// Try a run that ends `failed`, `stuck`, `worker_failed` or `timed_out` again, up to K
    /// times in all. One that passes after failing is reported `flaky` (and counts as passed);
    /// a violation is never tried again.
    #[arg(long, value_name = "K", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub attempts: u32,
    /// Run only this shard of the suite's flow × harness list: `count:M/N` (every N-th pair
    /// from the M-th) or `hash:M/N` (the pairs whose `<flow name>/<harness>` hashes to M), as
    /// nextest does, so that N CI jobs together run each pair exactly once. Merge their runs
    /// folders with `persona report --merge`.
    #[arg(long, value_name = "KIND:M/N")]
    pub partition: Option<Partition>,
    /// Internal: the suite (`<id>:<attempt>`) that started this run, recorded in run.json.
    #[arg(long, value_name = "ID:ATTEMPT", hide = true, value_parser = parse_member)]
    pub suite_member: Option<(String, u32)>,
}

/// `--suite-member`: a suite id (letters, digits, `-`) and a 1-based attempt.
fn parse_member(s: &str) -> Result<(String, u32), String> {
    let bad = || format!("`{s}` is not `<suite id>:<attempt>`");
    let (id, attempt) = s.rsplit_once(':').ok_or_else(bad)?;
    let attempt: u32 = attempt.parse().map_err(|_| bad())?;
    if id.is_empty() || attempt == 0 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(bad());
    }
    Ok((id.to_owned(), attempt))
}

/// One `--harness-bin`: the executable for `harness`, or for any harness of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessBin {
    pub harness: Option<crate::harness::Harness>,
    pub path: std::path::PathBuf,
}

/// `--harness-bin [HARNESS=]PATH`.
pub fn parse_harness_bin(s: &str) -> Result<HarnessBin, String> {
    let named = s
        .split_once('=')
        .and_then(|(h, p)| Some((h.parse().ok()?, p)));
    let (harness, path) = match named {
        Some((h, p)) => (Some(h), p),
        None => (None, s),
    };
    if path.is_empty() {
        return Err(format!("`{s}` names no executable"));
    }
    Ok(HarnessBin {
        harness,
        path: path.into(),
    })
}

/// The executable `--harness-bin` gives `harness`: its own, else the one for every harness.
pub fn harness_bin(
    given: &[HarnessBin],
    harness: crate::harness::Harness,
) -> Option<&std::path::Path> {
    given
        .iter()
        .rev()
        .find(|b| b.harness == Some(harness))
        .or_else(|| given.iter().rev().find(|b| b.harness.is_none()))
        .map(|b| b.path.as_path())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harness;

    #[test]
    fn a_harness_bin_is_for_one_harness_or_for_every_one() {
        let given: Vec<HarnessBin> = ["/any", "claude=/opt/claude", "codex=/opt/codex"]
            .iter()
            .map(|s| parse_harness_bin(s).unwrap())
            .collect();
        let bin = |h| harness_bin(&given, h).map(|p| p.display().to_string());
        assert_eq!(bin(Harness::Claude).as_deref(), Some("/opt/claude"));
        assert_eq!(bin(Harness::Codex).as_deref(), Some("/opt/codex"));
        assert_eq!(
            harness_bin(&given[..1], Harness::Codex),
            Some(std::path::Path::new("/any"))
        );
        assert_eq!(harness_bin(&given[1..2], Harness::Codex), None);
        assert!(parse_harness_bin("codex=").is_err());
        assert_eq!(parse_member("suite-1-2:3"), Ok(("suite-1-2".into(), 3)));
        assert!(parse_member("x:0").is_err() && parse_member("a b:1").is_err());
    }
}
