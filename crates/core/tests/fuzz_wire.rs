//! Fuzzing the wire parser with MPTCP options, structure-aware: TCP frames carrying every form
//! of MP_CAPABLE, MP_JOIN and DSS with random fields are written by `emit_tcp_frame` and must
//! parse back to what was written; then the same frames, mutated where a parser trips (the
//! option's length and subtype bytes, the TCP data offset, the IPv4 header length and total
//! length, truncation, random bytes), must parse to a result or an error, never a panic, and an
//! option the parser accepts must read the same again once written out.
//!
//! In the test suite it runs for `FUZZ_SECONDS` (default 3); `FUZZ_SEED` picks the sequence. A
//! failing frame is printed in hex with its seed and run.

use mpsched_core::headers::{Header, HeaderStack, IntHeader, RoutingHeader, MAX_HEADERS};
use mpsched_core::mptcp::{find_in_tcp_options, DssMapping, MptcpOption};
use mpsched_core::packet::{proto, Ecn, PacketMeta};
use mpsched_core::wire::{
    emit_tcp_frame, insert_shims, mac_for, parse_frame_with_headers, parse_frame_with_mptcp, TcpFields,
};
use mpsched_testkit::fuzz::Fuzz;

/// Where the TCP header starts in the frames `emit_tcp_frame` writes (Ethernet 14, IPv4 20).
const TCP_AT: usize = 34;
/// Where the MPTCP option starts (after NOP, NOP and the timestamps: 12 bytes of options).
const MPTCP_AT: usize = TCP_AT + 32;

/// A well-formed MPTCP option of a random form with random fields.
fn option(r: &mut Fuzz) -> MptcpOption {
    match r.below(6) {
        0 => {
            // MP_CAPABLE's forms in order: no key, the sender's, both, both and data.
            let form = r.below(4);
            MptcpOption::Capable {
                version: r.below(2) as u8,
                flags: r.draw() as u8,
                sender_key: (form >= 1).then(|| r.draw()),
                receiver_key: (form >= 2).then(|| r.draw()),
                data: (form == 3).then(|| (r.draw() as u16, r.maybe(|r| r.draw() as u16))),
            }
        }
        1 => MptcpOption::JoinSyn {
            backup: r.flip(),
            address_id: r.draw() as u8,
            receiver_token: r.draw() as u32,
            sender_nonce: r.draw() as u32,
        },
        2 => MptcpOption::JoinSynAck {
            backup: r.flip(),
            address_id: r.draw() as u8,
            truncated_hmac: r.draw(),
            sender_nonce: r.draw() as u32,
        },
        3 => {
            let mut hmac = [0u8; 20];
            hmac.iter_mut().for_each(|b| *b = r.draw() as u8);
            MptcpOption::JoinAck { hmac }
        }
        _ => {
            let ack64 = r.flip();
            let dsn64 = r.flip();
            MptcpOption::Dss {
                data_ack: r.maybe(|r| (if ack64 { r.draw() } else { r.draw() & 0xffff_ffff }, ack64)),
                mapping: r.maybe(|r| DssMapping {
                    data_seq: if dsn64 { r.draw() } else { r.draw() & 0xffff_ffff },
                    dsn64,
                    subflow_seq: r.draw() as u32,
                    len: r.draw() as u16,
                    checksum: r.maybe(|r| r.draw() as u16),
                }),
                data_fin: r.flip(),
            }
        }
    }
}

/// A TCP frame carrying `opt`, and the metadata it was written from.
fn frame(r: &mut Fuzz, opt: MptcpOption) -> (Vec<u8>, PacketMeta) {
    let mut meta = PacketMeta::udp(r.draw() as u32, r.draw() as u32, r.draw() as u16, r.draw() as u16, 0);
    meta.proto = proto::TCP;
    meta.ecn = Ecn::from_bits(r.draw() as u8);
    meta.dscp = r.below(64) as u8;
    meta.ttl = r.draw() as u8;
    let fields = TcpFields {
        seq: r.draw() as u32,
        ack: r.draw() as u32,
        flags: r.draw() as u8,
        window: r.draw() as u16,
        tsval: r.draw() as u32,
        tsecr: r.draw() as u32,
        mptcp: Some(opt),
    };
    let mut out = Vec::new();
    let payload = r.below(64);
    emit_tcp_frame(
        &meta,
        mac_for(1, 0),
        mac_for(2, 0),
        r.draw() as u16,
        &fields,
        payload,
        &mut out,
    );
    (out, meta)
}

