//! The UPF's conformance vectors (`tests/vectors/atsss-*.json`): frames in at whole
//! microseconds (BMv2's clock, for the P4 twin `atsss.p4`), the verdict, the whole frame that
//! leaves (`frame`: the encapsulation byte for byte), the `atsss.*` counters and every UE's
//! registers (`atsss.ue<i>.*`) out.
//!
//! The node: the UPF at 10.255.0.1 with four ports: port 0 towards the servers (10.9.0.0/16)
//! and ports 1, 2, 3 towards the UEs' paths 0, 1, 2. UE `i`'s own address is 10.1.0.(i+1); its
//! path `j` is 100.64.j.(i+1), UDP port 6000 + j, out of port 1 + j.

use super::frame::{self, AckBody, Header, KIND_ACK, KIND_DATA, KIND_KEEPALIVE};
use super::upf::ATSSS;
use crate::vectors::fix_checksum;
use crate::SwitchProgram;
use mpsched_core::packet::{proto, Ipv4, PacketMeta, PortId};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::Route;
use mpsched_core::upf::{SteeringKind, UeEntry, UePath, UpfTable};
use mpsched_core::vectors::{to_hex, Delivery, Hook, RegisterWrite, Step, VectorSet, OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{emit_tcp_frame, emit_udp_frame, mac_for, TcpFields};
use std::collections::BTreeMap;

/// The UPF's address.
pub const UPF: Ipv4 = 0x0aff_0001;
/// A server behind port 0.
pub const SERVER: Ipv4 = 0x0a09_0001;
/// The UPF's epoch in the sets.
pub const EPOCH: u64 = 0x0102_0304_0506_0708;
const US: u64 = 1000;
const MS: u64 = 1_000_000;
/// The outage floor of the sets that watch paths go silent: 10 ms (86 ticks).
const FLOOR_PS: u64 = 10_000_000_000;

/// UE `i`'s own address.
pub fn ue_ip(i: usize) -> Ipv4 {
    0x0a01_0001 + i as u32
}

/// UE `i`'s address on path `j`.
pub fn path_addr(i: usize, j: usize) -> Ipv4 {
    0x6440_0000 | (j as u32) << 8 | (i as u32 + 1)
}

/// A UE of `kind`, initial `weight`, `n` paths.
pub fn ue(i: usize, kind: SteeringKind, weight: u8, n: usize) -> UeEntry {
    UeEntry {
        ip: ue_ip(i),
        kind,
        weight,
        paths: (0..n)
            .map(|j| UePath {
                addr: path_addr(i, j),
                port: 6000 + j as u16,
                egress_port: 1 + j as PortId,
            })
            .collect(),
    }
}

/// The UPF's tables with `ues`: the servers' /16 behind port 0, 10.20.0.0/16 behind port 3.
pub fn upf_config(ues: Vec<UeEntry>) -> SwitchConfig {
    let mut c = SwitchConfig::forwarding(
        UPF,
        vec![
            Route {
                prefix: 0x0a09_0000,
                len: 16,
                port: 0,
            },
            Route {
                prefix: 0x0a14_0000,
                len: 16,
                port: 3,
            },
        ],
    );
    c.upf = UpfTable { epoch: EPOCH, ues };
    c
}

/// A UDP packet from `src` to `dst` with `payload` bytes, TOS `tos`, as a frame arriving on
/// `port`.
pub fn udp_frame(src: Ipv4, dst: Ipv4, payload: usize, tos: u8, port: PortId) -> Vec<u8> {
    let mut m = PacketMeta::udp(src, dst, 40_000, 5201, 0);
    m.dscp = tos >> 2;
    m.ecn = mpsched_core::packet::Ecn::from_bits(tos);
    let mut out = Vec::new();
    let body: Vec<u8> = (0..payload).map(|k| k as u8).collect();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, port),
        mac_for(OWN_MAC_NODE, port),
        0x1234,
        &body,
        &mut out,
    );
    out
}

/// A downlink packet from the server to UE `i` (`payload` UDP bytes, TOS `tos`), arriving on
/// port 0.
pub fn downlink(i: usize, payload: usize, tos: u8) -> Vec<u8> {
    udp_frame(SERVER, ue_ip(i), payload, tos, 0)
}

/// A message of `kind` from UE `i` on path `j` (its number `pn`), arriving on the path's port.
pub fn from_ue(i: usize, j: usize, kind: u8, pn: u64, body: &[u8]) -> Vec<u8> {
    let h = Header {
        kind,
        path: j as u8,
        epoch: 0xe0,
        packet_number: pn,
    };
    let mut f = frame::from_ue(path_addr(i, j), 6000 + j as u16, UPF, &h, body);
    f[0..6].copy_from_slice(&mac_for(OWN_MAC_NODE, 1 + j as PortId));
    f[6..12].copy_from_slice(&mac_for(PEER_MAC_NODE, 1 + j as PortId));
    f
}

