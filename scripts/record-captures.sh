#!/usr/bin/env bash
# Records the harness captures under tests/captures/ from the pinned CLIs, the stub browser and
# the provisioned browser (see tests/captures/README.md). Run it after bumping a CLI or
# @playwright/mcp version, then run ./scripts/test.sh: the tests that read the captures say what
# changed.
#   ./scripts/record-captures.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$(./scripts/install-clis.sh)"
export LEOPOLD_CLAUDE_BIN="$bin/claude"
export LEOPOLD_CODEX_BIN="$bin/codex"
export LEOPOLD_PLAYWRIGHT_MCP="$(./scripts/install-browser.sh)"
export LEOPOLD_CHROMIUM="${LEOPOLD_CHROMIUM:-/usr/bin/chromium}"

cargo build -p leopold-tests --bins
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
"$target_dir/debug/leopold-record-captures" --out tests/captures
