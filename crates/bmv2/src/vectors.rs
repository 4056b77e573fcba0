//! Replaying conformance vectors through `simple_switch`.
//!
//! Each set runs in a fresh network namespace: one veth pair per port (`p<i>` is BMv2's port
//! i, its peer `q<i>` stands where the next hop would), one for the node's stack port, the
//! program loaded and configured from the set. A step's frame is sent into `q<port>`, so BMv2
//! receives it on the wire as in a live network; what it did is read from outside, as the eBPF
//! runner reads it: the frames that came out of each port (their MACs name the port; a
//! feedback packet is parsed), the frame handed to the stack port, and the registers.
//!
//! BMv2 forwards asynchronously, so a step ends when its outcome shows: a frame arrived, or a
//! counter that ends a frame's way (a drop, a consumed feedback packet) moved; then, for a
//! program that sends packets of its own through the switch again (PMQECN's rate feedback,
//! recirculated), until they are through ingress ([`crate::programs::Bmv2Program::settled`]);
//! then the frames the transmit counters promise are awaited. A rate feedback that comes out
//! is observed apart from the data packet's own outcome (redirected, or dropped for the
//! counter that moved). An egress step sets `test_egress_port`, so the
//! frame goes straight from ingress (which does nothing else) to the marker of that port, on
//! the clock the step names.
//!
//! HULA's program (`hula.p4`) is replayed the same way with three additions: a `timer` step
//! writes the trigger frame into the switch's timer port ([`crate::hula::TIMER_PORT`], a veth
//! of its own), an egress step names its port in `test_egress_port` on the test clock, and a
//! step ends when the `ingress_runs` register moved (ingress counts it at every exit), then
//! the frames its transmit counters promise are awaited; probes and connection headers are
//! read from the frames that came out.