/// An acknowledgement from UE `i` of its path `j`.
pub fn ack(i: usize, j: usize, highest: u32, received: u32, echo_us: u32, delay_us: u32) -> Vec<u8> {
    let a = AckBody {
        highest_seq: highest,
        received,
        echo_us,
        ack_delay_us: delay_us,
    };
    from_ue(i, j, KIND_ACK, u64::from(highest), &a.to_bytes())
}

/// Uplink data from UE `i` on path `j` carrying `inner` (an IPv4 packet).
pub fn uplink(i: usize, j: usize, inner: &[u8]) -> Vec<u8> {
    let mut body = vec![0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9];
    body.extend_from_slice(inner);
    from_ue(i, j, KIND_DATA, 1, &body)
}

/// The IPv4 packet (no Ethernet) of a UDP packet from `src` to `dst` with `payload` bytes.
pub fn inner_packet(src: Ipv4, dst: Ipv4, payload: usize) -> Vec<u8> {
    udp_frame(src, dst, payload, 0, 0)[14..].to_vec()
}

/// A step at `time_ns`, arriving on the port the frame's destination MAC names.
pub fn at(note: impl Into<String>, time_ns: u64, frame: &[u8]) -> Step {
    Step {
        note: note.into(),
        hook: Hook::Ingress,
        port: u16::from_be_bytes([frame[4], frame[5]]),
        time_ns,
        frame: to_hex(frame),
        delivery: Delivery::TestRun,
        queue: 0,
        enq_qdepth_pkts: 0,
        sojourn_ns: 0,
        writes: Vec::new(),
        expect: None,
    }
}

fn write(register: &str, value: u64) -> RegisterWrite {
    RegisterWrite {
        register: register.into(),
        index: 0,
        value,
    }
}

fn set(
    name: &str,
    description: &str,
    params: &[(&str, u64)],
    ues: Vec<UeEntry>,
    draws: Vec<u32>,
    steps: Vec<Step>,
) -> VectorSet {
    VectorSet {
        name: name.into(),
        description: description.into(),
        program: ATSSS.name().into(),
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        config: upf_config(ues),
        n_ports: 4,
        markers: Vec::new(),
        rs_raw_draws: draws,
        initial_registers: BTreeMap::new(),
        steps,
    }
}

/// Every set of the UPF.
pub fn sets() -> Vec<VectorSet> {
    vec![
        encap_set(),
        uplink_set(),
        acks_set(),
        malformed_set(),
        rttmon_set(),
        dwrr_set(),
        cmon_set(),
        steering_set(),
    ]
}

/// The draw whose `draw_255` is `v` (the smallest).
pub fn draw_255_of(v: u32) -> u32 {
    (0..=0xffffu32).find(|x| (x * 255) >> 16 == v).unwrap_or(0xffff) << 16
}

/// The draw whose `draw_64` (its top 6 bits) is `v` (the smallest).
pub fn draw_64_of(v: u32) -> u32 {
    (v & 63) << 26
}

