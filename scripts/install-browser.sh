#!/usr/bin/env bash
# Installs what a provisioned persona browser needs, if it is not there yet:
#   - Debian's `chromium` (apt-get), only when /usr/bin/chromium is absent;
#   - the pinned `@playwright/mcp` (npm) into ${LEOPOLD_CACHE:-$HOME/.cache/leopold}/playwright-mcp.
# Idempotent and fast when present (no registry call then). Prints the path of the `playwright-mcp`
# binary on stdout; everything else goes to stderr.
#
# Why pinned: the tool names, argument shapes and result text (`- Page URL:`, `[ref=e5]`) the guard,
# the journal and the ref map rely on were observed on exactly this version (docs/harness-facts.md#8-a-real-browser-playwright-mcp-and-chromium).
# Playwright MCP is told where Chromium is (`executablePath`), so Playwright's own browser download
# is never needed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PLAYWRIGHT_MCP_VERSION="0.0.83"
CHROMIUM="${LEOPOLD_CHROMIUM:-/usr/bin/chromium}"

prefix="${LEOPOLD_CACHE:-$HOME/.cache/leopold}/playwright-mcp"
bin="$prefix/node_modules/.bin/playwright-mcp"

if [[ ! -x "$CHROMIUM" ]]; then
    if [[ "$CHROMIUM" != /usr/bin/chromium ]]; then
        echo "install-browser: LEOPOLD_CHROMIUM=$CHROMIUM is not an executable file" >&2
        exit 1
    fi
    apt_install install-browser chromium \
        "/usr/bin/chromium is absent and apt-get is not available; install Chromium and pass --chromium PATH"
    [[ -x "$CHROMIUM" ]] || { echo "install-browser: apt-get finished but $CHROMIUM is still absent" >&2; exit 1; }
fi

installed_version() {
    local pkg_json="$prefix/node_modules/@playwright/mcp/package.json"
    [[ -f "$pkg_json" ]] || { echo ""; return; }
    node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$pkg_json"
}

if [[ ! -x "$bin" || "$(installed_version)" != "$PLAYWRIGHT_MCP_VERSION" ]]; then
    command -v npm >/dev/null || { echo "install-browser: npm not found; install Node 20+ and npm" >&2; exit 1; }
    echo "install-browser: installing @playwright/mcp@$PLAYWRIGHT_MCP_VERSION into $prefix" >&2
    mkdir -p "$prefix"
    # Playwright would otherwise fetch its own browsers at install time; we use the system Chromium.
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "@playwright/mcp@$PLAYWRIGHT_MCP_VERSION" >&2
    [[ -x "$bin" && "$(installed_version)" == "$PLAYWRIGHT_MCP_VERSION" ]] || {
        echo "install-browser: installed, but $bin is missing or not version $PLAYWRIGHT_MCP_VERSION" >&2
        exit 1
    }
fi

"$CHROMIUM" --version >/dev/null 2>&1 || { echo "install-browser: $CHROMIUM --version failed" >&2; exit 1; }

echo "$bin"
