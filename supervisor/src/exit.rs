//! `leopold`'s exit codes, shared by every command: a protocol for scripts and CI, documented in
//! README.md#exit-codes, at the end of `leopold --help`, and in `persona run
//! --help`. An error picks its code where it is made (`output::Failure`).

/// Exit codes of every `leopold` command (named after `persona run`, which uses them all).
pub struct RunExit;

impl RunExit {
    /// The worker finished and every observed action was inside the flow's bound.
    pub const CLEAN: u8 = 0;
    /// At least one action broke the flow's bound (off-allowlist navigation that reached the tool,
    /// an irreversible action); the worker was stopped. Also `doctor`: something is wrong.
    pub const VIOLATIONS: u8 = 1;
    /// Usage or configuration error (bad flow, bad MCP config, refused harness argument, harness
    /// binary not found, wiring or its proof failed). Nothing is left wired.
    pub const CONFIG: u8 = 2;
    /// The worker failed (non-zero exit, crash), timed out (`--timeout`, 30 minutes unless set), or the run was
    /// interrupted (SIGINT/SIGTERM/SIGHUP).
    pub const WORKER_FAILED: u8 = 3;
    /// The model endpoint refused the harness (401/403: credentials; 404: no such model) or could
    /// not be reached (DNS, connection, TLS); the run was stopped at once. Shares 3 with a worker
    /// failure: the persona never got to judge the app.
    pub const MODEL_FAILED: u8 = 3;
    /// Another run is active in this project (it holds `.leopold/persona/run.lock`); nothing was
    /// touched.
    pub const BUSY: u8 = 4;
    /// The persona hit the same wall the flow's `max_denials_in_a_row` times (default 5) with no
    /// allowed action between; the worker was stopped. A finding, not a failure of Leopold's.
    pub const STUCK: u8 = 5;
    /// The boxed worker hit one of its limits (`--max-procs`, `--max-memory`, `--max-scratch`,
    /// `--max-records`); the worker was stopped. Shares 5 with `stuck`: the supervisor stopped a
    /// run whose persona went on too long or too wide, and 6 is kept for the app's own failure.
    pub const OVER_LIMIT: u8 = 5;
    /// The run went over `--max-tokens`, `--max-cost-usd` or `--max-turns`; the worker was
    /// stopped. Shares 5 with `stuck`.
    pub const OVER_BUDGET: u8 = 5;
    /// The persona made the same allowed call on the same target the flow's `max_repeats` times
    /// running (default 5); the worker was stopped. Shares 5 with `stuck`.
    pub const LOOPING: u8 = 5;
    /// The app did not meet the flow: a `reach` expectation unmet, a reported finding at or above
    /// the flow's `fail_on`, or the persona's `finish` saying the goal was not reached.
    pub const FAILED: u8 = 6;
}

impl RunExit {
    /// A suite's exit codes from worst to least bad: a violation first (a bound broken), then
    /// the app failing its flow (what a suite is run to find), then the supervisor's stops (a
    /// persona stuck, looping, over a budget or a limit), then what kept the persona from
    /// judging the app (the worker, the model, the setup), then a busy project.
    pub const WORST_FIRST: [u8; 6] = [
        RunExit::VIOLATIONS,
        RunExit::FAILED,
        RunExit::STUCK,
        RunExit::WORKER_FAILED,
        RunExit::CONFIG,
        RunExit::BUSY,
    ];

    /// The worst of `codes` ([`RunExit::WORST_FIRST`]; a code not listed counts as a worker
    /// failure), 0 when there is none but 0.
    pub fn worst(codes: impl IntoIterator<Item = u8>) -> u8 {
        let rank = |c: u8| {
            RunExit::WORST_FIRST
                .iter()
                .position(|&w| w == c)
                .or_else(|| {
                    RunExit::WORST_FIRST
                        .iter()
                        .position(|&w| w == RunExit::WORKER_FAILED)
                })
                .expect("listed")
        };
        codes
            .into_iter()
            .filter(|&c| c != RunExit::CLEAN)
            .min_by_key(|&c| rank(c))
            .unwrap_or(RunExit::CLEAN)
    }
}

#[cfg(test)]
mod tests {
    use super::RunExit;

    #[test]
    fn exit_codes_are_distinct() {
        let all = [
            RunExit::CLEAN,
            RunExit::VIOLATIONS,
            RunExit::CONFIG,
            RunExit::WORKER_FAILED,
            RunExit::BUSY,
            RunExit::STUCK,
            RunExit::FAILED,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // Stopped by the supervisor for going too far, like stuck.
        assert_eq!(RunExit::OVER_LIMIT, RunExit::STUCK);
        assert_eq!(RunExit::OVER_BUDGET, RunExit::STUCK);
        assert_eq!(RunExit::LOOPING, RunExit::STUCK);
        // The persona never got to judge the app, like a worker failure.
        assert_eq!(RunExit::MODEL_FAILED, RunExit::WORKER_FAILED);
    }

    #[test]
    fn the_worst_code_decides_a_suite() {
        assert_eq!(RunExit::worst([0, 0]), 0);
        assert_eq!(RunExit::worst([0, 6, 3]), 6);
        assert_eq!(RunExit::worst([5, 1, 6]), 1);
        assert_eq!(RunExit::worst([4, 2]), 2);
        assert_eq!(RunExit::worst([3, 5]), 5);
        assert_eq!(RunExit::worst([4, 99]), 99);
        assert_eq!(RunExit::worst([]), 0);
    }
}
