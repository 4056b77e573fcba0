/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DCQCN's congestion point (Zhu et al., SIGCOMM 2015) for BMv2's v1model: the twin of
 * baselines.rs's program `dcqcn`. Forwarding is p4/mpsched.p4's, whole; every port is one
 * first-in-first-out queue that drops at fifo_pkts (p4/include/baseline.p4), and at dequeue
 * an ECN-capable packet that found q packets (standard_metadata.enq_qdepth) is marked CE:
 *
 *   q < kmin: never; q > kmax: always; between them with probability floor(num / den)
 *   millionths, num = pmax_ppm (q - kmin) and den = kmax - kmin (num = pmax_ppm, den = 1 when
 *   kmin = kmax): never if num < den, always if num >= 10^6 den, else a 32-bit draw marks
 *   iff u = (draw 10^6) >> 32 satisfies (u + 1) den <= num, i.e. u < floor(num / den)
 *   (baselines::red_decision and red_draw_marks, the same integers; v1model divides by no
 *   run-time value).
 *
 * Only a packet the decision leaves to chance takes a draw: BMv2's random(), or under the
 * vectors the next of dcqcn_test_draws (dcqcn_test_draws_n of them, cyclically), as the Rust
 * twin takes the set's rs_raw_draws. The control plane is crates/bmv2/src/baselines.rs.
 */
#define MPS_QUEUE_STAGE BaselineEnqueue
#define MPS_DEQUEUE_STAGE BaselineDequeue
#define BASELINE_RULE DcqcnRule

#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/queues.p4"

#define DCQCN_PPM 1000000

register<bit<32>>(1) dcqcn_kmin;
register<bit<32>>(1) dcqcn_kmax;
register<bit<32>>(1) dcqcn_pmax_ppm;
register<bit<32>>(MPS_TEST_DRAWS) dcqcn_test_draws;
register<bit<32>>(1) dcqcn_test_draws_n;
register<bit<32>>(1) dcqcn_test_draw_next;

control DcqcnRule(in bit<32> q_pkts, in bit<32> sojourn_us, out bool over) {
    bool marks = false;

    /* The next raw draw: the test register's, or BMv2's. */
    action draw(out bit<32> raw) {
        bit<32> n;
        dcqcn_test_draws_n.read(n, 0);
        if (n != 0) {
            bit<32> next;
            dcqcn_test_draw_next.read(next, 0);
            if (next >= n) { next = 0; }
            dcqcn_test_draws.read(raw, next);
            dcqcn_test_draw_next.write(0, next + 1);
        } else {
            random(raw, 0, 0xffffffff);
        }
    }

    action decide() {
        bit<32> kmin;
        bit<32> kmax;
        bit<32> pmax_ppm;
        dcqcn_kmin.read(kmin, 0);
        dcqcn_kmax.read(kmax, 0);
        dcqcn_pmax_ppm.read(pmax_ppm, 0);
        marks = false;
        if (q_pkts > kmax) {
            marks = true;
        } else if (q_pkts >= kmin) {
            bit<64> num = (bit<64>)pmax_ppm * (bit<64>)(q_pkts - kmin);
            bit<64> den = (bit<64>)(kmax - kmin);
            if (kmax == kmin) {
                num = (bit<64>)pmax_ppm;
                den = 1;
            }
            if (num >= den * DCQCN_PPM) {
                marks = true;
            } else if (num >= den) {
                bit<32> raw;
                draw(raw);
                bit<64> u = ((bit<64>)raw * DCQCN_PPM) >> 32;
                marks = (u + 1) * den <= num;
            }
        }
    }

    table decision {
        actions = { decide; }
        default_action = decide();
    }

    apply {
        decision.apply();
        over = marks;
    }
}

#include "include/baseline.p4"
#include "mpsched.p4"
