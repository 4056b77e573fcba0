//! Replaying conformance vectors through the eBPF programs with `BPF_PROG_TEST_RUN`.
//!
//! Each set runs in a fresh network namespace with one veth interface per port, so that the
//! program's ifindex-to-port table, `bpf_redirect` and `bpf_clone_redirect` see real devices.
//! What the program did is read from outside, as a user would see it: the return code (redirect,
//! shot, pass to the stack), the frame it left (its destination MAC names the port; a feedback
//! packet or a rate feedback is parsed), and the maps (counters say why a frame was dropped;
//! per-port counters say where the data packet went when the frame itself became a feedback
//! packet or was shot after its copy left).
//!
//! A step may instead be delivered on the wire: sent into its port's veth peer, so that the
//! kernel's receive path runs first (it moves a VLAN tag into `skb->vlan_tci`), with the
//! program attached to the ports; its outcome is then read from the counters alone.

use crate::dataplane::{Dataplane, NodeTables, PortBinding};
use crate::ns::{is_root, AnonNetns};
use crate::tap::Tap;
use libbpf_rs::ProgramInput;
use mpsched_core::packet::PortId;
use mpsched_core::vectors::{chosen_path, from_hex, Delivery, EmitObserved, Hook, Observed, StepResult, VectorSet};
use mpsched_core::vectors::{OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{internet_checksum, mac_for, parse_frame};
use std::collections::BTreeMap;

const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;
const TC_ACT_REDIRECT: u32 = 7;
/// `sizeof(struct __sk_buff)`; `ifindex` is at byte 40.
const SKB_CTX_BYTES: usize = 192;
const SKB_IFINDEX_AT: usize = 40;
/// `priority` is at byte 32 of `struct __sk_buff`.
const SKB_PRIORITY_AT: usize = 32;

/// A namespace with `n` veth ports (`p0`..), for running a node's programs under
/// `BPF_PROG_TEST_RUN`; removed on drop. It has no name ([`AnonNetns`]): a `vectors check` or a
/// `bench --dataplane` ended by any signal leaves nothing of it behind.
pub struct TestNode {
    ns: AnonNetns,
    /// The ports' bindings (ifindex in the namespace, MACs as the vectors use them).
    pub ports: Vec<PortBinding>,
    /// Per port: the ifindex of its veth peer (`q0`..), where what the port sends arrives.
    pub peer_ifindexes: Vec<u32>,
}

impl TestNode {
    /// Create the namespace and its ports.
    pub fn create(n_ports: usize) -> Result<TestNode, String> {
        if !is_root() {
            return Err("BPF_PROG_TEST_RUN needs root".into());
        }
        let ns = AnonNetns::create().map_err(|e| e.to_string())?;
        // No IPv6: its neighbour discovery would send frames of its own on the ports.
        ns.sysctl("net.ipv6.conf.all.disable_ipv6", "1")
            .map_err(|e| e.to_string())?;
        ns.sysctl("net.ipv6.conf.default.disable_ipv6", "1")
            .map_err(|e| e.to_string())?;
        let mut ports = Vec::new();
        let mut peer_ifindexes = Vec::new();
        for p in 0..n_ports {
            let (a, b) = (format!("p{p}"), format!("q{p}"));
            ns.ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])
                .map_err(|e| e.to_string())?;
            ns.ip(&["link", "set", &a, "up"]).map_err(|e| e.to_string())?;
            ns.ip(&["link", "set", &b, "up"]).map_err(|e| e.to_string())?;
            ports.push(PortBinding {
                ifindex: ns.ifindex(&a).map_err(|e| e.to_string())?,
                own_mac: mac_for(OWN_MAC_NODE, p as PortId),
                peer_mac: mac_for(PEER_MAC_NODE, p as PortId),
            });
            peer_ifindexes.push(ns.ifindex(&b).map_err(|e| e.to_string())?);
        }
        Ok(TestNode {
            ns,
            ports,
            peer_ifindexes,
        })
    }

    /// A set's node tables on these ports: its program and parameters, markers, fixed draws,
    /// and the test clock.
    pub fn tables(&self, set: &VectorSet) -> Result<NodeTables, String> {
        let (program, params) = mpsched_programs::vectors::program_of(set)?;
        Ok(NodeTables {
            switch: set.config.clone(),
            ports: self.ports.clone(),
            markers: set.markers.clone(),
            test_draws: set.rs_raw_draws.clone(),
            test_clock: true,
            program: program.name(),
            params,
            port_queues: Vec::new(),
            port_classes: Vec::new(),
            far_ends: Vec::new(),
        })
    }

    /// Run `f` inside the namespace.
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> Result<T, String> {
        self.ns.enter(f).map_err(|e| e.to_string())
    }
}

