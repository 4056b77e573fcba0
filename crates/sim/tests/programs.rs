//! Programs named by the scenario run in the simulator: ECMP under its own name is the ECMP
//! of `routing = "ecmp"` packet for packet, and LetFlow moves flowlets where ECMP keeps flows.

#[allow(dead_code)]
mod common;

use mpsched_scenario::overrides::Override;
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::SimOptions;

/// MP-HULA's layout, 60 ms of web-search arrivals at 50 % load, 150 ms run.
fn mphula(extra: &[(&str, &str)]) -> Scenario {
    let (path, text) = mpsched_scenario::builtin::find("mphula2018/fig5-websearch-tcp-ecmp").unwrap();
    let mut set: Vec<Override> = [("scenario.duration", "150ms"), ("workload.stop", "60ms")]
        .iter()
        .chain(extra)
        .map(|(k, v)| Override::parse(k, v).unwrap())
        .collect();
    set.dedup_by(|a, b| a.key == b.key);
    Scenario::from_toml_with(text, path, &set).unwrap()
}

fn fcts(r: &RunFigures) -> Vec<Option<f64>> {
    r.flows
        .iter()
        .map(|f| f.tcp.as_ref().and_then(|t| t.completion_s))
        .collect()
}

fn total(r: &RunFigures, counter: &str) -> u64 {
    r.counters.values().filter_map(|c| c.get(counter)).sum()
}

#[test]
fn ecmp_by_name_is_routing_ecmp_exactly() {
    let by_name = common::run(&mphula(&[]).with_variant("ECMP").unwrap(), &SimOptions::with_seed(2));
    let by_routing = common::run(&mphula(&[("scenario.routing", "ecmp")]), &SimOptions::with_seed(2));
    assert!(by_name.flows.len() > 100);
    assert_eq!(fcts(&by_name), fcts(&by_routing));
    assert_eq!(by_name.counters, by_routing.counters);
}

#[test]
fn letflow_starts_flowlets_continues_them_and_changes_completions() {
    let sc = mphula(&[]);
    let ecmp = common::run(&sc.with_variant("ECMP").unwrap(), &SimOptions::with_seed(2));
    let letflow = common::run(&sc.with_variant("LetFlow").unwrap(), &SimOptions::with_seed(2));
    let (new, continued) = (
        total(&letflow, "letflow.new_flowlets"),
        total(&letflow, "letflow.continued"),
    );
    assert!(new > 100, "{new} flowlets");
    assert!(continued > 10 * new, "{continued} packets continued {new} flowlets");
    assert_eq!(total(&ecmp, "letflow.new_flowlets"), 0);
    let finished = |r: &RunFigures| {
        r.flows
            .iter()
            .filter(|f| f.tcp.as_ref().is_some_and(|t| t.completion_s.is_some()))
            .count()
    };
    assert!(finished(&letflow) * 100 >= letflow.flows.len() * 95);
    assert_ne!(fcts(&ecmp), fcts(&letflow), "LetFlow routed exactly as ECMP");
    // A longer gap leaves fewer flowlets.
    let long = mphula(&[("programs.letflow.flowlet_gap", "10ms")]);
    let long = common::run(&long.with_variant("LetFlow").unwrap(), &SimOptions::with_seed(2));
    let fewer = total(&long, "letflow.new_flowlets");
    assert!(fewer < new, "{fewer} flowlets at a 10 ms gap, {new} at 100 us");
}
