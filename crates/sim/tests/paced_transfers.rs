//! Rate-controlled UDP transfers in the simulator: a sized DCQCN flow alone on an idle path
//! completes in its size at its rate plus the path's delay; flows that lose packets recover
//! them by go-back-N and all complete; a transfer that has ended leaves no timer behind; and
//! senders held by their host's queue limit take turns without a loss there.

use mpsched_scenario::completion::{self, RATE_CONTROL_COUNTERS};
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

/// Hosts a and c send to b through switch s: a - s at `rate`, s - b at `bottleneck` with a
/// queue of `queue_pkts`; every link 10 us. `flows` are appended as written.
fn net(rate: &str, bottleneck: &str, queue_pkts: u32, flows: &str) -> String {
    format!(
        r#"
[scenario]
name = "pt"
duration = "20ms"
sample_interval = "5ms"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "c"
kind = "host"
[[node]]
name = "s"
kind = "switch"
[[node]]
name = "b"
kind = "host"
[[link]]
a = "a"
b = "s"
rate = "{rate}"
delay = "10us"
queue_pkts = 1000
[[link]]
a = "c"
b = "s"
rate = "{rate}"
delay = "10us"
queue_pkts = 1000
[[link]]
a = "s"
b = "b"
rate = "{bottleneck}"
delay = "10us"
queue_pkts = {queue_pkts}
{flows}
"#
    )
}

/// A sized DCQCN flow from `src` of `size`, at most `rate`, with `extra` rate-control keys.
fn transfer(name: &str, src: &str, rate: &str, size: &str, extra: &str) -> String {
    format!(
        "[[flow]]\nname = \"{name}\"\nsrc = \"{src}\"\ndst = \"b\"\nrate = \"{rate}\"\nsize = \"{size}\"\n\
         ecn = \"ect0\"\n[flow.rate_control]\ncc = \"dcqcn\"\n{extra}\n"
    )
}

fn run(sc: &Scenario) -> RunFigures {
    let mut sim = Simulation::new(sc, &SimOptions::with_seed(sc.seed)).unwrap();
    sim.run_until(sim.end_ps());
    sim.check_held().unwrap();
    sim.finish().unwrap().figures
}

fn counter(figs: &RunFigures, key: &str) -> Option<u64> {
    figs.counters.get(RATE_CONTROL_COUNTERS)?.get(key).copied()
}

/// 10 Gbit/s of wire carry 1470 payload bytes of every 1512.
const PAYLOAD_10G: &str = "9722222222bps";

#[test]
fn a_sized_flow_alone_completes_in_its_size_at_its_rate_plus_the_paths_delay() {
    let text = net("10Gbps", "10Gbps", 1000, &transfer("f", "a", PAYLOAD_10G, "1MB", ""));
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    let figs = run(&sc);
    let rows = completion::rows(&sc, &figs).unwrap();
    assert_eq!(rows.len(), 1);
    let fct = rows[0].fct_s.expect("it completes");
    // 681 packets: 680 of 1470 B and one of 400 B. The first 680 leave a frame time (1512 B
    // at 10 Gbit/s, 1.2096 us) apart; the last is 442 B on the wire, serialised at both hops;
    // then the two links' 20 us.
    let frame = 1512.0 * 8.0 / 10e9;
    let expected = 680.0 * frame + 2.0 * 442.0 * 8.0 / 10e9 + 20e-6;
    assert!(
        (fct - expected).abs() < 0.002 * expected,
        "FCT {fct} s against {expected} s"
    );
    // Nothing lost, nothing sent twice, and the controller was never cut.
    assert_eq!(counter(&figs, "f.retransmitted_pkts"), Some(0));
    assert_eq!(counter(&figs, "f.notifications"), Some(0));
    assert_eq!(figs.flows[0].sent_pkts, 681);
    // Every byte once (the figure is rounded to 4 decimals).
    assert!((figs.flows[0].delivered_mib - 1e6 / f64::from(1u32 << 20)).abs() < 1e-4);
    // Its slowdown: the ideal counts payload at the link rate, so a little above 1.
    let slow = rows[0].slowdown().unwrap();
    assert!(slow > 1.0 && slow < 1.06, "slowdown {slow}");
}

