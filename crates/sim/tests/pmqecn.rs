//! PMQECN in the simulator (#30). Table 1: on one 10 Mbit/s port of strict-priority queues, three
//! classes each offering 6.2 Mbit/s; strict priority serves the high class all it offers and
//! starves the low one, virtual-queue WRR (program `vq-wrr`, equal weights) gives the three
//! near-equal shares.

#[allow(dead_code)]
mod common;

use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::SimOptions;

fn delivered(r: &RunFigures, flow: &str) -> f64 {
    r.flows.iter().find(|f| f.id == flow).unwrap().delivered_mbps
}

#[test]
fn table1_strict_priority_starves_the_low_class_and_virtual_queue_wrr_shares_equally() {
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/table1-sp-vs-vq-wrr").unwrap();
    let sc = Scenario::from_toml(text, path).unwrap();
    let sp = common::run(&sc.with_variant("SP").unwrap(), &SimOptions::with_seed(1));
    let wrr = common::run(&sc.with_variant("VQ-WRR").unwrap(), &SimOptions::with_seed(1));
    let shares = |r: &RunFigures| ["high", "medium", "low"].map(|f| delivered(r, f));
    let (s, w) = (shares(&sp), shares(&wrr));
    eprintln!("Table 1: SP {s:?}, VQ-WRR {w:?} Mbit/s (paper: 6.22 / 3.57 / 0.16, 3.09 / 3.02 / 2.99)");
    // Strict priority: the high class gets what it offers, the medium the rest, the low none.
    assert!(s[0] > 6.1, "{s:?}");
    assert!(s[1] > 3.0 && s[2] < 0.1, "{s:?}");
    // Virtual-queue WRR with equal weights: each within 5 % of a third of what the port carried.
    let third = w.iter().sum::<f64>() / 3.0;
    assert!(w.iter().all(|x| (x - third).abs() < 0.05 * third), "{w:?}");
    let c = &wrr.counters["S1"];
    assert_eq!(c["vq.accounting_errors"], 0);
    assert!(
        c["vq.drops"] > 0,
        "the classes overflow their virtual queues, not the port: {c:?}"
    );
    assert_eq!(
        wrr.counters["queues"]["S1->S2.tail_drops"], 0,
        "the port itself never drops"
    );
}

/// Two UDP flows that may each send at the 10 Mbit/s line rate share a 10 Mbit/s port that
/// marks ECT packets CE above 11 waiting (DCQCN's and P4QCN's K in the PMQECN paper), with a
/// 200-packet buffer. `cc` empty: constant rate.
fn two_senders(rate_control: &str) -> String {
    format!(
        r#"
[scenario]
name = "rate-control"
duration = "3s"
sample_interval = "100ms"
routing = "shortest"
start_jitter = "1ms"
send_jitter = "100us"

[[node]]
name = "H1"
kind = "host"
[[node]]
name = "H2"
kind = "host"
[[node]]
name = "H5"
kind = "host"
[[node]]
name = "S1"
kind = "switch"
[[node]]
name = "S2"
kind = "switch"

[[link]]
a = "H1"
b = "S1"
rate = "10Mbps"
delay = "100us"
[[link]]
a = "H2"
b = "S1"
rate = "10Mbps"
delay = "100us"
[[link]]
a = "S1"
b = "S2"
rate = "10Mbps"
delay = "100us"
queue_pkts = 200
ecn_threshold_pkts = 11
[[link]]
a = "S2"
b = "H5"
rate = "10Mbps"
delay = "100us"

[[flow]]
name = "a"
src = "H1"
dst = "H5"
rate = "9.7Mbps"
ecn = "ect0"
{rate_control}
[[flow]]
name = "b"
src = "H2"
dst = "H5"
rate = "9.7Mbps"
ecn = "ect0"
{rate_control}
"#
    )
}

