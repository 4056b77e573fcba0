/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpsched data-plane map layouts: the one place that fixes them.
 *
 * The Rust control plane (crates/netns/src/layout.rs) declares the same structs with
 * #[repr(C)] and checks their sizes against the MPS_SIZEOF_* constants below at compile
 * time. Change a struct here and there together, or the build fails.
 *
 * Every register mirrors a register of the Rust reference programs in crates/core
 * (MultipathSwitch, Wrr, Dwrr, RandomSplit, Confluence, VirtualQueueMarker). Addresses are
 * held in host byte order, as the Rust programs hold them. Multi-packet state lives in array
 * map values guarded by a bpf_spin_lock, so two CPUs cannot interleave one scheduler's update.
 */
#ifndef MPSCHED_H
#define MPSCHED_H

#include <linux/types.h>

/* A map value holding a lock must name struct bpf_spin_lock in its BTF; user space sees a u32. */
#ifdef __bpf__
#define MPS_LOCK struct bpf_spin_lock lock
#else
#define MPS_LOCK __u32 lock
#endif

#define MPS_MAX_PATHS 8
#define MPS_MAX_PORTS 16
#define MPS_MAX_GROUPS 8
/* Interfaces are created inside each node's namespace, so their ifindexes are small. */
#define MPS_MAX_IFINDEX 256
#define MPS_MAX_ROUTES 1024
#define MPS_MAX_ECMP_GROUPS 64

/* A route's port with this bit set names an ECMP group (the rest: its index in "ecmp"). */
#define MPS_ECMP_GROUP 0x8000u
#define MPS_TEST_DRAWS 64

/* Scheduler kinds (struct mps_split.sched). ECMP as a split scheduler is not offered by the eBPF
 * programs (ECMP routing is: MPS_ECMP_GROUP routes). */
#define MPS_SCHED_SINGLE 0
#define MPS_SCHED_RS 2
#define MPS_SCHED_WRR 3
#define MPS_SCHED_DWRR 4

/* struct mps_node.flags */
#define MPS_F_TEST_CLOCK 1u /* egress time is test_clock_ns, not bpf_ktime_get_ns() */
#define MPS_F_TEST_DRAWS 2u /* RS draws come from the test_draws map */

/* RS draws a value in [MPS_RS_DRAW_MIN, MPS_RS_DRAW_MAX] (the paper's random(1, 100)). */
#define MPS_RS_DRAW_MIN 1
#define MPS_RS_DRAW_MAX 100

/* The feedback packet: "MPFB" | group | path (0-based) | 0 | 0, padded to a 60-byte frame. */
#define MPS_FEEDBACK_MAGIC 0x4d504642u
#define MPS_FEEDBACK_FRAME_BYTES 60

/* Map "node": array of one. Written by the control plane, read by every packet. */
struct mps_node {
	__u32 own_ip;
	__u16 feedback_port;
	__u8 n_splits;
	__u8 n_confluences;
	__u32 flags;
	__u32 test_draws_n;
	__u64 test_clock_ns;
	__u32 hash_seed; /* ECMP routing: this switch's seed (MultipathSwitch::hash_seed) */
	__u8 n_class_rules; /* the first entries of map "class_rules" in use */
	__u8 pad[3];
};
#define MPS_SIZEOF_NODE 32

/* Map "class_rules": array of MPS_MAX_CLASS_RULES, the classifier (mpsched_core::classify),
 * first match first. Addresses in host order, pre-masked; a packet matching a rule leaves with
 * DSCP dscp_set (queue << 3), its ECN as it came. The switch's own packets and network control
 * (CS7) are never classified. */
#define MPS_MAX_CLASS_RULES 16
#define MPS_NETWORK_CONTROL_DSCP 56 /* CS7: never classified (classify::NETWORK_CONTROL_DSCP) */
struct mps_class_rule {
	__u32 src;
	__u32 src_mask;
	__u32 dst;
	__u32 dst_mask;
	__u8 dscp;     /* matched unless dscp_any */
	__u8 dscp_any;
	__u8 dscp_set;
	__u8 pad;
};
#define MPS_SIZEOF_CLASS_RULE 20

/* Map "ecmp": array of MPS_MAX_ECMP_GROUPS; a group's ports, one chosen per flow. */
struct mps_ecmp {
	__u32 n_ports;
	__u16 ports[MPS_MAX_PORTS];
};
#define MPS_SIZEOF_ECMP 36

/* Map "ports": array indexed by port id. ifindex 0 marks an unused slot. */
struct mps_port {
	__u32 ifindex;
	__u8 own_mac[6];
	__u8 peer_mac[6];
};
#define MPS_SIZEOF_PORT 16

/* Map "splits": array of MPS_MAX_GROUPS; the first n_splits slots are live.
 * Registers of RS, WRR and DWRR for one splitting group (Rust: SplitGroup + Scheduler). */
