//! The data plane of a switch node on the kernel backend, behind one trait: the eBPF programs
//! attached to the node's interfaces ([`EbpfPlanes`], the default), or another implementation
//! of the same switch that runs on the same interfaces (the `mpsched-bmv2` crate's
//! `simple_switch`). The backend builds namespaces, links, hosts and traffic the same way for
//! each; only the switches differ.

use crate::backend::NetnsError;
use crate::dataplane::{Dataplane, NodeTables};
use crate::ns::Netns;
use mpsched_core::control::{self, ControlError, ControlListing, RegisterInfo, TableInfo};
use mpsched_core::packet::PortId;
use mpsched_core::switch::{FORWARD_ACTION, ROUTES_TABLE};
use std::collections::BTreeMap;

/// One switch's running data plane. Dropping it stops it (the namespace is deleted after).
pub trait SwitchPlane {
    /// The weights of each WRR or DWRR splitting group, by group id.
    fn weights(&self) -> Vec<(u8, Vec<u16>)>;
    /// The backlog of the virtual-queue marker of `port`, in bytes, if it has one.
    fn marker_backlog_bytes(&self, port: PortId) -> Option<u64>;
    /// Every register and counter, named as `FrameSwitch::snapshot` names them.
    fn snapshot(&self) -> Option<BTreeMap<String, u64>>;

    /// The control channel ([`mpsched_core::control`]): the registers this switch exposes
    /// (its snapshot, read as [`control::register_of`] names them) and its tables.
    fn control_listing(&self) -> ControlListing {
        let mut registers: Vec<RegisterInfo> = Vec::new();
        for name in self.snapshot().unwrap_or_default().keys() {
            let (base, i) = control::register_of(name);
            match registers.iter_mut().find(|r| r.name == base) {
                Some(r) => r.size = r.size.max(i + 1),
                None => registers.push(RegisterInfo {
                    name: base.to_string(),
                    size: i + 1,
                    writable: false,
                }),
            }
        }
        ControlListing {
            registers,
            tables: Vec::new(),
        }
    }

    /// Entry `index` of register `name`, read from the running data plane.
    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let snap = self
            .snapshot()
            .ok_or_else(|| ControlError::Unsupported(format!("register `{name}`: the switch cannot be read")))?;
        control::snapshot_register(&snap, name, index)
    }

    /// Write entry `index` of register `name` in the running data plane.
    fn write_register(&mut self, name: &str, _index: usize, _value: u64) -> Result<(), ControlError> {
        Err(ControlError::Unsupported(format!(
            "register `{name}`: this switch takes no writes"
        )))
    }

    /// Insert or replace a table entry in the running data plane (P4Runtime's shape).
    fn table_write(&mut self, table: &str, _key: &[u64], _action: &str, _params: &[u64]) -> Result<(), ControlError> {
        Err(ControlError::Unsupported(format!(
            "table `{table}`: this switch takes no writes"
        )))
    }

    /// Delete a table entry in the running data plane.
    fn table_delete(&mut self, table: &str, _key: &[u64]) -> Result<(), ControlError> {
        Err(ControlError::Unsupported(format!(
            "table `{table}`: this switch takes no writes"
        )))
    }
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
    /// Start `tables` on the switch in `ns`, whose port p is interface `e<p>` (its ifindex in
    /// `tables.ports[p]`). Markers run on the ports `tables.markers` name.
    fn start(&self, ns: &Netns, tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError>;
}

/// The eBPF programs of `bpf/mpsched.bpf.c`, attached at TC ingress of every port and at TC
/// egress of the marking ones.
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
        let dp = ns.enter(|| -> Result<Dataplane, NetnsError> {
            let mut dp = Dataplane::load(tables)?;
            for (p, b) in tables.ports.iter().enumerate() {
                dp.attach(b.ifindex, tables.markers.iter().any(|m| usize::from(m.port) == p))?;
            }
            Ok(dp)
        })??;
        Ok(Box::new(dp))
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

    /// The snapshot's registers (WRR weights writable, as in the Rust twin) and the routes
    /// table (`routes`: key `[dst_ip]`, action `forward` with `[port]`).
    fn control_listing(&self) -> ControlListing {
        let mut listing = ControlListing::default();
        let snap = Dataplane::snapshot(self).unwrap_or_default();
        for name in snap.keys() {
            let (base, i) = control::register_of(name);
            match listing.registers.iter_mut().find(|r| r.name == base) {
                Some(r) => r.size = r.size.max(i + 1),
                None => listing.registers.push(RegisterInfo {
                    name: base.to_string(),
                    size: i + 1,
                    // Only WRR groups name `remaining` beside `weight` without `adjust`.
                    writable: base.ends_with(".weight")
                        && !snap.contains_key(&format!("{}.adjust0", base.trim_end_matches(".weight"))),
                }),
            }
        }
        listing.tables.push(TableInfo {
            name: ROUTES_TABLE.to_string(),
            key_fields: vec!["dst_ip".to_string()],
            actions: vec![(FORWARD_ACTION.to_string(), vec!["port".to_string()])],
        });
        listing
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        let group = name
            .strip_prefix("split")
            .and_then(|r| r.strip_suffix(".weight"))
            .and_then(|g| g.parse::<u8>().ok());
        let Some(group) = group else {
            SwitchPlane::read_register(self, name, index)?;
            return Err(ControlError::ReadOnly(name.to_string()));
        };
        let weight = u16::try_from(value).map_err(|_| ControlError::BadEntry {
            table: name.to_string(),
            reason: format!("weight {value} does not fit 16 bits"),
        })?;
        self.set_wrr_weight(group, index, weight)
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        let dst = route_key(table, key)?;
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
        self.set_host_route(dst, Some(port))
            .map(|_| ())
            .map_err(|e| ControlError::Unsupported(e.to_string()))
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        let dst = route_key(table, key)?;
        match self.set_host_route(dst, None) {
            Ok(true) => Ok(()),
            Ok(false) => Err(ControlError::NoEntry {
                table: table.to_string(),
                key: key.to_vec(),
            }),
            Err(e) => Err(ControlError::Unsupported(e.to_string())),
        }
    }
}

/// The destination of a routes-table key.
fn route_key(table: &str, key: &[u64]) -> Result<u32, ControlError> {
    if table != ROUTES_TABLE {
        return Err(ControlError::NoTable(table.to_string()));
    }
    match key {
        [k] => u32::try_from(*k).map_err(|_| ControlError::BadEntry {
            table: table.to_string(),
            reason: format!("key {k} is not an IPv4 address"),
        }),
        _ => Err(ControlError::BadEntry {
            table: table.to_string(),
            reason: format!("one key field (dst_ip), got {}", key.len()),
        }),
    }
}
