//! The netns backend: a scenario on the Linux kernel.
//!
//! One network namespace per node (`mps-<run id>-<node>`), one veth pair per link created
//! directly inside the two namespaces (interface `e<port>` is the node's port `port`), htb at
//! the link's rate on every interface with a pfifo of the scenario's queue capacity (netem
//! instead wherever the kernel has it: the link's `rate`, so each frame takes its serialisation
//! time, and its propagation delay), the eBPF switch
//! program on every switch interface (the kernel's own forwarding stays off there, so every
//! forwarding decision is the program's), the egress marker on the path interfaces that mark,
//! static neighbour entries instead of ARP, iperf3 servers and UDP clients for the flows, and a
//! sampler reading interface counters each second as bwm-ng does.
//!
//! Everything made is removed when the run ends, fails or is interrupted: the namespaces are
//! deleted (which takes their interfaces, qdiscs and attached programs with them), the traffic
//! processes are killed, and nothing is pinned in bpffs.

use crate::dataplane::{NodeTables, PortBinding};
use crate::ns::{self, is_root, Netns, NsError};
use crate::subflows::{self, SsSubflow};
use crate::switchplane::{EbpfPlanes, SwitchPlane, SwitchPlanes};
use crate::trafficgen::{format_schedule, unix_ns, FlowResult, ScheduledFlow, TG_PORT};
use crate::{capture, hosts};
use mpsched_core::frame::MarkerConfig;
use mpsched_core::packet::{ipv4_to_string, Ecn, PortId, UDP_OVERHEAD_BYTES};
use mpsched_core::wire::mac_for;
use mpsched_run::TimeSeries;
use mpsched_scenario::results::{round, FlowFigures, PathFigures, RunFigures, TcpFigures};
use mpsched_scenario::{Flow, NodeKind, Protocol, Scenario, TcpApp, TcpFlow};
use std::collections::BTreeMap;
use std::io::Read;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PS_PER_S: u64 = 1_000_000_000_000;
/// Time after the scenario's end for packets in flight and iperf3's final reports.
const DRAIN: Duration = Duration::from_secs(2);
/// How long before time zero the traffic generator's clients start: the time to start a
/// process in a namespace and read a schedule, with room to spare on a loaded machine.
const GENERATOR_LEAD: Duration = Duration::from_millis(500);
/// Prefix of every namespace this backend makes.
pub const NS_PREFIX: &str = "mps-";

/// Errors of a netns run.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Not root, a tool or a kernel feature missing.
    #[error("{0}")]
    Missing(String),
    /// The scenario cannot run on this backend as it is.
    #[error("{0}")]
    Unsupported(String),
    /// A command or namespace operation failed.
    #[error(transparent)]
    Ns(#[from] NsError),
    /// The eBPF data plane failed.
    #[error(transparent)]
    Dataplane(#[from] crate::dataplane::DataplaneError),
    /// iperf3 misbehaved.
    #[error("iperf3: {0}")]
    Traffic(String),
    /// A switch's data plane failed.
    #[error("switch data plane: {0}")]
    Plane(String),
    /// SIGINT or SIGTERM arrived; everything made has been removed.
    #[error("interrupted; removed every namespace of run {0}")]
    Interrupted(String),
}

/// Options of a netns run.
#[derive(Clone, Debug, Default)]
pub struct NetnsOptions {
    /// Run links with propagation delay without it, where the kernel has no netem.
    pub ignore_delay: bool,
    /// Set when the run must stop (SIGINT / SIGTERM).
    pub stop: Arc<AtomicBool>,
    /// Sample the virtual queues and the qdisc backlogs of the marking interfaces this often
    /// (None: do not), for `queue_tracking.csv`.
    pub track_queues: Option<Duration>,
    /// Captures ([`crate::capture`]); [`NetnsBackend`] takes them in the first repetition of
    /// each variant, `{variant}` in a path replaced by the variant's name.
    pub captures: Vec<mpsched_run::CaptureRequest>,
    /// What runs the switches (None: the eBPF programs, [`EbpfPlanes`]).
    pub switch_planes: Option<Arc<dyn SwitchPlanes>>,
}

impl NetnsOptions {
    /// What runs the switches.
    pub fn planes(&self) -> Arc<dyn SwitchPlanes> {
        self.switch_planes.clone().unwrap_or_else(|| Arc::new(EbpfPlanes))
    }
}

/// The outcome of one run.
pub struct NetnsRun {
    /// Figures in the shared results schema.
    pub figures: RunFigures,
    /// Per-second samples, with the simulator's column names.
    pub series: TimeSeries,
    /// Virtual queue vs qdisc backlog samples: (time s, node, port, vq bytes, qdisc bytes).
    pub queue_tracking: Vec<(f64, String, PortId, u64, u64)>,
    /// The traffic generator's result per fixed-size transfer, by flow index.
    pub transfers: Vec<FlowResult>,
}

/// A short random id for namespace names.
pub fn new_run_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // The process id first: what a namespace's name says about its owner (see `leftovers`).
    format!("{}x{:04x}", std::process::id(), (t as u64) & 0xffff)
}

/// Check what a scenario needs: root, iperf3, tc, and netem for propagation delay. Returns
/// whether the kernel has netem (then links get serialisation delay and propagation delay).
pub fn preflight(sc: &Scenario, opts: &NetnsOptions) -> Result<bool, NetnsError> {
    if !is_root() {
        return Err(NetnsError::Missing(
            "the netns backend needs root (network namespaces, tc and eBPF); run as root or use --backend sim".into(),
        ));
    }
    for tool in ["ip", "tc", "iperf3"] {
        if ns::run("sh", &["-c", &format!("command -v {tool}")]).is_err() {
            return Err(NetnsError::Missing(format!(
                "`{tool}` not found; install it (scripts/install-deps.sh installs iproute2 and iperf3)"
            )));
        }
    }
    if let Some(t) = sc.tunnels.first() {
        return Err(NetnsError::Unsupported(format!(
            "tunnel `{}`: multipath tunnels run in the simulator only for now (the kernel tunnel daemon is a later \
             milestone); use --backend sim",
            t.name
        )));
    }
    if sc.flows.iter().any(|f| f.protocol == Protocol::Mptcp) {
        if ns::run("sh", &["-c", "command -v mptcpize"]).is_err() {
            return Err(NetnsError::Missing(
                "the scenario has MPTCP flows, which run iperf3 under `mptcpize` (Debian's package mptcpize; \
                 scripts/install-deps.sh installs it); install it or use --backend sim"
                    .into(),
            ));
        }
        if std::fs::read_to_string("/proc/sys/net/mptcp/enabled").map_or(true, |v| v.trim() != "1") {
            return Err(NetnsError::Missing(
                "the scenario has MPTCP flows, and this kernel has no MPTCP or has it off (CONFIG_MPTCP, sysctl \
                 net.mptcp.enabled); use --backend sim"
                    .into(),
            ));
        }
    }
    if let Some(i) = sc.links.iter().position(|l| l.queues > 1) {
        return Err(NetnsError::Unsupported(format!(
            "link[{i}] has {} output queues; ports with several queues run in the simulator only for now \
             (the kernel backend shapes each port with one htb class and a pfifo); use --backend sim",
            sc.links[i].queues
        )));
    }
    if let Some(f) = sc.failures.first() {
        return Err(NetnsError::Unsupported(format!(
            "failure[0] takes link[{}] down during the run; link failures run in the simulator only for now \
             (links down from the start, `[topology] down`, run on both); use --backend sim",
            f.link
        )));
    }
    // Each bulk flow has its own iperf3 server, listening on the flow's port.
    let bulk: Vec<&Flow> = sc.flows.iter().filter(|f| !is_transfer(f)).collect();
    for (k, f) in bulk.iter().enumerate() {
        if let Some(g) = bulk[..k].iter().find(|g| g.dst == f.dst && g.dst_port == f.dst_port) {
            return Err(NetnsError::Unsupported(format!(
                "flows `{}` and `{}` both go to port {} on `{}`; on the kernel each has its own iperf3 server \
                 there, so give one another `dst_port`",
                g.name, f.name, f.dst_port, sc.nodes[f.dst].name
            )));
        }
    }
    // The traffic generator's servers listen on TG_PORT on every host that receives transfers.
    if let Some(f) = sc
        .flows
        .iter()
        .find(|f| !is_transfer(f) && f.dst_port == TG_PORT && sc.flows.iter().any(|t| is_transfer(t) && t.dst == f.dst))
    {
        return Err(NetnsError::Unsupported(format!(
            "flow `{}` uses port {TG_PORT} on `{}`, where the traffic generator serves the fixed-size transfers; \
             give it another `dst_port`",
            f.name, sc.nodes[f.dst].name
        )));
    }
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    for f in &sc.flows {
        if let Some(t) = &f.tcp {
            if let TcpApp::RequestResponse { .. } = t.app {
                return Err(NetnsError::Unsupported(format!(
                    "flow `{}`: request / response runs in the simulator only (iperf3 has no such mode); use --backend sim",
                    f.name
                )));
            }
            let cc = t.config.cc.linux_name();
            if !available.split_whitespace().any(|x| x == cc) {
                return Err(NetnsError::Missing(format!(
                    "flow `{}` uses TCP `{cc}`, which this kernel does not offer (tcp_available_congestion_control: {}); \
                     load its module (modprobe tcp_{cc}) or use --backend sim",
                    f.name,
                    available.trim()
                )));
            }
        }
        if f.ecn == Ecn::Ce {
            return Err(NetnsError::Unsupported(format!(
                "flow `{}` sends CE; iperf3 cannot",
                f.name
            )));
        }
    }
    let have_netem = kernel_has_qdisc("netem");
    let Some(i) = sc.links.iter().position(|l| l.delay_ps > 0) else {
        return Ok(have_netem);
    };
    if have_netem || opts.ignore_delay {
        return Ok(have_netem);
    }
    let l = &sc.links[i];
    let delayed = sc.links.iter().filter(|l| l.delay_ps > 0).count();
    Err(NetnsError::Missing(format!(
        "the link between `{}` and `{}` has a propagation delay of {}{}, which needs the netem qdisc, and this \
         kernel has no sch_netem; pass --ignore-delay to run without the delay, or use --backend sim",
        sc.nodes[l.a].name,
        sc.nodes[l.b].name,
        mpsched_scenario::units::format_time_ps(l.delay_ps),
        match delayed {
            1 => String::new(),
            n => format!(" (and {} more links have delays)", n - 1),
        }
    )))
}

