#!/bin/sh
# Cargo's `rustc-workspace-wrapper` (.cargo/config.toml): runs as `rustc-leopold.sh RUSTC ARGS...`
# for every crate of this workspace, and passes all of them through unchanged except the
# `leopold` binary itself, which it links statically and writes out page-cache friendly.
#
# Why: `leopold persona guard` is started before every browser tool call, so its process start-up
# is its cost (issue #2: within 1.5x of `/bin/true`). Measured on the guard path
# (BENCHMARKS.md, "The guard"):
#   - a dynamically linked 5 MB binary spends most of its run in ld.so: mapping libc, libm and
#     libgcc_s, binding every imported symbol, relocating. A static, non-PIE link has none of it.
#     `-C target-feature=+crt-static` cannot go in `rustflags`: without `--target` those apply to
#     proc-macro crates too, which rustc refuses to build with a static CRT. Passed here, it
#     reaches only the final link of this one binary.
#   - the linker (rust-lld) writes its output through a shared mmap, which leaves the file in the
#     page cache as single 4 KiB pages; every exec then faults the code in page by page, 0.6 ms
#     more per call than the same bytes written with large writes (large folios). So the binary
#     is rewritten once with `cat` (128 KiB writes) and renamed over itself.
#
# Off switch: LEOPOLD_DYNAMIC_LINK=1 links as rustc would by default. Static linking also needs
# the C library's static archive (libc.a: Debian/Ubuntu `libc6-dev`, Fedora `glibc-static`); if
# `cc` (the linker rustc runs) cannot find it, the binary is linked dynamically and a warning says so.
set -eu

leopold_bin=false
name='' crate_type='' out_dir='' extra='' emit_link=false target=''
prev=''
for arg in "$@"; do
    case "$prev" in
    --crate-name) name=$arg ;;
    --crate-type) crate_type=$arg ;;
    --out-dir) out_dir=$arg ;;
    --target) target=$arg ;;
    --emit) case ",$arg," in *,link,*) emit_link=true ;; esac ;;
    -C) case "$arg" in extra-filename=*) extra=${arg#extra-filename=} ;; esac ;;
    esac
    case "$arg" in --emit=*) case ",${arg#--emit=}," in *,link,*) emit_link=true ;; esac ;; esac
    prev=$arg
done
[ "$name" = leopold ] && [ "$crate_type" = bin ] && leopold_bin=true

if ! $leopold_bin; then
    exec "$@"
fi

static=true
if [ -n "${LEOPOLD_DYNAMIC_LINK:-}" ]; then
    static=false
elif [ "$(uname -s)" != Linux ]; then
    static=false
else
    case "$target" in
    '' | *-linux-gnu* | *-linux-musl*) ;;
    *) static=false ;;
    esac
fi
if $static; then
    libc_a=$(cc -print-file-name=libc.a 2>/dev/null || true)
    case "$libc_a" in
    /*) ;;
    *)
        echo "warning: leopold: no static C library (libc.a) found; linking \`leopold\` dynamically, which makes every \`leopold persona guard\` call start about 2x slower (install libc6-dev or glibc-static)" >&2
        static=false
        ;;
    esac
fi

if $static; then
    "$@" -C target-feature=+crt-static -C relocation-model=static
else
    "$@"
fi

bin="$out_dir/leopold$extra"
if $emit_link && [ -n "$out_dir" ] && [ -f "$bin" ]; then
    tmp="$bin.rewrite.$$"
    cat "$bin" >"$tmp"
    chmod +x "$tmp"
    mv -f "$tmp" "$bin"
fi
