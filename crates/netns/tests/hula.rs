//! HULA and MP-HULA on the kernel.
//!
//! - Their eBPF program against the conformance vectors: every `tests/vectors/hula-*.json` and
//!   `mphula-*.json` replayed by the kernel backend's runner (`run_ebpf`, as `mpsched vectors
//!   check` does) through `BPF_PROG_TEST_RUN`.
//! - The program on a ToR, step by step: probes originated and folded, data to the best hop,
//!   the MPTCP handshake of both versions associated with the tokens computed in eBPF equal to
//!   `mpsched_core::mptcp::crypto::token`, a join, the connection header pushed and popped.
//! - The TCP option parser fuzzed: thousands of segments with random and malformed option
//!   blocks; no crash, verdicts and counters that add up, and the association tables moved
//!   exactly when the Rust parser (`wire::parse_frame_with_mptcp`) finds an option that moves them.
//! - Live: a k = 4 fat tree of `mphula` switches with kernel MPTCP connections of two subflows;
//!   the two subflows of a connection leave the source ToR by different uplinks.
//!
//! Needs root (and tc, iperf3 for the live run); without them the tests are reported ignored
//! with the reason, and under CI=true they fail instead.

use mpsched_core::mptcp::crypto::{token, MptcpVersion};
use mpsched_core::mptcp::MptcpOption;
use mpsched_core::packet::{HeaderExt, Ipv4, PacketMeta};
use mpsched_core::probe::{DestTor, PortDir, ProbeConfig, ProbePort};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::{Route, ECMP_GROUP};
use mpsched_core::vectors::{
    compare, to_hex, Hook, Observed, Step, StepResult, VectorSet, OWN_MAC_NODE, PEER_MAC_NODE,
};
use mpsched_core::wire::{emit_tcp_frame, emit_udp_frame, mac_for, parse_frame_with_mptcp, tcp_flags, TcpFields};
use mpsched_netns::programs::hula::vectors::run_vectors;
use mpsched_netns::programs::hula::{create_trigger, HulaPlane, INGRESS};
use mpsched_netns::vectors::{run_ebpf, test_run_prog, TestNode};
use mpsched_programs::hula::assoc::{AssocEvent, Association};
use mpsched_programs::hula::switch::canonical_hash;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[path = "hula/live.rs"]
mod live;

/// Held by the tests that measure time or load the machine (the prober's cost, the bench rows,
/// the live fat tree), so that the harness's parallel threads do not run them together.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

fn hula_sets() -> Vec<VectorSet> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut sets: Vec<VectorSet> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            (n.starts_with("hula-") || n.starts_with("mphula-")) && n.ends_with(".json")
        })
        .map(|p| serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap())
        .collect();
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    sets
}

