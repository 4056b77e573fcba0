//! The P4 program on BMv2 end to end: every conformance vector agrees between the Rust, eBPF
//! and P4 programs; Motohashi's scenarios 1, 2 and 3b with BMv2 as the switches split as the
//! simulator does (each path's share within 5 points), and DWRR moves flow1 off path2 there
//! too; PMQECN's Table 1 on BMv2's
//! priority queues (strict priority starves the low class, vq-wrr shares the port); PMQECN's
//! and P4QCN's rate feedback reaches the paced senders from BMv2; nothing is left behind
//! (switch processes, namespaces, files) after a normal, an interrupted or a failed run.
//!
//! These tests need root and the P4 toolchain (BMv2, p4c at build time). Without either they
//! are reported as ignored, with the reason, except under CI=true, where each of them fails
//! instead (`common::run_or_skip`).

mod common;
#[path = "bmv2_hula/live.rs"]
mod hula_live;

use common::{mpsched, ok};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// BMv2 runs share the machine's CPU: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The tests of this file.
const TESTS: &[(&str, fn())] = &[
    (
        "every_vector_agrees_across_rust_ebpf_and_bmv2",
        every_vector_agrees_across_rust_ebpf_and_bmv2,
    ),
    (
        "scenarios_1_2_and_3b_on_bmv2_split_as_the_simulator_does",
        scenarios_1_2_and_3b_on_bmv2_split_as_the_simulator_does,
    ),
    (
        "the_papers_marker_marks_on_bmv2s_own_queue_depth",
        the_papers_marker_marks_on_bmv2s_own_queue_depth,
    ),
    (
        "a_letflow_scenario_runs_on_bmv2_and_its_flowlets_move",
        a_letflow_scenario_runs_on_bmv2_and_its_flowlets_move,
    ),
    (
        "nothing_is_left_after_a_normal_an_interrupted_or_a_failed_bmv2_run",
        nothing_is_left_after_a_normal_an_interrupted_or_a_failed_bmv2_run,
    ),
    (
        "every_hula_and_mphula_vector_set_agrees_on_bmv2",
        every_hula_and_mphula_vector_set_agrees_on_bmv2,
    ),
    (
        "mphula_on_bmv2_puts_two_subflows_on_different_uplinks",
        mphula_on_bmv2_puts_two_subflows_on_different_uplinks,
    ),
    (
        "a_udp_burst_crosses_a_fat_tree_of_bmv2_hula_switches",
        a_udp_burst_crosses_a_fat_tree_of_bmv2_hula_switches,
    ),
    (
        "every_vq_wrr_vector_set_agrees_on_bmv2",
        every_vq_wrr_vector_set_agrees_on_bmv2,
    ),
    (
        "every_dcqcn_and_tcn_vector_set_agrees_on_bmv2",
        every_dcqcn_and_tcn_vector_set_agrees_on_bmv2,
    ),
    (
        "every_atsss_vector_set_agrees_on_bmv2",
        every_atsss_vector_set_agrees_on_bmv2,
    ),
    (
        "table1_on_bmv2_strict_priority_starves_the_low_class_and_vq_wrr_shares_the_port",
        table1_on_bmv2_strict_priority_starves_the_low_class_and_vq_wrr_shares_the_port,
    ),
    (
        "weighted_ports_are_refused_on_bmv2_by_name",
        weighted_ports_are_refused_on_bmv2_by_name,
    ),
    (
        "pmqecn_on_bmv2_sends_rate_feedback_that_the_paced_senders_take",
        pmqecn_on_bmv2_sends_rate_feedback_that_the_paced_senders_take,
    ),
    (
        "p4qcn_on_bmv2_sends_rate_feedback_that_the_paced_senders_take",
        p4qcn_on_bmv2_sends_rate_feedback_that_the_paced_senders_take,
    ),
];

/// vq-wrr's sets (levels by weight, another class and port at the top, departures from the
/// queue a step names, a full virtual queue, uncounted departures, weights written through the
/// control plane) on vqwrr.p4 with BMv2's priority queues, in process; nothing left.
fn every_vq_wrr_vector_set_agrees_on_bmv2() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let switches_before = switch_processes();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("vq-wrr-") && n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 2, "vq-wrr's sets: {names:?}");
    let mut steps = 0;
    for name in &names {
        let set: mpsched_core::vectors::VectorSet =
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        let (init, res) = mpsched_bmv2::vectors::run_bmv2(&set).unwrap_or_else(|e| panic!("{name}: {e}"));
        let errs = mpsched_core::vectors::compare(&set, &init, &res);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        steps += set.steps.len();
        // The sets reach what they are for: levels below the top, egress steps from queues
        // other than 0, a control-plane write.
        assert!(set.steps.iter().any(|st| st.queue > 0), "{name}");
    }
    assert!(steps >= 40, "{steps} steps");
    assert_eq!(switch_processes(), switches_before, "a simple_switch outlived its run");
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}

