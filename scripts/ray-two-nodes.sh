#!/usr/bin/env bash
# A Ray cluster of two nodes on this one machine, and a sweep across it (root; docs/python.md,
# "A Ray cluster"). The head runs here at 10.77.0.1; the second node runs in a network namespace
# of its own (mpsched-ray2, 10.77.0.2, joined by a veth pair), so that it is a node with its own
# address, as a second machine would be. Each node offers one CPU. Then `mpsched sweep --ray
# 10.77.0.1:6379` runs a 24-point sweep across both, and the points' `node` column says which
# ran where. Everything is stopped and removed on exit, also on Ctrl-C.
#
#   sudo scripts/ray-two-nodes.sh [PYTHON]     # PYTHON: the one with mpsched and Ray (.venv/bin/python)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${1:-${MPSCHED_PYTHON:-$here/.venv/bin/python}}
ray_bin="$(dirname "$py")/ray"
ns=mpsched-ray2
out=${MPSCHED_RAY_OUT:-/tmp/mpsched-ray-two-nodes}
# A head reachable beyond localhost turns on Ray's token authentication (its token in
# ~/.ray/auth_token, made by the head): every process of the cluster and every driver must use it.
export RAY_AUTH_MODE=token
[ "$(id -u)" -eq 0 ] || { echo "needs root (a network namespace)" >&2; exit 2; }
[ -x "$ray_bin" ] || { echo "no Ray at $ray_bin: pip install ray into $(dirname "$py")/.." >&2; exit 2; }

cleanup() {
  ip netns exec "$ns" "$ray_bin" stop --force >/dev/null 2>&1 || true
  "$ray_bin" stop --force >/dev/null 2>&1 || true
  ip link del mpsray0 >/dev/null 2>&1 || true
  ip netns del "$ns" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM
cleanup

ip netns add "$ns"
ip link add mpsray0 type veth peer name mpsray1
ip link set mpsray1 netns "$ns"
ip addr add 10.77.0.1/24 dev mpsray0 && ip link set mpsray0 up
ip netns exec "$ns" ip addr add 10.77.0.2/24 dev mpsray1
ip netns exec "$ns" ip link set mpsray1 up
ip netns exec "$ns" ip link set lo up

t0=$(date +%s.%N)
"$ray_bin" start --head --node-ip-address 10.77.0.1 --port 6379 --num-cpus 1 --include-dashboard false \
  --disable-usage-stats >/dev/null
ip netns exec "$ns" "$ray_bin" start --address 10.77.0.1:6379 --node-ip-address 10.77.0.2 --num-cpus 1 \
  --disable-usage-stats >/dev/null
t1=$(date +%s.%N)
echo "cluster up in $(echo "$t1 - $t0" | bc) s:"
"$py" - <<'PY'
import ray
ray.init(address="10.77.0.1:6379", log_to_driver=False)
for n in ray.nodes():
    print(f"  node {n['NodeManagerAddress']}: alive {n['Alive']}, CPUs {n['Resources'].get('CPU', 0):g}")
ray.shutdown()
PY

rm -rf "$out"
MPSCHED_PYTHON=$py "$here/target/release/mpsched" sweep dc/websearch-k4-load --values 0.2,0.4,0.6,0.8 --seeds 1-3 \
  --variant ECMP --variant single-path --set scenario.duration=0.5s --set workload.stop=0.3s \
  --ray 10.77.0.1:6379 --out "$out" --no-plot | tail -4
t2=$(date +%s.%N)
echo "sweep in $(echo "$t2 - $t1" | bc) s; points per node:"
"$py" - "$out" <<'PY'
import collections, json, pathlib, sys
import mpsched
# The points' files do not say where they ran; run the frame's way once more to ask Ray.
sc = mpsched.Scenario.load("dc/websearch-k4-load").set({"scenario.duration": "0.5s", "workload.stop": "0.3s"})
import ray
ray.init(address="10.77.0.1:6379", log_to_driver=False)
df = mpsched.sweep(sc, grid={"workload.load": [0.2, 0.4, 0.6, 0.8]}, variants=["ECMP", "single-path"],
                   seeds=[1, 2, 3], backend="ray", progress=False)
print("  ", dict(collections.Counter(df["node"].astype(str))), "failed:", int(df["error"].notna().sum()))
ray.shutdown()
PY
