/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ATSSS UPF's eBPF map layouts: the one place that fixes them. The kernel backend
 * (crates/netns/src/programs/atsss/layout.rs) declares the same structs with #[repr(C)] and
 * checks their sizes and offsets against the ATSSS_SIZEOF_* / ATSSS_OFFSETOF_* constants
 * below at compile time (crates/netns/build.rs reads them from here); the C side asserts the
 * same constants (atsss.bpf.c). struct atsss_ue and struct atsss_path are the Rust
 * registers' UeReg and PathReg (crates/programs/src/atsss/registers.rs), field for field.
 *
 * The ports, routes and per-port statistics are bpf/mpsched.h's (struct mps_port,
 * mps_route_key, mps_port_stats), filled as for every program. Addresses are in host byte
 * order, as the Rust programs hold them, except the keys of the two address indexes, which
 * are in network order, as in the headers they are compared with.
 */
#ifndef ATSSS_H
#define ATSSS_H

#include "mpsched.h"

#define ATSSS_MAX_UES 65536 /* mpsched_core::upf::MAX_UES */
#define ATSSS_MAX_PATHS 4
#define ATSSS_TEST_DRAWS 64

/* The frames (crates/programs/src/atsss/frame.rs). */
#define ATSSS_UDP_PORT 4789
#define ATSSS_HEADER_BYTES 20
#define ATSSS_DATA_BYTES 12
#define ATSSS_ACK_BYTES 16
#define ATSSS_KEEPALIVE_BYTES 12
#define ATSSS_ENCAP_BYTES 60 /* outer IPv4 20 + UDP 8 + header 20 + data 12 */
#define ATSSS_OUTER_TTL 64
#define ATSSS_MSG_DATA 1
#define ATSSS_MSG_ACK 2
#define ATSSS_MSG_KEEPALIVE 3

/* The registers' constants (registers.rs). */
#define ATSSS_PATH_HAS_RTT 1
#define ATSSS_PATH_SLOW_START 2 /* CMon's window grows one per ack until its first cut */
#define ATSSS_MAX_PROBE_BACKOFF 4 /* probes while down: the floor doubled at most 4 times */
#define ATSSS_RTTMON_MAX_WEIGHT 62
#define ATSSS_WRR_MAX_WEIGHT 255
#define ATSSS_CMON_MIN_CWND 2
#define ATSSS_CMON_MAX_CWND 4096

/* A UE's scheduler (registers::Kind; struct atsss_ue.kind). */
enum atsss_kind {
	ATSSS_KIND_WRR = 0,
	ATSSS_KIND_DWRR = 1,
	ATSSS_KIND_RTTMON = 2,
	ATSSS_KIND_CMON = 3,
	ATSSS_KIND_ACTIVE_STANDBY = 4,
	ATSSS_KIND_SMALLEST_DELAY = 5,
	ATSSS_KIND_LOAD_BALANCING = 6,
	ATSSS_KIND_PRIORITY = 7,
};

/* struct atsss_node.flags */
#define ATSSS_F_TEST_CLOCK 1u /* time is test_clock_ns, not bpf_ktime_get_ns() */
#define ATSSS_F_TEST_DRAWS 2u /* draws come from the test_draws map */
#define ATSSS_F_BENCH 4u      /* benchmark: each run first undoes the last run's encapsulation
			       * and sends the packet to a UE drawn at random (README) */
#define ATSSS_F_BENCH_ONLY 8u /* with ATSSS_F_BENCH: that prologue alone, then XDP_DROP (its cost) */

/* Map "node": array of one. Written by the control plane, read by every packet. */
struct atsss_node {
	__u32 own_ip; /* host order */
	__u32 flags;
	__u64 epoch;
	__u32 mtu;                /* the largest outer IPv4 packet */
	__u32 outage_floor_ticks; /* registers::Config */
	__u16 initial_cwnd;
	__u16 pad;
	__u32 n_ues;
	__u64 test_clock_ns;
	__u32 test_draws_n;
	__u16 ue_index_bits;   /* map "ue_index" has 1 << ue_index_bits entries */
	__u16 path_index_bits; /* map "path_index" has 1 << path_index_bits entries */
};
#define ATSSS_SIZEOF_NODE 48

/* registers::PathReg. */
struct atsss_path {
	__u32 cur_rtt;
	__u32 min_rtt;
	__u32 seq_sent;
	__u32 seq_acked;
	__u32 last_heard;
	__u32 lost;
	__u32 last_cut;
	__u16 cwnd;
	__u16 acks_in_round;
	__u16 flags;
	__u16 pad[3];
};
#define ATSSS_SIZEOF_PATH 40
#define ATSSS_OFFSETOF_PATH_CWND 28