fn hula_ebpf_agrees_with_its_vectors() {
    let sets = hula_sets();
    assert!(!sets.is_empty(), "no hula-*.json / mphula-*.json under tests/vectors");
    let mut errs = Vec::new();
    for set in &sets {
        let (init, res) = run_ebpf(set).unwrap_or_else(|e| panic!("{}: {e}", set.name));
        errs.extend(compare(set, &init, &res));
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

// ---- A ToR, step by step -------------------------------------------------------------------

const TOR_IP: Ipv4 = 0x0aff_0001;
const H1: Ipv4 = 0x0a00_0001;
const H2: Ipv4 = 0x0a00_0002;
const REMOTE: Ipv4 = 0x0a00_0105;
const US: u64 = 1000;

/// ToR 0 of two: hosts H1, H2 on ports 0 and 1, uplinks 2 and 3 (an equal-cost group) to
/// ToR 1's hosts, 10.0.1.0/24.
fn tor_config() -> SwitchConfig {
    let mut c = SwitchConfig::forwarding(
        TOR_IP,
        vec![
            Route {
                prefix: H1,
                len: 32,
                port: 0,
            },
            Route {
                prefix: H2,
                len: 32,
                port: 1,
            },
            Route {
                prefix: 0x0a00_0100,
                len: 24,
                port: ECMP_GROUP,
            },
        ],
    );
    c.ecmp_groups = vec![vec![2, 3]];
    c.hash_seed = 0x5eed;
    let port = |dir| ProbePort {
        dir,
        rate_bps: 10_000_000_000,
    };
    c.probe = Some(ProbeConfig {
        tor_id: Some(0),
        n_tors: 2,
        ports: vec![
            port(PortDir::Host),
            port(PortDir::Host),
            port(PortDir::Up),
            port(PortDir::Up),
        ],
        dest_tors: vec![
            DestTor {
                prefix: 0x0a00_0000,
                len: 24,
                tor: 0,
            },
            DestTor {
                prefix: 0x0a00_0100,
                len: 24,
                tor: 1,
            },
        ],
    });
    c
}

fn tor_set(program: &str, steps: Vec<Step>) -> VectorSet {
    let mut params = BTreeMap::new();
    for k in ["table_entries", "assoc_entries", "conn_entries"] {
        if program == "mphula" || k == "table_entries" {
            params.insert(k.to_string(), 16);
        }
    }
    VectorSet {
        name: format!("{program}-tor"),
        description: "a ToR with two hosts and two uplinks".into(),
        program: program.into(),
        params,
        config: tor_config(),
        n_ports: 4,
        markers: Vec::new(),
        rs_raw_draws: Vec::new(),
        initial_registers: BTreeMap::new(),
        steps,
    }
}

fn step(note: &str, hook: Hook, port: u16, t_us: u64, frame: Vec<u8>) -> Step {
    Step {
        note: note.into(),
        hook,
        port,
        time_ns: t_us * US,
        frame: to_hex(&frame),
        delivery: Default::default(),
        queue: 0,
        enq_qdepth_pkts: 0,
        sojourn_ns: 0,
        writes: Vec::new(),
        expect: None,
    }
}

fn probe_frame(tor: u16, hops: u8, util: u32, in_port: u16) -> Vec<u8> {
    let mut f = mpsched_netns::programs::hula::probe_template(0x0aff_0002, tor);
    f[0..6].copy_from_slice(&mac_for(OWN_MAC_NODE, in_port));
    f[6..12].copy_from_slice(&mac_for(PEER_MAC_NODE, in_port));
    f[20] = hops;
    f[22..26].copy_from_slice(&util.to_be_bytes());
    f
}

fn udp(src: Ipv4, dst: Ipv4, sport: u16, in_port: u16) -> Vec<u8> {
    let m = PacketMeta::udp(src, dst, sport, 5201, 0);
    let mut out = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, in_port),
        mac_for(OWN_MAC_NODE, in_port),
        1,
        &[0; 18],
        &mut out,
    );
    out
}

fn tcp(src: Ipv4, dst: Ipv4, ports: (u16, u16), flags: u8, opt: Option<MptcpOption>, in_port: u16) -> Vec<u8> {
    let mut m = PacketMeta::udp(src, dst, ports.0, ports.1, 0);
    m.proto = mpsched_core::packet::proto::TCP;
    let fields = TcpFields {
        flags,
        window: 100,
        mptcp: opt,
        ..Default::default()
    };
    let mut out = Vec::new();
    let (s, d) = (mac_for(PEER_MAC_NODE, in_port), mac_for(OWN_MAC_NODE, in_port));
    emit_tcp_frame(&m, s, d, 1, &fields, 0, &mut out);
    out
}

fn capable(version: u8, sender: Option<u64>, receiver: Option<u64>) -> Option<MptcpOption> {
    Some(MptcpOption::Capable {
        version,
        flags: 0x01,
        sender_key: sender,
        receiver_key: receiver,
        data: None,
    })
}

fn join(t: u32) -> Option<MptcpOption> {
    Some(MptcpOption::JoinSyn {
        backup: false,
        address_id: 1,
        receiver_token: t,
        sender_nonce: 7,
    })
}

fn run(set: &VectorSet) -> Vec<StepResult> {
    run_vectors(set).unwrap_or_else(|e| panic!("{e}")).1
}