use crate::control::STACK_PORT;
use crate::hula;
use crate::programs::{self, Bmv2Program};
use crate::queues;
use crate::switch::{Bmv2Switch, SwitchOptions};
use crate::Bmv2Error;
use mpsched_core::packet::{Ecn, PortId};
use mpsched_core::vectors::{
    chosen_path, from_hex, to_hex, ConnObserved, EmitObserved, Hook, Observed, ProbeObserved, Step, StepResult,
    VectorSet,
};
use mpsched_core::vectors::{OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{mac_for, parse_frame, parse_frame_with_headers};
use mpsched_netns::backend::{new_run_id, NS_PREFIX};
use mpsched_netns::dataplane::{NodeTables, PortBinding, PortQueues};
use mpsched_netns::ns::{is_root, Netns};
use mpsched_netns::tap::Tap;
use mpsched_netns::vectors::{check_ipv4_checksum, delta_of, observed, port_of_mac, shot, OUTCOME_COUNTERS};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static NEXT_NS: AtomicU32 = AtomicU32::new(0);

/// What a step produced: the frames out of the switch, by port, and the registers after.
type Outcome = (Vec<(PortId, Vec<u8>)>, BTreeMap<String, u64>);

/// How long a step may take to show its outcome.
const STEP_TIMEOUT: Duration = Duration::from_secs(3);

/// A set's node: namespace, switch and a tap per port (the stack port's last).
struct Node {
    taps: Vec<Tap>,
    switch: Bmv2Switch,
    tables: NodeTables,
    prog: &'static Bmv2Program,
    /// Whether an egress step observes the ECN of the frame it transmits: the multipath
    /// switch's marker, or a program marking at egress (`SwitchProgram::marks_at_egress`).
    egress_ecn: bool,
    /// HULA's timer port: trigger frames are written into its peer.
    timer: Option<Tap>,
    _ns: Netns,
}

/// Whether a program is replayed as HULA's (timer port, `ingress_runs`, probe observations).
fn is_hula(prog: &Bmv2Program) -> bool {
    prog.p4 == "hula"
}

impl Node {
    fn create(set: &VectorSet) -> Result<Node, Bmv2Error> {
        let ports = (0..set.n_ports as PortId)
            .map(|p| PortBinding {
                ifindex: 0,
                own_mac: mac_for(OWN_MAC_NODE, p),
                peer_mac: mac_for(PEER_MAC_NODE, p),
            })
            .collect();
        let (program, params) = mpsched_programs::vectors::program_of(set).map_err(Bmv2Error::Config)?;
        let prog = programs::bmv2_program(program).map_err(Bmv2Error::Config)?;
        let egress_ecn = set.program == mpsched_core::vectors::MULTIPATH || program.marks_at_egress();
        // A program that picks priorities itself (vq-wrr's levels) meets ports of every queue
        // it may pick: a vector's step names its queue, the Rust runner clamps nothing.
        let port_queues = match prog.own_priorities {
            true => vec![
                PortQueues {
                    queues: queues::PRIORITY_QUEUES,
                    queue_pkts: 64,
                };
                set.n_ports
            ],
            false => Vec::new(),
        };
        let tables = NodeTables {
            switch: set.config.clone(),
            ports,
            markers: set.markers.clone(),
            test_draws: set.rs_raw_draws.clone(),
            test_clock: true,
            program: program.name(),
            params,
            port_queues,
            port_classes: Vec::new(),
            far_ends: Vec::new(),
        };
        (prog.check)(&tables)?;
        // Named as the kernel backend names its namespaces (the owner's process id first), so
        // that `mpsched clean` finds one a killed check left, with its simple_switch.
        let name = format!(
            "{NS_PREFIX}{}-vec{}",
            new_run_id(),
            NEXT_NS.fetch_add(1, Ordering::Relaxed)
        );
        let ns = Netns::create(&name)?;
        // No IPv6: its neighbour discovery would send frames of its own into the switch.
        ns.sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
        ns.sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
        ns.ip(&["link", "set", "lo", "up"])?;
        let mut ports: Vec<(u16, String)> = (0..set.n_ports as u16).map(|p| (p, format!("p{p}"))).collect();
        ports.push((STACK_PORT, "ps".into()));
        if is_hula(prog) {
            ports.push((hula::TIMER_PORT, "pt".into()));
        }
        for (_, a) in &ports {
            let b = a.replacen('p', "q", 1);
            ns.ip(&["link", "add", a, "type", "veth", "peer", "name", &b])?;
            ns.ip(&["link", "set", a, "up"])?;
            ns.ip(&["link", "set", &b, "up"])?;
        }
        let mut taps = Vec::new();
        for (_, a) in &ports {
            let ifindex = ns.ifindex(&a.replacen('p', "q", 1))?;
            taps.push(ns.enter(|| Tap::open(ifindex))?.map_err(Bmv2Error::Switch)?);
        }
        // The timer port's tap is not a port frames come out of.
        let timer = if is_hula(prog) { taps.pop() } else { None };
        let opts = SwitchOptions {
            ports,
            thrift_port: 9090,
            log_file: None,
            program: prog.p4,
            priority_queues: queues::priority_queues(prog, &tables),
        };
        let mut switch = Bmv2Switch::start(&ns, &opts)?;
        (prog.configure)(&mut switch.cli, &tables)?;
        queues::configure(&mut switch.cli, prog, &tables)?;
        Ok(Node {
            taps,
            switch,
            tables,
            prog,
            egress_ecn,
            timer,
            _ns: ns,
        })
    }

    fn snapshot(&mut self) -> Result<BTreeMap<String, u64>, Bmv2Error> {
        (self.prog.snapshot)(&mut self.switch.cli, &self.tables)
    }

    /// Frames that arrived since the last call, by port (the stack port as `STACK_PORT`).
    fn collect(&self, into: &mut Vec<(PortId, Vec<u8>)>) {
        for (i, tap) in self.taps.iter().enumerate() {
            let port = if i == self.taps.len() - 1 {
                STACK_PORT
            } else {
                i as PortId
            };
            while let Some(f) = tap.next(0) {
                into.push((port, f));
            }
        }
    }
}

/// Replay `set` through its program's P4 program (`p4/mpsched.p4`, `letflow.p4`) on `simple_switch`: the initial registers and each
/// step's result.
pub fn run_bmv2(set: &VectorSet) -> Result<(BTreeMap<String, u64>, Vec<StepResult>), String> {
    if !is_root() {
        return Err("running simple_switch on veth interfaces needs root".into());
    }
    let mut node = Node::create(set).map_err(|e| format!("{}: {e}", set.name))?;
    let initial = node.snapshot().map_err(|e| e.to_string())?;
    let mut prev = initial.clone();
    let mut results = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let at = format!("{} step {i} ({})", set.name, st.note);
        let (observed, regs) = step(set, &mut node, st, &prev).map_err(|e| format!("{at}: {e}"))?;
        prev = regs.clone();
        results.push(StepResult {
            observed,
            registers: regs,
        });
    }
    Ok((initial, results))
}

