/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtual-queue WRR on strict-priority queues (PMQECN, Fig. 4) for BMv2's v1model: the twin of
 * vqwrr.rs (program `vq-wrr`), register for register. Forwarding is p4/mpsched.p4's, whole
 * (this file includes it, with p4/ on the include path); the two stages below replace its
 * default queue stage (the DSCP class) and its empty dequeue stage. Their registers and
 * actions are p4/include/vqwrr.p4's, which PMQECN's congestion point (pmqecn.p4) shares.
 *
 *   ingress, once the port p is known: the packet's virtual queue v is its DSCP class
 *     (tos >> 5); a virtual queue holding vq_capacity packets at p drops it (vq.drops);
 *     otherwise it takes the highest level l below vq_levels where vq_level_use[p][v][l] <
 *     vq_weight[v], or level 0, and joins BMv2's priority queue l (clamped to the port's
 *     queues, as the simulator clamps a program's choice); vq_len[p][v] and
 *     vq_level_use[p][v][l] rise.
 *   egress, every packet leaving a port: the level it was queued at is the priority queue it
 *     left, standard_metadata.priority (v1model has no qid; simple_switch enqueues by the
 *     priority ingress set and leaves it in the packet's metadata); vq_len[p][v] and
 *     vq_level_use[p][v][l] fall, or, if either is already 0, vq.accounting_errors counts it.
 *
 * simple_switch runs ingress on one thread and egress on others, so each stage's reads and
 * writes are one action, applied through a keyless table: BMv2 holds the locks of every
 * register an action uses while it runs (RegisterSync), so a placement and a release never
 * interleave. The control plane is crates/bmv2/src/vqwrr.rs; the switch is started with
 * --priority-queues 8.
 *
 * Conformance: with vq_test_flags bit 0 set, only a vector's egress step (m.egress_test, the
 * queue it leaves from mpsched.p4's test_egress_queue) releases, as the Rust runner's egress
 * step does; the frames ingress steps forward leave without releasing.
 */
/* This program's queue stages, in place of mpsched.p4's defaults (include/queues.p4). */
#define MPS_QUEUE_STAGE VqWrrEnqueue
#define MPS_DEQUEUE_STAGE VqWrrDequeue

#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/queues.p4"

#include "include/vqwrr.p4"

control VqWrrEnqueue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                     in bit<16> port, in bit<8> queues, inout bool forward) {
    VqWrrPlace() place;
    bit<8> level;
    bool full;
    bit<32> len;

    apply {
        place.apply(h, port, level, full, len);
        if (full) {
            forward = false;
        } else {
            sm.priority = MPS_CLAMP_QUEUE(level, queues);
        }
    }
}

control VqWrrDequeue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    VqWrrRelease() release;

    apply {
        release.apply(h, m, sm);
    }
}

#include "mpsched.p4"
