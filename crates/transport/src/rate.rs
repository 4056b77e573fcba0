//! A rate-paced datagram sender: a rate-based controller (DCQCN, PMQECN's reaction point)
//! decides how fast, the sender spaces packets by that rate, and congestion notifications from
//! the network reach the controller. No I/O and no clock: the caller asks when the next packet
//! is due and hands notifications in, as with [`crate::tcp::TcpSender`].

use crate::cc::{CongestionControl, CongestionSignal};
use crate::TimeNs;

/// Counters of a [`RateSender`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateSenderStats {
    /// Packets sent.
    pub packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Congestion notifications received.
    pub notifications: u64,
}

/// An always-backlogged sender of `packet_bytes` datagrams at its controller's rate.
#[derive(Debug)]
pub struct RateSender {
    cc: Box<dyn CongestionControl>,
    packet_bytes: u32,
    next_send_ns: TimeNs,
    /// When the last packet went (None before the first).
    last_send_ns: Option<TimeNs>,
    stats: RateSenderStats,
}

impl RateSender {
    /// A sender of `packet_bytes` packets (wire bytes, what the rate counts) paced by `cc`,
    /// which must be rate-based ([`CongestionControl::pacing_rate_bps`]); the first packet is
    /// due at `start_ns`.
    pub fn new(cc: Box<dyn CongestionControl>, packet_bytes: u32, start_ns: TimeNs) -> Result<Self, String> {
        if cc.pacing_rate_bps().is_none() {
            return Err(format!("`{}` is window-based: a rate sender needs a rate", cc.name()));
        }
        if packet_bytes == 0 {
            return Err("packets of 0 bytes".into());
        }
        Ok(RateSender {
            cc,
            packet_bytes,
            next_send_ns: start_ns,
            last_send_ns: None,
            stats: RateSenderStats::default(),
        })
    }

    /// When the next packet is due.
    pub fn next_send_ns(&self) -> TimeNs {
        self.next_send_ns
    }

    /// The earliest of the next packet and the controller's clock.
    pub fn next_timer(&self) -> TimeNs {
        self.cc
            .next_timer()
            .map_or(self.next_send_ns, |t| t.min(self.next_send_ns))
    }

    /// Run the controller's clock alone: what a sender with nothing to send does at its
    /// controller's [`CongestionControl::next_timer`] (a transfer waiting for its receiver).
    pub fn run_clock(&mut self, now: TimeNs) {
        if self.cc.next_timer().is_some_and(|t| t <= now) {
            self.cc.on_timer(now);
        }
    }

    /// Run the controller's clock, then send if a packet is due: its size in bytes.
    pub fn poll_transmit(&mut self, now: TimeNs) -> Option<u32> {
        self.run_clock(now);
        if now < self.next_send_ns {
            return None;
        }
        let bytes = self.packet_bytes;
        let gap_ns = self.gap_ns();
        // Keep the average rate when polled a little late; never bank credit for idle time.
        self.next_send_ns = self.next_send_ns.max(now.saturating_sub(gap_ns)) + gap_ns;
        self.last_send_ns = Some(now);
        self.cc.on_sent(now, u64::from(bytes));
        self.stats.packets += 1;
        self.stats.bytes += u64::from(bytes);
        Some(bytes)
    }

    /// A congestion notification for this sender arrived.
    pub fn on_notification(&mut self, now: TimeNs) {
        self.signal(now, CongestionSignal::Notification);
    }

    /// A switch's feedback with rates for this sender arrived (PMQECN's).
    pub fn on_rate_feedback(&mut self, now: TimeNs, measured_bps: u64, target_bps: u64) {
        let signal = CongestionSignal::RateFeedback {
            measured_bps,
            target_bps,
        };
        self.signal(now, signal);
    }

    fn signal(&mut self, now: TimeNs, signal: CongestionSignal) {
        self.stats.notifications += 1;
        self.cc.on_congestion(now, signal, 0);
        // A cut takes effect at once: the next packet goes one gap at the new rate after the
        // last, not when the old rate had it due.
        if let Some(last) = self.last_send_ns {
            self.next_send_ns = self.next_send_ns.max(last + self.gap_ns());
        }
    }

    /// The time one packet takes at the controller's rate.
    fn gap_ns(&self) -> u64 {
        let rate = self.cc.pacing_rate_bps().unwrap_or(1).max(1);
        // At least a nanosecond: below that (a small packet above 8 Gbit/s per byte) the
        // sender would send without end at one instant; it then sends a little slow instead.
        ((u128::from(self.packet_bytes) * 8 * 1_000_000_000 / u128::from(rate)) as u64).max(1)
    }

