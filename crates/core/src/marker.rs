//! Egress ECN marking on queue depth (Motohashi et al. 2022, Sec. III-C-2, Fig. 6).
//!
//! As a packet leaves the queue, if the queue still holds at least `threshold_pkts` packets
//! (`deq_qdepth` in BMv2), an ECN-capable packet is marked CE. A Not-ECT packet is left as it
//! is and counted: RFC 3168 would have a router drop it instead, but the queue's own tail drop
//! already does that when the queue is full, and dropping it here as well would punish non-ECN
//! traffic for a threshold meant to signal early. A packet already CE stays CE.

use crate::packet::{Ecn, PacketMeta};
use crate::program::QueueMeta;
use serde::{Deserialize, Serialize};

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

/// Nanoseconds per second: the virtual queue counts backlog in bits x 1e9, so that draining at
/// `rate_bps` for `elapsed_ns` removes exactly `elapsed_ns * rate_bps`.
pub const VQ_SCALE_PER_BYTE: u64 = 8 * 1_000_000_000;

/// ECN marking on a virtual queue: the reference for `mps_egress` in `bpf/mpsched.bpf.c`.
///
/// Linux runs TC egress programs before the qdisc, so they cannot read the real queue's depth.
/// Instead each egress port keeps a virtual queue: every frame adds its length, the backlog
/// drains at the link's rate by the packets' timestamps, and a frame that would overflow
/// `limit` is not added (the real queue would tail-drop it). A frame that finds at least
/// `threshold` bytes of backlog on arrival is marked CE if it is ECN-capable (the technique of
/// PMQECN and of the kernel's `samples/bpf/hbm_out_kern.c`). All arithmetic is integer, with
/// no division per packet.
///
/// Unlike [`EcnMarker`], which reads BMv2's `deq_qdepth` as the packet leaves, this marks on
/// the backlog the packet finds as it arrives (enqueue-time marking).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VirtualQueueMarker {
    /// Drain rate.
    pub rate_bps: u64,
    /// `u64::MAX / rate_bps`: an idle gap at least this long empties the queue.
    pub max_elapsed_ns: u64,
    /// Mark when the backlog found is at least this (scaled by [`VQ_SCALE_PER_BYTE`]).
    pub threshold_scaled: u64,
    /// Capacity (scaled).
    pub limit_scaled: u64,
    /// Backlog after the last update (scaled).
    pub backlog_scaled: u64,
    /// Time of the last update.
    pub last_ns: u64,
    /// ECN-capable frames marked CE.
    pub marked: u64,
    /// Not-ECT frames that found the backlog over the threshold (left unmarked).
    pub not_ect_over_threshold: u64,
    /// Frames the virtual queue had no room for.
    pub overflow: u64,
}

impl VirtualQueueMarker {
    /// A marker draining at `rate_bps` (> 0), marking at `threshold_bytes` of backlog, holding
    /// at most `limit_bytes`.
    pub fn new(rate_bps: u64, threshold_bytes: u64, limit_bytes: u64) -> Self {
        let rate_bps = rate_bps.max(1);
        VirtualQueueMarker {
            rate_bps,
            max_elapsed_ns: u64::MAX / rate_bps,
            threshold_scaled: threshold_bytes.saturating_mul(VQ_SCALE_PER_BYTE),
            limit_scaled: limit_bytes.saturating_mul(VQ_SCALE_PER_BYTE),
            backlog_scaled: 0,
            last_ns: 0,
            marked: 0,
            not_ect_over_threshold: 0,
            overflow: 0,
        }
    }

    /// The registers by name, as snapshots and conformance vectors report them.
    pub fn registers(&self) -> [(&'static str, u64); 5] {
        [
            ("backlog_scaled", self.backlog_scaled),
            ("last_ns", self.last_ns),
            ("marked", self.marked),
            ("not_ect_over_threshold", self.not_ect_over_threshold),
            ("overflow", self.overflow),
        ]
    }

    /// The backlog in bytes (rounded down).
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog_scaled / VQ_SCALE_PER_BYTE
    }

    /// A frame of `frame_bytes` leaves the port at `now_ns`; `ecn` is its ECN field (None for a
    /// frame that is not IPv4). Returns what happened to its marking.
    pub fn on_frame(&mut self, now_ns: u64, frame_bytes: u32, ecn: Option<Ecn>) -> MarkOutcome {
        let elapsed = now_ns.saturating_sub(self.last_ns);
        let drain = if elapsed >= self.max_elapsed_ns {
            u64::MAX
        } else {
            elapsed * self.rate_bps
        };
        self.backlog_scaled = self.backlog_scaled.saturating_sub(drain);
        self.last_ns = self.last_ns.max(now_ns);
        let before = self.backlog_scaled;
        let add = u64::from(frame_bytes) * VQ_SCALE_PER_BYTE;
        if before + add <= self.limit_scaled {
            self.backlog_scaled = before + add;
        } else {
            self.overflow += 1;
        }
        if before < self.threshold_scaled {
            return MarkOutcome::Untouched;
        }
        match ecn {
            Some(Ecn::Ect0 | Ecn::Ect1) => {
                self.marked += 1;
                MarkOutcome::Marked
            }
            Some(Ecn::NotEct) => {
                self.not_ect_over_threshold += 1;
                MarkOutcome::NotEct
            }
            Some(Ecn::Ce) => MarkOutcome::AlreadyCe,
            None => MarkOutcome::Untouched,
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
            queue: 0,
            ..QueueMeta::default()
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

    #[test]
    fn virtual_queue_marks_once_the_backlog_passes_the_threshold() {
        // 8 Mbit/s: a 1000-byte frame drains in 1 ms. Threshold 2 frames, capacity 4.
        let mut m = VirtualQueueMarker::new(8_000_000, 2000, 4000);
        let ect = Some(Ecn::Ect0);
        assert_eq!(m.on_frame(0, 1000, ect), MarkOutcome::Untouched);
        assert_eq!(m.on_frame(0, 1000, ect), MarkOutcome::Untouched);
        assert_eq!(m.on_frame(0, 1000, ect), MarkOutcome::Marked, "found 2000 bytes");
        assert_eq!(m.backlog_bytes(), 3000);
        // 1.5 ms later 1500 bytes have drained: 1500 found, below the threshold.
        assert_eq!(m.on_frame(1_500_000, 1000, ect), MarkOutcome::Untouched);
        assert_eq!(m.backlog_bytes(), 2500);
    }

    #[test]
    fn virtual_queue_does_not_grow_past_its_capacity() {
        let mut m = VirtualQueueMarker::new(8_000_000, 2000, 3000);
        for _ in 0..5 {
            m.on_frame(0, 1000, None);
        }
        assert_eq!(m.backlog_bytes(), 3000);
        assert_eq!(m.overflow, 2);
        // A long idle gap empties it, even one whose drain would overflow 64 bits.
        m.on_frame(u64::MAX / 2, 1000, Some(Ecn::NotEct));
        assert_eq!(m.backlog_bytes(), 1000);
    }
}