fn obs(r: &[StepResult], i: usize) -> &Observed {
    &r[i].observed
}

fn probes_originate_fold_and_steer_data() {
    let steps = vec![
        step("timer", Hook::Timer, 0, 200, Vec::new()),
        step(
            "probe of ToR 1 by port 2, util 100",
            Hook::Ingress,
            2,
            210,
            probe_frame(1, 1, 100, 2),
        ),
        step(
            "probe of ToR 1 by port 3, util 50",
            Hook::Ingress,
            3,
            220,
            probe_frame(1, 1, 50, 3),
        ),
        step(
            "data to ToR 1: the least utilised hop",
            Hook::Ingress,
            0,
            230,
            udp(H1, REMOTE, 1000, 0),
        ),
        step(
            "the same flow continues",
            Hook::Ingress,
            0,
            240,
            udp(H1, REMOTE, 1000, 0),
        ),
        step("a 1500-byte frame leaves port 3", Hook::Egress, 3, 250, vec![0u8; 1500]),
        step(
            "probe of our own ToR: refused",
            Hook::Ingress,
            2,
            260,
            probe_frame(0, 1, 0, 2),
        ),
        step(
            "probe from a host port: refused",
            Hook::Ingress,
            0,
            270,
            probe_frame(1, 1, 0, 0),
        ),
        step(
            "after the ageing time: fallback",
            Hook::Ingress,
            0,
            5000,
            udp(H1, REMOTE, 1001, 0),
        ),
    ];
    let r = run(&tor_set("hula", steps));
    assert_eq!(obs(&r, 0).action, "timer");
    let p: Vec<_> = obs(&r, 0)
        .probes
        .iter()
        .map(|p| (p.port, p.tor, p.hops, p.util))
        .collect();
    assert_eq!(p, [(2, 0, 0, 0), (3, 0, 0, 0)], "{:?}", obs(&r, 0));
    assert_eq!(r[2].registers["best.1.0.port"], 3);
    assert_eq!(r[2].registers["best.1.0.util"], 50);
    assert_eq!(r[2].registers["counter.hula.probes_in"], 2);
    assert_eq!(obs(&r, 3).port, Some(3));
    assert_eq!(r[4].registers["counter.hula.continued"], 1);
    // 1500 bytes at 10 Gbit/s with tau = 512 us: util = 1500 * 2^40 / 640000 >> 24.
    assert_eq!(r[5].registers["txutil.3.bytes"], 1500);
    assert_eq!(r[5].registers["txutil.3.last_us"], 250);
    assert_eq!(r[7].registers["counter.hula.probes_refused"], 2);
    assert_eq!(r[8].registers["counter.hula.fallback"], 1);
    assert_eq!(r[8].registers["counter.hula.aged"], 0);
}

