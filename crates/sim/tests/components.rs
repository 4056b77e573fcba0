//! Components (issue #9): a part of a simulation written outside the engine, with its own
//! timers and TCP connections. Here a transfer generator, the shape a flow-size workload
//! (issue #11) or an MPTCP connection (issue #12) takes, runs beside a scenario's own flows.

use mpsched_scenario::Scenario;
use mpsched_sim::{Component, ConnId, Net, SimOptions, Simulation};
use mpsched_transport::tcp::TcpConfig;
use std::sync::{Arc, Mutex};

/// Transfers of `size_bytes` from each source to `dst`, each opened at its start time; the
/// completion time of each (last byte delivered in order) goes to `done`.
struct Transfers {
    sources: Vec<(&'static str, u64)>,
    dst: &'static str,
    size_bytes: u64,
    /// Per transfer: its connection and start time.
    open: Vec<(ConnId, u64)>,
    done: Arc<Mutex<Vec<(usize, u64)>>>,
    retransmitted: u64,
}

impl Component for Transfers {
    fn name(&self) -> &str {
        "transfers"
    }

    fn start(&mut self, net: &mut Net<'_>) {
        for (i, &(_, at_ps)) in self.sources.iter().enumerate() {
            net.set_timer(at_ps, i as u64);
        }
    }

    fn on_timer(&mut self, token: u64, net: &mut Net<'_>) {
        let (src, _) = self.sources[token as usize];
        let (s, d) = (net.host(src).unwrap(), net.host(self.dst).unwrap());
        let cfg = TcpConfig::default();
        let c = net.open_tcp(s, d, (40_000 + token as u16, 5001), &cfg).unwrap();
        assert_eq!(
            self.open.len(),
            token as usize,
            "timers fire in the order of their times"
        );
        self.open.push((c, net.now_ps()));
        net.write(c, self.size_bytes);
    }

    fn on_delivered(&mut self, conn: ConnId, delivered_bytes: u64, net: &mut Net<'_>) {
        if delivered_bytes < self.size_bytes {
            return;
        }
        let i = self.open.iter().position(|&(c, _)| c == conn).unwrap();
        self.retransmitted += net.conn_stats(conn).0.retransmitted_segments;
        self.done.lock().unwrap().push((i, net.now_ps() - self.open[i].1));
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("opened".into(), self.open.len() as u64),
            ("retransmitted".into(), self.retransmitted),
        ]
    }
}

const NET: &str = r#"
[scenario]
name = "dumbbell"
duration = "3s"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "h2"
kind = "host"
[[node]]
name = "h3"
kind = "host"
[[node]]
name = "s1"
kind = "switch"
[[node]]
name = "s2"
kind = "switch"
[[link]]
a = "h1"
b = "s1"
rate = "1Gbps"
[[link]]
a = "h2"
b = "s1"
rate = "1Gbps"
[[link]]
a = "s1"
b = "s2"
rate = "100Mbps"
delay = "500us"
queue_pkts = 2000
[[link]]
a = "s2"
b = "h3"
rate = "1Gbps"
[[flow]]
name = "trickle"
src = "h2"
dst = "h3"
rate = "100kbps"
"#;

/// Completion times in ms, by transfer, and the run's figures.
fn run(sources: Vec<(&'static str, u64)>) -> (Vec<f64>, mpsched_scenario::results::RunFigures) {
    let sc = Scenario::from_toml(NET, "dumbbell.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    let done = Arc::new(Mutex::new(Vec::new()));
    let n = sources.len();
    sim.add_component(Box::new(Transfers {
        sources,
        dst: "h3",
        size_bytes: 1_000_000,
        open: Vec::new(),
        done: done.clone(),
        retransmitted: 0,
    }));
    let figures = sim.run().unwrap().figures;
    let mut ms = vec![f64::NAN; n];
    for &(i, ps) in done.lock().unwrap().iter() {
        ms[i] = ps as f64 / 1e9;
    }
    (ms, figures)
}

#[test]
fn a_component_opens_connections_on_its_timers_and_sees_them_complete() {
    let (alone, figures) = run(vec![("h1", 100_000_000_000)]);
    // 1 MB over 100 Mbit/s takes at least 80 ms of serialisation (more with headers), plus a
    // few round trips of slow start at 1 ms each.
    // The bottleneck's queue holds both transfers whole: no loss, so the times are those of
    // serialisation and slow start alone.
    assert!(alone[0] > 80.0 && alone[0] < 120.0, "alone: {alone:?}");
    assert_eq!(figures.counters["transfers"]["retransmitted"], 0);
    assert_eq!(figures.counters["transfers"]["opened"], 1);
    // The scenario's own flow ran beside it, untouched.
    assert!(figures.flows[0].delivered_mbps > 0.09, "{:?}", figures.flows[0]);

    // Two at once share the bottleneck: each takes longer than alone, the pair about twice.
    let (both, _) = run(vec![("h1", 100_000_000_000), ("h2", 100_000_000_000)]);
    let last = both[0].max(both[1]);
    assert!(both.iter().all(|&t| t > alone[0]), "{both:?} vs {alone:?}");
    assert!(last > 1.7 * alone[0] && last < 2.5 * alone[0], "{both:?} vs {alone:?}");

    // Same seed, same times.
    assert_eq!(run(vec![("h1", 100_000_000_000), ("h2", 100_000_000_000)]).0, both);
}
