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
exec "$target_dir/debug/leopold-e2e-bench" "$@"
