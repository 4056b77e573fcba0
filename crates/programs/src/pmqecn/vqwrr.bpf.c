// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * Virtual-queue WRR on strict-priority queues (PMQECN, Fig. 4) for TC: the twin of vqwrr.rs
 * (program `vq-wrr`), register for register. Forwarding is bpf/mpsched.bpf.c's, whole (this
 * file includes it); its queue stage (MPS_QUEUE_STAGE) is vq_place below.
 *
 *   mps_ingress, once the port p is known: the packet's virtual queue v is its DSCP class
 *     (tos >> 5); a virtual queue holding vq_capacity packets at p drops it (vq.drops);
 *     otherwise it takes the highest level l below the port's levels where level_use[p][v][l]
 *     < vq_weight[v], or level 0; vq_len and level_use rise, skb->priority becomes the class
 *     id of the port's queue l, which the port's qdisc (htb classes, or a prio / ets band)
 *     takes before its DSCP filters, and skb->hash the level's tag.
 *   vq_departure, at TC ingress of the interface at the far end of each of the switch's links
 *     (another namespace: a host's or the next switch's), ahead of whatever that end runs: TC
 *     egress runs before the qdisc and the kernel has no hook after it, so a packet's departure
 *     from the port's queue is seen where it arrives. The port is the one whose MAC sent the
 *     frame, the level the one placement tagged the packet with in skb->hash (VQ_HASH_TAG:
 *     the hash crosses veth into another namespace, where skb->priority and skb->mark are
 *     zeroed); vq_len and level_use fall, or, if either is already 0, vq.accounting_errors
 *     counts it. The hash is cleared, so the next hop does not count the packet again. A
 *     frame no port of this switch sent, that carries no tag, or that the switch itself sent
 *     (pmqecn's feedback: never placed) is not this program's: left alone.
 *
 * The accounting is exact while nothing is lost between placement and the far end: the
 * ports' queues must hold 8 x vq_capacity packets each (vq-wrr refuses smaller ones), and veth
 * does not drop between two namespaces of one machine.
 */
#include "mps_common.h"
#include "vqwrr.h"

_Static_assert(sizeof(struct vq_node) == VQ_SIZEOF_NODE, "struct vq_node");
_Static_assert(sizeof(struct vq_port_cfg) == VQ_SIZEOF_PORT_CFG, "struct vq_port_cfg");
_Static_assert(sizeof(struct vq_port_state) == VQ_SIZEOF_PORT_STATE, "struct vq_port_state");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vq_node);
} vq_node SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VQ_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} vq_weight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vq_port_cfg);
} vq_port_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct vq_port_state);
} vq_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, struct vq_mac);
	__type(value, __u32);
} vq_mac_port SEC(".maps");

/* The most packets each port's virtual queues held together since the control plane last read
 * (and zeroed) it: the time series' <link>_queue_max_pkts. Updated without the lock: a race
 * loses a maximum to a concurrent reset, never counts one that was not. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} vq_qmax SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VQ_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} vq_counters SEC(".maps");

static __always_inline void vq_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&vq_counters, &which);

	if (c)
		*c += 1;
}

/* The highest level below `levels` where the class has placed fewer than `weight` packets, or
 * level 0 (VqWrr::place's search; levels are tried from 0 up, each with room overwriting). */
static __always_inline __u64 vq_level(const struct vq_port_state *st, __u64 v, __u64 levels,
				      __u32 weight)
{
	__u64 l, level = 0;

#pragma unroll
	for (l = 0; l < VQ_LEVELS; l++)
		if (l < levels && st->level_use[(v * VQ_LEVELS + l) & (VQ_CELLS - 1)] < weight)
			level = l;
	return level;
}

/* VqWrr::place for a packet of DSCP byte `tos` leaving by `port`: 1 to forward it (its queue
 * set in skb->priority), 0 to drop it (its virtual queue is full there); `*vq_len`, its
 * virtual queue's packets at the port after (pmqecn's threshold reads it). */
static __always_inline int vq_place(struct __sk_buff *skb, __u32 port, __u8 tos, __u32 *vq_len)
{
	/* 64-bit indices: the verifier keeps the bounds of a 64-bit spill, not of a 32-bit one. */
	__u64 v = tos >> 5, level, levels;
	__u32 zero = 0, key = v, prio, total = 0, i, *qmax;
	struct vq_port_state *st;
	struct vq_port_cfg *pc;
	struct vq_node *n;
	__u32 *weight;
	int full;

	n = bpf_map_lookup_elem(&vq_node, &zero);
	pc = bpf_map_lookup_elem(&vq_port_cfg, &port);
	st = bpf_map_lookup_elem(&vq_state, &port);
	weight = bpf_map_lookup_elem(&vq_weight, &key);
	*vq_len = 0;
	if (!n || !pc || !st || !weight)
		return 1; /* a port beyond the maps: the forwarding stage refused it already */
	levels = pc->levels;
	if (levels < 1 || levels > VQ_LEVELS)
		levels = 1;
	v &= VQ_QUEUES - 1;
	bpf_spin_lock(&st->lock);
	st->touched = 1;
	full = st->vq_len[v] >= n->capacity;
	level = 0;
	if (!full) {
		__u64 cell;

		level = vq_level(st, v, levels, *weight) & (VQ_LEVELS - 1);
		/* The masks are no-ops; they keep the bounds visible to the verifier, which may
		 * see a spilled copy of v without them. */
		cell = v * VQ_LEVELS + level;
		barrier_var(cell);
		cell &= VQ_CELLS - 1;
		st->vq_len[v & (VQ_QUEUES - 1)] += 1;
		st->level_use[cell] += 1;
	}
	*vq_len = st->vq_len[v & (VQ_QUEUES - 1)];
#pragma unroll
	for (i = 0; i < VQ_QUEUES; i++)
		total += st->vq_len[i];
	bpf_spin_unlock(&st->lock);
	qmax = bpf_map_lookup_elem(&vq_qmax, &port);
	if (qmax && *qmax < total)
		*qmax = total;
	if (full) {
		vq_count(VQ_C_DROPS);
		return 0;
	}
	vq_count(level + 1 == levels ? VQ_C_TOP_LEVEL : VQ_C_DOWNGRADED);
	prio = pc->prio_of_level[level & (VQ_LEVELS - 1)];
	skb->priority = prio;
	bpf_set_hash(skb, VQ_HASH_TAG | (__u32)level);
	return 1;
}

