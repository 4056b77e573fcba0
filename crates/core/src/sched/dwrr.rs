//! Dynamic weighted round robin (Motohashi et al. 2022, Sec. III-C): WRR whose weights follow
//! ECN feedback from the confluence point.
//!
//! Registers, per splitting group:
//! - `weights` and `remaining`: the WRR registers ([`Wrr`]); `initial` holds the configured
//!   weights (times `weight_scale`);
//! - `adjust[i]`: feedback packets received for path `i` in the current window (the paper's
//!   "Adjust");
//! - `groups_left`: scheduling periods left in the window (reloaded from `groups`, the paper's
//!   `groups_reg`, 8 by default), so a window lasts `period x groups` forwarded packets;
//! - `drop_left`: packets still to drop for congestion avoidance;
//! - `cursor`: where the round-robin hand-out of moved weight starts.
//!
//! At the end of each window:
//! - no feedback: nothing changes;
//! - feedback from every path: congestion avoidance, the next `avoidance_drop_pkts` packets of
//!   the split flow are dropped at the splitting point;
//! - feedback from some paths only: each congested path `c` gives up `min(adjust[c], max_step)`
//!   weight units (`max_step` = 1 by default; 0 means no cap), never going below `min_weight`,
//!   and the units are handed one at a time, round robin, to the paths that sent no feedback.
//!   The sum of the weights, and so the scheduling period and the window, stays constant.
//!
//! Why this rule: a small fixed step per window is an additive decrease that stops as soon as
//! the feedback stops, so the split settles just inside the capacity of the congested path
//! rather than overshooting (the queue keeps marking while it drains, so a step proportional to
//! the feedback count overshoots); keeping the sum constant keeps the window length (in packets)
//! constant; `min_weight` keeps every path in use so that it can still report congestion and
//! so that, as in the paper's Fig. 11, the flow keeps a share of the path after the competing
//! flow stops (no feedback, no change). `weight_scale` sets the resolution of a step: with
//! weights 2:1 and scale 16, one step moves 1/48 of the flow. See `docs/algorithms/dwrr.md`.

use super::{ConfigError, Decision, PathIndex, Wrr};
use crate::MAX_PATHS;

/// DWRR's constants; the defaults are the paper's values where it gives them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DwrrParams {
    /// Scheduling periods per feedback window (the paper's `groups_reg`, 8).
    pub groups: u16,
    /// Packets dropped by congestion avoidance when every path reports congestion (32).
    pub avoidance_drop_pkts: u32,
    /// Factor applied to the configured weights to give the register resolution that weight
    /// moves are counted in (1: the configured weights as they are).
    pub weight_scale: u16,
    /// A congested path's weight never goes below this (1).
    pub min_weight: u16,
    /// Most weight units one congested path gives up in one window (1); 0 lets it give up as
    /// many units as it sent feedback packets.
    pub max_step: u16,
}

impl DwrrParams {
    /// Register steps per round that a scenario's default `weight_scale` aims at: one step
    /// then moves about 2 % of a split flow. Scenario 3 of Motohashi et al. chose 16 for 2:1
    /// (48 per round) against Fig. 11; at scale 1 a 2:1 split has no step but to 1:2, and
    /// flips between them every window.
    pub const DEFAULT_ROUND: u32 = 48;

    /// The `weight_scale` a scenario gets when it names none: the smallest that gives a round
    /// of at least [`DwrrParams::DEFAULT_ROUND`] register units, within 16-bit registers.
    /// ([`DwrrParams::default`] keeps 1, the paper's exact WRR patterns for `mpsched trace`.)
    pub fn scale_for(weights: &[u16]) -> u16 {
        let sum: u32 = weights.iter().map(|&w| u32::from(w)).sum::<u32>().max(1);
        let max = u32::from(weights.iter().copied().max().unwrap_or(1).max(1));
        let want = Self::DEFAULT_ROUND.div_ceil(sum);
        want.min(u32::from(u16::MAX) / max).max(1) as u16
    }
}

impl Default for DwrrParams {
    fn default() -> Self {
        DwrrParams {
            groups: 8,
            avoidance_drop_pkts: 32,
            weight_scale: 1,
            min_weight: 1,
            max_step: 1,
        }
    }
}

