//! Issue #30, DCQCN at data-centre rates: `pmqecn2024/dc-dcqcn-fat-tree` (web-search flows on
//! a k = 4 fat tree at 100 Gbit/s, DCQCN against DCTCP on the same flows), shortened to a few
//! milliseconds of arrivals at the same load.

use mpsched_scenario::completion::{CompletionStats, RATE_CONTROL_COUNTERS, SIZE_BUCKETS};
use mpsched_scenario::overrides::Override;
use mpsched_scenario::{builtin, Protocol, Scenario, TcpApp};
use mpsched_sim::experiment::{run_plan, Plan};

fn shortened(duration: &str) -> Scenario {
    let (path, text) = builtin::find("pmqecn2024/dc-dcqcn-fat-tree").unwrap();
    let o = Override::parse("scenario.duration", duration).unwrap();
    Scenario::from_toml_with(text, path, &[o]).unwrap()
}

#[test]
fn dcqcn_and_dctcp_run_the_same_flows_every_one_completes_and_each_size_has_its_median_and_p99() {
    let sc = shortened("4ms");
    let (dcqcn, dctcp) = (sc.with_variant("DCQCN").unwrap(), sc.with_variant("DCTCP").unwrap());
    assert!(sc.flows.len() > 100, "{} flows", sc.flows.len());
    // The same flows: ends, starts and sizes; paced UDP in one, TCP in the other.
    for (u, t) in dcqcn.flows.iter().zip(&dctcp.flows) {
        assert_eq!((u.src, u.dst, u.start_ps), (t.src, t.dst, t.start_ps));
        assert_eq!((u.protocol, t.protocol), (Protocol::Udp, Protocol::Tcp));
    }
    let results = run_plan(&sc, &Plan::default(), |_| {}).unwrap();
    assert_eq!(results.len(), 2);
    for r in &results {
        let v = r.variant.as_deref().unwrap();
        let classes: &[CompletionStats] = &r.summary.completion;
        assert_eq!(classes.len(), 3 + SIZE_BUCKETS.len(), "{v}");
        let all = &classes[0];
        assert_eq!(
            (all.flows, all.finished),
            (sc.flows.len(), sc.flows.len()),
            "{v}: every flow completes"
        );
        for (c, (name, _, _)) in classes[3..].iter().zip(SIZE_BUCKETS) {
            assert_eq!(c.class, name);
            if c.flows > 0 {
                let [_, median, p99] = c.slowdown.unwrap_or_else(|| panic!("{v} {name}: no slowdown"));
                assert!(median >= 1.0 && p99 >= median, "{v} {name}: median {median}, p99 {p99}");
            }
        }
        let buckets_with_flows = classes[3..].iter().filter(|c| c.flows > 0).count();
        assert!(
            buckets_with_flows >= 4,
            "{v}: {buckets_with_flows} size buckets hold flows"
        );
        let run = &r.summary.repetitions[0];
        // The switches mark: DCQCN's RED between Kmin and Kmax, DCTCP's threshold (TCN).
        let marked: u64 = run.counters.values().filter_map(|c| c.get("baseline.marked")).sum();
        assert!(marked > 0, "{v}: no switch marked");
        // What the scenario allows to be lost: a packet that finds a switch's FIFO full (no
        // PFC here). The links' own queues and the hosts' never overflow (the senders wait for
        // room at their host), and every loss is recovered: each flow delivers its bytes once.
        let link_drops: u64 = run.counters["queues"]
            .iter()
            .filter(|(k, _)| k.ends_with(".tail_drops"))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(link_drops, 0, "{v}: a link's own queue overflowed");
        let fifo_drops: u64 = run.counters.values().filter_map(|c| c.get("baseline.tail_drops")).sum();
        let flows = match v {
            "DCQCN" => &dcqcn.flows,
            _ => &dctcp.flows,
        };
        for (f, fig) in flows.iter().zip(&run.flows) {
            let size = f.paced_size_bytes().or(match f.tcp.as_ref().map(|t| t.app) {
                Some(TcpApp::Transfer { size_bytes }) => Some(size_bytes),
                _ => None,
            });
            let mib = size.unwrap() as f64 / f64::from(1u32 << 20);
            assert!(
                (fig.delivered_mib - mib).abs() < 1e-4,
                "{v} {}: {} MiB of {mib}",
                f.name,
                fig.delivered_mib
            );
        }
        match v {
            "DCQCN" => {
                let rc = &run.counters[RATE_CONTROL_COUNTERS];
                let sum = |key: &str| -> u64 { rc.iter().filter(|(k, _)| k.ends_with(key)).map(|(_, n)| n).sum() };
                assert!(sum(".cnps") > 0, "the receivers answer marks with CNPs");
                // A FIFO that dropped a data packet made its sender go back for it.
                assert_eq!(fifo_drops > 0, sum(".retransmitted_pkts") > 0, "{fifo_drops} dropped");
            }
            _ => {
                // DCTCP's threshold (18 frames) sits far below the 1 000-frame FIFOs.
                assert_eq!(fifo_drops, 0, "DCTCP lost packets");
                let tcp = |g: fn(&mpsched_scenario::results::TcpFigures) -> Option<u64>| -> u64 {
                    run.flows.iter().filter_map(|f| g(f.tcp.as_ref()?)).sum()
                };
                assert_eq!(tcp(|t| t.retransmitted_segments), 0);
                assert!(tcp(|t| t.ecn_reductions) > 0, "DCTCP's windows follow the marks");
            }
        }
    }
}
