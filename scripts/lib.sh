# What the scripts share; sourced (`. scripts/lib.sh` from the repository root, or beside the
# script), never run. The functions run under the sourcing script's `set -euo pipefail`.

# The pinned harness CLIs (installed on first use) as the suites and the demo find them.
export_clis() {
    local bin
    bin="$(./scripts/install-clis.sh)"
    export LEOPOLD_CLAUDE_BIN="$bin/claude"
    export LEOPOLD_CODEX_BIN="$bin/codex"
}

# The provisioned browser (Debian's chromium, pinned @playwright/mcp; installed on first use).
export_browser() {
    export LEOPOLD_PLAYWRIGHT_MCP="$(./scripts/install-browser.sh)"
    export LEOPOLD_CHROMIUM="${LEOPOLD_CHROMIUM:-/usr/bin/chromium}"
}

# All a boxed `persona run` on the real CLIs with the provisioned browser needs: the CLIs, the
# browser, and the worker's box (Debian's bubblewrap: `persona run` refuses without it,
# docs/security.md#the-box).
export_real_runs() {
    export_clis
    export_browser
    ./scripts/install-box.sh >/dev/null
}

# Cargo's target directory (CARGO_TARGET_DIR when set).
target_dir() {
    cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p'
}

# What every BENCHMARKS.md table states: the command (the arguments), the commit, the date, the
# load.
bench_stamp() {
    echo "command: $*; commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!*.md' || echo ' (+ uncommitted changes)'); date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
}

# `apt_install NAME PACKAGE WHY`: installs Debian's PACKAGE with apt-get (through sudo when not
# root; the package lists refreshed first, as a fresh machine has none), messages on stderr as
# NAME; WHY is the error where apt-get is not available.
apt_install() {
    local name="$1" pkg="$2" sudo=""
    command -v apt-get >/dev/null || { echo "$name: $3" >&2; exit 1; }
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null || { echo "$name: need root (or sudo) to apt-get install $pkg" >&2; exit 1; }
        sudo="sudo"
    fi
    echo "$name: installing Debian's $pkg with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq --no-install-recommends "$pkg" >&2
}

# `run_kit_bench BIN ARGS...`: the test kit's benchmark BIN (ARGS passed on) against the release
# `leopold`, as users run it, between the stamp and the load at the end.
run_kit_bench() {
    local bench="$1" dir
    shift
    cargo build --quiet --release -p leopold
    cargo build --quiet -p leopold-tests
    dir="$(target_dir)"
    export LEOPOLD_BIN="$dir/release/leopold"
    bench_stamp "scripts/$(basename "$0")" "$*"
    "$dir/debug/$bench" "$@"
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
}
