use std::path::{Path, PathBuf};

use leopold_flows::Flow;

pub use leopold_tests::capture;

/// `journal/tests/golden/<name>`.
pub fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// The flow the captures are judged against: the staging shop, payment and deletion forbidden,
/// the confirm page forbidden.
pub const CHECKOUT: &str = "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\"]\n\
[irreversible]\nforbid = [\"payment\", \"deletion\"]\nurl_paths = [\"/checkout/confirm\"]\n+++\nbrief\n";

pub fn checkout() -> Flow {
    Flow::parse(CHECKOUT, Path::new("checkout.md")).unwrap()
}
