//! TCP in the simulator and the AFMT paper's experiments: what issue #4 requires them to show.

use mpsched_scenario::builtin;
use mpsched_scenario::results::{FlowFigures, RunFigures};
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

fn scenario(name: &str) -> Scenario {
    let (path, text) = builtin::find(name).unwrap();
    Scenario::from_toml(text, path).unwrap()
}

fn run_sc(sc: &Scenario) -> RunFigures {
    Simulation::new(sc, &SimOptions::with_seed(sc.seed))
        .unwrap()
        .run()
        .unwrap()
        .figures
}

fn run(name: &str, variant: Option<&str>) -> RunFigures {
    let sc = scenario(name);
    let sc = match variant {
        Some(v) => sc.with_variant(v).unwrap(),
        None => sc,
    };
    run_sc(&sc)
}

fn flow<'a>(r: &'a RunFigures, id: &str) -> &'a FlowFigures {
    r.flows.iter().find(|f| f.id == id).unwrap()
}

#[test]
fn one_flow_fills_the_bottleneck_at_every_rate_with_both_controllers() {
    for cc in ["reno", "cubic"] {
        for mbps in [10.0, 50.0, 100.0] {
            let r = run("tcp/single-flow", Some(&format!("{cc}-{mbps}M")));
            let f = flow(&r, "tcp1");
            // Payload share of a full-sized frame: 1448 / 1514.
            let ceiling = mbps * 1448.0 / 1514.0;
            assert!(
                f.delivered_mbps > 0.97 * ceiling && f.delivered_mbps <= ceiling * 1.001,
                "{cc} at {mbps} Mbit/s: {} of {ceiling}",
                f.delivered_mbps
            );
            let t = f.tcp.as_ref().unwrap();
            assert_eq!(t.cc, cc);
            assert!(
                t.fast_retransmits.unwrap() > 0,
                "a 100-packet drop-tail queue overflows"
            );
            assert_eq!(
                t.rtos,
                Some(0),
                "{cc} {mbps}: single losses are repaired without timeouts"
            );
        }
    }
}

#[test]
fn two_flows_share_the_bottleneck() {
    for cc in ["reno", "cubic"] {
        let r = run("tcp/two-flows", Some(cc));
        // tcp2 runs 28 of the 30 s; compare bytes over the same 28 s through rates.
        let (a, b) = (flow(&r, "tcp1").delivered_mbps, flow(&r, "tcp2").delivered_mbps);
        let total = a + b * 28.0 / 30.0;
        assert!(total > 0.95 * 50.0 * 1448.0 / 1514.0 * 0.99, "{cc}: total {total}");
        let share = b / (a + b);
        assert!((0.35..0.65).contains(&share), "{cc}: tcp2's share {share}");
    }
}

#[test]
fn ecn_marking_below_the_drop_point_replaces_loss() {
    for cc in ["reno", "cubic", "dctcp"] {
        let r = run("tcp/ecn", Some(cc));
        let f = flow(&r, "tcp1");
        let t = f.tcp.as_ref().unwrap();
        assert!(t.ecn_reductions.unwrap() > 10, "{cc}: {t:?}");
        assert!(t.ce_segments.unwrap() >= t.ecn_reductions.unwrap());
        assert_eq!(
            t.retransmitted_segments,
            Some(0),
            "{cc}: the queue never reaches 100 packets"
        );
        assert!(
            f.delivered_mbps > 0.97 * 50.0 * 1448.0 / 1514.0,
            "{cc}: {}",
            f.delivered_mbps
        );
    }
    // DCTCP reacts to the extent of marking, so it cuts far more often but by less.
    let reno = run("tcp/ecn", Some("reno"));
    let dctcp = run("tcp/ecn", Some("dctcp"));
    let cuts = |r: &RunFigures| flow(r, "tcp1").tcp.as_ref().unwrap().ecn_reductions.unwrap();
    assert!(cuts(&dctcp) > 3 * cuts(&reno), "{} vs {}", cuts(&dctcp), cuts(&reno));
}

