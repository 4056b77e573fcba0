//! The ATSSS UPF on the kernel: load `atsss.bpf.o` (crates/programs/src/atsss/atsss.bpf.c),
//! size its UE maps to the node's UE table, fill them and the forwarding maps from the node's
//! [`SwitchConfig`], attach it at XDP (native mode) on every port, and read its counters and
//! registers back under the names the Rust twin gives them (`counter.atsss.encapsulated`,
//! `atsss.ue<i>.weight`, ...).
//!
//! The ports, routes and per-port statistics have `bpf/mpsched.h`'s layouts
//! ([`crate::layout`]); the node record, the UE slots and the counters are `atsss.h`'s
//! ([`layout`]).
//!
//! XDP on a veth delivers a frame it redirects into the peer's NAPI; a peer without NAPI (no
//! XDP program, GRO off) drops it. Whoever wires a UPF's ports (a scenario's UE namespaces)
//! turns GRO on at the far ends ([`enable_peer_napi`]), as the benchmark does.
//!
//! [`SwitchConfig`]: mpsched_core::switch::SwitchConfig

pub mod bench;
pub mod layout;

use crate::backend::NetnsError;
use crate::dataplane::{bpf, fill_forwarding, map_of, percpu_sum, update_map, DataplaneError, NodeTables};
use crate::layout::{self as mps_layout, Pod};
use crate::switchplane::SwitchPlane;
use crate::vectors::{check_ipv4_checksum, delta_of, observed, port_of_mac, TestNode};
use layout::{Node, Slot};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, ProgramInput, ProgramMut, Xdp, XdpFlags};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl};
use mpsched_core::packet::PortId;
use mpsched_core::table::ECMP_GROUP;
use mpsched_core::vectors::{chosen_path, from_hex, to_hex, Delivery, Hook, StepResult, VectorSet};
use mpsched_core::wire::parse_frame;
use mpsched_programs::atsss::upf::{self, UeSlot, UpfParams};
use std::collections::BTreeMap;
use std::os::fd::AsFd;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/atsss.bpf.o"));

/// The XDP program's name in the object.
pub const PROGRAM: &str = "atsss_upf";

/// UEs up to this many have their registers in [`AtsssPlane::snapshot`] (the vectors' few);
/// a larger table is read through the control channel, entry by entry.
pub const SNAPSHOT_UES: usize = 64;

/// One node's UPF, loaded and filled.
pub struct AtsssPlane {
    obj: Object,
    n_ports: usize,
    n_ues: usize,
    attached: Vec<u32>,
}

impl AtsssPlane {
    /// Load the object with its UE maps sized to the node's table (this runs the verifier) and
    /// fill every map.
    pub fn load(t: &NodeTables) -> Result<AtsssPlane, DataplaneError> {
        let cfg = &t.switch;
        let table = &cfg.upf;
        table
            .check(cfg.own_ip, t.ports.len())
            .map_err(|e| DataplaneError::Config(format!("atsss: {e}")))?;
        if !t.markers.is_empty() || !cfg.splits.is_empty() || !cfg.confluences.is_empty() || !cfg.classify.is_empty() {
            return Err(DataplaneError::Config(
                "atsss: the UPF has no marker, split, confluence or classifier on the kernel".into(),
            ));
        }
        if let Some(r) = cfg.routes.iter().find(|r| r.port & ECMP_GROUP != 0) {
            return Err(DataplaneError::Config(format!(
                "atsss: a route to equal-cost group {}; the UPF routes by one shortest path",
                r.port & !ECMP_GROUP
            )));
        }
        if t.test_draws.len() > layout::TEST_DRAWS as usize {
            return Err(DataplaneError::Config("atsss: too many test draws".into()));
        }
        let n_ues = table.ues.len();
        let mut ue_entries = Vec::with_capacity(n_ues);
        let mut path_entries = Vec::with_capacity(n_ues * 2);
        for (i, ue) in table.ues.iter().enumerate() {
            ue_entries.push((ue.ip, i as u32));
            for (j, p) in ue.paths.iter().enumerate() {
                path_entries.push((p.addr, (i as u32) << 2 | j as u32));
            }
        }
        let ue_index = layout::build_index(&ue_entries).map_err(DataplaneError::Config)?;
        let path_index = layout::build_index(&path_entries).map_err(DataplaneError::Config)?;
        let mut open = bpf(
            || "open atsss.bpf.o".into(),
            ObjectBuilder::default().open_memory(OBJECT),
        )?;
        for mut m in open.maps_mut() {
            let entries = match m.name().to_str() {
                Some("ues") | Some("bench_ues") => n_ues.max(1),
                Some("ue_index") => ue_index.1.len(),
                Some("path_index") => path_index.1.len(),
                _ => continue,
            };
            bpf(|| "size the UE maps".into(), m.set_max_entries(entries as u32))?;
        }
        let obj = bpf(|| "load atsss.bpf.o (verifier)".into(), open.load())?;
        let plane = AtsssPlane {
            obj,
            n_ports: t.ports.len(),
            n_ues,
            attached: Vec::new(),
        };
        plane.configure(t, &ue_index, &path_index)?;
        Ok(plane)
    }