/// Downlink encapsulation byte for byte, and the frames that are routed or refused.
fn encap_set() -> VectorSet {
    let t = |k: u64| 1_000 * US + k * US;
    let mut padded = downlink(0, 0, 0);
    padded.resize(60, 0);
    let mut tcp = Vec::new();
    let mut m = PacketMeta::udp(SERVER, ue_ip(0), 443, 40_001, 0);
    m.proto = proto::TCP;
    emit_tcp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        7,
        &TcpFields {
            seq: 1,
            ack: 2,
            flags: 0x18,
            window: 500,
            ..TcpFields::default()
        },
        100,
        &mut tcp,
    );
    let mut icmp = downlink(0, 56, 0);
    icmp[23] = 1; // protocol ICMP
    fix_checksum(&mut icmp);
    let mut ttl1 = udp_frame(0x0a32_0001, 0x0a09_0007, 10, 0, 1);
    ttl1[22] = 1;
    fix_checksum(&mut ttl1);
    let mut tcp_to_upf = udp_frame(SERVER, UPF, 20, 0, 0);
    tcp_to_upf[23] = proto::TCP;
    fix_checksum(&mut tcp_to_upf);
    let mut to_upf_53 = udp_frame(SERVER, UPF, 20, 0, 0);
    to_upf_53[36..38].copy_from_slice(&53u16.to_be_bytes());
    let mut arp = downlink(0, 10, 0);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let mut ihl4 = downlink(0, 10, 0);
    ihl4[14] = 0x44;
    let steps = vec![
        at(
            "UE 0 (WRR 128/255): draw 0 -> path 0, the first packet: packet_number 0, tunnel_seq 0, path_seq 1",
            t(0),
            &downlink(0, 64, 0),
        ),
        at(
            "draw_255 127 < 128 -> path 0; EF with CE: the TOS byte copied (RFC 6040 normal mode)",
            t(1),
            &downlink(0, 64, 0xbb),
        ),
        at(
            "draw_255 128 -> path 1 (path_seq 1 there); ECT(1)",
            t(2),
            &downlink(0, 64, 0x01),
        ),
        at("a TCP segment, draw 2^32-1 -> path 1", t(3), &tcp),
        at(
            "UE 1 has one path: path 0 whatever the draw (weight 0)",
            t(4),
            &downlink(1, 200, 0),
        ),
        at(
            "a 42-byte frame padded to 60: the padding is not carried",
            t(5),
            &padded,
        ),
        at(
            "1 441-byte inner packet: 1 501 once encapsulated, above the MTU: dropped, nothing drawn nor counted",
            t(6),
            &downlink(0, 1413, 0),
        ),
        at(
            "1 440 bytes: exactly the MTU once encapsulated",
            t(7),
            &downlink(0, 1412, 0),
        ),
        at("ICMP to UE 0: any protocol is tunnelled", t(8), &icmp),
        at(
            "to a server from a non-UE host on port 1: routed to port 0, TTL - 1",
            t(9),
            &udp_frame(0x0a32_0001, 0x0a09_0007, 10, 0, 1),
        ),
        at(
            "to 10.20.0.5: routed to port 3",
            t(10),
            &udp_frame(SERVER, 0x0a14_0005, 10, 0, 0),
        ),
        at(
            "to an address neither a UE's nor routed: no route",
            t(11),
            &udp_frame(SERVER, 0x0a1e_0001, 10, 0, 0),
        ),
        at("routed with TTL 1: dropped", t(12), &ttl1),
        at("to the UPF, UDP port 53: its stack", t(13), &to_upf_53),
        at(
            "to the UPF, TCP to port 4789: not a tunnel frame, its stack",
            t(14),
            &tcp_to_upf,
        ),
        at("ARP: the stack's", t(15), &arp),
        at("IHL 4: malformed, dropped", t(16), &ihl4),
        at(
            "UE 0 again after all that: packet_number 7, tunnel_seq 7",
            t(17),
            &downlink(0, 8, 0),
        ),
    ];
    set(
        "atsss-encap",
        "ATSSS UPF: downlink packets encapsulated byte for byte (outer IPv4 from the UPF to the UE's path address, TTL 64, DF, TOS copied; UDP 4789 to the path's port, no checksum; kind 1, path, epoch, packet_number; path_seq, tunnel_seq, sent_us; the inner packet unchanged, padding dropped), WRR draws at the weight's edge, a one-path UE, the MTU's edge, routed and refused frames",
        &[],
        vec![ue(0, SteeringKind::Wrr, 128, 2), ue(1, SteeringKind::Wrr, 0, 1)],
        vec![0, draw_255_of(127), draw_255_of(128), u32::MAX, 0x8000_0000, 0, 0, 0],
        steps,
    )
}

/// Uplink data decapsulated and routed; keepalives consumed.
fn uplink_set() -> VectorSet {
    let t = |k: u64| 2_000 * US + k * US;
    let inner = inner_packet(ue_ip(0), 0x0a09_0003, 30);
    let mut ttl1 = inner.clone();
    ttl1[8] = 1;
    ttl1[10..12].copy_from_slice(&[0, 0]);
    let c = mpsched_core::wire::internet_checksum(&ttl1[..20], 0);
    ttl1[10..12].copy_from_slice(&c.to_be_bytes());
    let mut padded = uplink(0, 1, &inner);
    padded.extend_from_slice(&[0; 6]);
    let steps = vec![
        at(
            "uplink from UE 0 on path 1: decapsulated, routed to port 0 with TTL 63",
            t(0),
            &uplink(0, 1, &inner),
        ),
        at("uplink on path 0, followed by Ethernet padding", t(1), &padded),
        at(
            "uplink whose inner source is not UE 0's address: spoofed, dropped",
            t(2),
            &uplink(0, 0, &inner_packet(ue_ip(5), 0x0a09_0003, 30)),
        ),
        at(
            "uplink to an address without a route: decapsulated, then no route",
            t(3),
            &uplink(0, 0, &inner_packet(ue_ip(0), 0x0b00_0001, 10)),
        ),
        at(
            "uplink with inner TTL 1: decapsulated, then dropped",
            t(4),
            &uplink(0, 0, &ttl1),
        ),
        at(
            "uplink of UE 1 to UE 0: routed as any packet (not tunnelled back): no route",
            t(5),
            &uplink(1, 0, &inner_packet(ue_ip(1), ue_ip(0), 10)),
        ),
        at(
            "keepalive from UE 0 on path 1: counted and consumed",
            t(6),
            &from_ue(0, 1, KIND_KEEPALIVE, 9, &[0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0, 4]),
        ),
        at("a keepalive from an address no UE has: unknown UE", t(7), &{
            let mut f = from_ue(0, 0, KIND_KEEPALIVE, 9, &[0; 12]);
            f[29] = 0x77;
            fix_checksum(&mut f);
            f
        }),
    ];
    set(
        "atsss-uplink",
        "ATSSS UPF: uplink data from a UE decapsulated (its inner source checked against the UE's address) and routed like any packet; keepalives counted and consumed; the registers untouched",
        &[],
        vec![ue(0, SteeringKind::Wrr, 255, 2), ue(1, SteeringKind::Wrr, 255, 1)],
        vec![0],
        steps,
    )
}

