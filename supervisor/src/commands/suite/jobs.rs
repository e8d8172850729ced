//! `--jobs`'s default: as many runs at once as the machine's cores and memory allow, said aloud.

/// A boxed real-browser run's peak memory, the harness, the browser and their servers together
/// (measured 674–713 MiB PSS: BENCHMARKS.md#suites), rounded up for a heavier app's pages:
/// what the default leaves for each run.
pub const RUN_PEAK_MEMORY: u64 = 1 << 30;

/// Runs a core can carry: a run spends most of its time waiting on its model, not computing.
const RUNS_PER_CORE: usize = 2;

/// `--jobs` when not given, and why, for the suite's first line.
pub fn default_jobs(runs: usize, cores: usize, available: Option<u64>) -> (usize, String) {
    let by_cores = cores.max(1) * RUNS_PER_CORE;
    let by_memory = available.map(|a| usize::try_from(a / RUN_PEAK_MEMORY).unwrap_or(usize::MAX));
    let jobs = by_cores
        .min(by_memory.unwrap_or(usize::MAX))
        .min(runs)
        .max(1);
    let memory = match available {
        Some(a) => format!(
            "{:.1} GiB available at {} GiB a run",
            a as f64 / (1u64 << 30) as f64,
            RUN_PEAK_MEMORY >> 30
        ),
        None => "available memory unknown".to_owned(),
    };
    let why = format!(
        "{} core{} × {RUNS_PER_CORE}, {memory}",
        cores,
        if cores == 1 { "" } else { "s" }
    );
    (jobs, why)
}

/// This machine's cores and available memory (`MemAvailable`, Linux).
pub fn machine() -> (usize, Option<u64>) {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    (cores, available)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_bounded_by_cores_memory_and_the_runs() {
        let gib = 1u64 << 30;
        assert_eq!(default_jobs(8, 2, Some(20 * gib)).0, 4);
        assert_eq!(default_jobs(8, 16, Some(3 * gib)).0, 3);
        assert_eq!(default_jobs(2, 16, Some(64 * gib)).0, 2);
        assert_eq!(default_jobs(8, 2, Some(gib / 2)).0, 1);
        let (n, why) = default_jobs(8, 2, None);
        assert_eq!(n, 4);
        assert_eq!(why, "2 cores × 2, available memory unknown");
        assert_eq!(
            default_jobs(8, 2, Some(20 * gib)).1,
            "2 cores × 2, 20.0 GiB available at 1 GiB a run"
        );
    }
}
