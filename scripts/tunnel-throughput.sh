#!/usr/bin/env bash
# Throughput and CPU cost of `mpsched tunnel` on veth, beside plain UDP and plain TCP on the
# same veth pair (this kernel has no WireGuard module to compare with).
#
# Two namespaces joined by PATHS veth pairs (no rate limit, offloads as the kernel sets
# them); a tunnel daemon at each end; iperf3 TCP through the tunnel for SECONDS; the two
# daemons' CPU time (user + system, from /proc/PID/stat) over the transfer. Then, on path 1
# without the tunnel: iperf3 UDP at full rate with 1400-byte datagrams, and iperf3 TCP, with
# both iperf3 processes' CPU time. Rounds alternate tunnel and plain runs. Root; needs the
# release binary (cargo build --release -p mpsched-cli).
#
# usage: scripts/tunnel-throughput.sh [ROUNDS=3] [SECONDS=8] [PATHS=2] [SCHEDULER=rr] [TRANSPORT=udp]
set -euo pipefail
ROUNDS=${1:-3}
SECONDS_RUN=${2:-8}
PATHS=${3:-2}
SCHED=${4:-rr}
TRANSPORT=${5:-udp}
BIN=${MPSCHED:-$(cd "$(dirname "$0")/.." && pwd)/target/release/mpsched}
A=mps-$$xtput-a
B=mps-$$xtput-b
DIR=$(mktemp -d)
TICK=$(getconf CLK_TCK)
cleanup() {
  pkill -f "mpsched tunnel $DIR" 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

ip netns add "$A"; ip netns add "$B"
ip -n "$A" link set lo up; ip -n "$B" link set lo up
echo 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f > "$DIR/key"; chmod 600 "$DIR/key"
for end in a b; do
  role=initiator; addr=10.99.0.1; [ $end = b ] && role=responder && addr=10.99.0.2
  printf 'role = "%s"\nkey_file = "key"\nscheduler = "%s"\ntransport = "%s"\n[device]\nname = "mpt0"\naddress = "%s/30"\n' \
    $role "$SCHED" "$TRANSPORT" $addr > "$DIR/$end.toml"
done
for n in $(seq 1 "$PATHS"); do
  ip link add a$n netns "$A" type veth peer name b$n netns "$B"
  ip -n "$A" addr add 192.168.$n.1/24 dev a$n; ip -n "$B" addr add 192.168.$n.2/24 dev b$n
  ip -n "$A" link set a$n up; ip -n "$B" link set b$n up
  printf '[[path]]\nname = "p%s"\nlocal = "192.168.%s.1:4789"\nremote = "192.168.%s.2:4789"\n' $n $n $n >> "$DIR/a.toml"
  printf '[[path]]\nname = "p%s"\nlocal = "192.168.%s.2:4789"\n' $n $n >> "$DIR/b.toml"
done

cpu_of() { awk -v t="$TICK" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }

ip netns exec "$B" "$BIN" tunnel "$DIR/b.toml" > /dev/null 2> "$DIR/b.err" &
PB=$!
sleep 0.3
ip netns exec "$A" "$BIN" tunnel "$DIR/a.toml" > /dev/null 2> "$DIR/a.err" &
PA=$!
sleep 1

# iperf3 -J's receiver rate, bit/s.
rate() { python3 -c 'import json,sys; j=json.load(sys.stdin); e=j["end"]; print(e.get("sum_received", e.get("sum", {})).get("bits_per_second", 0))'; }

tunnel_run() {
  ip netns exec "$B" iperf3 -s -1 -B 10.99.0.2 > /dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  local ca cb
  ca=$(cpu_of $PA); cb=$(cpu_of $PB)
  local bps
  bps=$(ip netns exec "$A" iperf3 -c 10.99.0.2 -t "$SECONDS_RUN" -J | rate)
  local da db
  da=$(awk -v x="$(cpu_of $PA)" -v y="$ca" 'BEGIN { print x - y }')
  db=$(awk -v x="$(cpu_of $PB)" -v y="$cb" 'BEGIN { print x - y }')
  wait $srv
  awk -v b="$bps" -v a="$da" -v c="$db" -v s="$SECONDS_RUN" 'BEGIN {
    g = b / 1e9; printf "tunnel (%s paths, '"$SCHED"' over '"$TRANSPORT"'): %.3f Gbit/s TCP goodput; daemons CPU %.2f s (entry) + %.2f s (exit) in %d s = %.2f CPU-s per Gbit\n",
      '"$PATHS"', g, a, c, s, (a + c) / (g * s) }'
}

plain_run() {
  local proto=$1 args=$2
  ip netns exec "$B" /usr/bin/time -f "%U %S" -o "$DIR/srv.time" iperf3 -s -1 -B 192.168.1.2 > /dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  local bps
  bps=$(ip netns exec "$A" /usr/bin/time -f "%U %S" -o "$DIR/cli.time" iperf3 -c 192.168.1.2 -t "$SECONDS_RUN" $args -J | rate)
  wait $srv
  local cpu
  cpu=$(cat "$DIR/srv.time" "$DIR/cli.time" | awk '{ s += $1 + $2 } END { print s }')
  awk -v b="$bps" -v c="$cpu" -v s="$SECONDS_RUN" -v p="$proto" 'BEGIN {
    g = b / 1e9; printf "plain %s on veth (iperf3 both ends): %.3f Gbit/s; iperf3 CPU %.2f s in %d s = %.2f CPU-s per Gbit\n", p, g, c, s, c / (g * s) }'
}

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r"
  tunnel_run
  plain_run "UDP 1400 B" "-u -b 0 -l 1400"
  plain_run TCP ""
done
