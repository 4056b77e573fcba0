//! The UPF's frames: the tunnel daemon's datagram in its clear mode (`seal = "none"`), the
//! sealed layout of `crates/tunnel/src/seal.rs` and `wire.rs` without the tag, over Ethernet /
//! IPv4 / UDP. Every integer is big-endian.
//!
//! ```text
//! downlink data, UPF -> UE (74 bytes before the inner packet):
//!  0            14                 34         42                             62                74
//!  | Ethernet   | IPv4 (20)        | UDP (8)  | header (20)                  | data (12)       | inner IPv4 packet
//!  | port MACs  | TOS = inner's    | 4789 ->  | kind 1 | path | 0 (u16)     | path_seq        |
//!  | 0x0800     | TTL 64, DF, id 0 | UE port  | epoch (u64)                  | tunnel_seq      |
//!  |            | UPF -> UE path   | csum 0   | packet_number (u64)          | sent_us         |
//!
//! acknowledgement, UE -> UPF (UDP to port 4789 of the UPF's address):
//!  | Ethernet | IPv4 | UDP | kind 2 | path | 0 | epoch | packet_number | highest_seq | received | echo_us | ack_delay_us |
//!
//! uplink data (kind 1) and keepalives (kind 3) from a UE have the same header; a keepalive's
//! body is {path_seq, sent_us, tunnel_next}.
//! ```
//!
//! The helpers here build and read these frames for the Rust twin, the vectors and the
//! benchmarks; the eBPF program writes the same bytes (`atsss.bpf.c`), and a test holds the
//! header and bodies to the tunnel crate's own encoders.

use mpsched_core::packet::Ipv4;
use mpsched_core::wire::{internet_checksum, ETHERTYPE_IPV4, ETH_HDR_BYTES};

/// The UPF's UDP port: downlink frames leave from it, acknowledgements and uplink come to it.
pub const UPF_PORT: u16 = 4789;
/// Bytes of the header every message starts with: kind, path, reserved, epoch, packet number.
pub const HEADER_BYTES: usize = 20;
/// Bytes of a data message's body before the inner packet.
pub const DATA_BYTES: usize = 12;
/// Bytes of an acknowledgement's body.
pub const ACK_BYTES: usize = 16;
/// Bytes of a keepalive's body.
pub const KEEPALIVE_BYTES: usize = 12;
/// What encapsulation adds to the inner IPv4 packet: outer IPv4 (20), UDP (8), header, data.
pub const ENCAP_BYTES: usize = 20 + 8 + HEADER_BYTES + DATA_BYTES;
/// Offset of the inner packet in a downlink or uplink frame.
pub const INNER_AT: usize = ETH_HDR_BYTES + ENCAP_BYTES;
/// Offset of the header in a frame (after Ethernet, an IPv4 header without options, UDP).
pub const HEADER_AT: usize = ETH_HDR_BYTES + 20 + 8;
/// Offset of a message's body in a frame.
pub const BODY_AT: usize = HEADER_AT + HEADER_BYTES;
/// The outer TTL.
pub const OUTER_TTL: u8 = 64;
/// Kind of a data message.
pub const KIND_DATA: u8 = 1;
/// Kind of an acknowledgement.
pub const KIND_ACK: u8 = 2;
/// Kind of a keepalive.
pub const KIND_KEEPALIVE: u8 = 3;
/// The outer IPv4 flags and fragment offset: DF, no fragment (an atomic datagram, RFC 6864,
/// so its identification is 0).
pub const OUTER_FRAG: u16 = 0x4000;

/// The header every message starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// What follows: [`KIND_DATA`], [`KIND_ACK`], [`KIND_KEEPALIVE`].
    pub kind: u8,
    /// The path the message travels on.
    pub path: u8,
    /// The sender's session.
    pub epoch: u64,
    /// The sender's message number, one counter across its paths.
    pub packet_number: u64,
}

impl Header {
    /// Its bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0; HEADER_BYTES];
        b[0] = self.kind;
        b[1] = self.path;
        b[4..12].copy_from_slice(&self.epoch.to_be_bytes());
        b[12..20].copy_from_slice(&self.packet_number.to_be_bytes());
        b
    }

    /// The header at the start of `b`: None when it is shorter, or its reserved field is not 0.
    pub fn parse(b: &[u8]) -> Option<Header> {
        let b = b.get(..HEADER_BYTES)?;
        if b[2..4] != [0, 0] {
            return None;
        }
        Some(Header {
            kind: b[0],
            path: b[1],
            epoch: u64::from_be_bytes(b[4..12].try_into().ok()?),
            packet_number: u64::from_be_bytes(b[12..20].try_into().ok()?),
        })
    }
}

/// What a downlink frame's outer headers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encap {
    /// The UPF's address.
    pub src: Ipv4,
    /// The UE's address on the chosen path.
    pub dst: Ipv4,
    /// The UE path's UDP port.
    pub dst_port: u16,
    /// The inner packet's TOS byte (DSCP and ECN, copied: RFC 6040's normal mode).
    pub tos: u8,
    /// The header.
    pub header: Header,
    /// The path's sequence number (the register's `seq_sent` after the send).
    pub path_seq: u32,
    /// The UE's count of packets entering its tunnel.
    pub tunnel_seq: u32,
    /// The UPF's clock, microseconds, wrapping.
    pub sent_us: u32,
}