#[test]
fn dcqcn_senders_notified_by_their_receivers_keep_the_marked_queue_short_and_lose_nothing() {
    let run = |rc: &str| {
        let sc = Scenario::from_toml(&two_senders(rc), "rate-control.toml").unwrap();
        common::run(&sc, &SimOptions::with_seed(1))
    };
    let plain = run("");
    let dcqcn = run("[flow.rate_control]\ncc = \"dcqcn\"\nincrease_period = \"1ms\"\nalpha_period = \"1ms\"");
    let loss = |r: &RunFigures| r.flows.iter().map(|f| f.loss_pct.unwrap_or(0.0)).fold(0.0, f64::max);
    let depth = |r: &RunFigures| r.counters["queues"]["S1->S2.max_depth_pkts"];
    let total = |r: &RunFigures| r.flows.iter().map(|f| f.delivered_mbps).sum::<f64>();
    let rc = &dcqcn.counters["rate-control"];
    eprintln!(
        "constant rate: loss {:.1} %, max depth {}, {:.2} Mbit/s; DCQCN: loss {:.2} %, max depth {}, {:.2} Mbit/s, \
         {rc:?}",
        loss(&plain),
        depth(&plain),
        total(&plain),
        loss(&dcqcn),
        depth(&dcqcn),
        total(&dcqcn)
    );
    assert!(
        loss(&plain) > 40.0 && depth(&plain) == 200,
        "two line-rate senders overflow the port"
    );
    assert!(rc["a.cnps"] > 0 && rc["b.cnps"] > 0 && rc["a.notifications"] == rc["a.cnps"]);
    assert!(loss(&dcqcn) < 1.0, "DCQCN loses {} %", loss(&dcqcn));
    assert!(depth(&dcqcn) < 100, "DCQCN's queue reached {}", depth(&dcqcn));
    assert!(total(&dcqcn) > 8.0, "and keeps the port busy: {} Mbit/s", total(&dcqcn));
}

/// Writes each class's measured and target rates into S1's PMQECN registers at the start, as
/// the control plane would after its first period.
struct StaticTargets {
    measured_kbps: u64,
    target_kbps: u64,
}

impl mpsched_sim::Component for StaticTargets {
    fn name(&self) -> &str {
        "static-targets"
    }

    fn start(&mut self, net: &mut mpsched_sim::Net<'_>) {
        use mpsched_core::control::ControlPlane;
        for class in 0..3 {
            net.write_register("S1", "vq_rate_kbps", class, self.measured_kbps)
                .unwrap();
            net.write_register("S1", "vq_target_kbps", class, self.target_kbps)
                .unwrap();
        }
    }
}

/// Table 1's network with three PMQECN reaction points (line rate 10 Mbit/s, Algorithm 3 from
/// 1 Mbit/s) and S1 running `program` (`pmqecn` without its control plane: the test writes
/// the rates).
fn three_reaction_points(program: &'static str) -> Scenario {
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/table1-sp-vs-vq-wrr").unwrap();
    let text = text
        .replace(
            "rate = \"6.2Mbps\"",
            "rate = \"10Mbps\"\nrate_control = { cc = \"pmqecn\" }",
        )
        .replace(
            "[programs.vq-wrr]",
            "[programs.pmqecn]\nthreshold = 11\ncontrol_period = \"0s\"\n[programs.vq-wrr]",
        );
    let sc = Scenario::from_toml(&text, path).unwrap();
    let mut sc = sc.with_variant("VQ-WRR").unwrap();
    let s1 = sc.node_index("S1").unwrap();
    sc.programs[s1] = Some(program);
    sc
}

