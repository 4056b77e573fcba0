/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TCN's marking (Bai et al., CoNEXT 2016) for BMv2's v1model: the twin of baselines.rs's
 * program `tcn`. Forwarding is p4/mpsched.p4's, whole; every port is one first-in-first-out
 * queue that drops at fifo_pkts (p4/include/baseline.p4), and at dequeue an ECN-capable packet
 * that waited longer than the threshold is marked CE.
 *
 * BMv2's sojourn (standard_metadata.deq_timedelta) counts whole microseconds, so the control
 * plane (crates/bmv2/src/baselines.rs) writes the threshold of `sojourn` ps as
 * tcn_sojourn_us = floor(ps / 10^6) (at most 2^32 - 1): for a sojourn of t whole microseconds,
 * t > floor(T) exactly when t > T, the Rust twin's rule.
 */
#define MPS_QUEUE_STAGE BaselineEnqueue
#define MPS_DEQUEUE_STAGE BaselineDequeue
#define BASELINE_RULE TcnRule

#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/queues.p4"

register<bit<32>>(1) tcn_sojourn_us;

control TcnRule(in bit<32> q_pkts, in bit<32> sojourn_us, out bool over) {
    apply {
        bit<32> threshold_us;
        tcn_sojourn_us.read(threshold_us, 0);
        over = sojourn_us > threshold_us;
    }
}

#include "include/baseline.p4"
#include "mpsched.p4"
