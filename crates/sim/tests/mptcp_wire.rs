//! MPTCP options as mpsched writes them are what Wireshark reads: frames carrying each form of
//! MP_CAPABLE, MP_JOIN and DSS go into a pcap, and tshark's decoding of every field is compared
//! with what was written. (The simulator's MPTCP, issue #12, writes its segments this way.)

use mpsched_core::mptcp::{DssMapping, MptcpOption};
use mpsched_core::packet::{proto, PacketMeta};
use mpsched_core::wire::{emit_tcp_frame, mac_for, TcpFields};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use std::process::Command;
use std::time::Duration;

fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "tshark is installed by scripts/install-deps.sh; CI must have it"
        );
        eprintln!("skipping: tshark not installed (scripts/install-deps.sh installs it)");
    }
    ok
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

#[test]
fn tshark_decodes_every_mptcp_option_as_written() {
    if !have_tshark() {
        return;
    }
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
