#!/usr/bin/env bash
# The tests: what a newcomer runs, and what CI runs (`.ci/run`). Installs what the tests need first.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# The real harness CLIs (pinned; cached after the first run), the provisioned browser and the
# worker's box, for the end-to-end suites.
export_real_runs

# The linters the Action's tests run (actionlint, ShellCheck, PyYAML; pip, pinned).
lint_dir="$(./scripts/install-lint.sh)"
export LEOPOLD_LINT_DIR="$lint_dir"

target_dir="$(target_dir)"
# `leopold` as `cargo build --release` builds it, without the test knobs (supervisor/src/knobs.rs),
# kept under its own name: a test proves that such a build reads none of them.
cargo build -p leopold
cp "$target_dir/debug/leopold" "$target_dir/debug/leopold-no-knobs"
export LEOPOLD_BIN_NO_KNOBS="$target_dir/debug/leopold-no-knobs"
# The `leopold` binary the end-to-end suites drive (another package: not built by nextest for
# them), with the test knobs the kit sets. nextest builds the workspace with the same feature
# (below), so its build leaves this binary as it is.
cargo build -p leopold --features test-knobs
export LEOPOLD_BIN="$target_dir/debug/leopold"

# The fake worker the supervisor's lifecycle tests drive.
cargo build -p leopold-tests --bin leopold-fake-worker
export LEOPOLD_FAKE_WORKER="$target_dir/debug/leopold-fake-worker"

# The runner: cargo-nextest (one process per test; `.config/nextest.toml` runs the real-CLI suites
# one at a time). Where it is missing, install the version this project is tested with; if that
# fails too (no registry, no compiler time), fall back to `cargo test`, saying so. Extra arguments
# go to whichever runner runs (`-E 'binary(e2e)'` is nextest's; `cargo test` takes its own).
NEXTEST_VERSION="0.9.143"
runner=nextest
if [[ "${LEOPOLD_TEST_RUNNER:-}" == cargo-test ]]; then
    runner=cargo-test
    echo "test.sh: LEOPOLD_TEST_RUNNER=cargo-test: running the tests with cargo test" >&2
elif ! cargo nextest --version >/dev/null 2>&1; then
    echo "test.sh: cargo-nextest not found: installing cargo-nextest $NEXTEST_VERSION (--locked)" >&2
    if cargo install cargo-nextest --version "$NEXTEST_VERSION" --locked >&2; then
        echo "test.sh: installed cargo-nextest $NEXTEST_VERSION; running the tests with it" >&2
    else
        runner=cargo-test
        echo "test.sh: could not install cargo-nextest: falling back to cargo test" >&2
    fi
fi

if [[ "$runner" == nextest ]]; then
    cargo nextest run --workspace --features leopold/test-knobs --no-fail-fast "$@"
else
    # nextest's test group, by hand: the real-CLI suites (package leopold-tests) one at a time.
    status=0
    cargo test --workspace --exclude leopold-tests --features leopold/test-knobs --no-fail-fast "$@" || status=$?
    cargo test -p leopold-tests --no-fail-fast "$@" -- --test-threads=1 || status=$?
    exit "$status"
fi
