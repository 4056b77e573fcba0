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
