//! # mpsched-scenario: one scenario format, one results schema
//!
//! A scenario file (TOML) describes a topology (hosts, switches, links with a rate, a delay and
//! a queue), named paths, splitting groups with their scheduler, UDP flows and optional
//! variants. [`Scenario::from_toml`] validates it into typed values in base units (bit/s,
//! bytes, picoseconds) or returns a [`ScenarioError`] naming the file, the field and what was
//! expected. Every backend consumes a [`Scenario`] and writes a [`results::Summary`].

#![warn(missing_docs)]

pub mod builtin;
pub mod completion;
pub mod files;
pub mod limits;
mod model;
mod network;
pub mod overrides;
pub mod prescan;
pub mod results;
#[allow(missing_docs)]
pub mod schema;
pub mod units;
pub mod workload;

pub use model::*;
