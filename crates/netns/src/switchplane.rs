//! The data plane of a switch node on the kernel backend, behind one trait: the eBPF programs
//! attached to the node's interfaces ([`EbpfPlanes`], the default), or another implementation
//! of the same switch that runs on the same interfaces (the `mpsched-bmv2` crate's
//! `simple_switch`). The backend builds namespaces, links, hosts and traffic the same way for
//! each; only the switches differ.

use crate::backend::NetnsError;
use crate::dataplane::{Dataplane, DataplaneError, NodeTables};
use crate::ns::Netns;
use mpsched_core::control::{self, ControlError, ControlListing, ProgramControl, TableInfo};
use mpsched_core::packet::PortId;
use mpsched_core::switch::{FORWARD_ACTION, ROUTES_TABLE};
use mpsched_programs::SwitchProgram;
use mpsched_topo::QueueDiscipline;
use std::collections::BTreeMap;

/// One switch's running data plane. Dropping it stops it (the namespace is deleted after). Its
/// [`ProgramControl`] side is the control channel into it ([`snapshot_control`] reads its
/// registers from [`SwitchPlane::snapshot`]).
pub trait SwitchPlane: ProgramControl {
    /// The weights of each WRR or DWRR splitting group, by group id.
    fn weights(&self) -> Vec<(u8, Vec<u16>)>;
    /// The backlog of the virtual-queue marker of `port`, in bytes, if it has one.
    fn marker_backlog_bytes(&self, port: PortId) -> Option<u64>;
    /// Every register and counter, named as `FrameSwitch::snapshot` names them.
    fn snapshot(&self) -> Option<BTreeMap<String, u64>>;
    /// A new capacity (packets) for queue `queue` of `port`, where the switch serves that
    /// port's queues itself ([`QueuesServedBy::Switch`]); None where it does not (the kernel's
    /// qdiscs do).
    fn set_queue_depth(&mut self, _port: PortId, _queue: u8, _pkts: u32) -> Option<Result<(), ControlError>> {
        None
    }
    /// Attach the stage that sees packets leave this switch's queues at the far end of each
    /// of its links ([`NodeTables::far_ends`]), once every switch of the run has started; a
    /// switch without one has nothing to do.
    fn attach_departures(&mut self) -> Result<(), NetnsError> {
        Ok(())
    }
    /// Packets waiting at `port` as the switch's program counts them, and the most since the
    /// last call (which starts the next interval), for the time series'
    /// `<link>_queue_pkts` / `<link>_queue_max_pkts`; None where the program does not count
    /// its queues.
    fn queue_pkts(&self, _port: PortId) -> Option<(u64, u64)> {
        None
    }
}

/// Who serves the queues of a switch port that has several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueuesServedBy {
    /// The kernel's qdiscs on the port's interface, after the switch (the eBPF data plane:
    /// `crate::backend::queues`).
    Kernel,
    /// The switch's own traffic manager (BMv2's priority queues); the interface is shaped at
    /// the link's rate with one deep queue, which holds the switch back when the link is busy.
    Switch,
}

/// Makes the data plane of each switch node.
pub trait SwitchPlanes: Send + Sync + std::fmt::Debug {
    /// The backend's name in results (`netns`, `bmv2`).
    fn backend_name(&self) -> &'static str;
    /// What runs the switches, for people (`Linux kernel (netns, eBPF)`).
    fn description(&self) -> &'static str;
    /// The switch implementation alone (`eBPF`, `BMv2`).
    fn switch_name(&self) -> &'static str;
    /// Refuse what this data plane cannot do, before anything is made.
    fn preflight(&self) -> Result<(), NetnsError> {
        Ok(())
    }
    /// Whether frames must leave every interface with their checksums filled in. A switch
    /// outside the kernel (a user-space process reading frames with a packet socket) receives a
    /// TCP segment whose checksum the sending veth left to "hardware", and forwards it so; the
    /// receiver then drops it. Such switches need transmit checksum offload off everywhere.
    fn needs_checksummed_frames(&self) -> bool {
        false
    }
    /// Whether this data plane can run `program` on a switch; if not, why (for a message that
    /// names the node and the backend around it).
    fn supports(&self, program: &dyn SwitchProgram) -> Result<(), String>;
    /// Start `tables` on the switch in `ns`, whose port p is interface `e<p>` (its ifindex in
    /// `tables.ports[p]`). Markers run on the ports `tables.markers` name.
    fn start(&self, ns: &Netns, tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError>;
    /// Who serves the queues of a switch port of several queues under `discipline`, or why
    /// this data plane refuses such a port (for a message that names the link).
    fn port_queues(&self, _discipline: &QueueDiscipline) -> Result<QueuesServedBy, String> {
        Ok(QueuesServedBy::Kernel)
    }
    /// How the switch serves the ports whose queues it serves, for the run's note and its
    /// `link_model` (None: it serves none).
    fn own_queues_description(&self) -> Option<String> {
        None
    }
}

/// The eBPF object of each switch's program ([`crate::programs`]): `bpf/mpsched.bpf.c`
/// attached at TC ingress of every port and at TC egress of the marking ones, or a program's
/// own (`letflow.bpf.o` at TC ingress).
#[derive(Debug, Default)]
pub struct EbpfPlanes;

impl SwitchPlanes for EbpfPlanes {
    fn backend_name(&self) -> &'static str {
        "netns"
    }

