// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * The UPF benchmark's traffic through real veths (crates/netns/src/programs/atsss/bench.rs),
 * no part of the UPF:
 *
 *   atsss_gen, run by BPF_PROG_TEST_RUN in live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES): the
 *     kernel hands it frames from a page pool, it writes a downlink UDP packet to a UE drawn
 *     at random, of a size drawn from the configured mix, and redirects it into the veth whose
 *     peer runs the UPF. Pages come back from the UPF encapsulated (the Ethernet header
 *     overwritten) or shrunk, and the kernel does not restore their contents: so it writes
 *     every header byte and sets the length each time;
 *   atsss_sink, at XDP on the far ends of the UPF's ports: counts packets and bytes, drops;
 *   atsss_fwd, in the UPF's place for the baseline: rewrites the MACs and redirects to one
 *     port, the least a forwarding XDP program does.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "atsss.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define GEN_SIZES 8

/* Map "gen": array of one. */
struct atsss_gen_cfg {
	__u32 target_ifindex; /* where generated frames are redirected (the UPF's peer veth) */
	__u32 n_ues;
	__u32 n_sizes;   /* the first n_sizes of sizes, drawn uniformly (repeat a size to weight it) */
	__u32 src_ip;    /* host order */
	__u16 sizes[GEN_SIZES]; /* frame bytes, 64 to the first run's frame */
	__u8 dst_mac[6];
	__u8 src_mac[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct atsss_gen_cfg);
} gen SEC(".maps");

/* UE own addresses (host order), indexed 0..n_ues. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ATSSS_MAX_UES);
	__type(key, __u32);
	__type(value, __u32);
} gen_ues SEC(".maps");

/* Map "fwd": array of one, atsss_fwd's port: ifindex, own MAC, peer MAC (struct mps_port). */
struct atsss_fwd_cfg {
	__u32 ifindex;
	__u8 own_mac[6];
	__u8 peer_mac[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct atsss_fwd_cfg);
} fwd SEC(".maps");

/* Sink counters, per CPU: 0 packets, 1 bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} sink_stats SEC(".maps");

SEC("xdp")
int atsss_gen(struct xdp_md *ctx)
{
	__u32 zero = 0, u, size, cur, sum, *ue;
	struct atsss_gen_cfg *c = bpf_map_lookup_elem(&gen, &zero);
	void *data, *data_end;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;

	if (!c || c->n_ues == 0 || c->n_sizes == 0 || c->n_sizes > GEN_SIZES)
		return XDP_ABORTED;
	size = c->sizes[(__u32)(((__u64)bpf_get_prandom_u32() * c->n_sizes) >> 32) & (GEN_SIZES - 1)];
	cur = ctx->data_end - ctx->data;
	if (cur != size && bpf_xdp_adjust_tail(ctx, (int)size - (int)cur))
		return XDP_ABORTED;
	u = (__u32)(((__u64)bpf_get_prandom_u32() * c->n_ues) >> 32);
	ue = bpf_map_lookup_elem(&gen_ues, &u);
	if (!ue)
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	ip = (void *)(eth + 1);
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(eth->h_dest, c->dst_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, c->src_mac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = bpf_htons(size - sizeof(*eth));
	ip->id = 0;
	ip->frag_off = bpf_htons(0x4000);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	sum = 0x4500 + (size - sizeof(*eth)) + 0x4000 + (64 << 8 | IPPROTO_UDP) + (c->src_ip >> 16) +
	      (c->src_ip & 0xffff) + (*ue >> 16) + (*ue & 0xffff);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = bpf_htons((__u16)~sum);
	ip->saddr = bpf_htonl(c->src_ip);
	ip->daddr = bpf_htonl(*ue);
	udp->source = bpf_htons(1000);
	udp->dest = bpf_htons(5201);
	udp->len = bpf_htons(size - sizeof(*eth) - sizeof(*ip));
	udp->check = 0;
	return bpf_redirect(c->target_ifindex, 0);
}

SEC("xdp")
int atsss_sink(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&sink_stats, &k);

	if (v)
		*v += 1;
	k = 1;
	v = bpf_map_lookup_elem(&sink_stats, &k);
	if (v)
		*v += ctx->data_end - ctx->data;
	return XDP_DROP;
}

SEC("xdp")
int atsss_fwd(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct atsss_fwd_cfg *c = bpf_map_lookup_elem(&fwd, &zero);
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if (!c || (void *)(eth + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(eth->h_dest, c->peer_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, c->own_mac, ETH_ALEN);
	return bpf_redirect(c->ifindex, 0);
}