/// Acknowledgements into the registers: RTT, minimum, loss, in-flight, stale and impossible
/// ones refused, the delay saturating, the microsecond clock wrapping.
fn acks_set() -> VectorSet {
    let t = |us: u64| us * US;
    let wrap = (1u64 << 32) * US; // the 32-bit microsecond clock wraps here
    let steps = vec![
        at(
            "UE 0 (WRR 255): path 0, path_seq 1, sent_us 1000",
            t(1_000),
            &downlink(0, 64, 0),
        ),
        at("path_seq 2, sent_us 1010", t(1_010), &downlink(0, 64, 0)),
        at("path_seq 3", t(1_020), &downlink(0, 64, 0)),
        at("path_seq 4, sent_us 1030", t(1_030), &downlink(0, 64, 0)),
        at(
            "ack 2 of 2, echo 1010, held 100 us, at 1500: RTT 390 us; in flight 2",
            t(1_500),
            &ack(0, 0, 2, 2, 1_010, 100),
        ),
        at(
            "ack 4, 3 received: one lost; RTT 4000 - 1030 - 20 us; the minimum stays",
            t(4_000),
            &ack(0, 0, 4, 3, 1_030, 20),
        ),
        at(
            "ack 3 after 4 (reordered on the way back): ignored",
            t(4_100),
            &ack(0, 0, 3, 3, 1_020, 0),
        ),
        at(
            "ack 9 of a path that sent 4: ignored",
            t(4_200),
            &ack(0, 0, 9, 9, 1_030, 0),
        ),
        at(
            "ack 4 again, a longer hold than the round trip: RTT 0, a new minimum",
            t(4_300),
            &ack(0, 0, 4, 3, 4_250, 100),
        ),
        at(
            "path 1 acknowledged before anything was sent on it: ignored",
            t(4_400),
            &ack(0, 1, 1, 1, 4_000, 0),
        ),
        at(
            "path 1 acknowledges 0 (nothing): taken, its first RTT sample",
            t(4_500),
            &ack(0, 1, 0, 0, 4_000, 0),
        ),
        at(
            "after the microsecond clock wrapped: sent_us 5",
            wrap + t(5),
            &downlink(0, 64, 0),
        ),
        at(
            "its ack 95 us later: RTT 95 us across the wrap",
            wrap + t(100),
            &ack(0, 0, 5, 4, 5, 0),
        ),
        at(
            "an ack echoing a time before the wrap: RTT 300 us",
            wrap + t(200),
            &ack(0, 0, 5, 4, u32::MAX - 99, 0),
        ),
    ];
    set(
        "atsss-acks",
        "ATSSS UPF: acknowledgements write RTT (now - echo - delay, saturating, across the clock's wrap), minimum RTT, highest acknowledged and loss (highest - received: numbers start at 1); reordered and impossible ones are counted and ignored",
        &[],
        vec![ue(0, SteeringKind::Wrr, 255, 2)],
        vec![0],
        steps,
    )
}