struct mps_split {
	MPS_LOCK;
	__u32 src_ip;
	__u32 dst_ip;
	__u8 group;
	__u8 n_paths;
	__u8 sched;
	__u8 cursor; /* DWRR: where the hand-out of moved weight starts; SINGLE: the path */
	__u16 ports[MPS_MAX_PATHS];
	__u8 rs_lo[MPS_MAX_PATHS];
	__u8 rs_hi[MPS_MAX_PATHS];
	__u16 weights[MPS_MAX_PATHS];
	__u16 remaining[MPS_MAX_PATHS];
	__u32 adjust[MPS_MAX_PATHS];
	__u16 groups;
	__u16 groups_left;
	__u16 min_weight;
	__u16 max_step;
	/* Bit p set: feedback arriving on port p is trusted (it is where the routes from the
	 * confluence point arrive); feedback on any other port is forged and is not counted. */
	__u16 feedback_ports;
	__u16 pad;
	__u32 drop_left;
	__u32 avoidance_drop_pkts;
	__u64 path_pkts[MPS_MAX_PATHS];
	__u64 feedback_rx;
	__u64 windows;
	__u64 adjustments;
	__u64 avoidance_events;
	__u64 avoidance_drops;
};
#define MPS_SIZEOF_SPLIT 240

/* Map "confluences": array of MPS_MAX_GROUPS; the first n_confluences slots are live. */
struct mps_confluence {
	MPS_LOCK;
	__u32 src_ip;
	__u32 dst_ip;
	__u32 splitter_ip;
	__u8 group;
	__u8 n_paths;
	__u16 pad;
	__u32 every;
	__u16 ingress_port[MPS_MAX_PATHS];
	__u16 return_port[MPS_MAX_PATHS];
	__u32 ce_pending[MPS_MAX_PATHS];
	__u64 ce_arrivals;
	__u64 feedback_sent;
};
#define MPS_SIZEOF_CONFLUENCE 104

/* Map "markers": array indexed by port id; threshold_scaled 0 means no marker.
 * The virtual queue: backlog in bit-nanoseconds-per-second (bits x 1e9), so that draining at
 * rate_bps for elapsed_ns removes exactly elapsed_ns x rate_bps with no division. */
struct mps_marker {
	MPS_LOCK;
	__u32 pad;
	__u64 rate_bps;
	__u64 max_elapsed_ns; /* U64_MAX / rate_bps: longer idle empties the queue */
	__u64 threshold_scaled;
	__u64 limit_scaled;
	__u64 backlog_scaled;
	__u64 last_ns;
	__u64 marked;
	__u64 not_ect_over_threshold;
	__u64 overflow;
};
#define MPS_SIZEOF_MARKER 80

/* Map "counters": per-CPU array indexed by these. */
enum mps_counter {
	MPS_C_NO_ROUTE = 0,
	MPS_C_TTL_EXPIRED,
	MPS_C_AVOIDANCE,
	MPS_C_FEEDBACK_RX,
	MPS_C_FEEDBACK_UNKNOWN_GROUP,
	MPS_C_LOCAL,
	MPS_C_NOT_IPV4,
	MPS_C_MALFORMED,
	MPS_C_REDIRECT_FAILED,
	MPS_C_FEEDBACK_UNTRUSTED_PORT,
	MPS_C_MAX,
};

/* Map "port_stats": per-CPU array indexed by port id. */
struct mps_port_stats {
	__u64 rx_pkts;
	__u64 rx_bytes;
	__u64 tx_pkts;
	__u64 tx_bytes;
};
#define MPS_SIZEOF_PORT_STATS 32

/* Map "routes": LPM trie. addr is in network byte order, as the trie compares bytes. */
struct mps_route_key {
	__u32 prefixlen;
	__u32 addr;
};

/* Rate-controlled UDP flows' payloads (crates/core/src/rate_wire.rs is the specification; the
 * Rust build checks these constants against it). Every payload starts with a big-endian magic;
 * all fields are big-endian. A switch that notifies a paced sender (PMQECN, P4QCN) sends a
 * struct mps_rate_feedback as the UDP payload to the data packet's source address and port,
 * from UDP port 50011 (pmqecn's FEEDBACK_PORT), DSCP 56 (pmqecn's FEEDBACK_DSCP), ECN CE: a
 * queue stage asks mps_ingress for one with a struct mps_reflect (pmqecn.bpf.c does). */
#define MPS_RATE_DATA_MAGIC 0x4d505244u     /* "MPRD": seq u64 and send time u64 at bytes 8 and 16 */
#define MPS_RATE_CNP_MAGIC 0x4d50434eu      /* "MPCN": the CE-marked datagram's seq u64 at byte 8 */
#define MPS_RATE_FEEDBACK_MAGIC 0x4d505246u /* "MPRF": struct mps_rate_feedback */
#define MPS_RATE_DATA_HEADER_BYTES 24
#define MPS_RATE_CNP_BYTES 16
struct mps_rate_feedback {
	__be32 magic;
	__u8 queue;        /* the class (virtual queue) */
	__u8 reserved;
	__be16 qlen_pkts;  /* its packets waiting at the port */
	__be32 measured_kbps; /* the class's measured arrival rate (lambda) */
	__be32 target_kbps;   /* the rate it should arrive at (lambda*) */
};
#define MPS_SIZEOF_RATE_FEEDBACK 16
#define MPS_RATE_FEEDBACK_PORT 50011
#define MPS_RATE_FEEDBACK_DSCP 56
/* The reflected frame: Ethernet, IPv4 (20 bytes), UDP, struct mps_rate_feedback. */
#define MPS_RATE_FEEDBACK_FRAME_BYTES 58

/* What a queue stage (MPS_QUEUE_STAGE) asks of mps_ingress beside its verdict: `body` as a rate
 * feedback to the data packet's source address and port. Not a map value: the stack. */
struct mps_reflect {
	__u32 want;
	struct mps_rate_feedback body;
};

#endif
