#!/usr/bin/env bash
# Installs what the worker's box needs, if it is not there yet: Debian's `bubblewrap` (apt-get),
# only when `bwrap` is absent. Idempotent and fast when present (no package manager call then).
# Prints the path of `bwrap` on stdout; everything else goes to stderr. docs/security.md#the-box.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if ! command -v bwrap >/dev/null; then
    apt_install install-box bubblewrap \
        "bwrap is absent and apt-get is not available; install bubblewrap with your package manager"
fi

bwrap="$(command -v bwrap)"
# The box needs namespaces, not just the program: build a trivial one.
"$bwrap" --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
    --proc /proc --dev /dev --unshare-all --die-with-parent --new-session -- /usr/bin/true \
    || { echo "install-box: $bwrap cannot create namespaces here (a container without user/network namespaces?); \`persona run\` will refuse without --no-contain" >&2; exit 1; }
echo "$bwrap"
