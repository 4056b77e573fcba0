//! OLIA, the Opportunistic Linked Increases Algorithm (Khalili, Gast, Popovic and Le Boudec,
//! "MPTCP is not Pareto-optimal", CoNEXT 2012; draft-khalili-mptcp-congestion-control).
//!
//! Each subflow keeps NewReno's slow start and halving; in congestion avoidance an ACK of
//! `acked` bytes on subflow r grows its window by
//!
//! ```text
//! acked * mss * ( (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2  +  alpha_r / w_r )
//! ```
//!
//! (windows in bytes). The first term alone makes the connection as aggressive as one TCP on
//! its best path and, unlike LIA, Pareto-optimal; `alpha_r` moves window from the paths with
//! the largest windows (the set M) to the paths that look best by their loss intervals but do
//! not have the largest window (B \ M, "best paths" maximising `l_r^2 / rtt_r`, where `l_r` is
//! the larger of the bytes acknowledged since the last loss and between the last two):
//! `alpha_r = 1 / (n * |B \ M|)` on B \ M, `-1 / (n * |M|)` on M when B \ M is not empty, and 0
//! otherwise (n subflows). With one subflow OLIA is NewReno.
//!
//! A subflow's own loss intervals are its controller's ([`CongestionControl::loss_interval_bytes`]); the
//! connection hands every subflow's to each controller in [`SubflowView::loss_interval_bytes`].

use super::{slow_start, AckEvent, CongestionControl, CongestionSignal, NewReno, SubflowView};
use crate::TimeNs;

/// OLIA on one subflow.
#[derive(Clone, Debug)]
pub struct Olia {
    reno: NewReno,
    mss: u64,
    /// Bytes acknowledged since the last loss (OLIA's l1r).
    since_loss_bytes: u64,
    /// Bytes acknowledged between the last two losses (l2r).
    between_losses_bytes: u64,
    /// Growth in bytes not yet a whole byte of window (may be negative: alpha can shrink).
    frac: f64,
}

impl Olia {
    /// Initial window of `iw` segments, no threshold.
    pub fn new(mss: u32, iw: u32) -> Self {
        Olia {
            reno: NewReno::new(mss, iw),
            mss: u64::from(mss),
            since_loss_bytes: 0,
            between_losses_bytes: 0,
            frac: 0.0,
        }
    }

