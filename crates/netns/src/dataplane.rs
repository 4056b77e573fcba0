//! The control plane of one node's eBPF data plane: load `bpf/mpsched.bpf.c`, fill its tables
//! and registers from a [`SwitchConfig`], read them back under the same names as
//! [`mpsched_core::frame::FrameSwitch::snapshot`], attach to and detach from interfaces.

use crate::layout::{self, Pod};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, ProgramMut, TcAttachPoint, TcHook, TC_EGRESS, TC_INGRESS};
use mpsched_core::control::ControlError;
use mpsched_core::frame::MarkerConfig;
use mpsched_core::marker::VirtualQueueMarker;
use mpsched_core::packet::PortId;
use mpsched_core::sched::{RandomSplit, SchedulerConfig};
use mpsched_core::switch::SwitchConfig;
use mpsched_programs::{Params, SwitchProgram};
use std::collections::BTreeMap;
use std::os::fd::AsFd;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/mpsched.bpf.o"));

/// Errors of the data plane.
#[derive(Debug, thiserror::Error)]
pub enum DataplaneError {
    /// libbpf failed (load, verifier, map access, attach).
    #[error("{what}: {source}")]
    Bpf {
        /// What was being done.
        what: String,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// The configuration cannot be expressed in the eBPF program.
    #[error("{0}")]
    Config(String),
}

pub(crate) fn bpf<T>(what: impl FnOnce() -> String, r: libbpf_rs::Result<T>) -> Result<T, DataplaneError> {
    r.map_err(|source| DataplaneError::Bpf { what: what(), source })
}

/// One port of the node: its interface and the MAC addresses a frame leaving by it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortBinding {
    /// Interface index, in the node's namespace.
    pub ifindex: u32,
    /// This port's own MAC (the source of frames leaving by it).
    pub own_mac: [u8; 6],
    /// The MAC of the node at the other end.
    pub peer_mac: [u8; 6],
}

/// The queues a switch port's own traffic manager serves (BMv2's priority queues, when the
/// data plane serves a port's queues itself: [`crate::switchplane::SwitchPlanes::port_queues`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortQueues {
    /// Strict-priority queues, the highest served first (1: one FIFO).
    pub queues: u8,
    /// Packets each queue holds.
    pub queue_pkts: u32,
}

/// Everything a node's data plane is configured with.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTables {
    /// Tables of the switch program.
    pub switch: SwitchConfig,
    /// Ports, indexed by port id.
    pub ports: Vec<PortBinding>,
    /// Egress markers.
    pub markers: Vec<MarkerConfig>,
    /// Raw RS draws to replay instead of `bpf_get_prandom_u32()` (tests).
    pub test_draws: Vec<u32>,
    /// Take egress time from `test_clock_ns` instead of the kernel clock (tests).
    pub test_clock: bool,
    /// The registered program the node runs (`multipath`, `letflow`: a name of
    /// [`mpsched_programs::SWITCH_PROGRAMS`]); the kernel loads its eBPF object
    /// ([`crate::programs`]).
    pub program: &'static str,
    /// The program's parameters, checked against its declaration.
    pub params: Params,
    /// Per port, the queues the switch itself serves there; empty (or a port beyond it): one
    /// queue. Ports with several queues on the eBPF data plane are the kernel's qdiscs, after
    /// the program, and are not listed here.
    pub port_queues: Vec<PortQueues>,
    /// Per port, where the kernel's qdiscs serve several queues there, the `skb->priority`
    /// that puts a packet in each (its class id, queue 0 first: [`crate::backend`]'s layouts);
    /// empty for a port of one queue. Empty altogether: every port has the program's own
    /// levels as htb classes `1:10`.. (conformance vectors, which run no qdisc).
    pub port_classes: Vec<Vec<u32>>,
    /// Per port, the interface at the other end of its link, where a program that must see
    /// packets leave the port's queue attaches its departure stage (the kernel has no hook
    /// after a qdisc); empty: none (conformance vectors replay departures themselves).
    pub far_ends: Vec<FarEnd>,
}

/// The interface at the other end of a switch port's link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FarEnd {
    /// The name of the namespace it is in (`ip netns` names it so).
    pub netns: String,
    /// Its interface's name there.
    pub ifname: String,
}

