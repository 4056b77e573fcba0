//! `vq-wrr` on the kernel: load `vqwrr.bpf.o` (crates/programs/src/pmqecn/vqwrr.bpf.c, the
//! multipath switch with a queue stage), fill the multipath switch's tables as
//! [`Dataplane`] does and the virtual queues' maps from the program's parameters and the ports'
//! queues, attach the switch at TC ingress of its ports and the departure stage at TC ingress
//! of the interface at the far end of each port's link, and read the registers back under the
//! names the Rust twin's vectors give them (`vq_weight<v>`, `vq_len<8p + v>`,
//! `vq_level_use<64p + 8v + l>`, `counter.vq.*`).
//!
//! A packet's level reaches the port's qdisc as `skb->priority`, the class id of the port's
//! queue at that level ([`NodeTables::port_classes`]); a port of one queue has one level, and
//! its packets carry [`ONE_QUEUE_TAG`], which no qdisc of ours names, so that the departure
//! stage still knows them.

use crate::backend::NetnsError;
use crate::dataplane::{
    bpf, map_of, percpu_sum, update_map, Dataplane, DataplaneError, FarEnd, NodeTables, PortBinding,
};
use crate::layout::Pod;
use crate::switchplane::{routes_table_delete, routes_table_write, snapshot_register_of, SwitchPlane};
use crate::tap::Tap;
use crate::vectors::{by_test_run, observed, test_run_prog_with_priority, TestNode};
use libbpf_rs::{MapCore, MapFlags, ProgramMut};
use mpsched_core::control::{self, ControlError, ControlListing, ProgramControl};
use mpsched_core::packet::PortId;
use mpsched_core::vectors::{chosen_path, from_hex, Hook, Observed, StepResult, VectorSet};
use mpsched_programs::pmqecn::vqwrr::{VqWrrConfig, MAX_LEVELS, VIRTUAL_QUEUES};
use std::collections::BTreeMap;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vqwrr.bpf.o"));
/// The departure stage's program name in the object.
pub const DEPARTURE: &str = "vq_departure";
/// The `skb->priority` of a packet placed on a port of one queue: a class id (`7ff0:10`) no
/// qdisc of ours has, so the port's qdisc classifies it as before and the departure stage
/// still tells it from packets the switch did not place.
pub const ONE_QUEUE_TAG: u32 = 0x7ff0_0010;
/// Ports the maps hold (`MPS_MAX_PORTS`).
const MAX_PORTS: usize = crate::layout::MAX_PORTS;

/// `enum vq_counter` in vqwrr.h, in order, named as the Rust twin's counters.
pub const COUNTERS: [&str; 4] = [
    "counter.vq.top_level",
    "counter.vq.downgraded",
    "counter.vq.drops",
    "counter.vq.accounting_errors",
];

/// `struct vq_node` (`VQ_SIZEOF_NODE`, 8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct VqNode {
    capacity: u32,
    flags: u32,
}

/// `VQ_F_TEST_TAG_IN_PRIORITY`: the departure stage reads the tag from `skb->priority`.
const F_TEST_TAG_IN_PRIORITY: u32 = 1;
/// `VQ_HASH_TAG`: a placed packet's `skb->hash` is this with its level in the low byte.
pub const HASH_TAG: u32 = 0x7671_0000;

/// `struct vq_port_cfg` (`VQ_SIZEOF_PORT_CFG`, 36 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct VqPortCfg {
    prio_of_level: [u32; MAX_LEVELS],
    levels: u32,
}

/// `struct vq_port_state` (`VQ_SIZEOF_PORT_STATE`, 296 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(super) struct VqPortState {
    lock: u32,
    touched: u32,
    pub(super) vq_len: [u32; VIRTUAL_QUEUES],
    level_use: [u32; VIRTUAL_QUEUES * MAX_LEVELS],
}

impl Default for VqPortState {
    fn default() -> VqPortState {
        VqPortState {
            lock: 0,
            touched: 0,
            vq_len: [0; VIRTUAL_QUEUES],
            level_use: [0; VIRTUAL_QUEUES * MAX_LEVELS],
        }
    }
}

