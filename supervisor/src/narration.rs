//! `narration.jsonl`: what the model wrote between its tool calls (Claude's `assistant` text,
//! Codex's `agent_message`s), for the report's timeline. Apart from the journal, which keeps no
//! text the model wrote: one line per text, `{"after_seq":N,"ts":…,"text":…}`, `after_seq` the
//! journal seq of the last action before it (0 before the first), URLs reduced to their hosts,
//! each text cut at [`MAX_CHARS`] and the file at [`MAX_LINES`] lines or [`MAX_BYTES`].

use std::collections::BTreeMap;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The longest text kept, in characters.
pub const MAX_CHARS: usize = 2000;
/// The most lines the file holds.
pub const MAX_LINES: u64 = 1000;
/// The most bytes the file holds.
pub const MAX_BYTES: u64 = 2 << 20;

/// The run's narration file, written while the run lasts.
pub struct Narration {
    path: PathBuf,
    file: Option<std::fs::File>,
    lines: u64,
    bytes: u64,
}

impl Narration {
    pub fn new(path: PathBuf) -> Narration {
        Narration {
            path,
            file: None,
            lines: 0,
            bytes: 0,
        }
    }

    /// Writes one text, after the action `after_seq`; nothing once the file is full.
    pub fn push(&mut self, after_seq: u64, text: &str) {
        let text = text.trim();
        if text.is_empty() || self.lines >= MAX_LINES {
            return;
        }
        let mut kept: String = crate::redact::strip_urls(text)
            .chars()
            .take(MAX_CHARS)
            .collect();
        if kept.chars().count() == MAX_CHARS {
            kept.push('…');
        }
        let mut line = json!({"after_seq": after_seq, "ts": leopold_journal::now_rfc3339(),
            "text": kept})
        .to_string();
        line.push('\n');
        if self.bytes + line.len() as u64 > MAX_BYTES {
            self.lines = MAX_LINES;
            return;
        }
        if self.file.is_none() {
            self.file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| tracing::warn!("{}: {e}", self.path.display()))
                .ok();
        }
        if let Some(f) = &mut self.file {
            if f.write_all(line.as_bytes()).is_ok() {
                self.lines += 1;
                self.bytes += line.len() as u64;
            }
        }
    }
}

/// The narration read back: the texts after each journal seq, in order.
pub fn read(path: &Path) -> BTreeMap<u64, Vec<String>> {
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let Ok(f) = std::fs::File::open(path) else {
        return out;
    };
    let r = std::io::BufReader::new(std::io::Read::take(f, MAX_BYTES));
    for line in r.lines().map_while(Result::ok).take(MAX_LINES as usize) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let (Some(seq), Some(text)) = (
            v.get("after_seq").and_then(Value::as_u64),
            v.get("text").and_then(Value::as_str),
        ) {
            // Read back as written, and reduced again: the file is plain text anyone could edit.
            let text: String = crate::redact::strip_urls(text)
                .chars()
                .take(MAX_CHARS + 1)
                .collect();
            out.entry(seq).or_default().push(text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_kept_by_step_host_only_and_bounded() {
        let (_d, p) = crate::test_support::temp_path("narration.jsonl");
        let mut n = Narration::new(p.clone());
        n.push(
            0,
            "Opening https://staging.example.com/cart?token=s3cret first.",
        );
        n.push(2, "  ");
        n.push(2, &"x".repeat(MAX_CHARS + 50));
        let r = read(&p);
        assert_eq!(r[&0], ["Opening <staging.example.com> first."]);
        assert_eq!(r[&2].len(), 1);
        assert_eq!(r[&2][0].chars().count(), MAX_CHARS + 1);
        assert!(!std::fs::read_to_string(&p).unwrap().contains("s3cret"));
        for i in 0..MAX_LINES + 5 {
            n.push(3, &format!("line {i}"));
        }
        let lines = std::fs::read_to_string(&p).unwrap().lines().count() as u64;
        assert_eq!(lines, MAX_LINES);
    }
}