/// Frames to the tunnel port that the UPF cannot read.
fn malformed_set() -> VectorSet {
    let t = |k: u64| 3_000 * US + k * US;
    let good = ack(0, 0, 1, 1, 3_000, 0);
    let edit = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut g = good.clone();
        f(&mut g);
        g
    };
    let with_options = edit(&|g| {
        g.insert(34, 0x01);
        g.insert(34, 0x01);
        g.insert(34, 0x01);
        g.insert(34, 0x01);
        g[14] = 0x46;
        let tot = u16::from_be_bytes([g[16], g[17]]) + 4;
        g[16..18].copy_from_slice(&tot.to_be_bytes());
        fix_checksum(g);
    });
    let mf = edit(&|g| {
        g[20] = 0x20;
        fix_checksum(g);
    });
    let later_fragment = edit(&|g| {
        g[20..22].copy_from_slice(&0x0003u16.to_be_bytes());
        fix_checksum(g);
    });
    let udp_len = edit(&|g| g[38..40].copy_from_slice(&100u16.to_be_bytes()));
    let cut = |keep: usize| {
        edit(&|g| {
            g.truncate(42 + keep);
            let tot = (28 + keep) as u16;
            g[16..18].copy_from_slice(&tot.to_be_bytes());
            g[38..40].copy_from_slice(&(tot - 20).to_be_bytes());
            fix_checksum(g);
        })
    };
    let reserved = edit(&|g| g[45] = 1);
    let kind = |k: u8| edit(&|g| g[42] = k);
    let path1 = edit(&|g| g[43] = 1);
    let from = |addr: Ipv4| {
        edit(&|g| {
            g[26..30].copy_from_slice(&addr.to_be_bytes());
            fix_checksum(g);
        })
    };
    let short_uplink = from_ue(0, 0, KIND_DATA, 1, &[0; 11]);
    let mut v6 = inner_packet(ue_ip(0), SERVER, 10);
    v6[0] = 0x65;
    let mut long_inner = inner_packet(ue_ip(0), SERVER, 10);
    long_inner[2..4].copy_from_slice(&100u16.to_be_bytes());
    let steps = vec![
        at("UE 0 sends one packet on path 0", t(0), &downlink(0, 64, 0)),
        at("an ack with IPv4 options: malformed", t(1), &with_options),
        at("an ack as a first fragment (MF): malformed", t(2), &mf),
        at(
            "a later fragment to the UPF: no UDP header to read, its stack's",
            t(3),
            &later_fragment,
        ),
        at(
            "UDP length other than the IPv4 length less 20: malformed",
            t(4),
            &udp_len,
        ),
        at("no payload: malformed", t(5), &cut(0)),
        at("a header cut at 19 bytes: malformed", t(6), &cut(19)),
        at("an ack body of 15 bytes: malformed", t(7), &cut(35)),
        at("reserved field not 0: malformed", t(8), &reserved),
        at("kind 0: malformed", t(9), &kind(0)),
        at("kind 4: malformed", t(10), &kind(4)),
        at("path 1 from path 0's address: malformed", t(11), &path1),
        at("from an address no UE has: unknown UE", t(12), &from(0x6440_0909)),
        at(
            "from UE 0's own address, which is no path's: unknown UE",
            t(13),
            &from(ue_ip(0)),
        ),
        at(
            "a keepalive of 11 bytes: malformed",
            t(14),
            &from_ue(0, 0, KIND_KEEPALIVE, 3, &[0; 11]),
        ),
        at("uplink data of 11 bytes: malformed", t(15), &short_uplink),
        at("uplink carrying version 6: malformed", t(16), &uplink(0, 0, &v6)),
        at(
            "uplink whose inner length is not what is left: malformed",
            t(17),
            &uplink(0, 0, &long_inner),
        ),
        at("the well-formed ack after all that: taken", t(18), &good),
    ];
    set(
        "atsss-malformed",
        "ATSSS UPF: frames to the tunnel port it cannot read (IPv4 options, fragments, a UDP length at odds, short headers and bodies, reserved bits, unknown kinds, a path that is not the address's) are counted and dropped; unknown senders are refused; the registers move only for the last, good ack",
        &[],
        vec![ue(0, SteeringKind::Wrr, 255, 2)],
        vec![0],
        steps,
    )
}

/// RTTMon's step once per target RTT, up and down, held at 0 and 62, with draws at the edge.
fn rttmon_set() -> VectorSet {
    let dl = || downlink(0, 64, 0);
    let mut steps = vec![
        at("first packet: the interval (target 2 ticks without an RTT) has passed: weight 31 -> 32; draw_64 32 -> path 0 (at most the weight)", 10 * MS, &dl()),
        at("draw_64 33 at weight 32 -> path 1", 10 * MS + 10 * US, &dl()),
        at("path 0 acknowledged: RTT 2 ms (18 ticks), target 26 ticks", 12 * MS, &ack(0, 0, 1, 1, 10_000, 0)),
        at("12.5 ms (tick 108): within the target of the last step (tick 86): no step", 12_500 * US, &dl()),
        at("13.0 ms (tick 112): exactly the target after it, not more: no step", 13 * MS, &dl()),
        at("13.1 ms (tick 113): past the target, the RTT at target: up to 33", 13_100 * US, &dl()),
        at("path 0's RTT 4 ms (35 ticks), above the target", 13_500 * US, &ack(0, 0, 4, 4, 9_500, 0)),
        at("14 ms (tick 121): no step; draw_64 33 at weight 33 -> path 0", 14 * MS, &dl()),
        at("16.4 ms (tick 141): past the target: down to 32", 16_400 * US, &dl()),
    ];
    let mut high = at(
        "weight written 62, the RTT at target (2 ms): stays at 62 on the step",
        30 * MS,
        &ack(0, 0, 6, 6, 28_000, 0),
    );
    high.writes = vec![write("atsss.ue0.weight", 62)];
    steps.push(high);
    steps.push(at(
        "35 ms: the step at 62 with a low RTT keeps 62; draw_64 63 -> path 1 (62 is the top: 1/64 stays on the secondary)",
        35 * MS,
        &dl(),
    ));
    let mut low = at(
        "weight written 0; path 0 acknowledged again, RTT 5 ms, above the target",
        40 * MS,
        &ack(0, 0, 6, 6, 35_000, 0),
    );
    low.writes = vec![write("atsss.weight", 0)];
    steps.push(low);
    steps.push(at(
        "45 ms: the step at 0 with a high RTT keeps 0; draw_64 1 -> path 1 (at 0 only draw 0, 1/64, is the preferred's)",
        45 * MS,
        &dl(),
    ));
    set(
        "atsss-rttmon",
        "ATSSS UPF, RTTMon: the weight steps once per target RTT ((min x 1500) >> 10), up while the preferred path's RTT is at or below target and down above it, held within 0..62; draws at the weight's edge; weights written through the control channel",
        &[],
        vec![ue(0, SteeringKind::RttMon, 31, 2)],
        vec![
            draw_64_of(32),
            draw_64_of(33),
            0,
            0,
            0,
            draw_64_of(33),
            0,
            draw_64_of(63),
            draw_64_of(1),
        ],
        steps,
    )
}

