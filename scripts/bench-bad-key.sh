#!/usr/bin/env bash
# Time to exit when the model endpoint refuses the key (every model call 401), on the real CLIs:
# this `leopold` against LEOPOLD_BASELINE_BIN (an earlier build), alternating, medians as a
# Markdown table (BENCHMARKS.md, "A bad key").
#
# Usage: LEOPOLD_BASELINE_BIN=... ./scripts/bench-bad-key.sh [--rounds N] [--timeout 60s]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
export_clis
run_kit_bench leopold-bad-key-bench "$@"
