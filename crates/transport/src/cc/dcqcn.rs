//! DCQCN's reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015): a rate-based controller. A congestion notification cuts the current rate by
//! alpha / 2 and remembers the rate before as the target; without notifications the rate climbs
//! back, first halfway to the target at each step (fast recovery), then with the target raised
//! by a fixed step (additive increase), then by growing steps (hyper increase). Steps come from
//! a timer and from a counter of bytes sent; alpha, the estimate of how congested the path is,
//! grows with each notification and decays on a timer without them.
//!
//! Integer arithmetic only: alpha in 1/2^20 (fine enough that its decay by 1/256 per period
//! does not stall, as it would at 1/1024), rates in bit/s.

use super::{AckEvent, CongestionControl, CongestionSignal};
use crate::TimeNs;

/// Alpha's unit.
const ALPHA_ONE: u64 = 1 << 20;

/// DCQCN's parameters. Every one is a knob; the defaults are illustrative values for a
/// 10-100 Gbit/s data centre in the range DCQCN's paper discusses, and a scenario that
/// reproduces a paper sets that paper's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DcqcnParams {
    /// The rate a flow starts at and never exceeds (the line rate).
    pub line_rate_bps: u64,
    /// The floor a cut never goes below.
    pub min_rate_bps: u64,
    /// Alpha's gain g = 1 / 2^`g_shift`.
    pub g_shift: u32,
    /// Alpha decays once per this period without a notification (K).
    pub alpha_period_ns: u64,
    /// A rate-increase step per this period (the timer T).
    pub increase_period_ns: u64,
    /// A rate-increase step per this many bytes sent (the byte counter B).
    pub byte_counter_bytes: u64,
    /// Steps of fast recovery before the target rises (F).
    pub fast_recovery_steps: u32,
    /// Additive increase of the target per step (R_AI).
    pub additive_increase_bps: u64,
    /// Hyper increase of the target per step and stage (R_HAI).
    pub hyper_increase_bps: u64,
}

impl DcqcnParams {
    /// The defaults for a link of `line_rate_bps`.
    pub fn for_line_rate(line_rate_bps: u64) -> Self {
        DcqcnParams {
            line_rate_bps,
            min_rate_bps: (line_rate_bps / 1000).max(1),
            g_shift: 8,
            alpha_period_ns: 55_000,
            increase_period_ns: 55_000,
            byte_counter_bytes: 10 << 20,
            fast_recovery_steps: 5,
            additive_increase_bps: (line_rate_bps / 1000).max(1),
            hyper_increase_bps: (line_rate_bps / 100).max(1),
        }
    }
}

/// The DCQCN reaction point. See the module documentation.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    p: DcqcnParams,
    /// Current rate (R_C) and target rate (R_T), bit/s.
    rate_bps: u64,
    target_bps: u64,
    alpha: u64,
    /// A notification arrived in the current alpha period.
    notified: bool,
    next_alpha_ns: Option<TimeNs>,
    next_increase_ns: Option<TimeNs>,
    /// Increase steps since the last cut, by timer and by byte counter.
    timer_steps: u32,
    byte_steps: u32,
    bytes_since_step: u64,
    cuts: u64,
}

impl Dcqcn {
    /// A controller at the line rate with alpha at 1, as DCQCN starts a flow.
    pub fn new(p: DcqcnParams) -> Self {
        Dcqcn {
            p,
            rate_bps: p.line_rate_bps,
            target_bps: p.line_rate_bps,
            alpha: ALPHA_ONE,
            notified: false,
            next_alpha_ns: None,
            next_increase_ns: None,
            timer_steps: 0,
            byte_steps: 0,
            bytes_since_step: 0,
            cuts: 0,
        }
    }

    /// Alpha, in 1/1024.
    pub fn alpha(&self) -> u64 {
        self.alpha >> 10
    }

