/* SPDX-License-Identifier: Apache-2.0 */
/*
 * P4QCN's congestion point (Geng, Yan & Zhang, 2019) for BMv2's v1model: the twin of
 * baselines.rs's program `p4qcn` (Baseline with Rule::Qcn). Forwarding is p4/mpsched.p4's,
 * whole; every port is one first-in-first-out queue that drops at fifo_pkts
 * (p4/include/baseline.p4), whose admitted packets this program samples; the feedback is
 * pmqecn.p4's rate feedback (p4/include/rate_feedback.p4, a clone rebuilt and recirculated).
 *
 *   ingress, once the port p is known (BaselineEnqueue, then QcnSample): a packet that finds
 *     fifo_pkts is dropped before any sample (baseline.tail_drops); one of DSCP 56 (network
 *     control: another switch's feedback) is never sampled; otherwise, at most once per
 *     qcn_gap_us per port, the packet is sampled (qcn.samples) on the depth Q it found:
 *     Fb = -((Q - q_eq) + w (Q - Q_old)), Q_old the last sample's depth. With Fb < 0, |Fb|
 *     capped at Fb_max = q_eq (2w + 1) is quantised to Fb6 = ceil(63 |Fb| / Fb_max) and, unless
 *     the packet is the switch's own (source address m.node_ip), a rate feedback goes to its
 *     source: the class, Q, measured 128, target 128 - Fb6 (the reaction point cuts its rate
 *     by target / measured, QCN's 1 - Gd |Fb6| with Gd = 1/128). The data packet goes on
 *     unchanged.
 *   ingress of the feedback (MPS_OWN_STAGE, QcnOwn): routed by the switch's routes, ECMP on
 *     its own 5-tuple; with a route it is counted (qcn.feedback) and joins the port's FIFO as
 *     the twin's emitted feedback joins queue 0 through on_enqueue: tail-dropped at
 *     fifo_pkts, else counted in baseline_fifo_len and released at egress like any packet;
 *     without one it is dropped (counter.no_route and qcn.feedback_no_route).
 *   egress (BaselineDequeue): the count falls; nothing is marked (no BASELINE_RULE).
 *
 * Registers (outside the controls; all but baseline.p4's are ingress's alone, one thread):
 *   qcn_q_eq, qcn_w          QCN's equilibrium queue (packets) and weight of the growth,
 *                            from the control plane (crates/bmv2/src/baselines.rs)
 *   qcn_gap_us               a port samples one packet per this (BMv2's microseconds; the
 *                            parameter is whole microseconds)
 *   qcn_sampled[p]           a packet has been sampled at p (the twin's last_sample_ps Some)
 *   qcn_last_us[p]           when it was
 *   qcn_q_old[p]             the depth it found (Q_old for the next)
 *   qcn_counters             qcn.samples, qcn.feedback, qcn.feedback_no_route as the Rust twin
 *                            names them, then the attempts (feedback asked of mpsched.p4; once
 *                            every attempt is through ingress again, attempts = feedback +
 *                            feedback_no_route: what the vector runner waits for)
 *   qcn_test_flags           bit 0: the ingress clock is qcn_test_clock_us (the vectors')
 *   qcn_test_clock_us        that clock, microseconds
 *
 * v1model divides by no run-time value, so ceil(63 |Fb| / Fb_max) is found by comparison: one
 * more than the largest L with L Fb_max < 63 |Fb|, searched a bit at a time (six compares).
 */
#define MPS_QUEUE_STAGE BaselineEnqueue
#define MPS_DEQUEUE_STAGE BaselineDequeue
#define MPS_OWN_STAGE QcnOwn
#define BASELINE_SAMPLE QcnSample

#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/queues.p4"
#include "include/rate_feedback.p4"

/* Register qcn_counters. */
#define QCN_C_SAMPLES 0
#define QCN_C_FEEDBACK 1
#define QCN_C_FEEDBACK_NO_ROUTE 2
#define QCN_C_ATTEMPTS 3
#define QCN_C_MAX 4

/* Register qcn_test_flags. */
#define QCN_F_TEST_CLOCK 1

#define QCN_FB_LEVELS 63 /* baselines::QCN_FB_LEVELS: 6 bits */
#define QCN_GD_DIV 128   /* baselines::QCN_GD_DIV: Gd = 1/128 */

