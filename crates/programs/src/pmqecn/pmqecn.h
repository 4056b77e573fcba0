/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pmqecn's eBPF map layouts beside vq-wrr's (vqwrr.h): the one place that fixes them
 * (crates/netns/src/programs/pmqecn.rs declares the same structs with #[repr(C)] and checks
 * their sizes against PQ_SIZEOF_*). Every register mirrors one of the Rust twin (cp.rs).
 */
#ifndef PMQECN_H
#define PMQECN_H

#include "vqwrr.h"

/* Map "pq_node": array of one. */
struct pq_node {
	__u64 gap_ns; /* at most one feedback per class and port per this (feedback_gap) */
};
#define PQ_SIZEOF_NODE 8

/* Map "pq_class": array of VQ_QUEUES, written by the control plane (vq_threshold,
 * vq_rate_kbps, vq_target_kbps). */
struct pq_class {
	__u32 threshold;   /* K_v, packets: feedback while the class holds more at a port */
	__u32 rate_kbps;   /* lambda_v, the class's measured arrival rate the feedback carries */
	__u32 target_kbps; /* lambda*_v, the rate it should arrive at */
	__u32 pad;
};
#define PQ_SIZEOF_CLASS 16

/* Map "pq_port": array of MPS_MAX_PORTS, each under its lock. */
struct pq_port {
	MPS_LOCK;
	__u32 touched; /* a packet was offered to the port: the port has registers */
	__u32 fb_sent; /* bit v: class v has been sent feedback about this port */
	__u32 pad;
	__u64 arrival_bytes[VQ_QUEUES]; /* offered to the port, cumulative (vq_arrival_bytes) */
	__u64 arrival_pkts[VQ_QUEUES];  /* (vq_arrival_pkts) */
	__u64 last_fb_ns[VQ_QUEUES];    /* when class v was last sent feedback about this port */
};
#define PQ_SIZEOF_PORT 208

/* Map "pq_counters": per-CPU array, named pmqecn.* as the Rust twin names them. */
enum pq_counter {
	PQ_C_FEEDBACK = 0,
	PQ_C_FEEDBACK_HELD,
	PQ_C_FEEDBACK_NO_ROUTE,
	PQ_C_MAX,
};

#endif
