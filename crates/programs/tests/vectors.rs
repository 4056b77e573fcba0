//! Every conformance vector under tests/vectors/ holds for its program's Rust twin, whichever
//! program it names (the multipath switch's through `mpsched_core::vectors`), and the files hold
//! every program's standard sets' current inputs, so a changed generator cannot leave stale files.

use mpsched_core::vectors::{compare, VectorSet};
use mpsched_programs::vectors::{run_rust, standard_sets};
use std::path::PathBuf;

fn files() -> Vec<VectorSet> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/vectors exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

#[test]
fn every_vector_agrees_with_its_programs_rust_twin() {
    let sets = files();
    assert!(sets.len() >= 13, "expected the standard sets, found {}", sets.len());
    assert!(sets.iter().any(|s| s.program == "letflow"), "no letflow sets");
    for set in &sets {
        let (init, res) = run_rust(set).unwrap_or_else(|e| panic!("{e}"));
        let errs = compare(set, &init, &res);
        assert!(errs.is_empty(), "{}:\n{}", set.name, errs.join("\n"));
    }
}

#[test]
fn the_files_hold_every_programs_standard_inputs() {
    let sets = files();
    for spec in standard_sets() {
        let file = sets
            .iter()
            .find(|s| s.name == spec.name)
            .unwrap_or_else(|| panic!("tests/vectors/{}.json missing: run `mpsched vectors write`", spec.name));
        assert_eq!(
            (&file.program, &file.params, &file.config, &file.rs_raw_draws),
            (&spec.program, &spec.params, &spec.config, &spec.rs_raw_draws),
            "{}: program, params, config, draws; run `mpsched vectors write`",
            spec.name
        );
        let frames = |s: &VectorSet| {
            s.steps
                .iter()
                .map(|x| {
                    let queue = (x.queue, x.enq_qdepth_pkts, x.sojourn_ns);
                    (x.hook, x.port, x.time_ns, queue, x.frame.clone())
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            frames(file),
            frames(&spec),
            "{}: steps; run `mpsched vectors write`",
            spec.name
        );
    }
}
