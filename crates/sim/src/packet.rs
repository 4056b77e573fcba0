//! A simulated packet: headers a program sees, plus what the measuring end needs.

use mpsched_core::packet::PacketMeta;

/// Flow id of packets that belong to no traffic source (feedback packets).
pub const CONTROL_FLOW: u32 = u32::MAX;
/// Path tag of a packet not seen by any path monitor.
pub const NO_PATH: u8 = u8::MAX;

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
}