    fn update<K: Pod, V: Pod>(&self, map: &str, key: &K, value: &V) -> Result<(), DataplaneError> {
        update_map(&self.obj, map, key, value)
    }

    /// Fill the node record, the UE slots, the address indexes, the test draws and the
    /// forwarding maps from `t`.
    fn configure(
        &self,
        t: &NodeTables,
        ue_index: &(u16, Vec<layout::IndexEntry>),
        path_index: &(u16, Vec<layout::IndexEntry>),
    ) -> Result<(), DataplaneError> {
        let cfg = &t.switch;
        let p = UpfParams::from_params(&t.params);
        let rc = p.config();
        let mut flags = 0;
        if t.test_clock {
            flags |= layout::F_TEST_CLOCK;
        }
        if !t.test_draws.is_empty() {
            flags |= layout::F_TEST_DRAWS;
        }
        let node = Node {
            own_ip: cfg.own_ip,
            flags,
            epoch: cfg.upf.epoch,
            mtu: p.mtu,
            outage_floor_ticks: rc.outage_floor_ticks,
            initial_cwnd: rc.initial_cwnd,
            n_ues: self.n_ues as u32,
            test_draws_n: t.test_draws.len() as u32,
            ue_index_bits: ue_index.0,
            path_index_bits: path_index.0,
            ..Node::default()
        };
        self.update("node", &0u32, &node)?;
        for (i, s) in upf::slots_of(&cfg.upf, &rc).iter().enumerate() {
            self.update("ues", &(i as u32), &Slot::from(s))?;
            self.update("bench_ues", &(i as u32), &s.ip)?;
        }
        for (map, (_, table)) in [("ue_index", ue_index), ("path_index", path_index)] {
            for (k, e) in table.iter().enumerate().filter(|(_, e)| e.key != 0) {
                self.update(map, &(k as u32), e)?;
            }
        }
        for (i, d) in t.test_draws.iter().enumerate() {
            self.update("test_draws", &(i as u32), d)?;
        }
        self.update("test_draws", &layout::TEST_DRAWS, &0u32)?;
        fill_forwarding(&self.obj, t)
    }

