//! The live test: a k = 4 fat tree (`hula-fat-tree-k4.toml`) whose switches run MP-HULA, and
//! kernel MPTCP connections of two subflows between single-homed hosts in different pods.
//!
//! The scenario runner opens a second subflow only from a second interface, and a fat tree's
//! hosts have one; here the network is built from the scenario's own tables (namespaces, veths,
//! hosts as the backend configures them, each switch's eBPF program through the backend's
//! loader) and the server's path manager announces its address with a second port (a `signal`
//! endpoint with `port`), so the client opens a second subflow from its one address to that
//! port. Both subflows leave the client's rack, `tor0`, by one of its two uplinks.
//!
//! MP-HULA must put the two subflows of every connection on different uplinks (read from
//! tor0's connection table); ECMP (the same network with `program = "ecmp"`) puts them where
//! the hash of their 5-tuples says, which the test computes from `ss`'s subflows and reports.

use mpsched_core::packet::{PacketMeta, PortId};
use mpsched_core::sched::Ecmp;
use mpsched_core::wire::mac_for;
use mpsched_netns::dataplane::{NodeTables, PortBinding};
use mpsched_netns::ns::Netns;
use mpsched_netns::switchplane::{EbpfPlanes, SwitchPlane, SwitchPlanes};
use mpsched_netns::{hosts, subflows};
use mpsched_scenario::{NodeKind, Scenario};
use std::collections::BTreeMap;
use std::process::Child;
use std::time::Duration;

const SCENARIO: &str = include_str!("../hula-fat-tree-k4.toml");
const CLIENT: &str = "tor0-h0";
const SERVER: &str = "tor4-h0";
const TOR: &str = "tor0";
/// The scenario's flowlet gap, µs.
const GAP_US: u64 = 1000;

/// A network of namespaces, removed (processes killed, planes stopped) when dropped.
struct Net {
    sc: Scenario,
    w: mpsched_topo::Wiring,
    nss: Vec<Netns>,
    planes: Vec<(usize, Box<dyn SwitchPlane>)>,
    children: Vec<Child>,
}

impl Drop for Net {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.planes.clear();
        for n in self.nss.drain(..) {
            n.remove();
        }
    }
}

fn mac_of(node: usize, port: usize) -> [u8; 6] {
    mac_for(node as u32 + 1, port as PortId)
}