/// The ATSSS UPF's sets (encapsulation byte for byte, uplink, acknowledgements, malformed
/// frames, RTTMon, DWRR, CMon and the four 3GPP steering modes, weights written through the
/// control channel) on atsss.p4, in process; every kind in a set; nothing left.
fn every_atsss_vector_set_agrees_on_bmv2() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let switches_before = switch_processes();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("atsss-") && n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 8, "the UPF's sets: {names:?}");
    let mut kinds = std::collections::BTreeSet::new();
    let mut frames = 0;
    for name in &names {
        let set: mpsched_core::vectors::VectorSet =
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        kinds.extend(set.config.upf.ues.iter().map(|u| u.kind as u8));
        let (init, res) = mpsched_bmv2::vectors::run_bmv2(&set).unwrap_or_else(|e| panic!("{name}: {e}"));
        let errs = mpsched_core::vectors::compare(&set, &init, &res);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        frames += res.iter().filter(|r| r.observed.frame.is_some()).count();
    }
    assert_eq!(kinds.len(), 8, "every kind in a set: {kinds:?}");
    assert!(frames >= 50, "{frames} frames compared byte for byte");
    assert_eq!(switch_processes(), switches_before, "a simple_switch outlived its run");
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}

/// DCQCN's and TCN's sets (marks by the depth and draw, by the sojourn and its rounding to
/// BMv2's microseconds, ECN of the frames that leave) on dcqcn.p4 and tcn.p4, in process;
/// nothing left.
fn every_dcqcn_and_tcn_vector_set_agrees_on_bmv2() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let switches_before = switch_processes();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| (n.starts_with("dcqcn-") || n.starts_with("tcn-")) && n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 4, "dcqcn's and tcn's sets: {names:?}");
    let mut marked = 0;
    for name in &names {
        let set: mpsched_core::vectors::VectorSet =
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        let (init, res) = mpsched_bmv2::vectors::run_bmv2(&set).unwrap_or_else(|e| panic!("{name}: {e}"));
        let errs = mpsched_core::vectors::compare(&set, &init, &res);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        marked += res.last().unwrap().registers["counter.baseline.marked"];
    }
    assert!(marked >= 10, "{marked} marks");
    assert_eq!(switch_processes(), switches_before, "a simple_switch outlived its run");
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}

