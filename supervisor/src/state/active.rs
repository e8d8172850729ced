//! Every run a project names as active, live or crashed (docs/reference.md#the-state-files):
//! `ACTIVE.json` at the top of `.leopold/persona/` (a `--no-contain` run, whose guard reads the
//! project's own file, or an older version's run) and `active/<run_id>.json` (a boxed run, whose
//! guard sees it as its box's `ACTIVE.json`). Each is live while its run's own lock is held
//! ([`super::lock::is_live`]).

use std::path::PathBuf;

use super::{ActiveState, PersonaPaths, StateFile as _};

/// One state file.
#[derive(Debug, Clone)]
pub struct Slot {
    pub file: PathBuf,
    /// The run id its name gives (`active/<run_id>.json`); `None` for `ACTIVE.json`, which names
    /// its run inside.
    pub named: Option<String>,
}

/// The project's state files: `ACTIVE.json` first, then `active/*.json` by name.
pub fn slots(paths: &PersonaPaths) -> Vec<Slot> {
    let mut out = Vec::new();
    let top = paths.active();
    if std::fs::symlink_metadata(&top).is_ok() {
        out.push(Slot {
            file: top,
            named: None,
        });
    }
    let mut boxed: Vec<Slot> = std::fs::read_dir(paths.active_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let file = e.path();
            let id = file
                .extension()
                .filter(|x| *x == "json")
                .and(file.file_stem())?
                .to_str()?
                .to_owned();
            Some(Slot {
                file,
                named: Some(id),
            })
        })
        .collect();
    boxed.sort_by(|a, b| a.file.cmp(&b.file));
    out.extend(boxed);
    out
}

impl Slot {
    /// Reads the state strictly; a file named for one run that names another is refused.
    pub fn read(&self) -> anyhow::Result<ActiveState> {
        let st = ActiveState::read(&self.file)?;
        match &self.named {
            Some(id) if *id != st.run_id => anyhow::bail!(
                "{} names run {}, not the run its name gives",
                self.file.display(),
                st.run_id
            ),
            _ => Ok(st),
        }
    }
}

/// A state file and what it says: for `doctor`, `persona runs` and a refused run's message.
#[derive(Debug)]
pub struct ActiveRun {
    pub slot: Slot,
    /// The state, or why it cannot be read.
    pub state: Result<ActiveState, String>,
    /// Whether its run's own lock is held by a live process.
    pub live: bool,
}

impl ActiveRun {
    pub fn run_id(&self) -> Option<&str> {
        self.slot
            .named
            .as_deref()
            .or_else(|| self.state.as_ref().ok().map(|s| s.run_id.as_str()))
    }

    /// `run <id>: flow `f` under claude (pid N, started T)`, or what is wrong with the file.
    pub fn describe(&self) -> String {
        match &self.state {
            Ok(st) => describe(st),
            Err(e) => format!(
                "{}: unreadable ({e})",
                crate::project::shown(&self.slot.file)
            ),
        }
    }
}

/// Every state file of the project, each read and told live or crashed. A file gone while it
/// was read (its run ended meanwhile) is left out.
pub fn active_runs(paths: &PersonaPaths) -> Vec<ActiveRun> {
    slots(paths)
        .into_iter()
        .filter_map(|slot| {
            let state = slot.read().map_err(|e| format!("{e:#}"));
            if state.is_err() && !slot.file.exists() {
                return None;
            }
            let mut run = ActiveRun {
                slot,
                state,
                live: false,
            };
            run.live = run.run_id().is_some_and(|id| super::is_live(paths, id));
            Some(run)
        })
        .collect()
}

/// A run as its state names it: `run <id>: flow `f` under claude (pid N, started T)`.
pub fn describe(st: &ActiveState) -> String {
    format!(
        "run {}: flow `{}` under {} (pid {}, started {})",
        st.run_id, st.flow, st.harness, st.supervisor_pid, st.started_at
    )
}
