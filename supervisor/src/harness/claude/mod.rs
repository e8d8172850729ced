//! Claude Code's wing: its settings file and the guard's place in it ([`settings`]), and what
//! its worker needs in the box ([`boxing`]).

mod boxing;
pub(in crate::harness) mod launch;
mod settings;

pub use boxing::box_needs;
pub(crate) use settings::schema_problems;
pub(in crate::harness) use settings::{add, group, list, strip, validation_warnings};
