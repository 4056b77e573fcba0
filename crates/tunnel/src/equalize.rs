//! The receiver's delay equalizer: packets of bonded paths leave no earlier than the slowest
//! path in use would have brought them, so a flow spread over paths of unequal delay sees one
//! path, with one delay.
//!
//! The reordering buffer ([`crate::reorder`]) puts packets back in order, but a packet of the
//! faster path that no slower packet precedes still leaves at once. A flow then sees RTTs
//! anywhere between the fastest path's and the slowest's, and BBR, which sizes its window by the
//! smallest RTT it saw (2 x rate x min RTT), keeps the fastest path's: over paths of 5 and
//! 30 ms one way, one BBR flow through the bonded tunnel fell to a tenth of the sum. So each
//! packet is held until the delay of its path is made up to the largest of the paths that
//! carried data in the last [`ACTIVE_NS`].
//!
//! A path's delay is its **base**: the smallest `arrival - send time` of its data (the two ends'
//! clocks are not synchronised, but the offset is the same on every path and cancels in the
//! differences), taken over the current and the previous [`EPOCH_NS`] so a path whose delay
//! grows (a route change) is followed within two epochs; a sample more than
//! [`MAX_DELAY_DROP_US`] below the base counts only when [`DROP_CONFIRM_SAMPLES`] in a row
//! agree. Held packets leave first in, first
//! out (the order the reordering buffer gave them), within `capacity` packets (beyond it the
//! oldest leaves early, counted) and never later than `max_hold_ns` after they arrived.

use std::collections::VecDeque;

/// A path that carried no data this long is not waited for, ns.
pub const ACTIVE_NS: u64 = 1_000_000_000;
/// The span of each of the two windows of a path's smallest delay, ns.
pub const EPOCH_NS: u64 = 10_000_000_000;
/// A delay this far below a path's base is not taken on one sample, µs: one message with a
/// wild send time (a peer's clock stepped, a forged stamp in the clear) would otherwise hold
/// that path's packets for two epochs.
pub const MAX_DELAY_DROP_US: u32 = 1_000_000;
/// Consecutive samples that far below that make a new base (the first sample was the wild
/// one).
pub const DROP_CONFIRM_SAMPLES: u8 = 8;

/// Counters of a delay equalizer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EqualizerStats {
    /// Packets that waited.
    pub held: u64,
    /// Packets let go early for room.
    pub forced: u64,
    /// Time packets were to wait when they were held, ns (one let go early for room waited
    /// less).
    pub held_ns_sum: u64,
    /// Packets waiting now.
    pub occupancy: u64,
}

/// One path's delay estimate, in microseconds of `arrival - send time` (wrapping: only
/// differences between paths mean anything).
#[derive(Clone, Copy, Debug, Default)]
struct PathDelay {
    /// Smallest of the current epoch and of the previous one.
    current: Option<u32>,
    previous: Option<u32>,
    epoch_start_ns: u64,
    /// When it last carried data, ns (None: never).
    last_data_ns: Option<u64>,
    /// Consecutive samples more than [`MAX_DELAY_DROP_US`] below the base.
    drops: u8,
}

/// `a < b` for wrapping microsecond stamps that lie within half the circle of each other.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

fn min_stamp(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if before(x, y) { x } else { y }),
        (x, y) => x.or(y),
    }
}

impl PathDelay {
    fn base(&self) -> Option<u32> {
        min_stamp(self.current, self.previous)
    }

    fn sample(&mut self, delay: u32, now_ns: u64) {
        self.last_data_ns = Some(now_ns);
        if self
            .base()
            .is_some_and(|b| before(delay, b) && b.wrapping_sub(delay) > MAX_DELAY_DROP_US)
        {
            self.drops += 1;
            if self.drops < DROP_CONFIRM_SAMPLES {
                return;
            }
            (self.current, self.previous) = (None, None);
        }
        self.drops = 0;
        if now_ns.saturating_sub(self.epoch_start_ns) >= EPOCH_NS {
            self.previous = self.current.take();
            self.epoch_start_ns = now_ns;
        }
        self.current = min_stamp(self.current, Some(delay));
    }
}

/// A delay equalizer of items `T` (the daemon's: packet buffers).
#[derive(Debug)]
pub struct DelayEqualizer<T> {
    paths: Vec<PathDelay>,
    queue: VecDeque<(u64, T)>,
    capacity: usize,
    max_hold_ns: u64,
    stats: EqualizerStats,
}

