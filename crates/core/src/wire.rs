//! Ethernet / IPv4 / UDP frames: parsing that cannot panic, and emitting.
//!
//! The parser checks each header's length once before reading it, as smoltcp's `wire` module
//! does, and reports malformed input as a [`ParseError`] rather than panicking. The emitter
//! writes real headers (with checksums) so that pcap files open cleanly in Wireshark. Custom
//! headers ([`crate::headers`]) sit between Ethernet and IPv4 as a chain of shims, walked at
//! most [`MAX_HEADERS`] deep ([`parse_frame_with_headers`], [`insert_shims`]).

use crate::feedback::{FEEDBACK_MAGIC, FEEDBACK_PAYLOAD_BYTES};
use crate::headers::{Header, HeaderStack, ETHERTYPE_SHIM, MAX_HEADERS, SHIM_HDR_BYTES};
use crate::mptcp::{find_in_tcp_options, MptcpOption};
use crate::packet::{proto, Ecn, FeedbackInfo, HeaderExt, Ipv4, PacketMeta};

/// Ethernet header length.
pub const ETH_HDR_BYTES: usize = 14;
/// Minimal IPv4 header length (IHL = 5).
pub const IPV4_MIN_HDR_BYTES: usize = 20;
/// UDP header length.
pub const UDP_HDR_BYTES: usize = 8;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;

/// Why a frame could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// Shorter than an Ethernet header.
    Runt,
    /// EtherType is not IPv4.
    NotIpv4,
    /// Shorter than the IPv4 header it announces.
    TruncatedIpv4,
    /// IPv4 version field is not 4.
    BadVersion,
    /// IHL below 5.
    BadIhl,
    /// The IPv4 total length is shorter than the header or longer than the frame.
    BadTotalLength,
    /// A shim is cut short by the end of the frame.
    TruncatedShim,
    /// A shim's length is 0 or shorter than its kind's body.
    BadShimLength,
    /// A shim's kind names no known header.
    UnknownShimKind(u8),
    /// More than [`MAX_HEADERS`] shims in a row.
    TooManyShims,
}

/// Read a big-endian u16 at `at`; callers have checked the bounds.
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Read a big-endian u32 at `at`; callers have checked the bounds.
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Parse an Ethernet frame carrying IPv4.
///
/// IPv4 options are skipped. Transport ports are read for TCP and UDP when the L4 header is
/// present in full and the packet is not a non-first fragment; otherwise they are 0. A UDP
/// packet to `feedback_port` whose payload starts with the feedback magic is parsed as a
/// feedback packet. `ingress_port` is left 0 for the caller to set.
pub fn parse_frame(frame: &[u8], feedback_port: u16) -> Result<PacketMeta, ParseError> {
    parse_frame_with_mptcp(frame, feedback_port).map(|(meta, _)| meta)
}

/// [`parse_frame`], and the segment's MPTCP option when it is a TCP segment with a well-formed
/// one (a malformed MPTCP option is ignored, as Linux ignores it: the packet's metadata then
/// says no MPTCP option).
pub fn parse_frame_with_mptcp(
    frame: &[u8],
    feedback_port: u16,
) -> Result<(PacketMeta, Option<MptcpOption>), ParseError> {
    parse_frame_with_headers(frame, feedback_port).map(|(meta, option, _)| (meta, option))
}

