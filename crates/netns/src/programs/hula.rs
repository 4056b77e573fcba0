//! HULA and MP-HULA on the kernel: load `hula.bpf.o` (crates/programs/src/hula/hula.bpf.c),
//! size its tables from the parameters ([`HulaConfig::from_params`]), fill its maps from a
//! node's [`SwitchConfig`] and its probe configuration ([`ProbeConfig`]), attach it at TC
//! ingress and egress of every port, originate probes at ToRs with a [`prober::Prober`], and
//! read its counters and registers back under the names the specification gives them
//! (`crates/programs/src/hula/README.md`, "Counters and registers").
//!
//! [`SwitchConfig`]: mpsched_core::switch::SwitchConfig

pub mod bench;
pub mod layout;
pub mod prober;
pub mod vectors;

use crate::backend::NetnsError;
use crate::dataplane::{attach_tc, bpf, fill_forwarding, map_of, percpu_sum, update_map, DataplaneError, NodeTables};
use crate::layout::{self as mps_layout, Pod, RouteKey};
use crate::switchplane::{
    routes_table_delete, routes_table_info, routes_table_write, snapshot_control, snapshot_register_of, SwitchPlane,
};
use layout::*;
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, ProgramMut, TcHook, TC_EGRESS, TC_INGRESS};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl};
use mpsched_core::headers::{Header, HeaderStack, ProbeHeader};
use mpsched_core::packet::{PacketMeta, PortId};
use mpsched_core::probe::{PortDir, ProbeConfig, HULA_PROBE_PORT};
use mpsched_core::wire::{emit_udp_frame, insert_shims};
use mpsched_programs::hula::{util_scale, HulaConfig};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hula.bpf.o"));

/// The ingress program's name in the object.
pub const INGRESS: &str = "hula_ingress";
/// The egress program's name (the transmit utilisation estimator).
pub const EGRESS: &str = "hula_egress";

/// The counters in the data plane's order, as vectors name them (one list for every backend).
pub use mpsched_programs::hula::DATA_PLANE_COUNTERS as COUNTERS;

pub use mpsched_programs::hula::SWITCH_MTU;

/// One node's HULA / MP-HULA program, loaded and filled.
pub struct HulaPlane {
    obj: Object,
    cfg: HulaConfig,
    n_ports: usize,
    n_tors: u16,
    /// Whether the node is a ToR (MP-HULA's association tables are a ToR's only).
    tor: bool,
    hooks: Vec<TcHook>,
    prober: Option<prober::Prober>,
}

/// The parts of a node's tables the program needs, checked.
struct Checked<'a> {
    cfg: HulaConfig,
    probe: &'a ProbeConfig,
    scales: Vec<u64>,
}

