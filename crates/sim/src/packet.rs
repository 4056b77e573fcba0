//! A simulated packet: headers a program sees, plus what the measuring end needs.

use mpsched_core::mptcp::MptcpOption;
use mpsched_core::packet::PacketMeta;
use mpsched_transport::tcp::Segment;

/// Flow id of packets that belong to no traffic source (feedback packets).
pub const CONTROL_FLOW: u32 = u32::MAX;
/// Path tag of a packet not seen by any path monitor.
pub const NO_PATH: u8 = u8::MAX;
/// [`Packet::inner`] of a packet that encapsulates nothing.
pub const NO_INNER: u32 = u32::MAX;
/// [`Packet::tcp`] of a packet that carries no TCP segment.
pub const NO_TCP: u32 = u32::MAX;

/// Where a packet's custom headers ([`mpsched_core::headers::HeaderStack`]) are: an index into
/// the simulation's store of stacks, in three bytes (the packet's last free bytes: a `u32` would
/// take it past a cache line), or none. Up to 2^24 - 1 packets may carry a stack at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackRef([u8; 3]);

impl StackRef {
    /// No stack.
    pub const NONE: StackRef = StackRef([0xff; 3]);

    /// The stack at index `i` (below 2^24 - 1).
    #[inline]
    pub fn new(i: u32) -> StackRef {
        assert!(i < 0x00ff_ffff, "more than 2^24 - 1 header stacks at once");
        let b = i.to_le_bytes();
        StackRef([b[0], b[1], b[2]])
    }

    /// The index, unless none.
    #[inline]
    pub fn index(self) -> Option<u32> {
        (self != Self::NONE).then(|| u32::from_le_bytes([self.0[0], self.0[1], self.0[2], 0]))
    }

    /// Whether there is a stack.
    #[inline]
    pub fn is_some(self) -> bool {
        self != Self::NONE
    }
}

/// A segment of a connection's opening handshake (modelled for MPTCP subflows only: single-path
/// TCP starts established, `docs/algorithms/tcp.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    /// The active opener's SYN (data direction).
    Syn,
    /// The passive opener's SYN/ACK (ACK direction).
    SynAck,
    /// The active opener's third ACK (data direction, no payload).
    Ack,
}

/// [`TcpPart::mptcp`] of a segment without an MPTCP option.
pub const NO_OPTION: u32 = u32::MAX;

/// The TCP part of a packet.
#[derive(Clone, Copy, Debug)]
pub struct TcpPart {
    /// Connection index in the simulation.
    pub conn: u32,
    /// Whether it is an ACK (receiver to sender) rather than data.
    pub is_ack: bool,
    /// The segment.
    pub seg: Segment,
    /// A handshake segment instead of data or an ACK.
    pub handshake: Option<Handshake>,
    /// The MPTCP option in its header: an index into the simulation's store of options
    /// ([`NO_OPTION`]: none), so that a TCP segment's part stays small and plain (single-path
    /// TCP moves every part through a store; an option is up to 56 bytes).
    pub mptcp: u32,
}

impl TcpPart {
    /// A data segment or an ACK with no option.
    pub fn plain(conn: u32, is_ack: bool, seg: Segment) -> TcpPart {
        TcpPart {
            conn,
            is_ack,
            seg,
            handshake: None,
            mptcp: NO_OPTION,
        }
    }

    /// The TCP flags byte on the wire.
    pub fn flags(&self) -> u8 {
        use mpsched_core::wire::tcp_flags::{ACK, SYN};
        match self.handshake {
            Some(Handshake::Syn) => SYN,
            Some(Handshake::SynAck) => SYN | ACK,
            Some(Handshake::Ack) => ACK,
            None => segment_flags(&self.seg),
        }
    }
}

/// Header bytes an MPTCP option adds to a segment on the wire (padded to 32-bit words).
pub fn option_bytes(o: &MptcpOption) -> u32 {
    (o.len_bytes() as u32).div_ceil(4) * 4
}

/// A packet in the simulator.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Parsed headers.
    pub meta: PacketMeta,
    /// Flow index (or [`CONTROL_FLOW`]).
    pub flow: u32,
    /// Sequence number within the flow (iperf carries one in its UDP payload).
    pub seq: u64,
    /// Send time (iperf carries one in its UDP payload).
    pub sent_ps: u64,
    /// UDP payload bytes.
    pub payload_bytes: u32,
    /// The scenario path it arrived at the confluence point by, or [`NO_PATH`].
    pub path: u8,
    /// For a TCP packet: its segment, an index into the simulation's store of TCP parts (kept
    /// apart so that a packet, which moves by value from queue to wire to node, stays small);
    /// else [`NO_TCP`].
    pub tcp: u32,
    /// For a UDP subtunnel datagram: the encapsulated packet (an index into the simulation's
    /// store of inner packets), else [`NO_INNER`].
    pub inner: u32,
    /// Its custom headers, if any (kept apart as the TCP part is).
    pub headers: StackRef,
}

