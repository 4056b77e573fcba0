//! Sweeps (#11 item 5): a point is a pure function of text, value, variant and seed; the
//! built-in load sweep's completion times rise with load, mice and elephants apart.

use mpsched_scenario::builtin;
use mpsched_scenario::overrides::Override;
use mpsched_scenario::Scenario;
use mpsched_sim::experiment::SimBackend;
use mpsched_sim::sweep::{aggregate, run_points, PointResult, SweepSource};

/// The built-in load sweep, shortened: arrivals for 150 ms, 300 ms in all.
fn source() -> SweepSource {
    let (path, text) = builtin::find("dc/websearch-k4-load").unwrap();
    let mut doc: toml::Table = text.parse().unwrap();
    for (k, v) in [("scenario.duration", "300ms"), ("workload.stop", "150ms")] {
        mpsched_scenario::overrides::apply(&mut doc, &Override::parse(k, v).unwrap()).unwrap();
    }
    SweepSource {
        text: toml::to_string(&doc).unwrap(),
        origin: path.into(),
    }
}

/// What a point's figures are, without the engine's wall time.
fn figures(r: &PointResult) -> String {
    let mut r = r.clone();
    r.engine_s = 0.0;
    serde_json::to_string(&r).unwrap()
}

#[test]
fn points_repeat_exactly_in_any_order_and_on_any_number_of_threads() {
    let src = source();
    let sc = Scenario::from_toml(&src.text, &src.origin).unwrap();
    let mut sw = sc.sweep.clone().unwrap();
    sw.values = vec![toml::Value::Float(0.3), toml::Value::Float(0.6)];
    sw.seeds = vec![1, 2];
    sw.variants = vec!["ECMP".into()];
    let points = sw.points();
    assert_eq!(points.len(), 4);
    let one = run_points(&src, &sw, &points, &SimBackend::default(), 1, |_, _| {}).unwrap();
    let mut reversed = points.clone();
    reversed.reverse();
    let two = run_points(&src, &sw, &reversed, &SimBackend::default(), 2, |_, _| {}).unwrap();
    let one: Vec<String> = one.iter().map(|r| figures(r.as_ref().unwrap())).collect();
    let mut two: Vec<String> = two.iter().map(|r| figures(r.as_ref().unwrap())).collect();
    two.reverse();
    assert_eq!(one, two, "same points, same figures, whatever the order and threads");
    assert_ne!(one[0], one[1], "another seed draws other flows");
}

#[test]
fn completion_times_rise_with_load_for_mice_and_elephants_apart() {
    let src = source();
    let sc = Scenario::from_toml(&src.text, &src.origin).unwrap();
    let mut sw = sc.sweep.clone().unwrap();
    sw.values = vec![toml::Value::Float(0.1), toml::Value::Float(0.9)];
    sw.seeds = vec![1, 2];
    let results: Vec<PointResult> = run_points(&src, &sw, &sw.points(), &SimBackend::default(), 2, |_, _| {})
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let rows = aggregate(&results);
    assert_eq!(rows.len(), 4, "two loads x two variants");
    let mean = |value: &str, variant: &str, column: &str| {
        let row = rows
            .iter()
            .find(|r| r.value == value && r.variant.as_deref() == Some(variant))
            .unwrap();
        row.figures.iter().find(|(n, _)| *n == column).unwrap().1.unwrap()[0]
    };
    for variant in ["ECMP", "single-path"] {
        for column in ["fct_mean_ms", "fct_p99_ms", "mice_fct_mean_ms"] {
            let (low, high) = (mean("0.1", variant, column), mean("0.9", variant, column));
            assert!(high > low, "{variant} {column}: {low} at 10 % load, {high} at 90 %");
        }
    }
    // Elephants are rare (about 1 in 40 flows): present at 90 %, and slower than mice.
    assert!(mean("0.9", "ECMP", "elephants_fct_mean_ms") > mean("0.9", "ECMP", "mice_fct_mean_ms"));
    assert!(
        mean("0.9", "single-path", "fct_mean_ms") > mean("0.9", "ECMP", "fct_mean_ms"),
        "one path per destination is slower than spreading flows at high load"
    );
}
