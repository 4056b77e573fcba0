/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PMQECN's congestion point (Xu et al., PeerJ CS 2024, Algorithm 1) for BMv2's v1model: the
 * twin of cp.rs (program `pmqecn`), register for register, over vq-wrr's placement
 * (p4/include/vqwrr.p4, as vqwrr.p4 uses it). Forwarding is p4/mpsched.p4's, whole.
 *
 *   ingress, once the port p is known (MPS_QUEUE_STAGE): the packet is placed as vq-wrr
 *     places it (or refused: its virtual queue v = tos >> 5 is full); then, whether placed or
 *     not, its class's arrivals at p rise (vq_arrival_bytes by the frame's length,
 *     vq_arrival_pkts by one), and if vq_len[p][v] after the placement is above
 *     vq_threshold[v] a rate feedback goes to the packet's source, unless one was attempted
 *     for (p, v) before and now < last + gap (pmqecn.feedback_held). An attempt is recorded
 *     (the gap runs from it, routed back or not) and asked of mpsched.p4 through
 *     include/rate_feedback.p4 (the class, vq_len, vq_rate_kbps[v] and vq_target_kbps[v]).
 *     The data packet goes on unchanged, or is dropped when full.
 *   egress of the clone (mpsched.p4): it becomes the 58-byte feedback and is recirculated.
 *   ingress of the feedback (MPS_OWN_STAGE): routed by the switch's routes, ECMP on its own
 *     5-tuple; with a route it leaves from its port's top level (vq_levels - 1, clamped to
 *     the port's queues), uncounted (pmqecn.feedback), without one it is dropped
 *     (counter.no_route and pmqecn.feedback_no_route).
 *   egress, every packet leaving a port (MPS_DEQUEUE_STAGE): vq-wrr's release, except for the
 *     switch's own packets (source address m.node_ip), which were never placed.
 *
 * Clock: the gap (pmq_feedback_gap_us) counts BMv2's microseconds (ingress_global_timestamp),
 * or pmq_test_clock_us under the vectors (pmq_test_flags bit 0). The arrival and gap registers
 * are ingress's alone (one thread); the threshold and rate registers are the control plane's
 * (crates/bmv2/src/pmqecn.rs), read once per packet.
 */
#define MPS_QUEUE_STAGE PmqEnqueue
#define MPS_DEQUEUE_STAGE PmqDequeue
#define MPS_OWN_STAGE PmqOwn

#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/queues.p4"
#include "include/vqwrr.p4"
#include "include/rate_feedback.p4"

/* Register pmq_counters: pmqecn.* as the Rust twin names them, then the attempts (feedback
 * asked of mpsched.p4; once every attempt is through ingress again, attempts = feedback +
 * feedback_no_route: what the vector runner waits for). */
#define PMQ_C_FEEDBACK 0
#define PMQ_C_FEEDBACK_HELD 1
#define PMQ_C_FEEDBACK_NO_ROUTE 2
#define PMQ_C_ATTEMPTS 3
#define PMQ_C_MAX 4

/* Register pmq_test_flags. */
#define PMQ_F_TEST_CLOCK 1

/* Indices: class v, or p * 8 + v. */
register<bit<32>>(VQ_QUEUES) vq_threshold;                        /* K, packets */
register<bit<32>>(VQ_QUEUES) vq_rate_kbps;                        /* lambda, for the feedback */
register<bit<32>>(VQ_QUEUES) vq_target_kbps;                      /* lambda*, for the feedback */
register<bit<64>>(MPS_MAX_PORTS * VQ_QUEUES) vq_arrival_bytes;
register<bit<64>>(MPS_MAX_PORTS * VQ_QUEUES) vq_arrival_pkts;
register<bit<16>>(1) pmq_arrival_ports;                           /* highest port + 1 */
register<bit<8>>(MPS_MAX_PORTS * VQ_QUEUES) pmq_feedback_tried;   /* an attempt was made */
register<bit<64>>(MPS_MAX_PORTS * VQ_QUEUES) pmq_feedback_last_us; /* when */
register<bit<64>>(1) pmq_feedback_gap_us;
register<bit<64>>(PMQ_C_MAX) pmq_counters;
register<bit<8>>(1) pmq_test_flags;
register<bit<64>>(1) pmq_test_clock_us;

