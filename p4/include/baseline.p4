/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The baselines' common part (crates/programs/src/pmqecn/baselines.rs; dcqcn.p4, tcn.p4 and
 * p4qcn.p4 include it): every port is one first-in-first-out queue, BMv2's priority 0, which
 * drops a packet that finds fifo_pkts waiting (baseline.tail_drops). Two optional rules, each a
 * control the program defines before this file is included:
 *
 *   BASELINE_SAMPLE (P4QCN): every packet the queue admits, with the depth it found, at
 *     ingress.
 *   BASELINE_RULE (DCQCN, TCN): at dequeue, an ECN-capable packet the rule finds over its
 *     threshold is marked CE (baseline.marked). A Not-ECT or CE packet is never handed to the
 *     rule, so it takes no draw, and is not counted. Without a rule nothing is marked.
 *
 *   ingress, once the port p is known (MPS_QUEUE_STAGE, through BaselineAdmit, which a
 *     program's own stage for the switch's own packets uses too): baseline_fifo_len[p] counts
 *     the packets the program queued at p that have not reached egress; one that finds
 *     fifo_pkts there is dropped (the Rust twin's on_enqueue: enq_qdepth >= fifo_pkts), else
 *     counted and given priority 0. The control plane sets BMv2's own queue deeper, so that
 *     only this count drops.
 *   egress (MPS_DEQUEUE_STAGE): the count falls, then the rule reads the depth the packet
 *     found (standard_metadata.enq_qdepth) and its sojourn (deq_timedelta, microseconds).
 *
 * Each read-modify-write of a register shared by ingress and egress threads is one action
 * (BMv2 holds the locks of the registers an action uses while it runs).
 *
 * Conformance: with baseline_test_flags bit 0 set, a packet finds the depth of the vector's
 * step (baseline_test_enq_qdepth), which alone decides the tail drop, and nothing is counted;
 * only a vector's egress step (m.egress_test) meets the rule, with the figures of the step
 * (baseline_test_enq_qdepth, baseline_test_sojourn_us), as the Rust runner's steps; the frames
 * ingress steps forward pass egress untouched.
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
register<bit<32>>(1) baseline_fifo_pkts;               /* a port's queue limit, packets */
register<bit<32>>(MPS_MAX_PORTS) baseline_fifo_len;    /* queued at p, not yet at egress */
register<bit<8>>(1) baseline_test_flags;
register<bit<32>>(1) baseline_test_enq_qdepth;         /* vectors: the depth a step's packet finds */
register<bit<32>>(1) baseline_test_sojourn_us;         /* vectors: an egress step's sojourn */

/* Baseline::on_enqueue's tail drop, as one action: the depth the packet finds at `port` (the
 * program's count, or the vector step's), whether that is full, and counted if not. */
control BaselineAdmit(in bit<16> port, out bool full, out bit<32> depth) {
    action admit() {
        bit<8> flags;
        bit<32> len;
        bit<32> limit;
        baseline_test_flags.read(flags, 0);
        baseline_fifo_len.read(len, (bit<32>)port);
        baseline_fifo_pkts.read(limit, 0);
        depth = len;
        if ((flags & BL_F_VECTORS) != 0) {
            baseline_test_enq_qdepth.read(depth, 0);
        }
        full = depth >= limit;
        if (full) {
            bit<64> c;
            baseline_counters.read(c, BL_C_TAIL_DROPS);
            baseline_counters.write(BL_C_TAIL_DROPS, c + 1);
        } else if ((flags & BL_F_VECTORS) == 0) {
            baseline_fifo_len.write((bit<32>)port, len + 1);
        }
    }

    table admission {
        actions = { admit; }
        default_action = admit();
    }

    apply {
        admission.apply();
    }
}

control BaselineEnqueue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                        in bit<16> port, in bit<8> queues, inout bool forward) {
    BaselineAdmit() admit;
#ifdef BASELINE_SAMPLE
    BASELINE_SAMPLE() sample;
#endif

    apply {
        bool full;
        bit<32> depth;
        admit.apply(port, full, depth);
        if (full) {
            forward = false;
        } else {
            sm.priority = 0;
#ifdef BASELINE_SAMPLE
            sample.apply(h, m, sm, port, depth);
#endif
        }
    }
}

control BaselineDequeue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
#ifdef BASELINE_RULE
    BASELINE_RULE() rule;
#endif

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

#ifdef BASELINE_RULE
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
#endif

    apply {
        if ((bit<16>)sm.egress_port < MPS_MAX_PORTS) {
            bit<8> flags;
            baseline_test_flags.read(flags, 0);
            bool vectors = (flags & BL_F_VECTORS) != 0;
            if (!vectors) {
                departure.apply();
            }
#ifdef BASELINE_RULE
            bit<32> q_pkts = (bit<32>)sm.enq_qdepth;
            bit<32> sojourn_us = sm.deq_timedelta;
            if (vectors) {
                baseline_test_enq_qdepth.read(q_pkts, 0);
                baseline_test_sojourn_us.read(sojourn_us, 0);
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
#endif
        }
    }
}

#endif
