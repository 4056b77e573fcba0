//! LetFlow on the kernel: load `letflow.bpf.o` (crates/programs/src/letflow/letflow.bpf.c),
//! size its flowlet table and fill its maps from a node's [`SwitchConfig`] and LetFlow's
//! parameters, attach it at TC ingress of every port, and read its counters back under the
//! names the Rust twin's vector runner gives them (`counter.letflow.new_flowlets`, ...).
//!
//! The port bindings, routes, ECMP groups and per-port statistics have `bpf/mpsched.h`'s
//! layouts ([`crate::layout`]); the node record and the counters are `letflow.h`'s
//! ([`LfNode`], [`COUNTERS`]).
//!
//! [`SwitchConfig`]: mpsched_core::switch::SwitchConfig

use crate::backend::NetnsError;
use crate::dataplane::{
    attach_tc, bpf, fill_forwarding, map_of, percpu_sum, set_host_route, update_map, DataplaneError, NodeTables,
};
use crate::layout::{self, Pod};
use crate::switchplane::{
    routes_table_delete, routes_table_info, routes_table_write, snapshot_control, snapshot_register_of, SwitchPlane,
};
use crate::vectors::{check_ipv4_checksum, delta_of, observed, port_of_mac, shot, test_run_prog, TestNode};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, ProgramMut, TcHook, TC_INGRESS};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl};
use mpsched_core::packet::PortId;
use mpsched_core::vectors::{chosen_path, from_hex, Hook, StepResult, VectorSet};
use mpsched_core::wire::parse_frame;
use std::collections::BTreeMap;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/letflow.bpf.o"));

/// The ingress program's name in the object.
pub const INGRESS: &str = "lf_ingress";

/// `LF_MAX_TABLE_ENTRIES`: the flowlet table's largest size (slots).
pub const MAX_TABLE_ENTRIES: u64 = 1 << 20;
/// `LF_TEST_DRAWS`: fixed draws the test map holds.
pub const TEST_DRAWS: u32 = 64;
/// `LF_F_TEST_CLOCK`: ingress time is `test_clock_ns`.
pub const F_TEST_CLOCK: u32 = 1;
/// `LF_F_TEST_DRAWS`: new flowlets draw from the `test_draws` map.
pub const F_TEST_DRAWS: u32 = 2;

/// `enum lf_counter` in letflow.h, in order, named as the Rust runner names the registers.
pub const COUNTERS: [&str; 9] = [
    "counter.letflow.new_flowlets",
    "counter.letflow.continued",
    "counter.letflow.collisions",
    "counter.no_route",
    "counter.ttl_expired",
    "counter.local",
    "counter.not_ipv4",
    "counter.malformed",
    "counter.redirect_failed",
];

/// `struct lf_node` (`LF_SIZEOF_NODE`, 40 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LfNode {
    /// The node's own address.
    pub own_ip: u32,
    /// `LF_F_*`.
    pub flags: u32,
    /// The switch's ECMP hash seed.
    pub hash_seed: u32,
    /// `table_entries - 1`.
    pub table_mask: u32,
    /// The flowlet gap in nanoseconds.
    pub gap_ns: u64,
    /// The clock under [`F_TEST_CLOCK`].
    pub test_clock_ns: u64,
    /// How many fixed draws the `test_draws` map holds.
    pub test_draws_n: u32,
    /// Padding.
    pub pad: u32,
}

const _: () = assert!(std::mem::size_of::<LfNode>() == 40);
// SAFETY: repr(C), integers only, no implicit padding (pinned to letflow.h's size above).
unsafe impl Pod for LfNode {}

/// One node's LetFlow program, loaded and filled.
pub struct LetflowPlane {
    obj: Object,
    n_ports: usize,
    hooks: Vec<TcHook>,
}

impl LetflowPlane {
    /// Load the object with its flowlet table sized to the node's `table_entries` (this runs
    /// the verifier) and fill its maps.
    pub fn load(t: &NodeTables) -> Result<LetflowPlane, DataplaneError> {
        let entries = t.params.get("table_entries");
        if !entries.is_power_of_two() || entries > MAX_TABLE_ENTRIES {
            return Err(DataplaneError::Config(format!(
                "letflow: table_entries {entries} is not a power of two up to {MAX_TABLE_ENTRIES}"
            )));
        }
        let mut open = bpf(
            || "open letflow.bpf.o".into(),
            ObjectBuilder::default().open_memory(OBJECT),
        )?;
        for mut m in open.maps_mut() {
            if m.name() == "flowlets" {
                bpf(|| "size the flowlet table".into(), m.set_max_entries(entries as u32))?;
            }
        }
        let obj = bpf(|| "load letflow.bpf.o (verifier)".into(), open.load())?;
        let plane = LetflowPlane {
            obj,
            n_ports: t.ports.len(),
            hooks: Vec::new(),
        };
        plane.configure(t, entries as u32)?;
        Ok(plane)
    }

    fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>, DataplaneError> {
        map_of(&self.obj, name)
    }

    fn update<K: Pod, V: Pod>(&self, map: &str, key: &K, value: &V) -> Result<(), DataplaneError> {
        update_map(&self.obj, map, key, value)
    }

    fn percpu_sum<V: Pod>(&self, map: &str, key: u32, add: impl Fn(&mut V, V)) -> Result<V, DataplaneError> {
        percpu_sum(&self.obj, map, key, add)
    }

    fn node(&self) -> Result<LfNode, DataplaneError> {
        let m = self.map("node")?;
        let v = bpf(|| "read map node".into(), m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY))?;
        Ok(v.map(|b| LfNode::from_bytes(&b)).unwrap_or_default())
    }

    /// Fill the node record, ports, routes, ECMP groups and test draws from `t`.
    fn configure(&self, t: &NodeTables, entries: u32) -> Result<(), DataplaneError> {
        let cfg = &t.switch;
        if t.ports.len() > layout::MAX_PORTS {
            return Err(DataplaneError::Config(format!(
                "{} ports; the eBPF program has {}",
                t.ports.len(),
                layout::MAX_PORTS
            )));
        }
        if t.test_draws.len() > TEST_DRAWS as usize {
            return Err(DataplaneError::Config("too many test draws".into()));
        }
        if !t.markers.is_empty() {
            return Err(DataplaneError::Config(
                "letflow has no ECN marker on the kernel (its eBPF program runs at ingress only)".into(),
            ));
        }
        let mut flags = 0;
        if t.test_clock {
            flags |= F_TEST_CLOCK;
        }
        if !t.test_draws.is_empty() {
            flags |= F_TEST_DRAWS;
        }
        let node = LfNode {
            own_ip: cfg.own_ip,
            flags,
            hash_seed: cfg.hash_seed,
            table_mask: entries - 1,
            gap_ns: t.params.get("flowlet_gap") / 1000,
            test_clock_ns: 0,
            test_draws_n: t.test_draws.len() as u32,
            pad: 0,
        };
        self.update("node", &0u32, &node)?;
        for (i, d) in t.test_draws.iter().enumerate() {
            self.update("test_draws", &(i as u32), d)?;
        }
        self.update("test_draws", &TEST_DRAWS, &0u32)?;
        fill_forwarding(&self.obj, t)
    }

    /// The ingress program.
    pub fn program(&self) -> Result<ProgramMut<'_>, DataplaneError> {
        self.obj
            .progs_mut()
            .find(|p| p.name() == INGRESS)
            .ok_or_else(|| DataplaneError::Config(format!("program {INGRESS} missing from letflow.bpf.o")))
    }

    /// Set the ingress test clock (with [`NodeTables::test_clock`]).
    pub fn set_test_clock(&self, now_ns: u64) -> Result<(), DataplaneError> {
        let mut n = self.node()?;
        n.test_clock_ns = now_ns;
        self.update("node", &0u32, &n)
    }

    /// Route `dst` (a host route, /32) to `port`, or remove its route (`None`).
    pub fn set_host_route(&self, dst: u32, port: Option<PortId>) -> Result<bool, DataplaneError> {
        set_host_route(&self.obj, dst, port)
    }

    /// The counters (`redirect_failed` only once it moved) and per-port packet counts, named
    /// as the Rust runner names them.
    pub fn snapshot(&self) -> Result<BTreeMap<String, u64>, DataplaneError> {
        let mut out = BTreeMap::new();
        for (i, name) in COUNTERS.iter().enumerate() {
            let v: u64 = self.percpu_sum("counters", i as u32, |t: &mut u64, v| *t += v)?;
            if *name != "counter.redirect_failed" || v != 0 {
                out.insert(name.to_string(), v);
            }
        }
        for p in 0..self.n_ports {
            let st = self.percpu_sum("port_stats", p as u32, |t: &mut layout::PortStats, v| {
                t.rx_pkts += v.rx_pkts;
                t.tx_pkts += v.tx_pkts;
            })?;
            out.insert(format!("port{p}.rx_pkts"), st.rx_pkts);
            out.insert(format!("port{p}.tx_pkts"), st.tx_pkts);
        }
        Ok(out)
    }

    /// Attach the program at TC ingress of `ifindex`, in the calling thread's namespace (as
    /// [`crate::dataplane::Dataplane::attach`]: detached with the interface or by
    /// [`LetflowPlane::detach_all`]).
    pub fn attach(&mut self, ifindex: u32) -> Result<(), DataplaneError> {
        let hooks = attach_tc(&[(TC_INGRESS, self.program()?)], ifindex)?;
        self.hooks.extend(hooks);
        Ok(())
    }

    /// Detach every hook this plane attached (in the current namespace).
    pub fn detach_all(&mut self) {
        for mut h in self.hooks.drain(..) {
            let _ = h.detach();
        }
    }
}

