//! The control plane of the marking baselines' P4 programs (`crates/programs/src/pmqecn/
//! dcqcn.p4`, `tcn.p4`, over `p4/include/baseline.p4`): the multipath switch's tables as
//! [`crate::control`] fills them (both include `p4/mpsched.p4` whole), the port queue's limit,
//! each rule's parameters, and the registers back under the names of the Rust twin's counters
//! (`counter.baseline.marked`, `counter.baseline.tail_drops`).
//!
//! Units: DCQCN's `pmax_pct` becomes millionths (`dcqcn_pmax_ppm`); TCN's `sojourn` (ps)
//! becomes whole microseconds, BMv2's unit for `deq_timedelta`, by [`sojourn_threshold_us`].

use crate::cli::SwitchCli;
use crate::control;
use crate::Bmv2Error;
use mpsched_netns::dataplane::NodeTables;
use std::collections::BTreeMap;

/// The register of the `baseline.*` counters (indices as `BL_C_*` in baseline.p4).
pub const COUNTERS_REGISTER: &str = "baseline_counters";
/// The counters, in the data plane's order, as results and vectors name them.
pub const COUNTERS: [&str; 2] = ["counter.baseline.marked", "counter.baseline.tail_drops"];
/// `baseline_test_flags`: under the vectors only their egress steps meet the rule, with the
/// step's figures, and ingress counts and drops nothing (`BL_F_VECTORS`).
const VECTORS: u64 = 1;
/// BMv2's own queue is this much deeper than `fifo_pkts`, so that the program's count, not
/// BMv2, drops (packets the program does not count, feedback clones, share the queue).
pub const BMV2_QUEUE_MARGIN_PKTS: u64 = 64;
/// Picoseconds in BMv2's unit of time.
const PS_PER_US: u64 = 1_000_000;

/// TCN's threshold as `tcn.p4` compares it: `floor(sojourn_ps / 10^6)` microseconds, at most
/// 2^32 - 1 (`deq_timedelta` is 32 bits, so a longer threshold marks nothing either way; the
/// registry's largest `sojourn`, 10 s, is far below). For
/// a sojourn of `t` whole microseconds, `t > floor(T)` exactly when `t > T`, the Rust twin's
/// rule; rounding up or to the nearest would leave a sojourn between `T` and `ceil(T)` unmarked.
pub fn sojourn_threshold_us(sojourn_ps: u64) -> u32 {
    (sojourn_ps / PS_PER_US).min(u64::from(u32::MAX)) as u32
}

/// The multipath switch's limits, and ports whose own queues hold what the program counts.
fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    control::check(t)?;
    let fifo = t.params.get("fifo_pkts");
    if let Some(p) = t
        .port_queues
        .iter()
        .position(|q| q.queues > 1 && u64::from(q.queue_pkts) < fifo)
    {
        return Err(Bmv2Error::Config(format!(
            "{}: port {p}'s queues hold {} packets, fewer than fifo_pkts {fifo}: BMv2 would drop what the program counted",
            t.program, t.port_queues[p].queue_pkts
        )));
    }
    Ok(())
}

/// [`check`] and DCQCN's `kmin <= kmax`.
pub fn check_dcqcn(t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)?;
    let (kmin, kmax) = (t.params.get("kmin"), t.params.get("kmax"));
    if kmin > kmax {
        return Err(Bmv2Error::Config(format!("dcqcn: kmin {kmin} above kmax {kmax}")));
    }
    Ok(())
}

/// [`check`] (TCN's threshold always fits once converted).
pub fn check_tcn(t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)
}

/// The multipath switch's tables, the queue's limit, BMv2's queues deeper than it, and the
/// vectors' flag.
fn configure_common(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    control::configure(cli, t)?;
    let fifo = t.params.get("fifo_pkts");
    cli.register_write("baseline_fifo_pkts", 0, fifo)?;
    for p in 0..t.ports.len() {
        cli.run(&format!("set_queue_depth {} {p}", fifo + BMV2_QUEUE_MARGIN_PKTS))?;
    }
    let flags = if t.test_clock { VECTORS } else { 0 };
    cli.register_write("baseline_test_flags", 0, flags)
}

/// `dcqcn.p4`: [`configure_common`], `kmin`, `kmax`, `pmax_pct` as millionths, and the
/// vectors' fixed draws.
pub fn configure_dcqcn(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check_dcqcn(t)?;
    configure_common(cli, t)?;
    cli.register_write("dcqcn_kmin", 0, t.params.get("kmin"))?;
    cli.register_write("dcqcn_kmax", 0, t.params.get("kmax"))?;
    cli.register_write("dcqcn_pmax_ppm", 0, t.params.get("pmax_pct") * 10_000)?;
    for (i, d) in t.test_draws.iter().enumerate() {
        cli.register_write("dcqcn_test_draws", i, u64::from(*d))?;
    }
    cli.register_write("dcqcn_test_draws_n", 0, t.test_draws.len() as u64)?;
    cli.register_write("dcqcn_test_draw_next", 0, 0)
}

