//! Test knobs: the `__LEOPOLD_*` environment variables through which the test kit widens the box
//! (`__LEOPOLD_BOX_RW`, `__LEOPOLD_BOX_RO`, `__LEOPOLD_BOX_PASS_ENV`, `__LEOPOLD_BWRAP`), pauses the
//! lifecycle (`__LEOPOLD_PAUSE_AT`, `__LEOPOLD_PAUSE_MARKER`) or shortens its waits
//! (`__LEOPOLD_STOP_GRACE_MS`, `__LEOPOLD_VERSION_TIMEOUT_MS`, `__LEOPOLD_QUIET_NOTE_MS`).
//!
//! They are read here and nowhere else, and only in a build with the `test-knobs` feature
//! (`scripts/test.sh` builds the binary its suites drive with it). Any other build, the release
//! build above all, reads none of them: whatever its environment holds, the box is the box.
//! `__LEOPOLD_TIMINGS` is not one of them: it reports the run's own timings to a file the user
//! names and changes nothing the run does (the benchmarks read it from release builds).

use std::ffi::OsString;

/// Whether this build reads the test knobs.
pub const ENABLED: bool = cfg!(feature = "test-knobs");

/// The test knob `name`, in a build that reads them; `None` in any other.
pub fn var_os(name: &str) -> Option<OsString> {
    if ENABLED {
        std::env::var_os(name)
    } else {
        None
    }
}

/// [`var_os`] as UTF-8; a value that is not is unset.
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every `__LEOPOLD_*` name the supervisor declares, with the files that declare them.
    fn declared(dir: &Path, out: &mut Vec<(String, String, std::path::PathBuf)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                declared(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for l in text.lines() {
                    let l = l.trim();
                    let Some(rest) = l.strip_prefix("const ").or(l.strip_prefix("pub const "))
                    else {
                        continue;
                    };
                    let Some((name, value)) = rest.split_once(": &str = \"__LEOPOLD_") else {
                        continue;
                    };
                    let value = value.trim_end_matches("\";");
                    out.push((name.to_owned(), format!("__LEOPOLD_{value}"), p.clone()));
                }
            }
        }
    }

    /// Structural: every knob the supervisor declares is read through this module (so a build
    /// without the feature reads none), never with `std::env` directly; only `__LEOPOLD_TIMINGS`
    /// (a report, see the module's doc) is read as it is.
    #[test]
    fn every_knob_is_read_through_this_module() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut knobs = Vec::new();
        declared(&src, &mut knobs);
        let names: Vec<&str> = knobs.iter().map(|k| k.1.as_str()).collect();
        for want in [
            "__LEOPOLD_BOX_RW",
            "__LEOPOLD_BOX_RO",
            "__LEOPOLD_BOX_PASS_ENV",
            "__LEOPOLD_BWRAP",
            "__LEOPOLD_PAUSE_AT",
            "__LEOPOLD_STOP_GRACE_MS",
            "__LEOPOLD_VERSION_TIMEOUT_MS",
            "__LEOPOLD_QUIET_NOTE_MS",
        ] {
            assert!(names.contains(&want), "{want} not found: {names:?}");
        }
        for (name, value, file) in &knobs {
            let text = std::fs::read_to_string(file).unwrap();
            let direct = ["env::var(", "env::var_os("]
                .iter()
                .any(|f| text.contains(&format!("{f}{name})")));
            if value == "__LEOPOLD_TIMINGS" {
                continue;
            }
            assert!(
                !direct,
                "{} reads {value} with std::env: read it with crate::knobs",
                file.display()
            );
            assert!(
                text.contains("crate::knobs::var"),
                "{} declares {value} but never reads a knob through crate::knobs",
                file.display()
            );
        }
        // Nothing else reads a `__LEOPOLD_` name written out in a call.
        let mut stack = vec![src];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for f in ["env::var(\"__LEOPOLD", "env::var_os(\"__LEOPOLD"] {
                        let hits = text.matches(f).count();
                        // The wiring corpus's bless switch is a unit test's, never the binary's.
                        let allowed = usize::from(
                            p.ends_with("harness/tests.rs") && f.starts_with("env::var_os"),
                        );
                        assert!(hits <= allowed, "{} reads {f}…\" directly", p.display());
                    }
                }
            }
        }
    }
}
