//! The suite's results from its run directories: the JUnit file, `suite.html`, the step summary.

use super::progress::{Progress, Written};
use super::PairResult;
use crate::state::PersonaPaths;

pub fn write(
    _paths: &PersonaPaths,
    _junit: Option<&std::path::Path>,
    _results: &[PairResult],
    _out: &Progress,
) -> Written {
    Written::default()
}