register<bit<32>>(1) qcn_q_eq;
register<bit<32>>(1) qcn_w;
register<bit<64>>(1) qcn_gap_us;
register<bit<8>>(MPS_MAX_PORTS) qcn_sampled;
register<bit<64>>(MPS_MAX_PORTS) qcn_last_us;
register<bit<32>>(MPS_MAX_PORTS) qcn_q_old;
register<bit<64>>(QCN_C_MAX) qcn_counters;
register<bit<8>>(1) qcn_test_flags;
register<bit<64>>(1) qcn_test_clock_us;

/* Raise `below` by B if B more still keeps below x fb_max under scaled. */
#define QCN_TRY(B) \
    if ((below + B) * fb_max < scaled) { below = below + B; }

/* Baseline::qcn_sample for a packet the port's queue admitted, having found q packets. */
control QcnSample(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                  in bit<16> port, in bit<32> q) {
    RateFeedbackAsk() ask;
    bool send = false;
    bit<32> fb6 = 0;

    action count(bit<32> which) {
        bit<64> c;
        qcn_counters.read(c, which);
        qcn_counters.write(which, c + 1);
    }

    /* The gap, the sample and its quantised |Fb| (fb6; 0: no congestion), as one action. */
    action sample() {
        bit<8> flags;
        bit<64> now = (bit<64>)sm.ingress_global_timestamp;
        qcn_test_flags.read(flags, 0);
        if ((flags & QCN_F_TEST_CLOCK) != 0) {
            qcn_test_clock_us.read(now, 0);
        }
        bit<8> sampled;
        bit<64> last;
        bit<64> gap;
        qcn_sampled.read(sampled, (bit<32>)port);
        qcn_last_us.read(last, (bit<32>)port);
        qcn_gap_us.read(gap, 0);
        send = false;
        fb6 = 0;
        if (sampled == 0 || now >= last + gap) {
            bit<32> q_old;
            bit<32> q_eq;
            bit<32> w;
            qcn_q_old.read(q_old, (bit<32>)port);
            qcn_q_eq.read(q_eq, 0);
            qcn_w.read(w, 0);
            qcn_sampled.write((bit<32>)port, 1);
            qcn_last_us.write((bit<32>)port, now);
            qcn_q_old.write((bit<32>)port, q);
            count(QCN_C_SAMPLES);
            /* Fb < 0 iff (w + 1) Q > q_eq + w Q_old, and |Fb| is the difference: unsigned, and
             * far from overflowing (Q < 2^32, w <= 64, q_eq <= 2^20). */
            bit<64> up = ((bit<64>)w + 1) * (bit<64>)q;
            bit<64> base = (bit<64>)q_eq + (bit<64>)w * (bit<64>)q_old;
            if (up > base) {
                bit<64> fb_max = (bit<64>)q_eq * (2 * (bit<64>)w + 1);
                bit<64> mag = up - base;
                if (mag > fb_max) { mag = fb_max; }
                bit<64> scaled = mag * QCN_FB_LEVELS;
                bit<64> below = 0;
                QCN_TRY(32)
                QCN_TRY(16)
                QCN_TRY(8)
                QCN_TRY(4)
                QCN_TRY(2)
                QCN_TRY(1)
                fb6 = (bit<32>)below + 1;
                /* The switch's own packets are sampled, never reflected. */
                if (h.ipv4.src != m.node_ip) {
                    send = true;
                    count(QCN_C_ATTEMPTS);
                }
            }
        }
    }

    table sampling {
        actions = { sample; }
        default_action = sample();
    }

    apply {
        /* Network control (feedback, CS7) is never sampled: its source is a switch. */
        if (h.ipv4.tos[7:2] != MPS_RATE_FEEDBACK_DSCP) {
            sampling.apply();
            if (send) {
                ask.apply(h, m, (bit<8>)h.ipv4.tos[7:5], q, QCN_GD_DIV, QCN_GD_DIV - fb6);
            }
        }
    }
}

#include "include/baseline.p4"

/* The feedback, routed (forward) or not: counted, and into the port's FIFO as Baseline::reflect
 * emits it into queue 0, where the tail drop may take it. */
control QcnOwn(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
               in bit<16> port, in bit<8> queues, inout bool forward) {
    BaselineAdmit() admit;

    action count(bit<32> which) {
        bit<64> c;
        qcn_counters.read(c, which);
        qcn_counters.write(which, c + 1);
    }

    apply {
        if (forward) {
            count(QCN_C_FEEDBACK);
            bool full;
            bit<32> depth;
            admit.apply(port, full, depth);
            if (full) {
                forward = false;
            } else {
                sm.priority = 0;
            }
        } else {
            count(QCN_C_FEEDBACK_NO_ROUTE);
        }
    }
}

#include "mpsched.p4"
