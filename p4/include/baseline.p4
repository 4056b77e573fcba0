/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The marking baselines' common part (crates/programs/src/pmqecn/baselines.rs; dcqcn.p4 and
 * tcn.p4 include it): every port is one first-in-first-out queue, BMv2's priority 0, which
 * drops a packet that finds fifo_pkts waiting (baseline.tail_drops), and at dequeue an
 * ECN-capable packet the program's rule (BASELINE_RULE, a control defined before this file
 * is included) finds over its threshold is marked CE (baseline.marked). A Not-ECT or CE
 * packet is never handed to the rule, so it takes no draw, and is not counted.
 *
 *   ingress, once the port p is known (MPS_QUEUE_STAGE): baseline_fifo_len[p] counts the
 *     packets the program queued at p that have not reached egress; one that finds
 *     fifo_pkts there is dropped (the Rust twin's on_enqueue: enq_qdepth >= fifo_pkts), else
 *     counted and given priority 0. The control plane sets BMv2's own queue deeper, so that
 *     only this count drops.
 *   egress (MPS_DEQUEUE_STAGE): the count falls, then the rule reads the depth the packet
 *     found (standard_metadata.enq_qdepth) and its sojourn (deq_timedelta, microseconds).
 *
 * Each read-modify-write of a register shared by ingress and egress threads is one action
 * (BMv2 holds the locks of the registers an action uses while it runs).
 *
 * Conformance: with baseline_test_flags bit 0 set, ingress counts nothing and drops nothing
 * and only a vector's egress step (m.egress_test) meets the rule, with the figures of the step
 * (baseline_test_enq_qdepth, baseline_test_sojourn_us), as the Rust runner's egress step; the
 * frames ingress steps forward pass egress untouched.
 */
#ifndef MPSCHED_BASELINE_P4
#define MPSCHED_BASELINE_P4

#include "include/arith.p4"

/* Register baseline_counters, named baseline.* as the Rust twin names them. */
#define BL_C_MARKED 0
#define BL_C_TAIL_DROPS 1
#define BL_C_MAX 2

/* Register baseline_test_flags. */
#define BL_F_VECTORS 1

register<bit<64>>(BL_C_MAX) baseline_counters;
register<bit<32>>(1) baseline_fifo_pkts;
register<bit<32>>(MPS_MAX_PORTS) baseline_fifo_len;
register<bit<8>>(1) baseline_test_flags;
register<bit<32>>(1) baseline_test_enq_qdepth;
register<bit<32>>(1) baseline_test_sojourn_us;

control BaselineEnqueue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                        in bit<16> port, in bit<8> queues, inout bool forward) {
    bool full = false;

    /* Baseline::on_enqueue's tail drop, as one action. */
    action admit() {
        bit<32> len;
        bit<32> limit;
        baseline_fifo_len.read(len, (bit<32>)port);
        baseline_fifo_pkts.read(limit, 0);
        full = len >= limit;
        if (full) {
            bit<64> c;
            baseline_counters.read(c, BL_C_TAIL_DROPS);
            baseline_counters.write(BL_C_TAIL_DROPS, c + 1);
        } else {
            baseline_fifo_len.write((bit<32>)port, len + 1);
        }
    }

    table admission {
        actions = { admit; }
        default_action = admit();
    }

    apply {
        bit<8> flags;
        baseline_test_flags.read(flags, 0);
        if ((flags & BL_F_VECTORS) == 0) {
            admission.apply();
        }
        if (full) {
            forward = false;
        } else {
            sm.priority = 0;
        }
    }
}

control BaselineDequeue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    BASELINE_RULE() rule;

    action release() {
        bit<32> len;
        baseline_fifo_len.read(len, (bit<32>)sm.egress_port);
        if (len > 0) {
            baseline_fifo_len.write((bit<32>)sm.egress_port, len - 1);
        }
    }

    table departure {
        actions = { release; }
        default_action = release();
    }

    /* CE, the checksum updated as RFC 1624 says, and counted. */
    action mark_ce() {
        bit<16> old = h.ipv4.version ++ h.ipv4.ihl ++ h.ipv4.tos;
        h.ipv4.tos = h.ipv4.tos | 3;
        h.ipv4.checksum = csum_replace(h.ipv4.checksum, old,
                                       h.ipv4.version ++ h.ipv4.ihl ++ h.ipv4.tos);
        bit<64> c;
        baseline_counters.read(c, BL_C_MARKED);
        baseline_counters.write(BL_C_MARKED, c + 1);
    }

    apply {
        if ((bit<16>)sm.egress_port < MPS_MAX_PORTS) {
            bit<8> flags;
            baseline_test_flags.read(flags, 0);
            bool vectors = (flags & BL_F_VECTORS) != 0;
            bit<32> q_pkts = (bit<32>)sm.enq_qdepth;
            bit<32> sojourn_us = sm.deq_timedelta;
            if (vectors) {
                baseline_test_enq_qdepth.read(q_pkts, 0);
                baseline_test_sojourn_us.read(sojourn_us, 0);
            } else {
                departure.apply();
            }
            bit<2> ecn = h.ipv4.tos[1:0];
            bool ect = h.ipv4.isValid() && (ecn == 1 || ecn == 2);
            if (ect && (!vectors || m.egress_test == 1)) {
                bool over = false;
                rule.apply(q_pkts, sojourn_us, over);
                if (over) {
                    mark_ce();
                }
            }
        }
    }
}

#endif
