// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * DCQCN's, TCN's and P4QCN's congestion points for TC (programs `dcqcn`, `tcn` and `p4qcn`, one
 * object): the twins of baselines.rs's Baseline with Rule::Red, Rule::Sojourn and Rule::Qcn.
 * Forwarding is
 * bpf/mpsched.bpf.c's, whole (this file includes it); its queue stage (MPS_QUEUE_STAGE) is
 * bl_enqueue.
 *
 *   mps_ingress, once the port p is known: a packet that finds fifo_pkts packets in p's queue
 *     (as this program counts it) is dropped (baseline.tail_drops); otherwise its enqueue is
 *     recorded (when, and the depth it found) at the tail of p's ring, the count rises, the
 *     packet goes to p's queue 0 (skb->priority) and carries BL_HASH_TAG and its record's
 *     number (16 bits) in skb->hash. P4QCN then samples the packet, at most one per port per
 *     gap_ns (feedback, DSCP 56, never): Fb = -((q - q_eq) + w (q - q_old)) on the depth q it
 *     found; Fb < 0 is quantised to 6 bits against q_eq (2w + 1) and reflected to the packet's
 *     source as a rate feedback whose target / measured is (128 - Fb6) / 128, through
 *     mps_ingress's struct mps_reflect (the switch's own packets are not reflected).
 *   bl_departure, at TC ingress of the interface at the far end of each link (as vqwrr.bpf.c's
 *     vq_departure, and for the same reason: the kernel has no hook after a qdisc): a tagged
 *     frame from one of the switch's ports takes its record from that port's ring (queue 0 is
 *     first in, first out: its record is at the head, but for packets that reached the qdisc
 *     in another order than they were recorded, see below), the count falls, and the marking
 *     rule decides on the
 *     depth the packet found (DCQCN: none below kmin, a draw between kmin and kmax against
 *     pmax x (q - kmin) / (kmax - kmin), always above) or on how long it waited (TCN: longer
 *     than sojourn). Only an ECN-capable packet is decided, takes a draw, or is marked CE.
 *
 * A departure marks the packet where it arrives, after it left the queue: what P4 does in
 * egress. The count is exact while nothing the program counted is lost before the far end:
 * the port's qdisc holds more than fifo_pkts (the backend's queue_pkts check) and veth does
 * not drop between two namespaces of one machine.
 */
#include "mps_common.h"
#include "baseline.h"

_Static_assert(sizeof(struct bl_node) == BL_SIZEOF_NODE, "struct bl_node");
_Static_assert(sizeof(struct bl_port) == BL_SIZEOF_PORT, "struct bl_port");
_Static_assert(sizeof(struct bl_qcn) == BL_SIZEOF_QCN, "struct bl_qcn");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bl_node);
} bl_node SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} bl_port_prio SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bl_port);
} bl_ports SEC(".maps");

/* The most packets each port's queue held since the control plane last read (and zeroed) it:
 * the time series' <link>_queue_max_pkts. Updated without the lock: a race loses a maximum
 * to a concurrent reset, never counts one that was not. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} bl_qmax SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bl_qcn);
} bl_qcn SEC(".maps");

/* A port's own MAC (8 bytes, the last two 0) -> port, as vqwrr.bpf.c's vq_mac_port. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MPS_MAX_PORTS);
	__type(key, __u64);
	__type(value, __u32);
} bl_mac_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BL_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} bl_counters SEC(".maps");

static __always_inline void bl_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&bl_counters, &which);

	if (c)
		*c += 1;
}

static __always_inline void bl_count_n(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&bl_counters, &which);

	if (c)
		*c += n;
}

static __always_inline int bl_enqueue(struct __sk_buff *skb, __u32 port, __u8 tos,
				      struct mps_reflect *rf);

/* The port's queue 0: where the switch's own feedback leaves (Baseline::reflect). */
static __always_inline __u32 bl_prio_of(__u32 port)
{
	__u32 *prio = bpf_map_lookup_elem(&bl_port_prio, &port);

	return prio ? *prio : 0;
}

#define MPS_QUEUE_STAGE(skb, port, tos, reflect) bl_enqueue(skb, port, tos, reflect)
#define MPS_REFLECT_PRIORITY(port) bl_prio_of(port)
#define MPS_REFLECT_DONE(routed) bl_count((routed) ? BL_C_QCN_FEEDBACK : BL_C_QCN_FEEDBACK_NO_ROUTE)
#include "mpsched.bpf.c"