impl<T> DelayEqualizer<T> {
    /// An equalizer of `paths` paths holding at most `capacity` packets (at least 1), none
    /// longer than `max_hold_ns`.
    pub fn new(paths: usize, capacity: usize, max_hold_ns: u64) -> Self {
        DelayEqualizer {
            paths: vec![PathDelay::default(); paths],
            queue: VecDeque::new(),
            capacity: capacity.max(1),
            max_hold_ns,
            stats: EqualizerStats::default(),
        }
    }

    /// A data message sent at `sent_us` (the sender's clock, as the wire carries it) arrived on
    /// `path` at `now_ns`: the time before which it must not leave, ns.
    pub fn on_arrival(&mut self, path: usize, sent_us: u32, now_ns: u64) -> u64 {
        let Some(p) = self.paths.get_mut(path) else {
            return now_ns;
        };
        let delay = ((now_ns / 1_000) as u32).wrapping_sub(sent_us);
        p.sample(delay, now_ns);
        let Some(own) = p.base() else { return now_ns };
        let extra_us = self
            .paths
            .iter()
            .filter(|q| q.last_data_ns.is_some_and(|t| now_ns.saturating_sub(t) < ACTIVE_NS))
            .filter_map(PathDelay::base)
            .map(|b| b.wrapping_sub(own) as i32)
            .max()
            .unwrap_or(0)
            .max(0) as u64;
        now_ns + (extra_us * 1_000).min(self.max_hold_ns)
    }

    /// A packet, in order, that must not leave before `not_before_ns`: push what may leave at
    /// `now_ns` onto `out`.
    pub fn push(&mut self, not_before_ns: u64, item: T, now_ns: u64, out: &mut Vec<T>) {
        if self.queue.is_empty() && not_before_ns <= now_ns {
            out.push(item);
            return;
        }
        if self.queue.len() == self.capacity {
            if let Some((_, first)) = self.queue.pop_front() {
                self.stats.forced += 1;
                self.stats.occupancy -= 1;
                out.push(first);
            }
        }
        self.queue.push_back((not_before_ns, item));
        self.stats.occupancy += 1;
        self.stats.held += 1;
        self.stats.held_ns_sum += not_before_ns.saturating_sub(now_ns);
        self.poll(now_ns, out);
    }

