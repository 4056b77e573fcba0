//! LetFlow on the kernel.
//!
//! - Its eBPF program against its conformance vectors: every `tests/vectors/letflow-*.json`
//!   replayed by the kernel backend's runner (`mpsched_netns::vectors::run_ebpf`, the one
//!   `mpsched vectors check` uses) through `BPF_PROG_TEST_RUN`, and the verifier passing the
//!   program with the flowlet table at its largest (1 Mi slots).
//! - A scenario with `program = "letflow"` run end to end on the netns backend: two switches
//!   joined by two equal-cost paths, UDP flows between two host pairs; LetFlow's counters move
//!   (new flowlets, continued flowlets) and the traffic is delivered.
//!
//! Needs root (and tc and iperf3 for the run); without them the tests are reported ignored
//! with the reason, and under CI=true they fail instead.

use mpsched_core::vectors::{compare, VectorSet};
use mpsched_netns::backend::{new_run_id, run, NetnsOptions};
use mpsched_netns::dataplane::{NodeTables, PortBinding};
use mpsched_netns::programs::letflow::{LetflowPlane, MAX_TABLE_ENTRIES};
use mpsched_netns::vectors::{run_ebpf, TestNode};
use mpsched_scenario::Scenario;
use std::path::PathBuf;

fn letflow_sets() -> Vec<VectorSet> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut sets: Vec<VectorSet> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("letflow-"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap())
        .collect();
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    sets
}

fn letflow_ebpf_agrees_with_its_vectors() {
    let sets = letflow_sets();
    assert!(sets.len() >= 3, "the letflow sets: {}", sets.len());
    let mut errs = Vec::new();
    for set in &sets {
        let (init, res) = run_ebpf(set).unwrap_or_else(|e| panic!("{}: {e}", set.name));
        errs.extend(compare(set, &init, &res));
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

fn the_verifier_passes_letflow_with_the_largest_flowlet_table() {
    let set = &letflow_sets()[0];
    let (program, mut params) = mpsched_programs::vectors::program_of(set).unwrap();
    params
        .set(program.params(), "table_entries", MAX_TABLE_ENTRIES)
        .unwrap();
    let node = TestNode::create(set.n_ports).unwrap();
    let ports: Vec<PortBinding> = node.ports.clone();
    let tables = NodeTables {
        program: program.name(),
        params,
        ..NodeTables::multipath(set.config.clone(), ports)
    };
    node.enter(|| LetflowPlane::load(&tables).map(drop))
        .unwrap()
        .unwrap_or_else(|e| panic!("load with {MAX_TABLE_ENTRIES} slots: {e}"));
}

/// Two switches joined by two equal-cost paths (through s3 and s4); two hosts on each side;
/// two UDP flows (crates/cli/tests/bmv2.rs runs it on BMv2).
const SCENARIO: &str = include_str!("letflow-two-paths.toml");

fn a_letflow_scenario_runs_on_the_kernel_and_its_flowlets_move() {
    let sc = Scenario::from_toml(SCENARIO, "letflow-kernel.toml").expect("the scenario parses");
    let r = run(&sc, &new_run_id(), &NetnsOptions::default()).expect("the run");
    let s1 = r.figures.counters.get("s1").cloned().unwrap_or_default();
    let get = |k: &str| s1.get(k).copied().unwrap_or(0);
    assert!(get("counter.letflow.new_flowlets") > 0, "s1: {s1:?}");
    assert!(get("counter.letflow.continued") > 0, "s1: {s1:?}");
    assert_eq!(get("counter.no_route"), 0, "s1: {s1:?}");
    for f in &r.figures.flows {
        assert!(f.delivered_pkts > 0, "flow {} delivered nothing", f.id);
    }
}

fn main() {
    let missing = if !mpsched_netns::ns::is_root() {
        Some("they need root (namespaces, eBPF)".to_string())
    } else {
        mpsched_testkit::missing_tool("iperf3", &["--version"]).or_else(|| mpsched_testkit::missing_tool("tc", &["-V"]))
    };
    let tests: &[(&str, fn())] = &[
        (
            "letflow_ebpf_agrees_with_its_vectors",
            letflow_ebpf_agrees_with_its_vectors,
        ),
        (
            "the_verifier_passes_letflow_with_the_largest_flowlet_table",
            the_verifier_passes_letflow_with_the_largest_flowlet_table,
        ),
        (
            "a_letflow_scenario_runs_on_the_kernel_and_its_flowlets_move",
            a_letflow_scenario_runs_on_the_kernel_and_its_flowlets_move,
        ),
    ];
    mpsched_testkit::run_or_skip(tests, missing, "kernel LetFlow").exit();
}
