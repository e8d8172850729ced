#!/usr/bin/env bash
# Records the harness captures under tests/captures/ from the pinned CLIs, the stub browser and
# the provisioned browser (see tests/captures/README.md). Run it after bumping a CLI or
# @playwright/mcp version, then run ./scripts/test.sh: the tests that read the captures say what
# changed.
#   ./scripts/record-captures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

export_clis
export_browser

cargo build -p leopold-tests --bins
target_dir="$(target_dir)"
"$target_dir/debug/leopold-record-captures" --out tests/captures
