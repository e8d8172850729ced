#!/usr/bin/env bash
# The supervisor's own overhead (BENCHMARKS.md "Supervisor overhead"): `leopold persona run` with a
# fake worker that exits at once, boxed and `--no-contain`, each quiet and beside a neighbour that
# writes with fsync in a loop, all in one run, in short alternating bursts.
#
# Reports medians: start -> worker spawned and worker exit -> fully unwired (from the supervisor's
# own monotonic timings, `__LEOPOLD_TIMINGS`), the whole run's wall time against the fake worker
# run directly, the fsyncs a run makes (the supervisor's count, and strace's as a witness when
# strace is installed), and the load average before and after.
#
# Usage: scripts/bench-supervisor.sh [RUNS_PER_CONFIG] [BURST]
#   RUNS_PER_CONFIG (default 40): runs per configuration;
#   BURST (default 5): runs of one configuration before the next takes its turn.
#   LEOPOLD_BENCH_BASELINE=DIR: also time the `leopold` in DIR (e.g. an older release build) in
#   the same bursts, for a before/after under the same load.
# The neighbour runs only during its configurations' bursts, in a temp dir on the project's file
# system, and stops by itself (a deadline, and when this script's python goes away).
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-40}"
burst="${2:-5}"
# The fake worker gets its script through the test knobs: a release build with them.
cargo build --release -q --features leopold/test-knobs -p leopold -p leopold-tests --bin leopold --bin leopold-fake-worker
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
echo "command: scripts/bench-supervisor.sh $n $burst"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- supervisor journal guard flows || echo ' (+ uncommitted changes)')"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# The temp dirs go next to the target dir: the same file system as a project would be on (not a
# tmpfs /tmp, where fsync costs nothing).
python3 - "$n" "$burst" "$target_dir/release" "$PWD/flows/checkout.md" "$target_dir" <<'PY'
import json, os, shutil, statistics, subprocess, sys, tempfile, time
n, burst, bindir, flow, scratch = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
leopold, fake = os.path.join(bindir, "leopold"), os.path.join(bindir, "leopold-fake-worker")
baseline = os.environ.get("LEOPOLD_BENCH_BASELINE")
bins = {"": leopold}
if baseline: bins["baseline "] = os.path.join(baseline, "leopold")
root = tempfile.mkdtemp(prefix="leopold-bench-", dir=scratch)
project, home = os.path.join(root, "project"), os.path.join(root, "home")
os.makedirs(os.path.join(project, ".claude")); os.makedirs(os.path.join(home, ".codex"))
with open(os.path.join(project, ".claude/settings.json"), "w") as f: f.write('{"permissions":{"allow":["Read"]}}\n')
script = os.path.join(root, "script"); open(script, "w").write("@exit 0\n")
timings = os.path.join(root, "timings.json")
env = dict(os.environ, HOME=home, CODEX_HOME=os.path.join(home, ".codex"), XDG_CACHE_HOME=os.path.join(root, "cache"),
           FAKE_WORKER_SCRIPT=script, __LEOPOLD_TIMINGS=timings,
           # The box passes the script's name in and lets the worker read it (test-only knobs).
           __LEOPOLD_BOX_PASS_ENV="FAKE_WORKER_SCRIPT", __LEOPOLD_BOX_RO=script)
for k in ("LEOPOLD_RUN_ID", "__LEOPOLD_PAUSE_AT", "RUST_LOG"): env.pop(k, None)

# The neighbour: 256 KiB written and fsynced, again and again, for at most 10 minutes, and only
# while its parent (this script) lives.
NEIGHBOUR = r'''
import os, sys, time
path, parent, deadline = sys.argv[1], os.getppid(), time.monotonic() + 600
buf, i = b"x" * (256 * 1024), 0
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
while time.monotonic() < deadline and os.getppid() == parent:
    os.write(fd, buf); os.fsync(fd); i += 1
    if i % 64 == 0: os.ftruncate(fd, 0); os.lseek(fd, 0, 0)
os.close(fd); os.unlink(path)
'''
neighbour_dir = tempfile.mkdtemp(prefix="leopold-bench-neighbour-", dir=scratch)
class Neighbour:
    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, os.path.join(neighbour_dir, "fsync-loop")])
        time.sleep(0.3)  # under way before the first timed run
        return self
    def __exit__(self, *a):
        self.p.terminate(); self.p.wait()

