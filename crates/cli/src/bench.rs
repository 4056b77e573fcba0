//! `mpsched bench`: simulator events per second on a high-rate scenario, scheduler decisions
//! per second, and scenario 3b's wall time, measured in one process so their ratios compare.

use mpsched_core::packet::PacketMeta;
use mpsched_core::rng::SeededRandom;
use mpsched_core::sched::{benchmark_configs, Scheduler, SchedulerConfig};
use mpsched_scenario::{builtin, Scenario};
use mpsched_sim::experiment::high_rate_scenario;
use mpsched_sim::{SimOptions, Simulation};
use std::hint::black_box;
use std::time::Instant;

/// Arguments of `mpsched bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Simulated seconds of the high-rate scenario.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Rate of each of the two paths in the high-rate scenario.
    #[arg(long, default_value = "10Gbps")]
    rate: String,
    /// Decisions per scheduler in the decision benchmark.
    #[arg(long, default_value_t = 100_000_000)]
    decisions: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Benchmark the kernel data plane instead (root): each eBPF program's ns per packet under
    /// BPF_PROG_TEST_RUN, the Rust programs' decisions per second, and UDP / TCP throughput
    /// through namespaces with the kernel forwarding, the eBPF switch and (with the P4
    /// toolchain) BMv2's simple_switch, each routing and splitting, in one run.
    #[arg(long)]
    dataplane: bool,
    /// BPF_PROG_TEST_RUN repeats per program.
    #[arg(long, default_value_t = 1_000_000)]
    bpf_repeat: u32,
    /// Seconds of each iperf3 test (1 to 300; two tests per forwarding mode).
    #[arg(long, default_value_t = 5)]
    iperf_seconds: u32,
    /// Benchmark the ATSSS UPF instead (root; issue #32): its eBPF program under
    /// BPF_PROG_TEST_RUN in the slides' table (WRR, DWRR, RTTMon, CMon; each packet to a UE
    /// drawn at random) beside the smartNIC's figures, then its rate through real veths with a
    /// live-frames XDP generator, CPU time beside wall time.
    #[arg(long)]
    atsss: bool,
    /// UEs of state in the ATSSS benchmark (1 to 65 536).
    #[arg(long, default_value_t = 10_000)]
    atsss_ues: usize,
    /// Seconds of each run through veths in the ATSSS benchmark (0: no veth runs).
    #[arg(long, default_value_t = 3.0)]
    atsss_veth_seconds: f64,
    /// Repetitions of the ATSSS benchmark: of the table (each measures every cell once) and of
    /// the veth runs (each alternates the baseline and the four schedulers).
    #[arg(long, default_value_t = 3)]
    atsss_reps: u32,
}