/// DWRR's weight: +1 on a loss-free acknowledgement of the preferred path, - (w >> 3) - 1 on
/// a loss, nothing from the secondary's; saturating at both ends.
fn dwrr_set() -> VectorSet {
    let t = |k: u64| 5_000 * US + k * US;
    let dl = || downlink(0, 64, 0);
    let mut steps = vec![
        at("UE 0 (DWRR 100): path 0", t(0), &dl()),
        at("path 0", t(1), &dl()),
        at("path 0", t(2), &dl()),
        at("ack 1, nothing lost: 101", t(100), &ack(0, 0, 1, 1, 5_000, 0)),
        at(
            "ack 3, 2 received: a loss, 101 - 12 - 1 = 88",
            t(200),
            &ack(0, 0, 3, 2, 5_002, 0),
        ),
        at("ack 3 again, no new loss: 89", t(300), &ack(0, 0, 3, 2, 5_002, 0)),
        at("draw_255 254 -> path 1", t(400), &dl()),
        at(
            "path 1's ack reports a loss: the weight is the preferred path's, unchanged",
            t(500),
            &ack(0, 1, 1, 0, 5_400, 0),
        ),
    ];
    let mut top = at(
        "weight written 255; a loss-free ack keeps 255",
        t(600),
        &ack(0, 0, 3, 2, 5_002, 0),
    );
    top.writes = vec![write("atsss.ue0.weight", 255)];
    steps.push(top);
    steps.push(at("path 0", t(700), &dl()));
    let mut low = at(
        "weight written 3; a loss: 3 - 0 - 1 = 2",
        t(800),
        &ack(0, 0, 4, 2, 5_700, 0),
    );
    low.writes = vec![write("atsss.ue0.weight", 3)];
    steps.push(low);
    steps.push(at("draw 0 -> path 0 at weight 2", t(900), &dl()));
    let mut zero = at("weight written 0; a loss keeps 0", t(1_000), &ack(0, 0, 5, 2, 5_900, 0));
    zero.writes = vec![write("atsss.ue0.weight", 0)];
    steps.push(zero);
    steps.push(at("at weight 0 every draw -> path 1", t(1_100), &dl()));
    set(
        "atsss-dwrr",
        "ATSSS UPF, DWRR: the weight rises by one on each acknowledgement of the preferred path without a new loss and falls by an eighth plus one on one with a new loss; the secondary's acknowledgements leave it; it stays within 0..255",
        &[],
        vec![ue(0, SteeringKind::Dwrr, 100, 2)],
        vec![0, 0, 0, u32::MAX, 0, 0, u32::MAX],
        steps,
    )
}

