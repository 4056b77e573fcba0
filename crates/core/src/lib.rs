//! # mpsched-core: the data-plane programs, once
//!
//! Every scheduler, marker and feedback mechanism of mpsched is written here as a *program*: a
//! state machine with no I/O, no clock of its own and no floating point on the per-packet path,
//! shaped the way a P4 or eBPF data plane must be written. Registers are fixed-width integers,
//! tables are filled by a control plane ([`switch::SwitchConfig`]), per-packet work is bounded by
//! the number of paths (at most [`MAX_PATHS`]).
//!
//! The simulator (`mpsched-sim`) runs these programs directly; the eBPF programs under `bpf/`
//! mirror them register for register and are held equal to them by shared test vectors.
//!
//! Layout:
//! - [`packet`]: the parsed metadata a program sees ([`packet::PacketMeta`]).
//! - [`wire`]: parsing and emitting Ethernet / IPv4 / UDP frames, never panicking.
//! - [`program`]: the [`program::Program`] trait, verdicts and queue metadata.
//! - [`headers`]: the bounded stack of custom headers (routing, INT) and their shim format.
//! - [`control`]: the control channel ([`control::ControlPlane`]): registers, tables, queues.
//! - [`sched`]: path schedulers (RS, WRR, DWRR, ECMP, single path).
//! - [`marker`]: the egress ECN threshold marker.
//! - [`feedback`]: the confluence point's CE counting and the feedback packet format.
//! - [`rate_wire`]: the UDP payloads of rate-controlled flows (data, DCQCN's CNP, a switch's
//!   rate feedback) on real networks.
//! - [`switch`]: the multipath switch program that composes them by role.
//! - [`frame`]: the same switch on whole frames, the reference for the eBPF program.
//! - [`vectors`]: conformance vectors shared with the eBPF programs.
//! - [`rng`]: injectable random sources.
//! - [`table`]: IPv4 longest-prefix-match table.
//! - [`tunnel`]: tunnel schedulers (round robin, AFMT) and AFMT's bounded flow table.
//! - [`upf`]: an ATSSS UPF's UE table, as the control plane gives it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod classify;
pub mod control;
pub mod feedback;
pub mod frame;
pub mod headers;
pub mod marker;
pub mod mptcp;
pub mod packet;
pub mod probe;
pub mod program;
pub mod rate_wire;
pub mod rng;
pub mod sched;
pub mod switch;
pub mod table;
pub mod tunnel;
pub mod upf;
pub mod vectors;
pub mod wire;

/// Upper bound on the number of paths a splitting group may have. Registers are sized by it, as
/// a P4 register array or a BPF array map would be.
pub const MAX_PATHS: usize = 8;
