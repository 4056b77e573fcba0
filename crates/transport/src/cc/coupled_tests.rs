//! What the tests of the coupled controllers (LIA, OLIA) share: ACK events over a set of
//! subflows, a subflow put in congestion avoidance, and one round trip of ACKs on each.

use super::{AckEvent, CongestionControl, CongestionSignal, SubflowView};

/// Segment size of the tests, bytes.
pub(crate) const MSS: u64 = 1000;

/// An ACK of `acked` bytes on subflow `subflow` of `subflows`, the window the limit.
pub(crate) fn ack<'a>(acked: u64, subflows: &'a [SubflowView], subflow: usize) -> AckEvent<'a> {
    AckEvent {
        now_ns: 0,
        acked_bytes: acked,
        cwnd_limited: true,
        srtt_ns: subflows.get(subflow).map_or(0, |s| s.srtt_ns),
        min_rtt_ns: 0,
        subflows,
        subflow,
    }
}

/// `c` halved by a loss from twice `segs` segments: in congestion avoidance at `segs`.
pub(crate) fn in_avoidance<C: CongestionControl>(mut c: C, segs: u64) -> C {
    c.set_window(2 * segs * MSS);
    c.on_congestion(0, CongestionSignal::Loss, 0);
    assert_eq!(c.window_bytes(), segs * MSS);
    c
}

/// One window of ACKs on each subflow in turn, each seeing its siblings as they are then;
/// each window's growth in bytes.
pub(crate) fn one_rtt<C: CongestionControl>(subs: &mut [C], rtts_ns: &[u64]) -> Vec<i64> {
    let before: Vec<u64> = subs.iter().map(|s| s.window_bytes()).collect();
    for i in 0..subs.len() {
        for _ in 0..before[i] / MSS {
            let views: Vec<SubflowView> = subs
                .iter()
                .zip(rtts_ns)
                .map(|(s, &r)| SubflowView {
                    cwnd_bytes: s.window_bytes(),
                    srtt_ns: r,
                    loss_interval_bytes: s.loss_interval_bytes(),
                })
                .collect();
            subs[i].on_ack(&ack(MSS, &views, i));
        }
    }
    subs.iter()
        .zip(&before)
        .map(|(s, &b)| s.window_bytes() as i64 - b as i64)
        .collect()
}

/// Segments per round trip the connection of `n` equal subflows grows by, over 40 round trips.
pub(crate) fn connection_growth_per_rtt<C: CongestionControl>(n: usize, new: impl Fn() -> C) -> f64 {
    let mut subs: Vec<C> = (0..n).map(|_| in_avoidance(new(), 20)).collect();
    let rtts = vec![10_000_000; n];
    let mut total = 0;
    for _ in 0..40 {
        total += one_rtt(&mut subs, &rtts).iter().sum::<i64>();
    }
    total as f64 / 40.0 / MSS as f64
}
