//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use crate::{TimeNs, NS_PER_MS};

/// Clock granularity `G` of RFC 6298 (Linux's jiffy-free TCP uses 1 µs; we use 1 ms, which only
/// matters when `4 * RTTVAR` is smaller).
pub const CLOCK_GRANULARITY_NS: u64 = NS_PER_MS;
/// The RTO before any sample (RFC 6298, 2.1).
pub const INITIAL_RTO_NS: u64 = 1_000 * NS_PER_MS;
/// Upper bound on the RTO (RFC 6298 allows one of at least 60 s).
pub const MAX_RTO_NS: u64 = 60_000 * NS_PER_MS;

/// SRTT, RTTVAR and the RTO with its minimum.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    min_rtt_ns: u64,
    latest_ns: u64,
    min_rto_ns: u64,
}

impl RttEstimator {
    /// An estimator with no sample and the given minimum RTO (RFC 6298 says 1 s; Linux uses
    /// 200 ms).
    pub fn new(min_rto_ns: u64) -> Self {
        RttEstimator {
            srtt_ns: None,
            rttvar_ns: 0,
            min_rtt_ns: u64::MAX,
            latest_ns: 0,
            min_rto_ns,
        }
    }

    /// Feed one RTT measurement (RFC 6298, 2.2 and 2.3: alpha = 1/8, beta = 1/4).
    pub fn on_sample(&mut self, rtt_ns: TimeNs) {
        self.latest_ns = rtt_ns;
        self.min_rtt_ns = self.min_rtt_ns.min(rtt_ns);
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(rtt_ns);
                self.rttvar_ns = rtt_ns / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt_ns);
                self.rttvar_ns = (3 * self.rttvar_ns + err) / 4;
                self.srtt_ns = Some((7 * srtt + rtt_ns) / 8);
            }
        }
    }

    /// Smoothed RTT, if there was a sample.
    pub fn srtt_ns(&self) -> Option<u64> {
        self.srtt_ns
    }

    /// RTT variation.
    pub fn rttvar_ns(&self) -> u64 {
        self.rttvar_ns
    }

    /// Smallest RTT seen (u64::MAX before the first sample).
    pub fn min_rtt_ns(&self) -> u64 {
        self.min_rtt_ns
    }

    /// The latest sample (0 before the first).
    pub fn latest_ns(&self) -> u64 {
        self.latest_ns
    }

    /// The retransmission timeout before backoff: `SRTT + max(G, 4 RTTVAR)`, at least the
    /// minimum RTO and at most [`MAX_RTO_NS`].
    pub fn rto_ns(&self) -> u64 {
        match self.srtt_ns {
            None => INITIAL_RTO_NS.max(self.min_rto_ns),
            Some(srtt) => (srtt + CLOCK_GRANULARITY_NS.max(4 * self.rttvar_ns))
                .max(self.min_rto_ns)
                .min(MAX_RTO_NS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_srtt_and_half_variance_then_smooths() {
        let mut r = RttEstimator::new(200 * NS_PER_MS);
        assert_eq!(r.rto_ns(), INITIAL_RTO_NS);
        r.on_sample(100 * NS_PER_MS);
        assert_eq!(r.srtt_ns(), Some(100 * NS_PER_MS));
        assert_eq!(r.rttvar_ns(), 50 * NS_PER_MS);
        assert_eq!(r.rto_ns(), 300 * NS_PER_MS);
        r.on_sample(180 * NS_PER_MS);
        assert_eq!(r.rttvar_ns(), (150 + 80) * NS_PER_MS / 4);
        assert_eq!(r.srtt_ns(), Some(110 * NS_PER_MS));
    }

    #[test]
    fn the_minimum_rto_applies() {
        let mut r = RttEstimator::new(200 * NS_PER_MS);
        for _ in 0..50 {
            r.on_sample(NS_PER_MS);
        }
        assert_eq!(r.rto_ns(), 200 * NS_PER_MS);
    }
}
