// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * The ATSSS UPF for XDP: the Rust twin is crates/programs/src/atsss/upf.rs (the frame logic)
 * over registers.rs (the schedulers), step for step; the frame format is frame.rs's. Why XDP
 * and not TC, and every other choice: this folder's README.
 *
 *   atsss_upf, per frame: frame checks as wire::parse_frame (non-IPv4 to the stack, malformed
 *   counted and dropped) ->
 *     to the UPF's address, UDP port 4789: a tunnel frame (acknowledgement into the registers,
 *       uplink decapsulated and routed, keepalive counted; malformed or unknown dropped);
 *     to the UPF's address otherwise: its stack;
 *     to a UE's own address (index "ue_index"): the scheduler picks the path (under the UE's
 *       lock only when it steps or probes), atomic adds number the packet (README, "A lock
 *       for the steps"); bpf_xdp_adjust_head grows 60 bytes of outer IPv4, UDP,
 *       header and data in front of the inner packet, bpf_redirect to the path's port;
 *     anything else: routed (TTL, LPM "routes", MACs, bpf_redirect).
 *
 * No division on the per-packet path: the microsecond clock is a multiply-high, the draws
 * map by multiply and shift. Every loop is over at most four paths and unrolled. The
 * registers' functions below are registers.rs's, in its order, under the same names.
 */
#include "mps_common.h"
#include <linux/udp.h>
#include "atsss.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

_Static_assert(sizeof(struct atsss_node) == ATSSS_SIZEOF_NODE, "struct atsss_node");
_Static_assert(sizeof(struct atsss_path) == ATSSS_SIZEOF_PATH, "struct atsss_path");
_Static_assert(__builtin_offsetof(struct atsss_path, cwnd) == ATSSS_OFFSETOF_PATH_CWND, "atsss_path.cwnd");
_Static_assert(sizeof(struct atsss_ue) == ATSSS_SIZEOF_UE, "struct atsss_ue");
_Static_assert(__builtin_offsetof(struct atsss_ue, paths) == ATSSS_OFFSETOF_UE_PATHS, "atsss_ue.paths");
_Static_assert(sizeof(struct atsss_path_cfg) == ATSSS_SIZEOF_PATH_CFG, "struct atsss_path_cfg");
_Static_assert(sizeof(struct atsss_slot) == ATSSS_SIZEOF_SLOT, "struct atsss_slot");
_Static_assert(__builtin_offsetof(struct atsss_slot, packet_number) == ATSSS_OFFSETOF_SLOT_PACKET_NUMBER,
	       "atsss_slot.packet_number");
_Static_assert(__builtin_offsetof(struct atsss_slot, near) == ATSSS_OFFSETOF_SLOT_NEAR, "atsss_slot.near");
_Static_assert(__builtin_offsetof(struct atsss_slot, regs) == ATSSS_OFFSETOF_SLOT_REGS, "atsss_slot.regs");
_Static_assert(__builtin_offsetof(struct atsss_slot, ip) == ATSSS_OFFSETOF_SLOT_IP, "atsss_slot.ip");
_Static_assert(__builtin_offsetof(struct atsss_slot, far) == ATSSS_OFFSETOF_SLOT_FAR, "atsss_slot.far");
_Static_assert(sizeof(struct atsss_index_entry) == ATSSS_SIZEOF_INDEX_ENTRY, "struct atsss_index_entry");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct atsss_node);
} node SEC(".maps");

/* Sized at load time to the UE table (at least 1 entry, at most ATSSS_MAX_UES); mappable, so
 * that its values start on a page (atsss.h, struct atsss_slot). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct atsss_slot);
} ues SEC(".maps");

/* The address indexes (atsss.h), sized at load time to 1 << bits entries. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct atsss_index_entry);
} ue_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct atsss_index_entry);
} path_index SEC(".maps");

/* ATSSS_F_BENCH only: every UE's own address (host order), by row, for the benchmark's
 * prologue to address a packet to a UE drawn at random (as arriving packets carry it), without
 * touching the UE's slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_ues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ATSSS_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Fixed draws for conformance tests (ATSSS_F_TEST_DRAWS): raw 32-bit values, replayed
 * cyclically; slot ATSSS_TEST_DRAWS holds the index of the next one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ATSSS_TEST_DRAWS + 1);
	__type(key, __u32);
	__type(value, __u32);
} test_draws SEC(".maps");

/* Per CPU, the state of the packets' draws (rng_next); 0 until the CPU's first draw. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rng SEC(".maps");

/* The tunnel header and a data message's body, as they sit after the UDP header. */
struct atsss_wire {
	__u8 kind;
	__u8 path;
	__be16 reserved;
	__be32 epoch_hi;
	__be32 epoch_lo;
	__be32 pn_hi;
	__be32 pn_lo;
	__be32 w0; /* data: path_seq;  ack: highest_seq */
	__be32 w1; /* data: tunnel_seq; ack: received */
	__be32 w2; /* data: sent_us;    ack: echo_us */
	__be32 w3; /*                  ack: ack_delay_us */
};