    /// The XDP program.
    pub fn program(&self) -> Result<ProgramMut<'_>, DataplaneError> {
        self.obj
            .progs_mut()
            .find(|p| p.name() == PROGRAM)
            .ok_or_else(|| DataplaneError::Config(format!("program {PROGRAM} missing from atsss.bpf.o")))
    }

    /// The node record.
    pub fn node(&self) -> Result<Node, DataplaneError> {
        let m = map_of(&self.obj, "node")?;
        let v = bpf(|| "read map node".into(), m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY))?;
        Ok(v.map(|b| Node::from_bytes(&b)).unwrap_or_default())
    }

    /// Rewrite the node record (the test clock, the benchmark's flag).
    pub fn set_node(&self, n: &Node) -> Result<(), DataplaneError> {
        self.update("node", &0u32, n)
    }

    /// UE `u`'s slot, read under its lock.
    pub fn slot(&self, u: usize) -> Result<Slot, DataplaneError> {
        let m = map_of(&self.obj, "ues")?;
        let v = bpf(
            || format!("read UE {u}"),
            m.lookup(&(u as u32).to_ne_bytes(), MapFlags::LOCK),
        )?;
        v.map(|b| Slot::from_bytes(&b))
            .ok_or_else(|| DataplaneError::Config(format!("no UE {u}")))
    }

    /// Write UE `u`'s slot under its lock (the lock word itself is left alone).
    pub fn set_slot(&self, u: usize, s: &Slot) -> Result<(), DataplaneError> {
        let m = map_of(&self.obj, "ues")?;
        bpf(
            || format!("write UE {u}"),
            m.update(&(u as u32).to_ne_bytes(), s.as_bytes(), MapFlags::LOCK),
        )
    }

    /// The counters (`redirect_failed` only once it moved), per-port packet counts and, for a
    /// table of at most [`SNAPSHOT_UES`] UEs, every UE's registers, named as the Rust runner
    /// names them.
    pub fn snapshot(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        let mut out = BTreeMap::new();
        for (i, name) in layout::counter_names().into_iter().enumerate() {
            let v: u64 = percpu_sum(&self.obj, "counters", i as u32, |t: &mut u64, v| *t += v)?;
            if name != "counter.redirect_failed" || v != 0 {
                out.insert(name, v);
            }
        }
        for p in 0..self.n_ports {
            let st = percpu_sum(&self.obj, "port_stats", p as u32, |t: &mut mps_layout::PortStats, v| {
                t.rx_pkts += v.rx_pkts;
                t.tx_pkts += v.tx_pkts;
            })?;
            out.insert(format!("port{p}.rx_pkts"), st.rx_pkts);
            out.insert(format!("port{p}.tx_pkts"), st.tx_pkts);
        }
        if self.n_ues <= SNAPSHOT_UES {
            let slots = (0..self.n_ues)
                .map(|u| self.slot(u).map(|s| UeSlot::from(&s)))
                .collect::<Result<Vec<_>, _>>()?;
            out.extend(upf::ue_registers(&slots));
        }
        Ok(out)
    }

    /// Attach the program at XDP (native mode) on `ifindex`, in the calling thread's namespace;
    /// detached by [`AtsssPlane::detach_all`] or with the interface.
    pub fn attach(&mut self, ifindex: u32) -> Result<(), DataplaneError> {
        let prog = self.program()?;
        let xdp = Xdp::new(prog.as_fd());
        bpf(
            || format!("attach XDP to ifindex {ifindex}"),
            xdp.attach(ifindex as i32, XdpFlags::DRV_MODE),
        )?;
        self.attached.push(ifindex);
        Ok(())
    }

    /// Detach the program from every interface it was attached to (in the current namespace).
    pub fn detach_all(&mut self) {
        let attached = std::mem::take(&mut self.attached);
        if let Ok(prog) = self.program() {
            let xdp = Xdp::new(prog.as_fd());
            for i in attached {
                let _ = xdp.detach(i as i32, XdpFlags::DRV_MODE);
            }
        }
    }
}

/// Turn GRO on at `ifname` in the calling thread's namespace: a veth then has NAPI, and takes
/// the frames an XDP program redirects into its peer (without it the kernel drops them).
pub fn enable_peer_napi(ns: &crate::ns::Netns, ifname: &str) -> Result<(), NetnsError> {
    ns.exec("ethtool", &["-K", ifname, "gro", "on"])
        .map(|_| ())
        .map_err(NetnsError::Ns)
}

