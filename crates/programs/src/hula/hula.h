/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HULA's and MP-HULA's eBPF map layouts: the one place that fixes them (the kernel backend's
 * loader, crates/netns/src/programs/hula.rs, declares the same structs with #[repr(C)] and
 * checks their sizes against the HULA_SIZEOF_* constants below).
 *
 * The ports, ECMP groups, routes, per-port statistics and route keys are bpf/mpsched.h's,
 * filled as for every program; what is HULA's own is the node record, the per-port direction
 * and scale, the estimator, the best-hop table, the flowlet table, MP-HULA's association and
 * connection tables, the probe template and the counters. Every register mirrors one of the
 * specification's (README.md, "Counters and registers"). Addresses are in host byte order;
 * every time is in whole microseconds, as the specification counts them.
 */
#ifndef HULA_H
#define HULA_H

#include "mpsched.h"

/* Most next hops kept per destination ToR (best_k) and subflows a connection entry tracks. */
#define HULA_MAX_K 4
#define HULA_MAX_SUBFLOWS 4
/* Most slots of each table (flowlets, aux, assoc, tokens, conns) and most ToRs. */
#define HULA_MAX_ENTRIES (1u << 16)
#define HULA_MAX_TORS 4096
/* An empty best-hop slot's or connection subflow's port. */
#define HULA_NO_PORT 0xffffu
/* The estimator's byte counter saturates here. */
#define HULA_UTIL_BYTES_MAX (1ull << 31)
/* Bytes of a probe frame: Ethernet, shim, IPv4, UDP, 10 bytes of padding. */
#define HULA_PROBE_FRAME_BYTES 64
/* Shim kinds (mpsched_core::headers) and the shim EtherType. */
#define HULA_ETH_P_SHIM 0x88b5
#define HULA_SHIM_ROUTING 1
#define HULA_SHIM_INT 2
#define HULA_SHIM_PROBE 3
#define HULA_MAX_SHIMS 4
/* The connection header's shim: first word and a 12-byte body. */
#define HULA_CONN_SHIM_BYTES 16

/* struct hula_node.flags */
#define HULA_F_TEST_CLOCK 1u /* time is test_clock_us, not bpf_ktime_get_ns() / 1000 */
#define HULA_F_MP 2u         /* MP-HULA: association, connection header, sub-flowlets */
#define HULA_F_TOR 4u        /* the switch has a ToR id (it originates probes, associates) */

/* struct hula_port_cfg.dir, as mpsched_core::probe::PortDir. */
#define HULA_DIR_HOST 0
#define HULA_DIR_DOWN 1
#define HULA_DIR_UP 2
#define HULA_DIR_NONE 3

/* struct hula_aux.flags */
#define HULA_AUX_A 1u  /* key_a known */
#define HULA_AUX_B 2u  /* key_b known */
#define HULA_AUX_V1 4u /* MPTCP version 1 (SHA-256) */

/* Map "node": array of one. Written by the control plane, read by every packet. */
struct hula_node {
	__u32 own_ip;
	__u32 flags;
	__u32 hash_seed;    /* Ecmp::seeded_hash's seed (SwitchConfig::hash_seed) */
	__u32 table_mask;   /* flowlet slots - 1 */
	__u32 assoc_mask;   /* aux / assoc / token slots - 1 */
	__u32 conn_mask;    /* connection slots - 1 */
	__u16 tor_id;       /* with HULA_F_TOR */
	__u16 n_tors;       /* ToR ids 0..n_tors; the best map's size */
	__u16 up_mask;      /* bit p: port p is up */
	__u16 down_mask;    /* bit p: port p is down */
	__u32 best_k;       /* 1 (HULA) to HULA_MAX_K */
	__u32 log2_tau;     /* the estimator's time constant is 1 << log2_tau µs */
	__u32 trigger_ifindex; /* a frame arriving here means "originate the probes now" */
	__u32 pad;
	__u64 tau_us;
	__u64 gap_us;       /* flowlet gap */
	__u64 ageing_us;    /* a best-hop slot not refreshed for this long is dead */
	__u64 test_clock_us;
};
#define HULA_SIZEOF_NODE 80

/* Map "port_cfg": array of MPS_MAX_PORTS; a port's direction and its utilisation scale. */
struct hula_port_cfg {
	__u64 util_scale; /* floor(2^40 / cap_bytes): (decayed bytes * scale) >> 24 is Q16 */
	__u32 dir;        /* HULA_DIR_* */
	__u32 pad;
};
#define HULA_SIZEOF_PORT_CFG 16

/* Map "txutil": array of MPS_MAX_PORTS; the transmit utilisation estimator of a port. */
struct hula_txutil {
	MPS_LOCK;
	__u32 pad;
	__u64 bytes;
	__u64 last_us;
};
#define HULA_SIZEOF_TXUTIL 24