#[test]
fn an_ended_transfer_leaves_no_timer_and_no_packet_behind() {
    // A cut by CNPs starts DCQCN's timers: two flows into one port, marked by `dcqcn`.
    let flows = format!(
        "{}{}[programs.dcqcn]\nfifo_pkts = 1000\nkmin = 5\nkmax = 50\npmax_pct = 10\n",
        transfer("f", "a", PAYLOAD_10G, "2MB", ""),
        transfer("g", "c", PAYLOAD_10G, "2MB", "")
    );
    let text = net("10Gbps", "10Gbps", 1000, &flows)
        .replace("duration = \"20ms\"", "duration = \"20ms\"\nprogram = \"dcqcn\"");
    let sc = Scenario::from_toml(&text, "t.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    // Both finish within the run's 20 ms; after its last sample nothing is left to happen.
    sim.run_until(sc.duration_ps + 1);
    assert_eq!(sim.pending_events(), 0, "a timer or packet outlived the transfers");
    sim.check_held().unwrap();
    let figs = sim.finish().unwrap().figures;
    for f in ["f", "g"] {
        assert!(
            counter(&figs, &format!("{f}.notifications")).unwrap() > 0,
            "{f} was cut"
        );
        assert!(counter(&figs, &format!("{f}.completion_ns")).is_some(), "{f} completed");
    }
    let marked = figs.counters["s"]["baseline.marked"];
    assert!(marked > 0);
}

#[test]
fn lost_packets_are_sent_again_until_every_transfer_completes() {
    // Two 10 Gbit/s senders into a 1 Gbit/s port of 8 packets, nothing marked: DCQCN never
    // hears of the congestion and the port drops most of what arrives.
    let flows = format!(
        "{}{}",
        transfer("f", "a", PAYLOAD_10G, "300KB", "retransmit_timeout = \"200us\""),
        transfer("g", "c", PAYLOAD_10G, "200KB", "retransmit_timeout = \"200us\"")
    );
    let sc = Scenario::from_toml(&net("10Gbps", "1Gbps", 8, &flows), "t.toml").unwrap();
    let figs = run(&sc);
    let rows = completion::rows(&sc, &figs).unwrap();
    assert!(rows.iter().all(|r| r.fct_s.is_some()), "{rows:?}");
    for (f, size) in [("f", 300_000.0), ("g", 200_000.0)] {
        let retx = counter(&figs, &format!("{f}.retransmitted_pkts")).unwrap();
        let naks = counter(&figs, &format!("{f}.naks")).unwrap();
        assert!(retx > 0 && naks > 0, "{f}: {retx} sent again, {naks} NAKs");
        let fig = figs.flows.iter().find(|x| x.id == f).unwrap();
        // Every byte once, whatever came twice.
        assert!((fig.delivered_mib - size / f64::from(1u32 << 20)).abs() < 1e-4, "{f}");
        assert!(fig.loss_pct.unwrap() > 10.0, "{f} lost {:?} %", fig.loss_pct);
        assert_eq!(rows.iter().find(|r| r.id == f).unwrap().retransmissions, Some(retx));
    }
    assert_eq!(run(&sc), figs, "same seed, same run");
}

#[test]
fn a_lost_tail_is_sent_again_after_the_timeout() {
    // The last packets of a flow lost, and nothing after them to reveal the gap: only the
    // timeout recovers them. One sender at 10 Gbit/s into a 1 Gbit/s port of 4 packets.
    let one = transfer("f", "a", PAYLOAD_10G, "50KB", "retransmit_timeout = \"300us\"");
    let sc = Scenario::from_toml(&net("10Gbps", "1Gbps", 4, &one), "t.toml").unwrap();
    let figs = run(&sc);
    let timeouts = counter(&figs, "f.timeouts").unwrap();
    assert!(timeouts > 0, "no timeout");
    let fct_ns = counter(&figs, "f.completion_ns").expect("completes");
    // Each timeout waited its 300 us.
    assert!(fct_ns > timeouts * 300_000, "{fct_ns} ns with {timeouts} timeouts");
}

#[test]
fn senders_held_by_their_hosts_queue_limit_take_turns_and_lose_nothing_there() {
    // Two transfers from one host, each paced at the host's line rate: without a limit the
    // host's queue of 20 packets drops; with one, the senders wait for room in turn.
    let flows = |extra: &str| {
        format!(
            "{}{}",
            transfer("f", "a", PAYLOAD_10G, "1MB", extra),
            transfer("g", "a", PAYLOAD_10G, "1MB", extra).replace("name = \"g\"", "name = \"g\"\nsrc_port = 41000")
        )
    };
    let limited = net("10Gbps", "10Gbps", 1000, &flows("host_queue_limit = \"6KB\"")).replacen(
        "queue_pkts = 1000",
        "queue_pkts = 1000\nhost_queue_pkts = 20",
        1,
    );
    let sc = Scenario::from_toml(&limited, "t.toml").unwrap();
    let figs = run(&sc);
    assert_eq!(figs.counters["queues"]["a->s.tail_drops"], 0);
    let done: Vec<u64> = ["f", "g"]
        .iter()
        .map(|f| counter(&figs, &format!("{f}.completion_ns")).unwrap())
        .collect();
    // In turn: both take about the time of the two together (2 MB at 10 Gbit/s, 1.65 ms),
    // neither about half of it.
    for d in &done {
        assert!(*d > 1_500_000 && *d < 1_800_000, "{done:?}");
    }
    let unlimited = net("10Gbps", "10Gbps", 1000, &flows("")).replacen(
        "queue_pkts = 1000",
        "queue_pkts = 1000\nhost_queue_pkts = 20",
        1,
    );
    let sc = Scenario::from_toml(&unlimited, "t.toml").unwrap();
    let figs = run(&sc);
    assert!(
        figs.counters["queues"]["a->s.tail_drops"] > 0,
        "the limit is what saves them"
    );
}
