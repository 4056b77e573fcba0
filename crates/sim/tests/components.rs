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

// --- A rate-based sender under switch notifications (the shape of PMQECN and DCQCN) ---------

use mpsched_core::packet::{Ecn, PacketMeta, PortId};
use mpsched_core::program::{Ctx, DropReason, EgressVerdict, Program, QueueMeta, Verdict};
use mpsched_transport::cc::{Dcqcn, DcqcnParams};
use mpsched_transport::rate::RateSender;
use std::collections::HashMap;

/// UDP port congestion notifications go to (RoCE v2's).
const CNP_PORT: u16 = 4791;
const DATA_PORT: u16 = 5001;

/// A switch program that forwards by a fixed table and, when `notify`, sends a congestion
/// notification back to the source of a packet that joins a queue holding `k` or more, at most
/// one per source per 50 us (DCQCN's notification point paces them so).
struct Notifier {
    port_of: Vec<(u32, PortId)>,
    own_ip: u32,
    k: Option<u32>,
    last_ps: HashMap<u32, u64>,
    sent: u64,
}

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for Notifier {}

impl Program for Notifier {
    fn ingress(&mut self, pkt: &mut PacketMeta, _ctx: &mut Ctx) -> Verdict {
        match self.port_of.iter().find(|(ip, _)| *ip == pkt.dst_ip) {
            Some(&(_, p)) => Verdict::Forward(p),
            None => Verdict::Drop(DropReason::NoRoute),
        }
    }

    fn uses_enqueue(&self) -> bool {
        self.k.is_some()
    }

    fn on_enqueue(&mut self, pkt: &mut PacketMeta, _port: PortId, q: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        let Some(k) = self.k else {
            return EgressVerdict::Transmit;
        };
        let now = ctx.now_ps();
        let due = self.last_ps.get(&pkt.src_ip).is_none_or(|&t| now >= t + 50_000_000);
        if pkt.dst_port == DATA_PORT && q.enq_qdepth_pkts >= k && due {
            self.last_ps.insert(pkt.src_ip, now);
            self.sent += 1;
            let cnp = PacketMeta::udp(self.own_ip, pkt.src_ip, CNP_PORT, CNP_PORT, 64);
            ctx.emit(pkt.ingress_port, cnp);
        }
        EgressVerdict::Transmit
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![("notifications".into(), self.sent)]
    }
}

/// Senders at `hosts` paced by DCQCN at the line rate, sending to `dst`; notifications slow
/// them; `dst` counts what arrives.
struct RateSources {
    hosts: Vec<&'static str>,
    dst: &'static str,
    senders: Vec<(u32, RateSender)>,
    dst_node: u32,
    received_bytes: u64,
}

impl RateSources {
    fn wake(&mut self, i: usize, net: &mut Net<'_>) {
        let at = self.senders[i].1.next_timer() * 1000;
        net.set_timer(at, i as u64);
    }
}

impl Component for RateSources {
    fn name(&self) -> &str {
        "rate-sources"
    }

    fn start(&mut self, net: &mut Net<'_>) {
        self.dst_node = net.host(self.dst).unwrap();
        net.bind_udp(self.dst_node, DATA_PORT).unwrap();
        for (i, h) in self.hosts.clone().into_iter().enumerate() {
            let node = net.host(h).unwrap();
            net.bind_udp(node, CNP_PORT).unwrap();
            let cc = Box::new(Dcqcn::new(DcqcnParams::for_line_rate(1_000_000_000)));
            self.senders
                .push((node, RateSender::new(cc, 1500, i as u64 * 1_000).unwrap()));
            self.wake(i, net);
        }
    }

    fn on_timer(&mut self, token: u64, net: &mut Net<'_>) {
        let i = token as usize;
        let now_ns = net.now_ps() / 1000;
        let (node, s) = &mut self.senders[i];
        if let Some(bytes) = s.poll_transmit(now_ns) {
            let node = *node;
            net.send_udp(node, self.dst_node, (40_000 + i as u16, DATA_PORT), bytes, Ecn::NotEct)
                .unwrap();
        }
        if net.now_ps() < 200_000_000_000 {
            self.wake(i, net);
        }
    }

