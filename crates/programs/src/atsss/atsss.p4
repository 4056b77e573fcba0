/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ATSSS UPF for BMv2's v1model: the twin of upf.rs (the frame logic) over registers.rs
 * (the schedulers), step for step, and of atsss.bpf.c (XDP). The frame format is frame.rs's.
 * Compiled with p4/ on the include path (p4c-bm2-ss -I p4 ...).
 *
 *   ingress, per frame: frame checks as wire::parse_frame (non-IPv4 to the stack port,
 *   malformed counted and dropped) ->
 *     to the UPF's address, UDP port 4789: a tunnel frame (acknowledgement into the UE's
 *       registers, uplink decapsulated and routed, keepalive counted; malformed or unknown
 *       dropped);
 *     to the UPF's address otherwise: its stack;
 *     to a UE's own address (table ue_by_ip): the UE's scheduler picks the path and numbers
 *       the packet; 60 bytes of outer IPv4, UDP, header and data body are made valid in front
 *       of the inner packet;
 *     anything else: routed (TTL, LPM, TTL - 1).
 *   egress: a frame whose inner packet had Ethernet padding after it is cut to its length.
 *
 * v1model has no loops: the four paths of a UE are written out (path_t p0 .. p3), each step
 * of registers.rs's loops over paths a function applied to each in turn. No division: the
 * draws map by multiply and shift, the clock is BMv2's microseconds, the ticks shifts of
 * nanoseconds (scaled_ticks). Registers are sized when BMv2 loads the program: ATSSS_P4_UES
 * UEs at most (the control plane refuses more).
 */
#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/arith.p4"
#include "include/queues.p4"

/* Most UEs BMv2's registers hold (crates/bmv2/src/atsss.rs refuses a larger table). */
#define ATSSS_P4_UES 256
#define ATSSS_P4_PATH_SLOTS 1024 /* ATSSS_P4_UES * 4 */
#define ATSSS_TEST_DRAWS 64

#define ATSSS_UDP_PORT 4789
#define ATSSS_ENCAP_BYTES 60
#define ATSSS_OUTER_TTL 64
#define ATSSS_MSG_DATA 1
#define ATSSS_MSG_ACK 2
#define ATSSS_MSG_KEEPALIVE 3

#define ATSSS_PATH_HAS_RTT 1
#define ATSSS_PATH_SLOW_START 2
#define ATSSS_MAX_PROBE_BACKOFF 4
#define ATSSS_RTTMON_MAX_WEIGHT 62
#define ATSSS_CMON_MIN_CWND 2
#define ATSSS_CMON_MAX_CWND 4096

#define ATSSS_KIND_WRR 0
#define ATSSS_KIND_DWRR 1
#define ATSSS_KIND_RTTMON 2
#define ATSSS_KIND_CMON 3
#define ATSSS_KIND_ACTIVE_STANDBY 4
#define ATSSS_KIND_SMALLEST_DELAY 5
#define ATSSS_KIND_LOAD_BALANCING 6
#define ATSSS_KIND_PRIORITY 7

/* Register "counters": indices as enum atsss_counter in atsss.h. */
#define ATSSS_C_ENCAPSULATED 0
#define ATSSS_C_PATH0 1
#define ATSSS_C_ACKS 5
#define ATSSS_C_ACKS_IGNORED 6
#define ATSSS_C_UPLINK 7
#define ATSSS_C_KEEPALIVES 8
#define ATSSS_C_MALFORMED 9
#define ATSSS_C_UNKNOWN_UE 10
#define ATSSS_C_SPOOFED 11
#define ATSSS_C_TOO_BIG 12
#define ATSSS_C_NO_ROUTE 13
#define ATSSS_C_TTL_EXPIRED 14
#define ATSSS_C_LOCAL 15
#define ATSSS_C_NOT_IPV4 16
#define ATSSS_C_IPV4_MALFORMED 17
#define ATSSS_C_REDIRECT_FAILED 18
#define ATSSS_C_MAX 19

/* ---- headers (frame.rs) ------------------------------------------------------------------ */

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags; /* reserved, DF, MF */
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header ipv4_options_h {
    varbit<320> options;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> len;
    bit<16> checksum;
}

/* The header every message starts with: kind, path, reserved, epoch, packet number. */
header atsss_hdr_h {
    bit<8>  kind;
    bit<8>  path;
    bit<16> reserved;
    bit<64> epoch;
    bit<64> packet_number;
}

/* A data message's body (path_seq, tunnel_seq, sent_us); a keepalive's has the same size. */
header atsss_data_h {
    bit<32> w0;
    bit<32> w1;
    bit<32> w2;
}

/* An acknowledgement's body. */
header atsss_ack_h {
    bit<32> highest_seq;
    bit<32> received;
    bit<32> echo_us;
    bit<32> ack_delay_us;
}

