//! HULA's and MP-HULA's conformance vectors (`tests/vectors/hula-*.json`, `mphula-*.json`):
//! every boundary README.md names, on a switch of a few ports, frames in and registers out.
//! Times are whole microseconds (BMv2's clock).

use super::kernel_frames;
use mpsched_core::headers::{Header, HeaderStack, ProbeHeader, RoutingHeader};
use mpsched_core::mptcp::MptcpOption;
use mpsched_core::packet::{proto, Ipv4, PacketMeta, PortId};
use mpsched_core::probe::{DestTor, PortDir, ProbeConfig, ProbePort, HULA_PROBE_PORT, PROBE_FRAME_BYTES};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::{Route, ECMP_GROUP};
use mpsched_core::vectors::{from_hex, to_hex, Delivery, Hook, Step, VectorSet, OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{emit_udp_frame, insert_shims, internet_checksum, mac_for, tcp_flags};
use std::collections::BTreeMap;

const US: u64 = 1000;
const OWN: Ipv4 = 0x0aff_0001;
const SEED: u32 = 0x4a1a_0001;
const GBPS: u64 = 1_000_000_000;

/// Hosts under ToR `t`: 10.0.t.h.
const fn host(t: u32, h: u32) -> Ipv4 {
    0x0a00_0000 | (t << 8) | h
}

/// A node's tables: `ports` (direction, rate), its ToR id, `n_tors`, the hosts' ToRs, routes
/// (a port, or `ECMP_GROUP | g`) and groups.
struct Node<'a> {
    ports: &'a [(PortDir, u64)],
    tor_id: Option<u16>,
    n_tors: u16,
    dests: &'a [(Ipv4, u16)],
    routes: &'a [(Ipv4, PortId)],
    groups: &'a [&'a [PortId]],
}

impl Node<'_> {
    fn config(&self) -> SwitchConfig {
        let routes = self
            .routes
            .iter()
            .map(|&(prefix, port)| Route { prefix, len: 32, port })
            .collect();
        let mut c = SwitchConfig::forwarding(OWN, routes);
        c.ecmp_groups = self.groups.iter().map(|g| g.to_vec()).collect();
        c.hash_seed = SEED;
        c.probe = Some(ProbeConfig {
            tor_id: self.tor_id,
            n_tors: self.n_tors,
            ports: self
                .ports
                .iter()
                .map(|&(dir, rate_bps)| ProbePort { dir, rate_bps })
                .collect(),
            dest_tors: self
                .dests
                .iter()
                .map(|&(prefix, tor)| DestTor { prefix, len: 32, tor })
                .collect(),
        });
        c
    }
}

fn set(
    name: &str,
    description: &str,
    program: &str,
    params: &[(&str, u64)],
    node: &Node,
    steps: Vec<Step>,
) -> VectorSet {
    let s = VectorSet {
        name: name.into(),
        description: description.into(),
        program: program.into(),
        params: params.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        config: node.config(),
        n_ports: node.ports.len(),
        markers: Vec::new(),
        rs_raw_draws: Vec::new(),
        initial_registers: BTreeMap::new(),
        steps,
    };
    s
}

fn step(note: &str, hook: Hook, port: PortId, t_us: u64, frame: &[u8]) -> Step {
    Step {
        note: note.into(),
        hook,
        port,
        time_ns: t_us * US,
        frame: to_hex(frame),
        delivery: Delivery::TestRun,
        queue: 0,
        enq_qdepth_pkts: 0,
        sojourn_ns: 0,
        writes: Vec::new(),
        expect: None,
    }
}

fn ing(note: &str, port: PortId, t_us: u64, frame: &[u8]) -> Step {
    step(note, Hook::Ingress, port, t_us, frame)
}

fn eg(note: &str, port: PortId, t_us: u64, frame: &[u8]) -> Step {
    step(note, Hook::Egress, port, t_us, frame)
}

fn timer(note: &str, t_us: u64) -> Step {
    step(note, Hook::Timer, 0, t_us, &[])
}

