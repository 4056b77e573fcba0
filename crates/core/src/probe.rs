//! What a probe-driven load balancer (HULA, MP-HULA) is told about its node by the control
//! plane: its ToR id, each port's direction in the tree and rate, and which ToR each host
//! address sits under. See `crates/programs/src/hula/README.md`.

use crate::packet::Ipv4;
use serde::{Deserialize, Serialize};

/// UDP port (source and destination) of probe frames.
pub const HULA_PROBE_PORT: u16 = 50010;

/// Wire bytes of a probe frame (Ethernet, probe shim, IPv4, UDP, 10 bytes of padding; no FCS).
pub const PROBE_FRAME_BYTES: u32 = 64;

/// A port's direction in a multi-rooted tree, from the levels of the nodes it joins (hosts are
/// level 0, a switch is one above its lowest neighbour).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortDir {
    /// To a host.
    Host,
    /// To a switch of a lower level.
    Down,
    /// To a switch of a higher level.
    Up,
    /// To a switch of the same level: probes never cross it.
    None,
}

/// One port as a probe-driven program sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProbePort {
    /// Its direction.
    pub dir: PortDir,
    /// Its link's rate, bit/s.
    pub rate_bps: u64,
}

/// Hosts under one prefix sit under ToR `tor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DestTor {
    /// Prefix (host order).
    pub prefix: Ipv4,
    /// Prefix length.
    pub len: u8,
    /// The ToR's id.
    pub tor: u16,
}

/// A probe-driven program's view of its node.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeConfig {
    /// This switch's ToR id when it has host ports (it originates probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tor_id: Option<u16>,
    /// How many ToRs the network has (ids `0..n_tors`).
    pub n_tors: u16,
    /// Per port, in port order.
    pub ports: Vec<ProbePort>,
    /// Which ToR each destination sits under.
    pub dest_tors: Vec<DestTor>,
}

impl ProbeConfig {
    /// The ToR `ip` sits under (longest prefix; None when no entry covers it).
    pub fn dest_tor(&self, ip: Ipv4) -> Option<u16> {
        self.dest_tors
            .iter()
            .filter(|d| {
                d.len == 0 || (ip >> (32 - u32::from(d.len).min(32))) == (d.prefix >> (32 - u32::from(d.len).min(32)))
            })
            .max_by_key(|d| d.len)
            .map(|d| d.tor)
    }
}
