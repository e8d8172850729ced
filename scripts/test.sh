#!/usr/bin/env bash
# The tests: what a newcomer runs, and what CI runs (`.ci/run`). Installs what the tests need first.
set -euo pipefail
cd "$(dirname "$0")/.."

# The real harness CLIs (pinned; cached after the first run) for the end-to-end suites.
bin="$(./scripts/install-clis.sh)"
export LEOPOLD_CLAUDE_BIN="$bin/claude"
export LEOPOLD_CODEX_BIN="$bin/codex"

# The `leopold` binary the end-to-end suites drive (another package: not built by nextest for them).
cargo build -p leopold
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
export LEOPOLD_BIN="$target_dir/debug/leopold"

cargo nextest run --workspace --no-fail-fast "$@"
