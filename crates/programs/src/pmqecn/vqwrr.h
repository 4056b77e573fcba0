/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vq-wrr's eBPF map layouts: the one place that fixes them (crates/netns/src/programs/vqwrr.rs
 * declares the same structs with #[repr(C)] and checks their sizes against VQ_SIZEOF_*).
 * Forwarding, its maps and counters are bpf/mpsched.h's: vqwrr.bpf.c includes mpsched.bpf.c
 * whole. Every register mirrors one of the Rust twin (crates/programs/src/pmqecn/vqwrr.rs).
 */
#ifndef VQWRR_H
#define VQWRR_H

#include "mpsched.h"

#define VQ_QUEUES 8 /* virtual queues per port, one per DSCP class (vqwrr::VIRTUAL_QUEUES) */
#define VQ_LEVELS 8 /* most priority levels (vqwrr::MAX_LEVELS) */
#define VQ_CELLS 64 /* VQ_QUEUES * VQ_LEVELS: a port's level_use entries */

/* A placed packet's skb->hash (bpf_set_hash): the tag in the top bits, its level below. The
 * hash crosses veth into the far end's namespace (skb->priority does not: the kernel zeroes
 * it when it forwards a frame between devices), and nothing recomputes a hash set so. */
#define VQ_HASH_TAG 0x76710000u
#define VQ_HASH_TAG_MASK 0xffffff00u

/* Map "vq_node": array of one. */
struct vq_node {
	__u32 capacity; /* packets one virtual queue may hold at a port (vq_capacity) */
	__u32 flags;    /* VQ_F_* */
};

/* struct vq_node.flags */
#define VQ_F_TEST_TAG_IN_PRIORITY 1u /* the departure stage reads the tag from skb->priority */
#define VQ_SIZEOF_NODE 8

/* Map "vq_port_cfg": array of MPS_MAX_PORTS. How a port's levels reach its queues: the
 * skb->priority that puts a packet in the port's queue l (the qdisc's class id of queue l,
 * which htb, prio and ets take before their filters), for l below `levels`. */
struct vq_port_cfg {
	__u32 prio_of_level[VQ_LEVELS];
	__u32 levels; /* 1 to VQ_LEVELS: the port's queues, at most the program's `levels` */
};
#define VQ_SIZEOF_PORT_CFG 36

/* Map "vq_state": array of MPS_MAX_PORTS, each under its lock (a placement at ingress on one
 * CPU and a departure at the link's far end on another must not interleave). */
struct vq_port_state {
	MPS_LOCK;
	__u32 touched; /* a packet was placed at or left the port: the port has registers */
	__u32 vq_len[VQ_QUEUES];
	__u32 level_use[VQ_CELLS]; /* [v * VQ_LEVELS + l] */
};
#define VQ_SIZEOF_PORT_STATE 296

/* Map "vq_mac_port": hash, a port's own MAC (8 bytes, the last two 0) -> port. The departure
 * program, at the far end of a port's link, knows the port by the frame's source MAC. */
struct vq_mac {
	__u8 addr[6];
	__u8 pad[2];
};

/* Map "vq_counters": per-CPU array, named vq.* as the Rust twin names them. */
enum vq_counter {
	VQ_C_TOP_LEVEL = 0,
	VQ_C_DOWNGRADED,
	VQ_C_DROPS,
	VQ_C_ACCOUNTING_ERRORS,
	VQ_C_MAX,
};

#endif
