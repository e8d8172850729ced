//! The guard's whole decision on arbitrary stdin bytes, in an active project: it never panics,
//! and a payload that is not a valid hook payload always denies.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use leopold_guard::{decide, evaluate, HookInput, Verdict};
use libfuzzer_sys::fuzz_target;

const FLOW: &str =
    "+++\nname = \"checkout\"\nallowlist = [\"staging.example.com\", \"127.0.0.1\"]\n\
[irreversible]\nforbid = [\"payment\", \"deletion\"]\nclick_labels = [\"(?i)place order\"]\n\
url_paths = [\"/checkout/confirm\"]\ntools = [\"mcp__stripe__.*\"]\n+++\nbrief\n";

fn project() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("leopold-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(root.join(".leopold/persona")).unwrap();
        std::fs::write(root.join("checkout.md"), FLOW).unwrap();
        std::fs::write(
            root.join(".leopold/persona/ACTIVE.json"),
            r#"{"active":true,"flow":"checkout","flow_path":"checkout.md"}"#,
        )
        .unwrap();
        root
    })
}

fn flow() -> &'static leopold_flows::Flow {
    static FLOW: OnceLock<leopold_flows::Flow> = OnceLock::new();
    FLOW.get_or_init(|| {
        leopold_guard::load_flow("checkout", &project().join("checkout.md")).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let root = project();
    let flow = flow();
    match HookInput::from_slice(data) {
        Ok(input) => {
            let _ = decide(flow, &input);
        }
        Err(_) => {
            // A payload naming its own `cwd` may point outside any project (inert, by design);
            // without one, the project is found from the fallback and must deny.
            let names_cwd = serde_json::from_slice::<serde_json::Value>(data)
                .ok()
                .and_then(|v| v.get("cwd").and_then(|c| c.as_str()).map(|_| ()))
                .is_some();
            if names_cwd {
                let _ = evaluate(data, Some(root));
                return;
            }
            let eval = evaluate(data, Some(root));
            assert!(
                matches!(eval.verdict, Verdict::Deny(_)),
                "garbage allowed while active"
            );
        }
    }
});
