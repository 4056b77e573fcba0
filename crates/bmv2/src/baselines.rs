//! The control plane of the baselines' P4 programs (`crates/programs/src/pmqecn/dcqcn.p4`,
//! `tcn.p4` and `p4qcn.p4`, over `p4/include/baseline.p4`): the multipath switch's tables as
//! [`crate::control`] fills them (each includes `p4/mpsched.p4` whole), the port queue's limit,
//! each rule's parameters, and the registers back under the names of the Rust twin's counters
//! (`counter.baseline.marked`, `counter.baseline.tail_drops`; P4QCN's `counter.qcn.*`).
//!
//! Units: DCQCN's `pmax_pct` becomes millionths (`dcqcn_pmax_ppm`); TCN's `sojourn` (ps)
//! becomes whole microseconds, BMv2's unit for `deq_timedelta`, by [`sojourn_threshold_us`];
//! P4QCN's `feedback_gap` (ps, whole microseconds by its declaration) becomes microseconds,
//! BMv2's ingress clock (`qcn_gap_us`), as the eBPF loader writes it in nanoseconds.

use crate::cli::SwitchCli;
use crate::control;
use crate::Bmv2Error;
use mpsched_netns::dataplane::NodeTables;
use std::collections::BTreeMap;

/// The register of the `baseline.*` counters (indices as `BL_C_*` in baseline.p4).
pub const COUNTERS_REGISTER: &str = "baseline_counters";
/// The counters, in the data plane's order, as results and vectors name them.
pub const COUNTERS: [&str; 2] = ["counter.baseline.marked", "counter.baseline.tail_drops"];
/// P4QCN's register of the `qcn.*` counters (indices as `QCN_C_*` in p4qcn.p4).
pub const QCN_COUNTERS_REGISTER: &str = "qcn_counters";
/// P4QCN's counters, in the data plane's order, as results and vectors name them. The
/// register's next entry counts attempts (feedback asked of the data plane), which the twin
/// has not.
pub const QCN_COUNTERS: [&str; 3] = [
    "counter.qcn.samples",
    "counter.qcn.feedback",
    "counter.qcn.feedback_no_route",
];
/// The index of the attempts in [`QCN_COUNTERS_REGISTER`] (`QCN_C_ATTEMPTS`).
const QCN_ATTEMPTS: usize = 3;
/// `baseline_test_flags`: under the vectors a packet finds the step's depth at ingress (which
/// alone decides the tail drop, nothing counted), and only their egress steps meet the rule,
/// with the step's figures (`BL_F_VECTORS`); `qcn_test_flags`: P4QCN's ingress clock is the
/// step's (`QCN_F_TEST_CLOCK`).
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

/// [`check`] (P4QCN's gap is whole microseconds by its declaration, BMv2's clock).
pub fn check_p4qcn(t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)
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

/// `p4qcn.p4`: [`configure_common`], `q_eq`, `w`, the gap in microseconds, the feedback's
/// mirror session ([`control::add_rate_feedback_session`]) and, under the vectors, the ingress
/// clock from `qcn_test_clock_us`.
pub fn configure_p4qcn(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check_p4qcn(t)?;
    configure_common(cli, t)?;
    cli.register_write("qcn_q_eq", 0, t.params.get("q_eq"))?;
    cli.register_write("qcn_w", 0, t.params.get("w"))?;
    cli.register_write("qcn_gap_us", 0, t.params.get("feedback_gap") / PS_PER_US)?;
    control::add_rate_feedback_session(cli)?;
    let flags = if t.test_clock { VECTORS } else { 0 };
    cli.register_write("qcn_test_flags", 0, flags)
}

/// P4QCN's ingress test clock (with [`NodeTables::test_clock`]): BMv2 counts microseconds.
pub fn set_qcn_clock(cli: &mut SwitchCli, now_ns: u64) -> Result<(), Bmv2Error> {
    cli.register_write("qcn_test_clock_us", 0, now_ns / 1000)
}

/// A vector's step: the depth the frame found (joining its queue at ingress, or leaving it at
/// egress) and its sojourn, which BMv2 counts in whole microseconds (a step of another sojourn
/// is refused: BMv2 cannot present it).
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

/// [`snapshot`] and P4QCN's `qcn.*` counters.
pub fn snapshot_p4qcn(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut out = snapshot(cli, t)?;
    let counters = cli.register_read_all(QCN_COUNTERS_REGISTER)?;
    for (i, name) in QCN_COUNTERS.iter().enumerate() {
        out.insert(name.to_string(), counters.get(i).copied().unwrap_or(0));
    }
    Ok(out)
}

/// The name of counter `i` of [`QCN_COUNTERS_REGISTER`] in snapshots (the attempts have none).
pub fn qcn_counter_name(i: usize) -> Option<String> {
    QCN_COUNTERS.get(i).map(|n| n.to_string())
}

/// Whether every feedback P4QCN asked for has been through ingress again (sent, or dropped
/// for want of a route): it is recirculated, so it may still be on its way when the data
/// packet that caused it has left.
pub fn qcn_settled(cli: &mut SwitchCli) -> Result<bool, Bmv2Error> {
    let c = cli.register_read_all(QCN_COUNTERS_REGISTER)?;
    let at = |i: usize| c.get(i).copied().unwrap_or(0);
    Ok(at(QCN_ATTEMPTS) == at(1) + at(2))
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
        let qcn = Rule::Qcn {
            q_eq: 11,
            w: 2,
            gap_ps: 0,
        };
        let twin = Baseline::new(Box::new(Nothing), qcn, 64, 0, 0);
        let names: Vec<String> = twin
            .counters()
            .into_iter()
            .map(|(k, _)| format!("counter.{k}"))
            .collect();
        assert_eq!(names[..2], COUNTERS);
        assert_eq!(names[2..], QCN_COUNTERS);
        assert_eq!(qcn_counter_name(QCN_ATTEMPTS), None);
    }
}
