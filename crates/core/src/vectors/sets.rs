//! The standard conformance sets of the multipath switch (`tests/vectors/*.json` other than a
//! program's own): their tables and frames, built here and written by `mpsched vectors write`.

use super::*;
use crate::feedback::{feedback_payload, DEFAULT_FEEDBACK_PORT};
use crate::packet::{Ecn, Ipv4, PacketMeta, PortId};
use crate::sched::{DwrrParams, SchedulerConfig};
use crate::switch::{ConfluenceConfig, SplitGroupConfig, SwitchConfig};
use crate::table::Route;
use crate::wire::{emit_udp_frame, mac_for};

const SPLITTER: Ipv4 = 0x0aff_0001;
const CONFLUENCE: Ipv4 = 0x0aff_0004;
const STA1: Ipv4 = 0x0a00_0001;
const STA2: Ipv4 = 0x0a00_0002;
const STA3: Ipv4 = 0x0a00_0003;

fn udp(src: Ipv4, dst: Ipv4, ecn: Ecn, payload: usize) -> Vec<u8> {
    let mut m = PacketMeta::udp(src, dst, 5001, 5201, 0);
    m.ecn = ecn;
    let body: Vec<u8> = (0..payload).map(|i| i as u8).collect();
    frame_on_port0(&m, &body)
}

/// `meta`'s UDP frame with `body`, as it arrives on port 0.
fn frame_on_port0(meta: &PacketMeta, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    emit_udp_frame(
        meta,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        1,
        body,
        &mut out,
    );
    out
}

/// Recompute the IPv4 header checksum of a frame whose header a vector edited.
fn fix_ipv4_checksum(frame: &mut [u8]) {
    let ihl = usize::from(frame[14] & 0x0f) * 4;
    frame[24..26].copy_from_slice(&[0, 0]);
    let c = crate::wire::internet_checksum(&frame[14..14 + ihl], 0);
    frame[24..26].copy_from_slice(&c.to_be_bytes());
}

fn feedback(group: u8, path: u8) -> Vec<u8> {
    let m = PacketMeta::udp(CONFLUENCE, SPLITTER, DEFAULT_FEEDBACK_PORT, DEFAULT_FEEDBACK_PORT, 0);
    let mut out = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 1),
        mac_for(OWN_MAC_NODE, 1),
        1,
        &feedback_payload(group, path),
        &mut out,
    );
    out
}

fn ingress(note: impl Into<String>, port: PortId, frame: &[u8]) -> Step {
    Step {
        note: note.into(),
        hook: Hook::Ingress,
        port,
        time_ns: 0,
        frame: to_hex(frame),
        delivery: Delivery::TestRun,
        queue: 0,
        enq_qdepth_pkts: 0,
        sojourn_ns: 0,
        writes: Vec::new(),
        expect: None,
    }
}

/// An ingress step whose frame crosses the port's veth pair into the program (see [`Delivery`]).
fn ingress_wire(note: impl Into<String>, port: PortId, frame: &[u8]) -> Step {
    Step {
        delivery: Delivery::Wire,
        ..ingress(note, port, frame)
    }
}

fn egress(note: impl Into<String>, port: PortId, time_ns: u64, frame: &[u8]) -> Step {
    Step {
        hook: Hook::Egress,
        time_ns,
        ..ingress(note, port, frame)
    }
}

fn splitter(scheduler: SchedulerConfig, n_paths: usize) -> SwitchConfig {
    let mut cfg = SwitchConfig::forwarding(
        SPLITTER,
        vec![
            Route {
                prefix: STA1,
                len: 32,
                port: 0,
            },
            Route {
                prefix: STA2,
                len: 32,
                port: 0,
            },
            Route {
                prefix: CONFLUENCE,
                len: 32,
                port: 1,
            },
        ],
    );
    cfg.splits.push(SplitGroupConfig {
        group: 0,
        src_ip: STA1,
        dst_ip: STA3,
        ports: (1..=n_paths as PortId).collect(),
        scheduler,
        feedback_ports: (1..=n_paths as PortId).collect(),
    });
    cfg
}

fn set(name: &str, description: &str, config: SwitchConfig, n_ports: usize, steps: Vec<Step>) -> VectorSet {
    VectorSet {
        name: name.into(),
        description: description.into(),
        program: multipath(),
        params: BTreeMap::new(),
        config,
        n_ports,
        markers: Vec::new(),
        rs_raw_draws: Vec::new(),
        initial_registers: BTreeMap::new(),
        steps,
    }
}

