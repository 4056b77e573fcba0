//! The kernel data plane end to end: every conformance vector agrees between the Rust and eBPF
//! programs; through the binary, shortened scenarios 1, 2 and 3b agree with the simulator within
//! 10 %, DWRR moves flow1 off path2 on the kernel, and nothing is left behind after a normal
//! run, an interrupted run or a failed one.
//!
//! These tests need root. Without it they are reported as ignored, with the reason and their
//! number, except under CI=true, where each of them fails instead (`common::run_or_skip`).

mod common;

use common::{mpsched, ok};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Kernel runs share the machine's CPU: one at a time, so their timing stays honest.
static SERIAL: Mutex<()> = Mutex::new(());

/// The root-only tests of this file.
const TESTS: &[(&str, fn())] = &[
    (
        "every_vector_agrees_with_the_ebpf_programs",
        every_vector_agrees_with_the_ebpf_programs,
    ),
    (
        "table1_on_the_kernel_strict_priority_starves_the_low_class_and_vq_wrr_shares_the_port",
        table1_on_the_kernel_strict_priority_starves_the_low_class_and_vq_wrr_shares_the_port,
    ),
    (
        "scenario1_dcqcn_and_tcn_mark_on_the_kernel_and_hold_the_queue",
        scenario1_dcqcn_and_tcn_mark_on_the_kernel_and_hold_the_queue,
    ),
    (
        "scenario1_pmqecn_and_p4qcn_send_their_feedback_on_the_kernel",
        scenario1_pmqecn_and_p4qcn_send_their_feedback_on_the_kernel,
    ),
    (
        "scenarios_1_and_2_agree_with_the_simulator_within_10_percent",
        scenarios_1_and_2_agree_with_the_simulator_within_10_percent,
    ),
    (
        "tcp_flows_agree_with_the_simulator_within_10_percent",
        tcp_flows_agree_with_the_simulator_within_10_percent,
    ),
    (
        "scenario_3b_dwrr_moves_flow1_off_path2_on_the_kernel",
        scenario_3b_dwrr_moves_flow1_off_path2_on_the_kernel,
    ),
    (
        "a_fat_tree_runs_on_the_kernel_with_ecmp_over_every_uplink",
        a_fat_tree_runs_on_the_kernel_with_ecmp_over_every_uplink,
    ),
    (
        "feedback_forged_by_a_host_is_not_counted",
        feedback_forged_by_a_host_is_not_counted,
    ),
    (
        "nothing_is_left_after_a_failed_or_interrupted_run_and_runs_do_not_collide",
        nothing_is_left_after_a_failed_or_interrupted_run_and_runs_do_not_collide,
    ),
    (
        "after_sigkill_the_next_run_warns_and_clean_leaves_nothing",
        after_sigkill_the_next_run_warns_and_clean_leaves_nothing,
    ),
    (
        "compare_shows_loss_and_path_rates_and_writes_csv_and_png",
        compare_shows_loss_and_path_rates_and_writes_csv_and_png,
    ),
    (
        "propagation_delay_needs_netem_or_ignore_delay",
        propagation_delay_needs_netem_or_ignore_delay,
    ),
    (
        "strict_priority_ports_run_and_say_how_they_are_built",
        strict_priority_ports_run_and_say_how_they_are_built,
    ),
    (
        "a_workload_runs_on_the_kernel_with_the_traffic_generator",
        a_workload_runs_on_the_kernel_with_the_traffic_generator,
    ),
    (
        "link_failures_during_a_run_are_refused_on_the_kernel",
        link_failures_during_a_run_are_refused_on_the_kernel,
    ),
    (
        "a_bulk_flow_on_the_generators_port_is_refused",
        a_bulk_flow_on_the_generators_port_is_refused,
    ),
    (
        "the_kernels_mptcp_tokens_and_join_hmacs_are_ours",
        the_kernels_mptcp_tokens_and_join_hmacs_are_ours,
    ),
    (
        "a_multi_homed_host_sends_each_flow_by_its_interface_on_the_kernel",
        a_multi_homed_host_sends_each_flow_by_its_interface_on_the_kernel,
    ),
    (
        "mptcp_over_two_paths_agrees_with_the_simulator_within_10_percent",
        mptcp_over_two_paths_agrees_with_the_simulator_within_10_percent,
    ),
    (
        "every_kernel_command_leaves_nothing_on_any_stop_signal_at_any_stage",
        every_kernel_command_leaves_nothing_on_any_stop_signal_at_any_stage,
    ),
    (
        "dcqcn_paced_flows_run_through_the_binary_and_write_their_lines",
        dcqcn_paced_flows_run_through_the_binary_and_write_their_lines,
    ),
    (
        "bench_dataplane_refuses_iperf_seconds_it_cannot_end",
        bench_dataplane_refuses_iperf_seconds_it_cannot_end,
    ),
    (
        "the_kernels_time_series_has_no_doubled_last_row_and_paths_in_step_with_flows",
        the_kernels_time_series_has_no_doubled_last_row_and_paths_in_step_with_flows,
    ),
    (
        "transfers_start_on_time_on_the_kernel",
        transfers_start_on_time_on_the_kernel,
    ),
    (
        "compare_on_transfers_compares_completion_times_and_bytes_not_goodput",
        compare_on_transfers_compares_completion_times_and_bytes_not_goodput,
    ),
    (
        "simulator_only_tcp_settings_are_said_to_be_ignored_on_the_kernel",
        simulator_only_tcp_settings_are_said_to_be_ignored_on_the_kernel,
    ),
];

fn main() {
    let missing = (!mpsched_netns::ns::is_root()).then(|| "they need root (namespaces, eBPF)".to_string());
    common::clean_leftovers_of_earlier_runs();
    let conclusion = common::run_or_skip(TESTS, missing, "kernel");
    // Outputs stay for a look after a failure; after a pass they go.
    if !conclusion.has_failed() {
        remove_tmp_dirs();
    }
    conclusion.exit();
}

/// Remove the output folders this process's tests made under the temporary directory.
fn remove_tmp_dirs() {
    let prefix = format!("mpsched-netns-{}-", std::process::id());
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// The run namespaces this test binary answers for (`common::made_by_this_test`).
fn our_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("mps-") && common::made_by_this_test(n))
        .map(str::to_string)
        .collect()
}

fn assert_clean(when: &str) {
    let left = our_namespaces();
    assert!(left.is_empty(), "{when}: namespaces left behind: {left:?}");
    let pinned: Vec<_> = std::fs::read_dir("/sys/fs/bpf")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("mps"))
                .collect()
        })
        .unwrap_or_default();
    assert!(pinned.is_empty(), "{when}: pinned objects left behind: {pinned:?}");
}

/// A 60-second kernel run of scenario 3b, returned once its eight namespaces exist and its
/// traffic has started.
fn start_long_kernel_run(out: &str) -> std::process::Child {
    let child = mpsched()
        .args([
            "run",
            "s3b-dwrr-two-flows",
            "--backend",
            "netns",
            "--duration",
            "60",
            "--no-plot",
            "--out",
        ])
        .arg(tmp(out))
        .spawn()
        .unwrap();
    let t = Instant::now();
    while our_namespaces().len() < 8 && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
    }
    // Until its traffic runs: an iperf3 in one of its namespaces (not a setup command, which
    // comes and goes). A fixed wait was too short on a loaded machine (CI, 2026-11-25: killed
    // before any server started).
    let prefix = format!("mps-{}x", child.id());
    let running = || {
        our_namespaces().iter().filter(|n| n.starts_with(&prefix)).any(|n| {
            let o = Command::new("ip").args(["netns", "pids", n]).output().unwrap();
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .any(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "iperf3"))
        })
    };
    while !running() && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    child
}

/// When dropped during a panic: kills the run `pid` (it may still be alive) and runs
/// `mpsched clean`, which leaves a live run alone.
struct CleanIfPanicking {
    pid: u32,
}

impl Drop for CleanIfPanicking {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = Command::new("kill").args(["-KILL", &self.pid.to_string()]).status();
            std::thread::sleep(Duration::from_millis(200));
            let _ = mpsched().arg("clean").output();
        }
    }
}

fn tmp(name: &str) -> PathBuf {
    common::scratch("mpsched-netns", name)
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("compare.json")).unwrap()).unwrap()
}

/// `mpsched compare` on a shortened scenario: every flow within 10 % of the simulator.
fn compare_within_10pct(scenario: &str, duration: &str, variants: &[&str]) -> serde_json::Value {
    compare_within_10pct_over(scenario, duration, variants, 1)
}