/// `struct vq_mac` (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct VqMac {
    addr: [u8; 6],
    pad: [u8; 2],
}

const _: () = assert!(std::mem::size_of::<VqNode>() == 8);
const _: () = assert!(std::mem::size_of::<VqPortCfg>() == 36);
const _: () = assert!(std::mem::size_of::<VqPortState>() == 296);
const _: () = assert!(std::mem::size_of::<VqMac>() == 8);
// SAFETY: repr(C), integers only, no implicit padding (sizes pinned to vqwrr.h's above).
unsafe impl Pod for VqNode {}
// SAFETY: as above.
unsafe impl Pod for VqPortCfg {}
// SAFETY: as above.
unsafe impl Pod for VqPortState {}
// SAFETY: as above.
unsafe impl Pod for VqMac {}

/// One switch's vq-wrr: the multipath switch's data plane with the virtual queues' maps.
pub struct VqWrrPlane {
    dp: Dataplane,
    n_ports: usize,
    far_ends: Vec<FarEnd>,
}

impl VqWrrPlane {
    /// Load the object (this runs the verifier), fill the multipath switch's tables and the
    /// virtual queues' maps.
    pub fn load(t: &NodeTables) -> Result<VqWrrPlane, DataplaneError> {
        Self::load_object(OBJECT, "vqwrr.bpf.o", t)
    }

    /// As [`VqWrrPlane::load`], from an object that includes `vqwrr.bpf.c` (pmqecn's).
    pub(super) fn load_object(object: &[u8], name: &str, t: &NodeTables) -> Result<VqWrrPlane, DataplaneError> {
        let dp = Dataplane::load_object(object, name, t)?;
        let plane = VqWrrPlane {
            dp,
            n_ports: t.ports.len(),
            far_ends: t.far_ends.clone(),
        };
        plane.configure(t)?;
        Ok(plane)
    }

    pub(super) fn update<K: Pod, V: Pod>(&self, map: &str, key: &K, value: &V) -> Result<(), DataplaneError> {
        update_map(self.dp.object(), map, key, value)
    }

    /// The capacity, every class's weight, each port's levels and the MAC each port sends from.
    fn configure(&self, t: &NodeTables) -> Result<(), DataplaneError> {
        let cfg = VqWrrConfig::from_params(&t.params);
        if !(1..=MAX_LEVELS as u8).contains(&cfg.levels) || cfg.weight == 0 {
            return Err(DataplaneError::Config(format!(
                "vq-wrr: levels {} (1 to {MAX_LEVELS}), weight {} (at least 1)",
                cfg.levels, cfg.weight
            )));
        }
        // Under the vectors' test clock the replay hands the tag in skb->priority, which
        // BPF_PROG_TEST_RUN can set (it cannot set skb->hash).
        let node = VqNode {
            capacity: cfg.vq_capacity,
            flags: if t.test_clock { F_TEST_TAG_IN_PRIORITY } else { 0 },
        };
        self.update("vq_node", &0u32, &node)?;
        for v in 0..VIRTUAL_QUEUES as u32 {
            self.update("vq_weight", &v, &cfg.weight)?;
        }
        for (p, b) in t.ports.iter().enumerate() {
            let pc = port_cfg(t, p, cfg.levels);
            self.update("vq_port_cfg", &(p as u32), &pc)?;
            let mac = VqMac {
                addr: b.own_mac,
                pad: [0; 2],
            };
            self.update("vq_mac_port", &mac, &(p as u32))?;
        }
        Ok(())
    }