control PmqEnqueue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                   in bit<16> port, in bit<8> queues, inout bool forward) {
    VqWrrPlace() place;
    RateFeedbackAsk() ask;
    bit<8> level;
    bool full;
    bit<32> len;
    bool send = false;

    action count(bit<32> which) {
        bit<64> c;
        pmq_counters.read(c, which);
        pmq_counters.write(which, c + 1);
    }

    /* Pmqecn::ingress after the placement: the arrivals, the threshold and the gap. */
    action arrive() {
        bit<16> seen;
        pmq_arrival_ports.read(seen, 0);
        if (port + 1 > seen) { pmq_arrival_ports.write(0, port + 1); }
        bit<32> v = (bit<32>)h.ipv4.tos[7:5];
        bit<32> at = (bit<32>)port * VQ_QUEUES + v;
        bit<64> bytes;
        bit<64> pkts;
        vq_arrival_bytes.read(bytes, at);
        vq_arrival_pkts.read(pkts, at);
        vq_arrival_bytes.write(at, bytes + (bit<64>)sm.packet_length);
        vq_arrival_pkts.write(at, pkts + 1);
        bit<32> threshold;
        vq_threshold.read(threshold, v);
        send = false;
        if (len > threshold) {
            bit<8> flags;
            bit<64> now = (bit<64>)sm.ingress_global_timestamp;
            pmq_test_flags.read(flags, 0);
            if ((flags & PMQ_F_TEST_CLOCK) != 0) {
                pmq_test_clock_us.read(now, 0);
            }
            bit<8> tried;
            bit<64> last;
            bit<64> gap;
            pmq_feedback_tried.read(tried, at);
            pmq_feedback_last_us.read(last, at);
            pmq_feedback_gap_us.read(gap, 0);
            if (tried != 0 && now < last + gap) {
                count(PMQ_C_FEEDBACK_HELD);
            } else {
                pmq_feedback_tried.write(at, 1);
                pmq_feedback_last_us.write(at, now);
                count(PMQ_C_ATTEMPTS);
                send = true;
            }
        }
    }

    table arrival {
        actions = { arrive; }
        default_action = arrive();
    }

    apply {
        place.apply(h, port, level, full, len);
        arrival.apply();
        if (send) {
            bit<32> v = (bit<32>)h.ipv4.tos[7:5];
            bit<32> rate;
            bit<32> target;
            vq_rate_kbps.read(rate, v);
            vq_target_kbps.read(target, v);
            ask.apply(h, m, (bit<8>)h.ipv4.tos[7:5], len, rate, target);
        }
        if (full) {
            forward = false;
        } else {
            sm.priority = MPS_CLAMP_QUEUE(level, queues);
        }
    }
}

control PmqOwn(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
               in bit<16> port, in bit<8> queues, inout bool forward) {
    action count(bit<32> which) {
        bit<64> c;
        pmq_counters.read(c, which);
        pmq_counters.write(which, c + 1);
    }

    apply {
        if (forward) {
            /* VqWrr::top_level: the highest level the port's queues give. */
            bit<8> levels;
            vq_levels.read(levels, 0);
            sm.priority = MPS_CLAMP_QUEUE(levels - 1, queues);
            count(PMQ_C_FEEDBACK);
        } else {
            count(PMQ_C_FEEDBACK_NO_ROUTE);
        }
    }
}

control PmqDequeue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    VqWrrRelease() release;

    apply {
        /* VqWrr::on_dequeue: the switch's own packets (its feedback) were never placed. */
        if (!(h.ipv4.isValid() && h.ipv4.src == m.node_ip)) {
            release.apply(h, m, sm);
        }
    }
}

#include "mpsched.p4"
