//! # mpsched-programs: every switch program by name
//!
//! A scenario names the program each switch runs (`program = "letflow"`); every backend finds
//! it here. A program is registered once, in [`SWITCH_PROGRAMS`], by a [`SwitchProgram`]
//! that declares:
//! - its name and its parameters ([`Param`], bounded, in the scenario's units);
//! - the routing its tables need from the control plane ([`TablesNeed`]: the routes and
//!   equal-cost groups `mpsched_topo::Wiring` computes into a [`SwitchConfig`]);
//! - its Rust twin, built from those tables and parameters (the simulator runs it, the
//!   conformance vectors hold the other columns to it);
//! - the stem of its eBPF object (`crates/programs/src/<name>/<name>.bpf.c`) and of its P4
//!   program (`crates/programs/src/<name>/<name>.p4`), which the kernel and BMv2 backends
//!   compile and load by that name.
//!
//! Whoever looks for a program finds its Rust, eBPF C, P4, vectors and notes in one folder
//! under `src/`; adding one is that folder plus one line in [`SWITCH_PROGRAMS`] (and, on the
//! kernel and BMv2 backends, one line each registering how their tables are written).
//!
//! Each program instance holds only its own node's state: nothing here reads another node's
//! registers except through packets or the control channel (a later engine runs partitions of
//! one network on several cores).

#![warn(missing_docs)]

pub mod atsss;
pub mod control_loop;
pub mod hula;
pub mod letflow;
pub mod multipath;
pub mod params;
pub mod pmqecn;
pub mod tunnel;
pub mod vectors;

pub use control_loop::{ControlInput, ControlLoop};
use mpsched_core::program::Program;
use mpsched_core::rng::RandomSource;
use mpsched_core::sched::ConfigError;
use mpsched_core::switch::SwitchConfig;
pub use params::{Param, ParamKind, Params};

/// What a program needs the control plane to compute for its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TablesNeed {
    /// Routes by the scenario's `routing` (shortest or ECMP), with its splits and pins.
    ScenarioRouting,
    /// Every equal-cost next hop as a group, whatever the scenario's `routing` says (a
    /// load balancer choosing among them).
    EqualCostGroups,
    /// One shortest path per destination.
    ShortestPath,
}

/// What a program is built from on one node.
pub struct BuildInput<'a> {
    /// The node's name, for messages.
    pub node: &'a str,
    /// The tables the control plane computed for the node.
    pub tables: &'a SwitchConfig,
    /// The program's parameters, checked against its declaration.
    pub params: &'a Params,
    /// This node's own seed (its random draws).
    pub seed: u64,
}

/// A switch program as the registry knows it.
pub trait SwitchProgram: Sync {
    /// The name scenarios use.
    fn name(&self) -> &'static str;

    /// One line: what it does and where it comes from.
    fn summary(&self) -> &'static str;