/// Settings of the scenario that only the simulator models, which a kernel run ignores: one
/// line each, naming the setting and the flows that have it.
pub fn ignored_on_the_kernel(sc: &Scenario) -> Vec<String> {
    let with = |has: fn(&TcpFlow) -> bool| -> Vec<&str> {
        sc.flows
            .iter()
            .filter(|f| f.tcp.as_ref().is_some_and(has))
            .map(|f| f.name.as_str())
            .collect()
    };
    let names = |v: &[&str]| {
        let shown: Vec<String> = v.iter().take(3).map(|n| format!("`{n}`")).collect();
        let more = v.len().saturating_sub(3);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    let mut out = Vec::new();
    let q = with(|t| t.config.host_queue_limit_bytes.is_some());
    if !q.is_empty() {
        out.push(format!(
            "tcp.host_queue_limit (flows {}) is the simulator's model of a host's queue; the kernel ignores it \
             (its hosts queue in their own qdisc, whose limit is the link's queue)",
            names(&q)
        ));
    }
    let a = with(|t| t.config.abc_limit_segments.is_some());
    if !a.is_empty() {
        out.push(format!(
            "tcp.abc_limit (flows {}) is the simulator's slow-start limit per ACK (RFC 3465's L); the kernel \
             ignores it (Linux has no such setting)",
            names(&a)
        ));
    }
    out
}

/// [`ignored_on_the_kernel`] on standard error, each line once per process (a plan runs
/// [`check`] and then every repetition).
fn warn_ignored(sc: &Scenario) {
    use std::io::Write as _;
    static SHOWN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let Ok(mut shown) = SHOWN.lock() else { return };
    for w in ignored_on_the_kernel(sc) {
        if !shown.contains(&w) {
            // A standard error that cannot take it (a full disk) loses the line, not the run.
            let _ = writeln!(std::io::stderr(), "warning: {w}");
            shown.push(w);
        }
    }
}

/// Whether the kernel offers qdisc `kind` (tried on the loopback of a scratch namespace without
/// a name, so that checking makes no namespace anyone can see or a signal can leave).
pub fn kernel_has_qdisc(kind: &str) -> bool {
    let Ok(n) = ns::AnonNetns::create() else {
        return false;
    };
    n.enter(|| ns::run("tc", &["qdisc", "add", "dev", "lo", "root", kind]).is_ok())
        .unwrap_or(false)
}

/// The live pieces of a run; dropping it removes everything.
struct Live {
    nss: Vec<Netns>,
    children: Vec<Child>,
    /// Readers of the children's stdout, drained as they write (a full pipe would stall
    /// iperf3 before its final report).
    readers: Vec<Option<std::thread::JoinHandle<String>>>,
    dataplanes: Vec<(usize, Box<dyn SwitchPlane>)>,
    /// Per flow, the child serving it (iperf3), if it has its own.
    server_of: Vec<Option<usize>>,
    /// Children running the traffic generator's servers (they run until killed).
    tg_servers: Vec<usize>,
    /// Per flow, the child running the generator client of its sending host.
    tg_client_of: Vec<Option<usize>>,
    /// dumpcap processes and their files, stopped once the traffic has drained.
    captures: Vec<(Child, std::path::PathBuf)>,
}

impl Drop for Live {
    fn drop(&mut self) {
        for c in self
            .children
            .iter_mut()
            .chain(self.captures.iter_mut().map(|c| &mut c.0))
        {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Switch processes stop before their interfaces go; deleting a namespace removes its
        // interfaces, their qdiscs and the attached programs (the programs and maps are freed
        // when the data planes close their descriptors).
        self.dataplanes.clear();
        self.nss.clear();
    }
}

/// One frame's bytes on the wire for a UDP payload.
fn frame_bytes(payload: u32) -> u64 {
    u64::from(payload + UDP_OVERHEAD_BYTES)
}

/// Everything a run is built from, and the steps that build it.
struct Build<'a> {
    sc: &'a Scenario,
    w: &'a mpsched_topo::Wiring,
    opts: &'a NetnsOptions,
    run_id: &'a str,
    /// The kernel has netem: links get its serialisation delay (`rate`) and propagation delay.
    have_netem: bool,
    /// The scenario's largest data frame: the unit of the marker's thresholds and of netem's
    /// delay line.
    ref_frame: u64,
}

/// The MAC address of `node`'s port `port`.
pub(crate) fn mac_of(node: usize, port: PortId) -> [u8; 6] {
    mac_for(node as u32 + 1, port)
}

impl Build<'_> {
    fn ns_name(&self, i: usize) -> String {
        format!("{NS_PREFIX}{}-{}", self.run_id, self.sc.nodes[i].name)
    }

    fn check_stop(&self) -> Result<(), NetnsError> {
        check_stop_plain(&self.opts.stop, self.run_id)
    }

    /// A namespace per node: no IPv6, no kernel forwarding on switches, hosts' TCP settings.
    fn namespaces(&self, live: &mut Live) -> Result<(), NetnsError> {
        let (b, sc) = (self, self.sc);

        for i in 0..sc.nodes.len() {
            let n = Netns::create(&b.ns_name(i))?;
            n.sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
            n.sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
            // Switches forward only through their program.
            n.sysctl("net.ipv4.ip_forward", "0")?;
            if sc.nodes[i].kind == NodeKind::Host {
                tcp_sysctls(&n, sc, i)?;
            }
            live.nss.push(n);
            b.check_stop()?;
        }
        Ok(())
    }

    /// Links: veth pairs made inside both namespaces, shaped in each direction.
    fn links(&self, live: &Live) -> Result<(), NetnsError> {
        let (b, sc, w) = (self, self.sc, self.w);

        for (li, l) in sc.links.iter().enumerate() {
            let pa = w.ports[l.a].iter().position(|e| e.link == li).unwrap() as PortId;
            let pb = w.ports[l.b].iter().position(|e| e.link == li).unwrap() as PortId;
            let (ea, eb) = (format!("e{pa}"), format!("e{pb}"));
            ns::ip(&[
                "link",
                "add",
                &ea,
                "netns",
                &b.ns_name(l.a),
                "type",
                "veth",
                "peer",
                "name",
                &eb,
                "netns",
                &b.ns_name(l.b),
            ])?;
            for (node, port, ifname) in [(l.a, pa, &ea), (l.b, pb, &eb)] {
                let n = &live.nss[node];
                n.ip(&["link", "set", ifname, "address", &mac_string(mac_of(node, port))])?;
                n.ip(&["link", "set", ifname, "up"])?;
                // Offloads would let TCP hand htb 64 KB super-packets.
                n.frames_as_on_the_wire(ifname, b.opts.planes().needs_checksummed_frames());
                let delay_ps = if b.have_netem { l.delay_ps } else { 0 };
                // Whatever can arrive at the node may leave through this interface.
                let in_rate_bps: u64 = w.ports[node].iter().map(|e| sc.links[e.link].rate_bps).sum();
                let queue_pkts = l.queue_pkts_at(sc.nodes[node].kind == NodeKind::Host);
                let limit = netem_limit_pkts(queue_pkts, in_rate_bps, delay_ps, b.ref_frame);
                shape(n, ifname, l.rate_bps, limit, delay_ps, b.have_netem)?;
            }
            b.check_stop()?;
        }
        Ok(())
    }

    /// Hosts: addresses, routes, neighbours and MPTCP path managers ([`crate::hosts`]).
    fn hosts(&self, live: &Live) -> Result<(), NetnsError> {
        for (i, node) in self.sc.nodes.iter().enumerate() {
            if node.kind == NodeKind::Host && !self.w.ports[i].is_empty() {
                hosts::configure(&live.nss[i], self.sc, self.w, i)?;
                hosts::configure_mptcp(&live.nss[i], self.sc, self.w, i)?;
            }
        }
        Ok(())
    }

    /// Switches: the eBPF program on every interface, the marker on marking ones.
    fn switches(&self, live: &mut Live) -> Result<(), NetnsError> {
        let (b, sc, w) = (self, self.sc, self.w);

        for (i, cfg) in w.switches.iter().enumerate() {
            let Some(cfg) = cfg else {
                continue;
            };
            let n = &live.nss[i];
            let mut ports = Vec::new();
            for (p, e) in w.ports[i].iter().enumerate() {
                ports.push(PortBinding {
                    ifindex: n.ifindex(&format!("e{p}"))?,
                    own_mac: mac_of(i, p as PortId),
                    peer_mac: mac_of(e.peer, e.peer_port),
                });
            }
            let markers: Vec<MarkerConfig> = cfg
                .ecn_markers
                .iter()
                .map(|&(port, th)| {
                    let link = &sc.links[w.ports[i][usize::from(port)].link];
                    MarkerConfig {
                        port,
                        rate_bps: link.rate_bps,
                        threshold_bytes: u64::from(th) * b.ref_frame,
                        limit_bytes: (u64::from(link.queue_pkts) + 1) * b.ref_frame,
                    }
                })
                .collect();
            let tables = NodeTables {
                switch: cfg.clone(),
                ports: ports.clone(),
                markers: markers.clone(),
                test_draws: Vec::new(),
                test_clock: false,
            };
            let dp = b.opts.planes().start(n, &tables)?;
            live.dataplanes.push((i, dp));
            b.check_stop()?;
        }
        Ok(())
    }

    /// A one-off iperf3 server per flow, and a traffic generator server on every host that
    /// receives fixed-size transfers; then wait until all listen.
    fn servers(&self, live: &mut Live) -> Result<(), NetnsError> {
        let sc = self.sc;
        let mut listeners: Vec<(usize, u16, String)> = Vec::new();
        let mut tg_hosts: Vec<usize> = Vec::new();
        for (fi, f) in sc.flows.iter().enumerate() {
            if is_transfer(f) {
                if !tg_hosts.contains(&f.dst) {
                    tg_hosts.push(f.dst);
                }
                continue;
            }
            let addr = ipv4_to_string(sc.flow_addresses(self.w, f).1);
            let port = f.dst_port.to_string();
            let args = ["-s", "-1", "-J", "-i", &report_interval(sc), "-B", &addr, "-p", &port];
            let server = spawn_iperf3(&live.nss[f.dst], f, &args)?;
            live.server_of[fi] = Some(live.children.len());
            push_child(live, server);
            listeners.push((f.dst, f.dst_port, format!("the server of flow `{}`", f.name)));
        }
        let exe = trafficgen_exe()?;
        for &h in &tg_hosts {
            // Every address of the host (a multi-homed one has several); an MPTCP listener
            // where MPTCP transfers arrive, which plain TCP clients fall back on.
            let port = TG_PORT.to_string();
            let mut args = vec!["trafficgen", "serve", "--bind", "0.0.0.0", "--port", &port];
            if sc
                .flows
                .iter()
                .any(|f| f.dst == h && is_transfer(f) && f.protocol == Protocol::Mptcp)
            {
                args.push("--mptcp");
            }
            let server = live.nss[h].spawn(&exe, &args)?;
            live.tg_servers.push(live.children.len());
            push_child(live, server);
            listeners.push((h, TG_PORT, format!("the traffic generator on `{}`", sc.nodes[h].name)));
        }
        // Clients may start at once: wait until every server listens (a fixed pause was too
        // short for 16 servers on a busy machine, and a client then found no server).
        let deadline = Instant::now() + Duration::from_secs(10);
        for (node, port, what) in &listeners {
            while !listening(&live.nss[*node], *port) {
                if Instant::now() > deadline {
                    return Err(NetnsError::Traffic(format!(
                        "{what} was not listening on port {port} after 10 s"
                    )));
                }
                self.check_stop()?;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// One traffic generator client per host that sends fixed-size transfers, given its
    /// schedule; `t0` is the run's time zero.
    fn generator_clients(&self, live: &mut Live, t0: Instant) -> Result<(), NetnsError> {
        let sc = self.sc;
        // One client per sending host and transport: MPTCP is chosen per process.
        let mut by_src: BTreeMap<(usize, bool), Vec<ScheduledFlow>> = BTreeMap::new();
        for (fi, f) in sc.flows.iter().enumerate() {
            let (Some(t), true) = (&f.tcp, is_transfer(f)) else {
                continue;
            };
            let TcpApp::Transfer { size_bytes } = t.app else {
                continue;
            };
            let maxseg = if t.config.mss_bytes == mpsched_transport::tcp::DEFAULT_MSS_BYTES {
                0
            } else {
                // TCP_MAXSEG clamps the MSS before Linux takes the 12 bytes of timestamps off.
                t.config.mss_bytes + 12
            };
            by_src
                .entry((f.src, f.protocol == Protocol::Mptcp))
                .or_default()
                .push(ScheduledFlow {
                    id: fi,
                    dst: std::net::Ipv4Addr::from(sc.flow_addresses(self.w, f).1),
                    size_bytes,
                    start_ns: f.start_ps / 1000,
                    cc: t.config.cc.linux_name().to_string(),
                    nodelay: t.config.nodelay,
                    maxseg,
                });
        }
        if by_src.is_empty() {
            return Ok(());
        }
        let exe = trafficgen_exe()?;
        // `t0` may be ahead: the clients start before time zero and wait for it.
        let now = Instant::now();
        let zero = std::time::SystemTime::now() + t0.saturating_duration_since(now) - now.saturating_duration_since(t0);
        let t0_ns = unix_ns(zero).to_string();
        // They stop at the end of the run and its drain, as the simulator's transfers do, and
        // report what each unfinished one delivered by then.
        let stop_ns = unix_ns(zero + Duration::from_nanos(sc.duration_ps / 1000) + DRAIN).to_string();
        for ((src, mptcp), flows) in by_src {
            let ids: Vec<usize> = flows.iter().map(|f| f.id).collect();
            let mut args = vec![
                "trafficgen",
                "client",
                "--t0-unix-ns",
                &t0_ns,
                "--stop-unix-ns",
                &stop_ns,
            ];
            if mptcp {
                args.push("--mptcp");
            }
            let c = live.nss[src].spawn_with_input(&exe, &args, format_schedule(&flows))?;
            for id in ids {
                live.tg_client_of[id] = Some(live.children.len());
            }
            push_child(live, c);
        }
        Ok(())
    }
}

/// Whether a flow is a fixed-size TCP transfer (run by the traffic generator, not iperf3).
fn is_transfer(f: &Flow) -> bool {
    matches!(f.tcp.as_ref().map(|t| &t.app), Some(TcpApp::Transfer { .. }))
}

/// The binary that runs `mpsched trafficgen` in the namespaces: this one.
fn trafficgen_exe() -> Result<String, NetnsError> {
    std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(|e| NetnsError::Traffic(format!("cannot find the mpsched binary for the traffic generator: {e}")))
}

/// Everything [`run`] checks before it makes anything: what the scenario asks of the data plane
/// and of this machine. `mpsched compare` calls it before its simulator run, so that a scenario
/// the kernel cannot run is refused at once, not after the simulation.
pub fn check(sc: &Scenario, opts: &NetnsOptions) -> Result<(), NetnsError> {
    checked(sc, opts).map(|_| ())
}

/// What a run is built from, once every check has passed.
struct Checked {
    w: mpsched_topo::Wiring,
    /// Each capture's node and port.
    capture_ports: Vec<(usize, PortId)>,
    /// The kernel has netem.
    have_netem: bool,
}

/// [`check`]'s checks, in order: the pure ones first, then the preflight, which probes the
/// kernel with a scratch namespace.
fn checked(sc: &Scenario, opts: &NetnsOptions) -> Result<Checked, NetnsError> {
    let w = sc.wiring().map_err(NetnsError::Unsupported)?;
    check_kernel_limits(sc, &w)?;
    hosts::check(sc, &w)?;
    let capture_ports = capture::check(sc, &opts.captures)?;
    let have_netem = preflight(sc, opts)?;
    opts.planes().preflight()?;
    warn_ignored(sc);
    Ok(Checked {
        w,
        capture_ports,
        have_netem,
    })
}

/// Run `sc` (one variant, one repetition) on the kernel.
pub fn run(sc: &Scenario, run_id: &str, opts: &NetnsOptions) -> Result<NetnsRun, NetnsError> {
    let Checked {
        w,
        capture_ports,
        have_netem,
    } = checked(sc, opts)?;
    let b = Build {
        sc,
        w: &w,
        opts,
        run_id,
        have_netem,
        ref_frame: sc
            .flows
            .iter()
            .map(|f| frame_bytes(f.payload_bytes))
            .max()
            .unwrap_or(1514),
    };
    let mut live = Live {
        nss: Vec::new(),
        children: Vec::new(),
        readers: Vec::new(),
        dataplanes: Vec::new(),
        server_of: vec![None; sc.flows.len()],
        tg_servers: Vec::new(),
        tg_client_of: vec![None; sc.flows.len()],
        captures: Vec::new(),
    };
    b.namespaces(&mut live)?;
    b.links(&live)?;
    b.hosts(&live)?;
    b.switches(&mut live)?;
    for (req, &(node, port)) in opts.captures.iter().zip(&capture_ports) {
        live.captures
            .push((capture::start(&live.nss[node], port, req)?, req.path.clone()));
    }
    b.servers(&mut live)?;
    // Time zero comes once every server listens, and a little after the traffic generator's
    // clients have started (they wait for it with their schedules read): a flow starts at its
    // time, not when the setup happens to end. Before, time zero was taken before the servers
    // started, so flows and samples began 0.3 s and more late, the paths' samples (taken on
    // the real clock) behind iperf3's reports (placed on the scenario's).
    let t0 = Instant::now() + GENERATOR_LEAD;
    b.generator_clients(&mut live, t0)?;
    while Instant::now() < t0 {
        b.check_stop()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    let samples = drive(&b, &mut live, t0)?;
    let outputs = wait_for_traffic(&b, &mut live)?;
    for (c, path) in &mut live.captures {
        capture::stop(c, path);
    }
    let run = figures(&b, &live, samples, &outputs);
    drop(live);
    run
}

/// What a run measured while its traffic ran.
struct Samples {
    /// Per path, Mbit/s into the confluence point per sample interval.
    path: Vec<Vec<f64>>,
    /// Per sample interval, the DWRR weight registers.
    regs: Vec<Vec<(String, u64)>>,
    /// Per flow, the child running its TCP client.
    client_of: Vec<Option<usize>>,
    /// Per iperf3 flow, when its client started, seconds after time zero: its reports are
    /// placed on the clock from there.
    started_at: Vec<Option<f64>>,
    queue_tracking: Vec<(f64, String, PortId, u64, u64)>,
    /// Per flow, its MPTCP subflows as `ss` showed them last.
    mptcp: MptcpWatch,
}

/// The subflows of each running MPTCP bulk flow, read with `ss` every sample interval
/// ([`crate::subflows`]): iperf3 sees only the first.
struct MptcpWatch {
    /// Per flow: seconds since its start at the last reading, and the subflows then.
    last: Vec<Option<(f64, Vec<SsSubflow>)>>,
    /// Per flow: (sample interval, the subflows' windows together in KiB) of each reading.
    cwnd_kib: Vec<Vec<(usize, f64)>>,
}

impl MptcpWatch {
    fn new(flows: usize) -> MptcpWatch {
        MptcpWatch {
            last: vec![None; flows],
            cwnd_kib: vec![Vec::new(); flows],
        }
    }

    /// Read the subflows of every MPTCP bulk flow running `now` after time zero, in sample
    /// interval `interval`.
    fn sample(&mut self, b: &Build, live: &Live, now: Duration, interval: usize) {
        let mut listings: BTreeMap<usize, Vec<SsSubflow>> = BTreeMap::new();
        for (fi, f) in b.sc.flows.iter().enumerate() {
            let ps = now.as_nanos() as u64 * 1000;
            if f.protocol != Protocol::Mptcp || is_transfer(f) || ps < f.start_ps || ps >= f.stop_ps {
                continue;
            }
            let all = listings
                .entry(f.src)
                .or_insert_with(|| subflows::parse(&subflows::read(&live.nss[f.src])));
            let remote = format!("{}:{}", ipv4_to_string(b.sc.flow_addresses(b.w, f).1), f.dst_port);
            let conn = subflows::connection(all, &remote);
            if conn.is_empty() {
                continue;
            }
            let cwnd: u64 = conn.iter().map(|s| s.cwnd_bytes).sum();
            self.cwnd_kib[fi].push((interval, cwnd as f64 / 1024.0));
            self.last[fi] = Some(((ps - f.start_ps) as f64 / PS_PER_S as f64, conn));
        }
    }

    /// Flow `fi`'s TCP figures and window column with its subflows': theirs listed, the
    /// retransmissions their sum, the window their sum (its mean over readings in the figures),
    /// the RTT the first subflow's, as the simulator gives an MPTCP flow's.
    fn apply(&self, fi: usize, tcp: &mut TcpFigures, cwnd_col: &mut [f64]) {
        let Some((active_s, conn)) = &self.last[fi] else { return };
        tcp.subflows = conn.iter().map(|s| s.figures(*active_s)).collect();
        tcp.retransmitted_segments = Some(conn.iter().map(|s| s.retrans_total).sum());
        tcp.srtt_ms = Some(round(conn[0].srtt_ms, 3));
        let readings = &self.cwnd_kib[fi];
        if !readings.is_empty() {
            tcp.mean_cwnd_kib = Some(round(
                readings.iter().map(|r| r.1).sum::<f64>() / readings.len() as f64,
                3,
            ));
        }
        for &(k, kib) in readings {
            if let Some(c) = cwnd_col.get_mut(k) {
                *c = kib;
            }
        }
    }
}

/// Start each client at its time and sample the path monitors and registers each interval,
/// until the scenario's end.
fn drive(b: &Build, live: &mut Live, t0: Instant) -> Result<Samples, NetnsError> {
    let (sc, w, opts) = (b.sc, b.w, b.opts);

    let monitors: Vec<(usize, String)> = sc
        .paths
        .iter()
        .map(|p| {
            let k = p.nodes.len();
            let (a, b) = (p.nodes[k - 2], p.nodes[k - 1]);
            (b, format!("e{}", w.port_to(b, a).unwrap()))
        })
        .collect();
    let intervals = sc.duration_ps.div_ceil(sc.sample_interval_ps) as usize;
    let sample_every = Duration::from_nanos(sc.sample_interval_ps / 1000);
    let mut path_samples: Vec<Vec<f64>> = vec![Vec::new(); sc.paths.len()];
    let mut reg_samples: Vec<Vec<(String, u64)>> = Vec::new();
    let mut last_rx: Vec<u64> = monitors
        .iter()
        .map(|(node, ifname)| rx_bytes(&live.nss[*node], ifname).unwrap_or(0))
        .collect();
    // Fixed-size transfers run in the traffic generator, started before time zero with their
    // schedules.
    let mut started: Vec<bool> = sc.flows.iter().map(is_transfer).collect();
    // When each iperf3 client really started, seconds after time zero.
    let mut started_at: Vec<Option<f64>> = vec![None; sc.flows.len()];
    let mut client_of: Vec<Option<usize>> = vec![None; sc.flows.len()];
    let mut queue_tracking = Vec::new();
    let mut mptcp = MptcpWatch::new(sc.flows.len());
    let tracked: Vec<(usize, PortId)> = live
        .dataplanes
        .iter()
        .flat_map(|(i, _)| {
            w.switches[*i]
                .as_ref()
                .map(|c| c.ecn_markers.iter().map(|&(p, _)| (*i, p)).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect();
    let end = Duration::from_nanos(sc.duration_ps / 1000);
    let mut next_sample = sample_every;
    let mut last_sample_at = Duration::ZERO;
    let mut next_track = opts.track_queues.unwrap_or(Duration::MAX);
    loop {
        b.check_stop()?;
        let now = t0.elapsed();
        for (fi, f) in sc.flows.iter().enumerate() {
            if !started[fi] && now >= Duration::from_nanos(f.start_ps / 1000) {
                started[fi] = true;
                started_at[fi] = Some(t0.elapsed().as_secs_f64());
                let dur_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
                if let Some(t) = &f.tcp {
                    let args = tcp_client_args(sc, w, f, t, dur_s);
                    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                    let c = spawn_iperf3(&live.nss[f.src], f, &refs)?;
                    client_of[fi] = Some(live.children.len());
                    push_child(live, c);
                    continue;
                }
                let args = udp_client_args(sc, w, f, dur_s);
                let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                let c = live.nss[f.src].spawn("iperf3", &refs)?;
                push_child(live, c);
            }
        }
        if now >= next_track {
            let t = now.as_secs_f64();
            for &(node, port) in &tracked {
                let dp = &live.dataplanes.iter().find(|(i, _)| *i == node).unwrap().1;
                let vq = dp.marker_backlog_bytes(port);
                let q = qdisc_backlog_bytes(&live.nss[node], &format!("e{port}"));
                if let (Some(vq), Some(q)) = (vq, q) {
                    queue_tracking.push((t, sc.nodes[node].name.clone(), port, vq, q));
                }
            }
            next_track += opts.track_queues.unwrap_or(Duration::MAX);
        }
        if now >= next_sample {
            // Bytes over the time that really passed since the last reading: the loop wakes
            // every few milliseconds, not exactly on the interval.
            let span_s = (now - last_sample_at).as_secs_f64().max(1e-9);
            last_sample_at = now;
            for (pi, (node, ifname)) in monitors.iter().enumerate() {
                let rx = rx_bytes(&live.nss[*node], ifname).unwrap_or(last_rx[pi]);
                let mbps = (rx - last_rx[pi]) as f64 * 8.0 / span_s / 1e6;
                path_samples[pi].push(mbps);
                last_rx[pi] = rx;
            }
            let mut regs = Vec::new();
            for (i, dp) in &live.dataplanes {
                for (g, ws) in dp.weights() {
                    let is_dwrr = w.switches[*i]
                        .as_ref()
                        .and_then(|c| c.splits.iter().find(|s| s.group == g))
                        .is_some_and(|s| matches!(s.scheduler, mpsched_core::sched::SchedulerConfig::Dwrr { .. }));
                    if is_dwrr {
                        for (k, v) in ws.iter().enumerate() {
                            regs.push((format!("{}_group{g}_weight{}", sc.nodes[*i].name, k + 1), u64::from(*v)));
                        }
                    }
                }
            }
            reg_samples.push(regs);
            mptcp.sample(b, live, now, reg_samples.len() - 1);
            next_sample += sample_every;
            if reg_samples.len() >= intervals {
                break;
            }
        }
        if now >= end + DRAIN * 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(Samples {
        path: path_samples,
        regs: reg_samples,
        client_of,
        started_at,
        queue_tracking,
        mptcp,
    })
}

/// Wait for the clients and servers (servers exit after their one test), then read them.
fn wait_for_traffic(b: &Build, live: &mut Live) -> Result<Vec<String>, NetnsError> {
    let (opts, run_id) = (b.opts, b.run_id);

    let deadline = Instant::now() + DRAIN + Duration::from_secs(5);
    let mut outputs = vec![String::new(); live.children.len()];
    // The generator's servers run until killed: wait for everything else, then stop them.
    for (ci, c) in live.children.iter_mut().enumerate() {
        if live.tg_servers.contains(&ci) {
            continue;
        }
        loop {
            check_stop_plain(&opts.stop, run_id)?;
            if c.try_wait().ok().flatten().is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(r) = live.readers[ci].take() {
            outputs[ci] = r.join().unwrap_or_default();
        }
    }
    for &ci in &live.tg_servers {
        let c = &mut live.children[ci];
        let _ = c.kill();
        let _ = c.wait();
    }
    Ok(outputs)
}

/// The run's figures and time series from what it sampled and what iperf3 reported.
fn figures(b: &Build, live: &Live, samples: Samples, outputs: &[String]) -> Result<NetnsRun, NetnsError> {
    let (sc, w) = (b.sc, b.w);
    let intervals = sc.duration_ps.div_ceil(sc.sample_interval_ps) as usize;
    let sample_every = Duration::from_nanos(sc.sample_interval_ps / 1000);

    let mut flows = Vec::new();
    let mut series_cols = vec!["time_s".to_string()];
    for p in &sc.paths {
        series_cols.push(format!("{}_mbps", p.name));
    }
    for f in &sc.flows {
        series_cols.push(format!("{}_mbps", f.name));
    }
    let mut flow_series: Vec<Vec<f64>> = Vec::new();
    let mut tcp_series: Vec<(String, Vec<Vec<f64>>)> = Vec::new();
    let generated = generator_results(live, outputs);
    for (fi, f) in sc.flows.iter().enumerate() {
        if let (Some(t), true) = (&f.tcp, is_transfer(f)) {
            let (fig, col) = transfer_figures(f, t, generated.get(&fi), intervals, sample_every.as_secs_f64());
            flows.push(fig);
            flow_series.push(col);
            // No window, RTT or retransmission columns: the generator samples a transfer once,
            // at its end, not every interval (they were columns of zeros).
            continue;
        }
        let out = live.server_of[fi].map_or("", |ci| outputs[ci].as_str());
        let server: serde_json::Value = serde_json::from_str(out).map_err(|e| {
            NetnsError::Traffic(format!(
                "flow `{}`: server report unreadable ({e}): {}",
                f.name,
                out.chars().take(300).collect::<String>()
            ))
        })?;
        if let Some(err) = server.get("error").and_then(|e| e.as_str()) {
            return Err(NetnsError::Traffic(format!("flow `{}`: {err}", f.name)));
        }
        if let Some(t) = &f.tcp {
            let client: serde_json::Value = samples.client_of[fi]
                .and_then(|ci| serde_json::from_str(&outputs[ci]).ok())
                .unwrap_or(serde_json::Value::Null);
            let start_s = samples.started_at[fi].unwrap_or(f.start_ps as f64 / PS_PER_S as f64);
            let (mut fig, mut cols) =
                tcp_flow_figures(f, t, &server, &client, intervals, sample_every.as_secs_f64(), start_s);
            if let Some(tcp) = fig.tcp.as_mut() {
                samples.mptcp.apply(fi, tcp, &mut cols[1]);
            }
            flows.push(fig);
            flow_series.push(cols[0].clone());
            tcp_series.push((f.name.clone(), cols[1..].to_vec()));
            continue;
        }
        let start_s = samples.started_at[fi].unwrap_or(f.start_ps as f64 / PS_PER_S as f64);
        let (fig, col) = udp_flow_figures(f, &server, intervals, sample_every.as_secs_f64(), start_s);
        flows.push(fig);
        flow_series.push(col);
    }
    let mut reg_names: Vec<String> = Vec::new();
    for r in &samples.regs {
        for (k, _) in r {
            if !reg_names.contains(k) {
                reg_names.push(k.clone());
            }
        }
    }
    for (name, _) in &tcp_series {
        for k in ["cwnd_kib", "srtt_ms", "retx"] {
            series_cols.push(format!("{name}_{k}"));
        }
    }
    series_cols.extend(reg_names.iter().cloned());
    let mut rows = Vec::new();
    for t in 0..intervals {
        let mut row = vec![(t + 1) as f64 * sample_every.as_secs_f64()];
        for p in &samples.path {
            row.push(round(p.get(t).copied().unwrap_or(0.0), 4));
        }
        for f in &flow_series {
            row.push(round(f[t], 4));
        }
        for (_, cols) in &tcp_series {
            for c in cols {
                row.push(round(c[t], 4));
            }
        }
        for k in &reg_names {
            let v = samples
                .regs
                .get(t)
                .and_then(|r| r.iter().find(|(n, _)| n == k))
                .map_or(0.0, |(_, v)| *v as f64);
            row.push(v);
        }
        rows.push(row);
    }
    let paths = sc
        .paths
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            let xs = &samples.path[pi];
            let cap = p
                .nodes
                .windows(2)
                .map(|h| sc.links[w.ports[h[0]][usize::from(w.port_to(h[0], h[1]).unwrap())].link].rate_bps)
                .min()
                .unwrap_or(0);
            PathFigures {
                id: p.name.clone(),
                mean_mbps: round(xs.iter().sum::<f64>() / xs.len().max(1) as f64, 4),
                capacity_mbps: cap as f64 / 1e6,
            }
        })
        .collect();
    let mut counters = BTreeMap::new();
    for (i, dp) in &live.dataplanes {
        if let Some(s) = dp.snapshot() {
            counters.insert(
                sc.nodes[*i].name.clone(),
                // The counters, by the names the simulator's results use too (the
                // registers are the vectors' business, not the results').
                s.into_iter()
                    .filter(|(k, v)| *v > 0 && mpsched_core::switch::is_counter(k))
                    .collect(),
            );
        }
    }
    Ok(NetnsRun {
        figures: RunFigures {
            tunnels: Vec::new(),
            seed: sc.seed,
            flows,
            paths,
            counters,
            link_model: Some(link_model(b.have_netem).into()),
        },
        series: TimeSeries {
            columns: series_cols,
            rows,
        },
        queue_tracking: samples.queue_tracking,
        transfers: generated.into_values().collect(),
    })
}

/// A UDP flow's figures and per-interval goodput from its iperf3 server report.
fn udp_flow_figures(
    f: &Flow,
    server: &serde_json::Value,
    intervals: usize,
    interval_s: f64,
    start_s: f64,
) -> (FlowFigures, Vec<f64>) {
    // iperf3 3.12's server leaves end.sum.bytes at 0 for UDP; sum_received has them.
    let sum = &server["end"]["sum_received"];
    let bytes = sum["bytes"].as_f64().unwrap_or(0.0);
    let packets = sum["packets"].as_u64().unwrap_or(0);
    let lost = sum["lost_packets"].as_u64().unwrap_or(0);
    let ooo: u64 = server["end"]["streams"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|st| st["udp"]["out_of_order"].as_u64())
        .sum();
    let active_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
    let delivered_pkts = packets.saturating_sub(lost);
    let fig = FlowFigures {
        id: f.name.clone(),
        offered_mbps: f.rate_bps as f64 / 1e6,
        delivered_mbps: round(bytes * 8.0 / active_s / 1e6, 4),
        loss_pct: Some(round(
            if packets > 0 {
                lost as f64 * 100.0 / packets as f64
            } else {
                0.0
            },
            4,
        )),
        // iperf3 reports jitter, not one-way delay.
        mean_owd_ms: None,
        reordered_pct: round(
            if packets > 0 {
                ooo as f64 * 100.0 / packets as f64
            } else {
                0.0
            },
            4,
        ),
        sent_pkts: packets,
        delivered_pkts,
        per_path_mbps: BTreeMap::new(),
        delivered_mib: round(bytes / f64::from(1u32 << 20), 4),
        tcp: None,
    };
    (fig, goodput_column(server, start_s, intervals, interval_s))
}

/// Goodput at the receiver per sample interval from an iperf3 server's reports, placed on the
/// run's clock from `start_s` (when the flow's client started): each report's bytes spread over
/// the sample intervals its span covers, over the interval's length. Bytes, not iperf3's rates:
/// the server's last report is often a short one (what was still queued when the client
/// stopped, arriving after the run's end), whose rate over its few milliseconds was added to the
/// whole last interval's (15.47 Mbit/s for an 8 Mbit/s flow); its bytes now fall after the
/// last interval, as the simulator's drain does.
fn goodput_column(server: &serde_json::Value, start_s: f64, intervals: usize, interval_s: f64) -> Vec<f64> {
    let mut col = vec![0.0; intervals];
    for iv in server["intervals"].as_array().into_iter().flatten() {
        let s = &iv["sum"];
        let end = s["end"].as_f64().unwrap_or(0.0);
        let start = s["start"].as_f64().unwrap_or(end - interval_s).min(end);
        let bytes = s["bytes"]
            .as_f64()
            .unwrap_or_else(|| s["bits_per_second"].as_f64().unwrap_or(0.0) * (end - start) / 8.0);
        let (a, b) = (start_s + start, start_s + end);
        if b - a < 1e-9 {
            let k = report_slot(start_s, end, interval_s);
            if k < intervals {
                col[k] += bytes * 8.0 / interval_s / 1e6;
            }
            continue;
        }
        let first = (a / interval_s).floor().max(0.0) as usize;
        for (k, c) in col.iter_mut().enumerate().skip(first) {
            let (lo, hi) = (k as f64 * interval_s, (k + 1) as f64 * interval_s);
            if lo >= b {
                break;
            }
            let overlap = (hi.min(b) - lo.max(a)).max(0.0);
            *c += bytes * overlap / (b - a) * 8.0 / interval_s / 1e6;
        }
    }
    col
}

/// iperf3's report interval (`-i`): the scenario's sample interval, in seconds.
fn report_interval(sc: &Scenario) -> String {
    format!("{}", sc.sample_interval_ps as f64 / PS_PER_S as f64)
}

/// The sample interval an iperf3 report belongs to: the one its end is nearest to. iperf3
/// stamps an interval's end a little past the boundary (1.000046 s), and the last one of a
/// run a little before it; rounding up, as before, put every report one interval late and
/// dropped the last.
fn report_slot(start_s: f64, end_s: f64, interval_s: f64) -> usize {
    (((start_s + end_s) / interval_s).round() as usize).saturating_sub(1)
}

/// The kernel data plane as a backend of the experiment runner: one run is one [`run`] with a
/// fresh run id; queue tracking, when asked for, is written as `queue_tracking.csv`.
pub struct NetnsBackend {
    /// Options of every run.
    pub opts: NetnsOptions,
}

impl mpsched_run::Backend for NetnsBackend {
    fn name(&self) -> &'static str {
        self.opts.planes().backend_name()
    }

    /// Kernel runs take real time: one repetition unless the plan asks for more.
    fn default_repetitions(&self, _sc: &Scenario) -> u32 {
        1
    }

    /// The scenario, and the few seconds of setup and drain around it.
    fn run_ps(&self, sc: &Scenario) -> u64 {
        sc.duration_ps + 4 * PS_PER_S
    }

    fn run_one(
        &self,
        sc: &Scenario,
        variant: Option<&str>,
        _seed: u64,
        rep: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Result<mpsched_run::RunResult, mpsched_run::BackendError> {
        let started = Instant::now();
        let mut opts = self.opts.clone();
        opts.captures = match rep {
            0 => opts
                .captures
                .iter()
                .map(|c| c.for_variant(variant.unwrap_or("run")))
                .collect(),
            _ => Vec::new(),
        };
        let res = run(sc, &new_run_id(), &opts)?;
        progress(self.run_ps(sc));
        let mut artifacts = Vec::new();
        if !res.queue_tracking.is_empty() {
            let mut text = String::from("time_s,node,port,virtual_queue_bytes,qdisc_backlog_bytes\n");
            for (t, node, port, vq, q) in &res.queue_tracking {
                text.push_str(&format!("{t:.3},{node},{port},{vq},{q}\n"));
            }
            artifacts.push(("queue_tracking.csv".to_string(), text));
        }
        if !res.transfers.is_empty() {
            // The generator's own lines: start, completion and handshake time per transfer.
            let mut text = String::new();
            for r in &res.transfers {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                v["flow"] = sc.flows.get(r.id).map_or("", |f| f.name.as_str()).into();
                text.push_str(&v.to_string());
                text.push('\n');
            }
            artifacts.push(("trafficgen.jsonl".to_string(), text));
        }
        Ok(mpsched_run::RunResult {
            figures: res.figures,
            series: res.series,
            events: 0,
            engine_s: started.elapsed().as_secs_f64(),
            artifacts,
        })
    }
}

/// Per-namespace TCP settings of a host, matched to what the simulator models: ECN negotiated
/// when a flow from this host asks for it, SACK off (the simulator's TCP recovers with NewReno
/// and no SACK; docs/algorithms/tcp.md), no metrics cached between connections.
fn tcp_sysctls(n: &Netns, sc: &Scenario, host: usize) -> Result<(), NetnsError> {
    let tcp_flows: Vec<&TcpFlow> = sc
        .flows
        .iter()
        .filter(|f| f.src == host || f.dst == host)
        .filter_map(|f| f.tcp.as_ref())
        .collect();
    if tcp_flows.is_empty() {
        return Ok(());
    }
    let ecn = tcp_flows.iter().any(|t| t.config.ecn);
    n.sysctl("net.ipv4.tcp_ecn", if ecn { "1" } else { "0" })?;
    n.sysctl("net.ipv4.tcp_sack", "0")?;
    n.sysctl("net.ipv4.tcp_no_metrics_save", "1")?;
    // Namespaces share one kernel, and a packet forwarded by the eBPF data plane (redirected at
    // TC ingress, never passing the switch's IP layer, which would orphan it) keeps its sending
    // socket's reference until the receiving host's IP layer. TCP small queues then count the
    // packets waiting in a remote bottleneck queue as the sender's own, and throttle a sender to
    // about 1 ms of its pacing rate there (limit = pacing_rate >> 10, capped by
    // tcp_limit_output_bytes), which a separate machine would not: a flow that starts into a
    // full queue stays throttled (measured: 2.9 against 45 Mbit/s). Without fq or BBR nothing
    // paces, so the pacing ratios only scale that limit; raise them and the cap to the maximum.
    n.sysctl("net.ipv4.tcp_pacing_ss_ratio", "1000")?;
    n.sysctl("net.ipv4.tcp_pacing_ca_ratio", "1000")?;
    n.sysctl("net.ipv4.tcp_limit_output_bytes", "268435456")?;
    Ok(())
}

/// iperf3 client arguments for a bulk TCP flow: `-C` for the congestion control, `-t`, `-N` for
/// no Nagle.
fn tcp_client_args(sc: &Scenario, w: &mpsched_topo::Wiring, f: &Flow, t: &TcpFlow, dur_s: f64) -> Vec<String> {
    let mut args = client_args(sc, w, f);
    args.extend([
        "-C".into(),
        t.config.cc.linux_name().into(),
        "-i".into(),
        report_interval(sc),
    ]);
    // TCP_MAXSEG clamps the MSS before Linux takes the 12 bytes of timestamps off it.
    if t.config.mss_bytes != mpsched_transport::tcp::DEFAULT_MSS_BYTES {
        args.push("-M".into());
        args.push((t.config.mss_bytes + 12).to_string());
    }
    // Fixed-size transfers run in the traffic generator, not iperf3: this is a bulk flow.
    args.push("-t".into());
    args.push(format!("{dur_s:.3}"));
    if t.config.nodelay {
        args.push("-N".into());
    }
    args
}

/// iperf3 client arguments for a UDP flow at its rate, payload size and duration.
fn udp_client_args(sc: &Scenario, w: &mpsched_topo::Wiring, f: &Flow, dur_s: f64) -> Vec<String> {
    let mut args = client_args(sc, w, f);
    args.extend([
        "-u".into(),
        "-b".into(),
        f.rate_bps.to_string(),
        "-l".into(),
        f.payload_bytes.to_string(),
        "-t".into(),
        format!("{dur_s:.3}"),
    ]);
    // Namespaces share one kernel, and since Linux 4.19 a packet keeps its socket reference
    // across veth: packets queued at a remote bottleneck count against the sender's send
    // buffer, which then blocks the sender instead of letting the bottleneck drop, as a
    // separate machine would. A send buffer as large as the system allows (net.core.wmem_max)
    // keeps the sender at its rate.
    args.extend(["-w".into(), send_buffer_bytes().to_string()]);
    if f.ecn != Ecn::NotEct || f.dscp != 0 {
        args.extend(["--tos".into(), ((f.dscp << 2) | f.ecn.bits()).to_string()]);
    }
    args
}

/// What every iperf3 client of flow `f` is given: the server's address and port, the flow's
/// source port and, on a multi-homed host, the address to send from; JSON output.
fn client_args(sc: &Scenario, w: &mpsched_topo::Wiring, f: &Flow) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "-c".into(),
        ipv4_to_string(sc.flow_addresses(w, f).1),
        "-p".into(),
        f.dst_port.to_string(),
        "--cport".into(),
        f.src_port.to_string(),
        "-J".into(),
    ];
    if let Some(a) = hosts::bind_address(sc, w, f) {
        args.extend(["-B".into(), ipv4_to_string(a)]);
    }
    args
}

/// iperf3 in namespace `n` for flow `f`: under `mptcpize` (its sockets then open as
/// `IPPROTO_MPTCP`) for an MPTCP flow, since Debian's iperf3 3.12 has no MPTCP option.
fn spawn_iperf3(n: &Netns, f: &Flow, args: &[&str]) -> Result<Child, NetnsError> {
    if f.protocol != Protocol::Mptcp {
        return Ok(n.spawn("iperf3", args)?);
    }
    let mut wrapped = vec!["run", "iperf3"];
    wrapped.extend_from_slice(args);
    Ok(n.spawn("mptcpize", &wrapped)?)
}

/// The generator clients' results, by flow index.
fn generator_results(live: &Live, outputs: &[String]) -> BTreeMap<usize, FlowResult> {
    let mut clients: Vec<usize> = live.tg_client_of.iter().flatten().copied().collect();
    clients.sort_unstable();
    clients.dedup();
    clients
        .iter()
        .flat_map(|&ci| outputs[ci].lines())
        .filter_map(|l| serde_json::from_str::<FlowResult>(l).ok())
        .map(|r| (r.id, r))
        .collect()
}

/// A fixed-size transfer's figures from the traffic generator: completion time measured at the
/// client, the bytes delivered (all of them when it finished; what the receiver had
/// acknowledged by the end of the run and its drain when it had not), and the connection's
/// retransmissions, RTT and window from `TCP_INFO` at its end (unmeasured where the socket gave
/// none); and its goodput column: the bytes spread evenly over the time it took.
fn transfer_figures(
    f: &Flow,
    t: &TcpFlow,
    r: Option<&FlowResult>,
    intervals: usize,
    interval_s: f64,
) -> (FlowFigures, Vec<f64>) {
    let done = r.filter(|r| r.fct_s.is_some());
    let bytes = r.map_or(0, |r| r.bytes) as f64;
    let mut col = vec![0.0; intervals];
    if let Some(r) = done {
        let (start, fct) = (r.start_s, r.fct_s.unwrap_or(0.0).max(1e-9));
        for (k, c) in col.iter_mut().enumerate() {
            let (lo, hi) = (k as f64 * interval_s, (k + 1) as f64 * interval_s);
            let overlap = (hi.min(start + fct) - lo.max(start)).max(0.0);
            *c = round(bytes * 8.0 * overlap / fct / interval_s / 1e6, 4);
        }
    }
    let info = r.and_then(|r| r.tcp_info);
    let tcp = TcpFigures {
        cc: t.config.cc.linux_name().to_string(),
        completion_s: done.and_then(|r| r.fct_s).map(|x| round(x, 6)),
        retransmitted_segments: info.map(|i| i.retransmitted_segments),
        srtt_ms: info.map(|i| round(i.srtt_ms, 3)),
        // One reading, at the end: the mean of one sample.
        mean_cwnd_kib: info.map(|i| round(i.cwnd_kib, 3)),
        ..TcpFigures::default()
    };
    (kernel_tcp_figures(f, bytes, tcp), col)
}

/// A TCP flow's figures on the kernel from the bytes it delivered and its transport figures.
/// The kernel's tools count no losses, delays or packets of a TCP flow: those stay empty.
fn kernel_tcp_figures(f: &Flow, bytes: f64, tcp: TcpFigures) -> FlowFigures {
    let active_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
    FlowFigures {
        id: f.name.clone(),
        offered_mbps: 0.0,
        delivered_mbps: round(bytes * 8.0 / active_s.max(1e-12) / 1e6, 4),
        loss_pct: None,
        mean_owd_ms: None,
        reordered_pct: 0.0,
        sent_pkts: 0,
        delivered_pkts: 0,
        per_path_mbps: BTreeMap::new(),
        delivered_mib: round(bytes / f64::from(1u32 << 20), 4),
        tcp: Some(tcp),
    }
}

/// A TCP flow's figures from iperf3's server (bytes received) and client (retransmits, cwnd and
/// RTT per interval) reports, and its columns: goodput, cwnd KiB, SRTT ms, retransmits.
fn tcp_flow_figures(
    f: &Flow,
    t: &TcpFlow,
    server: &serde_json::Value,
    client: &serde_json::Value,
    intervals: usize,
    interval_s: f64,
    start_s: f64,
) -> (FlowFigures, Vec<Vec<f64>>) {
    let bytes = server["end"]["sum_received"]["bytes"].as_f64().unwrap_or(0.0);
    let sent = &client["end"]["sum_sent"];
    let retx = sent["retransmits"].as_u64();
    let stream = &client["end"]["streams"][0]["sender"];
    let mut cols = vec![vec![0.0; intervals]; 4];
    let slot = |end: f64| report_slot(start_s, end, interval_s);
    cols[0] = goodput_column(server, start_s, intervals, interval_s);
    let (mut cwnd_sum, mut cwnd_n) = (0.0, 0.0);
    for iv in client["intervals"].as_array().into_iter().flatten() {
        let st = &iv["streams"][0];
        let k = slot(st["end"].as_f64().unwrap_or(0.0));
        if k < intervals {
            let cwnd = st["snd_cwnd"].as_f64().unwrap_or(0.0) / 1024.0;
            cols[1][k] = cwnd;
            cols[2][k] = st["rtt"].as_f64().unwrap_or(0.0) / 1000.0;
            cols[3][k] += st["retransmits"].as_f64().unwrap_or(0.0);
            cwnd_sum += cwnd;
            cwnd_n += 1.0;
        }
    }
    // iperf3 counts a TCP flow's retransmissions, not its losses, and no delay; nor timeouts,
    // fast retransmits or ECN figures (`TcpFigures::default()`: None).
    // Without the client's report (it died, or wrote nothing readable) none of the three is
    // measured: absent, not 0.
    let tcp = TcpFigures {
        cc: t.config.cc.linux_name().to_string(),
        retransmitted_segments: retx,
        srtt_ms: stream["mean_rtt"].as_f64().map(|us| round(us / 1000.0, 3)),
        mean_cwnd_kib: (cwnd_n > 0.0).then(|| round(cwnd_sum / cwnd_n, 3)),
        ..TcpFigures::default()
    };
    let fig = kernel_tcp_figures(f, bytes, tcp);
    (fig, cols)
}

/// The largest send buffer a socket may ask for (net.core.wmem_max), at most 16 MB.
fn send_buffer_bytes() -> u64 {
    std::fs::read_to_string("/proc/sys/net/core/wmem_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(212_992u64)
        .min(16 << 20)
}

fn push_child(live: &mut Live, mut c: Child) {
    let reader = c.stdout.take().map(|mut out| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        })
    });
    live.children.push(c);
    live.readers.push(reader);
}

fn check_stop_plain(stop: &AtomicBool, run_id: &str) -> Result<(), NetnsError> {
    if stop.load(Ordering::Relaxed) {
        Err(NetnsError::Interrupted(run_id.to_string()))
    } else {
        Ok(())
    }
}

pub(crate) fn mac_string(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Refuse, before anything is made, a scenario whose switch tables exceed the eBPF program's
/// maps (`bpf/mpsched.h`): ports, splitting and confluence groups, routes, paths per group.
pub fn check_kernel_limits(sc: &Scenario, w: &mpsched_topo::Wiring) -> Result<(), NetnsError> {
    use crate::layout::{MAX_ECMP_GROUPS, MAX_GROUPS, MAX_PATHS, MAX_PORTS, MAX_ROUTES};
    for (i, cfg) in w.switches.iter().enumerate() {
        let Some(cfg) = cfg else { continue };
        let name = &sc.nodes[i].name;
        let over = |what: &str, n: usize, max: usize| {
            NetnsError::Unsupported(format!(
                "switch `{name}` needs {n} {what}; the kernel data plane holds {max} (bpf/mpsched.h); \
                 use --backend sim"
            ))
        };
        let checks = [
            ("ports", w.ports[i].len(), MAX_PORTS),
            ("splitting groups", cfg.splits.len(), MAX_GROUPS),
            ("confluence groups", cfg.confluences.len(), MAX_GROUPS),
            ("routes", cfg.routes.len(), MAX_ROUTES),
            ("ECMP groups", cfg.ecmp_groups.len(), MAX_ECMP_GROUPS),
            (
                "paths in one group",
                cfg.splits.iter().map(|s| s.ports.len()).max().unwrap_or(0),
                MAX_PATHS,
            ),
        ];
        if let Some(&(what, n, max)) = checks.iter().find(|c| c.1 > c.2) {
            return Err(over(what, n, max));
        }
        if let Some(g) = cfg
            .splits
            .iter()
            .find(|g| matches!(g.scheduler, mpsched_core::sched::SchedulerConfig::Ecmp))
        {
            return Err(NetnsError::Unsupported(format!(
                "switch `{name}`, splitting group {}: ECMP is not in the kernel data plane yet (RS, WRR, DWRR and \
                 single are); use --backend sim",
                g.group
            )));
        }
    }
    if sc.sample_interval_ps < MIN_KERNEL_SAMPLE_INTERVAL_PS {
        return Err(NetnsError::Unsupported(format!(
            "scenario.sample_interval is {} µs; on the kernel at least {} ms: iperf3 reports every 0.1 s at \
             the finest and the sampler reads /proc/net/dev every few milliseconds; use --backend sim for finer",
            sc.sample_interval_ps / 1_000_000,
            MIN_KERNEL_SAMPLE_INTERVAL_PS / 1_000_000_000
        )));
    }
    // htb keeps rates in bytes per second: below 8 bit/s tc has no rate to give it.
    if let Some((i, l)) = sc
        .links
        .iter()
        .enumerate()
        .find(|(_, l)| l.rate_bps < MIN_KERNEL_RATE_BPS)
    {
        return Err(NetnsError::Unsupported(format!(
            "link[{i}] runs at {} bit/s; the kernel's htb counts whole bytes per second, so at least {MIN_KERNEL_RATE_BPS} bit/s; \
             use --backend sim",
            l.rate_bps
        )));
    }
    Ok(())
}

/// The finest sample interval the kernel backend resolves (iperf3's finest report interval).
pub const MIN_KERNEL_SAMPLE_INTERVAL_PS: u64 = 100_000_000_000;

/// The slowest link htb can shape: one byte per second.
pub const MIN_KERNEL_RATE_BPS: u64 = 8;

/// The limit of a link's leaf qdisc: the scenario's queue, plus room for the packets netem
/// holds while it delays them.
///
/// netem's `limit` counts every packet it holds, and as htb's leaf it holds a packet from its
/// arrival: through the delay first, then while it waits for htb's tokens. The simulator's queue
/// counts only packets waiting to be serialised; propagation has no bound. So the limit is the
/// queue plus what can arrive within one delay: `in_rate_bps` (every link into the node) for
/// that long, in frames of `frame_bytes` (the scenario's largest data frame). Smaller frames in
/// the delay line (ACKs) take some of the queue's room; documented in docs/architecture.md.
pub fn netem_limit_pkts(queue_pkts: u32, in_rate_bps: u64, delay_ps: u64, frame_bytes: u64) -> u32 {
    let queue = queue_pkts.max(1);
    if delay_ps == 0 {
        return queue;
    }
    let bits_in_delay = u128::from(in_rate_bps) * u128::from(delay_ps) / 1_000_000_000_000;
    let frames = bits_in_delay.div_ceil(8 * u128::from(frame_bytes.max(1)));
    u32::try_from(u128::from(queue) + frames).unwrap_or(u32::MAX)
}

/// What a run's `link_model` says, by whether the kernel has netem.
pub fn link_model(have_netem: bool) -> &'static str {
    if have_netem {
        "htb + netem rate: each frame takes its serialisation time at the link's rate, as in the simulator"
    } else {
        "htb + pfifo: no serialisation delay (this kernel has no netem); frames leave in token-bucket \
         bursts, so reordering across paths is not comparable with the simulator's"
    }
}

/// htb at `rate_bps` over a leaf of `queue_pkts` packets: netem where the kernel has it (with
/// `rate`, so that a frame is delayed by its serialisation time, which htb alone does not do, and
/// the propagation delay), otherwise a pfifo.
fn shape(
    n: &Netns,
    ifname: &str,
    rate_bps: u64,
    queue_pkts: u32,
    delay_ps: u64,
    netem: bool,
) -> Result<(), NetnsError> {
    let rate = format!("{rate_bps}bit");
    n.exec(
        "tc",
        &[
            "qdisc", "add", "dev", ifname, "root", "handle", "1:", "htb", "default", "1",
        ],
    )
    .map_err(|e| NetnsError::Missing(format!("the htb qdisc is needed to shape links: {e}")))?;
    n.exec(
        "tc",
        &[
            "class", "add", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate", &rate, "ceil", &rate,
            "quantum", "1514",
        ],
    )?;
    let mut args = vec!["qdisc", "add", "dev", ifname, "parent", "1:1", "handle", "10:"];
    let leaf = leaf_qdisc(rate_bps, queue_pkts, delay_ps, netem);
    args.extend(leaf.iter().map(String::as_str));
    n.exec("tc", &args)?;
    Ok(())
}

/// The leaf qdisc of a link's htb class, as `tc` arguments after `handle 10:`.
fn leaf_qdisc(rate_bps: u64, queue_pkts: u32, delay_ps: u64, netem: bool) -> Vec<String> {
    let limit = queue_pkts.max(1).to_string();
    if !netem {
        return vec!["pfifo".into(), "limit".into(), limit];
    }
    let mut a = vec!["netem".to_string()];
    if delay_ps > 0 {
        a.extend(["delay".into(), format!("{}us", (delay_ps / 1_000_000).max(1))]);
    }
    a.extend(["rate".into(), format!("{rate_bps}bit"), "limit".into(), limit]);
    a
}

/// Whether a TCP socket listens on `port` in the namespace (`/proc/net/tcp`, state 0A).
fn listening(n: &Netns, port: u16) -> bool {
    let want = format!(":{port:04X}");
    n.enter(move || {
        let text = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap_or_default();
        text.lines().skip(1).any(|l| {
            let mut f = l.split_whitespace();
            let local = f.nth(1).unwrap_or("");
            let state = f.nth(1).unwrap_or("");
            local.ends_with(&want) && state == "0A"
        })
    })
    .unwrap_or(false)
}

/// Received bytes of an interface, read from the namespace's /proc/net/dev.
fn rx_bytes(n: &Netns, ifname: &str) -> Option<u64> {
    let name = ifname.to_string();
    n.enter(move || {
        let text = std::fs::read_to_string("/proc/thread-self/net/dev").ok()?;
        text.lines().find_map(|l| {
            let (dev, rest) = l.split_once(':')?;
            (dev.trim() == name).then(|| rest.split_whitespace().next()?.parse().ok())?
        })
    })
    .ok()
    .flatten()
}

/// The backlog in bytes of the htb class of an interface (`tc -s -j class show`).
fn qdisc_backlog_bytes(n: &Netns, ifname: &str) -> Option<u64> {
    let out = n.exec("tc", &["-s", "-j", "qdisc", "show", "dev", ifname]).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v.as_array()?
        .iter()
        .find(|q| q["kind"] == "pfifo" || q["kind"] == "netem")
        .and_then(|q| q["backlog"].as_u64())
}

/// The process that made namespace `name`, from its name (`mps-PIDxRAND-NODE`, or
/// `mps-probe-PIDxRAND`); None for a name of another form (an older version's).
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NS_PREFIX)?;
    let rest = rest.strip_prefix("probe-").unwrap_or(rest);
    rest.split_once('x')?.0.parse().ok()
}

/// Namespaces left by runs that did not finish: this backend's names whose owning process is
/// gone (killed with SIGKILL, or the machine lost power), or that carry no owner. A run in
/// progress, this one or another, is not among them.
pub fn leftovers() -> Vec<String> {
    ns::list()
        .into_iter()
        .filter(|n| n.starts_with(NS_PREFIX))
        .filter(|n| !owner_pid(n).is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists()))
        .collect()
}