/// A UDP frame `src:sport -> dst:5201` of `payload` bytes arriving on `port`.
fn udp(src: Ipv4, dst: Ipv4, sport: u16, payload: usize, port: PortId) -> Vec<u8> {
    let m = PacketMeta::udp(src, dst, sport, 5201, 0);
    let mut out = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, port),
        mac_for(OWN_MAC_NODE, port),
        1,
        &vec![0u8; payload],
        &mut out,
    );
    out
}

/// A probe of ToR `tor` (source `src`) with `hops` and `util`, arriving on `port`.
fn probe(tor: u16, hops: u8, util: u32, src: Ipv4, port: PortId) -> Vec<u8> {
    let shim = Header::Probe(ProbeHeader::default()).wire_bytes();
    let mut m = PacketMeta::udp(src, u32::MAX, HULA_PROBE_PORT, HULA_PROBE_PORT, 0);
    m.ttl = 64;
    let mut out = Vec::new();
    // Ethernet 14 + IPv4 20 + UDP 8 + padding = 64 bytes with the shim.
    let pad = PROBE_FRAME_BYTES as usize - shim - 42;
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, port),
        mac_for(OWN_MAC_NODE, port),
        0,
        &vec![0u8; pad],
        &mut out,
    );
    with_headers(out, &[Header::Probe(ProbeHeader { tor, hops, util })])
}

fn with_headers(mut frame: Vec<u8>, headers: &[Header]) -> Vec<u8> {
    let mut s = HeaderStack::new();
    for h in headers {
        let _ = s.push(*h);
    }
    insert_shims(&mut frame, &s);
    frame
}

fn with_conn(frame: Vec<u8>, conn_id: u64, subflow: u16) -> Vec<u8> {
    with_headers(
        frame,
        &[Header::Routing(RoutingHeader {
            conn_id,
            path: subflow,
            hops: 0,
        })],
    )
}

/// An Ethernet + IPv4 + TCP frame with the TCP options `options` (padded with end-of-list to
/// a multiple of four bytes), `flags` and `payload` zero bytes, real checksums, arriving on
/// `port`.
fn tcp(src: (Ipv4, u16), dst: (Ipv4, u16), flags: u8, options: &[u8], payload: usize, port: PortId) -> Vec<u8> {
    let mut opts = options.to_vec();
    while opts.len() % 4 != 0 {
        opts.push(0);
    }
    let tcp_len = 20 + opts.len() + payload;
    let mut f = Vec::new();
    f.extend_from_slice(&mac_for(OWN_MAC_NODE, port));
    f.extend_from_slice(&mac_for(PEER_MAC_NODE, port));
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let ip = f.len();
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x40, 0, 64, proto::TCP, 0, 0]);
    f.extend_from_slice(&src.0.to_be_bytes());
    f.extend_from_slice(&dst.0.to_be_bytes());
    let c = internet_checksum(&f[ip..ip + 20], 0);
    f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    let t = f.len();
    f.extend_from_slice(&src.1.to_be_bytes());
    f.extend_from_slice(&dst.1.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
    f.push((((20 + opts.len()) / 4) as u8) << 4);
    f.push(flags);
    f.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(&opts);
    f.extend(std::iter::repeat_n(0u8, payload));
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.0.to_be_bytes());
    pseudo.extend_from_slice(&dst.0.to_be_bytes());
    pseudo.extend_from_slice(&[0, proto::TCP]);
    pseudo.extend_from_slice(&(tcp_len as u16).to_be_bytes());
    pseudo.extend_from_slice(&f[t..]);
    let c = internet_checksum(&pseudo, 0);
    f[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
    f
}

fn mptcp(o: MptcpOption) -> Vec<u8> {
    let mut v = Vec::new();
    o.encode(&mut v);
    v
}

/// Linux's SYN options before its MPTCP option: MSS, SACK-permitted, timestamps, NOP, window
/// scale (20 bytes).
const LINUX_SYN_OPTS: [u8; 20] = [2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7];
/// Timestamps after two NOPs (12 bytes).
const TS_OPTS: [u8; 12] = [1, 1, 8, 10, 0, 0, 0, 2, 0, 0, 0, 1];

