//! Tunnel schedulers: which subtunnel of a multipath tunnel carries a packet.
//!
//! At a tunnel's entry every payload packet is handed to a [`TunnelScheduler`] together with a
//! view of each subtunnel ([`SubtunnelView`]: bytes queued, congestion window, smoothed RTT, as
//! `SIOCOUTQ` and `TCP_INFO` give them on Linux; minimum RTT and in-flight where the tunnel's
//! own acknowledgements measure them). The scheduler answers with a subtunnel index.
//! Like every program here it has no clock (time is passed in), no I/O, bounded state and no
//! floating point on the per-packet path.
//!
//! - [`RoundRobin`]: the baseline of the AFMT paper (over UDP subtunnels).
//! - [`Afmt`]: the adaptive flow-aware scheduler (Sailer and Hähner), with its flow table
//!   ([`FlowTable`], bounded, least recently used evicted first).
//! - [`Bond`]: bonding, the paths' queues kept equally long in time by their measured
//!   delivery rates, so one flow gets the sum of unequal paths.

mod afmt;
mod bond;
mod flowtable;

pub use afmt::Afmt;
pub use bond::Bond;
pub use flowtable::{FlowEntry, FlowTable, DEFAULT_FLOW_TABLE_ENTRIES};

use crate::packet::{Ipv4, PacketMeta};

/// The 5-tuple that identifies a flow (what conntrack keys on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Source address.
    pub src_ip: Ipv4,
    /// Destination address.
    pub dst_ip: Ipv4,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// IP protocol.
    pub proto: u8,
}

impl FlowKey {
    /// The 5-tuple of a packet.
    pub fn of(m: &PacketMeta) -> FlowKey {
        FlowKey {
            src_ip: m.src_ip,
            dst_ip: m.dst_ip,
            src_port: m.src_port,
            dst_port: m.dst_port,
            proto: m.proto,
        }
    }
}

/// What the scheduler sees of one subtunnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SubtunnelView {
    /// The subtunnel's number in its tunnel (the order of its configuration), whichever
    /// subtunnels are offered: a scheduler that keeps state per subtunnel keys it by this.
    pub path: u8,
    /// Bytes queued at the tunnel entry for this subtunnel and not yet acknowledged (Linux
    /// `SIOCOUTQ`); for a UDP subtunnel, the bytes waiting in its interface queue.
    pub fill_bytes: u64,
    /// Congestion window in bytes (TCP subtunnels).
    pub cwnd_bytes: u64,
    /// Smoothed round-trip time in nanoseconds (TCP subtunnels, and the tunnel daemon's
    /// acknowledged paths; 0 before the first sample).
    pub srtt_ns: u64,
    /// Smallest round-trip time sampled, ns (the daemon's paths; 0 where unknown).
    pub min_rtt_ns: u64,
    /// Messages sent and not yet acknowledged: highest sent minus highest acknowledged (the
    /// daemon's paths; 0 where unknown).
    pub in_flight_pkts: u64,
    /// Bytes in flight: the sizes of the messages in flight (the acknowledged paths; 0 where
    /// unknown).
    pub in_flight_bytes: u64,
    /// Delivery rate measured from the acknowledgements, bytes per second (0 before a sample
    /// or where unknown).
    pub delivery_rate_bytes_per_s: u64,
    /// The subtunnel's configured share against the others offered (the daemon's `[[path]]
    /// weight`), for schedulers that split by shares (`rr`); 0 and 1 are both "unweighted".
    pub weight: u32,
}

/// What one acknowledgement of the tunnel's own (per path: `mpsched-tunnel`'s path sender)
/// told the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AckSample {
    /// The RTT sample it gave, ns.
    pub rtt_ns: u64,
    /// Messages in flight on the path after it.
    pub in_flight_pkts: u64,
    /// Messages the far end reported lost on the path so far.
    pub lost_pkts: u64,
}

