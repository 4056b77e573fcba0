//! A program's control plane: a loop a backend calls every period with the node's data plane
//! behind the control channel ([`ControlPlane`]: registers and tables by name), as a switch's
//! CPU or a controller beside it reads counters and writes tables. PMQECN's optimiser is one.
//!
//! The loop holds only its own state and reaches the data plane only through the channel, so
//! the same loop drives the simulator's Rust program, the kernel's eBPF maps and BMv2's
//! registers. The simulator runs it as a component on simulated time.

use crate::params::Params;
use mpsched_core::control::{ControlError, ControlPlane};

/// What a control loop is built from on one node.
pub struct ControlInput<'a> {
    /// The node's name (the control channel's address for it).
    pub node: &'a str,
    /// The program's parameters.
    pub params: &'a Params,
    /// Each port's rate, bit/s, in port order.
    pub port_rates_bps: &'a [u64],
    /// This node's seed (a loop's own draws: PMQECN's differential evolution).
    pub seed: u64,
}

/// A program's control plane on one node.
pub trait ControlLoop: Send {
    /// How often it runs, ps.
    fn period_ps(&self) -> u64;

    /// One period at `now_ps`: read what it needs of node `node`'s data plane and write back.
    fn step(&mut self, now_ps: u64, node: &str, plane: &mut dyn ControlPlane) -> Result<(), ControlError>;

    /// Named counters for the run's results (steps taken, time spent, ...).
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}