/// Run `prog` of a loaded data plane once on `frame` arriving on (or leaving by) `ifindex`,
/// `repeat` times; returns the return code, the frame it leaves and the mean time per run.
pub fn test_run(
    dp: &Dataplane,
    prog: &str,
    ifindex: u32,
    frame: &[u8],
    repeat: u32,
) -> Result<(u32, Vec<u8>, std::time::Duration), String> {
    let prog = dp.program(prog).map_err(|e| e.to_string())?;
    test_run_prog(&prog, ifindex, frame, repeat)
}

/// Run a loaded program once on `frame` arriving on (or leaving by) `ifindex`, `repeat` times;
/// returns the return code, the frame it leaves and the mean time per run.
pub fn test_run_prog(
    prog: &libbpf_rs::ProgramMut<'_>,
    ifindex: u32,
    frame: &[u8],
    repeat: u32,
) -> Result<(u32, Vec<u8>, std::time::Duration), String> {
    test_run_prog_with_priority(prog, ifindex, 0, frame, repeat)
}

/// [`test_run_prog`] with the packet's `skb->priority` set to `priority` (the queue a packet
/// was placed in, for a departure stage).
pub fn test_run_prog_with_priority(
    prog: &libbpf_rs::ProgramMut<'_>,
    ifindex: u32,
    priority: u32,
    frame: &[u8],
    repeat: u32,
) -> Result<(u32, Vec<u8>, std::time::Duration), String> {
    let mut ctx = vec![0u8; SKB_CTX_BYTES];
    ctx[SKB_IFINDEX_AT..SKB_IFINDEX_AT + 4].copy_from_slice(&ifindex.to_ne_bytes());
    ctx[SKB_PRIORITY_AT..SKB_PRIORITY_AT + 4].copy_from_slice(&priority.to_ne_bytes());
    let mut out = vec![0u8; 4096];
    let input = ProgramInput {
        context_in: Some(&mut ctx),
        data_in: Some(frame),
        data_out: Some(&mut out),
        repeat,
        ..Default::default()
    };
    let res = prog.test_run(input).map_err(|e| format!("BPF_PROG_TEST_RUN: {e}"))?;
    let data = res.data.map(|d| d.to_vec()).unwrap_or_default();
    Ok((res.return_value, data, res.duration))
}

/// Replay `set` through the eBPF object of the program it names ([`crate::programs`]): the
/// initial registers and each step's result.
pub fn run_ebpf(set: &VectorSet) -> Result<(BTreeMap<String, u64>, Vec<StepResult>), String> {
    let (program, _) = mpsched_programs::vectors::program_of(set)?;
    let kernel = crate::programs::kernel_program(program).map_err(|e| format!("{}: {e}", set.name))?;
    if !kernel.takes_writes {
        if let Some(i) = set.steps.iter().position(|st| !st.writes.is_empty()) {
            return Err(format!(
                "{} step {i}: the eBPF runner of `{}` writes no registers through the control plane",
                set.name, kernel.object
            ));
        }
    }
    (kernel.vectors)(set)
}

/// Replay `set` through `bpf/mpsched.bpf.c` (the `multipath`, `ecmp` and `shortest` programs).
pub fn run_mpsched(set: &VectorSet) -> Result<(BTreeMap<String, u64>, Vec<StepResult>), String> {
    let node = TestNode::create(set.n_ports)?;
    let tables = node.tables(set)?;
    node.enter(|| {
        let taps = node
            .peer_ifindexes
            .iter()
            .map(|&i| Tap::open(i))
            .collect::<Result<Vec<_>, _>>()?;
        replay(set, &tables, &node.ports, &taps)
    })?
}