/// `tcn.p4`: [`configure_common`] and the threshold in microseconds.
pub fn configure_tcn(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check_tcn(t)?;
    configure_common(cli, t)?;
    let us = sojourn_threshold_us(t.params.get("sojourn"));
    cli.register_write("tcn_sojourn_us", 0, u64::from(us))
}

/// A vector's egress step: the depth the frame found and its sojourn, which BMv2 counts in
/// whole microseconds (a step of another sojourn is refused: BMv2 cannot present it).
pub fn set_test_queue(cli: &mut SwitchCli, enq_qdepth_pkts: u32, sojourn_ns: u64) -> Result<(), Bmv2Error> {
    if sojourn_ns % 1000 != 0 || sojourn_ns / 1000 > u64::from(u32::MAX) {
        return Err(Bmv2Error::Config(format!(
            "a sojourn of {sojourn_ns} ns: BMv2 presents whole microseconds below 2^32"
        )));
    }
    cli.register_write("baseline_test_enq_qdepth", 0, u64::from(enq_qdepth_pkts))?;
    cli.register_write("baseline_test_sojourn_us", 0, sojourn_ns / 1000)
}

/// The multipath switch's registers ([`control::snapshot`]) and the `baseline.*` counters.
pub fn snapshot(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut out = control::snapshot(cli, t)?;
    let counters = cli.register_read_all(COUNTERS_REGISTER)?;
    for (i, name) in COUNTERS.iter().enumerate() {
        out.insert(name.to_string(), counters.get(i).copied().unwrap_or(0));
    }
    Ok(out)
}

/// The name of counter `i` of [`COUNTERS_REGISTER`] in snapshots.
pub fn counter_name(i: usize) -> Option<String> {
    COUNTERS.get(i).map(|n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::packet::PacketMeta;
    use mpsched_core::program::{Ctx, Program, QueueMeta};
    use mpsched_programs::pmqecn::baselines::{Baseline, Rule};

    /// A forwarding program that does nothing: the baseline's own marking is under test.
    struct Nothing;
    impl mpsched_core::control::ProgramControl for Nothing {}
    impl Program for Nothing {
        fn ingress(&mut self, _: &mut PacketMeta, _: &mut Ctx) -> mpsched_core::program::Verdict {
            mpsched_core::program::Verdict::Consume
        }
    }

    /// Whether the Rust twin marks a packet that waited `sojourn_us` under `threshold_ps`.
    fn twin_marks(threshold_ps: u64, sojourn_us: u64) -> bool {
        let mut b = Baseline::new(Box::new(Nothing), Rule::Sojourn(threshold_ps), 64, 0, 0);
        let mut pkt = PacketMeta::udp(1, 2, 3, 4, 100);
        pkt.ecn = mpsched_core::packet::Ecn::Ect0;
        let q = QueueMeta {
            deq_timedelta_ps: sojourn_us * PS_PER_US,
            ..QueueMeta::default()
        };
        b.on_dequeue(&mut pkt, 1, q, &mut Ctx::new());
        pkt.ecn == mpsched_core::packet::Ecn::Ce
    }

    #[test]
    fn the_threshold_in_microseconds_marks_every_whole_microsecond_as_the_twin_does() {
        let thresholds_ps = [
            1_000_000,
            1_000_001,
            1_699_999_999,
            1_700_000_000,
            1_700_500_000,
            1_700_999_999,
            (u64::from(u32::MAX) - 1) * PS_PER_US + 500_000,
            10_000_000_000_000,
        ];
        for t in thresholds_ps {
            let floor_us = t / PS_PER_US;
            let sojourns = [
                0,
                1,
                2,
                floor_us.saturating_sub(1),
                floor_us,
                floor_us + 1,
                floor_us + 2,
            ];
            for s in sojourns.into_iter().filter(|&s| s <= u64::from(u32::MAX)) {
                let p4 = s > u64::from(sojourn_threshold_us(t));
                assert_eq!(p4, twin_marks(t, s), "threshold {t} ps, sojourn {s} us");
            }
        }
        assert_eq!(sojourn_threshold_us(1_700_500_000), 1_700, "floor, not nearest");
        assert_eq!(sojourn_threshold_us(1_700_999_999), 1_700, "floor, not up");
        assert_eq!(
            sojourn_threshold_us(10_000_000_000_000),
            10_000_000,
            "the largest `sojourn`, 10 s"
        );
        assert_eq!(sojourn_threshold_us(u64::MAX), u32::MAX);
    }

    #[test]
    fn counters_are_named_as_the_rust_twin_names_them_in_vectors() {
        let twin = Baseline::new(Box::new(Nothing), Rule::Sojourn(1), 64, 0, 0);
        let names: Vec<String> = twin
            .counters()
            .into_iter()
            .map(|(k, _)| format!("counter.{k}"))
            .collect();
        assert_eq!(names, COUNTERS);
    }
}
