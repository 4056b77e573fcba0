//! The control channel (`mpsched_core::control::ControlPlane`) from a component: every 10 ms a
//! controller reads two switches' registers, and at set times rewrites a route, a bottleneck's
//! WRR weights and a queue's ECN threshold. The effect shows in the packets: a flow's packets
//! move to the other switch, the two classes' shares at the bottleneck follow the weights, and
//! datagrams start arriving CE-marked.

use mpsched_core::control::{ControlError, ControlListing, ControlPlane, ProgramControl, QueueThreshold, RegisterInfo};
use mpsched_core::packet::{Ecn, PacketMeta, PortId};
use mpsched_core::program::{Ctx, Program, Verdict};
use mpsched_core::switch::{FORWARD_ACTION, ROUTES_TABLE};
use mpsched_scenario::Scenario;
use mpsched_sim::{Component, Net, SimOptions, Simulation, UdpOptions};
use std::sync::{Arc, Mutex};

/// h1 sends two classes to h3 over s1, then s2 or s3, then s4; the s4 -> h3 link is a 50 Mbit/s
/// bottleneck with two queues under WRR, offered 60 Mbit/s per class.
const NET: &str = r#"
[scenario]
name = "control-channel"
duration = "200ms"
sample_interval = "10ms"
queue_pkts = 64

[[node]]
name = "h1"
kind = "host"
ip = "10.0.0.1"
[[node]]
name = "h3"
kind = "host"
ip = "10.0.0.3"
[[node]]
name = "s1"
kind = "switch"
[[node]]
name = "s2"
kind = "switch"
[[node]]
name = "s3"
kind = "switch"
[[node]]
name = "s4"
kind = "switch"

[[link]]
a = "h1"
b = "s1"
rate = "1Gbps"
[[link]]
a = "s1"
b = "s2"
rate = "1Gbps"
[[link]]
a = "s1"
b = "s3"
rate = "1Gbps"
[[link]]
a = "s2"
b = "s4"
rate = "1Gbps"
[[link]]
a = "s3"
b = "s4"
rate = "1Gbps"
[[link]]
name = "bottleneck"
a = "s4"
b = "h3"
rate = "50Mbps"
queues = 2
discipline = "wrr"
queue_weights = [1, 1]

[[flow]]
name = "lo"
src = "h1"
dst = "h3"
rate = "60Mbps"
dscp = 0
src_port = 40000
[[flow]]
name = "hi"
src = "h1"
dst = "h3"
rate = "60Mbps"
dscp = 8
src_port = 40001
"#;

const H3: u32 = 0x0a00_0003;
/// s1's ports: h1, s2, s3 in the order of the links.
const S1_TO: [PortId; 2] = [1, 2];
/// s4's port to h3.
const S4_TO_H3: PortId = 2;
const MS: u64 = 1_000_000_000;
/// The controller's own datagrams.
const PROBE_PORT: u16 = 9000;

/// s2 and s3: forward what goes to h3 towards s4 (port 1), the rest back (port 0), and count
/// the former in register `pkts`.
struct Counter {
    pkts: u64,
}

impl ProgramControl for Counter {
    fn control_listing(&self) -> ControlListing {
        ControlListing {
            registers: vec![RegisterInfo {
                name: "pkts".into(),
                size: 1,
                writable: false,
            }],
            tables: Vec::new(),
        }
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        match (name, index) {
            ("pkts", 0) => Ok(self.pkts),
            ("pkts", _) => Err(ControlError::NoIndex {
                register: name.into(),
                size: 1,
                index,
            }),
            _ => Err(ControlError::NoRegister(name.into())),
        }
    }
}

impl Program for Counter {
    fn ingress(&mut self, pkt: &mut PacketMeta, _ctx: &mut Ctx) -> Verdict {
        if pkt.dst_ip == H3 {
            self.pkts += 1;
            return Verdict::Forward(1);
        }
        Verdict::Forward(0)
    }
}