impl Packet {
    /// A packet with the given headers and no payload bookkeeping.
    pub fn bare(meta: PacketMeta, flow: u32, sent_ps: u64) -> Packet {
        Packet {
            meta,
            flow,
            seq: 0,
            sent_ps,
            payload_bytes: 0,
            path: NO_PATH,
            tcp: NO_TCP,
            inner: NO_INNER,
            headers: StackRef::NONE,
        }
    }
}

/// The TCP flags a segment goes out with: ACK always (the connection is established), ECE and
/// CWR as the segment says, PSH on data.
pub fn segment_flags(seg: &Segment) -> u8 {
    use mpsched_core::wire::tcp_flags::{ACK, CWR, ECE, PSH};
    let mut flags = ACK;
    if seg.ece {
        flags |= ECE;
    }
    if seg.cwr {
        flags |= CWR;
    }
    if seg.len > 0 {
        flags |= PSH;
    }
    flags
}

/// A packet in the simulation's pool: queues, wires and events hold these 4-byte handles, and
/// the 64-byte packet stays where it is.
pub type PacketId = u32;

/// A packet in a cache line of its own: a slot of the [`PacketPool`].
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line(Packet);

/// The simulation's packets, by [`PacketId`]: a [`Slab`] whose slots are cache lines, so that
/// a packet lies in one line whatever address the allocator gave the pool (at a packet's own
/// 8-byte alignment a slot could straddle two). Only the slots are aligned: a packet taken
/// out, or built on the stack, is not, since aligning [`Packet`] itself made every function
/// that holds one realign its stack frame (2.6 % more instructions, htsim's w1 dumbbell 4 %
/// more CPU time). Aligned slots took the UDP benchmark's engine time down 7 %
/// (docs/performance.md, 2026-11-25 evening).
#[derive(Debug, Default)]
pub struct PacketPool(Slab<Line>);

impl PacketPool {
    /// Store `pkt`; its handle.
    #[inline]
    pub fn insert(&mut self, pkt: Packet) -> PacketId {
        self.0.insert(Line(pkt))
    }

    /// Remove and return packet `i`, which must be held.
    #[inline]
    pub fn take(&mut self, i: PacketId) -> Packet {
        self.0.take(i).0
    }

    /// Packet `i`, if held.
    #[inline]
    pub fn get(&self, i: PacketId) -> Option<&Packet> {
        self.0.get(i).map(|l| &l.0)
    }

    /// Packet `i`, which must be held.
    #[inline]
    pub fn at(&self, i: PacketId) -> &Packet {
        &self.0.at(i).0
    }

    /// Packet `i`, which must be held, to change.
    #[inline]
    pub fn at_mut(&mut self, i: PacketId) -> &mut Packet {
        &mut self.0.at_mut(i).0
    }

    /// Packets held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no packet is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A store of values that packets refer to by a small index (a packet's TCP part, a tunnel's
/// inner packet): slots are reused, so it holds at most as many as are alive at once.
#[derive(Debug)]
pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// Store `v`; its index.
    #[inline]
    pub fn insert(&mut self, v: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(v);
                i
            }
            None => {
                self.items.push(Some(v));
                (self.items.len() - 1) as u32
            }
        }
    }

    /// Remove and return the value at `i`, which must be held.
    #[inline]
    pub fn take(&mut self, i: u32) -> T {
        let v = self.items[i as usize].take().expect("a held slab slot");
        self.free.push(i);
        v
    }

    /// The value at `i`, if held.
    #[inline]
    pub fn get(&self, i: u32) -> Option<&T> {
        self.items.get(i as usize).and_then(Option::as_ref)
    }

    /// The value at `i`, which must be held.
    #[inline]
    pub fn at(&self, i: u32) -> &T {
        self.items[i as usize].as_ref().expect("a held slab slot")
    }

    /// The value at `i`, which must be held, to change.
    #[inline]
    pub fn at_mut(&mut self, i: u32) -> &mut T {
        self.items[i as usize].as_mut().expect("a held slab slot")
    }

    /// Slots, held or free: indices run below this.
    pub fn capacity(&self) -> u32 {
        self.items.len() as u32
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.items.len() - self.free.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_fits_a_cache_line() {
        assert!(std::mem::size_of::<Packet>() <= 64, "{}", std::mem::size_of::<Packet>());
        assert_eq!(std::mem::size_of::<Option<Line>>(), 64, "a pool slot is one line");
        assert_eq!(std::mem::align_of::<Option<Line>>(), 64);
    }

    #[test]
    fn a_stack_ref_holds_24_bits() {
        assert_eq!(StackRef::NONE.index(), None);
        assert_eq!(StackRef::new(0).index(), Some(0));
        assert_eq!(StackRef::new(0x00ab_cdef).index(), Some(0x00ab_cdef));
    }

    #[test]
    fn slab_reuses_freed_slots() {
        let mut s = Slab::default();
        let a = s.insert(1);
        let b = s.insert(2);
        assert_eq!(s.take(a), 1);
        assert_eq!(s.insert(3), a);
        assert_eq!((s.len(), s.get(b)), (2, Some(&2)));
    }
}
