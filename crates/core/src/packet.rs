//! Packet metadata: what a program sees of a packet.
//!
//! This is the parsed-header view a P4 parser or an eBPF program builds: addresses, ports, ECN
//! bits, lengths and the port the packet came in on. It carries no payload; the few payload
//! bytes a program needs (the feedback header) are parsed into typed fields.

use crate::mptcp::MptcpKind;
use serde::{Deserialize, Serialize};

/// IPv4 address as a host-order `u32` (`10.0.0.1` is `0x0a00_0001`), as data planes hold it.
pub type Ipv4 = u32;

/// Index of a port (interface) on a node.
pub type PortId = u16;

/// Format an [`Ipv4`] in dotted-quad notation.
pub fn ipv4_to_string(ip: Ipv4) -> String {
    let b = ip.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// Parse dotted-quad notation into an [`Ipv4`].
pub fn parse_ipv4(s: &str) -> Option<Ipv4> {
    let addr: std::net::Ipv4Addr = s.parse().ok()?;
    Some(u32::from(addr))
}

/// The two ECN bits of the IPv4 TOS byte (RFC 3168).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Ecn {
    /// `00`: the transport does not support ECN.
    #[default]
    NotEct,
    /// `10`: ECN-capable transport, codepoint 0.
    Ect0,
    /// `01`: ECN-capable transport, codepoint 1.
    Ect1,
    /// `11`: congestion experienced.
    Ce,
}

impl Ecn {
    /// The ECN field's value (the low two bits of the TOS byte).
    pub const fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// Decode the low two bits of a TOS byte.
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// Whether a router may mark this packet CE instead of dropping it.
    pub const fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// IP protocol numbers mpsched parses.
pub mod proto {
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
}

/// The body of a DWRR feedback packet, once parsed (see [`crate::feedback`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FeedbackInfo {
    /// The splitting group the feedback is for.
    pub group: u8,
    /// The (0-based) path on which congestion was seen.
    pub path: u8,
}

/// What a program sees beyond IPv4 and the transport ports, parsed into typed fields: the base
/// metadata stays fixed, and a header only some programs need is a variant here (a later
/// paper's header is a new variant, not a field every packet carries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum HeaderExt {
    /// Nothing beyond the base.
    #[default]
    None,
    /// The body of a DWRR feedback packet.
    Feedback(FeedbackInfo),
    /// A TCP segment's flags ([`crate::wire::tcp_flags`]), and which MPTCP option it carries
    /// (the option's fields, which do not fit here, reach a program through
    /// [`crate::program::Ctx::mptcp_option`]).
    Tcp {
        /// The flags byte.
        flags: u8,
        /// The kind of MPTCP option in the header, if any.
        mptcp: Option<MptcpKind>,
    },
}

/// Parsed metadata of one IPv4 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PacketMeta {
    /// Source address.
    pub src_ip: Ipv4,
    /// Destination address.
    pub dst_ip: Ipv4,
    /// IP protocol number.
    pub proto: u8,
    /// Transport source port (0 when the protocol has none or the packet is a fragment).
    pub src_port: u16,
    /// Transport destination port.
    pub dst_port: u16,
    /// DSCP (the high six bits of the TOS byte).
    pub dscp: u8,
    /// ECN field.
    pub ecn: Ecn,
    /// Time to live.
    pub ttl: u8,
    /// Length of the frame on the wire: Ethernet header + IP packet (no preamble, no FCS).
    pub wire_len_bytes: u32,
    /// The port the packet arrived on.
    pub ingress_port: PortId,
    /// Headers beyond the base, when parsed.
    pub ext: HeaderExt,
}

impl PacketMeta {
    /// A UDP packet with the given addresses, ports and wire length, ECN Not-ECT, TTL 64.
    pub fn udp(src_ip: Ipv4, dst_ip: Ipv4, src_port: u16, dst_port: u16, wire_len_bytes: u32) -> Self {
        PacketMeta {
            src_ip,
            dst_ip,
            proto: proto::UDP,
            src_port,
            dst_port,
            dscp: 0,
            ecn: Ecn::NotEct,
            ttl: 64,
            wire_len_bytes,
            ingress_port: 0,
            ext: HeaderExt::None,
        }
    }

    /// The feedback body, when the packet is a DWRR feedback packet.
    #[inline]
    pub fn feedback(&self) -> Option<FeedbackInfo> {
        match self.ext {
            HeaderExt::Feedback(f) => Some(f),
            _ => None,
        }
    }

    /// The kind of MPTCP option the segment carries, when it is a TCP segment with one.
    #[inline]
    pub fn mptcp_kind(&self) -> Option<MptcpKind> {
        match self.ext {
            HeaderExt::Tcp { mptcp, .. } => mptcp,
            _ => None,
        }
    }

    /// The TCP flags, when the packet is a TCP segment whose header was parsed.
    #[inline]
    pub fn tcp_flags(&self) -> Option<u8> {
        match self.ext {
            HeaderExt::Tcp { flags, .. } => Some(flags),
            _ => None,
        }
    }
}

/// Bytes of headers below the UDP payload on an Ethernet link: Ethernet (14) + IPv4 (20) + UDP (8).
///
/// Link rates count these (as `tc` and the NIC do); iperf's offered rate counts only payload.
pub const UDP_OVERHEAD_BYTES: u32 = 14 + 20 + 8;