/* atsss_select without the lock: the choice would write the registers (above 3, not a path). */
#define ATSSS_NEEDS_LOCK 0xff

#define ETH_IP_UDP (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

/* ---- time and draws (frame.rs, registers.rs) ------------------------------------------ */

/* registers::scaled_ticks: >> 15, then three steps of x - (x >> k), the low 32 bits. */
static __always_inline __u32 scaled_ticks(__u64 ns)
{
	__u64 s = ns >> 15;

	s -= s >> 2;
	s -= s >> 2;
	s -= s >> 1;
	return (__u32)s;
}

/* frame::mulhi: the high 64 bits of a 64 x 64-bit product. */
static __always_inline __u64 mulhi(__u64 a, __u64 b)
{
	__u64 a_lo = a & 0xffffffff, a_hi = a >> 32, b_lo = b & 0xffffffff, b_hi = b >> 32;
	__u64 p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
	__u64 mid = (p0 >> 32) + (p1 & 0xffffffff) + (p2 & 0xffffffff);

	return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

/* frame::ns_to_us: ns / 1000, exactly, without a division. */
static __always_inline __u64 ns_to_us(__u64 ns)
{
	return mulhi(ns >> 3, 0x20C49BA5E353F7CFull) >> 4;
}

/* 32 bits from this CPU's xorshift64* generator (Vigna, "An experimental exploration of
 * Marsaglia's xorshift generators, scrambled", 2016), its high half; seeded from the kernel's
 * generator at the CPU's first draw. Inline because a helper call costs: with this kernel's
 * return thunks, bpf_get_prandom_u32 took about 11 ns a draw, and the benchmark makes two per
 * packet (docs/performance.md, ATSSS UPF). */
static __always_inline __u32 rng_next(void)
{
	__u32 zero = 0;
	__u64 *state = bpf_map_lookup_elem(&rng, &zero), x;

	if (!state)
		return bpf_get_prandom_u32();
	x = *state;
	if (x == 0)
		x = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32() | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (__u32)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A packet's raw draw: the test map's next value, or this CPU's generator's. */
static __always_inline __u32 upf_draw(const struct atsss_node *n)
{
	__u32 idx_key = ATSSS_TEST_DRAWS, k;
	__u32 *idx, *v;

	if (!(n->flags & ATSSS_F_TEST_DRAWS))
		return rng_next();
	idx = bpf_map_lookup_elem(&test_draws, &idx_key);
	if (!idx || n->test_draws_n == 0)
		return 0;
	k = *idx;
	if (k >= n->test_draws_n)
		k = 0;
	*idx = k + 1;
	v = bpf_map_lookup_elem(&test_draws, &k);
	return v ? *v : 0;
}

/* The value of `key` (an address, network order) in an address index of 1 << bits entries,
 * or NULL (atsss.h: open addressing, linear probing, at most ATSSS_INDEX_PROBES). */
static __always_inline __u32 *index_lookup(void *index, __u32 bits, __u32 key)
{
	__u32 i, mask, start;

	if (key == 0 || bits < 1 || bits > ATSSS_INDEX_MAX_BITS)
		return NULL;
	mask = (1u << bits) - 1;
	start = (bpf_ntohl(key) * (__u32)ATSSS_INDEX_MULT) >> (32 - bits);
	for (i = 0; i < ATSSS_INDEX_PROBES; i++) {
		__u32 k = (start + i) & mask;
		struct atsss_index_entry *e = bpf_map_lookup_elem(index, &k);

		if (!e || e->key == 0)
			return NULL;
		if (e->key == key)
			return &e->value;
	}
	return NULL;
}

/* ---- the registers (registers.rs) ------------------------------------------------------- */

static __always_inline __u32 target_rtt(__u32 min_rtt)
{
	__u32 t = (min_rtt * 1500) >> 10;

	return t == min_rtt ? t + 2 : t;
}

static __always_inline __u32 path_target(const struct atsss_path *p)
{
	return target_rtt((p->flags & ATSSS_PATH_HAS_RTT) ? p->min_rtt : 0);
}

static __always_inline __u32 in_flight(const struct atsss_path *p)
{
	return p->seq_sent - p->seq_acked;
}

static __always_inline __u32 dead_after(const struct atsss_path *p, __u32 floor)
{
	__u32 d = path_target(p) << 2;

	return d > floor ? d : floor;
}

static __always_inline int path_up(const struct atsss_path *p, __u32 now, __u32 floor)
{
	return in_flight(p) == 0 || now - p->last_heard <= dead_after(p, floor);
}

static __always_inline int congested(const struct atsss_path *p)
{
	return (p->flags & ATSSS_PATH_HAS_RTT) && p->cur_rtt > path_target(p);
}

static __always_inline __u32 draw_255(__u32 draw)
{
	return ((draw >> 16) * 255) >> 16;
}

/* The draw's top 6 bits: RTTMon's weight w (0 to 62) is a share of (w + 1) / 64. */
static __always_inline __u32 draw_64(__u32 draw)
{
	return draw >> 26;
}

/* 1 if the step is due and `locked` is 0: the caller must take the UE's lock to make it. */
static __always_inline int rttmon_step(struct atsss_ue *ue, __u32 now, int locked)
{
	struct atsss_path *p = &ue->paths[0];
	__u32 target = target_rtt((p->flags & ATSSS_PATH_HAS_RTT) ? p->min_rtt : 0);

	if (now - ue->last_change <= target)
		return 0;
	if (!locked)
		return 1;
	if (p->cur_rtt > target && ue->weight > 0)
		ue->weight -= 1;
	if (p->cur_rtt <= target && ue->weight < ATSSS_RTTMON_MAX_WEIGHT)
		ue->weight += 1;
	ue->last_change = now;
	return 0;
}

static __always_inline __u32 kind_of(const struct atsss_ue *ue)
{
	return ue->kind <= ATSSS_KIND_PRIORITY ? ue->kind : ATSSS_KIND_WRR;
}

static __always_inline __u32 n_paths_of(const struct atsss_ue *ue)
{
	__u32 n = ue->n_paths;

	if (n < 1)
		n = 1;
	if (n > ATSSS_MAX_PATHS)
		n = ATSSS_MAX_PATHS;
	return n;
}

/* Priority: the first path up and not congested, else the last. */
static __always_inline __u32 priority_path(const struct atsss_ue *ue, __u32 now, __u32 floor)
{
	__u32 i, n = n_paths_of(ue);

#pragma unroll
	for (i = 0; i < ATSSS_MAX_PATHS; i++) {
		const struct atsss_path *p = &ue->paths[i];

		if (i >= n)
			break;
		if (path_up(p, now, floor) && !congested(p))
			return i;
	}
	return n - 1;
}

static __always_inline __u32 smallest_delay(const struct atsss_ue *ue, __u32 now, __u32 floor)
{
	__u32 i, n = n_paths_of(ue), best = 0, best_rtt = 0xffffffff;

#pragma unroll
	for (i = 0; i < ATSSS_MAX_PATHS; i++) {
		const struct atsss_path *p = &ue->paths[i];
		__u32 rtt;

		if (i >= n)
			break;
		rtt = (p->flags & ATSSS_PATH_HAS_RTT) ? p->cur_rtt : 0;
		if (path_up(p, now, floor) && rtt < best_rtt) {
			best = i;
			best_rtt = rtt;
		}
	}
	return best;
}

static __always_inline int cmon_usable(const struct atsss_path *p, __u32 now, __u32 floor)
{
	return path_up(p, now, floor) && in_flight(p) < p->cwnd && !congested(p);
}

/* registers::probe_due: the preferred path's target RTT since the last probe, or while it is
 * down the outage floor doubled per unanswered probe. */
static __always_inline int probe_due(const struct atsss_ue *ue, __u32 now, __u32 floor)
{
	const struct atsss_path *p = &ue->paths[0];
	__u32 backoff = ue->probe_backoff < ATSSS_MAX_PROBE_BACKOFF ? ue->probe_backoff : ATSSS_MAX_PROBE_BACKOFF;
	__u32 interval = path_up(p, now, floor) ? path_target(p) : floor << backoff;

	return now - ue->last_change > interval;
}

/* registers::probe_or: for the measuring kinds, one packet per interval to the preferred
 * path when the choice is another; ATSSS_NEEDS_LOCK when that probe is due and `locked` is 0. */
static __always_inline __u32 probe_or(struct atsss_ue *ue, __u32 now, __u32 floor, __u32 choice, int locked)
{
	if (choice == 0 || !probe_due(ue, now, floor))
		return choice;
	if (!locked)
		return ATSSS_NEEDS_LOCK;
	ue->last_change = now;
	if (!path_up(&ue->paths[0], now, floor) && ue->probe_backoff < ATSSS_MAX_PROBE_BACKOFF)
		ue->probe_backoff += 1;
	return 0;
}

static __always_inline __u32 cmon_select(const struct atsss_ue *ue, __u32 now, __u32 floor)
{
	__u32 i, n = n_paths_of(ue), choice = ATSSS_MAX_PATHS, excess_best = 0xffffffff, fallback = n - 1;

#pragma unroll
	for (i = 0; i < ATSSS_MAX_PATHS; i++) {
		const struct atsss_path *p = &ue->paths[i];
		__u32 fl, excess;

		if (i >= n)
			break;
		if (cmon_usable(p, now, floor)) {
			choice = i;
			break;
		}
		fl = in_flight(p);
		excess = fl > p->cwnd ? fl - p->cwnd : 0;
		if (path_up(p, now, floor) && excess < excess_best) {
			excess_best = excess;
			fallback = i;
		}
	}
	return choice == ATSSS_MAX_PATHS ? fallback : choice;
}

/* registers::select: the path of the UE's next packet. Without the UE's lock (`locked` 0) it
 * writes nothing: where the choice would write the registers (RTTMon's step, a probe) it returns
 * ATSSS_NEEDS_LOCK instead, and the caller selects again under the lock. */
static __always_inline __u32 atsss_select(struct atsss_ue *ue, __u32 now, __u32 floor, __u32 draw, int locked)
{
	__u32 secondary = ue->n_paths > 1;

	switch (kind_of(ue)) {
	case ATSSS_KIND_RTTMON:
		if (rttmon_step(ue, now, locked))
			return ATSSS_NEEDS_LOCK;
		return draw_64(draw) <= ue->weight ? 0 : secondary;
	case ATSSS_KIND_CMON:
		return probe_or(ue, now, floor, cmon_select(ue, now, floor), locked);
	case ATSSS_KIND_ACTIVE_STANDBY:
		return probe_or(ue, now, floor, path_up(&ue->paths[0], now, floor) ? 0 : secondary, locked);
	case ATSSS_KIND_SMALLEST_DELAY:
		return probe_or(ue, now, floor, smallest_delay(ue, now, floor), locked);
	case ATSSS_KIND_PRIORITY:
		return probe_or(ue, now, floor, priority_path(ue, now, floor), locked);
	default: /* WRR, DWRR, Load-Balancing */
		return draw_255(draw) < ue->weight ? 0 : secondary;
	}
}

static __always_inline int uses_draw(__u32 kind)
{
	return kind == ATSSS_KIND_WRR || kind == ATSSS_KIND_DWRR || kind == ATSSS_KIND_RTTMON ||
	       kind == ATSSS_KIND_LOAD_BALANCING;
}

/* registers::on_send: the packet's number on the path. Without the lock: the number by an
 * atomic add, so that two CPUs never hand out one twice (README, "A lock for the steps"). */
static __always_inline __u32 on_send(struct atsss_path *p, __u32 now)
{
	__u32 sent = __sync_fetch_and_add(&p->seq_sent, 1);

	if (sent == p->seq_acked)
		p->last_heard = now;
	return sent + 1;
}

static __always_inline void cmon_on_ack(struct atsss_path *p, __u32 now)
{
	__u32 target = path_target(p);

	if (p->cur_rtt <= target) {
		/* Growth only while half the window is used; one per ack in slow start. */
		if ((in_flight(p) << 1) < p->cwnd)
			return;
		if (p->flags & ATSSS_PATH_SLOW_START) {
			p->cwnd = p->cwnd + 1 < ATSSS_CMON_MAX_CWND ? p->cwnd + 1 : ATSSS_CMON_MAX_CWND;
			return;
		}
		if (p->acks_in_round < 0xffff)
			p->acks_in_round += 1;
		if (p->acks_in_round >= p->cwnd) {
			p->acks_in_round = 0;
			p->cwnd = p->cwnd + 1 < ATSSS_CMON_MAX_CWND ? p->cwnd + 1 : ATSSS_CMON_MAX_CWND;
		}
	} else if (now - p->last_cut > target) {
		__u16 cwnd = p->cwnd - (p->cwnd >> 2);

		p->flags &= ~ATSSS_PATH_SLOW_START;
		p->last_cut = now;
		p->acks_in_round = 0;
		p->cwnd = cwnd > ATSSS_CMON_MIN_CWND ? cwnd : ATSSS_CMON_MIN_CWND;
	}
}

/* registers::on_ack; 1 if the registers took it (upf::ack_applies). */
static __always_inline int on_ack(struct atsss_ue *ue, __u32 path, __u32 acked, __u32 lost, __u32 rtt, __u32 now)
{
	__u32 kind = kind_of(ue);
	struct atsss_path *p = &ue->paths[path & (ATSSS_MAX_PATHS - 1)];
	int new_loss;

	if ((__s32)(acked - p->seq_acked) < 0)
		return 0;
	if ((__s32)(acked - p->seq_sent) > 0)
		return 0;
	p->seq_acked = acked;
	p->last_heard = now;
	p->cur_rtt = rtt;
	if (!(p->flags & ATSSS_PATH_HAS_RTT) || rtt < p->min_rtt)
		p->min_rtt = rtt;
	p->flags |= ATSSS_PATH_HAS_RTT;
	new_loss = lost != p->lost;
	p->lost = lost;
	if (path == 0)
		ue->probe_backoff = 0;
	if (kind == ATSSS_KIND_DWRR && path == 0) {
		__u8 w = ue->weight, cut = (w >> 3) + 1;

		if (new_loss)
			ue->weight = w - (cut < w ? cut : w);
		else if (w < ATSSS_WRR_MAX_WEIGHT)
			ue->weight = w + 1;
	} else if (kind == ATSSS_KIND_CMON) {
		cmon_on_ack(p, now);
	}
	return 1;
}

/* ---- forwarding ------------------------------------------------------------------------ */

/* Route the IPv4 packet after the Ethernet header at the frame's start: TTL, LPM, TTL - 1,
 * the port's MACs, redirect. */
static __always_inline int route(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct mps_route_key key = { .prefixlen = 32 };
	struct mps_port *out;
	__u32 *r, pk;

	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	if (ip->ttl <= 1) {
		count(ATSSS_C_TTL_EXPIRED);
		return XDP_DROP;
	}
	key.addr = ip->daddr;
	r = bpf_map_lookup_elem(&routes, &key);
	if (!r || (*r & MPS_ECMP_GROUP)) {
		count(ATSSS_C_NO_ROUTE);
		return XDP_DROP;
	}
	pk = *r;
	out = bpf_map_lookup_elem(&ports, &pk);
	if (!out || out->ifindex == 0) {
		count(ATSSS_C_REDIRECT_FAILED);
		return XDP_DROP;
	}
	decrement_ttl(ip);
	__builtin_memcpy(eth->h_dest, out->peer_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, out->own_mac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	count_port(pk, data_end - data, 1);
	return bpf_redirect(out->ifindex, 0);
}

/* Shrink the frame to `want` bytes (drop Ethernet padding after the IPv4 packet). */
static __always_inline int trim_to(struct xdp_md *ctx, __u32 want)
{
	__u32 len = ctx->data_end - ctx->data;

	if (len > want)
		return bpf_xdp_adjust_tail(ctx, (int)want - (int)len);
	return 0;
}

/* ---- downlink -------------------------------------------------------------------------- */

/* The outer IPv4 header's checksum, from its fields (all words but the constant ones). */
static __always_inline __u16 outer_checksum(__u8 tos, __u16 tot_len, __u32 src, __u32 dst)
{
	__u32 sum = ((__u32)0x45 << 8 | tos) + tot_len + 0x4000 + ((__u32)ATSSS_OUTER_TTL << 8 | IPPROTO_UDP) +
		    (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff);

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* A downlink packet of `inner_len` bytes and TOS `tos` to the UE in row `u`: upf::downlink,
 * then the encapsulation. */
static __always_inline int downlink(struct xdp_md *ctx, const struct atsss_node *n, __u32 u, __u32 inner_len,
				    __u8 tos, __u64 now_ns)
{
	struct atsss_slot *s = bpf_map_lookup_elem(&ues, &u);
	struct atsss_path_cfg pc;
	struct mps_port *out;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
	struct atsss_wire *w;
	void *data, *data_end;
	__u32 now, draw = 0, path, seq, tseq, pk;
	__u64 pn;

	if (!s) {
		count(ATSSS_C_REDIRECT_FAILED);
		return XDP_DROP;
	}
	if (inner_len + ATSSS_ENCAP_BYTES > n->mtu) {
		count(ATSSS_C_TOO_BIG);
		return XDP_DROP;
	}
	if (uses_draw(kind_of(&s->regs)))
		draw = upf_draw(n);
	now = scaled_ticks(now_ns);

	path = atsss_select(&s->regs, now, n->outage_floor_ticks, draw, 0);
	if (path == ATSSS_NEEDS_LOCK) {
		bpf_spin_lock(&s->lock);
		path = atsss_select(&s->regs, now, n->outage_floor_ticks, draw, 1);
		bpf_spin_unlock(&s->lock);
	}
	path &= ATSSS_MAX_PATHS - 1;
	seq = on_send(&s->regs.paths[path], now);
	pn = __sync_fetch_and_add(&s->packet_number, 1);
	tseq = __sync_fetch_and_add(&s->tunnel_seq, 1);
	pc = path < 2 ? s->near[path & 1] : s->far[path & 1];

	count(ATSSS_C_ENCAPSULATED);
	count(ATSSS_C_PATH0 + path);
	pk = pc.egress_port;
	out = bpf_map_lookup_elem(&ports, &pk);
	if (!out || out->ifindex == 0) {
		count(ATSSS_C_REDIRECT_FAILED);
		return XDP_DROP;
	}
	if (trim_to(ctx, sizeof(struct ethhdr) + inner_len) || bpf_xdp_adjust_head(ctx, -ATSSS_ENCAP_BYTES))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	ip = data + sizeof(*eth);
	udp = (void *)(ip + 1);
	w = (void *)(udp + 1);
	if ((void *)(w + 1) > data_end)
		return XDP_DROP;
	__builtin_memcpy(eth->h_dest, out->peer_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, out->own_mac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = tos;
	ip->tot_len = bpf_htons(inner_len + ATSSS_ENCAP_BYTES);
	ip->id = 0;
	ip->frag_off = bpf_htons(0x4000);
	ip->ttl = ATSSS_OUTER_TTL;
	ip->protocol = IPPROTO_UDP;
	ip->check = bpf_htons(outer_checksum(tos, inner_len + ATSSS_ENCAP_BYTES, n->own_ip, pc.addr));
	ip->saddr = bpf_htonl(n->own_ip);
	ip->daddr = bpf_htonl(pc.addr);
	udp->source = bpf_htons(ATSSS_UDP_PORT);
	udp->dest = bpf_htons(pc.port);
	udp->len = bpf_htons(inner_len + ATSSS_ENCAP_BYTES - sizeof(struct iphdr));
	udp->check = 0;
	w->kind = ATSSS_MSG_DATA;
	w->path = path;
	w->reserved = 0;
	w->epoch_hi = bpf_htonl(n->epoch >> 32);
	w->epoch_lo = bpf_htonl((__u32)n->epoch);
	w->pn_hi = bpf_htonl(pn >> 32);
	w->pn_lo = bpf_htonl((__u32)pn);
	w->w0 = bpf_htonl(seq);
	w->w1 = bpf_htonl(tseq);
	w->w2 = bpf_htonl((__u32)ns_to_us(now_ns));
	count_port(pk, data_end - data, 1);
	return bpf_redirect(out->ifindex, 0);
}

/* ---- frames to the UPF's tunnel port ---------------------------------------------------- */

static __always_inline int malformed(void)
{
	count(ATSSS_C_MALFORMED);
	return XDP_DROP;
}

/* Uplink data of the UE in row `u` (outer IPv4 total length tot_len): decapsulated, routed. */
static __always_inline int uplink(struct xdp_md *ctx, __u32 u, __u32 tot_len)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct iphdr *inner = data + sizeof(struct ethhdr) + ATSSS_ENCAP_BYTES;
	struct atsss_slot *s;
	__u32 inner_len, ihl_bytes;
	struct ethhdr *eth;

	if (tot_len < ATSSS_ENCAP_BYTES + sizeof(struct iphdr) || (void *)(inner + 1) > data_end)
		return malformed();
	inner_len = tot_len - ATSSS_ENCAP_BYTES;
	ihl_bytes = inner->ihl * 4;
	if (inner->version != 4 || ihl_bytes < sizeof(struct iphdr) || ihl_bytes > inner_len ||
	    bpf_ntohs(inner->tot_len) != inner_len)
		return malformed();
	s = bpf_map_lookup_elem(&ues, &u);
	if (!s)
		return malformed();
	if (bpf_ntohl(inner->saddr) != s->ip) {
		count(ATSSS_C_SPOOFED);
		return XDP_DROP;
	}
	count(ATSSS_C_UPLINK);
	if (trim_to(ctx, sizeof(struct ethhdr) + tot_len) || bpf_xdp_adjust_head(ctx, ATSSS_ENCAP_BYTES))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	eth->h_proto = bpf_htons(ETH_P_IP);
	return route(ctx);
}

/* An acknowledgement of the UE in row `u`, path `path`, received at now_ns. */
static __always_inline int acknowledge(struct atsss_wire *w, __u32 u, __u32 path, __u64 now_ns)
{
	struct atsss_slot *s = bpf_map_lookup_elem(&ues, &u);
	__u32 highest = bpf_ntohl(w->w0), received = bpf_ntohl(w->w1), echo = bpf_ntohl(w->w2);
	__u32 delay = bpf_ntohl(w->w3), now_us = (__u32)ns_to_us(now_ns), rtt_us, rtt, now;
	int took;

	if (!s)
		return malformed();
	/* frame::rtt_us: wrapping, then saturating at 0. */
	rtt_us = now_us - echo;
	rtt_us = rtt_us > delay ? rtt_us - delay : 0;
	rtt = scaled_ticks((__u64)rtt_us * 1000);
	now = scaled_ticks(now_ns);
	bpf_spin_lock(&s->lock);
	took = on_ack(&s->regs, path, highest, highest - received, rtt, now);
	bpf_spin_unlock(&s->lock);
	count(took ? ATSSS_C_ACKS : ATSSS_C_ACKS_IGNORED);
	return XDP_DROP; /* consumed */
}

/* A frame to the UPF's address and UDP port 4789, from `src` (network order). */
static __always_inline int tunnel_frame(struct xdp_md *ctx, const struct atsss_node *n, struct iphdr *ip, __u32 tot_len,
					__u32 src, __u64 now_ns)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct udphdr *udp = (void *)(ip + 1);
	struct atsss_wire *w = (void *)(udp + 1);
	__u32 payload, *up, u, path;

	/* No options, not a fragment (DF allowed), the UDP length the IPv4 length less 20. */
	if (ip->ihl != 5 || (bpf_ntohs(ip->frag_off) & 0x3fff) != 0 || (void *)(udp + 1) > data_end ||
	    bpf_ntohs(udp->len) + sizeof(struct iphdr) != tot_len)
		return malformed();
	payload = tot_len - sizeof(struct iphdr) - sizeof(struct udphdr);
	if (payload < ATSSS_HEADER_BYTES || (void *)w + ATSSS_HEADER_BYTES > data_end)
		return malformed();
	if (w->reserved != 0 || w->kind < ATSSS_MSG_DATA || w->kind > ATSSS_MSG_KEEPALIVE)
		return malformed();
	up = index_lookup(&path_index, n->path_index_bits, src);
	if (!up) {
		count(ATSSS_C_UNKNOWN_UE);
		return XDP_DROP;
	}
	u = *up >> 2;
	path = *up & (ATSSS_MAX_PATHS - 1);
	if (w->path != path)
		return malformed();
	switch (w->kind) {
	case ATSSS_MSG_ACK:
		if (payload < ATSSS_HEADER_BYTES + ATSSS_ACK_BYTES || (void *)(w + 1) > data_end)
			return malformed();
		return acknowledge(w, u, path, now_ns);
	case ATSSS_MSG_KEEPALIVE:
		if (payload < ATSSS_HEADER_BYTES + ATSSS_KEEPALIVE_BYTES)
			return malformed();
		count(ATSSS_C_KEEPALIVES);
		return XDP_DROP; /* consumed */
	default:
		return uplink(ctx, u, tot_len);
	}
}

/* ---- the benchmark's prologue ----------------------------------------------------------- */

/* ATSSS_F_BENCH: BPF_PROG_TEST_RUN repeats the program on one buffer, which the last run
 * left encapsulated (the first run's input is given so). Undo it (60 bytes off the front,
 * the EtherType back), then send the packet to a UE drawn at random: its address (from
 * "bench_ues", not its slot, which stays as cold as the traffic leaves it) into the inner
 * destination, the checksum updated (RFC 1624). The program then runs as on any frame: the
 * UE is found by its address. */
static __always_inline int bench_prologue(struct xdp_md *ctx, const struct atsss_node *n)
{
	void *data, *data_end;
	struct ethhdr *eth;
	struct iphdr *ip;
	__u32 u, old, new, sum, *a;

	if (bpf_xdp_adjust_head(ctx, ATSSS_ENCAP_BYTES))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	ip = data + sizeof(*eth);
	if ((void *)(ip + 1) > data_end)
		return -1;
	eth->h_proto = bpf_htons(ETH_P_IP);
	u = (__u32)(((__u64)rng_next() * n->n_ues) >> 32);
	a = bpf_map_lookup_elem(&bench_ues, &u);
	if (!a)
		return -1;
	old = ip->daddr;
	new = bpf_htonl(*a);
	sum = (__u16)~ip->check;
	sum += (__u16)~(old & 0xffff) + (__u16)~(old >> 16) + (new & 0xffff) + (new >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = (__u16)~sum;
	ip->daddr = new;
	return 0;
}

/* ---- the program ----------------------------------------------------------------------- */

SEC("xdp")
int atsss_upf(struct xdp_md *ctx)
{
	void *data, *data_end;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct atsss_node *n;
	__u32 zero = 0, len, ihl_bytes, tot_len, dst, *u;
	__u64 now_ns;
	int in_port;

	n = bpf_map_lookup_elem(&node, &zero);
	if (!n)
		return XDP_PASS;
	if (n->flags & ATSSS_F_BENCH) {
		if (bench_prologue(ctx, n))
			return XDP_ABORTED;
		if (n->flags & ATSSS_F_BENCH_ONLY) /* the prologue's cost: redone, so the run repeats */
			return bpf_xdp_adjust_head(ctx, -ATSSS_ENCAP_BYTES) ? XDP_ABORTED : XDP_DROP;
	}
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	len = data_end - data;
	in_port = port_of(ctx->ingress_ifindex);
	if (in_port >= 0)
		count_port(in_port, len, 0);

	/* wire::parse_frame, check for check. */
	eth = data;
	if ((void *)(eth + 1) > data_end) {
		count(ATSSS_C_IPV4_MALFORMED); /* Runt */
		return XDP_DROP;
	}
	if (eth->h_proto != bpf_htons(ETH_P_IP)) {
		count(ATSSS_C_NOT_IPV4); /* ARP, IPv6, VLAN, shims: the node's own stack */
		return XDP_PASS;
	}
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->version != 4) {
		count(ATSSS_C_IPV4_MALFORMED); /* TruncatedIpv4, BadVersion */
		return XDP_DROP;
	}
	ihl_bytes = ip->ihl * 4;
	tot_len = bpf_ntohs(ip->tot_len);
	if (ihl_bytes < sizeof(*ip) || len - sizeof(*eth) < ihl_bytes || tot_len < ihl_bytes ||
	    tot_len > len - sizeof(*eth)) {
		count(ATSSS_C_IPV4_MALFORMED); /* BadIhl, TruncatedIpv4, BadTotalLength */
		return XDP_DROP;
	}
	now_ns = (n->flags & ATSSS_F_TEST_CLOCK) ? n->test_clock_ns : bpf_ktime_get_ns();
	dst = bpf_ntohl(ip->daddr);

	if (dst == n->own_ip) {
		/* parse_frame reads the ports of a first fragment whose UDP header lies inside the
		 * total length; a tunnel frame has them and goes to port 4789. */
		struct udphdr *udp = (void *)ip + (ihl_bytes & 0x3c);

		if (ip->protocol == IPPROTO_UDP && (bpf_ntohs(ip->frag_off) & 0x1fff) == 0 &&
		    tot_len >= ihl_bytes + sizeof(*udp) && (void *)(udp + 1) <= data_end &&
		    udp->dest == bpf_htons(ATSSS_UDP_PORT))
			return tunnel_frame(ctx, n, ip, tot_len, ip->saddr, now_ns);
		count(ATSSS_C_LOCAL);
		return XDP_PASS;
	}
	u = index_lookup(&ue_index, n->ue_index_bits, ip->daddr);
	if (u)
		return downlink(ctx, n, *u, tot_len, ip->tos, now_ns);
	return route(ctx);
}
