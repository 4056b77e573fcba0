// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * LetFlow for TC (cls_bpf, direct action): the Rust twin is crates/programs/src/letflow/mod.rs,
 * at frame level the programs crate's vector runner (parse as wire::parse_frame, non-IPv4 to
 * the stack, malformed counted and dropped).
 *
 *   lf_ingress, per packet: frame checks -> addressed to this node (to the stack) -> TTL ->
 *     IPv4 LPM; a route to an equal-cost group goes through the flowlet table:
 *       slot = seeded 5-tuple hash & (table_entries - 1), tag = the whole hash;
 *       the slot's flowlet is this flow's, less than the gap old, on a port still in the
 *         group: it continues there;
 *       another flow's flowlet is active there (a collision, or a full table): the ECMP hash
 *         picks the port (group[hash % n]) and the slot is left alone;
 *       otherwise a new flowlet takes the slot on a port drawn as (draw * n) >> 32.
 *     Forwarding rewrites the MACs, decrements the TTL and bpf_redirect()s, as mps_ingress.
 *
 * Concurrency. The table has no lock: a bpf_spin_lock would make each slot 24 bytes, and the
 * draw (a helper) may not run under it. What can race, and why it is harmless:
 * - two CPUs with packets of one flow both find its flowlet idle and both start one: the
 *   flowlet's first packets may leave by two ports, the later write wins, and the flow keeps
 *   one port from then on; flowlet switching already accepts a reorder at a flowlet's start;
 * - a packet reads a slot another CPU is writing (tag, port, last_ns torn apart): it may
 *   continue on the other writer's port, which it only takes if that port is in its own group
 *   (the membership check below), or start a new flowlet; either way a port of its group;
 * - last_ns written by a CPU whose clock read is a little older than another's: time only
 *   moves back by the skew, and a negative age counts as zero (as Rust's saturating_sub).
 * The counters are per CPU. Nothing here can send a packet to a port outside its group or
 * outside the node, so the races cost at most a reordering, never a misroute.
 *
 * What it shares with bpf/mpsched.bpf.c (the ports, routes and ECMP maps, frame checks, the
 * seeded 5-tuple hash, TTL update and MAC rewrite) is bpf/mps_common.h's, so that the two
 * objects parse, hash and forward alike.
 */
#include "mps_common.h"
#include "letflow.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

_Static_assert(sizeof(struct lf_node) == LF_SIZEOF_NODE, "struct lf_node");
_Static_assert(sizeof(struct lf_slot) == LF_SIZEOF_SLOT, "struct lf_slot");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lf_node);
} node SEC(".maps");

/* Sized at load time to table_entries (a power of two, at most LF_MAX_TABLE_ENTRIES). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lf_slot);
} flowlets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LF_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Fixed draws for conformance tests (LF_F_TEST_DRAWS): raw 32-bit values, replayed cyclically;
 * slot LF_TEST_DRAWS holds the index of the next one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LF_TEST_DRAWS + 1);
	__type(key, __u32);
	__type(value, __u32);
} test_draws SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

/* A new flowlet's raw draw: the test map's next value, or the kernel's. */
static __always_inline __u32 flowlet_draw(const struct lf_node *n)
{
	__u32 idx_key = LF_TEST_DRAWS, k;
	__u32 *idx, *v;

	if (!(n->flags & LF_F_TEST_DRAWS))
		return bpf_get_prandom_u32();
	idx = bpf_map_lookup_elem(&test_draws, &idx_key);
	if (!idx || n->test_draws_n == 0)
		return 0;
	k = *idx % n->test_draws_n;
	*idx = k + 1;
	v = bpf_map_lookup_elem(&test_draws, &k);
	return v ? *v : 0;
}

/* Whether `port` is one of the group's ports (branch-free over the 16 slots). */
static __always_inline int group_has(const struct mps_ecmp *g, __u16 port)
{
	__u64 hit = 0;
	__u32 i;

#pragma unroll
	for (i = 0; i < MPS_MAX_PORTS; i++)
		hit |= lt_mask(i, g->n_ports) & ~lt_mask(0, g->ports[i] ^ port);
	return hit != 0;
}

