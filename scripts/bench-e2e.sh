#!/usr/bin/env bash
# Wall time of a whole checkout run on the real CLIs: bare harness (the peer) vs the guard wired
# directly vs `leopold persona run`, alternating, medians and ratios as a Markdown table
# (BENCHMARKS.md, "End-to-end runs"). Leopold is the release build, as users run it.
#
# Usage: ./scripts/bench-e2e.sh [--rounds N] [--harness claude|codex|all]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(./scripts/install-clis.sh)"
export LEOPOLD_CLAUDE_BIN="$bin/claude"
export LEOPOLD_CODEX_BIN="$bin/codex"
cargo build --quiet --release -p leopold
cargo build --quiet -p leopold-tests
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
export LEOPOLD_BIN="$target_dir/release/leopold"
# What every BENCHMARKS.md table states: the command, the commit, the date, the load.
echo "command: scripts/bench-e2e.sh $*; commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!*.md' || echo ' (+ uncommitted changes)'); date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
"$target_dir/debug/leopold-e2e-bench" "$@"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
