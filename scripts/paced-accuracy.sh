#!/bin/bash
# How closely `mpsched trafficgen paced-send` keeps its controller's rate, and what a datagram
# costs it (docs/performance.md, "Paced UDP senders"). Over loopback, no root needed:
#
#   scripts/paced-accuracy.sh [MPSCHED] [SECONDS] [PAYLOAD_BYTES] RATE_BPS...
#   scripts/paced-accuracy.sh target/release/mpsched 10 1470 10000000 100000000 1000000000
#
# Per rate: a receiver on 127.0.0.1:7011 and a sender from port 7012, DCQCN at that line rate and
# never notified (so its rate is constant), SECONDS long. Prints the sender's asked and achieved
# Mbit/s, how late datagrams left (mean, max), the sending thread's CPU time and its CPU time per
# datagram, the process's wall / user / system seconds (/usr/bin/time, which include waiting for
# time zero and the 200 ms the sender listens for late notifications), and what the receiver
# counted.
set -euo pipefail
bin=${1:-target/release/mpsched}
secs=${2:-10}
payload=${3:-1470}
shift $(($# < 3 ? $# : 3))
rates=("${@:-10000000}")
# PACED_OUT=DIR keeps the last rate's configurations and report lines there.
if [ -n "${PACED_OUT:-}" ]; then
    out=$PACED_OUT
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
for rate in "${rates[@]}"; do
    t0=$(python3 -c 'import time; print(time.time_ns() + 1_000_000_000)')
    python3 - "$rate" "$t0" "$secs" "$payload" "$out" <<'EOF'
import json, sys
rate, t0, secs, payload, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
dcqcn = {"line_rate_bps": rate, "min_rate_bps": max(rate // 1000, 1), "g_shift": 8,
         "alpha_period_ns": 55000, "increase_period_ns": 55000, "byte_counter_bytes": 10 << 20,
         "fast_recovery_steps": 5, "additive_increase_bps": max(rate // 1000, 1),
         "hyper_increase_bps": max(rate // 100, 1)}
ns = secs * 1_000_000_000
json.dump({"flow": "p", "dst": "127.0.0.1:7011", "bind": "127.0.0.1", "src_port": 7012,
           "payload_bytes": payload, "tos": 0,
           "rate_control": {"cc": "dcqcn", "params": dcqcn, "cnp_interval_ps": 50_000_000},
           "t0_unix_ns": t0, "start_ns": 0, "stop_ns": ns, "interval_ns": 1_000_000_000},
          open(f"{out}/send.json", "w"))
json.dump({"flow": "p", "bind": "127.0.0.1:7011", "t0_unix_ns": t0, "stop_ns": ns + 200_000_000,
           "interval_ns": 1_000_000_000, "cnp_interval_ns": 50_000, "peer": "127.0.0.1:7012"},
          open(f"{out}/recv.json", "w"))
EOF
    "$bin" trafficgen paced-recv <"$out/recv.json" >"$out/recv.jsonl" &
    recv=$!
    # A failing sender (set -e) must not leave the receiver running.
    trap 'kill "$recv" 2>/dev/null || true; [ -n "${PACED_OUT:-}" ] || rm -rf "$out"' EXIT
    # The sender starts once the receiver has bound (time zero is a second ahead), within 5 s.
    for _ in $(seq 500); do grep -q ':1B63 ' /proc/net/udp && break; sleep 0.01; done
    grep -q ':1B63 ' /proc/net/udp || { echo "the receiver did not bind 127.0.0.1:7011" >&2; exit 1; }
    /usr/bin/time -f "%e %U %S" -o "$out/time" "$bin" trafficgen paced-send <"$out/send.json" >"$out/send.jsonl"
    wait "$recv"
    python3 - "$rate" "$out" <<'EOF'
import json, sys
rate, out = int(sys.argv[1]), sys.argv[2]
end = lambda f, k: next(json.loads(l) for l in open(f) if f'"kind":"{k}"' in l)
s, r = end(f"{out}/send.jsonl", "sender_end"), end(f"{out}/recv.jsonl", "receiver_end")
wall, user, sys_ = open(f"{out}/time").read().split()
cpu = s["cpu_user_s"] + s["cpu_sys_s"]
print(f"{rate / 1e6:8.1f} Mbit/s: asked {s['asked_mbps']:.4f}, achieved {s['achieved_mbps']:.4f} "
      f"({100 * (s['achieved_mbps'] / s['asked_mbps'] - 1):+.3f} %), {s['sent_pkts']} datagrams, "
      f"late mean {s['late_mean_us']:.1f} us max {s['late_max_us']:.0f} us; sending thread CPU "
      f"{s['cpu_user_s']:.3f} user + {s['cpu_sys_s']:.3f} sys s over {s['wall_s']:.1f} s "
      f"({1e6 * cpu / max(s['sent_pkts'], 1):.2f} us/datagram); process wall {wall} user {user} sys {sys_} s; "
      f"receiver {r['pkts']} of {r['expected_pkts']}, OWD mean {r['owd_mean_ms']:.3f} ms, refused {s['send_refused']}")
EOF
done