fn opts(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// A kernel frame with its MACs rewritten to the vectors' (`port`'s peer to its own).
fn kernel(hex: &str, port: PortId) -> Vec<u8> {
    let mut f = from_hex(hex).expect("the captured frames are hex");
    f[0..6].copy_from_slice(&mac_for(OWN_MAC_NODE, port));
    f[6..12].copy_from_slice(&mac_for(PEER_MAC_NODE, port));
    f
}

/// Every HULA and MP-HULA set, without expectations.
pub fn sets() -> Vec<VectorSet> {
    vec![
        probes_set(),
        tor_set(),
        best_k_set(),
        assoc_v0_set(),
        kernel_v1_set(),
        options_set(),
        subflowlet_set(),
    ]
}

/// An aggregation switch: ToRs 0 and 1 below (ports 0, 1, 10 Gbit/s), two 1 Gbit/s uplinks
/// (ports 2, 3) towards ToR 2, and a host port (4) probes must not come in by.
const AGG_PORTS: [(PortDir, u64); 5] = [
    (PortDir::Down, 10 * GBPS),
    (PortDir::Down, 10 * GBPS),
    (PortDir::Up, GBPS),
    (PortDir::Up, GBPS),
    (PortDir::Host, 10 * GBPS),
];
const AGG_DESTS: [(Ipv4, u16); 3] = [(host(0, 1), 0), (host(1, 1), 1), (host(2, 1), 2)];
const AGG_ROUTES: [(Ipv4, PortId); 4] = [
    (host(0, 1), 0),
    (host(1, 1), 1),
    (host(2, 1), ECMP_GROUP),
    // Reached by the group, under no ToR the probes name: the fallback.
    (host(3, 1), ECMP_GROUP),
];

fn agg() -> Node<'static> {
    Node {
        ports: &AGG_PORTS,
        tor_id: None,
        n_tors: 3,
        dests: &AGG_DESTS,
        routes: &AGG_ROUTES,
        groups: &[&[2, 3]],
    }
}

/// HULA at an aggregation switch: the estimator, probes folded and replicated by the up/down
/// rule, refusals, flowlets at the gap's boundary, ageing, the fallback.
fn probes_set() -> VectorSet {
    let big = udp(host(0, 1), host(2, 1), 1000, 1458, 2);
    let a = udp(host(0, 1), host(2, 1), 40_000, 64, 0);
    let b = udp(host(0, 1), host(2, 1), 40_001, 64, 0);
    let steps = vec![
        eg("1500 bytes leave by uplink 2", 2, 10, &big),
        eg("1500 more, 10 us later (decayed by 10/512 first)", 2, 20, &big),
        eg("and 1500 at the same microsecond (no decay)", 2, 20, &big),
        ing("ToR 2's probe on uplink 2 (util 1000): max with port 2's own; copies down to 0 and 1", 2, 30, &probe(2, 2, 1000, host(2, 254), 2)),
        ing("ToR 2's probe on uplink 3 (util 500, port 3 idle): the better hop", 3, 40, &probe(2, 2, 500, host(2, 254), 3)),
        ing("ToR 2's probe on uplink 2 (util 100): port 2's own estimate (about 4300) rules, worse than 500: the best stays", 2, 50, &probe(2, 2, 100, host(2, 254), 2)),
        ing("flow A to ToR 2: a new flowlet on the best hop", 0, 60, &a),
        ing("flow A 99 us later: continues", 0, 159, &a),
        ing("flow A exactly the gap later: a new flowlet", 0, 259, &a),
        ing("flow B to a host under no ToR: by hash", 0, 260, &udp(host(0, 1), host(3, 1), 40_002, 64, 0)),
        ing("ToR 0's probe from below (port 0): copies up to 2 and 3 and down to 1", 0, 300, &probe(0, 0, 7000, host(0, 254), 0)),
        ing("a probe from the host port: refused", 4, 310, &probe(1, 0, 0, host(1, 254), 4)),
        ing("a probe of ToR 7 (there are 3): refused", 2, 320, &probe(7, 2, 0, host(7, 254), 2)),
        ing("flow B' to ToR 2 after the best hop aged (no probe since 50 us): by hash", 0, 1051, &b),
        ing("flow B' 1 us later: no probe came in by port 2 for 1000 us, its flowlet ends (by hash again)", 0, 1052, &b),
        ing("ToR 2's probe on uplink 3 at 1100 us: the aged slot is forgotten first", 3, 1100, &probe(2, 2, 900, host(2, 254), 3)),
        ing("flow B' at 1101 us: port 2 still dead, a new flowlet on uplink 3", 0, 1101, &b),
        timer("the period at an aggregation switch: no probes (not a ToR)", 1200),
        ing("a packet to the switch itself", 0, 1300, &udp(host(0, 1), OWN, 40_003, 64, 0)),
        ing("TTL 1", 0, 1301, &{
            let mut f = udp(host(0, 1), host(2, 1), 40_004, 64, 0);
            f[22] = 1;
            fix_ip_checksum(&mut f, 14);
            f
        }),
        ing("no route", 0, 1302, &udp(host(0, 1), 0x0b00_0001, 40_005, 64, 0)),
        ing("ARP: to the stack", 0, 1303, &arp()),
        ing("a truncated IPv4 header: malformed", 0, 1304, &udp(host(0, 1), host(2, 1), 40_006, 64, 0)[..30]),
    ];
    set(
        "hula-probes",
        "HULA at an aggregation switch: the transmit estimator at egress, probes from above and below folded and replicated by the up/down rule, refusals, a flowlet continuing under the gap and starting anew at it, ageing, a flowlet ended because no probe came in by its port, the fallback by hash, frames that never reach the tables",
        "hula",
        &[],
        &agg(),
        steps,
    )
}

