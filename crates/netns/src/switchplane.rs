//! The data plane of a switch node on the kernel backend, behind one trait: the eBPF programs
//! attached to the node's interfaces ([`EbpfPlanes`], the default), or another implementation
//! of the same switch that runs on the same interfaces (the `mpsched-bmv2` crate's
//! `simple_switch`). The backend builds namespaces, links, hosts and traffic the same way for
//! each; only the switches differ.

use crate::backend::NetnsError;
use crate::dataplane::{Dataplane, NodeTables};
use crate::ns::Netns;
use mpsched_core::packet::PortId;
use std::collections::BTreeMap;

/// One switch's running data plane. Dropping it stops it (the namespace is deleted after).
pub trait SwitchPlane {
    /// The weights of each WRR or DWRR splitting group, by group id.
    fn weights(&self) -> Vec<(u8, Vec<u16>)>;
    /// The backlog of the virtual-queue marker of `port`, in bytes, if it has one.
    fn marker_backlog_bytes(&self, port: PortId) -> Option<u64>;
    /// Every register and counter, named as `FrameSwitch::snapshot` names them.
    fn snapshot(&self) -> Option<BTreeMap<String, u64>>;
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
}
