//! Running a scenario's variants and repetitions and aggregating them into summaries.

use crate::event::PS_PER_S;
use crate::sim::{CaptureRequest, RunOutput, SimOptions, Simulation};
use crate::TimeSeries;
use mpsched_scenario::completion;
use mpsched_scenario::results::{RunFigures, Summary};
use mpsched_scenario::{Scenario, ScenarioError};

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
    /// Simulator captures (see [`SimBackend::captures`]), for [`run_plan`].
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

/// Total simulated picoseconds the plan will run (for a progress bar).
pub fn planned_ps(sc: &Scenario, plan: &Plan) -> u64 {
    let reps = u64::from(plan.repetitions.unwrap_or(sc.repetitions));
    let variants = if plan.variants.is_empty() {
        sc.variants.len().max(1)
    } else {
        plan.variants.len()
    } as u64;
    (sc.duration_ps + crate::sim::DEFAULT_DRAIN_PS) * reps * variants
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

/// The simulator as a backend.
#[derive(Clone, Debug, Default)]
pub struct SimBackend {
    /// Captures, taken in the first repetition of each variant; `{variant}` in a path is
    /// replaced by the variant's name.
    pub captures: Vec<CaptureRequest>,
}

impl Backend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn run_ps(&self, sc: &Scenario) -> u64 {
        sc.duration_ps + crate::sim::DEFAULT_DRAIN_PS
    }

    fn run_one(
        &self,
        sc: &Scenario,
        variant: Option<&str>,
        seed: u64,
        rep: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Result<RunResult, BackendError> {
        let mut opts = SimOptions::with_seed(seed);
        if rep == 0 {
            let v = variant.unwrap_or("run");
            opts.captures = self.captures.iter().map(|c| c.for_variant(v)).collect();
        }
        let mut sim = Simulation::new(sc, &opts)?;
        let (step, mut t, mut engine_s) = (PS_PER_S / 2, 0, 0.0);
        while t < sim.end_ps() {
            t = (t + step).min(sim.end_ps());
            let started = std::time::Instant::now();
            sim.run_until(t);
            engine_s += started.elapsed().as_secs_f64();
            progress(t);
        }
        let RunOutput {
            figures,
            series,
            events,
            ..
        } = sim.finish()?;
        Ok(RunResult {
            figures,
            series,
            events,
            engine_s,
            artifacts: Vec::new(),
        })
    }
}

/// Run `plan` on `sc` in the simulator. `progress` is called with simulated picoseconds done
/// so far.
pub fn run_plan(sc: &Scenario, plan: &Plan, progress: impl FnMut(u64)) -> Result<Vec<VariantResult>, ExperimentError> {
    let backend = SimBackend {
        captures: plan.captures.clone(),
    };
    run_plan_on(sc, plan, &backend, progress)
}

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

/// The high-rate benchmark scenario: the diamond with two paths at `rate_bps`, 1500-byte IP
/// packets, WRR 1:1, offered at 95 % of the two paths' wire capacity, for `seconds`.
pub fn high_rate_scenario(rate_bps: u64, seconds: u64) -> Result<Scenario, ScenarioError> {
    let rate = format!("{}Mbps", rate_bps / 1_000_000);
    let payload = 1458u64; // 1500-byte IP packet, 1514 on the wire
    let offered = rate_bps * 2 * 95 / 100 * payload / 1500;
    let host = rate_bps * 4;
    let text = format!(
        r#"
[scenario]
name = "bench-high-rate"
title = "two {rate} paths, 1500-byte packets, WRR 1:1, 95 % load"
duration = "{seconds}s"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "h2"
kind = "host"
[[node]]
name = "s1"
kind = "switch"
[[node]]
name = "s2"
kind = "switch"
[[node]]
name = "s3"
kind = "switch"
[[node]]
name = "s4"
kind = "switch"
[[link]]
a = "h1"
b = "s1"
rate = "{host}bps"
[[link]]
a = "s1"
b = "s2"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s2"
b = "s4"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s1"
b = "s3"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s3"
b = "s4"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s4"
b = "h2"
rate = "{host}bps"
[[path]]
name = "path1"
nodes = ["s1", "s2", "s4"]
[[path]]
name = "path2"
nodes = ["s1", "s3", "s4"]
[[split]]
src = "h1"
dst = "h2"
paths = ["path1", "path2"]
scheduler = "wrr"
weights = [1, 1]
[[flow]]
name = "flow1"
src = "h1"
dst = "h2"
rate = "{offered}bps"
payload = "{payload}B"
"#
    );
    Scenario::from_toml(&text, "<bench>")
}
