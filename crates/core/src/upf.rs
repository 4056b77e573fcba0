//! The control plane's UE table of an ATSSS UPF (`SwitchConfig::upf`): which user equipments
//! (UEs) the UPF tunnels downlink traffic to, by which paths, and the UPF's session epoch.
//!
//! A UPF (`mpsched_programs::atsss::upf`) finds a downlink packet's UE by its destination (the
//! UE's own, inner, address), picks one of the UE's paths with the UE's scheduler, and sends the
//! packet encapsulated to the UE's address on that path, by the UDP port the UE listens on
//! there, out of the UPF's port towards it. An acknowledgement from a UE names its UE and path
//! by its outer source address: so every path address is one UE's and one path's.
//!
//! The table is bounded ([`MAX_UES`] UEs, [`MAX_UE_PATHS`] paths each) and checked by
//! [`UpfTable::check`] before any data plane is built from it.

use crate::packet::{ipv4_to_string, Ipv4, PortId};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Most UEs one UPF holds: the eBPF maps and P4 registers are sized by it.
pub const MAX_UES: usize = 65_536;
/// Most paths a UE has (`registers::MAX_PATHS` of the ATSSS schedulers).
pub const MAX_UE_PATHS: usize = 4;
/// Highest RTTMon weight (its 6-bit register stops at 62).
pub const RTTMON_MAX_WEIGHT: u8 = 62;

/// The scheduler (steering mode) of one UE, numbered as the ATSSS registers number them
/// (`mpsched_programs::atsss::registers::Kind`); named as the tunnel schedulers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u8)]
pub enum SteeringKind {
    /// Static weighted round robin: a draw against the 8-bit weight.
    Wrr = 0,
    /// WRR whose weight moves with the preferred path's acknowledgements.
    Dwrr = 1,
    /// RTT monitoring: the weight (0 to 62) steps once per target RTT.
    #[serde(rename = "rttmon")]
    RttMon = 2,
    /// Congestion monitoring (window, RTT target, probing, outage detection).
    #[serde(rename = "cmon")]
    CMon = 3,
    /// 3GPP Active-Standby.
    ActiveStandby = 4,
    /// 3GPP Smallest Delay.
    SmallestDelay = 5,
    /// 3GPP Load-Balancing with a fixed share (the weight, out of 255).
    LoadBalancing = 6,
    /// 3GPP Priority-based.
    Priority = 7,
}

impl SteeringKind {
    /// Every kind, in register order.
    pub const ALL: [SteeringKind; 8] = [
        SteeringKind::Wrr,
        SteeringKind::Dwrr,
        SteeringKind::RttMon,
        SteeringKind::CMon,
        SteeringKind::ActiveStandby,
        SteeringKind::SmallestDelay,
        SteeringKind::LoadBalancing,
        SteeringKind::Priority,
    ];

    /// Its name in scenarios and vector files (the tunnel scheduler's).
    pub fn name(self) -> &'static str {
        match self {
            SteeringKind::Wrr => "wrr",
            SteeringKind::Dwrr => "dwrr",
            SteeringKind::RttMon => "rttmon",
            SteeringKind::CMon => "cmon",
            SteeringKind::ActiveStandby => "active-standby",
            SteeringKind::SmallestDelay => "smallest-delay",
            SteeringKind::LoadBalancing => "load-balancing",
            SteeringKind::Priority => "priority",
        }
    }

    /// The largest initial weight the kind takes (RTTMon's register holds 62; the weighted
    /// kinds' 255; the others ignore it).
    pub fn max_weight(self) -> u8 {
        match self {
            SteeringKind::RttMon => RTTMON_MAX_WEIGHT,
            _ => u8::MAX,
        }
    }
}

/// One path of a UE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UePath {
    /// The UE's address on this path (the outer destination of downlink packets, the outer
    /// source of its acknowledgements).
    pub addr: Ipv4,
    /// The UDP port the UE listens on there (the outer destination port).
    pub port: u16,
    /// The UPF's port towards it.
    pub egress_port: PortId,
}

/// One UE: its own address, scheduler, initial weight and paths (path 0 the preferred).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UeEntry {
    /// The UE's own (inner) address: downlink packets to it are tunnelled.
    pub ip: Ipv4,
    /// Its scheduler.
    pub kind: SteeringKind,
    /// The preferred path's initial weight (WRR, DWRR, Load-Balancing out of 255, RTTMon out
    /// of 62; ignored by the others).
    #[serde(default)]
    pub weight: u8,
    /// Its paths, 1 to [`MAX_UE_PATHS`], in preference order.
    pub paths: Vec<UePath>,
}

/// The UE table of a UPF: its epoch and its UEs (a UE's index here is its register row).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UpfTable {
    /// The UPF's session epoch, written into every frame it sends (the tunnel daemon's layout:
    /// `crates/tunnel/src/seal.rs`).
    #[serde(default)]
    pub epoch: u64,
    /// The UEs.
    #[serde(default)]
    pub ues: Vec<UeEntry>,
}

impl UpfTable {
    /// Whether the table holds nothing (no UEs, epoch 0): a node that is no UPF.
    pub fn is_empty(&self) -> bool {
        self.ues.is_empty() && self.epoch == 0
    }

