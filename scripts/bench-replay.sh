#!/usr/bin/env bash
# Journal replay benchmark (BENCHMARKS.md "Journal replay"): `leopold persona replay` against the
# peer, a `jq` host check on the same file, on generated journals of 1M and 10M actions.
# Reports wall time, actions per second and peak RSS (/usr/bin/time), and checks that both found
# the same number of violations. Generated files stay in target/bench-journal/ (not in git).
#
# Usage: scripts/bench-replay.sh [N ...]     (default: 1000000 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
out=target/bench-journal
mkdir -p "$out"
cargo build --quiet --release -p leopold
cargo build --quiet --release -p leopold-journal --example gen_journal
cp journal/tests/golden/flow.md "$out/flow.md"

# The peer: the same host check in jq (allowlist staging.example.com and its subdomains; denied
# actions skipped), one line per offending action with its line number, like replay prints.
jq_filter='select(.seq != null and .outcome != "denied")
  | select(any(.urls[]?; .host != null and .host != "staging.example.com"
                         and (.host | endswith(".staging.example.com") | not)))
  | {line: input_line_number, seq, host: first(.urls[].host)}'

# Wall time is what a user waits; CPU time (user + sys) is steadier on a shared machine. Both
# throughputs are printed, with the load average at the start of each size.
printf '%-10s %-8s %8s %8s %12s %12s %10s %10s\n' actions tool "wall s" "cpu s" "act/s wall" "act/s cpu" "peak RSS" violations
for n in "${sizes[@]}"; do
  f="$out/journal-$n.jsonl"
  [ -s "$f" ] || ./target/release/examples/gen_journal "$n" "$f"
  cat "$f" > /dev/null # warm the page cache for both
  echo "# $n actions, $(du -h "$f" | cut -f1) on disk; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

  rc=0
  /usr/bin/time -f '%e %M %U %S' -o "$out/time-leopold" \
    ./target/release/leopold persona replay "$f" --flow "$out/flow.md" > "$out/replay-$n.out" || rc=$?
  [ "$rc" = 1 ] || { echo "replay exited $rc (expected 1: violations)" >&2; exit 1; }
  read -r l_wall l_rss l_usr l_sys < <(tail -n1 "$out/time-leopold")
  l_viol=$(grep -c ': violation: ' "$out/replay-$n.out" || true)

  /usr/bin/time -f '%e %M %U %S' -o "$out/time-jq" jq -c "$jq_filter" "$f" > "$out/jq-$n.out"
  read -r j_wall j_rss j_usr j_sys < <(tail -n1 "$out/time-jq")
  j_viol=$(wc -l < "$out/jq-$n.out")

  [ "$l_viol" = "$j_viol" ] || { echo "violations differ: leopold $l_viol, jq $j_viol" >&2; exit 1; }
  for t in leopold jq; do
    if [ $t = leopold ]; then
      wall=$l_wall rss=$l_rss cpu=$(awk -v u="$l_usr" -v s="$l_sys" 'BEGIN { print u + s }') viol=$l_viol
    else
      wall=$j_wall rss=$j_rss cpu=$(awk -v u="$j_usr" -v s="$j_sys" 'BEGIN { print u + s }') viol=$j_viol
    fi
    printf '%-10s %-8s %8s %8s %12s %12s %6s MiB %10s\n' "$n" "$t" "$wall" "$cpu" \
      "$(awk -v n="$n" -v w="$wall" 'BEGIN { printf "%.0f", (w > 0 ? n / w : 0) }')" \
      "$(awk -v n="$n" -v w="$cpu" 'BEGIN { printf "%.0f", (w > 0 ? n / w : 0) }')" \
      "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$viol"
  done
  awk -v a="$l_wall" -v b="$j_wall" -v c="$l_usr" -v d="$l_sys" -v e="$j_usr" -v f="$j_sys" \
    'BEGIN { printf "           jq / leopold: wall %.1fx, cpu %.1fx\n", b / a, (e + f) / (c + d) }'
done
