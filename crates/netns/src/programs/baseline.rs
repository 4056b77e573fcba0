//! `dcqcn`, `tcn` and `p4qcn` on the kernel: load `baseline.bpf.o` (crates/programs/src/pmqecn/
//! baseline.bpf.c, the multipath switch with a queue stage that counts each port's queue and
//! records every enqueue, and P4QCN's sampling, which reflects rate feedback to the sources),
//! set its mode and parameters from the program, attach the switch at TC ingress of its ports
//! and the departure stage, which marks, at the far end of each port's link (as `vq-wrr` does,
//! [`super::vqwrr`]), and read the counters back under the Rust twin's names
//! (`counter.baseline.marked`, `counter.baseline.tail_drops`, P4QCN's `counter.qcn.*`;
//! `.skipped` and `.late`, this twin's own, once they move: `skipped - late` records of
//! packets lost after the count).

use crate::backend::NetnsError;
use crate::dataplane::{map_of, percpu_sum, update_map, Dataplane, DataplaneError, FarEnd, NodeTables, PortBinding};
use crate::layout::Pod;
use crate::switchplane::{routes_table_delete, routes_table_write, snapshot_register_of, SwitchPlane};
use crate::tap::Tap;
use crate::vectors::{by_test_run, observed, test_run_prog_with_priority, TestNode};
use libbpf_rs::{MapCore, MapFlags, ProgramMut};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl};
use mpsched_core::packet::{Ecn, PortId};
use mpsched_core::vectors::{chosen_path, from_hex, Hook, Observed, Step, StepResult, VectorSet};
use mpsched_core::wire::parse_frame;
use std::collections::BTreeMap;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/baseline.bpf.o"));
/// The departure stage's program name in the object.
pub const DEPARTURE: &str = "bl_departure";
/// `BL_RING`: the enqueue records a port keeps, the largest `fifo_pkts` on the kernel.
pub const RING: u64 = 4096;
/// `BL_HASH_TAG`: a counted packet's `skb->hash`, its record's number in the low 16 bits.
pub const HASH_TAG: u32 = 0x626c_0000;
const MODE_DCQCN: u32 = 1;
const MODE_TCN: u32 = 2;
const MODE_QCN: u32 = 3;
const F_TEST: u32 = 1;

/// `enum bl_counter` in baseline.h, in order: the name, and whether it is shown at 0 (the
/// Rust twin's are, P4QCN's in its mode only; this twin's own only once they move).
pub const COUNTERS: [(&str, Shown); 7] = [
    ("counter.baseline.marked", Shown::Always),
    ("counter.baseline.tail_drops", Shown::Always),
    ("counter.baseline.skipped", Shown::Moved),
    ("counter.baseline.late", Shown::Moved),
    ("counter.qcn.samples", Shown::Qcn),
    ("counter.qcn.feedback", Shown::Qcn),
    ("counter.qcn.feedback_no_route", Shown::Qcn),
];

/// When a counter of [`COUNTERS`] is in a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// Always.
    Always,
    /// Once it is not 0.
    Moved,
    /// In P4QCN's mode.
    Qcn,
}

/// `struct bl_node` (`BL_SIZEOF_NODE`, 64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BlNode {
    mode: u32,
    flags: u32,
    fifo_pkts: u32,
    kmin: u32,
    kmax: u32,
    pmax_pct: u32,
    sojourn_ns: u64,
    test_depth: u32,
    pad: u32,
    test_sojourn_ns: u64,
    q_eq: u32,
    w: u32,
    gap_ns: u64,
}

const _: () = assert!(std::mem::size_of::<BlNode>() == 64);
// SAFETY: repr(C), integers only, no implicit padding (size pinned to baseline.h's above).
unsafe impl Pod for BlNode {}

/// One switch's DCQCN, TCN or P4QCN congestion point: the multipath switch's data plane with
/// the queue's maps.
pub struct BaselinePlane {
    dp: Dataplane,
    far_ends: Vec<FarEnd>,
    qcn: bool,
}

impl BaselinePlane {
    /// Load the object (the verifier runs), fill the multipath switch's tables and the
    /// program's own maps.
    pub fn load(t: &NodeTables) -> Result<BaselinePlane, DataplaneError> {
        let dp = Dataplane::load_object(OBJECT, "baseline.bpf.o", t)?;
        let plane = BaselinePlane {
            dp,
            far_ends: t.far_ends.clone(),
            qcn: t.program == "p4qcn",
        };
        plane.configure(t)?;
        Ok(plane)
    }