/// PMQECN's Table 1 with BMv2 as S1 and S2 (`mpsched run pmqecn2024/table1-sp-vs-vq-wrr
/// --backend bmv2 --ignore-delay`), at half its rates (5 Mbit/s links, three UDP classes
/// offering 3.1 Mbit/s each into S1's port of eight priority queues: 260 packets a second each,
/// half what BMv2 fell behind on under load), 6 s. Judged by the shares of what the
/// port carried over the steady window (2 s to the end), which the scheduler decides: strict
/// priority by BMv2's priority queues gives the high class what it offers (62 % of the port)
/// and the low class (nearly) nothing (the simulator: 0.638, 0.362, 0.000); vq-wrr (vqwrr.p4 on the same queues) gives the three
/// near-equal shares, the virtual queues dropping what the port would not carry. At the
/// paper's 10 Mbit/s a loaded machine moved the rates BMv2 carried by up to 1.0 Mbit/s (CI,
/// 2026-11-29: SP's high class at 4.87-6.52 of 6.2), which a bound on Mbit/s cannot tell from
/// a wrong scheduler.
fn table1_on_bmv2_strict_priority_starves_the_low_class_and_vq_wrr_shares_the_port() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = switch_processes();
    let out = tmp("table1");
    std::fs::create_dir_all(&out).unwrap();
    let text = mpsched_scenario::builtin::find("pmqecn2024/table1-sp-vs-vq-wrr")
        .expect("built in")
        .1
        .replace("rate = \"10Mbps\"", "rate = \"5Mbps\"")
        .replace("rate = \"6.2Mbps\"", "rate = \"3.1Mbps\"");
    let file = out.join("table1-half.toml");
    std::fs::write(&file, text).unwrap();
    let o = mpsched()
        .args(["run"])
        .arg(&file)
        .args([
            "--backend",
            "bmv2",
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
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("BMv2's priority queues"),
        "the run says how its ports are built: {err}"
    );
    let shares = |v: &str| {
        let g = common::steady_goodput(&out.join(v), 2.0);
        let total: f64 = g.values().sum();
        assert!(total > 0.0, "{v}: nothing carried: {g:?}");
        g.into_iter()
            .map(|(k, x)| (k, x / total))
            .collect::<BTreeMap<String, f64>>()
    };
    let (sp, wrr) = (shares("SP"), shares("VQ-WRR"));
    eprintln!("Table 1 on BMv2 at half its rates, shares of the steady window: SP {sp:?}, VQ-WRR {wrr:?}");
    // The high class offers 62 % of the port: strict priority serves all of it (a few of its
    // queued packets fall on either side of the window's edges), the medium class the rest.
    assert!(sp["high"] > 0.55, "SP: the high class gets what it offers: {sp:?}");
    assert!(sp["medium"] > 0.25, "SP: the medium class the rest: {sp:?}");
    assert!(
        sp["low"] < 0.06 && sp["low"] < sp["medium"] / 3.0,
        "SP: the low class starves: {sp:?}"
    );
    assert!(
        wrr.values().all(|x| (x - 1.0 / 3.0).abs() < 0.1 / 3.0),
        "VQ-WRR: near-equal shares: {wrr:?}"
    );
    // The virtual queues, not the port, drop; the only departures the counts did not expect
    // are on S1's ports of one queue (iperf3's control packets: vq-wrr places them at its
    // levels, which the port's one queue clamps to 0, as the simulator clamps them).
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("VQ-WRR/summary.json")).unwrap()).unwrap();
    let s1 = &summary["repetitions"][0]["counters"]["S1"];
    let c = |k: &str| s1[k].as_u64().unwrap_or(0);
    assert!(c("counter.vq.drops") > 0, "{s1}");
    assert!(c("counter.vq.top_level") > 0 && c("counter.vq.downgraded") > 0, "{s1}");
    let one_queue_tx: u64 = (0..3).map(|p| c(&format!("port{p}.tx_pkts"))).sum();
    assert!(c("counter.vq.accounting_errors") <= one_queue_tx, "{s1}");
    let _ = std::fs::remove_dir_all(&out);
    assert_clean("after Table 1", before);
}

/// PMQECN's congestion point on BMv2 (pmqecn.p4, its feedback a clone the switch rebuilds and
/// recirculates): [`rate_feedback_on_bmv2`] for its sets and scenario 1's PMQECN variant, and
/// the control loops run at least half their steps (a step's reads share one snapshot,
/// crates/bmv2/src/plane.rs: with one each they ran 7 of 100 in 10 s).
fn pmqecn_on_bmv2_sends_rate_feedback_that_the_paced_senders_take() {
    rate_feedback_on_bmv2("pmqecn-", "PMQECN", "counter.pmqecn.feedback", |counters| {
        for node in ["control:S1", "control:S2"] {
            let steps = counters[node]["steps"].as_u64().unwrap_or(0);
            assert!(steps >= 25, "{node} ran few of its 50 steps: {counters}");
        }
    });
}

/// P4QCN's congestion point on BMv2 (p4qcn.p4, PMQECN's feedback mechanism over the baselines'
/// FIFO): [`rate_feedback_on_bmv2`] for its sets and scenario 1's P4QCN variant, S1 sampling.
fn p4qcn_on_bmv2_sends_rate_feedback_that_the_paced_senders_take() {
    rate_feedback_on_bmv2("p4qcn-", "P4QCN", "counter.qcn.feedback", |counters| {
        let samples = counters["S1"]["counter.qcn.samples"].as_u64().unwrap_or(0);
        assert!(samples > 0, "S1 sampled nothing: {counters}");
    });
}