/// A tunnel scheduler.
pub trait TunnelScheduler: Send + std::fmt::Debug {
    /// Choose the subtunnel for a packet of flow `flow` and `size_bytes` bytes at `now_ns`.
    /// `subtunnels` is never empty; the answer is an index into it.
    fn select(&mut self, flow: &FlowKey, size_bytes: u32, now_ns: u64, subtunnels: &[SubtunnelView]) -> usize;

    /// An acknowledgement of subtunnel `subtunnel` arrived at `now_ns` (tunnels whose paths
    /// are acknowledged: the daemon's, and the simulator's for schedulers that ask for it).
    fn on_ack(&mut self, _subtunnel: usize, _ack: &AckSample, _now_ns: u64) {}

    /// Named counters for results.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

/// Round robin over the subtunnels, one packet each in turn; with weights
/// ([`SubtunnelView::weight`]), packets in proportion to them, spread out as smooth weighted
/// round robin spreads them (each subtunnel earns its weight a packet, the one with the most
/// credit sends and pays the total: weights 3 and 1 send a, a, b, a, never a run longer than
/// its share needs).
#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    next: usize,
    /// Weighted: each offered position's credit, and the path numbers they were earned for
    /// (a change of the paths offered starts the credits afresh).
    credit: Vec<i64>,
    credit_paths: Vec<u8>,
}

impl RoundRobin {
    fn weighted(&mut self, subtunnels: &[SubtunnelView]) -> usize {
        if !self.credit_paths.iter().copied().eq(subtunnels.iter().map(|v| v.path)) {
            self.credit = vec![0; subtunnels.len()];
            self.credit_paths = subtunnels.iter().map(|v| v.path).collect();
        }
        let weight = |v: &SubtunnelView| i64::from(v.weight.max(1));
        let total: i64 = subtunnels.iter().map(weight).sum();
        for (c, v) in self.credit.iter_mut().zip(subtunnels) {
            *c += weight(v);
        }
        // The first of the largest credits: with equal weights, plain turns in order.
        let (best, _) = self.credit.iter().enumerate().fold(
            (0, i64::MIN),
            |(bi, bc), (i, &c)| if c > bc { (i, c) } else { (bi, bc) },
        );
        self.credit[best] -= total;
        best
    }
}

impl TunnelScheduler for RoundRobin {
    fn select(&mut self, _flow: &FlowKey, _size: u32, _now: u64, subtunnels: &[SubtunnelView]) -> usize {
        if subtunnels.iter().any(|v| v.weight > 1) {
            return self.weighted(subtunnels);
        }
        let i = self.next % subtunnels.len();
        self.next = (i + 1) % subtunnels.len();
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_cycles() {
        let mut rr = RoundRobin::default();
        let v = [SubtunnelView::default(); 3];
        let k = FlowKey::of(&PacketMeta::udp(1, 2, 3, 4, 100));
        let got: Vec<usize> = (0..7).map(|_| rr.select(&k, 100, 0, &v)).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn weighted_round_robin_sends_in_proportion_and_spreads_the_turns() {
        let mut rr = RoundRobin::default();
        let view = |path, weight| SubtunnelView {
            path,
            weight,
            ..SubtunnelView::default()
        };
        let v = [view(0, 3), view(1, 1)];
        let k = FlowKey::of(&PacketMeta::udp(1, 2, 3, 4, 100));
        let got: Vec<usize> = (0..8).map(|_| rr.select(&k, 100, 0, &v)).collect();
        assert_eq!(got, [0, 0, 1, 0, 0, 0, 1, 0]);
        // 5:2:1 over 800 packets: exactly in proportion, at most the share's run on one path.
        let v = [view(0, 5), view(4, 2), view(7, 1)];
        let mut counts = [0; 3];
        for _ in 0..800 {
            counts[rr.select(&k, 100, 0, &v)] += 1;
        }
        assert_eq!(counts, [500, 200, 100]);
        // Path 4 no longer offered: the credits start afresh over the two left.
        let v = [view(0, 1), view(7, 2)];
        let got: Vec<usize> = (0..6).map(|_| rr.select(&k, 100, 0, &v)).collect();
        assert_eq!(got, [1, 0, 1, 1, 0, 1]);
    }
}
