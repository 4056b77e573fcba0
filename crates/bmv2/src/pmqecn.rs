//! The control plane of PMQECN's P4 program (`crates/programs/src/pmqecn/pmqecn.p4`): vq-wrr's
//! ([`crate::vqwrr`]: the multipath switch's tables, the virtual queues' parameters and
//! weights), then every class's threshold, the feedback gap, the mirror session its feedback
//! clones take ([`crate::layout::RECIRC_SESSION`]), and its registers back under the names of
//! the Rust twin's `vector_registers` and counters (`vq_threshold<v>`, `vq_rate_kbps<v>`,
//! `vq_target_kbps<v>`, `vq_arrival_bytes<8p + v>`, `vq_arrival_pkts<8p + v>`,
//! `counter.pmqecn.*`).
//!
//! Its control loop (`mpsched_programs::pmqecn::control`) writes `vq_weight`, `vq_threshold`,
//! `vq_rate_kbps` and `vq_target_kbps` through [`write_register`], as the Rust twin takes them.

use crate::cli::SwitchCli;
use crate::{vqwrr, Bmv2Error};
use mpsched_core::control::ControlError;
use mpsched_netns::dataplane::NodeTables;
use mpsched_programs::pmqecn::vqwrr::VIRTUAL_QUEUES;
use std::collections::BTreeMap;

/// The register of the `pmqecn.*` counters (indices as `PMQ_C_*` in pmqecn.p4).
pub const COUNTERS_REGISTER: &str = "pmq_counters";
/// The counters, in the data plane's order, as results and vectors name them. The register's
/// next entry counts attempts (feedback asked of the data plane), which the twin has not.
pub const COUNTERS: [&str; 3] = [
    "counter.pmqecn.feedback",
    "counter.pmqecn.feedback_held",
    "counter.pmqecn.feedback_no_route",
];
/// The index of the attempts in [`COUNTERS_REGISTER`] (`PMQ_C_ATTEMPTS`).
const ATTEMPTS: usize = 3;
/// `pmq_test_flags`: the ingress clock is `pmq_test_clock_us` (`PMQ_F_TEST_CLOCK`).
const TEST_CLOCK: u64 = 1;
/// Picoseconds in BMv2's unit of time.
const PS_PER_US: u64 = 1_000_000;
/// The registers per class the control plane writes beside vq-wrr's `vq_weight`.
const CLASS_REGISTERS: [&str; 3] = ["vq_threshold", "vq_rate_kbps", "vq_target_kbps"];
/// The registers the control channel writes, as the control listing names them.
pub const WRITABLE: [&str; 4] = ["vq_weight", "vq_threshold", "vq_rate_kbps", "vq_target_kbps"];

/// Check that `t` fits the program: vq-wrr's checks, and a feedback gap BMv2's microsecond
/// clock can hold exactly.
pub fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    vqwrr::check(t)?;
    let gap = t.params.get("feedback_gap");
    if gap % PS_PER_US != 0 {
        return Err(Bmv2Error::Config(format!(
            "pmqecn: feedback_gap {gap} ps is not a whole number of microseconds, BMv2's clock"
        )));
    }
    Ok(())
}

/// vq-wrr's configuration ([`vqwrr::configure`]), then every class's threshold from
/// `threshold`, the gap in microseconds, the feedback's mirror session
/// ([`crate::control::add_rate_feedback_session`]) and, under the vectors' test clock, the
/// ingress clock from `pmq_test_clock_us`.
pub fn configure(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)?;
    vqwrr::configure(cli, t)?;
    let threshold = t.params.get("threshold");
    for v in 0..VIRTUAL_QUEUES {
        cli.register_write("vq_threshold", v, threshold)?;
    }
    cli.register_write("pmq_feedback_gap_us", 0, t.params.get("feedback_gap") / PS_PER_US)?;
    crate::control::add_rate_feedback_session(cli)?;
    let flags = if t.test_clock { TEST_CLOCK } else { 0 };
    cli.register_write("pmq_test_flags", 0, flags)
}

/// Set the ingress test clock (with [`NodeTables::test_clock`]): BMv2 counts microseconds.
pub fn set_clock(cli: &mut SwitchCli, now_ns: u64) -> Result<(), Bmv2Error> {
    cli.register_write("pmq_test_clock_us", 0, now_ns / 1000)
}

