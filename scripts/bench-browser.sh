#!/usr/bin/env bash
# Wall time of a provisioned-browser walk on the real CLIs: the bare harness with the same
# Playwright MCP + Chromium config (the peer) vs `leopold persona run --browser playwright`,
# alternating, medians and ratios as a Markdown table (BENCHMARKS.md, "The provisioned browser").
#
# Usage: ./scripts/bench-browser.sh [--rounds N] [--harness claude|codex|all]
# With LEOPOLD_BENCH_EVIDENCE=1, also `persona run --evidence none` beside the default `steps`
# (BENCHMARKS.md, "Evidence per step").
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
export_clis
export_browser
run_kit_bench leopold-browser-bench "$@"