fn replay(
    set: &VectorSet,
    tables: &NodeTables,
    ports: &[PortBinding],
    taps: &[Tap],
) -> Result<(BTreeMap<String, u64>, Vec<StepResult>), String> {
    let mut dp = Dataplane::load(tables).map_err(|e| e.to_string())?;
    if set.steps.iter().any(|st| st.delivery == Delivery::Wire) {
        for p in ports {
            dp.attach(p.ifindex, false).map_err(|e| e.to_string())?;
        }
    }
    let initial = dp.snapshot().map_err(|e| e.to_string())?;
    let mut prev = initial.clone();
    let mut results = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let at = format!("{} step {i} ({})", set.name, st.note);
        let frame = from_hex(&st.frame).map_err(|e| format!("{at}: {e}"))?;
        let port = ports
            .get(usize::from(st.port))
            .map(|p| p.ifindex)
            .ok_or_else(|| format!("{at}: port {} does not exist", st.port))?;
        if st.hook == Hook::Egress {
            dp.set_test_clock(st.time_ns).map_err(|e| e.to_string())?;
        }
        taps.iter().for_each(Tap::drain);
        let (observed, regs) = match (st.hook, st.delivery) {
            (Hook::Ingress, Delivery::Wire) => on_the_wire(set, &dp, taps, st.port, &frame, &prev),
            (hook, _) => {
                let snap = || dp.snapshot().map_err(|e| e.to_string());
                by_test_run(set, &dp, &snap, taps, hook, port, &frame, &prev)
            }
        }
        .map_err(|e| format!("{at}: {e}"))?;
        prev = regs.clone();
        results.push(StepResult {
            observed,
            registers: regs,
        });
    }
    dp.detach_all();
    Ok((initial, results))
}

/// Counters whose move ends a frame's way through the switch's ingress (to the stack, dropped,
/// consumed, or a failed redirect): with a transmit counter, what says a frame sent on the
/// wire has been handled.
pub const OUTCOME_COUNTERS: [&str; 12] = [
    "counter.not_ipv4",
    "counter.local",
    "counter.no_route",
    "counter.ttl_expired",
    "counter.avoidance",
    "counter.malformed",
    "counter.feedback_rx",
    "counter.feedback_unknown_group",
    "counter.feedback_untrusted_port",
    "counter.redirect_failed",
    "counter.vq.drops",
    "counter.baseline.tail_drops",
];

/// The increment of counter `k` from `prev` to `regs`.
pub fn delta_of(prev: &BTreeMap<String, u64>, regs: &BTreeMap<String, u64>, k: &str) -> u64 {
    regs.get(k).copied().unwrap_or(0) - prev.get(k).copied().unwrap_or(0)
}

/// An outcome with nothing observed yet but the chosen path.
pub fn observed(path: Option<u8>) -> Observed {
    Observed {
        action: String::new(),
        port: None,
        drop_reason: None,
        path,
        ttl: None,
        ecn: None,
        dscp: None,
        emit: None,
        probes: Vec::new(),
        conn: None,
        rate_feedback: None,
        frame: None,
    }
}

