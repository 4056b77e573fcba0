//! The tunnel's exit: decapsulation (ECN after RFC 6040) and the reordering measure.

use mpsched_core::packet::Ecn;
use mpsched_core::tunnel::FlowKey;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// A decapsulated packet that must be dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecapError {
    /// The outer header says congestion experienced and the inner packet is not ECN-capable:
    /// RFC 6040 drops it, since the congestion signal could reach its sender no other way.
    CeOnNotEct,
}

/// Counters of one tunnel exit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExitStats {
    /// Packets decapsulated and forwarded.
    pub forwarded: u64,
    /// Forwarded packets that left after a packet of their flow that entered later.
    pub reordered: u64,
    /// Packets dropped at decapsulation (RFC 6040: CE outside, not ECN-capable inside).
    pub decap_drops: u64,
    /// Flows whose order state was forgotten to keep the table within its bound.
    pub evictions: u64,
}

/// One direction's exit of a multipath tunnel.
///
/// Reordering is measured per flow: a packet is reordered when a packet of the same flow that
/// entered after it has already left. The exit keeps, per flow, the latest entry order it
/// forwarded, for at most `capacity` flows; beyond that the flow seen first is forgotten (its
/// next packet starts afresh, so a reordering across the eviction goes uncounted, and
/// `evictions` says how often that could have happened).
#[derive(Debug)]
pub struct TunnelExit {
    latest: FxHashMap<FlowKey, u64>,
    /// Flows in the order they were first seen, for eviction.
    order: VecDeque<FlowKey>,
    capacity: usize,
    stats: ExitStats,
}

/// The inner packet's ECN field after decapsulation (RFC 6040, section 4.2, normal mode).
pub fn decap_ecn(outer: Ecn, inner: Ecn) -> Result<Ecn, DecapError> {
    match (outer, inner) {
        (Ecn::Ce, Ecn::NotEct) => Err(DecapError::CeOnNotEct),
        (Ecn::Ce, _) => Ok(Ecn::Ce),
        (Ecn::Ect1, Ecn::Ect0) => Ok(Ecn::Ect1),
        (_, inner) => Ok(inner),
    }
}

impl TunnelExit {
    /// An exit that keeps order state for at most `capacity` flows (at least 1).
    pub fn new(capacity: usize) -> Self {
        TunnelExit {
            latest: FxHashMap::default(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            stats: ExitStats::default(),
        }
    }

    /// The peer restarted: order is tracked afresh (its numbers start again), the counters go
    /// on.
    pub fn new_session(&mut self) {
        let stats = std::mem::take(&mut self.stats);
        *self = TunnelExit::new(self.capacity);
        self.stats = stats;
    }

    /// Decapsulate: the inner ECN field given the outer one, or the reason to drop the packet
    /// (counted).
    pub fn decapsulate(&mut self, outer: Ecn, inner: Ecn) -> Result<Ecn, DecapError> {
        let r = decap_ecn(outer, inner);
        if r.is_err() {
            self.stats.decap_drops += 1;
        }
        r
    }

    /// A packet of `flow` stamped `entry_seq` at the entry leaves the tunnel: count it, and
    /// return whether it left in order.
    pub fn forward(&mut self, flow: &FlowKey, entry_seq: u64) -> bool {
        self.stats.forwarded += 1;
        if let Some(latest) = self.latest.get_mut(flow) {
            if entry_seq < *latest {
                self.stats.reordered += 1;
                return false;
            }
            *latest = entry_seq;
            return true;
        }
        if self.latest.len() == self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.latest.remove(&old);
                self.stats.evictions += 1;
            }
        }
        self.latest.insert(*flow, entry_seq);
        self.order.push_back(*flow);
        true
    }

    /// Flows whose order state is held.
    pub fn flows(&self) -> usize {
        self.latest.len()
    }

    /// Counters.
    pub fn stats(&self) -> &ExitStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::packet::PacketMeta;

    fn flow(port: u16) -> FlowKey {
        FlowKey::of(&PacketMeta::udp(1, 2, port, 9, 100))
    }

    #[test]
    fn rfc6040_decapsulation_table() {
        use Ecn::*;
        // Rows: inner; columns: outer Not-ECT, ECT(0), ECT(1), CE (RFC 6040, Figure 4).
        let want = [
            (
                NotEct,
                [Ok(NotEct), Ok(NotEct), Ok(NotEct), Err(DecapError::CeOnNotEct)],
            ),
            (Ect0, [Ok(Ect0), Ok(Ect0), Ok(Ect1), Ok(Ce)]),
            (Ect1, [Ok(Ect1), Ok(Ect1), Ok(Ect1), Ok(Ce)]),
            (Ce, [Ok(Ce), Ok(Ce), Ok(Ce), Ok(Ce)]),
        ];
        for (inner, row) in want {
            for (outer, w) in [NotEct, Ect0, Ect1, Ce].into_iter().zip(row) {
                assert_eq!(decap_ecn(outer, inner), w, "inner {inner:?}, outer {outer:?}");
            }
        }
    }

    #[test]
    fn a_packet_overtaken_by_a_later_one_of_its_flow_is_reordered() {
        let mut x = TunnelExit::new(16);
        // Flow 1 entered as 0, 2, 3; flow 2 as 1, 4. Flow 1's 0 leaves after its 2.
        let leaves = [(1, 2), (2, 1), (1, 0), (1, 3), (2, 4)];
        let in_order: Vec<bool> = leaves.iter().map(|&(f, s)| x.forward(&flow(f), s)).collect();
        assert_eq!(in_order, [true, true, false, true, true]);
        assert_eq!(x.stats().reordered, 1);
        assert_eq!(x.stats().forwarded, 5);
    }

    #[test]
    fn flow_state_is_bounded_and_the_oldest_flow_is_forgotten() {
        let mut x = TunnelExit::new(3);
        for f in 0..10u16 {
            x.forward(&flow(f), u64::from(f) * 10);
        }
        assert_eq!(x.flows(), 3);
        assert_eq!(x.stats().evictions, 7);
        // Flow 9 is remembered: an earlier stamp counts; flow 0 was forgotten: it does not.
        assert!(!x.forward(&flow(9), 1));
        assert!(x.forward(&flow(0), 0));
    }
}
