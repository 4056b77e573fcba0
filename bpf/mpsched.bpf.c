// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * mpsched switch data plane for TC (cls_bpf, direct action).
 *
 *   mps_ingress: the multipath switch of crates/core/src/switch.rs, per packet:
 *     frame checks (as wire::parse_frame) -> feedback addressed to this node (DWRR counting)
 *     -> TTL -> classifier (DSCP by class_rules) -> confluence (CE counting, feedback every 16th) -> split (RS / WRR / DWRR)
 *     -> IPv4 LPM; forwarding rewrites the MACs and bpf_redirect()s to the port's interface.
 *   mps_egress: the ECN marker, on a virtual queue drained at the link rate (TC egress runs
 *     before the qdisc and cannot see its depth), marking with bpf_skb_ecn_set_ce().
 *
 * Register for register the same state and decisions as the Rust programs; the conformance
 * vectors under tests/vectors/ hold the two equal. Each step below names its Rust twin.
 */
#include <linux/udp.h>

#include "mps_common.h" /* ports, ifindex_port, routes, ecmp, port_stats; parsing, hashing, TTL */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The queue stage, once a packet's port is known: whether it may leave by `port`, with
 * skb->priority naming its queue there; it may also ask, in `reflect` (struct mps_reflect), for
 * a rate feedback to the packet's source, sent whether or not the packet leaves. A program
 * that includes this file whole defines its own first (crates/programs/src/pmqecn/vqwrr.bpf.c);
 * the multipath switch's forwards every packet and leaves the queue to the port's DSCP
 * filters. With it come two hooks for the feedback: MPS_REFLECT_PRIORITY(port), the
 * skb->priority it leaves `port` with, and MPS_REFLECT_DONE(routed), told whether it found a
 * route. */
#ifndef MPS_QUEUE_STAGE
#define MPS_QUEUE_STAGE(skb, port, tos, reflect) 1
#endif
#ifndef MPS_REFLECT_PRIORITY
#define MPS_REFLECT_PRIORITY(port) 0
#endif
#ifndef MPS_REFLECT_DONE
#define MPS_REFLECT_DONE(routed)
#endif

_Static_assert(sizeof(struct mps_node) == MPS_SIZEOF_NODE, "struct mps_node");
_Static_assert(sizeof(struct mps_rate_feedback) == MPS_SIZEOF_RATE_FEEDBACK, "struct mps_rate_feedback");
_Static_assert(sizeof(struct mps_split) == MPS_SIZEOF_SPLIT, "struct mps_split");
_Static_assert(sizeof(struct mps_confluence) == MPS_SIZEOF_CONFLUENCE, "struct mps_confluence");
_Static_assert(sizeof(struct mps_marker) == MPS_SIZEOF_MARKER, "struct mps_marker");
_Static_assert(sizeof(struct mps_class_rule) == MPS_SIZEOF_CLASS_RULE, "struct mps_class_rule");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mps_node);
} node SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_GROUPS);
	__type(key, __u32);
	__type(value, struct mps_split);
} splits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_CLASS_RULES);
	__type(key, __u32);
	__type(value, struct mps_class_rule);
} class_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_GROUPS);
	__type(key, __u32);
	__type(value, struct mps_confluence);
} confluences SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct mps_marker);
} markers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MPS_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Fixed RS draws for conformance tests (MPS_F_TEST_DRAWS): raw 32-bit values, replayed
 * cyclically; slot MPS_TEST_DRAWS holds the index of the next one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_TEST_DRAWS + 1);
	__type(key, __u32);
	__type(value, __u32);
} test_draws SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

static __always_inline __u64 nz_mask(__u64 x) /* all ones iff x != 0 */
{
	return lt_mask(0, x);
}

static __always_inline __u64 min_u64(__u64 a, __u64 b)
{
	return b + ((a - b) & lt_mask(a, b));
}

/* A raw 32-bit draw: the test map's next value (MPS_F_TEST_DRAWS), or the kernel's. */
static __always_inline __u32 raw_draw(const struct mps_node *n)
{
	__u32 idx_key = MPS_TEST_DRAWS, k;
	__u32 *idx, *v;

	if (!(n->flags & MPS_F_TEST_DRAWS))
		return bpf_get_prandom_u32();
	idx = bpf_map_lookup_elem(&test_draws, &idx_key);
	if (!idx || n->test_draws_n == 0)
		return 0;
	k = *idx % n->test_draws_n;
	*idx = k + 1;
	v = bpf_map_lookup_elem(&test_draws, &k);
	return v ? *v : 0;
}