    /// The departure stage.
    pub fn departure(&self) -> Result<ProgramMut<'_>, DataplaneError> {
        self.dp.program(DEPARTURE)
    }

    /// Attach the switch at TC ingress of its ports (with the marker at egress of the marking
    /// ones), in the calling thread's namespace.
    pub fn attach(&mut self, t: &NodeTables) -> Result<(), NetnsError> {
        Ok(self.dp.attach_ports(t)?)
    }

    /// Set every class's weight or one (`vq_weight`), as the control channel writes it.
    pub(super) fn set_weight(&self, class: usize, weight: u64) -> Result<(), ControlError> {
        if class >= VIRTUAL_QUEUES {
            return Err(ControlError::NoIndex {
                register: "vq_weight".into(),
                size: VIRTUAL_QUEUES,
                index: class,
            });
        }
        let w = u32::try_from(weight)
            .ok()
            .filter(|&w| w >= 1)
            .ok_or_else(|| ControlError::BadEntry {
                table: "vq_weight".into(),
                reason: format!("a weight is 1 to {} packets, got {weight}", u32::MAX),
            })?;
        self.update("vq_weight", &(class as u32), &w)
            .map_err(|e| ControlError::Unsupported(format!("eBPF: {e}")))
    }

    pub(super) fn port_state(&self, p: usize) -> Result<VqPortState, DataplaneError> {
        let m = map_of(self.dp.object(), "vq_state")?;
        let v = bpf(
            || "read map vq_state".into(),
            m.lookup(&(p as u32).to_ne_bytes(), MapFlags::LOCK),
        )?;
        Ok(v.map(|b| VqPortState::from_bytes(&b)).unwrap_or_default())
    }

    /// The multipath switch's registers and counters, the `vq.*` counters, every class's
    /// weight, and the virtual queues of the ports below the highest one the program has
    /// touched (as the Rust twin holds state for the ports it has seen).
    pub fn snapshot(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        let mut out = self.dp.snapshot()?;
        let obj = self.dp.object();
        for (i, name) in COUNTERS.iter().enumerate() {
            let v: u64 = percpu_sum(obj, "vq_counters", i as u32, |t: &mut u64, v| *t += v)?;
            out.insert(name.to_string(), v);
        }
        let weights = map_of(obj, "vq_weight")?;
        for v in 0..VIRTUAL_QUEUES {
            let w = bpf(
                || "read map vq_weight".into(),
                weights.lookup(&(v as u32).to_ne_bytes(), MapFlags::ANY),
            )?;
            let w = w.map(|b| u32::from_bytes(&b)).unwrap_or(0);
            out.insert(format!("vq_weight{v}"), u64::from(w));
        }
        let states = (0..self.n_ports.min(MAX_PORTS))
            .map(|p| self.port_state(p))
            .collect::<Result<Vec<_>, _>>()?;
        let seen = states.iter().rposition(|s| s.touched != 0).map_or(0, |p| p + 1);
        for (p, st) in states.iter().take(seen).enumerate() {
            for v in 0..VIRTUAL_QUEUES {
                let i = p * VIRTUAL_QUEUES + v;
                out.insert(format!("vq_len{i}"), u64::from(st.vq_len[v]));
                for l in 0..MAX_LEVELS {
                    let at = i * MAX_LEVELS + l;
                    out.insert(format!("vq_level_use{at}"), u64::from(st.level_use[at - p * 64]));
                }
            }
        }
        Ok(out)
    }

    /// Port `port`'s packets in its virtual queues now, and the most they held together since
    /// the last call (which starts the next interval).
    pub fn queue_figures(&self, port: PortId) -> Result<(u64, u64), DataplaneError> {
        let now: u64 = self
            .port_state(usize::from(port))?
            .vq_len
            .iter()
            .map(|&q| u64::from(q))
            .sum();
        let qmax = map_of(self.dp.object(), "vq_qmax")?;
        let key = u32::from(port).to_ne_bytes();
        let most =
            bpf(|| "read map vq_qmax".into(), qmax.lookup(&key, MapFlags::ANY))?.map_or(0, |b| u32::from_bytes(&b));
        self.update("vq_qmax", &u32::from(port), &0u32)?;
        Ok((now, u64::from(most).max(now)))
    }

    /// The multipath switch's data plane underneath.
    pub fn dataplane(&self) -> &Dataplane {
        &self.dp
    }
}

