//! Running a scenario's variants and repetitions and aggregating them into summaries.

use crate::event::PS_PER_S;
use crate::sim::{CaptureRequest, RunOutput, SimError, SimOptions, Simulation};
use crate::TimeSeries;
use mpsched_scenario::results::Summary;
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
    /// The concrete scenario that ran.
    pub scenario: Scenario,
}

/// Errors of an experiment.
#[derive(Debug)]
pub enum ExperimentError {
    /// The scenario or a variant is invalid.
    Scenario(ScenarioError),
    /// The simulation failed.
    Sim(SimError),
}

impl std::fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExperimentError::Scenario(e) => e.fmt(f),
            ExperimentError::Sim(e) => e.fmt(f),
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
    /// Captures, taken in the first repetition of each variant; `{variant}` in a path is
    /// replaced by the variant's name.
    pub captures: Vec<CaptureRequest>,
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

/// Run `plan` on `sc`. `progress` is called with simulated picoseconds done so far.
pub fn run_plan(
    sc: &Scenario,
    plan: &Plan,
    mut progress: impl FnMut(u64),
) -> Result<Vec<VariantResult>, ExperimentError> {
    let names: Vec<Option<String>> = if !plan.variants.is_empty() {
        plan.variants.iter().cloned().map(Some).collect()
    } else if sc.variants.is_empty() {
        vec![None]
    } else {
        sc.variant_names().into_iter().map(Some).collect()
    };
    let seed = plan.seed.unwrap_or(sc.seed);
    let reps = plan.repetitions.unwrap_or(sc.repetitions).max(1);
    let mut done_ps = 0u64;
    let mut results = Vec::new();
    for name in names {
        let concrete = match &name {
            Some(v) => sc.with_variant(v).map_err(ExperimentError::Scenario)?,
            None => sc.clone(),
        };
        let mut runs = Vec::new();
        let mut first_series = None;
        let mut events = 0;
        let mut engine_s = 0.0;
        for r in 0..reps {
            let mut opts = SimOptions::with_seed(seed + u64::from(r));
            if r == 0 {
                opts.captures = plan
                    .captures
                    .iter()
                    .map(|c| {
                        let v = name.as_deref().unwrap_or("run");
                        let p = c.path.to_string_lossy().replace("{variant}", v);
                        CaptureRequest {
                            path: p.into(),
                            ..c.clone()
                        }
                    })
                    .collect();
            }
            let mut sim = Simulation::new(&concrete, &opts).map_err(ExperimentError::Sim)?;
            let step = PS_PER_S / 2;
            let mut t = 0;
            while t < sim.end_ps() {
                t = (t + step).min(sim.end_ps());
                let started = std::time::Instant::now();
                sim.run_until(t);
                engine_s += started.elapsed().as_secs_f64();
                progress(done_ps + t);
            }
            done_ps += sim.end_ps();
            let RunOutput {
                figures,
                series,
                events: ev,
                ..
            } = sim.finish().map_err(ExperimentError::Sim)?;
            events += ev;
            if first_series.is_none() {
                first_series = Some(series);
            }
            runs.push(figures);
        }
        let summary = Summary::aggregate(
            &sc.name,
            name.as_deref(),
            &sc.reproduces,
            "sim",
            seed,
            concrete.duration_ps as f64 / PS_PER_S as f64,
            runs,
        );
        results.push(VariantResult {
            variant: name,
            summary,
            series: first_series.unwrap_or_default(),
            events,
            engine_s,
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