/* LetFlow::flowlet_port: the port of a packet of hash `h` routed to group `g` at `now`. */
static __always_inline int flowlet_port(const struct lf_node *n, const struct mps_ecmp *g,
					__u32 h, __u64 now)
{
	__u32 key = h & n->table_mask, idx;
	struct lf_slot *s = bpf_map_lookup_elem(&flowlets, &key);
	__u64 age;
	__u16 port;
	int active;

	if (!s) /* table_mask beyond the map: the control plane sizes them together */
		return -1;
	age = now > s->last_ns ? now - s->last_ns : 0;
	active = s->valid && age < n->gap_ns;
	port = s->port;
	if (active && s->tag == h && group_has(g, port)) {
		s->last_ns = now;
		count(LF_C_CONTINUED);
		return port;
	}
	if (active && s->tag != h) {
		count(LF_C_COLLISIONS);
		idx = (h % g->n_ports) & (MPS_MAX_PORTS - 1);
		return g->ports[idx];
	}
	idx = (__u32)(((__u64)flowlet_draw(n) * g->n_ports) >> 32) & (MPS_MAX_PORTS - 1);
	port = g->ports[idx];
	s->tag = h;
	s->port = port;
	s->valid = 1;
	s->last_ns = now;
	count(LF_C_NEW_FLOWLETS);
	return port;
}

SEC("tc")
int lf_ingress(struct __sk_buff *skb)
{
	struct iphdr *ip;
	struct lf_node *n;
	struct mps_port *out;
	__u32 zero = 0, len = skb->len, ihl_bytes, tot_len, src, dst, pk;
	int in_port, port = -1;

	n = bpf_map_lookup_elem(&node, &zero);
	if (!n)
		return TC_ACT_OK;
	in_port = port_of(skb->ifindex);
	if (in_port >= 0)
		count_port(in_port, len, 0);

	/* wire::parse_frame, check for check (as mps_ingress). */
	switch (mps_parse_ipv4(skb, &ip, &ihl_bytes, &tot_len)) {
	case MPS_PARSED_IPV4:
		break;
	case MPS_PARSED_NOT_IPV4:
		count(LF_C_NOT_IPV4); /* ARP, IPv6, VLAN-tagged: the node's own stack */
		return TC_ACT_OK;
	case MPS_PARSED_MALFORMED:
		count(LF_C_MALFORMED);
		return TC_ACT_SHOT;
	default:
		return TC_ACT_SHOT;
	}
	src = bpf_ntohl(ip->saddr);
	dst = bpf_ntohl(ip->daddr);

	/* Addressed to this node: its stack. */
	if (dst == n->own_ip) {
		count(LF_C_LOCAL);
		return TC_ACT_OK;
	}
	if (ip->ttl <= 1) {
		count(LF_C_TTL_EXPIRED);
		return TC_ACT_SHOT;
	}
	decrement_ttl(ip);

	/* IPv4 longest-prefix match; an equal-cost group goes through the flowlet table. */
	{
		struct mps_route_key key = { .prefixlen = 32, .addr = ip->daddr };
		__u32 *r = bpf_map_lookup_elem(&routes, &key);

		if (r && (*r & MPS_ECMP_GROUP)) {
			__u32 gk = *r & ~MPS_ECMP_GROUP;
			struct mps_ecmp *g = gk < MPS_MAX_ECMP_GROUPS ? bpf_map_lookup_elem(&ecmp, &gk) : NULL;

			if (g && g->n_ports > 0 && g->n_ports <= MPS_MAX_PORTS) {
				__u32 h = seeded_hash(
					mps_crc32_5tuple(src, dst, ip->protocol,
							l4_ports(skb, ip->protocol, bpf_ntohs(ip->frag_off),
								 ihl_bytes, tot_len)),
					n->hash_seed);
				__u64 now = (n->flags & LF_F_TEST_CLOCK) ? n->test_clock_ns : bpf_ktime_get_ns();

				port = flowlet_port(n, g, h, now);
			}
		} else if (r) {
			port = *r;
		}
	}
	if (port < 0) {
		count(LF_C_NO_ROUTE);
		return TC_ACT_SHOT;
	}
	pk = port;
	out = bpf_map_lookup_elem(&ports, &pk);
	if (!out || out->ifindex == 0 || set_macs(skb, out)) {
		count(LF_C_REDIRECT_FAILED);
		return TC_ACT_SHOT;
	}
	count_port(pk, len, 1);
	return bpf_redirect(out->ifindex, 0);
}