    fn on_packet(&mut self, host: u32, pkt: &PacketMeta, net: &mut Net<'_>) {
        if host == self.dst_node {
            self.received_bytes += u64::from(pkt.wire_len_bytes);
            return;
        }
        let now_ns = net.now_ps() / 1000;
        if let Some((_, s)) = self.senders.iter_mut().find(|(n, _)| *n == host) {
            s.on_notification(now_ns);
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut c = vec![("received_bytes".to_string(), self.received_bytes)];
        for (i, (_, s)) in self.senders.iter().enumerate() {
            c.push((format!("sender{i}_packets"), s.stats().packets));
            c.push((format!("sender{i}_notifications"), s.stats().notifications));
        }
        c
    }
}

/// Two DCQCN senders at 1 Gbit/s through one 1 Gbit/s port of 100 packets, for 200 ms, with
/// the switch notifying at `k` packets (None: never). Counters of the run.
fn notified_run(k: Option<u32>) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> {
    let text = NET
        .replace("queue_pkts = 2000", "queue_pkts = 100")
        .replace("rate = \"100Mbps\"", "rate = \"1Gbps\"")
        .replace("duration = \"3s\"", "duration = \"200ms\"");
    let sc = Scenario::from_toml(&text, "dumbbell.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    let ip = |n: &str| sc.nodes.iter().find(|x| x.name == n).unwrap().ip;
    // s1's ports: 0 to h1, 1 to h2, 2 to s2.
    let notifier = Notifier {
        port_of: vec![(ip("h1"), 0), (ip("h2"), 1), (ip("h3"), 2)],
        own_ip: ip("s1"),
        k,
        last_ps: HashMap::new(),
        sent: 0,
    };
    sim.install_program("s1", Box::new(notifier)).unwrap();
    sim.add_component(Box::new(RateSources {
        hosts: vec!["h1", "h2"],
        dst: "h3",
        senders: Vec::new(),
        dst_node: 0,
        received_bytes: 0,
    }));
    sim.run().unwrap().figures.counters
}

#[test]
fn rate_based_senders_slow_down_when_a_switch_notifies_them() {
    let plain = notified_run(None);
    let notified = notified_run(Some(20));
    let drops = |c: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>| {
        c["queues"]["s1->s2.tail_drops"]
    };
    let rx_mbps = |c: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>| {
        c["rate-sources"]["received_bytes"] as f64 * 8.0 / 0.2 / 1e6
    };
    // Unchecked, two line-rate senders overflow the port: about half of what they send is lost.
    let sent: u64 = (0..2)
        .map(|i| plain["rate-sources"][&format!("sender{i}_packets")])
        .sum();
    assert!(drops(&plain) as f64 > 0.4 * sent as f64, "{plain:?}");
    // Notified, they cut their rates, the queue stays short and the port stays busy.
    let n = &notified["rate-sources"];
    assert!(
        n["sender0_notifications"] > 0 && n["sender1_notifications"] > 0,
        "{n:?}"
    );
    assert!(drops(&notified) * 20 < drops(&plain), "{notified:?} vs {plain:?}");
    assert!(rx_mbps(&notified) > 800.0, "{} Mbit/s", rx_mbps(&notified));
    let (p0, p1) = (n["sender0_packets"] as f64, n["sender1_packets"] as f64);
    assert!((p0 / (p0 + p1) - 0.5).abs() < 0.15, "shares {p0} {p1}");
}

/// What a component asks for that cannot be is an error it can handle, not a panic.
struct Misuse {
    errors: Arc<Mutex<Vec<String>>>,
}

impl Component for Misuse {
    fn name(&self) -> &str {
        "misuse"
    }

    fn start(&mut self, net: &mut Net<'_>) {
        let (h1, s1) = (net.host("h1").unwrap(), 3);
        assert_eq!(net.host("s1"), None, "a switch is not a host");
        let cfg = TcpConfig::default();
        let mut e = self.errors.lock().unwrap();
        e.push(net.open_tcp(h1, s1, (1, 2), &cfg).unwrap_err().to_string());
        e.push(net.open_tcp(h1, 99, (1, 2), &cfg).unwrap_err().to_string());
        e.push(net.send_udp(99, h1, (1, 2), 100, Ecn::NotEct).unwrap_err().to_string());
        net.bind_udp(h1, 7).unwrap();
        e.push(net.bind_udp(h1, 7).unwrap_err().to_string());
        e.push(net.bind_udp(s1, 7).unwrap_err().to_string());
    }
}

#[test]
fn a_component_gets_errors_for_what_cannot_be() {
    let sc = Scenario::from_toml(NET, "dumbbell.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    let errors = Arc::new(Mutex::new(Vec::new()));
    sim.add_component(Box::new(Misuse { errors: errors.clone() }));
    let e = errors.lock().unwrap().clone();
    assert_eq!(e.len(), 5);
    assert!(e[0].contains("node 3 is not a host"), "{e:?}");
    assert!(e[1].contains("node 99 is not a host"), "{e:?}");
    assert!(e[2].contains("node 99 is not a host"), "{e:?}");
    assert!(e[3].contains("bound already"), "{e:?}");
    assert!(e[4].contains("not a host"), "{e:?}");
    sim.run().unwrap();
}