/// The frame changed where parsers trip.
fn mutate(r: &mut Fuzz, f: &mut Vec<u8>) {
    for _ in 0..1 + r.below(3) {
        let n = f.len();
        match r.below(8) {
            0 => f[MPTCP_AT + 1] = r.draw() as u8, // option length
            1 => f[MPTCP_AT + 2] = (r.draw() as u8 & 0x0f) | (f[MPTCP_AT + 2] & 0xf0), // flags
            2 => f[MPTCP_AT + 2] = (r.below(16) as u8) << 4 | (f[MPTCP_AT + 2] & 0x0f), // subtype
            3 => f[TCP_AT + 12] = (r.below(16) as u8) << 4, // TCP data offset
            4 => f[14] = 0x40 | r.below(16) as u8, // IPv4 header length
            5 => {
                let len = r.draw() as u16;
                f[16..18].copy_from_slice(&len.to_be_bytes()); // IPv4 total length
            }
            6 => f.truncate(r.below(n + 1)),
            _ => {
                if n > 0 {
                    let i = r.below(n);
                    f[i] = r.draw() as u8;
                }
            }
        }
        if f.len() <= MPTCP_AT + 2 {
            return;
        }
    }
}

#[test]
fn frames_with_every_mptcp_option_parse_back_and_mutated_ones_never_panic() {
    let mut r = Fuzz::from_env(3, 0x3a7e);
    let (seconds, seed) = (r.seconds, r.seed);
    let (mut runs, mut still_mptcp) = (0u64, 0u64);
    while r.going() {
        let opt = option(&mut r);
        let (mut f, meta) = frame(&mut r, opt);
        let hex = |f: &[u8]| f.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let (got, parsed) = parse_frame_with_mptcp(&f, 0).unwrap_or_else(|e| {
            panic!(
                "a written frame is refused ({e:?}), seed {seed} run {runs}: {}",
                hex(&f)
            )
        });
        assert_eq!(parsed, Some(opt), "seed {seed} run {runs}: {}", hex(&f));
        assert_eq!(
            (
                got.src_ip,
                got.dst_ip,
                got.src_port,
                got.dst_port,
                got.ecn,
                got.dscp,
                got.ttl
            ),
            (
                meta.src_ip,
                meta.dst_ip,
                meta.src_port,
                meta.dst_port,
                meta.ecn,
                meta.dscp,
                meta.ttl
            ),
            "seed {seed} run {runs}"
        );
        assert_eq!(got.wire_len_bytes as usize, f.len());
        mutate(&mut r, &mut f);
        let outcome = std::panic::catch_unwind(|| parse_frame_with_mptcp(&f, 0));
        let Ok(outcome) = outcome else {
            panic!(
                "the parser panicked on a mutated frame, seed {seed} run {runs}: {}",
                hex(&f)
            );
        };
        if let Ok((_, Some(o))) = outcome {
            // What the parser accepts is a well-formed option: written out, it reads the same.
            let mut bytes = Vec::new();
            o.encode(&mut bytes);
            assert_eq!(
                find_in_tcp_options(&bytes),
                Some(Ok(o)),
                "seed {seed} run {runs}: {}",
                hex(&f)
            );
            still_mptcp += 1;
        }
        runs += 1;
    }
    println!(
        "fuzz_wire: {runs} frames in {seconds} s ({still_mptcp} still carried an option after mutation), seed {seed}"
    );
    assert!(runs > 1000, "only {runs} frames in {seconds} s");
}

/// A random stack of custom headers.
fn stack(r: &mut Fuzz) -> HeaderStack {
    let mut s = HeaderStack::new();
    for _ in 0..1 + r.below(MAX_HEADERS) {
        let h = if r.flip() {
            Header::Routing(RoutingHeader {
                conn_id: r.draw(),
                path: r.draw() as u16,
                hops: r.draw() as u8,
            })
        } else {
            Header::Int(IntHeader {
                switch_id: r.draw() as u32,
                queue_id: r.draw() as u8,
                sojourn_ns: r.draw() as u32,
                depth_bytes: r.draw() as u32,
            })
        };
        s.push(h).unwrap();
    }
    s
}

#[test]
fn frames_with_shim_chains_parse_back_and_mutated_chains_never_panic() {
    let mut r = Fuzz::from_env(1, 0x5e1f);
    let seed = r.seed;
    let mut runs = 0u64;
    while r.going() {
        let opt = option(&mut r);
        let (mut f, _) = frame(&mut r, opt);
        let s = stack(&mut r);
        insert_shims(&mut f, &s);
        let (meta, parsed, headers) = parse_frame_with_headers(&f, 0).expect("a written frame parses");
        assert_eq!((parsed, headers), (Some(opt), s), "seed {seed} run {runs}");
        assert_eq!(meta.wire_len_bytes as usize, f.len());
        // Mutate the shim region: lengths, kinds, next EtherTypes, truncation.
        let end = 14 + s.wire_bytes() as usize;
        for _ in 0..1 + r.below(3) {
            match r.below(3) {
                0 => f.truncate(r.below(end + 1)),
                _ if f.len() > 14 => {
                    let i = 14 + r.below(f.len().min(end) - 14);
                    f[i] = r.draw() as u8;
                }
                _ => {}
            }
        }
        let f2 = f.clone();
        if std::panic::catch_unwind(move || parse_frame_with_headers(&f2, 0)).is_err() {
            panic!("the parser panicked on a mutated shim chain, seed {seed} run {runs}");
        }
        runs += 1;
    }
    assert!(runs > 1000, "only {runs} frames");
}
