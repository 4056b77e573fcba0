/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The eBPF map layouts of the DCQCN, TCN and P4QCN congestion points (programs `dcqcn`, `tcn`
 * and `p4qcn`, one object, baseline.bpf.c): the one place that fixes them (crates/netns/src/programs/baseline.rs
 * declares the same structs with #[repr(C)] and checks their sizes against BL_SIZEOF_*).
 * Forwarding, its maps and counters are bpf/mpsched.h's: baseline.bpf.c includes
 * mpsched.bpf.c whole. The Rust twin is crates/programs/src/pmqecn/baselines.rs.
 */
#ifndef BASELINE_H
#define BASELINE_H

#include "mpsched.h"

/* Enqueue records a port keeps: the kernel refuses a fifo_pkts above it. */
#define BL_RING 4096

/* A packet the queue stage counted carries this in skb->hash, its record's number in the low
 * 16 bits (the departure stage, at the far end of the link, tells it so from the switch's own
 * packets, and skips the records of packets lost on the way). */
#define BL_HASH_TAG 0x626c0000u
#define BL_HASH_TAG_MASK 0xffff0000u

/* struct bl_node.mode */
#define BL_MODE_DCQCN 1u
#define BL_MODE_TCN 2u
#define BL_MODE_QCN 3u

/* struct bl_node.flags */
#define BL_F_TEST 1u /* vectors: the tag in skb->priority, a step's depth and sojourn in test_* */

/* Map "bl_node": array of one. */
struct bl_node {
	__u32 mode;
	__u32 flags;
	__u32 fifo_pkts;  /* packets the port's queue holds; the next is dropped */
	__u32 kmin;       /* DCQCN, packets */
	__u32 kmax;       /* DCQCN, packets */
	__u32 pmax_pct;   /* DCQCN, percent at kmax */
	__u64 sojourn_ns; /* TCN: a packet that waited longer is marked (floor of the ps figure) */
	__u32 test_depth; /* BL_F_TEST: the queue the departing packet found */
	__u32 pad;
	__u64 test_sojourn_ns; /* BL_F_TEST: how long it waited */
	__u32 q_eq;   /* P4QCN: QCN's equilibrium queue, packets */
	__u32 w;      /* P4QCN: the weight of the queue's growth */
	__u64 gap_ns; /* P4QCN: a port samples one packet per this */
};
#define BL_SIZEOF_NODE 64

/* Map "bl_port_prio": array of MPS_MAX_PORTS, u32: the skb->priority that puts a packet in the
 * port's queue 0 (its class id where the port has several queues, else 0). */

/* One packet's enqueue: when, and how many it found. */
struct bl_record {
	__u64 enq_ns;
	__u32 depth;
	__u32 pad;
};

/* Map "bl_ports": array of MPS_MAX_PORTS, under its lock: the port's queue as the program
 * counts it (up at ingress, down where a packet arrives at the far end), its enqueue records
 * first in, first out (the port's queue 0 is a FIFO). */
struct bl_port {
	MPS_LOCK;
	__u32 qlen;
	__u32 head;
	__u32 tail;
	struct bl_record ring[BL_RING];
};
#define BL_SIZEOF_PORT (16 + 16 * BL_RING)

/* Map "bl_qcn": array of MPS_MAX_PORTS, under its lock: P4QCN's sampling per port. */
struct bl_qcn {
	MPS_LOCK;
	__u32 sampled; /* a packet has been sampled here */
	__u32 q_old;   /* the queue the last sample found */
	__u32 pad;
	__u64 last_ns; /* when */
};
#define BL_SIZEOF_QCN 24

/* Map "bl_counters": per-CPU array, named as the Rust twin's (untracked only by this one). */
enum bl_counter {
	BL_C_MARKED = 0,  /* baseline.marked */
	BL_C_TAIL_DROPS,  /* baseline.tail_drops */
	BL_C_SKIPPED,     /* baseline.skipped: records passed over by a packet recorded later */
	BL_C_LATE,        /* baseline.late: packets whose record had been passed over */
	BL_C_QCN_SAMPLES, /* qcn.samples */
	BL_C_QCN_FEEDBACK, /* qcn.feedback */
	BL_C_QCN_FEEDBACK_NO_ROUTE, /* qcn.feedback_no_route */
	BL_C_MAX,
};

#endif