    fn update<K: Pod, V: Pod>(&self, map: &str, key: &K, value: &V) -> Result<(), DataplaneError> {
        update_map(self.dp.object(), map, key, value)
    }

    fn node(&self) -> Result<BlNode, DataplaneError> {
        let m = map_of(self.dp.object(), "bl_node")?;
        let v = m
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|source| DataplaneError::Bpf {
                what: "read map bl_node".into(),
                source,
            })?;
        Ok(v.map(|b| BlNode::from_bytes(&b)).unwrap_or_default())
    }

    /// The mode and parameters, each port's queue 0 and the MAC each port sends from.
    fn configure(&self, t: &NodeTables) -> Result<(), DataplaneError> {
        let fifo = t.params.get("fifo_pkts");
        if fifo > RING {
            return Err(DataplaneError::Config(format!(
                "{}: fifo_pkts {fifo} is above the {RING} packets a port's queue holds on the kernel",
                t.program
            )));
        }
        let mut node = BlNode {
            fifo_pkts: fifo as u32,
            flags: if t.test_clock { F_TEST } else { 0 },
            ..BlNode::default()
        };
        match t.program {
            "dcqcn" => {
                node.mode = MODE_DCQCN;
                node.kmin = t.params.get("kmin") as u32;
                node.kmax = t.params.get("kmax") as u32;
                node.pmax_pct = t.params.get("pmax_pct") as u32;
            }
            "tcn" => {
                node.mode = MODE_TCN;
                // A packet that waited `s` whole ns is marked iff s x 1000 > sojourn (ps), iff
                // s > floor(sojourn / 1000).
                node.sojourn_ns = t.params.get("sojourn") / 1000;
            }
            "p4qcn" => {
                node.mode = MODE_QCN;
                node.q_eq = t.params.get("q_eq") as u32;
                node.w = t.params.get("w") as u32;
                // The parameter is whole microseconds (validated), so nanoseconds are exact.
                node.gap_ns = t.params.get("feedback_gap") / 1000;
            }
            other => {
                return Err(DataplaneError::Config(format!(
                    "baseline.bpf.o runs dcqcn, tcn and p4qcn, not `{other}`"
                )))
            }
        }
        self.update("bl_node", &0u32, &node)?;
        for (p, b) in t.ports.iter().enumerate() {
            // Queue 0's class where the kernel's qdisc has several (vq-wrr's table of them).
            let prio = t.port_classes.get(p).and_then(|c| c.first()).copied().unwrap_or(0);
            self.update("bl_port_prio", &(p as u32), &prio)?;
            let mut mac = [0u8; 8];
            mac[..6].copy_from_slice(&b.own_mac);
            self.update("bl_mac_port", &u64::from_ne_bytes(mac), &(p as u32))?;
        }
        Ok(())
    }

    /// The departure stage.
    pub fn departure(&self) -> Result<ProgramMut<'_>, DataplaneError> {
        self.dp.program(DEPARTURE)
    }

    /// Attach the switch at TC ingress of its ports, in the calling thread's namespace.
    pub fn attach(&mut self, t: &NodeTables) -> Result<(), NetnsError> {
        Ok(self.dp.attach_ports(t)?)
    }

    /// The multipath switch's registers and counters, and this program's counters.
    pub fn snapshot(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        let mut out = self.dp.snapshot()?;
        for (i, (name, shown)) in COUNTERS.iter().enumerate() {
            let v: u64 = percpu_sum(self.dp.object(), "bl_counters", i as u32, |t: &mut u64, v| *t += v)?;
            let show = match shown {
                Shown::Always => true,
                Shown::Moved => v != 0,
                Shown::Qcn => self.qcn,
            };
            if show {
                out.insert(name.to_string(), v);
            }
        }
        Ok(out)
    }

    /// Packets waiting at `port` (the program's count) and the most since the last call,
    /// which zeroes that.
    pub fn queue_figures(&self, port: PortId) -> Result<(u64, u64), DataplaneError> {
        let key = u32::from(port).to_ne_bytes();
        let ports = map_of(self.dp.object(), "bl_ports")?;
        let st = ports
            .lookup(&key, MapFlags::LOCK)
            .map_err(|source| DataplaneError::Bpf {
                what: "read map bl_ports".into(),
                source,
            })?;
        // struct bl_port: lock, qlen, head, tail (u32 each), then the ring.
        let qlen = st
            .and_then(|b| b.get(4..8).map(|q| u32::from_ne_bytes([q[0], q[1], q[2], q[3]])))
            .unwrap_or(0);
        let qmax = map_of(self.dp.object(), "bl_qmax")?;
        let most = qmax
            .lookup(&key, MapFlags::ANY)
            .map_err(|source| DataplaneError::Bpf {
                what: "read map bl_qmax".into(),
                source,
            })?
            .map_or(0, |b| u32::from_bytes(&b));
        self.update("bl_qmax", &u32::from(port), &0u32)?;
        Ok((u64::from(qlen), u64::from(most.max(qlen))))
    }

    /// The multipath switch's data plane underneath.
    pub fn dataplane(&self) -> &Dataplane {
        &self.dp
    }

    /// Under the vectors' test flag: the figures the next departure reads.
    fn set_test_departure(&self, depth: u32, sojourn_ns: u64) -> Result<(), DataplaneError> {
        let mut n = self.node()?;
        n.test_depth = depth;
        n.test_sojourn_ns = sojourn_ns;
        self.update("bl_node", &0u32, &n)
    }
}