fn mptcp_both_versions_associate_with_the_tokens_of_core() {
    let (ka, kb) = (0x0123_4567_89ab_cdef_u64, 0xfedc_ba98_7654_3210_u64);
    let (a, b) = ((40000, 5201), (5201, 40000));
    let steps = vec![
        step("probe by 2", Hook::Ingress, 2, 10, probe_frame(1, 1, 10, 2)),
        step("probe by 3", Hook::Ingress, 3, 11, probe_frame(1, 1, 20, 3)),
        step(
            "v1 SYN",
            Hook::Ingress,
            0,
            20,
            tcp(H1, REMOTE, a, tcp_flags::SYN, capable(1, None, None), 0),
        ),
        step(
            "v1 SYN/ACK",
            Hook::Ingress,
            2,
            30,
            tcp(REMOTE, H1, b, 0x12, capable(1, Some(kb), None), 2),
        ),
        step(
            "v1 ACK",
            Hook::Ingress,
            0,
            40,
            tcp(H1, REMOTE, a, tcp_flags::ACK, capable(1, Some(ka), Some(kb)), 0),
        ),
        step(
            "join SYN",
            Hook::Ingress,
            0,
            50,
            tcp(
                H1,
                REMOTE,
                (40001, 5201),
                tcp_flags::SYN,
                join(token(MptcpVersion::V1, kb)),
                0,
            ),
        ),
        step(
            "data of subflow 2",
            Hook::Ingress,
            0,
            150,
            tcp(H1, REMOTE, (40001, 5201), tcp_flags::ACK, None, 0),
        ),
        // Subflow 1's flowlet (from its SYN, t = 20..40) has been idle for the gap: a new one,
        // away from the hop subflow 2 holds.
        step(
            "data of subflow 1",
            Hook::Ingress,
            0,
            200,
            tcp(H1, REMOTE, a, tcp_flags::ACK, None, 0),
        ),
        step(
            "v0 SYN",
            Hook::Ingress,
            1,
            80,
            tcp(
                H2,
                REMOTE,
                (41000, 80),
                tcp_flags::SYN,
                capable(0, Some(ka ^ 1), None),
                1,
            ),
        ),
        step(
            "v0 SYN/ACK",
            Hook::Ingress,
            3,
            90,
            tcp(REMOTE, H2, (80, 41000), 0x12, capable(0, Some(kb ^ 1), None), 3),
        ),
    ];
    let set = tor_set("mphula", steps);
    let r = run(&set);
    let conn = |v, ka, kb| (u64::from(token(v, ka)) << 32) | u64::from(token(v, kb));
    let conns = |i: usize| -> Vec<u64> {
        r[i].registers
            .iter()
            .filter(|(k, _)| k.starts_with("assoc.") && k.ends_with(".conn_id"))
            .map(|(_, v)| *v)
            .collect()
    };
    assert_eq!(r[4].registers["counter.mphula.assoc"], 1, "{:?}", r[4].registers);
    assert_eq!(conns(4), [conn(MptcpVersion::V1, ka, kb)]);
    assert_eq!(r[5].registers["counter.mphula.joins"], 1);
    let c1 = conn(MptcpVersion::V1, ka, kb);
    assert_eq!(
        obs(&r, 6).conn.map(|c| (c.conn_id, c.subflow)),
        Some((c1, 2)),
        "{:?}",
        obs(&r, 6)
    );
    assert_eq!(
        obs(&r, 7).conn.map(|c| (c.conn_id, c.subflow)),
        Some((c1, 1)),
        "{:?}",
        obs(&r, 7)
    );
    assert_ne!(obs(&r, 6).port, obs(&r, 7).port, "the two subflows share an uplink");
    // The join's own SYN is a packet of a two-subflow connection: pushed too.
    assert_eq!(r[7].registers["counter.mphula.pushed"], 3);
    assert_eq!(r[9].registers["counter.mphula.assoc"], 2);
    assert!(
        conns(9).contains(&conn(MptcpVersion::V0, ka ^ 1, kb ^ 1)),
        "{:?}",
        conns(9)
    );
}

fn the_connection_header_is_popped_towards_a_host() {
    let mut f = tcp(REMOTE, H1, (5201, 40000), tcp_flags::ACK, None, 2);
    let mut stack = mpsched_core::headers::HeaderStack::new();
    let _ = stack.push(mpsched_core::headers::Header::Routing(
        mpsched_core::headers::RoutingHeader {
            conn_id: 0x1111_2222_3333_4444,
            path: 2,
            hops: 0,
        },
    ));
    mpsched_core::wire::insert_shims(&mut f, &stack);
    let r = run(&tor_set("mphula", vec![step("with a header", Hook::Ingress, 2, 10, f)]));
    assert_eq!(obs(&r, 0).action, "redirect", "{:?}", obs(&r, 0));
    assert_eq!(obs(&r, 0).port, Some(0));
    assert_eq!(obs(&r, 0).conn, None);
    assert_eq!(r[0].registers["counter.mphula.popped"], 1);
}

// ---- The option parser, fuzzed ---------------------------------------------------------------