fn mac_string(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

impl Net {
    fn node(&self, name: &str) -> usize {
        self.sc.node_index(name).unwrap_or_else(|| panic!("no node {name}"))
    }

    /// Namespaces, unshaped veth links, hosts, and every switch's program.
    fn build(program: &str) -> Net {
        let text = SCENARIO.replace("program = \"mphula\"", &format!("program = \"{program}\""));
        let sc = Scenario::from_toml(&text, "hula-fat-tree-k4.toml").expect("the scenario parses");
        let w = sc.wiring().expect("the scenario wires");
        let id = format!("mps-{}xh{}", std::process::id(), program.len());
        let mut net = Net {
            nss: Vec::new(),
            planes: Vec::new(),
            children: Vec::new(),
            sc,
            w,
        };
        for (i, node) in net.sc.nodes.iter().enumerate() {
            let n = Netns::create(&format!("{id}-{i}")).expect("a namespace");
            n.sysctl("net.ipv6.conf.all.disable_ipv6", "1").unwrap();
            n.sysctl("net.ipv6.conf.default.disable_ipv6", "1").unwrap();
            n.sysctl("net.ipv4.ip_forward", "0").unwrap();
            if node.kind == NodeKind::Host {
                n.sysctl("net.mptcp.enabled", "1").unwrap();
            }
            net.nss.push(n);
        }
        net.links();
        for i in 0..net.sc.nodes.len() {
            if net.sc.nodes[i].kind == NodeKind::Host {
                hosts::configure(&net.nss[i], &net.sc, &net.w, i).expect("a host");
            }
        }
        net.switches();
        net
    }

    fn links(&self) {
        for (li, l) in self.sc.links.iter().enumerate() {
            let pa = self.w.ports[l.a].iter().position(|e| e.link == li).unwrap();
            let pb = self.w.ports[l.b].iter().position(|e| e.link == li).unwrap();
            let (ea, eb) = (format!("e{pa}"), format!("e{pb}"));
            let (na, nb) = (self.nss[l.a].name().to_string(), self.nss[l.b].name().to_string());
            mpsched_netns::ns::ip(&[
                "link", "add", &ea, "netns", &na, "type", "veth", "peer", "name", &eb, "netns", &nb,
            ])
            .expect("a veth");
            for (node, port, ifname) in [(l.a, pa, &ea), (l.b, pb, &eb)] {
                let n = &self.nss[node];
                n.ip(&["link", "set", ifname, "address", &mac_string(mac_of(node, port))])
                    .unwrap();
                n.ip(&["link", "set", ifname, "up"]).unwrap();
                n.frames_as_on_the_wire(ifname, false);
                // The link's rate (a token bucket): unshaped veths let TCP take every CPU
                // cycle, and probes then come late.
                let rate = format!("{}bit", l.rate_bps);
                let tbf = [
                    "qdisc", "replace", "dev", ifname, "root", "tbf", "rate", &rate, "burst", "32kb", "latency", "20ms",
                ];
                n.exec("tc", &tbf).expect("tc tbf");
            }
        }
    }

    fn switches(&mut self) {
        for i in 0..self.sc.nodes.len() {
            let Some(cfg) = self.w.switches[i].clone() else {
                continue;
            };
            let n = &self.nss[i];
            let ports = self.w.ports[i]
                .iter()
                .enumerate()
                .map(|(p, e)| PortBinding {
                    ifindex: n.ifindex(&format!("e{p}")).unwrap(),
                    own_mac: mac_of(i, p),
                    peer_mac: mac_of(e.peer, usize::from(e.peer_port)),
                })
                .collect();
            let (program, params) = self.sc.program_of(i).expect("every switch names its program");
            let tables = NodeTables {
                switch: cfg,
                ports,
                markers: Vec::new(),
                test_draws: Vec::new(),
                test_clock: false,
                program: program.name(),
                params: params.clone(),
                port_queues: Vec::new(),
                port_classes: Vec::new(),
                far_ends: Vec::new(),
            };
            let plane = EbpfPlanes
                .start(n, &tables)
                .unwrap_or_else(|e| panic!("{}: {e}", self.sc.nodes[i].name));
            self.planes.push((i, plane));
        }
    }

    /// MPTCP path managers: the client accepts an announced address; the server announces
    /// its own address with a second port.
    fn mptcp(&self, server_ip: &str) {
        let (c, s) = (&self.nss[self.node(CLIENT)], &self.nss[self.node(SERVER)]);
        c.ip(&["mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2"])
            .unwrap();
        s.ip(&["mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2"])
            .unwrap();
        s.ip(&["mptcp", "endpoint", "add", server_ip, "port", "5202", "signal"])
            .unwrap();
    }

    /// `streams` MPTCP connections from the client to the server for `seconds`, then what `ss`
    /// says of their subflows at the client (read while they run).
    fn traffic(&mut self, streams: u32, seconds: u32) -> Vec<subflows::SsSubflow> {
        let server_ip = mpsched_core::packet::ipv4_to_string(self.sc.nodes[self.node(SERVER)].ip);
        self.mptcp(&server_ip);
        let s = &self.nss[self.node(SERVER)];
        self.children.push(
            s.spawn("mptcpize", &["run", "iperf3", "-s", "-1", "-p", "5201"])
                .unwrap(),
        );
        std::thread::sleep(Duration::from_millis(500));
        let c = &self.nss[self.node(CLIENT)];
        let (p, t) = (streams.to_string(), seconds.to_string());
        let client = c
            .spawn(
                "mptcpize",
                &["run", "iperf3", "-c", &server_ip, "-p", "5201", "-P", &p, "-t", &t],
            )
            .unwrap();
        self.children.push(client);
        std::thread::sleep(Duration::from_secs(1));
        subflows::parse(&subflows::read(&self.nss[self.node(CLIENT)]))
    }

    fn tor_registers(&self) -> BTreeMap<String, u64> {
        let tor = self.node(TOR);
        let (_, plane) = self.planes.iter().find(|(i, _)| *i == tor).unwrap();
        plane.snapshot().expect("tor0's registers")
    }

    /// tor0's uplinks (ports to aggregation switches).
    fn uplinks(&self) -> Vec<usize> {
        let tor = self.node(TOR);
        self.w.ports[tor]
            .iter()
            .enumerate()
            .filter(|(_, e)| self.sc.nodes[e.peer].kind == NodeKind::Switch)
            .map(|(p, _)| p)
            .collect()
    }
}

/// Per MPTCP connection (by token): the uplink of tor0 its subflows take under ECMP.
fn ecmp_uplinks(net: &Net, subs: &[subflows::SsSubflow]) -> BTreeMap<String, Vec<PortId>> {
    let cfg = net.w.switches[net.node(TOR)].as_ref().unwrap();
    let addr = |s: &str| -> (u32, u16) {
        let (ip, port) = s.rsplit_once(':').unwrap();
        let ip: std::net::Ipv4Addr = ip.parse().unwrap();
        (u32::from(ip), port.parse().unwrap())
    };
    let mut out: BTreeMap<String, Vec<PortId>> = BTreeMap::new();
    for s in subs {
        let ((src, sp), (dst, dp)) = (addr(&s.local), addr(&s.remote));
        let mut m = PacketMeta::udp(src, dst, sp, dp, 0);
        m.proto = mpsched_core::packet::proto::TCP;
        let Some(r) = cfg
            .routes
            .iter()
            .filter(|r| r.len == 0 || (dst >> (32 - u32::from(r.len))) == (r.prefix >> (32 - u32::from(r.len))))
            .max_by_key(|r| r.len)
        else {
            continue;
        };
        let g = &cfg.ecmp_groups[usize::from(r.port & !mpsched_core::table::ECMP_GROUP)];
        let h = Ecmp::seeded_hash(&m, cfg.hash_seed);
        out.entry(s.token.clone()).or_default().push(g[h as usize % g.len()]);
    }
    out
}

/// Per connection in tor0's connection table with both subflows recorded: their ports.
fn mphula_uplinks(regs: &BTreeMap<String, u64>) -> Vec<(u64, u64)> {
    let slots: Vec<&str> = regs
        .keys()
        .filter_map(|k| k.strip_prefix("conn.")?.strip_suffix(".conn_id"))
        .collect();
    slots
        .iter()
        .map(|s| (regs[&format!("conn.{s}.port1")], regs[&format!("conn.{s}.port2")]))
        .filter(|&(a, b)| a != 0xffff && b != 0xffff)
        .collect()
}

/// While the traffic runs, sample tor0's connection table: how many times a connection whose
/// two subflows both sent within 5 ms of the table's latest packet (a connection carrying
/// data, not iperf3's idle control connection) had them on different ports, and on the same
/// one; and the registers at the last sample.
fn sample_mphula(net: &Net, samples: u32) -> (u32, u32, BTreeMap<String, u64>) {
    let (mut apart, mut together) = (0, 0);
    let mut regs = BTreeMap::new();
    for _ in 0..samples {
        std::thread::sleep(Duration::from_millis(100));
        regs = net.tor_registers();
        let latest = regs
            .iter()
            .filter(|(k, _)| k.starts_with("conn.") && k.ends_with("_us"))
            .map(|(_, v)| *v)
            .max()
            .unwrap_or(0);
        for s in mphula_slots(&regs) {
            let g = |k: &str| regs[&format!("conn.{s}.{k}")];
            let active = |l: u64| latest - l < 5 * GAP_US;
            if g("port1") == 0xffff || g("port2") == 0xffff || !active(g("last1_us")) || !active(g("last2_us")) {
                continue;
            }
            if g("port1") == g("port2") {
                together += 1;
            } else {
                apart += 1;
            }
        }
    }
    (apart, together, regs)
}

fn mphula_slots(regs: &BTreeMap<String, u64>) -> Vec<String> {
    regs.keys()
        .filter_map(|k| Some(k.strip_prefix("conn.")?.strip_suffix(".conn_id")?.to_string()))
        .collect()
}

pub fn mphula_puts_two_subflows_on_different_uplinks() {
    // MP-HULA: the two subflows of a connection on different uplinks. One data connection (and
    // iperf3's idle control connection): its subflows share the client's 200 Mbit/s link, each
    // sending about every 120 us, well within the 1 ms flowlet gap, so each holds its hop.
    let mut net = Net::build("mphula");
    let subs = net.traffic(1, 6);
    let (apart, together, regs) = sample_mphula(&net, 20);
    let pairs = mphula_uplinks(&regs);
    let up = net.uplinks();
    let tx: Vec<u64> = up.iter().map(|p| regs[&format!("port{p}.tx_pkts")]).collect();
    eprintln!(
        "MP-HULA: {} subflows seen by ss, tor0's connections (port of subflow 1, 2): {pairs:?}, uplinks {up:?} sent {tx:?}, pushed {}",
        subs.len(),
        regs["counter.mphula.pushed"]
    );
    eprintln!(
        "MP-HULA, sampled every 100 ms: two active subflows of a connection apart {apart} times, together {together}; \
         sibling skips {}, round robin {}, aged {}, prober {:?} triggers / missed / CPU us",
        regs["counter.mphula.sibling_skips"],
        regs["counter.mphula.round_robin"],
        regs["counter.hula.aged"],
        ["prober.triggers", "prober.missed", "prober.cpu_us"].map(|k| regs.get(k).copied().unwrap_or(0))
    );
    // iperf3's control connection and its data connection, each of two subflows.
    assert!(regs["counter.mphula.assoc"] >= 2, "{regs:?}");
    assert!(regs["counter.mphula.joins"] >= 2, "{regs:?}");
    assert!(!pairs.is_empty(), "no connection with two subflows in tor0's table");
    // Two subflows sending at once are kept apart; one that idles for a flowlet gap holds
    // nothing, and its sibling's next flowlet may take its hop (the samples allow for that).
    assert!(
        regs["counter.mphula.sibling_skips"] > 0,
        "no sub-flowlet avoided a sibling"
    );
    assert!(
        apart >= 10 && apart >= 4 * together,
        "subflows sharing an uplink: apart {apart}, together {together}"
    );
    assert!(tx.iter().all(|&t| t > 1000), "an idle uplink: {tx:?}");
    drop(net);

    // ECMP: where the hash puts the subflows of the same connections.
    let mut net = Net::build("ecmp");
    let subs = net.traffic(4, 2);
    let per_conn = ecmp_uplinks(&net, &subs);
    let two: Vec<&Vec<PortId>> = per_conn.values().filter(|v| v.len() == 2).collect();
    let shared = two.iter().filter(|v| v[0] == v[1]).count();
    eprintln!(
        "ECMP: {shared} of {} two-subflow connections share an uplink of tor0 ({per_conn:?}); \
         MP-HULA had them apart in {:.0} % of samples",
        two.len(),
        100.0 * f64::from(apart) / f64::from((apart + together).max(1))
    );
}
