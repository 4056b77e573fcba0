//! NewReno's window (RFC 5681); its loss recovery (RFC 6582) lives in the sender.

use super::{additive_increase, slow_start, AckEvent, CongestionControl, CongestionSignal};
use crate::TimeNs;

/// NewReno: slow start, one segment per window in congestion avoidance, halve on congestion.
#[derive(Clone, Debug)]
pub struct NewReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    acc: u64,
}

impl NewReno {
    /// Initial window of `iw` segments, no threshold.
    pub fn new(mss: u32, iw: u32) -> Self {
        NewReno {
            mss: u64::from(mss),
            cwnd: u64::from(mss) * u64::from(iw.max(1)),
            ssthresh: u64::MAX,
            acc: 0,
        }
    }
}

impl NewReno {
    /// Set the threshold to `ssthresh` (at least two segments) and the window to it: the
    /// reduction after a congestion signal, for controllers that reuse NewReno's growth.
    pub(crate) fn reduce_to(&mut self, ssthresh: u64) {
        self.ssthresh = ssthresh.max(2 * self.mss);
        self.cwnd = self.ssthresh;
        self.acc = 0;
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn window_bytes(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckEvent) {
        if !ack.cwnd_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.acked_bytes);
        if left > 0 {
            additive_increase(&mut self.cwnd, &mut self.acc, self.mss, left);
        }
    }
    fn on_congestion(&mut self, _now: TimeNs, _s: CongestionSignal, _in_flight: u64) {
        // Linux's tcp_reno_ssthresh halves the window, not the flight size of RFC 5681.
        self.reduce_to(self.cwnd / 2);
    }
    fn on_rto(&mut self, _now: TimeNs, _in_flight: u64) {
        self.ssthresh = (self.cwnd / 2).max(2 * self.mss);
        self.cwnd = self.mss;
        self.acc = 0;
    }
    fn set_window(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(self.mss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(bytes: u64) -> AckEvent<'static> {
        AckEvent {
            now_ns: 0,
            acked_bytes: bytes,
            cwnd_limited: true,
            srtt_ns: 0,
            min_rtt_ns: 0,
            subflows: &[],
            subflow: 0,
        }
    }

    #[test]
    fn slow_start_doubles_per_window_then_one_segment_per_window() {
        let mut r = NewReno::new(1000, 10);
        r.on_ack(&ack(10_000));
        assert_eq!(r.window_bytes(), 20_000);
        r.on_congestion(0, CongestionSignal::Loss, 20_000);
        assert_eq!((r.window_bytes(), r.ssthresh_bytes()), (10_000, 10_000));
        for _ in 0..10 {
            r.on_ack(&ack(1000));
        }
        assert_eq!(r.window_bytes(), 11_000, "one segment after a window of ACKs");
    }

    #[test]
    fn an_unused_window_does_not_grow() {
        let mut r = NewReno::new(1000, 10);
        r.on_ack(&AckEvent {
            cwnd_limited: false,
            ..ack(5000)
        });
        assert_eq!(r.window_bytes(), 10_000);
    }

    #[test]
    fn rto_restarts_from_one_segment() {
        let mut r = NewReno::new(1000, 10);
        r.on_rto(0, 10_000);
        assert_eq!((r.window_bytes(), r.ssthresh_bytes()), (1000, 5000));
    }
}
