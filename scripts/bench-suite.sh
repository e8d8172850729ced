#!/usr/bin/env bash
# A suite of 8 boxed real-browser runs (4 flows × both real CLIs, the scripted model answering each
# turn after 2 s): wall time with --jobs 8 against --jobs 1, alternating, and the peak memory of one
# boxed real-browser run (BENCHMARKS.md, "Suites").
#
# Usage: ./scripts/bench-suite.sh [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
export_real_runs
run_kit_bench leopold-suite-bench "$@"