fn data_steps(n: usize, note: &str) -> Vec<Step> {
    (0..n)
        .map(|i| ingress(format!("{note} {}", i + 1), 0, &udp(STA1, STA3, Ecn::Ect0, 64)))
        .collect()
}

/// The sets kept under `tests/vectors/`, without expectations.
pub fn standard_sets() -> Vec<VectorSet> {
    let mut sets = Vec::new();
    wrr_sets(&mut sets);
    rs_sets(&mut sets);
    dwrr_sets(&mut sets);
    confluence_set(&mut sets);
    marker_set(&mut sets);
    malformed_set(&mut sets);
    vlan_set(&mut sets);
    ecmp_set(&mut sets);
    classifier_set(&mut sets);
    sets
}

/// WRR over two and three paths, then LPM and an ignored feedback packet.
fn wrr_sets(sets: &mut Vec<VectorSet>) {
    for (name, weights) in [
        ("wrr-2-1", vec![2u16, 1]),
        ("wrr-2-4", vec![2, 4]),
        ("wrr-3-paths", vec![3, 2, 1]),
    ] {
        let n = weights.len();
        let period: usize = weights.iter().map(|&w| usize::from(w)).sum();
        sets.push(set(
            name,
            &format!("WRR {weights:?}: two periods of the split flow, then other traffic routed by LPM"),
            splitter(SchedulerConfig::Wrr { weights }, n),
            n + 1,
            {
                let mut s = data_steps(2 * period, "split packet");
                s.push(ingress(
                    "sta2 -> confluence, routed",
                    0,
                    &udp(STA2, CONFLUENCE, Ecn::NotEct, 64),
                ));
                s.push(ingress("feedback to a WRR splitter is ignored", 1, &feedback(0, 1)));
                s
            },
        ));
    }
}

/// RS with fixed raw draws.
fn rs_sets(sets: &mut Vec<VectorSet>) {
    // RS with raw draws at the range edges: 1 + (draw * 100) >> 32.
    let mut rs = set(
        "rs-fixed-draws",
        "RS 67:33 (ranges 1-67, 68-100) with raw draws at the edges of each range",
        splitter(
            SchedulerConfig::Rs {
                shares_pct: vec![67, 33],
            },
            2,
        ),
        3,
        data_steps(8, "split packet"),
    );
    rs.rs_raw_draws = vec![
        0,
        2_834_678_416,
        2_877_628_088,
        2_877_628_089,
        u32::MAX,
        1 << 31,
        42,
        4_000_000_000,
    ];
    sets.push(rs);
    let mut rs3 = set(
        "rs-three-paths",
        "RS 1:1:1 (ranges 1-34, 35-67, 68-100) over three paths",
        splitter(
            SchedulerConfig::Rs {
                shares_pct: vec![1, 1, 1],
            },
            3,
        ),
        4,
        data_steps(6, "split packet"),
    );
    rs3.rs_raw_draws = vec![0, 1_417_339_207, 1_417_339_208, 2_834_678_415, 2_834_678_416, u32::MAX];
    sets.push(rs3);
}