fn step(
    set: &VectorSet,
    node: &mut Node,
    st: &Step,
    prev: &BTreeMap<String, u64>,
) -> Result<(Observed, BTreeMap<String, u64>), String> {
    let frame = from_hex(&st.frame)?;
    let tap = node
        .taps
        .get(usize::from(st.port))
        .filter(|_| usize::from(st.port) < set.n_ports)
        .ok_or_else(|| format!("port {} does not exist", st.port))?;
    node.taps.iter().for_each(Tap::drain);
    if is_hula(node.prog) {
        return hula_step(set, node, st, &frame, prev);
    }
    if is_atsss(node.prog) {
        return atsss_step(set, node, st, &frame, prev);
    }
    let cli = &mut node.switch.cli;
    let err = |e: Bmv2Error| e.to_string();
    for w in &st.writes {
        let write = node
            .prog
            .write_register
            .ok_or_else(|| format!("program `{}` offers no register writes on BMv2", set.program))?;
        write(cli, &w.register, w.index, w.value).map_err(|e| format!("writing {}[{}]: {e}", w.register, w.index))?;
    }
    if let (Hook::Ingress, Some(set_clock)) = (st.hook, node.prog.set_ingress_clock) {
        set_clock(cli, st.time_ns).map_err(err)?;
    }
    // The depth a packet finds as it joins its port's queue, for a program with an enqueue
    // stage (the baselines': P4QCN's sample and the tail drop), as the Rust runner gives it.
    if let (Hook::Ingress, Some(set_queue)) = (st.hook, node.prog.set_test_queue) {
        set_queue(cli, st.enq_qdepth_pkts, st.sojourn_ns).map_err(err)?;
    }
    if st.hook == Hook::Egress {
        cli.register_write("MpsEgress.test_clock_ns", 0, st.time_ns)
            .map_err(err)?;
        // The queue the frame leaves: its priority (BMv2 drops a priority it was not started
        // with, so a queue other than 0 needs a switch with priority queues).
        if st.queue != 0 && !node.tables.port_queues.iter().any(|q| q.queues > st.queue) {
            return Err(format!("queue {}: the switch has no such priority queue", st.queue));
        }
        cli.register_write("MpsIngress.test_egress_queue", 0, u64::from(st.queue))
            .map_err(err)?;
        match node.prog.set_test_queue {
            Some(set_queue) => set_queue(cli, st.enq_qdepth_pkts, st.sojourn_ns).map_err(err)?,
            None if st.enq_qdepth_pkts != 0 || st.sojourn_ns != 0 => {
                return Err(format!(
                    "program `{}` reads no queue depth or sojourn on BMv2",
                    set.program
                ))
            }
            None => {}
        }
        cli.register_write("MpsIngress.test_egress_port", 0, u64::from(st.port) + 1)
            .map_err(err)?;
    }
    if st.hook == Hook::Timer {
        return Err(format!("program `{}` has no timer", set.program));
    }
    tap.send(&frame)?;
    let (frames, regs) = match st.hook {
        Hook::Ingress => await_ingress(node, prev)?,
        Hook::Egress | Hook::Timer => await_egress(node, st.port)?,
    };
    if st.hook == Hook::Egress {
        node.switch
            .cli
            .register_write("MpsIngress.test_egress_port", 0, 0)
            .map_err(err)?;
    }
    let obs = match st.hook {
        Hook::Ingress => ingress_outcome(set, &frame, &frames, prev, &regs)?,
        Hook::Egress | Hook::Timer => egress_outcome(set, node.egress_ecn, &frames, prev, &regs)?,
    };
    Ok((obs, regs))
}