fn fix_ip_checksum(f: &mut [u8], ip: usize) {
    f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let c = internet_checksum(&f[ip..ip + 20], 0);
    f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
}

fn arp() -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(&mac_for(PEER_MAC_NODE, 0));
    f.extend_from_slice(&[0x08, 0x06]);
    f.extend_from_slice(&[0u8; 46]);
    f
}

/// A ToR: hosts 10.0.0.1 and .2 on ports 0 and 1, uplinks 2 and 3; ToR 1's hosts 10.0.1.x.
const TOR_PORTS: [(PortDir, u64); 4] = [
    (PortDir::Host, 10 * GBPS),
    (PortDir::Host, 10 * GBPS),
    (PortDir::Up, 40 * GBPS),
    (PortDir::Up, 40 * GBPS),
];
const TOR_DESTS: [(Ipv4, u16); 4] = [(host(0, 1), 0), (host(0, 2), 0), (host(1, 1), 1), (host(1, 2), 1)];
const TOR_ROUTES: [(Ipv4, PortId); 4] = [
    (host(0, 1), 0),
    (host(0, 2), 1),
    (host(1, 1), ECMP_GROUP),
    (host(1, 2), ECMP_GROUP),
];

fn tor() -> Node<'static> {
    Node {
        ports: &TOR_PORTS,
        tor_id: Some(0),
        n_tors: 2,
        dests: &TOR_DESTS,
        routes: &TOR_ROUTES,
        groups: &[&[2, 3]],
    }
}

