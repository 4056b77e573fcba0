//! The best-k next hops per destination ToR: a sorted array per destination, kept by bounded
//! compare-and-shift as a P4 switch would with if-else (README.md, "Best-k entries").

use super::{MAX_BEST_K, NO_PORT};
use mpsched_core::packet::PortId;

/// One next hop towards a destination ToR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// Its port ([`NO_PORT`]: an empty slot).
    pub port: PortId,
    /// The utilisation of the best path through it (Q16).
    pub util: u32,
    /// When a probe last refreshed it, µs.
    pub time_us: u64,
}

impl Hop {
    /// An empty slot.
    pub const EMPTY: Hop = Hop {
        port: NO_PORT,
        util: 0,
        time_us: 0,
    };

    /// Whether the slot holds a hop a probe refreshed less than `ageing_us` ago.
    #[inline]
    pub fn live(&self, now_us: u64, ageing_us: u64) -> bool {
        self.port != NO_PORT && now_us.saturating_sub(self.time_us) < ageing_us
    }
}

/// Every destination's best `k` hops.
#[derive(Clone, Debug)]
pub struct BestHops {
    k: usize,
    slots: Vec<[Hop; MAX_BEST_K]>,
}

impl BestHops {
    /// `k` hops (1 to [`MAX_BEST_K`]) for each of `n_tors` destinations, all empty.
    pub fn new(n_tors: usize, k: usize) -> BestHops {
        BestHops {
            k: k.clamp(1, MAX_BEST_K),
            slots: vec![[Hop::EMPTY; MAX_BEST_K]; n_tors],
        }
    }

    /// Hops kept per destination.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Destinations.
    pub fn n_tors(&self) -> usize {
        self.slots.len()
    }

    /// Destination `tor`'s `k` slots, best first (empty ones last).
    pub fn of(&self, tor: usize) -> &[Hop] {
        &self.slots[tor][..self.k]
    }

    /// A probe from `tor` says the best path through `port` has utilisation `util` at
    /// `now_us`. Returns how many slots were dropped because they had aged.
    pub fn update(&mut self, tor: usize, port: PortId, util: u32, now_us: u64, ageing_us: u64) -> u64 {
        let k = self.k;
        let old = self.slots[tor];
        let mut kept = [Hop::EMPTY; MAX_BEST_K];
        let (mut n, mut aged) = (0, 0);
        for h in &old[..k] {
            if h.port == NO_PORT {
                continue;
            }
            if !h.live(now_us, ageing_us) {
                aged += 1;
            } else if h.port != port {
                kept[n] = *h;
                n += 1;
            }
        }
        let at = kept[..n].iter().position(|h| h.util > util).unwrap_or(n);
        let mut out = [Hop::EMPTY; MAX_BEST_K];
        if at < k {
            out[..at].copy_from_slice(&kept[..at]);
            out[at] = Hop {
                port,
                util,
                time_us: now_us,
            };
            let rest = (n - at).min(k - at - 1);
            out[at + 1..at + 1 + rest].copy_from_slice(&kept[at..at + rest]);
        } else {
            out[..n].copy_from_slice(&kept[..n]);
        }
        self.slots[tor] = out;
        aged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGE: u64 = 1000;

    fn ports(b: &BestHops, tor: usize) -> Vec<(PortId, u32)> {
        b.of(tor).iter().map(|h| (h.port, h.util)).collect()
    }

    #[test]
    fn keeps_the_k_lowest_sorted_and_drops_the_worst() {
        let mut b = BestHops::new(1, 3);
        b.update(0, 1, 500, 0, AGE);
        b.update(0, 2, 300, 0, AGE);
        b.update(0, 3, 700, 0, AGE);
        assert_eq!(ports(&b, 0), vec![(2, 300), (1, 500), (3, 700)]);
        b.update(0, 4, 400, 0, AGE);
        assert_eq!(ports(&b, 0), vec![(2, 300), (4, 400), (1, 500)]);
        // Worse than every kept hop, the array full: not inserted.
        b.update(0, 5, 900, 0, AGE);
        assert_eq!(ports(&b, 0), vec![(2, 300), (4, 400), (1, 500)]);
    }

    #[test]
    fn a_refresh_moves_a_hop_whose_utilisation_rose() {
        let mut b = BestHops::new(1, 2);
        b.update(0, 1, 100, 0, AGE);
        b.update(0, 2, 200, 0, AGE);
        b.update(0, 1, 300, 10, AGE);
        assert_eq!(ports(&b, 0), vec![(2, 200), (1, 300)]);
    }

    #[test]
    fn ties_go_after_the_hops_already_there() {
        let mut b = BestHops::new(1, 2);
        b.update(0, 1, 100, 0, AGE);
        b.update(0, 2, 100, 0, AGE);
        assert_eq!(ports(&b, 0), vec![(1, 100), (2, 100)]);
    }

    #[test]
    fn aged_hops_are_forgotten_at_the_next_probe() {
        let mut b = BestHops::new(1, 2);
        b.update(0, 1, 100, 0, AGE);
        b.update(0, 2, 200, 500, AGE);
        assert!(!b.of(0)[0].live(AGE, AGE));
        assert_eq!(b.update(0, 3, 900, AGE, AGE), 1);
        assert_eq!(ports(&b, 0), vec![(2, 200), (3, 900)]);
    }

    #[test]
    fn k_one_is_hula() {
        let mut b = BestHops::new(2, 1);
        b.update(1, 4, 50, 0, AGE);
        b.update(1, 5, 40, 0, AGE);
        b.update(1, 6, 60, 0, AGE);
        assert_eq!(ports(&b, 1), vec![(5, 40)]);
        assert_eq!(b.of(0)[0].port, NO_PORT);
    }
}