/// DWRR: every branch of the window's end, and the congestion avoidance.
fn dwrr_sets(sets: &mut Vec<VectorSet>) {
    // DWRR: window = period x groups. Weights 2:1 x scale 2 = 4:2, period 6, groups 2.
    let dwrr = |weights: Vec<u16>, params: DwrrParams| SchedulerConfig::Dwrr { weights, params };
    let p2 = DwrrParams {
        groups: 2,
        weight_scale: 2,
        avoidance_drop_pkts: 4,
        ..DwrrParams::default()
    };
    let mut steps = data_steps(12, "window 1, no feedback");
    steps.push(ingress("feedback: path 2 congested", 1, &feedback(0, 1)));
    steps.push(ingress("feedback: path 2 congested again", 2, &feedback(0, 1)));
    steps.extend(data_steps(12, "window 2, path 2 reported: 4:2 -> 5:1"));
    steps.extend(data_steps(12, "window 3, no feedback: weights stay"));
    steps.push(ingress("feedback: path 1", 1, &feedback(0, 0)));
    steps.push(ingress("feedback: path 2", 2, &feedback(0, 1)));
    steps.extend(data_steps(
        12,
        "window 4, both reported: congestion avoidance at its end",
    ));
    steps.extend(data_steps(6, "avoidance drops 4, then WRR resumes"));
    steps.push(ingress("feedback for an unknown group", 1, &feedback(7, 0)));
    steps.push(ingress("feedback for a path out of range", 1, &feedback(0, 5)));
    steps.push(ingress(
        "forged feedback from the sender's side (port 0): untrusted, not counted",
        0,
        &feedback(0, 0),
    ));
    let mut bad_magic = feedback(0, 1);
    let n = bad_magic.len();
    bad_magic[n - 8] = b'X';
    steps.push(ingress(
        "UDP to the feedback port without the magic: local",
        1,
        &bad_magic,
    ));
    sets.push(set(
        "dwrr-branches",
        "DWRR 2:1 (scale 2, groups 2): no feedback, some paths (weight moves, min_weight holds), every path (congestion avoidance), unknown group and path",
        splitter(dwrr(vec![2, 1], p2.clone()), 2),
        3,
        steps,
    ));

    let p3 = DwrrParams {
        groups: 1,
        weight_scale: 4,
        max_step: 0,
        ..DwrrParams::default()
    };
    let mut steps = Vec::new();
    for w in 0..4 {
        for _ in 0..3 {
            steps.push(ingress(
                format!("feedback: path 2 (window {})", w + 1),
                1,
                &feedback(0, 1),
            ));
        }
        steps.extend(data_steps(12, &format!("window {}", w + 1)));
    }
    sets.push(set(
        "dwrr-three-paths",
        "DWRR 1:1:1 (scale 4, groups 1, no step cap): path 2 keeps reporting; freed units go round robin from the cursor",
        splitter(dwrr(vec![1, 1, 1], p3), 3),
        4,
        steps,
    ));
}

/// The confluence point's CE counting and feedback.
fn confluence_set(sets: &mut Vec<VectorSet>) {
    // The confluence point: paths arrive on ports 1 and 2, the destination is on port 0.
    let mut conf = SwitchConfig::forwarding(
        CONFLUENCE,
        vec![
            Route {
                prefix: STA3,
                len: 32,
                port: 0,
            },
            Route {
                prefix: SPLITTER,
                len: 32,
                port: 1,
            },
        ],
    );
    conf.confluences.push(ConfluenceConfig {
        group: 0,
        src_ip: STA1,
        dst_ip: STA3,
        path_ingress_ports: vec![1, 2],
        return_ports: vec![1, 2],
        splitter_ip: SPLITTER,
        feedback_every: 16,
    });
    let mut steps = Vec::new();
    for i in 0..5 {
        steps.push(ingress(
            format!("CE on path 1 ({})", i + 1),
            1,
            &udp(STA1, STA3, Ecn::Ce, 64),
        ));
    }
    steps.push(ingress(
        "ECT(0) on path 2: not counted",
        2,
        &udp(STA1, STA3, Ecn::Ect0, 64),
    ));
    for i in 0..16 {
        steps.push(ingress(
            format!("CE on path 2 ({}); the 16th sends feedback over path 1", i + 1),
            2,
            &udp(STA1, STA3, Ecn::Ce, 64),
        ));
    }
    for i in 0..11 {
        steps.push(ingress(
            format!("CE on path 1 ({}); the 16th sends feedback over path 2", i + 6),
            1,
            &udp(STA1, STA3, Ecn::Ce, 64),
        ));
    }
    steps.push(ingress(
        "CE on an unknown port: not counted",
        3,
        &udp(STA1, STA3, Ecn::Ce, 64),
    ));
    sets.push(set(
        "confluence-feedback",
        "Confluence point: one feedback per 16 CE arrivals on a path, sent back over the path with the fewest pending marks",
        conf,
        4,
        steps,
    ));
}

