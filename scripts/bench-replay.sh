#!/usr/bin/env bash
# Journal replay benchmark (BENCHMARKS.md "Journal replay"): `leopold persona replay` (on every
# CPU, its default, and with `--threads 1`) against three peers on the same file, in one run: the parse-only floor (journal/examples/parse_floor.rs:
# the same reader, each line into a borrowed struct, nothing else), the same floor that also
# hashes every line (`--hash`: the work a replay checking the hash chain cannot skip), and a `jq`
# host check. Generated journals (hash-chained, as the supervisor writes them) of 1M and 10M
# actions. Reports wall and CPU time, actions per second, peak RSS
# (/usr/bin/time), the ratios, and checks that replay and jq found the same violations and that
# the floor parsed every action.
#
# Usage: scripts/bench-replay.sh [N ...]     (default: 1000000 10000000)
#   LEOPOLD_BENCH_ROUNDS (default 3): rounds of the five tools per size, medians reported.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
rounds="${LEOPOLD_BENCH_ROUNDS:-3}"
out=target/bench-journal
mkdir -p "$out"
cargo build --quiet --release -p leopold
cargo build --quiet --release -p leopold-journal --example gen_journal --example parse_floor
echo "rounds: $rounds; commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!*.md' || echo ' (+ uncommitted changes)'); date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(jq --version)"
cp journal/tests/golden/flow.md "$out/flow.md"

# The peer: the same host check in jq (allowlist staging.example.com and its subdomains; denied
# actions skipped), one line per offending action with its line number, like replay prints.
jq_filter='select(.seq != null and .outcome != "denied")
  | select(any(.urls[]?; .host != null and .host != "staging.example.com"
                         and (.host | endswith(".staging.example.com") | not)))
  | {line: input_line_number, seq, host: first(.urls[].host)}'