/// Port `p`'s levels: its queues' class ids, at most `levels` of them, or one level tagged
/// [`ONE_QUEUE_TAG`] on a port of one queue; every port `levels` htb classes `1:10`.. when the
/// tables list no port's classes (conformance vectors).
fn port_cfg(t: &NodeTables, p: usize, levels: u8) -> VqPortCfg {
    let mut pc = VqPortCfg::default();
    let classes: Vec<u32> = if t.port_classes.is_empty() {
        (0..u32::from(levels)).map(|l| 0x1_0010 + l).collect()
    } else {
        t.port_classes.get(p).cloned().unwrap_or_default()
    };
    if classes.len() < 2 {
        pc.levels = 1;
        pc.prio_of_level[0] = ONE_QUEUE_TAG;
        return pc;
    }
    pc.levels = classes.len().min(usize::from(levels)) as u32;
    for (l, c) in classes.iter().take(pc.levels as usize).enumerate() {
        pc.prio_of_level[l] = *c;
    }
    pc
}

/// [`crate::programs::KernelProgram::start`] for `vq-wrr`.
pub fn start(tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
    let mut plane = VqWrrPlane::load(tables)?;
    plane.attach(tables)?;
    Ok(Box::new(plane))
}

/// The snapshot's registers, `vq_weight` and the split groups' WRR weights writable; the
/// routes table as on `mpsched`'s plane.
impl ProgramControl for VqWrrPlane {
    fn control_listing(&self) -> ControlListing {
        let mut listing = self.dp.control_listing();
        let snap = self.snapshot().unwrap_or_default();
        let ours: BTreeMap<String, u64> = snap
            .into_iter()
            .filter(|(k, _)| k.starts_with("vq_") || k.starts_with("counter.vq."))
            .collect();
        listing
            .registers
            .extend(control::snapshot_listing(&ours, |base| base == "vq_weight"));
        listing
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        snapshot_register_of(self, name, index)
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        match name {
            "vq_weight" => self.set_weight(index, value),
            _ => self.dp.write_register(name, index, value),
        }
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        let dp = &self.dp;
        routes_table_write(table, key, action, params, |dst, port| dp.set_host_route(dst, port))
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        let dp = &self.dp;
        routes_table_delete(table, key, |dst| dp.set_host_route(dst, None))
    }
}

impl SwitchPlane for VqWrrPlane {
    fn attach_departures(&mut self) -> Result<(), NetnsError> {
        super::attach_far_ends(&self.dp, DEPARTURE, &self.far_ends)
    }

    fn weights(&self) -> Vec<(u8, Vec<u16>)> {
        self.dp.weights().unwrap_or_default()
    }

    fn marker_backlog_bytes(&self, port: PortId) -> Option<u64> {
        SwitchPlane::marker_backlog_bytes(&self.dp, port)
    }

    fn snapshot(&self) -> Option<BTreeMap<String, u64>> {
        VqWrrPlane::snapshot(self).ok()
    }

    fn queue_pkts(&self, port: PortId) -> Option<(u64, u64)> {
        self.queue_figures(port).ok()
    }
}

/// `TC_ACT_UNSPEC` as `BPF_PROG_TEST_RUN` returns it: the next filter's turn.
const TC_ACT_UNSPEC: u32 = u32::MAX;

/// [`crate::programs::KernelProgram::vectors`] for `vq-wrr`: a step's register writes (the
/// control plane's `vq_weight`) first; an ingress step through the object's `mps_ingress` as
/// the multipath switch's vectors run; an egress step through the departure stage, with the
/// frame as the step's port sends it (its MACs the port's) carrying the tag of the level the
/// step names in `skb->priority` (`BPF_PROG_TEST_RUN` cannot set `skb->hash`, where a live
/// packet carries it; the node's test flag tells the stage so).
pub fn run_vectors(set: &VectorSet) -> Result<crate::programs::Replay, String> {
    let node = TestNode::create(set.n_ports)?;
    let tables = node.tables(set)?;
    let peers = node.peer_ifindexes.clone();
    node.enter(|| -> Result<crate::programs::Replay, String> {
        let taps = peers.iter().map(|&i| Tap::open(i)).collect::<Result<Vec<_>, _>>()?;
        let mut plane = VqWrrPlane::load(&tables).map_err(|e| e.to_string())?;
        replay(set, &mut plane, &tables, &peers, &taps)
    })?
}