impl NodeTables {
    /// Tables of a node running the default program (`multipath`, with its default
    /// parameters), no markers, no test draws, the kernel's clock.
    pub fn multipath(switch: SwitchConfig, ports: Vec<PortBinding>) -> NodeTables {
        let program = mpsched_programs::switch_program(mpsched_programs::DEFAULT_PROGRAM)
            .expect("the default program is registered");
        NodeTables {
            switch,
            ports,
            markers: Vec::new(),
            test_draws: Vec::new(),
            test_clock: false,
            program: program.name(),
            params: Params::defaults(program.params()),
            port_queues: Vec::new(),
            port_classes: Vec::new(),
            far_ends: Vec::new(),
        }
    }

    /// The registered program the node runs.
    pub fn switch_program(&self) -> Result<&'static dyn SwitchProgram, String> {
        mpsched_programs::switch_program(self.program).ok_or_else(|| {
            format!(
                "no program `{}` (registered: {})",
                self.program,
                mpsched_programs::switch_program_names()
            )
        })
    }
}

/// A loaded data plane.
pub struct Dataplane {
    obj: Object,
    n_ports: usize,
    hooks: Vec<TcHook>,
}

impl Dataplane {
    /// Load the programs (this runs the verifier) and fill the tables.
    pub fn load(tables: &NodeTables) -> Result<Dataplane, DataplaneError> {
        Dataplane::load_object(OBJECT, "bpf/mpsched.bpf.o", tables)
    }

    /// [`Dataplane::load`] of another object that includes `bpf/mpsched.bpf.c` whole (a
    /// program with a queue stage of its own, `vqwrr.bpf.o`): its maps and programs under the
    /// same names, and its own beside them.
    pub fn load_object(object: &[u8], what: &str, tables: &NodeTables) -> Result<Dataplane, DataplaneError> {
        let open = bpf(|| format!("open {what}"), ObjectBuilder::default().open_memory(object))?;
        let obj = bpf(|| format!("load {what} (verifier)"), open.load())?;
        let dp = Dataplane {
            obj,
            n_ports: tables.ports.len(),
            hooks: Vec::new(),
        };
        dp.configure(tables)?;
        Ok(dp)
    }

    fn update<K: Pod, V: Pod>(&self, map: &str, key: &K, value: &V) -> Result<(), DataplaneError> {
        update_map(&self.obj, map, key, value)
    }

    /// The loaded object, for a program's maps beside the multipath switch's.
    pub(crate) fn object(&self) -> &Object {
        &self.obj
    }

    fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>, DataplaneError> {
        map_of(&self.obj, name)
    }

    fn lookup<V: Pod>(&self, map: &str, key: u32, flags: MapFlags) -> Result<V, DataplaneError> {
        let m = self.map(map)?;
        let v = bpf(|| format!("read map {map}"), m.lookup(&key.to_ne_bytes(), flags))?;
        Ok(v.map(|b| V::from_bytes(&b)).unwrap_or_default())
    }

    fn lookup_percpu_sum<V: Pod>(&self, map: &str, key: u32, add: impl Fn(&mut V, V)) -> Result<V, DataplaneError> {
        percpu_sum(&self.obj, map, key, add)
    }