/// Hand `freed` weight units one at a time, round robin from `cursor`, to the paths with no
/// feedback (`adjust[i] == 0`), saturating at `u16::MAX`; returns the new weights and the cursor
/// just after the path that took the last unit. `freed` must be > 0 and some path must take.
///
/// Closed form, so the work is bounded by the path count (as in `bpf/mpsched.bpf.c`): with `U`
/// takers in cyclic order from the cursor, taker `j` gets `freed / U`, plus one if
/// `j < freed % U`, and the last unit goes to taker `(freed - 1) % U`.
pub(crate) fn hand_out(weights: &[u16], adjust: &[u32], freed: u32, cursor: u8) -> ([u16; MAX_PATHS], u8) {
    let n = weights.len();
    let mut w = [0u16; MAX_PATHS];
    w[..n].copy_from_slice(weights);
    let takers = adjust.iter().filter(|&&a| a == 0).count() as u32;
    if freed == 0 || takers == 0 {
        return (w, cursor);
    }
    let (q, r, last) = (freed / takers, freed % takers, (freed - 1) % takers);
    let mut next_cursor = cursor;
    let mut j = 0u32;
    for i in 0..n {
        let k = (usize::from(cursor) + i) % n;
        if adjust[k] != 0 {
            continue;
        }
        let give = q + u32::from(j < r);
        w[k] = (u32::from(w[k]) + give).min(u32::from(u16::MAX)) as u16;
        if j == last {
            next_cursor = ((k + 1) % n) as u8;
        }
        j += 1;
    }
    (w, next_cursor)
}

/// DWRR event counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DwrrStats {
    /// Feedback packets received.
    pub feedback_rx: u64,
    /// Feedback windows completed.
    pub windows: u64,
    /// Windows that moved weight between paths.
    pub adjustments: u64,
    /// Windows that triggered congestion avoidance.
    pub avoidance_events: u64,
    /// Packets dropped by congestion avoidance.
    pub avoidance_drops: u64,
}

/// DWRR registers.
#[derive(Clone, Debug)]
pub struct Dwrr {
    wrr: Wrr,
    initial: [u16; MAX_PATHS],
    adjust: [u32; MAX_PATHS],
    groups_left: u16,
    drop_left: u32,
    cursor: u8,
    params: DwrrParams,
    stats: DwrrStats,
}

impl Dwrr {
    /// DWRR over `weights.len()` paths.
    pub fn new(weights: &[u16], params: DwrrParams) -> Result<Dwrr, ConfigError> {
        if params.groups == 0 {
            return Err(ConfigError("DWRR groups must be at least 1".into()));
        }
        if params.weight_scale == 0 {
            return Err(ConfigError("DWRR weight_scale must be at least 1".into()));
        }
        let scaled: Vec<u16> = weights
            .iter()
            .map(|&w| w.checked_mul(params.weight_scale))
            .collect::<Option<_>>()
            .ok_or_else(|| ConfigError("DWRR weights times weight_scale overflow 16 bits".into()))?;
        let wrr = Wrr::new(&scaled)?;
        let mut initial = [0u16; MAX_PATHS];
        initial[..scaled.len()].copy_from_slice(&scaled);
        Ok(Dwrr {
            wrr,
            initial,
            adjust: [0; MAX_PATHS],
            groups_left: params.groups,
            drop_left: 0,
            cursor: 0,
            params,
            stats: DwrrStats::default(),
        })
    }

    /// Choose a path, or drop during congestion avoidance.
    #[inline]
    pub fn select(&mut self) -> Decision {
        if self.drop_left > 0 {
            self.drop_left -= 1;
            self.stats.avoidance_drops += 1;
            return Decision::Drop;
        }
        let (path, period_done) = self.wrr.select();
        if period_done {
            self.groups_left -= 1;
            if self.groups_left == 0 {
                self.groups_left = self.params.groups;
                self.end_window();
            }
        }
        Decision::Path(path)
    }

