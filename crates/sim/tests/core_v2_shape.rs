//! The Core v2 shape carries what the later papers need (issue #9): a program that originates
//! packets on a timer and floods them (HULA's probes), and ports with several queues under a
//! discipline (PMQECN's priority queues), each in a small run.

use mpsched_core::packet::{PacketMeta, PortId};
use mpsched_core::program::{Ctx, DropReason, Program, Verdict};
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

/// Destination of the toy probes.
const PROBE_DST: u32 = 0xffff_ffff;

/// A toy probe program: the origin sends a probe every `period_ps` out of every port; every
/// switch sends a probe it has not seen before out of every port but the one it came in on, and
/// drops repeats (the probe's sequence number rides in its source port). Other packets are
/// dropped: the test looks at probes only.
struct FloodProbe {
    own_ip: u32,
    n_ports: PortId,
    period_ps: Option<u64>,
    next_seq: u16,
    newest_seen: Option<u16>,
    originated: u64,
    first_seen: u64,
    repeats: u64,
    copies_sent: u64,
}

impl FloodProbe {
    fn new(own_ip: u32, n_ports: PortId, period_ps: Option<u64>) -> Self {
        FloodProbe {
            own_ip,
            n_ports,
            period_ps,
            next_seq: 0,
            newest_seen: None,
            originated: 0,
            first_seen: 0,
            repeats: 0,
            copies_sent: 0,
        }
    }

    fn flood(&mut self, probe: PacketMeta, except: Option<PortId>, ctx: &mut Ctx) {
        for port in (0..self.n_ports).filter(|&p| Some(p) != except) {
            ctx.emit(port, probe);
            self.copies_sent += 1;
        }
    }
}

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for FloodProbe {}

impl Program for FloodProbe {
    fn start(&mut self, ctx: &mut Ctx) {
        if let Some(p) = self.period_ps {
            ctx.set_timer(ctx.now_ps() + p, 0);
        }
    }

    fn on_timer(&mut self, _token: u64, ctx: &mut Ctx) {
        let probe = PacketMeta::udp(self.own_ip, PROBE_DST, self.next_seq, 7777, 64);
        self.next_seq += 1;
        self.originated += 1;
        self.newest_seen = Some(probe.src_port);
        self.flood(probe, None, ctx);
        ctx.set_timer(ctx.now_ps() + self.period_ps.expect("only the origin has a timer"), 0);
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        if pkt.dst_ip != PROBE_DST {
            return Verdict::Drop(DropReason::NoRoute);
        }
        if self.newest_seen.is_some_and(|s| pkt.src_port <= s) {
            self.repeats += 1;
            return Verdict::Consume;
        }
        self.newest_seen = Some(pkt.src_port);
        self.first_seen += 1;
        self.flood(*pkt, Some(pkt.ingress_port), ctx);
        Verdict::Consume
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("probes_originated".into(), self.originated),
            ("probes_first_seen".into(), self.first_seen),
            ("probes_repeated".into(), self.repeats),
            ("probe_copies_sent".into(), self.copies_sent),
        ]
    }
}

/// Four switches in a ring, s0 - s1 - s2 - s3 - s0, a host on s0 and one on s2.
const RING: &str = r#"
[scenario]
name = "ring"
duration = "1s"
[[node]]
name = "h0"
kind = "host"
[[node]]
name = "h2"
kind = "host"
[[node]]
name = "s0"
kind = "switch"
[[node]]
name = "s1"
kind = "switch"
[[node]]
name = "s2"
kind = "switch"
[[node]]
name = "s3"
kind = "switch"
[[link]]
a = "s0"
b = "s1"
rate = "1Gbps"
delay = "10us"
[[link]]
a = "s1"
b = "s2"
rate = "1Gbps"
delay = "10us"
[[link]]
a = "s2"
b = "s3"
rate = "1Gbps"
delay = "10us"
[[link]]
a = "s3"
b = "s0"
rate = "1Gbps"
delay = "10us"
[[link]]
a = "h0"
b = "s0"
rate = "1Gbps"
[[link]]
a = "h2"
b = "s2"
rate = "1Gbps"
[[flow]]
name = "f"
src = "h0"
dst = "h2"
rate = "1Mbps"
"#;