    /// The program `name` (`mps_ingress` or `mps_egress`).
    pub fn program(&self, name: &str) -> Result<ProgramMut<'_>, DataplaneError> {
        self.obj
            .progs_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| DataplaneError::Config(format!("program {name} missing from the object")))
    }

    /// Fill every table and register from `t`.
    pub fn configure(&self, t: &NodeTables) -> Result<(), DataplaneError> {
        let cfg = &t.switch;
        if t.ports.len() > layout::MAX_PORTS {
            return Err(DataplaneError::Config(format!(
                "{} ports; the eBPF program has {}",
                t.ports.len(),
                layout::MAX_PORTS
            )));
        }
        if cfg.splits.len() > layout::MAX_GROUPS || cfg.confluences.len() > layout::MAX_GROUPS {
            return Err(DataplaneError::Config(format!(
                "at most {} splits and confluences per node",
                layout::MAX_GROUPS
            )));
        }
        mpsched_core::classify::check_rules(&cfg.classify).map_err(DataplaneError::Config)?;
        if t.test_draws.len() > layout::h::TEST_DRAWS as usize {
            return Err(DataplaneError::Config("too many test draws".into()));
        }
        let mut flags = 0;
        if t.test_clock {
            flags |= layout::h::F_TEST_CLOCK as u32;
        }
        if !t.test_draws.is_empty() {
            flags |= layout::h::F_TEST_DRAWS as u32;
        }
        let node = layout::Node {
            own_ip: cfg.own_ip,
            feedback_port: cfg.feedback_port,
            n_splits: cfg.splits.len() as u8,
            n_confluences: cfg.confluences.len() as u8,
            flags,
            test_draws_n: t.test_draws.len() as u32,
            test_clock_ns: 0,
            hash_seed: cfg.hash_seed,
            n_class_rules: cfg.classify.len() as u8,
            pad: [0; 3],
        };
        for (i, r) in cfg.classify.iter().enumerate() {
            self.update("class_rules", &(i as u32), &layout::ClassRule::from(r))?;
        }
        self.update("node", &0u32, &node)?;
        for (i, d) in t.test_draws.iter().enumerate() {
            self.update("test_draws", &(i as u32), d)?;
        }
        self.update("test_draws", &(layout::h::TEST_DRAWS as u32), &0u32)?;
        fill_forwarding(&self.obj, t)?;
        for (slot, s) in cfg.splits.iter().enumerate() {
            self.update("splits", &(slot as u32), &split_registers(s)?)?;
        }
        for (slot, c) in cfg.confluences.iter().enumerate() {
            let mut v = layout::Confluence {
                src_ip: c.src_ip,
                dst_ip: c.dst_ip,
                splitter_ip: c.splitter_ip,
                group: c.group,
                n_paths: c.path_ingress_ports.len() as u8,
                every: c.feedback_every.max(1),
                ..Default::default()
            };
            if c.path_ingress_ports.len() > layout::MAX_PATHS || c.return_ports.len() != c.path_ingress_ports.len() {
                return Err(DataplaneError::Config(format!(
                    "confluence group {}: bad path ports",
                    c.group
                )));
            }
            v.ingress_port[..c.path_ingress_ports.len()].copy_from_slice(&c.path_ingress_ports);
            v.return_port[..c.return_ports.len()].copy_from_slice(&c.return_ports);
            self.update("confluences", &(slot as u32), &v)?;
        }
        for m in &t.markers {
            let vq = VirtualQueueMarker::new(m.rate_bps, m.threshold_bytes, m.limit_bytes);
            let v = layout::Marker {
                rate_bps: vq.rate_bps,
                max_elapsed_ns: vq.max_elapsed_ns,
                threshold_scaled: vq.threshold_scaled.max(1),
                limit_scaled: vq.limit_scaled,
                ..Default::default()
            };
            self.update("markers", &u32::from(m.port), &v)?;
        }
        Ok(())
    }

    /// Set the egress test clock (with [`NodeTables::test_clock`]).
    pub fn set_test_clock(&self, now_ns: u64) -> Result<(), DataplaneError> {
        let mut n: layout::Node = self.lookup("node", 0, MapFlags::ANY)?;
        n.test_clock_ns = now_ns;
        self.update("node", &0u32, &n)
    }

    /// The current weights of each DWRR / WRR group, by group id.
    pub fn weights(&self) -> Result<Vec<(u8, Vec<u16>)>, DataplaneError> {
        let node: layout::Node = self.lookup("node", 0, MapFlags::ANY)?;
        let mut out = Vec::new();
        for slot in 0..u32::from(node.n_splits) {
            let s: layout::Split = self.lookup("splits", slot, MapFlags::LOCK)?;
            out.push((s.group, s.weights[..usize::from(s.n_paths)].to_vec()));
        }
        Ok(out)
    }

    /// Set the weights of WRR group `group` (as `Wrr::set_weights` does: the round restarts).
    /// A read, change and write under the group's lock: path counters the data path adds
    /// between the read and the write (microseconds) are lost.
    pub fn set_wrr_weight(&self, group: u8, path: usize, weight: u16) -> Result<(), ControlError> {
        let err = |e: DataplaneError| ControlError::Unsupported(e.to_string());
        let node: layout::Node = self.lookup("node", 0, MapFlags::ANY).map_err(err)?;
        for slot in 0..u32::from(node.n_splits) {
            let mut s: layout::Split = self.lookup("splits", slot, MapFlags::LOCK).map_err(err)?;
            if s.group != group {
                continue;
            }
            if u64::from(s.sched) != layout::h::SCHED_WRR {
                return Err(ControlError::ReadOnly(format!("split{group}.weight")));
            }
            if path >= usize::from(s.n_paths) {
                return Err(ControlError::NoIndex {
                    register: format!("split{group}.weight"),
                    size: usize::from(s.n_paths),
                    index: path,
                });
            }
            s.weights[path] = weight;
            s.remaining = s.weights;
            let m = self.map("splits").map_err(err)?;
            return m
                .update(&slot.to_ne_bytes(), s.as_bytes(), MapFlags::LOCK)
                .map_err(|e| ControlError::Unsupported(format!("write split{group}: {e}")));
        }
        Err(ControlError::NoRegister(format!("split{group}.weight")))
    }

    /// Route `dst` (a host route, /32) to `port`, or remove its route (`None`).
    pub fn set_host_route(&self, dst: u32, port: Option<PortId>) -> Result<bool, DataplaneError> {
        set_host_route(&self.obj, dst, port)
    }

    /// The virtual queue of `port`: (backlog in bytes, marked, overflow).
    pub fn marker(&self, port: PortId) -> Result<layout::Marker, DataplaneError> {
        self.lookup("markers", u32::from(port), MapFlags::LOCK)
    }

    /// Per-port counters summed over CPUs.
    pub fn port_stats(&self, port: PortId) -> Result<layout::PortStats, DataplaneError> {
        self.lookup_percpu_sum("port_stats", u32::from(port), |t: &mut layout::PortStats, v| {
            t.rx_pkts += v.rx_pkts;
            t.rx_bytes += v.rx_bytes;
            t.tx_pkts += v.tx_pkts;
            t.tx_bytes += v.tx_bytes;
        })
    }

    /// Every register and counter, named as [`mpsched_core::frame::FrameSwitch::snapshot`]
    /// names them.
    pub fn snapshot(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        let mut out = BTreeMap::new();
        for (i, name) in layout::COUNTERS.iter().enumerate() {
            let v: u64 = self.lookup_percpu_sum("counters", i as u32, |t: &mut u64, v| *t += v)?;
            if *name != "redirect_failed" || v != 0 {
                out.insert(format!("counter.{name}"), v);
            }
        }
        let node: layout::Node = self.lookup("node", 0, MapFlags::ANY)?;
        for slot in 0..u32::from(node.n_splits) {
            let s: layout::Split = self.lookup("splits", slot, MapFlags::LOCK)?;
            let g = format!("split{}", s.group);
            let n = usize::from(s.n_paths);
            for i in 0..n {
                out.insert(format!("{g}.path{i}_pkts"), s.path_pkts[i]);
            }
            let sched = u64::from(s.sched);
            if sched == layout::h::SCHED_WRR || sched == layout::h::SCHED_DWRR {
                for i in 0..n {
                    out.insert(format!("{g}.weight{i}"), u64::from(s.weights[i]));
                    out.insert(format!("{g}.remaining{i}"), u64::from(s.remaining[i]));
                }
            }
            if sched == layout::h::SCHED_DWRR {
                for i in 0..n {
                    out.insert(format!("{g}.adjust{i}"), u64::from(s.adjust[i]));
                }
                for (k, v) in [
                    ("groups_left", u64::from(s.groups_left)),
                    ("drop_left", u64::from(s.drop_left)),
                    ("cursor", u64::from(s.cursor)),
                    ("feedback_rx", s.feedback_rx),
                    ("windows", s.windows),
                    ("adjustments", s.adjustments),
                    ("avoidance_events", s.avoidance_events),
                    ("avoidance_drops", s.avoidance_drops),
                ] {
                    out.insert(format!("{g}.{k}"), v);
                }
            }
        }
        for slot in 0..u32::from(node.n_confluences) {
            let c: layout::Confluence = self.lookup("confluences", slot, MapFlags::LOCK)?;
            let g = format!("confluence{}", c.group);
            for i in 0..usize::from(c.n_paths) {
                out.insert(format!("{g}.ce_pending{i}"), u64::from(c.ce_pending[i]));
            }
            out.insert(format!("{g}.ce_arrivals"), c.ce_arrivals);
            out.insert(format!("{g}.feedback_sent"), c.feedback_sent);
        }
        for p in 0..self.n_ports {
            let st = self.port_stats(p as PortId)?;
            out.insert(format!("port{p}.rx_pkts"), st.rx_pkts);
            out.insert(format!("port{p}.tx_pkts"), st.tx_pkts);
        }
        for p in 0..layout::MAX_PORTS {
            let m = self.marker(p as PortId)?;
            if m.threshold_scaled == 0 {
                continue;
            }
            let vq = VirtualQueueMarker {
                rate_bps: m.rate_bps,
                max_elapsed_ns: m.max_elapsed_ns,
                threshold_scaled: m.threshold_scaled,
                limit_scaled: m.limit_scaled,
                backlog_scaled: m.backlog_scaled,
                last_ns: m.last_ns,
                marked: m.marked,
                not_ect_over_threshold: m.not_ect_over_threshold,
                overflow: m.overflow,
            };
            for (k, v) in vq.registers() {
                out.insert(format!("marker{p}.{k}"), v);
            }
        }
        Ok(out)
    }

    /// Attach the ingress program to `ifindex` (and the egress marker too when `egress`), in
    /// the calling thread's network namespace. Detached by [`Dataplane::detach_all`], called in
    /// the same namespace, or with the interface; dropping the data plane does not detach
    /// (its thread may be in another namespace by then, where the same ifindex is another
    /// interface).
    pub fn attach(&mut self, ifindex: u32, egress: bool) -> Result<(), DataplaneError> {
        let mut progs = vec![(TC_INGRESS, self.program("mps_ingress")?)];
        if egress {
            progs.push((TC_EGRESS, self.program("mps_egress")?));
        }
        let hooks = attach_tc(&progs, ifindex)?;
        self.hooks.extend(hooks);
        Ok(())
    }

    /// [`Dataplane::attach`] on every port of `t`, with the marker where `t` has one.
    pub fn attach_ports(&mut self, t: &NodeTables) -> Result<(), DataplaneError> {
        for (p, b) in t.ports.iter().enumerate() {
            self.attach(b.ifindex, t.markers.iter().any(|m| usize::from(m.port) == p))?;
        }
        Ok(())
    }

    /// Detach every program this data plane attached (in the current namespace).
    pub fn detach_all(&mut self) {
        for mut h in self.hooks.drain(..) {
            let _ = h.detach();
        }
    }
}

