/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LetFlow's eBPF map layouts: the one place that fixes them (the kernel backend's table
 * writer declares the same structs with #[repr(C)] and checks their sizes against the
 * LF_SIZEOF_* constants below).
 *
 * The port bindings, ECMP groups, routes, per-port statistics and route keys are those of
 * bpf/mpsched.h (struct mps_port, mps_ecmp, mps_port_stats, mps_route_key), filled the same
 * way; what is LetFlow's own is the node record, the flowlet table and the counters. Every
 * register mirrors one of the Rust twin (crates/programs/src/letflow/mod.rs). Addresses are in
 * host byte order, as the Rust programs hold them.
 */
#ifndef LETFLOW_H
#define LETFLOW_H

#include "mpsched.h"

/* The flowlet table's largest size (slots, a power of two): LetFlow's MAX_TABLE_ENTRIES. Its
 * size is set when the object is loaded (bpf_map__set_max_entries), from table_entries. */
#define LF_MAX_TABLE_ENTRIES (1u << 20)
#define LF_TEST_DRAWS 64

/* struct lf_node.flags */
#define LF_F_TEST_CLOCK 1u /* ingress time is test_clock_ns, not bpf_ktime_get_ns() */
#define LF_F_TEST_DRAWS 2u /* new flowlets draw from the test_draws map */

/* Map "node": array of one. Written by the control plane, read by every packet. */
struct lf_node {
	__u32 own_ip;
	__u32 flags;
	__u32 hash_seed;  /* Ecmp::seeded_hash's seed: the switch's (SwitchConfig::hash_seed) */
	__u32 table_mask; /* table_entries - 1 */
	__u64 gap_ns;     /* the flowlet gap (a whole number of microseconds) */
	__u64 test_clock_ns;
	__u32 test_draws_n;
	__u32 pad;
};
#define LF_SIZEOF_NODE 40

/* Map "flowlets": array of table_entries slots (Rust: letflow::Slot). */
struct lf_slot {
	__u32 tag;     /* the flow's full seeded hash */
	__u16 port;    /* the flowlet's port */
	__u8 valid;    /* a flowlet ever took the slot */
	__u8 pad;
	__u64 last_ns; /* when the flowlet last sent a packet */
};
#define LF_SIZEOF_SLOT 16

/* Map "counters": per-CPU array indexed by these; the Rust names are in comments. */
enum lf_counter {
	LF_C_NEW_FLOWLETS = 0, /* letflow.new_flowlets */
	LF_C_CONTINUED,        /* letflow.continued */
	LF_C_COLLISIONS,       /* letflow.collisions */
	LF_C_NO_ROUTE,         /* no_route */
	LF_C_TTL_EXPIRED,      /* ttl_expired */
	LF_C_LOCAL,            /* local */
	LF_C_NOT_IPV4,         /* not_ipv4 (the frame runner's) */
	LF_C_MALFORMED,        /* malformed (the frame runner's) */
	LF_C_REDIRECT_FAILED,  /* redirect_failed (a port without an interface) */
	LF_C_MAX,
};

#endif