    /// Count a feedback packet for `path`. Returns false (and counts nothing) for a path index
    /// out of range.
    pub fn on_feedback(&mut self, path: PathIndex) -> bool {
        let p = usize::from(path);
        if p >= self.wrr.n_paths() {
            return false;
        }
        self.adjust[p] = self.adjust[p].saturating_add(1);
        self.stats.feedback_rx += 1;
        true
    }

    fn end_window(&mut self) {
        self.stats.windows += 1;
        let n = self.wrr.n_paths();
        let congested = self.adjust[..n].iter().filter(|&&a| a > 0).count();
        if congested == n {
            self.drop_left = self.params.avoidance_drop_pkts;
            self.stats.avoidance_events += 1;
        } else if congested > 0 {
            self.move_weight();
        }
        self.adjust = [0; MAX_PATHS];
    }

    fn move_weight(&mut self) {
        let n = self.wrr.n_paths();
        let mut w = [0u16; MAX_PATHS];
        w[..n].copy_from_slice(self.wrr.weights());
        let mut freed: u32 = 0;
        for (wi, &adj) in w[..n].iter_mut().zip(&self.adjust[..n]) {
            if adj == 0 {
                continue;
            }
            let step = if self.params.max_step > 0 {
                adj.min(u32::from(self.params.max_step))
            } else {
                adj
            };
            let spare = u32::from(wi.saturating_sub(self.params.min_weight));
            let take = step.min(spare);
            *wi -= take as u16;
            freed += take;
        }
        if freed == 0 {
            return;
        }
        self.stats.adjustments += 1;
        let (w, cursor) = hand_out(&w[..n], &self.adjust[..n], freed, self.cursor);
        self.cursor = cursor;
        self.wrr.set_weights(&w[..n]);
    }

    /// The current weights register.
    pub fn weights(&self) -> &[u16] {
        self.wrr.weights()
    }

    /// The initial (scaled) weights.
    pub fn initial_weights(&self) -> &[u16] {
        &self.initial[..self.wrr.n_paths()]
    }

    /// The per-path feedback counts of the current window.
    pub fn adjust(&self) -> &[u32] {
        &self.adjust[..self.wrr.n_paths()]
    }

    /// The underlying WRR registers.
    pub fn wrr(&self) -> &Wrr {
        &self.wrr
    }

    /// Packets still to be dropped by congestion avoidance.
    pub fn drop_left(&self) -> u32 {
        self.drop_left
    }

    /// Event counters.
    pub fn stats(&self) -> &DwrrStats {
        &self.stats
    }

    /// Where the next hand-out of moved weight starts.
    pub fn cursor(&self) -> u8 {
        self.cursor
    }

    /// Scheduling periods left in the current window.
    pub fn groups_left(&self) -> u16 {
        self.groups_left
    }