# Wall time is what a user waits; CPU time (user + sys) is steadier on a shared machine. Both
# throughputs are printed, with the load average at the start of each size.
printf '%-10s %-18s %8s %8s %12s %12s %10s %10s\n' actions tool "wall s" "cpu s" "act/s wall" "act/s cpu" "peak RSS" violations
for n in "${sizes[@]}"; do
  f="$out/journal-$n.jsonl"
  [ -s "$f" ] || ./target/release/examples/gen_journal "$n" "$f"
  cat "$f" > /dev/null # warm the page cache for all three
  echo "# $n actions, $(du -h "$f" | cut -f1) on disk; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

  # Each round runs the five tools once, each round starting one tool later: the machine's
  # speed drifts by a third over minutes here, and a tool always timed first or last would carry
  # the drift into the ratios. The medians over the rounds are reported, and the range of the
  # per-round ratios shows the drift.
  tools=(leopold leopold1 floor hfloor jq)
  for t in "${tools[@]}"; do : > "$out/times-$t"; done
  for ((r = 0; r < rounds; r++)); do
    for ((k = 0; k < ${#tools[@]}; k++)); do
      t=${tools[$(((r + k) % ${#tools[@]}))]}
      rc=0
      case $t in
        leopold) /usr/bin/time -f '%e %M %U %S' -o "$out/time-$t" \
          ./target/release/leopold persona replay "$f" --flow "$out/flow.md" > "$out/replay-$n.out" || rc=$?
          [ "$rc" = 1 ] || { echo "replay exited $rc (expected 1: violations)" >&2; exit 1; } ;;
        leopold1) /usr/bin/time -f '%e %M %U %S' -o "$out/time-$t" \
          ./target/release/leopold persona replay --threads 1 "$f" --flow "$out/flow.md" > "$out/replay1-$n.out" || rc=$?
          [ "$rc" = 1 ] || { echo "replay --threads 1 exited $rc (expected 1: violations)" >&2; exit 1; } ;;
        floor) /usr/bin/time -f '%e %M %U %S' -o "$out/time-$t" \
          ./target/release/examples/parse_floor "$f" > "$out/floor-$n.out"
          grep -q "^parse_floor: $n actions parsed, 0 failed$" "$out/floor-$n.out" ||
            { echo "the floor did not parse every action: $(cat "$out/floor-$n.out")" >&2; exit 1; } ;;
        hfloor) /usr/bin/time -f '%e %M %U %S' -o "$out/time-$t" \
          ./target/release/examples/parse_floor --hash "$f" > "$out/hfloor-$n.out"
          grep -q "^parse_floor: $n actions parsed, 0 failed$" "$out/hfloor-$n.out" ||
            { echo "the hashing floor did not parse every action: $(cat "$out/hfloor-$n.out")" >&2; exit 1; } ;;
        jq) /usr/bin/time -f '%e %M %U %S' -o "$out/time-$t" jq -c "$jq_filter" "$f" > "$out/jq-$n.out" ;;
      esac
      tail -n1 "$out/time-$t" | sed "s/^/$r /" >> "$out/times-$t"
    done
    [ ! -s "$out/replay1-$n.out" ] || cmp -s "$out/replay-$n.out" "$out/replay1-$n.out" ||
      { echo "replay on one thread and on every CPU printed different findings" >&2; exit 1; }
  done
  l_viol=$(grep -c ': violation: ' "$out/replay-$n.out" || true)
  j_viol=$(wc -l < "$out/jq-$n.out")
  [ "$l_viol" = "$j_viol" ] || { echo "violations differ: leopold $l_viol, jq $j_viol" >&2; exit 1; }

  python3 - "$out" "$n" "$(nproc)" "$l_viol" "$j_viol" <<'PY'
import statistics, sys
out, n, cpus, lv, jv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
runs = {}
for t in ("leopold", "leopold1", "floor", "hfloor", "jq"):
    rows = [l.split() for l in open(f"{out}/times-{t}") if l.strip()]
    # round, wall, peak RSS (KiB), user, sys
    runs[t] = {int(r[0]): (float(r[1]), float(r[3]) + float(r[4]), int(r[2])) for r in rows}
med = lambda t, i: statistics.median(v[i] for v in runs[t].values())
names = {"leopold": f"leopold ({cpus} CPUs)", "leopold1": "leopold 1 thr", "floor": "parse floor",
         "hfloor": "parse+hash", "jq": "jq"}
for t, name in names.items():
    w, c = med(t, 0), med(t, 1)
    viol = lv if t.startswith("leopold") else jv if t == "jq" else "-"
    rss = max(v[2] for v in runs[t].values()) / 1024
    print(f"{n:<10} {name:<18} {w:8.2f} {c:8.2f} {n / w:12.0f} {n / c:12.0f} {rss:6.1f} MiB {viol:>10}")
def ratio(a, b, i):
    per = sorted(runs[a][r][i] / runs[b][r][i] for r in runs[a] if r in runs[b])
    return f"{med(a, i) / med(b, i):.2f}x ({per[0]:.2f}-{per[-1]:.2f})"
print(f"           medians of {len(runs['leopold'])} rounds (per-round range in brackets)")
print(f"           jq / leopold: wall {med('jq', 0) / med('leopold', 0):.1f}x, cpu {med('jq', 1) / med('leopold', 1):.1f}x; "
      f"leopold / parse floor: wall {ratio('leopold', 'floor', 0)}, cpu {ratio('leopold', 'floor', 1)}; "
      f"leopold / parse+hash floor: wall {ratio('leopold', 'hfloor', 0)}, cpu {ratio('leopold', 'hfloor', 1)}")
print(f"           one thread: jq / leopold: wall {med('jq', 0) / med('leopold1', 0):.1f}x; "
      f"leopold / parse floor: wall {ratio('leopold1', 'floor', 0)}, cpu {ratio('leopold1', 'floor', 1)}; "
      f"leopold / parse+hash floor: wall {ratio('leopold1', 'hfloor', 0)}, cpu {ratio('leopold1', 'hfloor', 1)}")
PY
done
