//! MPTCP options as mpsched writes them are what Wireshark reads: frames carrying each form of
//! MP_CAPABLE, MP_JOIN and DSS go into a pcap, and tshark's decoding of every field is compared
//! with what was written; a simulated connection's handshakes and mappings, captured, decode as
//! tshark expects. (The simulator's MPTCP, issue #12, writes its segments this way.)

use mpsched_core::mptcp::{DssMapping, MptcpOption};
use mpsched_core::packet::{proto, PacketMeta};
use mpsched_core::wire::{emit_tcp_frame, mac_for, TcpFields};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod common;
use common::{builtin, capture};

const TESTS: &[(&str, fn())] = &[
    (
        "tshark_decodes_every_mptcp_option_as_written",
        tshark_decodes_every_mptcp_option_as_written,
    ),
    (
        "tokens_and_idsns_match_what_tshark_derives_from_the_keys",
        tokens_and_idsns_match_what_tshark_derives_from_the_keys,
    ),
    (
        "tshark_decodes_the_simulated_handshakes_and_mappings",
        tshark_decodes_the_simulated_handshakes_and_mappings,
    ),
];

/// Every test here reads with tshark: where it is missing they are reported as ignored, with
/// the reason, and under CI=true they fail instead.
fn main() {
    let missing = mpsched_testkit::missing_tool("tshark", &["--version"]);
    mpsched_testkit::run_or_skip(TESTS, missing, "tshark").exit();
}