    /// The constants in force.
    pub fn params(&self) -> &DwrrParams {
        &self.params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(d: &mut Dwrr, n: usize) -> Vec<Decision> {
        (0..n).map(|_| d.select()).collect()
    }

    fn window(d: &Dwrr) -> usize {
        (d.wrr().period_pkts() * u32::from(d.params().groups)) as usize
    }

    #[test]
    fn without_feedback_dwrr_is_wrr() {
        let mut d = Dwrr::new(&[2, 4], DwrrParams::default()).unwrap();
        let mut w = Wrr::new(&[2, 4]).unwrap();
        for _ in 0..1000 {
            assert_eq!(d.select(), Decision::Path(w.select().0));
        }
        assert_eq!(d.stats().windows, 1000 / 48);
        assert_eq!(d.stats().adjustments, 0);
    }

    #[test]
    fn feedback_from_one_path_moves_weight_to_the_other() {
        let p = DwrrParams {
            weight_scale: 4,
            max_step: 0,
            ..DwrrParams::default()
        };
        let mut d = Dwrr::new(&[2, 1], p).unwrap();
        assert_eq!(d.weights(), &[8, 4]);
        d.on_feedback(1);
        d.on_feedback(1);
        let n = window(&d);
        run(&mut d, n);
        assert_eq!(d.weights(), &[10, 2]);
        assert_eq!(d.stats().adjustments, 1);
        // No feedback in the next window: no change.
        let n = window(&d);
        run(&mut d, n);
        assert_eq!(d.weights(), &[10, 2]);
    }

    #[test]
    fn by_default_a_congested_path_gives_up_one_unit_per_window() {
        let p = DwrrParams {
            weight_scale: 16,
            ..DwrrParams::default()
        };
        let mut d = Dwrr::new(&[2, 1], p).unwrap();
        for _ in 0..7 {
            d.on_feedback(1);
        }
        let n = window(&d);
        run(&mut d, n);
        assert_eq!(d.weights(), &[33, 15]);
    }

    #[test]
    fn a_congested_path_keeps_min_weight() {
        let p = DwrrParams {
            weight_scale: 2,
            ..DwrrParams::default()
        };
        let mut d = Dwrr::new(&[2, 1], p).unwrap();
        for _ in 0..50 {
            d.on_feedback(1);
        }
        let n = window(&d);
        run(&mut d, n);
        assert_eq!(d.weights(), &[5, 1]);
    }

    #[test]
    fn max_step_limits_the_move() {
        let p = DwrrParams {
            weight_scale: 10,
            max_step: 3,
            ..DwrrParams::default()
        };
        let mut d = Dwrr::new(&[1, 1], p).unwrap();
        for _ in 0..9 {
            d.on_feedback(0);
        }
        let n = window(&d);
        run(&mut d, n);
        assert_eq!(d.weights(), &[7, 13]);
    }

    #[test]
    fn moved_weight_is_handed_round_robin_to_uncongested_paths() {
        let p = DwrrParams {
            weight_scale: 4,
            max_step: 0,
            ..DwrrParams::default()
        };
        let mut d = Dwrr::new(&[1, 1, 1], p).unwrap();
        for _ in 0..3 {
            d.on_feedback(1);
        }
        let n = window(&d);
        run(&mut d, n);
        assert_eq!(d.weights(), &[6, 1, 5]);
        assert_eq!(d.weights().iter().sum::<u16>(), 12);
    }

    #[test]
    fn feedback_from_every_path_drops_the_next_32_packets() {
        let mut d = Dwrr::new(&[2, 1], DwrrParams::default()).unwrap();
        d.on_feedback(0);
        d.on_feedback(1);
        let n = window(&d);
        run(&mut d, n);
        assert_eq!(d.stats().avoidance_events, 1);
        let next = run(&mut d, 33);
        assert!(next[..32].iter().all(|&x| x == Decision::Drop));
        assert_eq!(next[32], Decision::Path(0));
        assert_eq!(d.weights(), &[2, 1]);
        assert_eq!(d.stats().avoidance_drops, 32);
    }

    /// The hand-out as first written: one unit at a time.
    fn hand_out_one_by_one(weights: &[u16], adjust: &[u32], mut freed: u32, cursor: u8) -> (Vec<u16>, u8) {
        let n = weights.len();
        let mut w = weights.to_vec();
        let mut i = usize::from(cursor) % n;
        while freed > 0 {
            if adjust[i] == 0 {
                w[i] = w[i].saturating_add(1);
                freed -= 1;
            }
            i = (i + 1) % n;
        }
        (w, i as u8)
    }

    proptest::proptest! {
        #[test]
        fn closed_form_hand_out_equals_one_unit_at_a_time(
            weights in proptest::collection::vec(0u16..=u16::MAX, 2..=8),
            congested in proptest::collection::vec(proptest::bool::ANY, 8),
            freed in 1u32..2000,
            cursor in 0u8..8,
        ) {
            let n = weights.len();
            let adjust: Vec<u32> = congested[..n].iter().map(|&c| u32::from(c)).collect();
            proptest::prop_assume!(adjust.contains(&0));
            let cursor = cursor % n as u8;
            let (w, c) = hand_out(&weights, &adjust, freed, cursor);
            let (w1, c1) = hand_out_one_by_one(&weights, &adjust, freed, cursor);
            proptest::prop_assert_eq!(&w[..n], &w1[..]);
            proptest::prop_assert_eq!(c, c1);
        }
    }

    #[test]
    fn feedback_for_an_unknown_path_is_ignored() {
        let mut d = Dwrr::new(&[2, 1], DwrrParams::default()).unwrap();
        assert!(!d.on_feedback(5));
        assert_eq!(d.stats().feedback_rx, 0);
    }
}