/// HULA at a ToR: its probes each period on its uplinks, probes from above ending there, its
/// own probe refused, data by the best hop.
fn tor_set() -> VectorSet {
    let steps = vec![
        timer("the first period: a probe of ToR 0 on each uplink", 200),
        timer("the second", 400),
        ing(
            "ToR 1's probe from above (port 3): recorded, no copies (below are hosts)",
            3,
            410,
            &probe(1, 3, 2000, host(1, 254), 3),
        ),
        ing(
            "ToR 1's probe on port 2, better",
            2,
            420,
            &probe(1, 3, 1000, host(1, 254), 2),
        ),
        ing(
            "its own probe coming back: refused",
            2,
            430,
            &probe(0, 4, 0, host(0, 254), 2),
        ),
        ing(
            "host 1 to ToR 1: the best hop",
            0,
            440,
            &udp(host(0, 1), host(1, 1), 40_000, 200, 0),
        ),
        ing(
            "ToR 1's host to host 2 (a route to one port): no flowlet",
            2,
            450,
            &udp(host(1, 1), host(0, 2), 40_001, 200, 2),
        ),
    ];
    set(
        "hula-tor",
        "HULA at a ToR: probes originated each period on the uplinks (hook timer), probes from above recorded and not replicated, its own probe refused, data to the best hop, data to a local host",
        "hula",
        &[],
        &tor(),
        steps,
    )
}

/// An aggregation switch with five uplinks (1 to 5) and ToR 1 above them; ToR 0 below on 0.
const K_PORTS: [(PortDir, u64); 6] = [
    (PortDir::Down, 10 * GBPS),
    (PortDir::Up, 10 * GBPS),
    (PortDir::Up, 10 * GBPS),
    (PortDir::Up, 10 * GBPS),
    (PortDir::Up, 10 * GBPS),
    (PortDir::Up, 10 * GBPS),
];

/// MP-HULA's best-k with k = 4: insertion in order, ties after, the worst falling off, a
/// refreshed hop moving down, an aged one forgotten.
fn best_k_set() -> VectorSet {
    let p = |port: PortId, util: u32, t: u64, note: &str| ing(note, port, t, &probe(1, 2, util, host(1, 254), port));
    let steps = vec![
        p(1, 3000, 10, "hop 1 at 3000"),
        p(2, 1000, 20, "hop 2 at 1000: first"),
        p(3, 2000, 30, "hop 3 at 2000: between"),
        p(4, 2000, 40, "hop 4 at 2000: a tie goes after hop 3"),
        p(5, 500, 50, "hop 5 at 500: first, hop 1 falls off"),
        p(1, 4000, 60, "hop 1 at 4000: worse than all four, not kept"),
        p(2, 2500, 70, "hop 2 refreshed at 2500: moves behind the 2000s"),
        p(3, 100, 1035, "hop 3 at 1035 us: hops 5 (50 us) and 4 (40 us) have aged"),
    ];
    let node = Node {
        ports: &K_PORTS,
        tor_id: None,
        n_tors: 2,
        dests: &[(host(0, 1), 0), (host(1, 1), 1)],
        routes: &[(host(0, 1), 0), (host(1, 1), ECMP_GROUP)],
        groups: &[&[1, 2, 3, 4, 5]],
    };
    set(
        "mphula-best-k",
        "MP-HULA's best-k next hops (k = 4): sorted insertion by bounded compare-and-shift, ties after the hops already there, the worst falling off, a refreshed hop whose utilisation rose moving down, aged hops forgotten",
        "mphula",
        &[("best_k", 4)],
        &node,
        steps,
    )
}

const KEY_A: u64 = 0x0123_4567_89ab_cdef;
const KEY_B: u64 = 0xfedc_ba98_7654_3210;

fn capable(version: u8, sender: Option<u64>, receiver: Option<u64>) -> Vec<u8> {
    mptcp(MptcpOption::Capable {
        version,
        flags: 0x81,
        sender_key: sender,
        receiver_key: receiver,
        data: None,
    })
}

fn join_syn(token: u32) -> Vec<u8> {
    mptcp(MptcpOption::JoinSyn {
        backup: false,
        address_id: 1,
        receiver_token: token,
        sender_nonce: 0x1234_5678,
    })
}

/// The ToR's best hops towards ToR 1: uplink 2 (util 100) before uplink 3 (util 200).
fn tor_probes(t_us: u64) -> Vec<Step> {
    vec![
        ing(
            "ToR 1's probe on uplink 2 (util 100)",
            2,
            t_us,
            &probe(1, 3, 100, host(1, 254), 2),
        ),
        ing(
            "ToR 1's probe on uplink 3 (util 200)",
            3,
            t_us + 1,
            &probe(1, 3, 200, host(1, 254), 3),
        ),
    ]
}