/* rng::RandomSource::draw_inclusive: lo + (draw * span) >> 32, no division. */
static __always_inline __u32 rs_draw(const struct mps_node *n)
{
	__u32 raw = raw_draw(n);

	return MPS_RS_DRAW_MIN +
	       (__u32)(((__u64)raw * (MPS_RS_DRAW_MAX - MPS_RS_DRAW_MIN + 1)) >> 32);
}

/* RandomSplit::lookup: the first path whose [lo, hi] holds the draw, else the last. */
static __always_inline __u32 rs_lookup(const struct mps_split *s, __u32 draw)
{
	__u64 n = s->n_paths, path = 0, found = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++) {
		__u64 hit = lt_mask(i, n) & ~lt_mask(draw, s->rs_lo[i]) &
			    ~lt_mask(s->rs_hi[i], draw) & ~found;

		path |= i & hit;
		found |= hit;
	}
	return (path & found) | ((n - 1) & ~found);
}

/* Wrr::select: the path with the largest remaining weight (ties to the lowest index) takes
 * one packet; when every remaining weight is zero the period ends and they reload. */
static __always_inline __u32 wrr_select(struct mps_split *s, int *period_done)
{
	__u64 n = s->n_paths, best = 0, best_rem = s->remaining[0], left = 0;
	__u32 i;

#pragma unroll
	for (i = 1; i < MPS_MAX_PATHS; i++) {
		__u64 better = lt_mask(i, n) & lt_mask(best_rem, s->remaining[i]);

		best = (i & better) | (best & ~better);
		best_rem = (s->remaining[i] & better) | (best_rem & ~better);
	}
	best &= MPS_MAX_PATHS - 1;
	s->remaining[best] -= nz_mask(s->remaining[best]) & 1;
#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++)
		left |= s->remaining[i] & lt_mask(i, n);
	if (left == 0) {
#pragma unroll
		for (i = 0; i < MPS_MAX_PATHS; i++)
			s->remaining[i] = s->weights[i];
	}
	*period_done = left == 0;
	return best;
}

/* Dwrr::move_weight: each congested path gives up min(adjust, max_step) units (max_step 0:
 * no cap), keeping min_weight; the freed units go one at a time, round robin from the
 * cursor, to the paths that sent no feedback ("takers"). Closed form of that hand-out: with
 * U takers in cyclic order from the cursor, taker j gets freed / U, plus one if
 * j < freed % U, and the cursor ends just after the taker of the last unit. */
static __always_inline void dwrr_move_weight(struct mps_split *s)
{
	__u64 n = s->n_paths, freed = 0, takers = 0, q, r, last, j = 0, cursor = 0, found = 0;
	__u64 cap = (__u64)s->max_step + (0xffffffffull & ~nz_mask(s->max_step));
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++) {
		__u64 valid = lt_mask(i, n), a = s->adjust[i], w = s->weights[i];
		__u64 spare = w - min_u64(w, s->min_weight);
		__u64 take = min_u64(min_u64(a, cap), spare) & valid;

		s->weights[i] = w - take;
		freed += take;
		takers += ~nz_mask(a) & valid & 1;
	}
	if (freed == 0 || takers == 0)
		return; /* takers == 0 cannot happen: the caller moves weight only when some path
			 * is quiet */
	s->adjustments += 1;
	q = freed / takers;
	r = freed % takers;
	last = (freed - 1) % takers;
#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++) {
		__u64 valid = lt_mask(i, n), k = s->cursor + i, t, give, w, is_last, next;

		k -= n & ~lt_mask(k, n);
		k &= MPS_MAX_PATHS - 1; /* a no-op on valid iterations; bounds the index */
		t = ~nz_mask(s->adjust[k]) & valid;
		give = (q + (lt_mask(j, r) & 1)) & t;
		w = min_u64(s->weights[k] + give, 0xffff);
		s->weights[k] = w;
		is_last = t & ~nz_mask(j ^ last);
		next = k + 1;
		next -= n & ~lt_mask(next, n);
		cursor |= next & is_last;
		found |= is_last;
		j += t & 1;
	}
	s->cursor = (cursor & found) | (s->cursor & ~found);