/// Map `name` of a loaded object.
pub(crate) fn map_of<'a>(obj: &'a Object, name: &str) -> Result<libbpf_rs::Map<'a>, DataplaneError> {
    obj.maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| DataplaneError::Config(format!("map {name} missing from the object")))
}

/// Write `key` -> `value` into map `map` of a loaded object.
pub(crate) fn update_map<K: Pod, V: Pod>(obj: &Object, map: &str, key: &K, value: &V) -> Result<(), DataplaneError> {
    let m = map_of(obj, map)?;
    bpf(
        || format!("update map {map}"),
        m.update(key.as_bytes(), value.as_bytes(), MapFlags::ANY),
    )
}

/// Entry `key` of per-CPU map `map` of a loaded object, summed over CPUs by `add`.
pub(crate) fn percpu_sum<V: Pod>(
    obj: &Object,
    map: &str,
    key: u32,
    add: impl Fn(&mut V, V),
) -> Result<V, DataplaneError> {
    let m = map_of(obj, map)?;
    let per_cpu = bpf(
        || format!("read map {map}"),
        m.lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY),
    )?;
    let mut total = V::default();
    for b in per_cpu.unwrap_or_default() {
        add(&mut total, V::from_bytes(&b));
    }
    Ok(total)
}

/// Fill the maps every program shares (`bpf/mps_common.h`): the ports with their MACs, the
/// ifindex-to-port table, the routes and the ECMP groups.
pub(crate) fn fill_forwarding(obj: &Object, t: &NodeTables) -> Result<(), DataplaneError> {
    let cfg = &t.switch;
    for (p, b) in t.ports.iter().enumerate() {
        let port = layout::Port {
            ifindex: b.ifindex,
            own_mac: b.own_mac,
            peer_mac: b.peer_mac,
        };
        if b.ifindex as u64 >= layout::h::MAX_IFINDEX {
            return Err(DataplaneError::Config(format!(
                "ifindex {} of port {p} is not below {}: create interfaces inside the node's namespace",
                b.ifindex,
                layout::h::MAX_IFINDEX
            )));
        }
        update_map(obj, "ports", &(p as u32), &port)?;
        update_map(obj, "ifindex_port", &b.ifindex, &(p as u32 + 1))?;
    }
    for r in &cfg.routes {
        let key = layout::RouteKey {
            prefixlen: u32::from(r.len),
            addr: r.prefix.to_be_bytes(),
        };
        update_map(obj, "routes", &key, &u32::from(r.port))?;
    }
    if cfg.ecmp_groups.len() > layout::MAX_ECMP_GROUPS {
        return Err(DataplaneError::Config(format!(
            "{} ECMP groups; the eBPF program holds {}",
            cfg.ecmp_groups.len(),
            layout::MAX_ECMP_GROUPS
        )));
    }
    for (i, ports) in cfg.ecmp_groups.iter().enumerate() {
        if ports.is_empty() || ports.len() > layout::MAX_PORTS {
            return Err(DataplaneError::Config(format!(
                "ECMP group {i}: 1 to {} ports",
                layout::MAX_PORTS
            )));
        }
        let mut g = layout::Ecmp {
            n_ports: ports.len() as u32,
            ..Default::default()
        };
        g.ports[..ports.len()].copy_from_slice(ports);
        update_map(obj, "ecmp", &(i as u32), &g)?;
    }
    Ok(())
}