/// Walk the shim chain that starts after the Ethernet header when its EtherType is
/// [`ETHERTYPE_SHIM`]: the headers (top first on the wire, pushed so that the stack's top is
/// the first shim) and the offset of the IPv4 header. At most [`MAX_HEADERS`] shims; each is
/// checked against the frame's end before its body is read, as an eBPF program must.
pub fn parse_shims(frame: &[u8]) -> Result<(HeaderStack, usize), ParseError> {
    if frame.len() < ETH_HDR_BYTES {
        return Err(ParseError::Runt);
    }
    let mut ethertype = be16(frame, 12);
    let mut at = ETH_HDR_BYTES;
    let mut wire_order = [None; MAX_HEADERS];
    let mut n = 0;
    while ethertype == ETHERTYPE_SHIM {
        if n == MAX_HEADERS {
            return Err(ParseError::TooManyShims);
        }
        let Some(hdr) = frame.get(at..at + SHIM_HDR_BYTES) else {
            return Err(ParseError::TruncatedShim);
        };
        let words = usize::from(hdr[3]);
        if words == 0 {
            return Err(ParseError::BadShimLength);
        }
        let Some(body) = frame.get(at + SHIM_HDR_BYTES..at + 4 * words) else {
            return Err(ParseError::TruncatedShim);
        };
        wire_order[n] = Some(Header::parse(hdr[2], body).map_err(|e| match e {
            crate::headers::ShimError::UnknownKind(k) => ParseError::UnknownShimKind(k),
            crate::headers::ShimError::ShortBody => ParseError::BadShimLength,
        })?);
        n += 1;
        ethertype = be16(hdr, 0);
        at += 4 * words;
    }
    if ethertype != ETHERTYPE_IPV4 {
        return Err(ParseError::NotIpv4);
    }
    let mut stack = HeaderStack::new();
    for h in wire_order[..n].iter().rev().flatten() {
        // n <= MAX_HEADERS: the push cannot fail.
        let _ = stack.push(*h);
    }
    Ok((stack, at))
}

/// [`parse_frame_with_mptcp`], and the custom headers between Ethernet and IPv4 (an empty stack
/// when there are none; a malformed chain is an error). `wire_len_bytes` counts the shims.
pub fn parse_frame_with_headers(
    frame: &[u8],
    feedback_port: u16,
) -> Result<(PacketMeta, Option<MptcpOption>, HeaderStack), ParseError> {
    let (stack, ip_at) = parse_shims(frame)?;
    let ip = &frame[ip_at..];
    if ip.len() < IPV4_MIN_HDR_BYTES {
        return Err(ParseError::TruncatedIpv4);
    }
    if ip[0] >> 4 != 4 {
        return Err(ParseError::BadVersion);
    }
    let ihl_bytes = usize::from(ip[0] & 0x0f) * 4;
    if ihl_bytes < IPV4_MIN_HDR_BYTES {
        return Err(ParseError::BadIhl);
    }
    if ip.len() < ihl_bytes {
        return Err(ParseError::TruncatedIpv4);
    }
    let total_len = usize::from(be16(ip, 2));
    if total_len < ihl_bytes || total_len > ip.len() {
        return Err(ParseError::BadTotalLength);
    }
    let tos = ip[1];
    let frag = be16(ip, 6);
    let frag_offset = frag & 0x1fff;
    let l4 = &ip[ihl_bytes..total_len];
    let protocol = ip[9];
    let (mut src_port, mut dst_port) = (0, 0);
    let mut ext = HeaderExt::None;
    let mut mptcp = None;
    if frag_offset == 0 && (protocol == proto::UDP || protocol == proto::TCP) && l4.len() >= 4 {
        let full_hdr = if protocol == proto::UDP { UDP_HDR_BYTES } else { 20 };
        if l4.len() >= full_hdr {
            src_port = be16(l4, 0);
            dst_port = be16(l4, 2);
            if protocol == proto::TCP {
                mptcp = tcp_mptcp_option(l4);
                ext = HeaderExt::Tcp {
                    flags: l4[13],
                    mptcp: mptcp.map(|o| o.kind()),
                };
            }
        }
    }
    if protocol == proto::UDP && dst_port == feedback_port && frag_offset == 0 {
        let payload = &l4[UDP_HDR_BYTES.min(l4.len())..];
        if payload.len() >= FEEDBACK_PAYLOAD_BYTES && be32(payload, 0) == FEEDBACK_MAGIC {
            ext = HeaderExt::Feedback(FeedbackInfo {
                group: payload[4],
                path: payload[5],
            });
        }
    }
    let meta = PacketMeta {
        src_ip: be32(ip, 12),
        dst_ip: be32(ip, 16),
        proto: protocol,
        src_port,
        dst_port,
        dscp: tos >> 2,
        ecn: Ecn::from_bits(tos),
        ttl: ip[8],
        wire_len_bytes: (ip_at + total_len) as u32,
        ingress_port: 0,
        ext,
    };
    Ok((meta, mptcp, stack))
}