#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++)
		s->remaining[i] = s->weights[i];
}

/* Dwrr::end_window. */
static __always_inline void dwrr_end_window(struct mps_split *s)
{
	__u64 congested = 0;
	__u32 i;

	s->windows += 1;
#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++)
		congested += nz_mask(s->adjust[i]) & lt_mask(i, s->n_paths) & 1;
	if (congested == s->n_paths) {
		s->drop_left = s->avoidance_drop_pkts;
		s->avoidance_events += 1;
	} else if (congested > 0) {
		dwrr_move_weight(s);
	}
#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++)
		s->adjust[i] = 0;
}

/* Scheduler::select under the group's lock. Returns the path, or -1 to drop. */
static __always_inline int split_select(struct mps_split *s, __u32 draw)
{
	int period_done = 0;
	__u32 path;

	switch (s->sched) {
	case MPS_SCHED_SINGLE:
		return s->cursor; /* the single path's index is kept in the cursor register */
	case MPS_SCHED_RS:
		return rs_lookup(s, draw);
	case MPS_SCHED_WRR:
		return wrr_select(s, &period_done);
	case MPS_SCHED_DWRR:
		if (s->drop_left > 0) {
			s->drop_left -= 1;
			s->avoidance_drops += 1;
			return -1;
		}
		path = wrr_select(s, &period_done);
		if (period_done) {
			s->groups_left -= 1;
			if (s->groups_left == 0) {
				s->groups_left = s->groups;
				dwrr_end_window(s);
			}
		}
		return path;
	default:
		return -1;
	}
}

/* The port of ECMP group `group` for this packet's flow, or -1 if the group is unknown. */
static __always_inline int ecmp_port(struct __sk_buff *skb, const struct mps_node *n, __u32 group,
				     __u32 src, __u32 dst, __u8 proto, __u16 frag_off,
				     __u32 ihl_bytes, __u32 tot_len)
{
	struct mps_ecmp *g = group < MPS_MAX_ECMP_GROUPS ? bpf_map_lookup_elem(&ecmp, &group) : NULL;
	__u32 h, idx;

	if (!g || g->n_ports == 0 || g->n_ports > MPS_MAX_PORTS)
		return -1;
	h = seeded_hash(mps_crc32_5tuple(src, dst, proto, l4_ports(skb, proto, frag_off, ihl_bytes, tot_len)),
		      n->hash_seed);
	idx = (h % g->n_ports) & (MPS_MAX_PORTS - 1);
	return g->ports[idx];
}

/* Confluence::return_path: the other path with the fewest pending CE marks, lowest first;
 * MPS_MAX_PATHS if there is none. */
static __always_inline __u32 return_path(const struct mps_confluence *c, __u32 congested)
{
	__u64 n = c->n_paths, best = MPS_MAX_PATHS, best_pending = 0, found = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++) {
		__u64 ok = lt_mask(i, n) & nz_mask(i ^ congested);
		__u64 better = ok & (~found | lt_mask(c->ce_pending[i], best_pending));

		best = (i & better) | (best & ~better);
		best_pending = (c->ce_pending[i] & better) | (best_pending & ~better);
		found |= ok;
	}
	return best;
}

/* Turn the packet into a feedback packet (feedback.rs) for `group` / `path`. */
static __always_inline int make_feedback(struct __sk_buff *skb, const struct mps_node *n,
					 const struct mps_confluence *c, __u32 path,
					 const struct mps_port *out)
{
	struct {
		struct ethhdr eth;
		struct iphdr ip;
		struct udphdr udp;
		__u32 magic;
		__u8 group;
		__u8 path;
		__u16 reserved;
		__u8 pad[MPS_FEEDBACK_FRAME_BYTES - 50];
	} __attribute__((packed)) fb = {};
	struct iphdr iph = {};
	__u16 *w = (__u16 *)&iph;
	__u32 sum = 0, i;

	iph.version = 4;
	iph.ihl = 5;
	iph.tot_len = bpf_htons(36);
	iph.ttl = 64;
	iph.protocol = IPPROTO_UDP;
	iph.saddr = bpf_htonl(n->own_ip);
	iph.daddr = bpf_htonl(c->splitter_ip);
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	iph.check = (__u16)~sum;
	__builtin_memcpy(fb.eth.h_dest, out->peer_mac, ETH_ALEN);
	__builtin_memcpy(fb.eth.h_source, out->own_mac, ETH_ALEN);
	fb.eth.h_proto = bpf_htons(ETH_P_IP);
	__builtin_memcpy(&fb.ip, &iph, sizeof(iph));
	fb.udp.source = bpf_htons(n->feedback_port);
	fb.udp.dest = bpf_htons(n->feedback_port);
	fb.udp.len = bpf_htons(16);
	fb.magic = bpf_htonl(MPS_FEEDBACK_MAGIC);
	fb.group = c->group;
	fb.path = (__u8)path;
	if (bpf_skb_change_tail(skb, MPS_FEEDBACK_FRAME_BYTES, 0))
		return -1;
	if (bpf_skb_store_bytes(skb, 0, &fb, sizeof(fb), 0))
		return -1;
	return 0;
}

