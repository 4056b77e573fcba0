//! The first paper's switch (Motohashi et al., IEEE Access 2022) and the plain forwarding it
//! reduces to: one Rust program ([`MultipathSwitch`], `crates/core/src/switch.rs`), one eBPF
//! object (`bpf/mpsched.bpf.c`) and one P4 program (`p4/mpsched.p4`), registered under three
//! names by the tables they are filled with.

use crate::{BuildInput, SwitchProgram, TablesNeed};
use mpsched_core::program::Program;
use mpsched_core::rng::SeededRandom;
use mpsched_core::sched::ConfigError;
use mpsched_core::switch::MultipathSwitch;

/// The multipath switch under one of its names.
pub struct Multipath {
    name: &'static str,
    summary: &'static str,
    need: TablesNeed,
    splits: bool,
}

/// `multipath`: splitting groups (RS, WRR, DWRR, ...), confluence feedback and ECN markers as
/// `[[split]]` asks; everything else routed by the scenario's `routing`. The default.
pub static MULTIPATH: Multipath = Multipath {
    name: "multipath",
    summary: "Motohashi et al. 2022: per-flow splitting groups (RS, WRR, DWRR), confluence feedback, ECN marking; the rest by `routing`",
    need: TablesNeed::ScenarioRouting,
    splits: true,
};

/// `ecmp`: every equal-cost next hop, one per flow by a seeded 5-tuple hash.
pub static ECMP: Multipath = Multipath {
    name: "ecmp",
    summary: "ECMP: one equal-cost next hop per flow by a seeded 5-tuple hash",
    need: TablesNeed::EqualCostGroups,
    splits: false,
};

/// `shortest`: one shortest path per destination (single-path routing).
pub static SHORTEST: Multipath = Multipath {
    name: "shortest",
    summary: "single path: one shortest route per destination (the lowest port among equal-cost next hops)",
    need: TablesNeed::ShortestPath,
    splits: false,
};

impl SwitchProgram for Multipath {
    fn name(&self) -> &'static str {
        self.name
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn tables_need(&self) -> TablesNeed {
        self.need
    }

    fn runs_splits(&self) -> bool {
        self.splits
    }

    fn classifies(&self) -> bool {
        true
    }

    fn build(&self, input: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError> {
        let seed = input.seed;
        // Each splitting group draws from its own stream of the node's seed.
        let sw = MultipathSwitch::new(input.tables, |g| {
            Box::new(SeededRandom::new(seed ^ (u64::from(g) << 32)))
        })
        .map_err(|e| ConfigError(format!("node `{}`: {e}", input.node)))?;
        Ok(Box::new(sw))
    }

    fn ebpf_object(&self) -> Option<&'static str> {
        Some("mpsched")
    }

    fn p4_program(&self) -> Option<&'static str> {
        Some("mpsched")
    }
}
