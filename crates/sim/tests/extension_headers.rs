//! One packet carrying three extension headers at once on the simulator: an MPTCP option (a
//! segment of an MPTCP subflow), a routing header one switch pushes and another pops, and an
//! INT header whose sojourn field the first switch's egress stage fills from its queue. The
//! last switch sees all three on the same segments; the pcap of its input writes the shims
//! and the wire parser reads all three back off the frames.

use mpsched_core::headers::{Header, HeaderKind, IntHeader, RoutingHeader};
use mpsched_core::packet::{PacketMeta, PortId};
use mpsched_core::program::{Ctx, EgressVerdict, Program, QueueMeta, Verdict};
use mpsched_sim::{CaptureRequest, SimOptions, Simulation};
use std::sync::{Arc, Mutex};

/// A built-in scenario by name.
fn builtin(name: &str) -> mpsched_scenario::Scenario {
    let (path, text) = mpsched_scenario::builtin::find(name).unwrap();
    mpsched_scenario::Scenario::from_toml(text, path).unwrap()
}

/// `mptcp/two-paths`' r1: client on port 0, path1 towards r3 on port 1.
const R1_TO_R3: PortId = 1;

/// What the switches saw.
#[derive(Default, Debug)]
struct Seen {
    pushed: u64,
    /// Dequeues at r1 whose sojourn was not the dequeue time minus the enqueue time.
    bad_timedelta: u64,
    filled: u64,
    max_sojourn_ns: u32,
    /// At r3: segments with an MPTCP option, a routing header and an INT header at once.
    all_three: u64,
    /// At r3: the routing header's fields were what r1 wrote.
    routing_ok: u64,
    /// At r3: INT headers with a sojourn above zero.
    int_waited: u64,
    /// At r3: wire length dropped by the routing header's 16 bytes after the pop.
    popped: u64,
    /// Packets with a stack at r3 not carrying the option (the ACK direction has none).
    stray: u64,
}

/// r1: pushes an INT header and a routing header on every data segment towards the server,
/// and fills the INT header's sojourn and depth at its egress towards r3.
struct Pusher(Arc<Mutex<Seen>>);

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for Pusher {}

impl Program for Pusher {
    fn uses_headers(&self) -> bool {
        true
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        if pkt.ingress_port != 0 {
            return Verdict::Forward(0);
        }
        if pkt.mptcp_kind().is_some() {
            let h = ctx.headers_mut();
            h.push(Header::Int(IntHeader {
                switch_id: 1,
                ..IntHeader::default()
            }))
            .unwrap();
            h.push(Header::Routing(RoutingHeader {
                conn_id: u64::from(pkt.src_port) << 16 | u64::from(pkt.dst_port),
                path: 1,
                hops: 1,
            }))
            .unwrap();
            self.0.lock().unwrap().pushed += 1;
        }
        Verdict::Forward(R1_TO_R3)
    }

    fn uses_dequeue(&self, port: PortId) -> bool {
        port == R1_TO_R3
    }

    fn on_dequeue(&mut self, _pkt: &mut PacketMeta, _port: PortId, q: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        let mut seen = self.0.lock().unwrap();
        if q.deq_timedelta_ps != ctx.now_ps() - q.enq_timestamp_ps {
            seen.bad_timedelta += 1;
        }
        if let Some(int) = ctx.headers_mut().int_mut() {
            int.sojourn_ns = (q.deq_timedelta_ps / 1000) as u32;
            int.depth_bytes = q.deq_qdepth_bytes as u32;
            int.queue_id = q.queue;
            seen.filled += 1;
            seen.max_sojourn_ns = seen.max_sojourn_ns.max(int.sojourn_ns);
        }
        EgressVerdict::Transmit
    }
}

/// r3: reads the option, the routing header and the INT header of each segment, pops the
/// routing header, and routes as `mptcp/two-paths`' tables do.
struct Popper(Arc<Mutex<Seen>>);

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for Popper {}

