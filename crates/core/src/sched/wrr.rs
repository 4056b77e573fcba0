//! Weighted round robin with the semantics of Motohashi et al. (IEEE Access 2022, Sec. III-B).
//!
//! Registers: the weights and the remaining weights. Per packet: pick the path with the largest
//! remaining weight, ties going to the lowest-numbered (preferred) path; decrement it; when every
//! remaining weight is zero, reload them all. The scheduling period is the sum of the weights.

use super::{check_paths, ConfigError, PathIndex};
use crate::MAX_PATHS;

/// WRR registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wrr {
    n_paths: u8,
    weights: [u16; MAX_PATHS],
    remaining: [u16; MAX_PATHS],
}

impl Wrr {
    /// WRR over `weights.len()` paths. At least one weight must be non-zero.
    pub fn new(weights: &[u16]) -> Result<Wrr, ConfigError> {
        check_paths(weights.len())?;
        if weights.iter().all(|&w| w == 0) {
            return Err(ConfigError("at least one WRR weight must be non-zero".into()));
        }
        let mut w = [0u16; MAX_PATHS];
        w[..weights.len()].copy_from_slice(weights);
        Ok(Wrr {
            n_paths: weights.len() as u8,
            weights: w,
            remaining: w,
        })
    }

    /// Choose the next path. The flag is true when this packet completed a scheduling period
    /// (the remaining weights were reloaded).
    #[inline]
    pub fn select(&mut self) -> (PathIndex, bool) {
        let n = usize::from(self.n_paths);
        let mut best = 0usize;
        for i in 1..n {
            // Strictly greater: ties stay with the lower-numbered path.
            if self.remaining[i] > self.remaining[best] {
                best = i;
            }
        }
        self.remaining[best] = self.remaining[best].saturating_sub(1);
        let period_done = self.remaining[..n].iter().all(|&r| r == 0);
        if period_done {
            self.remaining = self.weights;
        }
        (best as PathIndex, period_done)
    }

    /// Number of paths.
    pub fn n_paths(&self) -> usize {
        usize::from(self.n_paths)
    }

    /// The weights register.
    pub fn weights(&self) -> &[u16] {
        &self.weights[..self.n_paths()]
    }

    /// The remaining-weights register.
    pub fn remaining(&self) -> &[u16] {
        &self.remaining[..self.n_paths()]
    }

    /// The scheduling period in packets: the sum of the weights.
    pub fn period_pkts(&self) -> u32 {
        self.weights().iter().map(|&w| u32::from(w)).sum()
    }

    /// Replace the weights and reload the remaining weights from them. Call it at a period
    /// boundary (right after [`Wrr::select`] flagged one) so that no period mixes old and new
    /// weights.
    pub fn set_weights(&mut self, weights: &[u16]) {
        let n = self.n_paths();
        self.weights[..n].copy_from_slice(&weights[..n]);
        self.remaining = self.weights;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seq(weights: &[u16], n: usize) -> Vec<u8> {
        let mut w = Wrr::new(weights).unwrap();
        (0..n).map(|_| w.select().0 + 1).collect()
    }

    #[test]
    fn weights_2_1_give_the_papers_sequence() {
        assert_eq!(seq(&[2, 1], 6), [1, 1, 2, 1, 1, 2]);
    }

    #[test]
    fn weights_2_4_give_the_papers_sequence() {
        assert_eq!(seq(&[2, 4], 12), [2, 2, 1, 2, 1, 2, 2, 2, 1, 2, 1, 2]);
    }

    #[test]
    fn period_end_is_flagged_once_per_period() {
        let mut w = Wrr::new(&[2, 4]).unwrap();
        let flags: Vec<bool> = (0..12).map(|_| w.select().1).collect();
        assert_eq!(flags.iter().filter(|&&f| f).count(), 2);
        assert!(flags[5] && flags[11]);
    }

    #[test]
    fn a_zero_weight_path_is_never_chosen() {
        assert!(seq(&[0, 3, 1], 40).iter().all(|&p| p != 1));
    }

    #[test]
    fn all_zero_weights_are_refused() {
        assert!(Wrr::new(&[0, 0]).is_err());
        assert!(Wrr::new(&[]).is_err());
        assert!(Wrr::new(&[1; 9]).is_err());
    }

    proptest! {
        /// Over any whole period, each path is chosen exactly its weight's number of times.
        #[test]
        fn each_period_gives_each_path_its_weight(
            weights in prop::collection::vec(0u16..50, 2..=8),
            skip_periods in 0usize..3,
        ) {
            prop_assume!(weights.iter().any(|&w| w > 0));
            let mut w = Wrr::new(&weights).unwrap();
            let period = w.period_pkts() as usize;
            for _ in 0..skip_periods * period {
                w.select();
            }
            let mut count = vec![0u16; weights.len()];
            for i in 0..period {
                let (p, done) = w.select();
                count[usize::from(p)] += 1;
                prop_assert_eq!(done, i == period - 1);
            }
            prop_assert_eq!(count, weights);
        }
    }
}
