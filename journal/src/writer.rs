//! Writing `journal.jsonl`: a versioned header line, then one action per line, each ending with
//! `"prev"`, the SHA-256 of the line before it ([`crate::chain`]).
//!
//! Each line is serialised in memory and written with a single `write` on a file opened with
//! `O_APPEND`, newline included ([`ChainedFile`]), so a crash leaves either the whole line or a torn last line
//! (which replay reports and skips), never a half line in the middle.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::action::{Action, Harness};
use crate::chain::{JournalHash, GENESIS};

/// The journal format version this crate writes: 2, hash-chained (every line carries `prev`).
/// Replay and reports also read version 1 (before the chain), as unchained.
pub const JOURNAL_VERSION: u32 = 2;

/// The last version without the hash chain; still read.
pub const UNCHAINED_JOURNAL_VERSION: u32 = 1;

/// The first line of every journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalHeader {
    /// Format version: [`JOURNAL_VERSION`]. A reader refuses versions it does not know.
    pub leopold_journal: u32,
    /// The run's id (the name of its directory under `.leopold/persona/runs/`).
    pub run_id: String,
    /// The flow's name.
    pub flow: String,
    /// The flow file the run used, as the supervisor resolved it.
    pub flow_path: PathBuf,
    /// The harness that ran the worker.
    pub harness: Harness,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// The chain's link as read from a version 2 header (64 zeros); `None` in version 1. The
    /// writer ignores this field and writes the link itself.
    #[serde(default, skip_serializing)]
    pub prev: Option<String>,
}

impl JournalHeader {
    /// A header of the version this crate writes ([`JOURNAL_VERSION`]).
    pub fn new(
        run_id: &str,
        flow: &str,
        flow_path: &Path,
        harness: Harness,
        started_at: String,
    ) -> Self {
        JournalHeader {
            leopold_journal: JOURNAL_VERSION,
            run_id: run_id.to_owned(),
            flow: flow.to_owned(),
            flow_path: flow_path.to_path_buf(),
            harness,
            started_at,
            prev: None,
        }
    }
}

/// Errors writing a journal; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The journal could not be created (it may already exist: journals are never overwritten).
    #[error("cannot create journal {path}")]
    Create {
        /// The journal's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A line could not be written.
    #[error("cannot append to journal {path}")]
    Append {
        /// The journal's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// An I/O error on the journal at `path`, as [`WriteError::Append`].
fn appending(path: &Path) -> impl Fn(io::Error) -> WriteError + '_ {
    move |source| WriteError::Append {
        path: path.to_path_buf(),
        source,
    }
}

/// A journal's `fdatasync` under way ([`JournalWriter::sync_in_background`]). Dropped unwaited,
/// it still waits: no sync outlives its owner.
#[derive(Debug)]
pub struct PendingSync {
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    path: PathBuf,
}

impl PendingSync {
    /// Waits for the sync.
    ///
    /// # Errors
    ///
    /// [`WriteError::Append`] with the path: the sync failed, or its thread panicked.
    pub fn wait(mut self) -> Result<(), WriteError> {
        let done = match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => Err(std::io::Error::other("the journal's sync thread stopped")),
        };
        done.map_err(appending(&self.path))
    }
}

impl Drop for PendingSync {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A hash-chained file of JSON lines, append-only: the journal's, and the gateway's record. Each
/// value is serialised and linked to the line before ([`crate::chain::link`]) in memory, then
/// written with a single `write` on a file opened with `O_APPEND`, newline included.
#[derive(Debug)]
pub struct ChainedFile {
    file: File,
    /// The hash of the last line written; `None` while the file has none.
    head: Option<JournalHash>,
    buf: Vec<u8>,
    /// The hash of the line in `buf`, once prepared.
    prepared: Option<JournalHash>,
}

impl ChainedFile {
    /// Appends to `file` (opened with `O_APPEND`), whose last line hashes to `head` (`None`: no
    /// line yet; the first links to [`GENESIS`]).
    pub fn new(file: File, head: Option<JournalHash>) -> ChainedFile {
        ChainedFile {
            file,
            head,
            buf: Vec::with_capacity(512),
            prepared: None,
        }
    }

    /// The chain's head: the hash of the last line written; `None` while there is none.
    pub fn head(&self) -> Option<JournalHash> {
        self.head
    }

    /// The file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Serialises `value`, a JSON object, as the next line, linked to the head, without writing
    /// it: its length in bytes, newline included.
    ///
    /// # Errors
    ///
    /// `value` does not serialise to a JSON object.
    pub fn prepare<T: Serialize>(&mut self, value: &T) -> io::Result<usize> {
        self.buf.clear();
        self.prepared = None;
        serde_json::to_writer(&mut self.buf, value).map_err(io::Error::other)?;
        let prev = self.head.unwrap_or(GENESIS);
        let hash = crate::chain::link(&mut self.buf, &prev).map_err(io::Error::other)?;
        self.buf.push(b'\n');
        self.prepared = Some(hash);
        Ok(self.buf.len())
    }

