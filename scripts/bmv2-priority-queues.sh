#!/bin/bash
# How BMv2's queues and the kernel's shaper after it share a 10 Mbit/s port (docs/performance.md,
# "Strict priority on BMv2"). As root, with the P4 toolchain in /opt/p4 (or P4=/some/prefix):
#
#   scripts/bmv2-priority-queues.sh rate     # BMv2 --priority-queues 8, every queue of the port
#                                            #   limited to the link's 827 frames/s by
#                                            #   set_queue_rate, the interface shaped at 100 Mbit/s
#   scripts/bmv2-priority-queues.sh shaper   # BMv2 --priority-queues 8 without a rate, the
#                                            #   interface shaped at 10 Mbit/s (mpsched's choice)
#   scripts/bmv2-priority-queues.sh wrr      # BMv2 with one queue, the interface's htb serving two
#                                            #   classes by weights 1:3 after it (what a wrr port
#                                            #   would be on BMv2 if mpsched did not refuse it)
#
# A namespace with two veth pairs: raw 1 512-byte frames of three DSCP classes (two for `wrr`),
# each at 6.2 Mbit/s (8 Mbit/s for `wrr`), go into port 0 of a small v1model program that sends
# everything to port 1 at the priority of its DSCP class (`wrr`: priority 0); port 1's peer
# counts each class's frames and their one-way delay over 3-9 s of a 10 s run. Prints Mbit/s of
# frames and mean delay per class, BMv2's egress count per priority, and port 1's qdisc
# counters (`dropped`, `backlog`).
set -euo pipefail
mode=${1:?usage: $0 rate|shaper|wrr}
P4=${P4:-/opt/p4}
dir=$(mktemp -d)
ns=mpsq-$$
trap 'kill %1 2>/dev/null || true; sleep 0.5; ip netns del $ns 2>/dev/null || true; rm -rf "$dir"' EXIT

cat > "$dir/prio.p4" <<'EOF'
#include <core.p4>
#include <v1model.p4>
header eth_h { bit<48> dst; bit<48> src; bit<16> t; }
header ip_h { bit<8> vi; bit<8> tos; bit<16> len; bit<64> x; bit<64> y; }
struct h_t { eth_h eth; ip_h ip; }
struct m_t { }
parser P(packet_in pk, out h_t h, inout m_t m, inout standard_metadata_t sm) {
  state start { pk.extract(h.eth); transition select(h.eth.t) { 0x0800: ip; default: accept; } }
  state ip { pk.extract(h.ip); transition accept; }
}
control V(inout h_t h, inout m_t m) { apply {} }
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
  apply {
    if (sm.ingress_port == 0 && h.ip.isValid()) {
      sm.egress_spec = 1;
#ifdef PRIORITY
      sm.priority = h.ip.tos[7:5];
#endif
    } else { mark_to_drop(sm); }
  }
}
control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
  register<bit<64>>(8) seen;
  apply { bit<64> c; seen.read(c, (bit<32>)sm.priority); seen.write((bit<32>)sm.priority, c + 1); }
}
control C(inout h_t h, inout m_t m) { apply {} }
control D(packet_out pk, in h_t h) { apply { pk.emit(h.eth); pk.emit(h.ip); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
EOF

cat > "$dir/send.py" <<'EOF'
import socket, struct, sys, time
ifname, secs, rate, classes = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
heads = [b'\x02' * 6 + b'\x04' * 6 + b'\x08\x00' + struct.pack('!BBHQQ', 0x45, int(c) << 5, 1498, 0, 0)
         for c in classes.split(',')]
pad = bytes(1512 - 14 - 20 - 8)
gap, t, end = 1512 * 8 / rate, time.perf_counter(), time.perf_counter() + secs
while t < end:
    now = time.perf_counter()
    if now < t:
        time.sleep(min(t - now, 0.0005))
        continue
    for h in heads:
        s.send(h + struct.pack('!d', time.time()) + pad)
    t += gap
EOF

cat > "$dir/recv.py" <<'EOF'
import socket, struct, sys, time
ifname, secs, warm = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((ifname, 0))
s.settimeout(0.2)
n, delay, t0 = [0] * 8, [0.0] * 8, time.time()
while time.time() - t0 < secs:
    try:
        f = s.recv(2048)
    except socket.timeout:
        continue
    now = time.time()
    if len(f) > 42 and f[12:14] == b'\x08\x00' and now - t0 >= warm:
        c = f[15] >> 5
        n[c] += 1
        delay[c] += now - struct.unpack('!d', f[34:42])[0]
span = secs - warm
print('  '.join('class %d: %.2f Mbit/s, %.0f ms' % (c, n[c] * 1512 * 8 / span / 1e6, delay[c] / n[c] * 1e3)
                for c in range(8) if n[c]))
EOF

X="ip netns exec $ns"
ip netns add $ns
$X ip link set lo up
$X sysctl -qw net.ipv6.conf.all.disable_ipv6=1
for i in 0 1; do
  $X ip link add p$i type veth peer name q$i
  $X ip link set p$i up
  $X ip link set q$i up
  $X ethtool -K p$i tso off gso off gro off >/dev/null 2>&1 || true
done
case $mode in
  rate) shaper=100mbit; prio=8; define=-DPRIORITY; classes=2,1,0; rate=6.2e6 ;;
  shaper) shaper=10mbit; prio=8; define=-DPRIORITY; classes=2,1,0; rate=6.2e6 ;;
  wrr) shaper=; prio=1; define=; classes=1,0; rate=8e6 ;;
  *) echo "mode: rate, shaper or wrr" >&2; exit 2 ;;
