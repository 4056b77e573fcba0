//! How subtunnels carry packets: the UDP encapsulation (one datagram per packet) and the TCP
//! subtunnels' stream framing (a length-prefixed record per packet).

use mpsched_core::packet::{Ipv4, PacketMeta};
use std::collections::VecDeque;

/// Bytes of the header that frames each packet in a TCP subtunnel's stream ([`FrameHeader`]).
pub const TCP_FRAMING_BYTES: u32 = FrameHeader::BYTES as u32;
/// Outer IPv4 + UDP header of a UDP subtunnel datagram (the outer Ethernet header replaces the
/// inner one).
pub const UDP_ENCAP_BYTES: u32 = 20 + 8;
/// UDP port of subtunnel datagrams.
pub const TUNNEL_UDP_PORT: u16 = 4789;

/// The outer header of a UDP subtunnel datagram carrying `inner` from `own_ip` to the
/// subtunnel's address `subtunnel_ip`. The outer ECN field copies the inner one (RFC 6040,
/// normal mode), so congestion on the subtunnel's path can mark it.
pub fn udp_outer(own_ip: Ipv4, subtunnel_ip: Ipv4, inner: &PacketMeta) -> PacketMeta {
    let mut outer = PacketMeta::udp(
        own_ip,
        subtunnel_ip,
        TUNNEL_UDP_PORT,
        TUNNEL_UDP_PORT,
        inner.wire_len_bytes + UDP_ENCAP_BYTES,
    );
    outer.ecn = inner.ecn;
    outer
}

/// The header before each packet in a TCP subtunnel's stream: the packet's length and the low
/// 32 bits of its entry order, both big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Bytes of the packet that follows.
    pub len: u32,
    /// The low 32 bits of the packet's entry order ([`crate::Scheduled::entry_seq`]).
    pub entry_seq: u32,
}

impl FrameHeader {
    /// Encoded size.
    pub const BYTES: usize = 8;

    /// The header as it goes on the stream.
    pub fn encode(&self) -> [u8; Self::BYTES] {
        let mut b = [0; Self::BYTES];
        b[..4].copy_from_slice(&self.len.to_be_bytes());
        b[4..].copy_from_slice(&self.entry_seq.to_be_bytes());
        b
    }

    /// Read a header from the start of `bytes`; None if fewer than [`FrameHeader::BYTES`].
    pub fn decode(bytes: &[u8]) -> Option<FrameHeader> {
        let b: &[u8; Self::BYTES] = bytes.get(..Self::BYTES)?.try_into().ok()?;
        Some(FrameHeader {
            len: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            entry_seq: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

/// The packets written into a TCP subtunnel's stream and not yet delivered at the far end,
/// each with the stream offset at which its record ends. The receiver delivers a packet once
/// the stream is in order up to that offset.
#[derive(Clone, Debug)]
pub struct RecordQueue<T> {
    records: VecDeque<(u64, T)>,
    written_bytes: u64,
}

impl<T> Default for RecordQueue<T> {
    fn default() -> Self {
        RecordQueue {
            records: VecDeque::new(),
            written_bytes: 0,
        }
    }
}

impl<T> RecordQueue<T> {
    /// Write a record of `bytes` (header included) carrying `item`; returns the stream offset
    /// at which it ends.
    pub fn push(&mut self, bytes: u64, item: T) -> u64 {
        self.written_bytes += bytes;
        self.records.push_back((self.written_bytes, item));
        self.written_bytes
    }

    /// The oldest record if the stream is delivered in order up to `delivered_bytes` past its
    /// end.
    pub fn pop_complete(&mut self, delivered_bytes: u64) -> Option<T> {
        match self.records.front() {
            Some(&(end, _)) if end <= delivered_bytes => self.records.pop_front().map(|(_, t)| t),
            _ => None,
        }
    }

    /// Records written and not yet complete.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether every record written is complete.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::packet::Ecn;
    use proptest::prelude::*;

    #[test]
    fn udp_outer_header_copies_ecn_and_adds_its_bytes() {
        let mut inner = PacketMeta::udp(1, 2, 3, 4, 1000);
        inner.ecn = Ecn::Ect0;
        let o = udp_outer(7, 8, &inner);
        assert_eq!((o.src_ip, o.dst_ip, o.dst_port), (7, 8, TUNNEL_UDP_PORT));
        assert_eq!(o.ecn, Ecn::Ect0);
        assert_eq!(o.wire_len_bytes, 1000 + UDP_ENCAP_BYTES);
    }

    #[test]
    fn records_complete_only_when_the_stream_reaches_their_end() {
        let mut q = RecordQueue::default();
        assert_eq!(q.push(100, 'a'), 100);
        assert_eq!(q.push(50, 'b'), 150);
        assert_eq!(q.pop_complete(99), None);
        assert_eq!(q.pop_complete(120), Some('a'));
        assert_eq!(q.pop_complete(120), None);
        assert_eq!(q.pop_complete(150), Some('b'));
        assert!(q.is_empty());
    }

    proptest! {
        #[test]
        fn frame_headers_round_trip(len: u32, seq: u32, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let h = FrameHeader { len, entry_seq: seq };
            let mut bytes = h.encode().to_vec();
            prop_assert_eq!(FrameHeader::decode(&bytes[..7]), None);
            bytes.extend(tail);
            prop_assert_eq!(FrameHeader::decode(&bytes), Some(h));
        }
    }
}