    /// Writes the prepared line; the head moves to it once it is written.
    ///
    /// # Errors
    ///
    /// The write's; nothing was prepared.
    pub fn write_prepared(&mut self) -> io::Result<()> {
        let Some(hash) = self.prepared else {
            return Err(io::Error::other("no line prepared"));
        };
        // One write call for the whole line: with O_APPEND the kernel places it at the end in one
        // piece. `write_all` only loops if the kernel wrote short (disk full), which leaves a torn
        // last line that replay skips.
        self.file.write_all(&self.buf)?;
        self.head = Some(hash);
        self.prepared = None;
        Ok(())
    }

    /// Moves the head to the prepared line without writing it (its write failed): the next
    /// line links to it, as to a line that reached the file.
    pub fn skip_prepared(&mut self) {
        if let Some(hash) = self.prepared.take() {
            self.head = Some(hash);
        }
    }
}

/// An open journal, append-only.
#[derive(Debug)]
pub struct JournalWriter {
    chain: ChainedFile,
    path: PathBuf,
    next_seq: u64,
}

impl JournalWriter {
    /// Creates the journal (and its parent directories) and writes the header line. Refuses to
    /// overwrite an existing file.
    ///
    /// # Errors
    ///
    /// [`WriteError::Create`] with the path.
    pub fn create(path: &Path, header: &JournalHeader) -> Result<JournalWriter, WriteError> {
        let create = |source| WriteError::Create {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(create)?;
        }
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(create)?;
        let mut w = JournalWriter {
            chain: ChainedFile::new(file, None),
            path: path.to_path_buf(),
            next_seq: 1,
        };
        w.write_line(header).map_err(|e| match e {
            WriteError::Append { source, .. } => create(source),
            other => other,
        })?;
        Ok(w)
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The chain's head: the SHA-256 of the last line written whole (after [`create`](Self::create),
    /// the header's). What the supervisor records as `journal_hash`.
    pub fn head(&self) -> JournalHash {
        self.chain.head().unwrap_or(GENESIS)
    }

    /// Appends one action: assigns it the next `seq` (from 1), then writes its line whole.
    /// Validate before appending so the line carries its verdict.
    ///
    /// # Errors
    ///
    /// [`WriteError::Append`] with the path.
    pub fn append(&mut self, action: &mut Action) -> Result<u64, WriteError> {
        action.seq = self.next_seq;
        self.write_line(&*action)?;
        self.next_seq += 1;
        Ok(action.seq)
    }

    /// Forces what was written to disk (`fdatasync`); the supervisor calls it at the end of a run
    /// and before stopping a worker on a violation.
    ///
    /// # Errors
    ///
    /// [`WriteError::Append`] with the path.
    pub fn sync(&self) -> Result<(), WriteError> {
        self.chain.file().sync_data().map_err(appending(&self.path))
    }

    /// [`JournalWriter::sync`] on a thread of its own (the same file, through a second handle):
    /// the caller goes on with what does not need the journal on disk, then waits with
    /// [`PendingSync::wait`]. Two waits on the disk side by side cost about one.
    ///
    /// # Errors
    ///
    /// [`WriteError::Append`] with the path, when the thread or the handle cannot be had.
    pub fn sync_in_background(&self) -> Result<PendingSync, WriteError> {
        let file = self
            .chain
            .file()
            .try_clone()
            .map_err(appending(&self.path))?;
        let thread = std::thread::Builder::new()
            .name("leopold-journal-sync".into())
            .spawn(move || file.sync_data())
            .map_err(appending(&self.path))?;
        Ok(PendingSync {
            thread: Some(thread),
            path: self.path.clone(),
        })
    }

    fn write_line<T: Serialize>(&mut self, value: &T) -> Result<(), WriteError> {
        self.chain.prepare(value).map_err(appending(&self.path))?;
        self.chain.write_prepared().map_err(appending(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{ActionKind, Outcome};

    #[test]
    fn header_then_numbered_lines_and_no_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("runs/r1/journal.jsonl");
        let h = JournalHeader::new(
            "r1",
            "checkout",
            Path::new("flows/checkout.md"),
            Harness::Codex,
            "2026-11-30T10:00:00Z".into(),
        );
        let mut w = JournalWriter::create(&p, &h).unwrap();
        let mut a = Action {
            label: Some("Go".into()),
            ..Action::new(
                Harness::Codex,
                "2026-11-30T10:00:01Z".into(),
                "mcp__s__click",
                ActionKind::Click,
                Outcome::Completed,
            )
        };
        assert_eq!(w.append(&mut a).unwrap(), 1);
        assert_eq!(w.append(&mut a).unwrap(), 2);
        w.sync().unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(text.ends_with('\n'));
        let mut h2: JournalHeader = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(h2.prev.take(), Some("0".repeat(64)));
        assert_eq!(h2, h);
        assert!(lines[0].starts_with(r#"{"leopold_journal":2,"#));
        let a2 = Action::from_journal_line(lines[2].as_bytes()).unwrap();
        assert_eq!(a2.seq, 2);
        // The chain: line 1 links to 64 zeros, each next line to the one before, the head is
        // the last line's hash.
        let mut prev = GENESIS;
        for line in &lines {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["prev"], prev.to_string(), "{line}");
            assert!(line.ends_with(&format!(r#","prev":"{prev}"}}"#)), "{line}");
            prev = JournalHash::of_line(line.as_bytes());
        }
        assert_eq!(w.head(), prev);
        let err = JournalWriter::create(&p, &h).unwrap_err();
        assert!(err.to_string().contains("journal.jsonl"), "{err}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
    }
}
