#!/usr/bin/env bash
# Installs the pinned harness CLIs the end-to-end tests and the demo drive, into a cache folder,
# if they are not there yet. Idempotent and fast when present (no registry call then).
# Prints the bin directory holding `claude` and `codex` on stdout; everything else goes to stderr.
#
# Why pinned: hook semantics change between releases (`onFailure` exists only from 2.1.295),
# and every fact the tests rely on was observed on exactly these versions (docs/harness-facts.md#7-installing-the-clis).
set -euo pipefail

CLAUDE_VERSION="2.1.332"
CODEX_VERSION="0.171.0"

prefix="${LEOPOLD_CACHE:-$HOME/.cache/leopold}/npm"
bin="$prefix/node_modules/.bin"

installed_version() {
    # The version recorded in the installed package's own package.json ("" when absent).
    local pkg_json="$prefix/node_modules/$1/package.json"
    [[ -f "$pkg_json" ]] || { echo ""; return; }
    node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$pkg_json"
}

have_all() {
    [[ -x "$bin/claude" && -x "$bin/codex" ]] &&
        [[ "$(installed_version @anthropic-ai/claude-code)" == "$CLAUDE_VERSION" ]] &&
        [[ "$(installed_version @openai/codex)" == "$CODEX_VERSION" ]]
}

if ! have_all; then
    command -v npm >/dev/null || { echo "install-clis: npm not found; install Node 20+ and npm" >&2; exit 1; }
    echo "install-clis: installing @anthropic-ai/claude-code@$CLAUDE_VERSION and @openai/codex@$CODEX_VERSION into $prefix" >&2
    mkdir -p "$prefix"
    # Claude's package warns it wants Node 22; its native binary runs on Node 20 regardless.
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
    have_all || { echo "install-clis: installed, but the versions in $prefix do not match the pins" >&2; exit 1; }
fi

# The binaries themselves must answer with the pinned versions (the platform packages carry them).
claude_v="$("$bin/claude" --version 2>/dev/null || true)"
codex_v="$("$bin/codex" --version 2>/dev/null || true)"
[[ "$claude_v" == *"$CLAUDE_VERSION"* ]] || { echo "install-clis: $bin/claude --version says '$claude_v', want $CLAUDE_VERSION" >&2; exit 1; }
[[ "$codex_v" == *"$CODEX_VERSION"* ]] || { echo "install-clis: $bin/codex --version says '$codex_v', want $CODEX_VERSION" >&2; exit 1; }

echo "$bin"
