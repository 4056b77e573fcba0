//! The program model: what a data-plane program sees and what it may answer.

use crate::packet::{PacketMeta, PortId};

/// Why a program dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// No table entry matched the destination.
    NoRoute,
    /// TTL reached zero.
    TtlExpired,
    /// DWRR congestion avoidance: one of the packets dropped on purpose.
    CongestionAvoidance,
    /// The packet could not be parsed.
    Malformed,
}

/// The ingress verdict on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it out of this port.
    Forward(PortId),
    /// Drop it (and count why).
    Drop(DropReason),
    /// The packet was for this node and has been absorbed (a feedback packet, for instance).
    Consume,
}

/// An extra packet a program generates (a clone, a feedback packet), to send out of `port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Emit {
    /// Egress port of the generated packet.
    pub port: PortId,
    /// Its headers.
    pub meta: PacketMeta,
}

/// What an ingress pipeline decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IngressOutput {
    /// What happens to the packet itself.
    pub verdict: Verdict,
    /// A packet generated alongside, if any.
    pub emit: Option<Emit>,
}

impl IngressOutput {
    /// A verdict with nothing generated.
    pub const fn just(verdict: Verdict) -> Self {
        IngressOutput { verdict, emit: None }
    }
}

/// Queue metadata shown to an egress program, as BMv2's `standard_metadata` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QueueMeta {
    /// Packets waiting in the queue when this packet was enqueued (not counting itself).
    pub enq_qdepth_pkts: u32,
    /// Packets still waiting in the queue when this packet was dequeued.
    pub deq_qdepth_pkts: u32,
}

/// The egress verdict on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EgressVerdict {
    /// Transmit it (possibly with rewritten headers).
    Transmit,
    /// Drop it.
    Drop,
}

/// A data-plane program: a state machine with no I/O and no clock of its own.
///
/// The runtime (simulator or test harness) calls [`Program::ingress`] for each arriving packet
/// and [`Program::egress`] as each packet leaves an output queue. Time is passed in; the program
/// never reads a clock.
pub trait Program: Send {
    /// Process an arriving packet. `pkt.ingress_port` is set by the caller.
    fn ingress(&mut self, pkt: &mut PacketMeta, now_ps: u64) -> IngressOutput;

    /// Process a packet leaving the queue of `port`; it may rewrite headers (ECN marking).
    fn egress(&mut self, _pkt: &mut PacketMeta, _port: PortId, _queue: QueueMeta) -> EgressVerdict {
        EgressVerdict::Transmit
    }

    /// Named counters (packets marked, feedback sent, ...), for results.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Named register values worth sampling over time (current weights, ...).
    fn registers(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}
