//! # mpsched-transport: transports as state machines
//!
//! TCP as the simulator and (later) the tunnel daemon need it, written the smoltcp way: a
//! sender and a receiver that take segments and the current time and answer with segments and
//! timer deadlines, and never touch a socket or a clock. Congestion control sits behind one
//! trait ([`cc::CongestionControl`]), as in quinn and s2n-quic, so NewReno, CUBIC and DCTCP are
//! interchangeable and later controllers (coupled MPTCP ones) plug in the same way.
//!
//! Layout:
//! - [`rtt`]: the RFC 6298 round-trip estimator and retransmission timeout.
//! - [`cc`]: the congestion-control trait and NewReno (RFC 5681 / 6582), CUBIC (RFC 9438),
//!   DCTCP (RFC 8257), LIA (RFC 6356) and OLIA (coupled), and DCQCN (rate-based) controllers.
//! - [`mptcp`]: Multipath TCP's pieces as they land (the packet scheduler across subflows).
//! - [`rate`]: a datagram sender paced by a rate-based controller (DCQCN).
//! - [`tcp`]: segments, the sender (slow start, fast retransmit, NewReno recovery, RTO, ECN per
//!   RFC 3168, Nagle) and the receiver (delayed ACKs, out-of-order buffer, receive window, ECN
//!   echo).
//!
//! What is modelled and what is not is listed in `docs/algorithms/tcp.md`.
//!
//! Time is an absolute `u64` of nanoseconds ([`TimeNs`]), supplied by the caller.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cc;
pub mod mptcp;
pub mod rate;
pub mod rtt;
pub mod tcp;

/// Absolute time in nanoseconds, as given by the caller.
pub type TimeNs = u64;

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;
