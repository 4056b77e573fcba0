//! The transmit utilisation estimator of one port: an exponentially decaying byte counter (a
//! linear-decay approximation HULA's switches compute with one multiply and one shift), read as
//! a Q16 fraction of the port's capacity. README.md, "Transmit utilisation estimator".

use super::UTIL_BYTES_MAX;

/// One port's estimator state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxUtil {
    /// Decayed bytes sent (at most [`UTIL_BYTES_MAX`]).
    pub bytes: u64,
    /// When `bytes` was last updated, µs.
    pub last_us: u64,
}

/// `bytes` decayed over `dt_us` with time constant `2^log2_tau` µs.
#[inline]
fn decay(bytes: u64, dt_us: u64, tau_us: u64, log2_tau: u32) -> u64 {
    if dt_us >= tau_us {
        0
    } else {
        // bytes <= 2^31 and tau_us <= 2^13: the product stays below 2^44.
        (bytes * (tau_us - dt_us)) >> log2_tau
    }
}

impl TxUtil {
    /// A packet of `len` wire bytes leaves the port at `now_us`.
    #[inline]
    pub fn on_tx(&mut self, len: u64, now_us: u64, tau_us: u64, log2_tau: u32) {
        let dt = now_us.saturating_sub(self.last_us);
        self.bytes = (decay(self.bytes, dt, tau_us, log2_tau) + len).min(UTIL_BYTES_MAX);
        self.last_us = now_us;
    }

    /// The port's utilisation at `now_us` as a Q16 fraction of its capacity (65 536 = 100 %),
    /// `scale` being its [`super::util_scale`].
    #[inline]
    pub fn util_q16(&self, now_us: u64, scale: u64, tau_us: u64, log2_tau: u32) -> u32 {
        let decayed = decay(self.bytes, now_us.saturating_sub(self.last_us), tau_us, log2_tau);
        // decayed <= 2^31, scale <= 2^32: the product stays below 2^63.
        ((decayed * scale) >> 24).min(u64::from(u32::MAX)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::super::util_scale;
    use super::*;

    const TAU: u64 = 512;
    const LOG2: u32 = 9;

    /// A port sending at a steady fraction of its rate settles at that fraction.
    #[test]
    fn a_steady_rate_reads_as_its_fraction_of_capacity() {
        for (rate_bps, fraction) in [
            (10_000_000_000u64, 0.5f64),
            (40_000_000_000, 0.8),
            (400_000_000_000, 1.0),
        ] {
            let scale = util_scale(rate_bps, TAU).unwrap();
            let bytes_per_us = rate_bps as f64 / 8e6 * fraction;
            let mut u = TxUtil::default();
            // One 1500-byte packet whenever the budget allows, for 10 time constants.
            let mut sent = 0.0;
            for now in 1..=10 * TAU {
                while sent + 1500.0 <= bytes_per_us * now as f64 {
                    u.on_tx(1500, now, TAU, LOG2);
                    sent += 1500.0;
                }
            }
            let read = f64::from(u.util_q16(10 * TAU, scale, TAU, LOG2)) / 65536.0;
            assert!((read - fraction).abs() < 0.05, "{rate_bps}: {read} against {fraction}");
        }
    }

    #[test]
    fn an_idle_port_decays_to_zero_within_one_time_constant() {
        let scale = util_scale(10_000_000_000, TAU).unwrap();
        let mut u = TxUtil::default();
        u.on_tx(1500, 100, TAU, LOG2);
        assert!(u.util_q16(100, scale, TAU, LOG2) > 0);
        assert!(u.util_q16(100 + TAU / 2, scale, TAU, LOG2) < u.util_q16(100, scale, TAU, LOG2));
        assert_eq!(u.util_q16(100 + TAU, scale, TAU, LOG2), 0);
    }

    /// The bound of README.md: nothing overflows at 400 Gbit/s with the longest time constant,
    /// and a counter driven far past any real port saturates instead of wrapping.
    #[test]
    fn no_overflow_at_400_gbps_with_the_longest_time_constant() {
        let (tau, log2) = (super::super::MAX_TAU_US, 13);
        let scale = util_scale(400_000_000_000, tau).unwrap();
        let mut u = TxUtil::default();
        // 50 000 bytes per µs is 400 Gbit/s; after 10 time constants the counter is within
        // e^-10 of its steady state.
        for now in 0..10 * tau {
            u.on_tx(50_000, now, tau, log2);
        }
        assert!(
            u.bytes < UTIL_BYTES_MAX,
            "a saturated 400 Gbit/s port holds {}",
            u.bytes
        );
        let read = f64::from(u.util_q16(10 * tau, scale, tau, log2)) / 65536.0;
        assert!((read - 1.0).abs() < 0.01, "{read}");
        // Far beyond line rate (a host flooding the egress hook before its qdisc).
        for now in 10 * tau..10 * tau + 100 {
            u.on_tx(u64::from(u32::MAX), now, tau, log2);
        }
        assert_eq!(u.bytes, UTIL_BYTES_MAX);
        let worst_scale = util_scale(256 * 8_000_000, 1).unwrap();
        assert_eq!(worst_scale, 1u64 << 32);
        let _ = u.util_q16(10 * tau + 100, worst_scale, tau, log2);
    }
}
