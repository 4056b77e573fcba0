//! Time series: the run layer's ([`mpsched_run::series`]), re-exported under the simulator's
//! old path.

pub use mpsched_run::series::*;
