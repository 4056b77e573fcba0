//! Congestion control behind one trait.
//!
//! The sender owns loss detection and recovery (fast retransmit, NewReno's window inflation,
//! the RTO); a controller owns the window's growth and how much it shrinks on a congestion
//! signal. That is the split quinn and s2n-quic use, and it lets a coupled controller (MPTCP's
//! LIA and OLIA) replace the growth law without touching loss recovery.
//!
//! Windows are in bytes and grow in whole segments, as Linux counts them in packets.
//!
//! Rate-based controllers (DCQCN, PMQECN's reaction point) sit behind the same trait: they
//! answer [`CongestionControl::pacing_rate_bps`], keep their own clocks through
//! [`CongestionControl::next_timer`] / [`CongestionControl::on_timer`], count what is sent in
//! [`CongestionControl::on_sent`], and react to [`CongestionSignal::Notification`], a congestion
//! notification a switch or receiver sends. [`crate::rate::RateSender`] drives them.

#[cfg(test)]
mod coupled_tests;
mod cubic;
mod dcqcn;
mod dctcp;
mod lia;
mod olia;
mod pmqecn;
mod reno;

pub use cubic::Cubic;
pub use dcqcn::{Dcqcn, DcqcnParams};
pub use dctcp::Dctcp;
pub use lia::Lia;
pub use olia::Olia;
pub use pmqecn::{PmqecnRp, PmqecnRpParams, RpPhase};
pub use reno::NewReno;

use crate::TimeNs;
use serde::{Deserialize, Serialize};

/// One subflow of a multipath connection as its siblings' controllers see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowView {
    /// Its congestion window in bytes, as coupling counts it: not inflated in fast recovery
    /// (`TcpSender::coupling_window_bytes`).
    pub cwnd_bytes: u64,
    /// Its smoothed RTT (0 before the first sample).
    pub srtt_ns: u64,
    /// Its controller's [`CongestionControl::loss_interval_bytes`] (OLIA's `l_r`).
    pub loss_interval_bytes: u64,
}

/// What the sender tells a controller about an ACK of new data.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent<'a> {
    /// Time of the ACK.
    pub now_ns: TimeNs,
    /// Bytes newly acknowledged by it.
    pub acked_bytes: u64,
    /// Whether the window was the limit on sending recently (Linux's `tcp_is_cwnd_limited`): a
    /// window that is not used must not grow.
    pub cwnd_limited: bool,
    /// Smoothed RTT (0 before the first sample).
    pub srtt_ns: u64,
    /// Smallest RTT seen (0 before the first sample).
    pub min_rtt_ns: u64,
    /// Every subflow of the connection this sender belongs to, itself at [`AckEvent::subflow`];
    /// empty for single-path TCP. A coupled controller (MPTCP's LIA, OLIA) reads its siblings
    /// here; the others ignore it.
    pub subflows: &'a [SubflowView],
    /// This sender's index in `subflows`.
    pub subflow: usize,
}

/// Why the window is reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionSignal {
    /// Loss detected by duplicate ACKs.
    Loss,
    /// An ECN-Echo (RFC 3168): at most one per round trip.
    Ecn,
    /// A congestion notification packet from the network (DCQCN's CNP, a PMQECN switch's
    /// feedback): window controllers treat it as an ECN-Echo.
    Notification,
    /// A switch's feedback with rates (PMQECN): the sender's class arrives at `measured_bps`
    /// and should arrive at `target_bps`. Controllers without a use for the rates treat it as
    /// a [`CongestionSignal::Notification`].
    RateFeedback {
        /// The class's measured arrival rate, bit/s.
        measured_bps: u64,
        /// The optimiser's target for it, bit/s.
        target_bps: u64,
    },
}

/// A congestion controller.
pub trait CongestionControl: Send + std::fmt::Debug {
    /// Short name (`reno`, `cubic`, `dctcp`), as Linux's `tcp_congestion_control`.
    fn name(&self) -> &'static str;

    /// Congestion window in bytes.
    fn window_bytes(&self) -> u64;

    /// Slow-start threshold in bytes.
    fn ssthresh_bytes(&self) -> u64;

    /// New data was acknowledged outside loss recovery: grow the window.
    fn on_ack(&mut self, ack: &AckEvent);

    /// A congestion signal: set the slow-start threshold and the window after the reduction.
    /// `in_flight_bytes` is what was outstanding.
    fn on_congestion(&mut self, now_ns: TimeNs, signal: CongestionSignal, in_flight_bytes: u64);

    /// A retransmission timeout: reduce the threshold and restart from the loss window (one
    /// segment).
    fn on_rto(&mut self, now_ns: TimeNs, in_flight_bytes: u64);

