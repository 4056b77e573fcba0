// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * HULA and MP-HULA for TC (cls_bpf, direct action). The specification is README.md in this
 * folder; the Rust twin is mod.rs. One object serves both programs: HULA_F_MP in the node
 * record turns MP-HULA on, best_k is its k (1 for HULA).
 *
 *   hula_ingress, per frame:
 *     on the trigger interface: originate this ToR's probes (one copy per up port, each by
 *       bpf_clone_redirect; the trigger is dropped) -- the kernel cannot send from a timer, so
 *       a prober in user space writes one frame there every probe period (crates/netns);
 *     frame checks as wire::parse_frame_with_headers (the shim chain, at most 4 shims, then
 *       IPv4), non-IPv4 to the stack, malformed dropped;
 *     a probe (a shim of kind 3): refused, or its port marked alive (probe_in), folded into
 *       the best-k table and replicated to the ports the up/down rule names, then consumed;
 *     data: to the stack if addressed here, TTL, MPTCP association at an MP-HULA ToR (and the
 *       connection header pushed on a packet from a host), LPM route; an equal-cost group goes
 *       through the flowlet table (a flowlet on a dead port ends) to the best live hop, or for
 *       a packet of a known connection (a header, or the ToR's association) the sub-flowlet
 *       choice over its claimed connection slot; ECMP by hash when there is none; the
 *       connection header is popped when the packet leaves by a host port.
 *   hula_egress, per frame leaving a port: the transmit utilisation estimator.
 *
 * Concurrency. The estimator and the best-hop entries change on several CPUs at once (a port's
 * egress, probes of one ToR arriving on two ports), and a lost update would be a wrong
 * utilisation for a whole probe period: each entry has a bpf_spin_lock and is read and written
 * under it (the work inside is a few compares, no helper). The flowlet, association and
 * connection tables have no lock, as LetFlow's: two CPUs racing on a slot can at worst start a
 * flowlet twice (its first packets on two hops), lose one join count, or record a subflow's hop
 * a packet late; every port written into them is one of this node's, so no race misroutes a
 * packet out of the node. The counters are per CPU.
 */
#include "mps_common.h"
#include <linux/tcp.h>
#include "hula.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

_Static_assert(sizeof(struct hula_node) == HULA_SIZEOF_NODE, "struct hula_node");
_Static_assert(sizeof(struct hula_port_cfg) == HULA_SIZEOF_PORT_CFG, "struct hula_port_cfg");
_Static_assert(sizeof(struct hula_txutil) == HULA_SIZEOF_TXUTIL, "struct hula_txutil");
_Static_assert(sizeof(struct hula_best) == HULA_SIZEOF_BEST, "struct hula_best");
_Static_assert(sizeof(struct hula_flowlet) == HULA_SIZEOF_FLOWLET, "struct hula_flowlet");
_Static_assert(sizeof(struct hula_aux) == HULA_SIZEOF_AUX, "struct hula_aux");
_Static_assert(sizeof(struct hula_assoc) == HULA_SIZEOF_ASSOC, "struct hula_assoc");
_Static_assert(sizeof(struct hula_token) == HULA_SIZEOF_TOKEN, "struct hula_token");
_Static_assert(sizeof(struct hula_conn) == HULA_SIZEOF_CONN, "struct hula_conn");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_node);
} node SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct hula_port_cfg);
} port_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct hula_txutil);
} txutil SEC(".maps");

/* The maps below are sized at load time (bpf_map__set_max_entries) from the parameters. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_best);
} best SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_flowlet);
} flowlets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_aux);
} aux SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_assoc);
} assoc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_token);
} tokens SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_conn);
} conns SEC(".maps");

/* Per port: when a probe last came in by it (µs); an up or down port none came in by for the
 * ageing time is dead. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u64);
} probe_in SEC(".maps");

/* Destination prefix -> ToR id (ProbeConfig::dest_tors), longest prefix first. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, MPS_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mps_route_key);
	__type(value, __u32);
} dest_tors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hula_probe_tmpl);
} probe_tmpl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HULA_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* The node record. The global functions below look it up themselves: the verifier checks each
 * of them once, on its own, with its arguments as its signature says (the pointers may be
 * NULL), so that the paths of one stage do not multiply with another's. */
static __always_inline struct hula_node *the_node(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&node, &zero);
}

