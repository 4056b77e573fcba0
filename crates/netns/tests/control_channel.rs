//! The control channel on the kernel: a controller called every 10 ms while real traffic runs
//! reads a switch's registers from its eBPF maps, rewrites the weights of a port's two queues
//! (htb classes) and a host route in the routes map, and the packets follow: the two classes'
//! shares of the bottleneck move from 1:1 towards 1:3, and a flow whose route was moved takes
//! the detour through a third switch. Needs root, tc and iperf3; without them the test is reported ignored with the
//! reason, and under CI=true it fails instead.

use mpsched_core::control::{ControlError, ControlPlane, QueueThreshold};
use mpsched_core::packet::parse_ipv4;
use mpsched_core::switch::{FORWARD_ACTION, ROUTES_TABLE};
use mpsched_netns::backend::{new_run_id, run, Controller, NetnsOptions};
use mpsched_scenario::Scenario;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SCENARIO: &str = r#"
[scenario]
name = "control-channel"
duration = "6s"
sample_interval = "500ms"
[[node]]
name = "h1"
kind = "host"
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
name = "h3"
kind = "host"
[[node]]
name = "h4"
kind = "host"
[[link]]
a = "h1"
b = "s1"
rate = "100Mbps"
[[link]]
a = "s1"
b = "s2"
rate = "10Mbps"
queues = 2
discipline = "wrr"
queue_weights = [1, 1]
[[link]]
a = "s2"
b = "h3"
rate = "100Mbps"
[[link]]
a = "s2"
b = "h4"
rate = "100Mbps"
[[link]]
a = "s1"
b = "s3"
rate = "100Mbps"
[[link]]
a = "s3"
b = "s2"
rate = "100Mbps"
[[flow]]
name = "a"
src = "h1"
dst = "h3"
rate = "9Mbps"
[[flow]]
name = "b"
src = "h1"
dst = "h3"
rate = "9Mbps"
dscp = 8
dst_port = 5202
[[flow]]
name = "c"
src = "h1"
dst = "h4"
rate = "1Mbps"
dscp = 8
"#;

/// Kernel runs share the machine's CPU: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// When the controller changes things, after time zero.
const SWITCH_AT: Duration = Duration::from_secs(3);

/// What the controller saw.
#[derive(Default)]
struct Seen {
    calls: u32,
    tx_readings: Vec<u64>,
    /// s3's packets sent towards s2 at the change and at the end.
    detour: Vec<u64>,
    errors: Vec<String>,
    changed: bool,
}

