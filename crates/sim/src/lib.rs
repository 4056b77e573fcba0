//! # mpsched-sim: a deterministic packet-level simulator
//!
//! A lean discrete-event engine in the manner of htsim: integer picosecond time, a binary heap
//! of small events ordered by (time, sequence number), simplex links with a FIFO queue of a
//! capacity in packets, a serialiser at the link's rate (on wire bytes) and a propagation delay;
//! switches run the `mpsched-core` programs directly (ingress on arrival, egress on dequeue with
//! the queue depth), hosts run iperf-like UDP constant-bit-rate sources and sinks that measure
//! goodput, loss, one-way delay and reordering, and monitors sample throughput each second.
//!
//! A run is a function of (scenario, seed): the same inputs give the same bytes out.
//!
//! ```
//! use mpsched_scenario::{builtin, Scenario};
//! use mpsched_sim::{Simulation, SimOptions};
//! let (path, text) = builtin::find("s3b-dwrr-two-flows").unwrap();
//! let sc = Scenario::from_toml(text, path).unwrap().with_variant("DWRR").unwrap();
//! let sc = sc.scaled_to(5_000_000_000_000); // 5 simulated seconds
//! let out = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap().run().unwrap();
//! assert!(out.figures.flows[0].delivered_mbps > 5.0);
//! ```

#![warn(missing_docs)]

pub mod event;
pub mod experiment;
pub mod link;
pub mod packet;
pub mod pcap;
pub mod queue;
pub mod series;
mod sim;
pub mod sweep;

pub use series::TimeSeries;
pub use sim::*;