    /// The target rate, bit/s.
    pub fn target_rate_bps(&self) -> u64 {
        self.target_bps
    }

    fn cut(&mut self, now: TimeNs) {
        self.target_bps = self.rate_bps;
        let cut = self.rate_bps / 2 * self.alpha / ALPHA_ONE;
        self.rate_bps = (self.rate_bps - cut).max(self.p.min_rate_bps);
        self.alpha = self.alpha - (self.alpha >> self.p.g_shift) + (ALPHA_ONE >> self.p.g_shift);
        self.notified = true;
        self.timer_steps = 0;
        self.byte_steps = 0;
        self.bytes_since_step = 0;
        self.next_alpha_ns = Some(now + self.p.alpha_period_ns);
        self.next_increase_ns = Some(now + self.p.increase_period_ns);
        self.cuts += 1;
    }

    /// One increase step, by the stage the two counters are in.
    fn increase(&mut self) {
        let f = self.p.fast_recovery_steps;
        let (hi, lo) = (
            self.timer_steps.max(self.byte_steps),
            self.timer_steps.min(self.byte_steps),
        );
        if hi < f {
            // Fast recovery: halfway back to the target.
        } else if lo > f {
            self.target_bps += u64::from(lo - f) * self.p.hyper_increase_bps;
        } else {
            self.target_bps += self.p.additive_increase_bps;
        }
        self.target_bps = self.target_bps.min(self.p.line_rate_bps);
        self.rate_bps = (self.rate_bps + self.target_bps).div_ceil(2).min(self.p.line_rate_bps);
    }

    /// Whether the rate is back at the line rate with nothing left to recover (the clocks
    /// stop until the next notification).
    fn recovered(&self) -> bool {
        self.rate_bps >= self.p.line_rate_bps
    }
}