/// MP-HULA at a ToR with an MPTCP v0 connection (SHA-1 tokens, the paper's): keys from the
/// SYN and SYN/ACK, the join, the header pushed once there are two subflows and popped towards
/// a host, the second subflow on the other uplink.
fn assoc_v0_set() -> VectorSet {
    use mpsched_core::mptcp::{crypto::token, MptcpVersion};
    let (c, s) = (host(0, 1), host(1, 1));
    let tb = token(MptcpVersion::V0, KEY_B);
    let ta = token(MptcpVersion::V0, KEY_A);
    let conn_id = (u64::from(ta) << 32) | u64::from(tb);
    let (syn, ack, sa) = (tcp_flags::SYN, tcp_flags::ACK, tcp_flags::SYN | tcp_flags::ACK);
    let mut steps = tor_probes(10);
    steps.extend([
        ing(
            "SYN with MP_CAPABLE (key A) from host 0",
            0,
            20,
            &tcp(
                (c, 40000),
                (s, 5201),
                syn,
                &opts(&[&LINUX_SYN_OPTS, &capable(0, Some(KEY_A), None)]),
                0,
                0,
            ),
        ),
        ing(
            "SYN/ACK with MP_CAPABLE (key B) from above: associated",
            2,
            30,
            &tcp(
                (s, 5201),
                (c, 40000),
                sa,
                &opts(&[&LINUX_SYN_OPTS, &capable(0, Some(KEY_B), None)]),
                0,
                2,
            ),
        ),
        ing(
            "the third ACK (both keys): already associated",
            0,
            40,
            &tcp(
                (c, 40000),
                (s, 5201),
                ack,
                &opts(&[&TS_OPTS, &capable(0, Some(KEY_A), Some(KEY_B))]),
                0,
                0,
            ),
        ),
        ing(
            "subflow 1's data: one subflow, no header; recorded on uplink 2",
            0,
            50,
            &tcp((c, 40000), (s, 5201), ack, &TS_OPTS, 1000, 0),
        ),
        ing(
            "MP_JOIN SYN with token B from host 0: subflow 2, header pushed, uplink 3 (2 is subflow 1's)",
            0,
            60,
            &tcp(
                (c, 40001),
                (s, 5201),
                syn,
                &opts(&[&LINUX_SYN_OPTS, &join_syn(tb)]),
                0,
                0,
            ),
        ),
        ing(
            "subflow 1's data: now with the header (subflow 1)",
            0,
            70,
            &tcp((c, 40000), (s, 5201), ack, &TS_OPTS, 1000, 0),
        ),
        ing(
            "subflow 1's data 120 us later: a new flowlet, the best hop (2) again",
            0,
            190,
            &tcp((c, 40000), (s, 5201), ack, &TS_OPTS, 1000, 0),
        ),
        ing(
            "subflow 2's data after its flowlet expired: uplink 3 again (2 is held)",
            0,
            200,
            &tcp((c, 40001), (s, 5201), ack, &TS_OPTS, 1000, 0),
        ),
        ing(
            "from above to host 0 with the header: popped",
            2,
            210,
            &with_conn(tcp((s, 5201), (c, 40001), ack, &TS_OPTS, 100, 2), conn_id, 2),
        ),
        ing(
            "MP_JOIN with an unknown token: a miss, forwarded",
            0,
            220,
            &tcp(
                (c, 40002),
                (s, 5201),
                syn,
                &opts(&[&LINUX_SYN_OPTS, &join_syn(0xdead_beef)]),
                0,
                0,
            ),
        ),
        ing("UDP from host 0: no association", 0, 230, &udp(c, s, 40003, 100, 0)),
    ]);
    set(
        "mphula-assoc-v0",
        "MP-HULA at a ToR, MPTCP version 0 (SHA-1 tokens, as the paper): key A from the SYN, key B from the SYN/ACK, the association and tokens, an MP_JOIN making subflow 2, the connection header pushed once the connection has two subflows and popped towards a host, the second subflow on the hop the first does not hold, an unknown token",
        "mphula",
        &[("best_k", 2)],
        &tor(),
        steps,
    )
}

