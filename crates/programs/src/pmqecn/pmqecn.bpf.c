// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * PMQECN's congestion point (paper Algorithm 1) for TC: the twin of cp.rs (program `pmqecn`),
 * register for register. It is vq-wrr (vqwrr.bpf.c, included whole, with the multipath switch
 * under it) with a queue stage that also counts each class's arrivals at each port and, while
 * the class holds more than its threshold there, asks mps_ingress to reflect a rate feedback
 * to the packet's source (struct mps_reflect): UDP from port 50011 to the packet's source
 * port, DSCP 56, CE, its payload "MPRF" with the class, its queue and the rates the control
 * plane wrote (crates/core/src/rate_wire.rs), at most one per class and port per feedback_gap.
 * The data packet leaves as a clone (bpf_clone_redirect), or not at all if its virtual queue
 * is full; the original becomes the feedback, routed by the switch's routes and sent from the
 * top level of its port, without a tag, so no departure stage counts it.
 */
#include "mps_common.h"
#include "pmqecn.h"

_Static_assert(sizeof(struct pq_node) == PQ_SIZEOF_NODE, "struct pq_node");
_Static_assert(sizeof(struct pq_class) == PQ_SIZEOF_CLASS, "struct pq_class");
_Static_assert(sizeof(struct pq_port) == PQ_SIZEOF_PORT, "struct pq_port");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pq_node);
} pq_node SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VQ_QUEUES);
	__type(key, __u32);
	__type(value, struct pq_class);
} pq_class SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct pq_port);
} pq_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PQ_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} pq_counters SEC(".maps");

static __always_inline void pq_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&pq_counters, &which);

	if (c)
		*c += 1;
}

static __always_inline int pq_stage(struct __sk_buff *skb, __u32 port, __u8 tos,
				    struct mps_reflect *rf);

#define MPS_QUEUE_STAGE(skb, port, tos, reflect) pq_stage(skb, port, tos, reflect)
#define MPS_REFLECT_DONE(routed) pq_count((routed) ? PQ_C_FEEDBACK : PQ_C_FEEDBACK_NO_ROUTE)
#include "vqwrr.bpf.c"

/* Pmqecn::ingress once the port is known: place the packet (VqWrr), count its arrival, and
 * ask for feedback above the class's threshold unless the gap holds it back. */
static __always_inline int pq_stage(struct __sk_buff *skb, __u32 port, __u8 tos,
				    struct mps_reflect *rf)
{
	__u32 zero = 0, key = (tos >> 5) & (VQ_QUEUES - 1), qlen;
	__u64 v = key, now;
	int pass = vq_place(skb, port, tos, &qlen);
	struct pq_class *c = bpf_map_lookup_elem(&pq_class, &key);
	struct pq_port *pp = bpf_map_lookup_elem(&pq_port, &port);
	struct pq_node *pn = bpf_map_lookup_elem(&pq_node, &zero);
	struct mps_node *n = bpf_map_lookup_elem(&node, &zero);
	int over, send = 0;

	if (!c || !pp || !pn || !n)
		return pass;
	now = (n->flags & MPS_F_TEST_CLOCK) ? n->test_clock_ns : bpf_ktime_get_ns();
	over = qlen > c->threshold;
	barrier_var(v);
	v &= VQ_QUEUES - 1;
	bpf_spin_lock(&pp->lock);
	pp->touched = 1;
	pp->arrival_bytes[v] += skb->len;
	pp->arrival_pkts[v] += 1;
	if (over && !(((pp->fb_sent >> v) & 1) && now < pp->last_fb_ns[v] + pn->gap_ns)) {
		pp->fb_sent |= 1u << v;
		pp->last_fb_ns[v] = now;
		send = 1;
	}
	bpf_spin_unlock(&pp->lock);
	if (over && !send)
		pq_count(PQ_C_FEEDBACK_HELD);
	if (send) {
		rf->want = 1;
		rf->body.magic = bpf_htonl(MPS_RATE_FEEDBACK_MAGIC);
		rf->body.queue = (__u8)v;
		rf->body.qlen_pkts = bpf_htons(qlen > 0xffff ? 0xffff : qlen);
		rf->body.measured_kbps = bpf_htonl(c->rate_kbps);
		rf->body.target_kbps = bpf_htonl(c->target_kbps);
	}
	return pass;
}
