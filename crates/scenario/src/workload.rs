//! Data-centre workloads: flow sizes from an empirical CDF, Poisson arrivals at a target load.
//!
//! Load is defined as in HULA and MP-HULA: the fraction of each sending host's link rate that
//! its flows offer on average, so a host starts flows at `load x host_rate / (8 x mean size)`
//! per second, each to a destination the pattern picks.

use mpsched_core::rng::SeededRandom;

/// The web-search flow sizes (Alizadeh et al., DCTCP, SIGCOMM 2010).
pub const WEBSEARCH: &str = include_str!("../../../data/workloads/websearch_cdf.txt");
/// The data-mining flow sizes (Greenberg et al., VL2, SIGCOMM 2009).
pub const DATAMINING: &str = include_str!("../../../data/workloads/datamining_cdf.txt");

/// Largest flow size a CDF may give, bytes (1 TB: a thousand times the data-mining
/// distribution's largest flow; a larger one would not finish in any run this simulates).
pub const MAX_CDF_FLOW_BYTES: f64 = 1e12;

/// A piecewise-linear CDF of flow sizes: points (bytes, cumulative probability), sizes and
/// probabilities both non-decreasing, from probability 0 to 1.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalCdf {
    points: Vec<(f64, f64)>,
}

impl EmpiricalCdf {
    /// Parse `bytes probability` lines (blank lines and `#` comments skipped).
    pub fn parse(text: &str) -> Result<EmpiricalCdf, String> {
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut it = line.split_whitespace();
            let (Some(b), Some(p), None) = (it.next(), it.next(), it.next()) else {
                return Err(format!("line {}: expected `bytes probability`", i + 1));
            };
            let b: f64 = b
                .parse()
                .map_err(|_| format!("line {}: `{b}` is not a size in bytes", i + 1))?;
            let p: f64 = p
                .parse()
                .map_err(|_| format!("line {}: `{p}` is not a probability", i + 1))?;
            if !(b.is_finite() && (0.0..=MAX_CDF_FLOW_BYTES).contains(&b) && (0.0..=1.0).contains(&p)) {
                return Err(format!(
                    "line {}: expected a size from 0 to {MAX_CDF_FLOW_BYTES:e} bytes and a probability in [0, 1], got `{line}`",
                    i + 1
                ));
            }
            if let Some(&(pb, pp)) = points.last() {
                if b < pb || p < pp {
                    return Err(format!("line {}: sizes and probabilities must not decrease", i + 1));
                }
            }
            points.push((b, p));
        }
        match (points.first(), points.last()) {
            (Some(&(_, first)), Some(&(_, last))) if first == 0.0 && last == 1.0 => Ok(EmpiricalCdf { points }),
            _ => Err("the CDF must start at probability 0 and end at 1".into()),
        }
    }

    /// A built-in CDF by name (`websearch`, `datamining`).
    pub fn builtin(name: &str) -> Option<EmpiricalCdf> {
        let text = match name {
            "websearch" => WEBSEARCH,
            "datamining" => DATAMINING,
            _ => return None,
        };
        Some(Self::parse(text).expect("the shipped CDFs parse"))
    }

    /// The size at quantile `u` in [0, 1): linear between the two points that bracket it.
    pub fn quantile(&self, u: f64) -> f64 {
        let i = self
            .points
            .partition_point(|&(_, p)| p <= u)
            .clamp(1, self.points.len() - 1);
        let ((b0, p0), (b1, p1)) = (self.points[i - 1], self.points[i]);
        if p1 <= p0 {
            return b1;
        }
        b0 + (b1 - b0) * (u - p0) / (p1 - p0)
    }

    /// A flow size in whole bytes (at least 1), drawn with `rng`.
    pub fn sample(&self, rng: &mut SeededRandom) -> u64 {
        self.quantile(unit(rng)).round().max(1.0) as u64
    }

    /// The mean size in bytes: each segment's probability times its midpoint.
    pub fn mean_bytes(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0)
            .sum()
    }
}

/// A uniform draw in [0, 1) with 53 bits.
pub fn unit(rng: &mut SeededRandom) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// An exponential draw of mean `mean` (Poisson inter-arrival times).
pub fn exponential(rng: &mut SeededRandom, mean: f64) -> f64 {
    -mean * (1.0 - unit(rng)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_cdfs_parse_and_their_means_follow_from_the_points() {
        let ws = EmpiricalCdf::builtin("websearch").unwrap();
        let dm = EmpiricalCdf::builtin("datamining").unwrap();
        // By hand from the files: sum of (p1 - p0) (b0 + b1) / 2.
        assert!((ws.mean_bytes() - 1_711_250.0).abs() < 1.0, "{}", ws.mean_bytes());
        assert!((dm.mean_bytes() - 12_658_198.6).abs() < 1.0, "{}", dm.mean_bytes());
        assert_eq!(ws.quantile(0.15), 10_000.0);
        assert!((ws.quantile(0.175) - 15_000.0).abs() < 1e-6);
        assert!(EmpiricalCdf::builtin("uniform").is_none());
    }

    #[test]
    fn the_sample_mean_converges_on_the_mean() {
        let ws = EmpiricalCdf::builtin("websearch").unwrap();
        let mut rng = SeededRandom::new(1);
        let n = 200_000;
        let sum: f64 = (0..n).map(|_| ws.sample(&mut rng) as f64).sum();
        let m = sum / n as f64;
        assert!(
            (m / ws.mean_bytes() - 1.0).abs() < 0.02,
            "{m} against {}",
            ws.mean_bytes()
        );
        let mean_gap: f64 = (0..n).map(|_| exponential(&mut rng, 2.0)).sum::<f64>() / n as f64;
        assert!((mean_gap - 2.0).abs() < 0.02, "{mean_gap}");
    }

    #[test]
    fn bad_cdfs_are_refused_with_the_line() {
        assert!(EmpiricalCdf::parse("0 0\n10 0.5\n5 1\n")
            .unwrap_err()
            .contains("line 3"));
        assert!(EmpiricalCdf::parse("0 0\n10 0.5\n").unwrap_err().contains("end at 1"));
        assert!(EmpiricalCdf::parse("0 0.1\n10 1\n")
            .unwrap_err()
            .contains("start at probability 0"));
        assert!(EmpiricalCdf::parse("0 0\nten 1\n").unwrap_err().contains("line 2"));
        assert!(EmpiricalCdf::parse("").is_err());
        let one = EmpiricalCdf::parse("# a comment\n100 0\n100 1\n").unwrap();
        assert_eq!(one.mean_bytes(), 100.0);
    }
}
