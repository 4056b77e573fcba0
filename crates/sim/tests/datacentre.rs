//! A generated fat tree in the simulator: ECMP routing runs, is deterministic, and a permutation
//! of long TCP flows stays below full bisection bandwidth because flows collide on links.

use mpsched_scenario::builtin;
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

fn permutation(duration_ps: u64) -> Scenario {
    let (path, text) = builtin::find("dc/fat-tree-k4-permutation").unwrap();
    Scenario::from_toml(text, path).unwrap().scaled_to(duration_ps)
}

fn run(sc: &Scenario) -> RunFigures {
    Simulation::new(sc, &SimOptions::with_seed(sc.seed))
        .unwrap()
        .run()
        .unwrap()
        .figures
}

#[test]
fn a_permutation_on_a_fat_tree_collides_under_ecmp_and_repeats_exactly() {
    let sc = permutation(300_000_000_000);
    let a = run(&sc);
    assert_eq!(a.flows.len(), 16);
    let total: f64 = a.flows.iter().map(|f| f.delivered_mbps).sum();
    // Full bisection: 16 flows of 1 Gbit/s. Collisions on shared uplinks cost a good part of it.
    assert!(total > 3_000.0 && total < 0.9 * 16_000.0, "total {total} Mbit/s");
    assert!(a.flows.iter().all(|f| f.delivered_mbps > 0.0), "every flow delivers");
    let b = run(&sc);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap(),
        "same seed, same figures"
    );
}

/// #11 item 3: a web-search workload on a k = 4 fat tree: flows finish, each row's completion
/// time is at least its ideal, mice finish faster than elephants, and a rerun is identical.
#[test]
fn a_websearch_workload_finishes_with_completion_times_above_the_ideal() {
    let text = r#"
[scenario]
name = "ws"
duration = "200ms"
seed = 2
[topology]
kind = "fat-tree"
k = 4
[topology.host_links]
rate = "1Gbps"
delay = "1us"
[topology.edge_links]
rate = "1Gbps"
delay = "1us"
[topology.core_links]
rate = "1Gbps"
delay = "1us"
[tcp]
min_rto = "5ms"
[[workload]]
name = "ws"
cdf = "websearch"
load = 0.5
stop = "100ms"
"#;
    let sc = Scenario::from_toml(text, "ws.toml").unwrap();
    let figs = run(&sc);
    let rows = mpsched_scenario::completion::rows(&sc, &figs).unwrap();
    assert_eq!(rows.len(), sc.flows.len());
    assert!(rows.len() > 20, "{} flows", rows.len());
    let finished: Vec<_> = rows.iter().filter(|r| r.fct_s.is_some()).collect();
    assert!(
        finished.len() * 10 >= rows.len() * 9,
        "{} of {} finished",
        finished.len(),
        rows.len()
    );
    for r in &finished {
        assert!(r.slowdown().unwrap() >= 1.0, "{r:?}");
    }
    let stats = mpsched_scenario::completion::stats(&rows);
    let (mice, all) = (stats[1].fct_ms.unwrap(), stats[0].fct_ms.unwrap());
    assert!(mice[1] <= all[1], "mice median {} against all {}", mice[1], all[1]);
    assert_eq!(run(&sc), figs, "same seed, same run");
}

/// #11: a permutation of long flows on a k = 8 fat tree (128 hosts), drawn by a workload with
/// `arrivals = "once"`: every host sends one flow and receives one, never to itself, and ECMP's
/// collisions keep the total well under full bisection bandwidth.
#[test]
fn a_k8_permutation_workload_pairs_every_host_once_and_stays_under_bisection() {
    let (path, text) = builtin::find("dc/fat-tree-k8-permutation").unwrap();
    let sc = Scenario::from_toml(text, path).unwrap().scaled_to(200_000_000_000);
    assert_eq!(sc.flows.len(), 128);
    let mut sends = vec![0; sc.nodes.len()];
    let mut receives = vec![0; sc.nodes.len()];
    for f in &sc.flows {
        assert_ne!(f.src, f.dst);
        sends[f.src] += 1;
        receives[f.dst] += 1;
    }
    let hosts: Vec<usize> = (0..sc.nodes.len()).filter(|&n| sends[n] + receives[n] > 0).collect();
    assert_eq!(hosts.len(), 128);
    assert!(
        hosts.iter().all(|&h| sends[h] == 1 && receives[h] == 1),
        "a permutation"
    );
    let figs = run(&sc);
    let total: f64 = figs.flows.iter().map(|f| f.delivered_mbps).sum();
    assert!(
        total > 0.1 * 128_000.0 && total < 0.7 * 128_000.0,
        "total {total} Mbit/s of 128 000"
    );
}

