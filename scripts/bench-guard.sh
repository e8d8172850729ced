#!/usr/bin/env bash
# Whole-process wall time of `leopold persona guard < payload` against `/bin/true < payload`, on
# the same payload, alternating, in one run; and the guard's peak RSS. BENCHMARKS.md "The guard".
#
#   ./scripts/bench-guard.sh [RUNS]                    (default 2000 runs of each)
#   BENCH_CALL=click ./scripts/bench-guard.sh [RUNS]   (an allowed click instead of a navigation)
#   BENCH_DYNAMIC=1 ./scripts/bench-guard.sh [RUNS]     (adds the same code linked dynamically, as
#                                                        LEOPOLD_DYNAMIC_LINK=1 builds it, as a peer;
#                                                        first run builds it in target/bench-dynamic)
#   BENCH_MMAP=1 ./scripts/bench-guard.sh [RUNS]        (adds the same binary written through a shared
#                                                        mmap, as the linker leaves it, as a peer)
#
# The payload is a realistic allowed navigation in an active project: the guard finds the project
# root from the payload's cwd, reads ACTIVE.json and the flow (flows/checkout.md, with
# irreversibility rules), judges the URL and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-2000}"
cargo build --release -p leopold --quiet
BIN="$PWD/target/release/leopold"
DYN=""
if [ -n "${BENCH_DYNAMIC:-}" ]; then
    LEOPOLD_DYNAMIC_LINK=1 CARGO_TARGET_DIR="$PWD/target/bench-dynamic" \
        cargo build --release -p leopold --quiet
    DYN="$PWD/target/bench-dynamic/release/leopold"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
proj="$work/proj"
mkdir -p "$proj/.leopold/persona" "$proj/flows" "$proj/web/app"
cp flows/checkout.md "$proj/flows/checkout.md"
cat > "$proj/.leopold/persona/ACTIVE.json" <<JSON
{"version":1,"active":true,"run_id":"bench","flow":"checkout","flow_path":"flows/checkout.md","harness":"claude","supervisor_pid":1,"started_at":"2026-01-01T00:00:00Z"}
JSON
if [ "${BENCH_CALL:-navigate}" = click ]; then
    tool='mcp__browser__browser_click'
    input='{"element":"Add to cart button","target":"e5"}'
else
    tool='mcp__browser__browser_navigate'
    input='{"url":"https://staging.example.com/products/42?ref=home"}'
fi
cat > "$work/payload.json" <<JSON
{"session_id":"0b6c0c1e-4a57-4c55-9d4b-3f1e2b1c9a10","transcript_path":"/root/.claude/projects/x/0b6c.jsonl","cwd":"$proj/web/app","prompt_id":"p1","permission_mode":"bypassPermissions","hook_event_name":"PreToolUse","tool_name":"$tool","tool_input":$input,"tool_use_id":"toolu_01ABCDEFGHIJKLMNOPQRSTUV","mcp_server":{"name":"browser","source":"dynamic"}}
JSON

# A third peer, for the floor of any Rust process: `fn main() {}` built with the same rustc.
echo 'fn main() {}' > "$work/empty.rs"
rustc -O -C panic=unwind -o "$work/empty-rust" "$work/empty.rs"

# Sanity: the payload is allowed, silently.
if ! out="$("$BIN" persona guard < "$work/payload.json" 2>&1)" || [ -n "$out" ]; then
    echo "bench-guard: the benchmark payload was not allowed silently: $out" >&2
    exit 1
fi
# Which binary is measured: static (the normal build) or dynamic (BENCHMARKS.md says why it matters).
# (Doctor exits 1 on this project's findings, such as its ACTIVE.json without a lock holder.)
{ "$BIN" doctor --json --project "$proj" || true; } | python3 -c '
import json, sys
for f in json.load(sys.stdin)["findings"]:
    if f["scope"] == "leopold" and f["check"] == "linking":
        print("measured binary:", f["message"].split(":")[0])'

MMAPPED=""
if [ -n "${BENCH_MMAP:-}" ]; then
    MMAPPED="$work/leopold-mmap-written"
    # The same bytes, written the way rust-lld writes its output: into a shared mapping of the
    # file, page by page. The page cache then holds it as 4 KiB pages, not large folios.
    python3 - "$BIN" "$MMAPPED" <<'PY'
import mmap, os, sys
data = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o755)
os.ftruncate(fd, len(data))
with mmap.mmap(fd, len(data), mmap.MAP_SHARED, mmap.PROT_WRITE) as m:
    for at in range(0, len(data), 4096):
        m[at:at + 4096] = data[at:at + 4096]
os.close(fd)
PY
fi

python3 - "$BIN" "$work/payload.json" "$RUNS" "$work/empty-rust" "$DYN" "$MMAPPED" <<'PY'
import os, sys, time, statistics
bin_, payload, runs, empty, dyn, mmapped = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
GUARD, TRUE = "leopold persona guard", "/bin/true"
cmds = {GUARD: [bin_, "persona", "guard"], TRUE: ["/bin/true"], "empty Rust main": [empty]}
if dyn:
    cmds["same, linked dynamically"] = [dyn, "persona", "guard"]
if mmapped:
    cmds["same, mmap-written"] = [mmapped, "persona", "guard"]
def once(argv):
    fd = os.open(payload, os.O_RDONLY)
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, fd, 0)])
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter_ns()
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return t1 - t0
for _ in range(50):  # warm the page cache and the CPU
    for argv in cmds.values():
        once(argv)
samples = {name: [] for name in cmds}
names = list(cmds)
for i in range(runs):
    # Rotate the order each round, so no peer always runs right after the same other.
    k = i % len(names)
    for name in names[k:] + names[:k]:
        samples[name].append(once(cmds[name]))
med = {k: statistics.median(v) / 1000 for k, v in samples.items()}
p90 = {k: statistics.quantiles(v, n=10)[8] / 1000 for k, v in samples.items()}
print(f"call: {os.environ.get('BENCH_CALL', 'navigate')}; runs each: {runs}, alternating")
width = max(map(len, cmds)) + 1
for name in cmds:
    print(f"{name + ':':{width}} median {med[name]:.0f} us, p90 {p90[name]:.0f} us")
for name in cmds:
    if name != TRUE:
        print(f"ratio {name} / {TRUE} (median): {med[name] / med[TRUE]:.2f}x")
PY

rss() { /usr/bin/time -f '%M' "$@" < "$work/payload.json" 2>&1 >/dev/null | tail -1; }
echo "peak RSS: leopold persona guard $(rss "$BIN" persona guard) KiB, /bin/true $(rss /bin/true) KiB, empty Rust $(rss "$work/empty-rust") KiB${DYN:+, dynamic $(rss "$DYN" persona guard) KiB}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