def one(boxed, exe=leopold):
    args = [exe, "persona", "run", flow, "--harness", "claude", "--project", project, "--harness-bin", fake, "--quiet"]
    if not boxed: args.append("--no-contain")
    t = time.perf_counter()
    r = subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    assert r.returncode == 0, (args, r.stderr.decode())
    m = json.load(open(timings)); m["wall"] = wall
    return m

configs = [(boxed, neighbour, b) for b in bins for boxed in (True, False) for neighbour in (False, True)]
name = lambda c: f"{c[2]}{'boxed' if c[0] else '--no-contain'}, {'beside the fsync neighbour' if c[1] else 'quiet'}"
marks = {c: [] for c in configs}
bare = []
load_before = os.getloadavg()
# One untimed run per kind: the version cache and the page cache warm, as for a user's second run.
for exe in bins.values(): one(True, exe); one(False, exe)
done = 0
while done < n:
    k = min(burst, n - done)
    for c in configs:
        if c[1]:
            with Neighbour():
                for _ in range(k): marks[c].append(one(c[0], bins[c[2]]))
        else:
            for _ in range(k):
                t = time.perf_counter(); subprocess.run([fake, "-p", "x"], env=env, check=True, stdout=subprocess.DEVNULL); bare.append(time.perf_counter() - t)
                marks[c].append(one(c[0], bins[c[2]]))
    done += k
load_after = os.getloadavg()

med = statistics.median
p90 = lambda xs: sorted(xs)[int(len(xs) * 0.9)]
print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} CPUs)")
print(f"runs per configuration: {n}, in bursts of {burst}")
# exit -> released: from the worker's exit until the project is as it was and free for the next
# run (wiring undone, run.json final, ACTIVE.json gone, lock released); exit -> done adds the
# report and the summary. A build without the `released` mark (an older baseline) shows done.
print(f"{'configuration':<51} {'start->spawned':>16} {'p90':>8} {'exit->released':>16} {'p90':>8} {'exit->done':>12} {'wall':>9} {'fsyncs':>7}")
for c in configs:
    ms = marks[c]
    spawn = [m["worker_spawned"] / 1000 for m in ms]
    release = [(m.get("released", m["unwired"]) - m["worker_exit_seen"]) / 1000 for m in ms]
    done = [(m["unwired"] - m["worker_exit_seen"]) / 1000 for m in ms]
    wall = [m["wall"] * 1000 for m in ms]
    fs = sorted({m.get("fsyncs") for m in ms}, key=str)
    print(f"{name(c):<51} {med(spawn):13.2f} ms {p90(spawn):5.2f} ms {med(release):13.2f} ms {p90(release):5.2f} ms {med(done):9.2f} ms {med(wall):6.2f} ms {'/'.join(map(str, fs)):>7}")
print(f"bare fake worker wall (peer, quiet):        median {med(bare)*1000:.2f} ms")
# Every step the supervisor marked, in the order of their medians (a boxed run's proof answers
# after its worker is spawned).
for c in configs:
    print(f"steps, {name(c)} (median ms since start, +step):")
    names = {s for x in marks[c] for s in x if s not in ("wall", "fsyncs", "done")}
    at = sorted((med([x[s] / 1000 for x in marks[c] if s in x]), s) for s in names)
    prev, line = 0.0, []
    for t, s in at:
        line.append(f"{s} {t:.2f} (+{t - prev:.2f})"); prev = t
    print("  " + ", ".join(line))
# The witness: strace's count of the calls, on one unboxed run of each build.
if shutil.which("strace"):
    for label, exe in bins.items():
        out = os.path.join(root, "strace.txt")
        if os.path.exists(timings): os.unlink(timings)
        subprocess.run(["strace", "-f", "-c", "-o", out, "-e", "trace=fsync,fdatasync,sync_file_range,syncfs,sync", exe, "persona", "run", flow, "--harness", "claude", "--project", project, "--harness-bin", fake, "--quiet", "--no-contain"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        calls = 0
        for line in open(out):
            parts = line.split()
            if len(parts) >= 5 and parts[-1] in ("fsync", "fdatasync", "sync_file_range", "syncfs", "sync"):
                calls += int(parts[3])
        own = json.load(open(timings)).get("fsyncs", "no count") if os.path.exists(timings) else "no count"
        print(f"strace witness, {label.strip() or 'this build'}: {calls} fsync/fdatasync calls in one --no-contain run (the supervisor counted {own})")
shutil.rmtree(root); shutil.rmtree(neighbour_dir, ignore_errors=True)
PY