/* The clock: the node's test clock under MPS_F_TEST_CLOCK, else the kernel's. */
static __always_inline __u64 bl_now(void)
{
	__u32 zero = 0;
	struct mps_node *n = bpf_map_lookup_elem(&node, &zero);

	if (n && (n->flags & MPS_F_TEST_CLOCK))
		return n->test_clock_ns;
	return bpf_ktime_get_ns();
}

/* Baselines::qcn_fb: QCN's quantised |Fb| (0: no congestion) for queue q after q_old. */
static __always_inline __u32 bl_qcn_fb(__u32 q, __u32 q_old, __u32 q_eq, __u32 w)
{
	__s64 fb = -(((__s64)q - (__s64)q_eq) + (__s64)w * ((__s64)q - (__s64)q_old));
	__u64 fb_max = (__u64)q_eq * (2 * (__u64)w + 1), mag;

	if (fb >= 0 || fb_max == 0)
		return 0;
	mag = (__u64)(-fb);
	if (mag > fb_max)
		mag = fb_max;
	return (__u32)((mag * 63 + fb_max - 1) / fb_max);
}

/* Baseline::qcn_sample for a packet that found q packets at `port`: at most one sample per
 * gap; a congested one asks for feedback to the packet's source in `rf`. */
static __always_inline void bl_qcn_sample(struct __sk_buff *skb, const struct bl_node *b, __u32 port,
					  __u32 q, __u8 tos, struct mps_reflect *rf)
{
	struct bl_qcn *s = bpf_map_lookup_elem(&bl_qcn, &port);
	__u32 zero = 0, q_old, fb;
	struct mps_node *n = bpf_map_lookup_elem(&node, &zero);
	__u64 now = bl_now();
	__be32 saddr = 0;

	if (!s || !n)
		return;
	bpf_spin_lock(&s->lock);
	if (s->sampled && now < s->last_ns + b->gap_ns) {
		bpf_spin_unlock(&s->lock);
		return;
	}
	s->sampled = 1;
	s->last_ns = now;
	q_old = s->q_old;
	s->q_old = q;
	bpf_spin_unlock(&s->lock);
	bl_count(BL_C_QCN_SAMPLES);
	fb = bl_qcn_fb(q, q_old, b->q_eq, b->w);
	if (fb == 0)
		return;
	if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr) + offsetof(struct iphdr, saddr), &saddr,
			       sizeof(saddr)) ||
	    saddr == bpf_htonl(n->own_ip))
		return;
	rf->want = 1;
	rf->body.magic = bpf_htonl(MPS_RATE_FEEDBACK_MAGIC);
	rf->body.queue = tos >> 5;
	rf->body.qlen_pkts = bpf_htons(q > 0xffff ? 0xffff : q);
	rf->body.measured_kbps = bpf_htonl(128);
	rf->body.target_kbps = bpf_htonl(128 - fb);
}

/* Baseline::on_enqueue's tail drop and the record of the enqueue: 1 to forward, 0 to drop. */
static __always_inline int bl_enqueue(struct __sk_buff *skb, __u32 port, __u8 tos,
				      struct mps_reflect *rf)
{
	__u32 zero = 0, full, *prio, *qmax, seq = 0, depth = 0, q;
	struct bl_port *st;
	struct bl_node *n;
	__u64 now = bl_now();

	n = bpf_map_lookup_elem(&bl_node, &zero);
	st = bpf_map_lookup_elem(&bl_ports, &port);
	prio = bpf_map_lookup_elem(&bl_port_prio, &port);
	if (!n || !st || !prio)
		return 1;
	bpf_spin_lock(&st->lock);
	/* The vectors give the depth a packet finds (their steps have no queue of their own). */
	q = (n->flags & BL_F_TEST) ? n->test_depth : st->qlen;
	full = q >= n->fifo_pkts || st->tail - st->head >= BL_RING;
	if (!full) {
		struct bl_record *r = &st->ring[st->tail & (BL_RING - 1)];

		r->enq_ns = now;
		r->depth = q;
		depth = q;
		seq = st->tail;
		st->tail += 1;
		st->qlen += 1;
	}
	bpf_spin_unlock(&st->lock);
	if (full) {
		bl_count(BL_C_TAIL_DROPS);
		return 0;
	}
	qmax = bpf_map_lookup_elem(&bl_qmax, &port);
	if (qmax && *qmax < depth + 1)
		*qmax = depth + 1;
	skb->priority = *prio;
	bpf_set_hash(skb, BL_HASH_TAG | (seq & ~BL_HASH_TAG_MASK));
	/* Network control (feedback, CS7) is never sampled: its source is a switch. */
	if (n->mode == BL_MODE_QCN && (tos >> 2) != MPS_RATE_FEEDBACK_DSCP)
		bl_qcn_sample(skb, n, port, depth, tos, rf);
	return 1;
}

