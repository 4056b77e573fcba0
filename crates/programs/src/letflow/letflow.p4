/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LetFlow for BMv2's v1model: the twin of crates/programs/src/letflow/mod.rs (Rust) and
 * letflow.bpf.c (eBPF), register for register. Compiled with p4/ on the include path
 * (p4c-bm2-ss -I p4 ...): the parser, headers and arithmetic are p4/include's.
 *
 *   ingress: frame checks (wire::parse_frame) -> addressed to this node (the stack port) ->
 *     TTL -> IPv4 LPM; a route to an equal-cost group goes through the flowlet table:
 *       slot = seeded 5-tuple hash & (table_entries - 1), tag = the whole hash;
 *       this flow's flowlet, less than the gap old, on a port still in the group: continue;
 *       another flow's active flowlet: the ECMP hash picks the port, the slot is left alone;
 *       otherwise a new flowlet on a port drawn as (draw * n) >> 32.
 *   egress: nothing.
 *
 * Time: BMv2's ingress_global_timestamp counts microseconds, so the gap and the flowlets'
 * last times are held in microseconds (the gap parameter is a whole number of them). The
 * conformance vectors set the clock (test_clock_on, test_clock_us) and the draws (test_draws).
 *
 * BMv2 sizes registers when it loads the program, so the table has LF_TABLE_SLOTS slots and
 * the control plane uses the first table_entries of them (and refuses more).
 */
#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/arith.p4"
#include "include/queues.p4"

/* The flowlet registers' size: table_entries may be any power of two up to this on BMv2. */
#define LF_TABLE_SLOTS 65536
#define LF_TEST_DRAWS 64

/* Register "counters": indices as enum lf_counter in letflow.h. */
#define LF_C_NEW_FLOWLETS 0
#define LF_C_CONTINUED 1
#define LF_C_COLLISIONS 2
#define LF_C_NO_ROUTE 3
#define LF_C_TTL_EXPIRED 4
#define LF_C_LOCAL 5
#define LF_C_NOT_IPV4 6
#define LF_C_MALFORMED 7
#define LF_C_REDIRECT_FAILED 8
#define LF_C_MAX 9

control LfVerifyChecksum(inout headers_t h, inout metadata_t m) {
    apply { } /* wire::parse_frame does not check it either */
}

