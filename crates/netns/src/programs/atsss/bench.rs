//! The UPF's speed, as issue #32 asks for it (`mpsched bench --atsss`):
//!
//! 1. **Under `BPF_PROG_TEST_RUN`** ([`test_run_table`]): `n_ues` UEs of state (10 000 by
//!    default), each of the four schedulers, each packet to a UE drawn at random, in the
//!    slides' rows (the preferred : secondary share, the frame size). The program runs in its
//!    benchmark mode (`ATSSS_F_BENCH`): the kernel repeats it on one buffer, so each run first
//!    undoes the encapsulation the run before left there, draws a UE and writes its address
//!    (from the `bench_ues` array, not its slot) into the inner destination, the checksum
//!    updated; then the program runs as on any frame: the UE found by its address in the
//!    index, its scheduler on the kernel's clock and random draws (under the UE's lock when
//!    it steps or probes), its numbers, the encapsulation, the redirect. The prologue's cost (with one more `bpf_xdp_adjust_head`, so that it
//!    repeats: `ATSSS_F_BENCH_ONLY`) is reported beside the figures, which include it.
//! 2. **Through real veths** ([`veth_rate`]): a generator (`atsss_bench.bpf.c`'s `atsss_gen`
//!    under `BPF_PROG_TEST_RUN` in live-frames mode, its thread on CPU 0) redirects downlink
//!    packets to random UEs into a veth whose peer runs the UPF at XDP; that peer's NAPI runs
//!    threaded, pinned to CPU 1, where the UPF encapsulates and redirects into a third veth
//!    whose peer counts and drops (`atsss_sink`, its softirq raised on CPU 1). The UPF side's
//!    CPU time is the NAPI thread's (`/proc/<pid>/stat`) and CPU 1's softirq time
//!    (`/proc/stat`), beside the wall time; a baseline with `atsss_fwd` (MACs and a redirect,
//!    nothing else) in the UPF's place gives the cost of the path around it. Runs alternate
//!    between the baseline and each scheduler.

use super::layout::{Node, Slot, F_BENCH};
use super::{xdp_test_run, AtsssPlane, XDP_REDIRECT};
use crate::backend::NetnsError;
use crate::dataplane::{bpf, percpu_sum, update_map, NodeTables, PortBinding};
use crate::layout::Pod;
use crate::ns::Netns;
use crate::vectors::TestNode;
use libbpf_rs::{Object, ObjectBuilder, ProgramInput, Xdp, XdpFlags};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::Route;
use mpsched_core::upf::{SteeringKind, UeEntry, UePath, UpfTable};
use mpsched_core::vectors::{OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{emit_udp_frame, mac_for};
use mpsched_programs::atsss::frame::{self, Encap, Header};
use mpsched_programs::atsss::registers::{CMON_MAX_CWND, PATH_HAS_RTT};
use mpsched_programs::atsss::upf::{self, UpfParams, ATSSS};
use mpsched_programs::{Params, SwitchProgram};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The compiled generator, sink and baseline forwarder, built by `build.rs`.
pub static BENCH_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/atsss_bench.bpf.o"));

/// `ATSSS_F_BENCH_ONLY`.
const F_BENCH_ONLY: u32 = super::layout::h::F_BENCH_ONLY as u32;

/// The UPF's address in the benchmark.
const UPF_IP: u32 = 0x0aff_0001;
/// The server the generated packets come from.
const SERVER: u32 = 0x0a09_0001;

/// The packet-size mix of the mixed rows: frame bytes and how many of each in 12 (the simple
/// IMIX's 7 : 4 : 1, its largest size cut to 1 400 bytes so that the encapsulated packet fits a
/// 1 500-byte MTU).
pub const MIX: [(u32, u32); 3] = [(64, 7), (594, 4), (1400, 1)];

/// One row of the slides' table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// As the slides name it.
    pub name: &'static str,
    /// The share of packets on the preferred path.
    pub preferred: f64,
    /// A single frame size (bytes), or None for [`MIX`].
    pub size: Option<u32>,
}

/// The slides' rows.
pub const ROWS: [Row; 7] = [
    Row {
        name: "1:0 (512 B)",
        preferred: 1.0,
        size: Some(512),
    },
    Row {
        name: "1:0 (1024 B)",
        preferred: 1.0,
        size: Some(1024),
    },
    Row {
        name: "0:1 (512 B)",
        preferred: 0.0,
        size: Some(512),
    },
    Row {
        name: "0.42:0.57",
        preferred: 0.42,
        size: None,
    },
    Row {
        name: "0.4:0.6",
        preferred: 0.4,
        size: None,
    },
    Row {
        name: "0.25:0.75",
        preferred: 0.25,
        size: None,
    },
    Row {
        name: "0.1:0.9",
        preferred: 0.1,
        size: None,
    },
];

