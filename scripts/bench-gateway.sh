#!/usr/bin/env bash
# What the gateway costs per browser call (BENCHMARKS.md "The gateway"): inside one boxed
# `leopold persona run`, the fake worker opens two MCP sessions to the same server, the test kit's
# stub browser: one as the run gives it (the relay, the gateway's socket, the gateway judging the
# call, the server it started outside the box), one to the server started directly. It then makes
# N `navigate` calls on each, alternating, and times each call from request written to answer read.
# Reports medians and p90 of both, the difference and the ratio.
#
#   ./scripts/bench-gateway.sh [CALLS]     (default 500 of each)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
n="${1:-500}"
# The fake worker gets its script through the test knobs: a release build with them.
cargo build --release -q --features leopold/test-knobs -p leopold -p leopold-tests --bin leopold --bin leopold-fake-worker --bin leopold-stub-browser
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bench_stamp scripts/bench-gateway.sh "$n"
python3 - "$n" "$target_dir/release" "$PWD/flows/checkout.md" <<'PY'
import json, os, statistics, subprocess, sys, tempfile
n, bindir, flow = int(sys.argv[1]), sys.argv[2], sys.argv[3]
leopold, fake, stub = (os.path.join(bindir, b) for b in ("leopold", "leopold-fake-worker", "leopold-stub-browser"))
root = tempfile.mkdtemp(prefix="leopold-bench-gateway-")
project, home, kit = (os.path.join(root, d) for d in ("project", "home", "kit"))
os.makedirs(os.path.join(project, ".claude")); os.makedirs(os.path.join(home, ".codex")); os.makedirs(kit)
script, results, mcp = (os.path.join(kit, f) for f in ("script", "results.jsonl", "mcp.json"))
json.dump({"mcpServers": {"browser": {"command": stub, "args": []}}}, open(mcp, "w"))
args = json.dumps({"url": "https://staging.example.com/products/1"})
open(script, "w").write(f"@mcp-bench browser {n} navigate {args}\n@exit 0\n")
env = dict(os.environ, HOME=home, CODEX_HOME=os.path.join(home, ".codex"), FAKE_WORKER_SCRIPT=script,
           FAKE_WORKER_RESULTS=results, FAKE_WORKER_DIRECT_MCP=json.dumps([stub]),
           ANTHROPIC_BASE_URL="http://127.0.0.1:9",
           __LEOPOLD_BOX_PASS_ENV="FAKE_WORKER_SCRIPT,FAKE_WORKER_RESULTS,FAKE_WORKER_DIRECT_MCP",
           __LEOPOLD_BOX_RW=kit)
r = subprocess.run([leopold, "persona", "run", flow, "--harness", "claude", "--project", project,
                    "--harness-bin", fake, "--mcp-config", mcp, "--quiet"], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
assert r.returncode == 0, r.stderr.decode()
res = [json.loads(l) for l in open(results)][-1]
assert "gateway_us" in res, res
g, d = res["gateway_us"], res["direct_us"]
med = statistics.median
p90 = lambda xs: sorted(xs)[int(len(xs) * 0.9)]
print(f"calls: {n} of each, alternating, in one boxed run (stub browser `navigate`; claude harness = fake worker)")
print(f"{'':28} {'median':>9} {'p90':>9}")
print(f"{'through the gateway':28} {med(g)/1000:8.3f}  {p90(g)/1000:8.3f}  ms")
print(f"{'direct to the server':28} {med(d)/1000:8.3f}  {p90(d)/1000:8.3f}  ms")
print(f"{'gateway adds':28} {(med(g)-med(d))/1000:+8.3f}  {(p90(g)-p90(d))/1000:+8.3f}  ms   (ratio of medians {med(g)/med(d):.2f})")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