    /// Its parameters (`[programs.<name>]`).
    fn params(&self) -> &'static [Param] {
        &[]
    }

    /// The routing its tables need.
    fn tables_need(&self) -> TablesNeed;

    /// Whether it is probe-driven and needs the control plane's [`SwitchConfig::probe`] (its
    /// ToR id, port directions and rates, the ToR of every destination) beside its routes.
    fn probe_tables(&self) -> bool {
        false
    }

    /// Refuse parameters that are each within their bounds but wrong together (or wrong in a
    /// way bounds cannot say, a time that must be a power of two): the key to blame and why.
    /// The scenario crate calls it when it reads `[programs.NAME]`, before anything is built.
    fn check_params(&self, _params: &Params) -> Result<(), (&'static str, String)> {
        Ok(())
    }

    /// Refuse a port of `rate_bps` on a node running the program with `params` (HULA's
    /// estimator needs a port to carry enough bytes in its time constant): the key to blame and
    /// why. The scenario crate calls it for every link end at such a node.
    fn check_port_rate(&self, _params: &Params, _rate_bps: u64) -> Result<(), (&'static str, String)> {
        Ok(())
    }

    /// The most ports a switch running the program may have (None: as many as a switch has).
    /// The scenario crate refuses a switch with more before anything is built, so that a run
    /// never fails where `check` passed (the UPF routes by one shortest path to ports below
    /// the frame's port limit).
    fn max_ports(&self) -> Option<usize> {
        None
    }

    /// Refuse a port with `queues` output queues of `queue_pkts` packets each
    /// (`strict_priority`: served highest index first) on a node running the program: the key
    /// to blame and why. The scenario crate calls it for every link end at such a node.
    fn check_port_queues(
        &self,
        _params: &Params,
        _queues: u8,
        _queue_pkts: u32,
        _strict_priority: bool,
    ) -> Result<(), (&'static str, String)> {
        Ok(())
    }

    /// Whether it carries the first paper's splitting groups and confluence points
    /// (`[[split]]`): a split's nodes must run a program that does.
    fn runs_splits(&self) -> bool {
        false
    }

    /// Whether it runs the classifier of its tables (`[[classify]]`, `SwitchConfig::classify`):
    /// the programs over the multipath switch do.
    fn classifies(&self) -> bool {
        false
    }

    /// The Rust program for one node.
    fn build(&self, input: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError>;

    /// The Rust program for one node, its random draws taken from `rng` instead of the node's
    /// seed: the conformance vectors fix them, as the eBPF and P4 programs' test-draws maps
    /// do. A program that draws nothing keeps this default, [`SwitchProgram::build`].
    fn build_with_rng(
        &self,
        input: &BuildInput<'_>,
        rng: Box<dyn RandomSource>,
    ) -> Result<Box<dyn Program>, ConfigError> {
        let _ = rng;
        self.build(input)
    }

    /// Its control plane on one node, if it has one: a loop the backend calls every period
    /// with the node's data plane behind the control channel.
    fn control_loop(&self, _input: &ControlInput<'_>) -> Option<Box<dyn ControlLoop>> {
        None
    }

    /// Whether its egress stage may rewrite a packet's ECN bits (DCQCN's and TCN's marks at
    /// dequeue): the conformance vectors then observe the ECN of the frame an egress step
    /// transmits, on every backend.
    fn marks_at_egress(&self) -> bool {
        false
    }

    /// The stem of its eBPF object, if it has one (the kernel backend loads `<stem>.bpf.o`).
    fn ebpf_object(&self) -> Option<&'static str>;

    /// The stem of its P4 program, if it has one (BMv2 loads `<stem>.json`).
    fn p4_program(&self) -> Option<&'static str>;
}

/// Every switch program, by name. The one registration line a new program adds is here.
pub static SWITCH_PROGRAMS: &[&dyn SwitchProgram] = &[
    &multipath::MULTIPATH,
    &multipath::ECMP,
    &multipath::SHORTEST,
    &letflow::LETFLOW,
    &hula::HULA,
    &hula::MPHULA,
    &pmqecn::vqwrr::VQ_WRR,
    &pmqecn::cp::PMQECN,
    &pmqecn::baselines::DCQCN,
    &pmqecn::baselines::TCN,
    &pmqecn::baselines::P4QCN,
    &atsss::upf::ATSSS,
];

/// Refuse classifier rules in the tables of a program without a classifier (`program`), which
/// would otherwise pass every packet with its DSCP as it came.
pub fn refuse_classifier(program: &str, input: &BuildInput<'_>) -> Result<(), ConfigError> {
    if input.tables.classify.is_empty() {
        return Ok(());
    }
    Err(ConfigError(format!(
        "node `{}`: {program} has no classifier, and its tables hold {} classifier rules",
        input.node,
        input.tables.classify.len()
    )))
}

/// The program a switch runs when the scenario names none.
pub const DEFAULT_PROGRAM: &str = "multipath";

/// The registered program called `name`.
pub fn switch_program(name: &str) -> Option<&'static dyn SwitchProgram> {
    SWITCH_PROGRAMS.iter().copied().find(|p| p.name() == name)
}

/// The registered names, for messages.
pub fn switch_program_names() -> String {
    SWITCH_PROGRAMS
        .iter()
        .map(|p| format!("`{}`", p.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_found() {
        let mut seen = HashSet::new();
        for p in SWITCH_PROGRAMS {
            assert!(seen.insert(p.name()), "`{}` registered twice", p.name());
            assert_eq!(switch_program(p.name()).unwrap().name(), p.name());
            assert!(!p.summary().is_empty());
            for param in p.params() {
                param
                    .check(param.default)
                    .unwrap_or_else(|e| panic!("{}.{}: default {e}", p.name(), param.name));
            }
        }
        assert!(switch_program(DEFAULT_PROGRAM).is_some());
        assert!(switch_program("nope").is_none());
    }
}
