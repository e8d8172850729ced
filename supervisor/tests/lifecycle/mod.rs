//! `leopold persona run`, `persona recover` and `doctor` end to end, with the fake worker
//! (`leopold-fake-worker`, tests/src/bin/fake_worker.rs) standing in for the harness CLIs.
//!
//! - `run`: a whole run's lifecycle, per harness; what the worker was given;
//! - `crash`: SIGKILL the supervisor at every lifecycle step, then recover;
//! - `concurrency`: eight `--no-contain` runs at once in one project;
//! - `side_by_side`: boxed runs side by side, a `--no-contain` run alone, several crashes;
//! - `stop`: violations, signals, timeouts, crashes and leaks stop the worker and clean up;
//! - `disk`: how many fsyncs a run makes;
//! - `doctor`: what doctor reports before and after a crash;
//! - `boxed`: the box, with the fake worker as the adversary;
//! - `model_key`: the model's credentials stay outside the box, filled in by the relay;
//! - `model_fail`: a model endpoint that refuses the harness or cannot be reached stops the run fast;
//! - `limits`: the box's limits (processes, memory, scratch, records) and what it takes in;
//! - `outcome`: findings, walls, `stuck`, a timeout's cause, quiet-run progress, `--json` stamps;
//! - `budget`: usage recorded, `--max-tokens`, `--max-cost-usd`, `--max-turns`, `looping`;
//! - `record`: the journal's hash-chain head in run.json, `run_ended`, the summary and replay.

mod archive;
mod boxed;
mod budget;
mod concurrency;
mod crash;
mod disk;
mod doctor;
mod gateway;
mod limits;
mod model_fail;
mod model_key;
mod outcome;
mod record;
mod run;
mod side_by_side;
mod stop;
mod suite;
mod verdict;
