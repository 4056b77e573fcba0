//! The simulator as a [`Backend`] of the run layer, and the simulator's own plans.
//!
//! The backend-generic runner (variants x repetitions -> summaries) is `mpsched_run`'s,
//! re-exported here under its old path.

use crate::event::PS_PER_S;
use crate::sim::{CaptureRequest, RunOutput, SimOptions, Simulation};
pub use mpsched_run::experiment::*;
use mpsched_scenario::{Scenario, ScenarioError};

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