/// xorshift64*: the fuzzer's draws, fixed by its seed.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One option block (up to 40 bytes) of the kinds and lengths that break parsers.
fn option_block(d: &mut Draws) -> Vec<u8> {
    let mut b = Vec::new();
    let want = d.below(41) as usize;
    if d.below(2) == 0 {
        // Half the blocks lead with a well-formed MP_CAPABLE or MP_JOIN after some NOPs.
        b.resize(d.below(4) as usize, 1);
        let o = match d.below(4) {
            0 => capable(d.below(3) as u8, Some(d.next() % 4), None),
            3 => capable(d.below(3) as u8, Some(d.next() % 4), Some(d.next() % 4)),
            1 => capable(d.below(2) as u8, None, None),
            _ => {
                let v = if d.below(2) == 0 {
                    MptcpVersion::V0
                } else {
                    MptcpVersion::V1
                };
                join(token(v, d.next() % 4))
            }
        };
        o.unwrap().encode(&mut b);
    }
    while b.len() < want {
        match d.below(10) {
            0 => b.push(0),
            1 => b.push(1),
            2 => b.extend_from_slice(&[30, d.below(3) as u8]), // MPTCP with length 0, 1, 2
            3 | 4 => {
                // MP_CAPABLE or MP_JOIN, version 0 to 2, any length up to 26, maybe truncated
                let len = [3, 4, 8, 12, 16, 20, 22, 24, 26][d.below(9) as usize];
                let st = if d.below(2) == 0 { 0x00 } else { 0x10 };
                let mut o = vec![30, len, st | d.below(3) as u8];
                o.extend((3..len).map(|_| d.next() as u8));
                o.truncate(if d.below(4) == 0 {
                    d.below(len.into()) as usize
                } else {
                    len.into()
                });
                b.extend(o);
            }
            5 => b.extend_from_slice(&[2, 4, 5, 0xb4]),
            6 => b.extend_from_slice(&[4, 2]),
            7 => b.extend((0..10).map(|i| if i < 2 { [8, 10][i] } else { d.next() as u8 })),
            _ => b.push(d.next() as u8),
        }
    }
    b.truncate(40);
    b
}

/// A TCP segment of flow `flow` from host H1 with `opts` (data offset as they need, or a
/// random wrong one).
fn fuzz_segment(d: &mut Draws, flow: u16, opts: &[u8]) -> Vec<u8> {
    let mut f = tcp(H1, REMOTE, (flow, 5201), tcp_flags::ACK, None, 0);
    let padded = opts.len().div_ceil(4) * 4;
    let mut tcp_hdr = f[34..54].to_vec();
    let off = if d.below(8) == 0 {
        d.below(16) as u8
    } else {
        ((20 + padded) / 4) as u8
    };
    tcp_hdr[12] = off << 4;
    tcp_hdr[13] = [tcp_flags::SYN, tcp_flags::SYN, 0x12, tcp_flags::ACK, 0][d.below(5) as usize];
    f.truncate(34);
    f.extend(tcp_hdr);
    f.extend(opts);
    f.resize(34 + 20 + padded, 1);
    let tot = (f.len() - 14) as u16;
    let tot = if d.below(16) == 0 {
        tot.wrapping_add(d.below(40) as u16).wrapping_sub(20)
    } else {
        tot
    };
    f[16..18].copy_from_slice(&tot.to_be_bytes());
    f[24..26].copy_from_slice(&[0, 0]);
    let c = mpsched_core::wire::internet_checksum(&f[14..34], 0);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

/// The twin's association tables as registers, named as the program's (aux, assoc, token).
fn model_registers(m: &Association) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let used = |x: &&mpsched_programs::hula::assoc::AuxSlot| x.flags != 0 || x.tag != 0 || x.key_a != 0 || x.key_b != 0;
    for (i, x) in m.aux.iter().enumerate().filter(|(_, x)| used(x)) {
        out.insert(format!("aux.{i}.tag"), u64::from(x.tag));
        out.insert(format!("aux.{i}.key_a"), x.key_a);
        out.insert(format!("aux.{i}.key_b"), x.key_b);
        out.insert(format!("aux.{i}.flags"), u64::from(x.flags));
    }
    for (i, a) in m.assoc.iter().enumerate().filter(|(_, a)| a.valid) {
        out.insert(format!("assoc.{i}.tag"), u64::from(a.tag));
        out.insert(format!("assoc.{i}.conn_id"), a.conn_id);
        out.insert(format!("assoc.{i}.subflow"), u64::from(a.subflow));
        out.insert(format!("assoc.{i}.count"), u64::from(a.count));
    }
    for (i, t) in m.tokens.iter().enumerate().filter(|(_, t)| t.valid) {
        out.insert(format!("token.{i}.token"), u64::from(t.token));
        out.insert(format!("token.{i}.assoc_slot"), u64::from(t.assoc_slot));
    }
    out
}