/// Route `dst` (a host route, /32) to `port`, or remove its route (`None`), in the shared
/// `routes` map of a loaded object; whether there was a route to remove.
pub(crate) fn set_host_route(obj: &Object, dst: u32, port: Option<PortId>) -> Result<bool, DataplaneError> {
    let key = layout::RouteKey {
        prefixlen: 32,
        addr: dst.to_be_bytes(),
    };
    match port {
        Some(p) => update_map(obj, "routes", &key, &u32::from(p)).map(|()| true),
        None => Ok(map_of(obj, "routes")?.delete(key.as_bytes()).is_ok()),
    }
}

/// Make a clsact qdisc on `ifindex` (the calling thread's namespace) for `prog`'s hooks, if
/// there is none. Several owners attach at one interface (a switch's programs, a departure
/// stage, a host's control-traffic program), each asking for the qdisc: the kernel refuses the
/// second ("Exclusivity flag on", which libbpf-rs takes as success), and that one message of
/// libbpf's is kept off the terminal ([`quiet_libbpf`]).
pub(crate) fn ensure_clsact(prog: &ProgramMut<'_>, ifindex: u32) -> Result<(), DataplaneError> {
    quiet_libbpf();
    let mut q = TcHook::new(prog.as_fd());
    q.ifindex(ifindex as i32).attach_point(TC_INGRESS | TC_EGRESS);
    bpf(|| format!("create clsact on ifindex {ifindex}"), q.create())?;
    Ok(())
}

