#!/usr/bin/env bash
# The main job end to end (issue #6): installs the pinned Claude Code and Codex CLIs and the box's
# bubblewrap if absent,
# builds Leopold and the test kit, starts the scripted model and the stub browser, runs the
# checkout flow (flows/checkout.md) under Claude Code and under Codex, and prints what was
# allowed, what was blocked and why, and where the records are. No model account, no network
# after the install: the model is scripted (tests/scripts/checkout.toml) on 127.0.0.1.
#
# Usage: ./scripts/demo.sh [--harness claude|codex|all] [--dir DIR]   (default dir: target/leopold-demo)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

export_clis
# The worker's box (Debian's bubblewrap): the demo's runs are boxed, as every run is by default.
./scripts/install-box.sh >/dev/null

echo "demo: building leopold and the test kit (a few minutes on a fresh clone)..." >&2
cargo build -p leopold -p leopold-tests
target_dir="$(target_dir)"
export LEOPOLD_BIN="$target_dir/debug/leopold"

exec "$target_dir/debug/leopold-demo" "$@"
