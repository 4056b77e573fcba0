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