/// Refuse, before anything is created, what the program or its maps cannot hold.
fn check(t: &NodeTables) -> Result<Checked<'_>, DataplaneError> {
    let bad = |m: String| DataplaneError::Config(format!("{}: {m}", t.program));
    let mp = match t.program {
        "hula" => false,
        "mphula" => true,
        p => return Err(bad(format!("hula.bpf.o runs `hula` and `mphula`, not `{p}`"))),
    };
    let cfg = HulaConfig::from_params(&t.params, mp).map_err(bad)?;
    let probe = t.switch.probe.as_ref().ok_or_else(|| {
        bad("the node has no probe configuration (the control plane computes it for probe-driven programs)".into())
    })?;
    if t.ports.len() > mps_layout::MAX_PORTS || probe.ports.len() != t.ports.len() {
        return Err(bad(format!(
            "{} ports ({} in the probe configuration); the eBPF program holds {}",
            t.ports.len(),
            probe.ports.len(),
            mps_layout::MAX_PORTS
        )));
    }
    if probe.n_tors > MAX_TORS || probe.tor_id.is_some_and(|id| id >= probe.n_tors) {
        return Err(bad(format!(
            "{} ToRs (this one {:?}); the eBPF program holds {MAX_TORS}",
            probe.n_tors, probe.tor_id
        )));
    }
    if probe.dest_tors.len() > mps_layout::MAX_ROUTES || t.switch.routes.len() > mps_layout::MAX_ROUTES {
        return Err(bad(format!(
            "{} destination prefixes and {} routes; the eBPF program holds {} of each",
            probe.dest_tors.len(),
            t.switch.routes.len(),
            mps_layout::MAX_ROUTES
        )));
    }
    if !t.markers.is_empty() {
        return Err(bad(
            "no ECN marker on the kernel (its egress stage is the utilisation estimator)".into(),
        ));
    }
    let scales = probe
        .ports
        .iter()
        .enumerate()
        .map(|(p, pp)| util_scale(pp.rate_bps, cfg.tau_us).map_err(|e| bad(format!("port {p}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Checked { cfg, probe, scales })
}

fn dir_of(d: PortDir) -> u32 {
    match d {
        PortDir::Host => DIR_HOST,
        PortDir::Down => DIR_DOWN,
        PortDir::Up => DIR_UP,
        PortDir::None => DIR_NONE,
    }
}

/// The probe frame a ToR originates (README, "Wire format"); MACs are written per port.
pub fn probe_template(own_ip: u32, tor: u16) -> Vec<u8> {
    let meta = PacketMeta::udp(own_ip, 0xffff_ffff, HULA_PROBE_PORT, HULA_PROBE_PORT, 0);
    let mut out = Vec::new();
    emit_udp_frame(&meta, [0; 6], [0; 6], 0, &[0; 10], &mut out);
    let mut stack = HeaderStack::new();
    let _ = stack.push(Header::Probe(ProbeHeader { tor, hops: 0, util: 0 }));
    insert_shims(&mut out, &stack);
    // The UDP checksum is 0 (the util and hops change at every hop).
    out[52..54].copy_from_slice(&[0, 0]);
    out
}

impl HulaPlane {
    /// Load the object with its tables sized from the node's parameters (this runs the
    /// verifier) and fill its maps; `trigger_ifindex` is the interface whose frames mean
    /// "originate now" (0: none).
    pub fn load(t: &NodeTables, trigger_ifindex: u32) -> Result<HulaPlane, DataplaneError> {
        let c = check(t)?;
        let mut open = bpf(
            || "open hula.bpf.o".into(),
            ObjectBuilder::default().open_memory(OBJECT),
        )?;
        for mut m in open.maps_mut() {
            let size = match m.name().to_str() {
                Some("best") => u32::from(c.probe.n_tors.max(1)),
                Some("flowlets") => c.cfg.table_entries,
                Some("aux" | "assoc" | "tokens") => c.cfg.assoc_entries,
                Some("conns") => c.cfg.conn_entries,
                _ => continue,
            };
            bpf(|| "size HULA's tables".into(), m.set_max_entries(size))?;
        }
        let obj = bpf(|| "load hula.bpf.o (verifier)".into(), open.load())?;
        let plane = HulaPlane {
            obj,
            cfg: c.cfg,
            n_ports: t.ports.len(),
            n_tors: c.probe.n_tors,
            tor: c.probe.tor_id.is_some(),
            hooks: Vec::new(),
            prober: None,
        };
        plane.configure(t, &c, trigger_ifindex)?;
        Ok(plane)
    }

    fn update<K: Pod, V: Pod>(&self, map: &str, key: &K, value: &V) -> Result<(), DataplaneError> {
        update_map(&self.obj, map, key, value)
    }

    fn lookup<V: Pod>(&self, map: &str, key: u32) -> Result<V, DataplaneError> {
        let m = map_of(&self.obj, map)?;
        let v = bpf(
            || format!("read map {map}"),
            m.lookup(&key.to_ne_bytes(), MapFlags::ANY),
        )?;
        Ok(v.map(|b| V::from_bytes(&b)).unwrap_or_default())
    }

    /// Fill the node record, ports, routes, groups, destination ToRs, the probe template and
    /// the empty best-hop entries.
    fn configure(&self, t: &NodeTables, c: &Checked<'_>, trigger_ifindex: u32) -> Result<(), DataplaneError> {
        let (cfg, probe) = (&c.cfg, c.probe);
        let mask_of = |d: PortDir| {
            probe
                .ports
                .iter()
                .enumerate()
                .filter(|(_, p)| p.dir == d)
                .fold(0u16, |m, (i, _)| m | (1 << i))
        };
        let mut flags = if cfg.mp { F_MP } else { 0 };
        if t.test_clock {
            flags |= F_TEST_CLOCK;
        }
        if probe.tor_id.is_some() {
            flags |= F_TOR;
        }
        let node = HulaNode {
            own_ip: t.switch.own_ip,
            flags,
            hash_seed: t.switch.hash_seed,
            table_mask: cfg.table_entries - 1,
            assoc_mask: cfg.assoc_entries - 1,
            conn_mask: cfg.conn_entries - 1,
            tor_id: probe.tor_id.unwrap_or(0),
            n_tors: probe.n_tors,
            up_mask: mask_of(PortDir::Up),
            down_mask: mask_of(PortDir::Down),
            best_k: cfg.best_k as u32,
            log2_tau: cfg.log2_tau,
            trigger_ifindex,
            pad: 0,
            tau_us: cfg.tau_us,
            gap_us: cfg.flowlet_gap_us,
            ageing_us: cfg.ageing_us,
            test_clock_us: 0,
        };
        self.update("node", &0u32, &node)?;
        for (p, (pp, scale)) in probe.ports.iter().zip(&c.scales).enumerate() {
            let pc = PortCfg {
                util_scale: *scale,
                dir: dir_of(pp.dir),
                pad: 0,
            };
            self.update("port_cfg", &(p as u32), &pc)?;
        }
        for d in &probe.dest_tors {
            let key = RouteKey {
                prefixlen: u32::from(d.len.min(32)),
                addr: d.prefix.to_be_bytes(),
            };
            self.update("dest_tors", &key, &u32::from(d.tor))?;
        }
        for tor in 0..u32::from(probe.n_tors) {
            self.update("best", &tor, &Best::empty())?;
        }
        if let Some(tor) = probe.tor_id {
            let mut tmpl = ProbeTmpl::default();
            tmpl.0.copy_from_slice(&probe_template(t.switch.own_ip, tor));
            self.update("probe_tmpl", &0u32, &tmpl)?;
        }
        fill_forwarding(&self.obj, t)
    }

    /// The ingress or egress program.
    pub fn program(&self, name: &str) -> Result<ProgramMut<'_>, DataplaneError> {
        self.obj
            .progs_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| DataplaneError::Config(format!("program {name} missing from hula.bpf.o")))
    }

    /// Set the test clock (with [`NodeTables::test_clock`]), in nanoseconds: the program counts
    /// whole microseconds (floor), as the Rust twin does.
    pub fn set_test_clock(&self, now_ns: u64) -> Result<(), DataplaneError> {
        let mut n: HulaNode = self.lookup("node", 0)?;
        n.test_clock_us = now_ns / 1000;
        self.update("node", &0u32, &n)
    }

    /// Route `dst` (a host route, /32) to `port`, or remove its route (`None`).
    pub fn set_host_route(&self, dst: u32, port: Option<PortId>) -> Result<bool, DataplaneError> {
        crate::dataplane::set_host_route(&self.obj, dst, port)
    }

    /// Attach ingress and egress at `ifindex` (a port), in the calling thread's namespace.
    pub fn attach(&mut self, ifindex: u32) -> Result<(), DataplaneError> {
        let hooks = attach_tc(
            &[(TC_INGRESS, self.program(INGRESS)?), (TC_EGRESS, self.program(EGRESS)?)],
            ifindex,
        )?;
        self.hooks.extend(hooks);
        Ok(())
    }

    /// Attach ingress alone at `ifindex` (the trigger interface; a port in a vector replay,
    /// where an egress hook would count the probes' clones into the estimator).
    pub fn attach_ingress(&mut self, ifindex: u32) -> Result<(), DataplaneError> {
        let hooks = attach_tc(&[(TC_INGRESS, self.program(INGRESS)?)], ifindex)?;
        self.hooks.extend(hooks);
        Ok(())
    }

    /// Detach every hook this plane attached (in the current namespace).
    pub fn detach_all(&mut self) {
        for mut h in self.hooks.drain(..) {
            let _ = h.detach();
        }
    }

    /// The prober's figures for this ToR (triggers sent, periods missed) and the shared
    /// thread's (its CPU time in ns, the ToRs it serves), if this node originates probes.
    pub fn prober_stats(&self) -> Option<[u64; 4]> {
        self.prober.as_ref().map(|p| {
            let s = &p.stats;
            [&s.triggers, &s.missed, &s.cpu_ns, &s.tors].map(|a| a.load(Ordering::Relaxed))
        })
    }

    /// Every counter and register, named as the specification names them.
    pub fn snapshot(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        let mut out = BTreeMap::new();
        self.counters_into(&mut out)?;
        self.best_into(&mut out)?;
        for p in 0..self.n_ports as u32 {
            let t: TxUtil = self.lookup("txutil", p)?;
            out.insert(format!("txutil.{p}.bytes"), t.bytes);
            out.insert(format!("txutil.{p}.last_us"), t.last_us);
            out.insert(format!("probe_in.{p}.last_us"), self.lookup::<u64>("probe_in", p)?);
        }
        self.tables_into(&mut out)?;
        if let Some([triggers, missed, cpu_ns, tors]) = self.prober_stats() {
            out.insert("prober.triggers".into(), triggers);
            out.insert("prober.missed".into(), missed);
            out.insert("prober.cpu_us".into(), cpu_ns / 1000);
            out.insert("prober.tors".into(), tors);
        }
        Ok(out)
    }

    fn counters_into(&self, out: &mut BTreeMap<String, u64>) -> Result<(), DataplaneError> {
        for (i, name) in COUNTERS.iter().enumerate() {
            let v: u64 = percpu_sum(&self.obj, "counters", i as u32, |t: &mut u64, v| *t += v)?;
            if *name == "counter.redirect_failed" && v == 0 {
                continue;
            }
            out.insert(name.to_string(), v);
        }
        for p in 0..self.n_ports as u32 {
            let st = percpu_sum(&self.obj, "port_stats", p, |t: &mut mps_layout::PortStats, v| {
                t.rx_pkts += v.rx_pkts;
                t.tx_pkts += v.tx_pkts;
            })?;
            out.insert(format!("port{p}.rx_pkts"), st.rx_pkts);
            out.insert(format!("port{p}.tx_pkts"), st.tx_pkts);
        }
        Ok(())
    }

    fn best_into(&self, out: &mut BTreeMap<String, u64>) -> Result<(), DataplaneError> {
        for tor in 0..u32::from(self.n_tors) {
            let b: Best = self.lookup("best", tor)?;
            for (r, h) in b.hop.iter().take(self.cfg.best_k).enumerate() {
                out.insert(format!("best.{tor}.{r}.port"), u64::from(h.port));
                out.insert(format!("best.{tor}.{r}.util"), u64::from(h.util));
                out.insert(format!("best.{tor}.{r}.time_us"), h.time_us);
            }
        }
        Ok(())
    }

    /// The occupied slots of the flowlet, association and connection tables.
    fn tables_into(&self, out: &mut BTreeMap<String, u64>) -> Result<(), DataplaneError> {
        for s in 0..self.cfg.table_entries {
            let f: Flowlet = self.lookup("flowlets", s)?;
            if f.valid != 0 {
                out.insert(format!("flowlet.{s}.tag"), u64::from(f.tag));
                out.insert(format!("flowlet.{s}.port"), u64::from(f.port));
                out.insert(format!("flowlet.{s}.last_us"), f.last_us);
            }
        }
        if !self.cfg.mp {
            return Ok(());
        }
        if self.tor {
            for s in 0..self.cfg.assoc_entries {
                self.assoc_slot_into(s, out)?;
            }
        }
        for s in 0..self.cfg.conn_entries {
            let c: Conn = self.lookup("conns", s)?;
            if c.valid == 0 {
                continue;
            }
            out.insert(format!("conn.{s}.conn_id"), c.conn_id);
            out.insert(format!("conn.{s}.rr"), u64::from(c.rr));
            for j in 0..MAX_SUBFLOWS {
                out.insert(format!("conn.{s}.port{}", j + 1), u64::from(c.port[j]));
                out.insert(format!("conn.{s}.last{}_us", j + 1), c.last_us[j]);
            }
        }
        Ok(())
    }

    fn assoc_slot_into(&self, s: u32, out: &mut BTreeMap<String, u64>) -> Result<(), DataplaneError> {
        let x: Aux = self.lookup("aux", s)?;
        if x.flags != 0 || x.tag != 0 || x.key_a != 0 || x.key_b != 0 {
            out.insert(format!("aux.{s}.tag"), u64::from(x.tag));
            out.insert(format!("aux.{s}.key_a"), x.key_a);
            out.insert(format!("aux.{s}.key_b"), x.key_b);
            out.insert(format!("aux.{s}.flags"), u64::from(x.flags));
        }
        let a: Assoc = self.lookup("assoc", s)?;
        if a.valid != 0 {
            out.insert(format!("assoc.{s}.tag"), u64::from(a.tag));
            out.insert(format!("assoc.{s}.conn_id"), a.conn_id);
            out.insert(format!("assoc.{s}.subflow"), u64::from(a.subflow));
            out.insert(format!("assoc.{s}.count"), u64::from(a.count));
        }
        let k: Token = self.lookup("tokens", s)?;
        if k.valid != 0 {
            out.insert(format!("token.{s}.token"), u64::from(k.token));
            out.insert(format!("token.{s}.assoc_slot"), u64::from(k.assoc_slot));
        }
        Ok(())
    }
}

/// The index of interface `name` in the calling thread's namespace.
fn ifindex_here(name: &str) -> Result<u32, String> {
    let c = std::ffi::CString::new(name).map_err(|_| format!("a NUL in {name}"))?;
    // SAFETY: a valid NUL-terminated string.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(format!("ifindex of {name}: {}", std::io::Error::last_os_error())),
        i => Ok(i),
    }
}

