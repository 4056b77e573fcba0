/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtual-queue WRR on strict-priority queues (PMQECN, Fig. 4), the part vq-wrr's program
 * (crates/programs/src/pmqecn/vqwrr.p4) and PMQECN's congestion point (pmqecn.p4 beside it)
 * share: the registers, the placement of a packet at ingress and the release of its level at
 * egress, each the twin of crates/programs/src/pmqecn/vqwrr.rs.
 *
 *   VqWrrPlace, at ingress once the port p is known: the packet's virtual queue v is its DSCP
 *     class (tos >> 5); a virtual queue holding vq_capacity packets at p is full (vq.drops);
 *     otherwise the packet takes the highest level l below vq_levels where
 *     vq_level_use[p][v][l] < vq_weight[v], or level 0, and vq_len[p][v] and
 *     vq_level_use[p][v][l] rise. It hands back the level, whether the queue was full, and
 *     vq_len[p][v] after the placement (what PMQECN compares with its threshold).
 *   VqWrrRelease, at egress: the level the packet was queued at is the priority queue it left,
 *     standard_metadata.priority (v1model has no qid; simple_switch enqueues by the priority
 *     ingress set and leaves it in the packet's metadata); vq_len[p][v] and
 *     vq_level_use[p][v][l] fall, or, if either is already 0, vq.accounting_errors counts it.
 *
 * simple_switch runs ingress on one thread and egress on others, so each stage's reads and
 * writes are one action, applied through a keyless table: BMv2 holds the locks of every
 * register an action uses while it runs (RegisterSync), so a placement and a release never
 * interleave. The control plane is crates/bmv2/src/vqwrr.rs.
 *
 * Conformance: with vq_test_flags bit 0 set, only a vector's egress step (m.egress_test, the
 * queue it leaves from mpsched.p4's test_egress_queue) releases, as the Rust runner's egress
 * step does; the frames ingress steps forward leave without releasing (the programs' dequeue
 * stages check it).
 */
#ifndef MPSCHED_VQWRR_P4
#define MPSCHED_VQWRR_P4

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

/* VqWrr::place and its counters, as one action: the level, whether the virtual queue was full
 * (nothing placed), and the virtual queue's length after. */
control VqWrrPlace(in headers_t h, in bit<16> port, out bit<8> level, out bool full,
                   out bit<32> len_after) {
    action count(bit<32> which) {
        bit<64> c;
        vq_counters.read(c, which);
        vq_counters.write(which, c + 1);
    }

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
        level = 0;
        len_after = len;
        if (full) {
            count(VQ_C_DROPS);
        } else {
            bit<8> levels;
            bit<32> weight;
            bit<32> used;
            vq_levels.read(levels, 0);
            vq_weight.read(weight, (bit<32>)h.ipv4.tos[7:5]);
            bit<32> cell = vq * VQ_LEVELS;
            VQ_TRY(0)
            VQ_TRY(1)
            VQ_TRY(2)
            VQ_TRY(3)
            VQ_TRY(4)
            VQ_TRY(5)
            VQ_TRY(6)
            VQ_TRY(7)
            len_after = len + 1;
            vq_len.write(vq, len_after);
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
    }
}

/* VqWrr::on_dequeue's counting, as one action: the level a packet left a port by is released
 * (ports below MPS_MAX_PORTS; under the vectors' flag, on a vector's egress step only). */
control VqWrrRelease(in headers_t h, in metadata_t m, in standard_metadata_t sm) {
    action count(bit<32> which) {
        bit<64> c;
        vq_counters.read(c, which);
        vq_counters.write(which, c + 1);
    }

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

#endif
