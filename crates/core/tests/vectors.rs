//! The conformance vectors under tests/vectors/ hold for the Rust programs, and the files are
//! the standard sets' current inputs (so a changed generator cannot leave stale files behind).

use mpsched_core::vectors::{compare, run_rust, standard_sets, VectorSet};
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
fn every_vector_agrees_with_the_rust_programs() {
    let sets = files();
    assert!(sets.len() >= 10, "expected the standard sets, found {}", sets.len());
    // Sets of other programs (`"program": "letflow"`) are replayed by mpsched-programs' tests.
    for set in sets.iter().filter(|s| s.program == mpsched_core::vectors::MULTIPATH) {
        let (init, res) = run_rust(set).unwrap();
        let errs = compare(set, &init, &res);
        assert!(errs.is_empty(), "{}:\n{}", set.name, errs.join("\n"));
    }
}

#[test]
fn the_files_hold_the_standard_inputs() {
    let sets = files();
    for spec in standard_sets() {
        let file = sets
            .iter()
            .find(|s| s.name == spec.name)
            .unwrap_or_else(|| panic!("tests/vectors/{}.json missing: run `mpsched vectors write`", spec.name));
        assert_eq!(file.config, spec.config, "{}: config", spec.name);
        let frames = |s: &VectorSet| {
            s.steps
                .iter()
                .map(|x| (x.hook, x.port, x.time_ns, x.frame.clone()))
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
