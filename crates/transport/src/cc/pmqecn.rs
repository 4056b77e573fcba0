//! PMQECN's reaction point (Xu et al., PeerJ Computer Science 2024, Algorithm 3 and Fig. 5): a
//! rate-based controller for a paced UDP sender. Feedback from a switch carries the class's
//! measured arrival rate `lambda` and the optimiser's target `lambda*`; it cuts the current rate
//! `R_c` by `lambda* / lambda` and remembers the rate before as the target `R_t`. Then, once per
//! cycle without feedback: fast recovery for `NC` cycles (`R_c = (R_c + R_t) / 2`), then active
//! increase (`R_t += R_A`, `R_c = (R_c + R_t) / 2`).
//!
//! What the paper leaves open, chosen here (`crates/programs/src/pmqecn/README.md`):
//! - The cycle is a timer period (default 10 ms), restarted by each cut, as QCN's rate-increase
//!   timer.
//! - Active increase is QCN's and P4QCN's, which the paper cites for it. Algorithm 3 read
//!   literally (`R_c = (R_c + R_t + R_A) / 2` with `R_t` never raised) converges to `R_A`
//!   whatever the path can carry.
//! - A target above the measured rate does not raise the rate (the ratio is clamped to 1):
//!   feedback comes only from a congested queue.
//! - Rates stay within [`PmqecnRpParams::min_rate_bps`] and the line rate.

use super::{AckEvent, CongestionControl, CongestionSignal};
use crate::TimeNs;

/// The reaction point's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PmqecnRpParams {
    /// The rate a flow starts at (Algorithm 3: 1 Mbit/s).
    pub initial_rate_bps: u64,
    /// The rate it never exceeds.
    pub line_rate_bps: u64,
    /// The floor a cut never goes below.
    pub min_rate_bps: u64,
    /// The cycle, ns.
    pub cycle_ns: u64,
    /// Cycles of fast recovery after a cut (`NC`, 5).
    pub fast_recovery_cycles: u32,
    /// Active increase of the target per cycle (`R_A`, 5 Mbit/s).
    pub active_increase_bps: u64,
}

impl PmqecnRpParams {
    /// The paper's values (1 Mbit/s start, `NC` 5, `R_A` 5 Mbit/s) and a 10 ms cycle, on a line
    /// of `line_rate_bps`.
    pub fn paper(line_rate_bps: u64) -> Self {
        PmqecnRpParams {
            initial_rate_bps: 1_000_000.min(line_rate_bps),
            line_rate_bps,
            min_rate_bps: (line_rate_bps / 1000).max(1),
            cycle_ns: 10_000_000,
            fast_recovery_cycles: 5,
            active_increase_bps: 5_000_000,
        }
    }
}

/// Where the controller is in Fig. 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpPhase {
    /// Recovering towards the rate before the last cut, this many cycles left.
    FastRecovery(u32),
    /// Probing above it.
    ActiveIncrease,
}

/// PMQECN's reaction point. See the module documentation.
#[derive(Clone, Debug)]
pub struct PmqecnRp {
    p: PmqecnRpParams,
    rate_bps: u64,
    target_bps: u64,
    phase: RpPhase,
    next_cycle_ns: TimeNs,
    cuts: u64,
}