    /// Let go, in order, what may leave at `now_ns`.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<T>) {
        while self.queue.front().is_some_and(|&(t, _)| t <= now_ns) {
            if let Some((_, item)) = self.queue.pop_front() {
                self.stats.occupancy -= 1;
                out.push(item);
            }
        }
    }

    /// When the first held packet may leave, ns (None when none is held).
    pub fn deadline_ns(&self) -> Option<u64> {
        self.queue.front().map(|&(t, _)| t)
    }

    /// Let go of everything held, in order (a new session, or the end).
    pub fn flush(&mut self, out: &mut Vec<T>) {
        for (_, item) in self.queue.drain(..) {
            out.push(item);
        }
        self.stats.occupancy = 0;
    }

    /// The peer restarted: delays are measured afresh (its clock may differ), the counters go
    /// on. What is held is dropped: let it go with [`DelayEqualizer::flush`] first.
    pub fn new_session(&mut self) {
        self.paths.iter_mut().for_each(|p| *p = PathDelay::default());
        self.queue.clear();
        self.stats.occupancy = 0;
    }

    /// Path `path` was removed: its delay is forgotten at once (it no longer holds the
    /// others' packets back, not even for [`ACTIVE_NS`]).
    pub fn forget_path(&mut self, path: usize) {
        if let Some(p) = self.paths.get_mut(path) {
            *p = PathDelay::default();
        }
    }

    /// What each path's packets are held now, µs: the slowest active path's delay less the
    /// path's own (None: no data yet).
    pub fn holds_us(&self, now_ns: u64) -> Vec<Option<u64>> {
        let slowest = self
            .paths
            .iter()
            .filter(|q| q.last_data_ns.is_some_and(|t| now_ns.saturating_sub(t) < ACTIVE_NS))
            .filter_map(PathDelay::base)
            .reduce(|a, b| if before(a, b) { b } else { a });
        self.paths
            .iter()
            .map(|p| Some((slowest?.wrapping_sub(p.base()?) as i32).max(0) as u64))
            .collect()
    }

    /// Counters.
    pub fn stats(&self) -> &EqualizerStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Path 0 brings packets 5 ms after they were sent, path 1 30 ms after (the sender's clock
    /// 1000 s behind the receiver's).
    fn arrive(e: &mut DelayEqualizer<u32>, path: usize, sent_ns: u64) -> u64 {
        let delay = if path == 0 { 5 * MS } else { 30 * MS };
        let now = sent_ns + delay;
        let sent_us = (sent_ns.wrapping_sub(1_000_000_000_000) / 1_000) as u32;
        e.on_arrival(path, sent_us, now)
    }

    #[test]
    fn the_faster_path_is_held_by_the_delay_difference_while_both_carry_data() {
        let mut e = DelayEqualizer::new(2, 64, 100 * MS);
        let t = 10_000 * MS;
        assert_eq!(arrive(&mut e, 0, t), t + 5 * MS, "path 1 has carried nothing");
        assert_eq!(arrive(&mut e, 1, t), t + 30 * MS, "the slowest is not held");
        assert_eq!(arrive(&mut e, 0, t + MS), t + MS + 30 * MS, "5 ms made up to 30");
        assert_eq!(e.holds_us(t + 40 * MS), [Some(25_000), Some(0)]);
        // Path 1 idle past ACTIVE_NS: path 0 is no longer held.
        let later = t + ACTIVE_NS + 100 * MS;
        assert_eq!(arrive(&mut e, 0, later), later + 5 * MS);
    }

    #[test]
    fn held_packets_leave_in_order_at_their_time_and_room_is_made_by_letting_the_oldest_go() {
        let mut e = DelayEqualizer::new(2, 2, 100 * MS);
        let mut out = Vec::new();
        e.push(10 * MS, 1, 0, &mut out);
        e.push(5 * MS, 2, MS, &mut out);
        assert!(out.is_empty(), "2 waits behind 1, though its own time is earlier");
        assert_eq!(e.deadline_ns(), Some(10 * MS));
        e.poll(10 * MS, &mut out);
        assert_eq!(out, [1, 2]);
        e.push(20 * MS, 3, 11 * MS, &mut out);
        e.push(20 * MS, 4, 11 * MS, &mut out);
        e.push(20 * MS, 5, 11 * MS, &mut out);
        assert_eq!(out, [1, 2, 3], "full: the oldest left early");
        assert_eq!(e.stats().forced, 1);
        e.flush(&mut out);
        assert_eq!(out, [1, 2, 3, 4, 5]);
        assert_eq!(e.deadline_ns(), None);
    }

    #[test]
    fn the_hold_is_bounded_and_a_delay_that_grows_is_followed_within_two_epochs() {
        let mut e = DelayEqualizer::new(2, 64, 10 * MS);
        let t = 1_000 * MS;
        arrive(&mut e, 1, t);
        assert_eq!(arrive(&mut e, 0, t), t + 5 * MS + 10 * MS, "25 ms capped at 10");
        let mut e: DelayEqualizer<u32> = DelayEqualizer::new(1, 64, 100 * MS);
        e.on_arrival(0, 0, 5 * MS);
        // The path's delay grows from 5 to 8 ms: the old minimum lasts two epochs at most.
        let mut now = 5 * MS;
        for _ in 0..25 {
            now += EPOCH_NS / 10;
            e.on_arrival(0, ((now - 8 * MS) / 1_000) as u32, now);
        }
        assert_eq!(e.paths[0].base(), Some(8_000));
    }

    #[test]
    fn one_wild_send_time_is_not_taken_and_a_wild_first_one_is_corrected() {
        let mut e = DelayEqualizer::new(2, 64, 100 * MS);
        let t = 10_000 * MS;
        arrive(&mut e, 0, t);
        arrive(&mut e, 1, t);
        // A message on path 1 stamped 10 s later than it was sent (5 ms ... 30 ms made
        // -10 s): its packets would be held 100 ms for 20 s.
        let sent_us = ((t + MS).wrapping_sub(1_000_000_000_000) / 1_000) as u32;
        e.on_arrival(1, sent_us.wrapping_add(10_000_000), t + MS + 30 * MS);
        assert_eq!(e.holds_us(t + 40 * MS), [Some(25_000), Some(0)]);
        // A first sample 10 s too high, then the true 5 ms: taken after a few.
        let mut e: DelayEqualizer<u32> = DelayEqualizer::new(1, 64, 100 * MS);
        e.on_arrival(0, 0, 10_005 * MS);
        for i in 1..=u64::from(DROP_CONFIRM_SAMPLES) {
            let now = 10_005 * MS + i * MS;
            e.on_arrival(0, ((now - 5 * MS) / 1_000) as u32, now);
        }
        assert_eq!(e.paths[0].base(), Some(5_000));
    }
}