/// The slides' columns.
pub const KINDS: [SteeringKind; 4] = [
    SteeringKind::Wrr,
    SteeringKind::Dwrr,
    SteeringKind::RttMon,
    SteeringKind::CMon,
];

/// The smartNIC's figures from the slides (Mpps, 10 kUE, 64-1400 B), by row and column.
pub const SMARTNIC_MPPS: [[f64; 4]; 7] = [
    [3.0, 3.0, 2.9, 3.0],
    [2.9, 2.9, 2.8, 3.0],
    [5.3, 5.4, 4.5, 4.6],
    [4.2, 4.1, 3.7, 3.8],
    [4.3, 4.2, 3.8, 3.9],
    [4.7, 4.5, 4.1, 4.2],
    [4.7, 4.6, 4.2, 4.2],
];

/// One cell of the table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Cell {
    /// The row's name.
    pub row: &'static str,
    /// The scheduler.
    pub kind: &'static str,
    /// Mean nanoseconds per packet (the kernel's timing, over the row's size mix) of each
    /// repetition.
    pub ns_per_pkt: Vec<f64>,
    /// Millions of packets per second on one core, the median of the repetitions.
    pub mpps_median: f64,
    /// The best repetition's.
    pub mpps_best: f64,
    /// The UPF's own rate, the median of the repetitions: each repetition's time less that
    /// repetition's prologue run alone ([`TestRunTable::prologue_ns`], the test run's own loop
    /// included), so without the harness; the UEs are still drawn at random per packet.
    pub mpps_upf_median: f64,
    /// The cell's rate over the harness's alone (the prologue run of the same repetition,
    /// [`TestRunTable::prologue_ns`]), the median of the repetitions: a figure another machine
    /// can check, where Mpps move with the machine's speed and load.
    pub per_harness_median: f64,
    /// The share of the measured packets that went to the preferred path (all repetitions).
    pub preferred_share: f64,
    /// The smartNIC's figure.
    pub smartnic_mpps: f64,
}

/// What the table was measured with.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TestRunTable {
    /// UEs of state.
    pub ues: usize,
    /// Runs per frame size per cell and repetition.
    pub repeat: u32,
    /// Repetitions (each measures every cell once, in the same order).
    pub repetitions: u32,
    /// The cells, row by row.
    pub cells: Vec<Cell>,
    /// The benchmark prologue with one more bpf_xdp_adjust_head (so that it repeats), ns per
    /// packet, each repetition: part of every cell's figure.
    pub prologue_ns: Vec<f64>,
    /// The load average (1 minute) before and after: the machine is shared.
    pub loadavg: (f64, f64),
}

/// The 1-minute load average.
pub fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0.0)
}

