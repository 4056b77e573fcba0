/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtual-queue WRR on strict-priority queues (PMQECN, Fig. 4) for BMv2's v1model: the twin of
 * vqwrr.rs (program `vq-wrr`), register for register. Forwarding is p4/mpsched.p4's, whole
 * (this file includes it, with p4/ on the include path); the two stages below replace its
 * default queue stage (the DSCP class) and its empty dequeue stage.
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

#define VQ_QUEUES 8         /* virtual queues per port, one per DSCP class (vqwrr::VIRTUAL_QUEUES) */
#define VQ_LEVELS 8         /* most priority levels (vqwrr::MAX_LEVELS) */
#define VQ_PORT_CELLS 64    /* VQ_QUEUES * VQ_LEVELS: a port's vq_level_use entries */

/* Register vq_counters, named vq.* as the Rust twin names them. */
#define VQ_C_TOP_LEVEL 0
#define VQ_C_DOWNGRADED 1
#define VQ_C_DROPS 2
#define VQ_C_ACCOUNTING_ERRORS 3
#define VQ_C_MAX 4

/* Register vq_test_flags. */
#define VQ_F_RELEASE_ON_TEST_EGRESS 1

/* Shared by ingress and egress, so declared outside both. Indices: vq_len[p * 8 + v],
 * vq_level_use[(p * 8 + v) * 8 + l], as the control listing reads them. */
register<bit<32>>(VQ_QUEUES) vq_weight;                         /* packets per level, per class */
register<bit<32>>(MPS_MAX_PORTS * VQ_QUEUES) vq_len;
register<bit<32>>(MPS_MAX_PORTS * VQ_PORT_CELLS) vq_level_use;
register<bit<32>>(1) vq_capacity;                               /* packets per virtual queue */
register<bit<8>>(1) vq_levels;                                  /* levels used, 1 to 8 */
register<bit<64>>(VQ_C_MAX) vq_counters;
register<bit<16>>(1) vq_ports;                                  /* ports with state: highest + 1 */
register<bit<8>>(1) vq_test_flags;

/* Try level L: the highest level below `levels` with room for the class wins, since the levels
 * are tried from 0 up and each with room overwrites the choice. */
#define VQ_TRY(L)                                                 \
    vq_level_use.read(used, cell + L);                            \
    if (L < levels && used < weight) { level = L; }

control VqWrrEnqueue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                     in bit<16> port, in bit<8> queues, inout bool forward) {
    bit<8> level = 0;
    bool full = false;

    action count(bit<32> which) {
        bit<64> c;
        vq_counters.read(c, which);
        vq_counters.write(which, c + 1);
    }

    /* VqWrr::place and the counters, as one action. */
    action place() {
        bit<16> seen;
        vq_ports.read(seen, 0);
        if (port + 1 > seen) { vq_ports.write(0, port + 1); }
        bit<32> vq = (bit<32>)port * VQ_QUEUES + (bit<32>)h.ipv4.tos[7:5];
        bit<32> len;
        bit<32> capacity;
        vq_len.read(len, vq);
        vq_capacity.read(capacity, 0);
        full = len >= capacity;
        if (full) {
            count(VQ_C_DROPS);
        } else {
            bit<8> levels;
            bit<32> weight;
            bit<32> used;
            vq_levels.read(levels, 0);
            vq_weight.read(weight, (bit<32>)h.ipv4.tos[7:5]);
            bit<32> cell = vq * VQ_LEVELS;
            level = 0;
            VQ_TRY(0)
            VQ_TRY(1)
            VQ_TRY(2)
            VQ_TRY(3)
            VQ_TRY(4)
            VQ_TRY(5)
            VQ_TRY(6)
            VQ_TRY(7)
            vq_len.write(vq, len + 1);
            vq_level_use.read(used, cell + (bit<32>)level);
            vq_level_use.write(cell + (bit<32>)level, used + 1);
            if (level + 1 == levels) {
                count(VQ_C_TOP_LEVEL);
            } else {
                count(VQ_C_DOWNGRADED);
            }
        }
    }

    table placement {
        actions = { place; }
        default_action = place();
    }

    apply {
        placement.apply();
        if (full) {
            forward = false;
        } else {
            sm.priority = MPS_CLAMP_QUEUE(level, queues);
        }
    }
}

control VqWrrDequeue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    action count(bit<32> which) {
        bit<64> c;
        vq_counters.read(c, which);
        vq_counters.write(which, c + 1);
    }

    /* VqWrr::on_dequeue's counting, as one action. */
    action release() {
        bit<16> port = (bit<16>)sm.egress_port;
        bit<16> seen;
        vq_ports.read(seen, 0);
        if (port + 1 > seen) { vq_ports.write(0, port + 1); }
        bit<32> cls = 0;
        if (h.ipv4.isValid()) { cls = (bit<32>)h.ipv4.tos[7:5]; }
        bit<32> vq = (bit<32>)port * VQ_QUEUES + cls;
        bit<32> at = vq * VQ_LEVELS + (bit<32>)sm.priority;
        bit<32> len;
        bit<32> used;
        vq_len.read(len, vq);
        vq_level_use.read(used, at);
        if (len == 0 || used == 0) {
            count(VQ_C_ACCOUNTING_ERRORS);
        } else {
            vq_len.write(vq, len - 1);
            vq_level_use.write(at, used - 1);
        }
    }

    table departure {
        actions = { release; }
        default_action = release();
    }

    apply {
        if ((bit<16>)sm.egress_port < MPS_MAX_PORTS) {
            bit<8> flags;
            vq_test_flags.read(flags, 0);
            if ((flags & VQ_F_RELEASE_ON_TEST_EGRESS) == 0 || m.egress_test == 1) {
                departure.apply();
            }
        }
    }
}

#include "mpsched.p4"
