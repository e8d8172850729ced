//! Codex CLI's wing: its `config.toml` and the guard's place in it ([`config`]), the run's own
//! `CODEX_HOME` ([`run_home`]), Leopold's model catalog ([`catalog`]), and what its worker
//! needs in the box ([`boxing`]).

mod boxing;
pub mod catalog;
mod config;
pub(in crate::harness) mod doctor;
pub(in crate::harness) mod launch;
pub mod run_home;

pub use boxing::{advice_for_home, box_needs};
pub(in crate::harness) use config::{add, list, strip};