/// The median of `v` (0 when empty; NaNs sort last).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The UE table of the benchmark: `n` UEs of `kind` with two paths (preferred out of port 1,
/// secondary out of port 2); the share of each row is written into the registers
/// ([`set_share`]).
fn table(kind: SteeringKind, n: usize) -> UpfTable {
    let weight = 0;
    UpfTable {
        epoch: 0x0102_0304_0506_0708,
        ues: (0..n)
            .map(|i| UeEntry {
                ip: 0x0a40_0000 + i as u32,
                kind,
                weight,
                paths: (0..2)
                    .map(|j| UePath {
                        addr: 0x6440_0000 | (j as u32) << 16 | i as u32,
                        port: 6000 + j as u16,
                        egress_port: 1 + j as u16,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Write every UE's registers afresh for a share `preferred` of the packets on the preferred
/// path (the counters and numbers start again too): WRR and DWRR by the weight,
/// `round(preferred x 255)`; RTTMon and CMon by the first `round(preferred x n)` UEs having a
/// preferred path at target (RTTMon: weight 62, which each step keeps; CMon: usable) and the
/// others one above target (RTTMon: weight 0, which each step keeps; CMon: congested, so the
/// secondary, with one probe of the preferred per target RTT). Both paths measured (minimum
/// and current RTT 1 000 ticks, 117 ms, target 1 464 ticks, 171 ms; a congested path's current
/// RTT 2 000), windows at their largest, nothing in flight. Under the kernel's clock RTTMon
/// steps once per target RTT per UE and CMon probes a congested preferred path as often, as
/// they would live: at 10 000 UEs and a few Mpps a UE sees a packet every few milliseconds, so
/// probes are a few percent of a congested UE's packets (the realised share is reported).
fn set_share(plane: &AtsssPlane, t: &UpfTable, kind: SteeringKind, preferred: f64) -> Result<(), NetnsError> {
    let n = t.ues.len();
    let good = (preferred * n as f64).round() as usize;
    let cfg = bench_params_upf().config();
    for (u, mut s) in upf::slots_of(t, &cfg).into_iter().enumerate() {
        for p in &mut s.regs.paths[..2] {
            p.min_rtt = 1_000;
            p.cur_rtt = 1_000;
            p.flags = PATH_HAS_RTT;
            p.cwnd = CMON_MAX_CWND;
        }
        match kind {
            SteeringKind::Wrr | SteeringKind::Dwrr => s.regs.weight = (preferred * 255.0).round() as u8,
            SteeringKind::RttMon => s.regs.weight = if u < good { 62 } else { 0 },
            _ => {}
        }
        if u >= good && matches!(kind, SteeringKind::RttMon | SteeringKind::CMon) {
            s.regs.paths[0].cur_rtt = 2_000;
        }
        plane.set_slot(u, &Slot::from(&s))?;
    }
    Ok(())
}

/// The first run's input: a downlink packet of `size` frame bytes to UE 0, already
/// encapsulated (the benchmark's prologue undoes it first).
fn bench_frame(size: u32) -> Vec<u8> {
    let m = mpsched_core::packet::PacketMeta::udp(SERVER, 0x0a40_0000, 1000, 5201, 0);
    let mut inner = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        0,
        &vec![0u8; size as usize - 42],
        &mut inner,
    );
    let e = Encap {
        src: UPF_IP,
        dst: 0x6440_0000,
        dst_port: 6000,
        tos: 0,
        header: Header {
            kind: frame::KIND_DATA,
            path: 0,
            epoch: 0,
            packet_number: 0,
        },
        path_seq: 0,
        tunnel_seq: 0,
        sent_us: 0,
    };
    let mut out = Vec::new();
    frame::encapsulate(&e, &inner[14..], &mut out);
    out
}

/// The UPF's parameters in the benchmark: the defaults but the outage floor, at its largest
/// (10 000 s): the benchmark sends no acknowledgements, and CMon would otherwise (rightly)
/// declare a path down 4 target RTTs (68 ms) after its first unanswered packet.
fn bench_params() -> Params {
    let mut p = Params::defaults(ATSSS.params());
    p.set(ATSSS.params(), "outage_floor", 10_000_000_000_000)
        .expect("within the parameter's bounds");
    p
}

fn bench_params_upf() -> UpfParams {
    UpfParams::from_params(&bench_params())
}

fn tables(ports: Vec<PortBinding>, upf: UpfTable) -> NodeTables {
    let mut switch = SwitchConfig::forwarding(
        UPF_IP,
        vec![Route {
            prefix: 0x0a09_0000,
            len: 16,
            port: 0,
        }],
    );
    switch.upf = upf;
    NodeTables {
        switch,
        ports,
        markers: Vec::new(),
        test_draws: Vec::new(),
        test_clock: false,
        program: ATSSS.name(),
        params: bench_params(),
        port_queues: Vec::new(),
        port_classes: Vec::new(),
        far_ends: Vec::new(),
    }
}

fn plane_err(e: impl std::fmt::Display) -> NetnsError {
    NetnsError::Plane(e.to_string())
}

fn check_stop(stop: &AtomicBool) -> Result<(), NetnsError> {
    match stop.load(Ordering::Relaxed) {
        true => Err(NetnsError::Interrupted("(none made at this point)".into())),
        false => Ok(()),
    }
}

/// Mean ns per run of the UPF in benchmark mode on frames of `size` bytes, `repeat` runs.
fn ns_per_run(plane: &AtsssPlane, ifindex: u32, size: u32, repeat: u32) -> Result<f64, NetnsError> {
    let prog = plane.program()?;
    let f = bench_frame(size);
    let (v, out, _) = xdp_test_run(&prog, ifindex, &f, 1000).map_err(plane_err)?;
    if v != XDP_REDIRECT || out.len() != f.len() {
        return Err(plane_err(format!(
            "the benchmark's frame came back as verdict {v}, {} bytes",
            out.len()
        )));
    }
    let (_, _, d) = xdp_test_run(&prog, ifindex, &f, repeat).map_err(plane_err)?;
    Ok(d.as_nanos() as f64)
}

/// Issue #32's table under `BPF_PROG_TEST_RUN`: every cell with `n_ues` UEs, `repeat` runs
/// per frame size, `reps` repetitions; in each repetition each scheduler's program is loaded
/// once and goes through the rows, its registers written afresh for each ([`set_share`]).
/// Stops between cells once `stop` is set.
pub fn test_run_table(n_ues: usize, repeat: u32, reps: u32, stop: &AtomicBool) -> Result<TestRunTable, NetnsError> {
    check_stop(stop)?;
    let load_before = loadavg();
    let node = TestNode::create(3).map_err(NetnsError::Plane)?;
    let ifindex = node.ports[0].ifindex;
    // (ns, path-0 packets, packets) by (row, kind), per repetition.
    let mut ns = vec![vec![Vec::new(); KINDS.len()]; ROWS.len()];
    let mut counts = vec![vec![(0.0, 0.0); KINDS.len()]; ROWS.len()];
    let mut prologue_ns = Vec::new();
    for _ in 0..reps {
        for (k, kind) in KINDS.iter().enumerate() {
            check_stop(stop)?;
            let upf_table = table(*kind, n_ues);
            let t = tables(node.ports.clone(), upf_table.clone());
            node.enter(|| -> Result<(), NetnsError> {
                let plane = AtsssPlane::load(&t)?;
                let mut n: Node = plane.node()?;
                for (r, row) in ROWS.iter().enumerate() {
                    check_stop(stop)?;
                    set_share(&plane, &upf_table, *kind, row.preferred)?;
                    n.flags = F_BENCH;
                    plane.set_node(&n)?;
                    let sizes: Vec<(u32, u32)> = match row.size {
                        Some(s) => vec![(s, 1)],
                        None => MIX.to_vec(),
                    };
                    let before = plane.snapshot()?;
                    let mut total = 0.0;
                    let mut weights = 0.0;
                    for (size, w) in &sizes {
                        total += f64::from(*w) * ns_per_run(&plane, ifindex, *size, repeat)?;
                        weights += f64::from(*w);
                    }
                    let after = plane.snapshot()?;
                    let d = |c: &str| (after[c] - before[c]) as f64;
                    ns[r][k].push(total / weights);
                    counts[r][k].0 += d("counter.atsss.path0_pkts");
                    counts[r][k].1 += d("counter.atsss.encapsulated");
                }
                if k == 0 {
                    // The prologue, and the frame encapsulated again by one more
                    // bpf_xdp_adjust_head, so that the runs repeat.
                    n.flags = F_BENCH | F_BENCH_ONLY;
                    plane.set_node(&n)?;
                    let prog = plane.program()?;
                    let f = bench_frame(512);
                    let d = xdp_test_run(&prog, ifindex, &f, repeat).map_err(plane_err)?.2;
                    prologue_ns.push(d.as_nanos() as f64);
                }
                Ok(())
            })
            .map_err(|e| NetnsError::Plane(e.to_string()))??;
        }
    }
    let mut cells = Vec::new();
    for (r, row) in ROWS.iter().enumerate() {
        for (k, kind) in KINDS.iter().enumerate() {
            let mpps: Vec<f64> = ns[r][k].iter().map(|x| 1e3 / x).collect();
            let upf: Vec<f64> = ns[r][k]
                .iter()
                .zip(&prologue_ns)
                .map(|(x, p)| 1e3 / (x - p).max(1.0))
                .collect();
            let per_harness: Vec<f64> = ns[r][k].iter().zip(&prologue_ns).map(|(x, p)| p / x).collect();
            cells.push(Cell {
                per_harness_median: median(&per_harness),
                row: row.name,
                kind: kind.name(),
                ns_per_pkt: ns[r][k].clone(),
                mpps_median: median(&mpps),
                mpps_best: mpps.iter().copied().fold(0.0, f64::max),
                mpps_upf_median: median(&upf),
                preferred_share: counts[r][k].0 / counts[r][k].1.max(1.0),
                smartnic_mpps: SMARTNIC_MPPS[r][k],
            });
        }
    }
    Ok(TestRunTable {
        ues: n_ues,
        repeat,
        repetitions: reps,
        cells,
        prologue_ns,
        loadavg: (load_before, loadavg()),
    })
}

// ---- two CPUs, one UE ---------------------------------------------------------------------

/// What [`concurrent_numbering`] counted: every number the UPF handed out, summed over its
/// UEs, against the packets it encapsulated.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Numbering {
    /// Packets encapsulated (the per-CPU counter, both CPUs).
    pub encapsulated: u64,
    /// The UEs' packet numbers (each starts at 0 and is one past the last handed out).
    pub packet_numbers: u64,
    /// The UEs' tunnel sequence numbers, as `packet_numbers`.
    pub tunnel_seqs: u64,
    /// The UEs' paths' sequence numbers, as `packet_numbers`.
    pub path_seqs: u64,
    /// The share of the packets on the preferred path.
    pub preferred_share: f64,
}

/// `threads` threads, one pinned to each CPU from 0, each running the UPF `runs` times under
/// `BPF_PROG_TEST_RUN` in benchmark mode at the same time, `n_ues` UEs of `kind` with half
/// their packets on the preferred path: what the UPF numbered. Two CPUs with packets of one
/// UE must never hand out one number twice (`atsss.bpf.c`, `downlink`): every count equals
/// the packets encapsulated.
pub fn concurrent_numbering(
    kind: SteeringKind,
    n_ues: usize,
    threads: usize,
    runs: u32,
) -> Result<Numbering, NetnsError> {
    let node = TestNode::create(3).map_err(NetnsError::Plane)?;
    let ifindex = node.ports[0].ifindex;
    let upf_table = table(kind, n_ues);
    let t = tables(node.ports.clone(), upf_table.clone());
    node.enter(|| -> Result<Numbering, NetnsError> {
        let plane = AtsssPlane::load(&t)?;
        set_share(&plane, &upf_table, kind, 0.5)?;
        let mut n: Node = plane.node()?;
        n.flags = F_BENCH;
        plane.set_node(&n)?;
        let f = bench_frame(512);
        let results: Vec<Result<(), NetnsError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|cpu| {
                    let (plane, f) = (&plane, &f);
                    scope.spawn(move || -> Result<(), NetnsError> {
                        pin(0, cpu)?;
                        let prog = plane.program()?;
                        let (v, ..) = xdp_test_run(&prog, ifindex, f, runs).map_err(plane_err)?;
                        match v {
                            XDP_REDIRECT => Ok(()),
                            v => Err(plane_err(format!("verdict {v} on CPU {cpu}"))),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(plane_err("a thread panicked"))))
                .collect()
        });
        results.into_iter().collect::<Result<(), _>>()?;
        let counters = plane.snapshot()?;
        let mut c = Numbering {
            encapsulated: counters.get("counter.atsss.encapsulated").copied().unwrap_or(0),
            ..Numbering::default()
        };
        for u in 0..n_ues {
            let s = plane.slot(u)?;
            c.packet_numbers += s.packet_number;
            c.tunnel_seqs += u64::from(s.tunnel_seq);
            c.path_seqs += s.regs.paths.iter().map(|p| u64::from(p.seq_sent)).sum::<u64>();
        }
        let preferred = counters.get("counter.atsss.path0_pkts").copied().unwrap_or(0);
        c.preferred_share = preferred as f64 / c.encapsulated.max(1) as f64;
        Ok(c)
    })
    .map_err(|e| NetnsError::Plane(e.to_string()))?
}

// ---- through veths ----------------------------------------------------------------------

/// One run through the veths.
#[derive(Clone, Debug, serde::Serialize)]
pub struct VethRun {
    /// `baseline` (atsss_fwd) or the scheduler's name.
    pub what: String,
    /// The repetition (runs alternate between the programs of one repetition).
    pub repetition: u32,
    /// Wall seconds.
    pub wall_s: f64,
    /// Packets generated (CPU 0).
    pub generated: u64,
    /// Packets that reached the sinks.
    pub delivered: u64,
    /// Delivered per wall second, millions.
    pub mpps_wall: f64,
    /// CPU seconds of the UPF's NAPI thread (user + system: the UPF program and the redirect
    /// into the sinks' veth), from `/proc/<pid>/stat`.
    pub napi_thread_s: f64,
    /// Softirq seconds on CPU 1 (the sinks' NAPI, raised by that thread), from `/proc/stat`.
    pub cpu1_softirq_s: f64,
    /// Everything CPU 1 ran, user and system (other processes of the machine included).
    pub cpu1_user_s: f64,
    /// As `cpu1_user_s`, system time.
    pub cpu1_system_s: f64,
    /// CPU seconds of the generator's thread (CPU 0).
    pub generator_s: f64,
    /// Delivered per second of the UPF's side (NAPI thread + CPU 1's softirq), millions: the
    /// rate one core would carry.
    pub mpps_per_cpu_s: f64,
}

/// `/proc/stat`'s `cpuN` line: (user + nice, system, irq + softirq) in seconds.
fn cpu_times(cpu: usize) -> Result<(f64, f64, f64), NetnsError> {
    let text = std::fs::read_to_string("/proc/stat").map_err(plane_err)?;
    let tick = 100.0; // USER_HZ
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("cpu{cpu} ")))
        .ok_or_else(|| plane_err(format!("no cpu{cpu} in /proc/stat")))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    Ok(((v[0] + v[1]) / tick, v[2] / tick, (v[5] + v[6]) / tick))
}

/// A thread's (`/proc/<pid>/stat`, or the calling thread's with `None`) user + system CPU
/// seconds.
fn thread_cpu_s(pid: Option<i32>) -> Result<f64, NetnsError> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/thread-self/stat".into(),
    };
    let text = std::fs::read_to_string(&path).map_err(plane_err)?;
    let rest = text.rsplit_once(')').map(|x| x.1).unwrap_or("");
    // After the command: state is field 3; utime and stime are fields 14 and 15.
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    Ok((f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0)
}

/// Pin thread or process `pid` (0: the calling thread) to `cpu`.
fn pin(pid: i32, cpu: usize) -> Result<(), NetnsError> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(plane_err(format!(
                "sched_setaffinity({pid}, cpu {cpu}): {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

/// The process ids of the kernel threads of `dev`'s threaded NAPI (`napi/<dev>-<id>`).
fn napi_threads(dev: &str) -> Vec<i32> {
    let prefix = format!("napi/{dev}-");
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                    let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
                    comm.trim().starts_with(&prefix).then_some(pid)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The veths of the rate test in one namespace: `<t>g` -> `<t>u0` (the UPF's port 0), and
/// `<t>u1` -> `<t>s1`, `<t>u2` -> `<t>s2` (its ports 1 and 2 to the sinks).
struct VethBench {
    ns: Netns,
    tag: String,
}

impl VethBench {
    fn dev(&self, d: &str) -> String {
        format!("{}{d}", self.tag)
    }

    fn create() -> Result<VethBench, NetnsError> {
        let id = crate::backend::new_run_id();
        let ns = Netns::create(&format!("mps-{id}-upfb")).map_err(NetnsError::Ns)?;
        // Interface names are global to the kernel's NAPI thread names: made unique by pid.
        let tag = format!("a{}", std::process::id() % 100_000);
        let b = VethBench { ns, tag };
        for (a, z) in [("g", "u0"), ("u1", "s1"), ("u2", "s2")] {
            let (a, z) = (b.dev(a), b.dev(z));
            b.ns.ip(&["link", "add", &a, "type", "veth", "peer", "name", &z])
                .map_err(NetnsError::Ns)?;
            b.ns.ip(&["link", "set", &a, "up"]).map_err(NetnsError::Ns)?;
            b.ns.ip(&["link", "set", &z, "up"]).map_err(NetnsError::Ns)?;
        }
        Ok(b)
    }

    fn ifindex(&self, d: &str) -> Result<u32, NetnsError> {
        self.ns.ifindex(&self.dev(d)).map_err(NetnsError::Ns)
    }

    /// The UPF's ports: u0, u1, u2, MACs as the vectors'.
    fn ports(&self) -> Result<Vec<PortBinding>, NetnsError> {
        ["u0", "u1", "u2"]
            .iter()
            .enumerate()
            .map(|(p, d)| {
                Ok(PortBinding {
                    ifindex: self.ifindex(d)?,
                    own_mac: mac_for(OWN_MAC_NODE, p as u16),
                    peer_mac: mac_for(PEER_MAC_NODE, p as u16),
                })
            })
            .collect()
    }
}

/// The generator's frame sizes: the row's size, or [`MIX`] as 12 entries.
fn gen_sizes(row: &Row) -> [u16; 8] {
    let mut sizes = [0u16; 8];
    match row.size {
        Some(s) => sizes[0] = s as u16,
        // 8 slots for 7 : 4 : 1 of 12: 64 x 4, 594 x 3, 1400 x 1 (0.5, 0.375, 0.125 against
        // 0.58, 0.33, 0.08).
        None => {
            sizes = [64, 64, 64, 64, 594, 594, 594, 1400];
        }
    }
    sizes
}

/// `struct atsss_gen_cfg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct GenCfg {
    target_ifindex: u32,
    n_ues: u32,
    n_sizes: u32,
    src_ip: u32,
    sizes: [u16; 8],
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
}
// SAFETY: repr(C), integers only, no implicit padding (4 x 4 + 16 + 12 = 44 bytes, 4-aligned).
unsafe impl Pod for GenCfg {}
const _: () = assert!(std::mem::size_of::<GenCfg>() == 44);

/// `struct atsss_fwd_cfg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct FwdCfg {
    ifindex: u32,
    own_mac: [u8; 6],
    peer_mac: [u8; 6],
}
// SAFETY: as GenCfg (16 bytes).
unsafe impl Pod for FwdCfg {}
const _: () = assert!(std::mem::size_of::<FwdCfg>() == 16);

fn bench_prog<'a>(obj: &'a Object, name: &str) -> Result<libbpf_rs::ProgramMut<'a>, NetnsError> {
    obj.progs_mut()
        .find(|p| p.name() == name)
        .ok_or_else(|| plane_err(format!("{name} missing from atsss_bench.bpf.o")))
}

/// `BPF_F_TEST_XDP_LIVE_FRAMES`.
const LIVE_FRAMES: u32 = 1 << 1;

/// Rates through veths: for each of `reps` repetitions, the baseline then each scheduler at
/// `row`, each run generating for `seconds`. Needs two CPUs (the generator on CPU 0, the
/// UPF's NAPI thread on CPU 1); runs in a thread of its own, which it pins.
pub fn veth_rate(
    n_ues: usize,
    row: &Row,
    seconds: f64,
    reps: u32,
    stop: &AtomicBool,
) -> Result<Vec<VethRun>, NetnsError> {
    std::thread::scope(|s| {
        s.spawn(|| veth_rate_here(n_ues, row, seconds, reps, stop))
            .join()
            .unwrap_or_else(|_| Err(plane_err("the veth benchmark's thread panicked")))
    })
}

fn veth_rate_here(
    n_ues: usize,
    row: &Row,
    seconds: f64,
    reps: u32,
    stop: &AtomicBool,
) -> Result<Vec<VethRun>, NetnsError> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return Err(NetnsError::Unsupported("the veth rate test needs two CPUs".into()));
    }
    check_stop(stop)?;
    let b = VethBench::create()?;
    let ports = b.ports()?;
    let g_if = b.ifindex("g")?;
    let mut out = Vec::new();
    let mut order: Vec<Option<SteeringKind>> = vec![None];
    order.extend(KINDS.iter().map(|k| Some(*k)));
    b.ns.enter(|| -> Result<(), NetnsError> {
        let mut open = bpf(
            || "open atsss_bench.bpf.o".into(),
            ObjectBuilder::default().open_memory(BENCH_OBJECT),
        )?;
        for mut m in open.maps_mut() {
            if m.name().to_str() == Some("gen_ues") {
                bpf(|| "size gen_ues".into(), m.set_max_entries(n_ues.max(1) as u32))?;
            }
        }
        let obj = bpf(|| "load atsss_bench.bpf.o".into(), open.load())?;
        // The sinks at the far ends (their XDP program gives them NAPI for redirected frames).
        let sink = bench_prog(&obj, "atsss_sink")?;
        for d in ["s1", "s2"] {
            let i = b.ifindex(d)?;
            bpf(
                || format!("attach the sink to {d}"),
                Xdp::new(sink.as_fd()).attach(i as i32, XdpFlags::DRV_MODE),
            )?;
        }
        let gen_cfg = GenCfg {
            target_ifindex: g_if,
            n_ues: n_ues as u32,
            n_sizes: if row.size.is_some() { 1 } else { 8 },
            src_ip: SERVER,
            sizes: gen_sizes(row),
            dst_mac: mac_for(OWN_MAC_NODE, 0),
            src_mac: mac_for(PEER_MAC_NODE, 0),
        };
        update_map(&obj, "gen", &0u32, &gen_cfg)?;
        for u in 0..n_ues {
            update_map(&obj, "gen_ues", &(u as u32), &(0x0a40_0000u32 + u as u32))?;
        }
        update_map(
            &obj,
            "fwd",
            &0u32,
            &FwdCfg {
                ifindex: ports[1].ifindex,
                own_mac: ports[1].own_mac,
                peer_mac: ports[1].peer_mac,
            },
        )?;
        let max_size = gen_sizes(row).iter().copied().max().unwrap_or(64);
        for rep in 0..reps {
            for what in &order {
                check_stop(stop)?;
                let u0 = ports[0].ifindex;
                // The program in the UPF's place on u0: the baseline forwarder, or the UPF.
                let upf = match what {
                    None => {
                        let fwd = bench_prog(&obj, "atsss_fwd")?;
                        bpf(
                            || "attach the baseline".into(),
                            Xdp::new(fwd.as_fd()).attach(u0 as i32, XdpFlags::DRV_MODE),
                        )?;
                        None
                    }
                    Some(kind) => {
                        let upf_table = table(*kind, n_ues);
                        let t = tables(ports.clone(), upf_table.clone());
                        let mut plane = AtsssPlane::load(&t)?;
                        set_share(&plane, &upf_table, *kind, row.preferred)?;
                        plane.attach(u0)?;
                        Some(plane)
                    }
                };
                let run = veth_run(&b, &obj, g_if, max_size, seconds);
                match what {
                    None => {
                        let _ = Xdp::new(bench_prog(&obj, "atsss_fwd")?.as_fd()).detach(u0 as i32, XdpFlags::DRV_MODE);
                    }
                    Some(_) => drop(upf),
                }
                let mut r = run?;
                r.what = what.map_or("baseline (atsss_fwd)".to_string(), |k| k.name().to_string());
                r.repetition = rep;
                out.push(r);
            }
        }
        Ok(())
    })
    .map_err(NetnsError::Ns)??;
    Ok(out)
}

