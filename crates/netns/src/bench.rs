//! Data-plane benchmarks: each eBPF program's nanoseconds per packet under
//! `BPF_PROG_TEST_RUN`, and real UDP and TCP throughput through namespaces with and without the
//! splitter.

use crate::dataplane::{Dataplane, NodeTables};
use crate::ns::{self, Netns};
use crate::switchplane::{SwitchPlane, SwitchPlanes};
use crate::vectors::{test_run, TestNode};
use mpsched_core::frame::MarkerConfig;
use mpsched_core::packet::{Ecn, PacketMeta};
use mpsched_core::sched::{DwrrParams, SchedulerConfig};
use mpsched_core::switch::{ConfluenceConfig, SplitGroupConfig, SwitchConfig};
use mpsched_core::table::Route;
use mpsched_core::wire::{emit_udp_frame, mac_for};
use std::sync::Arc;
use std::time::Duration;

/// One program's cost.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProgramCost {
    /// What ran.
    pub name: String,
    /// Mean nanoseconds per packet over the repeats (the kernel's own timing).
    pub ns_per_pkt: f64,
    /// Millions of packets per second on one core at that cost.
    pub mpps: f64,
    /// Repeats.
    pub repeat: u32,
}

const SRC: u32 = 0x0a00_0001;
const DST: u32 = 0x0a00_0003;
const OWN: u32 = 0x0aff_0001;

fn frame(ecn: Ecn, payload: usize) -> Vec<u8> {
    let mut m = PacketMeta::udp(SRC, DST, 5001, 5201, 0);
    m.ecn = ecn;
    let mut out = Vec::new();
    emit_udp_frame(&m, mac_for(2, 0), mac_for(1, 0), 1, &vec![0u8; payload], &mut out);
    out
}

fn splitter(sched: SchedulerConfig, n: usize) -> SwitchConfig {
    let mut c = SwitchConfig::forwarding(
        OWN,
        vec![Route {
            prefix: SRC,
            len: 32,
            port: 0,
        }],
    );
    c.splits.push(SplitGroupConfig {
        group: 0,
        src_ip: SRC,
        dst_ip: DST,
        ports: (1..=n as u16).collect(),
        scheduler: sched,
        feedback_ports: (1..=n as u16).collect(),
    });
    c
}

/// Each program's cost with `repeat` runs (at least a million for the figures we publish).
pub fn program_costs(repeat: u32) -> Result<Vec<ProgramCost>, String> {
    let node = TestNode::create(9)?;
    let data = frame(Ecn::Ect0, 18); // a 64-byte frame
    let mut cases: Vec<(String, SwitchConfig, Vec<MarkerConfig>, &str)> = vec![
        (
            "wrr (2,1)".into(),
            splitter(SchedulerConfig::Wrr { weights: vec![2, 1] }, 2),
            vec![],
            "mps_ingress",
        ),
        (
            "wrr 8 paths".into(),
            splitter(
                SchedulerConfig::Wrr {
                    weights: vec![8, 7, 6, 5, 4, 3, 2, 1],
                },
                8,
            ),
            vec![],
            "mps_ingress",
        ),
        (
            "dwrr (2,1)".into(),
            splitter(
                SchedulerConfig::Dwrr {
                    weights: vec![2, 1],
                    params: DwrrParams::default(),
                },
                2,
            ),
            vec![],
            "mps_ingress",
        ),
        (
            "rs (67,33)".into(),
            splitter(
                SchedulerConfig::Rs {
                    shares_pct: vec![67, 33],
                },
                2,
            ),
            vec![],
            "mps_ingress",
        ),
    ];
    let mut routed = SwitchConfig::forwarding(
        OWN,
        vec![Route {
            prefix: DST,
            len: 32,
            port: 1,
        }],
    );
    cases.push(("routed (LPM)".into(), routed.clone(), vec![], "mps_ingress"));
    routed.confluences.push(ConfluenceConfig {
        group: 0,
        src_ip: SRC,
        dst_ip: DST,
        path_ingress_ports: vec![0, 2],
        return_ports: vec![0, 2],
        splitter_ip: OWN + 1,
        feedback_every: 16,
    });
    cases.push(("confluence, CE".into(), routed, vec![], "mps_ingress"));
    cases.push((
        "egress marker".into(),
        splitter(SchedulerConfig::Wrr { weights: vec![1, 1] }, 2),
        vec![MarkerConfig {
            port: 0,
            rate_bps: 10_000_000_000,
            threshold_bytes: 60 * 1514,
            limit_bytes: 65 * 1514,
        }],
        "mps_egress",
    ));
    let mut out = Vec::new();
    for (name, cfg, markers, prog) in cases {
        let tables = NodeTables {
            switch: cfg,
            ports: node.ports.clone(),
            markers,
            test_draws: Vec::new(),
            test_clock: false,
        };
        let input = if name.starts_with("confluence") {
            frame(Ecn::Ce, 18)
        } else {
            data.clone()
        };
        let ifindex = node.ports[0].ifindex;
        let ns = node.enter(|| -> Result<f64, String> {
            let dp = Dataplane::load(&tables).map_err(|e| e.to_string())?;
            // Warm up, then measure.
            test_run(&dp, prog, ifindex, &input, 10_000)?;
            let (_, _, d) = test_run(&dp, prog, ifindex, &input, repeat)?;
            Ok(d.as_nanos() as f64)
        })??;
        out.push(ProgramCost {
            name,
            ns_per_pkt: ns,
            mpps: if ns > 0.0 { 1e3 / ns } else { f64::INFINITY },
            repeat,
        });
    }
    Ok(out)
}