/// A congestion point that reflects rate feedback, on BMv2: the vector sets named
/// `<sets>*.json` in process (each agreeing with the twin and reflecting some feedback), then
/// scenario 1's `variant` for 5 s (`mpsched run pmqecn2024/s1-performance --backend bmv2
/// --ignore-delay --variant <variant>`): S1 counts feedback sent (`feedback`), every paced
/// sender takes some, and `more` checks the run's counters. Not a measurement: BMv2 on two
/// shared cores cannot carry the three senders' start (the programs' README, "The P4 program").
fn rate_feedback_on_bmv2(sets: &str, variant: &str, feedback: &str, more: impl Fn(&serde_json::Value)) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = switch_processes();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut found = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with(sets) && name.ends_with(".json")) {
            continue;
        }
        let set: mpsched_core::vectors::VectorSet =
            serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
        let (init, res) = mpsched_bmv2::vectors::run_bmv2(&set).unwrap_or_else(|e| panic!("{name}: {e}"));
        let errs = mpsched_core::vectors::compare(&set, &init, &res);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        assert!(res.iter().any(|r| r.observed.rate_feedback.is_some()), "{name}");
        found += 1;
    }
    assert!(found >= 1, "no {sets}* set in {}", dir.display());
    assert_clean(&format!("after the {sets}* sets"), before);

    let out = tmp(&format!("{}-s1", variant.to_lowercase()));
    let o = mpsched()
        .args([
            "run",
            "pmqecn2024/s1-performance",
            "--backend",
            "bmv2",
            "--ignore-delay",
            "--variant",
            variant,
            "--duration",
            "5",
            "--no-plot",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let counters = &summary["repetitions"][0]["counters"];
    let c = |node: &str, k: &str| counters[node][k].as_u64().unwrap_or(0);
    eprintln!(
        "{variant} on BMv2, 5 s: S1 {}, rate control {}",
        counters["S1"], counters["rate-control"]
    );
    assert!(c("S1", feedback) > 0, "S1 sent no feedback: {counters}");
    for flow in ["A", "B", "C"] {
        assert!(
            c("rate-control", &format!("{flow}.notifications")) > 0,
            "flow {flow} took no feedback: {counters}"
        );
    }
    more(counters);
    let _ = std::fs::remove_dir_all(&out);
    assert_clean(&format!("after {variant}'s scenario 1"), before);
}

/// A port of weighted queues (`wrr`) at a switch is refused on BMv2 before anything is made,
/// naming the link and the backend; strict priority runs (the test above).
fn weighted_ports_are_refused_on_bmv2_by_name() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (path, text) = mpsched_scenario::builtin::find("pmqecn2024/table1-sp-vs-vq-wrr").unwrap();
    let _ = path;
    // Without the VQ-WRR variant: vq-wrr itself refuses a port not under strict priority,
    // when the file is read; this is the backend's refusal of the SP variant's port.
    let text = text
        .replace(
            "discipline = \"strict-priority\"",
            "discipline = \"wrr\"\nqueue_weights = [1, 1, 1, 1, 1, 1, 1, 1]",
        )
        .replace("[[variant]]\nname = \"VQ-WRR\"\nprogram = \"vq-wrr\"\n", "");
    assert!(!text.contains("VQ-WRR\""), "the variant is gone");
    let file = tmp("wrr.toml");
    std::fs::write(&file, text).unwrap();
    let o = mpsched()
        .args([
            "run",
            "--backend",
            "bmv2",
            "--ignore-delay",
            "--variant",
            "SP",
            "--no-plot",
            "--out",
        ])
        .arg(tmp("wrr-out"))
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "a wrr port ran on BMv2: {err}");
    assert!(
        err.contains("link[3]") && err.contains("strict priority only") && err.contains("bmv2"),
        "{err}"
    );
    assert!(our_namespaces().is_empty(), "namespaces made before the refusal");
    let _ = std::fs::remove_file(&file);
}

/// HULA's and MP-HULA's sets (probes, the estimator, timers, best-k, association v0 and the
/// kernel's v1 handshake, the option walk, sub-flowlets) on hula.p4, in process; nothing left.
fn every_hula_and_mphula_vector_set_agrees_on_bmv2() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let switches_before = switch_processes();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| (n.starts_with("hula-") || n.starts_with("mphula-")) && n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 7, "HULA's sets: {names:?}");
    for name in &names {
        let set: mpsched_core::vectors::VectorSet =
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        let (init, res) = mpsched_bmv2::vectors::run_bmv2(&set).unwrap_or_else(|e| panic!("{name}: {e}"));
        let errs = mpsched_core::vectors::compare(&set, &init, &res);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
    }
    assert_eq!(switch_processes(), switches_before, "a simple_switch outlived its run");
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}

/// MP-HULA on a k = 4 fat tree of twenty `simple_switch`es, kernel MPTCP connections of two
/// subflows (bmv2_hula/live.rs): associated, joined, headers pushed, and the subflows of a
/// connection placed on different uplinks of tor0.
fn mphula_on_bmv2_puts_two_subflows_on_different_uplinks() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    hula_live::mphula_on_bmv2_puts_two_subflows_on_different_uplinks();
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}

