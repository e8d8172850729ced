#!/usr/bin/env bash
# Installs the peer hooks `scripts/bench-guard.sh --peers` measures beside the guard
# (BENCHMARKS.md "The guard"), pinned, into ~/.cache/leopold/peers (never into the repo).
# Idempotent: a peer already installed at its pinned version is left alone (no registry call).
#
#   cc-safety-net   npm     (Node)     peers/npm/node_modules/.bin/cc-safety-net
#   nah             PyPI    (Python)   peers/nah/bin/nah
#   dcg             crates.io (Rust)   peers/dcg/bin/dcg   (destructive_command_guard; built
#                                      from source with the stable toolchain, see below;
#                                      optional: a build failure is reported, and
#                                      bench-guard.sh then says so)
#
# With --installed-only, installs nothing: reports what is there (bench-guard.sh passes it when
# BENCH_PEERS_INSTALLED_ONLY=1, e.g. while dcg's first build still runs).
#
# Prints one line per peer on stdout: `name<TAB>path` for an installed peer, `name<TAB>-<TAB>why`
# for one that could not be installed. Everything else goes to stderr.
set -euo pipefail

CC_SAFETY_NET_VERSION="2.4.5"
NAH_VERSION="0.11.0"
DCG_CRATE="destructive_command_guard"
DCG_VERSION="0.16.0"

installed_only=""
[[ "${1:-}" == --installed-only ]] && installed_only=1

root="${LEOPOLD_CACHE:-$HOME/.cache/leopold}/peers"
mkdir -p "$root"

# cc-safety-net (npm): its package.json records the version installed.
npm_prefix="$root/npm"
npm_bin="$npm_prefix/node_modules/.bin/cc-safety-net"
npm_have() {
    [[ -x "$npm_bin" ]] && [[ "$(node -e 'process.stdout.write(require(process.argv[1]).version)' \
        "$npm_prefix/node_modules/cc-safety-net/package.json" 2>/dev/null)" == "$CC_SAFETY_NET_VERSION" ]]
}
if [[ -z "$installed_only" ]] && ! npm_have; then
    echo "install-peers: cc-safety-net@$CC_SAFETY_NET_VERSION into $npm_prefix" >&2
    mkdir -p "$npm_prefix"
    npm install --prefix "$npm_prefix" --no-audit --no-fund --loglevel=error \
        "cc-safety-net@$CC_SAFETY_NET_VERSION" >&2
fi
if npm_have; then
    printf 'cc-safety-net\t%s\n' "$npm_bin"
else
    printf 'cc-safety-net\t-\tnpm install did not leave version %s\n' "$CC_SAFETY_NET_VERSION"
fi

# nah (PyPI): a virtual environment of its own.
venv="$root/nah"
nah_have() {
    [[ -x "$venv/bin/nah" ]] &&
        [[ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("nah"))' 2>/dev/null)" == "$NAH_VERSION" ]]
}
if [[ -z "$installed_only" ]] && ! nah_have; then
    echo "install-peers: nah==$NAH_VERSION into $venv" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "nah==$NAH_VERSION" >&2
fi
if nah_have; then
    printf 'nah\t%s\n' "$venv/bin/nah"
else
    printf 'nah\t-\tpip install did not leave version %s\n' "$NAH_VERSION"
fi

# dcg (crates.io): built from its published source with its own Cargo.lock, on the toolchain that
# is here. Its rust-toolchain.toml pins a nightly, which cannot be downloaded here, so the stable
# toolchain is forced (its code uses no nightly feature; its config's one nightly build flag is
# dropped, below); the one locked crate this registry lacks
# (webpki-roots 1.0.11, pulled in by its self-updater) is set to the release before it. Past
# the first build (about 500 crates) nothing is rebuilt.
dcg_root="$root/dcg"
dcg_bin="$dcg_root/bin/dcg"
dcg_stamp="$dcg_root/.version"
log="$root/dcg-build.log"
if [[ -z "$installed_only" ]] &&
    [[ ! -x "$dcg_bin" || "$(cat "$dcg_stamp" 2>/dev/null)" != "$DCG_VERSION" ]]; then
    echo "install-peers: $DCG_CRATE $DCG_VERSION into $dcg_root ($(rustc --version)); log: $log" >&2
    src="$root/dcg-src/$DCG_CRATE-$DCG_VERSION"
    (
        set -e
        if [[ ! -f "$src/Cargo.toml" ]]; then
            mkdir -p "$root/dcg-src"
            # `cargo install --locked` resolves and downloads the crate, then stops on the
            # missing lock entry; its download is the published .crate file.
            cargo install --locked --root "$dcg_root" "$DCG_CRATE" --version "$DCG_VERSION" || true
            crate="$(ls "$HOME"/.cargo/registry/cache/*/"$DCG_CRATE-$DCG_VERSION.crate" | head -n1)"
            tar -xzf "$crate" -C "$root/dcg-src"
        fi
        cd "$src"
        export RUSTUP_TOOLCHAIN=stable
        # Its .cargo/config.toml adds `-Z threads=4` (nightly's parallel front end, speed only);
        # RUSTFLAGS set, even empty, takes the place of that config's.
        export RUSTFLAGS=""
        cargo update --offline -p webpki-roots --precise 1.0.10 ||
            cargo update -p webpki-roots --precise 1.0.10
        # Its lock names vergen 10.0.3 (a build-time dependency), which declares rustc 1.96; the
        # compiler decides whether it really builds.
        cargo build --release --locked --ignore-rust-version --bin dcg
        mkdir -p "$dcg_root/bin"
        cp "target/release/dcg" "$dcg_bin.tmp" && mv "$dcg_bin.tmp" "$dcg_bin"
        echo "$DCG_VERSION" > "$dcg_stamp"
    ) > "$log" 2>&1 || {
        echo "install-peers: building $DCG_CRATE $DCG_VERSION failed; the last lines of $log:" >&2
        tail -n 15 "$log" >&2
    }
fi
if [[ -x "$dcg_bin" && "$(cat "$dcg_stamp" 2>/dev/null)" == "$DCG_VERSION" ]]; then
    printf 'dcg\t%s\n' "$dcg_bin"
elif [[ -n "$installed_only" ]]; then
    printf 'dcg\t-\tnot built yet (--installed-only)\n'
else
    printf 'dcg\t-\t%s %s did not build with %s (its own pin is a nightly; see %s)\n' \
        "$DCG_CRATE" "$DCG_VERSION" "$(rustc --version | cut -d' ' -f1-2)" "$log"
fi