/// [`crate::programs::KernelProgram::start`] for `dcqcn`, `tcn` and `p4qcn`.
pub fn start(tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
    let mut plane = BaselinePlane::load(tables)?;
    plane.attach(tables)?;
    Ok(Box::new(plane))
}

/// The snapshot's registers read-only (the parameters are not registers), the routes table as
/// on `mpsched`'s plane.
impl ProgramControl for BaselinePlane {
    fn control_listing(&self) -> ControlListing {
        let mut listing = self.dp.control_listing();
        let snap = self.snapshot().unwrap_or_default();
        let ours: BTreeMap<String, u64> = snap
            .into_iter()
            .filter(|(k, _)| k.starts_with("counter.baseline."))
            .collect();
        listing
            .registers
            .extend(mpsched_core::control::snapshot_listing(&ours, |_| false));
        listing
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        snapshot_register_of(self, name, index)
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        self.dp.write_register(name, index, value)
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

impl SwitchPlane for BaselinePlane {
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
        BaselinePlane::snapshot(self).ok()
    }

    fn queue_pkts(&self, port: PortId) -> Option<(u64, u64)> {
        self.queue_figures(port).ok()
    }
}

/// `TC_ACT_UNSPEC` as `BPF_PROG_TEST_RUN` returns it.
const TC_ACT_UNSPEC: u32 = u32::MAX;

/// [`crate::programs::KernelProgram::vectors`] for `dcqcn` and `tcn`: an ingress step through
/// the object's `mps_ingress` as the multipath switch's vectors run; an egress step through
/// the departure stage at the step's time, with the depth and sojourn the step gives in the
/// node's test fields (the stage's own records are of live packets), the set's fixed draws,
/// and the frame as the step's port sends it (its MACs the port's) tagged in `skb->priority`
/// (`BPF_PROG_TEST_RUN` cannot set `skb->hash`); what it observes is the ECN of the frame it
/// leaves.
pub fn run_vectors(set: &VectorSet) -> Result<crate::programs::Replay, String> {
    let node = TestNode::create(set.n_ports)?;
    let tables = node.tables(set)?;
    let peers = node.peer_ifindexes.clone();
    node.enter(|| -> Result<crate::programs::Replay, String> {
        let taps = peers.iter().map(|&i| Tap::open(i)).collect::<Result<Vec<_>, _>>()?;
        let plane = BaselinePlane::load(&tables).map_err(|e| e.to_string())?;
        replay(set, &plane, &tables, &peers, &taps)
    })?
}

fn replay(
    set: &VectorSet,
    plane: &BaselinePlane,
    tables: &NodeTables,
    peers: &[u32],
    taps: &[Tap],
) -> Result<crate::programs::Replay, String> {
    let initial = plane.snapshot().map_err(|e| e.to_string())?;
    let mut prev = initial.clone();
    let mut results = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let at = format!("{} step {i} ({})", set.name, st.note);
        let frame = from_hex(&st.frame).map_err(|e| format!("{at}: {e}"))?;
        let port = tables
            .ports
            .get(usize::from(st.port))
            .ok_or_else(|| format!("{at}: port {} does not exist", st.port))?;
        plane
            .dataplane()
            .set_test_clock(st.time_ns)
            .map_err(|e| e.to_string())?;
        let (observed, regs) = match st.hook {
            Hook::Ingress => {
                // The depth the packet finds as it joins its port's queue.
                plane
                    .set_test_departure(st.enq_qdepth_pkts, st.sojourn_ns)
                    .map_err(|e| e.to_string())?;
                taps.iter().for_each(Tap::drain);
                let snap = || plane.snapshot().map_err(|e| e.to_string());
                by_test_run(
                    set,
                    plane.dataplane(),
                    &snap,
                    taps,
                    Hook::Ingress,
                    port.ifindex,
                    &frame,
                    &prev,
                )
            }
            Hook::Egress => departure(plane, port, peers[usize::from(st.port)], st, set, &frame, &prev),
            Hook::Timer => Err("dcqcn, tcn and p4qcn have no timer".into()),
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

/// A packet leaving `port` with the step's queue figures, through the departure stage.
fn departure(
    plane: &BaselinePlane,
    port: &PortBinding,
    peer_ifindex: u32,
    st: &Step,
    set: &VectorSet,
    frame: &[u8],
    prev: &BTreeMap<String, u64>,
) -> Result<(Observed, BTreeMap<String, u64>), String> {
    plane
        .set_test_departure(st.enq_qdepth_pkts, st.sojourn_ns)
        .map_err(|e| e.to_string())?;
    let sent = super::as_sent_by(port, frame)?;
    let prog = plane.departure().map_err(|e| e.to_string())?;
    let (retval, out, _) = test_run_prog_with_priority(&prog, peer_ifindex, HASH_TAG, &sent, 1)?;
    if retval != TC_ACT_UNSPEC {
        return Err(format!("the departure stage returned {retval}, not TC_ACT_UNSPEC"));
    }
    let regs = plane.snapshot().map_err(|e| e.to_string())?;
    let mut obs = observed(chosen_path(prev, &regs));
    obs.action = "transmit".into();
    // The ECN a departure leaves is observed for the programs that mark there (not P4QCN).
    let (program, _) = mpsched_programs::vectors::program_of(set)?;
    if !program.marks_at_egress() {
        return Ok((obs, regs));
    }
    obs.ecn = match parse_frame(&out, set.config.feedback_port) {
        Ok(m) => Some(m.ecn),
        Err(_) if out.len() >= 34 && out[12..14] == [0x08, 0x00] => Some(Ecn::from_bits(out[15])),
        Err(_) => None,
    };
    Ok((obs, regs))
}

/// `dcqcn`'s rows of `mpsched bench --dataplane` ([`crate::bench::program_costs`]): an ECT(0)
/// UDP packet (64-byte frame) counted and recorded at ingress (routed), and a departure at the
/// far end deciding on a queue below `kmin`, each the mean of `n` single `BPF_PROG_TEST_RUN`s
/// (a fresh frame every run, as `vq-wrr`'s rows), `n` the repeats asked for, at most 4 000 (the
/// ring holds 4 096 records). The departure runs in the vectors' mode (its figures from the
/// node, not the ring: a test run cannot set the `skb->hash` a live packet carries), so it
/// leaves out the ring's read under the lock.
pub fn costs(repeat: u32, stop: &std::sync::atomic::AtomicBool) -> Result<Vec<crate::bench::ProgramCost>, NetnsError> {
    use mpsched_core::packet::{Ipv4, PacketMeta};
    use mpsched_core::table::Route;
    use mpsched_core::vectors::{OWN_MAC_NODE, PEER_MAC_NODE};
    use mpsched_core::wire::{emit_udp_frame, mac_for};
    use mpsched_programs::SwitchProgram;
    const OWN: Ipv4 = 0x0aff_0001;
    const SRC: Ipv4 = 0x0a00_0001;
    const DST: Ipv4 = 0x0a00_0003;
    let n = repeat.clamp(1, 4_000);
    let node = TestNode::create(2).map_err(NetnsError::Plane)?;
    let program = &mpsched_programs::pmqecn::baselines::DCQCN;
    let mut params = mpsched_programs::Params::defaults(program.params());
    params
        .set(program.params(), "fifo_pkts", RING)
        .map_err(NetnsError::Plane)?;
    let route = |prefix, port| Route { prefix, len: 32, port };
    // The sources behind port 0: P4QCN's feedback goes back there.
    let cfg = mpsched_core::switch::SwitchConfig::forwarding(OWN, vec![route(DST, 1), route(SRC, 0)]);
    // The vectors' mode: BPF_PROG_TEST_RUN cannot set the tag's skb->hash, so the departure
    // reads its figures from the node (a queue of 5, below kmin) instead of popping the ring.
    let tables = NodeTables {
        program: program.name(),
        params,
        test_clock: true,
        ..NodeTables::multipath(cfg, node.ports.clone())
    };
    let mut m = PacketMeta::udp(SRC, DST, 5001, 5201, 0);
    m.ecn = Ecn::Ect0;
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
    // P4QCN sampling every packet (no gap) that finds 30 packets (the vectors' mode): each is
    // congested, so each is sent on as a clone and reflected.
    let qcn = &mpsched_programs::pmqecn::baselines::P4QCN;
    let mut qcn_params = mpsched_programs::Params::defaults(qcn.params());
    qcn_params
        .set(qcn.params(), "feedback_gap", 0)
        .map_err(NetnsError::Plane)?;
    let qcn_tables = NodeTables {
        program: qcn.name(),
        params: qcn_params,
        ..tables.clone()
    };
    let rows = node
        .enter(|| -> Result<Vec<(String, f64)>, String> {
            let plane = BaselinePlane::load(&qcn_tables).map_err(|e| e.to_string())?;
            plane.set_test_departure(30, 0).map_err(|e| e.to_string())?;
            let ingress = plane.dataplane().program("mps_ingress").map_err(|e| e.to_string())?;
            let mut reflected = std::time::Duration::ZERO;
            for _ in 0..n {
                reflected += test_run_prog_with_priority(&ingress, in_port.ifindex, 0, &data, 1)?.2;
            }
            let snap = plane.snapshot().map_err(|e| e.to_string())?;
            let sent = snap.get("counter.qcn.feedback").copied().unwrap_or(0);
            if sent + 1 < u64::from(n) {
                return Err(format!("p4qcn's bench reflected {sent} of {n} packets"));
            }
            Ok(vec![(
                "p4qcn sample and feedback (clone, reflect)".into(),
                reflected.as_nanos() as f64 / f64::from(n),
            )])
        })
        .map_err(NetnsError::Plane)?
        .map_err(NetnsError::Plane)?;
    let mut rows = rows;
    let dcqcn_rows = node
        .enter(|| -> Result<Vec<(String, f64)>, String> {
            let plane = BaselinePlane::load(&tables).map_err(|e| e.to_string())?;
            plane.set_test_departure(5, 1000).map_err(|e| e.to_string())?;
            let ingress = plane.dataplane().program("mps_ingress").map_err(|e| e.to_string())?;
            let departure = plane.departure().map_err(|e| e.to_string())?;
            let (mut placed, mut gone) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
            for i in 0..n {
                placed += test_run_prog_with_priority(&ingress, in_port.ifindex, 0, &data, 1)?.2;
                gone += test_run_prog_with_priority(&departure, peer, HASH_TAG | (i & 0xffff), &left, 1)?.2;
            }
            let snap = plane.snapshot().map_err(|e| e.to_string())?;
            if snap.keys().any(|k| k.ends_with(".skipped") || k.ends_with(".late")) {
                return Err(format!("dcqcn's bench lost its records: {snap:?}"));
            }
            Ok(vec![
                (
                    "dcqcn count and record (routed)".into(),
                    placed.as_nanos() as f64 / f64::from(n),
                ),
                (
                    "dcqcn departure (decision, vectors' mode)".into(),
                    gone.as_nanos() as f64 / f64::from(n),
                ),
            ])
        })
        .map_err(NetnsError::Plane)?
        .map_err(NetnsError::Plane)?;
    rows.splice(0..0, dcqcn_rows);
    crate::bench::cost_rows(rows, n, stop)
}
