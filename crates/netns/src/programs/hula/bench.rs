//! HULA's and MP-HULA's rows of `mpsched bench --dataplane` ([`crate::bench::program_costs`]),
//! on a ToR with a host, a down port and two uplinks, under `BPF_PROG_TEST_RUN`:
//!
//! | row | what |
//! |---|---|
//! | `<p> probe` | a probe from an uplink: folded, one copy to the down port |
//! | `<p> originate` | a trigger: two probes, one per uplink |
//! | `<p> estimator` | `hula_egress` on a 1 466-byte TCP segment |
//! | `<p> data` | a segment from the host continuing its flowlet (MP-HULA: also the option walk and the association lookup) |
//! | `mphula pop` | a segment with a connection header from an uplink to the host: popped |
//! | `mphula assoc` | the third ACK of a version-1 handshake: two SHA-256 tokens, the tables written |
//!
//! and the prober's CPU time per ToR ([`prober_cost`]).
//!
//! A test run repeated `n` times runs the program `n` times on one packet, and what it writes
//! stays: a data packet's TTL would run out after 63 runs, so data rows time single runs (the
//! kernel's own clock around each) and average them; probes and the estimator change nothing
//! that alters their path, so they repeat.

use super::layout::PROBE_FRAME_BYTES;
use super::{create_trigger, probe_template, HulaPlane, EGRESS, INGRESS};
use crate::backend::NetnsError;
use crate::bench::ProgramCost;
use crate::dataplane::NodeTables;
use crate::vectors::{test_run_prog, TestNode};
use mpsched_core::headers::{Header, HeaderStack, RoutingHeader};
use mpsched_core::mptcp::MptcpOption;
use mpsched_core::packet::{proto, Ipv4, PacketMeta};
use mpsched_core::probe::{DestTor, PortDir, ProbeConfig, ProbePort};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::{Route, ECMP_GROUP};
use mpsched_core::vectors::{OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{emit_tcp_frame, insert_shims, mac_for, tcp_flags, TcpFields};
use mpsched_programs::{Params, SwitchProgram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const TOR_IP: Ipv4 = 0x0aff_0001;
const HOST: Ipv4 = 0x0a00_0001;
const REMOTE: Ipv4 = 0x0a00_0105;

/// ToR 0 of two: a host on port 0, a down port 1 (for probes to fan out), uplinks 2 and 3 to
/// ToR 1's hosts (10.0.1.0/24), all at 10 Gbit/s.
fn tor() -> SwitchConfig {
    let mut c = SwitchConfig::forwarding(
        TOR_IP,
        vec![
            Route {
                prefix: HOST,
                len: 32,
                port: 0,
            },
            Route {
                prefix: 0x0a00_0100,
                len: 24,
                port: ECMP_GROUP,
            },
        ],
    );
    c.ecmp_groups = vec![vec![2, 3]];
    c.hash_seed = 1;
    let p = |dir| ProbePort {
        dir,
        rate_bps: 10_000_000_000,
    };
    c.probe = Some(ProbeConfig {
        tor_id: Some(0),
        n_tors: 2,
        ports: vec![p(PortDir::Host), p(PortDir::Down), p(PortDir::Up), p(PortDir::Up)],
        dest_tors: vec![DestTor {
            prefix: 0x0a00_0100,
            len: 24,
            tor: 1,
        }],
    });
    c
}

fn tables(node: &TestNode, program: &'static str) -> NodeTables {
    let p = mpsched_programs::switch_program(program).expect("registered");
    NodeTables {
        switch: tor(),
        ports: node.ports.clone(),
        markers: Vec::new(),
        test_draws: Vec::new(),
        test_clock: false,
        program: p.name(),
        params: Params::defaults(p.params()),
        port_queues: Vec::new(),
        port_classes: Vec::new(),
        far_ends: Vec::new(),
    }
}

fn probe_in(port: u16) -> Vec<u8> {
    let mut f = probe_template(0x0aff_0002, 1);
    f[0..6].copy_from_slice(&mac_for(OWN_MAC_NODE, port));
    f[6..12].copy_from_slice(&mac_for(PEER_MAC_NODE, port));
    f
}

fn tcp(src: Ipv4, dst: Ipv4, ports: (u16, u16), flags: u8, mptcp: Option<MptcpOption>) -> Vec<u8> {
    let mut m = PacketMeta::udp(src, dst, ports.0, ports.1, 0);
    m.proto = proto::TCP;
    let t = TcpFields {
        flags,
        window: 100,
        mptcp,
        ..Default::default()
    };
    let mut out = Vec::new();
    emit_tcp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        1,
        &t,
        1400,
        &mut out,
    );
    out
}

/// Mean kernel time of `n` single runs of `prog` on frames arriving on `ifindex`: run `i`
/// times the second frame `frames(i)` gives, after the first (if any) untimed, to set state up.
fn single_runs(
    plane: &HulaPlane,
    prog: &str,
    ifindex: u32,
    n: u32,
    mut frames: impl FnMut(u32) -> (Option<Vec<u8>>, Vec<u8>),
) -> Result<f64, String> {
    let p = plane.program(prog).map_err(|e| e.to_string())?;
    let mut total = Duration::ZERO;
    for i in 0..n {
        let (before, frame) = frames(i);
        if let Some(b) = before {
            test_run_prog(&p, ifindex, &b, 1)?;
        }
        total += test_run_prog(&p, ifindex, &frame, 1)?.2;
    }
    Ok(total.as_nanos() as f64 / f64::from(n.max(1)))
}

fn repeated(plane: &HulaPlane, prog: &str, ifindex: u32, frame: &[u8], repeat: u32) -> Result<f64, String> {
    let p = plane.program(prog).map_err(|e| e.to_string())?;
    test_run_prog(&p, ifindex, frame, 10_000)?;
    Ok(test_run_prog(&p, ifindex, frame, repeat)?.2.as_nanos() as f64)
}

fn cost(name: &str, ns: f64, repeat: u32) -> ProgramCost {
    ProgramCost {
        name: name.into(),
        ns_per_pkt: ns,
        mpps: if ns > 0.0 { 1e3 / ns } else { f64::INFINITY },
        repeat,
    }
}

/// One program's rows on the ToR.
fn rows(node: &TestNode, program: &'static str, repeat: u32) -> Result<Vec<ProgramCost>, String> {
    let t = tables(node, program);
    let (host, up) = (node.ports[0].ifindex, node.ports[2].ifindex);
    let singles = repeat.clamp(1, 20_000);
    node.enter(|| -> Result<Vec<ProgramCost>, String> {
        let (_, trigger) = create_trigger()?;
        let plane = HulaPlane::load(&t, trigger).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        // A probe from ToR 1 by an uplink: folded, one copy to the down port.
        let ns = repeated(&plane, INGRESS, up, &probe_in(2), repeat.min(200_000))?;
        out.push(cost(&format!("{program} probe"), ns, repeat.min(200_000)));
        let ns = repeated(&plane, INGRESS, trigger, &[0u8; PROBE_FRAME_BYTES], repeat.min(200_000))?;
        out.push(cost(&format!("{program} originate"), ns, repeat.min(200_000)));
        let ns = repeated(
            &plane,
            EGRESS,
            up,
            &tcp(HOST, REMOTE, (1, 2), tcp_flags::ACK, None),
            repeat,
        )?;
        out.push(cost(&format!("{program} estimator"), ns, repeat));
        let data = tcp(HOST, REMOTE, (40000, 5201), tcp_flags::ACK, None);
        let ns = single_runs(&plane, INGRESS, host, singles, |_| (None, data.clone()))?;
        out.push(cost(&format!("{program} data"), ns, singles));
        if program == "mphula" {
            out.extend(mp_rows(&plane, host, up, singles)?);
        }
        Ok(out)
    })?
}

/// MP-HULA's own: a packet with a connection header (the sub-flowlet choice and the connection
/// table), and the third ACK of a version-1 handshake (two SHA-256 tokens).
fn mp_rows(plane: &HulaPlane, host: u32, up: u32, n: u32) -> Result<Vec<ProgramCost>, String> {
    let mut with_header = tcp(REMOTE, HOST, (5201, 40000), tcp_flags::ACK, None);
    let mut stack = HeaderStack::new();
    let _ = stack.push(Header::Routing(RoutingHeader {
        conn_id: 0x1234_5678_9abc_def0,
        path: 2,
        hops: 0,
    }));
    insert_shims(&mut with_header, &stack);
    let mut out = Vec::new();
    // From an uplink to the host: the header popped on the way out.
    let ns = single_runs(plane, INGRESS, up, n, |_| (None, with_header.clone()))?;
    out.push(cost("mphula pop", ns, n));
    let capable = |s: Option<u64>, r: Option<u64>| {
        Some(MptcpOption::Capable {
            version: 1,
            flags: 0x01,
            sender_key: s,
            receiver_key: r,
            data: None,
        })
    };
    let ns = single_runs(plane, INGRESS, host, n, |i| {
        let ports = (1024 + (i % 60_000) as u16, 5201);
        let syn = tcp(HOST, REMOTE, ports, tcp_flags::SYN, capable(None, None));
        let ack = tcp(
            HOST,
            REMOTE,
            ports,
            tcp_flags::ACK,
            capable(Some(u64::from(i)), Some(7)),
        );
        (Some(syn), ack)
    })?;
    out.push(cost("mphula assoc", ns, n));
    Ok(out)
}

/// HULA's and MP-HULA's rows, each program loaded on a ToR of a test namespace.
pub fn costs(repeat: u32, stop: &AtomicBool) -> Result<Vec<ProgramCost>, NetnsError> {
    let node = TestNode::create(4).map_err(NetnsError::Plane)?;
    let mut out = Vec::new();
    for program in ["hula", "mphula"] {
        if stop.load(Ordering::Relaxed) {
            return Err(NetnsError::Interrupted("(none made at this point)".into()));
        }
        out.extend(rows(&node, program, repeat).map_err(NetnsError::Plane)?);
    }
    Ok(out)
}

/// What the prober cost over a measured interval.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProberCost {
    /// The probe period, µs.
    pub period_us: u64,
    /// ToRs served (one namespace each, two uplinks each).
    pub tors: usize,
    /// Seconds measured.
    pub seconds: f64,
    /// Trigger frames written, all ToRs.
    pub triggers: u64,
    /// Deadlines missed, all ToRs.
    pub missed: u64,
    /// The prober threads' CPU time (user and system, with the softirq work each send runs on
    /// the same CPU: the program, its clones and their transmission), ms.
    pub cpu_ms: f64,
    /// That per ToR as a share of one core, %.
    pub cpu_pct_per_tor: f64,
    /// CPU time per trigger, µs.
    pub us_per_trigger: f64,
}

