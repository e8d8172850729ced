//! Flow files from arbitrary text: parsing never panics, and a parsed flow judges any URL.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(flow) = leopold_flows::Flow::parse(text, std::path::Path::new("fuzz.md")) {
        let _ = flow.judge_url("https://staging.example.com/checkout/confirm");
        let _ = flow.match_label(text);
        let _ = flow.match_path(text);
    }
});