#[test]
fn pmqecn_feedback_cuts_the_reaction_points_and_keeps_the_virtual_queues_short() {
    let run = |program: &'static str| {
        let sc = three_reaction_points(program);
        let mut sim = mpsched_sim::Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
        if program == "pmqecn" {
            sim.add_component(Box::new(StaticTargets {
                measured_kbps: 10_000,
                target_kbps: 3_000,
            }));
        }
        sim.run().unwrap().figures
    };
    let plain = run("vq-wrr");
    let fed = run("pmqecn");
    let s1 = &fed.counters["S1"];
    let loss = |r: &RunFigures| r.flows.iter().map(|f| f.loss_pct.unwrap_or(0.0)).fold(0.0, f64::max);
    let rc = &fed.counters["rate-control"];
    eprintln!(
        "vq-wrr alone: loss {:.1} %, vq drops {}; pmqecn: loss {:.2} %, vq drops {}, feedback {} (held {}), {:?} Mbit/s, \
         {rc:?}",
        loss(&plain),
        plain.counters["S1"]["vq.drops"],
        loss(&fed),
        s1["vq.drops"],
        s1["pmqecn.feedback"],
        s1["pmqecn.feedback_held"],
        fed.flows.iter().map(|f| f.delivered_mbps).collect::<Vec<_>>()
    );
    // Without feedback the reaction points climb to the line rate and the classes overflow.
    assert!(loss(&plain) > 30.0, "{}", loss(&plain));
    // With it, each feedback cuts a sender to 3/10 of its rate: little is lost and the port
    // stays busy, shared by the three classes.
    assert!(s1["pmqecn.feedback"] > 10 && rc["high.notifications"] > 0 && rc["low.notifications"] > 0);
    assert!(loss(&fed) < 5.0, "{}", loss(&fed));
    let total: f64 = fed.flows.iter().map(|f| f.delivered_mbps).sum();
    assert!(total > 6.0, "{total}");
    assert_eq!(s1["vq.accounting_errors"], 0);
}

#[test]
fn vq_wrr_on_single_queue_ports_counts_every_departure() {
    let text = two_senders("").replace("queue_pkts = 200\n", "").replace(
        "routing = \"shortest\"",
        "routing = \"shortest\"\nqueue_pkts = 512\nprogram = \"vq-wrr\"",
    );
    let sc = Scenario::from_toml(&text, "single-queue.toml").unwrap();
    let r = common::run(&sc, &SimOptions::with_seed(1));
    for s in ["S1", "S2"] {
        let c = &r.counters[s];
        assert_eq!(c["vq.accounting_errors"], 0, "{s}: {c:?}");
        assert!(c["vq.top_level"] > 1000, "{s}: one level, the top: {c:?}");
        assert_eq!(c["vq.downgraded"], 0, "{s}: {c:?}");
    }
}

/// Scenario 1 for `secs` seconds, variant `name` (objective `objective` for PMQECN).
fn scenario1(name: &str, secs: u32, objective: &str) -> RunFigures {
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/s1-performance").unwrap();
    let text = text
        .replace("duration = \"60s\"", &format!("duration = \"{secs}s\""))
        .replace("objective = \"paper\"", &format!("objective = \"{objective}\""));
    let sc = Scenario::from_toml(&text, path).unwrap();
    common::run(&sc.with_variant(name).unwrap(), &SimOptions::with_seed(1))
}

#[test]
fn scenario1_every_scheme_shares_the_port_and_the_baselines_signal_before_their_queue_fills() {
    for name in ["PMQECN", "DCQCN", "P4QCN", "TCN"] {
        let r = scenario1(name, 20, "paper");
        let d = ["A", "B", "C"].map(|f| delivered(&r, f));
        let total: f64 = d.iter().sum();
        eprintln!("scenario 1, {name}: A / B / C {d:?} Mbit/s");
        assert!(total > 7.0, "{name}: the port carried {total:.2} of 10 Mbit/s");
        assert!(d.iter().all(|&x| x > 1.5), "{name}: a class starved: {d:?}");
        let c = &r.counters["S1"];
        match name {
            "PMQECN" => assert!(c["pmqecn.feedback"] > 0, "{c:?}"),
            "P4QCN" => {
                assert!(c["qcn.feedback"] > 0, "{c:?}");
                assert_eq!(c["baseline.marked"], 0, "P4QCN marks nothing: it reflects");
            }
            _ => assert!(c["baseline.marked"] > 0, "{c:?}"),
        }
        if name != "PMQECN" {
            // The reaction points hold the one 64-packet queue below its limit.
            assert_eq!(c["baseline.tail_drops"], 0, "{name}: {c:?}");
            assert!(r.flows.iter().all(|f| f.loss_pct == Some(0.0)), "{name}");
        }
    }
}