/// [`crate::programs::KernelProgram::start`] for `letflow`.
pub fn start(tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
    let mut plane = LetflowPlane::load(tables)?;
    for b in &tables.ports {
        plane.attach(b.ifindex)?;
    }
    Ok(Box::new(plane))
}

/// Registers read from the snapshot (none writable); the routes table (`routes`: key
/// `[dst_ip]`, action `forward` with `[port]`) writable, as on `mpsched`'s plane.
impl ProgramControl for LetflowPlane {
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

impl SwitchPlane for LetflowPlane {
    fn weights(&self) -> Vec<(u8, Vec<u16>)> {
        Vec::new()
    }

    fn marker_backlog_bytes(&self, _port: PortId) -> Option<u64> {
        None
    }

    fn snapshot(&self) -> Option<BTreeMap<String, u64>> {
        LetflowPlane::snapshot(self).ok()
    }
}

const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;
const TC_ACT_REDIRECT: u32 = 7;

/// [`crate::programs::KernelProgram::vectors`] for `letflow`: each step through
/// `BPF_PROG_TEST_RUN` at its `time_ns` (the test clock), in a namespace of its own with a veth
/// per port; what it did read from the return code, the frame it left (its destination MAC
/// names the port) and the counters (a drop's reason is the counter that moved).
pub fn run_vectors(set: &VectorSet) -> Result<crate::programs::Replay, String> {
    let node = TestNode::create(set.n_ports)?;
    let tables = node.tables(set)?;
    node.enter(|| -> Result<crate::programs::Replay, String> {
        let plane = LetflowPlane::load(&tables).map_err(|e| e.to_string())?;
        replay(set, &plane, &tables)
    })?
}

fn replay(set: &VectorSet, plane: &LetflowPlane, tables: &NodeTables) -> Result<crate::programs::Replay, String> {
    let initial = plane.snapshot().map_err(|e| e.to_string())?;
    let mut prev = initial.clone();
    let mut results = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let at = format!("{} step {i} ({})", set.name, st.note);
        if st.hook != Hook::Ingress || st.delivery != mpsched_core::vectors::Delivery::TestRun {
            return Err(format!(
                "{at}: LetFlow's vectors run at ingress through BPF_PROG_TEST_RUN only"
            ));
        }
        let frame = from_hex(&st.frame).map_err(|e| format!("{at}: {e}"))?;
        let ifindex = tables
            .ports
            .get(usize::from(st.port))
            .map(|p| p.ifindex)
            .ok_or_else(|| format!("{at}: port {} does not exist", st.port))?;
        plane.set_test_clock(st.time_ns).map_err(|e| e.to_string())?;
        let prog = plane.program().map_err(|e| e.to_string())?;
        let (retval, out_frame, _) = test_run_prog(&prog, ifindex, &frame, 1).map_err(|e| format!("{at}: {e}"))?;
        let regs = plane.snapshot().map_err(|e| e.to_string())?;
        let delta = |k: &str| delta_of(&prev, &regs, k);
        let mut obs = observed(chosen_path(&prev, &regs));
        match retval {
            TC_ACT_REDIRECT => {
                check_ipv4_checksum(&out_frame).map_err(|e| format!("{at}: {e}"))?;
                let p = port_of_mac(&out_frame).ok_or_else(|| format!("{at}: output frame to an unknown MAC"))?;
                let own = tables.ports[usize::from(p)].own_mac;
                if out_frame[6..12] != own {
                    return Err(format!("{at}: output frame's source MAC is not port {p}'s"));
                }
                let m = parse_frame(&out_frame, set.config.feedback_port)
                    .map_err(|e| format!("{at}: output frame: {e:?}"))?;
                obs.action = "redirect".into();
                obs.port = Some(p);
                obs.ttl = Some(m.ttl);
                obs.ecn = Some(m.ecn);
            }
            TC_ACT_SHOT => shot(&mut obs, &delta),
            TC_ACT_OK => obs.action = "to_stack".into(),
            r => return Err(format!("{at}: unexpected return code {r}")),
        }
        prev = regs.clone();
        results.push(StepResult {
            observed: obs,
            registers: regs,
        });
    }
    Ok((initial, results))
}
