//! `[sweep]`: the points `mpsched sweep` runs. Each point is the scenario text with one key set
//! (the parameter's value) and `scenario.seed` set, run as one variant: a pure function of
//! (text, value, variant, seed), so points run in any order, on any core or machine.

use super::*;
use crate::overrides::{display_value, Override};

/// Most points a sweep may have (values x variants x seeds); each writes a file of results.
pub const MAX_SWEEP_POINTS: usize = 100_000;

/// A validated `[sweep]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The dotted key varied (`workload.load`); None sweeps only variants and seeds.
    pub parameter: Option<String>,
    /// Its values (empty without a parameter).
    pub values: Vec<toml::Value>,
    /// Variants to run at every value; empty runs the scenario as written.
    pub variants: Vec<String>,
    /// Seeds.
    pub seeds: Vec<u64>,
}

/// One point of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    /// Its place in the sweep's order (value, then variant, then seed).
    pub index: usize,
    /// The parameter's value, if the sweep has a parameter.
    pub value: Option<toml::Value>,
    /// Variant.
    pub variant: Option<String>,
    /// Seed.
    pub seed: u64,
}

impl SweepPoint {
    /// The overrides that make this point's scenario text.
    pub fn overrides(&self, sweep: &Sweep) -> Vec<Override> {
        let mut out = Vec::new();
        if let (Some(key), Some(v)) = (&sweep.parameter, &self.value) {
            out.push(Override {
                key: key.clone(),
                value: v.clone(),
            });
        }
        out.push(Override {
            key: "scenario.seed".into(),
            value: toml::Value::Integer(self.seed as i64),
        });
        out
    }

    /// The value as written (`0.5`), or `-`.
    pub fn value_label(&self) -> String {
        self.value.as_ref().map_or("-".into(), display_value)
    }
}

impl Sweep {
    /// Every point, values outermost, then variants, then seeds.
    pub fn points(&self) -> Vec<SweepPoint> {
        let values: Vec<Option<toml::Value>> = match self.parameter {
            Some(_) => self.values.iter().cloned().map(Some).collect(),
            None => vec![None],
        };
        let variants: Vec<Option<String>> = match self.variants.is_empty() {
            true => vec![None],
            false => self.variants.iter().cloned().map(Some).collect(),
        };
        let mut out = Vec::new();
        for value in &values {
            for variant in &variants {
                for &seed in &self.seeds {
                    out.push(SweepPoint {
                        index: out.len(),
                        value: value.clone(),
                        variant: variant.clone(),
                        seed,
                    });
                }
            }
        }
        out
    }

    /// Check a sweep against the scenario's variants and the bound on points.
    pub fn check(&self, ctx_file: &str, variant_names: &[String]) -> Result<(), ScenarioError> {
        let ctx = Ctx { file: ctx_file };
        if let Some(p) = &self.parameter {
            Override::parse(p, "0").map_err(|e| ctx.err("sweep.parameter", e))?;
            if self.values.is_empty() {
                return Err(ctx.err("sweep.values", "a parameter needs at least one value"));
            }
        } else if !self.values.is_empty() {
            return Err(ctx.err("sweep.values", "values need a `parameter` to set"));
        }
        if self.seeds.is_empty() {
            return Err(ctx.err(
                "sweep.seeds",
                "expected at least one seed (leave `seeds` out for the scenario's seed)",
            ));
        }
        // A point writes its seed into the text, and TOML integers are signed 64-bit.
        if let Some(s) = self.seeds.iter().find(|&&s| s > i64::MAX as u64) {
            return Err(ctx.err("sweep.seeds", format!("seed {s} is above {}", i64::MAX)));
        }
        if let Some(v) = self.variants.iter().find(|v| !variant_names.contains(v)) {
            return Err(ctx.err("sweep.variants", format!("no variant named `{v}`")));
        }
        let points = self.values.len().max(1) * self.variants.len().max(1) * self.seeds.len();
        if points > MAX_SWEEP_POINTS {
            return Err(ctx.err("sweep", format!("{points} points; at most {MAX_SWEEP_POINTS}")));
        }
        Ok(())
    }
}

/// The `[sweep]` section with its defaults: the scenario's seed, all its variants.
pub(super) fn sweep_of(raw: &Option<RawSweep>, seed: u64, variants: &[String]) -> Option<Sweep> {
    raw.as_ref().map(|s| Sweep {
        parameter: s.parameter.clone(),
        values: s.values.clone(),
        variants: if s.variants.is_empty() {
            variants.to_vec()
        } else {
            s.variants.clone()
        },
        // An empty list stays empty, for `check` to refuse: it is a mistake, not the default.
        seeds: s.seeds.clone().unwrap_or_else(|| vec![seed]),
    })
}
