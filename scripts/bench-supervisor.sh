#!/usr/bin/env bash
# The supervisor's own overhead (BENCHMARKS.md "Supervisor overhead"): `leopold persona run` with a
# fake worker that exits at once, N times, side by side with the fake worker run directly.
# Reports medians: start→worker spawn and worker exit→fully unwired (from the supervisor's own
# monotonic timings, `__LEOPOLD_TIMINGS`), and the whole run's wall time against the bare worker's.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-50}"
cargo build --release -q -p leopold -p leopold-tests --bin leopold --bin leopold-fake-worker
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
python3 - "$n" "$target_dir/release" "$PWD/flows/checkout.md" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time
n, bindir, flow = int(sys.argv[1]), sys.argv[2], sys.argv[3]
leopold, fake = os.path.join(bindir, "leopold"), os.path.join(bindir, "leopold-fake-worker")
root = tempfile.mkdtemp(prefix="leopold-bench-")
project, home = os.path.join(root, "project"), os.path.join(root, "home")
os.makedirs(os.path.join(project, ".claude")); os.makedirs(os.path.join(home, ".codex"))
with open(os.path.join(project, ".claude/settings.json"), "w") as f: f.write('{"permissions":{"allow":["Read"]}}\n')
script = os.path.join(root, "script"); open(script, "w").write("@exit 0\n")
timings = os.path.join(root, "timings.json")
env = dict(os.environ, HOME=home, CODEX_HOME=os.path.join(home, ".codex"), FAKE_WORKER_SCRIPT=script, __LEOPOLD_TIMINGS=timings)
spawn, unwire, wall_run, wall_bare, marks = [], [], [], [], []
for i in range(n):
    # Side by side: the bare worker, then the supervised run, alternating.
    t = time.perf_counter(); subprocess.run([fake, "-p", "x"], env=env, check=True, stdout=subprocess.DEVNULL); wall_bare.append(time.perf_counter() - t)
    t = time.perf_counter()
    r = subprocess.run([leopold, "persona", "run", flow, "--harness", "claude", "--project", project, "--harness-bin", fake, "--quiet"], env=env, stdout=subprocess.DEVNULL)
    wall_run.append(time.perf_counter() - t)
    assert r.returncode == 0, r
    m = json.load(open(timings)); marks.append(m)
    spawn.append(m["worker_spawned"] / 1000); unwire.append((m["unwired"] - m["worker_exit_seen"]) / 1000)
med = statistics.median
print(f"runs: {n}")
print(f"start -> worker spawned (in-process):   median {med(spawn):.2f} ms, p90 {sorted(spawn)[int(n*0.9)]:.2f} ms")
print(f"worker exit -> fully unwired:           median {med(unwire):.2f} ms, p90 {sorted(unwire)[int(n*0.9)]:.2f} ms")
print(f"whole `persona run` wall:               median {med(wall_run)*1000:.2f} ms")
print(f"bare fake worker wall (peer):           median {med(wall_bare)*1000:.2f} ms")
steps = ["planned", "locked", "recovered", "active_written", "wired", "settings_written", "proved", "worker_spawned"]
prev = 0.0
for s in steps:
    t = med([x[s] / 1000 for x in marks]); print(f"  {s:<18} at {t:7.2f} ms (+{t - prev:6.2f})"); prev = t
print(f"supervisor overhead per run:            {(med(wall_run)-med(wall_bare))*1000:.2f} ms ({med(wall_run)/med(wall_bare):.1f}x the bare worker)")
PY
