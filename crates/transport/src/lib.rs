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

/// Records a queue keeps room for whatever its bursts were; above this it gives back room once
/// a burst is acknowledged.
const BURST_ROOM_KEPT: usize = 1 << 14;

/// Give back a bookkeeping queue's room after a burst: once it holds under a quarter of its
/// capacity, and the capacity is over [`BURST_ROOM_KEPT`], shrink it to twice its length. A
/// sender in a long recovery at 100 Gbit/s grows such a queue to millions of entries; without
/// this every sender keeps its largest burst's room to the end of the run, and the room of all
/// of them adds up. Amortised: a shrink follows at least three quarters of the entries leaving.
pub fn release_burst_room<T>(q: &mut std::collections::VecDeque<T>) {
    if q.capacity() > BURST_ROOM_KEPT && q.len() < q.capacity() / 4 {
        q.shrink_to((q.len() * 2).max(BURST_ROOM_KEPT));
    }
}

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A queue that grew to a million entries gives its room back once they have left, and a
    /// small one keeps its room (no reallocation churn at ordinary windows).
    #[test]
    fn a_bursts_room_is_given_back_once_acknowledged() {
        let mut q: VecDeque<u64> = (0..1_000_000).collect();
        q.drain(..999_000);
        release_burst_room(&mut q);
        assert_eq!(q.len(), 1_000);
        assert!(q.capacity() <= 2 * BURST_ROOM_KEPT, "kept {}", q.capacity());
        assert!(q.iter().copied().eq(999_000..1_000_000), "the entries stay, in order");
        let mut small: VecDeque<u64> = VecDeque::with_capacity(4_096);
        small.push_back(1);
        release_burst_room(&mut small);
        assert!(small.capacity() >= 4_096);
    }
}
