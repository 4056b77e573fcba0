//! Running a scenario's variants and repetitions on a backend and aggregating them into
//! summaries.

use crate::{CaptureRequest, TimeSeries};
use mpsched_scenario::completion;
use mpsched_scenario::results::{RunFigures, Summary};
use mpsched_scenario::{Scenario, ScenarioError};

/// Picoseconds per second: scenarios hold time in picoseconds.
const PS_PER_S: u64 = 1_000_000_000_000;

/// One configuration's results: the summary over repetitions and the first run's time series.
pub struct VariantResult {
    /// Variant name (None for a scenario without variants).
    pub variant: Option<String>,
    /// The summary.
    pub summary: Summary,
    /// Time series of the first repetition.
    pub series: TimeSeries,
    /// Events processed over all repetitions.
    pub events: u64,
    /// Wall time the engine spent processing them, without building the simulations or
    /// collecting their results.
    pub engine_s: f64,
    /// Extra files of the first repetition, (file name, contents), written beside the results.
    pub artifacts: Vec<(String, String)>,
    /// Completion rows of the first repetition's fixed-size transfers (`flows.csv`); empty
    /// without transfers.
    pub transfers: Vec<completion::CompletionRow>,
    /// The concrete scenario that ran.
    pub scenario: Scenario,
}

/// Errors of an experiment.
#[derive(Debug)]
pub enum ExperimentError {
    /// The scenario or a variant is invalid.
    Scenario(ScenarioError),
    /// The backend failed (a `SimError`, a kernel backend's error, ...).
    Backend(BackendError),
}

impl std::fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExperimentError::Scenario(e) => e.fmt(f),
            ExperimentError::Backend(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ExperimentError {}

/// Which configurations to run and how.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Variants to run; empty runs all of them (or the scenario as written if it has none).
    pub variants: Vec<String>,
    /// Base seed (default: the scenario's).
    pub seed: Option<u64>,
    /// Repetitions (default: the scenario's).
    pub repetitions: Option<u32>,
    /// Captures to take (the simulator's `run_plan` hands them to its backend; a backend
    /// built by its caller is given them there).
    pub captures: Vec<CaptureRequest>,
}

impl Plan {
    /// The variants to run: those asked for, else all of the scenario's, else the scenario as
    /// written (`None`).
    pub fn variant_names(&self, sc: &Scenario) -> Vec<Option<String>> {
        if !self.variants.is_empty() {
            self.variants.iter().cloned().map(Some).collect()
        } else if sc.variants.is_empty() {
            vec![None]
        } else {
            sc.variant_names().into_iter().map(Some).collect()
        }
    }
}

/// What one run of one concrete scenario (a variant applied) produced, on any backend.
pub struct RunResult {
    /// The figures of this run.
    pub figures: RunFigures,
    /// The time series.
    pub series: TimeSeries,
    /// Events processed (0 where a backend has no events).
    pub events: u64,
    /// Wall time of the run proper, without building or collecting.
    pub engine_s: f64,
    /// Extra files the backend writes beside the results, (file name, contents).
    pub artifacts: Vec<(String, String)>,
}

/// A backend: runs one concrete scenario with one seed. The experiment runner
/// ([`run_plan_on`]) does the variants, the repetitions and the summaries for every backend
/// alike.
pub trait Backend {
    /// Its name in summaries (`sim`, `netns`).
    fn name(&self) -> &'static str;

    /// Repetitions when the plan asks for none.
    fn default_repetitions(&self, sc: &Scenario) -> u32 {
        sc.repetitions
    }

    /// Scenario time one run of `sc` covers, in picoseconds (for progress).
    fn run_ps(&self, sc: &Scenario) -> u64;

