//! mpsched on BMv2, the papers' own platform.
//!
//! `p4/mpsched.p4` is the switch program of `crates/core` and `bpf/mpsched.bpf.c` in P4_16 for
//! v1model, compiled by `p4c-bm2-ss` when the crate is built on a machine with the P4 toolchain
//! ([`toolchain`]). This crate runs it: [`switch::Bmv2Switch`] is one `simple_switch` process in a
//! network namespace, [`cli::SwitchCli`] its runtime interface, [`control`] fills its tables and
//! registers from a node's configuration and reads them back under the names the Rust programs
//! use (at the sizes and indices of [`layout`], generated from `p4/include/layout.p4`), and
//! [`vectors`] replays the conformance vectors through it. Other programs' P4 programs
//! (`crates/programs/src/<name>/<stem>.p4`: LetFlow's, HULA's, vq-wrr's, PMQECN's, DCQCN's,
//! TCN's and the ATSSS UPF's) run the same way, each with its control plane ([`letflow`],
//! [`hula`], [`vqwrr`], [`pmqecn`], [`baselines`], [`atsss`]) registered in [`programs`]. A port
//! of several strict-priority queues is BMv2's own ([`queues`]).

#![warn(missing_docs)]

pub mod atsss;
pub mod baselines;
pub mod cli;
pub mod control;
pub mod hula;
pub mod layout;
pub mod letflow;
pub mod plane;
pub mod pmqecn;
pub mod programs;
pub mod queues;
pub mod switch;
pub mod toolchain;
pub mod vectors;
pub mod vqwrr;

/// What can go wrong running the P4 program.
#[derive(Debug, thiserror::Error)]
pub enum Bmv2Error {
    /// The toolchain or the compiled program is missing.
    #[error("{0}")]
    Missing(String),
    /// A configuration BMv2's program cannot hold.
    #[error("configuration: {0}")]
    Config(String),
    /// The switch or its CLI failed.
    #[error("{0}")]
    Switch(String),
    /// A namespace or interface operation failed.
    #[error(transparent)]
    Ns(#[from] mpsched_netns::ns::NsError),
    /// Reading or writing a file or pipe.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

impl Bmv2Error {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Bmv2Error {
        let what = what.into();
        move |source| Bmv2Error::Io { what, source }
    }
}