/// CMon over three paths: window, probe, congestion, window growth, outage, recovery. Ticks
/// (about 116.5 us each) in the notes: the target of path 0 (minimum 18 ticks) is 26, of path
/// 1 (minimum 26, later 23) 38, later 33; a path with packets in flight is down once silent
/// past max(4 targets, the floor of 86 ticks): 104 ticks for path 0, 132 for path 1 at the end.
fn cmon_set() -> VectorSet {
    let dl = || downlink(0, 64, 0);
    let ms = |m: u64| m * MS;
    let mut steps = vec![
        at("nothing measured, nothing in flight: path 0", ms(10), &dl()),
        at(
            "path 0 acknowledged, RTT 2 ms (18 ticks): target 26; none in flight: the window (4) does not grow",
            ms(12),
            &ack(0, 0, 1, 1, 10_000, 0),
        ),
    ];
    for k in 0..4u64 {
        steps.push(at(format!("path 0: {} in flight", k + 1), ms(13) + k * US, &dl()));
    }
    steps.extend([
        at(
            "window full: path 0 unusable, path 1 next; but path 0 was never probed: this is its probe",
            ms(13) + 4 * US,
            &dl(),
        ),
        at("path 1 (unmeasured, empty)", ms(13) + 5 * US, &dl()),
        at(
            "path 1 acknowledged, RTT 3 ms (26 ticks)",
            ms(16),
            &ack(0, 1, 1, 1, 13_005, 0),
        ),
        at(
            "16 ms (tick 138): 26 ticks since the probe, not more: path 1",
            ms(16),
            &dl(),
        ),
        at(
            "path 0 acknowledges 4 of its 6: 2 in flight, half the window: slow start, 4 -> 5",
            ms(17),
            &ack(0, 0, 4, 4, 15_000, 0),
        ),
        at(
            "path 0 acknowledges the other 2: none in flight, under half the window: no growth",
            ms(17) + 5 * US,
            &ack(0, 0, 6, 6, 15_000, 0),
        ),
        at("path 0 usable: path 0", ms(17) + 10 * US, &dl()),
        at(
            "path 0's RTT 5 ms (43 ticks), above target: the window cut by a quarter, 5 -> 4; slow start ends",
            ms(18),
            &ack(0, 0, 7, 7, 13_000, 0),
        ),
        at(
            "a second high RTT 4 ticks after the cut: no second cut",
            ms(18) + 500 * US,
            &ack(0, 0, 7, 7, 13_500, 0),
        ),
        at(
            "path 0 congested, path 1 next; path 0's probe is due (52 ticks since the last): path 0",
            ms(19),
            &dl(),
        ),
        at("path 1", ms(19) + US, &dl()),
        at(
            "path 0's RTT back to 2 ms; none in flight: no growth",
            ms(20),
            &ack(0, 0, 8, 8, 18_000, 0),
        ),
    ]);
    for k in 0..4u64 {
        steps.push(at(format!("path 0: {} in flight", k + 1), ms(21) + k * US, &dl()));
    }
    let at_us = |k: u64| ms(22) + k * US;
    steps.extend([
        at("ack at target, 3 in flight: one of a window of 4 acks", at_us(0), &ack(0, 0, 9, 9, 20_000, 0)),
        at("ack at target, 2 in flight: two of 4", at_us(1), &ack(0, 0, 10, 10, 20_001, 0)),
        at("path 0: 3 in flight", at_us(2), &dl()),
        at("ack at target, 2 in flight: three of 4", at_us(3), &ack(0, 0, 11, 11, 20_002, 0)),
        at("path 0: 3 in flight", at_us(4), &dl()),
        at("ack at target, 2 in flight: a window of acks, the window grows to 5", at_us(5), &ack(0, 0, 12, 12, 20_003, 0)),
        at("ack at target, 1 in flight, under half the window: not counted", at_us(6), &ack(0, 0, 13, 13, 20_004, 0)),
        at("path 0's last acknowledged: in flight 0", ms(24), &ack(0, 0, 14, 14, 22_000, 0)),
        at("path 1 acknowledges its 3: in flight 0", ms(25), &ack(0, 1, 3, 3, 22_000, 0)),
        at("30 ms (tick 258): path 0, then silence from it", ms(30), &dl()),
        at("41 ms (tick 353): silent 95 ticks, down after 104: path 0", ms(41), &dl()),
        at("42.3 ms (tick 363): silent 105 ticks: path 0 down; path 1 next, but path 0's probe is due (a floor since the last): the probe, its interval now doubled", ms(42) + 300 * US, &dl()),
        at("path 1", ms(42) + 400 * US, &dl()),
        at("path 1 acknowledged, RTT 2.6 ms (23 ticks): a new minimum, target 33", ms(45), &ack(0, 1, 4, 4, 42_400, 0)),
        at("50 ms (tick 429): 66 ticks since the probe: path 1, and silence from it", ms(50), &dl()),
        at("52.4 ms (tick 450): 87 ticks since the probe, a floor but not the doubled interval (172): path 1", ms(52) + 400 * US, &dl()),
        at("66.8 ms (tick 574): path 1 silent 145 ticks, past its 132: down too; path 2 next, but path 0's probe is due (211 ticks): the probe, the interval doubled again", ms(66) + 800 * US, &dl()),
        at("paths 0 and 1 down: path 2", ms(66) + 900 * US, &dl()),
        at("path 0 acknowledges everything: up, in flight 0, the probe interval back to its target", ms(67), &ack(0, 0, 18, 18, 65_000, 0)),
        at("path 0 usable: the traffic is back on it", ms(67) + 100 * US, &dl()),
    ]);
    set(
        "atsss-cmon",
        "ATSSS UPF, CMon over three paths (outage floor 10 ms, initial window 4): the most preferred usable path (up, window open, RTT at target); a full window or a high RTT moves traffic on, with one probe of the preferred path per target RTT; the window cut by a quarter once per target on a high RTT, grown at target while half of it is in flight, by one per ack until the first cut and by one per window of acks after; silence past max(4 targets, floor) with packets in flight marks a path down, probed after a floor, then twice as long per unanswered probe; with paths 0 and 1 down, path 2; an ack brings path 0 back",
        &[("outage_floor", FLOOR_PS), ("initial_cwnd", 4)],
        vec![ue(0, SteeringKind::CMon, 0, 3)],
        Vec::new(),
        steps,
    )
}