/// What [`clean`] removed.
#[derive(Debug, Default)]
pub struct Cleaned {
    /// Namespaces deleted (their interfaces, qdiscs and attached programs with them).
    pub namespaces: Vec<String>,
    /// Processes killed inside them (iperf3 servers and clients, switch processes).
    pub processes: usize,
    /// Files in the temporary directory named after them (a switch process's program, output
    /// and sockets: `NAMESPACE.*`).
    pub files: usize,
}

/// Remove the files in the temporary directory whose names start with `namespace.`.
fn remove_files_named_after(namespace: &str) -> usize {
    let prefix = format!("{namespace}.");
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// Remove what [`leftovers`] finds: kill every process inside each namespace, then delete it,
/// which takes its interfaces, their qdiscs and the eBPF programs attached to them (the
/// programs and maps are freed once nothing holds them; nothing of ours is pinned).
pub fn clean() -> Result<Cleaned, NetnsError> {
    let mut done = Cleaned::default();
    for name in leftovers() {
        let pids = ns::ip(&["netns", "pids", &name])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut killed = Vec::new();
        for pid in pids.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            // SAFETY: kill(2) with a pid the kernel listed in the namespace; no memory involved.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                done.processes += 1;
                killed.push(pid);
            }
        }
        // Gone, not only signalled: a switch process with many threads takes a moment to exit.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while killed
            .iter()
            .any(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        ns::ip(&["netns", "del", &name])?;
        done.files += remove_files_named_after(&name);
        done.namespaces.push(name);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::{check_kernel_limits, ignored_on_the_kernel, leaf_qdisc, netem_limit_pkts};
    use mpsched_scenario::Scenario;

    /// Issue 27 item 14: the simulator-only TCP settings are named, with their flows, for a
    /// warning; a scenario without them has none.
    #[test]
    fn simulator_only_tcp_settings_are_named_for_the_kernel() {
        let text = |tcp: &str| {
            format!(
                "[scenario]\nname = \"x\"\nduration = \"1s\"\n[tcp]\ncc = \"cubic\"\n{tcp}\n\
                 [[node]]\nname = \"a\"\nkind = \"host\"\n[[node]]\nname = \"b\"\nkind = \"host\"\n\
                 [[link]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbps\"\n\
                 [[flow]]\nname = \"t\"\nsrc = \"a\"\ndst = \"b\"\nprotocol = \"tcp\"\n"
            )
        };
        let sc = Scenario::from_toml(&text("host_queue_limit = \"64KB\"\nabc_limit = 2"), "x.toml").unwrap();
        let w = ignored_on_the_kernel(&sc);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("tcp.host_queue_limit (flows `t`)"), "{w:?}");
        assert!(
            w[1].starts_with("tcp.abc_limit (flows `t`)") && w[1].contains("ignores"),
            "{w:?}"
        );
        let sc = Scenario::from_toml(&text(""), "x.toml").unwrap();
        assert!(ignored_on_the_kernel(&sc).is_empty());
    }

    /// A switch with more ports than the eBPF program holds is refused by name, before anything
    /// is made (it used to fail as a map update after the namespaces existed).
    #[test]
    fn tables_beyond_the_ebpf_maps_are_refused_by_name() {
        let mut text = String::from("[scenario]\nname = \"star\"\nduration = \"1s\"\n");
        text.push_str("[[node]]\nname = \"hub\"\nkind = \"switch\"\n");
        for h in 0..17 {
            text.push_str(&format!("[[node]]\nname = \"h{h}\"\nkind = \"host\"\n"));
            text.push_str(&format!("[[link]]\na = \"h{h}\"\nb = \"hub\"\nrate = \"1Gbps\"\n"));
        }
        text.push_str("[[flow]]\nname = \"f\"\nsrc = \"h0\"\ndst = \"h1\"\nrate = \"1Mbps\"\n");
        let sc = Scenario::from_toml(&text, "star.toml").unwrap();
        let err = check_kernel_limits(&sc, &sc.wiring().unwrap()).unwrap_err().to_string();
        assert!(
            err.contains("`hub`") && err.contains("17 ports") && err.contains("16"),
            "{err}"
        );
        let fits = text.replace("[[node]]\nname = \"h16\"\nkind = \"host\"\n", "");
        let fits = fits.replace("[[link]]\na = \"h16\"\nb = \"hub\"\nrate = \"1Gbps\"\n", "");
        let sc = Scenario::from_toml(&fits, "star.toml").unwrap();
        check_kernel_limits(&sc, &sc.wiring().unwrap()).unwrap();
    }

    /// Hardening item 6: what the kernel would refuse only after the namespaces exist (ECMP
    /// in a group, a rate htb cannot hold) is refused here, before anything is made.
    #[test]
    fn ecmp_sub_byte_rates_and_fine_samples_are_refused_before_anything_is_made() {
        let base = "[scenario]\nname = \"x\"\nduration = \"1s\"\n\
            [[node]]\nname = \"h1\"\nkind = \"host\"\n[[node]]\nname = \"s1\"\nkind = \"switch\"\n\
            [[node]]\nname = \"s2\"\nkind = \"switch\"\n[[node]]\nname = \"s3\"\nkind = \"switch\"\n\
            [[node]]\nname = \"s4\"\nkind = \"switch\"\n[[node]]\nname = \"h2\"\nkind = \"host\"\n\
            [[link]]\na = \"h1\"\nb = \"s1\"\nrate = \"RATE\"\n[[link]]\na = \"s1\"\nb = \"s2\"\nrate = \"1Gbps\"\n\
            [[link]]\na = \"s1\"\nb = \"s3\"\nrate = \"1Gbps\"\n[[link]]\na = \"s2\"\nb = \"s4\"\nrate = \"1Gbps\"\n\
            [[link]]\na = \"s3\"\nb = \"s4\"\nrate = \"1Gbps\"\n[[link]]\na = \"s4\"\nb = \"h2\"\nrate = \"1Gbps\"\n\
            [[path]]\nname = \"p1\"\nnodes = [\"s1\", \"s2\", \"s4\"]\n\
            [[path]]\nname = \"p2\"\nnodes = [\"s1\", \"s3\", \"s4\"]\n\
            [[split]]\nname = \"g\"\nsrc = \"h1\"\ndst = \"h2\"\npaths = [\"p1\", \"p2\"]\nSCHED\n\
            [[flow]]\nname = \"f\"\nsrc = \"h1\"\ndst = \"h2\"\nrate = \"1bps\"\n";
        let check = |rate: &str, sched: &str| {
            let sc = Scenario::from_toml(&base.replace("RATE", rate).replace("SCHED", sched), "x.toml").unwrap();
            check_kernel_limits(&sc, &sc.wiring().unwrap()).map_err(|e| e.to_string())
        };
        let (ecmp, wrr) = ("scheduler = \"ecmp\"", "scheduler = \"wrr\"\nweights = [1, 1]");
        let err = check("1Gbps", ecmp).unwrap_err();
        assert!(err.contains("`s1`") && err.contains("ECMP"), "{err}");
        let err = check("1bps", wrr).unwrap_err();
        assert!(err.contains("link[0]") && err.contains("at least 8 bit/s"), "{err}");
        check("8bps", wrr).unwrap();
        // Item 12: a sample interval finer than the sampler resolves (4 362 Mbit/s on a
        // 4 Mbit/s link at 1 µs) is refused too.
        let fine = base
            .replace("RATE", "1Gbps")
            .replace("SCHED", wrr)
            .replace("duration = \"1s\"", "duration = \"1s\"\nsample_interval = \"1ms\"");
        let sc = Scenario::from_toml(&fine, "x.toml").unwrap();
        let err = check_kernel_limits(&sc, &sc.wiring().unwrap()).unwrap_err().to_string();
        assert!(
            err.contains("sample_interval") && err.contains("at least 100 ms"),
            "{err}"
        );
    }

    /// Hardening item 15: what iperf3 does not measure is absent (`-` in tables, `null` in
    /// JSON), not zero: one-way delay of every flow, a TCP flow's loss, timeouts, fast
    /// retransmits and ECN figures; what it does measure stays.
    #[test]
    fn figures_the_kernel_does_not_measure_are_absent_not_zero() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/tcp/two-flows.toml"
        ))
        .unwrap();
        let sc = Scenario::from_toml(&text, "two-flows.toml").unwrap();
        let f = &sc.flows[0];
        let server =
            serde_json::json!({"end": {"sum_received": {"bytes": 1_000_000.0, "packets": 700, "lost_packets": 7}}});
        let (udp, _) = super::udp_flow_figures(f, &server, 4, 1.0, 0.0);
        assert_eq!(udp.mean_owd_ms, None);
        assert_eq!(udp.loss_pct, Some(1.0), "iperf3 counts UDP losses");
        let t = f.tcp.as_ref().expect("a TCP flow");
        let client = serde_json::json!({"end": {"streams": [{"sender": {"retransmits": 246}}]}});
        let (tcp, _) = super::tcp_flow_figures(f, t, &server, &client, 4, 1.0, 0.0);
        assert_eq!((tcp.loss_pct, tcp.mean_owd_ms), (None, None));
        let figs = tcp.tcp.as_ref().unwrap();
        assert_eq!(
            (figs.rtos, figs.fast_retransmits, figs.ecn_reductions, figs.ce_segments),
            (None, None, None, None)
        );
        let json = serde_json::to_value(&tcp).unwrap();
        assert!(json["loss_pct"].is_null() && json["mean_owd_ms"].is_null() && json["tcp"]["rtos"].is_null());

        // Issue 27 item 12: with no client report, retransmissions, SRTT and window are
        // absent (they printed 0); with one, measured.
        let (tcp, _) = super::tcp_flow_figures(f, t, &server, &serde_json::Value::Null, 4, 1.0, 0.0);
        let json = serde_json::to_value(&tcp).unwrap();
        for k in ["retransmitted_segments", "srtt_ms", "mean_cwnd_kib"] {
            assert!(json["tcp"][k].is_null(), "{k}: {json}");
        }
        let client = serde_json::json!({"end": {"sum_sent": {"retransmits": 3}, "streams": [{"sender": {"mean_rtt": 2500}}]},
            "intervals": [{"streams": [{"end": 1.0, "snd_cwnd": 20480, "rtt": 2000, "retransmits": 3}]}]});
        let (tcp, _) = super::tcp_flow_figures(f, t, &server, &client, 4, 1.0, 0.0);
        let figs = tcp.tcp.as_ref().unwrap();
        assert_eq!(
            (figs.retransmitted_segments, figs.srtt_ms, figs.mean_cwnd_kib),
            (Some(3), Some(2.5), Some(20.0))
        );
    }

    /// Issue 27 item 12: a transfer's retransmissions, RTT and window come from the generator's
    /// TCP_INFO, and are absent without it (they were 0 for every transfer); an unfinished one
    /// has no completion time but the bytes delivered by the end (it had 0).
    #[test]
    fn transfers_carry_tcp_info_or_nothing_and_their_bytes_by_the_end() {
        use crate::trafficgen::{FlowResult, TcpInfo};
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/tcp/two-flows.toml"
        ))
        .unwrap();
        let sc = Scenario::from_toml(&text, "two-flows.toml").unwrap();
        let (f, t) = (&sc.flows[0], sc.flows[0].tcp.as_ref().unwrap());
        let info = TcpInfo {
            retransmitted_segments: 4,
            srtt_ms: 1.25,
            cwnd_kib: 14.0,
            bytes_acked: 3 << 20,
        };
        let unfinished = FlowResult {
            id: 0,
            start_s: 0.5,
            fct_s: None,
            connect_s: None,
            bytes: 3 << 20,
            error: Some("not finished by the end of the run".into()),
            tcp_info: Some(info),
        };
        let (fig, _) = super::transfer_figures(f, t, Some(&unfinished), 4, 1.0);
        let tcp = fig.tcp.as_ref().unwrap();
        assert_eq!((tcp.completion_s, fig.delivered_mib), (None, 3.0));
        assert_eq!(
            (tcp.retransmitted_segments, tcp.srtt_ms, tcp.mean_cwnd_kib),
            (Some(4), Some(1.25), Some(14.0))
        );
        let failed = FlowResult {
            bytes: 0,
            tcp_info: None,
            error: Some("connection refused".into()),
            ..unfinished
        };
        let (fig, _) = super::transfer_figures(f, t, Some(&failed), 4, 1.0);
        let json = serde_json::to_value(&fig).unwrap();
        for k in ["retransmitted_segments", "srtt_ms", "mean_cwnd_kib"] {
            assert!(json["tcp"][k].is_null(), "{k}: {json}");
        }
        let back: mpsched_scenario::results::FlowFigures = serde_json::from_value(json).unwrap();
        assert_eq!(back, fig, "null reads back as not measured");
    }

    /// Hardening item 14: iperf3 stamps a report's end just past the boundary (1.000046 s);
    /// each report lands in the interval it ends, from the first to the last, at any sample
    /// interval (rounding up put every one an interval late and dropped the last).
    #[test]
    fn iperf3_reports_land_in_the_interval_they_end() {
        assert_eq!(super::report_slot(0.0, 1.000046, 1.0), 0);
        assert_eq!(super::report_slot(0.0, 3.9998, 1.0), 3, "the last, a little short");
        assert_eq!(
            super::report_slot(2.0, 0.50002, 0.5),
            4,
            "a flow starting at 2 s, 0.5 s samples"
        );
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/motohashi2022/s1-homogeneous.toml"
        ))
        .unwrap();
        let sc = Scenario::from_toml(&text, "s1.toml").unwrap();
        let ends = [1.000046, 2.000031, 3.000102, 3.999870];
        let intervals: Vec<_> = ends
            .iter()
            .map(|e| serde_json::json!({"sum": {"end": e, "bits_per_second": 8e6}}))
            .collect();
        let server = serde_json::json!({"intervals": intervals, "end": {"sum_received": {}}});
        let (_, col) = super::udp_flow_figures(&sc.flows[0], &server, 4, 1.0, 0.0);
        assert!(
            col.iter().all(|c| (c - 8.0).abs() < 0.01),
            "every second filled, none late, the last kept: {col:?}"
        );
    }

    /// Issue 27 item 6: a server's last report is often a short one (what was still queued
    /// when the client stopped), at the flow's rate over a few milliseconds; its rate was added
    /// to the last full interval's (15.47 Mbit/s for an 8 Mbit/s flow). Bytes are added instead.
    /// Reports are placed from when the client really started.
    #[test]
    fn a_short_last_report_adds_its_bytes_not_its_rate() {
        let iv = |start: f64, end: f64, bytes: f64| {
            serde_json::json!({"sum": {"start": start, "end": end, "seconds": end - start, "bytes": bytes,
                "bits_per_second": bytes * 8.0 / (end - start)}})
        };
        let server = serde_json::json!({"intervals": [
            iv(0.0, 1.000046, 1e6), iv(1.000046, 2.000031, 1e6), iv(2.000031, 3.000102, 1e6),
            iv(3.000102, 4.0001, 1e6), iv(4.0001, 4.03, 30_000.0)
        ]});
        let col = super::goodput_column(&server, 0.0, 4, 1.0);
        assert!(
            col.iter().all(|c| (c - 8.0).abs() < 0.001),
            "each second its own bytes; the 30 ms after the end in none: {col:?}"
        );
        // A client that started 0.2 s after time zero at 100 ms samples.
        let server = serde_json::json!({"intervals": [iv(0.0, 0.1, 1e5), iv(0.1, 0.2, 1e5)]});
        let col = super::goodput_column(&server, 0.2, 5, 0.1);
        let want = [0.0, 0.0, 8.0, 8.0, 0.0];
        assert!(col.iter().zip(want).all(|(c, w)| (c - w).abs() < 1e-6), "{col:?}");
    }

    /// Hardening item 20: where the kernel has netem, every link's leaf is netem with the link's
    /// rate (serialisation delay) and its propagation delay; otherwise a pfifo, delay refused
    /// or ignored before this point.
    #[test]
    fn links_get_serialisation_delay_from_netem_where_the_kernel_has_it() {
        let args = |r, q, d, n| leaf_qdisc(r, q, d, n).join(" ");
        assert_eq!(args(3_000_000, 64, 0, false), "pfifo limit 64");
        assert_eq!(args(3_000_000, 64, 0, true), "netem rate 3000000bit limit 64");
        assert_eq!(
            args(6_000_000, 80, 2_000_000_000, true),
            "netem delay 2000us rate 6000000bit limit 80"
        );
        assert_eq!(args(1, 0, 0, false), "pfifo limit 1", "never a zero limit");
    }

    /// Defect 8: netem's limit counted the packets it was delaying, so once rate x delay
    /// exceeded the queue the kernel dropped what the simulator delivered.
    #[test]
    fn netem_limit_leaves_the_queue_its_room_beside_the_delay_line() {
        assert_eq!(netem_limit_pkts(64, 10_000_000, 0, 1512), 64, "no delay: the queue");
        // 100 Mbit/s for 20 ms is 250 000 bytes: 166 frames of 1512 bytes in the delay line.
        assert_eq!(netem_limit_pkts(64, 100_000_000, 20_000_000_000, 1512), 64 + 166);
        assert_eq!(netem_limit_pkts(0, 1, 1, 1), 1, "never a zero limit");
        assert_eq!(netem_limit_pkts(64, u64::MAX, u64::MAX, 1), u32::MAX, "saturates");
    }
}
