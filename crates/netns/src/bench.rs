//! Data-plane benchmarks: each eBPF program's nanoseconds per packet under
//! `BPF_PROG_TEST_RUN`, and real UDP and TCP throughput through namespaces with and without the
//! splitter.

use crate::backend::NetnsError;
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
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest iperf3 test `path_throughput` runs (seconds): each mode runs two, so a whole
/// benchmark with BMv2 stays under an hour.
pub const MAX_IPERF_SECONDS: u32 = 300;

/// `Err(Interrupted)` once SIGINT or SIGTERM has set `stop`.
fn check_stop(stop: &AtomicBool, what: &str) -> Result<(), NetnsError> {
    if stop.load(Ordering::Relaxed) {
        Err(NetnsError::Interrupted(what.to_string()))
    } else {
        Ok(())
    }
}

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

/// Rows of (what ran, mean ns per packet over `repeat` single runs) as [`ProgramCost`]s, unless
/// `stop` was set meanwhile (SIGINT, SIGTERM: the test node is already gone).
pub(crate) fn cost_rows(
    rows: Vec<(String, f64)>,
    repeat: u32,
    stop: &AtomicBool,
) -> Result<Vec<ProgramCost>, NetnsError> {
    check_stop(stop, "(none made at this point)")?;
    Ok(rows
        .into_iter()
        .map(|(name, ns)| ProgramCost {
            name,
            ns_per_pkt: ns,
            mpps: if ns > 0.0 { 1e3 / ns } else { f64::INFINITY },
            repeat,
        })
        .collect())
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

/// Each program's cost with `repeat` runs (at least a million for the figures we publish);
/// stops with [`NetnsError::Interrupted`] between programs once `stop` is set.
pub fn program_costs(repeat: u32, stop: &AtomicBool) -> Result<Vec<ProgramCost>, NetnsError> {
    check_stop(stop, "(none made at this point)")?;
    let node = TestNode::create(9).map_err(NetnsError::Plane)?;
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
        check_stop(stop, "(none made at this point)")?;
        let tables = NodeTables {
            markers,
            ..NodeTables::multipath(cfg, node.ports.clone())
        };
        let input = if name.starts_with("confluence") {
            frame(Ecn::Ce, 18)
        } else {
            data.clone()
        };
        let ifindex = node.ports[0].ifindex;
        let ns = node
            .enter(|| -> Result<f64, String> {
                let dp = Dataplane::load(&tables).map_err(|e| e.to_string())?;
                // Warm up, then measure.
                test_run(&dp, prog, ifindex, &input, 10_000)?;
                let (_, _, d) = test_run(&dp, prog, ifindex, &input, repeat)?;
                Ok(d.as_nanos() as f64)
            })
            .map_err(NetnsError::Plane)?
            .map_err(NetnsError::Plane)?;
        out.push(ProgramCost {
            name,
            ns_per_pkt: ns,
            mpps: if ns > 0.0 { 1e3 / ns } else { f64::INFINITY },
            repeat,
        });
    }
    // HULA and MP-HULA (hula.bpf.o): probes, origination, the estimator, data, association.
    out.extend(crate::programs::hula::bench::costs(repeat, stop)?);
    // vq-wrr (vqwrr.bpf.o): a placement, a departure, the same packet without them.
    out.extend(crate::programs::vqwrr::costs(repeat, stop)?);
    // pmqecn (pmqecn.bpf.o): a placement below the threshold, and one reflecting feedback.
    out.extend(crate::programs::pmqecn::costs(repeat, stop)?);
    // dcqcn and p4qcn (baseline.bpf.o): a packet counted and recorded, a departure's decision,
    // P4QCN's sample reflecting feedback.
    out.extend(crate::programs::baseline::costs(repeat, stop)?);
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

/// Measure [`PathThroughput`] for each forwarding mode, `seconds` per test (1 to
/// [`MAX_IPERF_SECONDS`]): the kernel's own forwarding, then each of `planes` (the eBPF
/// programs, BMv2, ...) routing and splitting. Once `stop` is set (SIGINT, SIGTERM) it stops
/// within a few milliseconds with [`NetnsError::Interrupted`], having removed its namespaces
/// and stopped its iperf3 processes and switches.
pub fn path_throughput(
    seconds: u32,
    planes: &[Arc<dyn SwitchPlanes>],
    stop: &AtomicBool,
) -> Result<Vec<PathThroughput>, NetnsError> {
    if !(1..=MAX_IPERF_SECONDS).contains(&seconds) {
        return Err(NetnsError::Unsupported(format!(
            "--iperf-seconds {seconds}: expected 1 to {MAX_IPERF_SECONDS} (iperf3 takes 0 as \"run for ever\")"
        )));
    }
    let mut out = Vec::new();
    // (name, the switch and whether it splits; None: the kernel forwards).
    type Mode<'a> = (String, Option<(&'a Arc<dyn SwitchPlanes>, bool)>);
    let mut modes: Vec<Mode> = vec![("kernel forwarding".into(), None)];
    for p in planes {
        modes.push((format!("{} routes", p.switch_name()), Some((p, false))));
        modes.push((format!("{} WRR split over 2 paths", p.switch_name()), Some((p, true))));
    }
    for (mode, plane) in modes {
        check_stop(stop, "(none made at this point)")?;
        let checksummed = plane.is_some_and(|(p, _)| p.needs_checksummed_frames());
        let path = BenchPath::create(checksummed, stop)?;
        // Kept running until the measurement is over.
        let _switch = match plane {
            None => {
                path.kernel_forwarding()?;
                None
            }
            Some((p, split)) => Some(path.switch(p.as_ref(), split)?),
        };
        check_stop(stop, &path.id)?;
        let (udp_mbps, tcp_mbps) = path.iperf_goodput(seconds, stop)?;
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

fn ns_err(x: ns::NsError) -> NetnsError {
    NetnsError::Ns(x)
}

/// A child process killed and reaped when dropped (an iperf3 server that would otherwise
/// outlive an error or an interrupt).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `src -- sw == dst`: one veth from src to sw, two from sw to dst (the split's two paths).
/// MACs follow `mac_for` with node numbers src 10, sw 11, dst 12. The namespaces go with it.
struct BenchPath {
    /// The run id in the namespaces' names.
    id: String,
    src: Netns,
    sw: Netns,
    dst: Netns,
}

impl BenchPath {
    /// The three namespaces; `checksummed`: for a switch in user space, transmit checksum,
    /// segmentation and receive offloads off on every interface
    /// ([`SwitchPlanes::needs_checksummed_frames`], [`Netns::frames_as_on_the_wire`]); the kernel
    /// and eBPF paths keep the offloads a Linux deployment has.
    fn create(checksummed: bool, stop: &AtomicBool) -> Result<BenchPath, NetnsError> {
        let id = crate::backend::new_run_id();
        let p = BenchPath {
            id: id.clone(),
            src: Netns::create(&format!("mps-{id}-bsrc")).map_err(ns_err)?,
            sw: Netns::create(&format!("mps-{id}-bsw")).map_err(ns_err)?,
            dst: Netns::create(&format!("mps-{id}-bdst")).map_err(ns_err)?,
        };
        check_stop(stop, &id)?;
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
    fn kernel_forwarding(&self) -> Result<(), NetnsError> {
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
    fn switch(&self, planes: &dyn SwitchPlanes, split: bool) -> Result<Box<dyn SwitchPlane>, NetnsError> {
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
        let tables = NodeTables::multipath(cfg, ports);
        planes.start(&self.sw, &tables)
    }

    /// iperf3 from src to dst for `seconds`: (UDP, TCP) goodput in Mbit/s. The clients are
    /// polled, not waited for, so that `stop` ends the test at once; the server is stopped on
    /// every way out.
    fn iperf_goodput(&self, seconds: u32, stop: &AtomicBool) -> Result<(f64, f64), NetnsError> {
        let _server = Reaped(self.dst.spawn("iperf3", &["-s", "-p", "5201"]).map_err(ns_err)?);
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(300) {
            check_stop(stop, &self.id)?;
            std::thread::sleep(Duration::from_millis(10));
        }
        let secs = seconds.to_string();
        let run = |args: &[&str]| -> Result<f64, NetnsError> {
            let mut a = vec!["-c", "10.0.0.3", "-p", "5201", "-t", &secs, "-J"];
            a.extend_from_slice(args);
            let mut client = Reaped(self.src.spawn("iperf3", &a).map_err(ns_err)?);
            // Read as it comes: a full pipe would stall iperf3 before its report.
            let mut stdout = client.0.stdout.take();
            let reader = std::thread::spawn(move || {
                let mut s = Vec::new();
                if let Some(o) = stdout.as_mut() {
                    let _ = std::io::Read::read_to_end(o, &mut s);
                }
                s
            });
            // iperf3 ends by itself after `seconds`; a few more for its start and report.
            let deadline = Instant::now() + Duration::from_secs(u64::from(seconds) + 10);
            loop {
                check_stop(stop, &self.id)?;
                if client.0.try_wait().ok().flatten().is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(NetnsError::Traffic(format!(
                        "the client had not ended 10 s after its {seconds} s test"
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let out = reader.join().unwrap_or_default();
            let v: serde_json::Value =
                serde_json::from_slice(&out).map_err(|x| NetnsError::Traffic(format!("unreadable report: {x}")))?;
            if let Some(e) = v["error"].as_str() {
                return Err(NetnsError::Traffic(e.to_string()));
            }
            let bps = v["end"]["sum_received"]["bits_per_second"]
                .as_f64()
                .or_else(|| v["end"]["sum"]["bits_per_second"].as_f64())
                .unwrap_or(0.0);
            Ok(bps / 1e6)
        };
        let len = UDP_PAYLOAD_BYTES.to_string();
        let udp = run(&["-u", "-b", "0", "-l", &len])?;
        let tcp = run(&[])?;
        Ok((udp, tcp))
    }
}

/// A veth pair: `an` in `a`, `bn` in `b`, both up.
fn veth(a: &Netns, an: &str, b: &Netns, bn: &str) -> Result<(), NetnsError> {
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
fn neigh(n: &Netns, ip: &str, mac: [u8; 6], dev: &str) -> Result<(), NetnsError> {
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
