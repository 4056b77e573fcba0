//! Random sources for programs, injectable so that tests can fix the draws.
//!
//! A P4 target offers `random(lo, hi)`; eBPF offers `bpf_get_prandom_u32()`. Programs here take a
//! [`RandomSource`] and map a 32-bit draw to a range with a multiply and a shift (no division on
//! the per-packet path), the same arithmetic the eBPF programs use.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A source of uniformly distributed 32-bit values.
pub trait RandomSource: Send {
    /// The next raw 32-bit draw.
    fn next_u32(&mut self) -> u32;

    /// A value in `[lo, hi]` (inclusive), by multiply-shift: `lo + (draw * span) >> 32`.
    fn draw_inclusive(&mut self, lo: u32, hi: u32) -> u32 {
        debug_assert!(lo <= hi);
        let span = u64::from(hi - lo) + 1;
        lo + ((u64::from(self.next_u32()) * span) >> 32) as u32
    }
}

/// A seeded pseudo-random source (xoshiro256++), deterministic for a given seed.
#[derive(Clone, Debug)]
pub struct SeededRandom(Xoshiro256PlusPlus);

impl SeededRandom {
    /// A source seeded with `seed`; equal seeds give equal sequences.
    pub fn new(seed: u64) -> Self {
        SeededRandom(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// A raw 64-bit draw (for simulator use outside programs).
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

impl RandomSource for SeededRandom {
    fn next_u32(&mut self) -> u32 {
        (self.0.next_u64() >> 32) as u32
    }
}

/// A source that replays fixed values from [`RandomSource::draw_inclusive`], cyclically.
///
/// Used by tests and conformance vectors to pin RS's draws: each call of `draw_inclusive`
/// returns the next value (clamped into the requested range).
#[derive(Clone, Debug)]
pub struct FixedDraws {
    values: Vec<u32>,
    next: usize,
}

impl FixedDraws {
    /// Replay `values` in order, wrapping around. `values` must not be empty.
    pub fn new(values: Vec<u32>) -> Self {
        assert!(!values.is_empty(), "FixedDraws needs at least one value");
        FixedDraws { values, next: 0 }
    }
}

/// A source that replays raw 32-bit draws, cyclically, through the same multiply-shift mapping
/// as a real source: what the eBPF programs replay in conformance tests (`MPS_F_TEST_DRAWS`).
#[derive(Clone, Debug)]
pub struct RawDraws {
    values: Vec<u32>,
    next: usize,
}

impl RawDraws {
    /// Replay `values` in order, wrapping around. `values` must not be empty.
    pub fn new(values: Vec<u32>) -> Self {
        assert!(!values.is_empty(), "RawDraws needs at least one value");
        RawDraws { values, next: 0 }
    }
}

impl RandomSource for RawDraws {
    fn next_u32(&mut self) -> u32 {
        let v = self.values[self.next];
        self.next = (self.next + 1) % self.values.len();
        v
    }
}

impl RandomSource for FixedDraws {
    fn next_u32(&mut self) -> u32 {
        let v = self.values[self.next];
        self.next = (self.next + 1) % self.values.len();
        v
    }

    fn draw_inclusive(&mut self, lo: u32, hi: u32) -> u32 {
        self.next_u32().clamp(lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_draws_stay_in_range_and_cover_it() {
        let mut r = SeededRandom::new(7);
        let mut seen = [false; 101];
        for _ in 0..100_000 {
            let v = r.draw_inclusive(1, 100);
            assert!((1..=100).contains(&v));
            seen[v as usize] = true;
        }
        assert!(seen[1..].iter().all(|&s| s));
    }

    #[test]
    fn equal_seeds_give_equal_sequences() {
        let (mut a, mut b) = (SeededRandom::new(3), SeededRandom::new(3));
        for _ in 0..100 {
            assert_eq!(a.next_u32(), b.next_u32());
        }
    }

    #[test]
    fn fixed_draws_replay_in_order() {
        let mut f = FixedDraws::new(vec![5, 95]);
        assert_eq!(f.draw_inclusive(1, 100), 5);
        assert_eq!(f.draw_inclusive(1, 100), 95);
        assert_eq!(f.draw_inclusive(1, 100), 5);
    }
}