/* baselines::red_decision and red_draw_marks, in integers: whether an ECN-capable packet that
 * found q packets is marked. */
static __always_inline int bl_red_marks(const struct bl_node *b, __u32 q)
{
	__u32 zero = 0;
	struct mps_node *n;
	__u64 pmax_ppm = (__u64)b->pmax_pct * 10000, num, den, u;

	if (q < b->kmin)
		return 0;
	if (q > b->kmax)
		return 1;
	if (b->kmax == b->kmin) {
		num = pmax_ppm;
		den = 1;
	} else {
		num = pmax_ppm * (q - b->kmin);
		den = b->kmax - b->kmin;
	}
	if (num < den)
		return 0;
	if (num >= 1000000ull * den)
		return 1;
	n = bpf_map_lookup_elem(&node, &zero);
	if (!n)
		return 0;
	u = ((__u64)raw_draw(n) * 1000000ull) >> 32;
	return (u + 1) * den <= num;
}

/* Baseline::on_dequeue's marking, where the packet arrives after leaving the queue. */
SEC("tc")
int bl_departure(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u32 zero = 0, *port, tag, prio, depth = 0, skipped = 0;
	__u64 mac = 0, now, sojourn = 0;
	struct bl_port *st;
	struct bl_node *b;
	struct iphdr *ip;
	int ecn, marks = 0, found = 0;

	if ((void *)(eth + 1) + sizeof(struct iphdr) > data_end ||
	    eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	ip = (struct iphdr *)(eth + 1);
	ecn = ip->tos & 3;
	__builtin_memcpy(&mac, eth->h_source, ETH_ALEN);
	port = bpf_map_lookup_elem(&bl_mac_port, &mac);
	b = bpf_map_lookup_elem(&bl_node, &zero);
	if (!port || !b)
		return TC_ACT_UNSPEC;
	prio = skb->priority;
	tag = skb->hash;
	/* Both read: clang would otherwise select between two context offsets, which the
	 * verifier refuses. BPF_PROG_TEST_RUN cannot set skb->hash: the vectors use priority. */
	barrier_var(prio);
	barrier_var(tag);
	if (b->flags & BL_F_TEST)
		tag = prio;
	if ((tag & BL_HASH_TAG_MASK) != BL_HASH_TAG)
		return TC_ACT_UNSPEC;
	now = bl_now();
	if (b->flags & BL_F_TEST) {
		depth = b->test_depth;
		sojourn = b->test_sojourn_ns;
		found = 1;
	} else {
		st = bpf_map_lookup_elem(&bl_ports, port);
		if (!st)
			return TC_ACT_UNSPEC;
		bpf_spin_lock(&st->lock);
		/* The tag's low 16 bits are the packet's record number. Two packets recorded on two
		 * CPUs may reach the qdisc in the other order: the later-recorded one, leaving
		 * first, skips the other's record (a qdisc smaller than fifo_pkts would lose one
		 * the same way), and the other, leaving after, finds its record gone and is not
		 * decided. The count stays right, and every packet's figures are its own. */
		skipped = (tag - st->head) & ~BL_HASH_TAG_MASK;
		if (skipped < st->tail - st->head && skipped < st->qlen) {
			struct bl_record *r;

			st->head += skipped;
			r = &st->ring[st->head & (BL_RING - 1)];
			depth = r->depth;
			sojourn = now > r->enq_ns ? now - r->enq_ns : 0;
			st->head += 1;
			st->qlen -= skipped + 1;
			found = 1;
		} else {
			skipped = 0;
		}
		bpf_spin_unlock(&st->lock);
	}
	bpf_set_hash_invalid(skb);
	if (skipped)
		bl_count_n(BL_C_SKIPPED, skipped);
	if (!found) {
		bl_count(BL_C_LATE);
		return TC_ACT_UNSPEC;
	}
	if (ecn != 1 && ecn != 2)
		return TC_ACT_UNSPEC; /* Not-ECT or CE: not decided, no draw */
	if (b->mode == BL_MODE_DCQCN)
		marks = bl_red_marks(b, depth);
	else if (b->mode == BL_MODE_TCN)
		marks = sojourn > b->sojourn_ns;
	if (marks) {
		bpf_skb_ecn_set_ce(skb);
		bl_count(BL_C_MARKED);
	}
	return TC_ACT_UNSPEC;
}