#[test]
fn scenario1_with_dimensionless_objectives_the_model_starves_the_delay_sensitive_classes() {
    // The reading this crate first implemented (README "Control plane"): the model's delay
    // terms win and layer 2 drives categories A and C to the floor; class B takes the port.
    let r = scenario1("PMQECN", 20, "normalised");
    let d = ["A", "B", "C"].map(|f| delivered(&r, f));
    eprintln!("scenario 1, PMQECN normalised: A / B / C {d:?} Mbit/s");
    assert!(d[0] < 1.0 && d[2] < 1.0 && d[1] > 7.0, "{d:?}");
}

#[test]
fn scenario2_the_second_class_gets_through_under_every_scheme() {
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/s2-fairness").unwrap();
    let text = text.replace("duration = \"40s\"", "duration = \"20s\"");
    let sc = Scenario::from_toml(&text, path).unwrap();
    let mut q2_of = std::collections::BTreeMap::new();
    for name in ["PMQECN", "DCQCN", "P4QCN", "TCN"] {
        let r = common::run(&sc.with_variant(name).unwrap(), &SimOptions::with_seed(1));
        let (q1, q2) = (delivered(&r, "q1"), delivered(&r, "q2"));
        // Each flow's mean is over its own time: q1's 20 s, q2's last 10.
        eprintln!("scenario 2, {name}: q1 {q1:.2}, q2 {q2:.2} Mbit/s");
        assert!(q1 > 3.0 && q2 > 2.0, "{name}: q1 {q1:.2}, q2 {q2:.2}");
        if matches!(name, "DCQCN" | "TCN") {
            // One shared queue marks whichever packets it holds: the later class ends lower.
            assert!(q2 < q1, "{name}: q1 {q1:.2}, q2 {q2:.2}");
        }
        q2_of.insert(name, q2);
    }
    // Per-class thresholds: the later class gets more under PMQECN than under the two
    // marking schemes (docs/reproduction.md, scenario 2).
    assert!(q2_of["PMQECN"] > q2_of["DCQCN"].max(q2_of["TCN"]), "{q2_of:?}");
}

#[test]
fn a_named_links_queue_is_in_the_time_series_with_the_most_of_each_interval() {
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/s1-performance").unwrap();
    let text = text.replace("duration = \"60s\"", "duration = \"3s\"");
    let sc = Scenario::from_toml(&text, path).unwrap().with_variant("DCQCN").unwrap();
    let out = mpsched_sim::Simulation::new(&sc, &SimOptions::with_seed(1))
        .unwrap()
        .run()
        .unwrap();
    let col = |name: &str| out.series.columns.iter().position(|c| c == name).unwrap();
    let (now, most) = (col("bottleneck_queue_pkts"), col("bottleneck_queue_max_pkts"));
    // The two named links have the columns; no other link does.
    let queue_columns: Vec<&str> = out
        .series
        .columns
        .iter()
        .filter(|c| c.ends_with("_queue_pkts"))
        .map(String::as_str)
        .collect();
    assert_eq!(queue_columns, ["bottleneck_queue_pkts", "to_h5_queue_pkts"]);
    // The interval's maximum sees bursts the sample at its end misses.
    assert!(out.series.rows.iter().any(|r| r[most] > r[now]));
    // DCQCN holds the 64-packet queue near its marking point: it fills, never overflows.
    let peak = out.series.rows.iter().map(|r| r[most]).fold(0.0, f64::max);
    assert!((11.0..64.0).contains(&peak), "{peak}");
}