fn association_registers(regs: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    regs.iter()
        .filter(|(k, _)| k.starts_with("aux.") || k.starts_with("assoc.") || k.starts_with("token."))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// Feed a segment to the twin's association tables as the switch does (a TCP segment that
/// parses, with its MPTCP option): the counter the event moves.
fn model_observe(m: &mut Association, f: &[u8], seed: u32) -> Option<&'static str> {
    let (meta, opt) = parse_frame_with_mptcp(f, 0).ok()?;
    let (HeaderExt::Tcp { flags, .. }, Some(o)) = (meta.ext, opt) else {
        return None;
    };
    match m.observe(canonical_hash(&meta, seed), flags, &o) {
        AssocEvent::Associated => Some("counter.mphula.assoc"),
        AssocEvent::Joined => Some("counter.mphula.joins"),
        AssocEvent::JoinMissed => Some("counter.mphula.join_misses"),
        AssocEvent::None => None,
    }
}

fn the_option_parser_survives_malformed_options() {
    const N: usize = 6000;
    let set = tor_set("mphula", Vec::new());
    let node = TestNode::create(set.n_ports).unwrap();
    let tables = node.tables(&set).unwrap();
    let ifindex = node.ports[0].ifindex;
    let mut d = Draws(0x9e37_79b9_7f4a_7c15);
    let mut model = Association::new(16);
    node.enter(|| {
        let (_, trig) = create_trigger().unwrap();
        let plane = HulaPlane::load(&tables, trig).unwrap();
        let prog = plane.program(INGRESS).unwrap();
        let mut prev = plane.snapshot().unwrap();
        let mut events: BTreeMap<&str, u64> = BTreeMap::new();
        for i in 0..N {
            let opts = option_block(&mut d);
            // A few flows, so that some handshakes complete and some joins find their tokens.
            let flow = 40000 + d.below(6) as u16;
            let f = fuzz_segment(&mut d, flow, &opts);
            let (ret, _, _) = test_run_prog(&prog, ifindex, &f, 1).unwrap();
            assert!([0, 2, 7].contains(&ret), "frame {i}: return code {ret}");
            let regs = plane.snapshot().unwrap();
            if let Some(e) = model_observe(&mut model, &f, set.config.hash_seed) {
                *events.entry(e).or_default() += 1;
            }
            assert_eq!(
                association_registers(&regs),
                model_registers(&model),
                "frame {i} ({}): the tables differ from the twin's",
                to_hex(&f)
            );
            prev = regs;
        }
        let c = |k: &str| prev.get(k).copied().unwrap_or(0);
        for k in [
            "counter.mphula.assoc",
            "counter.mphula.joins",
            "counter.mphula.join_misses",
        ] {
            assert_eq!(c(k), events.get(k).copied().unwrap_or(0), "{k}");
        }
        let outcomes = c("counter.malformed") + c("counter.not_ipv4") + c("port2.tx_pkts") + c("port3.tx_pkts");
        assert_eq!(c("port0.rx_pkts"), N as u64);
        assert_eq!(outcomes + c("counter.redirect_failed"), N as u64, "{prev:?}");
        let aux = prev.keys().filter(|k| k.starts_with("aux.")).count();
        eprintln!(
            "{N} segments: {events:?}, {} malformed, {aux} aux registers at the end",
            c("counter.malformed")
        );
        assert!(
            c("counter.mphula.assoc") > 0 && c("counter.mphula.join_misses") > 0,
            "{events:?}"
        );
    })
    .unwrap();
}