fn main() {
    let root = mpsched_netns::ns::is_root();
    let toolchain = mpsched_bmv2::toolchain::find().and_then(|_| mpsched_bmv2::toolchain::program_json());
    let missing = match (&toolchain, root) {
        (Err(e), _) => Some(e.to_string()),
        (Ok(_), false) => Some("they need root (namespaces, veth, simple_switch)".to_string()),
        (Ok(_), true) => None,
    };
    common::clean_leftovers_of_earlier_runs();
    common::run_or_skip(TESTS, missing, "BMv2").exit();
}

/// `simple_switch` processes of this test's runs: those whose program file is named after one
/// of its namespaces (`/tmp/<namespace>.bmv2.json`), so that another user's switches on the
/// machine (a second session's tests) are not counted as this test's leaks.
fn switch_processes() -> usize {
    let out = Command::new("pgrep").args(["-x", "simple_switch"]).output().unwrap();
    let me = format!("mpsb-{}-", std::process::id());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmdline.split(|&b| b == 0).any(|arg| {
                let arg = String::from_utf8_lossy(arg);
                let Some(ns) = arg.rsplit('/').next().and_then(|f| f.strip_suffix(".bmv2.json")) else {
                    return false;
                };
                ns.starts_with(&me) || common::made_by_this_test(ns)
            })
        })
        .count()
}

/// Namespaces of this test's vector runs (`mpsb-PID-`) and of runs it started (`mps-CHILDx`).
fn our_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .filter(|l| l.starts_with(&format!("mpsb-{}-", std::process::id())) || common::made_by_this_test(l))
        .collect()
}

/// No namespace of ours, no switch process beyond `switches`, no switch file in the temp dir.
fn assert_clean(when: &str, switches: usize) {
    assert!(
        our_namespaces().is_empty(),
        "{when}: namespaces left: {:?}",
        our_namespaces()
    );
    assert_eq!(switch_processes(), switches, "{when}: a simple_switch outlived its run");
    let files: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".bmv2."))
        .filter(|n| our_namespaces_prefix(n))
        .collect();
    assert!(files.is_empty(), "{when}: files left: {files:?}");
}

fn our_namespaces_prefix(file: &str) -> bool {
    let ns = file.split(".bmv2.").next().unwrap_or("");
    ns.starts_with(&format!("mpsb-{}-", std::process::id())) || common::made_by_this_test(ns)
}

fn tmp(name: &str) -> PathBuf {
    common::scratch("mpsched-bmv2-test", name)
}

/// `mpsched compare --bmv2` on a shortened scenario, judged by what the splitter decides:
/// each path's share of what the paths carried, with BMv2 as the switches, within 5 points
/// of the simulator's; and every flow delivers.
///
/// Not by goodput: BMv2 forwards in user space, and on a shared 2-core machine a run in which
/// other work took its cores loses packets at its switches that the scenario does not (one CI
/// run on 2026-11-28: s1 RS flow1 lost 15.8 % on BMv2 against 1.7 % on eBPF and 1.3 % in the
/// simulator; a 10 % band on goodput then needed a second run). Where the packets a switch
/// took go is the program's decision, whatever it lost before it saw them.
fn compare_with_bmv2(scenario: &str, duration: &str, variants: &[&str]) -> serde_json::Value {
    let dir = tmp(scenario);
    let mut cmd = mpsched();
    cmd.args(["compare", scenario, "--bmv2", "--duration", duration, "--out"])
        .arg(&dir);
    for v in variants {
        cmd.args(["--variant", v]);
    }
    let out = cmd.output().unwrap();
    ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bmv2"), "no BMv2 column: {text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("compare.json")).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let flows: Vec<&serde_json::Value> = rows.iter().filter(|r| r["kind"] == "flow").collect();
    assert!(!flows.is_empty(), "{scenario}: no flow rows");
    for f in &flows {
        assert!(
            f["bmv2_mbps"].as_f64().unwrap() > 0.0,
            "{scenario}: delivered nothing on BMv2: {f}"
        );
    }
    let shares = path_shares(rows);
    assert!(!shares.is_empty(), "{scenario}: no path rows");
    eprintln!("{scenario}: path shares (variant, path, simulator, BMv2): {shares:?}");
    for (variant, path, sim, bmv2) in &shares {
        assert!(
            (sim - bmv2).abs() <= 0.05,
            "{scenario} {variant}: {path} carried {:.1} % of the paths' packets on BMv2, {:.1} % in the simulator",
            100.0 * bmv2,
            100.0 * sim
        );
    }
    assert!(std::fs::metadata(dir.join("compare.png")).unwrap().len() > 10_000);
    let _ = std::fs::remove_dir_all(&dir);
    v
}

