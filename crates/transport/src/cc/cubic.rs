//! CUBIC (RFC 9438): the window follows W(t) = C (t - K)^3 + W_max after a reduction, with the
//! Reno-friendly estimate as a floor. No HyStart (Linux enables it; see docs/algorithms/tcp.md).

use super::{slow_start, AckEvent, CongestionControl, CongestionSignal};
use crate::TimeNs;

/// C, in segments per second cubed.
pub const CUBIC_C: f64 = 0.4;
/// beta_cubic, the multiplicative decrease factor.
pub const CUBIC_BETA: f64 = 0.7;

/// CUBIC.
#[derive(Clone, Debug)]
pub struct Cubic {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Window before the last reduction, in segments.
    w_max: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<TimeNs>,
    /// Time from the epoch start to W_max, in seconds.
    k_s: f64,
    /// The Reno-friendly estimate, in segments.
    w_est: f64,
    /// Fractional growth not yet turned into whole bytes.
    frac: f64,
}

impl Cubic {
    /// Initial window of `iw` segments, no threshold.
    pub fn new(mss: u32, iw: u32) -> Self {
        Cubic {
            mss: u64::from(mss),
            cwnd: u64::from(mss) * u64::from(iw.max(1)),
            ssthresh: u64::MAX,
            w_max: 0.0,
            epoch_start: None,
            k_s: 0.0,
            w_est: 0.0,
            frac: 0.0,
        }
    }

    fn segs(&self, bytes: u64) -> f64 {
        bytes as f64 / self.mss as f64
    }

    fn reduce(&mut self) {
        let cwnd = self.segs(self.cwnd);
        // Fast convergence (RFC 9438, 4.7).
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + CUBIC_BETA) / 2.0
        } else {
            cwnd
        };
        self.ssthresh = ((self.cwnd as f64 * CUBIC_BETA) as u64).max(2 * self.mss);
        self.epoch_start = None;
    }

    fn w_cubic(&self, t_s: f64) -> f64 {
        CUBIC_C * (t_s - self.k_s).powi(3) + self.w_max
    }
}

/// Units of K per second: Linux keeps K in 1/1024 s (`BICTCP_HZ`).
const K_UNITS_PER_S: u64 = 1 << 10;

/// K = cbrt(x) seconds for x in s^3, on Linux's grid of 1/1024 s and by an integer cube root, so
/// that a run does not depend on the platform's floating-point `cbrt` (libm differs between
/// machines in the last bit; IEEE +, -, *, / do not).
fn k_seconds(x_s3: f64) -> f64 {
    let units3 = K_UNITS_PER_S * K_UNITS_PER_S * K_UNITS_PER_S;
    let scaled = (x_s3 * units3 as f64).min(u64::MAX as f64) as u64;
    icbrt(scaled) as f64 / K_UNITS_PER_S as f64
}