impl CongestionControl for Dcqcn {
    fn name(&self) -> &'static str {
        "dcqcn"
    }

    /// Not window-limited: the rate is the limit.
    fn window_bytes(&self) -> u64 {
        u64::MAX / 4
    }

    fn ssthresh_bytes(&self) -> u64 {
        u64::MAX / 4
    }

    /// DCQCN is not clocked by acknowledgements.
    fn on_ack(&mut self, _ack: &AckEvent) {}

    /// Every signal cuts the rate (RoCE runs over a lossless fabric, so DCQCN knows only
    /// notifications; a loss is taken as one).
    fn on_congestion(&mut self, now: TimeNs, _signal: CongestionSignal, _in_flight: u64) {
        self.cut(now);
    }

    fn on_rto(&mut self, now: TimeNs, _in_flight: u64) {
        self.cut(now);
    }

    fn set_window(&mut self, _cwnd: u64) {}

    fn state(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("rate_bps", self.rate_bps),
            ("target_bps", self.target_bps),
            ("alpha_q10", self.alpha >> 10),
            ("cuts", self.cuts),
        ]
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.rate_bps)
    }

    fn next_timer(&self) -> Option<TimeNs> {
        match (self.next_alpha_ns, self.next_increase_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timer(&mut self, now: TimeNs) {
        while let Some(t) = self.next_alpha_ns.filter(|&t| t <= now) {
            if !self.notified {
                // At least one unit, so that alpha reaches 0 rather than stalling.
                self.alpha -= (self.alpha >> self.p.g_shift).max(1).min(self.alpha);
            }
            self.notified = false;
            // Alpha keeps decaying until it is 0; then its clock stops.
            self.next_alpha_ns = (self.alpha > 0).then_some(t + self.p.alpha_period_ns);
        }
        while let Some(t) = self.next_increase_ns.filter(|&t| t <= now) {
            self.timer_steps += 1;
            self.increase();
            self.next_increase_ns = (!self.recovered()).then_some(t + self.p.increase_period_ns);
        }
    }

    fn on_sent(&mut self, _now: TimeNs, bytes: u64) {
        if self.recovered() {
            return;
        }
        self.bytes_since_step += bytes;
        while self.bytes_since_step >= self.p.byte_counter_bytes {
            self.bytes_since_step -= self.p.byte_counter_bytes;
            self.byte_steps += 1;
            self.increase();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;

    fn dcqcn() -> Dcqcn {
        Dcqcn::new(DcqcnParams::for_line_rate(10 * GBPS))
    }

    #[test]
    fn the_first_notification_halves_the_rate_and_alpha_grows_with_each() {
        let mut d = dcqcn();
        assert_eq!(d.pacing_rate_bps(), Some(10 * GBPS));
        assert_eq!(d.next_timer(), None, "no clock before the first notification");
        d.on_congestion(0, CongestionSignal::Notification, 0);
        // Alpha starts at 1: the cut is 1/2.
        assert_eq!(d.pacing_rate_bps(), Some(5 * GBPS));
        assert_eq!(d.target_rate_bps(), 10 * GBPS);
        // alpha = (1 - g) * 1 + g = 1: unchanged at its ceiling.
        assert_eq!(d.alpha(), 1024);
        assert_eq!(d.next_timer(), Some(55_000));
    }

    #[test]
    fn alpha_decays_without_notifications_and_later_cuts_are_smaller() {
        let mut d = dcqcn();
        d.on_congestion(0, CongestionSignal::Notification, 0);
        // 100 alpha periods without a notification: alpha = (1 - 1/256)^99 of 1 (the first
        // period had the notification), about 0.68.
        d.on_timer(100 * 55_000);
        let a = d.alpha();
        assert!((690..=700).contains(&a), "alpha {a}");
        let before = d.pacing_rate_bps().unwrap();
        d.on_congestion(100 * 55_000, CongestionSignal::Notification, 0);
        let after = d.pacing_rate_bps().unwrap();
        // The cut is alpha / 2 of the rate, about a third.
        let kept = after as f64 / before as f64;
        assert!((0.64..0.67).contains(&kept), "kept {kept}");
    }

    #[test]
    fn the_rate_recovers_fast_then_additively_then_hyper() {
        let p = DcqcnParams::for_line_rate(10 * GBPS);
        let mut d = Dcqcn::new(p);
        d.on_congestion(0, CongestionSignal::Notification, 0);
        let mut rates = Vec::new();
        for k in 1..=5 {
            d.on_timer(k * p.increase_period_ns);
            rates.push(d.pacing_rate_bps().unwrap());
        }
        // Fast recovery: each step halves the gap to the 10 Gbit/s target.
        assert_eq!(
            rates,
            [
                7_500_000_000,
                8_750_000_000,
                9_375_000_000,
                9_687_500_000,
                9_843_750_000
            ]
        );
        assert_eq!(d.target_rate_bps(), 10 * GBPS);
        // A second cut from there, then the byte counter runs beside the timer: with both
        // counters past F the target rises by R_HAI per stage.
        let mut d = Dcqcn::new(p);
        d.on_congestion(0, CongestionSignal::Notification, 0);
        d.on_congestion(0, CongestionSignal::Notification, 0);
        let target = d.target_rate_bps();
        for k in 1..=7 {
            d.on_timer(k * p.increase_period_ns);
            d.on_sent(k * p.increase_period_ns, p.byte_counter_bytes);
        }
        assert!(
            d.target_rate_bps() > target + p.additive_increase_bps,
            "hyper increase raised the target"
        );
        assert!(d.pacing_rate_bps().unwrap() <= p.line_rate_bps);
    }

    #[test]
    fn the_clocks_stop_once_recovered() {
        let mut d = dcqcn();
        d.on_congestion(0, CongestionSignal::Notification, 0);
        d.on_timer(1_000_000_000);
        assert_eq!(d.pacing_rate_bps(), Some(10 * GBPS));
        assert_eq!(d.next_timer(), None, "{d:?}");
    }
}