/// Throughput through `src -- sw -- dst`, where sw forwards with the kernel, with the eBPF
/// program's routes, or splits over two veth paths with WRR 1:1.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PathThroughput {
    /// How sw forwards.
    pub mode: String,
    /// UDP goodput at the receiver, Mbit/s.
    pub udp_mbps: f64,
    /// The same in thousands of packets per second (1 470-byte datagrams).
    pub udp_kpps: f64,
    /// TCP goodput, Mbit/s.
    pub tcp_mbps: f64,
}

/// Measure [`PathThroughput`] for each forwarding mode, `seconds` per test: the kernel's own
/// forwarding, then each of `planes` (the eBPF programs, BMv2, ...) routing and splitting.
pub fn path_throughput(seconds: u32, planes: &[Arc<dyn SwitchPlanes>]) -> Result<Vec<PathThroughput>, String> {
    let mut out = Vec::new();
    // (name, the switch and whether it splits; None: the kernel forwards).
    type Mode<'a> = (String, Option<(&'a Arc<dyn SwitchPlanes>, bool)>);
    let mut modes: Vec<Mode> = vec![("kernel forwarding".into(), None)];
    for p in planes {
        modes.push((format!("{} routes", p.switch_name()), Some((p, false))));
        modes.push((format!("{} WRR split over 2 paths", p.switch_name()), Some((p, true))));
    }
    for (mode, plane) in modes {
        let checksummed = plane.is_some_and(|(p, _)| p.needs_checksummed_frames());
        let path = BenchPath::create(checksummed)?;
        // Kept running until the measurement is over.
        let _switch = match plane {
            None => {
                path.kernel_forwarding()?;
                None
            }
            Some((p, split)) => Some(path.switch(p.as_ref(), split)?),
        };
        let (udp_mbps, tcp_mbps) = path.iperf_goodput(seconds)?;
        out.push(PathThroughput {
            mode,
            udp_mbps,
            udp_kpps: udp_mbps * 1e3 / (f64::from(UDP_PAYLOAD_BYTES + 28) * 8.0),
            tcp_mbps,
        });
    }
    Ok(out)
}

/// The UDP payload of the throughput test (a 1 512-byte frame).
const UDP_PAYLOAD_BYTES: u32 = 1470;

fn ns_err(x: ns::NsError) -> String {
    x.to_string()
}

/// `src -- sw == dst`: one veth from src to sw, two from sw to dst (the split's two paths).
/// MACs follow `mac_for` with node numbers src 10, sw 11, dst 12. The namespaces go with it.
struct BenchPath {
    src: Netns,
    sw: Netns,
    dst: Netns,
}

impl BenchPath {
    /// The three namespaces; `checksummed`: for a switch in user space, transmit checksum,
    /// segmentation and receive offloads off on every interface
    /// ([`SwitchPlanes::needs_checksummed_frames`], [`Netns::frames_as_on_the_wire`]); the kernel
    /// and eBPF paths keep the offloads a Linux deployment has.
    fn create(checksummed: bool) -> Result<BenchPath, String> {
        let id = crate::backend::new_run_id();
        let p = BenchPath {
            src: Netns::create(&format!("mps-{id}-bsrc")).map_err(ns_err)?,
            sw: Netns::create(&format!("mps-{id}-bsw")).map_err(ns_err)?,
            dst: Netns::create(&format!("mps-{id}-bdst")).map_err(ns_err)?,
        };
        veth(&p.src, "e0", &p.sw, "e0")?;
        veth(&p.sw, "e1", &p.dst, "e0")?;
        veth(&p.sw, "e2", &p.dst, "e1")?;
        for (n, node, ifs) in [(&p.src, 10, 1u16), (&p.sw, 11, 3), (&p.dst, 12, 2)] {
            for k in 0..ifs {
                let mac = mac_string(mac_for(node, k));
                n.ip(&["link", "set", &format!("e{k}"), "address", &mac])
                    .map_err(ns_err)?;
                if checksummed {
                    // A switch in user space reads frames, not super-packets, through libpcap,
                    // whose ring holds 32 of them while offloads are on.
                    n.frames_as_on_the_wire(&format!("e{k}"), true);
                }
            }
        }
        p.src.ip(&["addr", "add", "10.0.0.1/24", "dev", "e0"]).map_err(ns_err)?;
        for dev in ["e0", "e1"] {
            p.dst.ip(&["addr", "add", "10.0.0.3/32", "dev", dev]).map_err(ns_err)?;
        }
        p.dst
            .ip(&["route", "add", "10.0.0.0/24", "dev", "e0"])
            .map_err(ns_err)?;
        // The split delivers on both of dst's interfaces: no reverse-path filtering.
        for i in ["e0", "e1", "all", "default"] {
            let _ = p
                .dst
                .exec("sysctl", &["-q", "-w", &format!("net.ipv4.conf.{i}.rp_filter=0")]);
        }
        neigh(&p.src, "10.0.0.3", mac_for(11, 0), "e0")?;
        neigh(&p.dst, "10.0.0.1", mac_for(11, 1), "e0")?;
        Ok(p)
    }

