//! PMQECN (PeerJ Computer Science 2024): multi-queue ECN marking by virtual queues, with
//! feedback from the switch and a QoS optimiser in the control plane. The specification every
//! backend follows is `README.md` beside this file.
//!
//! - [`control`]: the control plane, a loop that measures the classes every period, solves the
//!   model and writes weights, thresholds and rates.
//! - [`model`]: the M/M/1/N figures of one class's queue (closed forms, the `rho = 1` limit).
//! - [`optimiser`]: Algorithm 2, the two layers of differential evolution giving each class's
//!   service rate, target arrival rate, queue weight and ECN threshold.
//! - [`cp`]: the congestion point (Algorithm 1), registered as `pmqecn`: `vq-wrr`, per-class
//!   arrival counters and thresholds, feedback with the class's rates to the sources.
//! - [`vqwrr`]: weighted round robin on strict-priority queues by virtual queues (Fig. 4),
//!   registered as `vq-wrr`.
//! - [`baselines`]: the congestion points the paper compares with, `dcqcn`, `tcn` and `p4qcn`.
//! - [`vector_sets`]: `vq-wrr`'s conformance vectors.
//! - [`baseline_vectors`]: `dcqcn`'s and `tcn`'s conformance vectors.

pub mod baseline_vectors;
pub mod baselines;
pub mod control;
pub mod cp;
pub mod model;
pub mod optimiser;
pub mod vector_sets;
pub mod vqwrr;