/// Insert `stack`'s shims after the Ethernet header of `frame` (an Ethernet frame whose
/// EtherType is the innermost protocol's, as [`emit_udp_frame`] and [`emit_tcp_frame`] write
/// them): the frame's EtherType becomes [`ETHERTYPE_SHIM`] and the last shim names the old one.
/// Nothing changes when the stack is empty or the frame is shorter than an Ethernet header.
pub fn insert_shims(frame: &mut Vec<u8>, stack: &HeaderStack) {
    if stack.is_empty() || frame.len() < ETH_HDR_BYTES {
        return;
    }
    let inner = be16(frame, 12);
    let mut shims = Vec::with_capacity(stack.wire_bytes() as usize);
    stack.write_shims(inner, &mut shims);
    frame[12..14].copy_from_slice(&ETHERTYPE_SHIM.to_be_bytes());
    frame.splice(ETH_HDR_BYTES..ETH_HDR_BYTES, shims);
}

/// The MPTCP option of a TCP segment (`l4` starts at its header), if well formed.
fn tcp_mptcp_option(l4: &[u8]) -> Option<MptcpOption> {
    let header_bytes = usize::from(l4[12] >> 4) * 4;
    let options = l4.get(20..header_bytes)?;
    find_in_tcp_options(options)?.ok()
}

/// The Internet checksum (RFC 1071) of `data`, folded, starting from `initial`.
pub fn internet_checksum(data: &[u8], initial: u32) -> u16 {
    let mut sum = initial;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A MAC address derived from a node number and port, locally administered.
pub fn mac_for(node: u32, port: u16) -> [u8; 6] {
    let n = node.to_be_bytes();
    let p = port.to_be_bytes();
    [0x02, n[2], n[3], 0x00, p[0], p[1]]
}

/// Write an Ethernet + IPv4 + UDP frame for `meta` with `payload` into `out` (cleared first).
///
/// The IPv4 header carries `meta`'s TOS (DSCP and ECN), TTL, addresses and `ip_id`; the UDP
/// header carries the ports and a real checksum. The frame is `ETH + 20 + 8 + payload.len()`
/// bytes; `meta.wire_len_bytes` is not consulted.
pub fn emit_udp_frame(
    meta: &PacketMeta,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    ip_id: u16,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let udp_len = (UDP_HDR_BYTES + payload.len()) as u16;
    let total_len = IPV4_MIN_HDR_BYTES as u16 + udp_len;
    let ip_start = out.len();
    out.push(0x45);
    out.push((meta.dscp << 2) | meta.ecn.bits());
    out.extend_from_slice(&total_len.to_be_bytes());
    out.extend_from_slice(&ip_id.to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes()); // DF, as Linux sets on UDP with PMTU discovery
    out.push(meta.ttl);
    out.push(meta.proto);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&meta.src_ip.to_be_bytes());
    out.extend_from_slice(&meta.dst_ip.to_be_bytes());
    let csum = internet_checksum(&out[ip_start..ip_start + IPV4_MIN_HDR_BYTES], 0);
    out[ip_start + 10..ip_start + 12].copy_from_slice(&csum.to_be_bytes());

    let udp_start = out.len();
    out.extend_from_slice(&meta.src_port.to_be_bytes());
    out.extend_from_slice(&meta.dst_port.to_be_bytes());
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
    let pseudo = pseudo_header_sum(meta.src_ip, meta.dst_ip, meta.proto, udp_len);
    let mut ucsum = internet_checksum(&out[udp_start..], pseudo);
    if ucsum == 0 {
        ucsum = 0xffff; // RFC 768: a computed zero is sent as all ones
    }
    out[udp_start + 6..udp_start + 8].copy_from_slice(&ucsum.to_be_bytes());
}