/// The same, each backend's figures the mean of `repetitions` runs.
fn compare_within_10pct_over(scenario: &str, duration: &str, variants: &[&str], repetitions: u32) -> serde_json::Value {
    let dir = tmp(scenario);
    let mut cmd = mpsched();
    cmd.args(["compare", scenario, "--duration", duration, "--out"])
        .arg(&dir)
        .args(["--repetitions", &repetitions.to_string()]);
    for v in variants {
        cmd.args(["--variant", v]);
    }
    let out = cmd.output().unwrap();
    ok(&out);
    let v = summary(&dir);
    let mut checked = 0;
    for row in v["rows"].as_array().unwrap() {
        if row["kind"] == "flow" {
            checked += 1;
            let r = row["ratio"].as_f64().unwrap();
            assert!(
                (0.9..=1.1).contains(&r),
                "{scenario}: {row} is not within 10 % of the simulator"
            );
        }
    }
    assert!(checked > 0, "{scenario}: the comparison had no flow rows to check");
    assert_clean(scenario);
    v
}

fn scenarios_1_and_2_agree_with_the_simulator_within_10_percent() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    compare_within_10pct("s1-homogeneous", "10", &["RS", "WRR", "SP1"]);
    compare_within_10pct("s2-heterogeneous", "10", &["RS", "WRR"]);
}

fn tcp_flows_agree_with_the_simulator_within_10_percent() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    compare_within_10pct("tcp/single-flow", "8", &["reno-10M", "cubic-50M"]);
    // Two flows' shares of one bottleneck move between kernel runs, and the simulator's one
    // deterministic realisation of a 15 s run sits at the edge of the kernel's spread (tcp2 22.14
    // against 21.45-25.15 in six kernel runs). Over the scenario's 30 s six kernel runs all fell
    // within 0.93-1.05 of the simulator's; the mean of two is compared.
    compare_within_10pct_over("tcp/two-flows", "30", &["reno"], 2);
    let v = compare_within_10pct("tcp/ecn", "8", &["cubic"]);
    // Marking at 20 packets keeps the 100-packet queue from overflowing on the kernel too.
    let kernel = &v["netns"][0]["repetitions"][0]["flows"][0]["tcp"];
    assert!(
        kernel["retransmitted_segments"].as_u64().unwrap() < 20,
        "ECN should replace loss: {kernel}"
    );
    // What the kernel cannot run is refused, naming the flow. (Tunnels run on the kernel since
    // #31, with `mpsched tunnel` at their ends: crates/cli/tests/tunnel.rs.)
    for (scenario, variant, expect) in [("tcp/ecn", Some("dctcp"), "dctcp")] {
        let mut cmd = mpsched();
        cmd.args(["run", scenario, "--backend", "netns", "--out"])
            .arg(tmp("refused"));
        if let Some(v) = variant {
            cmd.args(["--variant", v]);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
        if expect == "dctcp" && available.split_whitespace().any(|c| c == "dctcp") {
            continue;
        }
        assert!(!out.status.success() && err.contains(expect), "{scenario}: {err}");
    }
    assert_clean("refusals");
}

fn scenario_3b_dwrr_moves_flow1_off_path2_on_the_kernel() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Cut at 40 s: flow 2, from 20 s, congests path2 for 20 s.
    let v = compare_within_10pct("s3b-dwrr-two-flows", "40", &["DWRR"]);
    let netns = &v["netns"][0];
    let counters = &netns["repetitions"][0]["counters"]["ap1"];
    assert!(
        counters["split0.feedback_rx"].as_u64().unwrap_or(0) > 0,
        "no feedback reached the splitter: {counters}"
    );
    // Results carry counters, not registers: each adjustment moves one unit off the congested
    // path2, so five or more take 32:16 past 3:1 (37:11).
    let moved = counters["split0.adjustments"].as_u64().unwrap_or(0);
    assert!(
        moved >= 5,
        "{moved} adjustments: the weights stayed near 32:16, DWRR did not move flow1 off path2 ({counters})"
    );
}