/// One frame through `BPF_PROG_TEST_RUN` of `dp`'s `mps_ingress` or `mps_egress`: what it
/// did, and the registers after (read by `snap`: the data plane's, or a program's that
/// includes the multipath switch).
#[allow(clippy::too_many_arguments)]
pub(crate) fn by_test_run(
    set: &VectorSet,
    dp: &Dataplane,
    snap: &dyn Fn() -> Result<BTreeMap<String, u64>, String>,
    taps: &[Tap],
    hook: Hook,
    ifindex: u32,
    frame: &[u8],
    prev: &BTreeMap<String, u64>,
) -> Result<(Observed, BTreeMap<String, u64>), String> {
    let prog = match hook {
        Hook::Ingress => "mps_ingress",
        Hook::Egress => "mps_egress",
        Hook::Timer => return Err("the multipath switch has no timer".into()),
    };
    let fb_port = set.config.feedback_port;
    let (retval, out_frame, _) = test_run(dp, prog, ifindex, frame, 1)?;
    let regs = snap()?;
    let delta = |k: &str| delta_of(prev, &regs, k);
    let mut obs = observed(chosen_path(prev, &regs));
    match (hook, retval) {
        (Hook::Egress, TC_ACT_OK) => {
            obs.action = "transmit".into();
            if let Ok(m) = parse_frame(&out_frame, fb_port) {
                obs.ecn = Some(m.ecn);
            } else if out_frame.len() >= 34 && out_frame[12..14] == [0x08, 0x00] {
                obs.ecn = Some(mpsched_core::packet::Ecn::from_bits(out_frame[15]));
            }
        }
        (Hook::Ingress, TC_ACT_REDIRECT) => {
            check_ipv4_checksum(&out_frame)?;
            let out_port = port_of_mac(&out_frame).ok_or("output frame to an unknown MAC")?;
            let meta = parse_frame(&out_frame, fb_port).map_err(|e| format!("output frame: {e:?}"))?;
            obs.action = "redirect".into();
            if let Some(rf) = mpsched_programs::vectors::rate_feedback_of(set, &out_frame, out_port) {
                // The frame left is a rate feedback; the data packet left by a clone, or not.
                obs.rate_feedback = Some(rf);
                data_clone(&mut obs, set, taps, &delta, Some(out_port), frame)?;
            } else if let Some(fb) = meta.feedback().filter(|_| meta.src_ip == set.config.own_ip) {
                obs.emit = Some(EmitObserved {
                    port: out_port,
                    dst_ip: meta.dst_ip,
                    group: fb.group,
                    path: fb.path,
                });
                let mut sent: Vec<PortId> = (0..set.n_ports as PortId)
                    .flat_map(|p| (0..delta(&format!("port{p}.tx_pkts"))).map(move |_| p))
                    .collect();
                if let Some(k) = sent.iter().position(|&p| p == out_port) {
                    sent.remove(k);
                }
                obs.port = sent.first().copied();
                // The data copy left by bpf_clone_redirect: read it where it arrived.
                if let Some(p) = obs.port {
                    observe_arrival(&mut obs, taps, p, fb_port, frame)?;
                }
            } else {
                obs.port = Some(out_port);
                obs.ttl = Some(meta.ttl);
                obs.ecn = Some(meta.ecn);
                obs.dscp = remarked(frame, fb_port, meta.dscp);
            }
        }
        // A shot frame whose data left by a clone: its rate feedback found no route back.
        (Hook::Ingress, TC_ACT_SHOT) => data_clone(&mut obs, set, taps, &delta, None, frame)?,
        (Hook::Ingress, TC_ACT_OK) => obs.action = "to_stack".into(),
        (_, r) => return Err(format!("unexpected return code {r}")),
    }
    Ok((obs, regs))
}

/// The data packet of a frame the program turned into feedback or shot: redirected, if a port
/// other than `besides` (the feedback's) sent a packet, with the TTL, ECN and DSCP of the copy
/// that arrived at that port's peer; otherwise what [`shot`] says. `sent` is the step's frame.
fn data_clone(
    obs: &mut Observed,
    set: &VectorSet,
    taps: &[Tap],
    delta: &impl Fn(&str) -> u64,
    besides: Option<PortId>,
    sent: &[u8],
) -> Result<(), String> {
    let mut ports: Vec<PortId> = (0..set.n_ports as PortId)
        .flat_map(|p| (0..delta(&format!("port{p}.tx_pkts"))).map(move |_| p))
        .collect();
    if let Some(k) = besides.and_then(|b| ports.iter().position(|&p| p == b)) {
        ports.remove(k);
    }
    let Some(&p) = ports.first() else {
        shot(obs, delta);
        return Ok(());
    };
    obs.action = "redirect".into();
    obs.port = Some(p);
    observe_arrival(obs, taps, p, set.config.feedback_port, sent)
}

/// A shot frame: consumed if a feedback counter moved, otherwise dropped for the drop counter
/// that moved.
pub fn shot(obs: &mut Observed, delta: &impl Fn(&str) -> u64) {
    let feedback = [
        "counter.feedback_rx",
        "counter.feedback_unknown_group",
        "counter.feedback_untrusted_port",
    ];
    if feedback.iter().any(|k| delta(k) > 0) {
        obs.action = "consume".into();
        return;
    }
    obs.action = "drop".into();
    obs.drop_reason = [
        ("counter.no_route", "no_route"),
        ("counter.ttl_expired", "ttl_expired"),
        ("counter.avoidance", "congestion_avoidance"),
        ("counter.malformed", "malformed"),
        ("counter.vq.drops", "queue_full"),
        ("counter.baseline.tail_drops", "queue_full"),
    ]
    .iter()
    .find(|(k, _)| delta(k) > 0)
    .map(|(_, n)| n.to_string());
}

