//! Sweeps: a scenario's `[sweep]` (one key over values, times variants, times seeds) run on
//! every core, one result per point.
//!
//! A point is a pure function of the scenario text, the key's value, the variant and the seed
//! ([`run_point`]): it builds its own scenario from the text and runs one repetition, sharing
//! nothing with other points. So points run in any order and on any machine: `mpsched sweep`
//! runs them on a thread pool here, and a cluster runs them as an array of jobs (`--shard i/n`)
//! whose result files [`aggregate`] then reads alike.

use crate::experiment::{Backend, ExperimentError};
use mpsched_scenario::completion::{self, CompletionStats};
use mpsched_scenario::results::round;
use mpsched_scenario::{Scenario, ScenarioError, Sweep, SweepPoint};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The scenario a sweep runs, as text (each point sets its keys in it before validating).
#[derive(Clone, Debug)]
pub struct SweepSource {
    /// The scenario file's text.
    pub text: String,
    /// Where it came from, for errors.
    pub origin: String,
}

impl SweepSource {
    /// A digest of the text (CRC-32, hex), stored with every point's result so that results of
    /// another scenario, or of an edited one, are not mixed into a sweep.
    pub fn digest(&self) -> String {
        format!("{:08x}", crc32fast::hash(self.text.as_bytes()))
    }

    /// The point's concrete scenario: the text with its overrides, its variant applied.
    pub fn scenario_of(&self, sweep: &Sweep, p: &SweepPoint) -> Result<Scenario, ScenarioError> {
        let sc = Scenario::from_toml_with(&self.text, &self.origin, &p.overrides(sweep))?;
        match &p.variant {
            Some(v) => sc.with_variant(v),
            None => Ok(sc),
        }
    }
}

/// One point's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// Scenario name.
    pub scenario: String,
    /// [`SweepSource::digest`] of the text it ran.
    pub digest: String,
    /// Index among the sweep's points.
    pub index: usize,
    /// The key swept.
    pub parameter: Option<String>,
    /// Its value here, as written.
    pub value: String,
    /// Variant.
    pub variant: Option<String>,
    /// Seed.
    pub seed: u64,
    /// Sum over flows of delivered payload rates, Mbit/s.
    pub delivered_mbps: f64,
    /// Completion times (all, mice, elephants); empty without fixed-size transfers.
    pub completion: Vec<CompletionStats>,
    /// Events processed.
    pub events: u64,
    /// Engine wall time, s (not part of the figures: it varies between runs).
    pub engine_s: f64,
}

/// Run one point on `backend`.
pub fn run_point(
    src: &SweepSource,
    sweep: &Sweep,
    p: &SweepPoint,
    backend: &dyn Backend,
) -> Result<PointResult, ExperimentError> {
    let sc = src.scenario_of(sweep, p).map_err(ExperimentError::Scenario)?;
    let label = PointLabel {
        digest: src.digest(),
        index: p.index,
        parameter: sweep.parameter.clone(),
        value: p.value_label(),
    };
    run_concrete_point(&sc, p.variant.as_deref(), p.seed, label, backend)
}

/// What names a point among its sweep's, beside its variant and seed.
#[derive(Clone, Debug, PartialEq)]
pub struct PointLabel {
    /// [`SweepSource::digest`] of the text it runs (or another digest of what it runs).
    pub digest: String,
    /// Index among the sweep's points.
    pub index: usize,
    /// The key (or keys) swept.
    pub parameter: Option<String>,
    /// The value (or values) here, as written.
    pub value: String,
}

/// Run one repetition of the concrete scenario `sc` (its variant `variant` already applied)
/// with `seed` on `backend`: the point `label` names. A sweep built elsewhere (the Python
/// package's, over a grid of keys) runs its points through here, as [`run_point`] does.
pub fn run_concrete_point(
    sc: &Scenario,
    variant: Option<&str>,
    seed: u64,
    label: PointLabel,
    backend: &dyn Backend,
) -> Result<PointResult, ExperimentError> {
    let run = backend
        .run_one(sc, variant, seed, 0, &mut |_| {})
        .map_err(ExperimentError::Backend)?;
    let rows = completion::rows(sc, &run.figures).map_err(|e| ExperimentError::Backend(e.into()))?;
    let delivered: f64 = run.figures.flows.iter().map(|f| f.delivered_mbps).sum();
    Ok(PointResult {
        scenario: sc.name.clone(),
        digest: label.digest,
        index: label.index,
        parameter: label.parameter,
        value: label.value,
        variant: variant.map(str::to_string),
        seed,
        delivered_mbps: round(delivered, 4),
        completion: if rows.is_empty() {
            Vec::new()
        } else {
            completion::stats(&rows)
        },
        events: run.events,
        engine_s: run.engine_s,
    })
}

/// Run `points` on `jobs` threads (0: one per core); `done` is called as each finishes, from
/// the thread that ran it. Results come back in the order of `points`.
pub fn run_points<B: Backend + Sync>(
    src: &SweepSource,
    sweep: &Sweep,
    points: &[SweepPoint],
    backend: &B,
    jobs: usize,
    done: impl Fn(&SweepPoint, &Result<PointResult, ExperimentError>) + Sync,
) -> Result<Vec<Result<PointResult, ExperimentError>>, rayon::ThreadPoolBuildError> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    Ok(pool.install(|| {
        points
            .par_iter()
            .map(|p| {
                let r = run_point(src, sweep, p, backend);
                done(p, &r);
                r
            })
            .collect()
    }))
}