/// What the controller saw and did.
#[derive(Default, Debug)]
struct Log {
    /// (time, s2's pkts, s3's pkts), every 10 ms.
    reads: Vec<(u64, u64, u64)>,
    /// The port of s1 the route to h3 was moved to, and when.
    moved: Option<(PortId, u64)>,
    errors: Vec<ControlError>,
    /// Its own datagrams at h3 by send time: (before the threshold, CE, not CE), after.
    probes: [[u64; 2]; 2],
}

struct Controller {
    log: Arc<Mutex<Log>>,
    h1: u32,
    h3: u32,
}

const TICK: u64 = 0;
const PROBE: u64 = 1;

impl Component for Controller {
    fn name(&self) -> &str {
        "controller"
    }

    fn start(&mut self, net: &mut Net<'_>) {
        self.h1 = net.host("h1").unwrap();
        self.h3 = net.host("h3").unwrap();
        net.bind_udp(self.h3, PROBE_PORT).unwrap();
        net.set_timer(10 * MS, TICK);
        net.set_timer(MS, PROBE);
    }

    fn on_timer(&mut self, token: u64, net: &mut Net<'_>) {
        let now = net.now_ps();
        if token == PROBE {
            // A small ECN-capable datagram in the low class every 0.5 ms, its send time in
            // its source port (in 0.5 ms units).
            let opts = UdpOptions {
                ecn: Ecn::Ect0,
                dscp: 0,
                iface: Some(0),
            };
            let port = (now / (MS / 2)) as u16;
            net.send_udp(self.h1, self.h3, (port, PROBE_PORT), 100, opts).unwrap();
            if now + MS / 2 < 200 * MS {
                net.set_timer(now + MS / 2, PROBE);
            }
            return;
        }
        let mut log = self.log.lock().unwrap();
        let s2 = net.read_register("s2", "pkts", 0).unwrap();
        let s3 = net.read_register("s3", "pkts", 0).unwrap();
        log.reads.push((now, s2, s3));
        if now == 50 * MS {
            // Move h3's route to the switch that carries nothing.
            let to = if s2 > s3 { S1_TO[1] } else { S1_TO[0] };
            net.table_write("s1", ROUTES_TABLE, &[u64::from(H3)], FORWARD_ACTION, &[u64::from(to)])
                .unwrap();
            log.moved = Some((to, now));
        }
        if now == 100 * MS {
            net.set_queue_weights("s4", S4_TO_H3, &[1, 3]).unwrap();
            net.set_queue_threshold("s4", S4_TO_H3, 0, QueueThreshold::EcnMarkPkts(Some(10)))
                .unwrap();
            // What is not there is refused by name.
            log.errors.extend([
                net.read_register("nowhere", "pkts", 0).unwrap_err(),
                net.read_register("h1", "pkts", 0).unwrap_err(),
                net.read_register("s2", "bytes", 0).unwrap_err(),
                net.read_register("s1", "split0.weight", 0).unwrap_err(),
                net.table_delete("s1", ROUTES_TABLE, &[0x0a00_0063]).unwrap_err(),
                net.set_queue_threshold("s4", S4_TO_H3, 5, QueueThreshold::DropPkts(1))
                    .unwrap_err(),
                net.set_queue_weights("s4", 9, &[1, 1]).unwrap_err(),
            ]);
        }
        if now + 10 * MS <= 200 * MS {
            net.set_timer(now + 10 * MS, TICK);
        }
    }

    fn on_packet(&mut self, _host: u32, pkt: &PacketMeta, _net: &mut Net<'_>) {
        let sent = u64::from(pkt.src_port) * (MS / 2);
        let after = usize::from(sent > 100 * MS);
        let ce = usize::from(pkt.ecn == Ecn::Ce);
        self.log.lock().unwrap().probes[after][ce] += 1;
    }
}

