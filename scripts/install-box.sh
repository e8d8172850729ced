#!/usr/bin/env bash
# Installs what the worker's box needs, if it is not there yet: Debian's `bubblewrap` (apt-get),
# only when `bwrap` is absent. Idempotent and fast when present (no package manager call then).
# Prints the path of `bwrap` on stdout; everything else goes to stderr. docs/security.md#the-box.
set -euo pipefail

if ! command -v bwrap >/dev/null; then
    command -v apt-get >/dev/null || {
        echo "install-box: bwrap is absent and apt-get is not available; install bubblewrap with your package manager" >&2
        exit 1
    }
    sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null || { echo "install-box: need root (or sudo) to apt-get install bubblewrap" >&2; exit 1; }
        sudo="sudo"
    fi
    echo "install-box: installing Debian's bubblewrap with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -qq --no-install-recommends bubblewrap >&2 \
        || { $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq --no-install-recommends bubblewrap >&2; }
fi

bwrap="$(command -v bwrap)"
# The box needs namespaces, not just the program: build a trivial one.
"$bwrap" --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
    --proc /proc --dev /dev --unshare-all --die-with-parent --new-session -- /usr/bin/true \
    || { echo "install-box: $bwrap cannot create namespaces here (a container without user/network namespaces?); \`persona run\` will refuse without --no-contain" >&2; exit 1; }
echo "$bwrap"