control LfIngress(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    register<bit<64>>(LF_C_MAX) counters;
    register<bit<64>>(MPS_MAX_PORTS) port_rx_pkts;
    register<bit<64>>(MPS_MAX_PORTS) port_rx_bytes;
    register<bit<64>>(MPS_MAX_PORTS) port_tx_pkts;
    register<bit<64>>(MPS_MAX_PORTS) port_tx_bytes;
    /* The flowlet table (Rust: letflow::Slot): valid << 48 | port << 32 | tag, and the time
     * the flowlet last sent, in microseconds. */
    register<bit<64>>(LF_TABLE_SLOTS) flowlet_slot;
    register<bit<64>>(LF_TABLE_SLOTS) flowlet_last_us;
    /* Conformance tests: a clock set from outside, and fixed draws replayed cyclically while
     * test_draws_n > 0. */
    register<bit<8>>(1) test_clock_on;
    register<bit<64>>(1) test_clock_us;
    register<bit<32>>(LF_TEST_DRAWS) test_draws;
    register<bit<32>>(1) test_draws_n;
    register<bit<32>>(1) test_draw_next;
    /* Each port's queues (0 or 1: one), from the control plane: a packet joins its DSCP
     * class's, clamped (include/queues.p4). */
    register<bit<8>>(MPS_MAX_PORTS) port_queues;

    bit<32> own_ip = 0;
    bit<32> hash_seed = 0;
    bit<64> gap_us = 0;
    bit<32> table_mask = 0;
    bit<16> out_port = 0;
    bit<16> group = 0;
    bit<32> group_size = 0;
    bit<32> member = 0;
    bool is_ecmp = false;
    bool found = false;

    action set_node(bit<32> ip, bit<32> seed, bit<64> gap, bit<32> mask) {
        own_ip = ip;
        hash_seed = seed;
        gap_us = gap;
        table_mask = mask;
    }

    /* The node's address, ECMP seed, flowlet gap (µs) and table mask (a keyless table). */
    table node {
        actions = { set_node; }
        default_action = set_node(0, 0, 100, 0);
    }

    action route_port(bit<16> p) {
        out_port = p;
        found = true;
    }

    action route_ecmp(bit<16> g) {
        group = g;
        is_ecmp = true;
    }

    table routes {
        key = { h.ipv4.dst: lpm; }
        actions = { route_port; route_ecmp; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ROUTES;
    }

    action set_group_size(bit<32> n) {
        group_size = n;
    }

    /* An equal-cost group's number of ports. */
    table ecmp_group {
        key = { group: exact; }
        actions = { set_group_size; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ECMP_GROUPS;
    }

    /* An equal-cost group's ports, by index. */
    table ecmp_member {
        key = {
            group: exact;
            member: exact;
        }
        actions = { route_port; NoAction; }
        default_action = NoAction;
        size = 1024; /* MPS_MAX_ECMP_GROUPS * MPS_MAX_PORTS */
    }

    bit<16> slot_port = 0;

    /* Whether a port is in an equal-cost group: (group, port) of each member. */
    table ecmp_has_port {
        key = {
            group: exact;
            slot_port: exact;
        }
        actions = { NoAction; }
        default_action = NoAction;
        size = 1024;
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

    action count_port(bit<16> port, bit<32> bytes, bool tx) {
        bit<64> pkts;
        bit<64> total;
        if (tx) {
            port_tx_pkts.read(pkts, (bit<32>)port);
            port_tx_bytes.read(total, (bit<32>)port);
            port_tx_pkts.write((bit<32>)port, pkts + 1);
            port_tx_bytes.write((bit<32>)port, total + (bit<64>)bytes);
        } else {
            port_rx_pkts.read(pkts, (bit<32>)port);
            port_rx_bytes.read(total, (bit<32>)port);
            port_rx_pkts.write((bit<32>)port, pkts + 1);
            port_rx_bytes.write((bit<32>)port, total + (bit<64>)bytes);
        }
    }

    action drop_counted(bit<32> which) {
        count(which);
        mark_to_drop(sm);
    }

    action to_stack(bit<32> which) {
        count(which);
        sm.egress_spec = MPS_STACK_PORT;
    }

    /* wire::parse_frame's IPv4 checks, on the frame's length as received (as mpsched.p4). */
    action ipv4_malformed(in bit<32> len, out bool bad) {
        bit<32> ihl_bytes = (bit<32>)h.ipv4.ihl * 4;
        bit<32> total = (bit<32>)h.ipv4.total_len;
        bad = len < 34 || !h.ipv4.isValid() || h.ipv4.version != 4 || ihl_bytes < 20 ||
              len - 14 < ihl_bytes || total < ihl_bytes || total > len - 14;
    }

    /* sport << 16 | dport of a first fragment of UDP with its 8 header bytes or TCP with 20,
     * inside the total length; else 0 (as mpsched.p4). */
    action l4_ports(out bit<32> ports) {
        bit<32> need = 20;
        if (h.ipv4.protocol == 17) { need = 8; }
        ports = 0;
        if (h.l4.isValid() && (bit<32>)h.ipv4.total_len >= (bit<32>)h.ipv4.ihl * 4 + need) {
            ports = h.l4.src_port ++ h.l4.dst_port;
        }
    }

    /* TTL - 1, the checksum updated as RFC 1624 says (TTL is the high byte of its word). */
    action decrement_ttl() {
        bit<16> old = h.ipv4.ttl ++ h.ipv4.protocol;
        h.ipv4.ttl = h.ipv4.ttl - 1;
        h.ipv4.checksum = csum_replace(h.ipv4.checksum, old, h.ipv4.ttl ++ h.ipv4.protocol);
    }

    /* A new flowlet's raw draw: the test register's next value, or BMv2's. */
    action flowlet_draw(out bit<32> raw) {
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

    apply {
        node.apply();
        bit<16> in_port = (bit<16>)sm.ingress_port;
        bit<32> len = sm.packet_length;
        if (in_port < MPS_MAX_PORTS) {
            count_port(in_port, len, false);
        }
        if (len < 14 || !h.eth.isValid()) {
            drop_counted(LF_C_MALFORMED);
            return;
        }
        if (h.eth.ether_type != 0x0800) {
            to_stack(LF_C_NOT_IPV4); /* ARP, IPv6, a VLAN tag: the node's own stack */
            return;
        }
        bool bad;
        ipv4_malformed(len, bad);
        if (bad) {
            drop_counted(LF_C_MALFORMED);
            return;
        }
        if (h.ipv4.dst == own_ip) {
            to_stack(LF_C_LOCAL);
            return;
        }
        if (h.ipv4.ttl <= 1) {
            drop_counted(LF_C_TTL_EXPIRED);
            return;
        }
        decrement_ttl();

        routes.apply();
        if (is_ecmp) {
            ecmp_group.apply();
        }
        if (is_ecmp && group_size != 0 && group_size <= MPS_MAX_PORTS) {
            /* LetFlow::flowlet_port. Ecmp::seeded_hash: CRC-32 of the 5-tuple in network
             * order, xor the seed, fmix32 (as p4/include/route.p4). */
            bit<32> ports;
            l4_ports(ports);
            bit<32> crc;
            hash(crc, HashAlgorithm.crc32, 32w0,
                 { h.ipv4.src, h.ipv4.dst, h.ipv4.protocol, ports }, 64w0x100000000);
            bit<32> fh = fmix32(crc ^ hash_seed);
            bit<32> at = fh & table_mask;
            bit<64> now;
            bit<8> test;
            test_clock_on.read(test, 0);
            if (test != 0) {
                test_clock_us.read(now, 0);
            } else {
                now = (bit<64>)sm.ingress_global_timestamp;
            }
            bit<64> entry;
            bit<64> last;
            flowlet_slot.read(entry, at);
            flowlet_last_us.read(last, at);
            bit<32> tag = (bit<32>)entry;
            slot_port = (bit<16>)(entry >> 32);
            bool valid = (entry >> 48) != 0;
            bit<64> age = 0;
            if (now > last) { age = now - last; }
            bool active = valid && age < gap_us;
            bool mine = active && tag == fh && ecmp_has_port.apply().hit;
            bool fresh = false;
            if (mine) {
                out_port = slot_port;
                found = true;
                flowlet_last_us.write(at, now);
                count(LF_C_CONTINUED);
            } else if (active && tag != fh) {
                count(LF_C_COLLISIONS);
                member = mod_small(fh, group_size);
            } else {
                bit<32> raw;
                flowlet_draw(raw);
                bit<64> wide = (bit<64>)raw * (bit<64>)group_size;
                member = (bit<32>)(wide >> 32);
                fresh = true;
            }
            if (!mine) {
                ecmp_member.apply();
            }
            if (fresh && found) {
                flowlet_slot.write(at, (64w1 << 48) | ((bit<64>)out_port << 32) | (bit<64>)fh);
                flowlet_last_us.write(at, now);
                count(LF_C_NEW_FLOWLETS);
            }
        }
        if (!found) {
            drop_counted(LF_C_NO_ROUTE);
            return;
        }
        if (!port_macs.apply().hit) {
            drop_counted(LF_C_REDIRECT_FAILED);
            return;
        }
        sm.egress_spec = (bit<9>)out_port;
        bit<8> queues;
        port_queues.read(queues, (bit<32>)out_port);
        sm.priority = MPS_CLAMP_QUEUE(h.ipv4.tos[7:5], queues);
        count_port(out_port, len, true);
    }
}

control LfEgress(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    apply { }
}

control LfComputeChecksum(inout headers_t h, inout metadata_t m) {
    apply { } /* forwarding updates the checksum in place */
}

V1Switch(MpsParser(), LfVerifyChecksum(), LfIngress(), LfEgress(), LfComputeChecksum(),
         MpsDeparser()) main;