/* The port of a route to `dst` (host order) for a frame whose IPv4 header is 20 bytes, or -1;
 * an ECMP group's member by the frame's own flow. */
static __always_inline int route_port(struct __sk_buff *skb, const struct mps_node *n, __u32 src,
				      __u32 dst, __u8 proto, __u16 frag_off, __u32 tot_len)
{
	struct mps_route_key key = { .prefixlen = 32, .addr = bpf_htonl(dst) };
	__u32 *port = bpf_map_lookup_elem(&routes, &key);

	if (!port)
		return -1;
	if (*port & MPS_ECMP_GROUP)
		return ecmp_port(skb, n, *port & ~MPS_ECMP_GROUP, src, dst, proto, frag_off, 20, tot_len);
	return *port;
}

/* Turn the packet into the rate feedback `rf` asks for, to `to_ip` (host order) and UDP port
 * `to_port`, and route it (Pmqecn::send_feedback: the routes, as the switch routes its own
 * packets, and the top level of the port it leaves by). Its port's ifindex, or 0 when no route
 * leads back (counted as the switch counts a packet without a route) or the frame could not
 * be written. */
static __always_inline __u32 reflect(struct __sk_buff *skb, const struct mps_node *n,
				     const struct mps_reflect *rf, __u32 to_ip, __u16 to_port)
{
	struct {
		struct ethhdr eth;
		struct iphdr ip;
		struct udphdr udp;
		struct mps_rate_feedback body;
	} __attribute__((packed)) fb = {};
	struct iphdr iph = {};
	__u16 *w = (__u16 *)&iph;
	struct mps_port *out;
	__u32 sum = 0, i, pk;
	int port;

	iph.version = 4;
	iph.ihl = 5;
	iph.tos = (MPS_RATE_FEEDBACK_DSCP << 2) | 3; /* CE */
	iph.tot_len = bpf_htons(MPS_RATE_FEEDBACK_FRAME_BYTES - sizeof(struct ethhdr));
	iph.ttl = 64;
	iph.protocol = IPPROTO_UDP;
	iph.saddr = bpf_htonl(n->own_ip);
	iph.daddr = bpf_htonl(to_ip);
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	iph.check = (__u16)~sum;
	fb.eth.h_proto = bpf_htons(ETH_P_IP);
	__builtin_memcpy(&fb.ip, &iph, sizeof(iph));
	fb.udp.source = bpf_htons(MPS_RATE_FEEDBACK_PORT);
	fb.udp.dest = bpf_htons(to_port);
	fb.udp.len = bpf_htons(sizeof(struct udphdr) + sizeof(struct mps_rate_feedback));
	__builtin_memcpy(&fb.body, &rf->body, sizeof(fb.body));
	if (bpf_skb_change_tail(skb, sizeof(fb), 0) || bpf_skb_store_bytes(skb, 0, &fb, sizeof(fb), 0)) {
		count(MPS_C_REDIRECT_FAILED);
		return 0;
	}
	port = route_port(skb, n, n->own_ip, to_ip, IPPROTO_UDP, 0, sizeof(fb) - sizeof(struct ethhdr));
	pk = port;
	out = port >= 0 ? bpf_map_lookup_elem(&ports, &pk) : NULL;
	if (!out || out->ifindex == 0) {
		count(MPS_C_NO_ROUTE);
		MPS_REFLECT_DONE(0);
		return 0;
	}
	if (set_macs(skb, out)) {
		count(MPS_C_REDIRECT_FAILED);
		return 0;
	}
	MPS_REFLECT_DONE(1);
	count_port(pk, sizeof(fb), 1);
	skb->priority = MPS_REFLECT_PRIORITY(pk);
	bpf_set_hash_invalid(skb);
	return out->ifindex;
}

