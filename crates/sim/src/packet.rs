//! A simulated packet: headers a program sees, plus what the measuring end needs.

use mpsched_core::packet::PacketMeta;
use mpsched_transport::tcp::Segment;

/// Flow id of packets that belong to no traffic source (feedback packets).
pub const CONTROL_FLOW: u32 = u32::MAX;
/// Path tag of a packet not seen by any path monitor.
pub const NO_PATH: u8 = u8::MAX;
/// [`Packet::inner`] of a packet that encapsulates nothing.
pub const NO_INNER: u32 = u32::MAX;

/// The TCP part of a packet.
#[derive(Clone, Copy, Debug)]
pub struct TcpPart {
    /// Connection index in the simulation.
    pub conn: u32,
    /// Whether it is an ACK (receiver to sender) rather than data.
    pub is_ack: bool,
    /// The segment.
    pub seg: Segment,
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
    /// TCP segment, for TCP packets.
    pub tcp: Option<TcpPart>,
    /// For a UDP subtunnel datagram: the encapsulated packet (an index into the simulation's
    /// store of inner packets), else [`NO_INNER`].
    pub inner: u32,
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
            tcp: None,
            inner: NO_INNER,
        }
    }
}
