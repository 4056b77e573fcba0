//! HULA and MP-HULA in the simulator (#29): probes flow and are folded at every switch, MP-HULA's
//! ToRs associate MPTCP connections and push and pop the connection header, and after a link
//! fails HULA sends no data into it beyond the ageing time while ECMP, without a control plane,
//! keeps sending into it.

#[allow(dead_code)]
mod common;

use mpsched_scenario::overrides::Override;
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::SimOptions;

fn total(r: &RunFigures, counter: &str) -> u64 {
    r.counters.values().filter_map(|c| c.get(counter)).sum()
}

/// MP-HULA's failover file, shortened: the link fails at 300 ms, the run ends at 400 ms.
fn failover() -> Scenario {
    let (path, text) = mpsched_scenario::builtin::find("mphula2018/fig8-failover").unwrap();
    let set: Vec<Override> = [
        ("scenario.duration", "400ms"),
        ("workload.stop", "400ms"),
        ("scenario.sample_interval", "100ms"),
    ]
    .iter()
    .map(|(k, v)| Override::parse(k, v).unwrap())
    .collect();
    Scenario::from_toml_with(text, path, &set).unwrap()
}

fn queue_counter(r: &RunFigures, key: &str) -> u64 {
    r.counters.get("queues").and_then(|q| q.get(key)).copied().unwrap_or(0)
}

/// The last data packet sent into the failed link pod0-agg0 - core0 (either way), µs after the
/// failure at 300 ms; None when none was.
fn last_into_dead_link_us(r: &RunFigures) -> Option<u64> {
    let last = ["pod0-agg0->core0", "core0->pod0-agg0"]
        .iter()
        .map(|l| queue_counter(r, &format!("{l}.last_sent_into_down_us")))
        .max()?;
    (last > 0).then(|| last - 300_000)
}

#[test]
fn hula_stops_sending_into_a_failed_link_within_the_ageing_time_and_ecmp_does_not() {
    let sc = failover();
    let hula = common::run(&sc.with_variant("MPTCP-MP-HULA").unwrap(), &SimOptions::with_seed(1));
    let ecmp = common::run(&sc.with_variant("MPTCP-ECMP").unwrap(), &SimOptions::with_seed(1));
    assert!(total(&hula, "hula.probes_in") > 10_000, "probes folded");
    assert!(total(&hula, "mphula.assoc") >= 16 && total(&hula, "mphula.joins") >= 16);
    assert!(total(&hula, "mphula.pushed") > 0 && total(&hula, "mphula.popped") > 0);
    // HULA: nothing later than the ageing time (1 ms) plus a flowlet gap (100 us).
    let h = last_into_dead_link_us(&hula).unwrap_or(0);
    assert!(h <= 1_100, "HULA sent into the dead link {h} us after the failure");
    // ECMP keeps its groups (no reroute within the run): blackholed flows retransmit into it.
    let e = last_into_dead_link_us(&ecmp).expect("ECMP sends into the dead link");
    assert!(
        e > 100_000,
        "ECMP's last packet into the dead link {e} us after the failure"
    );
}