/// #11: the k = 4 fat tree (36 namespaces) on the kernel, the eBPF switch routing by ECMP:
/// every flow delivers and every rack and aggregation switch sends on both of its uplinks.
fn a_fat_tree_runs_on_the_kernel_with_ecmp_over_every_uplink() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp("fat-tree");
    let o = mpsched()
        .args([
            "run",
            "dc/fat-tree-k4-permutation",
            "--backend",
            "netns",
            "--ignore-delay",
        ])
        .args(["--duration", "5", "--no-plot", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for f in v["flows"].as_array().unwrap() {
        assert!(f["delivered_mbps"].as_f64().unwrap() > 1.0, "{f}");
    }
    let counters = &v["repetitions"][0]["counters"];
    // Ports 2 and 3 of racks and aggregation switches are their uplinks (links are generated
    // down to up: a rack's hosts, then its aggregation switches; an aggregation switch's racks,
    // then its cores).
    for sw in ["tor0", "tor3", "tor6", "pod0-agg0", "pod2-agg1"] {
        for up in ["port2.tx_pkts", "port3.tx_pkts"] {
            let n = counters[sw][up].as_u64().unwrap_or(0);
            assert!(n > 100, "{sw} {up}: {n} ({})", counters[sw]);
        }
    }
    assert_clean("after the fat tree");
}

/// #11 item 4: web-search transfers on the k = 4 fat tree, made by `mpsched trafficgen` with
/// kernel TCP: nearly every transfer completes by the end of the run and its 2 s drain (as in
/// the simulator, a large one started late may not: it is then reported as not finished, with
/// what it delivered), a finished one no faster than the link, and the generator's servers are
/// gone afterwards.
fn a_workload_runs_on_the_kernel_with_the_traffic_generator() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp("workload");
    let o = mpsched()
        .args(["run", "dc/websearch-k4-kernel", "--backend", "netns", "--ignore-delay"])
        .args(["--duration", "2.5", "--no-plot", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let csv = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert!(rows.len() > 20, "{} transfers", rows.len());
    let mut finished = 0;
    for r in &rows {
        let size: f64 = r[3].parse().unwrap();
        if let Ok(fct) = r[6].parse::<f64>() {
            assert!(fct >= size * 8.0 / 100e6, "{r:?}: finished, no faster than the link");
            finished += 1;
        }
        assert!(
            r[9].parse::<u64>().is_ok(),
            "{r:?}: retransmissions measured (TCP_INFO)"
        );
    }
    assert!(finished * 10 >= rows.len() * 9, "{finished} of {} finished", rows.len());
    let lines = std::fs::read_to_string(out.join("trafficgen.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), rows.len(), "one generator line per transfer");
    for l in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["fct_s"].is_null() {
            assert_eq!(v["error"], "not finished by the end of the run", "{l}");
            assert!(v["bytes"].as_u64().unwrap() > 0, "{l}: delivered by the end");
        } else {
            assert!(v["error"].is_null(), "{l}");
        }
    }
    let left = std::process::Command::new("pgrep")
        .args(["-f", "mpsched trafficgen"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "generator processes left: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert_clean("after the workload");
}

/// Run built-in `builtin` with `extra` appended on the kernel and expect it refused as an input
/// error (exit 2) before anything is made; returns the file written and the error.
fn refused_on_the_kernel(name: &str, builtin: &str, extra: &str) -> (PathBuf, String) {
    let dir = tmp(name);
    std::fs::create_dir_all(&dir).unwrap();
    let (_, text) = mpsched_scenario::builtin::find(builtin).unwrap();
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, format!("{text}{extra}")).unwrap();
    let o = mpsched()
        .args([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "netns",
            "--ignore-delay",
            "--out",
        ])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_clean(&format!("after the refused {name}"));
    (file, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Links that fail during a run are a simulator feature for now: refused before anything is made.
fn link_failures_during_a_run_are_refused_on_the_kernel() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let failure = "\n[[failure]]\na = \"tor0\"\nb = \"pod0-agg0\"\nat = \"1s\"\n";
    let (file, err) = refused_on_the_kernel("failure", "dc/fat-tree-k4-permutation", failure);
    assert!(err.contains("failure[0]") && err.contains("--backend sim"), "{err}");
    // compare refuses it before its simulator run, not after.
    let started = Instant::now();
    let o = mpsched()
        .args(["compare", file.to_str().unwrap(), "--ignore-delay"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused after {:?}",
        started.elapsed()
    );
    assert_clean("after the refused comparison");
}

/// The traffic generator serves transfers on port 5999: a bulk flow to the same host and port
/// would find it taken, so it is refused before anything is made.
fn a_bulk_flow_on_the_generators_port_is_refused() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let bulk =
        "\n[[flow]]\nname = \"bulk\"\nsrc = \"tor1-h0\"\ndst = \"tor0-h0\"\nprotocol = \"tcp\"\ndst_port = 5999\n";
    let (_, err) = refused_on_the_kernel("tg-port", "dc/websearch-k4-kernel", bulk);
    assert!(err.contains("flow `bulk`") && err.contains("5999"), "{err}");
}

/// Hardening item 11: a host beside the sender (sta2) sends DWRR feedback packets to the
/// splitting point (ap1, 10.255.0.1) during a kernel run. They arrive on the port towards the
/// hosts, where genuine feedback never comes: all are counted as untrusted, none reaches the
/// weights. (Before the fix each one counted: the closing note of the change measured flow1's
/// loss rising from 1.3 % to 17 % under 3 000 of them.)
fn feedback_forged_by_a_host_is_not_counted() {
    const FORGED: u64 = 1000;
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp("forged");
    let run = mpsched()
        .args(["run", "s3b-dwrr-two-flows", "--backend", "netns", "--variant", "DWRR"])
        .args(["--duration", "15", "--no-plot", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let sta2 = loop {
        if let Some(n) = our_namespaces().into_iter().find(|n| n.ends_with("-sta2")) {
            break n;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the run made no sta2 namespace");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(3));
    // bash's /dev/udp: one datagram per write, "MPFB" | group 0 | path 0 (path1 congested).
    let forge = format!(
        "exec 3>/dev/udp/10.255.0.1/50000; for i in $(seq {FORGED}); do printf 'MPFB\\0\\0\\0\\0' >&3; sleep 0.005; done"
    );
    let sent = Command::new("ip")
        .args(["netns", "exec", &sta2, "bash", "-c", &forge])
        .output()
        .unwrap();
    ok(&sent);
    let status = run.wait_with_output().unwrap();
    ok(&status);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let c = &v["repetitions"][0]["counters"]["ap1"];
    let untrusted = c["counter.feedback_untrusted_port"].as_u64().unwrap_or(0);
    let counted = c["split0.feedback_rx"].as_u64().unwrap_or(0);
    assert_eq!(untrusted, FORGED, "forged feedback not all refused: {c}");
    assert!(
        counted < FORGED / 4,
        "{counted} feedback packets counted: forged ones reached the weights ({c})"
    );
    let _ = std::fs::remove_dir_all(&out);
}

fn nothing_is_left_after_a_failed_or_interrupted_run_and_runs_do_not_collide() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_clean("before");

    // A scenario that fails validation: exit 2, nothing made.
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[scenario]\nname = \"x\"\nduration = \"ten seconds\"\n").unwrap();
    let out = mpsched()
        .args(["run", "--backend", "netns"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_clean("after a scenario that failed validation");

    // SIGINT part-way: exit 130, everything removed.
    let mut child = start_long_kernel_run("interrupted");
    assert!(!our_namespaces().is_empty(), "the run never built its namespaces");
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "an interrupted run exits with 130");
    assert_clean("after SIGINT");

    // Two runs at once (names carry a run id), then a third straight after.
    let a = mpsched()
        .args([
            "run",
            "s1-homogeneous",
            "--backend",
            "netns",
            "--duration",
            "4",
            "--variant",
            "WRR",
            "--no-plot",
            "--out",
        ])
        .arg(tmp("a"))
        .spawn()
        .unwrap();
    let b = mpsched()
        .args([
            "run",
            "s1-homogeneous",
            "--backend",
            "netns",
            "--duration",
            "4",
            "--variant",
            "RS",
            "--no-plot",
            "--out",
        ])
        .arg(tmp("b"))
        .spawn()
        .unwrap();
    ok(&a.wait_with_output().unwrap());
    ok(&b.wait_with_output().unwrap());
    assert_clean("after two concurrent runs");
    let out = mpsched()
        .args([
            "run",
            "s1-homogeneous",
            "--backend",
            "netns",
            "--duration",
            "4",
            "--variant",
            "SP1",
            "--no-plot",
            "--out",
        ])
        .arg(tmp("c"))
        .output()
        .unwrap();
    ok(&out);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp_existing("c").join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["backend"], "netns");
    assert_clean("after a normal run");
}

/// Scenario 1 with the first `from` replaced by `to`, written to a fresh folder `name`:
/// (the folder, the file).
fn s1_with(name: &str, from: &str, to: &str) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/motohashi2022/s1-homogeneous.toml"
    ))
    .unwrap()
    .replacen(from, to, 1);
    let dir = tmp(name);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

fn tmp_existing(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mpsched-netns-{}-{name}", std::process::id()))
}

fn propagation_delay_needs_netem_or_ignore_delay() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, file) = s1_with("delay", "rate = \"54Mbps\"", "rate = \"54Mbps\"\ndelay = \"2ms\"");
    let netem = mpsched_has_netem();
    let run_cmd = |extra: &[&str]| {
        let mut c = mpsched();
        c.args([
            "run",
            "--backend",
            "netns",
            "--duration",
            "3",
            "--variant",
            "WRR",
            "--no-plot",
            "--out",
        ])
        .arg(dir.join("out"))
        .arg(&file)
        .args(extra);
        c
    };
    let run = |extra: &[&str]| run_cmd(extra).output().unwrap();
    if netem {
        ok(&run(&[]));
    } else {
        // Issue 27 item 14: the link by its two nodes and the delay as the file writes it
        // (it said `link[0]` and nanoseconds), refused before any namespace is made (the
        // netem probe's scratch namespace included).
        let mut c = run_cmd(&[]);
        let (out, seen) = output_watching_namespaces(&mut c);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("netem")
                && err.contains("--ignore-delay")
                && err.contains("`sta1` and `ap1`")
                && err.contains("2ms"),
            "{err}"
        );
        assert!(!err.contains("link[") && !err.contains(" ns"), "{err}");
        assert!(seen.is_empty(), "namespaces made before the refusal: {seen:?}");
        ok(&run(&["--ignore-delay"]));
    }
    assert_clean("after the delay runs");
}

/// Run `c` to its end while watching `/var/run/netns` for namespaces named after its process:
/// its output and every such name seen.
fn output_watching_namespaces(c: &mut Command) -> (std::process::Output, Vec<String>) {
    let child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut seen: Vec<String> = Vec::new();
            let mine = [format!("mps-{pid}x"), format!("mps-probe-{pid}x")];
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                for e in std::fs::read_dir("/var/run/netns").into_iter().flatten().flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if mine.iter().any(|m| n.starts_with(m.as_str())) && !seen.contains(&n) {
                        seen.push(n);
                    }
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            seen
        })
    };
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    (out, watcher.join().unwrap())
}

/// Whether the kernel offers netem (a scratch namespace's loopback takes it).
fn mpsched_has_netem() -> bool {
    let name = format!("mpst-netem-{}", std::process::id());
    Command::new("ip").args(["netns", "add", &name]).status().unwrap();
    let ok = Command::new("ip")
        .args([
            "netns", "exec", &name, "tc", "qdisc", "add", "dev", "lo", "root", "netem",
        ])
        .output()
        .unwrap()
        .status
        .success();
    Command::new("ip").args(["netns", "del", &name]).status().unwrap();
    ok
}

