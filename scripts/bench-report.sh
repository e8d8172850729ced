#!/usr/bin/env bash
# Report benchmark (BENCHMARKS.md "Reports"): what writing report.html costs at the end of a run,
# and what `leopold persona report` costs on a long journal. Generated run directories of N
# actions (journal from the replay benchmark's generator, a run.json, a findings.md) are rendered
# with `leopold persona report`, beside the peer `leopold persona replay` on the same run directory
# (one streaming pass over the same journal, no page); reports wall time, CPU time, peak RSS
# (/usr/bin/time) and the page's size. Files stay in target/bench-report/ (not in git).
#
# Usage: scripts/bench-report.sh [N ...]     (default: 10 100 1000 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 100 1000 20000)
out="$PWD/target/bench-report"
mkdir -p "$out"
cargo build --quiet --release -p leopold
cargo build --quiet --release -p leopold-journal --example gen_journal
cp journal/tests/golden/flow.md "$out/flow.md"

bench_stamp scripts/bench-report.sh "$*"
printf '%-8s %-8s %8s %8s %10s %10s\n' actions tool "wall s" "cpu s" "peak RSS" "page"
for n in "${sizes[@]}"; do
  dir="$out/runs/run-$n"
  mkdir -p "$dir"
  [ -s "$dir/journal.jsonl" ] || ./target/release/examples/gen_journal "$n" "$dir/journal.jsonl"
  cat > "$dir/run.json" <<JSON
{"version":1,"active":false,"run_id":"run-$n","flow":"checkout","flow_path":"$out/flow.md","harness":"claude","supervisor_pid":1,"worker_pid":2,"started_at":"2026-11-30T10:00:00.000Z","wiring":[],"end":{"outcome":"clean","exit_code":0,"ended_at":"2026-11-30T10:05:00.000Z","counts":{"actions":$n,"completed":$n,"errored":0,"denied":0,"violations":0,"unreadable_lines":0},"worker_status":"exit 0"}}
JSON
  printf '# Findings\n\nThe cart page was slow.\n' > "$dir/findings.md"
  cat "$dir/journal.jsonl" > /dev/null # warm the page cache
  for tool in report replay; do
    rc=0
    /usr/bin/time -f '%e %M %U %S' -o "$out/time" ./target/release/leopold persona "$tool" "$dir" > /dev/null || rc=$?
    # replay exits 1 on the generator's violations (one per 1000 actions)
    [ "$rc" = 0 ] || { [ "$tool" = replay ] && [ "$rc" = 1 ]; } || { echo "$tool exited $rc" >&2; exit 1; }
    read -r wall rss usr sys < <(tail -n1 "$out/time")
    page="-"
    [ "$tool" = report ] && page="$(( $(stat -c %s "$dir/report.html") / 1024 )) KiB"
    printf '%-8s %-8s %8s %8s %6s MiB %10s\n' "$n" "$tool" "$wall" \
      "$(awk -v u="$usr" -v s="$sys" 'BEGIN { print u + s }')" \
      "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$page"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