/* One best-hop slot: a next hop towards a ToR and the utilisation of the path through it. */
struct hula_hop {
	__u16 port; /* HULA_NO_PORT: empty */
	__u16 pad;
	__u32 util; /* Q16 */
	__u64 time_us; /* when a probe last refreshed it */
};

/* Map "best": array of n_tors (sized at load); the k best hops, ascending util. */
struct hula_best {
	MPS_LOCK;
	__u32 pad;
	struct hula_hop hop[HULA_MAX_K];
};
#define HULA_SIZEOF_BEST 72

/* Map "flowlets": array of table_entries (sized at load). */
struct hula_flowlet {
	__u32 tag;  /* the flow's full seeded hash */
	__u16 port; /* the flowlet's port */
	__u8 valid;
	__u8 pad;
	__u64 last_us;
};
#define HULA_SIZEOF_FLOWLET 16

/* Map "aux": array of assoc_entries; the keys of a handshake in progress. */
struct hula_aux {
	__u32 tag;
	__u8 flags; /* HULA_AUX_*; 0: the slot is free (tag and keys stay until a SYN reuses it) */
	__u8 pad;
	__u16 pad2;
	__u64 key_a;
	__u64 key_b;
};
#define HULA_SIZEOF_AUX 24

/* Map "assoc": array of assoc_entries; a subflow's connection. */
struct hula_assoc {
	__u32 tag;
	__u8 subflow;
	__u8 count; /* subflows the connection had when this entry was made (the first's grows) */
	__u8 valid;
	__u8 pad;
	__u64 conn_id;
};
#define HULA_SIZEOF_ASSOC 16

/* Map "tokens": array of assoc_entries; a token's assoc slot. */
struct hula_token {
	__u32 token;
	__u32 assoc_slot;
	__u32 valid;
	__u32 pad;
};
#define HULA_SIZEOF_TOKEN 16

/* Map "conns": array of conn_entries; the hops of a connection's subflows. */
struct hula_conn {
	__u64 conn_id;
	__u16 port[HULA_MAX_SUBFLOWS]; /* subflow s at index s - 1; HULA_NO_PORT: none */
	__u64 last_us[HULA_MAX_SUBFLOWS];
	__u8 rr;
	__u8 valid;
	__u8 pad[6];
};
#define HULA_SIZEOF_CONN 56

/* Map "probe_tmpl": array of one; the probe frame this ToR originates (MACs, ToR id, hops and
 * util are written per copy), built by the control plane as the Rust twin builds it. */
struct hula_probe_tmpl {
	__u8 bytes[HULA_PROBE_FRAME_BYTES];
};

/* Map "counters": per-CPU array indexed by these; the Rust names are in comments. */
enum hula_counter {
	HULA_C_PROBES_SENT = 0,   /* hula.probes_sent */
	HULA_C_PROBES_IN,         /* hula.probes_in */
	HULA_C_PROBE_COPIES,      /* hula.probe_copies */
	HULA_C_PROBES_REFUSED,    /* hula.probes_refused */
	HULA_C_AGED,              /* hula.aged */
	HULA_C_NEW_FLOWLETS,      /* hula.new_flowlets */
	HULA_C_CONTINUED,         /* hula.continued */
	HULA_C_COLLISIONS,        /* hula.collisions */
	HULA_C_FALLBACK,          /* hula.fallback */
	HULA_C_DEAD_PORT,         /* hula.dead_port */
	HULA_C_ASSOC,             /* mphula.assoc */
	HULA_C_JOINS,             /* mphula.joins */
	HULA_C_JOIN_MISSES,       /* mphula.join_misses */
	HULA_C_PUSHED,            /* mphula.pushed */
	HULA_C_POPPED,            /* mphula.popped */
	HULA_C_SIBLING_SKIPS,     /* mphula.sibling_skips */
	HULA_C_ROUND_ROBIN,       /* mphula.round_robin */
	HULA_C_CONN_COLLISIONS,   /* mphula.conn_collisions */
	HULA_C_SUBFLOW_OVERFLOW,  /* mphula.subflow_overflow */
	HULA_C_NO_ROUTE,          /* no_route */
	HULA_C_TTL_EXPIRED,       /* ttl_expired */
	HULA_C_LOCAL,             /* local */
	HULA_C_NOT_IPV4,          /* not_ipv4 (the frame runner's) */
	HULA_C_MALFORMED,         /* malformed (the frame runner's) */
	HULA_C_REDIRECT_FAILED,   /* redirect_failed (a port without an interface, a failed push) */
	HULA_C_MAX,
};

#endif