/// What vq-wrr's vector replay needs of a plane built on it (vq-wrr's own, pmqecn's): its
/// control plane for a step's writes, the vq-wrr part underneath, and its registers.
pub(super) trait OnVqWrr: ProgramControl {
    /// The vq-wrr part.
    fn vq(&self) -> &VqWrrPlane;
    /// Every register, by the vectors' names.
    fn registers(&self) -> Result<BTreeMap<String, u64>, DataplaneError>;
}

impl OnVqWrr for VqWrrPlane {
    fn vq(&self) -> &VqWrrPlane {
        self
    }

    fn registers(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        self.snapshot()
    }
}

/// Replay `set` through `plane`: a step's register writes (the control plane's) first, the
/// step's time on the node's test clock, an ingress step through `mps_ingress` as the multipath
/// switch's vectors run (the ports' peers tapped, so that a data packet that left as a clone
/// beside a feedback is seen), an egress step through the departure stage.
pub(super) fn replay<P: OnVqWrr>(
    set: &VectorSet,
    plane: &mut P,
    tables: &NodeTables,
    peers: &[u32],
    taps: &[Tap],
) -> Result<crate::programs::Replay, String> {
    let initial = plane.registers().map_err(|e| e.to_string())?;
    let mut prev = initial.clone();
    let mut results = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let at = format!("{} step {i} ({})", set.name, st.note);
        for w in &st.writes {
            plane
                .write_register(&w.register, w.index, w.value)
                .map_err(|e| format!("{at}: write {}[{}]: {e}", w.register, w.index))?;
        }
        let frame = from_hex(&st.frame).map_err(|e| format!("{at}: {e}"))?;
        let port = tables
            .ports
            .get(usize::from(st.port))
            .ok_or_else(|| format!("{at}: port {} does not exist", st.port))?;
        let dp = plane.vq().dataplane();
        dp.set_test_clock(st.time_ns).map_err(|e| e.to_string())?;
        taps.iter().for_each(Tap::drain);
        let snap = || plane.registers().map_err(|e| e.to_string());
        let (observed, regs) = match st.hook {
            Hook::Ingress => by_test_run(set, dp, &snap, taps, Hook::Ingress, port.ifindex, &frame, &prev),
            Hook::Egress => {
                let prog = plane.vq().departure().map_err(|e| e.to_string())?;
                departure(&prog, &snap, port, peers[usize::from(st.port)], st.queue, &frame, &prev)
            }
            Hook::Timer => Err(format!("`{}` has no timer", set.program)),
        }
        .map_err(|e| format!("{at}: {e}"))?;
        prev = regs.clone();
        results.push(StepResult {
            observed,
            registers: regs,
        });
    }
    Ok((initial, results))
}

/// A packet leaving `port` from `queue`, through the departure stage `prog` where it arrives;
/// the registers after, by `snap`.
pub(super) fn departure(
    prog: &ProgramMut<'_>,
    snap: &dyn Fn() -> Result<BTreeMap<String, u64>, String>,
    port: &PortBinding,
    peer_ifindex: u32,
    queue: u8,
    frame: &[u8],
    prev: &BTreeMap<String, u64>,
) -> Result<(Observed, BTreeMap<String, u64>), String> {
    let sent = super::as_sent_by(port, frame)?;
    let priority = HASH_TAG | u32::from(queue);
    let (retval, _, _) = test_run_prog_with_priority(prog, peer_ifindex, priority, &sent, 1)?;
    if retval != TC_ACT_UNSPEC {
        return Err(format!("the departure stage returned {retval}, not TC_ACT_UNSPEC"));
    }
    let regs = snap()?;
    let mut obs = observed(chosen_path(prev, &regs));
    obs.action = "transmit".into();
    Ok((obs, regs))
}

