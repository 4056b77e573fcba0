//! `pmqecn` on the kernel: load `pmqecn.bpf.o` (crates/programs/src/pmqecn/pmqecn.bpf.c:
//! vq-wrr's object with a queue stage that counts each class's arrivals and reflects rate
//! feedback to the sources), configure it as [`VqWrrPlane`] does plus the threshold, the gap and
//! the class registers, and offer the registers the control plane (`PmqecnControl`) reads and
//! writes: `vq_arrival_bytes` / `vq_arrival_pkts` (`8p + v`), `vq_len`, and per class
//! `vq_weight`, `vq_threshold`, `vq_rate_kbps`, `vq_target_kbps`.
//!
//! The feedback leaves the switch as a UDP datagram the paced sender reads
//! ([`mpsched_core::rate_wire`]); the departure stage is vq-wrr's.

use super::vqwrr::{replay, OnVqWrr, VqWrrPlane};
use crate::backend::NetnsError;
use crate::dataplane::{bpf, map_of, percpu_sum, DataplaneError, NodeTables};
use crate::layout::Pod;
use crate::switchplane::{snapshot_register_of, SwitchPlane};
use crate::tap::Tap;
use crate::vectors::TestNode;
use libbpf_rs::{MapCore, MapFlags};
use mpsched_core::control::{self, ControlError, ControlListing, ProgramControl};
use mpsched_core::packet::PortId;
use mpsched_core::vectors::VectorSet;
use mpsched_programs::pmqecn::vqwrr::VIRTUAL_QUEUES;
use std::collections::BTreeMap;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pmqecn.bpf.o"));
/// Ports the maps hold (`MPS_MAX_PORTS`).
const MAX_PORTS: usize = crate::layout::MAX_PORTS;

/// `enum pq_counter` in pmqecn.h, in order, named as the Rust twin's counters.
pub const COUNTERS: [&str; 3] = [
    "counter.pmqecn.feedback",
    "counter.pmqecn.feedback_held",
    "counter.pmqecn.feedback_no_route",
];

/// The per-class registers in `struct pq_class`'s order, all writable by the control plane.
const CLASS_REGISTERS: [&str; 3] = ["vq_threshold", "vq_rate_kbps", "vq_target_kbps"];
/// The per-port, per-class registers, read-only.
const ARRIVAL_REGISTERS: [&str; 2] = ["vq_arrival_bytes", "vq_arrival_pkts"];

/// `struct pq_node` (`PQ_SIZEOF_NODE`, 8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PqNode {
    gap_ns: u64,
}

/// `struct pq_class` (`PQ_SIZEOF_CLASS`, 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PqClass {
    /// `threshold`, `rate_kbps`, `target_kbps`, in [`CLASS_REGISTERS`]' order.
    values: [u32; 3],
    pad: u32,
}

/// `struct pq_port` (`PQ_SIZEOF_PORT`, 208 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PqPort {
    lock: u32,
    touched: u32,
    fb_sent: u32,
    pad: u32,
    arrival_bytes: [u64; VIRTUAL_QUEUES],
    arrival_pkts: [u64; VIRTUAL_QUEUES],
    last_fb_ns: [u64; VIRTUAL_QUEUES],
}

const _: () = assert!(std::mem::size_of::<PqNode>() == 8);
const _: () = assert!(std::mem::size_of::<PqClass>() == 16);
const _: () = assert!(std::mem::size_of::<PqPort>() == 208);
// SAFETY: repr(C), integers only, no implicit padding (sizes pinned to pmqecn.h's above).
unsafe impl Pod for PqNode {}
// SAFETY: as above.
unsafe impl Pod for PqClass {}
// SAFETY: as above.
unsafe impl Pod for PqPort {}

/// One switch's PMQECN congestion point.
pub struct PmqecnPlane {
    vq: VqWrrPlane,
    n_ports: usize,
}

impl PmqecnPlane {
    /// Load the object (this runs the verifier) and fill its maps: vq-wrr's, then the gap and
    /// every class's starting threshold.
    pub fn load(t: &NodeTables) -> Result<PmqecnPlane, DataplaneError> {
        let vq = VqWrrPlane::load_object(OBJECT, "pmqecn.bpf.o", t)?;
        let threshold = u32::try_from(t.params.get("threshold"))
            .map_err(|_| DataplaneError::Config("pmqecn: threshold above 2^32 packets".into()))?;
        // The parameter is whole microseconds (validated), so nanoseconds are exact.
        vq.update(
            "pq_node",
            &0u32,
            &PqNode {
                gap_ns: t.params.get("feedback_gap") / 1000,
            },
        )?;
        for v in 0..VIRTUAL_QUEUES as u32 {
            let class = PqClass {
                values: [threshold, 0, 0],
                pad: 0,
            };
            vq.update("pq_class", &v, &class)?;
        }
        Ok(PmqecnPlane {
            vq,
            n_ports: t.ports.len().min(MAX_PORTS),
        })
    }

