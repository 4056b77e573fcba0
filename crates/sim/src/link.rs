//! A simplex link: the sending port's output queues (one FIFO, or several under a discipline),
//! a serialiser at a fixed rate, and a propagation delay. A full-duplex scenario link is two.

use crate::event::{TimePs, PS_PER_S};
use crate::packet::PacketId;
use crate::queue::PortQueues;
use mpsched_core::packet::PortId;
use std::collections::VecDeque;

/// A simplex link and its output queue.
pub struct Link {
    /// Sending node.
    pub from: u32,
    /// Port on the sending node.
    pub from_port: PortId,
    /// Receiving node.
    pub to: u32,
    /// Port on the receiving node.
    pub to_port: PortId,
    /// Rate in bit/s, on wire bytes.
    pub rate_bps: u64,
    /// `PS_PER_S / rate_bps` when that is exact (the common case), to avoid a division per packet.
    ps_per_bit: Option<u64>,
    /// Propagation delay.
    pub delay_ps: TimePs,
    /// The output queues: packets waiting, each with the depth of its queue on arrival.
    pub queues: PortQueues,
    /// Wire bytes of the packets waiting (kept with `queues`).
    pub queued_bytes: u64,
    /// When the serialiser finishes the packet it is sending (it is idle from then on). On a
    /// link with propagation delay a [`TxDone`](crate::event::EventKind::TxDone) event is
    /// pending at this time exactly while packets wait (the first to wait schedules it), so a
    /// packet that finds the link idle costs no event but its arrival. Without delay the
    /// arrival of the packet being sent marks the serialiser free and starts the next.
    pub busy_until_ps: TimePs,
    /// Packets being serialised or propagating, oldest first (FIFO service and a constant delay
    /// keep them in order); a packet joins as its serialisation starts, with the time its last
    /// bit reaches the far end. Only the oldest has an arrival event pending, so the event
    /// queue holds one event per link, not one per packet on the wire.
    pub in_flight: VecDeque<InFlight>,
    /// Whether the sending node's program has a dequeue stage on this port.
    pub egress_stage: bool,
    /// Path monitored at this link's far end (bwm-ng on the confluence point's input).
    pub path_tag: Option<u8>,
    /// False once the link has failed: it carries nothing (what was queued, on the wire or in
    /// flight is lost).
    pub up: bool,
    /// Counters.
    pub stats: LinkStats,
}

/// A packet in propagation.
#[derive(Clone, Copy, Debug)]
pub struct InFlight {
    /// When it reaches the far end.
    pub arrive_ps: TimePs,
    /// The event sequence number taken as its serialisation started, so that its arrival is
    /// ordered among equal-time events as of that moment.
    pub seq: u64,
    /// The packet.
    pub pkt: PacketId,
}

/// Per-link counters.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    /// Packets that started transmission.
    pub tx_pkts: u64,
    /// Wire bytes that started transmission.
    pub tx_bytes: u64,
    /// Packets dropped at the tail of a full queue.
    pub tail_drops: u64,
    /// Packets dropped by the egress program.
    pub egress_drops: u64,
    /// Packets lost because the link had failed (sent into it, or queued, on the wire or in
    /// flight when it failed).
    pub down_drops: u64,
    /// Wire bytes delivered to the far end since the last sample (counted on path-monitor
    /// links only).
    pub rx_bytes_interval: u64,
    /// Largest queue depth seen.
    pub max_depth_pkts: u32,
}

impl Link {
    /// A link from `(from, from_port)` to `(to, to_port)`.
    pub fn new(
        from: u32,
        from_port: PortId,
        to: u32,
        to_port: PortId,
        rate_bps: u64,
        delay_ps: TimePs,
        queues: PortQueues,
    ) -> Self {
        let ps_per_bit = if PS_PER_S % rate_bps == 0 {
            Some(PS_PER_S / rate_bps)
        } else {
            None
        };
        Link {
            from,
            from_port,
            to,
            to_port,
            rate_bps,
            ps_per_bit,
            delay_ps,
            queues,
            queued_bytes: 0,
            busy_until_ps: 0,
            in_flight: VecDeque::new(),
            egress_stage: false,
            path_tag: None,
            up: true,
            stats: LinkStats::default(),
        }
    }

    /// Time to serialise `bytes` wire bytes.
    #[inline]
    pub fn serialisation_ps(&self, bytes: u32) -> TimePs {
        let bits = u64::from(bytes) * 8;
        match self.ps_per_bit {
            Some(p) => bits * p,
            None => ((u128::from(bits) * u128::from(PS_PER_S)) / u128::from(self.rate_bps)) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo() -> PortQueues {
        PortQueues::new(1, 64, Default::default())
    }

    #[test]
    fn serialisation_times_are_exact() {
        let l = Link::new(0, 0, 1, 0, 100_000_000_000, 0, fifo());
        assert_eq!(l.serialisation_ps(64), 5_120, "64 B at 100 Gbps is 5.12 ns");
        let l = Link::new(0, 0, 1, 0, 3_000_000, 0, fifo());
        assert_eq!(l.serialisation_ps(1512), 4_032_000_000, "1512 B at 3 Mbps is 4.032 ms");
        let l = Link::new(0, 0, 1, 0, 7_000_000, 0, fifo());
        assert_eq!(l.serialisation_ps(7), 8_000_000);
    }
}