    /// Set the window directly: the sender's loss recovery inflates, deflates and restores it.
    fn set_window(&mut self, cwnd_bytes: u64);

    /// Per-ACK ECN accounting for controllers that react to the fraction of marked bytes
    /// (DCTCP). `window_end` is true when this ACK completes an observation window (one round
    /// trip of data). The default ignores it.
    fn on_ecn_ack(&mut self, _acked_bytes: u64, _ece: bool, _window_end: bool) {}

    /// Named internal state for traces (DCTCP's alpha, CUBIC's W_max), scaled to integers.
    fn state(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The rate to send at, in bit/s, for a rate-based controller; None for a window-based one
    /// (the default), which the window alone limits.
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }

    /// When the controller's own clock next needs [`CongestionControl::on_timer`] (DCQCN's
    /// alpha decay and rate-increase timers); None for the default, which has no clock.
    fn next_timer(&self) -> Option<TimeNs> {
        None
    }

    /// The controller's clock: called at or after [`CongestionControl::next_timer`].
    fn on_timer(&mut self, _now_ns: TimeNs) {}

    /// `bytes` were sent (DCQCN's byte counter). The default ignores it.
    fn on_sent(&mut self, _now_ns: TimeNs, _bytes: u64) {}

    /// The bytes acknowledged over the subflow's recent loss interval, for a coupled controller
    /// that weighs paths by it (OLIA's `l_r`; the multipath connection passes every subflow's
    /// in [`SubflowView::loss_interval_bytes`]). 0 for the default, which keeps no such count.
    fn loss_interval_bytes(&self) -> u64 {
        0
    }
}

/// The controllers a scenario may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CcKind {
    /// NewReno (RFC 5681, RFC 6582).
    Reno,
    /// CUBIC (RFC 9438), Linux's default.
    #[default]
    Cubic,
    /// DCTCP (RFC 8257): NewReno growth, reduction by the fraction of marked bytes.
    Dctcp,
    /// LIA (RFC 6356): MPTCP's linked increase, coupling a connection's subflows.
    Lia,
    /// OLIA (Khalili et al., CoNEXT 2012): the opportunistic linked increase.
    Olia,
}

impl CcKind {
    /// Parse a controller name as Linux spells it.
    pub fn parse(s: &str) -> Option<CcKind> {
        match s {
            "reno" | "newreno" => Some(CcKind::Reno),
            "cubic" => Some(CcKind::Cubic),
            "dctcp" => Some(CcKind::Dctcp),
            "lia" => Some(CcKind::Lia),
            "olia" => Some(CcKind::Olia),
            _ => None,
        }
    }

    /// Linux's name for it.
    pub fn linux_name(self) -> &'static str {
        match self {
            CcKind::Reno => "reno",
            CcKind::Cubic => "cubic",
            CcKind::Dctcp => "dctcp",
            CcKind::Lia => "lia",
            CcKind::Olia => "olia",
        }
    }

    /// Whether it couples the subflows of an MPTCP connection (and so needs one).
    pub fn is_coupled(self) -> bool {
        matches!(self, CcKind::Lia | CcKind::Olia)
    }

    /// A controller of this kind with `initial_window_segments` segments of `mss` bytes.
    pub fn build(self, mss: u32, initial_window_segments: u32) -> Box<dyn CongestionControl> {
        match self {
            CcKind::Reno => Box::new(NewReno::new(mss, initial_window_segments)),
            CcKind::Cubic => Box::new(Cubic::new(mss, initial_window_segments)),
            CcKind::Dctcp => Box::new(Dctcp::new(mss, initial_window_segments)),
            CcKind::Lia => Box::new(Lia::new(mss, initial_window_segments)),
            CcKind::Olia => Box::new(Olia::new(mss, initial_window_segments)),
        }
    }
}

/// Slow start shared by the controllers (RFC 5681 with appropriate byte counting, as Linux
/// `tcp_slow_start`): grow by the bytes acknowledged, up to `ssthresh`. Returns the bytes left
/// over for congestion avoidance.
pub(crate) fn slow_start(cwnd: &mut u64, ssthresh: u64, acked: u64) -> u64 {
    if *cwnd >= ssthresh {
        return acked;
    }
    let room = ssthresh - *cwnd;
    let used = acked.min(room);
    *cwnd += used;
    acked - used
}

/// Reno's additive increase in whole segments (Linux `tcp_cong_avoid_ai`): one `mss` per
/// `cwnd` bytes acknowledged.
pub(crate) fn additive_increase(cwnd: &mut u64, acc: &mut u64, mss: u64, acked: u64) {
    *acc += acked;
    if *acc >= *cwnd {
        let steps = *acc / *cwnd;
        *acc -= steps * *cwnd;
        *cwnd += steps * mss;
    }
}