    fn class(&self, v: usize) -> Result<PqClass, DataplaneError> {
        let m = map_of(self.vq.dataplane().object(), "pq_class")?;
        let b = bpf(
            || "read map pq_class".into(),
            m.lookup(&(v as u32).to_ne_bytes(), MapFlags::ANY),
        )?;
        Ok(b.map(|b| PqClass::from_bytes(&b)).unwrap_or_default())
    }

    fn port(&self, p: usize) -> Result<PqPort, DataplaneError> {
        let m = map_of(self.vq.dataplane().object(), "pq_port")?;
        let b = bpf(
            || "read map pq_port".into(),
            m.lookup(&(p as u32).to_ne_bytes(), MapFlags::LOCK),
        )?;
        Ok(b.map(|b| PqPort::from_bytes(&b)).unwrap_or_default())
    }

    /// vq-wrr's registers and counters, the `pmqecn.*` counters, every class's registers, and
    /// the arrivals at the ports below the highest one a packet was offered to (as the Rust
    /// twin holds them for the ports it has seen).
    pub fn snapshot(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        let mut out = self.vq.snapshot()?;
        let obj = self.vq.dataplane().object();
        for (i, name) in COUNTERS.iter().enumerate() {
            let v: u64 = percpu_sum(obj, "pq_counters", i as u32, |t: &mut u64, v| *t += v)?;
            out.insert(name.to_string(), v);
        }
        for v in 0..VIRTUAL_QUEUES {
            let c = self.class(v)?;
            for (name, x) in CLASS_REGISTERS.iter().zip(c.values) {
                out.insert(format!("{name}{v}"), u64::from(x));
            }
        }
        let ports = (0..self.n_ports).map(|p| self.port(p)).collect::<Result<Vec<_>, _>>()?;
        let seen = ports.iter().rposition(|s| s.touched != 0).map_or(0, |p| p + 1);
        for (p, st) in ports.iter().take(seen).enumerate() {
            for v in 0..VIRTUAL_QUEUES {
                let i = p * VIRTUAL_QUEUES + v;
                out.insert(format!("vq_arrival_bytes{i}"), st.arrival_bytes[v]);
                out.insert(format!("vq_arrival_pkts{i}"), st.arrival_pkts[v]);
            }
        }
        Ok(out)
    }

    /// Write class `v`'s `name` (one of [`CLASS_REGISTERS`]).
    fn write_class(&self, name: &str, v: usize, value: u64) -> Result<(), ControlError> {
        let which = CLASS_REGISTERS
            .iter()
            .position(|n| *n == name)
            .expect("a class register");
        if v >= VIRTUAL_QUEUES {
            return Err(ControlError::NoIndex {
                register: name.into(),
                size: VIRTUAL_QUEUES,
                index: v,
            });
        }
        let x = u32::try_from(value).map_err(|_| ControlError::BadEntry {
            table: name.into(),
            reason: format!("at most {}, got {value}", u32::MAX),
        })?;
        let ebpf = |e: DataplaneError| ControlError::Unsupported(format!("eBPF: {e}"));
        // The control plane is this class's only writer; the data plane only reads it.
        let mut c = self.class(v).map_err(ebpf)?;
        c.values[which] = x;
        self.vq.update("pq_class", &(v as u32), &c).map_err(ebpf)
    }

    /// A per-port register read straight from its map (the control loop reads every class
    /// of every port each period; a whole snapshot each time would cost a hundred reads).
    fn read_port_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let size = self.n_ports * VIRTUAL_QUEUES;
        if index >= size {
            return Err(ControlError::NoIndex {
                register: name.into(),
                size,
                index,
            });
        }
        let (p, v) = (index / VIRTUAL_QUEUES, index % VIRTUAL_QUEUES);
        let ebpf = |e: DataplaneError| ControlError::Unsupported(format!("eBPF: {e}"));
        Ok(match name {
            "vq_len" => u64::from(self.vq.port_state(p).map_err(ebpf)?.vq_len[v]),
            "vq_arrival_bytes" => self.port(p).map_err(ebpf)?.arrival_bytes[v],
            _ => self.port(p).map_err(ebpf)?.arrival_pkts[v],
        })
    }
}

/// [`crate::programs::KernelProgram::start`] for `pmqecn`.
pub fn start(tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
    let mut plane = PmqecnPlane::load(tables)?;
    plane.vq.attach(tables)?;
    Ok(Box::new(plane))
}

/// The snapshot's registers, the class registers and `vq_weight` writable; the routes table
/// as on `mpsched`'s plane.
impl ProgramControl for PmqecnPlane {
    fn control_listing(&self) -> ControlListing {
        let mut listing = self.vq.dataplane().control_listing();
        let ours: BTreeMap<String, u64> = self
            .snapshot()
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k.starts_with("vq_") || k.starts_with("counter.vq.") || k.starts_with("counter.pmqecn."))
            .collect();
        listing.registers.extend(control::snapshot_listing(&ours, |base| {
            base == "vq_weight" || CLASS_REGISTERS.contains(&base)
        }));
        listing
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        if name == "vq_len" || ARRIVAL_REGISTERS.contains(&name) {
            return self.read_port_register(name, index);
        }
        snapshot_register_of(self, name, index)
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        if CLASS_REGISTERS.contains(&name) {
            return self.write_class(name, index, value);
        }
        self.vq.write_register(name, index, value)
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        self.vq.table_write(table, key, action, params)
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        self.vq.table_delete(table, key)
    }
}

