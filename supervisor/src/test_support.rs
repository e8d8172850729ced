//! What the supervisor's unit tests share.

use std::path::PathBuf;

/// A fresh temporary directory and the path `rel` in it, nothing made there yet: the one file or
/// folder a test is about, in a place of its own. The directory goes when it is dropped.
pub fn temp_path(rel: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join(rel);
    (dir, path)
}

/// A flow named `checkout` allowing `staging.example.com` only, its path `flows/checkout.md`
/// (nothing is read from there), with the front-matter lines `extra` (`""` for none) after its
/// name and allowlist.
pub fn checkout_flow(extra: &str) -> leopold_flows::Flow {
    leopold_flows::Flow::parse(
        &format!(
            "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n{extra}\n+++\nBrief.\n"
        ),
        std::path::Path::new("flows/checkout.md"),
    )
    .expect("the checkout flow parses")
}