/* The slot of the split on (src, dst), or -1. */
static __always_inline int find_split(const struct mps_node *n, __u32 src, __u32 dst)
{
	__u64 slot = 0, found = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_GROUPS; i++) {
		__u32 k = i;
		struct mps_split *s = bpf_map_lookup_elem(&splits, &k);
		__u64 hit;

		if (!s)
			continue;
		hit = lt_mask(i, n->n_splits) & ~nz_mask((s->src_ip ^ src) | (s->dst_ip ^ dst)) &
		      ~found;
		slot |= i & hit;
		found |= hit;
	}
	return found ? (int)(slot & (MPS_MAX_GROUPS - 1)) : -1;
}

/* The slot of the split of feedback group `group`, or -1. */
static __always_inline int find_group(const struct mps_node *n, __u8 group)
{
	__u64 slot = 0, found = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_GROUPS; i++) {
		__u32 k = i;
		struct mps_split *s = bpf_map_lookup_elem(&splits, &k);
		__u64 hit;

		if (!s)
			continue;
		hit = lt_mask(i, n->n_splits) & ~nz_mask(s->group ^ group) & ~found;
		slot |= i & hit;
		found |= hit;
	}
	return found ? (int)(slot & (MPS_MAX_GROUPS - 1)) : -1;
}

/* The slot of the confluence entry on (src, dst), or -1. */
static __always_inline int find_confluence(const struct mps_node *n, __u32 src, __u32 dst)
{
	__u64 slot = 0, found = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_GROUPS; i++) {
		__u32 k = i;
		struct mps_confluence *c = bpf_map_lookup_elem(&confluences, &k);
		__u64 hit;

		if (!c)
			continue;
		hit = lt_mask(i, n->n_confluences) &
		      ~nz_mask((c->src_ip ^ src) | (c->dst_ip ^ dst)) & ~found;
		slot |= i & hit;
		found |= hit;
	}
	return found ? (int)(slot & (MPS_MAX_GROUPS - 1)) : -1;
}

/* Confluence::path_of: the path whose last hop arrives on `port`, or MPS_MAX_PATHS. */
static __always_inline __u32 path_of(const struct mps_confluence *c, int port)
{
	__u64 n = c->n_paths, path = MPS_MAX_PATHS, found = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_PATHS; i++) {
		__u64 hit = lt_mask(i, n) & ~nz_mask(c->ingress_port[i] ^ (__u16)port) & ~found;

		path = (i & hit) | (path & ~hit);
		found |= hit;
	}
	return path;
}

/* Forwarding and feedback outcome of the match-action stages. */
struct fwd {
	int port;      /* egress port of the packet, or -1 */
	int drop;      /* the split dropped it (congestion avoidance) */
	int fb_port;   /* return port of a feedback packet to emit, or -1 */
	__u32 fb_path; /* the path the feedback reports */
	__u32 fb_conf; /* confluence slot */
	__u8 tos;      /* the packet's TOS byte once classified (the queue stage's class) */
	__u8 proto;    /* its IPv4 protocol */
	__u16 frag_off; /* its IPv4 fragment field, host order */
};

/* The classifier (mpsched_core::classify::classify): unless the packet is the switch's own or
 * network control, the first of the node's rules it matches rewrites its DSCP, ECN kept, the checksum updated as RFC 1624 says (TOS is the low
 * byte of the header's first word). Returns the TOS byte it leaves with. */