    /// `alpha_r` for subflow `me` among `subflows` (all measured: an RTT each); None when
    /// fewer than two subflows are measured (then OLIA is NewReno).
    pub fn alpha(subflows: &[SubflowView], me: usize) -> Option<f64> {
        if subflows.len() < 2 || subflows.iter().any(|s| s.srtt_ns == 0) {
            return None;
        }
        let n = subflows.len() as f64;
        let max_w = subflows.iter().map(|s| s.cwnd_bytes).max().unwrap_or(0);
        let quality = |s: &SubflowView| {
            let l = s.loss_interval_bytes as f64;
            l * l / s.srtt_ns as f64
        };
        let best_q = subflows.iter().map(quality).fold(0.0f64, f64::max);
        let in_m = |s: &SubflowView| s.cwnd_bytes == max_w;
        let in_b = |s: &SubflowView| quality(s) >= best_q;
        let m = subflows.iter().filter(|s| in_m(s)).count() as f64;
        let b_not_m = subflows.iter().filter(|s| in_b(s) && !in_m(s)).count() as f64;
        let s = &subflows[me];
        Some(if b_not_m == 0.0 {
            0.0
        } else if in_b(s) && !in_m(s) {
            1.0 / (n * b_not_m)
        } else if in_m(s) {
            -1.0 / (n * m)
        } else {
            0.0
        })
    }
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }
    fn window_bytes(&self) -> u64 {
        self.reno.window_bytes()
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.reno.ssthresh_bytes()
    }
    fn on_ack(&mut self, ack: &AckEvent) {
        self.since_loss_bytes += ack.acked_bytes;
        let (Some(alpha), true) = (Olia::alpha(ack.subflows, ack.subflow), ack.cwnd_limited) else {
            self.reno.on_ack(ack);
            return;
        };
        let mut cwnd = self.reno.window_bytes();
        let left = slow_start(&mut cwnd, self.reno.ssthresh_bytes(), ack.acked_bytes);
        if left > 0 {
            let me = &ack.subflows[ack.subflow];
            let rate_sum: f64 = ack
                .subflows
                .iter()
                .map(|s| s.cwnd_bytes as f64 / s.srtt_ns as f64)
                .sum();
            let rtt = me.srtt_ns as f64;
            let w = cwnd.max(1) as f64;
            let coupled = (w / (rtt * rtt)) / (rate_sum * rate_sum);
            let per_byte = coupled + alpha / w;
            self.frac += left as f64 * self.mss as f64 * per_byte;
            let whole = self.frac.trunc();
            self.frac -= whole;
            // Never below two segments: alpha's shrinking must not empty a window.
            let floor = 2 * self.mss;
            cwnd = ((cwnd as f64 + whole).max(floor as f64)) as u64;
        }
        self.reno.set_window(cwnd);
    }
    fn on_congestion(&mut self, now: TimeNs, signal: CongestionSignal, in_flight: u64) {
        self.reno.on_congestion(now, signal, in_flight);
        self.between_losses_bytes = self.since_loss_bytes;
        self.since_loss_bytes = 0;
        self.frac = 0.0;
    }
    fn on_rto(&mut self, now: TimeNs, in_flight: u64) {
        self.reno.on_rto(now, in_flight);
        self.between_losses_bytes = self.since_loss_bytes;
        self.since_loss_bytes = 0;
        self.frac = 0.0;
    }
    fn set_window(&mut self, cwnd: u64) {
        self.reno.set_window(cwnd);
    }
    /// This subflow's `l_r`: the larger of the bytes acknowledged since its last loss and
    /// between its last two.
    fn loss_interval_bytes(&self) -> u64 {
        self.since_loss_bytes.max(self.between_losses_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::coupled_tests::{ack, connection_growth_per_rtt, in_avoidance, one_rtt, MSS};
    use super::*;

    fn olia() -> Olia {
        Olia::new(MSS as u32, 10)
    }

    fn view(cwnd_segs: u64, srtt_ns: u64, interval_bytes: u64) -> SubflowView {
        SubflowView {
            cwnd_bytes: cwnd_segs * MSS,
            srtt_ns,
            loss_interval_bytes: interval_bytes,
        }
    }

    #[test]
    fn alone_it_grows_as_newreno() {
        let mut o = [in_avoidance(olia(), 20)];
        assert_eq!(one_rtt(&mut o, &[10_000_000]), [MSS as i64]);
    }

    #[test]
    fn alpha_moves_window_from_the_largest_to_the_best_paths() {
        // Path 0 has the largest window, path 1 the longest loss interval (the best path).
        let subs = [view(40, 10, 1_000), view(10, 10, 50_000)];
        assert_eq!(Olia::alpha(&subs, 0), Some(-0.5));
        assert_eq!(Olia::alpha(&subs, 1), Some(0.5));
        // The best path also has the largest window: nothing to move.
        let subs = [view(40, 10, 50_000), view(10, 10, 1_000)];
        assert_eq!(Olia::alpha(&subs, 0), Some(0.0));
        assert_eq!(Olia::alpha(&subs, 1), Some(0.0));
        // Three paths, one best outside M, one in M, one neither.
        let subs = [view(40, 10, 1_000), view(10, 10, 50_000), view(20, 10, 2_000)];
        let a: Vec<f64> = (0..3).map(|i| Olia::alpha(&subs, i).unwrap()).collect();
        assert_eq!(a, [-1.0 / 3.0, 1.0 / 3.0, 0.0]);
        // One subflow measured: no coupling.
        assert_eq!(Olia::alpha(&[view(10, 10, 0), view(10, 0, 0)], 0), None);
    }

    #[test]
    fn equal_subflows_together_grow_as_one_tcp() {
        // n equal subflows with equal loss intervals: alpha = 0, and each grows by
        // (w/r^2)/(n w/r)^2 * w = 1/n^2 segment per RTT: the connection by 1/n in all, so that
        // (each subflow halving on its own losses) it takes about one TCP's share.
        for n in [2usize, 4] {
            let per_rtt = connection_growth_per_rtt(n, olia);
            let want = 1.0 / n as f64;
            assert!(
                (per_rtt - want).abs() < 0.05 * want + 0.02,
                "n = {n}: {per_rtt} segments per RTT"
            );
        }
    }

    #[test]
    fn a_loss_records_the_interval_and_halves_the_window() {
        let mut o = in_avoidance(olia(), 20);
        let views = [view(20, 10, 0), view(20, 10, 0)];
        for _ in 0..30 {
            o.on_ack(&ack(MSS, &views, 0));
        }
        assert_eq!(o.loss_interval_bytes(), 30 * MSS);
        let w = o.window_bytes();
        o.on_congestion(0, CongestionSignal::Loss, w);
        assert_eq!(o.window_bytes(), w / 2);
        // The interval survives the loss (as the one between the last two losses).
        assert_eq!(o.loss_interval_bytes(), 30 * MSS);
        o.on_ack(&ack(5 * MSS, &views, 0));
        assert_eq!(o.loss_interval_bytes(), 30 * MSS);
    }

    #[test]
    fn a_path_losing_window_to_the_best_keeps_two_segments() {
        let mut o = in_avoidance(olia(), 2);
        // Path 0 is in M and loses window to path 1 (in B \ M) on every ACK.
        let views = [view(2, 10, 0), view(1, 10, 1_000_000)];
        for _ in 0..1_000 {
            o.on_ack(&ack(MSS, &views, 0));
        }
        assert!(o.window_bytes() >= 2 * MSS, "{}", o.window_bytes());
    }
}