/// The TTL and ECN of the frame that arrived at port `p`'s veth peer.
/// The TTL, ECN and (when the switch rewrote it) DSCP of the copy of `sent` that arrived at
/// port `p`'s peer.
fn observe_arrival(obs: &mut Observed, taps: &[Tap], p: PortId, fb_port: u16, sent: &[u8]) -> Result<(), String> {
    let copy = taps[usize::from(p)]
        .next(1000)
        .ok_or_else(|| format!("nothing reached port {p}'s peer"))?;
    check_ipv4_checksum(&copy)?;
    let m = parse_frame(&copy, fb_port).map_err(|e| format!("frame at port {p}'s peer: {e:?}"))?;
    (obs.ttl, obs.ecn, obs.dscp) = (Some(m.ttl), Some(m.ecn), remarked(sent, fb_port, m.dscp));
    Ok(())
}

/// `left`, the DSCP a frame left with, when the frame `sent` did not carry it (the classifier
/// rewrote it).
fn remarked(sent: &[u8], fb_port: u16, left: u8) -> Option<u8> {
    parse_frame(sent, fb_port).is_ok_and(|m| m.dscp != left).then_some(left)
}

/// One frame sent into port `port`'s veth peer, so that the kernel's receive path runs before
/// the attached program: what the program did, read from its counters (the program's run ends
/// in softirq context, so they are polled until its outcome shows), and the registers after.
fn on_the_wire(
    set: &VectorSet,
    dp: &Dataplane,
    taps: &[Tap],
    port: PortId,
    frame: &[u8],
    prev: &BTreeMap<String, u64>,
) -> Result<(Observed, BTreeMap<String, u64>), String> {
    let tap = taps.get(usize::from(port)).ok_or("no such port")?;
    tap.send(frame)?;
    let outcome = OUTCOME_COUNTERS;
    let tx = |p: PortId| format!("port{p}.tx_pkts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let regs = loop {
        let regs = dp.snapshot().map_err(|e| e.to_string())?;
        let delta = |k: &str| delta_of(prev, &regs, k);
        if outcome.iter().any(|k| delta(k) > 0) || (0..set.n_ports as PortId).any(|p| delta(&tx(p)) > 0) {
            break regs;
        }
        if std::time::Instant::now() > deadline {
            return Err("sent on the wire, but the program showed no outcome within 2 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let delta = |k: &str| delta_of(prev, &regs, k);
    let mut obs = observed(chosen_path(prev, &regs));
    if let Some(p) = (0..set.n_ports as PortId).find(|&p| delta(&tx(p)) > 0) {
        obs.action = "redirect".into();
        obs.port = Some(p);
        observe_arrival(&mut obs, taps, p, set.config.feedback_port, frame)?;
    } else if delta("counter.not_ipv4") + delta("counter.local") > 0 {
        obs.action = "to_stack".into();
    } else if delta("counter.redirect_failed") > 0 {
        return Err("the redirect failed".into());
    } else {
        shot(&mut obs, &delta);
    }
    Ok((obs, regs))
}

/// The port whose peer MAC a frame is addressed to.
pub fn port_of_mac(frame: &[u8]) -> Option<PortId> {
    let dst: [u8; 6] = frame.get(..6)?.try_into().ok()?;
    let p = u16::from_be_bytes([dst[4], dst[5]]);
    (mac_for(PEER_MAC_NODE, p) == dst).then_some(p)
}

/// An IPv4 frame's header checksum must be right (other frames pass).
pub fn check_ipv4_checksum(frame: &[u8]) -> Result<(), String> {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
        return Ok(());
    }
    let ihl = usize::from(frame[14] & 0x0f) * 4;
    let hdr = frame.get(14..14 + ihl).ok_or("IPv4 header beyond the frame")?;
    if internet_checksum(hdr, 0) != 0 {
        return Err(format!("output IPv4 header checksum is wrong: {:02x?}", hdr));
    }
    Ok(())
}