#[test]
fn a_program_originates_probes_on_a_timer_and_floods_them_but_back() {
    let sc = Scenario::from_toml(RING, "ring.toml").unwrap();
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    // Ports in the order the node's links are declared: s0 has s1, s3, h0; s2 has s1, s3, h2.
    let ports = [("s0", 3), ("s1", 2), ("s2", 3), ("s3", 2)];
    for (i, &(name, n)) in ports.iter().enumerate() {
        let period = (i == 0).then_some(1_000_000_000); // 1 ms, at s0 only
        let ip = sc.nodes[sc.node_index(name).unwrap()].ip;
        sim.install_program(name, Box::new(FloodProbe::new(ip, n, period)))
            .unwrap();
    }
    let out = sim.run().unwrap();
    let c = |node: &str, k: &str| out.figures.counters[node][k];
    // 1 s of 1 ms periods: 1 000 probes (the run drains 2 s more, and the timer keeps going).
    let originated = c("s0", "probes_originated");
    assert!(originated >= 1000, "{originated}");
    for s in ["s1", "s2", "s3"] {
        assert_eq!(c(s, "probes_first_seen"), originated, "{s} sees every probe once");
    }
    // s1 and s3 pass each probe on to s2 only (not back to s0); s2, reached twice, sends the
    // first copy on to its host and the other ring neighbour, and drops the second. That
    // neighbour has seen the probe already and drops it, and so does s0 for the copies
    // that come back round.
    assert_eq!(c("s1", "probe_copies_sent"), originated);
    assert_eq!(c("s3", "probe_copies_sent"), originated);
    assert_eq!(c("s2", "probe_copies_sent"), 2 * originated);
    assert_eq!(c("s2", "probes_repeated"), originated);
    assert_eq!(c("s0", "probe_copies_sent"), 3 * originated);
    // The hosts get the copies sent their way and, not being addressed, drop them.
    assert!(c("h0", "dropped") >= originated && c("h2", "dropped") >= originated);
}

/// Three senders through one 10 Mbit/s port with three queues: high (DSCP 16, class 2) offers
/// 8 Mbit/s, middle (DSCP 8, class 1) and low (DSCP 0) 4 Mbit/s each.
fn three_classes(discipline: &str) -> String {
    let mut s = String::from(
        r#"
[scenario]
name = "classes"
duration = "10s"
[[node]]
name = "hi"
kind = "host"
[[node]]
name = "mid"
kind = "host"
[[node]]
name = "lo"
kind = "host"
[[node]]
name = "dst"
kind = "host"
[[node]]
name = "sw"
kind = "switch"
[[link]]
a = "hi"
b = "sw"
rate = "100Mbps"
[[link]]
a = "mid"
b = "sw"
rate = "100Mbps"
[[link]]
a = "lo"
b = "sw"
rate = "100Mbps"
[[link]]
a = "sw"
b = "dst"
rate = "10Mbps"
queues = 3
"#,
    );
    s.push_str(&format!("discipline = \"{discipline}\"\n"));
    for (name, rate, dscp) in [("hi", "8Mbps", 16), ("mid", "4Mbps", 8), ("lo", "4Mbps", 0)] {
        s.push_str(&format!(
            "[[flow]]\nname = \"{name}\"\nsrc = \"{name}\"\ndst = \"dst\"\nrate = \"{rate}\"\ndscp = {dscp}\n"
        ));
    }
    s
}

/// The figures of a run of scenario `text` (named `file` in errors) with seed 1.
fn run_scenario(text: &str, file: &str) -> RunFigures {
    let sc = Scenario::from_toml(text, file).unwrap();
    Simulation::new(&sc, &SimOptions::with_seed(1))
        .unwrap()
        .run()
        .unwrap()
        .figures
}

fn classes(discipline: &str) -> RunFigures {
    run_scenario(&three_classes(discipline), "classes.toml")
}

fn mbps(r: &RunFigures, id: &str) -> f64 {
    r.flows.iter().find(|f| f.id == id).unwrap().delivered_mbps
}