static __always_inline __u8 classify(struct iphdr *ip, const struct mps_node *n, __u32 src, __u32 dst)
{
	__u32 i, nr = n->n_class_rules;
	__u8 tos = ip->tos;

	if (src == n->own_ip || tos >> 2 == MPS_NETWORK_CONTROL_DSCP)
		return tos;
	for (i = 0; i < MPS_MAX_CLASS_RULES; i++) {
		struct mps_class_rule *r;
		__u32 k = i, c;
		__u16 old, new;

		if (i >= nr)
			break;
		r = bpf_map_lookup_elem(&class_rules, &k);
		if (!r)
			break;
		if (((src ^ r->src) & r->src_mask) || ((dst ^ r->dst) & r->dst_mask) ||
		    (!r->dscp_any && r->dscp != tos >> 2))
			continue;
		old = ((__u16)(*(__u8 *)ip) << 8) | tos;
		tos = (__u8)(r->dscp_set << 2) | (tos & 3);
		new = (old & 0xff00) | tos;
		c = (__u16)~bpf_ntohs(ip->check);
		c += (__u16)~old;
		c += new;
		c = (c & 0xffff) + (c >> 16);
		c = (c & 0xffff) + (c >> 16);
		ip->check = bpf_htons((__u16)~c);
		ip->tos = tos;
		break;
	}
	return tos;
}

