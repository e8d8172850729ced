#!/usr/bin/env bash
# The tests: what a newcomer runs, and what CI runs (`.ci/run`). Installs what the tests need first.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo nextest run --workspace --no-fail-fast "$@"
