//! A simplex link: the sending port's output queues (one FIFO, or several under a discipline),
//! a serialiser at a fixed rate, and a propagation delay. A full-duplex scenario link is two.

use crate::event::{TimePs, PS_PER_S};
use crate::packet::PacketId;
use crate::queue::PortQueues;
use mpsched_core::packet::PortId;
use std::collections::VecDeque;

/// A simplex link and its output queue.
///
/// Laid out by hand, a cache line per part: what every packet reads first (`repr(C)` keeps
/// the order), then the queues, then the counters. A run with thousands of links misses the
/// cache on nearly every link it touches, so the fewer lines a hop reads, the faster.
#[repr(C, align(64))]
pub struct Link {
    /// When the serialiser finishes the packet it is sending (it is idle from then on). On a
    /// link with propagation delay a [`TxDone`](crate::event::EventKind::TxDone) event is
    /// pending at this time exactly while packets wait (the first to wait schedules it), so a
    /// packet that finds the link idle costs no event but its arrival. Without delay the
    /// arrival of the packet being sent marks the serialiser free and starts the next.
    pub busy_until_ps: TimePs,
    /// Propagation delay.
    pub delay_ps: TimePs,
    /// `PS_PER_S / rate_bps` when that is exact (the common case), to avoid a division per
    /// packet; else 0.
    ps_per_bit: u64,
    /// Packets being serialised or propagating, oldest first (FIFO service and a constant delay
    /// keep them in order); a packet joins as its serialisation starts, with the time its last
    /// bit reaches the far end. Only the oldest has an arrival event pending, so the event
    /// queue holds one event per link, not one per packet on the wire.
    pub in_flight: InFlight,
    /// Sending node.
    pub from: u32,
    /// Receiving node.
    pub to: u32,
    /// Port on the sending node.
    pub from_port: PortId,
    /// Port on the receiving node.
    pub to_port: PortId,
    /// False once the link has failed: it carries nothing (what was queued, on the wire or in
    /// flight is lost).
    pub up: bool,
    /// Whether the sending node's program has a dequeue stage on this port.
    pub egress_stage: bool,
    /// Path monitored at this link's far end (bwm-ng on the confluence point's input).
    pub path_tag: Option<u8>,
    /// The capture that records what this link sends, if any (an index into the run's
    /// captures).
    pub capture_tx: Option<u32>,
    /// The capture that records what this link delivers, if any.
    pub capture_rx: Option<u32>,
    /// The output queues: packets waiting, each with the depth of its queue on arrival.
    pub queues: PortQueues,
    /// Counters (the transmit counters, written per packet, complete the second line).
    pub stats: LinkStats,
    /// Rate in bit/s, on wire bytes.
    pub rate_bps: u64,
    /// Wire bytes of the packets waiting (kept with `queues`).
    pub queued_bytes: u64,
    /// Senders of the sending host waiting for room in `queues` (`tcp.host_queue_limit`,
    /// `rate_control.host_queue_limit`), to send in turn as it drains. Empty on switches' links.
    pub waiting: VecDeque<Waiter>,
}

/// A sender waiting for room in its host's interface queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiter {
    /// A TCP connection, by index.
    Conn(u32),
    /// A rate-controlled flow's paced sender, by flow index.
    Paced(u32),
}

/// No packet: the end of an [`InFlight`] list.
const NONE: PacketId = PacketId::MAX;

/// A link's packets in propagation, oldest first: the two ends of a list threaded through
/// [`Wire`]. A list through one table indexed by packet handle rather than a buffer per
/// link: handles are reused last freed first, so the table's busy part stays in cache, where
/// the buffers of thousands of links, each written at every hop, do not.
#[derive(Clone, Copy, Debug)]
pub struct InFlight {
    head: PacketId,
    tail: PacketId,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight { head: NONE, tail: NONE }
    }
}

impl InFlight {
    /// Whether no packet is in propagation.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NONE
    }
}

/// Where a packet in propagation is due, and the next on its link.
#[derive(Clone, Copy, Debug)]
struct WireSlot {
    /// When it reaches the far end.
    arrive_ps: TimePs,
    /// The event sequence number taken as its serialisation started, so that its arrival is
    /// ordered among equal-time events as of that moment.
    seq: u64,
    next: PacketId,
}

/// The packets in propagation on every link, by packet handle (see [`InFlight`]).
#[derive(Debug, Default)]
pub struct Wire {
    slots: Vec<WireSlot>,
}

impl Wire {
    /// Put `pkt` last on `list`, due at the far end at `arrive_ps`, ordered by `seq` among
    /// events of that time.
    #[inline]
    pub fn push_back(&mut self, list: &mut InFlight, pkt: PacketId, arrive_ps: TimePs, seq: u64) {
        let i = pkt as usize;
        if i >= self.slots.len() {
            self.grow(i);
        }
        self.slots[i] = WireSlot {
            arrive_ps,
            seq,
            next: NONE,
        };
        if list.tail == NONE {
            list.head = pkt;
        } else {
            self.slots[list.tail as usize].next = pkt;
        }
        list.tail = pkt;
    }

    #[cold]
    fn grow(&mut self, i: usize) {
        let empty = WireSlot {
            arrive_ps: 0,
            seq: 0,
            next: NONE,
        };
        self.slots.resize((i + 1).next_power_of_two(), empty);
    }

