//! LIA, the Linked Increases Algorithm (RFC 6356): MPTCP's coupled congestion control.
//!
//! Each subflow keeps NewReno's slow start and decrease; in congestion avoidance an ACK of
//! `acked` bytes on subflow i grows its window by
//! `min(alpha * acked * mss_i / cwnd_total, acked * mss_i / cwnd_i)`, with
//! `alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2` (RFC 6356, 4.1).
//! The connection as a whole then takes no more than a single TCP flow would on its best path
//! (goal 2) and moves traffic off congested paths (goal 3). With one subflow LIA is NewReno.

use super::{slow_start, AckEvent, CongestionControl, CongestionSignal, NewReno};
use crate::TimeNs;

/// LIA on one subflow; its siblings come in each [`AckEvent::subflows`]. NewReno holds the
/// window: LIA changes only how congestion avoidance grows it.
#[derive(Clone, Debug)]
pub struct Lia {
    reno: NewReno,
    mss: u64,
    /// Growth in bytes not yet a whole byte of window.
    frac: f64,
}

impl Lia {
    /// Initial window of `iw` segments, no threshold.
    pub fn new(mss: u32, iw: u32) -> Self {
        Lia {
            reno: NewReno::new(mss, iw),
            mss: u64::from(mss),
            frac: 0.0,
        }
    }

    /// RFC 6356's alpha from the subflows' windows (bytes) and RTTs (subflows without an RTT
    /// sample yet are left out); None without two measured subflows.
    pub fn alpha(subflows: &[super::SubflowView]) -> Option<f64> {
        let (mut best, mut sum, mut total, mut n) = (0.0f64, 0.0f64, 0.0f64, 0);
        for s in subflows.iter().filter(|s| s.srtt_ns > 0) {
            let (w, rtt) = (s.cwnd_bytes as f64, s.srtt_ns as f64);
            best = best.max(w / (rtt * rtt));
            sum += w / rtt;
            total += w;
            n += 1;
        }
        (n >= 2 && sum > 0.0).then(|| total * best / (sum * sum))
    }
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }
    fn window_bytes(&self) -> u64 {
        self.reno.window_bytes()
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.reno.ssthresh_bytes()
    }
    fn on_ack(&mut self, ack: &AckEvent) {
        // One subflow (or one measured): NewReno.
        let (Some(alpha), true) = (Lia::alpha(ack.subflows), ack.cwnd_limited) else {
            self.reno.on_ack(ack);
            return;
        };
        let mut cwnd = self.reno.window_bytes();
        let left = slow_start(&mut cwnd, self.reno.ssthresh_bytes(), ack.acked_bytes);
        if left > 0 {
            let total: u64 = ack.subflows.iter().map(|s| s.cwnd_bytes).sum();
            let (acked, mss) = (left as f64, self.mss as f64);
            let coupled = alpha * acked * mss / total.max(1) as f64;
            let uncoupled = acked * mss / cwnd.max(1) as f64;
            self.frac += coupled.min(uncoupled);
            let whole = self.frac.floor();
            self.frac -= whole;
            cwnd += whole as u64;
        }
        self.reno.set_window(cwnd);
    }
    fn on_congestion(&mut self, now: TimeNs, signal: CongestionSignal, in_flight: u64) {
        self.reno.on_congestion(now, signal, in_flight);
        self.frac = 0.0;
    }
    fn on_rto(&mut self, now: TimeNs, in_flight: u64) {
        self.reno.on_rto(now, in_flight);
        self.frac = 0.0;
    }
    fn set_window(&mut self, cwnd: u64) {
        self.reno.set_window(cwnd);
    }
}

#[cfg(test)]
mod tests {
    use super::super::coupled_tests::{connection_growth_per_rtt, in_avoidance, one_rtt, MSS};
    use super::super::SubflowView;
    use super::*;

    fn lia() -> Lia {
        Lia::new(MSS as u32, 10)
    }

    #[test]
    fn alone_it_grows_as_newreno() {
        let mut l = [in_avoidance(lia(), 20)];
        assert_eq!(one_rtt(&mut l, &[10_000_000]), [MSS as i64]);
    }

    #[test]
    fn equal_subflows_together_grow_by_one_segment_over_n_per_rtt() {
        // RFC 6356 with N equal subflows: alpha = 1 / N and the connection grows by 1 / N
        // segment per RTT in all, so that, each subflow halving on its own losses, it takes
        // one TCP flow's share in equilibrium (goal 2). Uncoupled, two subflows would grow by 2.
        for n in [2usize, 4] {
            let per_rtt = connection_growth_per_rtt(n, lia);
            let want = 1.0 / n as f64;
            assert!(
                (per_rtt - want).abs() < 0.05 * want + 0.02,
                "n = {n}: {per_rtt} segments per RTT"
            );
        }
    }

    #[test]
    fn alpha_matches_rfc_6356() {
        let eq = [SubflowView {
            cwnd_bytes: 10_000,
            srtt_ns: 10,
            ..SubflowView::default()
        }; 2];
        // Equal windows and RTTs: alpha = 2w * (w/r^2) / (2w/r)^2 = 1/2.
        assert!((Lia::alpha(&eq).unwrap() - 0.5).abs() < 1e-12);
        // One subflow measured: no coupling yet.
        let one = [eq[0], SubflowView::default()];
        assert_eq!(Lia::alpha(&one), None);
        // A path with twice the RTT and the same window: alpha = 2w (w/r^2) / (w/r + w/2r)^2
        // = 2 / 2.25.
        let uneq = [
            eq[0],
            SubflowView {
                cwnd_bytes: 10_000,
                srtt_ns: 20,
                ..SubflowView::default()
            },
        ];
        assert!((Lia::alpha(&uneq).unwrap() - 2.0 / 2.25).abs() < 1e-12);
    }
}