/// `bench --atsss`: the table under BPF_PROG_TEST_RUN, then the veth rates.
fn atsss(a: &BenchArgs) -> anyhow::Result<()> {
    use mpsched_netns::programs::atsss::bench as ab;
    if !mpsched_netns::ns::is_root() {
        return Err(crate::UsageError("bench --atsss needs root (BPF_PROG_TEST_RUN, namespaces)".into()).into());
    }
    if !(1..=mpsched_core::upf::MAX_UES).contains(&a.atsss_ues) {
        return Err(crate::UsageError(format!(
            "--atsss-ues {}: 1 to {}",
            a.atsss_ues,
            mpsched_core::upf::MAX_UES
        ))
        .into());
    }
    if !(0.0..=600.0).contains(&a.atsss_veth_seconds) {
        return Err(crate::UsageError("--atsss-veth-seconds: 0 to 600".into()).into());
    }
    let stop = crate::stop_flag();
    if !(1..=50).contains(&a.atsss_reps) {
        return Err(crate::UsageError("--atsss-reps: 1 to 50".into()).into());
    }
    let table = ab::test_run_table(a.atsss_ues, a.bpf_repeat, a.atsss_reps, &stop)?;
    let mut veth = Vec::new();
    if a.atsss_veth_seconds > 0.0 {
        for (i, row) in ab::ROWS.iter().enumerate() {
            // Five runs per repetition and row: say where it is, on stderr.
            eprintln!(
                "bench --atsss: through veths, row {} of {} ({}), {} x 5 runs of {} s",
                i + 1,
                ab::ROWS.len(),
                row.name,
                a.atsss_reps,
                a.atsss_veth_seconds
            );
            let runs = ab::veth_rate(a.atsss_ues, row, a.atsss_veth_seconds, a.atsss_reps, &stop)?;
            veth.push((row.name, runs));
        }
    }
    if a.json {
        let v = serde_json::json!({ "test_run": table, "veth": veth });
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    outln!(
        "ATSSS UPF (atsss.bpf.o, XDP) under BPF_PROG_TEST_RUN: {} UEs, each packet to a UE drawn at random, {} runs per frame size, {} repetitions (load average {:.2} before, {:.2} after)",
        table.ues,
        table.repeat,
        table.repetitions,
        table.loadavg.0,
        table.loadavg.1
    );
    outln!("  Mpps per core, median / best of the repetitions [the smartNIC's, from the slides] (preferred share realised)");
    outln!(
        "  {:<14} {:>27} {:>27} {:>27} {:>27}",
        "test",
        "WRR",
        "DWRR",
        "RTTMon",
        "CMon"
    );
    for row in &ab::ROWS {
        let mut line = format!("  {:<14}", row.name);
        for c in table.cells.iter().filter(|c| c.row == row.name) {
            line += &format!(
                " {:>5.2} / {:>5.2} [{:.1}] ({:.3})",
                c.mpps_median, c.mpps_best, c.smartnic_mpps, c.preferred_share
            );
        }
        outln!("{line}");
    }
    outln!("  The UPF's own Mpps, median of the repetitions: each less its repetition's prologue run alone (the test run's loop included)");
    for row in &ab::ROWS {
        let mut line = format!("  {:<14}", row.name);
        for c in table.cells.iter().filter(|c| c.row == row.name) {
            line += &format!(" {:>27.2}", c.mpps_upf_median);
        }
        outln!("{line}");
    }
    outln!("  Over the harness alone (its Mpps without the UPF, the same repetition): the figure to compare across machines");
    for row in &ab::ROWS {
        let mut line = format!("  {:<14}", row.name);
        for c in table.cells.iter().filter(|c| c.row == row.name) {
            line += &format!(" {:>27.3}", c.per_harness_median);
        }
        outln!("{line}");
    }
    outln!(
        "  mixed rows: frames of {} bytes; the benchmark's prologue (undo, draw a UE, redo): {} ns/packet, part of every figure above the UPF's own",
        ab::MIX.iter().map(|(s, w)| format!("{s} x {w}")).collect::<Vec<_>>().join(", "),
        table.prologue_ns.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ")
    );
    if !veth.is_empty() {
        print_veth_table(&veth)?;
    }
    for (row, runs) in &veth {
        outln!(
            "Through veths, {row}: generator (XDP live frames) on CPU 0 -> veth -> UPF at XDP, its NAPI thread on CPU 1 -> veth -> sink ({} s a run)",
            a.atsss_veth_seconds
        );
        outln!(
            "  {:<22} {:>4} {:>7} {:>10} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9}",
            "program",
            "rep",
            "wall s",
            "delivered",
            "Mpps",
            "napi s",
            "si s",
            "cpu1 us",
            "cpu1 sy",
            "gen s",
            "Mpps/cpu"
        );
        for r in runs {
            outln!(
                "  {:<22} {:>4} {:>7.2} {:>10} {:>6.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>9.2}",
                r.what,
                r.repetition,
                r.wall_s,
                r.delivered,
                r.mpps_wall,
                r.napi_thread_s,
                r.cpu1_softirq_s,
                r.cpu1_user_s,
                r.cpu1_system_s,
                r.generator_s,
                r.mpps_per_cpu_s
            );
        }
    }
    Ok(())
}

/// The veth rates in the slides' layout: per row and program, the median over the
/// repetitions of the packets delivered per second of the UPF side's CPU time.
fn print_veth_table(veth: &[(&str, Vec<mpsched_netns::programs::atsss::bench::VethRun>)]) -> anyhow::Result<()> {
    use mpsched_netns::programs::atsss::bench as ab;
    outln!("Through veths: Mpps per UPF-side CPU-second (its NAPI thread + CPU 1's softirq), median of the repetitions [the smartNIC's, from the slides]");
    outln!(
        "  {:<14} {:>9} {:>13} {:>13} {:>13} {:>13}",
        "test",
        "baseline",
        "WRR",
        "DWRR",
        "RTTMon",
        "CMon"
    );
    for (r, (row, runs)) in veth.iter().enumerate() {
        let median_of = |what: &str| {
            let v: Vec<f64> = runs
                .iter()
                .filter(|x| x.what == what || (what == "baseline" && x.what.starts_with("baseline")))
                .map(|x| x.mpps_per_cpu_s)
                .collect();
            ab::median(&v)
        };
        let mut line = format!("  {:<14} {:>9.2}", row, median_of("baseline"));
        for (k, kind) in ab::KINDS.iter().enumerate() {
            let nic = ab::SMARTNIC_MPPS.get(r).map_or(f64::NAN, |x| x[k]);
            line += &format!(" {:>7.2} [{nic:.1}]", median_of(kind.name()));
        }
        outln!("{line}");
    }
    Ok(())
}

fn dataplane(a: &BenchArgs) -> anyhow::Result<()> {
    use mpsched_netns::backend::NetnsError;
    let max = mpsched_netns::bench::MAX_IPERF_SECONDS;
    if !(1..=max).contains(&a.iperf_seconds) {
        return Err(crate::UsageError(format!(
            "--iperf-seconds {}: expected 1 to {max} seconds per iperf3 test (iperf3 takes 0 as \"run for ever\")",
            a.iperf_seconds
        ))
        .into());
    }
    if !mpsched_netns::ns::is_root() {
        return Err(crate::UsageError("bench --dataplane needs root (BPF_PROG_TEST_RUN, namespaces)".into()).into());
    }
    // SIGINT / SIGTERM set it; the benchmark then removes its namespaces, stops its iperf3
    // processes and switches, and exits with 130 as an interrupted kernel run does.
    let stop = crate::stop_flag();
    let interrupted = || NetnsError::Interrupted("(none made at this point)".into());
    let costs = mpsched_netns::bench::program_costs(a.bpf_repeat, &stop)?;
    let mut decisions: Vec<(String, f64)> = Vec::new();
    for (n, c, p) in benchmark_configs().iter() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(interrupted().into());
        }
        decisions.push((n.to_string(), decisions_per_s(c, *p, a.decisions.min(20_000_000))));
    }
    let mut planes: Vec<std::sync::Arc<dyn mpsched_netns::switchplane::SwitchPlanes>> =
        vec![std::sync::Arc::new(mpsched_netns::switchplane::EbpfPlanes)];
    match mpsched_bmv2::toolchain::find().and_then(|_| mpsched_bmv2::toolchain::program_json()) {
        Ok(_) => planes.push(std::sync::Arc::new(mpsched_bmv2::plane::Bmv2Planes)),
        Err(e) => errln!("BMv2 left out of the throughput test: {e}"),
    }
    let paths = mpsched_netns::bench::path_throughput(a.iperf_seconds, &planes, &stop)?;
    // HULA's and MP-HULA's P4 program on BMv2: ns per frame of each kind (with the toolchain).
    let hula_costs = match planes.len() > 1 {
        true => mpsched_bmv2::hula::costs(HULA_BMV2_FRAMES).unwrap_or_else(|e| {
            errln!("BMv2 HULA costs left out: {e}");
            Vec::new()
        }),
        false => Vec::new(),
    };
    // vq-wrr's P4 program on BMv2 beside mpsched.p4 with the same frame.
    let vqwrr_costs = match planes.len() > 1 {
        true => mpsched_bmv2::vqwrr::costs(HULA_BMV2_FRAMES).unwrap_or_else(|e| {
            errln!("BMv2 vq-wrr costs left out: {e}");
            Vec::new()
        }),
        false => Vec::new(),
    };
    if a.json {
        let v = serde_json::json!({
            "ebpf": costs,
            "rust_decisions_per_s": decisions,
            "throughput": paths,
            "bmv2_hula_ns_per_frame": hula_costs,
            "bmv2_vqwrr_ns_per_frame": vqwrr_costs,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    outln!(
        "eBPF programs under BPF_PROG_TEST_RUN ({} repeats each, 64-byte frames):",
        a.bpf_repeat
    );
    for c in &costs {
        outln!("  {:<16} {:>7.1} ns/packet  {:>6.2} Mpps", c.name, c.ns_per_pkt, c.mpps);
    }
    outln!("Rust programs (the reference), decisions per second:");
    for (n, d) in &decisions {
        outln!("  {n:<16} {:>7.1} M decisions/s  {:>6.2} ns/decision", d / 1e6, 1e9 / d);
    }
    outln!(
        "Throughput src -> sw -> dst through namespaces ({} s iperf3 each):",
        a.iperf_seconds
    );
    let base = paths.first().map(|p| (p.udp_mbps, p.tcp_mbps)).unwrap_or((1.0, 1.0));
    for p in &paths {
        outln!(
            "  {:<30} UDP {:>8.0} Mbit/s {:>7.1} kpps ({:.3}x)   TCP {:>8.0} Mbit/s ({:.3}x)",
            p.mode,
            p.udp_mbps,
            p.udp_kpps,
            p.udp_mbps / base.0.max(1e-9),
            p.tcp_mbps,
            p.tcp_mbps / base.1.max(1e-9)
        );
    }
    if !hula_costs.is_empty() {
        outln!("HULA / MP-HULA on BMv2 (hula.p4, {HULA_BMV2_FRAMES} frames each, wall time per frame):");
        for (what, ns) in &hula_costs {
            outln!("  {what:<48} {:>9.0} ns/frame  {:>6.1} kpps", ns, 1e6 / ns);
        }
    }
    if !vqwrr_costs.is_empty() {
        outln!("vq-wrr on BMv2 (vqwrr.p4, {HULA_BMV2_FRAMES} frames each, wall time per frame):");
        for (what, ns) in &vqwrr_costs {
            outln!("  {what:<48} {:>9.0} ns/frame  {:>6.1} kpps", ns, 1e6 / ns);
        }
    }
    Ok(())
}

/// Frames per kind in the BMv2 HULA and vq-wrr rows of `bench --dataplane`.
const HULA_BMV2_FRAMES: usize = 2000;

/// One run of `sc`, timed: the engine's wall time alone (building the simulation and
/// collecting results are not part of an event rate).
struct Timed {
    out: mpsched_sim::RunOutput,
    engine_s: f64,
}

fn timed(sc: &Scenario) -> anyhow::Result<Timed> {
    let mut sim = Simulation::new(sc, &SimOptions::with_seed(1))?;
    let t = Instant::now();
    sim.run_until(sim.end_ps());
    let engine_s = t.elapsed().as_secs_f64();
    Ok(Timed {
        out: sim.finish()?,
        engine_s,
    })
}

/// Operations of the reference micro-benchmark ([`reference_ops_per_s`]).
const REFERENCE_OPS: u64 = 20_000_000;
/// Entries the reference's queue holds: about a data-centre run's pending events, so that the
/// reference, like the engine, works out of the caches rather than in registers.
const REFERENCE_QUEUE: usize = 1 << 16;

/// A fixed micro-benchmark measured beside the simulator in the same run, so that its event
/// rate can be stated as a ratio another machine can check: `REFERENCE_OPS` steps of a binary
/// heap of `REFERENCE_QUEUE` (time, id) entries, each popping the earliest and pushing it back
/// a pseudo-random time later (an event loop's work without the events), with a read and a
/// write of a table of the same size. The same work whatever the build or the machine;
/// operations per second of wall time.
pub fn reference_ops_per_s() -> f64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> = (0..REFERENCE_QUEUE as u32)
        .map(|i| Reverse((next() >> 40, i)))
        .collect();
    let mut table = vec![0u64; REFERENCE_QUEUE];
    let t = Instant::now();
    for _ in 0..REFERENCE_OPS {
        let Reverse((at, id)) = heap.pop().expect("the heap is never empty");
        let slot = &mut table[id as usize];
        *slot = slot.wrapping_add(at);
        heap.push(Reverse((at + (next() >> 44) + 1, id)));
    }
    black_box(&table);
    REFERENCE_OPS as f64 / t.elapsed().as_secs_f64()
}

fn decisions_per_s(config: &SchedulerConfig, n_paths: usize, count: u64) -> f64 {
    let mut s = Scheduler::new(config, n_paths, Box::new(SeededRandom::new(1))).expect("valid bench config");
    let meta = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 40_000, 5201, 1512);
    let t = Instant::now();
    for _ in 0..count {
        black_box(s.select(black_box(&meta)));
    }
    count as f64 / t.elapsed().as_secs_f64()
}

