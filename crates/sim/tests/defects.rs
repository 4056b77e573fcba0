//! Defects found by the Core v2 review (issue #9), each pinned by a test that failed before its
//! fix.

use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

fn run_toml(text: &str) -> RunFigures {
    let sc = Scenario::from_toml(text, "defects.toml").unwrap();
    Simulation::new(&sc, &SimOptions::with_seed(sc.seed))
        .unwrap()
        .run()
        .unwrap()
        .figures
}

/// A 100 Mbit/s CBR flow over two 1 Gbit/s hops with `jitter` of send-timer noise.
fn jittered(jitter: &str) -> String {
    format!(
        r#"
[scenario]
name = "jitter"
duration = "2s"
seed = 7
send_jitter = "{jitter}"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "sw"
kind = "switch"
[[node]]
name = "h2"
kind = "host"
[[link]]
a = "h1"
b = "sw"
rate = "1Gbps"
[[link]]
a = "sw"
b = "h2"
rate = "1Gbps"
[[flow]]
name = "f"
src = "h1"
dst = "h2"
rate = "100Mbps"
payload = "1470B"
"#
    )
}

/// Defect 1: a packet sent late by a large jitter scheduled its successor before `now`, and the
/// engine set its clock back. Packets then queued behind packets "sent" after them, and the
/// one-way delay grew with the jitter (0.02 ms at 100 us, 0.20 ms at 1 ms).
#[test]
fn send_jitter_never_turns_the_clock_back() {
    let base = run_toml(&jittered("0ns")).flows[0].mean_owd_ms.unwrap();
    // Two serialisations of a 1512-byte frame at 1 Gbit/s.
    assert!((base - 0.0242).abs() < 0.001, "no jitter: {base} ms");
    for j in ["100us", "1ms"] {
        let f = &run_toml(&jittered(j)).flows[0];
        // Late packets bunch and queue behind each other at the first hop, by a few frames at
        // most: the delay may grow a little, never by the jitter's order.
        assert!(
            f.mean_owd_ms.unwrap() < 2.0 * base,
            "jitter {j}: mean one-way delay {:?} ms against {base} ms without jitter",
            f.mean_owd_ms
        );
        assert_eq!(f.loss_pct, Some(0.0), "jitter {j}");
    }
}

/// Defect 2: a UDP subtunnel datagram dropped by a queue or a program never freed the inner
/// packet stored for it at the entry (RR: 53 141 scheduled, 53 134 forwarded, 7 slots held).
#[test]
fn dropped_subtunnel_datagrams_free_their_inner_packets() {
    let (path, text) = mpsched_scenario::builtin::find("afmt/three-subtunnels").unwrap();
    let sc = Scenario::from_toml(text, path).unwrap().with_variant("RR").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(sc.seed)).unwrap();
    sim.run_until(sim.end_ps());
    // The payload flows stop at 24 s and the run drains until 32 s: nothing is on its way.
    assert_eq!(sim.tunnel_packets_held(), 0);
    let out = sim.finish().unwrap();
    let down = &out.figures.tunnels[0];
    let queue_drops: u64 = out.figures.counters["queues"]
        .iter()
        .filter(|(k, _)| k.ends_with("tail_drops"))
        .map(|(_, v)| v)
        .sum();
    assert!(
        queue_drops > 0,
        "the subtunnels' queues overflow, so datagrams are dropped"
    );
    assert!(down.forwarded_pkts < down.scheduled_pkts);
}