/// Per variant and path of compare.json's rows: (variant, path, share of the variant's paths'
/// Mbit/s in the simulator, the same with BMv2).
fn path_shares(rows: &[serde_json::Value]) -> Vec<(String, String, f64, f64)> {
    let paths: Vec<&serde_json::Value> = rows.iter().filter(|r| r["kind"] == "path").collect();
    let total = |variant: &serde_json::Value, key: &str| -> f64 {
        paths
            .iter()
            .filter(|r| r["variant"] == *variant)
            .map(|r| r[key].as_f64().unwrap())
            .sum()
    };
    paths
        .iter()
        .map(|r| {
            let share = |key: &str| r[key].as_f64().unwrap() / total(&r["variant"], key).max(1e-9);
            (
                r["variant"].as_str().unwrap_or("").to_string(),
                r["id"].as_str().unwrap_or("").to_string(),
                share("sim_mbps"),
                share("bmv2_mbps"),
            )
        })
        .collect()
}

fn scenarios_1_2_and_3b_on_bmv2_split_as_the_simulator_does() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = switch_processes();
    compare_with_bmv2("s1-homogeneous", "10", &["RS", "WRR", "SP1"]);
    compare_with_bmv2("s2-heterogeneous", "10", &["RS", "WRR"]);
    // Cut at 40 s: flow 2, from 20 s, congests path2 for 20 s.
    let v = compare_with_bmv2("s3b-dwrr-two-flows", "40", &["DWRR"]);
    let counters = &v["bmv2"][0]["repetitions"][0]["counters"]["ap1"];
    assert!(
        counters["split0.feedback_rx"].as_u64().unwrap_or(0) > 0,
        "no feedback reached the splitter on BMv2: {counters}"
    );
    // Each adjustment moves one unit off the congested path2: five or more take 32:16 past 3:1.
    let moved = counters["split0.adjustments"].as_u64().unwrap_or(0);
    assert!(
        moved >= 5,
        "{moved} adjustments: DWRR on BMv2 did not move flow1 off path2 ({counters})"
    );
    assert_clean("after the comparisons", before);
}

/// A BMv2 run of scenario 3b long enough to interrupt, returned once its switches run.
fn start_long_bmv2_run(out: &str) -> std::process::Child {
    let child = mpsched()
        .args([
            "run",
            "s3b-dwrr-two-flows",
            "--backend",
            "bmv2",
            "--variant",
            "DWRR",
            "--no-plot",
            "--out",
        ])
        .arg(tmp(out))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while switch_processes() < 4 {
        assert!(Instant::now() < deadline, "the run never started its four switches");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    child
}

/// A 3-second BMv2 run of scenario 1's WRR variant into `out`.
fn short_run(out: &std::path::Path) -> Command {
    let mut c = mpsched();
    c.args(["run", "s1-homogeneous", "--backend", "bmv2", "--duration", "3"])
        .args(["--variant", "WRR", "--no-plot", "--out"])
        .arg(out);
    c
}

fn nothing_is_left_after_a_normal_an_interrupted_or_a_failed_bmv2_run() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = switch_processes();

    // Normal: a short run, its results written.
    let out = tmp("normal");
    ok(&short_run(&out).output().unwrap());
    assert!(out.join("summary.json").exists());
    assert_clean("after a normal run", before);

    // SIGINT, and SIGHUP (a closed terminal, issue 45), part-way: exit 128 + the signal, every
    // switch stopped, every namespace and file removed.
    for (sig, code) in [("-INT", 130), ("-HUP", 129)] {
        let mut child = start_long_bmv2_run("interrupted");
        assert!(!our_namespaces().is_empty(), "the run never built its namespaces");
        Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .unwrap();
        assert_eq!(
            child.wait().unwrap().code(),
            Some(code),
            "a run interrupted by {sig} exits with {code}"
        );
        assert_clean(&format!("after {sig}"), before);
    }

    // Failed: the switches cannot start (a simple_switch that exits at once, found first through
    // MPSCHED_P4_PREFIX) after the namespaces, links and hosts exist.
    let fake = tmp("fake-p4");
    std::fs::create_dir_all(fake.join("bin")).unwrap();
    for tool in ["simple_switch", "simple_switch_CLI"] {
        let path = fake.join("bin").join(tool);
        std::fs::write(&path, "#!/bin/sh\necho 'this switch fails on purpose' >&2\nexit 1\n").unwrap();
        Command::new("chmod").arg("755").arg(&path).status().unwrap();
    }
    let o = short_run(&tmp("failed"))
        .env("MPSCHED_P4_PREFIX", &fake)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("fails on purpose"), "{err}");
    assert_clean("after a failed run", before);
    let _ = std::fs::remove_dir_all(&fake);

    // SIGKILL leaves the switches running; `mpsched clean` removes them with their files.
    let mut child = start_long_bmv2_run("killed");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        switch_processes() > before,
        "SIGKILL should leave the switches for clean to find"
    );
    ok(&mpsched().arg("clean").output().unwrap());
    assert_clean("after mpsched clean", before);
}