/// The 3GPP steering modes, one UE each.
fn steering_set() -> VectorSet {
    let ms = |m: u64| m * MS;
    let steps = vec![
        at("UE 0 Active-Standby: the active path (0)", ms(10), &downlink(0, 64, 0)),
        at(
            "UE 0 at 20 ms: path 0 silent 10.0 ms with a packet in flight (floor 86 ticks): still up",
            ms(20),
            &downlink(0, 64, 0),
        ),
        at(
            "UE 0 at 21 ms: down: the standby is next, but the active path was never probed: its probe (0)",
            ms(21),
            &downlink(0, 64, 0),
        ),
        at("UE 0: the standby (1)", ms(21) + 10 * US, &downlink(0, 64, 0)),
        at("UE 0: path 0 acknowledges", ms(22), &ack(0, 0, 3, 3, 20_000, 0)),
        at("UE 0: active again (0)", ms(23), &downlink(0, 64, 0)),
        at(
            "UE 1 Smallest Delay: none measured: the preferred (0)",
            ms(10),
            &downlink(1, 64, 0),
        ),
        at("UE 1: path 0 RTT 3 ms", ms(13), &ack(1, 0, 1, 1, 10_000, 0)),
        at(
            "UE 1: the unmeasured path 1 is next, but path 0 was never probed: its probe (0)",
            ms(14),
            &downlink(1, 64, 0),
        ),
        at(
            "UE 1: the unmeasured path 1 is tried",
            ms(14) + 10 * US,
            &downlink(1, 64, 0),
        ),
        at("UE 1: path 1 RTT 1 ms", ms(15), &ack(1, 1, 1, 1, 14_000, 0)),
        at("UE 1: the unmeasured path 2 is tried", ms(16), &downlink(1, 64, 0)),
        at("UE 1: path 2 RTT 2 ms", ms(18), &ack(1, 2, 1, 1, 16_000, 0)),
        at(
            "UE 1: path 0's probe due again (its target RTT, 36 ticks, since the last): 0",
            ms(19),
            &downlink(1, 64, 0),
        ),
        at("UE 1: the smallest RTT, path 1", ms(19) + 10 * US, &downlink(1, 64, 0)),
        at(
            "UE 2 Load-Balancing 64/255: draw_255 63 -> path 0",
            ms(10),
            &downlink(2, 64, 0),
        ),
        at("UE 2: draw_255 64 -> path 1", ms(11), &downlink(2, 64, 0)),
        at("UE 3 Priority: path 0", ms(10), &downlink(3, 64, 0)),
        at(
            "UE 3: path 0 RTT 2 ms, target 26 ticks",
            ms(12),
            &ack(3, 0, 1, 1, 10_000, 0),
        ),
        at("UE 3: path 0", ms(13), &downlink(3, 64, 0)),
        at("UE 3: path 0 RTT 4 ms: congested", ms(17), &ack(3, 0, 2, 2, 13_000, 0)),
        at(
            "UE 3: path 1 is next, but path 0 was never probed: its probe (0)",
            ms(18),
            &downlink(3, 64, 0),
        ),
        at("UE 3: path 1", ms(18) + 10 * US, &downlink(3, 64, 0)),
        at("UE 3: path 0 back at 2 ms", ms(20), &ack(3, 0, 3, 3, 18_000, 0)),
        at("UE 3: path 0", ms(21), &downlink(3, 64, 0)),
    ];
    set(
        "atsss-steering",
        "ATSSS UPF, the 3GPP steering modes (TS 23.501 5.32.8), one UE each: Active-Standby moves to the standby once the active path is silent past the floor (10 ms) with a packet in flight and back when it answers; Smallest Delay tries unmeasured paths, then the smallest RTT; Load-Balancing draws against its fixed share; Priority leaves the preferred path while its RTT is above target; all but Load-Balancing send the preferred path one probe per its target RTT (per floor while it is down) while another path is chosen",
        &[("outage_floor", FLOOR_PS)],
        vec![
            ue(0, SteeringKind::ActiveStandby, 0, 2),
            ue(1, SteeringKind::SmallestDelay, 0, 3),
            ue(2, SteeringKind::LoadBalancing, 64, 2),
            ue(3, SteeringKind::Priority, 0, 2),
        ],
        vec![draw_255_of(63), draw_255_of(64)],
        steps,
    )
}

#[cfg(test)]
mod tests;