    fn description(&self) -> &'static str {
        "Linux kernel (netns, eBPF)"
    }

    fn switch_name(&self) -> &'static str {
        "eBPF"
    }

    fn start(&self, ns: &Netns, tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
        let program = tables.switch_program().map_err(NetnsError::Unsupported)?;
        let kernel = crate::programs::kernel_program(program).map_err(NetnsError::Unsupported)?;
        ns.enter(|| (kernel.start)(tables))?
    }

    fn supports(&self, program: &dyn SwitchProgram) -> Result<(), String> {
        crate::programs::kernel_program(program).map(|_| ())
    }
}

impl ProgramControl for Dataplane {
    /// The snapshot's registers (WRR weights writable, as in the Rust twin) and the routes
    /// table (`routes`: key `[dst_ip]`, action `forward` with `[port]`).
    fn control_listing(&self) -> ControlListing {
        let snap = Dataplane::snapshot(self).unwrap_or_default();
        // Only DWRR groups name `adjust` beside `weight`: WRR's weights are writable.
        let writable = |base: &str| {
            base.ends_with(".weight") && !snap.contains_key(&format!("{}.adjust0", base.trim_end_matches(".weight")))
        };
        let mut listing = ControlListing {
            registers: control::snapshot_listing(&snap, writable),
            tables: Vec::new(),
        };
        listing.tables.push(routes_table_info());
        listing
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        let group = name
            .strip_prefix("split")
            .and_then(|r| r.strip_suffix(".weight"))
            .and_then(|g| g.parse::<u8>().ok());
        let Some(group) = group else {
            ProgramControl::read_register(self, name, index)?;
            return Err(ControlError::ReadOnly(name.to_string()));
        };
        let weight = u16::try_from(value).map_err(|_| ControlError::BadEntry {
            table: name.to_string(),
            reason: format!("weight {value} does not fit 16 bits"),
        })?;
        self.set_wrr_weight(group, index, weight)
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        routes_table_write(table, key, action, params, |dst, port| self.set_host_route(dst, port))
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        routes_table_delete(table, key, |dst| self.set_host_route(dst, None))
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        snapshot_register_of(self, name, index)
    }
}

impl SwitchPlane for Dataplane {
    fn weights(&self) -> Vec<(u8, Vec<u16>)> {
        Dataplane::weights(self).unwrap_or_default()
    }

    fn marker_backlog_bytes(&self, port: PortId) -> Option<u64> {
        self.marker(port)
            .ok()
            .map(|m| m.backlog_scaled / mpsched_core::marker::VQ_SCALE_PER_BYTE)
    }

    fn snapshot(&self) -> Option<BTreeMap<String, u64>> {
        Dataplane::snapshot(self).ok()
    }
}

/// Register `name`'s entry `index`, read from a switch's snapshot as [`control::register_of`]
/// names it: how every kernel and BMv2 switch answers register reads.
pub fn snapshot_register_of(plane: &dyn SwitchPlane, name: &str, index: usize) -> Result<u64, ControlError> {
    let snap = plane
        .snapshot()
        .ok_or_else(|| ControlError::Unsupported(format!("register `{name}`: the switch cannot be read")))?;
    control::snapshot_register(&snap, name, index)
}

/// A switch's registers listed from its snapshot, none writable.
pub fn snapshot_control(plane: &dyn SwitchPlane) -> ControlListing {
    ControlListing {
        registers: control::snapshot_listing(&plane.snapshot().unwrap_or_default(), |_| false),
        tables: Vec::new(),
    }
}

/// The routes table as the kernel's programs offer it on the control channel (`routes`: key
/// `[dst_ip]`, action `forward` with `[port]`), writing their shared `routes` map.
pub fn routes_table_info() -> TableInfo {
    TableInfo {
        name: ROUTES_TABLE.to_string(),
        key_fields: vec!["dst_ip".to_string()],
        actions: vec![(FORWARD_ACTION.to_string(), vec!["port".to_string()])],
    }
}

/// A write into the routes table: the entry checked, then `set(dst, Some(port))`.
pub fn routes_table_write(
    table: &str,
    key: &[u64],
    action: &str,
    params: &[u64],
    set: impl FnOnce(u32, Option<PortId>) -> Result<bool, DataplaneError>,
) -> Result<(), ControlError> {
    let dst = mpsched_core::switch::route_key(table, key)?;
    if action != FORWARD_ACTION {
        return Err(ControlError::NoAction {
            table: table.to_string(),
            action: action.to_string(),
        });
    }
    let port = match params {
        [p] => PortId::try_from(*p)
            .ok()
            .filter(|&p| usize::from(p) < crate::layout::MAX_PORTS),
        _ => None,
    }
    .ok_or_else(|| ControlError::BadEntry {
        table: table.to_string(),
        reason: format!(
            "`{FORWARD_ACTION}` takes one port below {}, got {params:?}",
            crate::layout::MAX_PORTS
        ),
    })?;
    set(dst, Some(port))
        .map(|_| ())
        .map_err(|e| ControlError::Unsupported(e.to_string()))
}

/// A delete from the routes table: `remove(dst)`, which says whether there was a route.
pub fn routes_table_delete(
    table: &str,
    key: &[u64],
    remove: impl FnOnce(u32) -> Result<bool, DataplaneError>,
) -> Result<(), ControlError> {
    let dst = mpsched_core::switch::route_key(table, key)?;
    match remove(dst) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ControlError::NoEntry {
            table: table.to_string(),
            key: key.to_vec(),
        }),
        Err(e) => Err(ControlError::Unsupported(e.to_string())),
    }
}