/// Defect 5: every packet in propagation had its own arrival event, so a 10 ms, 10 Gbit/s link
/// put about 8 000 events in the heap. One pending arrival per link now.
#[test]
fn the_event_queue_holds_one_arrival_per_link() {
    let text = jittered("0ns")
        .replace("rate = \"1Gbps\"", "rate = \"10Gbps\"\ndelay = \"10ms\"")
        .replace("rate = \"100Mbps\"", "rate = \"9Gbps\"");
    let sc = Scenario::from_toml(&text, "defects.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    let mut most = 0;
    for ms in 1..=60 {
        sim.run_until(ms * 1_000_000_000);
        most = most.max(sim.pending_events());
    }
    // 4 simplex links (an arrival and a transmission each), a source and the sampler.
    assert!(most <= 10, "{most} events pending with ~15 000 packets on the wires");
}

/// Every drop path frees what its packet held (defects 2 and 6): at any moment the stores of TCP
/// parts and of inner packets hold exactly what the packets in the network refer to, in runs
/// that drop at queues, at the tunnel entry and in the network.
#[test]
fn stores_hold_exactly_what_packets_refer_to() {
    for (name, variant) in [
        ("tcp/two-flows", "reno"),
        ("afmt/three-subtunnels", "RR"),
        ("afmt/three-subtunnels", "AFMT"),
        ("afmt/two-subtunnels", "RR-TCP"),
        ("mptcp/shared-bottleneck", "lia"),
    ] {
        let (path, text) = mpsched_scenario::builtin::find(name).unwrap();
        let sc = Scenario::from_toml(text, path).unwrap().with_variant(variant).unwrap();
        let mut sim = Simulation::new(&sc, &SimOptions::with_seed(sc.seed)).unwrap();
        let step = sim.end_ps() / 40;
        for k in 1..=40 {
            sim.run_until(k * step);
            if let Err(e) = sim.check_held() {
                panic!("{name} {variant} at {} ps: {e}", k * step);
            }
        }
    }
}

/// A program that consumes every packet it is given (as a switch consumes what is addressed to
/// it).
struct Sink;

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for Sink {}

impl mpsched_core::program::Program for Sink {
    fn ingress(
        &mut self,
        _pkt: &mut mpsched_core::packet::PacketMeta,
        _ctx: &mut mpsched_core::program::Ctx,
    ) -> mpsched_core::program::Verdict {
        mpsched_core::program::Verdict::Consume
    }
}

/// A packet a program consumes is freed with what it holds: a TCP segment swallowed by a switch
/// leaves neither its slot in the packet pool nor its TCP part behind.
#[test]
fn a_consumed_packet_is_freed() {
    let (path, text) = mpsched_scenario::builtin::find("tcp/two-flows").unwrap();
    let sc = Scenario::from_toml(text, path).unwrap().with_variant("reno").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(sc.seed)).unwrap();
    let switch = sc
        .nodes
        .iter()
        .find(|n| n.kind == mpsched_scenario::NodeKind::Switch)
        .unwrap();
    sim.install_program(&switch.name, Box::new(Sink)).unwrap();
    for k in 1..=10 {
        sim.run_until(k * 100_000_000_000);
        sim.check_held().unwrap_or_else(|e| panic!("at {k} x 100 ms: {e}"));
    }
}

/// A packet that finds its link idle costs one event a hop (its arrival): the end of its
/// serialisation is an event only when others wait behind it. A 100 Mbit/s flow over two idle
/// 1 Gbit/s hops runs about three events a packet (its send and two arrivals), and its one-way
/// delay is still two serialisations.
#[test]
fn an_idle_link_costs_one_event_a_hop() {
    let sc = Scenario::from_toml(&jittered("0ns"), "defects.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    sim.run_until(2_000_000_000_000);
    let events = sim.events();
    let figures = sim.run().unwrap().figures;
    let sent = figures.flows[0].sent_pkts;
    let per_packet = events as f64 / sent as f64;
    assert!(
        (3.0..3.05).contains(&per_packet),
        "{per_packet:.3} events a packet ({events} for {sent})"
    );
    let owd = figures.flows[0].mean_owd_ms.unwrap();
    assert!((owd - 0.0242).abs() < 0.001, "{owd} ms");
}

/// Packets that find the link busy wait and leave back to back: a 2 Gbit/s burst into a
/// 1 Gbit/s hop delivers the hop's rate, no more.
#[test]
fn a_busy_link_serialises_back_to_back() {
    let text = jittered("0ns")
        .replace("rate = \"100Mbps\"", "rate = \"2Gbps\"")
        .replacen("rate = \"1Gbps\"", "rate = \"10Gbps\"", 1);
    let f = &run_toml(&text).flows[0];
    // 1470 B of payload in a 1512-byte frame at 1 Gbit/s.
    let goodput = 1000.0 * 1470.0 / 1512.0;
    assert!(
        (f.delivered_mbps - goodput).abs() < 0.01 * goodput,
        "{} Mbit/s delivered",
        f.delivered_mbps
    );
}
