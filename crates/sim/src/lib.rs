//! # mpsched-sim: a deterministic packet-level simulator
//!
//! A lean discrete-event engine in the manner of htsim, in integer picoseconds:
//!
//! - **Events** ([`event`]) are small (time, sequence, kind, index) records in a radix heap:
//!   simulated time never runs backwards, so an event is filed by the highest bit in which its
//!   key differs from the last key popped; equal times run in scheduling order.
//! - **Links** ([`link`]) are simplex: the sending port's output queues, a serialiser at the
//!   link's rate (on wire bytes) and a propagation delay; packets sit in a pool ([`packet`]) and
//!   links hold handles to them. A port has one or more queues of a capacity in packets
//!   ([`queue`]), served by FIFO, strict priority, WRR or DRR.
//! - **Switches** run the `mpsched-core` programs directly: ingress on arrival, an enqueue stage
//!   for programs that ask for one, egress on dequeue with the queue's depths, and the
//!   programs' own timers and emitted packets.
//! - **Traffic** on hosts: UDP constant-bit-rate sources and sinks measuring goodput, loss,
//!   one-way delay and reordering; TCP connections with the `mpsched-transport` state machines
//!   and congestion controls, under bulk, fixed-size-transfer and request / response
//!   applications; MPTCP connections over TCP subflows; multipath tunnels (`mpsched-tunnel`'s
//!   endpoints over TCP or UDP subtunnels); link failures; and components
//!   ([`Component`]: parts written outside the engine with their own timers, TCP connections
//!   and UDP ports).
//! - **Monitors** sample paths and flows every sample interval into a time series; any
//!   interface can be captured to pcap ([`pcap`]).
//!
//! [`experiment`] makes the simulator a backend of the run layer (`mpsched-run`), whose runner
//! does variants and repetitions; [`sweep`] runs a scenario's sweep points in parallel.
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
