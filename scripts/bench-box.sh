#!/usr/bin/env bash
# What the box costs (BENCHMARKS.md "The box"): `leopold persona run` with a fake worker that exits
# at once, N times, boxed and `--no-contain` alternating, side by side in one run. Reports medians:
# start -> worker spawned (the supervisor's own `__LEOPOLD_TIMINGS`: for the box that is bwrap
# spawned), launch -> the worker program actually running (the fake worker's CLOCK_MONOTONIC at its
# start against the benchmark's at launch: the box has no time namespace, so both read one clock),
# and the whole run's wall time.
#
#   ./scripts/bench-box.sh [RUNS]     (default 50 of each)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
n="${1:-50}"
# The fake worker gets its script through the test knobs: a release build with them.
cargo build --release -q --features leopold/test-knobs -p leopold -p leopold-tests --bin leopold --bin leopold-fake-worker
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bench_stamp scripts/bench-box.sh "$n"
python3 - "$n" "$target_dir/release" "$PWD/flows/checkout.md" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time
n, bindir, flow = int(sys.argv[1]), sys.argv[2], sys.argv[3]
leopold, fake = os.path.join(bindir, "leopold"), os.path.join(bindir, "leopold-fake-worker")
root = tempfile.mkdtemp(prefix="leopold-bench-box-")
project, home, kit = (os.path.join(root, d) for d in ("project", "home", "kit"))
os.makedirs(os.path.join(project, ".claude")); os.makedirs(os.path.join(home, ".codex")); os.makedirs(kit)
with open(os.path.join(project, ".claude/settings.json"), "w") as f: f.write('{"permissions":{"allow":["Read"]}}\n')
script, record = os.path.join(kit, "script"), os.path.join(kit, "record.json")
open(script, "w").write("@exit 0\n")
timings = os.path.join(root, "timings.json")
env = dict(os.environ, HOME=home, CODEX_HOME=os.path.join(home, ".codex"), FAKE_WORKER_SCRIPT=script,
           FAKE_WORKER_RECORD=record, __LEOPOLD_TIMINGS=timings, ANTHROPIC_BASE_URL="http://127.0.0.1:9",
           __LEOPOLD_BOX_PASS_ENV="FAKE_WORKER_SCRIPT,FAKE_WORKER_RECORD", __LEOPOLD_BOX_RW=kit)
res = {"boxed": {"planned": [], "spawn": [], "running": [], "wall": []},
       "no-contain": {"planned": [], "spawn": [], "running": [], "wall": []}}
for i in range(n):
    for mode in ("boxed", "no-contain"):
        extra = [] if mode == "boxed" else ["--no-contain"]
        t0 = time.monotonic_ns()
        r = subprocess.run([leopold, "persona", "run", flow, "--harness", "claude", "--project", project,
                            "--harness-bin", fake, "--quiet", *extra], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = (time.monotonic_ns() - t0) / 1e6
        assert r.returncode == 0, (mode, r)
        m = json.load(open(timings)); rec = json.load(open(record))
        d = res[mode]
        d["planned"].append(m["planned"] / 1000); d["spawn"].append(m["worker_spawned"] / 1000)
        d["running"].append((rec["mono_ns"] - t0) / 1e6); d["wall"].append(wall)
med = statistics.median
p90 = lambda xs: sorted(xs)[int(len(xs) * 0.9)]
print(f"runs: {n} of each, alternating (fake worker exits at once; claude harness)")
print(f"{'':34} {'boxed':>18} {'--no-contain':>18} {'box costs':>10}")
for key, label in (("planned", "start -> planned (incl. box probe)"), ("spawn", "start -> worker spawned"),
                   ("running", "launch -> worker running"), ("wall", "whole persona run (wall)")):
    b, u = res["boxed"][key], res["no-contain"][key]
    print(f"{label:34} {med(b):8.2f} (p90 {p90(b):6.2f}) {med(u):8.2f} (p90 {p90(u):6.2f}) {med(b) - med(u):+9.2f}  ms")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