/// `mpsched vectors check` in three columns, every set agreeing in each; the switches it
/// started are gone afterwards, with their namespaces.
fn every_vector_agrees_across_rust_ebpf_and_bmv2() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let switches_before = switch_processes();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let out = Command::new(env!("CARGO_BIN_EXE_mpsched"))
        .args(["vectors", "check", "--impl", "rust", "--impl", "ebpf", "--impl", "bmv2"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("rust") && header.contains("ebpf") && header.contains("bmv2"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().skip(1).filter(|l| !l.starts_with(' ')).collect();
    assert!(rows.len() >= 12, "{text}");
    let mut steps = 0;
    // Every program has its eBPF and P4 twins (the ATSSS UPF's too): no column reads `none`.
    assert!(!text.lines().any(|l| l.trim_start().starts_with("none:")), "{text}");
    for row in &rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[2..], ["agree", "agree", "agree"], "{row}");
        steps += cells[1].parse::<usize>().unwrap();
    }
    assert!(rows.iter().any(|r| r.starts_with("p4qcn-")), "P4QCN's sets: {text}");
    assert!(steps >= 250, "only {steps} steps");
    // LetFlow's sets run on letflow.p4 and letflow.bpf.o, in the same three columns.
    let letflow = rows.iter().filter(|r| r.starts_with("letflow-")).count();
    assert!(letflow >= 3, "LetFlow's sets: {letflow}\n{text}");
    // In-process too: the library's runner leaves nothing behind either.
    for name in ["confluence-feedback.json", "letflow-expiry.json"] {
        let set: mpsched_core::vectors::VectorSet =
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap();
        let (init, res) = mpsched_bmv2::vectors::run_bmv2(&set).unwrap();
        assert!(mpsched_core::vectors::compare(&set, &init, &res).is_empty(), "{name}");
    }
    assert_eq!(switch_processes(), switches_before, "a simple_switch outlived its run");
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}

/// LetFlow with `simple_switch` as the switches (letflow.p4 and its control plane): the
/// scenario crates/netns/tests/letflow.rs runs on the kernel, two equal-cost paths and two UDP
/// flows; LetFlow's counters move and the traffic arrives.
fn a_letflow_scenario_runs_on_bmv2_and_its_flowlets_move() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../netns/tests/letflow-two-paths.toml"),
    )
    .unwrap();
    let sc = mpsched_scenario::Scenario::from_toml(&text, "letflow-two-paths.toml").unwrap();
    let opts = mpsched_netns::backend::NetnsOptions {
        switch_planes: Some(std::sync::Arc::new(mpsched_bmv2::plane::Bmv2Planes)),
        ..Default::default()
    };
    let r = mpsched_netns::backend::run(&sc, &mpsched_netns::backend::new_run_id(), &opts).unwrap();
    let s1 = r.figures.counters.get("s1").cloned().unwrap_or_default();
    let get = |k: &str| s1.get(k).copied().unwrap_or(0);
    assert!(get("counter.letflow.new_flowlets") > 0, "s1: {s1:?}");
    assert!(get("counter.letflow.continued") > 0, "s1: {s1:?}");
    assert_eq!(get("counter.no_route"), 0, "s1: {s1:?}");
    for f in &r.figures.flows {
        assert!(f.delivered_pkts > 0, "flow {} delivered nothing on BMv2", f.id);
    }
}