/// The egress virtual-queue marker.
fn marker_set(sets: &mut Vec<VectorSet>) {
    // The egress marker: 8 Mbit/s, threshold 3000 B, capacity 6000 B; 1000-byte frames.
    let mut steps = Vec::new();
    let f = |ecn| {
        let mut v = udp(STA1, STA3, ecn, 958);
        v.truncate(1000);
        v
    };
    for i in 0..3 {
        steps.push(egress(
            format!("burst {}: below the threshold", i + 1),
            1,
            0,
            &f(Ecn::Ect0),
        ));
    }
    steps.push(egress("finds 3000 B: marked", 1, 0, &f(Ecn::Ect0)));
    steps.push(egress(
        "Not-ECT over the threshold: counted, unmarked",
        1,
        0,
        &f(Ecn::NotEct),
    ));
    steps.push(egress("ECT(1): marked", 1, 0, &f(Ecn::Ect1)));
    steps.push(egress("full: overflow, CE stays CE", 1, 0, &f(Ecn::Ce)));
    steps.push(egress("3.5 ms later 3500 B drained", 1, 3_500_000, &f(Ecn::Ect0)));
    let mut arp = f(Ecn::NotEct);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    steps.push(egress("ARP: counted in the backlog, not marked", 1, 3_500_000, &arp));
    steps.push(egress("a second idle: queue empty", 1, 1_003_500_000, &f(Ecn::Ect0)));
    steps.push(egress("port without a marker", 2, 1_003_500_000, &f(Ecn::Ect0)));
    let mut mk = set(
        "marker-virtual-queue",
        "Egress ECN marking on a virtual queue drained at the link rate",
        splitter(SchedulerConfig::Wrr { weights: vec![1, 1] }, 2),
        3,
        steps,
    );
    mk.markers = vec![MarkerConfig {
        port: 1,
        rate_bps: 8_000_000,
        threshold_bytes: 3000,
        limit_bytes: 6000,
    }];
    sets.push(mk);
}

/// Malformed and special frames at a splitter.
fn malformed_set(sets: &mut Vec<VectorSet>) {
    // Malformed and special frames at a splitter.
    let good = udp(STA1, STA3, Ecn::Ect0, 64);
    let mut steps = vec![ingress("well-formed split packet", 0, &good)];
    // BPF_PROG_TEST_RUN refuses IPv4 frames shorter than Ethernet + 20 bytes (34), so the
    // shortest truncations are pinned by the Rust unit tests of `wire` only (see the README).
    steps.push(ingress(
        "runt: 42-byte IPv4/UDP frame with no payload (under Ethernet's 60): forwarded",
        0,
        &udp(STA1, STA3, Ecn::Ect0, 0),
    ));
    let mut trunc = good[..34].to_vec();
    trunc[14] = 0x46;
    steps.push(ingress(
        "truncated IPv4 header: IHL 6, frame ends after 20 bytes",
        0,
        &trunc,
    ));
    let mut ihl = good.clone();
    ihl[14] = 0x44;
    steps.push(ingress("IHL 4 (< 5)", 0, &ihl));
    let mut ver = good.clone();
    ver[14] = 0x65;
    steps.push(ingress("version 6 under the IPv4 EtherType", 0, &ver));
    let mut long = good.clone();
    long[16..18].copy_from_slice(&2000u16.to_be_bytes());
    steps.push(ingress("total length beyond the frame", 0, &long));
    let mut short = good.clone();
    short[16..18].copy_from_slice(&16u16.to_be_bytes());
    steps.push(ingress("total length shorter than the header", 0, &short));
    let mut ihl_trunc = good[..40].to_vec();
    ihl_trunc[14] = 0x4f;
    steps.push(ingress("IHL 15 (60 bytes) in a 26-byte packet", 0, &ihl_trunc));
    // IPv4 options: IHL 6 with a 4-byte NOP option.
    let mut opt = good[..34].to_vec();
    opt[14] = 0x46;
    opt.extend_from_slice(&[1, 1, 1, 0]);
    opt.extend_from_slice(&good[34..]);
    let tl = u16::from_be_bytes([opt[16], opt[17]]) + 4;
    opt[16..18].copy_from_slice(&tl.to_be_bytes());
    fix_ipv4_checksum(&mut opt);
    steps.push(ingress("IPv4 options (IHL 6): forwarded", 0, &opt));
    let mut frag1 = good.clone();
    frag1[20..22].copy_from_slice(&0x2000u16.to_be_bytes());
    fix_ipv4_checksum(&mut frag1);
    steps.push(ingress("first fragment (MF): forwarded", 0, &frag1));
    let mut frag2 = good.clone();
    frag2[20..22].copy_from_slice(&0x00b9u16.to_be_bytes());
    fix_ipv4_checksum(&mut frag2);
    steps.push(ingress("non-first fragment: forwarded", 0, &frag2));
    let mut arp = good.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    steps.push(ingress("ARP: to the node's stack", 0, &arp));
    let mut v6 = good.clone();
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    steps.push(ingress("IPv6: to the node's stack", 0, &v6));
    let mut ttl1 = udp(STA2, CONFLUENCE, Ecn::NotEct, 64);
    ttl1[22] = 1;
    steps.push(ingress("TTL 1: dropped", 0, &ttl1));
    let mut ttl0 = ttl1.clone();
    ttl0[22] = 0;
    steps.push(ingress("TTL 0: dropped", 0, &ttl0));
    steps.push(ingress("no route", 0, &udp(STA2, 0x0b00_0001, Ecn::NotEct, 64)));
    steps.push(ingress(
        "to this node, not feedback: to the stack",
        0,
        &udp(STA2, SPLITTER, Ecn::NotEct, 64),
    ));
    let mut padded = good.clone();
    padded.extend_from_slice(&[0; 20]);
    steps.push(ingress("Ethernet padding after the IPv4 packet: forwarded", 0, &padded));
    sets.push(set(
        "malformed",
        "Malformed and special frames: each forwarded, handed to the stack, or counted and dropped",
        splitter(SchedulerConfig::Wrr { weights: vec![1, 1] }, 2),
        3,
        steps,
    ));
}