/// The Ethernet header (addresses zero: the runtime writes the port's) and an IPv4 header
/// without options from `src` to `dst`, UDP, TTL 64, DF, id 0, with its checksum.
fn eth_ipv4(out: &mut Vec<u8>, src: Ipv4, dst: Ipv4, tos: u8, ip_total: u16, ttl: u8) {
    out.extend_from_slice(&[0; 12]);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let at = out.len();
    out.extend_from_slice(&[0x45, tos]);
    out.extend_from_slice(&ip_total.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&OUTER_FRAG.to_be_bytes());
    out.extend_from_slice(&[ttl, mpsched_core::packet::proto::UDP, 0, 0]);
    out.extend_from_slice(&src.to_be_bytes());
    out.extend_from_slice(&dst.to_be_bytes());
    let c = internet_checksum(&out[at..at + 20], 0);
    out[at + 10..at + 12].copy_from_slice(&c.to_be_bytes());
}

/// A UDP header with checksum 0 (none: IPv4 allows it, and the tunnel daemon's receive path
/// takes it) for `payload_len` bytes after it.
fn udp(out: &mut Vec<u8>, sport: u16, dport: u16, payload_len: usize) {
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&dport.to_be_bytes());
    out.extend_from_slice(&((8 + payload_len) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
}

/// The downlink frame of `inner` (an IPv4 packet, exactly its total length) under `e`, into
/// `out` (cleared first).
pub fn encapsulate(e: &Encap, inner: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let payload = HEADER_BYTES + DATA_BYTES + inner.len();
    eth_ipv4(out, e.src, e.dst, e.tos, (28 + payload) as u16, OUTER_TTL);
    udp(out, UPF_PORT, e.dst_port, payload);
    out.extend_from_slice(&e.header.to_bytes());
    for w in [e.path_seq, e.tunnel_seq, e.sent_us] {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out.extend_from_slice(inner);
}

/// A message from a UE at `ue_addr` (port `ue_port`) to the UPF at `upf`: `header` then
/// `body`, TTL 64, TOS 0; Ethernet addresses zero.
pub fn from_ue(ue_addr: Ipv4, ue_port: u16, upf: Ipv4, header: &Header, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let payload = HEADER_BYTES + body.len();
    eth_ipv4(&mut out, ue_addr, upf, 0, (28 + payload) as u16, OUTER_TTL);
    udp(&mut out, ue_port, UPF_PORT, payload);
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(body);
    out
}

/// An acknowledgement's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AckBody {
    /// Highest path sequence number received.
    pub highest_seq: u32,
    /// Messages received on the path in all (wrapping).
    pub received: u32,
    /// `sent_us` of the message numbered `highest_seq`.
    pub echo_us: u32,
    /// Microseconds the UE held it before acknowledging.
    pub ack_delay_us: u32,
}

impl AckBody {
    /// Its bytes.
    pub fn to_bytes(&self) -> [u8; ACK_BYTES] {
        let mut b = [0; ACK_BYTES];
        for (i, w) in [self.highest_seq, self.received, self.echo_us, self.ack_delay_us]
            .into_iter()
            .enumerate()
        {
            b[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        b
    }

    /// The body at the start of `b`, if it is long enough.
    pub fn parse(b: &[u8]) -> Option<AckBody> {
        let w = |i: usize| -> Option<u32> { Some(u32::from_be_bytes(b.get(4 * i..4 * i + 4)?.try_into().ok()?)) };
        Some(AckBody {
            highest_seq: w(0)?,
            received: w(1)?,
            echo_us: w(2)?,
            ack_delay_us: w(3)?,
        })
    }
}

/// The RTT an acknowledgement received at `now_us` measures, µs: `now - echo - delay`, the
/// first difference wrapping (the clock is 32 bits of microseconds) and the second saturating
/// at 0 (a UE reporting more delay than the round trip took).
#[inline]
pub fn rtt_us(now_us: u32, ack: &AckBody) -> u32 {
    now_us.wrapping_sub(ack.echo_us).saturating_sub(ack.ack_delay_us)
}

/// Microseconds of a clock in nanoseconds, without a division (what the eBPF program does):
/// `ns / 1000` as `mulhi(ns >> 3, 0x20C49BA5E353F7CF) >> 4`, exact for every `u64`.
#[inline]
pub fn ns_to_us(ns: u64) -> u64 {
    mulhi(ns >> 3, 0x20C4_9BA5_E353_F7CF) >> 4
}

/// The high 64 bits of a 64 x 64-bit product, from four 32 x 32-bit products (eBPF has no
/// wider multiply).
#[inline]
pub fn mulhi(a: u64, b: u64) -> u64 {
    let (a_lo, a_hi) = (a & 0xffff_ffff, a >> 32);
    let (b_lo, b_hi) = (b & 0xffff_ffff, b >> 32);
    let p0 = a_lo * b_lo;
    let p1 = a_lo * b_hi;
    let p2 = a_hi * b_lo;
    let p3 = a_hi * b_hi;
    let mid = (p0 >> 32) + (p1 & 0xffff_ffff) + (p2 & 0xffff_ffff);
    p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::wire::parse_frame;

    #[test]
    fn microseconds_without_division_are_exact() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for ns in (0..2_000_000u64).chain([u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1]) {
            assert_eq!(ns_to_us(ns), ns / 1000, "{ns}");
        }
        for _ in 0..2_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(ns_to_us(x), x / 1000, "{x}");
            assert_eq!(
                u128::from(mulhi(x, x.rotate_left(17))),
                (u128::from(x) * u128::from(x.rotate_left(17))) >> 64
            );
        }
    }

    #[test]
    fn a_downlink_frame_is_the_tunnel_daemons_datagram_without_its_tag() {
        let inner_meta = mpsched_core::packet::PacketMeta::udp(0x0a00_0009, 0x0a01_0001, 1000, 2000, 0);
        let mut inner = Vec::new();
        mpsched_core::wire::emit_udp_frame(&inner_meta, [0; 6], [0; 6], 7, &[1, 2, 3], &mut inner);
        let inner = &inner[14..];
        let e = Encap {
            src: 0x0aff_0001,
            dst: 0x6440_0002,
            dst_port: 6000,
            tos: 0xb9,
            header: Header {
                kind: KIND_DATA,
                path: 1,
                epoch: 0x0102_0304_0506_0708,
                packet_number: 0,
            },
            path_seq: 5,
            tunnel_seq: 9,
            sent_us: 123,
        };
        let mut f = Vec::new();
        encapsulate(&e, inner, &mut f);
        assert_eq!(f.len(), INNER_AT + inner.len());
        let m = parse_frame(&f, 0).unwrap();
        assert_eq!(
            (m.src_ip, m.dst_ip, m.src_port, m.dst_port, m.ttl),
            (e.src, e.dst, 4789, 6000, 64)
        );
        assert_eq!((m.dscp, m.ecn.bits()), (0xb9 >> 2, 0b01));
        assert_eq!(&f[20..22], &[0x40, 0], "DF");
        assert_eq!(&f[40..42], &[0, 0], "no UDP checksum");
        // The UDP payload is the tunnel daemon's datagram in clear (`seal = "none"`,
        // crates/tunnel/src/seal.rs): its own Sealer at the same epoch and number writes the same
        // bytes, and its Opener reads them as a data message of the inner packet.
        let mut body = Vec::new();
        mpsched_tunnel::wire::DataHeader {
            path_seq: 5,
            tunnel_seq: 9,
            sent_us: 123,
        }
        .encode(&mut body);
        body.extend_from_slice(inner);
        let mut sealer = mpsched_tunnel::seal::Sealer::clear(e.header.epoch);
        let mut datagram = Vec::new();
        sealer.seal(KIND_DATA, 1, &body, &mut datagram).unwrap();
        assert_eq!(&f[HEADER_AT..], datagram.as_slice());
        let mut opened = Vec::new();
        let o = mpsched_tunnel::seal::Opener::clear()
            .open(&f[HEADER_AT..], &mut opened)
            .unwrap();
        assert_eq!((o.kind, o.path, o.packet_number), (KIND_DATA, 1, 0));
        let (h, rest) = mpsched_tunnel::wire::DataHeader::decode(&opened).unwrap();
        assert_eq!((h.path_seq, h.tunnel_seq, h.sent_us), (5, 9, 123));
        assert_eq!(rest, inner);
    }

    #[test]
    fn an_acknowledgement_reads_as_the_tunnel_encodes_it() {
        let a = mpsched_tunnel::wire::Ack {
            highest_seq: 10,
            received: 8,
            echo_us: 1000,
            ack_delay_us: 50,
        };
        let mut b = Vec::new();
        a.encode(&mut b);
        let ours = AckBody::parse(&b).unwrap();
        assert_eq!(ours.to_bytes().as_slice(), b.as_slice());
        assert_eq!(
            (ours.highest_seq, ours.received, ours.echo_us, ours.ack_delay_us),
            (10, 8, 1000, 50)
        );
        assert_eq!(rtt_us(1300, &ours), 250);
        assert_eq!(rtt_us(1020, &ours), 0, "more delay than round trip: 0");
        assert_eq!(
            rtt_us(
                100,
                &AckBody {
                    echo_us: u32::MAX - 99,
                    ..ours
                }
            ),
            150,
            "across the wrap"
        );
        let h = Header::parse(
            &Header {
                kind: 2,
                path: 3,
                epoch: 1,
                packet_number: 2,
            }
            .to_bytes(),
        )
        .unwrap();
        assert_eq!((h.kind, h.path, h.epoch, h.packet_number), (2, 3, 1, 2));
        let mut bad = h.to_bytes();
        bad[3] = 1;
        assert!(Header::parse(&bad).is_none(), "reserved must be 0");
        assert!(Header::parse(&bad[..19]).is_none());
    }
}