SEC("tc")
int mps_ingress(struct __sk_buff *skb)
{
	struct iphdr *ip;
	struct mps_node *n;
	struct mps_port *out;
	__u32 zero = 0, len = skb->len, ihl_bytes, tot_len, src, dst, draw = 0;
	struct fwd f = { .port = -1, .drop = 0, .fb_port = -1 };
	struct mps_reflect rf = {};
	__u32 reflect_to = 0;
	__u16 reflect_port = 0;
	int in_port, slot;

	n = bpf_map_lookup_elem(&node, &zero);
	if (!n)
		return TC_ACT_OK;
	in_port = port_of(skb->ifindex);
	if (in_port >= 0)
		count_port(in_port, len, 0);

	/* wire::parse_frame, check for check. */
	switch (mps_parse_ipv4(skb, &ip, &ihl_bytes, &tot_len)) {
	case MPS_PARSED_IPV4:
		break;
	case MPS_PARSED_NOT_IPV4:
		count(MPS_C_NOT_IPV4); /* ARP, IPv6, a VLAN tag: the node's own stack */
		return TC_ACT_OK;
	case MPS_PARSED_MALFORMED:
		count(MPS_C_MALFORMED);
		return TC_ACT_SHOT;
	default:
		return TC_ACT_SHOT;
	}
	src = bpf_ntohl(ip->saddr);
	dst = bpf_ntohl(ip->daddr);
	f.tos = ip->tos;
	f.proto = ip->protocol;
	f.frag_off = bpf_ntohs(ip->frag_off);

	/* 1. Addressed to this node: a feedback packet is counted for its group; consumed. */
	if (dst == n->own_ip) {
		__u8 l4[16];
		__u32 off = sizeof(struct ethhdr) + ihl_bytes;
		int is_fb = 0;

		/* A feedback packet: UDP, first fragment, to the feedback port, 8 payload bytes
		 * starting with the magic, all inside the IPv4 total length. */
		if (ip->protocol == IPPROTO_UDP && (bpf_ntohs(ip->frag_off) & 0x1fff) == 0 &&
		    tot_len >= ihl_bytes + 16 && off <= 0xffff &&
		    bpf_skb_load_bytes(skb, off, l4, sizeof(l4)) == 0) {
			__u16 dport = ((__u16)l4[2] << 8) | l4[3];
			__u32 magic = ((__u32)l4[8] << 24) | ((__u32)l4[9] << 16) |
				      ((__u32)l4[10] << 8) | l4[11];

			is_fb = dport == n->feedback_port && magic == MPS_FEEDBACK_MAGIC;
		}
		if (!is_fb) {
			count(MPS_C_LOCAL);
			return TC_ACT_OK;
		}
		{
			__u8 group = l4[12], path = l4[13];
			int counted = 0, g = find_group(n, group);
			__u32 k = g;
			struct mps_split *s = g >= 0 ? bpf_map_lookup_elem(&splits, &k) : NULL;

			/* MultipathSwitch::on_feedback: only from a port the group's feedback arrives on. */
			if (s && (in_port < 0 || in_port >= MPS_MAX_PORTS ||
				  !((s->feedback_ports >> in_port) & 1))) {
				count(MPS_C_FEEDBACK_UNTRUSTED_PORT);
				return TC_ACT_SHOT;
			}
			/* Dwrr::on_feedback; other schedulers ignore feedback. */
			if (s && s->sched == MPS_SCHED_DWRR && path < s->n_paths &&
			    path < MPS_MAX_PATHS) {
				bpf_spin_lock(&s->lock);
				if (s->adjust[path] != 0xffffffff)
					s->adjust[path] += 1;
				s->feedback_rx += 1;
				bpf_spin_unlock(&s->lock);
				counted = 1;
			}
			count(counted ? MPS_C_FEEDBACK_RX : MPS_C_FEEDBACK_UNKNOWN_GROUP);
		}
		return TC_ACT_SHOT;
	}

	/* 2. TTL, then the classifier. */
	if (ip->ttl <= 1) {
		count(MPS_C_TTL_EXPIRED);
		return TC_ACT_SHOT;
	}
	decrement_ttl(ip);
	if (n->n_class_rules)
		f.tos = classify(ip, n, src, dst);

	/* 3. Confluence table on (src, dst): Confluence::on_arrival. */
	slot = find_confluence(n, src, dst);
	if (slot >= 0 && (ip->tos & 3) == 3 && in_port >= 0) {
		__u32 k = slot, p, every_hit = 0;
		struct mps_confluence *c = bpf_map_lookup_elem(&confluences, &k);

		p = c ? path_of(c, in_port) : MPS_MAX_PATHS;
		if (c && p < MPS_MAX_PATHS) {
			__u32 via;

			barrier_var(p);
			p &= MPS_MAX_PATHS - 1;
			bpf_spin_lock(&c->lock);
			c->ce_arrivals += 1;
			c->ce_pending[p] += 1;
			if (c->ce_pending[p] >= c->every) {
				c->ce_pending[p] = 0;
				every_hit = 1;
			}
			via = every_hit ? return_path(c, p) : MPS_MAX_PATHS;
			if (via < MPS_MAX_PATHS) {
				barrier_var(via);
				via &= MPS_MAX_PATHS - 1;
				c->feedback_sent += 1;
				f.fb_port = c->return_port[via];
				f.fb_path = p;
				f.fb_conf = k;
			}
			bpf_spin_unlock(&c->lock);
		}
	}

	/* 4. Split table on (src, dst). */
	slot = find_split(n, src, dst);
	if (slot >= 0) {
		__u32 k = slot;
		struct mps_split *s = bpf_map_lookup_elem(&splits, &k);
		int path = -1;

		if (s) {
			if (s->sched == MPS_SCHED_RS)
				draw = rs_draw(n); /* helpers may not run under the lock */
			bpf_spin_lock(&s->lock);
			path = split_select(s, draw);
			if (path >= 0 && path < MPS_MAX_PATHS) {
				/* The mask is a no-op after the check; it keeps the bound visible to
				 * the verifier, which otherwise sees a sign-extended copy. */
				__u32 pi = (__u32)path;

				barrier_var(pi);
				pi &= MPS_MAX_PATHS - 1;
				s->path_pkts[pi] += 1;
				f.port = s->ports[pi];
			}
			bpf_spin_unlock(&s->lock);
		}
		if (path < 0) {
			count(MPS_C_AVOIDANCE);
			f.drop = 1;
		}
		goto forward;
	}

	/* 5. IPv4 longest-prefix match. */
	{
		struct mps_route_key key = { .prefixlen = 32, .addr = ip->daddr };
		__u32 *port = bpf_map_lookup_elem(&routes, &key);

		if (port && (*port & MPS_ECMP_GROUP))
			f.port = ecmp_port(skb, n, *port & ~MPS_ECMP_GROUP, src, dst, ip->protocol,
					   bpf_ntohs(ip->frag_off), ihl_bytes, tot_len);
		else if (port)
			f.port = *port;
		if (f.port < 0)
			count(MPS_C_NO_ROUTE);
	}

forward:
	if (f.port >= 0 && !f.drop) {
		__u32 pk = f.port;

		out = bpf_map_lookup_elem(&ports, &pk);
		if (!out || out->ifindex == 0 || set_macs(skb, out)) {
			count(MPS_C_REDIRECT_FAILED);
			f.port = -1;
		} else {
			int pass = MPS_QUEUE_STAGE(skb, pk, f.tos, &rf);

			if (rf.want) {
				/* Read before the packet is cloned (which ends the header's pointer)
				 * or rewritten. */
				reflect_to = src;
				reflect_port = l4_ports(skb, f.proto, f.frag_off, ihl_bytes, tot_len) >> 16;
			}
			if (!pass) {
				f.port = -1; /* the stage dropped it, and counted why */
			} else if (f.fb_port >= 0 || rf.want) {
				/* The data packet leaves as a clone; the original becomes the feedback. */
				if (bpf_clone_redirect(skb, out->ifindex, 0) == 0)
					count_port(pk, len, 1);
				else
					count(MPS_C_REDIRECT_FAILED);
			} else {
				count_port(pk, len, 1);
				return bpf_redirect(out->ifindex, 0);
			}
		}
	}
	if (rf.want) {
		__u32 ifindex = reflect(skb, n, &rf, reflect_to, reflect_port);

		if (ifindex == 0 && f.fb_port < 0)
			return TC_ACT_SHOT;
		if (f.fb_port < 0)
			return bpf_redirect(ifindex, 0);
		/* A confluence's feedback follows, made from the same packet. */
		if (ifindex != 0 && bpf_clone_redirect(skb, ifindex, 0) != 0)
			count(MPS_C_REDIRECT_FAILED);
	}
	if (f.fb_port >= 0) {
		__u32 pk = f.fb_port, ck = f.fb_conf;
		struct mps_confluence *c = bpf_map_lookup_elem(&confluences, &ck);

		out = bpf_map_lookup_elem(&ports, &pk);
		if (!c || !out || out->ifindex == 0 || make_feedback(skb, n, c, f.fb_path, out)) {
			count(MPS_C_REDIRECT_FAILED);
			return TC_ACT_SHOT;
		}
		count_port(pk, MPS_FEEDBACK_FRAME_BYTES, 1);
		/* Not the data copy's queue, nor its queue stage's tag: the port's filters place it. */
		skb->priority = 0;
		bpf_set_hash_invalid(skb);
		return bpf_redirect(out->ifindex, 0);
	}
	return TC_ACT_SHOT;
}

