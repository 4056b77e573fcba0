//! Random splitting (Motohashi et al. 2022, Sec. III-A).
//!
//! Per packet a random value in `[1, 100]` is drawn and compared against per-path
//! `[lower, upper]` ranges held in a table the control plane fills from the configured shares.

use super::{check_paths, ConfigError, PathIndex};
use crate::rng::RandomSource;
use crate::MAX_PATHS;

/// Lowest value drawn (the paper's A).
pub const DRAW_MIN: u32 = 1;
/// Highest value drawn (the paper's B).
pub const DRAW_MAX: u32 = 100;

/// RS registers and its range table.
pub struct RandomSplit {
    n_paths: u8,
    /// Inclusive `[lower, upper]` per path; an empty range has `lower > upper`.
    ranges: [(u8, u8); MAX_PATHS],
    rng: Box<dyn RandomSource>,
}

impl RandomSplit {
    /// Fill the range table from shares (normalised so that they cover `[1, 100]` exactly; the
    /// rounding remainder goes to the paths with the largest fractional parts, then the lowest
    /// index).
    pub fn from_shares(shares: &[u32], rng: Box<dyn RandomSource>) -> Result<RandomSplit, ConfigError> {
        check_paths(shares.len())?;
        let total: u64 = shares.iter().map(|&s| u64::from(s)).sum();
        if total == 0 {
            return Err(ConfigError("RS shares must not all be zero".into()));
        }
        let span = u64::from(DRAW_MAX - DRAW_MIN + 1);
        let mut slots: Vec<u64> = shares.iter().map(|&s| u64::from(s) * span / total).collect();
        let mut left = span - slots.iter().sum::<u64>();
        let mut order: Vec<usize> = (0..shares.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(u64::from(shares[i]) * span % total), i));
        for &i in order.iter().cycle() {
            if left == 0 {
                break;
            }
            if shares[i] > 0 {
                slots[i] += 1;
                left -= 1;
            }
        }
        let mut ranges = [(1u8, 0u8); MAX_PATHS];
        let mut lower = DRAW_MIN as u64;
        for (i, &s) in slots.iter().enumerate() {
            ranges[i] = (lower as u8, (lower + s).saturating_sub(1) as u8);
            lower += s;
        }
        Ok(RandomSplit {
            n_paths: shares.len() as u8,
            ranges,
            rng,
        })
    }

    /// The range table: inclusive `[lower, upper]` per path.
    pub fn ranges(&self) -> &[(u8, u8)] {
        &self.ranges[..usize::from(self.n_paths)]
    }

    /// Draw and choose a path.
    #[inline]
    pub fn select(&mut self) -> PathIndex {
        let r = self.rng.draw_inclusive(DRAW_MIN, DRAW_MAX);
        Self::lookup(self.ranges(), r)
    }

    /// The path whose range holds `draw` (the last path if none does, which a filled table
    /// never allows).
    pub fn lookup(ranges: &[(u8, u8)], draw: u32) -> PathIndex {
        for (i, &(lo, hi)) in ranges.iter().enumerate() {
            if u32::from(lo) <= draw && draw <= u32::from(hi) {
                return i as PathIndex;
            }
        }
        (ranges.len() - 1) as PathIndex
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{FixedDraws, SeededRandom};

    #[test]
    fn shares_67_33_give_ranges_1_67_and_68_100() {
        let rs = RandomSplit::from_shares(&[67, 33], Box::new(SeededRandom::new(1))).unwrap();
        assert_eq!(rs.ranges(), &[(1, 67), (68, 100)]);
    }

    #[test]
    fn shares_are_normalised_and_cover_the_draw_range() {
        let rs = RandomSplit::from_shares(&[1, 1, 1], Box::new(SeededRandom::new(1))).unwrap();
        assert_eq!(rs.ranges(), &[(1, 34), (35, 67), (68, 100)]);
        let rs = RandomSplit::from_shares(&[0, 5], Box::new(SeededRandom::new(1))).unwrap();
        assert_eq!(rs.ranges(), &[(1, 0), (1, 100)]);
    }

    #[test]
    fn fixed_draws_pick_the_matching_range() {
        let draws = FixedDraws::new(vec![1, 67, 68, 100, 50]);
        let mut rs = RandomSplit::from_shares(&[67, 33], Box::new(draws)).unwrap();
        let got: Vec<u8> = (0..5).map(|_| rs.select()).collect();
        assert_eq!(got, [0, 0, 1, 1, 0]);
    }

    #[test]
    fn seeded_split_follows_the_shares() {
        let mut rs = RandomSplit::from_shares(&[67, 33], Box::new(SeededRandom::new(9))).unwrap();
        let n = 100_000;
        let p1 = (0..n).filter(|_| rs.select() == 0).count();
        let share = p1 as f64 / n as f64;
        assert!((share - 0.67).abs() < 0.01, "share {share}");
    }
}