#[test]
fn strict_priority_starves_the_lowest_class_under_a_saturated_high_one() {
    let r = classes("strict-priority");
    let (hi, mid, lo) = (mbps(&r, "hi"), mbps(&r, "mid"), mbps(&r, "lo"));
    // 10 Mbit/s of wire carries 9.72 of 1470-byte payload: 8 to the high class, what is left to
    // the middle one, nothing to the low one.
    assert!(hi > 7.99, "high class loses nothing: {hi}");
    assert!((1.6..1.8).contains(&mid), "middle class gets the rest: {mid}");
    assert!(lo < 0.05, "low class starves: {lo}");
    // Deficit round robin among the same queues shares the port instead: the high class is cut
    // to a third of it, and the low class gets its third.
    let r = classes("drr");
    let (hi, lo) = (mbps(&r, "hi"), mbps(&r, "lo"));
    assert!((3.1..3.4).contains(&hi) && (3.1..3.4).contains(&lo), "{hi} {lo}");
}

/// A UE with a Wi-Fi and a cellular interface (10 Mbit/s each, `wifi_ip` and `cell_ip` extra
/// keys on those links) to a core switch and a server, with a path through each access switch.
fn two_homes(name: &str, duration: &str, wifi_ip: &str, cell_ip: &str) -> String {
    let net = r#"[[node]]
name = "ue"
kind = "host"
[[node]]
name = "srv"
kind = "host"
[[node]]
name = "wifi"
kind = "switch"
[[node]]
name = "cell"
kind = "switch"
[[node]]
name = "core"
kind = "switch"
[[link]]
a = "ue"
b = "wifi"
rate = "10Mbps"
WIFI_IP
[[link]]
a = "ue"
b = "cell"
rate = "10Mbps"
CELL_IP
[[link]]
a = "wifi"
b = "core"
rate = "100Mbps"
[[link]]
a = "cell"
b = "core"
rate = "100Mbps"
[[link]]
a = "core"
b = "srv"
rate = "100Mbps"
[[path]]
name = "via-wifi"
nodes = ["wifi", "core"]
[[path]]
name = "via-cell"
nodes = ["cell", "core"]
"#;
    format!("[scenario]\nname = \"{name}\"\nduration = \"{duration}\"\n")
        + &net.replace("WIFI_IP", wifi_ip).replace("CELL_IP", cell_ip)
}

/// A host with two interfaces, each to its own 10 Mbit/s path to the destination: two flows
/// pinned to the two paths leave by the interface that starts each path and together carry
/// twice what one path can (the shape MPTCP subflows and an ATSSS UE need).
#[test]
fn a_multi_homed_host_sends_each_flow_by_the_interface_its_path_starts_at() {
    let text = two_homes("two-homes", "10s", "", "")
        + r#"
[[flow]]
name = "a"
src = "ue"
dst = "srv"
rate = "9Mbps"
path = "via-wifi"
[[flow]]
name = "b"
src = "ue"
dst = "srv"
rate = "9Mbps"
path = "via-cell"
src_port = 40001
[[flow]]
name = "c"
src = "ue"
dst = "srv"
protocol = "tcp"
path = "via-cell"
start = "5s"
"#;
    let sc = Scenario::from_toml(&text, "two-homes.toml").unwrap();
    let r = Simulation::new(&sc, &SimOptions::with_seed(1))
        .unwrap()
        .run()
        .unwrap()
        .figures;
    // Each 9 Mbit/s flow fits its own 10 Mbit/s interface: no loss, 18 Mbit/s in all, which one
    // interface could not carry.
    let (a, b) = (mbps(&r, "a"), mbps(&r, "b"));
    assert!(a > 8.99 && b > 4.0, "{a} {b}");
    assert_eq!(
        r.flows[0].loss_pct,
        Some(0.0),
        "flow a alone on the Wi-Fi interface loses nothing"
    );
    // The TCP flow shares the cellular interface with b from 5 s: the two together fill it.
    let c = mbps(&r, "c");
    assert!(c > 0.3, "TCP over the cellular interface gets a share: {c}");
    assert_eq!(r.counters["wifi"]["counter.no_route"], 0);
    let q = &r.counters["queues"];
    assert_eq!(q["ue->wifi.tail_drops"], 0, "nothing queues on the Wi-Fi side");
}