/// TCP header fields for [`emit_tcp_frame`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpFields {
    /// Sequence number (the low 32 bits of the byte offset).
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags byte: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, URG 0x20, ECE 0x40, CWR 0x80.
    pub flags: u8,
    /// Window field (already scaled down by the window-scale shift).
    pub window: u16,
    /// Timestamp value (option 8).
    pub tsval: u32,
    /// Timestamp echo reply.
    pub tsecr: u32,
    /// An MPTCP option, written after the timestamps (padded with no-operations to a multiple
    /// of four bytes).
    pub mptcp: Option<MptcpOption>,
}

/// TCP flag bits.
pub mod tcp_flags {
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
    /// ECN-Echo.
    pub const ECE: u8 = 0x40;
    /// Congestion Window Reduced.
    pub const CWR: u8 = 0x80;
}

/// Write an Ethernet + IPv4 + TCP frame (TCP header of 32 bytes: NOP, NOP, timestamps, as Linux
/// sends them; then the MPTCP option, if any) with `payload_len` zero payload bytes into `out`,
/// with real IPv4 and TCP checksums.
pub fn emit_tcp_frame(
    meta: &PacketMeta,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    ip_id: u16,
    tcp: &TcpFields,
    payload_len: usize,
    out: &mut Vec<u8>,
) {
    let mptcp_bytes = tcp.mptcp.map_or(0, |o| o.len_bytes().div_ceil(4) * 4);
    let tcp_hdr_bytes: usize = 32 + mptcp_bytes;
    out.clear();
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let l4_len = (tcp_hdr_bytes + payload_len) as u16;
    let ip_start = out.len();
    out.push(0x45);
    out.push((meta.dscp << 2) | meta.ecn.bits());
    out.extend_from_slice(&(IPV4_MIN_HDR_BYTES as u16 + l4_len).to_be_bytes());
    out.extend_from_slice(&ip_id.to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes());
    out.push(meta.ttl);
    out.push(crate::packet::proto::TCP);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&meta.src_ip.to_be_bytes());
    out.extend_from_slice(&meta.dst_ip.to_be_bytes());
    let csum = internet_checksum(&out[ip_start..ip_start + IPV4_MIN_HDR_BYTES], 0);
    out[ip_start + 10..ip_start + 12].copy_from_slice(&csum.to_be_bytes());
    let t = out.len();
    out.extend_from_slice(&meta.src_port.to_be_bytes());
    out.extend_from_slice(&meta.dst_port.to_be_bytes());
    out.extend_from_slice(&tcp.seq.to_be_bytes());
    out.extend_from_slice(&tcp.ack.to_be_bytes());
    out.push(((tcp_hdr_bytes / 4) as u8) << 4);
    out.push(tcp.flags);
    out.extend_from_slice(&tcp.window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    out.extend_from_slice(&[1, 1, 8, 10]);
    out.extend_from_slice(&tcp.tsval.to_be_bytes());
    out.extend_from_slice(&tcp.tsecr.to_be_bytes());
    if let Some(o) = tcp.mptcp {
        let end = out.len() + mptcp_bytes;
        o.encode(out);
        out.resize(end, 1); // no-operation padding
    }
    out.resize(out.len() + payload_len, 0);
    let pseudo = pseudo_header_sum(meta.src_ip, meta.dst_ip, crate::packet::proto::TCP, l4_len);
    let c = internet_checksum(&out[t..], pseudo);
    out[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
}

fn pseudo_header_sum(src: Ipv4, dst: Ipv4, protocol: u8, l4_len: u16) -> u32 {
    (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + u32::from(protocol) + u32::from(l4_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feedback::feedback_payload;

    #[test]
    fn a_tcp_frame_has_valid_checksums_and_parses() {
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0002, 40000, 5201, 0);
        m.proto = crate::packet::proto::TCP;
        let mut out = Vec::new();
        let f = TcpFields {
            seq: 1000,
            ack: 1,
            flags: tcp_flags::ACK | tcp_flags::PSH,
            window: 500,
            tsval: 7,
            tsecr: 3,
            mptcp: None,
        };
        emit_tcp_frame(&m, mac_for(1, 0), mac_for(2, 0), 9, &f, 100, &mut out);
        assert_eq!(out.len(), 14 + 20 + 32 + 100);
        assert_eq!(internet_checksum(&out[14..34], 0), 0, "IPv4 header checksum");
        let pseudo = pseudo_header_sum(m.src_ip, m.dst_ip, 6, 132);
        assert_eq!(internet_checksum(&out[34..], pseudo), 0, "TCP checksum");
        let p = parse_frame(&out, 0).unwrap();
        assert_eq!(
            (p.proto, p.src_port, p.dst_port, p.wire_len_bytes),
            (6, 40000, 5201, 166)
        );
        assert_eq!(
            p.tcp_flags(),
            Some(tcp_flags::ACK | tcp_flags::PSH),
            "the flags ride in the extension"
        );
        assert_eq!(p.feedback(), None);
    }

    #[test]
    fn an_mptcp_option_is_written_padded_and_parsed_back_for_a_program() {
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0002, 40001, 5201, 0);
        m.proto = crate::packet::proto::TCP;
        let join = MptcpOption::JoinSyn {
            backup: false,
            address_id: 1,
            receiver_token: 0xfeed_f00d,
            sender_nonce: 42,
        };
        let f = TcpFields {
            seq: 1,
            flags: 0x02, // SYN
            window: 64240,
            mptcp: Some(join),
            ..TcpFields::default()
        };
        let mut out = Vec::new();
        emit_tcp_frame(&m, mac_for(1, 0), mac_for(2, 0), 1, &f, 0, &mut out);
        assert_eq!(out.len(), 14 + 20 + 32 + 12, "12-byte MP_JOIN: no padding");
        let pseudo = pseudo_header_sum(m.src_ip, m.dst_ip, proto::TCP, 44);
        assert_eq!(internet_checksum(&out[34..], pseudo), 0, "TCP checksum");
        let (meta, opt) = parse_frame_with_mptcp(&out, 50_000).unwrap();
        assert_eq!(meta.mptcp_kind(), Some(crate::mptcp::MptcpKind::Join));
        assert_eq!(meta.tcp_flags(), Some(0x02));
        // The runtime hands the option to the program through its context.
        let mut ctx = crate::program::Ctx::new();
        ctx.set_mptcp_option(opt);
        match ctx.mptcp_option() {
            Some(MptcpOption::JoinSyn { receiver_token, .. }) => assert_eq!(*receiver_token, 0xfeed_f00d),
            other => panic!("{other:?}"),
        }
        ctx.reset(0);
        assert_eq!(ctx.mptcp_option(), None, "a reset context holds no packet's option");

        // A 22-byte MP_CAPABLE (first data) is padded with two no-operations.
        let cap = MptcpOption::Capable {
            version: 1,
            flags: 0x01,
            sender_key: Some(1),
            receiver_key: Some(2),
            data: Some((1448, None)),
        };
        let f = TcpFields { mptcp: Some(cap), ..f };
        emit_tcp_frame(&m, mac_for(1, 0), mac_for(2, 0), 1, &f, 1448, &mut out);
        assert_eq!(out.len(), 14 + 20 + 32 + 24 + 1448);
        assert_eq!(&out[14 + 20 + 32 + 22..14 + 20 + 32 + 24], &[1, 1]);
        assert_eq!(parse_frame_with_mptcp(&out, 50_000).unwrap().1, Some(cap));
        // A malformed MPTCP option is ignored: the frame still parses, with no option.
        out[14 + 20 + 32 + 1] = 21;
        let (meta, opt) = parse_frame_with_mptcp(&out, 50_000).unwrap();
        assert_eq!((meta.mptcp_kind(), opt), (None, None));
    }

    fn frame(meta: &PacketMeta, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        emit_udp_frame(meta, mac_for(1, 0), mac_for(2, 0), 7, payload, &mut out);
        out
    }

    #[test]
    fn emitted_udp_frame_parses_back_to_the_same_metadata() {
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 5001, 5201, 0);
        m.ecn = Ecn::Ect0;
        m.dscp = 10;
        let f = frame(&m, &[0u8; 100]);
        let p = parse_frame(&f, 50_000).unwrap();
        assert_eq!(p.src_ip, m.src_ip);
        assert_eq!(p.dst_ip, m.dst_ip);
        assert_eq!((p.src_port, p.dst_port), (5001, 5201));
        assert_eq!(p.ecn, Ecn::Ect0);
        assert_eq!(p.dscp, 10);
        assert_eq!(p.wire_len_bytes as usize, f.len());
        assert_eq!(p.feedback(), None);
    }

    #[test]
    fn ipv4_header_checksum_verifies_to_zero() {
        let m = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 1, 2, 0);
        let f = frame(&m, b"hello");
        assert_eq!(internet_checksum(&f[14..34], 0), 0);
    }

    #[test]
    fn feedback_payload_is_recognised_only_on_the_feedback_port() {
        let m = PacketMeta::udp(1, 2, 50_000, 50_000, 0);
        let f = frame(&m, &feedback_payload(3, 1));
        assert_eq!(
            parse_frame(&f, 50_000).unwrap().feedback(),
            Some(FeedbackInfo { group: 3, path: 1 })
        );
        assert_eq!(parse_frame(&f, 40_000).unwrap().feedback(), None);
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        let m = PacketMeta::udp(1, 2, 3, 4, 0);
        let good = frame(&m, &[0u8; 20]);
        assert_eq!(parse_frame(&good[..10], 0), Err(ParseError::Runt));
        assert_eq!(parse_frame(&good[..20], 0), Err(ParseError::TruncatedIpv4));
        let mut arp = good.clone();
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse_frame(&arp, 0), Err(ParseError::NotIpv4));
        let mut ihl = good.clone();
        ihl[14] = 0x44;
        assert_eq!(parse_frame(&ihl, 0), Err(ParseError::BadIhl));
        let mut v6 = good.clone();
        v6[14] = 0x65;
        assert_eq!(parse_frame(&v6, 0), Err(ParseError::BadVersion));
        let mut len = good.clone();
        len[16..18].copy_from_slice(&9000u16.to_be_bytes());
        assert_eq!(parse_frame(&len, 0), Err(ParseError::BadTotalLength));
    }

    #[test]
    fn non_first_fragments_carry_no_ports() {
        let m = PacketMeta::udp(1, 2, 3, 4, 0);
        let mut f = frame(&m, &[0u8; 20]);
        f[20..22].copy_from_slice(&0x0010u16.to_be_bytes());
        let p = parse_frame(&f, 0).unwrap();
        assert_eq!((p.src_port, p.dst_port), (0, 0));
    }

    #[test]
    fn ipv4_options_are_skipped() {
        let m = PacketMeta::udp(1, 2, 3, 4, 0);
        let f = frame(&m, &[0u8; 8]);
        // Rebuild with IHL = 6 and a 4-byte NOP option.
        let mut g = f[..14].to_vec();
        let mut ip = f[14..34].to_vec();
        ip[0] = 0x46;
        let total = u16::from_be_bytes([ip[2], ip[3]]) + 4;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        g.extend_from_slice(&ip);
        g.extend_from_slice(&[1, 1, 1, 1]);
        g.extend_from_slice(&f[34..]);
        let p = parse_frame(&g, 0).unwrap();
        assert_eq!((p.src_port, p.dst_port), (3, 4));
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = parse_frame(&bytes, 50_000);
        }
    }
}
