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
 * Helpers shared with bpf/mpsched.bpf.c (the masks, CRC-32 of the 5-tuple, fmix32, the L4
 * ports, MAC rewrite, TTL update) are copies of its functions, kept line for line equal, so
 * that the two objects hash and forward alike.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "letflow.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

_Static_assert(sizeof(struct lf_node) == LF_SIZEOF_NODE, "struct lf_node");
_Static_assert(sizeof(struct lf_slot) == LF_SIZEOF_SLOT, "struct lf_slot");
_Static_assert(sizeof(struct mps_port) == MPS_SIZEOF_PORT, "struct mps_port");
_Static_assert(sizeof(struct mps_ecmp) == MPS_SIZEOF_ECMP, "struct mps_ecmp");
_Static_assert(sizeof(struct mps_port_stats) == MPS_SIZEOF_PORT_STATS, "struct mps_port_stats");

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
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct mps_port);
} ports SEC(".maps");

/* ifindex -> port id + 1 (0: not one of this node's ports). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_IFINDEX);
	__type(key, __u32);
	__type(value, __u32);
} ifindex_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, MPS_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mps_route_key);
	__type(value, __u32);
} routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_ECMP_GROUPS);
	__type(key, __u32);
	__type(value, struct mps_ecmp);
} ecmp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LF_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct mps_port_stats);
} port_stats SEC(".maps");

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

static __always_inline void count_port(__u32 port, __u32 bytes, int tx)
{
	struct mps_port_stats *s = bpf_map_lookup_elem(&port_stats, &port);

	if (!s)
		return;
	if (tx) {
		s->tx_pkts += 1;
		s->tx_bytes += bytes;
	} else {
		s->rx_pkts += 1;
		s->rx_bytes += bytes;
	}
}

/* All ones iff a < b (values below 2^63); as mpsched.bpf.c's lt_mask. */
static __always_inline __u64 lt_mask(__u64 a, __u64 b)
{
	__u64 m;

	barrier_var(a);
	barrier_var(b);
	m = (a - b) >> 63;
	barrier_var(m);
	return 0 - m;
}

/* The port id of an ifindex, or -1. */
static __always_inline int port_of(__u32 ifindex)
{
	__u32 *p;

	if (ifindex >= MPS_MAX_IFINDEX)
		return -1;
	p = bpf_map_lookup_elem(&ifindex_port, &ifindex);
	if (!p || *p == 0)
		return -1;
	return (int)(*p - 1);
}

/* CRC-32 (IEEE, reflected) of `bytes` bytes of `v`, most significant first, continuing `crc`. */
static __always_inline __u32 crc32_be(__u32 crc, __u32 v, __u32 bytes)
{
	__u32 i, b;

	for (i = 0; i < bytes; i++) {
		crc ^= (v >> (8 * (bytes - 1 - i))) & 0xff;
		for (b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xedb88320 & (0 - (crc & 1)));
	}
	return crc;
}

/* Ecmp::flow_hash: CRC-32 of the 13-byte 5-tuple in network order. A global function: the
 * verifier checks it once. */
__attribute__((noinline)) __u32 lf_crc32_5tuple(__u32 src, __u32 dst, __u32 proto, __u32 ports)
{
	__u32 crc = 0xffffffff;

	crc = crc32_be(crc, src, 4);
	crc = crc32_be(crc, dst, 4);
	crc = crc32_be(crc, proto, 1);
	crc = crc32_be(crc, ports, 4);
	return ~crc;
}

/* Ecmp::seeded_hash: CRC-32 xor the switch's seed, then MurmurHash3's fmix32. */
static __always_inline __u32 seeded_hash(__u32 crc, __u32 seed)
{
	__u32 h = crc ^ seed;

	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	return h ^ (h >> 16);
}

/* sport << 16 | dport as wire::parse_frame reads them: a first fragment of UDP with its 8
 * header bytes or TCP with 20, inside the total length; else 0. */
static __always_inline __u32 l4_ports(struct __sk_buff *skb, __u8 proto, __u16 frag_off,
				      __u32 ihl_bytes, __u32 tot_len)
{
	__u32 need = proto == IPPROTO_UDP ? 8 : 20;
	__u8 p[4];

	if ((proto != IPPROTO_UDP && proto != IPPROTO_TCP) || (frag_off & 0x1fff) != 0 ||
	    tot_len < ihl_bytes + need || ihl_bytes > 60)
		return 0;
	if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr) + ihl_bytes, p, sizeof(p)))
		return 0;
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
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

/* Rewrite the Ethernet addresses for the way out of `port`; -1 if the frame has no header. */
static __always_inline int set_macs(struct __sk_buff *skb, const struct mps_port *p)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(eth->h_dest, p->peer_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, p->own_mac, ETH_ALEN);
	return 0;
}

SEC("tc")
int lf_ingress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
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
	if (len < sizeof(struct ethhdr) || (void *)(eth + 1) > data_end) {
		count(LF_C_MALFORMED);
		return TC_ACT_SHOT;
	}
	if (skb->vlan_present || eth->h_proto != bpf_htons(ETH_P_IP)) {
		count(LF_C_NOT_IPV4); /* ARP, IPv6, VLAN-tagged: the node's own stack */
		return TC_ACT_OK;
	}
	if (len < sizeof(struct ethhdr) + sizeof(struct iphdr)) {
		count(LF_C_MALFORMED);
		return TC_ACT_SHOT;
	}
	if ((void *)eth + sizeof(struct ethhdr) + sizeof(struct iphdr) > data_end) {
		if (bpf_skb_pull_data(skb, sizeof(struct ethhdr) + sizeof(struct iphdr)))
			return TC_ACT_SHOT;
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		eth = data;
		if ((void *)eth + sizeof(struct ethhdr) + sizeof(struct iphdr) > data_end)
			return TC_ACT_SHOT;
	}
	ip = (void *)(eth + 1);
	ihl_bytes = ip->ihl * 4;
	tot_len = bpf_ntohs(ip->tot_len);
	if (ip->version != 4 || ihl_bytes < sizeof(struct iphdr) ||
	    len - sizeof(struct ethhdr) < ihl_bytes || tot_len < ihl_bytes ||
	    tot_len > len - sizeof(struct ethhdr)) {
		count(LF_C_MALFORMED);
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
	{
		/* RFC 1624 incremental update: TTL is the high byte of its 16-bit word. */
		__u32 c = (__u16)~bpf_ntohs(ip->check);

		c += 0xfeff;
		c = (c & 0xffff) + (c >> 16);
		c = (c & 0xffff) + (c >> 16);
		ip->check = bpf_htons((__u16)~c);
		ip->ttl -= 1;
	}

	/* IPv4 longest-prefix match; an equal-cost group goes through the flowlet table. */
	{
		struct mps_route_key key = { .prefixlen = 32, .addr = ip->daddr };
		__u32 *r = bpf_map_lookup_elem(&routes, &key);

		if (r && (*r & MPS_ECMP_GROUP)) {
			__u32 gk = *r & ~MPS_ECMP_GROUP;
			struct mps_ecmp *g = gk < MPS_MAX_ECMP_GROUPS ? bpf_map_lookup_elem(&ecmp, &gk) : NULL;

			if (g && g->n_ports > 0 && g->n_ports <= MPS_MAX_PORTS) {
				__u32 h = seeded_hash(
					lf_crc32_5tuple(src, dst, ip->protocol,
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
