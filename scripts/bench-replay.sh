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
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
out=target/bench-journal
mkdir -p "$out"
cargo build --quiet --release -p leopold
cargo build --quiet --release -p leopold-journal --example gen_journal --example parse_floor
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!*.md' || echo ' (+ uncommitted changes)'); date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(jq --version)"
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

  rc=0
  /usr/bin/time -f '%e %M %U %S' -o "$out/time-leopold" \
    ./target/release/leopold persona replay "$f" --flow "$out/flow.md" > "$out/replay-$n.out" || rc=$?
  [ "$rc" = 1 ] || { echo "replay exited $rc (expected 1: violations)" >&2; exit 1; }
  l_viol=$(grep -c ': violation: ' "$out/replay-$n.out" || true)

  rc=0
  /usr/bin/time -f '%e %M %U %S' -o "$out/time-leopold1" \
    ./target/release/leopold persona replay --threads 1 "$f" --flow "$out/flow.md" > "$out/replay1-$n.out" || rc=$?
  [ "$rc" = 1 ] || { echo "replay --threads 1 exited $rc (expected 1: violations)" >&2; exit 1; }
  cmp -s "$out/replay-$n.out" "$out/replay1-$n.out" ||
    { echo "replay on one thread and on every CPU printed different findings" >&2; exit 1; }

  /usr/bin/time -f '%e %M %U %S' -o "$out/time-floor" \
    ./target/release/examples/parse_floor "$f" > "$out/floor-$n.out"
  grep -q "^parse_floor: $n actions parsed, 0 failed$" "$out/floor-$n.out" ||
    { echo "the floor did not parse every action: $(cat "$out/floor-$n.out")" >&2; exit 1; }

  /usr/bin/time -f '%e %M %U %S' -o "$out/time-hfloor" \
    ./target/release/examples/parse_floor --hash "$f" > "$out/hfloor-$n.out"
  grep -q "^parse_floor: $n actions parsed, 0 failed$" "$out/hfloor-$n.out" ||
    { echo "the hashing floor did not parse every action: $(cat "$out/hfloor-$n.out")" >&2; exit 1; }

  /usr/bin/time -f '%e %M %U %S' -o "$out/time-jq" jq -c "$jq_filter" "$f" > "$out/jq-$n.out"
  j_viol=$(wc -l < "$out/jq-$n.out")
  [ "$l_viol" = "$j_viol" ] || { echo "violations differ: leopold $l_viol, jq $j_viol" >&2; exit 1; }

  declare -A wall cpu
  for t in leopold leopold1 floor hfloor jq; do
    read -r w rss u sys < <(tail -n1 "$out/time-$t")
    wall[$t]=$w
    cpu[$t]=$(awk -v u="$u" -v s="$sys" 'BEGIN { print u + s }')
    case $t in leopold | leopold1) viol=$l_viol ;; jq) viol=$j_viol ;; *) viol=- ;; esac
    name=$t; [ $t = floor ] && name="parse floor"; [ $t = hfloor ] && name="parse+hash"
    [ $t = leopold ] && name="leopold ($(nproc) CPUs)"; [ $t = leopold1 ] && name="leopold 1 thr"
    printf '%-10s %-18s %8s %8s %12s %12s %6s MiB %10s\n' "$n" "$name" "$w" "${cpu[$t]}" \
      "$(awk -v n="$n" -v w="$w" 'BEGIN { printf "%.0f", (w > 0 ? n / w : 0) }')" \
      "$(awk -v n="$n" -v w="${cpu[$t]}" 'BEGIN { printf "%.0f", (w > 0 ? n / w : 0) }')" \
      "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$viol"
  done
  # Wall time is what the user waits for; replay's CPU time against the floor's (replay on one
  # thread, and all threads added up) is what the extra work costs.
  awk -v lw="${wall[leopold]}" -v lc="${cpu[leopold]}" -v l1w="${wall[leopold1]}" -v l1c="${cpu[leopold1]}" \
    -v fw="${wall[floor]}" -v fc="${cpu[floor]}" -v hw="${wall[hfloor]}" -v hc="${cpu[hfloor]}" \
    -v jw="${wall[jq]}" -v jc="${cpu[jq]}" 'BEGIN {
      printf "           jq / leopold: wall %.1fx, cpu %.1fx; leopold / parse floor: wall %.2fx, cpu %.2fx; leopold / parse+hash floor: wall %.2fx, cpu %.2fx\n",
        jw / lw, jc / lc, lw / fw, lc / fc, lw / hw, lc / hc
      printf "           one thread: jq / leopold: wall %.1fx; leopold / parse floor: wall %.2fx, cpu %.2fx; leopold / parse+hash floor: wall %.2fx, cpu %.2fx\n",
        jw / l1w, l1w / fw, l1c / fc, l1w / hw, l1c / hc }'
done