    /// The controller.
    pub fn controller(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> &RateSenderStats {
        &self.stats
    }
}

/// DCQCN's notification point at a receiver: a CNP for a CE-marked packet, at most one per
/// flow per `interval` (times in any one unit, the same for both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotificationPoint {
    interval: u64,
    last: Option<u64>,
    sent: u64,
}

impl NotificationPoint {
    /// A notification point that sends at most one CNP per `interval`.
    pub fn new(interval: u64) -> Self {
        NotificationPoint {
            interval,
            last: None,
            sent: 0,
        }
    }

    /// A data packet arrived at `now`, CE-marked or not: whether to send a CNP for it now.
    pub fn on_packet(&mut self, now: u64, ce: bool) -> bool {
        if !ce || self.last.is_some_and(|t| now.saturating_sub(t) < self.interval) {
            return false;
        }
        self.last = Some(now);
        self.sent += 1;
        true
    }

    /// CNPs sent.
    pub fn cnps_sent(&self) -> u64 {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{Dcqcn, DcqcnParams, NewReno};

    #[test]
    fn pmqecn_feedback_paces_the_sender_at_the_cut_rate() {
        use crate::cc::{PmqecnRp, PmqecnRpParams};
        let cc = Box::new(PmqecnRp::new(PmqecnRpParams::paper(10_000_000), 0));
        let mut s = RateSender::new(cc, 1250, 0).unwrap();
        // 1250 B at 1 Mbit/s: one every 10 ms.
        assert_eq!(s.poll_transmit(0), Some(1250));
        assert_eq!(s.next_send_ns(), 10_000_000);
        // Cut to a quarter (target 1, measured 4): one every 40 ms after the last.
        s.on_rate_feedback(1_000_000, 4_000_000, 1_000_000);
        assert_eq!(s.controller().pacing_rate_bps(), Some(250_000));
        assert_eq!(s.next_send_ns(), 40_000_000);
        assert_eq!(s.stats().notifications, 1);
    }

    #[test]
    fn packets_are_spaced_by_the_rate_and_a_notification_slows_them() {
        let cc = Box::new(Dcqcn::new(DcqcnParams::for_line_rate(1_000_000_000)));
        let mut s = RateSender::new(cc, 1250, 0).unwrap();
        // 1250 B at 1 Gbit/s: one every 10 us.
        let mut sent = Vec::new();
        for t in (0..50_000).step_by(1_000) {
            if s.poll_transmit(t).is_some() {
                sent.push(t);
            }
        }
        assert_eq!(sent, [0, 10_000, 20_000, 30_000, 40_000]);
        s.on_notification(50_000);
        assert_eq!(s.controller().pacing_rate_bps(), Some(500_000_000));
        let mut after = Vec::new();
        for t in (50_000..100_000).step_by(1_000) {
            if s.poll_transmit(t).is_some() {
                after.push(t);
            }
        }
        // At half the rate at once: the packet due at 50 us under the old rate goes one new
        // gap after the last (40 us), then one every 20 us (the controller's 55 us timer lifts
        // the rate towards its target at 105 us, after this window).
        assert_eq!(after, [60_000, 80_000]);
        assert_eq!(s.stats().notifications, 1);
    }

    #[test]
    fn the_clock_runs_without_sending() {
        let cc = Box::new(Dcqcn::new(DcqcnParams::for_line_rate(1_000_000_000)));
        let mut s = RateSender::new(cc, 1250, 0).unwrap();
        assert_eq!(s.poll_transmit(0), Some(1250));
        s.on_notification(1_000);
        assert_eq!(s.controller().pacing_rate_bps(), Some(500_000_000));
        // The 55 us timer steps the rate up halfway to the target; nothing is sent.
        let t = s.controller().next_timer().unwrap();
        s.run_clock(t);
        assert_eq!(s.controller().pacing_rate_bps(), Some(750_000_000));
        assert_eq!(s.stats().packets, 1);
        assert!(s.controller().next_timer().unwrap() > t, "the clock moved on");
    }

    #[test]
    fn the_notification_point_answers_ce_at_most_once_per_interval() {
        let mut np = NotificationPoint::new(50);
        assert!(!np.on_packet(0, false), "no CE, no CNP");
        assert!(np.on_packet(10, true));
        assert!(!np.on_packet(59, true), "within the interval");
        assert!(np.on_packet(60, true), "the interval has passed");
        assert!(!np.on_packet(200, false));
        assert!(np.on_packet(u64::MAX - 10, true));
        assert!(!np.on_packet(u64::MAX, true), "no overflow at the clock's end");
        assert_eq!(np.cnps_sent(), 3);
    }

    #[test]
    fn a_window_controller_is_refused() {
        let e = RateSender::new(Box::new(NewReno::new(1448, 10)), 1500, 0).unwrap_err();
        assert!(e.contains("window-based"), "{e}");
    }
}