/// The kernel's frames: client 10.9.0.1 (and .3 for the join) under this ToR (port 0), the
/// server 10.9.0.2 under ToR 1.
fn kernel_v1_set() -> VectorSet {
    let (c1, c3, s) = (0x0a09_0001, 0x0a09_0003, 0x0a09_0002);
    let mut steps = vec![
        ing("ToR 1's probe on uplink 2 (util 100)", 2, 10, &probe(1, 3, 100, s, 2)),
        ing("ToR 1's probe on uplink 3 (util 200)", 3, 11, &probe(1, 3, 200, s, 3)),
    ];
    steps.extend([
        ing(
            "the kernel's MP_CAPABLE SYN (v1, no key)",
            0,
            20,
            &kernel(kernel_frames::SYN, 0),
        ),
        ing(
            "the kernel's SYN/ACK (key B)",
            2,
            30,
            &kernel(kernel_frames::SYN_ACK, 2),
        ),
        ing(
            "the kernel's third ACK (both keys): associated, SHA-256 tokens",
            0,
            40,
            &kernel(kernel_frames::ACK, 0),
        ),
        ing(
            "the kernel's MP_JOIN SYN from 10.9.0.3: subflow 2",
            0,
            50,
            &kernel(kernel_frames::JOIN_SYN, 0),
        ),
        ing(
            "the kernel's MP_JOIN SYN/ACK towards the client: to its port",
            2,
            60,
            &kernel(kernel_frames::JOIN_SYN_ACK, 2),
        ),
    ]);
    let dests = [(c1, 0), (c3, 0), (s, 1)];
    let routes = [(c1, 0), (c3, 0), (s, ECMP_GROUP)];
    let ports = [
        (PortDir::Host, 10 * GBPS),
        (PortDir::Host, 10 * GBPS),
        (PortDir::Up, 40 * GBPS),
        (PortDir::Up, 40 * GBPS),
    ];
    let node = Node {
        ports: &ports,
        tor_id: Some(0),
        n_tors: 2,
        dests: &dests,
        routes: &routes,
        groups: &[&[2, 3]],
    };
    set(
        "mphula-kernel-v1",
        "MP-HULA at a ToR on frames of a real Linux 6.18 MPTCP v1 handshake and MP_JOIN (fixtures/kernel-mptcp-v1.pcap): no key on the SYN, key B on the SYN/ACK, both on the third ACK (SHA-256 tokens), the join's token; options in Linux's order beside MSS, SACK-permitted, timestamps and window scale",
        "mphula",
        &[("best_k", 2)],
        &node,
        steps,
    )
}