    /// Run `sc` (variant `variant`, repetition `rep`) with `seed`; `progress` gets the scenario
    /// time done so far in this run.
    fn run_one(
        &self,
        sc: &Scenario,
        variant: Option<&str>,
        seed: u64,
        rep: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Result<RunResult, BackendError>;
}

/// A backend's failure, kept whole so that a caller can tell its kinds apart (downcast).
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// Run `plan` on `sc` on `backend`: every variant asked for, each repeated with seeds
/// `seed, seed + 1, ...`, aggregated into one summary per variant. `progress` is called with
/// the scenario time done so far over the whole plan.
pub fn run_plan_on(
    sc: &Scenario,
    plan: &Plan,
    backend: &dyn Backend,
    mut progress: impl FnMut(u64),
) -> Result<Vec<VariantResult>, ExperimentError> {
    let seed = plan.seed.unwrap_or(sc.seed);
    let reps = plan.repetitions.unwrap_or(backend.default_repetitions(sc)).max(1);
    let mut done_ps = 0u64;
    let mut results = Vec::new();
    for name in plan.variant_names(sc) {
        let concrete = match &name {
            Some(v) => sc.with_variant(v).map_err(ExperimentError::Scenario)?,
            None => sc.clone(),
        };
        let (mut runs, mut first, mut artifacts) = (Vec::new(), None, Vec::new());
        let (mut events, mut engine_s) = (0, 0.0);
        for r in 0..reps {
            let mut one = concrete.clone();
            one.seed = seed + u64::from(r);
            let run = backend
                .run_one(&one, name.as_deref(), one.seed, r, &mut |t| progress(done_ps + t))
                .map_err(ExperimentError::Backend)?;
            done_ps += backend.run_ps(&one);
            events += run.events;
            engine_s += run.engine_s;
            if first.is_none() {
                first = Some(run.series);
                artifacts = run.artifacts;
            }
            runs.push(run.figures);
        }
        let per_run = completion::rows_of_runs(&concrete, &runs).map_err(|e| ExperimentError::Backend(e.into()))?;
        let transfers = per_run.first().cloned().unwrap_or_default();
        let pooled = per_run.concat();
        let mut summary = Summary::aggregate(
            &sc.name,
            name.as_deref(),
            &sc.reproduces,
            backend.name(),
            seed,
            concrete.duration_ps as f64 / PS_PER_S as f64,
            runs,
        );
        if !pooled.is_empty() {
            summary.completion = completion::stats(&pooled);
        }
        results.push(VariantResult {
            variant: name,
            summary,
            series: first.unwrap_or_default(),
            events,
            engine_s,
            artifacts,
            transfers,
            scenario: concrete,
        });
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_scenario::builtin;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    /// A backend that runs nothing: it records what it was asked and reports empty figures.
    #[derive(Default)]
    struct Recorder {
        calls: RefCell<Vec<(Option<String>, u64, u32)>>,
    }

    impl Backend for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }

        fn run_ps(&self, sc: &Scenario) -> u64 {
            sc.duration_ps
        }

        fn run_one(
            &self,
            sc: &Scenario,
            variant: Option<&str>,
            seed: u64,
            rep: u32,
            progress: &mut dyn FnMut(u64),
        ) -> Result<RunResult, BackendError> {
            self.calls.borrow_mut().push((variant.map(str::to_string), seed, rep));
            progress(sc.duration_ps);
            Ok(RunResult {
                figures: RunFigures {
                    seed,
                    flows: Vec::new(),
                    paths: Vec::new(),
                    counters: BTreeMap::new(),
                    tunnels: Vec::new(),
                    link_model: None,
                },
                series: TimeSeries {
                    columns: vec!["time_s".into()],
                    rows: vec![vec![f64::from(rep)]],
                },
                events: 1,
                engine_s: 0.0,
                artifacts: vec![(format!("rep{rep}.txt"), String::new())],
            })
        }
    }

    #[test]
    fn every_variant_runs_each_repetition_with_consecutive_seeds_and_keeps_the_first_series() {
        let (path, text) = builtin::find("s3b-dwrr-two-flows").unwrap();
        let sc = Scenario::from_toml(text, path).unwrap();
        let names = sc.variant_names();
        assert!(names.len() >= 2);
        let plan = Plan {
            variants: names[..2].to_vec(),
            seed: Some(7),
            repetitions: Some(3),
            captures: Vec::new(),
        };
        let backend = Recorder::default();
        let mut last = 0;
        let results = run_plan_on(&sc, &plan, &backend, |t| last = t).unwrap();
        let expected: Vec<_> = names[..2]
            .iter()
            .flat_map(|v| (0..3).map(move |r| (Some(v.clone()), 7 + u64::from(r), r)))
            .collect();
        assert_eq!(*backend.calls.borrow(), expected);
        assert_eq!(last, 6 * sc.duration_ps);
        assert_eq!(results.len(), 2);
        for (res, name) in results.iter().zip(&names) {
            assert_eq!(res.variant.as_deref(), Some(name.as_str()));
            assert_eq!(res.events, 3);
            assert_eq!(res.series.rows, vec![vec![0.0]]);
            assert_eq!(res.artifacts[0].0, "rep0.txt");
        }
    }

    #[test]
    fn an_invalid_variant_is_a_scenario_error() {
        let (path, text) = builtin::find("s3b-dwrr-two-flows").unwrap();
        let sc = Scenario::from_toml(text, path).unwrap();
        let plan = Plan {
            variants: vec!["no-such-variant".into()],
            ..Plan::default()
        };
        let err = run_plan_on(&sc, &plan, &Recorder::default(), |_| {}).err().unwrap();
        assert!(matches!(err, ExperimentError::Scenario(_)));
    }
}