/* registers::UeReg. */
struct atsss_ue {
	__u8 weight;
	__u8 n_paths;
	__u8 kind;
	__u8 probe_backoff; /* registers::MAX_PROBE_BACKOFF at most */
	__u32 last_change;
	__u32 pad2[2];
	struct atsss_path paths[ATSSS_MAX_PATHS];
};
#define ATSSS_SIZEOF_UE 176
#define ATSSS_OFFSETOF_UE_PATHS 16

/* One path as the control plane gave it (upf::PathCfg). */
struct atsss_path_cfg {
	__u32 addr;        /* the UE's address on the path, host order */
	__u16 port;        /* the UE path's UDP port */
	__u16 egress_port; /* the UPF's port towards it */
};
#define ATSSS_SIZEOF_PATH_CFG 8

/* Map "ues": array of n_ues slots, indexed by the UE's row in the control plane's table
 * (upf::UeSlot), memory-mappable so that its values start on a page, and each slot (256
 * bytes) on a 256-byte boundary. A downlink packet of a UE of two paths touches only the first
 * 128 bytes (two cache lines the adjacent-line prefetcher fetches together): the lock, the
 * UE's counters, paths 0 and 1 as the control plane gave them, the registers' head and the
 * registers of paths 0 and 1. The UE's own address (read by uplink only) and paths 2 and 3
 * follow the registers. The lock guards the registers' writes but the numbers: an
 * acknowledgement, RTTMon's step and a probe hold it; a packet's numbers (tunnel_seq,
 * packet_number, its path's seq_sent) are atomic adds, without it (README). */
struct atsss_slot {
	MPS_LOCK;
	__u32 tunnel_seq;
	__u64 packet_number;
	struct atsss_path_cfg near[2]; /* paths 0 and 1 */
	struct atsss_ue regs;
	__u32 ip; /* the UE's own address, host order */
	struct atsss_path_cfg far[2]; /* paths 2 and 3 */
	__u8 pad[28];
};
#define ATSSS_SIZEOF_SLOT 256
#define ATSSS_OFFSETOF_SLOT_PACKET_NUMBER 8
#define ATSSS_OFFSETOF_SLOT_NEAR 16
#define ATSSS_OFFSETOF_SLOT_REGS 32
#define ATSSS_OFFSETOF_SLOT_IP 208
#define ATSSS_OFFSETOF_SLOT_FAR 212

/* Maps "ue_index" (a UE's own address -> its row) and "path_index" (a UE's path address ->
 * row << 2 | path): open-addressed tables the control plane builds, 1 << bits entries, an
 * address (network order; 0: empty) starting at (host address x 0x9E3779B1) >> (32 - bits),
 * linear probing, every address within ATSSS_INDEX_PROBES of its start (the control plane
 * grows the table until it is). One array lookup per probe, no hash function call: a
 * downlink's lookup touches one cache line, most often. */
struct atsss_index_entry {
	__u32 key;
	__u32 value;
};
#define ATSSS_SIZEOF_INDEX_ENTRY 8
#define ATSSS_INDEX_PROBES 16
#define ATSSS_INDEX_MULT 0x9E3779B1
#define ATSSS_INDEX_MAX_BITS 20

/* Map "counters": per-CPU array indexed by these; the Rust names (upf::COUNTER_NAMES, then
 * the frame runner's) in comments. */
enum atsss_counter {
	ATSSS_C_ENCAPSULATED = 0, /* atsss.encapsulated */
	ATSSS_C_PATH0,            /* atsss.path0_pkts .. path3_pkts */
	ATSSS_C_PATH1,
	ATSSS_C_PATH2,
	ATSSS_C_PATH3,
	ATSSS_C_ACKS,            /* atsss.acks */
	ATSSS_C_ACKS_IGNORED,    /* atsss.acks_ignored */
	ATSSS_C_UPLINK,          /* atsss.uplink */
	ATSSS_C_KEEPALIVES,      /* atsss.keepalives */
	ATSSS_C_MALFORMED,       /* atsss.malformed (tunnel frames) */
	ATSSS_C_UNKNOWN_UE,      /* atsss.unknown_ue */
	ATSSS_C_SPOOFED,         /* atsss.spoofed */
	ATSSS_C_TOO_BIG,         /* atsss.too_big */
	ATSSS_C_NO_ROUTE,        /* no_route */
	ATSSS_C_TTL_EXPIRED,     /* ttl_expired */
	ATSSS_C_LOCAL,           /* local */
	ATSSS_C_NOT_IPV4,        /* not_ipv4 (the frame runner's) */
	ATSSS_C_IPV4_MALFORMED,  /* malformed (the frame runner's) */
	ATSSS_C_REDIRECT_FAILED, /* redirect_failed (a port without an interface) */
	ATSSS_C_MAX,
};

#endif