/// Make `ifname`, a veth whose peer is a UPF's port, fit for the UPF: NAPI for the frames it
/// redirects there ([`enable_peer_napi`]), and checksums computed before the frames leave.
/// A veth's sender leaves TCP and UDP checksums to "hardware" (CHECKSUM_PARTIAL); the mark
/// travels with the socket buffer through the kernel's forwarding, but XDP sees bare bytes, so
/// a packet the UPF encapsulates would carry its unfinished checksum to the UE, whose kernel
/// drops it (TcpInCsumErrors).
pub fn prepare_upf_peer(ns: &crate::ns::Netns, ifname: &str) -> Result<(), NetnsError> {
    enable_peer_napi(ns, ifname)?;
    ns.exec("ethtool", &["-K", ifname, "tx", "off"])
        .map(|_| ())
        .map_err(NetnsError::Ns)
}

/// [`crate::programs::KernelProgram::start`] for `atsss`.
pub fn start(tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
    let mut plane = AtsssPlane::load(tables)?;
    for b in &tables.ports {
        plane.attach(b.ifindex)?;
    }
    Ok(Box::new(plane))
}

/// The registers the Rust twin lists ([`upf::listing`]), read from the UE slots; only the
/// weight is writable.
impl ProgramControl for AtsssPlane {
    fn control_listing(&self) -> ControlListing {
        upf::listing(self.n_ues)
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let (u, rest) = upf::locate(name, index, self.n_ues)?;
        let s = self.slot(u).map_err(|e| ControlError::Unsupported(e.to_string()))?;
        upf::slot_register(&UeSlot::from(&s), &rest).ok_or_else(|| ControlError::NoRegister(name.to_string()))
    }

    /// The weight, read and written back under the UE's lock; a packet of the UE between the
    /// two (microseconds) has its register moves overwritten.
    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        let (u, rest) = upf::locate(name, index, self.n_ues)?;
        let mut s = self.slot(u).map_err(|e| ControlError::Unsupported(e.to_string()))?;
        s.regs.weight = upf::check_write(&UeSlot::from(&s), &rest, value, name)?;
        self.set_slot(u, &s)
            .map_err(|e| ControlError::Unsupported(e.to_string()))
    }
}

impl SwitchPlane for AtsssPlane {
    fn weights(&self) -> Vec<(u8, Vec<u16>)> {
        Vec::new()
    }

    fn marker_backlog_bytes(&self, _port: PortId) -> Option<u64> {
        None
    }

    fn snapshot(&self) -> Option<BTreeMap<String, u64>> {
        AtsssPlane::snapshot(self).ok()
    }
}

impl Drop for AtsssPlane {
    fn drop(&mut self) {
        self.detach_all();
    }
}

/// XDP's verdicts.
pub const XDP_ABORTED: u32 = 0;
/// Dropped (or consumed).
pub const XDP_DROP: u32 = 1;
/// To the stack.
pub const XDP_PASS: u32 = 2;
/// Redirected.
pub const XDP_REDIRECT: u32 = 4;

/// `sizeof(struct xdp_md)`: data, data_end, data_meta, ingress_ifindex, rx_queue_index,
/// egress_ifindex.
const XDP_MD_BYTES: usize = 24;