    /// Refuse a table a UPF at `own_ip` with `n_ports` ports cannot hold: more than
    /// [`MAX_UES`] UEs, a UE without paths or with more than [`MAX_UE_PATHS`], an address used
    /// twice (two UEs, two paths, or a path and a UE), the UPF's own address, address 0, UDP
    /// port 0, an egress port the node lacks, an RTTMon weight above 62.
    pub fn check(&self, own_ip: Ipv4, n_ports: usize) -> Result<(), String> {
        if self.ues.len() > MAX_UES {
            return Err(format!(
                "{} UEs; a UPF holds at most {MAX_UES} (its registers and tables are sized by it)",
                self.ues.len()
            ));
        }
        let mut seen: HashSet<Ipv4> = HashSet::with_capacity(self.ues.len() * 3);
        let mut claim = |addr: Ipv4, what: &dyn Fn() -> String| -> Result<(), String> {
            if addr == 0 || addr == own_ip {
                return Err(format!(
                    "{}: address {} is {}",
                    what(),
                    ipv4_to_string(addr),
                    if addr == 0 { "unset" } else { "the UPF's own" }
                ));
            }
            if !seen.insert(addr) {
                return Err(format!(
                    "{}: address {} is used twice in the UE table (every UE and every path needs its own)",
                    what(),
                    ipv4_to_string(addr)
                ));
            }
            Ok(())
        };
        for (i, ue) in self.ues.iter().enumerate() {
            claim(ue.ip, &|| format!("UE {i}"))?;
            if ue.paths.is_empty() || ue.paths.len() > MAX_UE_PATHS {
                return Err(format!(
                    "UE {i} ({}): {} paths; 1 to {MAX_UE_PATHS}",
                    ipv4_to_string(ue.ip),
                    ue.paths.len()
                ));
            }
            if ue.weight > ue.kind.max_weight() {
                return Err(format!(
                    "UE {i} ({}): weight {} above {}'s {}",
                    ipv4_to_string(ue.ip),
                    ue.weight,
                    ue.kind.name(),
                    ue.kind.max_weight()
                ));
            }
            for (j, p) in ue.paths.iter().enumerate() {
                claim(p.addr, &|| format!("UE {i} path {j}"))?;
                if p.port == 0 {
                    return Err(format!("UE {i} path {j}: UDP port 0"));
                }
                if usize::from(p.egress_port) >= n_ports {
                    return Err(format!(
                        "UE {i} path {j}: egress port {} on a node of {n_ports} ports",
                        p.egress_port
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ue(ip: Ipv4, addrs: &[Ipv4]) -> UeEntry {
        UeEntry {
            ip,
            kind: SteeringKind::Wrr,
            weight: 128,
            paths: addrs
                .iter()
                .map(|&addr| UePath {
                    addr,
                    port: 5000,
                    egress_port: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn a_good_table_passes_and_each_fault_is_named() {
        let own = 0x0aff_0001;
        let mut t = UpfTable {
            epoch: 7,
            ues: vec![
                ue(0x0a00_0001, &[0x6440_0001, 0x6440_0002]),
                ue(0x0a00_0002, &[0x6440_0003]),
            ],
        };
        t.check(own, 2).unwrap();
        let mut dup = t.clone();
        dup.ues[1].paths[0].addr = 0x6440_0002;
        assert!(dup.check(own, 2).unwrap_err().contains("used twice"));
        let mut dup = t.clone();
        dup.ues[1].paths[0].addr = 0x0a00_0001;
        assert!(dup.check(own, 2).unwrap_err().contains("used twice"));
        let mut bad = t.clone();
        bad.ues[0].paths.clear();
        assert!(bad.check(own, 2).unwrap_err().contains("0 paths"));
        let mut bad = t.clone();
        bad.ues[0].paths[1].egress_port = 2;
        assert!(bad.check(own, 2).unwrap_err().contains("egress port 2"));
        let mut bad = t.clone();
        bad.ues[0].kind = SteeringKind::RttMon;
        assert!(bad.check(own, 2).unwrap_err().contains("above rttmon's 62"));
        let mut bad = t.clone();
        bad.ues[1].ip = own;
        assert!(bad.check(own, 2).unwrap_err().contains("the UPF's own"));
        t.ues[0].paths[0].port = 0;
        assert!(t.check(own, 2).unwrap_err().contains("UDP port 0"));
    }

    #[test]
    fn more_than_the_bound_is_refused_before_anything_else() {
        let t = UpfTable {
            epoch: 0,
            ues: vec![ue(1, &[]); MAX_UES + 1],
        };
        assert!(t.check(9, 1).unwrap_err().contains("at most 65536"));
    }

    #[test]
    fn kinds_read_by_their_tunnel_scheduler_names() {
        let names: Vec<String> = SteeringKind::ALL
            .iter()
            .map(|k| serde_json::to_string(k).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "\"wrr\"",
                "\"dwrr\"",
                "\"rttmon\"",
                "\"cmon\"",
                "\"active-standby\"",
                "\"smallest-delay\"",
                "\"load-balancing\"",
                "\"priority\""
            ]
        );
        for (i, k) in SteeringKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
            assert_eq!(names[i], format!("\"{}\"", k.name()));
        }
    }
}