/* In wire order: the encapsulation a downlink packet gets (o_*), the frame as it arrived,
 * and, in a tunnel frame, the message and the inner IPv4 header of uplink data. */
struct headers_t {
    ethernet_h     eth;
    ipv4_h         o_ip;
    udp_h          o_udp;
    atsss_hdr_h    o_hdr;
    atsss_data_h   o_data;
    ipv4_h         ipv4;
    ipv4_options_h ipv4_opts;
    udp_h          udp;
    atsss_hdr_h    hdr;
    atsss_data_h   data;
    atsss_ack_h    ack;
    atsss_data_h   keepalive;
    ipv4_h         inner;
}

struct metadata_t {
    bit<32> cut_to; /* the frame's length when it leaves, 0: as it is */
}

/* registers::PathReg. */
struct path_t {
    bit<32> cur_rtt;
    bit<32> min_rtt;
    bit<32> seq_sent;
    bit<32> seq_acked;
    bit<32> last_heard;
    bit<32> lost;
    bit<32> last_cut;
    bit<16> cwnd;
    bit<16> acks_in_round;
    bit<16> flags;
}

/* ---- parser ------------------------------------------------------------------------------ */

parser AtParser(packet_in pk, out headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    /* A short packet stops the parser with PacketTooShort and leaves the header that did not
     * fit invalid; BMv2 still runs ingress, which judges the frame by its IPv4 total length,
     * as upf.rs and the eBPF program do. Every UDP packet's message is parsed: a frame that is
     * not a tunnel frame leaves with its headers re-emitted unchanged. */
    state start {
        pk.extract(h.eth);
        transition select(h.eth.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pk.extract(h.ipv4);
        transition select(h.ipv4.version, h.ipv4.ihl) {
            (4, 5): parse_l4;
            (4, 6 .. 15): parse_options;
            default: accept; /* ingress counts it malformed */
        }
    }
    state parse_options {
        pk.extract(h.ipv4_opts, ((bit<32>)h.ipv4.ihl - 5) * 32);
        transition parse_l4;
    }
    state parse_l4 {
        transition select(h.ipv4.frag_offset, h.ipv4.protocol) {
            (0, 17): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pk.extract(h.udp);
        transition select(h.udp.dst_port) {
            ATSSS_UDP_PORT: parse_message;
            default: accept;
        }
    }
    state parse_message {
        pk.extract(h.hdr);
        transition select(h.hdr.kind) {
            ATSSS_MSG_DATA: parse_data;
            ATSSS_MSG_ACK: parse_ack;
            ATSSS_MSG_KEEPALIVE: parse_keepalive;
            default: accept;
        }
    }
    state parse_data {
        pk.extract(h.data);
        pk.extract(h.inner);
        transition accept;
    }
    state parse_ack {
        pk.extract(h.ack);
        transition accept;
    }
    state parse_keepalive {
        pk.extract(h.keepalive);
        transition accept;
    }
}

control AtVerifyChecksum(inout headers_t h, inout metadata_t m) {
    apply { } /* wire::parse_frame does not check it either */
}

/* ---- the registers' arithmetic (registers.rs), as functions p4c inlines ------------------- */

/* registers::scaled_ticks: >> 15, then three steps of x - (x >> k), the low 32 bits. */
bit<32> scaled_ticks(in bit<64> ns) {
    bit<64> s = ns >> 15;
    s = s - (s >> 2);
    s = s - (s >> 2);
    s = s - (s >> 1);
    return (bit<32>)s;
}

/* RTTMon's target RTT: (min x 1500) >> 10 in 32-bit arithmetic, + 2 when that is min. */
bit<32> target_rtt(in bit<32> min_rtt) {
    bit<32> t = (min_rtt * 1500) >> 10;
    if (t == min_rtt) {
        t = t + 2;
    }
    return t;
}

bit<32> path_target(in path_t p) {
    bit<32> min = 0;
    if ((p.flags & ATSSS_PATH_HAS_RTT) != 0) {
        min = p.min_rtt;
    }
    return target_rtt(min);
}

bit<32> in_flight(in path_t p) {
    return p.seq_sent - p.seq_acked;
}

/* Up: nothing in flight, or heard from within max(4 x target, floor). */
bool path_up(in path_t p, in bit<32> now, in bit<32> floor) {
    bit<32> dead = path_target(p) << 2;
    if (dead < floor) {
        dead = floor;
    }
    return in_flight(p) == 0 || now - p.last_heard <= dead;
}

bool congested(in path_t p) {
    return (p.flags & ATSSS_PATH_HAS_RTT) != 0 && p.cur_rtt > path_target(p);
}

bool cmon_usable(in path_t p, in bit<32> now, in bit<32> floor) {
    return path_up(p, now, floor) && in_flight(p) < (bit<32>)p.cwnd && !congested(p);
}

/* Wrap-aware comparisons of sequence numbers: (i32)d < 0 and (i32)d > 0. */
bool negative(in bit<32> d) {
    return (d & 0x80000000) != 0;
}

bool positive(in bit<32> d) {
    return d != 0 && (d & 0x80000000) == 0;
}

/* One path of the loops registers.rs runs over a UE's first n paths, written out: path i
 * visited only while i < n. */

/* cmon_select: the first usable path; else the up path least over its window. */
void cmon_visit(in path_t p, in bit<32> i, in bit<32> n, in bit<32> now, in bit<32> floor,
                inout bit<32> choice, inout bit<32> excess_best, inout bit<32> fallback) {
    if (i < n && choice == 4) {
        if (cmon_usable(p, now, floor)) {
            choice = i;
        } else {
            bit<32> fl = in_flight(p);
            bit<32> excess = 0;
            if (fl > (bit<32>)p.cwnd) {
                excess = fl - (bit<32>)p.cwnd;
            }
            if (path_up(p, now, floor) && excess < excess_best) {
                excess_best = excess;
                fallback = i;
            }
        }
    }
}

/* smallest_delay: the up path with the smallest RTT, an unmeasured one counting 0. */
void delay_visit(in path_t p, in bit<32> i, in bit<32> n, in bit<32> now, in bit<32> floor,
                 inout bit<32> best, inout bit<32> best_rtt) {
    if (i < n) {
        bit<32> rtt = 0;
        if ((p.flags & ATSSS_PATH_HAS_RTT) != 0) {
            rtt = p.cur_rtt;
        }
        if (path_up(p, now, floor) && rtt < best_rtt) {
            best = i;
            best_rtt = rtt;
        }
    }
}

/* Priority: the first path up and not congested. */
void priority_visit(in path_t p, in bit<32> i, in bit<32> n, in bit<32> now, in bit<32> floor,
                    inout bit<32> choice) {
    if (i < n && choice == 4 && path_up(p, now, floor) && !congested(p)) {
        choice = i;
    }
}

/* registers::cmon_on_ack: the window by the RTT target. */
void cmon_on_ack(inout path_t p, in bit<32> now) {
    bit<32> target = path_target(p);
    if (p.cur_rtt <= target) {
        /* Growth only while half the window is used; one per ack in slow start. */
        if ((in_flight(p) << 1) >= (bit<32>)p.cwnd) {
            if ((p.flags & ATSSS_PATH_SLOW_START) != 0) {
                if (p.cwnd < ATSSS_CMON_MAX_CWND) {
                    p.cwnd = p.cwnd + 1;
                }
            } else {
                if (p.acks_in_round != 0xffff) {
                    p.acks_in_round = p.acks_in_round + 1;
                }
                if (p.acks_in_round >= p.cwnd) {
                    p.acks_in_round = 0;
                    if (p.cwnd < ATSSS_CMON_MAX_CWND) {
                        p.cwnd = p.cwnd + 1;
                    }
                }
            }
        }
    } else if (now - p.last_cut > target) {
        bit<16> cwnd = p.cwnd - (p.cwnd >> 2);
        if (cwnd < ATSSS_CMON_MIN_CWND) {
            cwnd = ATSSS_CMON_MIN_CWND;
        }
        p.flags = p.flags & 16w0xfffd; /* ~ATSSS_PATH_SLOW_START */
        p.last_cut = now;
        p.acks_in_round = 0;
        p.cwnd = cwnd;
    }
}

/* registers::on_send: the packet's number on the path. */
void on_send(inout path_t p, in bit<32> now, out bit<32> seq) {
    if (in_flight(p) == 0) {
        p.last_heard = now;
    }
    p.seq_sent = p.seq_sent + 1;
    seq = p.seq_sent;
}

/* ---- ingress ----------------------------------------------------------------------------- */

/* The UPF. A control of its own so that AtIngress counts every run after it, whichever way
 * it ended (the vector runner waits for that count). */
control AtUpf(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    register<bit<64>>(ATSSS_C_MAX) counters;
    register<bit<64>>(MPS_MAX_PORTS) port_rx_pkts;
    register<bit<64>>(MPS_MAX_PORTS) port_tx_pkts;
    /* Each port's queues (0 or 1: one), from the control plane (include/queues.p4). */
    register<bit<8>>(MPS_MAX_PORTS) port_queues;
    /* Conformance tests: a clock set from outside (µs), and fixed draws replayed cyclically
     * while test_draws_n > 0. */
    register<bit<8>>(1) test_clock_on;
    register<bit<64>>(1) test_clock_us;
    register<bit<32>>(ATSSS_TEST_DRAWS) test_draws;
    register<bit<32>>(1) test_draws_n;
    register<bit<32>>(1) test_draw_next;

    /* Per UE (registers::UeReg's head, upf::UeSlot's counters and address), by its row in the
     * control plane's table. */
    register<bit<8>>(ATSSS_P4_UES) ue_weight;
    register<bit<8>>(ATSSS_P4_UES) ue_n_paths;
    register<bit<8>>(ATSSS_P4_UES) ue_kind;
    register<bit<8>>(ATSSS_P4_UES) ue_probe_backoff;
    register<bit<32>>(ATSSS_P4_UES) ue_last_change;
    register<bit<64>>(ATSSS_P4_UES) ue_packet_number;
    register<bit<32>>(ATSSS_P4_UES) ue_tunnel_seq;
    register<bit<32>>(ATSSS_P4_UES) ue_ip;
    /* Per path, at row x 4 + path: registers::PathReg, and the path as configured. */
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_cur_rtt;
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_min_rtt;
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_seq_sent;
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_seq_acked;
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_last_heard;
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_lost;
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_last_cut;
    register<bit<16>>(ATSSS_P4_PATH_SLOTS) path_cwnd;
    register<bit<16>>(ATSSS_P4_PATH_SLOTS) path_acks_in_round;
    register<bit<16>>(ATSSS_P4_PATH_SLOTS) path_flags;
    register<bit<32>>(ATSSS_P4_PATH_SLOTS) path_addr;
    register<bit<16>>(ATSSS_P4_PATH_SLOTS) path_port;
    register<bit<16>>(ATSSS_P4_PATH_SLOTS) path_egress;

    bit<32> own_ip = 0;
    bit<64> epoch = 0;
    bit<32> mtu = 1500;
    bit<32> floor = 0;
    bit<32> row = 0;
    bit<32> from_path = 0;
    bit<16> out_port = 0;
    bool found = false;

    action set_node(bit<32> ip, bit<64> ep, bit<32> max_len, bit<32> floor_ticks) {
        own_ip = ip;
        epoch = ep;
        mtu = max_len;
        floor = floor_ticks;
    }

    /* The UPF's address, epoch, MTU and outage floor (ticks): a keyless table. */
    table node {
        actions = { set_node; }
        default_action = set_node(0, 0, 1500, 0);
    }

    action set_ue(bit<32> r) {
        row = r;
    }

    /* A UE's own address -> its row (the eBPF program's ue_index). */
    table ue_by_ip {
        key = { h.ipv4.dst: exact; }
        actions = { set_ue; NoAction; }
        default_action = NoAction;
        size = ATSSS_P4_UES;
    }

    action set_path(bit<32> r, bit<32> j) {
        row = r;
        from_path = j;
    }

    /* A UE's address on a path -> its row and the path (the eBPF program's path_index). */
    table ue_by_path {
        key = { h.ipv4.src: exact; }
        actions = { set_path; NoAction; }
        default_action = NoAction;
        size = ATSSS_P4_PATH_SLOTS;
    }

    action route_port(bit<16> p) {
        out_port = p;
        found = true;
    }

    table routes {
        key = { h.ipv4.dst: lpm; }
        actions = { route_port; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ROUTES;
    }

    action set_macs(bit<48> own, bit<48> peer) {
        h.eth.src = own;
        h.eth.dst = peer;
    }

    /* The ports this node has, with their MACs: a port missing here cannot be sent to. */
    table port_macs {
        key = { out_port: exact; }
        actions = { set_macs; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_PORTS;
    }

    action count(bit<32> which) {
        bit<64> c;
        counters.read(c, which);
        counters.write(which, c + 1);
    }

    action drop_counted(bit<32> which) {
        count(which);
        mark_to_drop(sm);
    }

    action to_stack(bit<32> which) {
        count(which);
        sm.egress_spec = MPS_STACK_PORT;
    }

    /* wire::parse_frame's IPv4 checks, on the frame's length as received. */
    action ipv4_malformed(in bit<32> len, out bool bad) {
        bit<32> ihl_bytes = (bit<32>)h.ipv4.ihl * 4;
        bit<32> total = (bit<32>)h.ipv4.total_len;
        bad = len < 34 || !h.ipv4.isValid() || h.ipv4.version != 4 || ihl_bytes < 20 ||
              len - 14 < ihl_bytes || total < ihl_bytes || total > len - 14;
    }

    /* TTL - 1, the checksum updated as RFC 1624 says (TTL is the high byte of its word). */
    action decrement_ttl() {
        bit<16> old = h.ipv4.ttl ++ h.ipv4.protocol;
        h.ipv4.ttl = h.ipv4.ttl - 1;
        h.ipv4.checksum = csum_replace(h.ipv4.checksum, old, h.ipv4.ttl ++ h.ipv4.protocol);
    }

    /* A packet's raw draw: the test register's next value, or BMv2's. */
    action take_draw(out bit<32> raw) {
        bit<32> n;
        test_draws_n.read(n, 0);
        if (n != 0) {
            bit<32> next;
            test_draw_next.read(next, 0);
            if (next >= n) { next = 0; }
            test_draws.read(raw, next);
            test_draw_next.write(0, next + 1);
        } else {
            random(raw, 0, 0xffffffff);
        }
    }

    action load_path(in bit<32> at, out path_t p) {
        path_cur_rtt.read(p.cur_rtt, at);
        path_min_rtt.read(p.min_rtt, at);
        path_seq_sent.read(p.seq_sent, at);
        path_seq_acked.read(p.seq_acked, at);
        path_last_heard.read(p.last_heard, at);
        path_lost.read(p.lost, at);
        path_last_cut.read(p.last_cut, at);
        path_cwnd.read(p.cwnd, at);
        path_acks_in_round.read(p.acks_in_round, at);
        path_flags.read(p.flags, at);
    }

    action store_path(in bit<32> at, in path_t p) {
        path_cur_rtt.write(at, p.cur_rtt);
        path_min_rtt.write(at, p.min_rtt);
        path_seq_sent.write(at, p.seq_sent);
        path_seq_acked.write(at, p.seq_acked);
        path_last_heard.write(at, p.last_heard);
        path_lost.write(at, p.lost);
        path_last_cut.write(at, p.last_cut);
        path_cwnd.write(at, p.cwnd);
        path_acks_in_round.write(at, p.acks_in_round);
        path_flags.write(at, p.flags);
    }

    apply {
        node.apply();
        bit<32> len = sm.packet_length;
        bit<16> in_port = (bit<16>)sm.ingress_port;
        if (in_port < MPS_MAX_PORTS) {
            bit<64> rx;
            port_rx_pkts.read(rx, (bit<32>)in_port);
            port_rx_pkts.write((bit<32>)in_port, rx + 1);
        }
        if (len < 14 || !h.eth.isValid()) {
            drop_counted(ATSSS_C_IPV4_MALFORMED); /* Runt */
            return;
        }
        if (h.eth.ether_type != 0x0800) {
            to_stack(ATSSS_C_NOT_IPV4); /* ARP, IPv6, VLAN, shims: the node's own stack */
            return;
        }
        bool bad;
        ipv4_malformed(len, bad);
        if (bad) {
            drop_counted(ATSSS_C_IPV4_MALFORMED);
            return;
        }

        /* The clock: BMv2's microseconds, or the vectors'; the registers' ticks are shifts of
         * nanoseconds (exact: a whole number of microseconds times 1000). */
        bit<64> now_us;
        bit<8> test;
        test_clock_on.read(test, 0);
        if (test != 0) {
            test_clock_us.read(now_us, 0);
        } else {
            now_us = (bit<64>)sm.ingress_global_timestamp;
        }
        bit<32> now = scaled_ticks(now_us * 1000);
        bit<32> tot = (bit<32>)h.ipv4.total_len;
        bit<32> ihl_bytes = (bit<32>)h.ipv4.ihl * 4;
        bool routed = false;

        if (h.ipv4.dst == own_ip) {
            /* parse_frame reads the ports of a first fragment whose UDP header lies inside
             * the total length; a tunnel frame has them and goes to port 4789. */
            if (!(h.ipv4.protocol == 17 && h.ipv4.frag_offset == 0 && tot >= ihl_bytes + 8 &&
                  h.udp.isValid() && h.udp.dst_port == ATSSS_UDP_PORT)) {
                to_stack(ATSSS_C_LOCAL);
                return;
            }
            /* No options, not a fragment (DF allowed), the UDP length the IPv4 one less 20,
             * a header with reserved 0 and kind 1 to 3 inside the total length. */
            if (h.ipv4.ihl != 5 || (h.ipv4.flags & 1) != 0 || h.ipv4.frag_offset != 0 ||
                (bit<32>)h.udp.len + 20 != tot || tot < 48 || !h.hdr.isValid() ||
                h.hdr.reserved != 0 || h.hdr.kind < ATSSS_MSG_DATA || h.hdr.kind > ATSSS_MSG_KEEPALIVE) {
                drop_counted(ATSSS_C_MALFORMED);
                return;
            }
            if (!ue_by_path.apply().hit) {
                drop_counted(ATSSS_C_UNKNOWN_UE);
                return;
            }
            if ((bit<32>)h.hdr.path != from_path) {
                drop_counted(ATSSS_C_MALFORMED);
                return;
            }
            if (h.hdr.kind == ATSSS_MSG_ACK) {
                if (tot < 64 || !h.ack.isValid()) {
                    drop_counted(ATSSS_C_MALFORMED);
                    return;
                }
                /* upf::ack_regs: RTT = now - echo (wrapping) - delay (saturating at 0). */
                bit<32> rtt_us = (bit<32>)now_us - h.ack.echo_us;
                if (rtt_us > h.ack.ack_delay_us) {
                    rtt_us = rtt_us - h.ack.ack_delay_us;
                } else {
                    rtt_us = 0;
                }
                bit<32> rtt = scaled_ticks((bit<64>)rtt_us * 1000);
                bit<32> acked = h.ack.highest_seq;
                bit<32> lost = h.ack.highest_seq - h.ack.received;
                bit<32> at = row * 4 + from_path;
                path_t p;
                load_path(at, p);
                /* registers::on_ack: older than one seen, or beyond what was sent: ignored. */
                if (negative(acked - p.seq_acked) || positive(acked - p.seq_sent)) {
                    drop_counted(ATSSS_C_ACKS_IGNORED);
                    return;
                }
                bit<8> kind;
                ue_kind.read(kind, row);
                p.seq_acked = acked;
                p.last_heard = now;
                p.cur_rtt = rtt;
                if ((p.flags & ATSSS_PATH_HAS_RTT) == 0 || rtt < p.min_rtt) {
                    p.min_rtt = rtt;
                }
                p.flags = p.flags | ATSSS_PATH_HAS_RTT;
                bool new_loss = lost != p.lost;
                p.lost = lost;
                if (from_path == 0) {
                    ue_probe_backoff.write(row, 0);
                }
                if (kind == ATSSS_KIND_DWRR && from_path == 0) {
                    bit<8> w;
                    ue_weight.read(w, row);
                    if (new_loss) {
                        bit<8> cut = (w >> 3) + 1;
                        if (cut > w) { cut = w; }
                        w = w - cut;
                    } else if (w != 255) {
                        w = w + 1;
                    }
                    ue_weight.write(row, w);
                } else if (kind == ATSSS_KIND_CMON) {
                    cmon_on_ack(p, now);
                }
                store_path(at, p);
                drop_counted(ATSSS_C_ACKS); /* consumed */
                return;
            }
            if (h.hdr.kind == ATSSS_MSG_KEEPALIVE) {
                if (tot < 60) {
                    drop_counted(ATSSS_C_MALFORMED);
                    return;
                }
                drop_counted(ATSSS_C_KEEPALIVES); /* consumed */
                return;
            }
            /* Uplink data: an IPv4 packet filling the rest exactly, from the UE's own
             * address; decapsulated and routed as any packet. */
            bit<32> inner_len = tot - ATSSS_ENCAP_BYTES;
            if (tot < ATSSS_ENCAP_BYTES + 20 || !h.inner.isValid() || h.inner.version != 4 ||
                h.inner.ihl < 5 || (bit<32>)h.inner.ihl * 4 > inner_len ||
                (bit<32>)h.inner.total_len != inner_len) {
                drop_counted(ATSSS_C_MALFORMED);
                return;
            }
            bit<32> ue_addr;
            ue_ip.read(ue_addr, row);
            if (h.inner.src != ue_addr) {
                drop_counted(ATSSS_C_SPOOFED); /* a UE sends only as itself */
                return;
            }
            count(ATSSS_C_UPLINK);
            h.ipv4 = h.inner;
            h.inner.setInvalid();
            h.udp.setInvalid();
            h.hdr.setInvalid();
            h.data.setInvalid();
            m.cut_to = 14 + inner_len; /* Ethernet padding is not carried */
            routed = true;
        } else if (ue_by_ip.apply().hit) {
            /* Downlink (upf::downlink): too big once encapsulated is dropped before anything
             * moves; then the draw (weighted kinds only), the scheduler, the numbers. */
            if (tot + ATSSS_ENCAP_BYTES > mtu) {
                drop_counted(ATSSS_C_TOO_BIG);
                return;
            }
            bit<8> weight;
            bit<8> n_paths;
            bit<8> kind;
            bit<8> backoff;
            bit<32> last_change;
            ue_weight.read(weight, row);
            ue_n_paths.read(n_paths, row);
            ue_kind.read(kind, row);
            ue_probe_backoff.read(backoff, row);
            ue_last_change.read(last_change, row);
            if (kind > ATSSS_KIND_PRIORITY) {
                kind = ATSSS_KIND_WRR; /* registers::kind_of */
            }
            path_t p0;
            path_t p1;
            path_t p2;
            path_t p3;
            load_path(row * 4, p0);
            load_path(row * 4 + 1, p1);
            load_path(row * 4 + 2, p2);
            load_path(row * 4 + 3, p3);
            bit<32> n = (bit<32>)n_paths;
            if (n < 1) { n = 1; }
            if (n > 4) { n = 4; }
            bit<32> secondary = 0;
            if (n_paths > 1) { secondary = 1; }
            bit<32> draw = 0;
            if (kind == ATSSS_KIND_WRR || kind == ATSSS_KIND_DWRR || kind == ATSSS_KIND_RTTMON ||
                kind == ATSSS_KIND_LOAD_BALANCING) {
                take_draw(draw);
            }

            /* registers::select */
            bit<32> path = 0;
            bool measuring = false; /* CMon and the steering modes: probe_or */
            if (kind == ATSSS_KIND_RTTMON) {
                /* rttmon_step: once now - last_change > target, one step, within 0..=62. */
                bit<32> target = path_target(p0);
                if (now - last_change > target) {
                    if (p0.cur_rtt > target && weight > 0) {
                        weight = weight - 1;
                    }
                    if (p0.cur_rtt <= target && weight < ATSSS_RTTMON_MAX_WEIGHT) {
                        weight = weight + 1;
                    }
                    last_change = now;
                }
                /* The draw's top 6 bits: weight w is a share of (w + 1) / 64. */
                if ((draw >> 26) <= (bit<32>)weight) {
                    path = 0;
                } else {
                    path = secondary;
                }
            } else if (kind == ATSSS_KIND_CMON) {
                bit<32> choice = 4;
                bit<32> excess_best = 0xffffffff;
                bit<32> fallback = n - 1;
                cmon_visit(p0, 0, n, now, floor, choice, excess_best, fallback);
                cmon_visit(p1, 1, n, now, floor, choice, excess_best, fallback);
                cmon_visit(p2, 2, n, now, floor, choice, excess_best, fallback);
                cmon_visit(p3, 3, n, now, floor, choice, excess_best, fallback);
                path = choice;
                if (choice == 4) {
                    path = fallback;
                }
                measuring = true;
            } else if (kind == ATSSS_KIND_ACTIVE_STANDBY) {
                path = secondary;
                if (path_up(p0, now, floor)) {
                    path = 0;
                }
                measuring = true;
            } else if (kind == ATSSS_KIND_SMALLEST_DELAY) {
                bit<32> best_rtt = 0xffffffff;
                delay_visit(p0, 0, n, now, floor, path, best_rtt);
                delay_visit(p1, 1, n, now, floor, path, best_rtt);
                delay_visit(p2, 2, n, now, floor, path, best_rtt);
                delay_visit(p3, 3, n, now, floor, path, best_rtt);
                measuring = true;
            } else if (kind == ATSSS_KIND_PRIORITY) {
                bit<32> choice = 4;
                priority_visit(p0, 0, n, now, floor, choice);
                priority_visit(p1, 1, n, now, floor, choice);
                priority_visit(p2, 2, n, now, floor, choice);
                priority_visit(p3, 3, n, now, floor, choice);
                path = choice;
                if (choice == 4) {
                    path = n - 1;
                }
                measuring = true;
            } else {
                /* WRR, DWRR, Load-Balancing: draw_255 < weight. */
                bit<32> d255 = ((draw >> 16) * 255) >> 16;
                if (d255 < (bit<32>)weight) {
                    path = 0;
                } else {
                    path = secondary;
                }
            }
            if (measuring && path != 0) {
                /* probe_or: the preferred path's target RTT since the last probe, or while it
                 * is down the outage floor doubled per unanswered probe. */
                bool up0 = path_up(p0, now, floor);
                bit<32> interval = path_target(p0);
                if (!up0) {
                    bit<8> b = backoff;
                    if (b > ATSSS_MAX_PROBE_BACKOFF) { b = ATSSS_MAX_PROBE_BACKOFF; }
                    interval = floor << b;
                }
                if (now - last_change > interval) {
                    last_change = now;
                    if (!up0 && backoff < ATSSS_MAX_PROBE_BACKOFF) {
                        backoff = backoff + 1;
                    }
                    path = 0;
                }
            }

            /* on_send on the chosen path; the UE's numbers. */
            bit<32> seq;
            path_t p;
            if (path == 0) { p = p0; }
            else if (path == 1) { p = p1; }
            else if (path == 2) { p = p2; }
            else { p = p3; }
            on_send(p, now, seq);
            bit<32> at = row * 4 + path;
            path_seq_sent.write(at, p.seq_sent);
            path_last_heard.write(at, p.last_heard);
            ue_weight.write(row, weight);
            ue_last_change.write(row, last_change);
            ue_probe_backoff.write(row, backoff);
            bit<64> pn;
            bit<32> tseq;
            ue_packet_number.read(pn, row);
            ue_tunnel_seq.read(tseq, row);
            ue_packet_number.write(row, pn + 1);
            ue_tunnel_seq.write(row, tseq + 1);
            count(ATSSS_C_ENCAPSULATED);
            count(ATSSS_C_PATH0 + path);

            /* The encapsulation (frame::encapsulate): the outer TOS the inner one, TTL 64,
             * DF, id 0; UDP from 4789, checksum 0; the header and the data body. */
            bit<32> addr;
            bit<16> udp_port;
            bit<16> egress;
            path_addr.read(addr, at);
            path_port.read(udp_port, at);
            path_egress.read(egress, at);
            h.o_ip.setValid();
            h.o_ip.version = 4;
            h.o_ip.ihl = 5;
            h.o_ip.tos = h.ipv4.tos;
            h.o_ip.total_len = (bit<16>)(tot + ATSSS_ENCAP_BYTES);
            h.o_ip.identification = 0;
            h.o_ip.flags = 2;
            h.o_ip.frag_offset = 0;
            h.o_ip.ttl = ATSSS_OUTER_TTL;
            h.o_ip.protocol = 17;
            h.o_ip.checksum = 0; /* AtComputeChecksum */
            h.o_ip.src = own_ip;
            h.o_ip.dst = addr;
            h.o_udp.setValid();
            h.o_udp.src_port = ATSSS_UDP_PORT;
            h.o_udp.dst_port = udp_port;
            h.o_udp.len = (bit<16>)(tot + ATSSS_ENCAP_BYTES - 20);
            h.o_udp.checksum = 0;
            h.o_hdr.setValid();
            h.o_hdr.kind = ATSSS_MSG_DATA;
            h.o_hdr.path = (bit<8>)path;
            h.o_hdr.reserved = 0;
            h.o_hdr.epoch = epoch;
            h.o_hdr.packet_number = pn;
            h.o_data.setValid();
            h.o_data.w0 = seq;
            h.o_data.w1 = tseq;
            h.o_data.w2 = (bit<32>)now_us;
            out_port = egress;
            m.cut_to = 14 + ATSSS_ENCAP_BYTES + tot; /* Ethernet padding is not carried */
        } else {
            routed = true;
        }

        if (routed) {
            if (h.ipv4.ttl <= 1) {
                drop_counted(ATSSS_C_TTL_EXPIRED);
                return;
            }
            routes.apply();
            if (!found) {
                drop_counted(ATSSS_C_NO_ROUTE);
                return;
            }
            decrement_ttl();
        }
        if (!port_macs.apply().hit) {
            drop_counted(ATSSS_C_REDIRECT_FAILED);
            return;
        }
        sm.egress_spec = (bit<9>)out_port;
        bit<8> queues;
        port_queues.read(queues, (bit<32>)out_port);
        sm.priority = MPS_CLAMP_QUEUE(h.ipv4.tos[7:5], queues);
        bit<64> tx;
        port_tx_pkts.read(tx, (bit<32>)out_port);
        port_tx_pkts.write((bit<32>)out_port, tx + 1);
    }
}

control AtIngress(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    AtUpf() upf;
    /* Every frame's run through ingress, counted after it ended whichever way: the vector
     * runner's sign that a step's registers are written. */
    register<bit<64>>(1) ingress_runs;

    apply {
        upf.apply(h, m, sm);
        bit<64> runs;
        ingress_runs.read(runs, 0);
        ingress_runs.write(0, runs + 1);
    }
}

control AtEgress(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    apply {
        if (m.cut_to != 0) {
            truncate(m.cut_to);
        }
    }
}

control AtComputeChecksum(inout headers_t h, inout metadata_t m) {
    apply {
        /* The outer header's, computed whole; a routed frame's was updated in place. */
        update_checksum(h.o_ip.isValid(),
            { h.o_ip.version, h.o_ip.ihl, h.o_ip.tos, h.o_ip.total_len, h.o_ip.identification,
              h.o_ip.flags, h.o_ip.frag_offset, h.o_ip.ttl, h.o_ip.protocol, h.o_ip.src,
              h.o_ip.dst },
            h.o_ip.checksum, HashAlgorithm.csum16);
    }
}

control AtDeparser(packet_out pk, in headers_t h) {
    apply {
        pk.emit(h.eth);
        pk.emit(h.o_ip);
        pk.emit(h.o_udp);
        pk.emit(h.o_hdr);
        pk.emit(h.o_data);
        pk.emit(h.ipv4);
        pk.emit(h.ipv4_opts);
        pk.emit(h.udp);
        pk.emit(h.hdr);
        pk.emit(h.data);
        pk.emit(h.ack);
        pk.emit(h.keepalive);
        pk.emit(h.inner);
    }
}

V1Switch(AtParser(), AtVerifyChecksum(), AtIngress(), AtEgress(), AtComputeChecksum(),
         AtDeparser()) main;