esac
"$P4/bin/p4c-bm2-ss" $define -I "$P4/share/p4c/p4include" -o "$dir/prio.json" "$dir/prio.p4" 2>/dev/null
if [ -n "$shaper" ]; then
  $X tc qdisc add dev p1 root handle 1: htb default 1
  $X tc class add dev p1 parent 1: classid 1:1 htb rate $shaper ceil $shaper
  $X tc qdisc add dev p1 parent 1:1 handle 10: pfifo limit 1024
else
  # Queue 1 (DSCP class 1) weighs 3, queue 0 weighs 1, as mpsched's kernel wrr port.
  $X tc qdisc add dev p1 root handle 1: htb default 10
  $X tc class add dev p1 parent 1: classid 1:1 htb rate 10mbit ceil 10mbit
  $X tc class add dev p1 parent 1:1 classid 1:10 htb rate 2500kbit ceil 10mbit quantum 1514
  $X tc class add dev p1 parent 1:1 classid 1:11 htb rate 7500kbit ceil 10mbit quantum 1514
  $X tc qdisc add dev p1 parent 1:10 handle 20: pfifo limit 512
  $X tc qdisc add dev p1 parent 1:11 handle 21: pfifo limit 512
  $X tc filter add dev p1 parent 1: protocol ip prio 1 u32 match ip tos 0x00 0xe0 flowid 1:10
  $X tc filter add dev p1 parent 1: protocol ip prio 1 u32 match ip tos 0x20 0xe0 flowid 1:11
fi
$X "$P4/bin/simple_switch" --thrift-port 9090 -i 0@p0 -i 1@p1 "$dir/prio.json" -- --priority-queues $prio \
  > "$dir/switch.log" 2>&1 &
sleep 2
for p in $(seq 0 $((prio - 1))); do
  echo "set_queue_depth 512 1 $p"
  if [ "$mode" = rate ]; then echo "set_queue_rate 827 1 $p"; fi
done | $X "$P4/bin/simple_switch_CLI" --thrift-port 9090 > /dev/null
$X python3 "$dir/recv.py" q1 9 3 &
receiver=$!
sleep 0.3
$X python3 "$dir/send.py" q0 10 $rate $classes
wait $receiver
echo "register_read E.seen" | $X "$P4/bin/simple_switch_CLI" --thrift-port 9090 2>/dev/null | grep -o 'E.seen=.*'
$X tc -s qdisc show dev p1 | grep -E 'qdisc|dropped|backlog'