/* The ECN marker on a virtual queue (marker::VirtualQueueMarker). */
SEC("tc")
int mps_egress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct mps_marker *m;
	struct mps_node *n;
	__u32 zero = 0, key;
	__u64 now, elapsed, drain, before, add;
	int port, ecn = -1, over;

	port = port_of(skb->ifindex);
	if (port < 0)
		return TC_ACT_OK;
	key = port;
	m = bpf_map_lookup_elem(&markers, &key);
	n = bpf_map_lookup_elem(&node, &zero);
	if (!m || !n || m->threshold_scaled == 0)
		return TC_ACT_OK;
	now = (n->flags & MPS_F_TEST_CLOCK) ? n->test_clock_ns : bpf_ktime_get_ns();
	/* A frame whose IPv4 header is not in the linear data (paged skbs) is judged by its
	 * bytes, as the Rust marker judges it: pull the header in first. */
	if ((void *)(eth + 1) + sizeof(struct iphdr) > data_end &&
	    skb->len >= sizeof(struct ethhdr) + sizeof(struct iphdr)) {
		/* The call invalidates packet pointers whether or not it succeeds. */
		bpf_skb_pull_data(skb, sizeof(struct ethhdr) + sizeof(struct iphdr));
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		eth = data;
	}
	if ((void *)(eth + 1) <= data_end && eth->h_proto == bpf_htons(ETH_P_IP) &&
	    (void *)(eth + 1) + sizeof(struct iphdr) <= data_end)
		ecn = ((struct iphdr *)(eth + 1))->tos & 3;
	add = (__u64)skb->len * 8 * 1000000000ull;

	bpf_spin_lock(&m->lock);
	elapsed = now > m->last_ns ? now - m->last_ns : 0;
	drain = elapsed >= m->max_elapsed_ns ? ~0ull : elapsed * m->rate_bps;
	m->backlog_scaled = m->backlog_scaled > drain ? m->backlog_scaled - drain : 0;
	if (now > m->last_ns)
		m->last_ns = now;
	before = m->backlog_scaled;
	if (before + add <= m->limit_scaled)
		m->backlog_scaled = before + add;
	else
		m->overflow += 1;
	over = before >= m->threshold_scaled;
	if (over) {
		if (ecn == 1 || ecn == 2)
			m->marked += 1;
		else if (ecn == 0)
			m->not_ect_over_threshold += 1;
	}
	bpf_spin_unlock(&m->lock);

	if (over && (ecn == 1 || ecn == 2))
		bpf_skb_ecn_set_ce(skb);
	return TC_ACT_OK;
}