/// ECMP routing: a route to an ECMP group of three ports; each flow's port is its 5-tuple's
/// hash with the switch's seed; what has no ports (other protocols, later fragments) hashes
/// them as zero.
fn ecmp_set(sets: &mut Vec<VectorSet>) {
    let flow = |src_port: u16, dst_port: u16| {
        let m = PacketMeta::udp(STA1, STA3, src_port, dst_port, 0);
        frame_on_port0(&m, &[0u8; 64])
    };
    let mut steps: Vec<Step> = (0..12u16)
        .map(|i| ingress(format!("UDP flow from port {}", 40_000 + i), 0, &flow(40_000 + i, 5201)))
        .collect();
    steps.push(ingress("the first flow again: the same port", 0, &flow(40_000, 5201)));
    let mut tcp = flow(40_000, 5201);
    tcp[23] = 6;
    fix_ipv4_checksum(&mut tcp);
    steps.push(ingress("TCP with the first flow's ports", 0, &tcp));
    let mut icmp = flow(40_000, 5201);
    icmp[23] = 1;
    fix_ipv4_checksum(&mut icmp);
    steps.push(ingress("ICMP: ports hashed as zero", 0, &icmp));
    let mut frag = flow(40_001, 5201);
    frag[20..22].copy_from_slice(&0x00b9u16.to_be_bytes());
    fix_ipv4_checksum(&mut frag);
    steps.push(ingress("a later fragment: ports hashed as zero", 0, &frag));
    let mut short_tcp = flow(40_002, 5201)[..14 + 20 + 12].to_vec();
    short_tcp[17] = 32;
    short_tcp[23] = 6;
    fix_ipv4_checksum(&mut short_tcp);
    steps.push(ingress(
        "TCP with 12 of its 20 header bytes: ports hashed as zero",
        0,
        &short_tcp,
    ));
    let mut cfg = SwitchConfig::forwarding(
        SPLITTER,
        vec![
            Route {
                prefix: STA1,
                len: 32,
                port: 0,
            },
            Route {
                prefix: STA3,
                len: 32,
                port: crate::table::ECMP_GROUP,
            },
        ],
    );
    cfg.ecmp_groups = vec![vec![1, 2, 3]];
    cfg.hash_seed = SPLITTER;
    sets.push(set(
        "ecmp-routing",
        "ECMP routing: a route to a group of three ports, one chosen per flow by the seeded 5-tuple hash",
        cfg,
        4,
        steps,
    ));
}

/// `frame` with a VLAN tag (TPID, then PCP 0 / DEI 0 / `vid`) after the MAC addresses.
fn tagged(frame: &[u8], tpid: u16, vid: u16) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&(vid & 0x0fff).to_be_bytes());
    out.extend_from_slice(&frame[12..]);
    out
}