#[test]
fn transfers_complete_and_request_response_exchanges_run() {
    let mut sc = scenario("tcp/single-flow").with_variant("reno-10M").unwrap();
    sc.flows[0].tcp.as_mut().unwrap().app = mpsched_scenario::TcpApp::Transfer { size_bytes: 1_000_000 };
    let r = run_sc(&sc);
    let t = flow(&r, "tcp1").tcp.clone().unwrap();
    let done = t.completion_s.expect("the transfer completes");
    // 1 MB of payload at 10 Mbit/s on the wire (1514-byte frames) takes 0.836 s; slow start
    // from 10 segments adds a few round trips.
    assert!((0.83..1.2).contains(&done), "completion {done} s");
    assert!((flow(&r, "tcp1").delivered_mib - 1_000_000.0 / 1048576.0).abs() < 1e-3);

    sc.flows[0].tcp.as_mut().unwrap().app = mpsched_scenario::TcpApp::RequestResponse {
        request_bytes: 200,
        response_bytes: 100_000,
        count: 0,
    };
    let r = run_sc(&sc);
    let t = flow(&r, "tcp1").tcp.clone().unwrap();
    let n = t.responses.unwrap();
    let ms = t.mean_response_ms.unwrap();
    // 100 kB at 10 Mbit/s is 83.6 ms on the wire.
    assert!((83.0..200.0).contains(&ms), "mean response {ms} ms");
    assert!(n as f64 > 0.8 * 20_000.0 / ms, "{n} exchanges in 20 s at {ms} ms each");
}

fn total_download_mib(r: &RunFigures) -> f64 {
    r.flows
        .iter()
        .filter(|f| f.id.starts_with("download"))
        .map(|f| f.delivered_mib)
        .sum()
}

#[test]
fn afmt_beats_round_robin_and_the_single_path_and_reorders_less() {
    let single = total_download_mib(&run("afmt/single-path", None));
    for topo in ["afmt/three-subtunnels", "afmt/two-subtunnels"] {
        let rr = run(topo, Some("RR"));
        let afmt = run(topo, Some("AFMT"));
        let (g_rr, g_afmt) = (total_download_mib(&rr), total_download_mib(&afmt));
        assert!(g_afmt > 1.3 * g_rr, "{topo}: AFMT {g_afmt} MiB vs RR {g_rr} MiB");
        assert!(g_afmt > single, "{topo}: AFMT {g_afmt} MiB vs single path {single} MiB");
        let down = |r: &RunFigures| r.tunnels.iter().find(|t| t.id == "mt.down").unwrap().clone();
        let (t_rr, t_afmt) = (down(&rr), down(&afmt));
        assert_eq!((t_rr.transport.as_str(), t_afmt.transport.as_str()), ("udp", "tcp"));
        assert!(
            t_afmt.reordered_pct * 3.0 < t_rr.reordered_pct,
            "{topo}: reordering AFMT {} % vs RR {} %",
            t_afmt.reordered_pct,
            t_rr.reordered_pct
        );
        // What AFMT decides, as the kernel test judges it: a known flow moves rarely.
        let c = &t_afmt.scheduler_counters;
        let known = c["afmt_moves"] + c["afmt_stays"];
        assert!(known > 1000 && c["afmt_moves"] * 30 < known * 2, "{topo}: {c:?}");
        // Round robin spreads evenly; AFMT gives the fastest uplink the most.
        let per = &t_afmt.per_subtunnel_pkts;
        assert!(per["up50"] > per["up32"], "{per:?}");
    }
}

#[test]
fn tunnel_runs_are_deterministic() {
    let sc = scenario("afmt/three-subtunnels")
        .with_variant("AFMT")
        .unwrap()
        .scaled_to(8_000_000_000_000);
    let a = serde_json::to_string(&run_sc(&sc)).unwrap();
    let b = serde_json::to_string(&run_sc(&sc)).unwrap();
    assert_eq!(a, b);
}
