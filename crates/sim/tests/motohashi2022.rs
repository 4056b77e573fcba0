//! The first paper's experiments, reproduced: what issue #2 requires them to show.
//!
//! Each test runs a built-in scenario in full (100 simulated seconds; tests are built with
//! optimisation, see the workspace Cargo.toml) and checks the published behaviour.

use mpsched_run::TimeSeries;
use mpsched_run::{Plan, VariantResult};
use mpsched_scenario::builtin;
use mpsched_scenario::results::Summary;
use mpsched_scenario::Scenario;
use mpsched_sim::experiment::run_plan;

fn scenario(name: &str) -> Scenario {
    let (path, text) = builtin::find(name).unwrap();
    Scenario::from_toml(text, path).unwrap()
}

fn run(name: &str, variants: &[&str]) -> Vec<VariantResult> {
    let plan = Plan {
        variants: variants.iter().map(|s| s.to_string()).collect(),
        ..Plan::default()
    };
    run_plan(&scenario(name), &plan, |_| {}).unwrap()
}

fn by_variant<'a>(rs: &'a [VariantResult], v: &str) -> &'a Summary {
    &rs.iter().find(|r| r.variant.as_deref() == Some(v)).unwrap().summary
}

/// Mean of column `col` over samples with `from < t <= to`.
fn window_mean(s: &TimeSeries, col: &str, from: f64, to: f64) -> f64 {
    let t = s.values("time_s").unwrap();
    let v = s.values(col).unwrap_or_else(|| panic!("no column {col}"));
    let xs: Vec<f64> = t
        .iter()
        .zip(&v)
        .filter(|(t, _)| **t > from && **t <= to)
        .map(|(_, v)| *v)
        .collect();
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Wire capacity converted to UDP payload for 1470-byte payloads (1512 bytes on the wire).
fn payload_capacity(wire_mbps: f64) -> f64 {
    wire_mbps * 1470.0 / 1512.0
}

fn check_aggregation(name: &str, offered: f64, p1: f64, p2: f64) {
    let rs = run(name, &[]);
    let (rsv, wrr) = (by_variant(&rs, "RS"), by_variant(&rs, "WRR"));
    assert_eq!(rsv.repetitions.len(), 10);
    let possible = offered.min(payload_capacity(p1 + p2));
    for s in [rsv, wrr] {
        let d = s.flows[0].delivered_mbps;
        assert!(d >= 0.95 * offered, "{:?} delivers {d} of {offered} offered", s.variant);
        assert!(
            d <= possible * 1.001,
            "{:?} delivers {d}, more than the paths carry ({possible})",
            s.variant
        );
    }
    let (rs_range, wrr_range) = (
        rsv.flows[0].delivered_spread_mbps.range(),
        wrr.flows[0].delivered_spread_mbps.range(),
    );
    assert!(
        wrr_range <= rs_range,
        "WRR spread {wrr_range} must not exceed RS spread {rs_range}"
    );
    for (v, cap) in [("SP1", p1), ("SP2", p2)] {
        let d = by_variant(&rs, v).flows[0].delivered_mbps;
        let want = payload_capacity(cap);
        assert!(
            (d - want).abs() <= 0.02 * want,
            "{v} delivers {d}, one path carries {want}"
        );
    }
}

#[test]
fn scenario_1_rs_and_wrr_aggregate_4_plus_4_mbps() {
    check_aggregation("s1-homogeneous", 8.0, 4.0, 4.0);
}

#[test]
fn scenario_2_rs_and_wrr_aggregate_6_plus_3_mbps() {
    check_aggregation("s2-heterogeneous", 9.0, 6.0, 3.0);
}

#[test]
fn scenario_3b_dwrr_moves_flow1_off_path2_and_keeps_loss_under_1_pct() {
    let rs = run("s3b-dwrr-two-flows", &["DWRR", "WRR"]);
    let dwrr = &rs[0].series;
    // Before flow2: the configured 2:1.
    let before = window_mean(dwrr, "flow1_path1_mbps", 5.0, 20.0) / window_mean(dwrr, "flow1_path2_mbps", 5.0, 20.0);
    assert!((before - 2.0).abs() < 0.1, "split before flow2 {before}");
    // Within 10 s of flow2's start the split is past 4:1 and stays between 4:1 and 8:1.
    let settled = window_mean(dwrr, "flow1_path1_mbps", 29.0, 30.0) / window_mean(dwrr, "flow1_path2_mbps", 29.0, 30.0);
    assert!(settled >= 4.0, "split at 30 s is {settled}:1");
    let mean = window_mean(dwrr, "flow1_path1_mbps", 30.0, 90.0) / window_mean(dwrr, "flow1_path2_mbps", 30.0, 90.0);
    assert!((4.0..=8.0).contains(&mean), "split 30-90 s is {mean}:1");
    for f in ["flow1", "flow2"] {
        let loss = window_mean(dwrr, &format!("{f}_loss_pct"), 30.0, 90.0);
        assert!(loss < 1.0, "DWRR {f} loses {loss}% in 30-90 s");
    }
    // After flow2 stops, no feedback and so no change: flow1 keeps a share of path2.
    assert!(window_mean(dwrr, "flow1_path2_mbps", 91.0, 100.0) > 0.3);
    // Static WRR overloads path2: both flows lose clearly more.
    let wrr = &rs[1].series;
    for f in ["flow1", "flow2"] {
        let (d, w) = (
            window_mean(dwrr, &format!("{f}_loss_pct"), 30.0, 90.0),
            window_mean(wrr, &format!("{f}_loss_pct"), 30.0, 90.0),
        );
        assert!(w > 2.0 && w > 5.0 * d, "{f}: WRR loses {w}%, DWRR {d}%");
    }
    let wrr_drops = rs[1].summary.repetitions[0].counters["queues"]["ap1->ap3.tail_drops"];
    let dwrr_drops = rs[0].summary.repetitions[0].counters["queues"]["ap1->ap3.tail_drops"];
    assert!(
        wrr_drops > 10 * dwrr_drops.max(1),
        "path2 tail drops: WRR {wrr_drops}, DWRR {dwrr_drops}"
    );
}

#[test]
fn scenario_3a_congestion_avoidance_engages_at_10_mbps() {
    let rs = run("s3a-dwrr-input-rate", &["DWRR-8M", "DWRR-10M", "WRR-10M"]);
    let ap1 = |s: &Summary, k: &str| s.repetitions[0].counters["ap1"].get(k).copied().unwrap_or(0);
    let (d8, d10, w10) = (
        by_variant(&rs, "DWRR-8M"),
        by_variant(&rs, "DWRR-10M"),
        by_variant(&rs, "WRR-10M"),
    );
    assert_eq!(ap1(d8, "split0.avoidance_events"), 0, "no congestion at 8 Mbps");
    assert_eq!(d8.flows[0].loss_pct, Some(0.0));
    let events = ap1(d10, "split0.avoidance_events");
    assert!(events >= 50, "congestion avoidance engaged {events} times at 10 Mbps");
    assert_eq!(ap1(d10, "split0.avoidance_drops"), 32 * events);
    // Both saturate both paths; DWRR delivers as much as WRR to within 0.1 % (see
    // docs/reproduction.md) with a lower delay.
    let (dd, wd) = (d10.flows[0].delivered_mbps, w10.flows[0].delivered_mbps);
    assert!(dd >= 0.999 * wd, "DWRR {dd} vs WRR {wd}");
    assert!(d10.flows[0].mean_owd_ms.unwrap() < w10.flows[0].mean_owd_ms.unwrap());
}

#[test]
fn the_same_scenario_and_seed_give_byte_identical_summaries() {
    let sc = scenario("s3b-dwrr-two-flows").scaled_to(20_000_000_000_000);
    let plan = Plan {
        variants: vec!["DWRR".into()],
        ..Plan::default()
    };
    let a = run_plan(&sc, &plan, |_| {}).unwrap();
    let b = run_plan(&sc, &plan, |_| {}).unwrap();
    let ja = serde_json::to_string_pretty(&a[0].summary).unwrap();
    let jb = serde_json::to_string_pretty(&b[0].summary).unwrap();
    assert_eq!(ja, jb);
    let (mut ca, mut cb) = (Vec::new(), Vec::new());
    a[0].series.write_csv(&mut ca).unwrap();
    b[0].series.write_csv(&mut cb).unwrap();
    assert_eq!(ca, cb);
    // A different seed changes RS's draws and so its figures.
    let s1 = scenario("s1-homogeneous").scaled_to(10_000_000_000_000);
    let rs = |seed| {
        let p = Plan {
            variants: vec!["RS".into()],
            seed: Some(seed),
            repetitions: Some(1),
            ..Plan::default()
        };
        serde_json::to_string(&run_plan(&s1, &p, |_| {}).unwrap()[0].summary.flows).unwrap()
    };
    assert_eq!(rs(5), rs(5));
    assert_ne!(rs(5), rs(6));
}

/// Hardening item 19: a DWRR split that names no `weight_scale` gets one fine enough to move
/// (2:1 gets 16, as scenario 3 chose): at scale 1 a 2:1 split has no step but to 1:2 and, in
/// scenario 3b, never moved (flow1's delay 39.5 ms against 11.0).
#[test]
fn dwrr_without_a_weight_scale_gets_one_that_can_move() {
    let (path, text) = builtin::find("s3b-dwrr-two-flows").unwrap();
    assert!(text.contains("\nweight_scale = 16"));
    let named = Scenario::from_toml(text, path).unwrap();
    let unnamed: String = text
        .lines()
        .filter(|l| !l.starts_with("weight_scale"))
        .collect::<Vec<_>>()
        .join("\n");
    let unnamed = Scenario::from_toml(&unnamed, path).unwrap();
    assert_eq!(unnamed.splits, named.splits, "2:1 gets scale 16");
    let plan = Plan {
        variants: vec!["DWRR".into()],
        ..Plan::default()
    };
    let r = run_plan(&unnamed, &plan, |_| {}).unwrap();
    let s = by_variant(&r, "DWRR");
    let moves = s.repetitions[0].counters["ap1"]["split0.adjustments"];
    assert!(moves > 0, "the weights moved");
    assert!(s.flows[0].mean_owd_ms.unwrap() < 20.0, "{:?}", s.flows[0].mean_owd_ms);
    assert_eq!(mpsched_core::sched::DwrrParams::scale_for(&[2, 1]), 16);
    assert_eq!(mpsched_core::sched::DwrrParams::scale_for(&[30, 30]), 1);
    assert_eq!(
        mpsched_core::sched::DwrrParams::scale_for(&[60_000, 1]),
        1,
        "registers stay 16-bit"
    );
}
