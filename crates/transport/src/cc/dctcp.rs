//! DCTCP (RFC 8257): NewReno growth; on ECN-Echo the window shrinks by alpha / 2, where alpha is
//! a moving average (gain 1/16) of the fraction of bytes marked per window.

use super::{AckEvent, CongestionControl, CongestionSignal, NewReno};
use crate::TimeNs;

/// Fixed-point scale of alpha (Linux uses 1024).
pub const ALPHA_SCALE: u64 = 1024;
/// The estimation gain g = 1 / 2^4.
const G_SHIFT: u32 = 4;

/// DCTCP: NewReno's window with its own response to ECN-Echo.
#[derive(Clone, Debug)]
pub struct Dctcp {
    reno: NewReno,
    /// alpha in units of 1 / ALPHA_SCALE; starts at 1 as Linux's `dctcp_alpha_on_init`.
    alpha: u64,
    window_acked: u64,
    window_marked: u64,
}

impl Dctcp {
    /// Initial window of `iw` segments, no threshold, alpha = 1.
    pub fn new(mss: u32, iw: u32) -> Self {
        Dctcp {
            reno: NewReno::new(mss, iw),
            alpha: ALPHA_SCALE,
            window_acked: 0,
            window_marked: 0,
        }
    }

    /// alpha, scaled by 1024 (1024 is 1).
    pub fn alpha_scaled(&self) -> u64 {
        self.alpha
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }
    fn window_bytes(&self) -> u64 {
        self.reno.window_bytes()
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.reno.ssthresh_bytes()
    }
    fn on_ack(&mut self, ack: &AckEvent) {
        self.reno.on_ack(ack);
    }
    fn on_congestion(&mut self, now: TimeNs, signal: CongestionSignal, in_flight: u64) {
        match signal {
            CongestionSignal::Ecn | CongestionSignal::Notification | CongestionSignal::RateFeedback { .. } => {
                let cwnd = self.reno.window_bytes();
                self.reno.reduce_to(cwnd - cwnd * self.alpha / (2 * ALPHA_SCALE));
            }
            CongestionSignal::Loss => self.reno.on_congestion(now, signal, in_flight),
        }
    }
    fn on_rto(&mut self, now: TimeNs, in_flight: u64) {
        self.reno.on_rto(now, in_flight);
    }
    fn set_window(&mut self, cwnd: u64) {
        self.reno.set_window(cwnd);
    }
    fn on_ecn_ack(&mut self, acked: u64, ece: bool, window_end: bool) {
        self.window_acked += acked;
        if ece {
            self.window_marked += acked;
        }
        if window_end && self.window_acked > 0 {
            // alpha = (1 - g) alpha + g F, as Linux's dctcp_update_alpha: the decay takes the
            // last units too (once alpha >> g is zero, alpha itself), so that alpha reaches 0
            // when nothing is marked; g F is taken at full precision.
            let decay = match self.alpha >> G_SHIFT {
                0 => self.alpha,
                d => d,
            };
            let g_f = (self.window_marked * (ALPHA_SCALE >> G_SHIFT)) / self.window_acked;
            self.alpha = (self.alpha - decay + g_f).min(ALPHA_SCALE);
            self.window_acked = 0;
            self.window_marked = 0;
        }
    }
    fn state(&self) -> Vec<(&'static str, u64)> {
        vec![("dctcp_alpha_x1024", self.alpha)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_decays_without_marks_and_sets_the_cut() {
        let mut d = Dctcp::new(1000, 10);
        for _ in 0..100 {
            d.on_ecn_ack(10_000, false, true);
        }
        assert_eq!(d.alpha_scaled(), 0, "without marks alpha decays to zero, as Linux's");
        // Every byte marked for many windows: alpha goes to 1 and the cut to one half.
        for _ in 0..200 {
            d.on_ecn_ack(10_000, true, true);
        }
        assert!(d.alpha_scaled() > 1000);
        d.set_window(100_000);
        d.on_congestion(0, CongestionSignal::Ecn, 100_000);
        assert!((50_000..52_000).contains(&d.window_bytes()), "{}", d.window_bytes());
    }

    #[test]
    fn alpha_follows_the_marked_fraction() {
        let mut d = Dctcp::new(1000, 10);
        // One byte in sixteen marked, long enough to converge: alpha = F = 64 / 1024, up to the
        // integer decay's dead band (alpha >> 4 == 4 holds for 64..=79; Linux's has the same).
        for _ in 0..400 {
            d.on_ecn_ack(8_000, false, false);
            d.on_ecn_ack(1_000, true, false);
            d.on_ecn_ack(7_000, false, true);
        }
        let a = d.alpha_scaled();
        assert!((64..=79).contains(&a), "F = 1/16 gives alpha near 64: {a}");
    }

    #[test]
    fn a_small_alpha_cuts_little() {
        let mut d = Dctcp::new(1000, 10);
        for _ in 0..100 {
            d.on_ecn_ack(10_000, false, true);
        }
        d.set_window(100_000);
        d.on_congestion(0, CongestionSignal::Ecn, 100_000);
        assert!(d.window_bytes() > 99_000, "{}", d.window_bytes());
    }
}