/// #11 item 1: a link that fails during a run loses what it carries; once the control plane
/// has routed around it nothing enters it again, while without rerouting the flows ECMP hashed
/// onto it stay silent.
#[test]
fn a_failed_link_blackholes_until_the_control_plane_routes_around_it() {
    let (path, text) = builtin::find("dc/fat-tree-k4-permutation").unwrap();
    let run = |duration: &str, reroute: &str| {
        let t = text.replace("duration = \"2s\"", &format!("duration = \"{duration}\""))
            + &format!(
                "\n[[failure]]\na = \"tor0\"\nb = \"pod0-agg0\"\nat = \"100ms\"\nreroute_after = \"{reroute}\"\n"
            );
        let sc = Scenario::from_toml(&t, path).unwrap();
        assert_eq!(sc.failures.len(), 1);
        Simulation::new(&sc, &SimOptions::with_seed(sc.seed))
            .unwrap()
            .run()
            .unwrap()
    };
    let lost = |out: &mpsched_sim::RunOutput| {
        let q = &out.figures.counters["queues"];
        q["tor0->pod0-agg0.down_drops"] + q["pod0-agg0->tor0.down_drops"]
    };
    // Flows that delivered nothing in the last 500 ms (samples after 0.3 s).
    let silent = |out: &mpsched_sim::RunOutput| {
        let t = out.series.values("time_s").unwrap();
        (0..16)
            .filter(|i| {
                let v = out.series.values(&format!("f{i}_mbps")).unwrap();
                t.iter()
                    .zip(&v)
                    .filter(|(t, _)| **t > 0.3 + 1e-9)
                    .all(|(_, m)| *m == 0.0)
            })
            .count()
    };
    let short = run("400ms", "10ms");
    assert!(lost(&short) > 0, "the link carried traffic when it failed");
    assert_eq!(short.figures.counters["failures"]["reroutes"], 1);
    let rerouted = run("800ms", "10ms");
    assert_eq!(
        lost(&rerouted),
        lost(&short),
        "after the reroute nothing enters the failed link"
    );
    let stuck = run("800ms", "10s");
    assert_eq!(stuck.figures.counters["failures"]["reroutes"], 0);
    assert!(
        silent(&stuck) > silent(&rerouted),
        "blackholed flows: {} without rerouting, {} with",
        silent(&stuck),
        silent(&rerouted)
    );
    // (The total need not rise: the revived flows share links the blackholed ones left idle.)
}

/// #11, must-show 3: each switch's ECMP split is even across its uplinks over many flows. The
/// web-search flows of a k = 8 fat tree (about 28 000) walk hop by hop through the switches'
/// own programs, built from the control plane's tables as a run builds them; at every rack and
/// aggregation switch, the flows it sends up spread over its four uplinks within 20 % of even.
#[test]
fn every_switch_splits_many_flows_evenly_over_its_uplinks() {
    use mpsched_core::packet::{proto, PacketMeta};
    use mpsched_core::program::{Ctx, Program, Verdict};
    use mpsched_core::rng::SeededRandom;
    use mpsched_core::switch::MultipathSwitch;
    let text = r#"
[scenario]
name = "even"
duration = "3s"
[topology]
kind = "fat-tree"
k = 8
[topology.host_links]
rate = "1Gbps"
[topology.edge_links]
rate = "1Gbps"
[topology.core_links]
rate = "1Gbps"
[[workload]]
name = "ws"
cdf = "websearch"
load = 1.0
"#;
    let sc = Scenario::from_toml(text, "even.toml").unwrap();
    assert!(sc.flows.len() > 20_000, "{} flows", sc.flows.len());
    let w = sc.wiring().unwrap();
    let mut programs: Vec<Option<MultipathSwitch>> = w
        .switches
        .iter()
        .map(|c| {
            c.as_ref()
                .map(|c| MultipathSwitch::new(c, |_| Box::new(SeededRandom::new(1))).unwrap())
        })
        .collect();
    let tier = |n: usize| {
        let name = &sc.nodes[n].name;
        if name.starts_with("core") {
            2
        } else if name.contains("agg") {
            1
        } else {
            0
        }
    };
    // Per switch, per port: flows sent up through it.
    let mut up: Vec<std::collections::BTreeMap<u16, u32>> = vec![Default::default(); sc.nodes.len()];
    for f in &sc.flows {
        let mut meta = PacketMeta::udp(sc.nodes[f.src].ip, sc.nodes[f.dst].ip, f.src_port, f.dst_port, 1500);
        meta.proto = proto::TCP;
        let (mut at, mut port) = (w.ports[f.src][0].peer, w.ports[f.src][0].peer_port);
        while at != f.dst {
            let mut m = meta;
            m.ingress_port = port;
            let out = match programs[at].as_mut().unwrap().ingress(&mut m, &mut Ctx::new()) {
                Verdict::Forward(p) => p,
                v => panic!("flow {} at {}: {v:?}", f.name, sc.nodes[at].name),
            };
            let next = w.ports[at][usize::from(out)];
            if sc.nodes[next.peer].kind == mpsched_scenario::NodeKind::Switch && tier(next.peer) > tier(at) {
                *up[at].entry(out).or_default() += 1;
            }
            (at, port) = (next.peer, next.peer_port);
        }
    }
    let mut checked = 0;
    for (n, ports) in up.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
        assert_eq!(
            ports.len(),
            4,
            "`{}` uses all four uplinks: {ports:?}",
            sc.nodes[n].name
        );
        let mean = ports.values().sum::<u32>() as f64 / 4.0;
        assert!(mean > 100.0, "`{}`: {mean} flows an uplink", sc.nodes[n].name);
        for &c in ports.values() {
            assert!(
                (c as f64 / mean - 1.0).abs() < 0.2,
                "`{}` uneven: {ports:?}",
                sc.nodes[n].name
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 32 + 32, "every rack and aggregation switch");
}
