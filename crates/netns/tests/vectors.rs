//! Every conformance vector agrees exactly between the eBPF programs (BPF_PROG_TEST_RUN) and the
//! file written from the Rust programs. Needs root; skips without it, except under CI=true.

use mpsched_core::vectors::{compare, VectorSet};
use mpsched_netns::ns::is_root;
use std::path::PathBuf;

fn root_or_skip() -> bool {
    if is_root() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true: the eBPF conformance test must run as root, not skip"
    );
    eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
    false
}

#[test]
fn every_vector_agrees_with_the_ebpf_programs() {
    if !root_or_skip() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10);
    let mut steps = 0;
    for p in &paths {
        let set: VectorSet = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        let (init, res) = mpsched_netns::vectors::run_ebpf(&set).unwrap_or_else(|e| panic!("{}: {e}", set.name));
        let errs = compare(&set, &init, &res);
        assert!(errs.is_empty(), "{}:\n{}", set.name, errs.join("\n"));
        steps += set.steps.len();
    }
    assert!(steps >= 200, "only {steps} steps");
}