impl SwitchPlane for PmqecnPlane {
    fn attach_departures(&mut self) -> Result<(), NetnsError> {
        self.vq.attach_departures()
    }

    fn weights(&self) -> Vec<(u8, Vec<u16>)> {
        self.vq.weights()
    }

    fn marker_backlog_bytes(&self, port: PortId) -> Option<u64> {
        self.vq.marker_backlog_bytes(port)
    }

    fn snapshot(&self) -> Option<BTreeMap<String, u64>> {
        PmqecnPlane::snapshot(self).ok()
    }

    fn queue_pkts(&self, port: PortId) -> Option<(u64, u64)> {
        self.vq.queue_figures(port).ok()
    }
}

/// [`crate::programs::KernelProgram::vectors`] for `pmqecn`: vq-wrr's replay
/// ([`super::vqwrr::replay`]; the feedback gap reads the step's time on the test clock).
pub fn run_vectors(set: &VectorSet) -> Result<crate::programs::Replay, String> {
    let node = TestNode::create(set.n_ports)?;
    let tables = node.tables(set)?;
    let peers = node.peer_ifindexes.clone();
    node.enter(|| -> Result<crate::programs::Replay, String> {
        let taps = peers.iter().map(|&i| Tap::open(i)).collect::<Result<Vec<_>, _>>()?;
        let mut plane = PmqecnPlane::load(&tables).map_err(|e| e.to_string())?;
        replay(set, &mut plane, &tables, &peers, &taps)
    })?
}

impl OnVqWrr for PmqecnPlane {
    fn vq(&self) -> &VqWrrPlane {
        &self.vq
    }

    fn registers(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        self.snapshot()
    }
}

/// `pmqecn`'s rows of `mpsched bench --dataplane` ([`crate::bench::program_costs`]): a class-1
/// UDP packet (64-byte frame) placed at ingress with its arrival counted, below its threshold;
/// and the same above it with no gap, so that every packet leaves as a clone and is reflected
/// as a feedback. Each the mean of `n` single `BPF_PROG_TEST_RUN`s (a fresh frame every run,
/// as `vq-wrr`'s rows), `n` the repeats asked for, at most 65 536 (the virtual queue holds
/// them all: capacity 2^20, weight 2^16).
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
    let program = &mpsched_programs::pmqecn::cp::PMQECN;
    let route = |prefix, port| Route { prefix, len: 32, port };
    let cfg = mpsched_core::switch::SwitchConfig::forwarding(OWN, vec![route(DST, 1), route(SRC, 0)]);
    let tables = |threshold: u64| -> Result<NodeTables, String> {
        let mut params = mpsched_programs::Params::defaults(program.params());
        for (k, v) in [
            ("vq_capacity", 1 << 20),
            ("weight", 1 << 16),
            ("threshold", threshold),
            ("feedback_gap", 0),
            ("control_period", 0),
        ] {
            params.set(program.params(), k, v)?;
        }
        Ok(NodeTables {
            program: program.name(),
            params,
            test_clock: true,
            ..NodeTables::multipath(cfg.clone(), node.ports.clone())
        })
    };
    let (quiet, loud) = (
        tables(1 << 20).map_err(NetnsError::Plane)?,
        tables(1).map_err(NetnsError::Plane)?,
    );
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
    let in_port = node.ports[0].ifindex;
    let mean_ns = |t: &NodeTables| -> Result<(f64, u64), String> {
        let plane = PmqecnPlane::load(t).map_err(|e| e.to_string())?;
        let ingress = plane.vq.dataplane().program("mps_ingress").map_err(|e| e.to_string())?;
        let mut total = std::time::Duration::ZERO;
        for _ in 0..n {
            total += crate::vectors::test_run_prog_with_priority(&ingress, in_port, 0, &data, 1)?.2;
        }
        let snap = plane.snapshot().map_err(|e| e.to_string())?;
        let sent = snap.get("counter.pmqecn.feedback").copied().unwrap_or(0);
        Ok((total.as_nanos() as f64 / f64::from(n), sent))
    };
    let rows = node
        .enter(|| -> Result<Vec<(String, f64)>, String> {
            let (placed, none) = mean_ns(&quiet)?;
            let (reflected, sent) = mean_ns(&loud)?;
            // The first packet is at the threshold (1), not above it.
            if none != 0 || sent + 1 < u64::from(n) {
                return Err(format!("pmqecn's bench sent {none} and {sent} feedbacks of 0 and {n}"));
            }
            Ok(vec![
                ("pmqecn place and count (routed, level)".into(), placed),
                ("pmqecn place and feedback (clone, reflect)".into(), reflected),
            ])
        })
        .map_err(NetnsError::Plane)?
        .map_err(NetnsError::Plane)?;
    crate::bench::cost_rows(rows, n, stop)
}
