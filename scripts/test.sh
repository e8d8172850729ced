#!/usr/bin/env bash
# The tests: what a newcomer runs, and what CI runs (`.ci/run`). Installs what the tests need first.
set -euo pipefail
cd "$(dirname "$0")/.."

# The real harness CLIs (pinned; cached after the first run) for the end-to-end suites.
bin="$(./scripts/install-clis.sh)"
export LEOPOLD_CLAUDE_BIN="$bin/claude"
export LEOPOLD_CODEX_BIN="$bin/codex"

# The provisioned browser (Debian's chromium, pinned @playwright/mcp) for the browser suites.
export LEOPOLD_PLAYWRIGHT_MCP="$(./scripts/install-browser.sh)"
export LEOPOLD_CHROMIUM="${LEOPOLD_CHROMIUM:-/usr/bin/chromium}"

# The worker's box (Debian's bubblewrap): `persona run` refuses without it (README "The box").
./scripts/install-box.sh >/dev/null

# The `leopold` binary the end-to-end suites drive (another package: not built by nextest for them).
cargo build -p leopold
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
export LEOPOLD_BIN="$target_dir/debug/leopold"

# The fake worker the supervisor's lifecycle tests drive (they also build it on demand).
cargo build -p leopold-tests --bin leopold-fake-worker
cargo nextest run --workspace --no-fail-fast "$@"