    /// sw forwards with the kernel's own IPv4 routing.
    fn kernel_forwarding(&self) -> Result<(), String> {
        let sw = &self.sw;
        sw.exec("sysctl", &["-q", "-w", "net.ipv4.ip_forward=1"])
            .map_err(ns_err)?;
        sw.ip(&["route", "add", "10.0.0.1/32", "dev", "e0"]).map_err(ns_err)?;
        sw.ip(&["route", "add", "10.0.0.3/32", "dev", "e1"]).map_err(ns_err)?;
        neigh(sw, "10.0.0.1", mac_for(10, 0), "e0")?;
        neigh(sw, "10.0.0.3", mac_for(12, 0), "e1")
    }

    /// sw runs the switch of `planes` with two routes, splitting src's traffic WRR 1:1 when
    /// `split`.
    fn switch(&self, planes: &dyn SwitchPlanes, split: bool) -> Result<Box<dyn SwitchPlane>, String> {
        let routes = vec![
            Route {
                prefix: SRC,
                len: 32,
                port: 0,
            },
            Route {
                prefix: DST,
                len: 32,
                port: 1,
            },
        ];
        let mut cfg = SwitchConfig::forwarding(OWN, routes);
        if split {
            cfg.splits.push(SplitGroupConfig {
                group: 0,
                src_ip: SRC,
                dst_ip: DST,
                ports: vec![1, 2],
                scheduler: SchedulerConfig::Wrr { weights: vec![1, 1] },
                feedback_ports: vec![1, 2],
            });
        }
        let mut ports = Vec::new();
        for (p, peer) in [(0u16, mac_for(10, 0)), (1, mac_for(12, 0)), (2, mac_for(12, 1))] {
            ports.push(crate::dataplane::PortBinding {
                ifindex: self.sw.ifindex(&format!("e{p}")).map_err(ns_err)?,
                own_mac: mac_for(11, p),
                peer_mac: peer,
            });
        }
        let tables = NodeTables {
            switch: cfg,
            ports,
            markers: Vec::new(),
            test_draws: Vec::new(),
            test_clock: false,
        };
        planes.start(&self.sw, &tables).map_err(|e| e.to_string())
    }

    /// iperf3 from src to dst for `seconds`: (UDP, TCP) goodput in Mbit/s.
    fn iperf_goodput(&self, seconds: u32) -> Result<(f64, f64), String> {
        let mut server = self.dst.spawn("iperf3", &["-s", "-p", "5201"]).map_err(ns_err)?;
        std::thread::sleep(Duration::from_millis(300));
        let secs = seconds.to_string();
        let run = |args: &[&str]| -> Result<f64, String> {
            let mut a = vec!["-c", "10.0.0.3", "-p", "5201", "-t", &secs, "-J"];
            a.extend_from_slice(args);
            let o = self.src.exec("iperf3", &a).map_err(ns_err)?;
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).map_err(|x| x.to_string())?;
            let bps = v["end"]["sum_received"]["bits_per_second"]
                .as_f64()
                .or_else(|| v["end"]["sum"]["bits_per_second"].as_f64())
                .unwrap_or(0.0);
            Ok(bps / 1e6)
        };
        let len = UDP_PAYLOAD_BYTES.to_string();
        let udp = run(&["-u", "-b", "0", "-l", &len]);
        let tcp = run(&[]);
        let _ = server.kill();
        let _ = server.wait();
        Ok((udp?, tcp?))
    }
}

/// A veth pair: `an` in `a`, `bn` in `b`, both up.
fn veth(a: &Netns, an: &str, b: &Netns, bn: &str) -> Result<(), String> {
    ns::ip(&[
        "link",
        "add",
        an,
        "netns",
        a.name(),
        "type",
        "veth",
        "peer",
        "name",
        bn,
        "netns",
        b.name(),
    ])
    .map_err(ns_err)?;
    a.ip(&["link", "set", an, "up"]).map_err(ns_err)?;
    b.ip(&["link", "set", bn, "up"]).map_err(ns_err)?;
    Ok(())
}

/// A permanent neighbour entry: `ip` is at `mac` on `dev`.
fn neigh(n: &Netns, ip: &str, mac: [u8; 6], dev: &str) -> Result<(), String> {
    n.ip(&[
        "neigh",
        "replace",
        ip,
        "lladdr",
        &mac_string(mac),
        "dev",
        dev,
        "nud",
        "permanent",
    ])
    .map_err(ns_err)?;
    Ok(())
}

fn mac_string(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}