/// The options, each with the tshark fields it must decode to (in the order of `FIELDS`;
/// tshark prints keys, tokens, nonces and HMACs in decimal: 81985529216486895 is
/// 0x0123456789abcdef, 3735928559 is 0xdeadbeef).
fn cases() -> Vec<(u8, MptcpOption, [&'static str; 10])> {
    vec![
        (
            0x02,
            MptcpOption::Capable {
                version: 1,
                flags: 0x01,
                sender_key: None,
                receiver_key: None,
                data: None,
            },
            ["0", "", "", "", "", "", "", "", "", ""],
        ),
        (
            0x12,
            MptcpOption::Capable {
                version: 1,
                flags: 0x01,
                sender_key: Some(0x0123_4567_89ab_cdef),
                receiver_key: None,
                data: None,
            },
            ["0", "81985529216486895", "", "", "", "", "", "", "", ""],
        ),
        (
            0x10,
            MptcpOption::Capable {
                version: 1,
                flags: 0x01,
                sender_key: Some(0x1111_2222_3333_4444),
                receiver_key: Some(0x0123_4567_89ab_cdef),
                data: None,
            },
            [
                "0",
                "1229801703532086340",
                "81985529216486895",
                "",
                "",
                "",
                "",
                "",
                "",
                "",
            ],
        ),
        (
            0x02,
            MptcpOption::JoinSyn {
                backup: false,
                address_id: 2,
                receiver_token: 0xdead_beef,
                sender_nonce: 0x0102_0304,
            },
            ["1", "", "", "3735928559", "16909060", "", "", "", "", ""],
        ),
        (
            0x12,
            MptcpOption::JoinSynAck {
                backup: false,
                address_id: 0,
                truncated_hmac: 0x0a0b_0c0d_0e0f_1011,
                sender_nonce: 0x5566_7788,
            },
            ["1", "", "", "", "1432778632", "723685415333072913", "", "", "", ""],
        ),
        (
            0x10,
            MptcpOption::Dss {
                data_ack: Some((0x0000_0001_0000_0002, true)),
                mapping: Some(DssMapping {
                    data_seq: 0x0000_0002_0000_0003,
                    dsn64: true,
                    subflow_seq: 1,
                    len: 1448,
                    checksum: None,
                }),
                data_fin: false,
            },
            ["2", "", "", "", "", "", "4294967298", "8589934595", "1", "1448"],
        ),
        (
            0x10,
            MptcpOption::Dss {
                data_ack: Some((77, false)),
                mapping: None,
                data_fin: false,
            },
            ["2", "", "", "", "", "", "77", "", "", ""],
        ),
    ]
}

const FIELDS: [&str; 10] = [
    "tcp.options.mptcp.subtype",
    "tcp.options.mptcp.sendkey",
    "tcp.options.mptcp.recvkey",
    "tcp.options.mptcp.recvtok",
    "tcp.options.mptcp.sendrand",
    "tcp.options.mptcp.sendtrunchmac",
    "tcp.options.mptcp.rawdataack",
    "tcp.options.mptcp.rawdataseqno",
    "tcp.options.mptcp.subflowseqno",
    "tcp.options.mptcp.datalvllen",
];

fn tshark_decodes_every_mptcp_option_as_written() {
    let dir = std::env::temp_dir().join(format!("mpsched-mptcp-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mptcp.pcap");
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(std::fs::File::create(&path).unwrap(), header).unwrap();
    let cases = cases();
    let mut frame = Vec::new();
    for (i, (flags, opt, _)) in cases.iter().enumerate() {
        // Each option on its own connection, so that no analysis across segments interferes.
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0002, 40_000 + i as u16, 5201, 0);
        m.proto = proto::TCP;
        let payload = if matches!(opt, MptcpOption::Dss { mapping: Some(_), .. }) {
            1448
        } else {
            0
        };
        let f = TcpFields {
            seq: 1,
            ack: 1,
            flags: *flags,
            window: 502,
            tsval: 1,
            tsecr: 0,
            mptcp: Some(*opt),
        };
        emit_tcp_frame(&m, mac_for(1, 0), mac_for(2, 0), i as u16, &f, payload, &mut frame);
        let ts = Duration::from_millis(i as u64);
        w.write_packet(&PcapPacket::new(ts, frame.len() as u32, &frame))
            .unwrap();
    }
    drop(w);
    let mut args = vec![
        "-r".to_string(),
        path.display().to_string(),
        "-T".into(),
        "fields".into(),
    ];
    for f in FIELDS {
        args.extend(["-e".to_string(), f.to_string()]);
    }
    let o = Command::new("tshark").args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), cases.len(), "{out}");
    for (row, (_, opt, want)) in rows.iter().zip(&cases) {
        let got: Vec<&str> = row.split('\t').collect();
        assert_eq!(got, want.to_vec(), "{opt:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The tokens and initial data sequence numbers mpsched derives from MP_CAPABLE keys are those
/// tshark derives from the same keys on the wire, for both protocol versions (SHA-256 for
/// RFC 8684's version 1, SHA-1 for RFC 6824's version 0).
fn tokens_and_idsns_match_what_tshark_derives_from_the_keys() {
    use mpsched_core::mptcp::{idsn, token, MptcpVersion};
    use mpsched_core::wire::tcp_flags::ACK;
    const SYN: u8 = 0x02;
    let (key_a, key_b) = (0x0123_4567_89ab_cdef_u64, 0x1122_3344_5566_7788_u64);
    let dir = std::env::temp_dir().join(format!("mpsched-mptcp-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for version in [MptcpVersion::V1, MptcpVersion::V0] {
        let path = dir.join(format!("handshake-v{}.pcap", version.wire()));
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            ..PcapHeader::default()
        };
        let mut w = PcapWriter::with_header(std::fs::File::create(&path).unwrap(), header).unwrap();
        let capable = |sender_key, receiver_key| MptcpOption::Capable {
            version: version.wire(),
            flags: 0x01,
            sender_key,
            receiver_key,
            data: None,
        };
        // Version 1's SYN carries no key; version 0's carries the client's.
        let syn_key = (version == MptcpVersion::V0).then_some(key_a);
        let handshake = [
            (true, SYN, 1000, 0, capable(syn_key, None)),
            (false, SYN | ACK, 5000, 1001, capable(Some(key_b), None)),
            (true, ACK, 1001, 5001, capable(Some(key_a), Some(key_b))),
        ];
        let mut frame = Vec::new();
        for (i, (from_client, flags, seq, ack, opt)) in handshake.into_iter().enumerate() {
            let (src, dst, sport, dport) = if from_client {
                (0x0a00_0001, 0x0a00_0002, 40_000, 5201)
            } else {
                (0x0a00_0002, 0x0a00_0001, 5201, 40_000)
            };
            let mut m = PacketMeta::udp(src, dst, sport, dport, 0);
            m.proto = proto::TCP;
            let f = TcpFields {
                seq,
                ack,
                flags,
                window: 502,
                tsval: 1 + i as u32,
                tsecr: i as u32,
                mptcp: Some(opt),
            };
            emit_tcp_frame(&m, mac_for(1, 0), mac_for(2, 0), i as u16, &f, 0, &mut frame);
            let ts = Duration::from_millis(i as u64);
            w.write_packet(&PcapPacket::new(ts, frame.len() as u32, &frame))
                .unwrap();
        }
        drop(w);
        let o = Command::new("tshark")
            .args(["-o", "mptcp.analyze_mptcp:TRUE", "-r"])
            .arg(&path)
            .args([
                "-T",
                "fields",
                "-e",
                "tcp.options.mptcp.sendkey",
                "-e",
                "mptcp.expected_token",
            ])
            .args(["-e", "mptcp.expected_idsn"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8(o.stdout).unwrap();
        // Every (key, token, IDSN) tshark reports, against ours.
        let mut checked = 0;
        for row in out.lines() {
            let f: Vec<&str> = row.split('\t').collect();
            let (Some(key), Some(tok), Some(id)) = (f.first(), f.get(1), f.get(2)) else {
                continue;
            };
            let Ok(key) = key.split(',').next().unwrap_or("").parse::<u64>() else {
                continue;
            };
            if tok.is_empty() {
                continue;
            }
            // tshark prints tokens and IDSNs in decimal.
            let tok: u32 = tok.parse().unwrap();
            assert_eq!(tok, token(version, key), "{version:?} token of {key:#x}: {out}");
            if !id.is_empty() {
                let id: u64 = id.parse().unwrap();
                assert_eq!(id, idsn(version, key), "{version:?} IDSN of {key:#x}: {out}");
            }
            checked += 1;
        }
        assert!(checked >= 2, "{version:?}: tshark derived {checked} tokens: {out}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// tshark's fields of every MPTCP segment in `pcap`, tab-separated.
fn tshark(pcap: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-o", "mptcp.analyze_mptcp:TRUE", "-r"])
        .arg(pcap)
        .args(["-Y", "mptcp", "-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// A simulated connection on the wire, as tshark decodes it: MP_CAPABLE's three segments with
/// the keys, an MP_JOIN SYN whose token is the one tshark derives from the server's key, and
/// DSS mappings on the data and DATA_ACKs on the ACKs of both subflows.
fn tshark_decodes_the_simulated_handshakes_and_mappings() {
    let dir = std::env::temp_dir().join(format!("mpsched-mptcp-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sc = builtin("mptcp/two-paths")
        .with_variant("lia")
        .unwrap()
        .scaled_to((1.0 * 1e12) as u64);
    capture(&sc, &dir, 1);
    let pcap = dir.join("server-1.pcap");
    let rows = tshark(
        &pcap,
        &[
            "tcp.flags.syn",
            "tcp.flags.ack",
            "tcp.options.mptcp.subtype",
            "tcp.options.mptcp.sendkey",
            "tcp.options.mptcp.recvkey",
            "tcp.options.mptcp.recvtok",
            "mptcp.expected_token",
            "tcp.options.mptcp.rawdataseqno",
            "tcp.options.mptcp.rawdataack",
            "tcp.srcport",
        ],
    );
    let has = |p: &dyn Fn(&Vec<String>) -> bool| rows.iter().any(p);
    // MP_CAPABLE (subtype 0): SYN, SYN/ACK with the server's key, third ACK with both.
    assert!(has(&|r| r[0] == "1" && r[1] == "0" && r[2] == "0"), "no MP_CAPABLE SYN");
    let synack = rows
        .iter()
        .find(|r| r[0] == "1" && r[1] == "1" && r[2] == "0")
        .expect("an MP_CAPABLE SYN/ACK");
    assert!(
        !synack[3].is_empty(),
        "the SYN/ACK carries the server's key: {synack:?}"
    );
    assert!(
        has(&|r| r[0] == "0" && r[2] == "0" && !r[3].is_empty() && !r[4].is_empty()),
        "no third ACK with both keys"
    );
    // tshark derives the server's token from its key; the MP_JOIN SYN (subtype 1) names it.
    let tokens: Vec<&String> = rows.iter().map(|r| &r[6]).filter(|t| !t.is_empty()).collect();
    let join = rows
        .iter()
        .find(|r| r[0] == "1" && r[1] == "0" && r[2] == "1")
        .expect("an MP_JOIN SYN");
    assert!(
        tokens.contains(&&join[5]),
        "MP_JOIN token {} is none tshark derived ({tokens:?})",
        join[5]
    );
    // DSS (subtype 2): mappings on data from both subflows' ports, DATA_ACKs from the server.
    let ports: std::collections::BTreeSet<&String> = rows
        .iter()
        .filter(|r| r[2] == "2" && !r[7].is_empty())
        .map(|r| &r[9])
        .collect();
    assert_eq!(ports.len(), 2, "mappings from both subflows: {ports:?}");
    assert!(
        has(&|r| r[2] == "2" && r[9] == "5201" && !r[8].is_empty()),
        "no DATA_ACK from the server"
    );
    std::fs::remove_dir_all(&dir).ok();
}
