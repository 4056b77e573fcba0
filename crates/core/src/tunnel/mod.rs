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

/// Round robin over the subtunnels, one packet each in turn.
#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl TunnelScheduler for RoundRobin {
    fn select(&mut self, _flow: &FlowKey, _size: u32, _now: u64, subtunnels: &[SubtunnelView]) -> usize {
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
}
