#!/usr/bin/env bash
# The tests: what a newcomer runs, and what CI runs (`.ci/run`). Installs what the tests need first.
set -euo pipefail
cd "$(dirname "$0")/.."
# The fake worker the supervisor's lifecycle tests drive (they also build it on demand).
cargo build -p leopold-tests --bin leopold-fake-worker
cargo nextest run --workspace --no-fail-fast "$@"