/// The integer cube root: the largest r with r^3 <= x (Hacker's Delight, 11-2: one result bit
/// per three bits of x, from the top).
pub fn icbrt(mut x: u64) -> u64 {
    let mut y: u64 = 0;
    let mut s: i32 = 63;
    while s >= 0 {
        y *= 2;
        let b = 3 * y * (y + 1) + 1;
        // Compare shifted down, so that `b << s` is formed only when it is at most x.
        if (x >> s) >= b {
            x -= b << s;
            y += 1;
        }
        s -= 3;
    }
    y
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
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
        if left == 0 {
            return;
        }
        let cwnd = self.segs(self.cwnd);
        let start = *self.epoch_start.get_or_insert_with(|| {
            self.k_s = if self.w_max > cwnd {
                k_seconds((self.w_max - cwnd) / CUBIC_C)
            } else {
                0.0
            };
            if self.w_max < cwnd {
                self.w_max = cwnd;
            }
            self.w_est = cwnd;
            ack.now_ns
        });
        let t_s = (ack.now_ns - start) as f64 / 1e9;
        let rtt_s = ack.srtt_ns as f64 / 1e9;
        let acked_segs = self.segs(left);
        // Reno-friendly region (RFC 9438, 4.3).
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        self.w_est += alpha * acked_segs / cwnd;
        // Concave / convex regions (4.4, 4.5): aim at W(t + RTT), clamped to [cwnd, 1.5 cwnd].
        let target = self.w_cubic(t_s + rtt_s).clamp(cwnd, 1.5 * cwnd);
        let grow_segs = if self.w_cubic(t_s) < self.w_est {
            (self.w_est - cwnd).max(0.0)
        } else {
            (target - cwnd) / cwnd * acked_segs
        };
        self.frac += grow_segs * self.mss as f64;
        let whole = self.frac.floor();
        self.frac -= whole;
        self.cwnd += whole as u64;
    }
    fn on_congestion(&mut self, _now: TimeNs, _s: CongestionSignal, _in_flight: u64) {
        self.reduce();
        self.cwnd = self.ssthresh;
        self.frac = 0.0;
    }
    fn on_rto(&mut self, _now: TimeNs, _in_flight: u64) {
        self.reduce();
        self.cwnd = self.mss;
        self.frac = 0.0;
    }
    fn set_window(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(self.mss);
    }
    fn state(&self) -> Vec<(&'static str, u64)> {
        vec![("cubic_wmax_segs", self.w_max as u64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now_ns: u64, bytes: u64) -> AckEvent<'static> {
        AckEvent {
            now_ns,
            acked_bytes: bytes,
            cwnd_limited: true,
            srtt_ns: 100_000_000,
            min_rtt_ns: 100_000_000,
            subflows: &[],
            subflow: 0,
        }
    }

    #[test]
    fn reduction_is_beta_and_growth_returns_to_w_max_near_k() {
        let mss = 1000;
        let mut c = Cubic::new(mss, 1000);
        c.on_congestion(0, CongestionSignal::Loss, 1_000_000);
        assert_eq!(c.window_bytes(), 700_000);
        // K = cbrt(300 / 0.4) = 9.09 s. One window of ACKs per 100 ms round trip.
        let mut t = 0;
        let mut feed = |c: &mut Cubic, until: u64| {
            while t < until {
                let w = c.window_bytes();
                c.on_ack(&ack(t, w));
                t += 100_000_000;
            }
        };
        feed(&mut c, 4_500_000_000);
        let w = c.window_bytes() as f64 / 1000.0;
        assert!(
            (950.0..990.0).contains(&w),
            "concave: most of the way back by K / 2: {w}"
        );
        feed(&mut c, 9_000_000_000);
        let w = c.window_bytes() as f64 / 1000.0;
        assert!((995.0..1010.0).contains(&w), "plateau at W_max near K: {w}");
        feed(&mut c, 14_000_000_000);
        assert!(c.window_bytes() > 1_040_000, "convex growth past W_max");
    }

    #[test]
    fn at_small_windows_the_reno_friendly_estimate_wins() {
        let mut c = Cubic::new(1000, 100);
        c.on_congestion(0, CongestionSignal::Loss, 100_000);
        let mut t = 0;
        while t < 2_000_000_000 {
            let w = c.window_bytes();
            c.on_ack(&ack(t, w));
            t += 10_000_000;
        }
        // 57 round trips at 0.53 segments each back to W_max = 100, then one per round trip
        // (RFC 9438 4.3: alpha becomes 1 past W_max): 100 + 143.
        let w = c.window_bytes() as f64 / 1000.0;
        assert!((240.0..246.0).contains(&w), "{w}");
    }

    #[test]
    fn integer_cube_root_is_exact() {
        for r in [0u64, 1, 2, 3, 10, 1000, 9303, 2_097_151] {
            assert_eq!(icbrt(r * r * r), r);
            if r > 0 {
                assert_eq!(icbrt(r * r * r - 1), r - 1);
            }
            assert_eq!(icbrt(r * r * r + 1).max(1), r.max(1));
        }
        assert_eq!(icbrt(u64::MAX), 2_642_245);
    }

    #[test]
    fn k_is_on_linuxs_grid_of_1024ths_of_a_second() {
        let mut c = Cubic::new(1000, 1000);
        c.on_congestion(0, CongestionSignal::Loss, 1_000_000);
        c.on_ack(&ack(0, 1000));
        // cbrt(300 / 0.4) = 9.0856 s; on the grid, floor(cbrt(750 * 2^30)) / 1024.
        assert_eq!(c.k_s, 9303.0 / 1024.0);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = Cubic::new(1000, 100);
        c.on_congestion(0, CongestionSignal::Loss, 0);
        c.on_congestion(0, CongestionSignal::Loss, 0);
        assert!((c.w_max - 70.0 * 1.7 / 2.0).abs() < 1e-9);
    }
}
