//! The control plane of `vq-wrr`'s P4 program (`crates/programs/src/pmqecn/vqwrr.p4`): the
//! multipath switch's tables as [`crate::control`] fills them (the program includes
//! `p4/mpsched.p4` whole), then the virtual queues' parameters and every class's weight, and
//! its registers back under the names of the Rust twin's `vector_registers` and counters
//! (`vq_weight<v>`, `vq_len<8p + v>`, `vq_level_use<64p + 8v + l>`, `counter.vq.*`).
//!
//! The switch always starts with BMv2's eight priority queues ([`crate::queues`]): a packet's
//! level is its priority, clamped to its port's queues as the simulator clamps it.

use crate::cli::SwitchCli;
use crate::control;
use crate::Bmv2Error;
use mpsched_core::control::ControlError;
use mpsched_netns::dataplane::NodeTables;
use mpsched_programs::pmqecn::vqwrr::{VqWrrConfig, MAX_LEVELS, VIRTUAL_QUEUES};
use std::collections::BTreeMap;

/// The register of the `vq.*` counters (indices as `VQ_C_*` in p4/include/vqwrr.p4).
pub const COUNTERS_REGISTER: &str = "vq_counters";
/// The counters, in the data plane's order, as results and vectors name them.
pub const COUNTERS: [&str; 4] = [
    "counter.vq.top_level",
    "counter.vq.downgraded",
    "counter.vq.drops",
    "counter.vq.accounting_errors",
];
/// `vq_test_flags`: only a vector's egress step releases (`VQ_F_RELEASE_ON_TEST_EGRESS`).
const RELEASE_ON_TEST_EGRESS: u64 = 1;
/// Ports the registers hold (`MPS_MAX_PORTS`).
const MAX_PORTS: usize = crate::layout::MAX_PORTS;

/// Check that `t` fits the program: the multipath switch's limits, and parameters within the
/// registers' widths (the registry's bounds already keep them there).
pub fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    control::check(t)?;
    let cfg = VqWrrConfig::from_params(&t.params);
    if !(1..=MAX_LEVELS as u8).contains(&cfg.levels) || cfg.weight == 0 {
        return Err(Bmv2Error::Config(format!(
            "vq-wrr: levels {} (1 to {MAX_LEVELS}), weight {} (at least 1)",
            cfg.levels, cfg.weight
        )));
    }
    Ok(())
}

/// Fill the multipath switch's tables, then `vq_capacity`, `vq_levels`, every class's
/// `vq_weight`, and (under the vectors' test clock) release on vector egress steps only.
pub fn configure(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)?;
    control::configure(cli, t)?;
    let cfg = VqWrrConfig::from_params(&t.params);
    cli.register_write("vq_capacity", 0, u64::from(cfg.vq_capacity))?;
    cli.register_write("vq_levels", 0, u64::from(cfg.levels))?;
    for v in 0..VIRTUAL_QUEUES {
        cli.register_write("vq_weight", v, u64::from(cfg.weight))?;
    }
    let flags = if t.test_clock { RELEASE_ON_TEST_EGRESS } else { 0 };
    cli.register_write("vq_test_flags", 0, flags)
}

/// The control channel's writes: `vq_weight` (1 to 2^32 - 1 packets per level, as the Rust
/// twin takes them); every other register is read-only.
pub fn write_register(cli: &mut SwitchCli, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
    if name != "vq_weight" {
        return Err(ControlError::ReadOnly(name.to_string()));
    }
    if index >= VIRTUAL_QUEUES {
        return Err(ControlError::NoIndex {
            register: name.to_string(),
            size: VIRTUAL_QUEUES,
            index,
        });
    }
    if !(1..=u64::from(u32::MAX)).contains(&value) {
        return Err(ControlError::BadEntry {
            table: name.to_string(),
            reason: format!("a weight is 1 to {} packets, got {value}", u32::MAX),
        });
    }
    cli.register_write("vq_weight", index, value)
        .map_err(|e| ControlError::Unsupported(format!("BMv2: {e}")))
}

