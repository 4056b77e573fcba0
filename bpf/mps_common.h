/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * What every switch program for TC shares: the node's ports, routes and equal-cost groups
 * (maps of mpsched.h's layouts, filled alike by the kernel backend), frame checks as
 * wire::parse_frame makes them, the ECMP hash (Ecmp::seeded_hash), the TTL update and the MAC
 * rewrite. Included once by each program's .bpf.c (bpf/mpsched.bpf.c,
 * crates/programs/src/<name>/<name>.bpf.c), so each object has its own maps and copies of the
 * functions; every function is static inline but mps_crc32_5tuple, a global function the
 * verifier checks once per object.
 *
 * The including program declares its own `counters` map and counting; the maps here are the
 * ones the kernel backend fills the same way for every program (crates/netns/src/dataplane.rs,
 * crates/netns/src/programs/).
 */
#ifndef MPS_COMMON_H
#define MPS_COMMON_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "mpsched.h"

_Static_assert(sizeof(struct mps_port) == MPS_SIZEOF_PORT, "struct mps_port");
_Static_assert(sizeof(struct mps_port_stats) == MPS_SIZEOF_PORT_STATS, "struct mps_port_stats");
_Static_assert(sizeof(struct mps_ecmp) == MPS_SIZEOF_ECMP, "struct mps_ecmp");

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
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct mps_port_stats);
} port_stats SEC(".maps");

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

/*
 * Branch-free helpers. The verifier walks every branch of a program, and a scan over paths or
 * groups that branches per entry leaves one verifier state per outcome; chained scans
 * multiply them past its budget. Written as masks, each scan has one path. Values stay below
 * 2^63. barrier_var() keeps clang from turning the masks back into branches.
 */
static __always_inline __u64 lt_mask(__u64 a, __u64 b) /* all ones iff a < b */
{
	__u64 m;

	/* Hidden inputs: knowing both are small, clang would turn the shift into a branch. */
	barrier_var(a);
	barrier_var(b);
	m = (a - b) >> 63;
	barrier_var(m);
	return 0 - m;
}

/* What mps_parse_ipv4 found. */
enum mps_parsed {
	MPS_PARSED_IPV4 = 0,  /* an IPv4 packet whose header lies in the linear data */
	MPS_PARSED_NOT_IPV4,  /* ARP, IPv6, a VLAN tag: the node's own stack */
	MPS_PARSED_MALFORMED, /* count it malformed and drop it */
	MPS_PARSED_NO_PULL,   /* the header could not be made linear: drop it */
};

/*
 * wire::parse_frame, check for check: a runt, a frame that is not IPv4, a truncated IPv4
 * header, a bad version, IHL or total length. A VLAN-tagged frame is not IPv4 either: by the
 * time TC sees it the kernel has moved the tag to skb->vlan_tci, so the frame looks untagged.
 * On MPS_PARSED_IPV4, *ipp is the IPv4 header (after a pull, in the new linear data) and
 * *ihl_bytes / *tot_len its header length and total length.
 */
static __always_inline int mps_parse_ipv4(struct __sk_buff *skb, struct iphdr **ipp, __u32 *ihl_bytes,
					  __u32 *tot_len)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u32 len = skb->len;
	struct iphdr *ip;

	if (len < sizeof(struct ethhdr) || (void *)(eth + 1) > data_end)
		return MPS_PARSED_MALFORMED; /* Runt */
	if (skb->vlan_present || eth->h_proto != bpf_htons(ETH_P_IP))
		return MPS_PARSED_NOT_IPV4;
	if (len < sizeof(struct ethhdr) + sizeof(struct iphdr))
		return MPS_PARSED_MALFORMED; /* TruncatedIpv4 */
	if ((void *)eth + sizeof(struct ethhdr) + sizeof(struct iphdr) > data_end) {
		if (bpf_skb_pull_data(skb, sizeof(struct ethhdr) + sizeof(struct iphdr)))
			return MPS_PARSED_NO_PULL;
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		eth = data;
		if ((void *)eth + sizeof(struct ethhdr) + sizeof(struct iphdr) > data_end)
			return MPS_PARSED_NO_PULL;
	}
	ip = (void *)(eth + 1);
	if (ip->version != 4)
		return MPS_PARSED_MALFORMED; /* BadVersion */
	*ihl_bytes = ip->ihl * 4;
	if (*ihl_bytes < sizeof(struct iphdr))
		return MPS_PARSED_MALFORMED; /* BadIhl */
	if (len - sizeof(struct ethhdr) < *ihl_bytes)
		return MPS_PARSED_MALFORMED; /* TruncatedIpv4 */
	*tot_len = bpf_ntohs(ip->tot_len);
	if (*tot_len < *ihl_bytes || *tot_len > len - sizeof(struct ethhdr))
		return MPS_PARSED_MALFORMED; /* BadTotalLength */
	*ipp = ip;
	return MPS_PARSED_IPV4;
}

/* TTL - 1, the checksum updated as RFC 1624 says (TTL is the high byte of its 16-bit word). */
static __always_inline void decrement_ttl(struct iphdr *ip)
{
	__u32 c = (__u16)~bpf_ntohs(ip->check);

	c += 0xfeff; /* minus 0x0100 in one's complement */
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	ip->check = bpf_htons((__u16)~c);
	ip->ttl -= 1;
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

/* CRC-32 of the 13-byte 5-tuple in network order, as crc32fast::hash in Ecmp::flow_hash; bit
 * by bit, branch-free, no table. A global function: the verifier checks it once, not once per
 * path that reaches the route lookup. */
__attribute__((noinline)) __u32 mps_crc32_5tuple(__u32 src, __u32 dst, __u32 proto, __u32 ports)
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

/* Source and destination port (sport << 16 | dport) as wire::parse_frame reads them: a first
 * fragment of UDP with its 8 header bytes or TCP with 20, inside the total length; else 0. */
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

#endif