impl PmqecnRp {
    /// A controller starting at `p.initial_rate_bps` in active increase, its first cycle ending
    /// at `start_ns + p.cycle_ns`.
    pub fn new(p: PmqecnRpParams, start_ns: TimeNs) -> Self {
        let rate = p.initial_rate_bps.clamp(p.min_rate_bps, p.line_rate_bps);
        PmqecnRp {
            p,
            rate_bps: rate,
            target_bps: rate,
            phase: RpPhase::ActiveIncrease,
            next_cycle_ns: start_ns + p.cycle_ns,
            cuts: 0,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> RpPhase {
        self.phase
    }

    /// The target rate `R_t`, bit/s.
    pub fn target_bps(&self) -> u64 {
        self.target_bps
    }

    /// Feedback from a switch: the class's measured and target arrival rates. Feedback with
    /// no measured rate (a switch whose control plane has not run yet) says nothing and is
    /// ignored: taking it as a cut of nothing would still hold the rate in fast recovery.
    pub fn on_feedback(&mut self, now_ns: TimeNs, measured_bps: u64, target_bps: u64) {
        if measured_bps == 0 {
            return;
        }
        let cut =
            (u128::from(self.rate_bps) * u128::from(target_bps.min(measured_bps)) / u128::from(measured_bps)) as u64;
        self.target_bps = self.rate_bps;
        self.rate_bps = cut.clamp(self.p.min_rate_bps, self.p.line_rate_bps);
        self.phase = RpPhase::FastRecovery(self.p.fast_recovery_cycles);
        self.next_cycle_ns = now_ns + self.p.cycle_ns;
        self.cuts += 1;
    }

    /// One cycle without feedback.
    fn cycle(&mut self) {
        match self.phase {
            RpPhase::FastRecovery(left) => {
                self.phase = if left <= 1 {
                    RpPhase::ActiveIncrease
                } else {
                    RpPhase::FastRecovery(left - 1)
                };
            }
            RpPhase::ActiveIncrease => {
                self.target_bps = self
                    .target_bps
                    .saturating_add(self.p.active_increase_bps)
                    .min(self.p.line_rate_bps);
            }
        }
        self.rate_bps = ((self.rate_bps + self.target_bps) / 2).clamp(self.p.min_rate_bps, self.p.line_rate_bps);
    }
}

impl CongestionControl for PmqecnRp {
    fn name(&self) -> &'static str {
        "pmqecn"
    }

    fn window_bytes(&self) -> u64 {
        u64::MAX
    }

    fn ssthresh_bytes(&self) -> u64 {
        u64::MAX
    }

    fn on_ack(&mut self, _ack: &AckEvent) {}

    /// A notification without rates (a plain CNP) halves the rate, the largest cut
    /// Algorithm 3 makes for a target half the measured rate.
    fn on_congestion(&mut self, now_ns: TimeNs, signal: CongestionSignal, _in_flight_bytes: u64) {
        match signal {
            CongestionSignal::RateFeedback {
                measured_bps,
                target_bps,
            } => self.on_feedback(now_ns, measured_bps, target_bps),
            _ => self.on_feedback(now_ns, 2, 1),
        }
    }

    fn on_rto(&mut self, _now_ns: TimeNs, _in_flight_bytes: u64) {}

    fn set_window(&mut self, _cwnd_bytes: u64) {}

    fn state(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("rate_bps", self.rate_bps),
            ("target_bps", self.target_bps),
            ("cuts", self.cuts),
        ]
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.rate_bps)
    }

    fn next_timer(&self) -> Option<TimeNs> {
        Some(self.next_cycle_ns)
    }

    fn on_timer(&mut self, now_ns: TimeNs) {
        // Late polls run every cycle that has passed, never more than one per cycle.
        while self.next_cycle_ns <= now_ns {
            self.cycle();
            self.next_cycle_ns += self.p.cycle_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT: u64 = 1_000_000;
    const CYCLE: u64 = 10_000_000;

    fn rp() -> PmqecnRp {
        PmqecnRp::new(PmqecnRpParams::paper(10 * MBIT), 0)
    }

    fn rate(r: &PmqecnRp) -> u64 {
        r.pacing_rate_bps().unwrap()
    }

    #[test]
    fn it_starts_at_one_megabit_and_active_increase_reaches_the_line_rate() {
        let mut r = rp();
        assert_eq!(rate(&r), MBIT);
        r.on_timer(CYCLE);
        // R_t = 1 + 5 = 6, R_c = (1 + 6) / 2.
        assert_eq!((r.target_bps(), rate(&r)), (6 * MBIT, 3_500_000));
        // The target reaches the line at the third cycle; the rate halves its gap each cycle.
        r.on_timer(20 * CYCLE);
        assert_eq!(r.target_bps(), 10 * MBIT);
        assert!(rate(&r) > 10 * MBIT - 1000 && rate(&r) <= 10 * MBIT, "{}", rate(&r));
    }

    #[test]
    fn feedback_cuts_by_the_ratio_then_fast_recovery_halves_the_gap_for_nc_cycles() {
        let mut r = rp();
        r.on_timer(30 * CYCLE);
        let before = rate(&r);
        // lambda* = 0.6 lambda.
        r.on_congestion(
            30 * CYCLE + 1,
            CongestionSignal::RateFeedback {
                measured_bps: 5 * MBIT,
                target_bps: 3 * MBIT,
            },
            0,
        );
        assert_eq!(rate(&r), before * 3 / 5);
        assert_eq!(r.target_bps(), before);
        assert_eq!(r.phase(), RpPhase::FastRecovery(5));
        let mut gaps = Vec::new();
        for k in 1..=5 {
            r.on_timer(30 * CYCLE + 1 + k * CYCLE);
            gaps.push(r.target_bps() - rate(&r));
        }
        // The gap halves each cycle and the target stays put for NC = 5 cycles.
        let first = before - before * 3 / 5;
        for (k, g) in gaps.iter().enumerate() {
            let expect = first >> (k + 1);
            assert!(g.abs_diff(expect) <= 1, "cycle {}: gap {g}, expected {expect}", k + 1);
        }
        assert_eq!(r.target_bps(), before);
        assert_eq!(r.phase(), RpPhase::ActiveIncrease);
    }

    #[test]
    fn a_cut_restarts_the_cycle_and_bounds_hold() {
        let mut r = rp();
        r.on_feedback(5, 4 * MBIT, 0);
        assert_eq!(rate(&r), 10_000, "the floor: a thousandth of the line");
        assert_eq!(r.next_timer(), Some(5 + CYCLE));
        // A target above the measured rate is no increase; no measured rate, no cut.
        let now = rate(&r);
        r.on_feedback(6, MBIT, 9 * MBIT);
        assert_eq!(rate(&r), now);
        let phase = r.phase();
        r.on_timer(5 + 2 * CYCLE);
        let (rate_before, phase_before) = (rate(&r), r.phase());
        r.on_feedback(5 + 2 * CYCLE + 1, 0, 0);
        assert_eq!((rate(&r), r.phase()), (rate_before, phase_before), "was {phase:?}");
        // A plain notification halves.
        r.on_timer(100 * CYCLE);
        let before = rate(&r);
        r.on_congestion(100 * CYCLE + 1, CongestionSignal::Notification, 0);
        assert_eq!(rate(&r), before / 2);
    }

    #[test]
    fn a_late_poll_runs_each_missed_cycle_once() {
        let (mut a, mut b) = (rp(), rp());
        for k in 1..=7 {
            a.on_timer(k * CYCLE);
        }
        b.on_timer(7 * CYCLE + 3);
        assert_eq!(rate(&a), rate(&b));
        assert_eq!(a.target_bps(), b.target_bps());
    }
}