/// The trigger veth pair in the calling thread's namespace, made if it is not there yet: the
/// ifindex of the sender side and of the trigger side.
pub fn create_trigger() -> Result<(u32, u32), String> {
    if let (Ok(s), Ok(t)) = (ifindex_here(prober::SENDER_IF), ifindex_here(prober::TRIGGER_IF)) {
        return Ok((s, t));
    }
    let (s, t) = (prober::SENDER_IF, prober::TRIGGER_IF);
    crate::ns::ip(&["link", "add", s, "type", "veth", "peer", "name", t]).map_err(|e| e.to_string())?;
    for i in [s, t] {
        crate::ns::ip(&["link", "set", i, "up"]).map_err(|e| e.to_string())?;
    }
    Ok((ifindex_here(s)?, ifindex_here(t)?))
}

/// [`crate::programs::KernelProgram::start`] for `hula` and `mphula`, in the node's namespace:
/// load, attach on every port, and at a ToR the trigger interface and the prober. On an error
/// nothing is left running: the prober stops with the plane, and the veths and hooks go with
/// the namespace.
pub fn start(tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
    let tor = tables.switch.probe.as_ref().and_then(|p| p.tor_id);
    check(tables)?;
    let trigger = match tor {
        Some(_) => Some(create_trigger().map_err(NetnsError::Plane)?),
        None => None,
    };
    let mut plane = HulaPlane::load(tables, trigger.map_or(0, |t| t.1))?;
    for (p, b) in tables.ports.iter().enumerate() {
        plane.attach(b.ifindex)?;
        let host = tables.switch.probe.as_ref().map(|c| c.ports[p].dir) == Some(PortDir::Host);
        if plane.cfg.mp && !host {
            let name = format!("e{p}");
            crate::ns::ip(&["link", "set", &name, "mtu", &SWITCH_MTU.to_string()])?;
        }
    }
    if let (Some((sender, trig)), Some(tor)) = (trigger, tor) {
        plane.attach_ingress(trig)?;
        let sock = prober::open_sender(sender).map_err(NetnsError::Plane)?;
        let frame = probe_template(tables.switch.own_ip, tor);
        plane.prober = Some(prober::Prober::start(sock, frame, plane.cfg.probe_period_us).map_err(NetnsError::Plane)?);
    }
    Ok(Box::new(plane))
}

/// Registers read from the snapshot (none writable); the routes table (`routes`: key
/// `[dst_ip]`, action `forward` with `[port]`) writable, as on `mpsched`'s plane.
impl ProgramControl for HulaPlane {
    fn control_listing(&self) -> ControlListing {
        let mut listing = snapshot_control(self);
        listing.tables.push(routes_table_info());
        listing
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        snapshot_register_of(self, name, index)
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        routes_table_write(table, key, action, params, |dst, port| self.set_host_route(dst, port))
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        routes_table_delete(table, key, |dst| self.set_host_route(dst, None))
    }
}

impl SwitchPlane for HulaPlane {
    fn weights(&self) -> Vec<(u8, Vec<u16>)> {
        Vec::new()
    }

    fn marker_backlog_bytes(&self, _port: PortId) -> Option<u64> {
        None
    }

    fn snapshot(&self) -> Option<BTreeMap<String, u64>> {
        HulaPlane::snapshot(self).ok()
    }
}
