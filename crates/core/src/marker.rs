//! Egress ECN marking on queue depth (Motohashi et al. 2022, Sec. III-C-2, Fig. 6).
//!
//! As a packet leaves the queue, if the queue still holds at least `threshold_pkts` packets
//! (`deq_qdepth` in BMv2), an ECN-capable packet is marked CE. A Not-ECT packet is left as it
//! is and counted: RFC 3168 would have a router drop it instead, but the queue's own tail drop
//! already does that when the queue is full, and dropping it here as well would punish non-ECN
//! traffic for a threshold meant to signal early. A packet already CE stays CE.

use crate::packet::{Ecn, PacketMeta};
use crate::program::QueueMeta;

/// The paper's ECN_MARK_THRESHOLD: 60 packets.
pub const DEFAULT_ECN_THRESHOLD_PKTS: u32 = 60;

/// Marker registers: the threshold and its counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcnMarker {
    /// Mark when `deq_qdepth >= threshold_pkts`.
    pub threshold_pkts: u32,
    /// Packets marked CE.
    pub marked: u64,
    /// Not-ECT packets that left over the threshold (not marked).
    pub not_ect_over_threshold: u64,
}

/// What the marker did to one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkOutcome {
    /// Under the threshold: untouched.
    Untouched,
    /// ECT packet set to CE.
    Marked,
    /// Over the threshold but Not-ECT: untouched and counted.
    NotEct,
    /// Over the threshold and already CE.
    AlreadyCe,
}

impl EcnMarker {
    /// A marker with the given threshold.
    pub const fn new(threshold_pkts: u32) -> Self {
        EcnMarker {
            threshold_pkts,
            marked: 0,
            not_ect_over_threshold: 0,
        }
    }

    /// Run on a packet leaving the queue.
    #[inline]
    pub fn on_dequeue(&mut self, pkt: &mut PacketMeta, q: QueueMeta) -> MarkOutcome {
        if q.deq_qdepth_pkts < self.threshold_pkts {
            return MarkOutcome::Untouched;
        }
        match pkt.ecn {
            Ecn::Ect0 | Ecn::Ect1 => {
                pkt.ecn = Ecn::Ce;
                self.marked += 1;
                MarkOutcome::Marked
            }
            Ecn::NotEct => {
                self.not_ect_over_threshold += 1;
                MarkOutcome::NotEct
            }
            Ecn::Ce => MarkOutcome::AlreadyCe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(d: u32) -> QueueMeta {
        QueueMeta {
            enq_qdepth_pkts: 0,
            deq_qdepth_pkts: d,
        }
    }

    #[test]
    fn marks_ect_at_and_above_the_threshold_only() {
        let mut m = EcnMarker::new(60);
        let mut p = PacketMeta::udp(1, 2, 3, 4, 100);
        p.ecn = Ecn::Ect0;
        assert_eq!(m.on_dequeue(&mut p, q(59)), MarkOutcome::Untouched);
        assert_eq!(p.ecn, Ecn::Ect0);
        assert_eq!(m.on_dequeue(&mut p, q(60)), MarkOutcome::Marked);
        assert_eq!(p.ecn, Ecn::Ce);
        assert_eq!(m.on_dequeue(&mut p, q(61)), MarkOutcome::AlreadyCe);
        assert_eq!(m.marked, 1);
    }

    #[test]
    fn not_ect_is_counted_not_marked() {
        let mut m = EcnMarker::new(60);
        let mut p = PacketMeta::udp(1, 2, 3, 4, 100);
        assert_eq!(m.on_dequeue(&mut p, q(63)), MarkOutcome::NotEct);
        assert_eq!(p.ecn, Ecn::NotEct);
        assert_eq!(m.not_ect_over_threshold, 1);
    }
}