/// libbpf's messages to stderr as its own default prints them (warnings and information),
/// less the kernel's refusal to make a clsact qdisc that exists.
fn quiet_libbpf() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    fn print(_level: libbpf_rs::PrintLevel, msg: String) {
        if !msg.contains("Exclusivity flag on") {
            eprint!("{msg}");
        }
    }
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Info, print)));
    });
}

/// The TC filter priority of a switch's programs on its own ports.
pub const SWITCH_TC_PRIORITY: u32 = 2;
/// The TC filter priority of a departure stage at the far end of a switch's link
/// ([`NodeTables::far_ends`]): ahead of whatever that end runs (its own switch program at
/// [`SWITCH_TC_PRIORITY`]), which it lets go on (`TC_ACT_UNSPEC`).
pub const DEPARTURE_TC_PRIORITY: u32 = 1;

/// Attach `progs` (each at its TC attach point) to `ifindex`, in the calling thread's network
/// namespace, under one clsact qdisc, at [`SWITCH_TC_PRIORITY`]: the hooks, to detach them by.
pub fn attach_tc(progs: &[(TcAttachPoint, ProgramMut<'_>)], ifindex: u32) -> Result<Vec<TcHook>, DataplaneError> {
    attach_tc_at(progs, ifindex, SWITCH_TC_PRIORITY)
}

/// [`attach_tc`] at filter priority `priority` (lower runs first).
fn attach_tc_at(
    progs: &[(TcAttachPoint, ProgramMut<'_>)],
    ifindex: u32,
    priority: u32,
) -> Result<Vec<TcHook>, DataplaneError> {
    let mut hooks = Vec::new();
    for (k, (point, p)) in progs.iter().enumerate() {
        let mut hook = TcHook::new(p.as_fd());
        hook.ifindex(ifindex as i32).replace(true).handle(1).priority(priority);
        hook.attach_point(*point);
        if k == 0 {
            // One clsact qdisc serves both hooks.
            ensure_clsact(p, ifindex)?;
        }
        let attached = bpf(
            || format!("attach {} to ifindex {ifindex}", p.name().to_string_lossy()),
            hook.attach(),
        )?;
        hooks.push(attached);
    }
    Ok(hooks)
}

/// The registers of a split group as the eBPF program starts with them (the BMv2 control plane
/// starts its registers from the same values), checked.
pub fn split_registers(s: &mpsched_core::switch::SplitGroupConfig) -> Result<layout::Split, DataplaneError> {
    let n = s.ports.len();
    if n == 0 || n > layout::MAX_PATHS {
        return Err(DataplaneError::Config(format!("group {}: 1 to 8 paths", s.group)));
    }
    let mut v = layout::Split {
        src_ip: s.src_ip,
        dst_ip: s.dst_ip,
        group: s.group,
        n_paths: n as u8,
        ..Default::default()
    };
    v.ports[..n].copy_from_slice(&s.ports);
    for &p in &s.feedback_ports {
        if usize::from(p) >= layout::MAX_PORTS {
            return Err(DataplaneError::Config(format!(
                "group {}: feedback port {p} is beyond the eBPF program's {} ports",
                s.group,
                layout::MAX_PORTS
            )));
        }
        v.feedback_ports |= 1 << p;
    }
    // Build the Rust scheduler to validate the configuration and take its initial registers.
    let sched = mpsched_core::sched::Scheduler::new(&s.scheduler, n, Box::new(mpsched_core::rng::SeededRandom::new(0)))
        .map_err(|e| DataplaneError::Config(format!("group {}: {e}", s.group)))?;
    match (&s.scheduler, &sched) {
        (SchedulerConfig::Single { path }, _) => {
            v.sched = layout::h::SCHED_SINGLE as u8;
            v.cursor = *path;
        }
        (SchedulerConfig::Rs { .. }, mpsched_core::sched::Scheduler::Rs(rs)) => {
            v.sched = layout::h::SCHED_RS as u8;
            let rs: &RandomSplit = rs;
            for (i, (lo, hi)) in rs.ranges().iter().enumerate() {
                v.rs_lo[i] = *lo;
                v.rs_hi[i] = *hi;
            }
        }
        (SchedulerConfig::Wrr { weights }, _) => {
            v.sched = layout::h::SCHED_WRR as u8;
            v.weights[..n].copy_from_slice(weights);
            v.remaining = v.weights;
        }
        (SchedulerConfig::Dwrr { .. }, mpsched_core::sched::Scheduler::Dwrr(d)) => {
            v.sched = layout::h::SCHED_DWRR as u8;
            v.weights[..n].copy_from_slice(d.weights());
            v.remaining = v.weights;
            let p = d.params();
            v.groups = p.groups;
            v.groups_left = p.groups;
            v.min_weight = p.min_weight;
            v.max_step = p.max_step;
            v.avoidance_drop_pkts = p.avoidance_drop_pkts;
        }
        (SchedulerConfig::Ecmp, _) => {
            return Err(DataplaneError::Config(format!(
                "group {}: ECMP is not implemented in the eBPF data plane (RS, WRR, DWRR and single are)",
                s.group
            )))
        }
        _ => unreachable!("Scheduler::new follows the configuration"),
    }
    Ok(v)
}