/// Triggers and missed deadlines over every ToR, and the prober threads' CPU time (µs; each
/// thread's counted once, by the ToRs it serves).
fn prober_totals(planes: &[Box<dyn crate::switchplane::SwitchPlane>]) -> [u64; 3] {
    let regs: Vec<_> = planes.iter().map(|p| p.snapshot().unwrap_or_default()).collect();
    let get = |r: &std::collections::BTreeMap<String, u64>, k: &str| r.get(k).copied().unwrap_or(0);
    let cpu: f64 = regs
        .iter()
        .map(|r| get(r, "prober.cpu_us") as f64 / get(r, "prober.tors").max(1) as f64)
        .sum();
    [
        regs.iter().map(|r| get(r, "prober.triggers")).sum(),
        regs.iter().map(|r| get(r, "prober.missed")).sum(),
        cpu as u64,
    ]
}

/// Run the prober for `tors` ToRs (two uplinks each, each in a namespace of its own) at
/// `period_us` for `seconds` and read its cost.
pub fn prober_cost(period_us: u64, tors: usize, seconds: f64) -> Result<ProberCost, NetnsError> {
    let nodes = (0..tors)
        .map(|_| TestNode::create(4).map_err(NetnsError::Plane))
        .collect::<Result<Vec<_>, _>>()?;
    let mut planes = Vec::new();
    for node in &nodes {
        let mut t = tables(node, "hula");
        let hula = &mpsched_programs::hula::HULA;
        t.params
            .set(hula.params(), "probe_period", period_us * 1_000_000)
            .map_err(NetnsError::Plane)?;
        planes.push(node.enter(|| super::start(&t)).map_err(NetnsError::Plane)??);
    }
    // Counted from here: the ToRs started one after the other. The thread's CPU time is
    // refreshed every 1 000 wakeups, so a second's settling on each side.
    std::thread::sleep(Duration::from_secs(1));
    let before = prober_totals(&planes);
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let after = prober_totals(&planes);
    drop(planes);
    let [triggers, missed, cpu_us] = [0, 1, 2].map(|i| after[i] - before[i]);
    let cpu_ms = cpu_us as f64 / 1000.0;
    Ok(ProberCost {
        period_us,
        tors,
        seconds,
        triggers,
        missed,
        cpu_ms,
        cpu_pct_per_tor: cpu_ms / 10.0 / seconds / tors.max(1) as f64,
        us_per_trigger: cpu_us as f64 / triggers.max(1) as f64,
    })
}
