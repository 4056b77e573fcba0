/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpsched on BMv2: sizes, constants and register indices, the P4 twin of bpf/mpsched.h.
 *
 * crates/bmv2/build.rs turns the MPS_* defines below into Rust constants
 * (crates/bmv2/src/layout.rs), which the control plane (crates/bmv2/src/control.rs, where the
 * registers and tables are named) uses; the tests in layout.rs fail where a constant named here
 * and in bpf/mpsched.h differs. Change table and register names here and in control.rs
 * together. Every register mirrors a register of the Rust reference programs in crates/core,
 * as the eBPF maps do. Per-path registers of slot s, path i live at index
 * s * MPS_MAX_PATHS + i.
 */
#ifndef MPSCHED_LAYOUT_P4
#define MPSCHED_LAYOUT_P4

#define MPS_MAX_PATHS 8
#define MPS_MAX_PORTS 16
#define MPS_MAX_GROUPS 8
#define MPS_GROUP_PATHS 64 /* MPS_MAX_GROUPS * MPS_MAX_PATHS */
#define MPS_MAX_ROUTES 1024
#define MPS_MAX_ECMP_GROUPS 64
#define MPS_MAX_CLASS_RULES 16 /* classifier rules (mpsched_core::classify::MAX_CLASS_RULES) */
#define MPS_NETWORK_CONTROL_DSCP 56 /* CS7: never classified */
#define MPS_TEST_DRAWS 64

/* The node's own IP stack: ARP, IPv6 and packets addressed to the node leave by this port
 * (the eBPF program hands them to the kernel with TC_ACT_OK). */
#define MPS_STACK_PORT 64

/* Scheduler kinds (register split_sched), as MPS_SCHED_* in bpf/mpsched.h. */
#define MPS_SCHED_SINGLE 0
#define MPS_SCHED_RS 2
#define MPS_SCHED_WRR 3
#define MPS_SCHED_DWRR 4

/* Register test_flags. */
#define MPS_F_TEST_CLOCK 1 /* the egress clock is test_clock_ns, not the switch's timestamp */
#define MPS_F_TEST_DRAWS 2 /* RS draws come from test_draws */

#define MPS_RS_DRAW_MIN 1
#define MPS_RS_DRAW_SPAN 100 /* the paper's random(1, 100) */

#define MPS_FEEDBACK_MAGIC 0x4d504642 /* "MPFB" */
#define MPS_FEEDBACK_FRAME_BYTES 60

/* A switch's rate feedback to a paced sender (crates/core/src/rate_wire.rs; PMQECN's): UDP
 * from MPS_RATE_FEEDBACK_PORT, DSCP MPS_RATE_FEEDBACK_DSCP and CE, payload "MPRF" | queue u8 |
 * reserved u8 | qlen_pkts u16 | measured_kbps u32 | target_kbps u32; Ethernet, IPv4 (20 bytes),
 * UDP and the payload make MPS_RATE_FEEDBACK_FRAME_BYTES. As bpf/mpsched.h's. */
#define MPS_RATE_FEEDBACK_MAGIC 0x4d505246 /* "MPRF" */
#define MPS_SIZEOF_RATE_FEEDBACK 16
#define MPS_RATE_FEEDBACK_PORT 50011
#define MPS_RATE_FEEDBACK_DSCP 56
#define MPS_RATE_FEEDBACK_FRAME_BYTES 58

/* A program's own packets (its rate feedback): ingress clones the data packet to mirror
 * session MPS_RECIRC_SESSION, whose port MPS_RECIRC_PORT has no interface; there egress
 * rebuilds the clone into the packet and recirculates it, preserving field list
 * MPS_FL_RATE_FEEDBACK, and ingress routes it as the switch's own (p4/README.md). */
#define MPS_RECIRC_PORT 66
#define MPS_RECIRC_SESSION 100
#define MPS_FL_RATE_FEEDBACK 2

/* Register "counters": indices as enum mps_counter. */
#define MPS_C_NO_ROUTE 0
#define MPS_C_TTL_EXPIRED 1
#define MPS_C_AVOIDANCE 2
#define MPS_C_FEEDBACK_RX 3
#define MPS_C_FEEDBACK_UNKNOWN_GROUP 4
#define MPS_C_LOCAL 5
#define MPS_C_NOT_IPV4 6
#define MPS_C_MALFORMED 7
#define MPS_C_REDIRECT_FAILED 8
#define MPS_C_FEEDBACK_UNTRUSTED_PORT 9
#define MPS_C_MAX 10

/* The feedback packet's mirror session for return port p is p + MPS_SESSION_BASE. */
#define MPS_SESSION_BASE 1

/* standard_metadata.instance_type of an ingress-to-egress clone in BMv2. */
#define BMV2_INSTANCE_CLONE_I2E 1
/* ... and of a recirculated packet, in ingress (simple_switch sets 0 again before egress). */
#define BMV2_INSTANCE_RECIRC 4

#endif