/// 802.1Q and 802.1ad frames: the switch routes untagged IPv4 only (as the papers' P4 parsers,
/// Ethernet then IPv4); a tagged frame is not its to split, wherever the tag is held.
fn vlan_set(sets: &mut Vec<VectorSet>) {
    let good = udp(STA1, STA3, Ecn::Ect0, 64);
    let q = tagged(&good, 0x8100, 10);
    let steps = vec![
        ingress("untagged split packet, handed to the program: path 1", 0, &good),
        ingress_wire(
            "untagged split packet across the veth pair: path 2 (the live path reaches the program)",
            0,
            &good,
        ),
        ingress("802.1Q (VID 10) in the frame: to the node's stack", 0, &q),
        ingress_wire(
            "802.1Q (VID 10) across the veth pair: the kernel moves the tag to skb->vlan_tci; still to the stack",
            0,
            &q,
        ),
        ingress_wire(
            "802.1Q priority tag (VID 0) across the veth pair: to the stack",
            0,
            &tagged(&good, 0x8100, 0),
        ),
        ingress_wire(
            "802.1ad outer tag (VID 20) over 802.1Q (VID 10) across the veth pair: to the stack",
            0,
            &tagged(&q, 0x88a8, 20),
        ),
        ingress_wire("untagged again: WRR resumes where it was (path 1)", 0, &good),
    ];
    sets.push(set(
        "vlan",
        "802.1Q / 802.1ad frames are not split: to the node's stack, whether the tag is in the frame or the kernel has moved it to skb->vlan_tci",
        splitter(SchedulerConfig::Wrr { weights: vec![1, 1] }, 2),
        3,
        steps,
    ));
}

/// The classifier: rules on source (a host, a /24), destination and DSCP, first match first;
/// a matching packet leaves with the class selector of its queue and its ECN as it came.
fn classifier_set(sets: &mut Vec<VectorSet>) {
    use crate::classify::ClassRule;
    const NET1: Ipv4 = 0x0a00_0100;
    let frame = |src: Ipv4, dst: Ipv4, dscp: u8, ecn: Ecn| {
        let mut m = PacketMeta::udp(src, dst, 5001, 5201, 0);
        (m.dscp, m.ecn) = (dscp, ecn);
        frame_on_port0(&m, &[0u8; 64])
    };
    let cases = [
        ("H1, DSCP 0: the first rule, CS5", STA1, STA3, 0, Ecn::Ect0),
        ("H1, DSCP 8: no rule (the first wants DSCP 0)", STA1, STA3, 8, Ecn::Ect0),
        (
            "from 10.0.1.7, CE: the /24's rule, CS3, CE kept",
            NET1 | 7,
            STA3,
            0,
            Ecn::Ce,
        ),
        ("H2 to H3, EF: the third rule, CS1", STA2, STA3, 46, Ecn::NotEct),
        ("H2 to H1, EF: no rule (the third wants H3)", STA2, STA1, 46, Ecn::Ect1),
        ("from 10.0.1.7, already CS3: unchanged", NET1 | 7, STA1, 24, Ecn::Ect0),
        (
            "from 10.0.1.7 to H3, EF: the /24's rule and the third match, the first wins (CS3)",
            NET1 | 7,
            STA3,
            46,
            Ecn::Ect0,
        ),
        (
            "from 10.0.1.7, CS7: network control, never classified",
            NET1 | 7,
            STA3,
            56,
            Ecn::Ect0,
        ),
        (
            "from the switch's own address: never classified",
            SPLITTER,
            STA3,
            46,
            Ecn::Ect0,
        ),
    ];
    let steps = cases
        .iter()
        .map(|&(note, src, dst, dscp, ecn)| ingress(note, 0, &frame(src, dst, dscp, ecn)))
        .collect();
    let mut cfg = SwitchConfig::forwarding(
        SPLITTER,
        vec![
            Route {
                prefix: STA1,
                len: 32,
                port: 0,
            },
            Route {
                prefix: STA3,
                len: 32,
                port: 1,
            },
        ],
    );
    let rule = |src: Ipv4, src_len: u8, dst: Ipv4, dst_len: u8, dscp: Option<u8>, queue: u8| ClassRule {
        src,
        src_len,
        dst,
        dst_len,
        dscp,
        queue,
    };
    cfg.classify = vec![
        rule(STA1, 32, 0, 0, Some(0), 5),
        rule(NET1, 24, 0, 0, None, 3),
        rule(0, 0, STA3, 32, Some(46), 1),
    ];
    sets.push(set(
        "classifier",
        "the classifier: source host with DSCP 0 to queue 5, a source /24 to queue 3, EF to one destination to queue 1; first match first, DSCP rewritten to the class selector, ECN kept; network control (CS7) and the switch's own address never classified",
        cfg,
        2,
        steps,
    ));
}
