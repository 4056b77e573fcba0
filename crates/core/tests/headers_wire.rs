//! One frame with three extension headers at once, through the wire emitter and parser: an
//! MPTCP option in the TCP header, a routing header and an INT header as shims between
//! Ethernet and IPv4. Written, it parses back equal; cut short or malformed in its shim chain,
//! it is refused with the error that names why.

use mpsched_core::headers::{Header, HeaderStack, IntHeader, RoutingHeader, ETHERTYPE_SHIM, MAX_HEADERS};
use mpsched_core::mptcp::{DssMapping, MptcpOption};
use mpsched_core::packet::{proto, Ecn, PacketMeta};
use mpsched_core::wire::{
    emit_tcp_frame, insert_shims, mac_for, parse_frame_with_headers, ParseError, TcpFields, ETH_HDR_BYTES,
};

fn dss() -> MptcpOption {
    MptcpOption::Dss {
        data_ack: Some((77, false)),
        mapping: Some(DssMapping {
            data_seq: 1000,
            dsn64: false,
            subflow_seq: 1,
            len: 1448,
            checksum: None,
        }),
        data_fin: false,
    }
}

fn stack() -> HeaderStack {
    let mut s = HeaderStack::new();
    s.push(Header::Int(IntHeader {
        switch_id: 3,
        queue_id: 1,
        sojourn_ns: 12_345,
        depth_bytes: 6_000,
    }))
    .unwrap();
    s.push(Header::Routing(RoutingHeader {
        conn_id: 0xfeed_beef_0000_0001,
        path: 1,
        hops: 2,
    }))
    .unwrap();
    s
}

/// A TCP segment with a DSS option and `stack`'s shims, and the metadata it was written from.
fn frame(stack: &HeaderStack) -> (Vec<u8>, PacketMeta) {
    let mut meta = PacketMeta::udp(0x0a00_0001, 0x0a00_0002, 40_000, 5201, 0);
    meta.proto = proto::TCP;
    meta.ecn = Ecn::Ect0;
    let fields = TcpFields {
        seq: 1,
        ack: 1,
        flags: 0x18,
        window: 100,
        tsval: 5,
        tsecr: 0,
        mptcp: Some(dss()),
    };
    let mut out = Vec::new();
    emit_tcp_frame(&meta, mac_for(1, 0), mac_for(2, 0), 7, &fields, 100, &mut out);
    insert_shims(&mut out, stack);
    (out, meta)
}

#[test]
fn a_segment_with_an_mptcp_option_a_routing_and_an_int_header_parses_back_equal() {
    let s = stack();
    let (f, meta) = frame(&s);
    assert_eq!(u16::from_be_bytes([f[12], f[13]]), ETHERTYPE_SHIM);
    let (got, option, headers) = parse_frame_with_headers(&f, 0).unwrap();
    assert_eq!(option, Some(dss()));
    assert_eq!(headers, s);
    assert_eq!(headers.routing().unwrap().conn_id, 0xfeed_beef_0000_0001);
    assert_eq!(headers.int().unwrap().sojourn_ns, 12_345);
    assert_eq!(
        (got.src_ip, got.dst_ip, got.dst_port, got.ecn),
        (meta.src_ip, meta.dst_ip, 5201, Ecn::Ect0)
    );
    assert_eq!(got.mptcp_kind(), Some(dss().kind()));
    assert_eq!(
        got.wire_len_bytes as usize,
        f.len(),
        "the shims count in the wire length"
    );
    // Without shims the same segment is 36 bytes shorter: 16 + 20.
    let (plain, _) = frame(&HeaderStack::new());
    assert_eq!(f.len() - plain.len(), s.wire_bytes() as usize);
    assert_eq!(s.wire_bytes(), 36);
    assert!(parse_frame_with_headers(&plain, 0).unwrap().2.is_empty());
}

#[test]
fn a_shim_chain_cut_short_is_refused() {
    let s = stack();
    let (f, _) = frame(&s);
    let shims_end = ETH_HDR_BYTES + s.wire_bytes() as usize;
    for cut in ETH_HDR_BYTES..shims_end {
        assert_eq!(
            parse_frame_with_headers(&f[..cut], 0).map(|_| ()),
            Err(ParseError::TruncatedShim),
            "cut at {cut}"
        );
    }
    assert_eq!(
        parse_frame_with_headers(&f[..shims_end], 0).map(|_| ()),
        Err(ParseError::TruncatedIpv4)
    );
}

#[test]
fn malformed_shim_chains_are_refused_by_name() {
    let s = stack();
    let (f, _) = frame(&s);
    // The first shim (the routing header) starts at 14: next (2), kind (1), length (1).
    let mut zero = f.clone();
    zero[ETH_HDR_BYTES + 3] = 0;
    assert_eq!(
        parse_frame_with_headers(&zero, 0).map(|_| ()),
        Err(ParseError::BadShimLength)
    );
    let mut short = f.clone();
    short[ETH_HDR_BYTES + 3] = 2; // 8 bytes: shorter than a routing body
    assert_eq!(
        parse_frame_with_headers(&short, 0).map(|_| ()),
        Err(ParseError::BadShimLength)
    );
    let mut unknown = f.clone();
    unknown[ETH_HDR_BYTES + 2] = 200;
    assert_eq!(
        parse_frame_with_headers(&unknown, 0).map(|_| ()),
        Err(ParseError::UnknownShimKind(200))
    );
    let mut bad_next = f.clone();
    let second = ETH_HDR_BYTES + 16;
    bad_next[second..second + 2].copy_from_slice(&0x86ddu16.to_be_bytes()); // IPv6 after the INT shim
    assert_eq!(
        parse_frame_with_headers(&bad_next, 0).map(|_| ()),
        Err(ParseError::NotIpv4)
    );
    // A chain longer than the bound: every shim says another follows.
    let mut many = HeaderStack::new();
    for _ in 0..MAX_HEADERS {
        many.push(s.routing().map(|r| Header::Routing(*r)).unwrap()).unwrap();
    }
    let (mut long, _) = frame(&many);
    let last = ETH_HDR_BYTES + 16 * (MAX_HEADERS - 1);
    long[last..last + 2].copy_from_slice(&ETHERTYPE_SHIM.to_be_bytes());
    assert_eq!(
        parse_frame_with_headers(&long, 0).map(|_| ()),
        Err(ParseError::TooManyShims)
    );
    assert_eq!(
        parse_frame_with_headers(&frame(&many).0, 0).unwrap().2,
        many,
        "the bound itself parses"
    );
}