impl Program for Popper {
    fn parses_mptcp(&self) -> bool {
        true
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        let mut seen = self.0.lock().unwrap();
        let has_option = ctx.mptcp_option().is_some();
        let routing = ctx.headers().routing().copied();
        let int = ctx.headers().int().copied();
        if !ctx.headers().is_empty() && !has_option {
            seen.stray += 1;
        }
        if let (true, Some(r), Some(i)) = (has_option, routing, int) {
            seen.all_three += 1;
            if r.conn_id == u64::from(pkt.src_port) << 16 | u64::from(pkt.dst_port) && r.path == 1 && r.hops == 1 {
                seen.routing_ok += 1;
            }
            if i.sojourn_ns > 0 && i.switch_id == 1 {
                seen.int_waited += 1;
            }
            let before = ctx.headers().wire_bytes();
            assert_eq!(ctx.headers_mut().pop().map(|h| h.kind()), Some(HeaderKind::Routing));
            if before - ctx.headers().wire_bytes() == 16 {
                seen.popped += 1;
            }
        }
        // r3's ports: eth0 to r1 (path1), eth1 to r2 (path2), eth2 to the server.
        let port = match std::net::Ipv4Addr::from(pkt.dst_ip).octets() {
            [10, 1, ..] => 0,
            [10, 2, ..] => 1,
            _ => 2,
        };
        Verdict::Forward(port)
    }
}