/// One run: u0's NAPI threaded and pinned to CPU 1, the generator on CPU 0 for `seconds`.
fn veth_run(b: &VethBench, obj: &Object, g_if: u32, max_size: u16, seconds: f64) -> Result<VethRun, NetnsError> {
    let u0 = b.dev("u0");
    b.ns.exec("sh", &["-c", &format!("echo 1 > /sys/class/net/{u0}/threaded")])
        .map_err(NetnsError::Ns)?;
    let threads = napi_threads(&u0);
    if threads.is_empty() {
        return Err(plane_err(format!("no threaded NAPI for {u0}")));
    }
    for t in &threads {
        pin(*t, 1)?;
    }
    pin(0, 0)?;
    let gen = bench_prog(obj, "atsss_gen")?;
    let frame = vec![0u8; usize::from(max_size)];
    let sink =
        |o: &Object| -> Result<u64, NetnsError> { Ok(percpu_sum(o, "sink_stats", 0, |t: &mut u64, v| *t += v)?) };
    let delivered0 = sink(obj)?;
    let c1 = cpu_times(1)?;
    let napi = |ts: &[i32]| -> Result<f64, NetnsError> { ts.iter().map(|t| thread_cpu_s(Some(*t))).sum() };
    let napi0 = napi(&threads)?;
    let gen0 = thread_cpu_s(None)?;
    let t0 = Instant::now();
    let mut generated = 0u64;
    let chunk = 2_000_000u32;
    while t0.elapsed().as_secs_f64() < seconds {
        let mut ctx = [0u8; 24];
        ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        ctx[12..16].copy_from_slice(&g_if.to_ne_bytes());
        let input = ProgramInput {
            context_in: Some(&mut ctx),
            data_in: Some(&frame),
            repeat: chunk,
            flags: LIVE_FRAMES,
            ..Default::default()
        };
        gen.test_run(input)
            .map_err(|e| plane_err(format!("live frames: {e}")))?;
        generated += u64::from(chunk);
    }
    // Let the rings drain.
    std::thread::sleep(Duration::from_millis(50));
    let wall = t0.elapsed().as_secs_f64();
    let d1 = cpu_times(1)?;
    let napi_s = napi(&threads)? - napi0;
    let generator_s = thread_cpu_s(None)? - gen0;
    let delivered = sink(obj)? - delivered0;
    let softirq = d1.2 - c1.2;
    b.ns.exec("sh", &["-c", &format!("echo 0 > /sys/class/net/{u0}/threaded")])
        .map_err(NetnsError::Ns)?;
    let upf_s = napi_s + softirq;
    Ok(VethRun {
        what: String::new(),
        repetition: 0,
        wall_s: wall,
        generated,
        delivered,
        mpps_wall: delivered as f64 / wall / 1e6,
        napi_thread_s: napi_s,
        cpu1_softirq_s: softirq,
        cpu1_user_s: d1.0 - c1.0,
        cpu1_system_s: d1.1 - c1.1,
        generator_s,
        mpps_per_cpu_s: if upf_s > 0.0 {
            delivered as f64 / upf_s / 1e6
        } else {
            0.0
        },
    })
}