/// The paper's marker (Fig. 6), which the vectors cannot reach: with BMv2's own queue on port 1
/// drained at 200 packets/s (`set_queue_rate`, as the papers' Mininet runs shape), a burst of
/// 40 ECT(0) frames leaves with CE on those that found at least 5 packets still queued behind
/// them (`deq_qdepth`), none on the first; a back-to-back burst of Not-ECT frames arrives whole
/// and is counted, not marked.
fn the_papers_marker_marks_on_bmv2s_own_queue_depth() {
    use mpsched_core::packet::{Ecn, PacketMeta};
    use mpsched_core::switch::SwitchConfig;
    use mpsched_core::table::Route;
    use mpsched_core::wire::{emit_udp_frame, mac_for, parse_frame};
    use mpsched_netns::dataplane::{NodeTables, PortBinding};
    use mpsched_netns::ns::Netns;
    use mpsched_netns::tap::Tap;

    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = Netns::create(&format!("mpsb-{}-qdepth", std::process::id())).unwrap();
    for k in ["all", "default"] {
        ns.sysctl(&format!("net.ipv6.conf.{k}.disable_ipv6"), "1").unwrap();
    }
    ns.ip(&["link", "set", "lo", "up"]).unwrap();
    for p in 0..2 {
        let (a, b) = (format!("p{p}"), format!("q{p}"));
        ns.ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]).unwrap();
        ns.ip(&["link", "set", &a, "up"]).unwrap();
        ns.ip(&["link", "set", &b, "up"]).unwrap();
        // As the bmv2 backend does: with offloads on, libpcap's ring in front of BMv2 holds
        // 32 frames and this burst of 40 would lose 8 before BMv2 saw them.
        ns.frames_as_on_the_wire(&a, true);
    }
    let (src, dst) = (0x0a00_0001, 0x0a00_0003);
    let mut cfg = SwitchConfig::forwarding(
        0x0aff_0001,
        vec![Route {
            prefix: dst,
            len: 32,
            port: 1,
        }],
    );
    cfg.ecn_markers = vec![(1, 5)];
    let ports = (0..2)
        .map(|p| PortBinding {
            ifindex: 0,
            own_mac: mac_for(1, p),
            peer_mac: mac_for(2, p),
        })
        .collect();
    let tables = NodeTables::multipath(cfg, ports);
    let opts = mpsched_bmv2::switch::SwitchOptions {
        ports: vec![(0, "p0".into()), (1, "p1".into())],
        thrift_port: 9090,
        log_file: None,
        program: "mpsched",
        priority_queues: None,
    };
    let mut sw = mpsched_bmv2::switch::Bmv2Switch::start(&ns, &opts).unwrap();
    mpsched_bmv2::control::configure(&mut sw.cli, &tables).unwrap();
    sw.cli.run("set_queue_rate 200 1").unwrap();
    let (q0, q1) = (ns.ifindex("q0").unwrap(), ns.ifindex("q1").unwrap());
    let tap_in = ns.enter(|| Tap::open(q0)).unwrap().unwrap();
    let tap_out = ns.enter(|| Tap::open(q1)).unwrap().unwrap();
    let burst = |ecn: Ecn, paced: bool| -> Vec<Ecn> {
        for i in 0..40u16 {
            let mut m = PacketMeta::udp(src, dst, 5001, 5201, 0);
            m.ecn = ecn;
            let mut f = Vec::new();
            emit_udp_frame(&m, mac_for(2, 0), mac_for(1, 0), i, &[0u8; 100], &mut f);
            tap_in.send(&f).unwrap();
            if paced {
                // 1 000 frames/s, five times the queue's rate: the first frame leaves before
                // the second arrives.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.len() < 40 && Instant::now() < deadline {
            if let Some(f) = tap_out.next(100) {
                got.push(parse_frame(&f, 50_000).unwrap().ecn);
            }
        }
        got
    };
    let ect = burst(Ecn::Ect0, true);
    assert_eq!(
        ect.len(),
        40,
        "BMv2 queues 64 packets: none of 40 should be lost: {ect:?}"
    );
    assert_eq!(ect[0], Ecn::Ect0, "the first frame found an empty queue: {ect:?}");
    let marked = ect.iter().filter(|e| **e == Ecn::Ce).count();
    assert!((20..40).contains(&marked), "{marked} of 40 marked: {ect:?}");
    let counted = |sw: &mut mpsched_bmv2::switch::Bmv2Switch, name: &str| {
        sw.cli.register_read_all(&format!("MpsEgress.marker_{name}")).unwrap()[1]
    };
    assert_eq!(counted(&mut sw, "marked"), marked as u64);
    // Back to back this time: all 40 reach BMv2 (not so with 32 ring slots, above).
    let not_ect = burst(Ecn::NotEct, false);
    assert_eq!(not_ect.len(), 40, "frames lost before BMv2: {not_ect:?}");
    assert!(not_ect.iter().all(|e| *e == Ecn::NotEct), "{not_ect:?}");
    assert!(counted(&mut sw, "not_ect_over_threshold") >= 20);
}

/// MP-HULA's fat tree on BMv2 (bmv2_hula/live.rs): probes find the paths, a UDP burst from
/// tor0-h0 reaches tor4-h0 in another pod; nothing is left afterwards.
fn a_udp_burst_crosses_a_fat_tree_of_bmv2_hula_switches() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    hula_live::a_udp_burst_crosses_the_fat_tree();
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}
