//! DCQCN on the kernel, measured against the simulator (#30).
//!
//! Two UDP flows that may each send at 9.7 Mbit/s share a 10 Mbit/s port that marks ECT
//! packets CE above 11 waiting, with a 200-packet buffer (`dcqcn-two-senders.toml`, the
//! simulator's case of `crates/sim/tests/pmqecn.rs`). At a constant rate (iperf3) the port
//! overflows; paced by DCQCN (`mpsched trafficgen paced-send`, notified by its receiver's CNPs
//! for the datagrams S1's eBPF marker marked CE) the flows must slow to share it without that
//! loss. The kernel has no netem here, so the runs go without propagation delay
//! (`ignore_delay`), and the simulator runs that scenario too (and the one with its delays, the
//! earlier note's figures). Every figure is printed; the bounds are the behaviour's, not the
//! simulator's numbers.
//!
//! An interrupted run must leave no paced process and no namespace behind.
//!
//! The backend starts the paced ends as `<this binary> trafficgen paced-send|paced-recv`
//! (`current_exe`): this test's `main` answers those two roles as `mpsched` does.
//!
//! Needs root, tc and iperf3; without them the tests are reported ignored with the reason, and
//! under CI=true they fail instead.

use mpsched_netns::backend::{new_run_id, run, NetnsError, NetnsOptions, NetnsRun, NS_PREFIX};
use mpsched_netns::paced;
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};
use std::sync::atomic::Ordering;
use std::time::Duration;

const SCENARIO: &str = include_str!("dcqcn-two-senders.toml");
/// One frame on the wire for the scenario's 1 470-byte datagrams.
const FRAME_BYTES: u64 = 1512;

/// The scenario paced by DCQCN, or (`dcqcn` false) at a constant rate, flow b then on its own
/// port (each iperf3 flow has its own server; paced receivers share one).
fn scenario(dcqcn: bool) -> Scenario {
    let text = if dcqcn {
        SCENARIO.to_string()
    } else {
        SCENARIO
            .replace(
                "[flow.rate_control]\ncc = \"dcqcn\"\nincrease_period = \"1ms\"\nalpha_period = \"1ms\"\n",
                "",
            )
            .replace("name = \"b\"\n", "name = \"b\"\ndst_port = 5202\n")
    };
    let sc = Scenario::from_toml(&text, "dcqcn-two-senders.toml").expect("the scenario parses");
    assert_eq!(sc.flows.iter().any(|f| f.rate_control.is_some()), dcqcn);
    sc
}

fn simulate(sc: &Scenario) -> RunFigures {
    let mut sim = Simulation::new(sc, &SimOptions::with_seed(sc.seed)).expect("the simulation");
    let end = sim.end_ps();
    sim.run_until(end);
    sim.finish().expect("the simulation's results").figures
}

/// What a run shows: loss over both flows (lost over sent, %), their goodput together
/// (Mbit/s), the bottleneck's deepest queue (packets).
struct Shape {
    loss_pct: f64,
    total_mbps: f64,
    max_queue_pkts: u64,
}

fn loss_over_flows(r: &RunFigures) -> f64 {
    let sent: u64 = r.flows.iter().map(|f| f.sent_pkts).sum();
    let delivered: u64 = r.flows.iter().map(|f| f.delivered_pkts).sum();
    100.0 * sent.saturating_sub(delivered) as f64 / sent.max(1) as f64
}

fn sim_shape(r: &RunFigures) -> Shape {
    Shape {
        loss_pct: loss_over_flows(r),
        total_mbps: r.flows.iter().map(|f| f.delivered_mbps).sum(),
        max_queue_pkts: r.counters["queues"]["S1->S2.max_depth_pkts"],
    }
}

fn kernel_shape(k: &NetnsRun) -> Shape {
    // S1's port towards S2 is the only marking port: the one queue tracked.
    let max_bytes = k.queue_tracking.iter().map(|q| q.4).max().unwrap_or(0);
    Shape {
        loss_pct: loss_over_flows(&k.figures),
        total_mbps: k.figures.flows.iter().map(|f| f.delivered_mbps).sum(),
        max_queue_pkts: max_bytes.div_ceil(FRAME_BYTES),
    }
}

fn kernel(sc: &Scenario) -> NetnsRun {
    let opts = NetnsOptions {
        ignore_delay: true,
        track_queues: Some(Duration::from_millis(10)),
        ..NetnsOptions::default()
    };
    let run_id = new_run_id();
    let k = run(sc, &run_id, &opts).expect("the kernel run");
    assert!(own_namespaces(&run_id).is_empty(), "the run removed its namespaces");
    k
}

fn own_namespaces(run_id: &str) -> Vec<String> {
    mpsched_netns::ns::list()
        .into_iter()
        .filter(|n| n.starts_with(&format!("{NS_PREFIX}{run_id}-")))
        .collect()
}

fn show(what: &str, s: &Shape, r: &RunFigures) {
    let flows: Vec<String> = r
        .flows
        .iter()
        .map(|f| {
            format!(
                "{} {:.3} Mbit/s, loss {:.2} %, OWD {}",
                f.id,
                f.delivered_mbps,
                f.loss_pct.unwrap_or(f64::NAN),
                f.mean_owd_ms.map_or("-".into(), |d| format!("{d:.3} ms"))
            )
        })
        .collect();
    println!(
        "{what:<34} loss {:6.2} %, {:.3} Mbit/s together, deepest queue {:3} pkts; {}",
        s.loss_pct,
        s.total_mbps,
        s.max_queue_pkts,
        flows.join("; ")
    );
}

