//! Tunnel schedulers by name: what a `[[tunnel]]`'s `scheduler` names. The tunnel entry
//! (`mpsched-tunnel`) asks its scheduler, per packet, which subtunnel to send by, showing it
//! each subtunnel's state ([`SubtunnelView`](mpsched_core::tunnel::SubtunnelView)).
//!
//! Adding one is its type (in `mpsched_core::tunnel` or a folder here) and one line in
//! [`TUNNEL_SCHEDULERS`].

use crate::atsss;
use crate::params::{Param, ParamKind, Params};
use mpsched_core::tunnel::{Afmt, Bond as BondScheduler, RoundRobin, TunnelScheduler, DEFAULT_FLOW_TABLE_ENTRIES};

/// A tunnel scheduler as the registry knows it.
pub trait TunnelSchedulerProgram: Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;

    /// One line: what it does and where it comes from.
    fn summary(&self) -> &'static str;

    /// Its parameters, given on the `[[tunnel]]` under their names.
    fn params(&self) -> &'static [Param] {
        &[]
    }

    /// Whether it reads the subtunnels' congestion windows and round-trip times, which only
    /// TCP subtunnels have.
    fn needs_tcp_subtunnels(&self) -> bool {
        false
    }

    /// Whether it learns of its paths from the tunnel's own acknowledgements
    /// ([`TunnelScheduler::on_ack`]): the simulator then acknowledges its UDP subtunnels'
    /// datagrams as the daemon does.
    fn needs_path_acks(&self) -> bool {
        false
    }

    /// Whether the receiving end holds each packet until the slowest path in use would have
    /// brought it (`mpsched_tunnel::equalize`): for schedulers that spread one flow over paths
    /// of unequal delay.
    fn equalizes_delay(&self) -> bool {
        false
    }

    /// The scheduler of one tunnel end; `seed` for its random draws.
    fn build(&self, params: &Params, seed: u64) -> Box<dyn TunnelScheduler>;
}

/// Every tunnel scheduler, by name. The one registration line a new scheduler adds is here.
pub static TUNNEL_SCHEDULERS: &[&dyn TunnelSchedulerProgram] = &[
    &BOND,
    &RR,
    &AFMT,
    &atsss::WRR,
    &atsss::DWRR,
    &atsss::RTTMON,
    &atsss::CMON,
    &atsss::ACTIVE_STANDBY,
    &atsss::SMALLEST_DELAY,
    &atsss::LOAD_BALANCING,
    &atsss::PRIORITY,
];

/// The registered tunnel scheduler called `name`.
pub fn tunnel_scheduler(name: &str) -> Option<&'static dyn TunnelSchedulerProgram> {
    TUNNEL_SCHEDULERS.iter().copied().find(|p| p.name() == name)
}

/// The registered names, for messages.
pub fn tunnel_scheduler_names() -> String {
    TUNNEL_SCHEDULERS
        .iter()
        .map(|p| format!("`{}`", p.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Round robin over the subtunnels.
pub struct Rr;

/// The registry entry of round robin.
pub static RR: Rr = Rr;

impl TunnelSchedulerProgram for Rr {
    fn name(&self) -> &'static str {
        "rr"
    }

    fn summary(&self) -> &'static str {
        "round robin over the subtunnels, packet by packet"
    }

    fn build(&self, _params: &Params, _seed: u64) -> Box<dyn TunnelScheduler> {
        Box::new(RoundRobin::default())
    }
}

/// Most entries of AFMT's flow table, about 90 bytes each.
pub const MAX_AFMT_FLOW_TABLE_ENTRIES: u64 = 1 << 22;

const AFMT_PARAMS: &[Param] = &[Param {
    name: "flow_table_entries",
    kind: ParamKind::Count,
    default: DEFAULT_FLOW_TABLE_ENTRIES as u64,
    min: 1,
    max: MAX_AFMT_FLOW_TABLE_ENTRIES,
    power_of_two: false,
    multiple_of: 1,
    doc: "flows AFMT remembers; the least recently used is evicted beyond it",
}];

/// AFMT, the flow-aware multipath tunnel scheduler.
pub struct AfmtScheduler;

/// The registry entry of AFMT.
pub static AFMT: AfmtScheduler = AfmtScheduler;

impl TunnelSchedulerProgram for AfmtScheduler {
    fn name(&self) -> &'static str {
        "afmt"
    }

    fn summary(&self) -> &'static str {
        "AFMT: flow-aware, keeps a flow on its subtunnel and moves it by window and RTT (docs/algorithms/afmt.md)"
    }

    fn params(&self) -> &'static [Param] {
        AFMT_PARAMS
    }

    fn needs_tcp_subtunnels(&self) -> bool {
        true
    }

    fn build(&self, params: &Params, _seed: u64) -> Box<dyn TunnelScheduler> {
        Box::new(Afmt::new(params.get("flow_table_entries") as u32))
    }
}

/// Bonding: one flow over unequal paths (`mpsched_core::tunnel::Bond`).
pub struct Bond;

/// The registry entry of the bonding scheduler.
pub static BOND: Bond = Bond;

impl TunnelSchedulerProgram for Bond {
    fn name(&self) -> &'static str {
        "bond"
    }

    fn summary(&self) -> &'static str {
        "bonding: the paths' queues kept equally long by their measured rates, so one flow gets their sum"
    }

    fn needs_path_acks(&self) -> bool {
        true
    }

    fn equalizes_delay(&self) -> bool {
        true
    }

    fn build(&self, _params: &Params, _seed: u64) -> Box<dyn TunnelScheduler> {
        Box::new(BondScheduler::default())
    }
}
