//! A generated fat tree in the simulator: ECMP routing runs, is deterministic, and a permutation
//! of long TCP flows stays below full bisection bandwidth because flows collide on links.

use mpsched_scenario::builtin;
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};

fn permutation(duration_ps: u64) -> Scenario {
    let (path, text) = builtin::find("dc/fat-tree-k4-permutation").unwrap();
    Scenario::from_toml(text, path).unwrap().scaled_to(duration_ps)
}

fn run(sc: &Scenario) -> RunFigures {
    Simulation::new(sc, &SimOptions::with_seed(sc.seed))
        .unwrap()
        .run()
        .unwrap()
        .figures
}

#[test]
fn a_permutation_on_a_fat_tree_collides_under_ecmp_and_repeats_exactly() {
    let sc = permutation(300_000_000_000);
    let a = run(&sc);
    assert_eq!(a.flows.len(), 16);
    let total: f64 = a.flows.iter().map(|f| f.delivered_mbps).sum();
    // Full bisection: 16 flows of 1 Gbit/s. Collisions on shared uplinks cost a good part of it.
    assert!(total > 3_000.0 && total < 0.9 * 16_000.0, "total {total} Mbit/s");
    assert!(a.flows.iter().all(|f| f.delivered_mbps > 0.0), "every flow delivers");
    let b = run(&sc);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap(),
        "same seed, same figures"
    );
}