/// Run `prog` once (or `repeat` times on one buffer) on `frame` arriving on `ifindex`: the
/// verdict, the frame it leaves, the kernel's mean time per run.
pub fn xdp_test_run(
    prog: &ProgramMut<'_>,
    ifindex: u32,
    frame: &[u8],
    repeat: u32,
) -> Result<(u32, Vec<u8>, std::time::Duration), String> {
    let mut ctx = [0u8; XDP_MD_BYTES];
    ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
    ctx[12..16].copy_from_slice(&ifindex.to_ne_bytes());
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

/// [`crate::programs::KernelProgram::vectors`] for `atsss`: each step through
/// `BPF_PROG_TEST_RUN` at its `time_ns` (the test clock), in a namespace of its own with a veth
/// per port; a step's register writes through the control channel first; what it did read from
/// the verdict, the frame it left (whole: the encapsulation) and the counters (a drop's reason
/// is the counter that moved; a frame dropped while an acknowledgement or keepalive counter
/// moved was consumed).
pub fn run_vectors(set: &VectorSet) -> Result<crate::programs::Replay, String> {
    let node = TestNode::create(set.n_ports)?;
    let tables = node.tables(set)?;
    node.enter(|| -> Result<crate::programs::Replay, String> {
        let mut plane = AtsssPlane::load(&tables).map_err(|e| e.to_string())?;
        replay(set, &mut plane, &tables)
    })?
}

/// Counters whose move says a dropped frame was consumed.
pub const CONSUMED: [&str; 3] = [
    "counter.atsss.acks",
    "counter.atsss.acks_ignored",
    "counter.atsss.keepalives",
];

/// A dropped frame's reason, by the counter that moved.
pub const DROP_REASONS: [(&str, &str); 8] = [
    ("counter.malformed", "malformed"),
    ("counter.atsss.malformed", "malformed"),
    ("counter.atsss.unknown_ue", "unknown_ue"),
    ("counter.atsss.spoofed", "spoofed"),
    ("counter.atsss.too_big", "too_big"),
    ("counter.no_route", "no_route"),
    ("counter.ttl_expired", "ttl_expired"),
    ("counter.redirect_failed", "redirect_failed"),
];

fn replay(set: &VectorSet, plane: &mut AtsssPlane, tables: &NodeTables) -> Result<crate::programs::Replay, String> {
    let initial = plane.snapshot().map_err(|e| e.to_string())?;
    let mut prev = initial.clone();
    let mut results = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let at = format!("{} step {i} ({})", set.name, st.note);
        if st.hook != Hook::Ingress || st.delivery != Delivery::TestRun {
            return Err(format!(
                "{at}: the UPF's vectors run at ingress through BPF_PROG_TEST_RUN only"
            ));
        }
        for w in &st.writes {
            plane
                .write_register(&w.register, w.index, w.value)
                .map_err(|e| format!("{at}: writing {}[{}]: {e}", w.register, w.index))?;
        }
        let frame = from_hex(&st.frame).map_err(|e| format!("{at}: {e}"))?;
        let ifindex = tables
            .ports
            .get(usize::from(st.port))
            .map(|p| p.ifindex)
            .ok_or_else(|| format!("{at}: port {} does not exist", st.port))?;
        let mut n = plane.node().map_err(|e| e.to_string())?;
        n.test_clock_ns = st.time_ns;
        plane.set_node(&n).map_err(|e| e.to_string())?;
        let prog = plane.program().map_err(|e| e.to_string())?;
        let (verdict, out_frame, _) = xdp_test_run(&prog, ifindex, &frame, 1).map_err(|e| format!("{at}: {e}"))?;
        let regs = plane.snapshot().map_err(|e| e.to_string())?;
        let delta = |k: &str| delta_of(&prev, &regs, k);
        let mut obs = observed(chosen_path(&prev, &regs));
        match verdict {
            XDP_REDIRECT => {
                check_ipv4_checksum(&out_frame).map_err(|e| format!("{at}: {e}"))?;
                let p = port_of_mac(&out_frame).ok_or_else(|| format!("{at}: output frame to an unknown MAC"))?;
                if out_frame[6..12] != tables.ports[usize::from(p)].own_mac {
                    return Err(format!("{at}: output frame's source MAC is not port {p}'s"));
                }
                let m = parse_frame(&out_frame, set.config.feedback_port)
                    .map_err(|e| format!("{at}: output frame: {e:?}"))?;
                obs.action = "redirect".into();
                obs.port = Some(p);
                obs.ttl = Some(m.ttl);
                obs.ecn = Some(m.ecn);
                obs.frame = Some(to_hex(&out_frame));
            }
            XDP_DROP if CONSUMED.iter().any(|k| delta(k) > 0) => obs.action = "consume".into(),
            XDP_DROP => {
                obs.action = "drop".into();
                obs.drop_reason = DROP_REASONS
                    .iter()
                    .find(|(k, _)| delta(k) > 0)
                    .map(|(_, r)| r.to_string());
            }
            XDP_PASS => obs.action = "to_stack".into(),
            r => return Err(format!("{at}: unexpected verdict {r}")),
        }
        prev = regs.clone();
        results.push(StepResult {
            observed: obs,
            registers: regs,
        });
    }
    Ok((initial, results))
}