/// Mean of column `name` over the rows whose time lies in (from, to] seconds.
fn mean(out: &mpsched_sim::RunOutput, name: &str, from: f64, to: f64) -> f64 {
    let c = out.series.columns.iter().position(|c| c == name).unwrap();
    let rows: Vec<f64> = out
        .series
        .rows
        .iter()
        .filter(|r| r[0] > from && r[0] <= to)
        .map(|r| r[c])
        .collect();
    rows.iter().sum::<f64>() / rows.len() as f64
}

#[test]
fn a_controller_rewrites_a_route_wrr_weights_and_an_ecn_threshold_and_the_packets_follow() {
    let sc = Scenario::from_toml(NET, "control-channel.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    sim.install_program("s2", Box::new(Counter { pkts: 0 })).unwrap();
    sim.install_program("s3", Box::new(Counter { pkts: 0 })).unwrap();
    let log = Arc::new(Mutex::new(Log::default()));
    sim.add_component(Box::new(Controller {
        log: log.clone(),
        h1: 0,
        h3: 0,
    }));
    let out = sim.run().unwrap();
    let log = log.lock().unwrap();

    // The route: the switch that carried both flows stops at the rewrite, the other takes over.
    let (to, at) = log.moved.expect("moved at 50 ms");
    assert_eq!(at, 50 * MS);
    let (old, new) = if to == S1_TO[1] { (1, 2) } else { (2, 1) };
    let pick = |r: &(u64, u64, u64), i: usize| if i == 1 { r.1 } else { r.2 };
    for w in log.reads.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if b.0 <= 50 * MS {
            assert!(
                pick(b, old) > pick(a, old),
                "the old path grows before: {:?}",
                log.reads
            );
            assert_eq!(pick(b, new), 0, "{:?}", log.reads);
        } else if a.0 >= 60 * MS {
            assert_eq!(
                pick(b, old),
                pick(a, old),
                "the old path carries nothing after: {:?}",
                log.reads
            );
            assert!(pick(b, new) > pick(a, new), "the new path grows after: {:?}", log.reads);
        }
    }
    assert_eq!(log.reads.len(), 20, "a read every 10 ms");

    // WRR at the bottleneck: a packet from each queue per round under [1, 1], three from the
    // high one under [1, 3]. The low queue also holds the controller's small datagrams (a
    // fifth of its turns or so), so the low class gets somewhat less than its queue's turns in
    // both phases, and the shares' ratio grows threefold.
    let (lo1, hi1) = (mean(&out, "lo_mbps", 0.02, 0.1), mean(&out, "hi_mbps", 0.02, 0.1));
    let (lo2, hi2) = (mean(&out, "lo_mbps", 0.12, 0.2), mean(&out, "hi_mbps", 0.12, 0.2));
    assert!((0.9..1.5).contains(&(hi1 / lo1)), "before: lo {lo1} hi {hi1}");
    let growth = (hi2 / lo2) / (hi1 / lo1);
    assert!(
        (2.5..3.5).contains(&growth),
        "after: lo {lo2} hi {hi2}, before: lo {lo1} hi {hi1}"
    );
    assert!(lo1 + hi1 > 44.0 && lo2 + hi2 > 44.0, "the bottleneck stays full");

    // ECN: no datagram marked before the threshold is set, most after (the low queue stays full).
    let [before, after] = log.probes;
    assert!(before[0] > 50 && before[1] == 0, "{:?}", log.probes);
    assert!(after[1] > 10 * after[0].max(1) / 2, "{:?}", log.probes);

    let e = &log.errors;
    assert_eq!(e[0], ControlError::NoNode("nowhere".into()));
    assert_eq!(e[1], ControlError::NoProgram("h1".into()));
    assert_eq!(e[2], ControlError::NoRegister("bytes".into()));
    assert_eq!(e[3], ControlError::NoRegister("split0.weight".into()));
    assert!(matches!(e[4], ControlError::NoEntry { .. }), "{e:?}");
    assert_eq!(
        e[5],
        ControlError::NoQueue {
            node: "s4".into(),
            port: S4_TO_H3,
            queue: 5
        }
    );
    assert_eq!(
        e[6],
        ControlError::NoPort {
            node: "s4".into(),
            port: 9
        }
    );
}
