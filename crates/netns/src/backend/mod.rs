//! The netns backend: a scenario on the Linux kernel.
//!
//! One network namespace per node (`mps-<run id>-<node>`), one veth pair per link created
//! directly inside the two namespaces (interface `e<port>` is the node's port `port`), htb at
//! the link's rate on every interface with a pfifo of the scenario's queue capacity (netem
//! instead wherever the kernel has it: the link's `rate`, so each frame takes its serialisation
//! time, and its propagation delay), the eBPF switch
//! program on every switch interface (the kernel's own forwarding stays off there, so every
//! forwarding decision is the program's), the egress marker on the path interfaces that mark,
//! static neighbour entries instead of ARP, iperf3 servers and UDP clients for the flows (the
//! paced sender and receiver of `mpsched trafficgen` for rate-controlled ones), and a sampler
//! reading interface counters each second as bwm-ng does.
//!
//! Everything made is removed when the run ends, fails or is interrupted: the namespaces are
//! deleted (which takes their interfaces, qdiscs and attached programs with them), the traffic
//! processes are killed, and nothing is pinned in bpffs.
//!
//! This module holds the public types, [`run`] and the [`NetnsBackend`]; the steps live beside
//! it: `checks` (what is refused before anything is made), `setup` (namespaces, links, hosts,
//! switches), `traffic` (iperf3 and the traffic generator), `paced` (rate-controlled flows),
//! `measure` (the sampling loop),
//! `results` (reports into the results schema) and `cleanup` (what failed runs left).

mod checks;
mod cleanup;
mod control;
mod measure;
mod paced;
mod queues;
mod rate_traces;
mod results;
mod setup;
mod traffic;
mod tunnels;

pub use checks::{
    check_flow_ports, check_kernel_limits, check_port_queues, check_programs, ignored_on_the_kernel,
    kernel_accepts_qdisc, kernel_has_qdisc, preflight, strict_priority_description, strict_priority_for,
    strict_priority_note, MIN_KERNEL_RATE_BPS, MIN_KERNEL_SAMPLE_INTERVAL_PS,
};
pub use cleanup::{clean, leftovers, owner_pid, Cleaned};
pub use control::{ControlFn, Controller, KernelControl};
pub use queues::{StrictPriority, STRICT_GUARANTEE_BPS};
pub use setup::{link_model, netem_limit_pkts, OWN_QUEUES_SHAPER_PKTS};
pub use tunnels::{tunnel_counters, MAX_KERNEL_TUNNELS, SUBTUNNEL_MTU};

use checks::warn_ignored;
use measure::drive;
use results::figures;
use traffic::wait_for_traffic;

use crate::ns::{Netns, NsError};
use crate::switchplane::{EbpfPlanes, SwitchPlane, SwitchPlanes};
use crate::trafficgen::FlowResult;
use crate::{capture, hosts};
use mpsched_core::packet::{PortId, UDP_OVERHEAD_BYTES};
use mpsched_core::wire::mac_for;
use mpsched_run::TimeSeries;
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::{Flow, Scenario, TcpApp};
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
    /// A controller called while the traffic runs, through the control channel.
    pub controller: Option<Controller>,
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
    /// The paced flows' report lines (`paced.jsonl`), each with its flow and end.
    pub paced: String,
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
    /// Per paced flow, the child running its sender (its receiver is in `server_of`).
    paced_sender_of: Vec<Option<usize>>,
    /// dumpcap processes and their files, stopped once the traffic has drained.
    captures: Vec<(Child, std::path::PathBuf)>,
    /// Per child, when it was ended for running past the drain (seconds after time zero).
    ended_late_s: Vec<Option<f64>>,
    /// Time zero on the wall clock, seconds since the Unix epoch (iperf3 stamps its reports so).
    t0_unix_s: f64,
    /// The tunnel daemons' ends and their logs ([`tunnels`]).
    tunnel_ends: Vec<(tunnels::End, std::path::PathBuf)>,
    /// The tunnel daemons: they run until the run's figures are read, then are killed.
    daemons: Vec<Child>,
    /// Files written for the run (the tunnel daemons' configurations and key), removed with it.
    files: Vec<std::path::PathBuf>,
}

impl Drop for Live {
    fn drop(&mut self) {
        for c in self
            .children
            .iter_mut()
            .chain(self.daemons.iter_mut())
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
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
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
    /// How strict-priority ports are built, if the scenario has any.
    strict: Option<queues::StrictPriority>,
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
    /// How strict-priority ports are built, if the scenario has any.
    strict: Option<queues::StrictPriority>,
}

/// [`check`]'s checks, in order: the pure ones first, then the preflight, which probes the
/// kernel with a scratch namespace (for netem, and for prio / ets where a port has strict
/// priority).
fn checked(sc: &Scenario, opts: &NetnsOptions) -> Result<Checked, NetnsError> {
    let w = sc.wiring().map_err(NetnsError::Unsupported)?;
    check_kernel_limits(sc, &w)?;
    checks::check_iperf_durations(sc)?;
    check_programs(sc, &w, &*opts.planes())?;
    check_port_queues(sc, &w, &*opts.planes())?;
    hosts::check(sc, &w)?;
    let capture_ports = capture::check(sc, &opts.captures)?;
    let have_netem = preflight(sc, opts)?;
    let strict = strict_priority_for(sc);
    opts.planes().preflight()?;
    warn_ignored(sc, &w, strict, &*opts.planes());
    Ok(Checked {
        w,
        capture_ports,
        have_netem,
        strict,
    })
}

/// Run `sc` (one variant, one repetition) on the kernel.
pub fn run(sc: &Scenario, run_id: &str, opts: &NetnsOptions) -> Result<NetnsRun, NetnsError> {
    let Checked {
        w,
        capture_ports,
        have_netem,
        strict,
    } = checked(sc, opts)?;
    let b = Build {
        sc,
        w: &w,
        opts,
        run_id,
        have_netem,
        strict,
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
        paced_sender_of: vec![None; sc.flows.len()],
        captures: Vec::new(),
        ended_late_s: Vec::new(),
        t0_unix_s: 0.0,
        tunnel_ends: Vec::new(),
        daemons: Vec::new(),
        files: Vec::new(),
    };
    b.namespaces(&mut live)?;
    b.links(&live)?;
    b.hosts(&live)?;
    b.switches(&mut live)?;
    b.tunnel_ends(&mut live)?;
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
    live.t0_unix_s = (std::time::SystemTime::now() + GENERATOR_LEAD)
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    b.paced_flows(&mut live, t0)?;
    b.generator_clients(&mut live, t0)?;
    while Instant::now() < t0 {
        b.check_stop()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    let samples = drive(&b, &mut live, t0)?;
    let outputs = wait_for_traffic(&b, &mut live, t0)?;
    for (c, path) in &mut live.captures {
        capture::stop(c, path);
    }
    let run = figures(&b, &live, samples, &outputs);
    drop(live);
    run
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
        if !res.paced.is_empty() {
            // The paced flows' own lines: rates, feedback, per-interval arrivals, totals.
            artifacts.push(("paced.jsonl".to_string(), res.paced));
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