static __always_inline int vq_stage(struct __sk_buff *skb, __u32 port, __u8 tos)
{
	__u32 len;

	return vq_place(skb, port, tos, &len);
}

/* The skb->priority of the port's top level: where the switch's own packets leave (pmqecn's
 * feedback, VqWrr::top_level). */
static __always_inline __u32 vq_top_priority(__u32 port)
{
	struct vq_port_cfg *pc = bpf_map_lookup_elem(&vq_port_cfg, &port);
	__u32 levels;

	if (!pc)
		return 0;
	levels = pc->levels;
	if (levels < 1 || levels > VQ_LEVELS)
		levels = 1;
	return pc->prio_of_level[(levels - 1) & (VQ_LEVELS - 1)];
}

/* pmqecn.bpf.c includes this file with a stage of its own over vq_place. */
#ifndef MPS_QUEUE_STAGE
#define MPS_QUEUE_STAGE(skb, port, tos, reflect) vq_stage(skb, port, tos)
#endif
#define MPS_REFLECT_PRIORITY(port) vq_top_priority(port)
#include "mpsched.bpf.c"

/* VqWrr::on_dequeue's counting, where the packet arrives after leaving the port's queue. */
SEC("tc")
int vq_departure(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct vq_mac mac = {};
	struct vq_port_state *st;
	struct vq_port_cfg *pc;
	__u64 v, level, at;
	__u32 *port, zero = 0, tag, prio;
	struct vq_node *n;
	struct mps_node *sw;
	struct iphdr *ip;

	if ((void *)(eth + 1) + sizeof(struct iphdr) > data_end ||
	    eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	ip = (struct iphdr *)(eth + 1);
	__builtin_memcpy(mac.addr, eth->h_source, ETH_ALEN);
	port = bpf_map_lookup_elem(&vq_mac_port, &mac);
	if (!port)
		return TC_ACT_UNSPEC;
	pc = bpf_map_lookup_elem(&vq_port_cfg, port);
	st = bpf_map_lookup_elem(&vq_state, port);
	if (!pc || !st)
		return TC_ACT_UNSPEC;
	n = bpf_map_lookup_elem(&vq_node, &zero);
	sw = bpf_map_lookup_elem(&node, &zero);
	if (!n || !sw)
		return TC_ACT_UNSPEC;
	/* The switch's own packets (pmqecn's feedback) were never placed (VqWrr::on_dequeue). */
	if (ip->saddr == bpf_htonl(sw->own_ip))
		return TC_ACT_UNSPEC;
	/* BPF_PROG_TEST_RUN cannot set skb->hash: the vectors' replay puts the tag in priority. */
	prio = skb->priority;
	tag = skb->hash;
	/* Both read: clang would otherwise select between the two context offsets, which the
	 * verifier refuses. */
	barrier_var(prio);
	barrier_var(tag);
	if (n->flags & VQ_F_TEST_TAG_IN_PRIORITY)
		tag = prio;
	if ((tag & VQ_HASH_TAG_MASK) != VQ_HASH_TAG)
		return TC_ACT_UNSPEC;
	level = tag & ~VQ_HASH_TAG_MASK;
	if (level >= pc->levels || level >= VQ_LEVELS)
		return TC_ACT_UNSPEC;
	v = (ip->tos >> 5) & (VQ_QUEUES - 1);
	at = v * VQ_LEVELS + level;
	barrier_var(at);
	at &= VQ_CELLS - 1;
	bpf_spin_lock(&st->lock);
	st->touched = 1;
	if (st->vq_len[v & (VQ_QUEUES - 1)] == 0 || st->level_use[at] == 0) {
		bpf_spin_unlock(&st->lock);
		vq_count(VQ_C_ACCOUNTING_ERRORS);
	} else {
		st->vq_len[v & (VQ_QUEUES - 1)] -= 1;
		st->level_use[at] -= 1;
		bpf_spin_unlock(&st->lock);
	}
	bpf_set_hash_invalid(skb);
	return TC_ACT_UNSPEC;
}