/// The option parser: options in other orders, and malformed lengths that end the walk.
fn options_set() -> VectorSet {
    let (c, s) = (host(0, 1), host(1, 1));
    let syn = tcp_flags::SYN;
    let cap = capable(0, Some(KEY_A), None);
    let f = |sport: u16, o: &[u8]| tcp((c, sport), (s, 5201), syn, o, 0, 0);
    let mut truncated_cap = cap.clone();
    truncated_cap[1] = 10;
    truncated_cap.truncate(10);
    let steps = vec![
        ing(
            "MPTCP first, then SACK-permitted, timestamps, window scale: read",
            0,
            10,
            &f(41000, &opts(&[&cap, &[4, 2], &TS_OPTS[2..], &[1, 3, 3, 7]])),
        ),
        ing(
            "MPTCP after window scale and NOPs: read",
            0,
            11,
            &f(41001, &opts(&[&[1, 1, 1, 3, 3, 7], &cap])),
        ),
        ing(
            "an option of length 0 before MPTCP: the walk ends",
            0,
            12,
            &f(41002, &opts(&[&[8, 0], &cap])),
        ),
        ing(
            "an option of length 1 before MPTCP: the walk ends",
            0,
            13,
            &f(41003, &opts(&[&[4, 1], &cap])),
        ),
        ing(
            "a length running past the options: the walk ends",
            0,
            14,
            &f(41004, &opts(&[&[1, 1, 8, 40], &cap])),
        ),
        ing(
            "MP_CAPABLE of length 10: malformed, ignored",
            0,
            15,
            &f(41005, &truncated_cap),
        ),
        ing(
            "end of list before MPTCP: not read",
            0,
            16,
            &f(41006, &opts(&[&[0, 0, 0, 0], &cap])),
        ),
        ing("40 bytes of NOPs: nothing", 0, 17, &f(41007, &[1u8; 40])),
        ing(
            "two MPTCP options: the first is read (a v1 SYN), the second ignored",
            0,
            18,
            &f(41008, &opts(&[&capable(1, None, None), &cap])),
        ),
        ing(
            "MP_JOIN of length 11 on a SYN: malformed, ignored",
            0,
            19,
            &f(41009, &{
                let mut j = join_syn(7);
                j[1] = 11;
                j.truncate(11);
                j
            }),
        ),
    ];
    set(
        "mphula-options",
        "MP-HULA's TCP option walk at a ToR: the MPTCP option found among SACK-permitted, timestamps and window scale in any order; lengths of 0 or 1, a length past the options, an end of list, a malformed MP_CAPABLE or MP_JOIN length end the walk or are ignored, and the segment is forwarded",
        "mphula",
        &[("best_k", 2)],
        &tor(),
        steps,
    )
}

/// Sub-flowlets at an aggregation switch: a connection's subflows on different hops, round
/// robin when every hop is held, subflows beyond four, a connection slot held by another.
fn subflowlet_set() -> VectorSet {
    let (c, s) = (host(0, 1), host(1, 1));
    let x: u64 = 0x1111_0000_2222_0001;
    let y: u64 = 0x3333_0000_4444_0002;
    let d = |sport: u16, conn: u64, sub: u16| with_conn(udp(c, s, sport, 500, 0), conn, sub);
    let p = |port: PortId, util: u32, t: u64| ing("ToR 1's probe", port, t, &probe(1, 2, util, host(1, 254), port));
    let steps = vec![
        p(1, 100, 10),
        p(2, 200, 11),
        p(3, 300, 12),
        ing("connection X subflow 1: the best hop (1)", 0, 20, &d(50001, x, 1)),
        ing("subflow 2: hop 1 is held, the second best (2)", 0, 21, &d(50002, x, 2)),
        ing(
            "subflow 3: both held, round robin (rr 0: hop 1)",
            0,
            22,
            &d(50003, x, 3),
        ),
        ing(
            "subflow 4: both held, round robin (rr 1: hop 2)",
            0,
            23,
            &d(50004, x, 4),
        ),
        ing("subflow 5: beyond the table's four, as HULA", 0, 24, &d(50005, x, 5)),
        ing(
            "connection Y in X's slot while X is active: as HULA",
            0,
            25,
            &d(50006, y, 1),
        ),
        ing("subflow 2 continuing its flowlet", 0, 60, &d(50002, x, 2)),
        ing(
            "subflow 1 after a gap: hop 1 is free (subflows 3, 4 idle), the best",
            0,
            125,
            &d(50001, x, 1),
        ),
        ing(
            "connection Y after X went idle: takes the slot, the best hop",
            0,
            400,
            &d(50006, y, 1),
        ),
    ];
    let node = Node {
        ports: &K_PORTS[..4],
        tor_id: None,
        n_tors: 2,
        dests: &[(c, 0), (s, 1)],
        routes: &[(c, 0), (s, ECMP_GROUP)],
        groups: &[&[1, 2, 3]],
    };
    set(
        "mphula-subflowlet",
        "MP-HULA's sub-flowlet choice at an aggregation switch (k = 2, one connection slot): subflows of one connection on different hops, round robin when every live hop is held, a subflow beyond four and a connection in an active connection's slot routed as HULA, a flowlet continuing and expiring",
        "mphula",
        &[("best_k", 2), ("conn_entries", 1)],
        &node,
        steps,
    )
}