/// `vq-wrr`'s rows of `mpsched bench --dataplane` ([`crate::bench::program_costs`]): a class-1
/// UDP packet (64-byte frame) placed at ingress (routed, its level searched and counted), its
/// departure at the far end, and the same packet through the multipath switch alone, each the
/// mean of `n` single `BPF_PROG_TEST_RUN`s (the kernel's clock around each; a repeated run
/// would keep its decremented TTL and its placements, so every run is a fresh frame), `n` the
/// repeats asked for, at most 65 536: the virtual queue holds them all at the top level
/// (capacity 2^20, weight 2^16), so each departure from it finds a packet to release.
pub fn costs(repeat: u32, stop: &std::sync::atomic::AtomicBool) -> Result<Vec<crate::bench::ProgramCost>, NetnsError> {
    use mpsched_core::packet::{Ipv4, PacketMeta};
    use mpsched_core::table::Route;
    use mpsched_core::vectors::{OWN_MAC_NODE, PEER_MAC_NODE};
    use mpsched_core::wire::{emit_udp_frame, mac_for};
    use mpsched_programs::SwitchProgram;
    const OWN: Ipv4 = 0x0aff_0001;
    const SRC: Ipv4 = 0x0a00_0001;
    const DST: Ipv4 = 0x0a00_0003;
    let n = repeat.clamp(1, 1 << 16);
    let node = TestNode::create(2).map_err(NetnsError::Plane)?;
    let program = &mpsched_programs::pmqecn::vqwrr::VQ_WRR;
    let mut params = mpsched_programs::Params::defaults(program.params());
    for (k, v) in [("vq_capacity", 1 << 20), ("weight", 1 << 16)] {
        params.set(program.params(), k, v).map_err(NetnsError::Plane)?;
    }
    let cfg = mpsched_core::switch::SwitchConfig::forwarding(
        OWN,
        vec![Route {
            prefix: DST,
            len: 32,
            port: 1,
        }],
    );
    let tables = NodeTables {
        program: program.name(),
        params,
        test_clock: true,
        ..NodeTables::multipath(cfg, node.ports.clone())
    };
    let mut m = PacketMeta::udp(SRC, DST, 5001, 5201, 0);
    m.dscp = 1 << 3;
    let mut data = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        64,
        &[0u8; 18],
        &mut data,
    );
    let (in_port, out_port, peer) = (node.ports[0], node.ports[1], node.peer_ifindexes[1]);
    let left = super::as_sent_by(&out_port, &data).map_err(NetnsError::Plane)?;
    let mean_ns = |prog: &ProgramMut<'_>, ifindex: u32, priority: u32, frame: &[u8]| -> Result<f64, String> {
        let mut total = std::time::Duration::ZERO;
        for _ in 0..n {
            total += test_run_prog_with_priority(prog, ifindex, priority, frame, 1)?.2;
        }
        Ok(total.as_nanos() as f64 / f64::from(n))
    };
    let rows = node
        .enter(|| -> Result<Vec<(String, f64)>, String> {
            let vq = VqWrrPlane::load(&tables).map_err(|e| e.to_string())?;
            let base = Dataplane::load(&tables).map_err(|e| e.to_string())?;
            let ingress = vq.dataplane().program("mps_ingress").map_err(|e| e.to_string())?;
            let placed = mean_ns(&ingress, in_port.ifindex, 0, &data)?;
            let departure = vq.departure().map_err(|e| e.to_string())?;
            let left_ns = mean_ns(&departure, peer, HASH_TAG | 7, &left)?;
            let plain = base.program("mps_ingress").map_err(|e| e.to_string())?;
            let plain_ns = mean_ns(&plain, in_port.ifindex, 0, &data)?;
            let snap = vq.snapshot().map_err(|e| e.to_string())?;
            let errors = snap.get("counter.vq.accounting_errors").copied().unwrap_or(0);
            let drops = snap.get("counter.vq.drops").copied().unwrap_or(0);
            if errors + drops != 0 {
                return Err(format!(
                    "vq-wrr's bench dropped {drops} and miscounted {errors} departures"
                ));
            }
            Ok(vec![
                ("vq-wrr place (routed, level)".into(), placed),
                ("vq-wrr departure".into(), left_ns),
                ("the same packet, multipath".into(), plain_ns),
            ])
        })
        .map_err(NetnsError::Plane)?
        .map_err(NetnsError::Plane)?;
    crate::bench::cost_rows(rows, n, stop)
}