/// Whether a program is replayed as the ATSSS UPF's (whole frames out, `ingress_runs`).
fn is_atsss(prog: &Bmv2Program) -> bool {
    prog.p4 == "atsss"
}

/// A step of the ATSSS UPF's program (`atsss.p4`): the control plane's writes, the clock, the
/// frame into its port; the outcome once `ingress_runs` moved (every register written) and
/// the frames its transmit and stack counters promise arrived. What it did is judged as the
/// kernel's runner judges the XDP program's verdict: a frame out of a port is a redirect, seen
/// whole (the encapsulation byte for byte); one to the stack port is the stack's; otherwise
/// consumed when an acknowledgement or keepalive counter moved, else dropped for the counter
/// that moved.
fn atsss_step(
    set: &VectorSet,
    node: &mut Node,
    st: &Step,
    frame: &[u8],
    prev: &BTreeMap<String, u64>,
) -> Result<(Observed, BTreeMap<String, u64>), String> {
    use mpsched_netns::programs::atsss::{CONSUMED, DROP_REASONS};
    let err = |e: Bmv2Error| e.to_string();
    if st.hook != Hook::Ingress {
        return Err(format!(
            "program `{}`: the UPF's vectors run at ingress only",
            set.program
        ));
    }
    let cli = &mut node.switch.cli;
    for w in &st.writes {
        crate::atsss::write_register(cli, &w.register, w.index, w.value)
            .map_err(|e| format!("writing {}[{}]: {e}", w.register, w.index))?;
    }
    crate::atsss::set_clock(cli, st.time_ns).map_err(err)?;
    let runs = |cli: &mut crate::cli::SwitchCli| -> Result<u64, String> {
        let r = cli
            .register_read_all(crate::atsss::INGRESS_RUNS_REGISTER)
            .map_err(err)?;
        Ok(r.first().copied().unwrap_or(0))
    };
    let runs_before = runs(cli)?;
    node.taps[usize::from(st.port)].send(frame)?;
    let deadline = Instant::now() + STEP_TIMEOUT;
    while runs(&mut node.switch.cli)? <= runs_before {
        if Instant::now() > deadline {
            return Err(format!(
                "simple_switch's ingress did not run within {} s",
                STEP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let regs = node.snapshot().map_err(err)?;
    let delta = |k: &str| delta_of(prev, &regs, k);
    let promised: u64 = (0..node.tables.ports.len())
        .map(|p| delta(&format!("port{p}.tx_pkts")))
        .sum::<u64>()
        + delta("counter.not_ipv4")
        + delta("counter.local");
    let mut frames = Vec::new();
    node.collect(&mut frames);
    while (frames.len() as u64) < promised {
        if Instant::now() > deadline {
            return Err(format!("{} frames left the switch, {promised} counted", frames.len()));
        }
        std::thread::sleep(Duration::from_millis(1));
        node.collect(&mut frames);
    }
    let mut obs = observed(chosen_path(prev, &regs));
    let out: Vec<_> = frames.iter().filter(|(p, _)| *p != STACK_PORT).collect();
    if let [(port, f)] = out.as_slice() {
        check_ipv4_checksum(f)?;
        if port_of_mac(f) != Some(*port) {
            return Err(format!("a frame left port {port} addressed to another port's peer"));
        }
        if f.get(6..12) != Some(&node.tables.ports[usize::from(*port)].own_mac[..]) {
            return Err(format!("a frame left port {port} without the port's source MAC"));
        }
        let m = parse_frame(f, set.config.feedback_port).map_err(|e| format!("frame out of port {port}: {e:?}"))?;
        obs.action = "redirect".into();
        obs.port = Some(*port);
        obs.ttl = Some(m.ttl);
        obs.ecn = Some(m.ecn);
        obs.frame = Some(to_hex(f));
    } else if !out.is_empty() {
        return Err(format!("{} frames left the switch for one", out.len()));
    } else if frames.iter().any(|(p, _)| *p == STACK_PORT) {
        obs.action = "to_stack".into();
    } else if CONSUMED.iter().any(|k| delta(k) > 0) {
        obs.action = "consume".into();
    } else {
        obs.action = "drop".into();
        obs.drop_reason = DROP_REASONS
            .iter()
            .find(|(k, _)| delta(k) > 0)
            .map(|(_, r)| r.to_string());
    }
    Ok((obs, regs))
}

/// A step of HULA's program: an ingress frame into its port, an egress frame straight to its
/// port's egress, or a trigger frame into the timer port; the outcome once `ingress_runs`
/// moved and the frames the transmit counters promise arrived.
fn hula_step(
    set: &VectorSet,
    node: &mut Node,
    st: &Step,
    frame: &[u8],
    prev: &BTreeMap<String, u64>,
) -> Result<(Observed, BTreeMap<String, u64>), String> {
    let err = |e: Bmv2Error| e.to_string();
    let cli = &mut node.switch.cli;
    hula::set_clock(cli, st.time_ns).map_err(err)?;
    let runs_before = cli.register_read_all(hula::INGRESS_RUNS_REGISTER).map_err(err)?;
    let runs_before = runs_before.first().copied().unwrap_or(0);
    match st.hook {
        Hook::Ingress => node.taps[usize::from(st.port)].send(frame)?,
        Hook::Egress => {
            cli.register_write("test_egress_port", 0, u64::from(st.port) + 1)
                .map_err(err)?;
            // Any port's peer: the frame goes straight to the port named.
            node.taps[0].send(frame)?;
        }
        Hook::Timer => {
            let trigger = hula::trigger_frame(set.config.own_ip);
            node.timer.as_ref().ok_or("no timer port")?.send(&trigger)?;
        }
    }
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let runs = node
            .switch
            .cli
            .register_read_all(hula::INGRESS_RUNS_REGISTER)
            .map_err(err)?;
        if runs.first().copied().unwrap_or(0) > runs_before {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "simple_switch's ingress did not run within {} s",
                STEP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if st.hook == Hook::Egress {
        node.switch.cli.register_write("test_egress_port", 0, 0).map_err(err)?;
    }
    let mut frames = Vec::new();
    if st.hook == Hook::Egress {
        // The estimator only: the frame leaves as given, nothing else is observed.
        let (_, regs) = await_egress(node, st.port)?;
        let mut obs = observed(chosen_path(prev, &regs));
        obs.action = "transmit".into();
        return Ok((obs, regs));
    }
    let regs = node.snapshot().map_err(err)?;
    let delta = |k: &str| delta_of(prev, &regs, k);
    let promised: u64 = (0..node.tables.ports.len())
        .map(|p| delta(&format!("port{p}.tx_pkts")))
        .sum::<u64>()
        + delta("counter.not_ipv4")
        + delta("counter.local");
    while (frames.len() as u64) < promised {
        if Instant::now() > deadline {
            return Err(format!("{} frames left the switch, {promised} counted", frames.len()));
        }
        std::thread::sleep(Duration::from_millis(1));
        node.collect(&mut frames);
    }
    Ok((hula_outcome(st.hook, &frames, prev, &regs)?, regs))
}

/// What a HULA step shows: probes sent (in port order), a redirected frame's port, TTL, ECN and
/// connection header, or why nothing left.
fn hula_outcome(
    hook: Hook,
    frames: &[(PortId, Vec<u8>)],
    prev: &BTreeMap<String, u64>,
    regs: &BTreeMap<String, u64>,
) -> Result<Observed, String> {
    let delta = |k: &str| delta_of(prev, regs, k);
    let mut obs = observed(chosen_path(prev, regs));
    let mut data = None;
    let mut to_stack = false;
    for (port, f) in frames {
        if *port == STACK_PORT {
            to_stack = true;
            continue;
        }
        if port_of_mac(f) != Some(*port) {
            return Err(format!("a frame left port {port} addressed to another port's peer"));
        }
        let (meta, _, stack) =
            parse_frame_with_headers(f, 0).map_err(|e| format!("frame out of port {port}: {e:?}"))?;
        if let Some(p) = stack.probe() {
            obs.probes.push(ProbeObserved {
                port: *port,
                tor: p.tor,
                hops: p.hops,
                util: p.util,
            });
        } else {
            check_ipv4_checksum(f)?;
            data = Some((*port, meta, stack.routing().copied()));
        }
    }
    obs.probes.sort_by_key(|p| p.port);
    if hook == Hook::Timer {
        obs.action = "timer".into();
    } else if let Some((port, meta, conn)) = data {
        obs.action = "redirect".into();
        obs.port = Some(port);
        obs.ttl = Some(meta.ttl);
        obs.ecn = Some(meta.ecn);
        obs.conn = conn.map(|r| ConnObserved {
            conn_id: r.conn_id,
            subflow: r.path,
        });
    } else if !obs.probes.is_empty() || delta("counter.hula.probes_in") > 0 {
        obs.action = "consume".into();
    } else if to_stack {
        obs.action = "to_stack".into();
    } else if delta("counter.hula.probes_refused") > 0 {
        obs.action = "drop".into();
        obs.drop_reason = Some("malformed".into());
    } else {
        shot(&mut obs, &delta);
    }
    Ok(obs)
}

/// Wait for an ingress step's outcome: the frames out of the switch and the registers after.
fn await_ingress(node: &mut Node, prev: &BTreeMap<String, u64>) -> Result<Outcome, String> {
    let deadline = Instant::now() + STEP_TIMEOUT;
    let mut frames = Vec::new();
    loop {
        node.collect(&mut frames);
        if !frames.is_empty() {
            break;
        }
        let mut moved = false;
        for &(register, name_of) in node.prog.counters {
            let counters = node.switch.cli.register_read_all(register).map_err(|e| e.to_string())?;
            moved |= counters.iter().enumerate().any(|(i, &v)| {
                name_of(i).is_some_and(|key| {
                    OUTCOME_COUNTERS.contains(&key.as_str()) && v > prev.get(&key).copied().unwrap_or(0)
                })
            });
        }
        if moved {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "simple_switch showed no outcome within {} s",
                STEP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // Ingress has ended (a frame left it, or a terminal counter moved); its writes are done.
    // A packet the program made of it (PMQECN's feedback) goes through ingress again: awaited.
    if let Some(settled) = node.prog.settled {
        while !settled(&mut node.switch.cli).map_err(|e| e.to_string())? {
            if Instant::now() > deadline {
                return Err(format!(
                    "the program's own packets were not through within {} s",
                    STEP_TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let regs = node.snapshot().map_err(|e| e.to_string())?;
    let delta = |k: &str| delta_of(prev, &regs, k);
    let tables = &node.tables;
    let promised: u64 = (0..tables.ports.len())
        .map(|p| delta(&format!("port{p}.tx_pkts")))
        .sum::<u64>()
        + delta("counter.not_ipv4")
        + delta("counter.local");
    while (frames.len() as u64) < promised {
        if Instant::now() > deadline {
            return Err(format!("{} frames left the switch, {promised} counted", frames.len()));
        }
        std::thread::sleep(Duration::from_millis(1));
        node.collect(&mut frames);
    }
    Ok((frames, regs))
}

/// Wait for an egress step's frame to come out of its port.
fn await_egress(node: &mut Node, port: PortId) -> Result<Outcome, String> {
    let deadline = Instant::now() + STEP_TIMEOUT;
    let mut frames = Vec::new();
    while !frames.iter().any(|(p, _)| *p == port) {
        if Instant::now() > deadline {
            return Err(format!("nothing left port {port} within {} s", STEP_TIMEOUT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(1));
        node.collect(&mut frames);
    }
    let regs = node.snapshot().map_err(|e| e.to_string())?;
    Ok((frames, regs))
}

fn ingress_outcome(
    set: &VectorSet,
    arrived: &[u8],
    frames: &[(PortId, Vec<u8>)],
    prev: &BTreeMap<String, u64>,
    regs: &BTreeMap<String, u64>,
) -> Result<Observed, String> {
    let delta = |k: &str| delta_of(prev, regs, k);
    let mut obs = observed(chosen_path(prev, regs));
    let fb_port = set.config.feedback_port;
    // A rate feedback (PMQECN's) is observed apart; the data packet's own outcome is the rest.
    let (feedback, out): (Vec<_>, Vec<_>) = frames
        .iter()
        .filter(|(p, _)| *p != STACK_PORT)
        .partition(|(p, f)| mpsched_programs::vectors::rate_feedback_of(set, f, *p).is_some());
    for (port, f) in feedback {
        check_ipv4_checksum(f)?;
        if port_of_mac(f) != Some(*port) {
            return Err(format!(
                "a rate feedback left port {port} addressed to another port's peer"
            ));
        }
        if obs
            .rate_feedback
            .replace(mpsched_programs::vectors::rate_feedback_of(set, f, *port).expect("partitioned"))
            .is_some()
        {
            return Err("two rate feedback packets for one frame".into());
        }
    }
    if out.is_empty() {
        if frames.iter().any(|(p, _)| *p == STACK_PORT) {
            obs.action = "to_stack".into();
        } else {
            shot(&mut obs, &delta);
        }
        return Ok(obs);
    }
    obs.action = "redirect".into();
    for (port, f) in out {
        check_ipv4_checksum(f)?;
        if port_of_mac(f) != Some(*port) {
            return Err(format!("a frame left port {port} addressed to another port's peer"));
        }
        let meta = parse_frame(f, fb_port).map_err(|e| format!("frame out of port {port}: {e:?}"))?;
        match meta.feedback().filter(|_| meta.src_ip == set.config.own_ip) {
            Some(fb) => {
                obs.emit = Some(EmitObserved {
                    port: *port,
                    dst_ip: meta.dst_ip,
                    group: fb.group,
                    path: fb.path,
                })
            }
            None => {
                obs.port = Some(*port);
                obs.ttl = Some(meta.ttl);
                obs.ecn = Some(meta.ecn);
                let arrived_dscp = parse_frame(arrived, fb_port).map(|m| m.dscp);
                obs.dscp = arrived_dscp.is_ok_and(|d| d != meta.dscp).then_some(meta.dscp);
            }
        }
    }
    Ok(obs)
}

fn egress_outcome(
    set: &VectorSet,
    ecn: bool,
    frames: &[(PortId, Vec<u8>)],
    prev: &BTreeMap<String, u64>,
    regs: &BTreeMap<String, u64>,
) -> Result<Observed, String> {
    let mut obs = observed(chosen_path(prev, regs));
    obs.action = "transmit".into();
    // The multipath switch's egress is its marker, and DCQCN's and TCN's mark, whose ECN the
    // Rust runner observes; another program's egress stage (vq-wrr's release) is observed by
    // its registers alone.
    if !ecn {
        return Ok(obs);
    }
    let f = &frames.last().ok_or("no frame")?.1;
    // A program's own marking rewrote the TOS byte: its checksum must follow.
    if set.program != mpsched_core::vectors::MULTIPATH {
        check_ipv4_checksum(f)?;
    }
    if let Ok(m) = parse_frame(f, set.config.feedback_port) {
        obs.ecn = Some(m.ecn);
    } else if f.len() >= 34 && f[12..14] == [0x08, 0x00] {
        obs.ecn = Some(Ecn::from_bits(f[15]));
    }
    Ok(obs)
}

/// What [`ingress_cost`] sends.
pub enum CostFrames {
    /// Frames into ports, cycled.
    Ports(Vec<(PortId, Vec<u8>)>),
    /// HULA's trigger frame into the timer port.
    Timer,
}

/// Nanoseconds of wall time per frame for `simple_switch` running `set`'s node (its program
/// and tables, the switch's own clock) to take `n` frames: the frames are written in batches
/// of [`COST_BATCH`] as fast as a raw socket takes them, and a batch is done when the frames it
/// makes have come out (as many per frame as the first one made, counted on the ports' veth
/// peers, so that nothing but the switch runs while it works). A throughput figure: parsing,
/// ingress, replication, egress and deparsing of every frame are in it; the difference between
/// two kinds of frame is what one costs more than the other.
pub fn ingress_cost(set: &VectorSet, frames: &CostFrames, n: usize) -> Result<f64, String> {
    if !is_root() {
        return Err("running simple_switch on veth interfaces needs root".into());
    }
    let mut node = Node::create(set).map_err(|e| format!("{}: {e}", set.name))?;
    let err = |e: Bmv2Error| e.to_string();
    match node.prog.p4 {
        // The switch's own clock, and the estimator on every frame, as in a live network.
        "hula" => node.switch.cli.register_write("test_flags", 0, 0).map_err(err)?,
        // Every frame released at egress, as in a live network.
        "vqwrr" => node.switch.cli.register_write("vq_test_flags", 0, 0).map_err(err)?,
        "mpsched" => {}
        other => {
            return Err(format!(
                "{}: ingress_cost runs hula.p4, vqwrr.p4 or mpsched.p4, not {other}.p4",
                set.name
            ))
        }
    }
    let trigger = hula::trigger_frame(set.config.own_ip);
    let send = |node: &Node, i: usize| -> Result<(), String> {
        match frames {
            CostFrames::Ports(list) => {
                let (port, f) = &list[i % list.len()];
                node.taps[usize::from(*port)].send(f)
            }
            CostFrames::Timer => node.timer.as_ref().ok_or("no timer port")?.send(&trigger),
        }
    };
    let count = |node: &Node| -> usize {
        let mut c = 0;
        for tap in &node.taps {
            while tap.next(0).is_some() {
                c += 1;
            }
        }
        c
    };
    // How many frames each one makes (every frame of a case makes as many).
    send(&node, 0)?;
    let mut per = 0;
    let probe_until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < probe_until {
        per += count(&node);
        std::thread::sleep(Duration::from_millis(5));
    }
    if per == 0 {
        return Err(format!("{}: the frame made nothing to count", set.name));
    }
    let t = Instant::now();
    let (mut sent, mut seen) = (0usize, 0usize);
    while sent < n {
        let batch = COST_BATCH.min(n - sent);
        for i in 0..batch {
            send(&node, sent + i + 1)?;
        }
        sent += batch;
        let deadline = Instant::now() + STEP_TIMEOUT * 10;
        while seen < sent * per {
            seen += count(&node);
            if Instant::now() > deadline {
                return Err(format!("{}: {seen} of {} frames came out", set.name, sent * per));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(t.elapsed().as_nanos() as f64 / n as f64)
}

/// Frames [`ingress_cost`] writes before it waits for the switch to take them: few enough that
/// no socket or BMv2 queue overflows.
pub const COST_BATCH: usize = 16;