fn dcqcn_senders_converge_without_the_loss_a_constant_rate_sender_sees() {
    let (constant, dcqcn) = (scenario(false), scenario(true));
    let sim_delayed = simulate(&dcqcn);
    let sim_constant = simulate(&constant.without_propagation_delay());
    let sim_dcqcn = simulate(&dcqcn.without_propagation_delay());
    let k_constant = kernel(&constant);
    let k_dcqcn = kernel(&dcqcn);
    let shapes = [
        ("simulator, delays, DCQCN", sim_shape(&sim_delayed), &sim_delayed),
        ("simulator, constant rate", sim_shape(&sim_constant), &sim_constant),
        ("simulator, DCQCN", sim_shape(&sim_dcqcn), &sim_dcqcn),
        (
            "kernel, constant rate (iperf3)",
            kernel_shape(&k_constant),
            &k_constant.figures,
        ),
        ("kernel, DCQCN (paced)", kernel_shape(&k_dcqcn), &k_dcqcn.figures),
    ];
    for (what, s, r) in &shapes {
        show(what, s, r);
    }
    let rc = &k_dcqcn.figures.counters["rate-control"];
    let marked = k_dcqcn.figures.counters["S1"]
        .iter()
        .find(|(k, _)| k.ends_with(".marked"));
    println!("kernel, DCQCN: {rc:?}, S1 {marked:?}");
    println!("simulator, DCQCN: {:?}", sim_dcqcn.counters.get("rate-control"));
    let (kc, kd) = (&shapes[3].1, &shapes[4].1);
    assert!(
        kc.loss_pct > 20.0 && kc.max_queue_pkts >= 190,
        "two constant 9.7 Mbit/s senders overflow the 200-packet port"
    );
    assert!(
        marked.is_some_and(|(_, &n)| n > 0),
        "S1's marker marked the ECT datagrams CE"
    );
    for f in ["a", "b"] {
        let cnps = rc[&format!("{f}.cnps")];
        assert!(cnps > 0, "flow {f}'s receiver sent CNPs");
        assert_eq!(
            rc[&format!("{f}.notifications")],
            cnps,
            "flow {f}'s sender took every CNP"
        );
    }
    assert!(kd.loss_pct < 1.0, "DCQCN loses {:.2} %", kd.loss_pct);
    assert!(kd.max_queue_pkts < 100, "DCQCN's queue reached {}", kd.max_queue_pkts);
    assert!(
        kd.total_mbps > 7.0,
        "and keeps the port busy: {:.3} Mbit/s",
        kd.total_mbps
    );
    let columns = &k_dcqcn.series.columns;
    for c in ["a_mbps", "a_loss_pct", "a_owd_ms", "a_rate_mbps", "b_rate_mbps"] {
        assert!(columns.iter().any(|x| x == c), "column {c} in {columns:?}");
    }
}

/// Processes running a paced end (this binary's or mpsched's), by pid.
fn paced_processes() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd);
            cmd.contains("trafficgen\0paced-")
        })
        .collect()
}

fn an_interrupted_paced_run_leaves_no_process_or_namespace() {
    let sc = scenario(true);
    let opts = NetnsOptions {
        ignore_delay: true,
        ..NetnsOptions::default()
    };
    let stop = opts.stop.clone();
    let run_id = new_run_id();
    let seen = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            // Stop once the paced ends run (SIGINT's handler sets this flag).
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            let mut seen = Vec::new();
            while seen.len() < 4 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
                seen = paced_processes();
            }
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, Ordering::Relaxed);
            seen
        });
        let r = run(&sc, &run_id, &opts);
        assert!(matches!(r, Err(NetnsError::Interrupted(_))), "{:?}", r.err());
        watcher.join().expect("the watcher")
    });
    println!("paced processes while running: {seen:?}");
    assert_eq!(seen.len(), 4, "two senders and two receivers ran");
    assert!(own_namespaces(&run_id).is_empty(), "no namespace left");
    assert_eq!(paced_processes(), Vec::<u32>::new(), "no paced process left");
}

/// `<binary> trafficgen paced-send|paced-recv`: the roles the backend starts, as `mpsched`
/// answers them. None: not asked for one.
fn paced_role() -> Option<i32> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some("trafficgen") {
        return None;
    }
    let mut out = std::io::stdout().lock();
    let input = std::io::stdin().lock();
    let r = match args.get(2).map(String::as_str) {
        Some("paced-send") => paced::read_config(input)
            .map_err(std::io::Error::other)
            .and_then(|c| paced::run_sender(c, &mut out)),
        Some("paced-recv") => paced::read_config(input)
            .map_err(std::io::Error::other)
            .and_then(|c| paced::run_receiver(c, &mut out)),
        other => Err(std::io::Error::other(format!("no role {other:?} here"))),
    };
    Some(match r {
        Ok(()) => 0,
        Err(e) => {
            use std::io::Write;
            let line = serde_json::to_string(&paced::Report::Error { message: e.to_string() }).unwrap_or_default();
            let _ = writeln!(out, "{line}");
            1
        }
    })
}

fn main() {
    if let Some(code) = paced_role() {
        std::process::exit(code);
    }
    let missing = if !mpsched_netns::ns::is_root() {
        Some("they need root (namespaces, eBPF, tc)".to_string())
    } else {
        mpsched_testkit::missing_tool("iperf3", &["--version"]).or_else(|| mpsched_testkit::missing_tool("tc", &["-V"]))
    };
    let tests: &[(&str, fn())] = &[
        (
            "dcqcn_senders_converge_without_the_loss_a_constant_rate_sender_sees",
            dcqcn_senders_converge_without_the_loss_a_constant_rate_sender_sees,
        ),
        (
            "an_interrupted_paced_run_leaves_no_process_or_namespace",
            an_interrupted_paced_run_leaves_no_process_or_namespace,
        ),
    ];
    mpsched_testkit::run_or_skip(tests, missing, "kernel DCQCN").exit();
}
