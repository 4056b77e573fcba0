//! PMQECN (PeerJ Computer Science 2024): multi-queue ECN marking by virtual queues, with
//! feedback from the switch and a QoS optimiser in the control plane. The specification every
//! backend follows is `README.md` beside this file.
//!
//! - [`model`]: the M/M/1/N figures of one class's queue (closed forms, the `rho = 1` limit).
//! - [`optimiser`]: Algorithm 2, the two layers of differential evolution giving each class's
//!   service rate, target arrival rate, queue weight and ECN threshold.
//! - [`vqwrr`]: weighted round robin on strict-priority queues by virtual queues (Fig. 4),
//!   registered as `vq-wrr`.
//! - [`vector_sets`]: `vq-wrr`'s conformance vectors.

pub mod model;
pub mod optimiser;
pub mod vector_sets;
pub mod vqwrr;
