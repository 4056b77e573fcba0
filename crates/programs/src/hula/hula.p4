/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HULA and MP-HULA for BMv2's v1model: the P4 twin of crates/programs/src/hula/ (Rust) and
 * hula.bpf.c (eBPF). README.md in this folder is the specification; its section "The P4
 * program" says where v1model made this program differ in means (never in outcome).
 * Compiled with p4/ on the include path (p4c-bm2-ss -I p4 ...).
 *
 *   parser: Ethernet, up to four shims (EtherType 0x88B5 chain: connection header, INT, probe),
 *     IPv4, UDP, TCP and its options walked byte by byte up to the first MPTCP option
 *     (MP_CAPABLE, MP_JOIN SYN), never past data offset nor the IPv4 total length.
 *   ingress: frame checks -> a vector's egress step -> probe origination (a trigger frame on
 *     HULA_TIMER_PORT) -> probes (refuse, fold, best-k compare-and-shift, replication by a
 *     multicast group per ingress port) -> local, TTL -> MPTCP association at ToRs and the
 *     connection header's push -> LPM; an equal-cost group goes through the flowlet table and
 *     the best hops (the sub-flowlet choice for packets with a connection header) -> the pop
 *     towards a host -> out.
 *   egress: the transmit utilisation estimator of each port, and MACs of probe copies.
 *
 * Time is in microseconds (BMv2's timestamps count them). Vectors set the clock
 * (test_clock_on, test_clock_us) and direct egress steps (test_egress_port).
 */
#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/arith.p4"
#include "include/queues.p4"

/* Sizes: BMv2 sizes registers when it loads the program; the control plane refuses more. A
 * register cell costs simple_switch about 700 bytes (a multiprecision value each): at 65 536
 * slots per table one switch held 1.5 GB, so the tables hold the default 4 096 here. */
#define HULA_SLOTS 4096       /* flowlet, association and connection slots (the defaults) */
#define HULA_MAX_TORS 256
#define HULA_K 4              /* best-k slots per ToR (MAX_BEST_K) */
#define HULA_SUBFLOWS 4       /* MAX_SUBFLOWS */
#define HULA_BEST_SLOTS 1024  /* HULA_MAX_TORS * HULA_K */
#define HULA_CONN_SUB 16384   /* HULA_SLOTS * HULA_SUBFLOWS */

/* Probe origination: a frame written into this port starts the ToR's probes (BMv2 has no
 * timer that sends packets; the prober of crates/bmv2/src/hula.rs writes one every period). */
#define HULA_TIMER_PORT 65
/* Multicast groups: a probe that came in by port p is replicated by group p + 1, an originated
 * one by HULA_ORIGIN_GROUP (the up ports). */
#define HULA_ORIGIN_GROUP 100
#define HULA_ORIGIN_MASK 16   /* index of the origination mask in mcast_mask */

#define HULA_PROBE_PORT 50010
#define HULA_NO_TOR 0xFFFF
/* standard_metadata.instance_type of a multicast copy in BMv2. */
#define BMV2_INSTANCE_REPLICATION 5

#define DIR_HOST 0
#define DIR_DOWN 1
#define DIR_UP 2
#define DIR_NONE 3

/* Register "counters": indices as HULA_COUNTERS in crates/bmv2/src/hula.rs. */
#define HC_PROBES_SENT 0
#define HC_PROBES_IN 1
#define HC_PROBE_COPIES 2
#define HC_PROBES_REFUSED 3
#define HC_AGED 4
#define HC_NEW_FLOWLETS 5
#define HC_CONTINUED 6
#define HC_COLLISIONS 7
#define HC_FALLBACK 8
#define HC_DEAD_PORT 9
#define HC_ASSOC 10
#define HC_JOINS 11
#define HC_JOIN_MISSES 12
#define HC_PUSHED 13
#define HC_POPPED 14
#define HC_SIBLING_SKIPS 15
#define HC_ROUND_ROBIN 16
#define HC_CONN_COLLISIONS 17
#define HC_SUBFLOW_OVERFLOW 18
#define HC_NO_ROUTE 19
#define HC_TTL_EXPIRED 20
#define HC_LOCAL 21
#define HC_NOT_IPV4 22
#define HC_MALFORMED 23
#define HC_REDIRECT_FAILED 24
#define HC_MAX 25

/* ---- Headers ---------------------------------------------------------------------------- */

/* A shim's first word (mpsched_core::headers). */
header shim_h {
    bit<16> next;
    bit<8>  kind;
    bit<8>  len; /* words, this one included */
}

/* Kind 1: the connection header. */
header routing_h {
    bit<64> conn_id;
    bit<16> path;
    bit<8>  hops;
    bit<8>  reserved;
}

/* Kind 2: INT (carried through, never read). */
header int_h {
    bit<128> body;
}

/* Kind 3: the probe. */
header probe_h {
    bit<16> tor;
    bit<8>  hops;
    bit<8>  reserved;
    bit<32> util;
}

/* A shim's words beyond its kind's body (a later version's fields), carried through. */
header shim_extra_h {
    varbit<8064> bytes;
}

/* TCP after its ports. */
header tcp_rest_h {
    bit<32> seq;
    bit<32> ack;
    bit<4>  doff;
    bit<4>  reserved;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

/* One byte of TCP options before the first MPTCP option (kept in order for the deparser). */
header opt_byte_h {
    bit<8> b;
}

/* An MPTCP option's first word. */
header mptcp_h {
    bit<8> kind;
    bit<8> len;
    bit<4> subtype;
    bit<4> version; /* MP_CAPABLE's version; MP_JOIN's flags */
    bit<8> flags;   /* MP_CAPABLE's flags; MP_JOIN's address id */
}

header key_h {
    bit<64> key;
}

/* MP_JOIN on a SYN: receiver token, sender nonce. */
header join_syn_h {
    bit<32> token;
    bit<32> nonce;
}

#define SHIM_HEADERS(i) \
    shim_h       sh##i;  \
    routing_h    rt##i;  \
    int_h        in##i;  \
    probe_h      pr##i;  \
    shim_extra_h ex##i;

struct hula_headers_t {
    ethernet_h   eth;
    /* The connection header a ToR pushes: on top, before every shim the frame came with. */
    shim_h       push_sh;
    routing_h    push_rt;
    SHIM_HEADERS(0)
    SHIM_HEADERS(1)
    SHIM_HEADERS(2)
    SHIM_HEADERS(3)
    ipv4_h         ipv4;
    ipv4_options_h ipv4_opts;
    l4_ports_h     l4;
    udp_rest_h     udp;
    tcp_rest_h     tcp;
    opt_byte_h[40] opts;
    mptcp_h        mp;
    key_h          key1;
    key_h          key2;
    join_syn_h     join;
}

/* ---- MPTCP tokens (gen_tokens.py) ------------------------------------------------------ */

/* BEGIN GENERATED by gen_tokens.py: do not edit by hand */
/* Each word of the rounds goes through this register, written and read back: p4c
 * substitutes an assigned expression into its uses (locals and metadata alike), and a
 * round's word is used by the next four rounds, so without the register the
 * expressions, and p4c's time, grow exponentially (20 rounds: over two minutes; with
 * it, 80 rounds in under a second). */
register<bit<32>>(1) token_word;

/* An MPTCP token: the 32 most significant bits of SHA-1(key) (v0, RFC 6824) or of
 * SHA-256(key) (v1, RFC 8684), the key as 8 bytes in network order. */
control MptcpToken(in bit<64> key, in bool v1, out bit<32> token) {
    apply {
        bit<32> hi = (bit<32>)(key >> 32);
        bit<32> lo = (bit<32>)key;
        if (v1) {
            bit<32> b1; token_word.write(0, ((((lo << 25) | (lo >> 7)) ^ ((lo << 14) | (lo >> 18)) ^ (lo >> 3)) + hi)); token_word.read(b1, 0);
            bit<32> b2; token_word.write(0, (lo + 32w0x11282000)); token_word.read(b2, 0);
            bit<32> b3; token_word.write(0, ((((b1 << 15) | (b1 >> 17)) ^ ((b1 << 13) | (b1 >> 19)) ^ (b1 >> 10)) + 32w0x80000000)); token_word.read(b3, 0);
            bit<32> b4; token_word.write(0, (((b2 << 15) | (b2 >> 17)) ^ ((b2 << 13) | (b2 >> 19)) ^ (b2 >> 10))); token_word.read(b4, 0);
            bit<32> b5; token_word.write(0, (((b3 << 15) | (b3 >> 17)) ^ ((b3 << 13) | (b3 >> 19)) ^ (b3 >> 10))); token_word.read(b5, 0);
            bit<32> b6; token_word.write(0, (((b4 << 15) | (b4 >> 17)) ^ ((b4 << 13) | (b4 >> 19)) ^ (b4 >> 10))); token_word.read(b6, 0);
            bit<32> b7; token_word.write(0, ((((b5 << 15) | (b5 >> 17)) ^ ((b5 << 13) | (b5 >> 19)) ^ (b5 >> 10)) + 32w0x00000040)); token_word.read(b7, 0);
            bit<32> b8; token_word.write(0, ((((b6 << 15) | (b6 >> 17)) ^ ((b6 << 13) | (b6 >> 19)) ^ (b6 >> 10)) + b1)); token_word.read(b8, 0);
            bit<32> b9; token_word.write(0, ((((b7 << 15) | (b7 >> 17)) ^ ((b7 << 13) | (b7 >> 19)) ^ (b7 >> 10)) + b2)); token_word.read(b9, 0);
            bit<32> b10; token_word.write(0, ((((b8 << 15) | (b8 >> 17)) ^ ((b8 << 13) | (b8 >> 19)) ^ (b8 >> 10)) + b3)); token_word.read(b10, 0);
            bit<32> b11; token_word.write(0, ((((b9 << 15) | (b9 >> 17)) ^ ((b9 << 13) | (b9 >> 19)) ^ (b9 >> 10)) + b4)); token_word.read(b11, 0);
            bit<32> b12; token_word.write(0, ((((b10 << 15) | (b10 >> 17)) ^ ((b10 << 13) | (b10 >> 19)) ^ (b10 >> 10)) + b5)); token_word.read(b12, 0);
            bit<32> b13; token_word.write(0, ((((b11 << 15) | (b11 >> 17)) ^ ((b11 << 13) | (b11 >> 19)) ^ (b11 >> 10)) + b6)); token_word.read(b13, 0);
            bit<32> b14; token_word.write(0, ((((b12 << 15) | (b12 >> 17)) ^ ((b12 << 13) | (b12 >> 19)) ^ (b12 >> 10)) + b7)); token_word.read(b14, 0);
            bit<32> b15; token_word.write(0, ((((b13 << 15) | (b13 >> 17)) ^ ((b13 << 13) | (b13 >> 19)) ^ (b13 >> 10)) + b8 + 32w0x80100008)); token_word.read(b15, 0);
            bit<32> b16; token_word.write(0, ((((b14 << 15) | (b14 >> 17)) ^ ((b14 << 13) | (b14 >> 19)) ^ (b14 >> 10)) + b9 + (((b1 << 25) | (b1 >> 7)) ^ ((b1 << 14) | (b1 >> 18)) ^ (b1 >> 3)) + 32w0x00000040)); token_word.read(b16, 0);
            bit<32> b17; token_word.write(0, ((((b15 << 15) | (b15 >> 17)) ^ ((b15 << 13) | (b15 >> 19)) ^ (b15 >> 10)) + b10 + (((b2 << 25) | (b2 >> 7)) ^ ((b2 << 14) | (b2 >> 18)) ^ (b2 >> 3)) + b1)); token_word.read(b17, 0);
            bit<32> b18; token_word.write(0, ((((b16 << 15) | (b16 >> 17)) ^ ((b16 << 13) | (b16 >> 19)) ^ (b16 >> 10)) + b11 + (((b3 << 25) | (b3 >> 7)) ^ ((b3 << 14) | (b3 >> 18)) ^ (b3 >> 3)) + b2)); token_word.read(b18, 0);
            bit<32> b19; token_word.write(0, ((((b17 << 15) | (b17 >> 17)) ^ ((b17 << 13) | (b17 >> 19)) ^ (b17 >> 10)) + b12 + (((b4 << 25) | (b4 >> 7)) ^ ((b4 << 14) | (b4 >> 18)) ^ (b4 >> 3)) + b3)); token_word.read(b19, 0);
            bit<32> b20; token_word.write(0, ((((b18 << 15) | (b18 >> 17)) ^ ((b18 << 13) | (b18 >> 19)) ^ (b18 >> 10)) + b13 + (((b5 << 25) | (b5 >> 7)) ^ ((b5 << 14) | (b5 >> 18)) ^ (b5 >> 3)) + b4)); token_word.read(b20, 0);
            bit<32> b21; token_word.write(0, ((((b19 << 15) | (b19 >> 17)) ^ ((b19 << 13) | (b19 >> 19)) ^ (b19 >> 10)) + b14 + (((b6 << 25) | (b6 >> 7)) ^ ((b6 << 14) | (b6 >> 18)) ^ (b6 >> 3)) + b5)); token_word.read(b21, 0);
            bit<32> b22; token_word.write(0, ((((b20 << 15) | (b20 >> 17)) ^ ((b20 << 13) | (b20 >> 19)) ^ (b20 >> 10)) + b15 + (((b7 << 25) | (b7 >> 7)) ^ ((b7 << 14) | (b7 >> 18)) ^ (b7 >> 3)) + b6)); token_word.read(b22, 0);
            bit<32> b23; token_word.write(0, ((((b21 << 15) | (b21 >> 17)) ^ ((b21 << 13) | (b21 >> 19)) ^ (b21 >> 10)) + b16 + (((b8 << 25) | (b8 >> 7)) ^ ((b8 << 14) | (b8 >> 18)) ^ (b8 >> 3)) + b7)); token_word.read(b23, 0);
            bit<32> b24; token_word.write(0, ((((b22 << 15) | (b22 >> 17)) ^ ((b22 << 13) | (b22 >> 19)) ^ (b22 >> 10)) + b17 + (((b9 << 25) | (b9 >> 7)) ^ ((b9 << 14) | (b9 >> 18)) ^ (b9 >> 3)) + b8)); token_word.read(b24, 0);
            bit<32> b25; token_word.write(0, ((((b23 << 15) | (b23 >> 17)) ^ ((b23 << 13) | (b23 >> 19)) ^ (b23 >> 10)) + b18 + (((b10 << 25) | (b10 >> 7)) ^ ((b10 << 14) | (b10 >> 18)) ^ (b10 >> 3)) + b9)); token_word.read(b25, 0);
            bit<32> b26; token_word.write(0, ((((b24 << 15) | (b24 >> 17)) ^ ((b24 << 13) | (b24 >> 19)) ^ (b24 >> 10)) + b19 + (((b11 << 25) | (b11 >> 7)) ^ ((b11 << 14) | (b11 >> 18)) ^ (b11 >> 3)) + b10)); token_word.read(b26, 0);
            bit<32> b27; token_word.write(0, ((((b25 << 15) | (b25 >> 17)) ^ ((b25 << 13) | (b25 >> 19)) ^ (b25 >> 10)) + b20 + (((b12 << 25) | (b12 >> 7)) ^ ((b12 << 14) | (b12 >> 18)) ^ (b12 >> 3)) + b11)); token_word.read(b27, 0);
            bit<32> b28; token_word.write(0, ((((b26 << 15) | (b26 >> 17)) ^ ((b26 << 13) | (b26 >> 19)) ^ (b26 >> 10)) + b21 + (((b13 << 25) | (b13 >> 7)) ^ ((b13 << 14) | (b13 >> 18)) ^ (b13 >> 3)) + b12)); token_word.read(b28, 0);
            bit<32> b29; token_word.write(0, ((((b27 << 15) | (b27 >> 17)) ^ ((b27 << 13) | (b27 >> 19)) ^ (b27 >> 10)) + b22 + (((b14 << 25) | (b14 >> 7)) ^ ((b14 << 14) | (b14 >> 18)) ^ (b14 >> 3)) + b13)); token_word.read(b29, 0);
            bit<32> b30; token_word.write(0, ((((b28 << 15) | (b28 >> 17)) ^ ((b28 << 13) | (b28 >> 19)) ^ (b28 >> 10)) + b23 + (((b15 << 25) | (b15 >> 7)) ^ ((b15 << 14) | (b15 >> 18)) ^ (b15 >> 3)) + b14)); token_word.read(b30, 0);
            bit<32> b31; token_word.write(0, ((((b29 << 15) | (b29 >> 17)) ^ ((b29 << 13) | (b29 >> 19)) ^ (b29 >> 10)) + b24 + (((b16 << 25) | (b16 >> 7)) ^ ((b16 << 14) | (b16 >> 18)) ^ (b16 >> 3)) + b15)); token_word.read(b31, 0);
            bit<32> b32; token_word.write(0, ((((b30 << 15) | (b30 >> 17)) ^ ((b30 << 13) | (b30 >> 19)) ^ (b30 >> 10)) + b25 + (((b17 << 25) | (b17 >> 7)) ^ ((b17 << 14) | (b17 >> 18)) ^ (b17 >> 3)) + b16)); token_word.read(b32, 0);
            bit<32> b33; token_word.write(0, ((((b31 << 15) | (b31 >> 17)) ^ ((b31 << 13) | (b31 >> 19)) ^ (b31 >> 10)) + b26 + (((b18 << 25) | (b18 >> 7)) ^ ((b18 << 14) | (b18 >> 18)) ^ (b18 >> 3)) + b17)); token_word.read(b33, 0);
            bit<32> b34; token_word.write(0, ((((b32 << 15) | (b32 >> 17)) ^ ((b32 << 13) | (b32 >> 19)) ^ (b32 >> 10)) + b27 + (((b19 << 25) | (b19 >> 7)) ^ ((b19 << 14) | (b19 >> 18)) ^ (b19 >> 3)) + b18)); token_word.read(b34, 0);
            bit<32> b35; token_word.write(0, ((((b33 << 15) | (b33 >> 17)) ^ ((b33 << 13) | (b33 >> 19)) ^ (b33 >> 10)) + b28 + (((b20 << 25) | (b20 >> 7)) ^ ((b20 << 14) | (b20 >> 18)) ^ (b20 >> 3)) + b19)); token_word.read(b35, 0);
            bit<32> b36; token_word.write(0, ((((b34 << 15) | (b34 >> 17)) ^ ((b34 << 13) | (b34 >> 19)) ^ (b34 >> 10)) + b29 + (((b21 << 25) | (b21 >> 7)) ^ ((b21 << 14) | (b21 >> 18)) ^ (b21 >> 3)) + b20)); token_word.read(b36, 0);
            bit<32> b37; token_word.write(0, ((((b35 << 15) | (b35 >> 17)) ^ ((b35 << 13) | (b35 >> 19)) ^ (b35 >> 10)) + b30 + (((b22 << 25) | (b22 >> 7)) ^ ((b22 << 14) | (b22 >> 18)) ^ (b22 >> 3)) + b21)); token_word.read(b37, 0);
            bit<32> b38; token_word.write(0, ((((b36 << 15) | (b36 >> 17)) ^ ((b36 << 13) | (b36 >> 19)) ^ (b36 >> 10)) + b31 + (((b23 << 25) | (b23 >> 7)) ^ ((b23 << 14) | (b23 >> 18)) ^ (b23 >> 3)) + b22)); token_word.read(b38, 0);
            bit<32> b39; token_word.write(0, ((((b37 << 15) | (b37 >> 17)) ^ ((b37 << 13) | (b37 >> 19)) ^ (b37 >> 10)) + b32 + (((b24 << 25) | (b24 >> 7)) ^ ((b24 << 14) | (b24 >> 18)) ^ (b24 >> 3)) + b23)); token_word.read(b39, 0);
            bit<32> b40; token_word.write(0, ((((b38 << 15) | (b38 >> 17)) ^ ((b38 << 13) | (b38 >> 19)) ^ (b38 >> 10)) + b33 + (((b25 << 25) | (b25 >> 7)) ^ ((b25 << 14) | (b25 >> 18)) ^ (b25 >> 3)) + b24)); token_word.read(b40, 0);
            bit<32> b41; token_word.write(0, ((((b39 << 15) | (b39 >> 17)) ^ ((b39 << 13) | (b39 >> 19)) ^ (b39 >> 10)) + b34 + (((b26 << 25) | (b26 >> 7)) ^ ((b26 << 14) | (b26 >> 18)) ^ (b26 >> 3)) + b25)); token_word.read(b41, 0);
            bit<32> b42; token_word.write(0, ((((b40 << 15) | (b40 >> 17)) ^ ((b40 << 13) | (b40 >> 19)) ^ (b40 >> 10)) + b35 + (((b27 << 25) | (b27 >> 7)) ^ ((b27 << 14) | (b27 >> 18)) ^ (b27 >> 3)) + b26)); token_word.read(b42, 0);
            bit<32> b43; token_word.write(0, ((((b41 << 15) | (b41 >> 17)) ^ ((b41 << 13) | (b41 >> 19)) ^ (b41 >> 10)) + b36 + (((b28 << 25) | (b28 >> 7)) ^ ((b28 << 14) | (b28 >> 18)) ^ (b28 >> 3)) + b27)); token_word.read(b43, 0);
            bit<32> b44; token_word.write(0, ((((b42 << 15) | (b42 >> 17)) ^ ((b42 << 13) | (b42 >> 19)) ^ (b42 >> 10)) + b37 + (((b29 << 25) | (b29 >> 7)) ^ ((b29 << 14) | (b29 >> 18)) ^ (b29 >> 3)) + b28)); token_word.read(b44, 0);
            bit<32> b45; token_word.write(0, ((((b43 << 15) | (b43 >> 17)) ^ ((b43 << 13) | (b43 >> 19)) ^ (b43 >> 10)) + b38 + (((b30 << 25) | (b30 >> 7)) ^ ((b30 << 14) | (b30 >> 18)) ^ (b30 >> 3)) + b29)); token_word.read(b45, 0);
            bit<32> b46; token_word.write(0, ((((b44 << 15) | (b44 >> 17)) ^ ((b44 << 13) | (b44 >> 19)) ^ (b44 >> 10)) + b39 + (((b31 << 25) | (b31 >> 7)) ^ ((b31 << 14) | (b31 >> 18)) ^ (b31 >> 3)) + b30)); token_word.read(b46, 0);
            bit<32> b47; token_word.write(0, ((((b45 << 15) | (b45 >> 17)) ^ ((b45 << 13) | (b45 >> 19)) ^ (b45 >> 10)) + b40 + (((b32 << 25) | (b32 >> 7)) ^ ((b32 << 14) | (b32 >> 18)) ^ (b32 >> 3)) + b31)); token_word.read(b47, 0);
            bit<32> b48; token_word.write(0, ((((b46 << 15) | (b46 >> 17)) ^ ((b46 << 13) | (b46 >> 19)) ^ (b46 >> 10)) + b41 + (((b33 << 25) | (b33 >> 7)) ^ ((b33 << 14) | (b33 >> 18)) ^ (b33 >> 3)) + b32)); token_word.read(b48, 0);
            bit<32> b49; token_word.write(0, (hi + 32w0xf377ed68)); token_word.read(b49, 0);
            bit<32> b50; token_word.write(0, (b49 + 32w0xa54ff53a)); token_word.read(b50, 0);
            bit<32> b51; token_word.write(0, (b49 + 32w0x08909ae5)); token_word.read(b51, 0);
            bit<32> b52; token_word.write(0, ((((b50 << 26) | (b50 >> 6)) ^ ((b50 << 21) | (b50 >> 11)) ^ ((b50 << 7) | (b50 >> 25))) + ((b50 & 32w0x510e527f) ^ ((~b50) & 32w0x9b05688c)) + lo + 32w0x90bb1e3c)); token_word.read(b52, 0);
            bit<32> b53; token_word.write(0, (b52 + 32w0x3c6ef372)); token_word.read(b53, 0);
            bit<32> b54; token_word.write(0, (b52 + ((((b51 << 30) | (b51 >> 2)) ^ ((b51 << 19) | (b51 >> 13)) ^ ((b51 << 10) | (b51 >> 22))) + ((b51 & 32w0x6a09e667) ^ (b51 & 32w0xbb67ae85) ^ 32w0x2a01a605)))); token_word.read(b54, 0);
            bit<32> b55; token_word.write(0, ((((b53 << 26) | (b53 >> 6)) ^ ((b53 << 21) | (b53 >> 11)) ^ ((b53 << 7) | (b53 >> 25))) + ((b53 & b50) ^ ((~b53) & 32w0x510e527f)) + 32w0xd0c6645b)); token_word.read(b55, 0);
            bit<32> b56; token_word.write(0, (b55 + 32w0xbb67ae85)); token_word.read(b56, 0);
            bit<32> b57; token_word.write(0, (b55 + ((((b54 << 30) | (b54 >> 2)) ^ ((b54 << 19) | (b54 >> 13)) ^ ((b54 << 10) | (b54 >> 22))) + ((b54 & b51) ^ (b54 & 32w0x6a09e667) ^ (b51 & 32w0x6a09e667))))); token_word.read(b57, 0);
            bit<32> b58; token_word.write(0, ((((b56 << 26) | (b56 >> 6)) ^ ((b56 << 21) | (b56 >> 11)) ^ ((b56 << 7) | (b56 >> 25))) + ((b56 & b53) ^ ((~b56) & b50)) + 32w0x3ac42e24)); token_word.read(b58, 0);
            bit<32> b59; token_word.write(0, (b58 + 32w0x6a09e667)); token_word.read(b59, 0);
            bit<32> b60; token_word.write(0, (b58 + ((((b57 << 30) | (b57 >> 2)) ^ ((b57 << 19) | (b57 >> 13)) ^ ((b57 << 10) | (b57 >> 22))) + ((b57 & b54) ^ (b57 & b51) ^ (b54 & b51))))); token_word.read(b60, 0);
            bit<32> b61; token_word.write(0, (b50 + (((b59 << 26) | (b59 >> 6)) ^ ((b59 << 21) | (b59 >> 11)) ^ ((b59 << 7) | (b59 >> 25))) + ((b59 & b56) ^ ((~b59) & b53)) + 32w0x3956c25b)); token_word.read(b61, 0);
            bit<32> b62; token_word.write(0, (b51 + b61)); token_word.read(b62, 0);
            bit<32> b63; token_word.write(0, (b61 + ((((b60 << 30) | (b60 >> 2)) ^ ((b60 << 19) | (b60 >> 13)) ^ ((b60 << 10) | (b60 >> 22))) + ((b60 & b57) ^ (b60 & b54) ^ (b57 & b54))))); token_word.read(b63, 0);
            bit<32> b64; token_word.write(0, (b53 + (((b62 << 26) | (b62 >> 6)) ^ ((b62 << 21) | (b62 >> 11)) ^ ((b62 << 7) | (b62 >> 25))) + ((b62 & b59) ^ ((~b62) & b56)) + 32w0x59f111f1)); token_word.read(b64, 0);
            bit<32> b65; token_word.write(0, (b54 + b64)); token_word.read(b65, 0);
            bit<32> b66; token_word.write(0, (b64 + ((((b63 << 30) | (b63 >> 2)) ^ ((b63 << 19) | (b63 >> 13)) ^ ((b63 << 10) | (b63 >> 22))) + ((b63 & b60) ^ (b63 & b57) ^ (b60 & b57))))); token_word.read(b66, 0);
            bit<32> b67; token_word.write(0, (b56 + (((b65 << 26) | (b65 >> 6)) ^ ((b65 << 21) | (b65 >> 11)) ^ ((b65 << 7) | (b65 >> 25))) + ((b65 & b62) ^ ((~b65) & b59)) + 32w0x923f82a4)); token_word.read(b67, 0);
            bit<32> b68; token_word.write(0, (b57 + b67)); token_word.read(b68, 0);
            bit<32> b69; token_word.write(0, (b67 + ((((b66 << 30) | (b66 >> 2)) ^ ((b66 << 19) | (b66 >> 13)) ^ ((b66 << 10) | (b66 >> 22))) + ((b66 & b63) ^ (b66 & b60) ^ (b63 & b60))))); token_word.read(b69, 0);
            bit<32> b70; token_word.write(0, (b59 + (((b68 << 26) | (b68 >> 6)) ^ ((b68 << 21) | (b68 >> 11)) ^ ((b68 << 7) | (b68 >> 25))) + ((b68 & b65) ^ ((~b68) & b62)) + 32w0xab1c5ed5)); token_word.read(b70, 0);
            bit<32> b71; token_word.write(0, (b60 + b70)); token_word.read(b71, 0);
            bit<32> b72; token_word.write(0, (b70 + ((((b69 << 30) | (b69 >> 2)) ^ ((b69 << 19) | (b69 >> 13)) ^ ((b69 << 10) | (b69 >> 22))) + ((b69 & b66) ^ (b69 & b63) ^ (b66 & b63))))); token_word.read(b72, 0);
            bit<32> b73; token_word.write(0, (b62 + (((b71 << 26) | (b71 >> 6)) ^ ((b71 << 21) | (b71 >> 11)) ^ ((b71 << 7) | (b71 >> 25))) + ((b71 & b68) ^ ((~b71) & b65)) + 32w0xd807aa98)); token_word.read(b73, 0);
            bit<32> b74; token_word.write(0, (b63 + b73)); token_word.read(b74, 0);
            bit<32> b75; token_word.write(0, (b73 + ((((b72 << 30) | (b72 >> 2)) ^ ((b72 << 19) | (b72 >> 13)) ^ ((b72 << 10) | (b72 >> 22))) + ((b72 & b69) ^ (b72 & b66) ^ (b69 & b66))))); token_word.read(b75, 0);
            bit<32> b76; token_word.write(0, (b65 + (((b74 << 26) | (b74 >> 6)) ^ ((b74 << 21) | (b74 >> 11)) ^ ((b74 << 7) | (b74 >> 25))) + ((b74 & b71) ^ ((~b74) & b68)) + 32w0x12835b01)); token_word.read(b76, 0);
            bit<32> b77; token_word.write(0, (b66 + b76)); token_word.read(b77, 0);
            bit<32> b78; token_word.write(0, (b76 + ((((b75 << 30) | (b75 >> 2)) ^ ((b75 << 19) | (b75 >> 13)) ^ ((b75 << 10) | (b75 >> 22))) + ((b75 & b72) ^ (b75 & b69) ^ (b72 & b69))))); token_word.read(b78, 0);
            bit<32> b79; token_word.write(0, (b68 + (((b77 << 26) | (b77 >> 6)) ^ ((b77 << 21) | (b77 >> 11)) ^ ((b77 << 7) | (b77 >> 25))) + ((b77 & b74) ^ ((~b77) & b71)) + 32w0x243185be)); token_word.read(b79, 0);
            bit<32> b80; token_word.write(0, (b69 + b79)); token_word.read(b80, 0);
            bit<32> b81; token_word.write(0, (b79 + ((((b78 << 30) | (b78 >> 2)) ^ ((b78 << 19) | (b78 >> 13)) ^ ((b78 << 10) | (b78 >> 22))) + ((b78 & b75) ^ (b78 & b72) ^ (b75 & b72))))); token_word.read(b81, 0);
            bit<32> b82; token_word.write(0, (b71 + (((b80 << 26) | (b80 >> 6)) ^ ((b80 << 21) | (b80 >> 11)) ^ ((b80 << 7) | (b80 >> 25))) + ((b80 & b77) ^ ((~b80) & b74)) + 32w0x550c7dc3)); token_word.read(b82, 0);
            bit<32> b83; token_word.write(0, (b72 + b82)); token_word.read(b83, 0);
            bit<32> b84; token_word.write(0, (b82 + ((((b81 << 30) | (b81 >> 2)) ^ ((b81 << 19) | (b81 >> 13)) ^ ((b81 << 10) | (b81 >> 22))) + ((b81 & b78) ^ (b81 & b75) ^ (b78 & b75))))); token_word.read(b84, 0);
            bit<32> b85; token_word.write(0, (b74 + (((b83 << 26) | (b83 >> 6)) ^ ((b83 << 21) | (b83 >> 11)) ^ ((b83 << 7) | (b83 >> 25))) + ((b83 & b80) ^ ((~b83) & b77)) + 32w0x72be5d74)); token_word.read(b85, 0);
            bit<32> b86; token_word.write(0, (b75 + b85)); token_word.read(b86, 0);
            bit<32> b87; token_word.write(0, (b85 + ((((b84 << 30) | (b84 >> 2)) ^ ((b84 << 19) | (b84 >> 13)) ^ ((b84 << 10) | (b84 >> 22))) + ((b84 & b81) ^ (b84 & b78) ^ (b81 & b78))))); token_word.read(b87, 0);
            bit<32> b88; token_word.write(0, (b77 + (((b86 << 26) | (b86 >> 6)) ^ ((b86 << 21) | (b86 >> 11)) ^ ((b86 << 7) | (b86 >> 25))) + ((b86 & b83) ^ ((~b86) & b80)) + 32w0x80deb1fe)); token_word.read(b88, 0);
            bit<32> b89; token_word.write(0, (b78 + b88)); token_word.read(b89, 0);
            bit<32> b90; token_word.write(0, (b88 + ((((b87 << 30) | (b87 >> 2)) ^ ((b87 << 19) | (b87 >> 13)) ^ ((b87 << 10) | (b87 >> 22))) + ((b87 & b84) ^ (b87 & b81) ^ (b84 & b81))))); token_word.read(b90, 0);
            bit<32> b91; token_word.write(0, (b80 + (((b89 << 26) | (b89 >> 6)) ^ ((b89 << 21) | (b89 >> 11)) ^ ((b89 << 7) | (b89 >> 25))) + ((b89 & b86) ^ ((~b89) & b83)) + 32w0x9bdc06a7)); token_word.read(b91, 0);
            bit<32> b92; token_word.write(0, (b81 + b91)); token_word.read(b92, 0);
            bit<32> b93; token_word.write(0, (b91 + ((((b90 << 30) | (b90 >> 2)) ^ ((b90 << 19) | (b90 >> 13)) ^ ((b90 << 10) | (b90 >> 22))) + ((b90 & b87) ^ (b90 & b84) ^ (b87 & b84))))); token_word.read(b93, 0);
            bit<32> b94; token_word.write(0, (b83 + (((b92 << 26) | (b92 >> 6)) ^ ((b92 << 21) | (b92 >> 11)) ^ ((b92 << 7) | (b92 >> 25))) + ((b92 & b89) ^ ((~b92) & b86)) + 32w0xc19bf1b4)); token_word.read(b94, 0);
            bit<32> b95; token_word.write(0, (b84 + b94)); token_word.read(b95, 0);
            bit<32> b96; token_word.write(0, (b94 + ((((b93 << 30) | (b93 >> 2)) ^ ((b93 << 19) | (b93 >> 13)) ^ ((b93 << 10) | (b93 >> 22))) + ((b93 & b90) ^ (b93 & b87) ^ (b90 & b87))))); token_word.read(b96, 0);
            bit<32> b97; token_word.write(0, (b86 + (((b95 << 26) | (b95 >> 6)) ^ ((b95 << 21) | (b95 >> 11)) ^ ((b95 << 7) | (b95 >> 25))) + ((b95 & b92) ^ ((~b95) & b89)) + b1 + 32w0xe49b69c1)); token_word.read(b97, 0);
            bit<32> b98; token_word.write(0, (b87 + b97)); token_word.read(b98, 0);
            bit<32> b99; token_word.write(0, (b97 + ((((b96 << 30) | (b96 >> 2)) ^ ((b96 << 19) | (b96 >> 13)) ^ ((b96 << 10) | (b96 >> 22))) + ((b96 & b93) ^ (b96 & b90) ^ (b93 & b90))))); token_word.read(b99, 0);
            bit<32> b100; token_word.write(0, (b89 + (((b98 << 26) | (b98 >> 6)) ^ ((b98 << 21) | (b98 >> 11)) ^ ((b98 << 7) | (b98 >> 25))) + ((b98 & b95) ^ ((~b98) & b92)) + b2 + 32w0xefbe4786)); token_word.read(b100, 0);
            bit<32> b101; token_word.write(0, (b90 + b100)); token_word.read(b101, 0);
            bit<32> b102; token_word.write(0, (b100 + ((((b99 << 30) | (b99 >> 2)) ^ ((b99 << 19) | (b99 >> 13)) ^ ((b99 << 10) | (b99 >> 22))) + ((b99 & b96) ^ (b99 & b93) ^ (b96 & b93))))); token_word.read(b102, 0);
            bit<32> b103; token_word.write(0, (b92 + (((b101 << 26) | (b101 >> 6)) ^ ((b101 << 21) | (b101 >> 11)) ^ ((b101 << 7) | (b101 >> 25))) + ((b101 & b98) ^ ((~b101) & b95)) + b3 + 32w0x0fc19dc6)); token_word.read(b103, 0);
            bit<32> b104; token_word.write(0, (b93 + b103)); token_word.read(b104, 0);
            bit<32> b105; token_word.write(0, (b103 + ((((b102 << 30) | (b102 >> 2)) ^ ((b102 << 19) | (b102 >> 13)) ^ ((b102 << 10) | (b102 >> 22))) + ((b102 & b99) ^ (b102 & b96) ^ (b99 & b96))))); token_word.read(b105, 0);
            bit<32> b106; token_word.write(0, (b95 + (((b104 << 26) | (b104 >> 6)) ^ ((b104 << 21) | (b104 >> 11)) ^ ((b104 << 7) | (b104 >> 25))) + ((b104 & b101) ^ ((~b104) & b98)) + b4 + 32w0x240ca1cc)); token_word.read(b106, 0);
            bit<32> b107; token_word.write(0, (b96 + b106)); token_word.read(b107, 0);
            bit<32> b108; token_word.write(0, (b106 + ((((b105 << 30) | (b105 >> 2)) ^ ((b105 << 19) | (b105 >> 13)) ^ ((b105 << 10) | (b105 >> 22))) + ((b105 & b102) ^ (b105 & b99) ^ (b102 & b99))))); token_word.read(b108, 0);
            bit<32> b109; token_word.write(0, (b98 + (((b107 << 26) | (b107 >> 6)) ^ ((b107 << 21) | (b107 >> 11)) ^ ((b107 << 7) | (b107 >> 25))) + ((b107 & b104) ^ ((~b107) & b101)) + b5 + 32w0x2de92c6f)); token_word.read(b109, 0);
            bit<32> b110; token_word.write(0, (b99 + b109)); token_word.read(b110, 0);
            bit<32> b111; token_word.write(0, (b109 + ((((b108 << 30) | (b108 >> 2)) ^ ((b108 << 19) | (b108 >> 13)) ^ ((b108 << 10) | (b108 >> 22))) + ((b108 & b105) ^ (b108 & b102) ^ (b105 & b102))))); token_word.read(b111, 0);
            bit<32> b112; token_word.write(0, (b101 + (((b110 << 26) | (b110 >> 6)) ^ ((b110 << 21) | (b110 >> 11)) ^ ((b110 << 7) | (b110 >> 25))) + ((b110 & b107) ^ ((~b110) & b104)) + b6 + 32w0x4a7484aa)); token_word.read(b112, 0);
            bit<32> b113; token_word.write(0, (b102 + b112)); token_word.read(b113, 0);
            bit<32> b114; token_word.write(0, (b112 + ((((b111 << 30) | (b111 >> 2)) ^ ((b111 << 19) | (b111 >> 13)) ^ ((b111 << 10) | (b111 >> 22))) + ((b111 & b108) ^ (b111 & b105) ^ (b108 & b105))))); token_word.read(b114, 0);
            bit<32> b115; token_word.write(0, (b104 + (((b113 << 26) | (b113 >> 6)) ^ ((b113 << 21) | (b113 >> 11)) ^ ((b113 << 7) | (b113 >> 25))) + ((b113 & b110) ^ ((~b113) & b107)) + b7 + 32w0x5cb0a9dc)); token_word.read(b115, 0);
            bit<32> b116; token_word.write(0, (b105 + b115)); token_word.read(b116, 0);
            bit<32> b117; token_word.write(0, (b115 + ((((b114 << 30) | (b114 >> 2)) ^ ((b114 << 19) | (b114 >> 13)) ^ ((b114 << 10) | (b114 >> 22))) + ((b114 & b111) ^ (b114 & b108) ^ (b111 & b108))))); token_word.read(b117, 0);
            bit<32> b118; token_word.write(0, (b107 + (((b116 << 26) | (b116 >> 6)) ^ ((b116 << 21) | (b116 >> 11)) ^ ((b116 << 7) | (b116 >> 25))) + ((b116 & b113) ^ ((~b116) & b110)) + b8 + 32w0x76f988da)); token_word.read(b118, 0);
            bit<32> b119; token_word.write(0, (b108 + b118)); token_word.read(b119, 0);
            bit<32> b120; token_word.write(0, (b118 + ((((b117 << 30) | (b117 >> 2)) ^ ((b117 << 19) | (b117 >> 13)) ^ ((b117 << 10) | (b117 >> 22))) + ((b117 & b114) ^ (b117 & b111) ^ (b114 & b111))))); token_word.read(b120, 0);
            bit<32> b121; token_word.write(0, (b110 + (((b119 << 26) | (b119 >> 6)) ^ ((b119 << 21) | (b119 >> 11)) ^ ((b119 << 7) | (b119 >> 25))) + ((b119 & b116) ^ ((~b119) & b113)) + b9 + 32w0x983e5152)); token_word.read(b121, 0);
            bit<32> b122; token_word.write(0, (b111 + b121)); token_word.read(b122, 0);
            bit<32> b123; token_word.write(0, (b121 + ((((b120 << 30) | (b120 >> 2)) ^ ((b120 << 19) | (b120 >> 13)) ^ ((b120 << 10) | (b120 >> 22))) + ((b120 & b117) ^ (b120 & b114) ^ (b117 & b114))))); token_word.read(b123, 0);
            bit<32> b124; token_word.write(0, (b113 + (((b122 << 26) | (b122 >> 6)) ^ ((b122 << 21) | (b122 >> 11)) ^ ((b122 << 7) | (b122 >> 25))) + ((b122 & b119) ^ ((~b122) & b116)) + b10 + 32w0xa831c66d)); token_word.read(b124, 0);
            bit<32> b125; token_word.write(0, (b114 + b124)); token_word.read(b125, 0);
            bit<32> b126; token_word.write(0, (b124 + ((((b123 << 30) | (b123 >> 2)) ^ ((b123 << 19) | (b123 >> 13)) ^ ((b123 << 10) | (b123 >> 22))) + ((b123 & b120) ^ (b123 & b117) ^ (b120 & b117))))); token_word.read(b126, 0);
            bit<32> b127; token_word.write(0, (b116 + (((b125 << 26) | (b125 >> 6)) ^ ((b125 << 21) | (b125 >> 11)) ^ ((b125 << 7) | (b125 >> 25))) + ((b125 & b122) ^ ((~b125) & b119)) + b11 + 32w0xb00327c8)); token_word.read(b127, 0);
            bit<32> b128; token_word.write(0, (b117 + b127)); token_word.read(b128, 0);
            bit<32> b129; token_word.write(0, (b127 + ((((b126 << 30) | (b126 >> 2)) ^ ((b126 << 19) | (b126 >> 13)) ^ ((b126 << 10) | (b126 >> 22))) + ((b126 & b123) ^ (b126 & b120) ^ (b123 & b120))))); token_word.read(b129, 0);
            bit<32> b130; token_word.write(0, (b119 + (((b128 << 26) | (b128 >> 6)) ^ ((b128 << 21) | (b128 >> 11)) ^ ((b128 << 7) | (b128 >> 25))) + ((b128 & b125) ^ ((~b128) & b122)) + b12 + 32w0xbf597fc7)); token_word.read(b130, 0);
            bit<32> b131; token_word.write(0, (b120 + b130)); token_word.read(b131, 0);
            bit<32> b132; token_word.write(0, (b130 + ((((b129 << 30) | (b129 >> 2)) ^ ((b129 << 19) | (b129 >> 13)) ^ ((b129 << 10) | (b129 >> 22))) + ((b129 & b126) ^ (b129 & b123) ^ (b126 & b123))))); token_word.read(b132, 0);
            bit<32> b133; token_word.write(0, (b122 + (((b131 << 26) | (b131 >> 6)) ^ ((b131 << 21) | (b131 >> 11)) ^ ((b131 << 7) | (b131 >> 25))) + ((b131 & b128) ^ ((~b131) & b125)) + b13 + 32w0xc6e00bf3)); token_word.read(b133, 0);
            bit<32> b134; token_word.write(0, (b123 + b133)); token_word.read(b134, 0);
            bit<32> b135; token_word.write(0, (b133 + ((((b132 << 30) | (b132 >> 2)) ^ ((b132 << 19) | (b132 >> 13)) ^ ((b132 << 10) | (b132 >> 22))) + ((b132 & b129) ^ (b132 & b126) ^ (b129 & b126))))); token_word.read(b135, 0);
            bit<32> b136; token_word.write(0, (b125 + (((b134 << 26) | (b134 >> 6)) ^ ((b134 << 21) | (b134 >> 11)) ^ ((b134 << 7) | (b134 >> 25))) + ((b134 & b131) ^ ((~b134) & b128)) + b14 + 32w0xd5a79147)); token_word.read(b136, 0);
            bit<32> b137; token_word.write(0, (b126 + b136)); token_word.read(b137, 0);
            bit<32> b138; token_word.write(0, (b136 + ((((b135 << 30) | (b135 >> 2)) ^ ((b135 << 19) | (b135 >> 13)) ^ ((b135 << 10) | (b135 >> 22))) + ((b135 & b132) ^ (b135 & b129) ^ (b132 & b129))))); token_word.read(b138, 0);
            bit<32> b139; token_word.write(0, (b128 + (((b137 << 26) | (b137 >> 6)) ^ ((b137 << 21) | (b137 >> 11)) ^ ((b137 << 7) | (b137 >> 25))) + ((b137 & b134) ^ ((~b137) & b131)) + b15 + 32w0x06ca6351)); token_word.read(b139, 0);
            bit<32> b140; token_word.write(0, (b129 + b139)); token_word.read(b140, 0);
            bit<32> b141; token_word.write(0, (b139 + ((((b138 << 30) | (b138 >> 2)) ^ ((b138 << 19) | (b138 >> 13)) ^ ((b138 << 10) | (b138 >> 22))) + ((b138 & b135) ^ (b138 & b132) ^ (b135 & b132))))); token_word.read(b141, 0);
            bit<32> b142; token_word.write(0, (b131 + (((b140 << 26) | (b140 >> 6)) ^ ((b140 << 21) | (b140 >> 11)) ^ ((b140 << 7) | (b140 >> 25))) + ((b140 & b137) ^ ((~b140) & b134)) + b16 + 32w0x14292967)); token_word.read(b142, 0);
            bit<32> b143; token_word.write(0, (b132 + b142)); token_word.read(b143, 0);
            bit<32> b144; token_word.write(0, (b142 + ((((b141 << 30) | (b141 >> 2)) ^ ((b141 << 19) | (b141 >> 13)) ^ ((b141 << 10) | (b141 >> 22))) + ((b141 & b138) ^ (b141 & b135) ^ (b138 & b135))))); token_word.read(b144, 0);
            bit<32> b145; token_word.write(0, (b134 + (((b143 << 26) | (b143 >> 6)) ^ ((b143 << 21) | (b143 >> 11)) ^ ((b143 << 7) | (b143 >> 25))) + ((b143 & b140) ^ ((~b143) & b137)) + b17 + 32w0x27b70a85)); token_word.read(b145, 0);
            bit<32> b146; token_word.write(0, (b135 + b145)); token_word.read(b146, 0);
            bit<32> b147; token_word.write(0, (b145 + ((((b144 << 30) | (b144 >> 2)) ^ ((b144 << 19) | (b144 >> 13)) ^ ((b144 << 10) | (b144 >> 22))) + ((b144 & b141) ^ (b144 & b138) ^ (b141 & b138))))); token_word.read(b147, 0);
            bit<32> b148; token_word.write(0, (b137 + (((b146 << 26) | (b146 >> 6)) ^ ((b146 << 21) | (b146 >> 11)) ^ ((b146 << 7) | (b146 >> 25))) + ((b146 & b143) ^ ((~b146) & b140)) + b18 + 32w0x2e1b2138)); token_word.read(b148, 0);
            bit<32> b149; token_word.write(0, (b138 + b148)); token_word.read(b149, 0);
            bit<32> b150; token_word.write(0, (b148 + ((((b147 << 30) | (b147 >> 2)) ^ ((b147 << 19) | (b147 >> 13)) ^ ((b147 << 10) | (b147 >> 22))) + ((b147 & b144) ^ (b147 & b141) ^ (b144 & b141))))); token_word.read(b150, 0);
            bit<32> b151; token_word.write(0, (b140 + (((b149 << 26) | (b149 >> 6)) ^ ((b149 << 21) | (b149 >> 11)) ^ ((b149 << 7) | (b149 >> 25))) + ((b149 & b146) ^ ((~b149) & b143)) + b19 + 32w0x4d2c6dfc)); token_word.read(b151, 0);
            bit<32> b152; token_word.write(0, (b141 + b151)); token_word.read(b152, 0);
            bit<32> b153; token_word.write(0, (b151 + ((((b150 << 30) | (b150 >> 2)) ^ ((b150 << 19) | (b150 >> 13)) ^ ((b150 << 10) | (b150 >> 22))) + ((b150 & b147) ^ (b150 & b144) ^ (b147 & b144))))); token_word.read(b153, 0);
            bit<32> b154; token_word.write(0, (b143 + (((b152 << 26) | (b152 >> 6)) ^ ((b152 << 21) | (b152 >> 11)) ^ ((b152 << 7) | (b152 >> 25))) + ((b152 & b149) ^ ((~b152) & b146)) + b20 + 32w0x53380d13)); token_word.read(b154, 0);
            bit<32> b155; token_word.write(0, (b144 + b154)); token_word.read(b155, 0);
            bit<32> b156; token_word.write(0, (b154 + ((((b153 << 30) | (b153 >> 2)) ^ ((b153 << 19) | (b153 >> 13)) ^ ((b153 << 10) | (b153 >> 22))) + ((b153 & b150) ^ (b153 & b147) ^ (b150 & b147))))); token_word.read(b156, 0);
            bit<32> b157; token_word.write(0, (b146 + (((b155 << 26) | (b155 >> 6)) ^ ((b155 << 21) | (b155 >> 11)) ^ ((b155 << 7) | (b155 >> 25))) + ((b155 & b152) ^ ((~b155) & b149)) + b21 + 32w0x650a7354)); token_word.read(b157, 0);
            bit<32> b158; token_word.write(0, (b147 + b157)); token_word.read(b158, 0);
            bit<32> b159; token_word.write(0, (b157 + ((((b156 << 30) | (b156 >> 2)) ^ ((b156 << 19) | (b156 >> 13)) ^ ((b156 << 10) | (b156 >> 22))) + ((b156 & b153) ^ (b156 & b150) ^ (b153 & b150))))); token_word.read(b159, 0);
            bit<32> b160; token_word.write(0, (b149 + (((b158 << 26) | (b158 >> 6)) ^ ((b158 << 21) | (b158 >> 11)) ^ ((b158 << 7) | (b158 >> 25))) + ((b158 & b155) ^ ((~b158) & b152)) + b22 + 32w0x766a0abb)); token_word.read(b160, 0);
            bit<32> b161; token_word.write(0, (b150 + b160)); token_word.read(b161, 0);
            bit<32> b162; token_word.write(0, (b160 + ((((b159 << 30) | (b159 >> 2)) ^ ((b159 << 19) | (b159 >> 13)) ^ ((b159 << 10) | (b159 >> 22))) + ((b159 & b156) ^ (b159 & b153) ^ (b156 & b153))))); token_word.read(b162, 0);
            bit<32> b163; token_word.write(0, (b152 + (((b161 << 26) | (b161 >> 6)) ^ ((b161 << 21) | (b161 >> 11)) ^ ((b161 << 7) | (b161 >> 25))) + ((b161 & b158) ^ ((~b161) & b155)) + b23 + 32w0x81c2c92e)); token_word.read(b163, 0);
            bit<32> b164; token_word.write(0, (b153 + b163)); token_word.read(b164, 0);
            bit<32> b165; token_word.write(0, (b163 + ((((b162 << 30) | (b162 >> 2)) ^ ((b162 << 19) | (b162 >> 13)) ^ ((b162 << 10) | (b162 >> 22))) + ((b162 & b159) ^ (b162 & b156) ^ (b159 & b156))))); token_word.read(b165, 0);
            bit<32> b166; token_word.write(0, (b155 + (((b164 << 26) | (b164 >> 6)) ^ ((b164 << 21) | (b164 >> 11)) ^ ((b164 << 7) | (b164 >> 25))) + ((b164 & b161) ^ ((~b164) & b158)) + b24 + 32w0x92722c85)); token_word.read(b166, 0);
            bit<32> b167; token_word.write(0, (b156 + b166)); token_word.read(b167, 0);
            bit<32> b168; token_word.write(0, (b166 + ((((b165 << 30) | (b165 >> 2)) ^ ((b165 << 19) | (b165 >> 13)) ^ ((b165 << 10) | (b165 >> 22))) + ((b165 & b162) ^ (b165 & b159) ^ (b162 & b159))))); token_word.read(b168, 0);
            bit<32> b169; token_word.write(0, (b158 + (((b167 << 26) | (b167 >> 6)) ^ ((b167 << 21) | (b167 >> 11)) ^ ((b167 << 7) | (b167 >> 25))) + ((b167 & b164) ^ ((~b167) & b161)) + b25 + 32w0xa2bfe8a1)); token_word.read(b169, 0);
            bit<32> b170; token_word.write(0, (b159 + b169)); token_word.read(b170, 0);
            bit<32> b171; token_word.write(0, (b169 + ((((b168 << 30) | (b168 >> 2)) ^ ((b168 << 19) | (b168 >> 13)) ^ ((b168 << 10) | (b168 >> 22))) + ((b168 & b165) ^ (b168 & b162) ^ (b165 & b162))))); token_word.read(b171, 0);
            bit<32> b172; token_word.write(0, (b161 + (((b170 << 26) | (b170 >> 6)) ^ ((b170 << 21) | (b170 >> 11)) ^ ((b170 << 7) | (b170 >> 25))) + ((b170 & b167) ^ ((~b170) & b164)) + b26 + 32w0xa81a664b)); token_word.read(b172, 0);
            bit<32> b173; token_word.write(0, (b162 + b172)); token_word.read(b173, 0);
            bit<32> b174; token_word.write(0, (b172 + ((((b171 << 30) | (b171 >> 2)) ^ ((b171 << 19) | (b171 >> 13)) ^ ((b171 << 10) | (b171 >> 22))) + ((b171 & b168) ^ (b171 & b165) ^ (b168 & b165))))); token_word.read(b174, 0);
            bit<32> b175; token_word.write(0, (b164 + (((b173 << 26) | (b173 >> 6)) ^ ((b173 << 21) | (b173 >> 11)) ^ ((b173 << 7) | (b173 >> 25))) + ((b173 & b170) ^ ((~b173) & b167)) + b27 + 32w0xc24b8b70)); token_word.read(b175, 0);
            bit<32> b176; token_word.write(0, (b165 + b175)); token_word.read(b176, 0);
            bit<32> b177; token_word.write(0, (b175 + ((((b174 << 30) | (b174 >> 2)) ^ ((b174 << 19) | (b174 >> 13)) ^ ((b174 << 10) | (b174 >> 22))) + ((b174 & b171) ^ (b174 & b168) ^ (b171 & b168))))); token_word.read(b177, 0);
            bit<32> b178; token_word.write(0, (b167 + (((b176 << 26) | (b176 >> 6)) ^ ((b176 << 21) | (b176 >> 11)) ^ ((b176 << 7) | (b176 >> 25))) + ((b176 & b173) ^ ((~b176) & b170)) + b28 + 32w0xc76c51a3)); token_word.read(b178, 0);
            bit<32> b179; token_word.write(0, (b168 + b178)); token_word.read(b179, 0);
            bit<32> b180; token_word.write(0, (b178 + ((((b177 << 30) | (b177 >> 2)) ^ ((b177 << 19) | (b177 >> 13)) ^ ((b177 << 10) | (b177 >> 22))) + ((b177 & b174) ^ (b177 & b171) ^ (b174 & b171))))); token_word.read(b180, 0);
            bit<32> b181; token_word.write(0, (b170 + (((b179 << 26) | (b179 >> 6)) ^ ((b179 << 21) | (b179 >> 11)) ^ ((b179 << 7) | (b179 >> 25))) + ((b179 & b176) ^ ((~b179) & b173)) + b29 + 32w0xd192e819)); token_word.read(b181, 0);
            bit<32> b182; token_word.write(0, (b171 + b181)); token_word.read(b182, 0);
            bit<32> b183; token_word.write(0, (b181 + ((((b180 << 30) | (b180 >> 2)) ^ ((b180 << 19) | (b180 >> 13)) ^ ((b180 << 10) | (b180 >> 22))) + ((b180 & b177) ^ (b180 & b174) ^ (b177 & b174))))); token_word.read(b183, 0);
            bit<32> b184; token_word.write(0, (b173 + (((b182 << 26) | (b182 >> 6)) ^ ((b182 << 21) | (b182 >> 11)) ^ ((b182 << 7) | (b182 >> 25))) + ((b182 & b179) ^ ((~b182) & b176)) + b30 + 32w0xd6990624)); token_word.read(b184, 0);
            bit<32> b185; token_word.write(0, (b174 + b184)); token_word.read(b185, 0);
            bit<32> b186; token_word.write(0, (b184 + ((((b183 << 30) | (b183 >> 2)) ^ ((b183 << 19) | (b183 >> 13)) ^ ((b183 << 10) | (b183 >> 22))) + ((b183 & b180) ^ (b183 & b177) ^ (b180 & b177))))); token_word.read(b186, 0);
            bit<32> b187; token_word.write(0, (b176 + (((b185 << 26) | (b185 >> 6)) ^ ((b185 << 21) | (b185 >> 11)) ^ ((b185 << 7) | (b185 >> 25))) + ((b185 & b182) ^ ((~b185) & b179)) + b31 + 32w0xf40e3585)); token_word.read(b187, 0);
            bit<32> b188; token_word.write(0, (b177 + b187)); token_word.read(b188, 0);
            bit<32> b189; token_word.write(0, (b187 + ((((b186 << 30) | (b186 >> 2)) ^ ((b186 << 19) | (b186 >> 13)) ^ ((b186 << 10) | (b186 >> 22))) + ((b186 & b183) ^ (b186 & b180) ^ (b183 & b180))))); token_word.read(b189, 0);
            bit<32> b190; token_word.write(0, (b179 + (((b188 << 26) | (b188 >> 6)) ^ ((b188 << 21) | (b188 >> 11)) ^ ((b188 << 7) | (b188 >> 25))) + ((b188 & b185) ^ ((~b188) & b182)) + b32 + 32w0x106aa070)); token_word.read(b190, 0);
            bit<32> b191; token_word.write(0, (b180 + b190)); token_word.read(b191, 0);
            bit<32> b192; token_word.write(0, (b190 + ((((b189 << 30) | (b189 >> 2)) ^ ((b189 << 19) | (b189 >> 13)) ^ ((b189 << 10) | (b189 >> 22))) + ((b189 & b186) ^ (b189 & b183) ^ (b186 & b183))))); token_word.read(b192, 0);
            bit<32> b193; token_word.write(0, (b182 + (((b191 << 26) | (b191 >> 6)) ^ ((b191 << 21) | (b191 >> 11)) ^ ((b191 << 7) | (b191 >> 25))) + ((b191 & b188) ^ ((~b191) & b185)) + b33 + 32w0x19a4c116)); token_word.read(b193, 0);
            bit<32> b194; token_word.write(0, (b183 + b193)); token_word.read(b194, 0);
            bit<32> b195; token_word.write(0, (b193 + ((((b192 << 30) | (b192 >> 2)) ^ ((b192 << 19) | (b192 >> 13)) ^ ((b192 << 10) | (b192 >> 22))) + ((b192 & b189) ^ (b192 & b186) ^ (b189 & b186))))); token_word.read(b195, 0);
            bit<32> b196; token_word.write(0, (b185 + (((b194 << 26) | (b194 >> 6)) ^ ((b194 << 21) | (b194 >> 11)) ^ ((b194 << 7) | (b194 >> 25))) + ((b194 & b191) ^ ((~b194) & b188)) + b34 + 32w0x1e376c08)); token_word.read(b196, 0);
            bit<32> b197; token_word.write(0, (b186 + b196)); token_word.read(b197, 0);
            bit<32> b198; token_word.write(0, (b196 + ((((b195 << 30) | (b195 >> 2)) ^ ((b195 << 19) | (b195 >> 13)) ^ ((b195 << 10) | (b195 >> 22))) + ((b195 & b192) ^ (b195 & b189) ^ (b192 & b189))))); token_word.read(b198, 0);
            bit<32> b199; token_word.write(0, (b188 + (((b197 << 26) | (b197 >> 6)) ^ ((b197 << 21) | (b197 >> 11)) ^ ((b197 << 7) | (b197 >> 25))) + ((b197 & b194) ^ ((~b197) & b191)) + b35 + 32w0x2748774c)); token_word.read(b199, 0);
            bit<32> b200; token_word.write(0, (b189 + b199)); token_word.read(b200, 0);
            bit<32> b201; token_word.write(0, (b199 + ((((b198 << 30) | (b198 >> 2)) ^ ((b198 << 19) | (b198 >> 13)) ^ ((b198 << 10) | (b198 >> 22))) + ((b198 & b195) ^ (b198 & b192) ^ (b195 & b192))))); token_word.read(b201, 0);
            bit<32> b202; token_word.write(0, (b191 + (((b200 << 26) | (b200 >> 6)) ^ ((b200 << 21) | (b200 >> 11)) ^ ((b200 << 7) | (b200 >> 25))) + ((b200 & b197) ^ ((~b200) & b194)) + b36 + 32w0x34b0bcb5)); token_word.read(b202, 0);
            bit<32> b203; token_word.write(0, (b192 + b202)); token_word.read(b203, 0);
            bit<32> b204; token_word.write(0, (b202 + ((((b201 << 30) | (b201 >> 2)) ^ ((b201 << 19) | (b201 >> 13)) ^ ((b201 << 10) | (b201 >> 22))) + ((b201 & b198) ^ (b201 & b195) ^ (b198 & b195))))); token_word.read(b204, 0);
            bit<32> b205; token_word.write(0, (b194 + (((b203 << 26) | (b203 >> 6)) ^ ((b203 << 21) | (b203 >> 11)) ^ ((b203 << 7) | (b203 >> 25))) + ((b203 & b200) ^ ((~b203) & b197)) + b37 + 32w0x391c0cb3)); token_word.read(b205, 0);
            bit<32> b206; token_word.write(0, (b195 + b205)); token_word.read(b206, 0);
            bit<32> b207; token_word.write(0, (b205 + ((((b204 << 30) | (b204 >> 2)) ^ ((b204 << 19) | (b204 >> 13)) ^ ((b204 << 10) | (b204 >> 22))) + ((b204 & b201) ^ (b204 & b198) ^ (b201 & b198))))); token_word.read(b207, 0);
            bit<32> b208; token_word.write(0, (b197 + (((b206 << 26) | (b206 >> 6)) ^ ((b206 << 21) | (b206 >> 11)) ^ ((b206 << 7) | (b206 >> 25))) + ((b206 & b203) ^ ((~b206) & b200)) + b38 + 32w0x4ed8aa4a)); token_word.read(b208, 0);
            bit<32> b209; token_word.write(0, (b198 + b208)); token_word.read(b209, 0);
            bit<32> b210; token_word.write(0, (b208 + ((((b207 << 30) | (b207 >> 2)) ^ ((b207 << 19) | (b207 >> 13)) ^ ((b207 << 10) | (b207 >> 22))) + ((b207 & b204) ^ (b207 & b201) ^ (b204 & b201))))); token_word.read(b210, 0);
            bit<32> b211; token_word.write(0, (b200 + (((b209 << 26) | (b209 >> 6)) ^ ((b209 << 21) | (b209 >> 11)) ^ ((b209 << 7) | (b209 >> 25))) + ((b209 & b206) ^ ((~b209) & b203)) + b39 + 32w0x5b9cca4f)); token_word.read(b211, 0);
            bit<32> b212; token_word.write(0, (b201 + b211)); token_word.read(b212, 0);
            bit<32> b213; token_word.write(0, (b211 + ((((b210 << 30) | (b210 >> 2)) ^ ((b210 << 19) | (b210 >> 13)) ^ ((b210 << 10) | (b210 >> 22))) + ((b210 & b207) ^ (b210 & b204) ^ (b207 & b204))))); token_word.read(b213, 0);
            bit<32> b214; token_word.write(0, (b203 + (((b212 << 26) | (b212 >> 6)) ^ ((b212 << 21) | (b212 >> 11)) ^ ((b212 << 7) | (b212 >> 25))) + ((b212 & b209) ^ ((~b212) & b206)) + b40 + 32w0x682e6ff3)); token_word.read(b214, 0);
            bit<32> b215; token_word.write(0, (b204 + b214)); token_word.read(b215, 0);
            bit<32> b216; token_word.write(0, (b214 + ((((b213 << 30) | (b213 >> 2)) ^ ((b213 << 19) | (b213 >> 13)) ^ ((b213 << 10) | (b213 >> 22))) + ((b213 & b210) ^ (b213 & b207) ^ (b210 & b207))))); token_word.read(b216, 0);
            bit<32> b217; token_word.write(0, (b206 + (((b215 << 26) | (b215 >> 6)) ^ ((b215 << 21) | (b215 >> 11)) ^ ((b215 << 7) | (b215 >> 25))) + ((b215 & b212) ^ ((~b215) & b209)) + b41 + 32w0x748f82ee)); token_word.read(b217, 0);
            bit<32> b218; token_word.write(0, (b207 + b217)); token_word.read(b218, 0);
            bit<32> b219; token_word.write(0, (b217 + ((((b216 << 30) | (b216 >> 2)) ^ ((b216 << 19) | (b216 >> 13)) ^ ((b216 << 10) | (b216 >> 22))) + ((b216 & b213) ^ (b216 & b210) ^ (b213 & b210))))); token_word.read(b219, 0);
            bit<32> b220; token_word.write(0, (b209 + (((b218 << 26) | (b218 >> 6)) ^ ((b218 << 21) | (b218 >> 11)) ^ ((b218 << 7) | (b218 >> 25))) + ((b218 & b215) ^ ((~b218) & b212)) + b42 + 32w0x78a5636f)); token_word.read(b220, 0);
            bit<32> b221; token_word.write(0, (b210 + b220)); token_word.read(b221, 0);
            bit<32> b222; token_word.write(0, (b220 + ((((b219 << 30) | (b219 >> 2)) ^ ((b219 << 19) | (b219 >> 13)) ^ ((b219 << 10) | (b219 >> 22))) + ((b219 & b216) ^ (b219 & b213) ^ (b216 & b213))))); token_word.read(b222, 0);
            bit<32> b223; token_word.write(0, (b212 + (((b221 << 26) | (b221 >> 6)) ^ ((b221 << 21) | (b221 >> 11)) ^ ((b221 << 7) | (b221 >> 25))) + ((b221 & b218) ^ ((~b221) & b215)) + b43 + 32w0x84c87814)); token_word.read(b223, 0);
            bit<32> b224; token_word.write(0, (b213 + b223)); token_word.read(b224, 0);
            bit<32> b225; token_word.write(0, (b223 + ((((b222 << 30) | (b222 >> 2)) ^ ((b222 << 19) | (b222 >> 13)) ^ ((b222 << 10) | (b222 >> 22))) + ((b222 & b219) ^ (b222 & b216) ^ (b219 & b216))))); token_word.read(b225, 0);
            bit<32> b226; token_word.write(0, (b215 + (((b224 << 26) | (b224 >> 6)) ^ ((b224 << 21) | (b224 >> 11)) ^ ((b224 << 7) | (b224 >> 25))) + ((b224 & b221) ^ ((~b224) & b218)) + b44 + 32w0x8cc70208)); token_word.read(b226, 0);
            bit<32> b227; token_word.write(0, (b216 + b226)); token_word.read(b227, 0);
            bit<32> b228; token_word.write(0, (b226 + ((((b225 << 30) | (b225 >> 2)) ^ ((b225 << 19) | (b225 >> 13)) ^ ((b225 << 10) | (b225 >> 22))) + ((b225 & b222) ^ (b225 & b219) ^ (b222 & b219))))); token_word.read(b228, 0);
            bit<32> b229; token_word.write(0, (b218 + (((b227 << 26) | (b227 >> 6)) ^ ((b227 << 21) | (b227 >> 11)) ^ ((b227 << 7) | (b227 >> 25))) + ((b227 & b224) ^ ((~b227) & b221)) + b45 + 32w0x90befffa)); token_word.read(b229, 0);
            bit<32> b230; token_word.write(0, (b219 + b229)); token_word.read(b230, 0);
            bit<32> b231; token_word.write(0, (b229 + ((((b228 << 30) | (b228 >> 2)) ^ ((b228 << 19) | (b228 >> 13)) ^ ((b228 << 10) | (b228 >> 22))) + ((b228 & b225) ^ (b228 & b222) ^ (b225 & b222))))); token_word.read(b231, 0);
            bit<32> b232; token_word.write(0, (b221 + (((b230 << 26) | (b230 >> 6)) ^ ((b230 << 21) | (b230 >> 11)) ^ ((b230 << 7) | (b230 >> 25))) + ((b230 & b227) ^ ((~b230) & b224)) + b46 + 32w0xa4506ceb)); token_word.read(b232, 0);
            bit<32> b233; token_word.write(0, (b222 + b232)); token_word.read(b233, 0);
            bit<32> b234; token_word.write(0, (b232 + ((((b231 << 30) | (b231 >> 2)) ^ ((b231 << 19) | (b231 >> 13)) ^ ((b231 << 10) | (b231 >> 22))) + ((b231 & b228) ^ (b231 & b225) ^ (b228 & b225))))); token_word.read(b234, 0);
            bit<32> b235; token_word.write(0, (b224 + (((b233 << 26) | (b233 >> 6)) ^ ((b233 << 21) | (b233 >> 11)) ^ ((b233 << 7) | (b233 >> 25))) + ((b233 & b230) ^ ((~b233) & b227)) + b47 + 32w0xbef9a3f7)); token_word.read(b235, 0);
            bit<32> b236; token_word.write(0, (b225 + b235)); token_word.read(b236, 0);
            bit<32> b237; token_word.write(0, (b235 + ((((b234 << 30) | (b234 >> 2)) ^ ((b234 << 19) | (b234 >> 13)) ^ ((b234 << 10) | (b234 >> 22))) + ((b234 & b231) ^ (b234 & b228) ^ (b231 & b228))))); token_word.read(b237, 0);
            bit<32> b238; token_word.write(0, (b227 + (((b236 << 26) | (b236 >> 6)) ^ ((b236 << 21) | (b236 >> 11)) ^ ((b236 << 7) | (b236 >> 25))) + ((b236 & b233) ^ ((~b236) & b230)) + b48 + 32w0xc67178f2)); token_word.read(b238, 0);
            bit<32> b239; token_word.write(0, (b228 + b238)); token_word.read(b239, 0);
            bit<32> b240; token_word.write(0, (b238 + ((((b237 << 30) | (b237 >> 2)) ^ ((b237 << 19) | (b237 >> 13)) ^ ((b237 << 10) | (b237 >> 22))) + ((b237 & b234) ^ (b237 & b231) ^ (b234 & b231))))); token_word.read(b240, 0);
            token = (b240 + 32w0x6a09e667);
        } else {
            bit<32> a1; token_word.write(0, (hi ^ 32w0x80000000)); token_word.read(a1, 0);
            bit<32> a2; token_word.write(0, ((a1 << 1) | (a1 >> 31))); token_word.read(a2, 0);
            bit<32> a3; token_word.write(0, lo); token_word.read(a3, 0);
            bit<32> a4; token_word.write(0, ((a3 << 1) | (a3 >> 31))); token_word.read(a4, 0);
            bit<32> a5; token_word.write(0, a2); token_word.read(a5, 0);
            bit<32> a6; token_word.write(0, ((a5 << 1) | (a5 >> 31))); token_word.read(a6, 0);
            bit<32> a7; token_word.write(0, a4); token_word.read(a7, 0);
            bit<32> a8; token_word.write(0, ((a7 << 1) | (a7 >> 31))); token_word.read(a8, 0);
            bit<32> a9; token_word.write(0, a6); token_word.read(a9, 0);
            bit<32> a10; token_word.write(0, ((a9 << 1) | (a9 >> 31))); token_word.read(a10, 0);
            bit<32> a11; token_word.write(0, (a8 ^ 32w0x00000040)); token_word.read(a11, 0);
            bit<32> a12; token_word.write(0, ((a11 << 1) | (a11 >> 31))); token_word.read(a12, 0);
            bit<32> a13; token_word.write(0, (a2 ^ 32w0x00000102)); token_word.read(a13, 0);
            bit<32> a14; token_word.write(0, ((a13 << 1) | (a13 >> 31))); token_word.read(a14, 0);
            bit<32> a15; token_word.write(0, (a10 ^ a4)); token_word.read(a15, 0);
            bit<32> a16; token_word.write(0, ((a15 << 1) | (a15 >> 31))); token_word.read(a16, 0);
            bit<32> a17; token_word.write(0, (a12 ^ 32w0x00000081)); token_word.read(a17, 0);
            bit<32> a18; token_word.write(0, ((a17 << 1) | (a17 >> 31))); token_word.read(a18, 0);
            bit<32> a19; token_word.write(0, (a14 ^ a6)); token_word.read(a19, 0);
            bit<32> a20; token_word.write(0, ((a19 << 1) | (a19 >> 31))); token_word.read(a20, 0);
            bit<32> a21; token_word.write(0, (a16 ^ a8)); token_word.read(a21, 0);
            bit<32> a22; token_word.write(0, ((a21 << 1) | (a21 >> 31))); token_word.read(a22, 0);
            bit<32> a23; token_word.write(0, (a18 ^ 32w0x00000142)); token_word.read(a23, 0);
            bit<32> a24; token_word.write(0, ((a23 << 1) | (a23 >> 31))); token_word.read(a24, 0);
            bit<32> a25; token_word.write(0, (a20 ^ a10 ^ a2)); token_word.read(a25, 0);
            bit<32> a26; token_word.write(0, ((a25 << 1) | (a25 >> 31))); token_word.read(a26, 0);
            bit<32> a27; token_word.write(0, (a22 ^ a12 ^ a4 ^ 32w0x00000040)); token_word.read(a27, 0);
            bit<32> a28; token_word.write(0, ((a27 << 1) | (a27 >> 31))); token_word.read(a28, 0);
            bit<32> a29; token_word.write(0, (a24 ^ a14 ^ a2 ^ 32w0x00000081)); token_word.read(a29, 0);
            bit<32> a30; token_word.write(0, ((a29 << 1) | (a29 >> 31))); token_word.read(a30, 0);
            bit<32> a31; token_word.write(0, (a26 ^ a16 ^ a6 ^ a4)); token_word.read(a31, 0);
            bit<32> a32; token_word.write(0, ((a31 << 1) | (a31 >> 31))); token_word.read(a32, 0);
            bit<32> a33; token_word.write(0, (a28 ^ a18 ^ a8 ^ 32w0x00000081)); token_word.read(a33, 0);
            bit<32> a34; token_word.write(0, ((a33 << 1) | (a33 >> 31))); token_word.read(a34, 0);
            bit<32> a35; token_word.write(0, (a30 ^ a20 ^ a6 ^ 32w0x00000102)); token_word.read(a35, 0);
            bit<32> a36; token_word.write(0, ((a35 << 1) | (a35 >> 31))); token_word.read(a36, 0);
            bit<32> a37; token_word.write(0, (a32 ^ a22 ^ a10 ^ a8)); token_word.read(a37, 0);
            bit<32> a38; token_word.write(0, ((a37 << 1) | (a37 >> 31))); token_word.read(a38, 0);
            bit<32> a39; token_word.write(0, (a34 ^ a24 ^ a12 ^ 32w0x00000102)); token_word.read(a39, 0);
            bit<32> a40; token_word.write(0, ((a39 << 1) | (a39 >> 31))); token_word.read(a40, 0);
            bit<32> a41; token_word.write(0, (a36 ^ a26 ^ a14 ^ a10)); token_word.read(a41, 0);
            bit<32> a42; token_word.write(0, ((a41 << 1) | (a41 >> 31))); token_word.read(a42, 0);
            bit<32> a43; token_word.write(0, (a38 ^ a28 ^ a16 ^ a12)); token_word.read(a43, 0);
            bit<32> a44; token_word.write(0, ((a43 << 1) | (a43 >> 31))); token_word.read(a44, 0);
            bit<32> a45; token_word.write(0, (a40 ^ a30 ^ a18 ^ a14)); token_word.read(a45, 0);
            bit<32> a46; token_word.write(0, ((a45 << 1) | (a45 >> 31))); token_word.read(a46, 0);
            bit<32> a47; token_word.write(0, (a42 ^ a32 ^ a20 ^ a16)); token_word.read(a47, 0);
            bit<32> a48; token_word.write(0, ((a47 << 1) | (a47 >> 31))); token_word.read(a48, 0);
            bit<32> a49; token_word.write(0, (a44 ^ a34 ^ a22 ^ a18)); token_word.read(a49, 0);
            bit<32> a50; token_word.write(0, ((a49 << 1) | (a49 >> 31))); token_word.read(a50, 0);
            bit<32> a51; token_word.write(0, (a46 ^ a36 ^ a24 ^ a20)); token_word.read(a51, 0);
            bit<32> a52; token_word.write(0, ((a51 << 1) | (a51 >> 31))); token_word.read(a52, 0);
            bit<32> a53; token_word.write(0, (a48 ^ a38 ^ a26 ^ a22)); token_word.read(a53, 0);
            bit<32> a54; token_word.write(0, ((a53 << 1) | (a53 >> 31))); token_word.read(a54, 0);
            bit<32> a55; token_word.write(0, (a50 ^ a40 ^ a28 ^ a24)); token_word.read(a55, 0);
            bit<32> a56; token_word.write(0, ((a55 << 1) | (a55 >> 31))); token_word.read(a56, 0);
            bit<32> a57; token_word.write(0, (a52 ^ a42 ^ a30 ^ a26)); token_word.read(a57, 0);
            bit<32> a58; token_word.write(0, ((a57 << 1) | (a57 >> 31))); token_word.read(a58, 0);
            bit<32> a59; token_word.write(0, (a54 ^ a44 ^ a32 ^ a28)); token_word.read(a59, 0);
            bit<32> a60; token_word.write(0, ((a59 << 1) | (a59 >> 31))); token_word.read(a60, 0);
            bit<32> a61; token_word.write(0, (a56 ^ a46 ^ a34 ^ a30)); token_word.read(a61, 0);
            bit<32> a62; token_word.write(0, ((a61 << 1) | (a61 >> 31))); token_word.read(a62, 0);
            bit<32> a63; token_word.write(0, (a58 ^ a48 ^ a36 ^ a32)); token_word.read(a63, 0);
            bit<32> a64; token_word.write(0, ((a63 << 1) | (a63 >> 31))); token_word.read(a64, 0);
            bit<32> a65; token_word.write(0, (a60 ^ a50 ^ a38 ^ a34)); token_word.read(a65, 0);
            bit<32> a66; token_word.write(0, ((a65 << 1) | (a65 >> 31))); token_word.read(a66, 0);
            bit<32> a67; token_word.write(0, (a62 ^ a52 ^ a40 ^ a36)); token_word.read(a67, 0);
            bit<32> a68; token_word.write(0, ((a67 << 1) | (a67 >> 31))); token_word.read(a68, 0);
            bit<32> a69; token_word.write(0, (a64 ^ a54 ^ a42 ^ a38)); token_word.read(a69, 0);
            bit<32> a70; token_word.write(0, ((a69 << 1) | (a69 >> 31))); token_word.read(a70, 0);
            bit<32> a71; token_word.write(0, (a66 ^ a56 ^ a44 ^ a40)); token_word.read(a71, 0);
            bit<32> a72; token_word.write(0, ((a71 << 1) | (a71 >> 31))); token_word.read(a72, 0);
            bit<32> a73; token_word.write(0, (a68 ^ a58 ^ a46 ^ a42)); token_word.read(a73, 0);
            bit<32> a74; token_word.write(0, ((a73 << 1) | (a73 >> 31))); token_word.read(a74, 0);
            bit<32> a75; token_word.write(0, (a70 ^ a60 ^ a48 ^ a44)); token_word.read(a75, 0);
            bit<32> a76; token_word.write(0, ((a75 << 1) | (a75 >> 31))); token_word.read(a76, 0);
            bit<32> a77; token_word.write(0, (a72 ^ a62 ^ a50 ^ a46)); token_word.read(a77, 0);
            bit<32> a78; token_word.write(0, ((a77 << 1) | (a77 >> 31))); token_word.read(a78, 0);
            bit<32> a79; token_word.write(0, (a74 ^ a64 ^ a52 ^ a48)); token_word.read(a79, 0);
            bit<32> a80; token_word.write(0, ((a79 << 1) | (a79 >> 31))); token_word.read(a80, 0);
            bit<32> a81; token_word.write(0, (a76 ^ a66 ^ a54 ^ a50)); token_word.read(a81, 0);
            bit<32> a82; token_word.write(0, ((a81 << 1) | (a81 >> 31))); token_word.read(a82, 0);
            bit<32> a83; token_word.write(0, (a78 ^ a68 ^ a56 ^ a52)); token_word.read(a83, 0);
            bit<32> a84; token_word.write(0, ((a83 << 1) | (a83 >> 31))); token_word.read(a84, 0);
            bit<32> a85; token_word.write(0, (a80 ^ a70 ^ a58 ^ a54)); token_word.read(a85, 0);
            bit<32> a86; token_word.write(0, ((a85 << 1) | (a85 >> 31))); token_word.read(a86, 0);
            bit<32> a87; token_word.write(0, (a82 ^ a72 ^ a60 ^ a56)); token_word.read(a87, 0);
            bit<32> a88; token_word.write(0, ((a87 << 1) | (a87 >> 31))); token_word.read(a88, 0);
            bit<32> a89; token_word.write(0, (a84 ^ a74 ^ a62 ^ a58)); token_word.read(a89, 0);
            bit<32> a90; token_word.write(0, ((a89 << 1) | (a89 >> 31))); token_word.read(a90, 0);
            bit<32> a91; token_word.write(0, (a86 ^ a76 ^ a64 ^ a60)); token_word.read(a91, 0);
            bit<32> a92; token_word.write(0, ((a91 << 1) | (a91 >> 31))); token_word.read(a92, 0);
            bit<32> a93; token_word.write(0, (a88 ^ a78 ^ a66 ^ a62)); token_word.read(a93, 0);
            bit<32> a94; token_word.write(0, ((a93 << 1) | (a93 >> 31))); token_word.read(a94, 0);
            bit<32> a95; token_word.write(0, (a90 ^ a80 ^ a68 ^ a64)); token_word.read(a95, 0);
            bit<32> a96; token_word.write(0, ((a95 << 1) | (a95 >> 31))); token_word.read(a96, 0);
            bit<32> a97; token_word.write(0, (a92 ^ a82 ^ a70 ^ a66)); token_word.read(a97, 0);
            bit<32> a98; token_word.write(0, ((a97 << 1) | (a97 >> 31))); token_word.read(a98, 0);
            bit<32> a99; token_word.write(0, (a94 ^ a84 ^ a72 ^ a68)); token_word.read(a99, 0);
            bit<32> a100; token_word.write(0, ((a99 << 1) | (a99 >> 31))); token_word.read(a100, 0);
            bit<32> a101; token_word.write(0, (a96 ^ a86 ^ a74 ^ a70)); token_word.read(a101, 0);
            bit<32> a102; token_word.write(0, ((a101 << 1) | (a101 >> 31))); token_word.read(a102, 0);
            bit<32> a103; token_word.write(0, (a98 ^ a88 ^ a76 ^ a72)); token_word.read(a103, 0);
            bit<32> a104; token_word.write(0, ((a103 << 1) | (a103 >> 31))); token_word.read(a104, 0);
            bit<32> a105; token_word.write(0, (a100 ^ a90 ^ a78 ^ a74)); token_word.read(a105, 0);
            bit<32> a106; token_word.write(0, ((a105 << 1) | (a105 >> 31))); token_word.read(a106, 0);
            bit<32> a107; token_word.write(0, (a102 ^ a92 ^ a80 ^ a76)); token_word.read(a107, 0);
            bit<32> a108; token_word.write(0, ((a107 << 1) | (a107 >> 31))); token_word.read(a108, 0);
            bit<32> a109; token_word.write(0, (a104 ^ a94 ^ a82 ^ a78)); token_word.read(a109, 0);
            bit<32> a110; token_word.write(0, ((a109 << 1) | (a109 >> 31))); token_word.read(a110, 0);
            bit<32> a111; token_word.write(0, (a106 ^ a96 ^ a84 ^ a80)); token_word.read(a111, 0);
            bit<32> a112; token_word.write(0, ((a111 << 1) | (a111 >> 31))); token_word.read(a112, 0);
            bit<32> a113; token_word.write(0, (a108 ^ a98 ^ a86 ^ a82)); token_word.read(a113, 0);
            bit<32> a114; token_word.write(0, ((a113 << 1) | (a113 >> 31))); token_word.read(a114, 0);
            bit<32> a115; token_word.write(0, (a110 ^ a100 ^ a88 ^ a84)); token_word.read(a115, 0);
            bit<32> a116; token_word.write(0, ((a115 << 1) | (a115 >> 31))); token_word.read(a116, 0);
            bit<32> a117; token_word.write(0, (a112 ^ a102 ^ a90 ^ a86)); token_word.read(a117, 0);
            bit<32> a118; token_word.write(0, ((a117 << 1) | (a117 >> 31))); token_word.read(a118, 0);
            bit<32> a119; token_word.write(0, (a114 ^ a104 ^ a92 ^ a88)); token_word.read(a119, 0);
            bit<32> a120; token_word.write(0, ((a119 << 1) | (a119 >> 31))); token_word.read(a120, 0);
            bit<32> a121; token_word.write(0, (a116 ^ a106 ^ a94 ^ a90)); token_word.read(a121, 0);
            bit<32> a122; token_word.write(0, ((a121 << 1) | (a121 >> 31))); token_word.read(a122, 0);
            bit<32> a123; token_word.write(0, (a118 ^ a108 ^ a96 ^ a92)); token_word.read(a123, 0);
            bit<32> a124; token_word.write(0, ((a123 << 1) | (a123 >> 31))); token_word.read(a124, 0);
            bit<32> a125; token_word.write(0, (hi + 32w0x9fb498b3)); token_word.read(a125, 0);
            bit<32> a126; token_word.write(0, (((a125 << 5) | (a125 >> 27)) + lo + 32w0x66b0cd0d)); token_word.read(a126, 0);
            bit<32> a127; token_word.write(0, (((a126 << 5) | (a126 >> 27)) + ((a125 & 32w0x59d148c0) | ((~a125) & 32w0x7bf36ae2)) + 32w0x733d5697)); token_word.read(a127, 0);
            bit<32> a128; token_word.write(0, ((a125 << 30) | (a125 >> 2))); token_word.read(a128, 0);
            bit<32> a129; token_word.write(0, (((a127 << 5) | (a127 >> 27)) + ((a126 & a128) | ((~a126) & 32w0x59d148c0)) + 32w0xd675e47b)); token_word.read(a129, 0);
            bit<32> a130; token_word.write(0, ((a126 << 30) | (a126 >> 2))); token_word.read(a130, 0);
            bit<32> a131; token_word.write(0, (((a129 << 5) | (a129 >> 27)) + ((a127 & a130) | ((~a127) & a128)) + 32w0xb453c259)); token_word.read(a131, 0);
            bit<32> a132; token_word.write(0, ((a127 << 30) | (a127 >> 2))); token_word.read(a132, 0);
            bit<32> a133; token_word.write(0, (((a131 << 5) | (a131 >> 27)) + ((a129 & a132) | ((~a129) & a130)) + a128 + 32w0x5a827999)); token_word.read(a133, 0);
            bit<32> a134; token_word.write(0, ((a129 << 30) | (a129 >> 2))); token_word.read(a134, 0);
            bit<32> a135; token_word.write(0, (((a133 << 5) | (a133 >> 27)) + ((a131 & a134) | ((~a131) & a132)) + a130 + 32w0x5a827999)); token_word.read(a135, 0);
            bit<32> a136; token_word.write(0, ((a131 << 30) | (a131 >> 2))); token_word.read(a136, 0);
            bit<32> a137; token_word.write(0, (((a135 << 5) | (a135 >> 27)) + ((a133 & a136) | ((~a133) & a134)) + a132 + 32w0x5a827999)); token_word.read(a137, 0);
            bit<32> a138; token_word.write(0, ((a133 << 30) | (a133 >> 2))); token_word.read(a138, 0);
            bit<32> a139; token_word.write(0, (((a137 << 5) | (a137 >> 27)) + ((a135 & a138) | ((~a135) & a136)) + a134 + 32w0x5a827999)); token_word.read(a139, 0);
            bit<32> a140; token_word.write(0, ((a135 << 30) | (a135 >> 2))); token_word.read(a140, 0);
            bit<32> a141; token_word.write(0, (((a139 << 5) | (a139 >> 27)) + ((a137 & a140) | ((~a137) & a138)) + a136 + 32w0x5a827999)); token_word.read(a141, 0);
            bit<32> a142; token_word.write(0, ((a137 << 30) | (a137 >> 2))); token_word.read(a142, 0);
            bit<32> a143; token_word.write(0, (((a141 << 5) | (a141 >> 27)) + ((a139 & a142) | ((~a139) & a140)) + a138 + 32w0x5a827999)); token_word.read(a143, 0);
            bit<32> a144; token_word.write(0, ((a139 << 30) | (a139 >> 2))); token_word.read(a144, 0);
            bit<32> a145; token_word.write(0, (((a143 << 5) | (a143 >> 27)) + ((a141 & a144) | ((~a141) & a142)) + a140 + 32w0x5a827999)); token_word.read(a145, 0);
            bit<32> a146; token_word.write(0, ((a141 << 30) | (a141 >> 2))); token_word.read(a146, 0);
            bit<32> a147; token_word.write(0, (((a145 << 5) | (a145 >> 27)) + ((a143 & a146) | ((~a143) & a144)) + a142 + 32w0x5a827999)); token_word.read(a147, 0);
            bit<32> a148; token_word.write(0, ((a143 << 30) | (a143 >> 2))); token_word.read(a148, 0);
            bit<32> a149; token_word.write(0, (((a147 << 5) | (a147 >> 27)) + ((a145 & a148) | ((~a145) & a146)) + a144 + 32w0x5a827999)); token_word.read(a149, 0);
            bit<32> a150; token_word.write(0, ((a145 << 30) | (a145 >> 2))); token_word.read(a150, 0);
            bit<32> a151; token_word.write(0, (((a149 << 5) | (a149 >> 27)) + ((a147 & a150) | ((~a147) & a148)) + a146 + 32w0x5a827999)); token_word.read(a151, 0);
            bit<32> a152; token_word.write(0, ((a147 << 30) | (a147 >> 2))); token_word.read(a152, 0);
            bit<32> a153; token_word.write(0, (((a151 << 5) | (a151 >> 27)) + ((a149 & a152) | ((~a149) & a150)) + a148 + 32w0x5a8279d9)); token_word.read(a153, 0);
            bit<32> a154; token_word.write(0, ((a149 << 30) | (a149 >> 2))); token_word.read(a154, 0);
            bit<32> a155; token_word.write(0, (((a153 << 5) | (a153 >> 27)) + ((a151 & a154) | ((~a151) & a152)) + a150 + a2 + 32w0x5a827999)); token_word.read(a155, 0);
            bit<32> a156; token_word.write(0, ((a151 << 30) | (a151 >> 2))); token_word.read(a156, 0);
            bit<32> a157; token_word.write(0, (((a155 << 5) | (a155 >> 27)) + ((a153 & a156) | ((~a153) & a154)) + a152 + a4 + 32w0x5a827999)); token_word.read(a157, 0);
            bit<32> a158; token_word.write(0, ((a153 << 30) | (a153 >> 2))); token_word.read(a158, 0);
            bit<32> a159; token_word.write(0, (((a157 << 5) | (a157 >> 27)) + ((a155 & a158) | ((~a155) & a156)) + a154 + 32w0x5a827a1a)); token_word.read(a159, 0);
            bit<32> a160; token_word.write(0, ((a155 << 30) | (a155 >> 2))); token_word.read(a160, 0);
            bit<32> a161; token_word.write(0, (((a159 << 5) | (a159 >> 27)) + ((a157 & a160) | ((~a157) & a158)) + a156 + a6 + 32w0x5a827999)); token_word.read(a161, 0);
            bit<32> a162; token_word.write(0, ((a157 << 30) | (a157 >> 2))); token_word.read(a162, 0);
            bit<32> a163; token_word.write(0, (((a161 << 5) | (a161 >> 27)) + (a159 ^ a162 ^ a160) + a158 + a8 + 32w0x6ed9eba1)); token_word.read(a163, 0);
            bit<32> a164; token_word.write(0, ((a159 << 30) | (a159 >> 2))); token_word.read(a164, 0);
            bit<32> a165; token_word.write(0, (((a163 << 5) | (a163 >> 27)) + (a161 ^ a164 ^ a162) + a160 + 32w0x6ed9eca3)); token_word.read(a165, 0);
            bit<32> a166; token_word.write(0, ((a161 << 30) | (a161 >> 2))); token_word.read(a166, 0);
            bit<32> a167; token_word.write(0, (((a165 << 5) | (a165 >> 27)) + (a163 ^ a166 ^ a164) + a162 + a10 + 32w0x6ed9eba1)); token_word.read(a167, 0);
            bit<32> a168; token_word.write(0, ((a163 << 30) | (a163 >> 2))); token_word.read(a168, 0);
            bit<32> a169; token_word.write(0, (((a167 << 5) | (a167 >> 27)) + (a165 ^ a168 ^ a166) + a164 + a12 + 32w0x6ed9eba1)); token_word.read(a169, 0);
            bit<32> a170; token_word.write(0, ((a165 << 30) | (a165 >> 2))); token_word.read(a170, 0);
            bit<32> a171; token_word.write(0, (((a169 << 5) | (a169 >> 27)) + (a167 ^ a170 ^ a168) + a166 + a14 + 32w0x6ed9eba1)); token_word.read(a171, 0);
            bit<32> a172; token_word.write(0, ((a167 << 30) | (a167 >> 2))); token_word.read(a172, 0);
            bit<32> a173; token_word.write(0, (((a171 << 5) | (a171 >> 27)) + (a169 ^ a172 ^ a170) + a168 + a16 + 32w0x6ed9eba1)); token_word.read(a173, 0);
            bit<32> a174; token_word.write(0, ((a169 << 30) | (a169 >> 2))); token_word.read(a174, 0);
            bit<32> a175; token_word.write(0, (((a173 << 5) | (a173 >> 27)) + (a171 ^ a174 ^ a172) + a170 + a18 + 32w0x6ed9eba1)); token_word.read(a175, 0);
            bit<32> a176; token_word.write(0, ((a171 << 30) | (a171 >> 2))); token_word.read(a176, 0);
            bit<32> a177; token_word.write(0, (((a175 << 5) | (a175 >> 27)) + (a173 ^ a176 ^ a174) + a172 + a20 + 32w0x6ed9eba1)); token_word.read(a177, 0);
            bit<32> a178; token_word.write(0, ((a173 << 30) | (a173 >> 2))); token_word.read(a178, 0);
            bit<32> a179; token_word.write(0, (((a177 << 5) | (a177 >> 27)) + (a175 ^ a178 ^ a176) + a174 + a22 + 32w0x6ed9eba1)); token_word.read(a179, 0);
            bit<32> a180; token_word.write(0, ((a175 << 30) | (a175 >> 2))); token_word.read(a180, 0);
            bit<32> a181; token_word.write(0, (((a179 << 5) | (a179 >> 27)) + (a177 ^ a180 ^ a178) + a176 + a24 + 32w0x6ed9eba1)); token_word.read(a181, 0);
            bit<32> a182; token_word.write(0, ((a177 << 30) | (a177 >> 2))); token_word.read(a182, 0);
            bit<32> a183; token_word.write(0, (((a181 << 5) | (a181 >> 27)) + (a179 ^ a182 ^ a180) + a178 + a26 + 32w0x6ed9eba1)); token_word.read(a183, 0);
            bit<32> a184; token_word.write(0, ((a179 << 30) | (a179 >> 2))); token_word.read(a184, 0);
            bit<32> a185; token_word.write(0, (((a183 << 5) | (a183 >> 27)) + (a181 ^ a184 ^ a182) + a180 + a28 + 32w0x6ed9eba1)); token_word.read(a185, 0);
            bit<32> a186; token_word.write(0, ((a181 << 30) | (a181 >> 2))); token_word.read(a186, 0);
            bit<32> a187; token_word.write(0, (((a185 << 5) | (a185 >> 27)) + (a183 ^ a186 ^ a184) + a182 + a30 + 32w0x6ed9eba1)); token_word.read(a187, 0);
            bit<32> a188; token_word.write(0, ((a183 << 30) | (a183 >> 2))); token_word.read(a188, 0);
            bit<32> a189; token_word.write(0, (((a187 << 5) | (a187 >> 27)) + (a185 ^ a188 ^ a186) + a184 + a32 + 32w0x6ed9eba1)); token_word.read(a189, 0);
            bit<32> a190; token_word.write(0, ((a185 << 30) | (a185 >> 2))); token_word.read(a190, 0);
            bit<32> a191; token_word.write(0, (((a189 << 5) | (a189 >> 27)) + (a187 ^ a190 ^ a188) + a186 + a34 + 32w0x6ed9eba1)); token_word.read(a191, 0);
            bit<32> a192; token_word.write(0, ((a187 << 30) | (a187 >> 2))); token_word.read(a192, 0);
            bit<32> a193; token_word.write(0, (((a191 << 5) | (a191 >> 27)) + (a189 ^ a192 ^ a190) + a188 + a36 + 32w0x6ed9eba1)); token_word.read(a193, 0);
            bit<32> a194; token_word.write(0, ((a189 << 30) | (a189 >> 2))); token_word.read(a194, 0);
            bit<32> a195; token_word.write(0, (((a193 << 5) | (a193 >> 27)) + (a191 ^ a194 ^ a192) + a190 + a38 + 32w0x6ed9eba1)); token_word.read(a195, 0);
            bit<32> a196; token_word.write(0, ((a191 << 30) | (a191 >> 2))); token_word.read(a196, 0);
            bit<32> a197; token_word.write(0, (((a195 << 5) | (a195 >> 27)) + (a193 ^ a196 ^ a194) + a192 + a40 + 32w0x6ed9eba1)); token_word.read(a197, 0);
            bit<32> a198; token_word.write(0, ((a193 << 30) | (a193 >> 2))); token_word.read(a198, 0);
            bit<32> a199; token_word.write(0, (((a197 << 5) | (a197 >> 27)) + (a195 ^ a198 ^ a196) + a194 + a42 + 32w0x6ed9eba1)); token_word.read(a199, 0);
            bit<32> a200; token_word.write(0, ((a195 << 30) | (a195 >> 2))); token_word.read(a200, 0);
            bit<32> a201; token_word.write(0, (((a199 << 5) | (a199 >> 27)) + (a197 ^ a200 ^ a198) + a196 + a44 + 32w0x6ed9eba1)); token_word.read(a201, 0);
            bit<32> a202; token_word.write(0, ((a197 << 30) | (a197 >> 2))); token_word.read(a202, 0);
            bit<32> a203; token_word.write(0, (((a201 << 5) | (a201 >> 27)) + ((a199 & a202) | (a199 & a200) | (a202 & a200)) + a198 + a46 + 32w0x8f1bbcdc)); token_word.read(a203, 0);
            bit<32> a204; token_word.write(0, ((a199 << 30) | (a199 >> 2))); token_word.read(a204, 0);
            bit<32> a205; token_word.write(0, (((a203 << 5) | (a203 >> 27)) + ((a201 & a204) | (a201 & a202) | (a204 & a202)) + a200 + a48 + 32w0x8f1bbcdc)); token_word.read(a205, 0);
            bit<32> a206; token_word.write(0, ((a201 << 30) | (a201 >> 2))); token_word.read(a206, 0);
            bit<32> a207; token_word.write(0, (((a205 << 5) | (a205 >> 27)) + ((a203 & a206) | (a203 & a204) | (a206 & a204)) + a202 + a50 + 32w0x8f1bbcdc)); token_word.read(a207, 0);
            bit<32> a208; token_word.write(0, ((a203 << 30) | (a203 >> 2))); token_word.read(a208, 0);
            bit<32> a209; token_word.write(0, (((a207 << 5) | (a207 >> 27)) + ((a205 & a208) | (a205 & a206) | (a208 & a206)) + a204 + a52 + 32w0x8f1bbcdc)); token_word.read(a209, 0);
            bit<32> a210; token_word.write(0, ((a205 << 30) | (a205 >> 2))); token_word.read(a210, 0);
            bit<32> a211; token_word.write(0, (((a209 << 5) | (a209 >> 27)) + ((a207 & a210) | (a207 & a208) | (a210 & a208)) + a206 + a54 + 32w0x8f1bbcdc)); token_word.read(a211, 0);
            bit<32> a212; token_word.write(0, ((a207 << 30) | (a207 >> 2))); token_word.read(a212, 0);
            bit<32> a213; token_word.write(0, (((a211 << 5) | (a211 >> 27)) + ((a209 & a212) | (a209 & a210) | (a212 & a210)) + a208 + a56 + 32w0x8f1bbcdc)); token_word.read(a213, 0);
            bit<32> a214; token_word.write(0, ((a209 << 30) | (a209 >> 2))); token_word.read(a214, 0);
            bit<32> a215; token_word.write(0, (((a213 << 5) | (a213 >> 27)) + ((a211 & a214) | (a211 & a212) | (a214 & a212)) + a210 + a58 + 32w0x8f1bbcdc)); token_word.read(a215, 0);
            bit<32> a216; token_word.write(0, ((a211 << 30) | (a211 >> 2))); token_word.read(a216, 0);
            bit<32> a217; token_word.write(0, (((a215 << 5) | (a215 >> 27)) + ((a213 & a216) | (a213 & a214) | (a216 & a214)) + a212 + a60 + 32w0x8f1bbcdc)); token_word.read(a217, 0);
            bit<32> a218; token_word.write(0, ((a213 << 30) | (a213 >> 2))); token_word.read(a218, 0);
            bit<32> a219; token_word.write(0, (((a217 << 5) | (a217 >> 27)) + ((a215 & a218) | (a215 & a216) | (a218 & a216)) + a214 + a62 + 32w0x8f1bbcdc)); token_word.read(a219, 0);
            bit<32> a220; token_word.write(0, ((a215 << 30) | (a215 >> 2))); token_word.read(a220, 0);
            bit<32> a221; token_word.write(0, (((a219 << 5) | (a219 >> 27)) + ((a217 & a220) | (a217 & a218) | (a220 & a218)) + a216 + a64 + 32w0x8f1bbcdc)); token_word.read(a221, 0);
            bit<32> a222; token_word.write(0, ((a217 << 30) | (a217 >> 2))); token_word.read(a222, 0);
            bit<32> a223; token_word.write(0, (((a221 << 5) | (a221 >> 27)) + ((a219 & a222) | (a219 & a220) | (a222 & a220)) + a218 + a66 + 32w0x8f1bbcdc)); token_word.read(a223, 0);
            bit<32> a224; token_word.write(0, ((a219 << 30) | (a219 >> 2))); token_word.read(a224, 0);
            bit<32> a225; token_word.write(0, (((a223 << 5) | (a223 >> 27)) + ((a221 & a224) | (a221 & a222) | (a224 & a222)) + a220 + a68 + 32w0x8f1bbcdc)); token_word.read(a225, 0);
            bit<32> a226; token_word.write(0, ((a221 << 30) | (a221 >> 2))); token_word.read(a226, 0);
            bit<32> a227; token_word.write(0, (((a225 << 5) | (a225 >> 27)) + ((a223 & a226) | (a223 & a224) | (a226 & a224)) + a222 + a70 + 32w0x8f1bbcdc)); token_word.read(a227, 0);
            bit<32> a228; token_word.write(0, ((a223 << 30) | (a223 >> 2))); token_word.read(a228, 0);
            bit<32> a229; token_word.write(0, (((a227 << 5) | (a227 >> 27)) + ((a225 & a228) | (a225 & a226) | (a228 & a226)) + a224 + a72 + 32w0x8f1bbcdc)); token_word.read(a229, 0);
            bit<32> a230; token_word.write(0, ((a225 << 30) | (a225 >> 2))); token_word.read(a230, 0);
            bit<32> a231; token_word.write(0, (((a229 << 5) | (a229 >> 27)) + ((a227 & a230) | (a227 & a228) | (a230 & a228)) + a226 + a74 + 32w0x8f1bbcdc)); token_word.read(a231, 0);
            bit<32> a232; token_word.write(0, ((a227 << 30) | (a227 >> 2))); token_word.read(a232, 0);
            bit<32> a233; token_word.write(0, (((a231 << 5) | (a231 >> 27)) + ((a229 & a232) | (a229 & a230) | (a232 & a230)) + a228 + a76 + 32w0x8f1bbcdc)); token_word.read(a233, 0);
            bit<32> a234; token_word.write(0, ((a229 << 30) | (a229 >> 2))); token_word.read(a234, 0);
            bit<32> a235; token_word.write(0, (((a233 << 5) | (a233 >> 27)) + ((a231 & a234) | (a231 & a232) | (a234 & a232)) + a230 + a78 + 32w0x8f1bbcdc)); token_word.read(a235, 0);
            bit<32> a236; token_word.write(0, ((a231 << 30) | (a231 >> 2))); token_word.read(a236, 0);
            bit<32> a237; token_word.write(0, (((a235 << 5) | (a235 >> 27)) + ((a233 & a236) | (a233 & a234) | (a236 & a234)) + a232 + a80 + 32w0x8f1bbcdc)); token_word.read(a237, 0);
            bit<32> a238; token_word.write(0, ((a233 << 30) | (a233 >> 2))); token_word.read(a238, 0);
            bit<32> a239; token_word.write(0, (((a237 << 5) | (a237 >> 27)) + ((a235 & a238) | (a235 & a236) | (a238 & a236)) + a234 + a82 + 32w0x8f1bbcdc)); token_word.read(a239, 0);
            bit<32> a240; token_word.write(0, ((a235 << 30) | (a235 >> 2))); token_word.read(a240, 0);
            bit<32> a241; token_word.write(0, (((a239 << 5) | (a239 >> 27)) + ((a237 & a240) | (a237 & a238) | (a240 & a238)) + a236 + a84 + 32w0x8f1bbcdc)); token_word.read(a241, 0);
            bit<32> a242; token_word.write(0, ((a237 << 30) | (a237 >> 2))); token_word.read(a242, 0);
            bit<32> a243; token_word.write(0, (((a241 << 5) | (a241 >> 27)) + (a239 ^ a242 ^ a240) + a238 + a86 + 32w0xca62c1d6)); token_word.read(a243, 0);
            bit<32> a244; token_word.write(0, ((a239 << 30) | (a239 >> 2))); token_word.read(a244, 0);
            bit<32> a245; token_word.write(0, (((a243 << 5) | (a243 >> 27)) + (a241 ^ a244 ^ a242) + a240 + a88 + 32w0xca62c1d6)); token_word.read(a245, 0);
            bit<32> a246; token_word.write(0, ((a241 << 30) | (a241 >> 2))); token_word.read(a246, 0);
            bit<32> a247; token_word.write(0, (((a245 << 5) | (a245 >> 27)) + (a243 ^ a246 ^ a244) + a242 + a90 + 32w0xca62c1d6)); token_word.read(a247, 0);
            bit<32> a248; token_word.write(0, ((a243 << 30) | (a243 >> 2))); token_word.read(a248, 0);
            bit<32> a249; token_word.write(0, (((a247 << 5) | (a247 >> 27)) + (a245 ^ a248 ^ a246) + a244 + a92 + 32w0xca62c1d6)); token_word.read(a249, 0);
            bit<32> a250; token_word.write(0, ((a245 << 30) | (a245 >> 2))); token_word.read(a250, 0);
            bit<32> a251; token_word.write(0, (((a249 << 5) | (a249 >> 27)) + (a247 ^ a250 ^ a248) + a246 + a94 + 32w0xca62c1d6)); token_word.read(a251, 0);
            bit<32> a252; token_word.write(0, ((a247 << 30) | (a247 >> 2))); token_word.read(a252, 0);
            bit<32> a253; token_word.write(0, (((a251 << 5) | (a251 >> 27)) + (a249 ^ a252 ^ a250) + a248 + a96 + 32w0xca62c1d6)); token_word.read(a253, 0);
            bit<32> a254; token_word.write(0, ((a249 << 30) | (a249 >> 2))); token_word.read(a254, 0);
            bit<32> a255; token_word.write(0, (((a253 << 5) | (a253 >> 27)) + (a251 ^ a254 ^ a252) + a250 + a98 + 32w0xca62c1d6)); token_word.read(a255, 0);
            bit<32> a256; token_word.write(0, ((a251 << 30) | (a251 >> 2))); token_word.read(a256, 0);
            bit<32> a257; token_word.write(0, (((a255 << 5) | (a255 >> 27)) + (a253 ^ a256 ^ a254) + a252 + a100 + 32w0xca62c1d6)); token_word.read(a257, 0);
            bit<32> a258; token_word.write(0, ((a253 << 30) | (a253 >> 2))); token_word.read(a258, 0);
            bit<32> a259; token_word.write(0, (((a257 << 5) | (a257 >> 27)) + (a255 ^ a258 ^ a256) + a254 + a102 + 32w0xca62c1d6)); token_word.read(a259, 0);
            bit<32> a260; token_word.write(0, ((a255 << 30) | (a255 >> 2))); token_word.read(a260, 0);
            bit<32> a261; token_word.write(0, (((a259 << 5) | (a259 >> 27)) + (a257 ^ a260 ^ a258) + a256 + a104 + 32w0xca62c1d6)); token_word.read(a261, 0);
            bit<32> a262; token_word.write(0, ((a257 << 30) | (a257 >> 2))); token_word.read(a262, 0);
            bit<32> a263; token_word.write(0, (((a261 << 5) | (a261 >> 27)) + (a259 ^ a262 ^ a260) + a258 + a106 + 32w0xca62c1d6)); token_word.read(a263, 0);
            bit<32> a264; token_word.write(0, ((a259 << 30) | (a259 >> 2))); token_word.read(a264, 0);
            bit<32> a265; token_word.write(0, (((a263 << 5) | (a263 >> 27)) + (a261 ^ a264 ^ a262) + a260 + a108 + 32w0xca62c1d6)); token_word.read(a265, 0);
            bit<32> a266; token_word.write(0, ((a261 << 30) | (a261 >> 2))); token_word.read(a266, 0);
            bit<32> a267; token_word.write(0, (((a265 << 5) | (a265 >> 27)) + (a263 ^ a266 ^ a264) + a262 + a110 + 32w0xca62c1d6)); token_word.read(a267, 0);
            bit<32> a268; token_word.write(0, ((a263 << 30) | (a263 >> 2))); token_word.read(a268, 0);
            bit<32> a269; token_word.write(0, (((a267 << 5) | (a267 >> 27)) + (a265 ^ a268 ^ a266) + a264 + a112 + 32w0xca62c1d6)); token_word.read(a269, 0);
            bit<32> a270; token_word.write(0, ((a265 << 30) | (a265 >> 2))); token_word.read(a270, 0);
            bit<32> a271; token_word.write(0, (((a269 << 5) | (a269 >> 27)) + (a267 ^ a270 ^ a268) + a266 + a114 + 32w0xca62c1d6)); token_word.read(a271, 0);
            bit<32> a272; token_word.write(0, ((a267 << 30) | (a267 >> 2))); token_word.read(a272, 0);
            bit<32> a273; token_word.write(0, (((a271 << 5) | (a271 >> 27)) + (a269 ^ a272 ^ a270) + a268 + a116 + 32w0xca62c1d6)); token_word.read(a273, 0);
            bit<32> a274; token_word.write(0, ((a269 << 30) | (a269 >> 2))); token_word.read(a274, 0);
            bit<32> a275; token_word.write(0, (((a273 << 5) | (a273 >> 27)) + (a271 ^ a274 ^ a272) + a270 + a118 + 32w0xca62c1d6)); token_word.read(a275, 0);
            bit<32> a276; token_word.write(0, ((a271 << 30) | (a271 >> 2))); token_word.read(a276, 0);
            bit<32> a277; token_word.write(0, (((a275 << 5) | (a275 >> 27)) + (a273 ^ a276 ^ a274) + a272 + a120 + 32w0xca62c1d6)); token_word.read(a277, 0);
            bit<32> a278; token_word.write(0, ((a273 << 30) | (a273 >> 2))); token_word.read(a278, 0);
            bit<32> a279; token_word.write(0, (((a277 << 5) | (a277 >> 27)) + (a275 ^ a278 ^ a276) + a274 + a122 + 32w0xca62c1d6)); token_word.read(a279, 0);
            bit<32> a280; token_word.write(0, ((a275 << 30) | (a275 >> 2))); token_word.read(a280, 0);
            bit<32> a281; token_word.write(0, (((a279 << 5) | (a279 >> 27)) + (a277 ^ a280 ^ a278) + a276 + a124 + 32w0xca62c1d6)); token_word.read(a281, 0);
            bit<32> a282; token_word.write(0, ((a277 << 30) | (a277 >> 2))); token_word.read(a282, 0);
            token = (a281 + 32w0x67452301);
        }
    }
}
/* END GENERATED by gen_tokens.py */

struct hula_meta_t {
    bit<16> inner_type;  /* the EtherType after the last shim */
    bit<16> shim_bytes;  /* bytes of the shims the frame came with */
    bit<1>  shim_pending; /* a shim's extraction did not finish: cut short */
    bit<1>  shim_bad;     /* length 0 or short of its kind's body, unknown kind, five shims */
    bit<16> l4_len;       /* IPv4 total length - header length */
    bit<16> opt_left;     /* TCP option bytes not walked yet */
    bit<8>  opt_len;      /* the option being walked */
    bit<1>  est;          /* egress: run the estimator on this packet */
    bit<1>  egress_test;  /* a vector's egress step */
    bit<32> wire_len;     /* bytes the packet has on the wire as it leaves (no FCS) */
}

/* ---- Parser ----------------------------------------------------------------------------- */

#define SHIM_STATES(i, j) \
    state shim##i { \
        m.shim_pending = 1; \
        pk.extract(h.sh##i); \
        transition select(h.sh##i.kind, h.sh##i.len) { \
            (1, 4): rt##i; \
            (1, 5 .. 255): rt##i##x; \
            (2, 5): in##i; \
            (2, 6 .. 255): in##i##x; \
            (3, 3): pr##i; \
            (3, 4 .. 255): pr##i##x; \
            default: shim_bad; \
        } \
    } \
    state rt##i { pk.extract(h.rt##i); transition shim##i##_done; } \
    state rt##i##x { \
        pk.extract(h.rt##i); \
        pk.extract(h.ex##i, ((bit<32>)h.sh##i.len - 4) * 32); \
        transition shim##i##_done; \
    } \
    state in##i { pk.extract(h.in##i); transition shim##i##_done; } \
    state in##i##x { \
        pk.extract(h.in##i); \
        pk.extract(h.ex##i, ((bit<32>)h.sh##i.len - 5) * 32); \
        transition shim##i##_done; \
    } \
    state pr##i { pk.extract(h.pr##i); transition shim##i##_done; } \
    state pr##i##x { \
        pk.extract(h.pr##i); \
        pk.extract(h.ex##i, ((bit<32>)h.sh##i.len - 3) * 32); \
        transition shim##i##_done; \
    } \
    state shim##i##_done { \
        m.shim_pending = 0; \
        m.shim_bytes = m.shim_bytes + ((bit<16>)h.sh##i.len << 2); \
        m.inner_type = h.sh##i.next; \
        transition select(h.sh##i.next) { \
            0x88B5: shim##j; \
            0x0800: parse_ipv4; \
            default: accept; \
        } \
    }

parser HulaParser(packet_in pk, out hula_headers_t h, inout hula_meta_t m,
                  inout standard_metadata_t sm) {
    /* A short frame stops the parser with PacketTooShort and leaves the header that did not
     * fit invalid; BMv2 still runs ingress, which judges the frame by its length as
     * wire::parse_frame does (shim_pending says a shim was cut short). */
    state start {
        pk.extract(h.eth);
        m.inner_type = h.eth.ether_type;
        transition select(h.eth.ether_type) {
            0x88B5: shim0;
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    SHIM_STATES(0, 1)
    SHIM_STATES(1, 2)
    SHIM_STATES(2, 3)
    SHIM_STATES(3, 4)
    state shim4 {
        m.shim_bad = 1; /* more than MAX_HEADERS shims */
        transition accept;
    }
    state shim_bad {
        m.shim_bad = 1;
        transition accept;
    }
    state parse_ipv4 {
        pk.extract(h.ipv4);
        m.l4_len = h.ipv4.total_len - ((bit<16>)h.ipv4.ihl << 2);
        transition select(h.ipv4.version, h.ipv4.ihl) {
            (4, 5): parse_l4;
            (4, 6 .. 15): parse_ip_options;
            default: accept; /* ingress counts it malformed */
        }
    }
    state parse_ip_options {
        pk.extract(h.ipv4_opts, ((bit<32>)h.ipv4.ihl - 5) * 32);
        transition parse_l4;
    }
    state parse_l4 {
        transition select(h.ipv4.frag_offset, h.ipv4.protocol) {
            (0, 6): parse_tcp;
            (0, 17): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pk.extract(h.l4);
        pk.extract(h.udp);
        transition accept;
    }
    state parse_tcp {
        pk.extract(h.l4);
        pk.extract(h.tcp);
        /* wire.rs reads options in l4[20 .. data offset], l4 bounded by the total length: a
         * data offset beyond the total length (or under 5 words) means no options at all. */
        m.opt_left = ((bit<16>)h.tcp.doff << 2) - 20;
        transition select(h.tcp.doff >= 5 && ((bit<16>)h.tcp.doff << 2) <= m.l4_len) {
            true: opt_walk;
            default: accept;
        }
    }
    /* find_in_tcp_options: EOL ends the walk, NOP is one byte, any other option needs a length
     * byte of 2 or more inside the option space, or the walk ends with no MPTCP option. */
    state opt_walk {
        transition select(m.opt_left) {
            0: accept;
            default: opt_kind;
        }
    }
    state opt_kind {
        transition select(pk.lookahead<bit<8>>()) {
            0: accept;
            1: opt_nop;
            default: opt_sized;
        }
    }
    state opt_nop {
        pk.extract(h.opts.next);
        m.opt_left = m.opt_left - 1;
        transition opt_walk;
    }
    state opt_sized {
        bit<16> kl = pk.lookahead<bit<16>>();
        m.opt_len = kl[7:0];
        transition select(m.opt_left >= 2 && kl[7:0] >= 2 && (bit<16>)kl[7:0] <= m.opt_left,
                          kl[15:8]) {
            (false, _): accept; /* a length that ends the walk */
            (true, 30): opt_mptcp;
            (true, _): opt_skip;
        }
    }
    state opt_skip {
        pk.extract(h.opts.next);
        m.opt_left = m.opt_left - 1;
        m.opt_len = m.opt_len - 1;
        transition select(m.opt_len) {
            0: opt_walk;
            default: opt_skip;
        }
    }
    /* The first MPTCP option ends the walk (as find_in_tcp_options); what MptcpOption::parse
     * refuses is no option. The bytes after it stay payload. */
    state opt_mptcp {
        bit<32> w = pk.lookahead<bit<32>>();
        transition select(w[15:12], w[23:16]) {
            (0, 4): capable;
            (0, 12): capable1;
            (0, 20): capable2;
            (0, 22): capable2;
            (0, 24): capable2;
            (1, 12): join_syn;
            default: accept;
        }
    }
    state capable { pk.extract(h.mp); transition accept; }
    state capable1 { pk.extract(h.mp); pk.extract(h.key1); transition accept; }
    state capable2 { pk.extract(h.mp); pk.extract(h.key1); pk.extract(h.key2); transition accept; }
    state join_syn { pk.extract(h.mp); pk.extract(h.join); transition accept; }
}

#define SHIM_EMIT(i) \
    pk.emit(h.sh##i); \
    pk.emit(h.rt##i); \
    pk.emit(h.in##i); \
    pk.emit(h.pr##i); \
    pk.emit(h.ex##i);

control HulaDeparser(packet_out pk, in hula_headers_t h) {
    apply {
        pk.emit(h.eth);
        pk.emit(h.push_sh);
        pk.emit(h.push_rt);
        SHIM_EMIT(0)
        SHIM_EMIT(1)
        SHIM_EMIT(2)
        SHIM_EMIT(3)
        pk.emit(h.ipv4);
        pk.emit(h.ipv4_opts);
        pk.emit(h.l4);
        pk.emit(h.udp);
        pk.emit(h.tcp);
        pk.emit(h.opts);
        pk.emit(h.mp);
        pk.emit(h.key1);
        pk.emit(h.key2);
        pk.emit(h.join);
    }
}

/* ---- State shared by ingress and egress ------------------------------------------------- */

register<bit<64>>(HC_MAX) counters;
register<bit<64>>(MPS_MAX_PORTS) port_rx_pkts;
register<bit<64>>(MPS_MAX_PORTS) port_tx_pkts;
/* The transmit utilisation estimator, per port: egress writes it, a probe's ingress reads it. */
register<bit<64>>(MPS_MAX_PORTS) txutil_bytes;
register<bit<64>>(MPS_MAX_PORTS) txutil_last_us;
/* When a probe last came in by each port (µs): a flowlet's up / down port is alive while one
 * came less than the ageing time ago. */
register<bit<64>>(MPS_MAX_PORTS) probe_in_us;
/* Per port, from the control plane: direction (DIR_*) and util_scale (2^40 / cap_bytes). */
register<bit<8>>(MPS_MAX_PORTS) port_dir;
register<bit<64>>(MPS_MAX_PORTS) util_scale;
/* The estimator's time constant (µs, a power of two) and its log2, from the control plane. */
register<bit<64>>(1) tau_us;
register<bit<64>>(1) log2_tau;
/* Conformance: bit 0 the clock is test_clock_us; bit 1 the estimator runs on vector egress
 * steps only (the Rust twin's egress stage runs on those). */
register<bit<8>>(1) test_flags;
register<bit<64>>(1) test_clock_us;
/* A vector's egress step: its port + 1 (0: none). */
register<bit<16>>(1) test_egress_port;
/* Each port's queues (0 or 1: one), from the control plane: a data packet joins its DSCP
 * class's, clamped (include/queues.p4). */
register<bit<8>>(MPS_MAX_PORTS) port_queues;
/* Ingress runs finished (a vector runner's sign that a step's ingress is over). */
register<bit<64>>(1) ingress_runs;

control HulaVerifyChecksum(inout hula_headers_t h, inout hula_meta_t m) {
    apply { }
}

/* 64-bit values the control plane reads back (keys, connection ids) are held as two 32-bit
 * halves: BMv2's Thrift interface returns a register value as a signed 64-bit integer and
 * saturates larger ones at 2^63 - 1. */
#define R64(name) \
    register<bit<32>>(HULA_SLOTS) name##_hi; \
    register<bit<32>>(HULA_SLOTS) name##_lo;
#define R64_READ(name, dst, i) { \
        bit<32> r64_hi; \
        bit<32> r64_lo; \
        name##_hi.read(r64_hi, i); \
        name##_lo.read(r64_lo, i); \
        dst = r64_hi ++ r64_lo; \
    }
#define R64_WRITE(name, i, v) { \
        name##_hi.write(i, (bit<32>)((v) >> 32)); \
        name##_lo.write(i, (bit<32>)(v)); \
    }

control HulaIngress(inout hula_headers_t h, inout hula_meta_t m, inout standard_metadata_t sm) {
    /* Best-k next hops per destination ToR, at tor * HULA_K + rank: port + 1 (0: empty), util
     * (Q16), the time the slot was refreshed (µs). */
    register<bit<32>>(HULA_BEST_SLOTS) best_port;
    register<bit<32>>(HULA_BEST_SLOTS) best_util;
    register<bit<64>>(HULA_BEST_SLOTS) best_time_us;
    /* The flowlet table (LetFlow's): valid << 48 | port << 32 | tag, and the last time. */
    register<bit<64>>(HULA_SLOTS) flowlet_slot;
    register<bit<64>>(HULA_SLOTS) flowlet_last_us;
    /* MPTCP association at ToRs: keys (aux), associations (assoc), tokens. */
    register<bit<32>>(HULA_SLOTS) aux_tag;
    R64(aux_key_a)
    R64(aux_key_b)
    register<bit<8>>(HULA_SLOTS) aux_flags;
    register<bit<8>>(HULA_SLOTS) assoc_valid;
    register<bit<32>>(HULA_SLOTS) assoc_tag;
    R64(assoc_conn_id)
    register<bit<8>>(HULA_SLOTS) assoc_subflow;
    register<bit<8>>(HULA_SLOTS) assoc_count;
    register<bit<8>>(HULA_SLOTS) token_valid;
    register<bit<32>>(HULA_SLOTS) token_token;
    register<bit<32>>(HULA_SLOTS) token_assoc_slot;
    /* The connection table: conn_id, rr, and per subflow s (at slot * 4 + s - 1) port + 1
     * (0: none) and the last time. */
    register<bit<8>>(HULA_SLOTS) conn_valid;
    R64(conn_conn_id)
    register<bit<8>>(HULA_SLOTS) conn_rr;
    register<bit<16>>(HULA_CONN_SUB) conn_port;
    register<bit<64>>(HULA_CONN_SUB) conn_last_us;
    /* The ports of each replication group, as a bit mask (index: ingress port, and
     * HULA_ORIGIN_MASK for origination): ingress counts each copy's port. */
    register<bit<16>>(17) mcast_mask;
    /* Two instances: a control is applied once per instance. */
    MptcpToken() token_a;
    MptcpToken() token_b;

    bit<32> own_ip = 0;
    bit<32> hash_seed = 0;
    bit<64> gap_us = 0;
    bit<32> table_mask = 0;
    bit<16> tor_id = HULA_NO_TOR;
    bit<16> n_tors = 0;
    bit<1>  mp = 0;
    bit<32> best_k = 1;
    bit<64> ageing_us = 0;
    bit<32> assoc_mask = 0;
    bit<32> conn_mask = 0;

    action set_node(bit<32> ip, bit<32> seed, bit<64> gap, bit<32> mask, bit<16> tor,
                    bit<16> tors, bit<1> multipath, bit<32> k, bit<64> ageing,
                    bit<32> amask, bit<32> cmask) {
        own_ip = ip;
        hash_seed = seed;
        gap_us = gap;
        table_mask = mask;
        tor_id = tor;
        n_tors = tors;
        mp = multipath;
        best_k = k;
        ageing_us = ageing;
        assoc_mask = amask;
        conn_mask = cmask;
    }

    /* The node: address, ECMP seed, parameters (µs, masks), ToR id (keyless). */
    table node {
        actions = { set_node; }
        default_action = set_node(0, 0, 100, 0, HULA_NO_TOR, 0, 0, 1, 1000, 0, 0);
    }

    bit<16> out_port = 0;
    bit<16> group = 0;
    bit<32> group_size = 0;
    bit<32> member = 0;
    bool is_ecmp = false;
    bool found = false;

    action route_port(bit<16> p) {
        out_port = p;
        found = true;
    }

    action route_ecmp(bit<16> g) {
        group = g;
        is_ecmp = true;
    }

    table routes {
        key = { h.ipv4.dst: lpm; }
        actions = { route_port; route_ecmp; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ROUTES;
    }

    action set_group_size(bit<32> n) {
        group_size = n;
    }

    table ecmp_group {
        key = { group: exact; }
        actions = { set_group_size; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ECMP_GROUPS;
    }

    /* An equal-cost group's ports, by index: applied once, after the index is chosen. */
    table ecmp_member {
        key = {
            group: exact;
            member: exact;
        }
        actions = { route_port; NoAction; }
        default_action = NoAction;
        size = 1024;
    }

    bit<16> dest = HULA_NO_TOR;

    action set_dest_tor(bit<16> t) {
        dest = t;
    }

    /* dest_tors: a host prefix -> its ToR. */
    table dest_tor {
        key = { h.ipv4.dst: lpm; }
        actions = { set_dest_tor; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ROUTES;
    }

    action set_macs(bit<48> own, bit<48> peer) {
        h.eth.src = own;
        h.eth.dst = peer;
    }

    table port_macs {
        key = { out_port: exact; }
        actions = { set_macs; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_PORTS;
    }

    action count(bit<32> which) {
        bit<64> c;
        counters.read(c, which);
        counters.write(which, c + 1);
    }

    action count_n(bit<32> which, bit<64> n) {
        bit<64> c;
        counters.read(c, which);
        counters.write(which, c + n);
    }

    action count_tx(bit<16> port) {
        bit<64> c;
        port_tx_pkts.read(c, (bit<32>)port);
        port_tx_pkts.write((bit<32>)port, c + 1);
    }

    action drop_counted(bit<32> which) {
        count(which);
        mark_to_drop(sm);
    }

    action to_stack(bit<32> which) {
        count(which);
        sm.egress_spec = MPS_STACK_PORT;
    }

    /* TTL - 1, the checksum updated as RFC 1624 says. */
    action decrement_ttl() {
        bit<16> old = h.ipv4.ttl ++ h.ipv4.protocol;
        h.ipv4.ttl = h.ipv4.ttl - 1;
        h.ipv4.checksum = csum_replace(h.ipv4.checksum, old, h.ipv4.ttl ++ h.ipv4.protocol);
    }

    /* A copy of each replicated probe leaves by every port of mask: count them. */
    action count_copies(in bit<16> mask, out bit<64> n) {
        n = 0;
        bit<64> c;
#define COPY(i) \
        if (mask[i:i] == 1) { \
            port_tx_pkts.read(c, i); \
            port_tx_pkts.write(i, c + 1); \
            n = n + 1; \
        }
        COPY(0) COPY(1) COPY(2) COPY(3) COPY(4) COPY(5) COPY(6) COPY(7)
        COPY(8) COPY(9) COPY(10) COPY(11) COPY(12) COPY(13) COPY(14) COPY(15)
#undef COPY
    }

    /* saturating now - then, as the Rust twin's saturating_sub */
#define AGE(now, then) ((now) > (then) ? (now) - (then) : 64w0)

#define DONE ingress_runs.write(0, runs + 1)

    apply {
        node.apply();
        bit<16> in_port = (bit<16>)sm.ingress_port;
        bit<32> len = sm.packet_length;
        bit<8> flags;
        test_flags.read(flags, 0);
        bit<64> now;
        if (flags[0:0] == 1) {
            test_clock_us.read(now, 0);
        } else {
            now = (bit<64>)sm.ingress_global_timestamp;
        }
        /* Counted at every exit (DONE): a vector runner that sees it move knows this frame's
         * ingress is over, its writes done, whatever it did. */
        bit<64> runs;
        ingress_runs.read(runs, 0);

        /* A vector's egress step: the frame as given straight to the port's egress (the
         * estimator, L = the whole frame), counted nowhere, as the Rust runner's egress step. */
        bit<16> test_port;
        test_egress_port.read(test_port, 0);
        if (test_port != 0) {
            sm.egress_spec = (bit<9>)(test_port - 1);
            m.egress_test = 1;
            m.est = 1;
            m.wire_len = len;
            DONE;
            return;
        }
        m.est = ~flags[1:1];
        if (in_port < MPS_MAX_PORTS) {
            bit<64> rx;
            port_rx_pkts.read(rx, (bit<32>)in_port);
            port_rx_pkts.write((bit<32>)in_port, rx + 1);
        }

        /* wire::parse_frame_with_headers: a runt, then the shims, then IPv4 or the stack. */
        bit<32> ip_off = 14 + (bit<32>)m.shim_bytes;
        if (len < 14 || !h.eth.isValid() || m.shim_pending == 1 || m.shim_bad == 1) {
            drop_counted(HC_MALFORMED);
            DONE;
            return;
        }
        if (m.inner_type != 0x0800) {
            to_stack(HC_NOT_IPV4);
            DONE;
            return;
        }
        bit<32> ihl_bytes = (bit<32>)h.ipv4.ihl * 4;
        bit<32> total = (bit<32>)h.ipv4.total_len;
        if (len < ip_off + 20 || !h.ipv4.isValid() || h.ipv4.version != 4 || ihl_bytes < 20 ||
            len - ip_off < ihl_bytes || total < ihl_bytes || total > len - ip_off) {
            drop_counted(HC_MALFORMED);
            DONE;
            return;
        }

        /* The topmost probe header of the frame. */
        bool probe = false;
        bit<16> p_tor = 0;
        bit<32> p_util = 0;
        if (h.pr0.isValid()) { probe = true; p_tor = h.pr0.tor; p_util = h.pr0.util; }
        else if (h.pr1.isValid()) { probe = true; p_tor = h.pr1.tor; p_util = h.pr1.util; }
        else if (h.pr2.isValid()) { probe = true; p_tor = h.pr2.tor; p_util = h.pr2.util; }
        else if (h.pr3.isValid()) { probe = true; p_tor = h.pr3.tor; p_util = h.pr3.util; }

        bit<8> dir_in = DIR_NONE;
        if (in_port < MPS_MAX_PORTS) {
            port_dir.read(dir_in, (bit<32>)in_port);
        }

        /* ---- Origination: the prober's trigger frame (a probe frame) on the timer port. */
        if (in_port == HULA_TIMER_PORT) {
            bit<16> mask;
            mcast_mask.read(mask, HULA_ORIGIN_MASK);
            if (!h.pr0.isValid() || tor_id == HULA_NO_TOR || mask == 0) {
                mark_to_drop(sm);
                DONE;
                return;
            }
            /* The trigger is a probe frame already; only the fields that are the ToR's. */
            h.pr0.tor = tor_id;
            h.pr0.hops = 0;
            h.pr0.util = 0;
            bit<64> n;
            count_copies(mask, n);
            count_n(HC_PROBES_SENT, n);
            m.wire_len = ip_off + total;
            sm.mcast_grp = HULA_ORIGIN_GROUP;
            DONE;
            return;
        }

        /* ---- Probes (README "Processing"). */
        if (probe) {
            if (dir_in == DIR_HOST || dir_in == DIR_NONE || p_tor >= n_tors || p_tor == tor_id) {
                drop_counted(HC_PROBES_REFUSED);
                DONE;
                return;
            }
            probe_in_us.write((bit<32>)in_port, now);
            /* 2. max(probe's util, this switch's transmit utilisation of the port). */
            bit<64> bytes;
            bit<64> last;
            bit<64> tau;
            bit<64> lg;
            bit<64> scale;
            txutil_bytes.read(bytes, (bit<32>)in_port);
            txutil_last_us.read(last, (bit<32>)in_port);
            tau_us.read(tau, 0);
            log2_tau.read(lg, 0);
            util_scale.read(scale, (bit<32>)in_port);
            bit<64> dt = AGE(now, last);
            bit<64> decayed = 0;
            if (dt < tau) { decayed = (bytes * (tau - dt)) >> (bit<8>)lg; }
            bit<64> uq = (decayed * scale) >> 24;
            bit<32> mine = 0xFFFFFFFF;
            if (uq < 0xFFFFFFFF) { mine = (bit<32>)uq; }
            bit<32> u = p_util;
            if (mine > u) { u = mine; }

            /* 3. The best-k update: drop aged slots and the slot of this port, insert before
             * the first strictly greater util, pad; unrolled for k <= 4. */
            bit<32> base = (bit<32>)p_tor * HULA_K;
            bit<32> sp0; bit<32> su0; bit<64> st0;
            bit<32> sp1; bit<32> su1; bit<64> st1;
            bit<32> sp2; bit<32> su2; bit<64> st2;
            bit<32> sp3; bit<32> su3; bit<64> st3;
            best_port.read(sp0, base); best_util.read(su0, base); best_time_us.read(st0, base);
            best_port.read(sp1, base + 1); best_util.read(su1, base + 1); best_time_us.read(st1, base + 1);
            best_port.read(sp2, base + 2); best_util.read(su2, base + 2); best_time_us.read(st2, base + 2);
            best_port.read(sp3, base + 3); best_util.read(su3, base + 3); best_time_us.read(st3, base + 3);
            bit<32> me = (bit<32>)in_port + 1;
            /* The kept slots, compacted in order (empty: port 0, util 0, time 0). */
            bit<32> cp0 = 0; bit<32> cu0 = 0; bit<64> ct0 = 0;
            bit<32> cp1 = 0; bit<32> cu1 = 0; bit<64> ct1 = 0;
            bit<32> cp2 = 0; bit<32> cu2 = 0; bit<64> ct2 = 0;
            bit<32> cp3 = 0; bit<32> cu3 = 0; bit<64> ct3 = 0;
            bit<32> n = 0;
            bit<64> aged = 0;
#define KEEP(r) \
            if (r < best_k && sp##r != 0) { \
                if (AGE(now, st##r) >= ageing_us) { \
                    aged = aged + 1; \
                } else if (sp##r != me) { \
                    if (n == 0) { cp0 = sp##r; cu0 = su##r; ct0 = st##r; } \
                    else if (n == 1) { cp1 = sp##r; cu1 = su##r; ct1 = st##r; } \
                    else if (n == 2) { cp2 = sp##r; cu2 = su##r; ct2 = st##r; } \
                    else { cp3 = sp##r; cu3 = su##r; ct3 = st##r; } \
                    n = n + 1; \
                } \
            }
            KEEP(0) KEEP(1) KEEP(2) KEEP(3)
#undef KEEP
            /* Where the new entry goes: after every kept slot of util <= u (kept is sorted). */
            bit<32> pos = 0;
            if (n > 0 && cu0 <= u) { pos = 1; }
            if (n > 1 && cu1 <= u) { pos = 2; }
            if (n > 2 && cu2 <= u) { pos = 3; }
            if (n > 3 && cu3 <= u) { pos = 4; }
            bit<32> op0 = cp0; bit<32> ou0 = cu0; bit<64> ot0 = ct0;
            bit<32> op1 = cp1; bit<32> ou1 = cu1; bit<64> ot1 = ct1;
            bit<32> op2 = cp2; bit<32> ou2 = cu2; bit<64> ot2 = ct2;
            bit<32> op3 = cp3; bit<32> ou3 = cu3; bit<64> ot3 = ct3;
            if (pos < best_k) {
                if (pos <= 2) { op3 = cp2; ou3 = cu2; ot3 = ct2; }
                if (pos <= 1) { op2 = cp1; ou2 = cu1; ot2 = ct1; }
                if (pos == 0) { op1 = cp0; ou1 = cu0; ot1 = ct0; }
                if (pos == 0) { op0 = me; ou0 = u; ot0 = now; }
                else if (pos == 1) { op1 = me; ou1 = u; ot1 = now; }
                else if (pos == 2) { op2 = me; ou2 = u; ot2 = now; }
                else { op3 = me; ou3 = u; ot3 = now; }
            }
#define PUT(r) \
            if (r < best_k) { \
                best_port.write(base + r, op##r); \
                best_util.write(base + r, ou##r); \
                best_time_us.write(base + r, ot##r); \
            }
            PUT(0) PUT(1) PUT(2) PUT(3)
#undef PUT
            count_n(HC_AGED, aged);
            count(HC_PROBES_IN);

            /* 5. Replicate with the best path's util from here and hops + 1 (saturating). */
            bit<16> mask;
            mcast_mask.read(mask, (bit<32>)in_port);
            if (mask == 0) {
                mark_to_drop(sm);
                DONE;
                return;
            }
            bit<64> copies;
            count_copies(mask, copies);
            count_n(HC_PROBE_COPIES, copies);
#define HOPS(x) if (x.hops != 255) { x.hops = x.hops + 1; }
            if (h.pr0.isValid()) { h.pr0.util = ou0; HOPS(h.pr0) }
            else if (h.pr1.isValid()) { h.pr1.util = ou0; HOPS(h.pr1) }
            else if (h.pr2.isValid()) { h.pr2.util = ou0; HOPS(h.pr2) }
            else { h.pr3.util = ou0; HOPS(h.pr3) }
#undef HOPS
            m.wire_len = ip_off + total;
            sm.mcast_grp = (bit<16>)in_port + 1;
            DONE;
            return;
        }

        /* ---- Data. */
        if (h.ipv4.dst == own_ip) {
            to_stack(HC_LOCAL);
            DONE;
            return;
        }
        if (h.ipv4.ttl <= 1) {
            drop_counted(HC_TTL_EXPIRED);
            DONE;
            return;
        }
        decrement_ttl();

        /* sport << 16 | dport of a TCP / UDP header complete inside the total length. */
        bit<32> need = 20;
        if (h.ipv4.protocol == 17) { need = 8; }
        bit<32> ports = 0;
        if (h.l4.isValid() && total >= ihl_bytes + need) {
            ports = h.l4.src_port ++ h.l4.dst_port;
        }
        bit<16> shim_bytes = m.shim_bytes;
        bool any_routing = h.rt0.isValid() || h.rt1.isValid() || h.rt2.isValid() || h.rt3.isValid();

        /* ---- MPTCP association and the push (mphula ToRs, TCP). */
        bool assoc_known = false;
        bit<64> assoc_conn = 0;
        bit<16> assoc_sub = 0;
        if (mp == 1 && tor_id != HULA_NO_TOR && h.ipv4.protocol == 6) {
            /* The canonical 5-tuple's seeded hash: both directions share it. */
            bit<48> ea = h.ipv4.src ++ ports[31:16];
            bit<48> eb = h.ipv4.dst ++ ports[15:0];
            bit<32> crc;
            if (ea <= eb) {
                hash(crc, HashAlgorithm.crc32, 32w0,
                     { h.ipv4.src, h.ipv4.dst, h.ipv4.protocol, ports }, 64w0x100000000);
            } else {
                hash(crc, HashAlgorithm.crc32, 32w0,
                     { h.ipv4.dst, h.ipv4.src, h.ipv4.protocol, ports[15:0], ports[31:16] },
                     64w0x100000000);
            }
            bit<32> key = fmix32(crc ^ hash_seed);
            bit<32> slot = key & assoc_mask;
            /* The option is read on a complete TCP header only (wire.rs). */
            bool tcp_ok = h.tcp.isValid() && total >= ihl_bytes + 20;
            bool syn = tcp_ok && h.tcp.flags[1:1] == 1;
            bool ack = tcp_ok && h.tcp.flags[4:4] == 1;
            bit<32> at; bit<8> af; bit<64> aka; bit<64> akb;
            aux_tag.read(at, slot);
            aux_flags.read(af, slot);
            R64_READ(aux_key_a, aka, slot);
            R64_READ(aux_key_b, akb, slot);
            bit<8> sv; bit<32> stag;
            assoc_valid.read(sv, slot);
            assoc_tag.read(stag, slot);
            bool aux_mine = af != 0 && at == key;
            bool associated = sv != 0 && stag == key;
            bool capable = tcp_ok && h.mp.isValid() && h.mp.subtype == 0;
            bool associate = false;
            bool v1 = false;
            if (capable && syn && !ack) {
                bit<8> f = 0;
                bit<64> ka = 0;
                if (h.mp.version >= 1) { f = 4; }
                if (h.key1.isValid()) { ka = h.key1.key; f = f | 1; }
                aux_tag.write(slot, key);
                R64_WRITE(aux_key_a, slot, ka);
                R64_WRITE(aux_key_b, slot, 0);
                aux_flags.write(slot, f);
            } else if (capable && syn && ack && h.key1.isValid() && aux_mine) {
                akb = h.key1.key;
                af = af | 2;
                R64_WRITE(aux_key_b, slot, akb);
                aux_flags.write(slot, af);
                if ((af & 5) == 1) { associate = true; }
            } else if (capable && !syn && ack && h.key2.isValid() && aux_mine && !associated) {
                aka = h.key1.key;
                akb = h.key2.key;
                v1 = af[2:2] == 1;
                associate = true;
            }
            if (associate) {
                bit<32> ta;
                bit<32> tb;
                token_a.apply(aka, v1, ta);
                token_b.apply(akb, v1, tb);
                bit<64> conn = ta ++ tb;
                assoc_valid.write(slot, 1);
                assoc_tag.write(slot, key);
                R64_WRITE(assoc_conn_id, slot, conn);
                assoc_subflow.write(slot, 1);
                assoc_count.write(slot, 1);
                token_valid.write(ta & assoc_mask, 1);
                token_token.write(ta & assoc_mask, ta);
                token_assoc_slot.write(ta & assoc_mask, slot);
                token_valid.write(tb & assoc_mask, 1);
                token_token.write(tb & assoc_mask, tb);
                token_assoc_slot.write(tb & assoc_mask, slot);
                /* Free for the next handshake; tag and keys stay, as the twin's. */
                aux_flags.write(slot, 0);
                count(HC_ASSOC);
            }
            if (tcp_ok && h.mp.isValid() && h.mp.subtype == 1 && h.join.isValid() && syn && !ack) {
                bit<32> t = h.join.token;
                bit<8> tv; bit<32> tt; bit<32> first;
                token_valid.read(tv, t & assoc_mask);
                token_token.read(tt, t & assoc_mask);
                token_assoc_slot.read(first, t & assoc_mask);
                bit<8> fv;
                assoc_valid.read(fv, first);
                if (tv != 0 && tt == t && fv != 0) {
                    bit<8> c;
                    bit<64> fconn;
                    assoc_count.read(c, first);
                    R64_READ(assoc_conn_id, fconn, first);
                    if (c < 15) { c = c + 1; }
                    assoc_count.write(first, c);
                    assoc_valid.write(slot, 1);
                    assoc_tag.write(slot, key);
                    R64_WRITE(assoc_conn_id, slot, fconn);
                    assoc_subflow.write(slot, c);
                    assoc_count.write(slot, c);
                    count(HC_JOINS);
                } else {
                    count(HC_JOIN_MISSES);
                }
            }
            /* The flow's association, after this segment. */
            assoc_valid.read(sv, slot);
            assoc_tag.read(stag, slot);
            if (sv != 0 && stag == key) {
                bit<8> sub8;
                bit<8> cnt;
                assoc_subflow.read(sub8, slot);
                assoc_count.read(cnt, slot);
                R64_READ(assoc_conn_id, assoc_conn, slot);
                assoc_known = true;
                assoc_sub = (bit<16>)sub8;
                /* The push: from a host, no connection header yet, more than one subflow,
                 * room in the stack. */
                if (dir_in == DIR_HOST && !any_routing && !h.sh3.isValid() && (sub8 > 1 || cnt > 1)) {
                    h.push_sh.setValid();
                    h.push_sh.next = h.eth.ether_type;
                    h.push_sh.kind = 1;
                    h.push_sh.len = 4;
                    h.push_rt.setValid();
                    h.push_rt.conn_id = assoc_conn;
                    h.push_rt.path = assoc_sub;
                    h.push_rt.hops = 0;
                    h.push_rt.reserved = 0;
                    h.eth.ether_type = 0x88B5;
                    shim_bytes = shim_bytes + 16;
                    count(HC_PUSHED);
                }
            }
        }

        /* The packet's connection (mphula): its topmost connection header, else at a ToR the
         * association's. */
        bool has_conn = false;
        bit<64> conn_id = 0;
        bit<16> sub = 0;
        if (mp == 1) {
            if (h.push_rt.isValid()) { has_conn = true; conn_id = h.push_rt.conn_id; sub = h.push_rt.path; }
            else if (h.rt0.isValid()) { has_conn = true; conn_id = h.rt0.conn_id; sub = h.rt0.path; }
            else if (h.rt1.isValid()) { has_conn = true; conn_id = h.rt1.conn_id; sub = h.rt1.path; }
            else if (h.rt2.isValid()) { has_conn = true; conn_id = h.rt2.conn_id; sub = h.rt2.path; }
            else if (h.rt3.isValid()) { has_conn = true; conn_id = h.rt3.conn_id; sub = h.rt3.path; }
            else if (assoc_known) { has_conn = true; conn_id = assoc_conn; sub = assoc_sub; }
        }

        /* ---- Route. */
        routes.apply();
        if (is_ecmp) {
            ecmp_group.apply();
        }
        if (is_ecmp && group_size != 0 && group_size <= MPS_MAX_PORTS) {
            /* Ecmp::seeded_hash of the 5-tuple. */
            bit<32> crc;
            hash(crc, HashAlgorithm.crc32, 32w0,
                 { h.ipv4.src, h.ipv4.dst, h.ipv4.protocol, ports }, 64w0x100000000);
            bit<32> fh = fmix32(crc ^ hash_seed);
            bool by_hash = false;
            bool take = false;
            bool conn_update = false;
            bit<32> slot_at = 0;
            bit<32> cslot = 0;
            dest_tor.apply();
            if (dest >= n_tors) {
                by_hash = true;
                count(HC_FALLBACK);
            } else {
                /* The connection's slot, claimed before the flowlet table. */
                bool use_conn = false;
                bit<8> rr = 0;
                bit<32> cb = 0;
                bit<32> h1 = 0; bit<32> h2 = 0; bit<32> h3 = 0; bit<32> h4 = 0;
                if (has_conn) {
                    if (sub == 0 || sub > HULA_SUBFLOWS) {
                        count(HC_SUBFLOW_OVERFLOW);
                    } else {
                        cslot = ((bit<32>)conn_id ^ (bit<32>)(conn_id >> 32)) & conn_mask;
                        cb = cslot * HULA_SUBFLOWS;
                        bit<8> cv;
                        bit<64> cid;
                        conn_valid.read(cv, cslot);
                        R64_READ(conn_conn_id, cid, cslot);
                        conn_rr.read(rr, cslot);
                        bit<16> q1; bit<16> q2; bit<16> q3; bit<16> q4;
                        bit<64> l1; bit<64> l2; bit<64> l3; bit<64> l4;
                        conn_port.read(q1, cb); conn_last_us.read(l1, cb);
                        conn_port.read(q2, cb + 1); conn_last_us.read(l2, cb + 1);
                        conn_port.read(q3, cb + 2); conn_last_us.read(l3, cb + 2);
                        conn_port.read(q4, cb + 3); conn_last_us.read(l4, cb + 3);
                        /* held(j): subflow j's port + 1 while it sent less than a gap ago. */
                        if (q1 != 0 && AGE(now, l1) < gap_us) { h1 = (bit<32>)q1; }
                        if (q2 != 0 && AGE(now, l2) < gap_us) { h2 = (bit<32>)q2; }
                        if (q3 != 0 && AGE(now, l3) < gap_us) { h3 = (bit<32>)q3; }
                        if (q4 != 0 && AGE(now, l4) < gap_us) { h4 = (bit<32>)q4; }
                        bool mine_entry = cv != 0 && cid == conn_id;
                        if (!mine_entry && cv != 0 && (h1 != 0 || h2 != 0 || h3 != 0 || h4 != 0)) {
                            count(HC_CONN_COLLISIONS);
                        } else {
                            use_conn = true;
                            if (!mine_entry) {
                                conn_valid.write(cslot, 1);
                                R64_WRITE(conn_conn_id, cslot, conn_id);
                                conn_rr.write(cslot, 0);
                                rr = 0;
                                h1 = 0; h2 = 0; h3 = 0; h4 = 0;
                                conn_port.write(cb, 0); conn_last_us.write(cb, 0);
                                conn_port.write(cb + 1, 0); conn_last_us.write(cb + 1, 0);
                                conn_port.write(cb + 2, 0); conn_last_us.write(cb + 2, 0);
                                conn_port.write(cb + 3, 0); conn_last_us.write(cb + 3, 0);
                            }
                            /* Siblings only: a subflow never holds a hop against itself. */
                            if (sub == 1) { h1 = 0; }
                            if (sub == 2) { h2 = 0; }
                            if (sub == 3) { h3 = 0; }
                            if (sub == 4) { h4 = 0; }
                        }
                    }
                }
                bit<32> at = fh & table_mask;
                bit<64> entry;
                bit<64> last;
                flowlet_slot.read(entry, at);
                flowlet_last_us.read(last, at);
                bit<16> fport = (bit<16>)(entry >> 32);
                bool active = (entry >> 48) != 0 && AGE(now, last) < gap_us;
                if (active) {
                    /* A port no probe came in by for the ageing time is dead (up / down only). */
                    bit<8> fdir = DIR_NONE;
                    bit<64> seen = 0;
                    if (fport < MPS_MAX_PORTS) {
                        port_dir.read(fdir, (bit<32>)fport);
                        probe_in_us.read(seen, (bit<32>)fport);
                    }
                    if ((fdir == DIR_UP || fdir == DIR_DOWN) && AGE(now, seen) >= ageing_us) {
                        count(HC_DEAD_PORT);
                        active = false;
                    }
                }
                if (active && (bit<32>)entry == fh) {
                    out_port = fport;
                    found = true;
                    flowlet_last_us.write(at, now);
                    count(HC_CONTINUED);
                } else {
                    /* The live best slots of dest, in order (port + 1). */
                    bit<32> base = (bit<32>)dest * HULA_K;
                    bit<32> lp0 = 0; bit<32> lp1 = 0; bit<32> lp2 = 0; bit<32> lp3 = 0;
                    bit<32> live = 0;
#define LIVE(r) \
                    if (r < best_k) { \
                        bit<32> bp##r; \
                        bit<64> bt##r; \
                        best_port.read(bp##r, base + r); \
                        best_time_us.read(bt##r, base + r); \
                        if (bp##r != 0 && AGE(now, bt##r) < ageing_us) { \
                            if (live == 0) { lp0 = bp##r; } \
                            else if (live == 1) { lp1 = bp##r; } \
                            else if (live == 2) { lp2 = bp##r; } \
                            else { lp3 = bp##r; } \
                            live = live + 1; \
                        } \
                    }
                    LIVE(0) LIVE(1) LIVE(2) LIVE(3)
#undef LIVE
                    bit<32> chosen = lp0; /* port + 1; 0: none live */
                    if (use_conn && live > 0) {
                        /* The sub-flowlet choice: the first candidate no sibling holds. */
                        bit<32> skips = 0;
                        bool picked = false;
#define CAND(r) \
                        if (!picked && live > r) { \
                            if (lp##r == h1 || lp##r == h2 || lp##r == h3 || lp##r == h4) { \
                                skips = skips + 1; \
                            } else { \
                                chosen = lp##r; \
                                picked = true; \
                            } \
                        }
                        CAND(0) CAND(1) CAND(2) CAND(3)
#undef CAND
                        count_n(HC_SIBLING_SKIPS, (bit<64>)skips);
                        if (!picked) {
                            bit<32> i = mod_small((bit<32>)rr, live);
                            if (i == 0) { chosen = lp0; }
                            else if (i == 1) { chosen = lp1; }
                            else if (i == 2) { chosen = lp2; }
                            else { chosen = lp3; }
                            conn_rr.write(cslot, rr + 1);
                            count(HC_ROUND_ROBIN);
                        }
                    }
                    if (chosen != 0) {
                        out_port = (bit<16>)(chosen - 1);
                        found = true;
                    } else {
                        by_hash = true;
                        count(HC_FALLBACK);
                    }
                    if (active) {
                        count(HC_COLLISIONS);
                    } else {
                        take = true;
                        slot_at = at;
                        count(HC_NEW_FLOWLETS);
                    }
                }
                conn_update = use_conn;
            }
            if (by_hash) {
                member = mod_small(fh, group_size);
                ecmp_member.apply();
            }
            if (take && found) {
                flowlet_slot.write(slot_at, (64w1 << 48) | ((bit<64>)out_port << 32) | (bit<64>)fh);
                flowlet_last_us.write(slot_at, now);
            }
            if (conn_update && found) {
                bit<32> ci = cslot * HULA_SUBFLOWS + (bit<32>)sub - 1;
                conn_port.write(ci, out_port + 1);
                conn_last_us.write(ci, now);
            }
        }
        if (!found) {
            drop_counted(HC_NO_ROUTE);
            DONE;
            return;
        }

        /* ---- The pop: towards a host, a connection header on top of the stack goes. */
        bit<8> dir_out = DIR_NONE;
        if (out_port < MPS_MAX_PORTS) {
            port_dir.read(dir_out, (bit<32>)out_port);
        }
        if (dir_out == DIR_HOST) {
            if (h.push_rt.isValid()) {
                h.eth.ether_type = h.push_sh.next;
                h.push_sh.setInvalid();
                h.push_rt.setInvalid();
                shim_bytes = shim_bytes - 16;
                count(HC_POPPED);
            } else if (h.rt0.isValid()) {
                h.eth.ether_type = h.sh0.next;
                shim_bytes = shim_bytes - ((bit<16>)h.sh0.len << 2);
                h.sh0.setInvalid();
                h.rt0.setInvalid();
                h.ex0.setInvalid();
                count(HC_POPPED);
            }
        }
        if (!port_macs.apply().hit) {
            drop_counted(HC_REDIRECT_FAILED);
            DONE;
            return;
        }
        sm.egress_spec = (bit<9>)out_port;
        bit<8> queues;
        port_queues.read(queues, (bit<32>)out_port);
        sm.priority = MPS_CLAMP_QUEUE(h.ipv4.tos[7:5], queues);
        count_tx(out_port);
        m.wire_len = 14 + (bit<32>)shim_bytes + total;
        DONE;
    }
}

control HulaEgress(inout hula_headers_t h, inout hula_meta_t m, inout standard_metadata_t sm) {
    action set_macs(bit<48> own, bit<48> peer) {
        h.eth.src = own;
        h.eth.dst = peer;
    }

    /* A probe copy's MACs, by the port it leaves by. */
    table copy_macs {
        key = { sm.egress_port: exact; }
        actions = { set_macs; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_PORTS;
    }

    apply {
        if (sm.instance_type == BMV2_INSTANCE_REPLICATION) {
            copy_macs.apply();
        }
        /* The transmit utilisation estimator (README formulas, bit<64> arithmetic). */
        if (m.est == 1 && (bit<16>)sm.egress_port < MPS_MAX_PORTS) {
            bit<8> flags;
            test_flags.read(flags, 0);
            bit<64> now;
            if (flags[0:0] == 1) {
                test_clock_us.read(now, 0);
            } else {
                now = (bit<64>)sm.egress_global_timestamp;
            }
            bit<32> p = (bit<32>)sm.egress_port;
            bit<64> bytes;
            bit<64> last;
            bit<64> tau;
            bit<64> lg;
            txutil_bytes.read(bytes, p);
            txutil_last_us.read(last, p);
            tau_us.read(tau, 0);
            log2_tau.read(lg, 0);
            bit<64> dt = 0;
            if (now > last) { dt = now - last; }
            bit<64> l = (bit<64>)m.wire_len;
            if (dt >= tau) {
                bytes = l;
            } else {
                bytes = ((bytes * (tau - dt)) >> (bit<8>)lg) + l;
            }
            if (bytes > 0x80000000) { bytes = 0x80000000; }
            txutil_bytes.write(p, bytes);
            txutil_last_us.write(p, now);
        }
    }
}

control HulaComputeChecksum(inout hula_headers_t h, inout hula_meta_t m) {
    apply {
        /* An originated probe's IPv4 header is the trigger's, whose checksum the prober wrote;
         * forwarding updates the checksum in place. */
    }
}

V1Switch(HulaParser(), HulaVerifyChecksum(), HulaIngress(), HulaEgress(), HulaComputeChecksum(),
         HulaDeparser()) main;
