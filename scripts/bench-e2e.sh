#!/usr/bin/env bash
# Wall time of a whole checkout run on the real CLIs: bare harness (the peer) vs the guard wired
# directly vs `leopold persona run`, alternating, medians and ratios as a Markdown table
# (BENCHMARKS.md, "End-to-end runs"). Leopold is the release build, as users run it.
#
# Usage: ./scripts/bench-e2e.sh [--rounds N] [--harness claude|codex|all]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
export_clis
run_kit_bench leopold-e2e-bench "$@"