    /// Take the oldest packet off `list`.
    #[inline]
    pub fn pop_front(&mut self, list: &mut InFlight) -> Option<PacketId> {
        let pkt = list.head;
        if pkt == NONE {
            return None;
        }
        list.head = self.slots[pkt as usize].next;
        if list.head == NONE {
            list.tail = NONE;
        }
        Some(pkt)
    }

    /// When the oldest packet on `list` is due, and its sequence number.
    #[inline]
    pub fn front(&self, list: &InFlight) -> Option<(TimePs, u64)> {
        (list.head != NONE).then(|| {
            let s = &self.slots[list.head as usize];
            (s.arrive_ps, s.seq)
        })
    }

    /// The packets on `list`, oldest first.
    pub fn iter<'a>(&'a self, list: &InFlight) -> impl Iterator<Item = PacketId> + 'a {
        let mut at = list.head;
        std::iter::from_fn(move || {
            (at != NONE).then(|| {
                let pkt = at;
                at = self.slots[pkt as usize].next;
                pkt
            })
        })
    }
}

/// Per-link counters; the transmit counters first (`repr(C)`: see [`Link`]).
#[derive(Clone, Debug, Default)]
#[repr(C)]
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
    /// Of those, flows' packets a node sent into the link after it failed (its data plane still
    /// choosing it; probes and other generated packets not counted).
    pub sent_into_down: u64,
    /// When the last of them was sent, ps.
    pub last_sent_into_down_ps: u64,
    /// Wire bytes delivered to the far end since the last sample (counted on path-monitor
    /// links only).
    pub rx_bytes_interval: u64,
    /// Largest queue depth seen.
    pub max_depth_pkts: u32,
    /// Most packets waiting at the port, all its queues together, since the last sample (kept
    /// on every link; the time series shows and resets it on named links).
    pub max_port_pkts_interval: u32,
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
            PS_PER_S / rate_bps
        } else {
            0
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
            waiting: VecDeque::new(),
            busy_until_ps: 0,
            in_flight: InFlight::default(),
            egress_stage: false,
            path_tag: None,
            capture_tx: None,
            capture_rx: None,
            up: true,
            stats: LinkStats::default(),
        }
    }

    /// A new rate, from the next packet serialised on.
    pub fn set_rate(&mut self, rate_bps: u64) {
        let rate_bps = rate_bps.max(1);
        self.rate_bps = rate_bps;
        self.ps_per_bit = if PS_PER_S % rate_bps == 0 {
            PS_PER_S / rate_bps
        } else {
            0
        };
    }

    /// Time to serialise `bytes` wire bytes.
    #[inline]
    pub fn serialisation_ps(&self, bytes: u32) -> TimePs {
        let bits = u64::from(bytes) * 8;
        if self.ps_per_bit != 0 {
            bits * self.ps_per_bit
        } else {
            ((u128::from(bits) * u128::from(PS_PER_S)) / u128::from(self.rate_bps)) as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_link_keeps_its_packets_in_order_through_one_table() {
        let mut wire = Wire::default();
        let (mut a, mut b) = (InFlight::default(), InFlight::default());
        assert!(a.is_empty() && wire.front(&a).is_none() && wire.pop_front(&mut a).is_none());
        // Interleaved on two links, handles far apart (the table grows on demand).
        wire.push_back(&mut a, 7, 100, 1);
        wire.push_back(&mut b, 2, 150, 2);
        wire.push_back(&mut a, 900, 200, 3);
        wire.push_back(&mut a, 3, 300, 4);
        assert_eq!(wire.iter(&a).collect::<Vec<_>>(), [7, 900, 3]);
        assert_eq!(wire.front(&a), Some((100, 1)));
        assert_eq!(wire.pop_front(&mut a), Some(7));
        assert_eq!(wire.pop_front(&mut b), Some(2));
        assert!(b.is_empty());
        // A handle freed and reused joins a list afresh.
        wire.push_back(&mut b, 7, 400, 5);
        assert_eq!(wire.front(&a), Some((200, 3)));
        assert_eq!(wire.pop_front(&mut a), Some(900));
        assert_eq!(wire.pop_front(&mut a), Some(3));
        assert!(a.is_empty() && wire.pop_front(&mut a).is_none());
        assert_eq!(wire.iter(&b).collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn what_every_packet_reads_fits_the_first_cache_line() {
        let l = Link::new(0, 0, 1, 0, 1_000_000_000, 0, fifo());
        let base = &l as *const Link as usize;
        let end_of = |field: usize, size: usize| field - base + size;
        assert_eq!(base % 64, 0);
        assert!(end_of(&l.capture_rx as *const _ as usize, std::mem::size_of::<Option<u32>>()) <= 64);
        assert!(end_of(&l.path_tag as *const _ as usize, 2) <= 64);
        assert!(end_of(&l.in_flight as *const _ as usize, std::mem::size_of::<InFlight>()) <= 64);
        assert_eq!(
            &l.queues as *const _ as usize - base,
            64,
            "the queues start the second line"
        );
        assert!(
            end_of(&l.stats.tx_bytes as *const _ as usize, 8) <= 128,
            "the transmit counters end it"
        );
        assert!(end_of(&l.stats.tx_pkts as *const _ as usize, 8) <= 128);
    }

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