/// The multipath switch's registers ([`control::snapshot`]), the `vq.*` counters, and the
/// virtual queues of every port the program holds state for (`vq_ports`).
pub fn snapshot(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut out = control::snapshot(cli, t)?;
    let counters = cli.register_read_all(COUNTERS_REGISTER)?;
    for (i, name) in COUNTERS.iter().enumerate() {
        out.insert(name.to_string(), counters.get(i).copied().unwrap_or(0));
    }
    for (v, w) in cli.register_read_all("vq_weight")?.into_iter().enumerate() {
        out.insert(format!("vq_weight{v}"), w);
    }
    let ports = cli.register_read_all("vq_ports")?.first().copied().unwrap_or(0) as usize;
    if ports > 0 {
        let len = cli.register_read_all("vq_len")?;
        let used = cli.register_read_all("vq_level_use")?;
        for i in 0..ports.min(MAX_PORTS) * VIRTUAL_QUEUES {
            out.insert(format!("vq_len{i}"), len.get(i).copied().unwrap_or(0));
            for l in 0..MAX_LEVELS {
                let at = i * MAX_LEVELS + l;
                out.insert(format!("vq_level_use{at}"), used.get(at).copied().unwrap_or(0));
            }
        }
    }
    Ok(out)
}

/// The cost of a data packet on BMv2 with vq-wrr (placed at ingress, released at egress,
/// every frame) and without it (`p4/mpsched.p4`, the same node and frame), each as
/// [`crate::vectors::ingress_cost`] measures it over `n` frames: (what, ns per frame).
pub fn costs(n: usize) -> Result<Vec<(String, f64)>, String> {
    use crate::vectors::{ingress_cost, CostFrames};
    let set = mpsched_programs::vectors::standard_sets()
        .into_iter()
        .find(|s| s.name == "vq-wrr-weights")
        .ok_or("no vector set vq-wrr-weights")?;
    // Its first step: a class-1 packet from port 0 to port 1 (64 packets a virtual queue, so
    // a batch of frames in flight never fills one).
    let st = &set.steps[0];
    let frame = (st.port, mpsched_core::vectors::from_hex(&st.frame)?);
    let mut plain = set.clone();
    plain.program = mpsched_core::vectors::MULTIPATH.into();
    plain.params.clear();
    let frames = CostFrames::Ports(vec![frame]);
    // Each twice, in the order vq, plain, plain, vq, so that neither is always first.
    let (mut vq, mut base) = (ingress_cost(&set, &frames, n)?, 0.0);
    base += ingress_cost(&plain, &frames, n)?;
    base += ingress_cost(&plain, &frames, n)?;
    vq += ingress_cost(&set, &frames, n)?;
    Ok(vec![
        ("vq-wrr data packet (placed, released)".to_string(), vq / 2.0),
        ("the same packet on mpsched.p4 (multipath)".to_string(), base / 2.0),
    ])
}

/// The name of counter `i` of [`COUNTERS_REGISTER`] in snapshots.
pub fn counter_name(i: usize) -> Option<String> {
    COUNTERS.get(i).map(|n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_named_as_the_rust_twin_names_them_in_vectors() {
        use mpsched_core::program::Program;
        use mpsched_programs::pmqecn::vqwrr::{VqWrr, VqWrrConfig};
        struct Nothing;
        impl mpsched_core::control::ProgramControl for Nothing {}
        impl Program for Nothing {
            fn ingress(
                &mut self,
                _: &mut mpsched_core::packet::PacketMeta,
                _: &mut mpsched_core::program::Ctx,
            ) -> mpsched_core::program::Verdict {
                mpsched_core::program::Verdict::Consume
            }
        }
        let cfg = VqWrrConfig {
            weight: 3,
            vq_capacity: 64,
            levels: 8,
        };
        let twin = VqWrr::new(cfg, Box::new(Nothing));
        let names: Vec<String> = twin
            .counters()
            .into_iter()
            .map(|(k, _)| format!("counter.{k}"))
            .collect();
        assert_eq!(names, COUNTERS);
    }
}
