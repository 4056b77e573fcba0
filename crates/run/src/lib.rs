//! # mpsched-run: the run layer every backend shares
//!
//! What a backend is and what it hands back, apart from how it runs a scenario: the
//! [`Backend`] trait (run one concrete scenario with one seed), its [`RunResult`] and
//! [`BackendError`], the [`TimeSeries`] it samples, the [`CaptureRequest`]s it is asked to
//! honour, and the experiment runner ([`run_plan_on`]: a [`Plan`]'s variants x repetitions,
//! aggregated into one [`VariantResult`] per variant).
//!
//! The simulator (`mpsched-sim`), the kernel backend (`mpsched-netns`) and BMv2
//! (`mpsched-bmv2`, through the kernel backend) implement or use it; none of them needs another
//! backend's crate for it.

#![warn(missing_docs)]

pub mod capture;
pub mod experiment;
pub mod series;

pub use capture::CaptureRequest;
pub use experiment::{run_plan_on, Backend, BackendError, ExperimentError, Plan, RunResult, VariantResult};
pub use series::TimeSeries;