pub fn bench(a: BenchArgs) -> anyhow::Result<()> {
    if a.atsss {
        return atsss(&a);
    }
    if a.dataplane {
        return dataplane(&a);
    }
    let rate_bps =
        mpsched_scenario::units::parse_rate_bps(&a.rate).map_err(|e| crate::UsageError(format!("--rate: {e}")))?;
    let sc = high_rate_scenario(rate_bps, a.seconds)?;
    // The reference on either side of the simulator's run: a machine that changes speed
    // between them shows as two different figures.
    let reference_before = reference_ops_per_s();
    let Timed { out, engine_s: wall } = timed(&sc)?;
    let events_per_s = out.events as f64 / wall;
    let reference_after = reference_ops_per_s();
    let reference = (reference_before + reference_after) / 2.0;
    let delivered = out.figures.flows[0].delivered_mbps;

    let (path, text) = builtin::find(builtin::DEFAULT).expect("built in");
    let s3b = Scenario::from_toml(text, path)?.with_variant("DWRR")?;
    let Timed {
        out: out3b,
        engine_s: wall_3b,
    } = timed(&s3b)?;

    // Transports: the AFMT paper's three-subtunnel scenario (30 s), and one TCP flow through a
    // 10 Gbit/s bottleneck.
    let (path, text) = builtin::find("afmt/three-subtunnels").expect("built in");
    let afmt = Scenario::from_toml(text, path)?.with_variant("AFMT")?;
    let afmt_s = afmt.duration_ps as f64 / 1e12;
    let Timed {
        out: out_afmt,
        engine_s: wall_afmt,
    } = timed(&afmt)?;
    let (path, text) = builtin::find("tcp/single-flow").expect("built in");
    let mut tcp10g = Scenario::from_toml(text, path)?.with_variant("cubic-10M")?;
    for l in &mut tcp10g.links {
        l.rate_bps = if l.name.as_deref() == Some("bottleneck") {
            10_000_000_000
        } else {
            40_000_000_000
        };
    }
    let tcp_s = a.seconds.min(10);
    let tcp10g = tcp10g.scaled_to(tcp_s * 1_000_000_000_000);
    let Timed {
        out: out_tcp,
        engine_s: wall_tcp,
    } = timed(&tcp10g)?;
    let tcp_gbps = out_tcp.figures.flows[0].delivered_mbps / 1e3;

    let configs = benchmark_configs();
    let decisions: Vec<(String, f64)> = configs
        .iter()
        .map(|(n, c, p)| (n.to_string(), decisions_per_s(c, *p, a.decisions)))
        .collect();

    if a.json {
        let v = serde_json::json!({
            "high_rate": {
                "scenario": sc.title, "simulated_s": a.seconds, "events": out.events, "wall_s": wall,
                "events_per_s": events_per_s, "delivered_mbps": delivered,
                "sim_s_per_wall_s": a.seconds as f64 / wall,
                "reference_ops_per_s": [reference_before, reference_after],
                "events_per_reference_op": events_per_s / reference,
            },
            "scenario_3b_dwrr": { "simulated_s": 100, "events": out3b.events, "wall_s": wall_3b },
            "afmt_three_subtunnels": { "simulated_s": afmt_s, "events": out_afmt.events, "wall_s": wall_afmt,
                "sim_s_per_wall_s": afmt_s / wall_afmt },
            "tcp_10gbps": { "simulated_s": tcp_s, "events": out_tcp.events, "wall_s": wall_tcp,
                "sim_s_per_wall_s": tcp_s as f64 / wall_tcp, "goodput_gbps": tcp_gbps },
            "decisions_per_s": decisions.iter().map(|(n, d)| (n.clone(), serde_json::Value::from(*d))).collect::<serde_json::Map<_, _>>(),
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    outln!("simulator (engine time only: building the network and collecting results are apart)");
    outln!("{} for {} s simulated:", sc.title, a.seconds);
    outln!(
        "  {} events in {:.2} s wall: {:.1} M events/s ({:.2} simulated s per wall s; flow delivered {:.0} Mbit/s)",
        out.events,
        wall,
        events_per_s / 1e6,
        a.seconds as f64 / wall,
        delivered
    );
    outln!(
        "  reference (a fixed heap micro-benchmark, before and after): {:.1} / {:.1} M ops/s; the simulator {:.3} events per reference op",
        reference_before / 1e6,
        reference_after / 1e6,
        events_per_s / reference
    );
    outln!(
        "scenario 3b (DWRR), 100 s simulated: {} events in {:.3} s wall",
        out3b.events,
        wall_3b
    );
    outln!(
        "AFMT, three subtunnels, {afmt_s} s simulated: {} events in {:.3} s wall: {:.1} simulated s per wall s ({:.1} M events/s)",
        out_afmt.events,
        wall_afmt,
        afmt_s / wall_afmt,
        out_afmt.events as f64 / wall_afmt / 1e6
    );
    outln!(
        "one CUBIC flow through 10 Gbit/s, {tcp_s} s simulated: {} events in {:.2} s wall: {:.2} simulated s per wall s \
         ({:.1} M events/s; goodput {:.2} Gbit/s)",
        out_tcp.events,
        wall_tcp,
        tcp_s as f64 / wall_tcp,
        out_tcp.events as f64 / wall_tcp / 1e6,
        tcp_gbps
    );
    outln!("scheduler decisions ({} each):", a.decisions);
    for (n, d) in &decisions {
        outln!("  {n:<14} {:>8.1} M decisions/s  {:>6.2} ns/decision", d / 1e6, 1e9 / d);
    }
    Ok(())
}