static __always_inline void count_n(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

static __always_inline void count(__u32 which)
{
	count_n(which, 1);
}

static __always_inline __u64 now_us(const struct hula_node *n)
{
	return (n->flags & HULA_F_TEST_CLOCK) ? n->test_clock_us : bpf_ktime_get_ns() / 1000;
}

/* now - then, zero when another CPU's clock read is a little ahead of ours. */
static __always_inline __u64 age_of(__u64 now, __u64 then)
{
	return now > then ? now - then : 0;
}

static __always_inline __u32 port_dir(__u32 port)
{
	struct hula_port_cfg *c = bpf_map_lookup_elem(&port_cfg, &port);

	return c ? c->dir : HULA_DIR_NONE;
}

/* ---- Transmit utilisation (README: "Transmit utilisation estimator") ----------------------- */

/* bytes decayed over dt: zero after tau, else bytes * (tau - dt) / tau (< 2^44, no overflow). */
static __always_inline __u64 decayed(const struct hula_node *n, __u64 bytes, __u64 dt)
{
	if (dt >= n->tau_us)
		return 0;
	return (bytes * (n->tau_us - dt)) >> (n->log2_tau & 63);
}

/* util_q16(p, now): the port's decayed byte count in Q16 of its capacity. */
static __always_inline __u32 util_q16(const struct hula_node *n, __u32 port, __u64 now)
{
	struct hula_port_cfg *c = bpf_map_lookup_elem(&port_cfg, &port);
	struct hula_txutil *t = bpf_map_lookup_elem(&txutil, &port);
	__u64 bytes, last, u;

	if (!c || !t)
		return 0;
	bpf_spin_lock(&t->lock);
	bytes = t->bytes;
	last = t->last_us;
	bpf_spin_unlock(&t->lock);
	u = (decayed(n, bytes, age_of(now, last)) * c->util_scale) >> 24;
	return u > 0xffffffffull ? 0xffffffffu : (__u32)u;
}

SEC("tc")
int hula_egress(struct __sk_buff *skb)
{
	__u32 zero = 0, len = skb->len;
	struct hula_node *n = bpf_map_lookup_elem(&node, &zero);
	struct hula_txutil *t;
	int port = port_of(skb->ifindex);
	__u32 pk;
	__u64 now, b;

	if (!n || port < 0)
		return TC_ACT_OK;
	pk = port;
	t = bpf_map_lookup_elem(&txutil, &pk);
	if (!t)
		return TC_ACT_OK;
	now = now_us(n);
	bpf_spin_lock(&t->lock);
	b = age_of(now, t->last_us) >= n->tau_us ? len : decayed(n, t->bytes, age_of(now, t->last_us)) + len;
	t->bytes = b < HULA_UTIL_BYTES_MAX ? b : HULA_UTIL_BYTES_MAX;
	t->last_us = now;
	bpf_spin_unlock(&t->lock);
	return TC_ACT_OK;
}

/* ---- Frames ------------------------------------------------------------------------------- */

/* What hula_parse found of a frame. */
struct hula_frame {
	__u32 ip_off;    /* the IPv4 header */
	__u32 ihl;       /* its length, bytes */
	__u32 tot_len;   /* its total length */
	__u32 probe_off; /* the first probe shim (0: none) */
	__u32 conn_off;  /* the first connection-header shim (0: none) */
	__u32 n_shims;
	struct iphdr ip; /* a copy of the IPv4 header's first 20 bytes */
};

/* Body bytes a shim kind needs; 0 for an unknown kind. */
static __always_inline __u32 shim_body_bytes(__u8 kind)
{
	return kind == HULA_SHIM_ROUTING ? 12 : kind == HULA_SHIM_INT ? 16 : kind == HULA_SHIM_PROBE ? 8 : 0;
}

/* Walk the shim chain (wire::parse_shims): MPS_PARSED_* and, on IPv4, the IPv4 offset. */
static __always_inline int walk_shims(struct __sk_buff *skb, struct hula_frame *f, __u16 *etype)
{
	__u32 at = sizeof(struct ethhdr), i;
	__u8 w[4];

	for (i = 0; i < HULA_MAX_SHIMS; i++) {
		__u32 bytes;

		if (*etype != HULA_ETH_P_SHIM)
			break;
		if (at + 4 > skb->len || bpf_skb_load_bytes(skb, at & 0xfff, w, 4))
			return MPS_PARSED_MALFORMED; /* TruncatedShim */
		bytes = 4 * (__u32)w[3];
		if (bytes == 0)
			return MPS_PARSED_MALFORMED; /* BadShimLength */
		if (at + bytes > skb->len)
			return MPS_PARSED_MALFORMED; /* TruncatedShim */
		if (shim_body_bytes(w[2]) == 0 || bytes - 4 < shim_body_bytes(w[2]))
			return MPS_PARSED_MALFORMED; /* UnknownShimKind, BadShimLength */
		if (w[2] == HULA_SHIM_PROBE && !f->probe_off)
			f->probe_off = at;
		if (w[2] == HULA_SHIM_ROUTING && !f->conn_off)
			f->conn_off = at;
		*etype = ((__u16)w[0] << 8) | w[1];
		at += bytes;
		f->n_shims += 1;
	}
	if (*etype == HULA_ETH_P_SHIM)
		return MPS_PARSED_MALFORMED; /* TooManyShims */
	f->ip_off = at;
	return MPS_PARSED_IPV4;
}

/* wire::parse_frame_with_headers, check for check. */
static __always_inline int hula_parse(struct __sk_buff *skb, struct hula_frame *f)
{
	__u32 len = skb->len, room;
	__u16 etype;
	__u8 et[2];
	int r;

	if (len < sizeof(struct ethhdr) || bpf_skb_load_bytes(skb, 12, et, 2))
		return MPS_PARSED_MALFORMED; /* Runt */
	if (skb->vlan_present)
		return MPS_PARSED_NOT_IPV4;
	etype = ((__u16)et[0] << 8) | et[1];
	r = walk_shims(skb, f, &etype);
	if (r != MPS_PARSED_IPV4)
		return r;
	if (etype != ETH_P_IP)
		return MPS_PARSED_NOT_IPV4;
	if (f->ip_off > 1024 || len < f->ip_off + sizeof(struct iphdr) ||
	    bpf_skb_load_bytes(skb, f->ip_off & 0x7ff, &f->ip, sizeof(struct iphdr)))
		return MPS_PARSED_MALFORMED; /* TruncatedIpv4 */
	if (f->ip.version != 4)
		return MPS_PARSED_MALFORMED; /* BadVersion */
	f->ihl = f->ip.ihl * 4;
	if (f->ihl < sizeof(struct iphdr))
		return MPS_PARSED_MALFORMED; /* BadIhl */
	room = len - f->ip_off;
	if (room < f->ihl)
		return MPS_PARSED_MALFORMED; /* TruncatedIpv4 */
	f->tot_len = bpf_ntohs(f->ip.tot_len);
	if (f->tot_len < f->ihl || f->tot_len > room)
		return MPS_PARSED_MALFORMED; /* BadTotalLength */
	return MPS_PARSED_IPV4;
}

/* The first 4 bytes of the L4 header (source and destination port) when wire::parse_frame reads
 * them (a first fragment of UDP with 8 header bytes or TCP with 20); else 0. */
static __always_inline __u32 hula_l4_ports(struct __sk_buff *skb, const struct hula_frame *f)
{
	__u8 proto = f->ip.protocol;
	__u32 need = proto == IPPROTO_UDP ? 8 : 20;
	__u8 p[4];

	if ((proto != IPPROTO_UDP && proto != IPPROTO_TCP) || (bpf_ntohs(f->ip.frag_off) & 0x1fff) != 0 ||
	    f->tot_len < f->ihl + need)
		return 0;
	if (bpf_skb_load_bytes(skb, (f->ip_off + f->ihl) & 0xfff, p, sizeof(p)))
		return 0;
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

/* TTL - 1 with the checksum updated as decrement_ttl does (RFC 1624), through the helpers: the
 * IPv4 header's offset depends on the shims before it. */
static __always_inline int hula_decrement_ttl(struct __sk_buff *skb, struct hula_frame *f)
{
	__u32 off = f->ip_off & 0x7ff;
	__u16 old_w = *(__u16 *)&f->ip.ttl, new_w;

	f->ip.ttl -= 1;
	new_w = *(__u16 *)&f->ip.ttl;
	if (bpf_l3_csum_replace(skb, off + offsetof(struct iphdr, check), old_w, new_w, 2))
		return -1;
	return bpf_skb_store_bytes(skb, off + offsetof(struct iphdr, ttl), &f->ip.ttl, 1, 0);
}

/* ---- Best hops (README: "Best-k entries") --------------------------------------------------- */

static __always_inline int hop_live(const struct hula_node *n, const struct hula_hop *h, __u64 now)
{
	return h->port != HULA_NO_PORT && age_of(now, h->time_us) < n->ageing_us;
}

/* The update with (p, u, now), under the entry's lock: returns how many slots aged out. */
static __always_inline __u32 best_fold(const struct hula_node *n, struct hula_best *b, __u16 p, __u32 u,
				       __u64 now)
{
	struct hula_hop keep[HULA_MAX_K], fresh = { .port = p, .util = u, .time_us = now };
	__u32 k = n->best_k, m = 0, o = 0, aged = 0, inserted = 0, i;

#pragma unroll
	for (i = 0; i < HULA_MAX_K; i++) {
		if (i >= k || b->hop[i].port == HULA_NO_PORT)
			continue;
		if (!hop_live(n, &b->hop[i], now)) {
			aged++;
			continue;
		}
		if (b->hop[i].port != p && m < HULA_MAX_K)
			keep[m++] = b->hop[i];
	}
#pragma unroll
	for (i = 0; i < HULA_MAX_K; i++) {
		if (i >= m)
			continue;
		if (!inserted && keep[i].util > u && o < k && o < HULA_MAX_K) {
			b->hop[o++] = fresh;
			inserted = 1;
		}
		if (o < k && o < HULA_MAX_K)
			b->hop[o++] = keep[i];
	}
	if (!inserted && o < k && o < HULA_MAX_K)
		b->hop[o++] = fresh;
#pragma unroll
	for (i = 0; i < HULA_MAX_K; i++) {
		if (i >= o) {
			b->hop[i].port = HULA_NO_PORT;
			b->hop[i].util = 0;
			b->hop[i].time_us = 0;
		}
	}
	return aged;
}

/* Fold (p, u, now) into ToR `tor`'s entry; the best util after it (README step 4). */
static __always_inline __u32 best_update(const struct hula_node *n, __u32 tor, __u16 p, __u32 u, __u64 now)
{
	struct hula_best *b = bpf_map_lookup_elem(&best, &tor);
	__u32 aged, out;

	if (!b)
		return u;
	bpf_spin_lock(&b->lock);
	aged = best_fold(n, b, p, u, now);
	out = b->hop[0].util;
	bpf_spin_unlock(&b->lock);
	if (aged)
		count_n(HULA_C_AGED, aged);
	return out;
}

/* A copy of ToR `tor`'s entry, read under its lock. */
static __always_inline int best_read(__u32 tor, struct hula_hop *out)
{
	struct hula_best *b = bpf_map_lookup_elem(&best, &tor);

	if (!b)
		return -1;
	bpf_spin_lock(&b->lock);
	__builtin_memcpy(out, b->hop, sizeof(b->hop));
	bpf_spin_unlock(&b->lock);
	return 0;
}

/* ---- Probes (README: "Probes") ------------------------------------------------------------- */

/* Send a copy of the frame by every port of `mask` (port order), each with the port's MACs;
 * how many left. */
static __always_inline __u32 replicate(struct __sk_buff *skb, __u32 mask)
{
	__u32 p, copies = 0, len = skb->len;

	for (p = 0; p < MPS_MAX_PORTS; p++) {
		struct mps_port *out;
		__u32 pk = p;

		if (!(mask & (1u << p)))
			continue;
		out = bpf_map_lookup_elem(&ports, &pk);
		if (!out || out->ifindex == 0 || set_macs(skb, out)) {
			count(HULA_C_REDIRECT_FAILED);
			continue;
		}
		if (bpf_clone_redirect(skb, out->ifindex, 0)) {
			count(HULA_C_REDIRECT_FAILED);
			continue;
		}
		count_port(pk, len, 1);
		copies++;
	}
	return copies;
}

/* A probe arriving on `in_port` (README "Processing"): refused, or folded and replicated. */
__attribute__((noinline)) int hula_probe_in(struct __sk_buff *skb, __u32 in_port, __u32 off)
{
	struct hula_node *n = the_node();
	__u32 dir = port_dir(in_port), tor, util, here, mask;
	__u8 body[8];
	__u64 now;

	if (!n || bpf_skb_load_bytes(skb, (off + 4) & 0x7ff, body, sizeof(body)))
		return TC_ACT_SHOT;
	tor = ((__u32)body[0] << 8) | body[1];
	util = ((__u32)body[4] << 24) | ((__u32)body[5] << 16) | ((__u32)body[6] << 8) | body[7];
	if (dir == HULA_DIR_HOST || dir == HULA_DIR_NONE || tor >= n->n_tors ||
	    ((n->flags & HULA_F_TOR) && tor == n->tor_id)) {
		count(HULA_C_PROBES_REFUSED);
		return TC_ACT_SHOT;
	}
	now = now_us(n);
	{
		__u64 *t = bpf_map_lookup_elem(&probe_in, &in_port);

		if (t)
			*t = now;
	}
	here = util_q16(n, in_port, now);
	util = best_update(n, tor, in_port, util > here ? util : here, now);
	if (body[2] < 255) /* hops saturate */
		body[2] += 1;
	body[4] = util >> 24;
	body[5] = util >> 16;
	body[6] = util >> 8;
	body[7] = util;
	if (bpf_skb_store_bytes(skb, (off + 4) & 0x7ff, body, sizeof(body), 0))
		return TC_ACT_SHOT;
	mask = dir == HULA_DIR_DOWN ? (n->up_mask | n->down_mask) & ~(1u << in_port) : n->down_mask;
	count(HULA_C_PROBES_IN);
	count_n(HULA_C_PROBE_COPIES, replicate(skb, mask));
	return TC_ACT_SHOT;
}

/* The trigger frame: this ToR's probes, one per up port (README "Origination"). The frame
 * becomes the probe template (tor = this ToR, hops 0, util 0) and is dropped after copying. */
__attribute__((noinline)) int hula_originate(struct __sk_buff *skb)
{
	struct hula_node *n = the_node();
	__u32 zero = 0;
	struct hula_probe_tmpl *t = bpf_map_lookup_elem(&probe_tmpl, &zero);

	if (!n || !t || !(n->flags & HULA_F_TOR))
		return TC_ACT_SHOT;
	if (skb->len != HULA_PROBE_FRAME_BYTES && bpf_skb_change_tail(skb, HULA_PROBE_FRAME_BYTES, 0))
		return TC_ACT_SHOT;
	if (bpf_skb_store_bytes(skb, 0, t->bytes, HULA_PROBE_FRAME_BYTES, 0))
		return TC_ACT_SHOT;
	count_n(HULA_C_PROBES_SENT, replicate(skb, n->up_mask));
	return TC_ACT_SHOT;
}

/* The packet being routed. */
struct hula_pkt {
	__u32 h;       /* the seeded 5-tuple hash */
	__u32 tor;     /* its destination ToR, or n_tors (none) */
	__u64 conn_id; /* with has_conn */
	__u16 subflow;
	__u8 has_conn; /* a known connection: a connection header, or a ToR's association */
	__u8 claimed;  /* its connection table slot is its own (conn_claim) */
};

/* ---- MPTCP association (README "MPTCP association") ---------------------------------------- */

/* SHA-256 round constants. */
static const __u32 sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static __always_inline __u32 ror32(__u32 x, __u32 r)
{
	return (x >> r) | (x << (32 - r));
}

/* The one block of an 8-byte message, big-endian words: key, 0x80 pad, bit length 64. */
static __always_inline void key_block(__u32 *w, __u64 key)
{
	__u32 i;

	for (i = 0; i < 16; i++)
		w[i] = 0;
	w[0] = key >> 32;
	w[1] = (__u32)key;
	w[2] = 0x80000000u;
	w[15] = 64;
}

/* token(v1, key): the top 32 bits of SHA-256 of the key in network order. A global function:
 * the verifier walks its 64 rounds once. */
__attribute__((noinline)) __u32 hula_token_v1(__u64 key)
{
	__u32 w[16], a = 0x6a09e667, b = 0xbb67ae85, c = 0x3c6ef372, d = 0xa54ff53a;
	__u32 e = 0x510e527f, f = 0x9b05688c, g = 0x1f83d9ab, h = 0x5be0cd19, t;

	key_block(w, key);
	for (t = 0; t < 64; t++) {
		__u32 wt, t1, t2;

		if (t >= 16) {
			__u32 w2 = w[(t - 2) & 15], w15 = w[(t - 15) & 15];

			w[t & 15] += (ror32(w2, 17) ^ ror32(w2, 19) ^ (w2 >> 10)) + w[(t - 7) & 15] +
				     (ror32(w15, 7) ^ ror32(w15, 18) ^ (w15 >> 3));
		}
		wt = w[t & 15];
		t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[t & 63] + wt;
		t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	return a + 0x6a09e667;
}

/* token(v0, key): the top 32 bits of SHA-1 of the key in network order. */
__attribute__((noinline)) __u32 hula_token_v0(__u64 key)
{
	__u32 w[16], a = 0x67452301, b = 0xefcdab89, c = 0x98badcfe, d = 0x10325476, e = 0xc3d2e1f0, t;

	key_block(w, key);
	for (t = 0; t < 80; t++) {
		__u32 f, k, tmp;

		if (t >= 16)
			w[t & 15] = ror32(w[(t - 3) & 15] ^ w[(t - 8) & 15] ^ w[(t - 14) & 15] ^ w[t & 15], 31);
		if (t < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (t < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (t < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		tmp = ror32(a, 27) + f + e + k + w[t & 15];
		e = d;
		d = c;
		c = ror32(b, 2);
		b = a;
		a = tmp;
	}
	return a + 0x67452301;
}

static __always_inline __u32 mptcp_token(__u8 version, __u64 key)
{
	return version == 0 ? hula_token_v0(key) : hula_token_v1(key);
}

/* The MPTCP option of a TCP segment, as mpsched_core::mptcp::find_in_tcp_options and
 * MptcpOption::parse read the forms MP-HULA uses. */
struct hula_mptcp {
	__u8 found;   /* a well-formed MP_CAPABLE or MP_JOIN SYN */
	__u8 subtype; /* 0 MP_CAPABLE, 1 MP_JOIN */
	__u8 version;
	__u8 len;
	__u8 tcp_flags;
	__u8 has_keys; /* 1: sender key, 2: both keys */
	__u64 key_s;   /* the sender's key */
	__u64 key_r;   /* the receiver's key */
	__u32 token;   /* MP_JOIN: the receiver's token */
};

static __always_inline __u64 be64_at(const __u8 *b, __u32 at)
{
	__u64 v = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < 8; i++)
		v = (v << 8) | b[(at + i) & 63];
	return v;
}

/* Read the option at `at` (kind 30, length `len`, inside the block) into *m. */
static __always_inline void mptcp_read(const __u8 *b, __u32 at, __u32 len, struct hula_mptcp *m)
{
	__u8 st = b[(at + 2) & 63] >> 4;

	if (len < 3)
		return; /* NotMptcp */
	m->subtype = st;
	m->len = len;
	if (st == 0 && (len == 4 || len == 12 || len == 20 || len == 22 || len == 24)) {
		m->found = 1;
		m->version = b[(at + 2) & 63] & 0x0f;
		m->has_keys = len == 4 ? 0 : len == 12 ? 1 : 2;
		m->key_s = be64_at(b, at + 4);
		m->key_r = be64_at(b, at + 12);
	} else if (st == 1 && len == 12) {
		m->found = 1;
		m->token = ((__u32)b[(at + 4) & 63] << 24) | ((__u32)b[(at + 5) & 63] << 16) |
			   ((__u32)b[(at + 6) & 63] << 8) | b[(at + 7) & 63];
	}
}

/* The state of a walk over a TCP option block (bpf_loop's context). */
struct opt_walk {
	__u8 b[64];     /* the block, zero past its end */
	__u32 opt_len;  /* its length, at most 40 */
	__u32 at;       /* the next option */
	__u32 mptcp_at; /* the MPTCP option found, with its length */
	__u32 mptcp_len;
};

/* One option of the walk: 1 ends it. A length of 0 or 1, or one running past the block, ends
 * it too (find_in_tcp_options). A bpf_loop callback, so that the verifier checks one step, not
 * every sequence of 40. */
static long opt_step(__u64 i, struct opt_walk *w)
{
	__u32 at = w->at;
	__u8 kind, len;

	if (at >= w->opt_len || at >= 40)
		return 1;
	kind = w->b[at & 63];
	if (kind == 0)
		return 1;
	if (kind == 1) {
		w->at = at + 1;
		return 0;
	}
	if (at + 1 >= w->opt_len)
		return 1;
	len = w->b[(at + 1) & 63];
	if (len < 2 || at + len > w->opt_len)
		return 1;
	if (kind == 30) {
		w->mptcp_at = at;
		w->mptcp_len = len;
		return 1;
	}
	w->at = at + len;
	return 0;
}

/* The first MPTCP option in at most 40 bytes of TCP options (data offset bounds them). */
__attribute__((noinline)) int hula_mptcp_option(struct __sk_buff *skb, __u32 l4_off, __u32 l4_len,
						 struct hula_mptcp *m)
{
	struct opt_walk w = {};
	__u8 hdr[14];
	__u32 opt_len;

	if (!m || l4_len < 20 || bpf_skb_load_bytes(skb, l4_off & 0xfff, hdr, sizeof(hdr)))
		return 0;
	m->tcp_flags = hdr[13];
	opt_len = (hdr[12] >> 4) * 4;
	if (opt_len <= 20 || opt_len > l4_len)
		return 0;
	opt_len -= 20;
	if (opt_len == 0 || opt_len > 40 || bpf_skb_load_bytes(skb, (l4_off + 20) & 0xfff, w.b, opt_len))
		return 0;
	w.opt_len = opt_len;
	bpf_loop(40, opt_step, &w, 0);
	if (w.mptcp_len)
		mptcp_read(w.b, w.mptcp_at, w.mptcp_len, m);
	return m->found;
}

/* The switch's seeded hash of the canonical 5-tuple (smaller (ip, port) endpoint first). */
static __always_inline __u32 canonical_key(const struct hula_node *n, __u32 src, __u32 dst, __u32 l4ports)
{
	__u64 a = ((__u64)src << 16) | (l4ports >> 16), b = ((__u64)dst << 16) | (l4ports & 0xffff);
	__u32 crc = a <= b ? mps_crc32_5tuple(src, dst, IPPROTO_TCP, l4ports)
			   : mps_crc32_5tuple(dst, src, IPPROTO_TCP, (l4ports << 16) | (l4ports >> 16));

	return seeded_hash(crc, n->hash_seed);
}

/* A handshake's two keys and the hash that makes its tokens. */
struct hula_keys {
	__u64 a;
	__u64 b;
	__u8 version;
};

/* Associate: both tokens, the connection id, the assoc entry and its two token entries. */
__attribute__((noinline)) int hula_associate(__u32 slot, __u32 tag, struct hula_keys *keys)
{
	struct hula_node *n = the_node();
	struct hula_assoc *as = bpf_map_lookup_elem(&assoc, &slot);
	struct hula_aux *x = bpf_map_lookup_elem(&aux, &slot);
	struct hula_token *t;
	__u32 ta, tb, k;

	if (!n || !as || !x || !keys)
		return 0;
	ta = mptcp_token(keys->version, keys->a);
	tb = mptcp_token(keys->version, keys->b);
	as->tag = tag;
	as->conn_id = ((__u64)ta << 32) | tb;
	as->subflow = 1;
	as->count = 1;
	as->valid = 1;
	k = ta & n->assoc_mask;
	t = bpf_map_lookup_elem(&tokens, &k);
	if (t) {
		t->token = ta;
		t->assoc_slot = slot;
		t->valid = 1;
	}
	k = tb & n->assoc_mask;
	t = bpf_map_lookup_elem(&tokens, &k);
	if (t) {
		t->token = tb;
		t->assoc_slot = slot;
		t->valid = 1;
	}
	x->flags = 0; /* free for the next handshake; its tag and keys stay until then */
	count(HULA_C_ASSOC);
	return 1;
}

/* MP_CAPABLE on a segment (SYN, SYN/ACK, third ACK). An aux slot is empty while its flags are
 * 0; the version is the SYN's (a version above 1 hashes as 1). */
static __always_inline void on_capable(__u32 slot, __u32 tag, const struct hula_mptcp *m)
{
	struct hula_aux *x = bpf_map_lookup_elem(&aux, &slot);
	struct hula_assoc *as = bpf_map_lookup_elem(&assoc, &slot);
	int syn = m->tcp_flags & 0x02, ack = m->tcp_flags & 0x10;
	struct hula_keys keys = {};

	if (!x || !as)
		return;
	if (syn && !ack) {
		x->tag = tag;
		x->key_a = m->has_keys ? m->key_s : 0;
		x->key_b = 0;
		x->flags = (m->has_keys ? HULA_AUX_A : 0) | (m->version >= 1 ? HULA_AUX_V1 : 0);
		return;
	}
	if (x->flags == 0 || x->tag != tag)
		return;
	if (syn && ack && m->has_keys) {
		x->key_b = m->key_s;
		x->flags |= HULA_AUX_B;
		if ((x->flags & (HULA_AUX_A | HULA_AUX_V1)) == HULA_AUX_A) {
			keys.a = x->key_a;
			keys.b = x->key_b;
			hula_associate(slot, tag, &keys);
		}
		return;
	}
	if (!syn && ack && m->has_keys == 2 && !(as->valid && as->tag == tag)) {
		keys.a = m->key_s;
		keys.b = m->key_r;
		keys.version = (x->flags & HULA_AUX_V1) ? 1 : 0;
		hula_associate(slot, tag, &keys);
	}
}

/* MP_JOIN on a SYN: the subflow joins the connection its token names. */
static __always_inline void on_join(const struct hula_node *n, __u32 slot, __u32 tag, const struct hula_mptcp *m)
{
	__u32 k = m->token & n->assoc_mask, first_slot;
	struct hula_token *t = bpf_map_lookup_elem(&tokens, &k);
	struct hula_assoc *first, *as;

	if (!(m->tcp_flags & 0x02) || (m->tcp_flags & 0x10))
		return;
	if (!t || !t->valid || t->token != m->token) {
		count(HULA_C_JOIN_MISSES);
		return;
	}
	first_slot = t->assoc_slot & n->assoc_mask;
	first = bpf_map_lookup_elem(&assoc, &first_slot);
	as = bpf_map_lookup_elem(&assoc, &slot);
	if (!first || !as || !first->valid) {
		count(HULA_C_JOIN_MISSES);
		return;
	}
	if (first->count < 15)
		first->count += 1;
	as->tag = tag;
	as->conn_id = first->conn_id;
	as->subflow = first->count;
	as->count = first->count;
	as->valid = 1;
	count(HULA_C_JOINS);
}

/* The connection a TCP segment belongs to: its MPTCP option read into the tables, then its
 * flow's assoc entry: 0 none, 1 associated, 2 of a connection of more than one subflow. */
__attribute__((noinline)) int hula_mptcp_assoc(struct __sk_buff *skb, struct hula_frame *f, __u32 l4ports,
						struct hula_pkt *conn)
{
	struct hula_node *n = the_node();
	struct hula_mptcp m = {};
	struct hula_assoc *as;
	__u32 key, slot;

	if (!n || !f || !conn)
		return 0;
	key = canonical_key(n, bpf_ntohl(f->ip.saddr), bpf_ntohl(f->ip.daddr), l4ports);
	slot = key & n->assoc_mask;
	if ((bpf_ntohs(f->ip.frag_off) & 0x1fff) == 0 &&
	    hula_mptcp_option(skb, f->ip_off + f->ihl, f->tot_len - f->ihl, &m)) {
		if (m.subtype == 0)
			on_capable(slot, key, &m);
		else
			on_join(n, slot, key, &m);
	}
	as = bpf_map_lookup_elem(&assoc, &slot);
	if (!as || !as->valid || as->tag != key)
		return 0;
	conn->conn_id = as->conn_id;
	conn->subflow = as->subflow;
	/* 2: of a connection of more than one subflow (its packets from hosts carry the header) */
	return as->subflow > 1 || as->count > 1 ? 2 : 1;
}

/* ---- The connection header (push at the source ToR, pop towards a host) --------------------- */

/* Insert the connection header after the Ethernet header. */
__attribute__((noinline)) int hula_push_conn(struct __sk_buff *skb, __u64 conn_id, __u32 subflow)
{
	__u8 shim[HULA_CONN_SHIM_BYTES] = { 0x08, 0x00, HULA_SHIM_ROUTING, HULA_CONN_SHIM_BYTES / 4 };
	__u16 et = bpf_htons(HULA_ETH_P_SHIM);
	__u32 i;

#pragma unroll
	for (i = 0; i < 8; i++)
		shim[4 + i] = conn_id >> (56 - 8 * i);
	shim[12] = subflow >> 8;
	shim[13] = subflow;
	if (bpf_skb_adjust_room(skb, HULA_CONN_SHIM_BYTES, BPF_ADJ_ROOM_MAC, 0))
		return -1;
	if (bpf_skb_store_bytes(skb, sizeof(struct ethhdr), shim, sizeof(shim), 0))
		return -1;
	return bpf_skb_store_bytes(skb, 12, &et, 2, 0);
}

/*
 * Remove the connection header that follows the Ethernet header. bpf_skb_adjust_room refuses a
 * packet whose skb->protocol is not IP or IPv6, and a frame that came in as 0x88B5 has that
 * protocol, which no helper sets. A VLAN round trip does: with a tag in skb->vlan_tci, a second
 * push writes the first into the frame (skb->protocol := 802.1Q), and the pop that takes it out
 * again sets skb->protocol from the EtherType after the tag -- which is written as IPv4 first.
 * The frame is then Ethernet (0x0800), the shim, IPv4, and the shim goes with adjust_room.
 */
__attribute__((noinline)) int hula_pop_conn(struct __sk_buff *skb)
{
	__u16 ip = bpf_htons(ETH_P_IP);

	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 1) || bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 1))
		return -1;
	/* Ethernet, the tag in the frame (4 bytes), then the frame's 0x88B5: made 0x0800. */
	if (bpf_skb_store_bytes(skb, 16, &ip, 2, 0))
		return -1;
	if (bpf_skb_vlan_pop(skb) || bpf_skb_vlan_pop(skb))
		return -1;
	if (bpf_skb_adjust_room(skb, -HULA_CONN_SHIM_BYTES, BPF_ADJ_ROOM_MAC, 0))
		return -1;
	return bpf_skb_store_bytes(skb, 12, &ip, 2, 0);
}

/* ---- Data (README "Data packets") ----------------------------------------------------------- */


/* The ECMP choice: group[hash % n]. */
static __always_inline __u32 by_hash(const struct mps_ecmp *g, __u32 h)
{
	return g->ports[(h % g->n_ports) & (MPS_MAX_PORTS - 1)];
}

/* best[T][0] if live, else HULA_NO_PORT. */
static __always_inline __u32 best_hop(const struct hula_node *n, __u32 tor, __u64 now)
{
	struct hula_hop hops[HULA_MAX_K];

	if (best_read(tor, hops) || !hop_live(n, &hops[0], now))
		return HULA_NO_PORT;
	return hops[0].port;
}

/* Whether a subflow other than s holds hop `port` (it sent by it less than a gap ago). */
static __always_inline int held(const struct hula_node *n, const struct hula_conn *c, __u32 s, __u32 port,
				__u64 now)
{
	int h = 0;
	__u32 j;

#pragma unroll
	for (j = 0; j < HULA_MAX_SUBFLOWS; j++)
		if (j + 1 != s && c->port[j] == port && age_of(now, c->last_us[j]) < n->gap_us)
			h = 1;
	return h;
}

static __always_inline int conn_active(const struct hula_node *n, const struct hula_conn *c, __u64 now)
{
	int a = 0;
	__u32 j;

	if (!c->valid)
		return 0;
#pragma unroll
	for (j = 0; j < HULA_MAX_SUBFLOWS; j++)
		if (c->port[j] != HULA_NO_PORT && age_of(now, c->last_us[j]) < n->gap_us)
			a = 1;
	return a;
}

/* The sub-flowlet choice (README) of a packet whose connection slot is claimed: the first live
 * hop no sibling holds, else round robin. */
__attribute__((noinline)) __u32 hula_sub_choice(struct hula_pkt *k, __u64 now)
{
	struct hula_node *n = the_node();
	struct hula_hop hops[HULA_MAX_K];
	__u64 cand = 0; /* live candidates' ports, 16 bits each, rank order */
	__u32 slot, s, i, live = 0;
	struct hula_conn *c;

	if (!n || !k)
		return HULA_NO_PORT;
	slot = ((__u32)k->conn_id ^ (__u32)(k->conn_id >> 32)) & n->conn_mask;
	s = k->subflow;
	c = bpf_map_lookup_elem(&conns, &slot);
	if (!c)
		return HULA_NO_PORT;
	if (best_read(k->tor, hops))
		return HULA_NO_PORT;
#pragma unroll
	for (i = 0; i < HULA_MAX_K; i++) {
		if (i < n->best_k && hop_live(n, &hops[i], now)) {
			cand |= (__u64)hops[i].port << (16 * (live & 3));
			live++;
		}
	}
	if (live == 0)
		return HULA_NO_PORT;
	for (i = 0; i < HULA_MAX_K && i < live; i++) {
		__u32 h = (cand >> (16 * i)) & 0xffff;

		if (!held(n, c, s, h, now))
			return h;
		count(HULA_C_SIBLING_SKIPS);
	}
	i = c->rr % live;
	c->rr += 1;
	count(HULA_C_ROUND_ROBIN);
	return (cand >> (16 * (i & 3))) & 0xffff;
}

/* Every packet of subflow s through the switch: its port and time, in its connection's entry. */
static __always_inline void conn_record(const struct hula_node *n, const struct hula_pkt *k, __u32 port, __u64 now)
{
	__u32 slot = ((__u32)k->conn_id ^ (__u32)(k->conn_id >> 32)) & n->conn_mask, s = k->subflow;
	struct hula_conn *c = bpf_map_lookup_elem(&conns, &slot);

	if (!k->claimed || !c || s == 0 || s > HULA_MAX_SUBFLOWS)
		return;
	c->port[(s - 1) & 3] = port;
	c->last_us[(s - 1) & 3] = now;
}

/* The hop a choice picks: the sub-flowlet choice with a connection header, else best[T][0]. */
static __always_inline __u32 chosen_hop(const struct hula_node *n, const struct hula_pkt *k, __u64 now)
{
	if (k->claimed)
		return hula_sub_choice((struct hula_pkt *)k, now);
	return best_hop(n, k->tor, now);
}

/* On every packet of a known connection, before the flowlet table: its connection slot,
 * claimed (reset for it when another connection there is idle); not for a subflow beyond the
 * table's four or a slot another active connection holds (those are routed as HULA). */
static __always_inline void conn_claim(const struct hula_node *n, struct hula_pkt *k, __u64 now)
{
	__u32 slot = ((__u32)k->conn_id ^ (__u32)(k->conn_id >> 32)) & n->conn_mask, i;
	struct hula_conn *c;

	if (!(n->flags & HULA_F_MP) || !k->has_conn)
		return;
	if (k->subflow == 0 || k->subflow > HULA_MAX_SUBFLOWS) {
		count(HULA_C_SUBFLOW_OVERFLOW);
		return;
	}
	c = bpf_map_lookup_elem(&conns, &slot);
	if (!c)
		return;
	if (!c->valid || c->conn_id != k->conn_id) {
		if (conn_active(n, c, now)) {
			count(HULA_C_CONN_COLLISIONS);
			return;
		}
		__builtin_memset(c, 0, sizeof(*c));
		c->conn_id = k->conn_id;
		c->valid = 1;
#pragma unroll
		for (i = 0; i < HULA_MAX_SUBFLOWS; i++)
			c->port[i] = HULA_NO_PORT;
	}
	k->claimed = 1;
}

/* Whether a flowlet's port is alive: an up or down port while probes come in by it (its link
 * is up), a host or same-level port always. */
static __always_inline int port_alive(const struct hula_node *n, __u32 port, __u64 now)
{
	__u32 dir = port_dir(port);
	__u64 *t;

	if (dir != HULA_DIR_UP && dir != HULA_DIR_DOWN)
		return 1;
	t = bpf_map_lookup_elem(&probe_in, &port);
	return t && age_of(now, *t) < n->ageing_us;
}

/* The HULA choice for a packet routed to group g (README step 3). */
__attribute__((noinline)) __u32 hula_choose(__u32 group, struct hula_pkt *k, __u64 now)
{
	struct hula_node *n = the_node();
	struct mps_ecmp *g = group < MPS_MAX_ECMP_GROUPS ? bpf_map_lookup_elem(&ecmp, &group) : NULL;
	struct hula_flowlet *s;
	__u32 key, port;
	int active;

	if (!n || !k || !g || g->n_ports == 0 || g->n_ports > MPS_MAX_PORTS)
		return HULA_NO_PORT;
	key = k->h & n->table_mask;
	if (k->tor >= n->n_tors) {
		count(HULA_C_FALLBACK);
		return by_hash(g, k->h);
	}
	conn_claim(n, k, now);
	s = bpf_map_lookup_elem(&flowlets, &key);
	if (!s)
		return by_hash(g, k->h);
	active = s->valid && age_of(now, s->last_us) < n->gap_us;
	if (active && !port_alive(n, s->port, now)) {
		/* No probe came in by the flowlet's port for the ageing time: its link is down. */
		count(HULA_C_DEAD_PORT);
		active = 0;
	}
	if (active && s->tag == k->h) {
		s->last_us = now;
		port = s->port;
		count(HULA_C_CONTINUED);
	} else {
		port = chosen_hop(n, k, now);
		if (port == HULA_NO_PORT) {
			port = by_hash(g, k->h);
			count(HULA_C_FALLBACK);
		}
		if (active) {
			count(HULA_C_COLLISIONS);
		} else {
			s->tag = k->h;
			s->port = port;
			s->valid = 1;
			s->last_us = now;
			count(HULA_C_NEW_FLOWLETS);
		}
	}
	conn_record(n, k, port, now);
	return port;
}

/* The connection header a frame carries (conn_off), read into k. */
static __always_inline void read_conn(struct __sk_buff *skb, const struct hula_frame *f, struct hula_pkt *k)
{
	__u8 b[12];
	__u32 i;

	if (!f->conn_off || bpf_skb_load_bytes(skb, (f->conn_off + 4) & 0x7ff, b, sizeof(b)))
		return;
	k->conn_id = 0;
#pragma unroll
	for (i = 0; i < 8; i++)
		k->conn_id = (k->conn_id << 8) | b[i];
	k->subflow = ((__u16)b[8] << 8) | b[9];
	k->has_conn = 1;
}

/* The route's port (HULA's choice for a group), or -1: no route. */
static __always_inline int route(const struct hula_frame *f, struct hula_pkt *k, __u64 now)
{
	struct mps_route_key key = { .prefixlen = 32, .addr = f->ip.daddr };
	__u32 *r = bpf_map_lookup_elem(&routes, &key), port;

	if (!r)
		return -1;
	if (!(*r & MPS_ECMP_GROUP))
		return *r & 0xffff;
	port = hula_choose(*r & ~MPS_ECMP_GROUP, k, now);
	return port == HULA_NO_PORT ? -1 : (int)(port & 0xffff);
}

static __always_inline __u32 dest_tor(const struct hula_node *n, __u32 daddr)
{
	struct mps_route_key key = { .prefixlen = 32, .addr = daddr };
	__u32 *t = bpf_map_lookup_elem(&dest_tors, &key);

	return t && *t < n->n_tors ? *t : n->n_tors;
}

/* At an MP-HULA ToR, a TCP segment's association: its connection becomes the packet's when it
 * carries no header (a known connection), and from a host the header is pushed if the
 * connection has more than one subflow. Non-zero: the push failed. */
static __always_inline int associate_and_push(struct __sk_buff *skb, struct hula_frame *f, __u32 l4ports,
					      int in_port, struct hula_pkt *k)
{
	struct hula_pkt c = {};
	int a = hula_mptcp_assoc(skb, f, l4ports, &c);

	if (!a || k->has_conn)
		return 0;
	k->conn_id = c.conn_id;
	k->subflow = c.subflow;
	k->has_conn = 1;
	if (a != 2 || in_port < 0 || port_dir(in_port) != HULA_DIR_HOST || f->n_shims >= HULA_MAX_SHIMS)
		return 0;
	if (hula_push_conn(skb, c.conn_id, c.subflow))
		return -1;
	count(HULA_C_PUSHED);
	f->conn_off = sizeof(struct ethhdr);
	return 0;
}

/* A data packet, checked and not for this node: association, push, route, pop, out. */
__attribute__((noinline)) int hula_data(struct __sk_buff *skb, struct hula_frame *f, int in_port)
{
	struct hula_node *n = the_node();
	struct hula_pkt k = {};
	struct mps_port *out;
	__u32 l4ports, pk;
	int port, is_tor_mp;
	__u64 now;

	if (!n || !f)
		return TC_ACT_SHOT;
	now = now_us(n);
	l4ports = hula_l4_ports(skb, f);
	is_tor_mp = (n->flags & (HULA_F_MP | HULA_F_TOR)) == (HULA_F_MP | HULA_F_TOR);

	k.h = seeded_hash(mps_crc32_5tuple(bpf_ntohl(f->ip.saddr), bpf_ntohl(f->ip.daddr), f->ip.protocol, l4ports),
			  n->hash_seed);
	k.tor = dest_tor(n, f->ip.daddr);
	read_conn(skb, f, &k);
	if (hula_decrement_ttl(skb, f))
		return TC_ACT_SHOT;
	if (is_tor_mp && f->ip.protocol == IPPROTO_TCP && associate_and_push(skb, f, l4ports, in_port, &k)) {
		count(HULA_C_REDIRECT_FAILED);
		return TC_ACT_SHOT;
	}
	port = route(f, &k, now);
	if (port < 0) {
		count(HULA_C_NO_ROUTE);
		return TC_ACT_SHOT;
	}
	if (port >= MPS_MAX_PORTS) { /* a route to a port the node does not have */
		count(HULA_C_REDIRECT_FAILED);
		return TC_ACT_SHOT;
	}
	pk = port;
	if (f->conn_off == sizeof(struct ethhdr) && port_dir(pk) == HULA_DIR_HOST) {
		if (hula_pop_conn(skb)) {
			count(HULA_C_REDIRECT_FAILED);
			return TC_ACT_SHOT;
		}
		count(HULA_C_POPPED);
	}
	out = bpf_map_lookup_elem(&ports, &pk);
	if (!out || out->ifindex == 0 || set_macs(skb, out)) {
		count(HULA_C_REDIRECT_FAILED);
		return TC_ACT_SHOT;
	}
	count_port(pk, skb->len, 1);
	return bpf_redirect(out->ifindex, 0);
}

SEC("tc")
int hula_ingress(struct __sk_buff *skb)
{
	struct hula_frame f = {};
	struct hula_node *n;
	__u32 zero = 0;
	int in_port;

	n = bpf_map_lookup_elem(&node, &zero);
	if (!n)
		return TC_ACT_OK;
	if (n->trigger_ifindex && skb->ifindex == n->trigger_ifindex)
		return hula_originate(skb);
	in_port = port_of(skb->ifindex);
	if (in_port >= 0)
		count_port(in_port, skb->len, 0);
	switch (hula_parse(skb, &f)) {
	case MPS_PARSED_IPV4:
		break;
	case MPS_PARSED_NOT_IPV4:
		count(HULA_C_NOT_IPV4);
		return TC_ACT_OK;
	default:
		count(HULA_C_MALFORMED);
		return TC_ACT_SHOT;
	}
	if (f.probe_off) {
		if (in_port < 0) {
			count(HULA_C_PROBES_REFUSED);
			return TC_ACT_SHOT;
		}
		return hula_probe_in(skb, in_port, f.probe_off);
	}
	if (bpf_ntohl(f.ip.daddr) == n->own_ip) {
		count(HULA_C_LOCAL);
		return TC_ACT_OK;
	}
	if (f.ip.ttl <= 1) {
		count(HULA_C_TTL_EXPIRED);
		return TC_ACT_SHOT;
	}
	return hula_data(skb, &f, in_port);
}