/// PMQECN's Table 1 on the kernel (`mpsched run pmqecn2024/table1-sp-vs-vq-wrr --backend
/// netns --ignore-delay`, 6 s): three UDP classes offering 6.2 Mbit/s into S1's 10 Mbit/s port
/// of eight queues under strict priority (htb class priorities here, prio or ets where the
/// kernel has them). Over the steady window (2 s to the end), strict priority gives the high
/// class what it offers and the low class nothing; vq-wrr (vqwrr.bpf.c: levels chosen at
/// ingress, departures seen at the link's far end) gives three near-equal shares, its virtual
/// queues dropping what the port would not carry, and every departure it counted is one it
/// placed. Tolerances as on BMv2 (`crates/cli/tests/bmv2.rs`): 0.3 Mbit/s (SP) and 10 % of
/// the mean (VQ-WRR), against the simulator's 6.20 / 3.52 / 0.00 and 3.23 each.
fn table1_on_the_kernel_strict_priority_starves_the_low_class_and_vq_wrr_shares_the_port() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp("table1");
    let o = mpsched()
        .args([
            "run",
            "pmqecn2024/table1-sp-vs-vq-wrr",
            "--backend",
            "netns",
            "--ignore-delay",
            "--duration",
            "6",
            "--no-plot",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let sp = common::steady_goodput(&out.join("SP"), 2.0);
    let wrr = common::steady_goodput(&out.join("VQ-WRR"), 2.0);
    eprintln!("Table 1 on the kernel, steady window: SP {sp:?}, VQ-WRR {wrr:?}");
    assert!(sp["high"] > 5.9, "SP: the high class gets what it offers: {sp:?}");
    assert!(sp["medium"] > 3.2, "SP: the medium class the rest: {sp:?}");
    assert!(sp["low"] < 0.1, "SP: the low class starves: {sp:?}");
    let mean = wrr.values().sum::<f64>() / 3.0;
    assert!(mean * 3.0 > 9.0, "VQ-WRR: the port is full: {wrr:?}");
    assert!(
        wrr.values().all(|x| (x - mean).abs() < 0.1 * mean),
        "VQ-WRR: near-equal shares: {wrr:?}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("VQ-WRR/summary.json")).unwrap()).unwrap();
    for node in ["S1", "S2"] {
        let c = &summary["repetitions"][0]["counters"][node];
        let get = |k: &str| c[k].as_u64().unwrap_or(0);
        assert_eq!(get("counter.vq.accounting_errors"), 0, "{node}: {c}");
        assert!(get("counter.vq.top_level") > 0, "{node}: {c}");
    }
    let s1 = &summary["repetitions"][0]["counters"]["S1"];
    assert!(s1["counter.vq.drops"].as_u64().unwrap_or(0) > 0, "S1: {s1}");
    assert!(s1["counter.vq.downgraded"].as_u64().unwrap_or(0) > 0, "S1: {s1}");
    let _ = std::fs::remove_dir_all(&out);
}

/// PMQECN's scenario 1 with the DCQCN and TCN congestion points on the kernel
/// (`baseline.bpf.c`; `mpsched run pmqecn2024/s1-performance --backend netns --ignore-delay
/// --variant DCQCN --variant TCN`, 20 s): three paced classes offering 10 Mbit/s each into
/// S1's 10 Mbit/s port. The switch marks (the receivers' CNPs then cut the senders), the
/// port's queue as the program counts it never passes `fifo_pkts` (64) and no record is of a
/// packet lost on the way (one passed over is one of a packet that arrived later); the
/// classes share the port (each above 2 Mbit/s, together above 8,
/// nothing lost). The full comparison with the simulator is in docs/reproduction.md.
fn scenario1_dcqcn_and_tcn_mark_on_the_kernel_and_hold_the_queue() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp("s1-baselines");
    let o = mpsched()
        .args([
            "run",
            "pmqecn2024/s1-performance",
            "--backend",
            "netns",
            "--ignore-delay",
            "--variant",
            "DCQCN",
            "--variant",
            "TCN",
            "--duration",
            "20",
            "--no-plot",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    for v in ["DCQCN", "TCN"] {
        let dir = out.join(v);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
        let s1 = &summary["repetitions"][0]["counters"]["S1"];
        assert!(s1["counter.baseline.marked"].as_u64().unwrap_or(0) > 0, "{v}: {s1}");
        // A record passed over is one of a packet that left after a later-recorded one
        // (two CPUs), never of a packet lost after the count.
        let c = |k: &str| s1[k].as_u64().unwrap_or(0);
        assert_eq!(c("counter.baseline.skipped"), c("counter.baseline.late"), "{v}: {s1}");
        // Rare: a few in thousands of packets (6 in 13 668 on CI's two busy cores).
        let sent: u64 = (0..4).map(|p| c(&format!("port{p}.tx_pkts"))).sum();
        assert!(c("counter.baseline.late") * 100 < sent, "{v}: {s1}");
        let flows = summary["flows"].as_array().unwrap();
        // The port is used once the senders have ramped up from their initial 1 Mbit/s: over
        // the 20 s run as a whole DCQCN delivers 8.0 Mbit/s on a quiet machine and 7.95 on CI's,
        // over its last 15 s 8.8.
        let steady = common::steady_goodput(&dir, 5.0);
        let total: f64 = flows.iter().map(|f| steady[f["id"].as_str().unwrap()]).sum();
        assert!(total > 8.0, "{v}: the port is used after 5 s: {total} Mbit/s");
        for f in flows {
            assert!(f["delivered_mbps"].as_f64().unwrap() > 2.0, "{v}: {f}");
            assert_eq!(f["loss_pct"].as_f64(), Some(0.0), "{v}: {f}");
        }
        let text = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let col = header
            .iter()
            .position(|h| *h == "bottleneck_queue_max_pkts")
            .unwrap_or_else(|| panic!("{v}: no queue column in {header:?}"));
        let most = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(col).unwrap().parse::<f64>().unwrap())
            .fold(0.0, f64::max);
        assert!(most > 0.0 && most <= 64.0, "{v}: the queue's most: {most}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// PMQECN's and P4QCN's switches reflect rate feedback to the paced senders on the kernel, and
/// the senders act on it: PMQECN's control loop runs every period and its classes share the
/// port with no miscounted departure; P4QCN keeps every class near a third with no loss.
fn scenario1_pmqecn_and_p4qcn_send_their_feedback_on_the_kernel() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp("s1-feedback");
    let o = mpsched()
        .args([
            "run",
            "pmqecn2024/s1-performance",
            "--backend",
            "netns",
            "--ignore-delay",
            "--variant",
            "PMQECN",
            "--variant",
            "P4QCN",
            "--duration",
            "20",
            "--no-plot",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("climb to their line rate"), "{stderr}");
    for v in ["PMQECN", "P4QCN"] {
        let dir = out.join(v);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
        let counters = &summary["repetitions"][0]["counters"];
        let c = |node: &str, k: &str| counters[node][k].as_u64().unwrap_or(0);
        let (sent, min_mbps, min_port_mbps) = match v {
            // 20 s of 100 ms periods, on the wall clock of a loaded machine.
            "PMQECN" => {
                assert!(c("control:S1", "steps") >= 150, "{counters}");
                assert!(c("control:S1", "pmqecn.solved") > 0, "{counters}");
                assert_eq!(c("S1", "counter.vq.accounting_errors"), 0, "{counters}");
                // The model moves the classes' shares every period; over 20 s one has ended
                // with 1.07 Mbit/s, another with 1.01 over 10 s (60 s: 2.7 to 3.7 each).
                // PMQECN's own port use moves with every solve (second to second its CV is
                // 0.146 on the kernel, 0.077 in the simulator, docs/reproduction.md): 9.21
                // Mbit/s over 60 s on a quiet machine, 7.93 from 5 s to 20 s on CI's two busy
                // cores. A loop that stopped raising the senders would leave them near their
                // initial 1 Mbit/s each, 3 in all.
                (c("S1", "counter.pmqecn.feedback"), 0.5, 7.0)
            }
            _ => {
                assert_eq!(c("S1", "counter.baseline.skipped"), c("S1", "counter.baseline.late"));
                // P4QCN holds the port steady (CV 0.005): 9.22 Mbit/s over 60 s.
                (c("S1", "counter.qcn.feedback"), 2.5, 8.0)
            }
        };
        assert!(sent > 100, "{v}: feedback sent {sent}: {counters}");
        for f in ["A", "B", "C"] {
            let got = c("rate-control", &format!("{f}.notifications"));
            assert!(got > 10, "{v}: flow {f} took {got} notifications: {counters}");
        }
        let steady = common::steady_goodput(&dir, 5.0);
        let total: f64 = ["A", "B", "C"].iter().map(|f| steady[*f]).sum();
        assert!(
            total > min_port_mbps,
            "{v}: the port is used after 5 s: {total} Mbit/s (at least {min_port_mbps})"
        );
        for f in summary["flows"].as_array().unwrap() {
            assert!(f["delivered_mbps"].as_f64().unwrap() > min_mbps, "{v}: {f}");
            if v == "P4QCN" {
                assert_eq!(f["loss_pct"].as_f64(), Some(0.0), "{v}: {f}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Every conformance vector agrees exactly between the eBPF programs (BPF_PROG_TEST_RUN) and
/// the file written from the Rust programs.
fn every_vector_agrees_with_the_ebpf_programs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10);
    let mut steps = 0;
    let mut programs = std::collections::BTreeMap::new();
    let mut without_ebpf = Vec::new();
    for p in &paths {
        let set: mpsched_core::vectors::VectorSet = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        // A program with no eBPF object yet (issue #30's baselines) has nothing to run here.
        let (program, _) = mpsched_programs::vectors::program_of(&set).unwrap();
        if program.ebpf_object().is_none() {
            without_ebpf.push(program.name());
            continue;
        }
        let (init, res) = mpsched_netns::vectors::run_ebpf(&set).unwrap_or_else(|e| panic!("{}: {e}", set.name));
        let errs = mpsched_core::vectors::compare(&set, &init, &res);
        assert!(errs.is_empty(), "{}:\n{}", set.name, errs.join("\n"));
        steps += set.steps.len();
        *programs.entry(set.program.clone()).or_insert(0) += 1;
    }
    assert!(steps >= 200, "only {steps} steps");
    // Each program's sets run on its own eBPF object: LetFlow's on letflow.bpf.o.
    assert!(
        programs.get("letflow").is_some_and(|&n| n >= 3),
        "sets by program: {programs:?}"
    );
    assert!(
        programs.get("vq-wrr").is_some_and(|&n| n >= 2),
        "vq-wrr's sets run on vqwrr.bpf.o: {programs:?}"
    );
    assert!(
        ["dcqcn", "tcn"]
            .iter()
            .all(|p| programs.get(*p).is_some_and(|&n| n >= 2)),
        "dcqcn's and tcn's sets run on baseline.bpf.o: {programs:?}"
    );
    assert!(
        without_ebpf.iter().all(|n| ["pmqecn", "p4qcn"].contains(n)),
        "sets left out, of programs with no eBPF object: {without_ebpf:?}"
    );
    // The ATSSS UPF's sets (issue #32) run on atsss.bpf.o at XDP, whole frames compared.
    assert!(
        programs.get("atsss").is_some_and(|&n| n >= 8),
        "the UPF's sets run on atsss.bpf.o: {programs:?}"
    );
}

/// A port with several queues in strict priority (the default discipline) runs on the kernel:
/// with prio or ets where the kernel has them, otherwise with htb's class priorities. The run
/// says which on standard error, naming the link, and in each repetition's `link_model`.
/// (Its measurement against the simulator: crates/netns/tests/strict_priority.rs; weighted
/// queues: crates/netns/tests/control_channel.rs.)
fn strict_priority_ports_run_and_say_how_they_are_built() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, file) = s1_with("queues", "rate = \"4Mbps\"", "rate = \"4Mbps\"\nqueues = 2");
    let out = mpsched()
        .args([
            "run",
            "--backend",
            "netns",
            "--variant",
            "WRR",
            "--duration",
            "2",
            "--no-plot",
            "--out",
        ])
        .arg(dir.join("out"))
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("note: link[2]") && err.contains("strict priority") && err.contains("2 queues"),
        "{err}"
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out").join("summary.json")).unwrap()).unwrap();
    let model = s["repetitions"][0]["link_model"].as_str().unwrap_or_default();
    assert!(model.contains("strict priority"), "{model}");
    assert_clean("after a multi-queue scenario");
}

/// Hardening item 7: SIGKILL leaves namespaces, programs and iperf3 processes that nothing can
/// clean up in the killed process. The next run names them, `mpsched clean` removes them all,
/// and a run in progress is never taken for a leftover.
fn after_sigkill_the_next_run_warns_and_clean_leaves_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_clean("before");
    let mut child = start_long_kernel_run("killed");
    // Should an assertion below fail, the killed run's leftovers must not fail every later
    // test's "before" check too.
    let _clean = CleanIfPanicking { pid: child.id() };
    let prefix = format!("mps-{}x", child.id());
    let made: Vec<String> = our_namespaces()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(made.len() >= 8, "the run never built its namespaces: {made:?}");
    // While it runs, its namespaces are not leftovers.
    let o = mpsched().arg("clean").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("nothing to clean"),
        "a live run's namespaces were taken: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    let left = our_namespaces();
    assert!(made.iter().all(|n| left.contains(n)), "SIGKILL leaves them: {left:?}");
    let in_them: Vec<String> = made
        .iter()
        .flat_map(|n| {
            let o = Command::new("ip").args(["netns", "pids", n]).output().unwrap();
            let pids = String::from_utf8_lossy(&o.stdout).into_owned();
            pids.split_whitespace().map(str::to_string).collect::<Vec<_>>()
        })
        .collect();
    assert!(!in_them.is_empty(), "iperf3 servers outlive the killed run");

    // The next kernel run says so.
    let o = mpsched()
        .args([
            "run",
            "s1-homogeneous",
            "--backend",
            "netns",
            "--variant",
            "WRR",
            "--duration",
            "1",
            "--no-plot",
            "--out",
        ])
        .arg(tmp("after-kill"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("left by earlier runs that did not finish") && e.contains(&made[0]) && e.contains("mpsched clean"),
        "{e}"
    );

    let o = mpsched().arg("clean").output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains(&format!("removed {} namespaces", made.len())), "{out}");
    assert_clean("after mpsched clean");
    // Killed processes whose parent died may stay zombies until init reaps them: not running.
    let running = |p: &String| {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .is_ok_and(|st| st.lines().any(|l| l.starts_with("State:") && !l.contains("zombie")))
    };
    let t = Instant::now();
    while in_them.iter().any(running) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let alive: Vec<&String> = in_them.iter().filter(|p| running(p)).collect();
    assert!(alive.is_empty(), "processes of the killed run remain: {alive:?}");
}

/// Hardening item 16: `compare` shows loss beside goodput and the per-path rates, and writes
/// compare.csv and a side-by-side PNG.
fn compare_shows_loss_and_path_rates_and_writes_csv_and_png() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("compare");
    let o = mpsched()
        .args([
            "compare",
            "s3b-dwrr-two-flows",
            "--duration",
            "4",
            "--variant",
            "DWRR",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("sim loss") && out.contains("netns loss") && out.contains("path2"),
        "{out}"
    );
    let csv = std::fs::read_to_string(dir.join("compare.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("variant,kind,id,sim_mbps,netns_mbps,ratio,sim_loss_pct,netns_loss_pct")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 8), "{csv}");
    assert!(
        rows.iter()
            .any(|r| r[1] == "flow" && r[2] == "flow1" && !r[7].is_empty()),
        "{csv}"
    );
    assert!(rows.iter().any(|r| r[1] == "path" && r[2] == "path1"), "{csv}");
    let png = std::fs::read(dir.join("compare.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "compare.png is a PNG");
    assert_clean("after compare");
}

/// A multi-homed host on the kernel: an address per interface, each pinned flow leaving by
/// the interface its path starts at (two 9 Mbit/s flows over two 10 Mbit/s interfaces both get
/// through, which one interface could not carry), and a flow back to the host: every flow within
/// 10 % of the simulator.
fn a_multi_homed_host_sends_each_flow_by_its_interface_on_the_kernel() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/netns/two-homes.toml");
    let v = compare_within_10pct(scenario, "8", &[]);
    let kernel = &v["netns"][0]["repetitions"][0]["flows"];
    for f in kernel.as_array().unwrap() {
        assert!(f["delivered_mbps"].as_f64().unwrap() > 8.0, "{f}");
    }
}

/// `scenarios/mptcp/two-paths.toml` with its two paths at 20 Mbit/s instead of 100 and `extra`
/// added to the flow, written to a scratch file. The kernel's MPTCP at 2 x 100 Mbit/s falls
/// short of the paths' rate when the machine is busy (166 to 187 Mbit/s in twelve idle runs,
/// 109 in one beside a compile), which would judge the machine; at 2 x 20 it needs a fifth of
/// the CPU and the comparison judges what MPTCP and the backend decide.
fn mptcp_two_paths_at_20_mbps(name: &str, extra: &str) -> PathBuf {
    let builtin = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/mptcp/two-paths.toml");
    let text = std::fs::read_to_string(builtin).unwrap();
    assert_eq!(text.matches("rate = \"100Mbps\"").count(), 2, "the builtin changed");
    let text = text
        .replace("rate = \"100Mbps\"", "rate = \"20Mbps\"")
        .replace("mptcp.subflows = 2", &format!("mptcp.subflows = 2\n{extra}"));
    let scratch = tmp(name);
    std::fs::create_dir_all(&scratch).unwrap();
    let file = scratch.join("scenario.toml");
    std::fs::write(&file, text).unwrap();
    file
}

/// #12: an MPTCP connection of two subflows over two disjoint paths (the builtin's, at
/// 20 Mbit/s), real kernel MPTCP under iperf3 on the netns backend, within 10 % of the simulator
/// (both without the paths' 5 ms, which needs netem here), near the 40 Mbit/s the two paths
/// give, each subflow carrying its share; then a transfer through the traffic generator's
/// MPTCP sockets done well within the time one path would take.
fn mptcp_over_two_paths_agrees_with_the_simulator_within_10_percent() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let file = mptcp_two_paths_at_20_mbps("mptcp-two-paths", "");
    let dir = tmp("mptcp-two-paths-out");
    let out = mpsched()
        .arg("compare")
        .arg(&file)
        .args(["--ignore-delay", "--variant", "cubic", "--duration", "10", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&out);
    let v = summary(&dir);
    let row = &v["rows"][0];
    let r = row["ratio"].as_f64().unwrap();
    assert!((0.9..=1.1).contains(&r), "{row} is not within 10 % of the simulator");
    assert!(
        row["netns_mbps"].as_f64().unwrap() > 34.0,
        "{row}: two 20 Mbit/s paths should give about 40 Mbit/s"
    );
    let subflows = v["netns"][0]["repetitions"][0]["flows"][0]["tcp"]["subflows"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(subflows.len(), 2, "{subflows:?}");
    for s in &subflows {
        assert!(s["acked_mbps"].as_f64().unwrap() > 12.0, "a subflow idle: {subflows:?}");
    }
    assert_ne!(subflows[0]["id"], subflows[1]["id"]);
    assert_clean("mptcp compare");
    // The same connection as a 20 MB transfer through the traffic generator's MPTCP sockets:
    // done well within the 8.5 s one path would take, on both backends (a kernel subflow that
    // overshoots in slow start can spend a second or more in recovery without SACK, which is
    // off as in the simulator, so the bound leaves room for one such stall).
    let file = mptcp_two_paths_at_20_mbps("mptcp-transfer", "size = \"20MB\"");
    let dir = tmp("mptcp-transfer-out");
    let out = mpsched()
        .arg("compare")
        .arg(&file)
        .args(["--ignore-delay", "--variant", "cubic", "--duration", "6", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&out);
    let v = summary(&dir);
    for side in ["sim", "netns"] {
        let t = &v[side][0]["repetitions"][0]["flows"][0]["tcp"];
        let fct = t["completion_s"].as_f64().unwrap_or(f64::NAN);
        assert!(fct < 6.4, "{side}: 20 MB took {fct} s over two 20 Mbit/s paths: {t}");
    }
    assert_clean("mptcp transfer");
}

/// The fields tshark decodes from `pcap` for packets matching `filter`, one row per packet.
fn tshark_fields(pcap: &Path, filter: &str, names: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(pcap).args(["-Y", filter, "-T", "fields"]);
    for n in names {
        cmd.args(["-e", n]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Real kernel MPTCP on the netns backend, captured with `--pcap` on both of the client's
/// interfaces: tshark decodes the MP_CAPABLE keys on the first, MP_JOIN on the second and DSS
/// mappings on both; each MP_JOIN's token is what `mpsched_core::mptcp::token` derives from its
/// connection's server key, and both HMACs (the SYN/ACK's 64 bits, the third ACK's 160) are
/// what `join_hmac` computes from the keys and nonces on the wire (RFC 8684, SHA-256).
fn the_kernels_mptcp_tokens_and_join_hmacs_are_ours() {
    use mpsched_core::mptcp::{join_hmac, join_hmac_truncated, token, MptcpVersion::V1};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("mptcp-pcap");
    let out = mpsched()
        .args([
            "run",
            "mptcp/two-paths",
            "--backend",
            "netns",
            "--ignore-delay",
            "--variant",
            "cubic",
        ])
        .args([
            "--duration",
            "3",
            "--pcap",
            "client:eth0",
            "--pcap",
            "client:r2",
            "--pcap-snaplen",
            "200",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&out);
    assert_clean("mptcp capture");
    let (first, second) = (dir.join("client-eth0.pcap"), dir.join("client-r2.pcap"));
    let num = |v: &str| v.parse::<u64>().unwrap_or_else(|_| panic!("a number, not {v:?}"));
    // iperf3 opens two MPTCP connections (control and data): the third ACK of each first
    // subflow carries both keys, the client's then the server's.
    let keys: Vec<(u64, u64)> = tshark_fields(
        &first,
        "tcp.options.mptcp.subtype == 0 && tcp.flags == 0x010 && tcp.options.mptcp.recvkey",
        &["tcp.options.mptcp.sendkey", "tcp.options.mptcp.recvkey"],
    )
    .iter()
    .map(|r| (num(&r[0]), num(&r[1])))
    .collect();
    assert!(!keys.is_empty(), "no MP_CAPABLE keys decoded");
    let mut keys = keys;
    keys.sort_unstable();
    keys.dedup();
    let join = |flags: &str, names: &[&str]| {
        let mut rows = tshark_fields(
            &second,
            &format!("tcp.options.mptcp.subtype == 1 && tcp.flags == {flags}"),
            &[&["tcp.stream"], names].concat(),
        );
        assert!(!rows.is_empty(), "no MP_JOIN with flags {flags} in the capture");
        rows.sort();
        rows
    };
    let syns = join("0x002", &["tcp.options.mptcp.recvtok", "tcp.options.mptcp.sendrand"]);
    let syn_acks = join(
        "0x012",
        &["tcp.options.mptcp.sendrand", "tcp.options.mptcp.sendtrunchmac"],
    );
    let acks = join("0x010", &["tcp.options.mptcp.sendhmac"]);
    for syn in &syns {
        let &(key_c, key_s) = keys
            .iter()
            .find(|k| token(V1, k.1) == num(&syn[1]) as u32)
            .unwrap_or_else(|| panic!("MP_JOIN token {} is no connection's: keys {keys:?}", syn[1]));
        let syn_ack = syn_acks.iter().find(|r| r[0] == syn[0]).expect("the join's SYN/ACK");
        let ack = acks.iter().find(|r| r[0] == syn[0]).expect("the join's third ACK");
        let (nonce_c, nonce_s) = (num(&syn[2]) as u32, num(&syn_ack[1]) as u32);
        assert_eq!(
            num(&syn_ack[2]),
            join_hmac_truncated(V1, key_s, key_c, nonce_s, nonce_c),
            "the server's truncated HMAC"
        );
        let ours: String = join_hmac(V1, key_c, key_s, nonce_c, nonce_s)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(ack[1].replace(':', ""), ours, "the client's HMAC");
    }
    for pcap in [&first, &second] {
        let dss = tshark_fields(
            pcap,
            "tcp.options.mptcp.rawdataseqno",
            &["tcp.options.mptcp.rawdataseqno"],
        );
        assert!(dss.len() > 1000, "{}: {} DSS mappings", pcap.display(), dss.len());
    }
}

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGQUIT: i32 = 3;
const SIGTERM: i32 = 15;

/// The signals each stage of a command is tried with: SIGHUP (a closed terminal or SSH
/// session, issue 45: it ended every command at once, leaving all it had made) at every stage,
/// and one of SIGINT, SIGTERM and SIGQUIT in turn, so that each meets every command.
fn signals_for(stage: usize) -> [i32; 2] {
    [SIGHUP, [SIGINT, SIGTERM, SIGQUIT][stage % 3]]
}

/// A few fixed-size transfers over a 10 Mbit/s dumbbell, for 3 s: traffic generator servers and
/// clients in the namespaces while it runs.
const TRANSFERS_TOML: &str = r#"
[scenario]
name = "signal-transfers"
title = "transfers for the signal test"
reproduces = "issue 27, signal tests"
duration = "3s"
queue_pkts = 100
[tcp]
cc = "cubic"
[[node]]
name = "src"
kind = "host"
[[node]]
name = "dst"
kind = "host"
[[node]]
name = "sw1"
kind = "switch"
[[link]]
a = "src"
b = "sw1"
rate = "10Mbps"
[[link]]
a = "sw1"
b = "dst"
rate = "10Mbps"
[[flow]]
name = "t1"
src = "src"
dst = "dst"
protocol = "tcp"
size = "4MB"
start = "0s"
stop = "3s"
[[flow]]
name = "t2"
src = "src"
dst = "dst"
protocol = "tcp"
size = "2MB"
start = "0.2s"
stop = "3s"
"#;

/// The processes a kernel command starts in its namespaces: iperf3, the traffic generator,
/// the tunnel daemon, simple_switch, dumpcap. By pid, not zombies.
fn kernel_processes() -> std::collections::BTreeSet<u32> {
    let mut out = std::collections::BTreeSet::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let exe = args
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or("").to_string())
            .unwrap_or_default();
        let ours = matches!(exe.as_str(), "iperf3" | "simple_switch" | "dumpcap")
            || (exe == "mpsched" && args.get(1).is_some_and(|a| a == "trafficgen" || a == "tunnel"));
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .is_ok_and(|st| st.lines().any(|l| l.starts_with("State:") && l.contains("zombie")));
        if ours && !zombie {
            out.insert(pid);
        }
    }
    out
}

/// The eBPF programs of ours loaded in the kernel (`mps_*`), by id.
fn loaded_programs() -> std::collections::BTreeSet<u64> {
    let o = Command::new("bpftool").args(["-j", "prog", "show"]).output();
    let v: serde_json::Value = o
        .ok()
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .unwrap_or(serde_json::Value::Null);
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["name"].as_str().is_some_and(|n| n.starts_with("mps")))
        .filter_map(|p| p["id"].as_u64())
        .collect()
}

/// The named namespaces of process `pid`: a run's `mps-PIDx...`, and the scratch names that
/// vector checks used to have (`mpsv-PID-N`, `mpsb-PID-N`).
fn namespaces_of(pid: u32) -> Vec<String> {
    let run = format!("mps-{pid}x");
    let scratch = [
        format!("mpsv-{pid}-"),
        format!("mpsb-{pid}-"),
        format!("mps-probe-{pid}x"),
    ];
    mpsched_netns::ns::list()
        .into_iter()
        .filter(|n| n.starts_with(&run) || scratch.iter().any(|s| n.starts_with(s.as_str())))
        .collect()
}

/// When, in a command's life, the signal is sent.
#[derive(Clone, Copy, Debug)]
enum Instant_ {
    /// This long after it started (before it has made anything, or at a time known to fall in
    /// a stage).
    After(Duration),
    /// As soon as it has made the first namespace of its network (setting up; the scratch
    /// namespace that probes the kernel's qdiscs comes before).
    FirstNamespace,
    /// Once a process of its traffic runs, and this long after that.
    Traffic(Duration),
}

/// Run `args`, send `sig` at `when`, and check that it exits as interrupted (130, or killed by
/// the signal when it came before the handler was set or the command holds nothing a signal
/// could leave) without a panic, and that nothing of it is left: no namespace of its name, no
/// process of its traffic, no program of ours more than before, nothing pinned.
fn interrupt_and_check(args: &[&str], sig: i32, when: Instant_, within: Duration) {
    use std::os::unix::process::ExitStatusExt;
    let what = format!("`mpsched {}` with signal {sig} at {when:?}", args.join(" "));
    let procs_before = kernel_processes();
    let progs_before = loaded_programs();
    let mut child = mpsched()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = Instant::now();
    let new_procs = || -> Vec<u32> { kernel_processes().difference(&procs_before).copied().collect() };
    let reached = loop {
        let ready = match when {
            Instant_::After(d) => started.elapsed() >= d,
            Instant_::FirstNamespace => namespaces_of(pid).iter().any(|n| !n.contains("-probe-")),
            Instant_::Traffic(_) => !new_procs().is_empty(),
        };
        if ready {
            break true;
        }
        if child.try_wait().unwrap().is_some() || started.elapsed() > Duration::from_secs(60) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    assert!(reached, "{what}: it ended (or took a minute) before the instant came");
    if let Instant_::Traffic(d) = when {
        std::thread::sleep(d);
    }
    let name = match sig {
        SIGHUP => "-HUP",
        SIGINT => "-INT",
        SIGQUIT => "-QUIT",
        _ => "-TERM",
    };
    assert!(Command::new("kill")
        .args([name, &pid.to_string()])
        .status()
        .unwrap()
        .success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > within {
            let _ = child.kill();
            panic!("{what}: still running {within:?} after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
    eprintln!(
        "{what}: sent {:.2} s after the start, ended {:.2} s after it, {status:?}, {}",
        (t - started).as_secs_f64(),
        t.elapsed().as_secs_f64(),
        err.lines().last().unwrap_or("")
    );
    assert!(
        status.code() == Some(128 + sig) || status.signal() == Some(sig),
        "{what}: exit {status:?}, not {} or the signal: {err}",
        128 + sig
    );
    assert!(
        !err.contains("internal error") && !err.contains("panicked"),
        "{what}: {err}"
    );
    let left_ns = namespaces_of(pid);
    assert!(left_ns.is_empty(), "{what}: namespaces left: {left_ns:?}\n{err}");
    // The tunnel daemons' keys, configurations and logs are named after the namespaces.
    let prefix = format!("mps-{pid}x");
    let left_files: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left_files.is_empty(), "{what}: files left: {left_files:?}");
    // Killed processes and freed programs take a moment to go.
    let t = Instant::now();
    let (mut procs, mut progs) = (new_procs(), Vec::new());
    while t.elapsed() < Duration::from_secs(3) {
        procs = new_procs();
        progs = loaded_programs().difference(&progs_before).copied().collect();
        if procs.is_empty() && progs.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let shown: Vec<String> = procs
        .iter()
        .map(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .unwrap_or_default()
                .replace('\0', " ")
        })
        .collect();
    assert!(procs.is_empty(), "{what}: processes left: {shown:?}");
    assert!(progs.is_empty(), "{what}: eBPF programs left: {progs:?}");
    assert_clean(&what);
}

/// Issue 27 (item 2 and the signal tests) and issue 45 (item 3, SIGHUP and SIGQUIT): every
/// command that makes kernel state, interrupted with SIGHUP and with one of SIGINT, SIGTERM and
/// SIGQUIT before it has made anything, while it sets up, and while its traffic runs, exits as
/// interrupted (128 + the signal) and leaves nothing: `run --backend netns` (iperf3 flows,
/// traffic generator transfers, DCQCN-paced flows, AFMT's tunnel daemons with their keys in
/// the temporary folder, the ATSSS UPF and its UE daemon), `compare` (also during its simulation, which it now leaves
/// at once), `bench --dataplane` (which left its three
/// namespaces, their programs and an `iperf3 -s` for ever) and `vectors check` on the eBPF
/// programs (whose scratch namespaces stayed). `sweep` runs in the simulator only.
fn every_kernel_command_leaves_nothing_on_any_stop_signal_at_any_stage() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_clean("before");
    let dir = tmp("signals");
    std::fs::create_dir_all(&dir).unwrap();
    let transfers = dir.join("transfers.toml");
    std::fs::write(&transfers, TRANSFERS_TOML).unwrap();
    let transfers = transfers.to_str().unwrap().to_string();
    let out = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let vectors = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors");
    let (o1, o2, o3, o4) = (out("run"), out("tg"), out("cmp"), out("paced"));
    let (o5, o6) = (out("afmt"), out("atsss"));
    let paced = concat!(env!("CARGO_MANIFEST_DIR"), "/../netns/tests/dcqcn-two-senders.toml");
    let commands: Vec<(Vec<&str>, Vec<Instant_>)> = vec![
        (
            vec![
                "run",
                "s1-homogeneous",
                "--backend",
                "netns",
                "--variant",
                "WRR",
                "--duration",
                "3",
                "--no-plot",
                "--out",
                &o1,
            ],
            vec![Instant_::FirstNamespace, Instant_::Traffic(Duration::from_millis(700))],
        ),
        (
            vec!["run", &transfers, "--backend", "netns", "--no-plot", "--out", &o2],
            vec![Instant_::FirstNamespace, Instant_::Traffic(Duration::from_millis(500))],
        ),
        (
            vec![
                "run",
                "afmt/three-subtunnels",
                "--backend",
                "netns",
                "--ignore-delay",
                "--variant",
                "AFMT",
                "--duration",
                "6",
                "--no-plot",
                "--out",
                &o5,
            ],
            vec![Instant_::FirstNamespace, Instant_::Traffic(Duration::from_millis(700))],
        ),
        (
            vec![
                "run",
                "atsss/one-ue",
                "--backend",
                "netns",
                "--ignore-delay",
                "--variant",
                "CMon",
                "--duration",
                "4",
                "--no-plot",
                "--out",
                &o6,
            ],
            vec![Instant_::FirstNamespace, Instant_::Traffic(Duration::from_millis(700))],
        ),
        (
            vec![
                "run",
                paced,
                "--backend",
                "netns",
                "--ignore-delay",
                "--no-plot",
                "--out",
                &o4,
            ],
            vec![Instant_::FirstNamespace, Instant_::Traffic(Duration::from_millis(700))],
        ),
        (
            vec![
                "compare",
                "s1-homogeneous",
                "--variant",
                "WRR",
                "--duration",
                "3",
                "--out",
                &o3,
            ],
            vec![
                Instant_::After(Duration::from_millis(50)),
                Instant_::FirstNamespace,
                Instant_::Traffic(Duration::from_millis(700)),
            ],
        ),
        (
            vec![
                "bench",
                "--dataplane",
                "--bpf-repeat",
                "1000",
                "--decisions",
                "1000",
                "--iperf-seconds",
                "2",
            ],
            vec![
                Instant_::After(Duration::from_millis(100)),
                Instant_::FirstNamespace,
                Instant_::Traffic(Duration::from_millis(500)),
            ],
        ),
        (
            vec!["vectors", "check", vectors, "--impl", "rust", "--impl", "ebpf"],
            vec![
                Instant_::After(Duration::from_millis(100)),
                Instant_::After(Duration::from_millis(600)),
                Instant_::After(Duration::from_millis(1200)),
            ],
        ),
    ];
    let mut stage = 0;
    for (args, instants) in &commands {
        for &when in instants {
            for sig in signals_for(stage) {
                interrupt_and_check(args, sig, when, Duration::from_secs(20));
            }
            stage += 1;
        }
    }
    // compare during a long simulation ends at once (it waited for the whole simulation, then
    // made a namespace, then stopped: 2.6 s here).
    let long_sim = [
        "compare",
        "s1-homogeneous",
        "--variant",
        "WRR",
        "--repetitions",
        "200",
        "--out",
        &o3,
    ];
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        interrupt_and_check(
            &long_sim,
            sig,
            Instant_::After(Duration::from_millis(300)),
            Duration::from_millis(500),
        );
    }
}

/// #30: flows paced by DCQCN run on the kernel through `mpsched trafficgen paced-send` /
/// `paced-recv` (the binary's own roles): the summary has their loss, delay and the
/// `rate-control` counters, the series their columns, `paced.jsonl` both ends' lines.
fn dcqcn_paced_flows_run_through_the_binary_and_write_their_lines() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tmp("paced");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../netns/tests/dcqcn-two-senders.toml");
    ok(&mpsched()
        .args([
            "run",
            scenario,
            "--backend",
            "netns",
            "--ignore-delay",
            "--no-plot",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let rep = &summary["repetitions"][0];
    let rc = &rep["counters"]["rate-control"];
    for f in ["a", "b"] {
        assert!(rc[format!("{f}.cnps")].as_u64().unwrap() > 0, "{rc}");
        assert_eq!(rc[format!("{f}.notifications")], rc[format!("{f}.cnps")], "{rc}");
    }
    for fl in rep["flows"].as_array().unwrap() {
        assert!(fl["loss_pct"].as_f64().unwrap() < 5.0, "{fl}");
        assert!(fl["mean_owd_ms"].as_f64().unwrap() > 0.0, "{fl}");
        assert!(fl["delivered_mbps"].as_f64().unwrap() > 2.0, "{fl}");
    }
    let series = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let header = series.lines().next().unwrap();
    assert!(header.contains("a_loss_pct,a_owd_ms,a_rate_mbps"), "{header}");
    let lines = std::fs::read_to_string(out.join("paced.jsonl")).unwrap();
    for want in [
        r#""end":"sender""#,
        r#""kind":"sender_end""#,
        r#""kind":"receiver_end""#,
        r#""flow":"b""#,
    ] {
        assert!(lines.contains(want), "{want} in paced.jsonl");
    }
    assert_clean("after the paced run");
}

/// Issue 27 item 2: `--iperf-seconds 0` is iperf3's "run for ever", and the benchmark never
/// ended; it is refused as an input error before anything is made, as is more than 300.
fn bench_dataplane_refuses_iperf_seconds_it_cannot_end() {
    for v in ["0", "301"] {
        let o = mpsched()
            .args(["bench", "--dataplane", "--iperf-seconds", v])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--iperf-seconds {v}: {err}");
        assert!(err.contains("--iperf-seconds") && err.contains("1 to 300"), "{err}");
    }
    assert_clean("after the refused benchmarks");
}

/// Issue 27 item 14: `tcp.host_queue_limit` and `tcp.abc_limit` ran silently on the kernel,
/// which has neither; the run now says so on stderr, once each.
fn simulator_only_tcp_settings_are_said_to_be_ignored_on_the_kernel() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("ignored");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ignored.toml");
    let text = TRANSFERS_TOML.replace(
        "cc = \"cubic\"",
        "cc = \"cubic\"\nhost_queue_limit = \"64KB\"\nabc_limit = 2",
    );
    std::fs::write(&file, text).unwrap();
    let o = mpsched()
        .args(["run", "--backend", "netns", "--duration", "1", "--no-plot", "--out"])
        .arg(dir.join("out"))
        .arg(&file)
        .output()
        .unwrap();
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    for key in ["tcp.host_queue_limit", "tcp.abc_limit"] {
        let n = err.matches(&format!("warning: {key} (flows `t1`, `t2`)")).count();
        assert_eq!(n, 1, "{key} said {n} times: {err}");
    }
    assert_clean("after the run with simulator-only settings");
}

/// Issue 27 item 6: on netns the last row of `timeseries.csv` showed 15.47 Mbit/s for an
/// 8 Mbit/s flow (iperf3's short last report, the queue draining after the end, added at its
/// rate), and at 100 ms samples the paths' series lagged the flow's by about 0.2 s (time zero
/// was taken before the servers started; the paths are sampled on the real clock, the flow's
/// reports placed on the scenario's). Scenario 1 (WRR, 8 Mbit/s over 4 + 4 Mbit/s).
fn the_kernels_time_series_has_no_doubled_last_row_and_paths_in_step_with_flows() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rows = |name: &str, interval: &str| -> Vec<Vec<f64>> {
        let (dir, file) = s1_with(
            name,
            "duration = \"100s\"",
            &format!("duration = \"3s\"\nsample_interval = \"{interval}\""),
        );
        let o = mpsched()
            .args(["run", "--backend", "netns", "--variant", "WRR", "--no-plot", "--out"])
            .arg(dir.join("out"))
            .arg(&file)
            .output()
            .unwrap();
        ok(&o);
        let csv = std::fs::read_to_string(dir.join("out").join("timeseries.csv")).unwrap();
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("time_s,path1_mbps,path2_mbps,flow1_mbps"));
        lines
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect()
    };
    let second = rows("series-1s", "1s");
    assert_eq!(second.len(), 3);
    for r in &second {
        assert!(
            (7.0..8.3).contains(&r[3]),
            "flow1 at {} s: {} Mbit/s ({second:?})",
            r[0],
            r[3]
        );
    }
    let tenth = rows("series-100ms", "100ms");
    assert_eq!(tenth.len(), 30);
    // From the first interval on, the paths carry what the flow delivers (wire bytes a little
    // more than payload), not a fifth of a second later.
    for r in &tenth[..5] {
        let paths = r[1] + r[2];
        assert!(
            paths > 0.8 * r[3] && r[3] > 6.0,
            "at {} s paths {paths:.2} and flow {:.2} Mbit/s are not in step: {tenth:?}",
            r[0],
            r[3]
        );
    }
    assert!(tenth.last().unwrap()[3] < 8.3, "{tenth:?}");
    assert_clean("after the time series runs");
}

/// Issue 27 item 13: the traffic generator started the flows of the run's first half second
/// 0.4-0.6 s late (time zero was taken before the servers started, and the generator's clients
/// were started after them); every transfer now starts within a few milliseconds of its time.
fn transfers_start_on_time_on_the_kernel() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("on-time");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("on-time.toml");
    std::fs::write(&file, TRANSFERS_TOML).unwrap();
    let o = mpsched()
        .args(["run", "--backend", "netns", "--duration", "1", "--no-plot", "--out"])
        .arg(dir.join("out"))
        .arg(&file)
        .output()
        .unwrap();
    ok(&o);
    let lines = std::fs::read_to_string(dir.join("out").join("trafficgen.jsonl")).unwrap();
    let starts: Vec<(String, f64)> = lines
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["flow"].as_str().unwrap().to_string(), v["start_s"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(starts.len(), 2, "{lines}");
    // Issue 27 item 12: no per-interval window, RTT or retransmission columns of zeros for
    // transfers, which the generator samples once, at their end.
    let series = std::fs::read_to_string(dir.join("out").join("timeseries.csv")).unwrap();
    let header = series.lines().next().unwrap();
    assert!(
        header.contains("t1_mbps") && !header.contains("t1_cwnd_kib") && !header.contains("t1_retx"),
        "{header}"
    );
    for (flow, at) in &starts {
        // --duration 1 cuts the run short (#45; it scaled the timeline, t2 then at 0.2 s x
        // 1/3): t2 starts at its 0.2 s.
        let want = if flow == "t1" { 0.0 } else { 0.2 };
        assert!(
            (at - want).abs() < 0.05,
            "{flow} started at {at} s, not {want} s: {lines}"
        );
    }
    assert_clean("after the on-time transfers");
}

/// Issue 27 item 12: `compare` on transfers showed each flow's goodput, the size over the run's
/// remaining time on both backends (a ratio of 1.000 by construction), and an unfinished kernel
/// transfer as 0.000 beside the simulator's rate. It now compares what each measured: the
/// completion times, and the bytes delivered by the end; it says what it cannot compare. The
/// kernel's transfers carry their TCP_INFO figures in summary.json, not zeros.
fn compare_on_transfers_compares_completion_times_and_bytes_not_goodput() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("cmp-transfers");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("transfers.toml");
    // At 100 Mbit/s, with a third transfer that cannot finish: 80 MB in the 4.5 s from its
    // start to the end of the 2 s drain.
    let text = format!(
        "{}[[flow]]\nname = \"big\"\nsrc = \"src\"\ndst = \"dst\"\nprotocol = \"tcp\"\n\
         size = \"80MB\"\nstart = \"0.5s\"\nstop = \"3s\"\n",
        TRANSFERS_TOML.replace("10Mbps", "100Mbps")
    );
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let o = mpsched()
        .arg("compare")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("not compared for transfers: goodput"), "{stdout}");
    let v = summary(&out);
    assert!(
        v["rows"].as_array().unwrap().iter().all(|r| r["kind"] != "flow"),
        "transfers have no goodput rows: {}",
        v["rows"]
    );
    let t = v["transfers"].as_array().unwrap();
    assert_eq!(t.len(), 3, "{t:?}");
    for r in &t[..2] {
        let (s, k) = (r["sim_fct_ms"].as_f64().unwrap(), r["netns_fct_ms"].as_f64().unwrap());
        assert!(s > 0.0 && k > 0.0 && r["netns_fct_ratio"].as_f64().is_some(), "{r}");
    }
    let big = &t[2];
    assert!(big["sim_fct_ms"].is_null() && big["netns_fct_ms"].is_null(), "{big}");
    let (s, k) = (
        big["sim_delivered_mib"].as_f64().unwrap(),
        big["netns_delivered_mib"].as_f64().unwrap(),
    );
    // Up to 100 Mbit/s for about 4.5 s: tens of MiB on each, not 0 on the kernel.
    assert!(s > 10.0 && k > 10.0 && k < 76.3, "sim {s} MiB, netns {k} MiB");
    let kernel_tcp = &v["netns"][0]["repetitions"][0]["flows"][0]["tcp"];
    assert!(kernel_tcp["srtt_ms"].as_f64().unwrap() > 0.0, "{kernel_tcp}");
    assert!(kernel_tcp["mean_cwnd_kib"].as_f64().unwrap() > 0.0, "{kernel_tcp}");
    assert!(kernel_tcp["retransmitted_segments"].as_u64().is_some(), "{kernel_tcp}");
    let csv = std::fs::read_to_string(out.join("compare_transfers.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert_clean("after compare on transfers");
}