/// The figures a sweep's table and plot show, by name, for one point (None: not measured,
/// such as a completion time where nothing finished).
pub fn columns(r: &PointResult) -> Vec<(&'static str, Option<f64>)> {
    let class = |i: usize| r.completion.get(i);
    let fct = |i: usize, k: usize| class(i).and_then(|c| c.fct_ms).map(|x| x[k]);
    let slow = |i: usize, k: usize| class(i).and_then(|c| c.slowdown).map(|x| x[k]);
    let finished = class(0)
        .filter(|c| c.flows > 0)
        .map(|c| 100.0 * c.finished as f64 / c.flows as f64);
    vec![
        ("delivered_mbps", Some(r.delivered_mbps)),
        ("finished_pct", finished),
        ("fct_mean_ms", fct(0, 0)),
        ("fct_p99_ms", fct(0, 2)),
        ("mice_fct_mean_ms", fct(1, 0)),
        ("mice_fct_p99_ms", fct(1, 2)),
        ("elephants_fct_mean_ms", fct(2, 0)),
        ("slowdown_mean", slow(0, 0)),
        ("slowdown_p99", slow(0, 2)),
    ]
}

/// One (value, variant) of a sweep over its seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    /// The parameter's value, as written.
    pub value: String,
    /// Variant.
    pub variant: Option<String>,
    /// Seeds that ran.
    pub seeds: usize,
    /// Per column of [`columns`]: name and (mean, min, max, 95 % confidence interval's low and
    /// high end) over the seeds that measured it.
    pub figures: Vec<(&'static str, Option<[f64; 5]>)>,
}

/// Group point results by (value, variant), in the order the sweep lists them, and take
/// mean, min, max and 95 % confidence interval of every column over the seeds.
pub fn aggregate(results: &[PointResult]) -> Vec<SweepRow> {
    let mut sorted: Vec<&PointResult> = results.iter().collect();
    sorted.sort_by_key(|r| r.index);
    let mut rows: Vec<(String, Option<String>, Vec<&PointResult>)> = Vec::new();
    for r in sorted {
        match rows.iter_mut().find(|(v, var, _)| *v == r.value && *var == r.variant) {
            Some(row) => row.2.push(r),
            None => rows.push((r.value.clone(), r.variant.clone(), vec![r])),
        }
    }
    rows.into_iter()
        .map(|(value, variant, points)| {
            let per_point: Vec<_> = points.iter().map(|p| columns(p)).collect();
            let figures = per_point[0]
                .iter()
                .enumerate()
                .map(|(i, &(name, _))| {
                    let xs: Vec<f64> = per_point.iter().filter_map(|c| c[i].1).collect();
                    (name, spread(&xs))
                })
                .collect();
            SweepRow {
                value,
                variant,
                seeds: points.len(),
                figures,
            }
        })
        .collect()
}

/// Mean, min, max and the 95 % confidence interval of the mean (Student's t over the seeds;
/// with one seed the interval is the mean itself).
fn spread(xs: &[f64]) -> Option<[f64; 5]> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let half = if xs.len() < 2 {
        0.0
    } else {
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        t_975(xs.len() - 1) * (var / n).sqrt()
    };
    Some([round(mean, 6), min, max, round(mean - half, 6), round(mean + half, 6)])
}

/// Student's t distribution's 97.5th percentile with `df` degrees of freedom (two-sided 95 %).
pub fn t_975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(index: usize, value: &str, variant: &str, seed: u64, delivered: f64) -> PointResult {
        PointResult {
            scenario: "s".into(),
            digest: "0".into(),
            index,
            parameter: Some("workload.load".into()),
            value: value.into(),
            variant: Some(variant.into()),
            seed,
            delivered_mbps: delivered,
            completion: Vec::new(),
            events: 0,
            engine_s: 0.0,
        }
    }

    #[test]
    fn rows_group_seeds_in_sweep_order_whatever_order_points_finished_in() {
        let results = vec![
            point(3, "0.2", "B", 1, 40.0),
            point(0, "0.1", "A", 1, 10.0),
            point(2, "0.2", "A", 1, 30.0),
            point(1, "0.1", "A", 2, 20.0),
        ];
        let rows = aggregate(&results);
        let keys: Vec<(&str, &str, usize)> = rows
            .iter()
            .map(|r| (r.value.as_str(), r.variant.as_deref().unwrap(), r.seeds))
            .collect();
        assert_eq!(keys, vec![("0.1", "A", 2), ("0.2", "A", 1), ("0.2", "B", 1)]);
        // Two seeds, 10 and 20: s = 7.07, t(1) = 12.706, half-width 12.706 * 7.07 / sqrt(2) = 63.53.
        assert_eq!(
            rows[0].figures[0],
            ("delivered_mbps", Some([15.0, 10.0, 20.0, -48.53, 78.53]))
        );
        assert_eq!(
            rows[1].figures[0],
            ("delivered_mbps", Some([30.0, 30.0, 30.0, 30.0, 30.0]))
        );
        assert_eq!(
            rows[0].figures[2],
            ("fct_mean_ms", None),
            "no transfers, no completion time"
        );
    }
}