/// The prober of one ToR at the default period: it keeps the period on a quiet machine, and
/// what it costs (printed: docs/performance.md takes the figures).
fn the_prober_keeps_its_period() {
    let _alone = heavy();
    for tors in [1, 8] {
        let c = mpsched_netns::programs::hula::bench::prober_cost(200, tors, 5.0).expect("the prober runs");
        eprintln!("prober at 200 us for 5 s, {tors} ToR(s): {c:?}");
        let expected = 5.0e6 / 200.0 * tors as f64;
        assert!(c.triggers as f64 > 0.5 * expected, "{c:?}");
        assert!(c.cpu_pct_per_tor < 50.0, "{c:?}");
    }
}

/// HULA's and MP-HULA's rows of `bench --dataplane` (printed).
fn the_bench_rows_run() {
    let _alone = heavy();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let rows = mpsched_netns::programs::hula::bench::costs(200_000, &stop).expect("the rows");
    for r in &rows {
        eprintln!(
            "  {:<36} {:>8.1} ns/packet {:>6.2} Mpps ({} runs)",
            r.name, r.ns_per_pkt, r.mpps, r.repeat
        );
    }
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r.ns_per_pkt > 0.0), "{rows:?}");
}

/// The same kind of segments as a vector set, with a probe of the remote ToR first so that
/// flowlets and connections take hops: the eBPF column equals the twin's after every one of
/// them, every register and observation.
fn fuzzed_segments_agree_with_the_twin() {
    let mut d = Draws(0x2545_f491_4f6c_dd1d);
    let mut steps = vec![step(
        "probe of ToR 1 by port 2",
        Hook::Ingress,
        2,
        1,
        probe_frame(1, 1, 10, 2),
    )];
    for i in 0..3000u64 {
        let opts = option_block(&mut d);
        let flow = 40000 + d.below(6) as u16;
        let f = fuzz_segment(&mut d, flow, &opts);
        steps.push(step(&format!("segment {i}"), Hook::Ingress, 0, 2 + i * 7, f));
    }
    let mut set = tor_set("mphula", steps);
    mpsched_programs::vectors::fill_expectations(&mut set).expect("the twin replays it");
    let (init, res) = run_ebpf(&set).expect("the eBPF column replays it");
    let errs = compare(&set, &init, &res);
    assert!(
        errs.is_empty(),
        "{} differences, first: {}",
        errs.len(),
        errs[..errs.len().min(5)].join("\n")
    );
}

fn main() {
    let missing = if !mpsched_netns::ns::is_root() {
        Some("they need root (namespaces, eBPF)".to_string())
    } else {
        mpsched_testkit::missing_tool("iperf3", &["--version"]).or_else(|| mpsched_testkit::missing_tool("tc", &["-V"]))
    };
    let tests: &[(&str, fn())] = &[
        ("hula_ebpf_agrees_with_its_vectors", hula_ebpf_agrees_with_its_vectors),
        (
            "probes_originate_fold_and_steer_data",
            probes_originate_fold_and_steer_data,
        ),
        (
            "mptcp_both_versions_associate_with_the_tokens_of_core",
            mptcp_both_versions_associate_with_the_tokens_of_core,
        ),
        (
            "the_connection_header_is_popped_towards_a_host",
            the_connection_header_is_popped_towards_a_host,
        ),
        (
            "the_option_parser_survives_malformed_options",
            the_option_parser_survives_malformed_options,
        ),
        (
            "fuzzed_segments_agree_with_the_twin",
            fuzzed_segments_agree_with_the_twin,
        ),
        ("the_prober_keeps_its_period", the_prober_keeps_its_period),
        ("the_bench_rows_run", the_bench_rows_run),
        ("mphula_puts_two_subflows_on_different_uplinks", || {
            let _alone = heavy();
            live::mphula_puts_two_subflows_on_different_uplinks()
        }),
    ];
    mpsched_testkit::run_or_skip(tests, missing, "kernel HULA").exit();
}