/// The control channel's writes: `vq_weight` as vq-wrr takes it ([`vqwrr::write_register`]);
/// `vq_threshold`, `vq_rate_kbps` and `vq_target_kbps`, 0 to 2^32 - 1 per class, as the Rust
/// twin takes them; every other register is read-only.
pub fn write_register(cli: &mut SwitchCli, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
    if !CLASS_REGISTERS.contains(&name) {
        return vqwrr::write_register(cli, name, index, value);
    }
    if index >= VIRTUAL_QUEUES {
        return Err(ControlError::NoIndex {
            register: name.to_string(),
            size: VIRTUAL_QUEUES,
            index,
        });
    }
    if value > u64::from(u32::MAX) {
        return Err(ControlError::BadEntry {
            table: name.to_string(),
            reason: format!("at most {}, got {value}", u32::MAX),
        });
    }
    cli.register_write(name, index, value)
        .map_err(|e| ControlError::Unsupported(format!("BMv2: {e}")))
}

/// vq-wrr's registers ([`vqwrr::snapshot`]), the `pmqecn.*` counters, every class's threshold
/// and rates, and the arrivals of every port the program counted any at (`pmq_arrival_ports`).
pub fn snapshot(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut out = vqwrr::snapshot(cli, t)?;
    let counters = cli.register_read_all(COUNTERS_REGISTER)?;
    for (i, name) in COUNTERS.iter().enumerate() {
        out.insert(name.to_string(), counters.get(i).copied().unwrap_or(0));
    }
    for name in CLASS_REGISTERS {
        for (v, x) in cli.register_read_all(name)?.into_iter().enumerate() {
            out.insert(format!("{name}{v}"), x);
        }
    }
    let ports = cli
        .register_read_all("pmq_arrival_ports")?
        .first()
        .copied()
        .unwrap_or(0) as usize;
    if ports > 0 {
        for name in ["vq_arrival_bytes", "vq_arrival_pkts"] {
            let all = cli.register_read_all(name)?;
            for i in 0..ports.min(crate::layout::MAX_PORTS) * VIRTUAL_QUEUES {
                out.insert(format!("{name}{i}"), all.get(i).copied().unwrap_or(0));
            }
        }
    }
    Ok(out)
}

/// Whether every feedback the data plane was asked for has been through ingress again (sent,
/// or dropped for want of a route): the feedback is recirculated, so it may still be on its
/// way when the data packet that caused it has left.
pub fn settled(cli: &mut SwitchCli) -> Result<bool, Bmv2Error> {
    let c = cli.register_read_all(COUNTERS_REGISTER)?;
    let at = |i: usize| c.get(i).copied().unwrap_or(0);
    Ok(at(ATTEMPTS) == at(0) + at(2))
}

/// The name of counter `i` of [`COUNTERS_REGISTER`] in snapshots (the attempts have none).
pub fn counter_name(i: usize) -> Option<String> {
    COUNTERS.get(i).map(|n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::control::ProgramControl;
    use mpsched_core::program::Program;
    use mpsched_programs::pmqecn::cp::Pmqecn;
    use mpsched_programs::pmqecn::vqwrr::{VqWrr, VqWrrConfig};

    /// A forwarding program that does nothing: only the twin's names are under test.
    struct Nothing;
    impl ProgramControl for Nothing {}
    impl Program for Nothing {
        fn ingress(
            &mut self,
            _: &mut mpsched_core::packet::PacketMeta,
            _: &mut mpsched_core::program::Ctx,
        ) -> mpsched_core::program::Verdict {
            mpsched_core::program::Verdict::Consume
        }
    }

    fn twin() -> Pmqecn {
        let cfg = VqWrrConfig {
            weight: 3,
            vq_capacity: 64,
            levels: 8,
        };
        Pmqecn::new(1, VqWrr::new(cfg, Box::new(Nothing)), 11, 0)
    }

    #[test]
    fn counters_are_named_as_the_rust_twin_names_them_in_vectors() {
        let names: Vec<String> = twin()
            .counters()
            .into_iter()
            .map(|(k, _)| format!("counter.{k}"))
            .filter(|k| k.starts_with("counter.pmqecn."))
            .collect();
        assert_eq!(names, COUNTERS);
        assert_eq!(counter_name(ATTEMPTS), None);
    }

    #[test]
    fn the_writable_registers_are_the_twins() {
        let mut writable: Vec<String> = twin()
            .control_listing()
            .registers
            .into_iter()
            .filter(|r| r.writable)
            .map(|r| r.name)
            .collect();
        writable.sort();
        let mut ours: Vec<String> = WRITABLE.iter().map(|s| s.to_string()).collect();
        ours.sort();
        assert_eq!(writable, ours);
    }
}