fn controller(seen: Arc<Mutex<Seen>>) -> Controller {
    // Hosts are 10.0.0.N in declaration order: h4 is the third.
    let h4 = u64::from(parse_ipv4("10.0.0.3").unwrap());
    let act = move |ctl: &mut dyn ControlPlane, now: Duration| {
        let mut s = seen.lock().unwrap();
        s.calls += 1;
        // s1's port 1 (towards s2): packets sent, from the eBPF program's per-port counters.
        match ctl.read_register("s1", "port1.tx_pkts", 0) {
            Ok(v) => s.tx_readings.push(v),
            Err(e) => s.errors.push(e.to_string()),
        }
        if now >= SWITCH_AT && !s.changed {
            s.changed = true;
            let detour = ctl.read_register("s3", "port1.tx_pkts", 0);
            let results: [Result<(), ControlError>; 3] = [
                detour.map(|v| s.detour.push(v)),
                ctl.set_queue_weights("s1", 1, &[1, 3]),
                // h4's route at s1 now leads to s3 (port 2), which takes it on to s2.
                ctl.table_write("s1", ROUTES_TABLE, &[h4], FORWARD_ACTION, &[2]),
            ];
            for r in results {
                if let Err(e) = r {
                    s.errors.push(e.to_string());
                }
            }
        }
        if now >= SWITCH_AT {
            if let Ok(v) = ctl.read_register("s3", "port1.tx_pkts", 0) {
                s.detour.truncate(1);
                s.detour.push(v);
            }
        }
    };
    Controller {
        period: Duration::from_millis(10),
        act: Arc::new(Mutex::new(act)),
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn a_controller_rewrites_queue_weights_and_a_route_and_the_packets_follow() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sc = Scenario::from_toml(SCENARIO, "control-channel.toml").unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let opts = NetnsOptions {
        controller: Some(controller(seen.clone())),
        ..NetnsOptions::default()
    };
    let out = run(&sc, &new_run_id(), &opts).unwrap();
    let s = seen.lock().unwrap();
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    // Every 10 ms for 6 s, give or take the sampling loop's 5 ms wakeups.
    assert!(s.calls > 375, "{} calls", s.calls);
    assert!(s.tx_readings.windows(2).all(|w| w[0] <= w[1]), "a counter went back");
    let (first, last) = (s.tx_readings[0], *s.tx_readings.last().unwrap());
    assert!(last > first + 1000, "port1.tx_pkts {first} -> {last}");
    let col = |name: &str| out.series.values(name).unwrap_or_else(|| panic!("no column {name}"));
    let (a, b, c) = (col("a_mbps"), col("b_mbps"), col("c_mbps"));
    // Rows are 0.5 s intervals: [0.5, 3) before the change, [3.5, 6) after it. Five rows a
    // side: c's share of a drop-tail queue it shares with b's 9 Mbit/s depends on how its
    // packets fall against b's, and over three rows it dipped to the bound once in CI.
    let (before, after) = (1..6, 7..12);
    let ratio = |r: std::ops::Range<usize>| mean(&b[r.clone()]) / mean(&a[r]);
    let (r0, r1) = (ratio(before.clone()), ratio(after.clone()));
    let (c0, c1) = (mean(&c[before]), mean(&c[after]));
    eprintln!("b/a before {r0:.2}, after {r1:.2}; c before {c0:.2}, after {c1:.2} Mbit/s");
    assert!((0.6..1.6).contains(&r0), "weights 1:1 give b/a = {r0:.2}");
    assert!(r1 > 2.0 * r0, "weights 1:3 give b/a = {r1:.2} (before {r0:.2})");
    // Before, c shares the bottleneck's second queue with b (and loses there); after, it
    // goes round it through s3 at its full 1 Mbit/s.
    assert!(c0 > 0.05 && c0 < 0.8, "flow c through the bottleneck: {c0:.2} Mbit/s");
    assert!(c1 > 0.9, "flow c round the bottleneck: {c1:.2} Mbit/s");
    // About 1 Mbit/s of 1 512-byte frames for 3 s through s3: some 250 packets.
    let detoured = s.detour[1] - s.detour[0];
    assert!(
        s.detour[0] < 10,
        "s3 carried {} packets before the route moved",
        s.detour[0]
    );
    assert!(detoured > 100, "s3 carried {detoured} packets after the route moved");
}

/// A threshold the kernel cannot set and a node that does not exist are refused by name.
fn what_the_kernel_cannot_do_is_refused_by_name() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = SCENARIO.replace("duration = \"6s\"", "duration = \"1s\"");
    let sc = Scenario::from_toml(&text, "c.toml").unwrap();
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = errors.clone();
    let act = move |ctl: &mut dyn ControlPlane, _now: Duration| {
        let mut e = seen.lock().unwrap();
        if !e.is_empty() {
            return;
        }
        let text = |r: Result<(), ControlError>| r.err().map(|e| e.to_string()).unwrap_or_default();
        e.push(text(ctl.read_register("s9", "x", 0).map(|_| ())));
        e.push(text(ctl.read_register("h1", "x", 0).map(|_| ())));
        e.push(text(ctl.set_queue_weights("s1", 0, &[1, 2])));
        e.push(text(ctl.set_queue_threshold(
            "s1",
            1,
            0,
            QueueThreshold::EcnMarkPkts(Some(5)),
        )));
        e.push(text(ctl.set_queue_threshold("s1", 1, 2, QueueThreshold::DropPkts(5))));
        e.push(text(ctl.set_queue_threshold("s1", 1, 1, QueueThreshold::DropPkts(5))));
    };
    let opts = NetnsOptions {
        controller: Some(Controller {
            period: Duration::from_millis(10),
            act: Arc::new(Mutex::new(act)),
        }),
        ..NetnsOptions::default()
    };
    run(&sc, &new_run_id(), &opts).unwrap();
    let e = errors.lock().unwrap();
    assert!(e[0].contains("no node named `s9`"), "{e:?}");
    assert!(e[1].contains("`h1` runs no program"), "{e:?}");
    assert!(e[2].contains("has one queue"), "{e:?}");
    assert!(e[3].contains("per-queue ECN"), "{e:?}");
    assert!(e[4].contains("no queue 2"), "{e:?}");
    assert_eq!(e[5], "", "a queue's capacity changes");
}

fn main() {
    let missing = if !mpsched_netns::ns::is_root() {
        Some("they need root (namespaces, eBPF)".to_string())
    } else {
        mpsched_testkit::missing_tool("iperf3", &["--version"]).or_else(|| mpsched_testkit::missing_tool("tc", &["-V"]))
    };
    let tests: &[(&str, fn())] = &[
        (
            "a_controller_rewrites_queue_weights_and_a_route_and_the_packets_follow",
            a_controller_rewrites_queue_weights_and_a_route_and_the_packets_follow,
        ),
        (
            "what_the_kernel_cannot_do_is_refused_by_name",
            what_the_kernel_cannot_do_is_refused_by_name,
        ),
    ];
    mpsched_testkit::run_or_skip(tests, missing, "kernel control channel").exit();
}
