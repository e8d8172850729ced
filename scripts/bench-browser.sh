#!/usr/bin/env bash
# Wall time of a provisioned-browser walk on the real CLIs: the bare harness with the same
# Playwright MCP + Chromium config (the peer) vs `leopold persona run --browser playwright`,
# alternating, medians and ratios as a Markdown table (BENCHMARKS.md, "The provisioned browser").
#
# Usage: ./scripts/bench-browser.sh [--rounds N] [--harness claude|codex|all]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(./scripts/install-clis.sh)"
export LEOPOLD_CLAUDE_BIN="$bin/claude"
export LEOPOLD_CODEX_BIN="$bin/codex"
export LEOPOLD_PLAYWRIGHT_MCP="$(./scripts/install-browser.sh)"
cargo build --quiet --release -p leopold
cargo build --quiet -p leopold-tests
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
export LEOPOLD_BIN="$target_dir/release/leopold"
# What every BENCHMARKS.md table states: the command, the commit, the date, the load.
echo "command: scripts/bench-browser.sh $*; commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!*.md' || echo ' (+ uncommitted changes)'); date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
"$target_dir/debug/leopold-browser-bench" "$@"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