/// The two-interface host again, with an address per interface (`a_ip` on its links): each
/// flow's packets carry the address of the interface they leave by, the switches route each
/// address back through its own interface, and the TCP flow's ACKs come home by the cellular
/// interface they were addressed to. Read off captures of both interfaces.
#[test]
fn each_interface_of_a_multi_homed_host_has_its_own_address() {
    let text = two_homes("two-addresses", "2s", "a_ip = \"10.1.0.2\"", "a_ip = \"10.2.0.2\"")
        + r#"
[[flow]]
name = "a"
src = "ue"
dst = "srv"
rate = "5Mbps"
path = "via-wifi"
[[flow]]
name = "b"
src = "ue"
dst = "srv"
protocol = "tcp"
path = "via-cell"
"#;
    let sc = Scenario::from_toml(&text, "two-addresses.toml").unwrap();
    let dir = std::env::temp_dir().join(format!("mpsched-two-addresses-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut opts = SimOptions::with_seed(1);
    for peer in ["wifi", "cell"] {
        opts.captures.push(mpsched_run::CaptureRequest {
            node: "ue".into(),
            iface: peer.into(),
            path: dir.join(format!("{peer}.pcap")),
            // Whole frames: pcap-file's reader refuses truncated records (Wireshark reads them).
            snaplen: 65_535,
        });
    }
    let r = Simulation::new(&sc, &opts).unwrap().run().unwrap().figures;
    assert!(mbps(&r, "a") > 4.9, "{}", mbps(&r, "a"));
    assert!(mbps(&r, "b") > 3.0, "{}", mbps(&r, "b"));
    let addresses = |peer: &str| -> std::collections::BTreeSet<(String, String)> {
        let f = std::fs::File::open(dir.join(format!("{peer}.pcap"))).unwrap();
        let mut rd = pcap_file::pcap::PcapReader::new(f).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(p) = rd.next_packet() {
            let m = mpsched_core::wire::parse_frame(&p.unwrap().data, 0).unwrap();
            let ip = |a: u32| std::net::Ipv4Addr::from(a).to_string();
            seen.insert((ip(m.src_ip), ip(m.dst_ip)));
        }
        seen
    };
    let srv = "10.0.0.2".to_string();
    let wifi: Vec<_> = addresses("wifi").into_iter().collect();
    assert_eq!(
        wifi,
        [("10.1.0.2".to_string(), srv.clone())],
        "only flow a, from the Wi-Fi address"
    );
    let cell: Vec<_> = addresses("cell").into_iter().collect();
    assert_eq!(
        cell,
        [
            ("10.0.0.2".to_string(), "10.2.0.2".to_string()),
            ("10.2.0.2".to_string(), srv)
        ],
        "flow b from the cellular address, and its ACKs back to it"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn interface_addresses_are_checked() {
    let base = |extra: &str| {
        format!(
            r#"
[scenario]
name = "x"
duration = "1s"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "h2"
kind = "host"
[[node]]
name = "s"
kind = "switch"
[[link]]
a = "h1"
b = "s"
rate = "10Mbps"
{extra}
[[link]]
a = "s"
b = "h2"
rate = "10Mbps"
[[flow]]
name = "f"
src = "h1"
dst = "h2"
rate = "1Mbps"
"#
        )
    };
    for (extra, field, why) in [
        (
            "b_ip = \"10.9.0.1\"",
            "link[0].b_ip",
            "only hosts take an address per interface",
        ),
        ("a_ip = \"10.0.0.2\"", "link[0].a_ip", "duplicate address"),
        ("a_ip = \"ten\"", "link[0].a_ip", "expected an IPv4 address"),
    ] {
        let e = Scenario::from_toml(&base(extra), "x.toml").unwrap_err().to_string();
        assert!(e.contains(field) && e.contains(why), "{extra}: {e}");
    }
    let ok = Scenario::from_toml(&base("a_ip = \"10.9.0.1\""), "x.toml");
    assert!(ok.is_ok(), "{:?}", ok.err());
}

/// A program counting the TCP flags it sees at ingress, then forwarding by a fixed port table.
struct FlagCounter {
    port_of: Vec<(u32, PortId)>,
    ack_only: u64,
    data: u64,
}

/// Exposes nothing to a control plane.
impl mpsched_core::control::ProgramControl for FlagCounter {}

impl Program for FlagCounter {
    fn ingress(&mut self, pkt: &mut PacketMeta, _ctx: &mut Ctx) -> Verdict {
        use mpsched_core::wire::tcp_flags::{ACK, PSH};
        match pkt.tcp_flags() {
            Some(f) if f & PSH != 0 => self.data += 1,
            Some(f) if f == ACK => self.ack_only += 1,
            _ => {}
        }
        match self.port_of.iter().find(|(ip, _)| *ip == pkt.dst_ip) {
            Some(&(_, p)) => Verdict::Forward(p),
            None => Verdict::Drop(DropReason::NoRoute),
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![("data".into(), self.data), ("ack_only".into(), self.ack_only)]
    }
}

/// Header extensions: a switch program reads a TCP segment's flags from the packet's metadata
/// (MP-HULA will read MPTCP's options the same way).
#[test]
fn a_program_sees_tcp_flags_in_the_header_extension() {
    let text = r#"
[scenario]
name = "flags"
duration = "2s"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "b"
kind = "host"
[[node]]
name = "sw"
kind = "switch"
[[link]]
a = "a"
b = "sw"
rate = "100Mbps"
[[link]]
a = "sw"
b = "b"
rate = "100Mbps"
[[flow]]
name = "t"
src = "a"
dst = "b"
protocol = "tcp"
"#;
    let sc = Scenario::from_toml(text, "flags.toml").unwrap();
    let ip = |n: &str| sc.nodes[sc.node_index(n).unwrap()].ip;
    let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
    let counter = FlagCounter {
        port_of: vec![(ip("a"), 0), (ip("b"), 1)],
        ack_only: 0,
        data: 0,
    };
    sim.install_program("sw", Box::new(counter)).unwrap();
    let r = sim.run().unwrap().figures;
    let c = &r.counters["sw"];
    let t = r.flows[0].tcp.as_ref().unwrap();
    // Every data segment that reached the receiver crossed the switch with PSH set (some that
    // were sent did not get past the sender's own queue).
    let f = &r.flows[0];
    assert!(
        c["data"] >= f.delivered_pkts && c["data"] <= f.sent_pkts,
        "{c:?}: {} sent, {} delivered",
        f.sent_pkts,
        f.delivered_pkts
    );
    assert!(
        c["ack_only"] > 0 && c["ack_only"] < c["data"],
        "pure ACKs, fewer (delayed): {c:?} {t:?}"
    );
}

/// Host `h`, switch `s`, host `d`: a 100 Mbit/s link from `h` (with `host_link_extra` keys),
/// 1 Gbit/s on to `d`, 100 us each.
fn host_switch_host(host_link_extra: &str) -> String {
    format!(
        r#"
[[node]]
name = "h"
kind = "host"
[[node]]
name = "s"
kind = "switch"
[[node]]
name = "d"
kind = "host"
[[link]]
a = "h"
b = "s"
rate = "100Mbps"
delay = "100us"
{host_link_extra}
[[link]]
a = "s"
b = "d"
rate = "1Gbps"
delay = "100us"
"#
    )
}

/// A TCP flow over a host's 100 Mbit/s link (the bottleneck: the rest is 1 Gbit/s) with
/// 8-packet queues, from the host (`towards_host` false: its own interface is the bottleneck) or
/// to it (the switch's port towards it is); `host_link_extra` adds keys to the host's link.
fn host_bottleneck(host_link_extra: &str, towards_host: bool) -> RunFigures {
    let (src, dst) = if towards_host { ("d", "h") } else { ("h", "d") };
    let text = format!(
        r#"
[scenario]
name = "host-queue"
duration = "3s"
queue_pkts = 8
{}[[flow]]
name = "t"
src = "{src}"
dst = "{dst}"
protocol = "tcp"
tcp.receive_window = "256KB"
"#,
        host_switch_host(host_link_extra)
    );
    run_scenario(&text, "host-queue.toml")
}

/// `host_queue_pkts` sizes the host's own interface queue (Linux's txqueuelen), not the
/// switch's: with the scenario's 8 packets there the flow's slow start overflows its own
/// interface and it retransmits; with 1 000 the window (at most 256 KB, about 180 segments)
/// fits, nothing is lost, and the flow fills its link. The switch's end of the same link keeps
/// 8 packets: a flow towards the host loses there either way, the same segments.
#[test]
fn host_queue_pkts_sizes_the_hosts_own_queue_only() {
    let retx = |r: &RunFigures| r.flows[0].tcp.as_ref().unwrap().retransmitted_segments.unwrap();
    let small = host_bottleneck("", false);
    let large = host_bottleneck("host_queue_pkts = 1000", false);
    assert!(retx(&small) > 0, "8 packets at the host: slow start overflows them");
    assert_eq!(retx(&large), 0, "1 000 at the host hold the whole window");
    assert!(mbps(&large, "t") > 90.0, "{}", mbps(&large, "t"));
    let back_small = host_bottleneck("", true);
    let back_large = host_bottleneck("host_queue_pkts = 1000", true);
    assert!(retx(&back_large) > 0, "the switch's end keeps 8 packets");
    assert_eq!(retx(&back_small), retx(&back_large));
}

/// Two TCP flows from one host whose own interface (100 Mbit/s, 8 packets) is the bottleneck,
/// with `tcp.host_queue_limit` = `limit` if given.
fn two_flows_from_one_host(limit: Option<&str>) -> RunFigures {
    let tcp = limit.map_or(String::new(), |l| format!("host_queue_limit = \"{l}\""));
    let flow = |name: &str| {
        format!("[[flow]]\nname = \"{name}\"\nsrc = \"h\"\ndst = \"d\"\nprotocol = \"tcp\"\ntcp.receive_window = \"256KB\"\n")
    };
    let text = format!(
        r#"
[scenario]
name = "host-queue-limit"
duration = "3s"
queue_pkts = 8
[tcp]
cc = "reno"
{tcp}
{}{}{}"#,
        host_switch_host(""),
        flow("a"),
        flow("b")
    );
    run_scenario(&text, "host-queue-limit.toml")
}

/// `tcp.host_queue_limit`: a host's senders wait for room in its interface queue instead of
/// overflowing it (Linux's TCP Small Queues; htsim's lossless host queue). Without it two flows'
/// slow starts overflow the host's 8 packets and retransmit; with a limit of 4 packets nothing
/// is lost anywhere (the host's link is the only bottleneck), the link stays full and the flows,
/// admitted in turn as the queue drains, share it.
#[test]
fn host_queue_limit_makes_a_hosts_senders_wait_instead_of_dropping() {
    let retx = |r: &RunFigures, f: usize| r.flows[f].tcp.as_ref().unwrap().retransmitted_segments.unwrap();
    let dropping = two_flows_from_one_host(None);
    assert!(
        retx(&dropping, 0) + retx(&dropping, 1) > 0,
        "8 packets at the host overflow"
    );
    let waiting = two_flows_from_one_host(Some("6000B"));
    assert_eq!(
        (retx(&waiting, 0), retx(&waiting, 1)),
        (0, 0),
        "a sender that waits loses nothing"
    );
    let (a, b) = (mbps(&waiting, "a"), mbps(&waiting, "b"));
    assert!(a + b > 90.0, "the link stays full: {a} + {b} Mbit/s");
    assert!(
        a.min(b) > 0.8 * a.max(b),
        "in turn, about equal shares: {a} and {b} Mbit/s"
    );
}

/// A limit below one segment could never admit a segment: refused at validation.
#[test]
fn host_queue_limit_below_a_segment_is_refused() {
    let text = include_str!("../../../scenarios/dc/htsim-mptcp-k4.toml")
        .replace("host_queue_limit = \"1500000B\"", "host_queue_limit = \"1000B\"");
    let e = Scenario::from_toml(&text, "x.toml").unwrap_err();
    assert!(e.to_string().contains("tcp.host_queue_limit"), "{e}");
}

/// An ABC limit of no segment could never grow a window: refused at validation.
#[test]
fn an_abc_limit_of_zero_is_refused() {
    let text = include_str!("../../../scenarios/dc/htsim-mptcp-k4.toml").replace("abc_limit = 1", "abc_limit = 0");
    let e = Scenario::from_toml(&text, "x.toml").unwrap_err();
    assert!(e.to_string().contains("tcp.abc_limit"), "{e}");
}