#[test]
fn a_segment_carries_an_mptcp_option_a_routing_and_an_int_header_across_two_switches() {
    let sc = builtin("mptcp/two-paths")
        .with_variant("lia")
        .unwrap()
        .scaled_to(500_000_000_000);
    let dir = std::env::temp_dir().join(format!("mpsched-extension-headers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("r3-in.pcap");
    let mut opts = SimOptions::with_seed(1);
    opts.captures.push(CaptureRequest {
        node: "r3".into(),
        iface: "eth0".into(),
        path: pcap.clone(),
        snaplen: 2000,
    });
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut sim = Simulation::new(&sc, &opts).unwrap();
    sim.install_program("r1", Box::new(Pusher(seen.clone()))).unwrap();
    sim.install_program("r3", Box::new(Popper(seen.clone()))).unwrap();
    sim.run_until(sim.end_ps() / 2);
    sim.check_held().unwrap();
    sim.run_until(sim.end_ps());
    sim.check_held().unwrap();
    let out = sim.finish().unwrap();
    let s = seen.lock().unwrap();
    assert!(s.pushed > 1000, "{s:?}");
    assert_eq!(s.bad_timedelta, 0, "{s:?}");
    // Segments r1's full queue refused never reached its egress; every other one did.
    let tail_drops = out.figures.counters["queues"]["r1->r3.tail_drops"];
    assert!(tail_drops > 0, "path1's queue overflows now and then");
    assert_eq!(
        s.filled,
        s.pushed - tail_drops,
        "every queued INT header filled at r1's egress: {s:?}"
    );
    assert_eq!(
        s.all_three, s.filled,
        "every segment arrives at r3 with all three: {s:?}"
    );
    assert_eq!((s.routing_ok, s.popped, s.stray), (s.filled, s.filled, 0), "{s:?}");
    // path1 is a 100 Mbit/s bottleneck behind a 1 Gbit/s link: segments wait there, at most a
    // full queue of 100 frames (12 ms at 100 Mbit/s).
    assert!(s.int_waited > s.filled / 10, "{s:?}");
    assert!(s.max_sojourn_ns > 1_000_000 && s.max_sojourn_ns < 13_000_000, "{s:?}");
    let mp = out.figures.flows.iter().find(|f| f.id == "mp").unwrap();
    // The subflow whose segments carry the headers keeps up with the one whose do not.
    let sub = &mp.tcp.as_ref().unwrap().subflows;
    assert!(sub[0].acked_mbps > 0.7 * sub[1].acked_mbps, "{mp:?}");

    // The capture of r3's input holds the shims; the parser reads the three headers back.
    let bytes = std::fs::read(&pcap).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
    let (mut frames, mut with_all) = (0, 0);
    while let Some(p) = reader.next_packet() {
        let p = p.unwrap();
        frames += 1;
        let (meta, option, stack) = mpsched_core::wire::parse_frame_with_headers(&p.data, 0).unwrap();
        if !stack.is_empty() {
            assert_eq!(stack.len(), 2);
            assert!(option.is_some() && meta.mptcp_kind().is_some());
            let r = stack.routing().unwrap();
            assert_eq!(r.conn_id, u64::from(meta.src_port) << 16 | u64::from(meta.dst_port));
            assert_eq!(stack.int().unwrap().switch_id, 1);
            with_all += 1;
        }
    }
    assert_eq!(with_all, s.filled, "{frames} frames");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two switches over a link with two queues each way.
const TWO_SWITCHES: &str = r#"
[scenario]
name = "emit-queue"
duration = "10ms"

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
name = "h2"
kind = "host"

[[link]]
a = "h1"
b = "s1"
rate = "1Gbps"
[[link]]
a = "s1"
b = "s2"
rate = "1Gbps"
queues = 2
[[link]]
a = "s2"
b = "h2"
rate = "1Gbps"

# A scenario needs a flow; the probe programs drop its few packets.
[[flow]]
name = "idle"
src = "h1"
dst = "h2"
rate = "1Mbps"
start = "9ms"
"#;

/// What the probe's switches saw: (queue at s1's egress, INT switch id there, wire length at
/// s2, INT switch id at s2).
type ProbeLog = Arc<Mutex<Vec<(u8, Option<u32>, u32, Option<u32>)>>>;

/// s1: emits a probe every millisecond into queue 1 of its port to s2 with an INT header, and
/// sees it leave; s2: sees it arrive.
struct ProbeEnds {
    origin: bool,
    log: ProbeLog,
}

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for ProbeEnds {}

impl Program for ProbeEnds {
    fn start(&mut self, ctx: &mut Ctx) {
        if self.origin {
            ctx.set_timer(ctx.now_ps() + 1_000_000_000, 0);
        }
    }

    fn on_timer(&mut self, _token: u64, ctx: &mut Ctx) {
        let mut e = mpsched_core::program::Emit::new(1, PacketMeta::udp(1, 0xffff_ffff, 1, 7777, 64));
        e.queue = Some(1);
        e.headers
            .push(Header::Int(IntHeader {
                switch_id: 7,
                ..IntHeader::default()
            }))
            .unwrap();
        ctx.emit_packet(e);
        ctx.set_timer(ctx.now_ps() + 1_000_000_000, 0);
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        if pkt.dst_ip == 0xffff_ffff {
            let int = ctx.headers().int().map(|i| i.switch_id);
            self.log.lock().unwrap().last_mut().unwrap().2 = pkt.wire_len_bytes;
            self.log.lock().unwrap().last_mut().unwrap().3 = int;
            return Verdict::Consume;
        }
        Verdict::Drop(mpsched_core::program::DropReason::NoRoute)
    }

    fn uses_dequeue(&self, port: PortId) -> bool {
        self.origin && port == 1
    }

    fn on_dequeue(&mut self, pkt: &mut PacketMeta, _port: PortId, q: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        if pkt.dst_ip == 0xffff_ffff {
            let int = ctx.headers().int().map(|i| i.switch_id);
            self.log.lock().unwrap().push((q.queue, int, 0, None));
        }
        EgressVerdict::Transmit
    }
}

#[test]
fn an_emitted_packet_takes_the_queue_and_the_headers_its_program_names() {
    let sc = mpsched_scenario::Scenario::from_toml(TWO_SWITCHES, "emit-queue.toml").unwrap();
    let log = ProbeLog::default();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    sim.install_program(
        "s1",
        Box::new(ProbeEnds {
            origin: true,
            log: log.clone(),
        }),
    )
    .unwrap();
    sim.install_program(
        "s2",
        Box::new(ProbeEnds {
            origin: false,
            log: log.clone(),
        }),
    )
    .unwrap();
    sim.run_until(sim.end_ps());
    sim.check_held().unwrap();
    let log = log.lock().unwrap();
    assert!(log.len() >= 9, "{log:?}");
    for &probe in log.iter() {
        // Queue 1 (DSCP 0 alone would say 0); 64 bytes and a 20-byte INT shim on the wire.
        assert_eq!(probe, (1, Some(7), 84, Some(7)), "{log:?}");
    }
}
