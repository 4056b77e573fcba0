//! TCP as two state machines: [`TcpSender`] and [`TcpReceiver`].
//!
//! A connection carries data one way; its ACKs flow back. A bidirectional exchange (request /
//! response) is two of them, so ACKs are never piggybacked on data. Sequence numbers are 64-bit
//! byte offsets from zero: the 32-bit wrap, the handshake and FIN are not modelled (what is and
//! is not is listed in `docs/algorithms/tcp.md`).

mod receiver;
mod sender;

pub use receiver::{ReceiverStats, RxOutcome, TcpReceiver};
pub use sender::{SenderStats, TcpSender};

use crate::cc::CcKind;
use crate::NS_PER_MS;
use serde::{Deserialize, Serialize};

/// Bytes of header below the TCP payload on an Ethernet link with the timestamp option, as
/// Linux sends it: Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12.
pub const TCP_OVERHEAD_BYTES: u32 = 14 + 20 + 32;
/// Linux's MSS on a 1500-byte MTU with timestamps.
pub const DEFAULT_MSS_BYTES: u32 = 1448;

/// A TCP segment as the model needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Segment {
    /// First byte's offset (data segments).
    pub seq: u64,
    /// Payload bytes (0 for a pure ACK).
    pub len: u32,
    /// Cumulative acknowledgement: the next byte expected (ACK segments).
    pub ack: u64,
    /// Receive window advertised, in bytes.
    pub window_bytes: u64,
    /// ECN-Echo (RFC 3168).
    pub ece: bool,
    /// Congestion Window Reduced (RFC 3168).
    pub cwr: bool,
    /// Whether the IP header carries ECT(0) (new data of an ECN-capable connection).
    pub ect: bool,
    /// Whether the segment repeats bytes sent before (not on the wire; for traces).
    pub retransmission: bool,
}

impl Segment {
    /// Offset one past the last payload byte.
    pub fn end(&self) -> u64 {
        self.seq + u64::from(self.len)
    }
}

/// Settings of a connection, with Linux's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Congestion controller.
    pub cc: CcKind,
    /// Maximum segment size in bytes.
    pub mss_bytes: u32,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window_segments: u32,
    /// Minimum retransmission timeout (Linux: 200 ms).
    pub min_rto_ns: u64,
    /// Delayed-ACK timeout (Linux's minimum: 40 ms); 0 acknowledges every segment.
    pub delayed_ack_ns: u64,
    /// Acknowledge at least every this many in-order segments.
    pub delayed_ack_segments: u32,
    /// Disable Nagle's algorithm (`TCP_NODELAY`).
    pub nodelay: bool,
    /// Receive window in bytes (the receiver reads in-order data at once, so this is its
    /// buffer for out-of-order data plus what is in flight).
    pub receive_window_bytes: u64,
    /// Negotiate ECN (RFC 3168).
    pub ecn: bool,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// Bytes the sending host's interface queue may hold before this connection waits for
    /// room instead of sending (None: it never waits, and a full queue drops its segments as
    /// any queue does). A host model for the simulator, not a sender setting: Linux's TCP Small
    /// Queues keep each socket's bytes in the qdisc small, and htsim's host queue never drops
    /// and serves its flows in turn; with this limit a host drops none of its own segments and
    /// the connections waiting send in turn as the queue drains.
    pub host_queue_limit_bytes: Option<u64>,
    /// Appropriate byte counting's limit L (RFC 3465), in segments: an ACK grows the window by
    /// at most this many segments' worth, however much it acknowledges (None: no limit, as
    /// Linux's `tcp_slow_start`; htsim's `TcpSrc` counts at most one segment per ACK). Without
    /// a limit, the ACK that fills a hole after a timeout can open the window to the threshold
    /// at once, and the sender bursts all of it at line rate.
    pub abc_limit_segments: Option<u32>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcKind::Cubic,
            mss_bytes: DEFAULT_MSS_BYTES,
            initial_window_segments: 10,
            min_rto_ns: 200 * NS_PER_MS,
            delayed_ack_ns: 40 * NS_PER_MS,
            delayed_ack_segments: 2,
            nodelay: false,
            receive_window_bytes: 3 << 20,
            ecn: false,
            dupack_threshold: 3,
            host_queue_limit_bytes: None,
            abc_limit_segments: None,
        }
    }
}

#[cfg(test)]
mod tests;
