// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * iperf3's control traffic in its flow's class, at TC egress of a host's interfaces (the
 * kernel backend's hosts, crates/netns/src/hostclass.rs).
 *
 * iperf3 marks only its data with a flow's DSCP (-S); its TCP control connection and its UDP
 * streams' opening datagrams leave at DSCP 0, the lowest class of a port of several queues.
 * Under strict priority a client whose opening exchange meets the other classes' backlog
 * waits there until they stop, and its test runs after the run; so does the closing exchange
 * of every client. This program gives a packet of a flow (to the flow's server address and
 * port from its client, or back) that leaves at DSCP 0 the flow's DSCP (ECN bits kept, the
 * IPv4 checksum updated), as if iperf3 set its control socket's TOS too. A flow of DSCP 0 is
 * not listed; data already marked is left.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define HC_MAX_PORTS 256

/* A flow's far end as this host sees it: the other host's address (network order) and the
 * flow's server port (host order). Ports alone are not unique: two flows from one host may
 * use one server port at two servers. */
struct hc_key {
	__u32 addr;
	__u16 port;
	__u16 pad;
};

/* Map "hc_flows": a flow's far end -> its DSCP (1 to 63). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HC_MAX_PORTS);
	__type(key, struct hc_key);
	__type(value, __u8);
} hc_flows SEC(".maps");

/* Map "hc_marked": per-CPU count of packets given a flow's DSCP. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hc_marked SEC(".maps");

#define HC_TOS_OFF (ETH_HLEN + offsetof(struct iphdr, tos))
#define HC_CSUM_OFF (ETH_HLEN + offsetof(struct iphdr, check))

SEC("tc")
int host_class(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	__u16 sport, dport, *l4, old_word, new_word;
	struct hc_key key = {};
	__u32 zero = 0, ihl;
	__u8 *dscp, tos;
	__u64 *c;

	if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	if ((ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP) || (ip->tos >> 2) != 0 ||
	    (ip->frag_off & bpf_htons(0x1fff)))
		return TC_ACT_OK;
	ihl = ip->ihl * 4;
	if (ihl < sizeof(struct iphdr) || ihl > 60)
		return TC_ACT_OK;
	l4 = (__u16 *)((void *)ip + ihl);
	if ((void *)(l4 + 2) > data_end)
		return TC_ACT_OK;
	sport = bpf_ntohs(l4[0]);
	dport = bpf_ntohs(l4[1]);
	/* The client's packets go to the server's port, the server's come from it. */
	key.addr = ip->daddr;
	key.port = dport;
	dscp = bpf_map_lookup_elem(&hc_flows, &key);
	if (!dscp) {
		key.port = sport;
		dscp = bpf_map_lookup_elem(&hc_flows, &key);
	}
	if (!dscp || *dscp == 0)
		return TC_ACT_OK;
	tos = ip->tos;
	/* The checksum covers 16-bit words: version/IHL and TOS are one. */
	old_word = bpf_htons(((__u16)(*(__u8 *)ip) << 8) | tos);
	tos = (__u8)(*dscp << 2) | (tos & 3);
	new_word = bpf_htons(((__u16)(*(__u8 *)ip) << 8) | tos);
	if (bpf_l3_csum_replace(skb, HC_CSUM_OFF, old_word, new_word, 2))
		return TC_ACT_OK;
	if (bpf_skb_store_bytes(skb, HC_TOS_OFF, &tos, 1, 0))
		return TC_ACT_OK;
	c = bpf_map_lookup_elem(&hc_marked, &zero);
	if (c)
		*c += 1;
	return TC_ACT_OK;
}
