//! The receiver's reordering buffer: packets of one tunnel direction leave in the order they
//! entered the tunnel, within a bound on memory and on the delay added.
//!
//! Packets carry their tunnel sequence number ([`crate::wire::DataHeader::tunnel_seq`]). The
//! buffer delivers the next expected number at once, with every buffered number after it; a
//! packet beyond a gap waits, in a ring of `capacity` slots indexed by its number, until the
//! gap fills, until it has waited `timeout_ns`, or until a number `capacity` ahead of the gap
//! needs its slot. Then the gap is given up: what waits beyond it leaves in order, and a packet
//! of the gap that arrives later leaves at once, out of order (counted as `late`). Memory is
//! the ring and a queue of arrival times, both bounded by `capacity`; no packet waits longer
//! than `timeout_ns` once [`ReorderBuffer::poll`] runs at [`ReorderBuffer::deadline_ns`].
//!
//! A gap is also given up as soon as it is certainly lost. Each path delivers in order, so
//! once a path has delivered tunnel number `n` (or a keepalive saying its sender's next number
//! was `n + 1`), nothing below `n + 1` is still on its way on that path: the path's **floor**.
//! A missing number below the floor of every path can no longer arrive, and waiting for it
//! would only delay what follows (counted as `losses`). Floors are kept once the paths are
//! declared ([`ReorderBuffer::track_paths`]); a path silent for longer than the declared
//! silence (the tunnel's liveness horizon: a live path carries a keepalive at least every
//! keepalive interval) is taken as dead and does not hold the floor back.

use crate::wire::extend_seq;
use std::collections::VecDeque;

/// Counters of a reordering buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReorderStats {
    /// Packets delivered as they arrived (the next expected).
    pub in_order: u64,
    /// Packets that waited for a gap before delivery.
    pub held: u64,
    /// Packets that arrived after their place was given up, delivered out of order.
    pub late: u64,
    /// Sequence numbers given up (by timeout, for room, or as lost) before they arrived.
    pub skipped: u64,
    /// Gaps given up by the timeout.
    pub timeouts: u64,
    /// Gaps given up because the ring was full.
    pub overflows: u64,
    /// Gaps given up because every recently active path had delivered past them.
    pub losses: u64,
    /// Packets dropped as duplicates of one waiting.
    pub duplicates: u64,
    /// Packets waiting now.
    pub occupancy: u64,
    /// Most packets ever waiting at once.
    pub max_occupancy: u64,
    /// Total time packets waited, ns (divide by `held` for the mean added delay).
    pub held_ns_sum: u64,
    /// Longest time a packet waited, ns.
    pub held_ns_max: u64,
}

/// A reordering buffer of items `T` (the daemon's: packet buffers).
#[derive(Debug)]
pub struct ReorderBuffer<T> {
    /// The ring, allocated when the first packet must wait (many tunnels, as a simulated UPF
    /// with ten thousand UEs has, mostly never reorder).
    slots: Vec<Option<(u64, T)>>,
    capacity: usize,
    /// Buffered numbers in arrival order, with their arrival (for the timeout). Entries whose
    /// packet already left are skipped when they reach the front.
    arrivals: VecDeque<(u64, u64)>,
    /// The next number to deliver; None before the first packet.
    next: Option<u64>,
    timeout_ns: u64,
    /// Per path: the floor (every number below it has arrived or is lost on that path) and
    /// when the path last delivered, ns (its declaration at first).
    floors: Vec<(u64, u64)>,
    /// A path silent this long no longer holds the floor back, ns.
    silence_ns: u64,
    stats: ReorderStats,
}

/// Most paths whose floors a buffer tracks (as many as a tunnel has).
pub const MAX_FLOOR_PATHS: usize = mpsched_core::MAX_PATHS;

impl<T> ReorderBuffer<T> {
    /// A buffer of `capacity` packets (at least 1) that holds none longer than `timeout_ns`.
    pub fn new(capacity: usize, timeout_ns: u64) -> Self {
        let capacity = capacity.max(1);
        ReorderBuffer {
            slots: Vec::new(),
            capacity,
            arrivals: VecDeque::new(),
            next: None,
            timeout_ns,
            floors: Vec::new(),
            silence_ns: 0,
            stats: ReorderStats::default(),
        }
    }

    fn cap(&self) -> u64 {
        self.capacity as u64
    }

    fn slot(&mut self, seq: u64) -> &mut Option<(u64, T)> {
        if self.slots.is_empty() {
            self.slots = (0..self.capacity).map(|_| None).collect();
        }
        let i = (seq % self.cap()) as usize;
        &mut self.slots[i]
    }

    /// A packet numbered `wire_seq` arrived at `now_ns`: push what may now leave, in order,
    /// onto `out`.
    pub fn push(&mut self, wire_seq: u32, now_ns: u64, item: T, out: &mut Vec<T>) {
        let next = *self.next.get_or_insert(u64::from(wire_seq));
        let seq = extend_seq(wire_seq, next);
        if seq < next {
            self.stats.late += 1;
            out.push(item);
            return;
        }
        if seq == next {
            self.stats.in_order += 1;
            out.push(item);
            self.next = Some(next + 1);
            self.drain(now_ns, out);
            return;
        }
        if seq >= next + self.cap() {
            self.stats.overflows += 1;
            self.give_up_to(seq + 1 - self.cap(), now_ns, out);
            // What was given up may have left nothing missing before this packet.
            if self.next == Some(seq) {
                self.stats.in_order += 1;
                out.push(item);
                self.next = Some(seq + 1);
                self.drain(now_ns, out);
                return;
            }
        }
        let slot = self.slot(seq);
        if slot.is_some() {
            self.stats.duplicates += 1;
            return;
        }
        *slot = Some((now_ns, item));
        self.stats.occupancy += 1;
        self.stats.max_occupancy = self.stats.max_occupancy.max(self.stats.occupancy);
        if self.arrivals.len() == self.capacity {
            self.compact_arrivals();
        }
        self.arrivals.push_back((now_ns, seq));
    }

    /// Keep the floors of `paths` paths (at most [`MAX_FLOOR_PATHS`]) from `now_ns`: a path
    /// that has delivered nothing for `silence_ns` is taken as dead.
    pub fn track_paths(&mut self, paths: usize, silence_ns: u64, now_ns: u64) {
        self.floors = vec![(0, now_ns); paths.min(MAX_FLOOR_PATHS)];
        self.silence_ns = silence_ns;
    }

    /// [`ReorderBuffer::push`] for a packet that arrived on `path`: also raises the path's
    /// floor past it, and gives up gaps every live path has passed.
    pub fn push_on(&mut self, path: usize, wire_seq: u32, now_ns: u64, item: T, out: &mut Vec<T>) {
        self.push(wire_seq, now_ns, item, out);
        self.raise_floor(path, wire_seq.wrapping_add(1), now_ns, out);
    }

    /// Path `path` said (a keepalive) that nothing below tunnel number `wire_next` is still on
    /// its way on it; give up gaps every live path has passed. Untracked paths are ignored.
    pub fn raise_floor(&mut self, path: usize, wire_next: u32, now_ns: u64, out: &mut Vec<T>) {
        // Before the first packet, numbers start near 0 (a session numbers from 0).
        let near = self.next.unwrap_or(0);
        let silence = self.silence_ns;
        let Some(f) = self.floors.get_mut(path) else { return };
        *f = (f.0.max(extend_seq(wire_next, near)), now_ns);
        let Some(next) = self.next else { return };
        let active = self
            .floors
            .iter()
            .filter(|&&(_, last)| last.saturating_add(silence) >= now_ns)
            .map(|&(fl, _)| fl)
            .min();
        if let Some(passed) = active.filter(|&fl| fl > next && self.stats.occupancy > 0) {
            self.stats.losses += 1;
            self.give_up_to(passed, now_ns, out);
        }
    }

    /// Release what has waited `timeout_ns` by `now_ns` (and everything before it), in order.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<T>) {
        while let Some(&(arrived, seq)) = self.arrivals.front() {
            if !self.waiting(seq) {
                self.arrivals.pop_front();
                continue;
            }
            if now_ns < arrived.saturating_add(self.timeout_ns) {
                return;
            }
            self.stats.timeouts += 1;
            self.give_up_to(seq, now_ns, out);
        }
    }

    /// When the packet waiting longest times out, ns (None when none waits).
    pub fn deadline_ns(&mut self) -> Option<u64> {
        while let Some(&(arrived, seq)) = self.arrivals.front() {
            if self.waiting(seq) {
                return Some(arrived.saturating_add(self.timeout_ns));
            }
            self.arrivals.pop_front();
        }
        None
    }

    /// Counters.
    pub fn stats(&self) -> &ReorderStats {
        &self.stats
    }

    /// What waits in `seq`'s slot, taken out (nothing, without allocating the ring, while
    /// nothing ever waited).
    fn take_slot(&mut self, seq: u64) -> Option<(u64, T)> {
        let i = (seq % self.cap()) as usize;
        self.slots.get_mut(i).and_then(Option::take)
    }

    /// Whether `seq` is waiting in its slot.
    fn waiting(&self, seq: u64) -> bool {
        self.next.is_some_and(|n| seq >= n) && self.slots.get((seq % self.cap()) as usize).is_some_and(|s| s.is_some())
    }

    /// Give up every missing number below `seq`, delivering what waits there, then drain.
    fn give_up_to(&mut self, seq: u64, now_ns: u64, out: &mut Vec<T>) {
        let Some(next) = self.next else { return };
        // Everything waiting lies within a ring's span of `next`; numbers past it were never
        // stored, so they are counted, not visited.
        let visit_end = seq.min(next + self.cap());
        for n in next..visit_end {
            self.take(n, now_ns, out);
        }
        self.stats.skipped += seq - visit_end;
        let next = seq.max(next);
        self.next = Some(next);
        self.drain(now_ns, out);
    }

    /// Deliver `seq` if it waits, or count it skipped.
    fn take(&mut self, seq: u64, now_ns: u64, out: &mut Vec<T>) {
        match self.take_slot(seq) {
            Some((arrived, item)) => self.release(arrived, now_ns, item, out),
            None => self.stats.skipped += 1,
        }
    }

    /// Deliver the waiting packets that follow `next` without a gap.
    fn drain(&mut self, now_ns: u64, out: &mut Vec<T>) {
        let Some(mut next) = self.next else { return };
        while let Some((arrived, item)) = self.take_slot(next) {
            self.release(arrived, now_ns, item, out);
            next += 1;
        }
        self.next = Some(next);
    }

    fn release(&mut self, arrived: u64, now_ns: u64, item: T, out: &mut Vec<T>) {
        let waited = now_ns.saturating_sub(arrived);
        self.stats.held += 1;
        self.stats.occupancy -= 1;
        self.stats.held_ns_sum = self.stats.held_ns_sum.saturating_add(waited);
        self.stats.held_ns_max = self.stats.held_ns_max.max(waited);
        out.push(item);
    }

    /// Drop arrival entries of packets that already left (keeps the queue within capacity).
    fn compact_arrivals(&mut self) {
        let mut arrivals = std::mem::take(&mut self.arrivals);
        arrivals.retain(|&(_, seq)| self.waiting(seq));
        self.arrivals = arrivals;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn push(b: &mut ReorderBuffer<u32>, seq: u32, now: u64) -> Vec<u32> {
        let mut out = Vec::new();
        b.push(seq, now, seq, &mut out);
        out
    }

    #[test]
    fn a_gap_holds_what_follows_until_it_fills() {
        let mut b = ReorderBuffer::new(8, 100 * MS);
        assert_eq!(push(&mut b, 0, 0), [0]);
        assert_eq!(push(&mut b, 2, MS), Vec::<u32>::new());
        assert_eq!(push(&mut b, 3, 2 * MS), Vec::<u32>::new());
        assert_eq!(b.deadline_ns(), Some(101 * MS));
        assert_eq!(push(&mut b, 1, 5 * MS), [1, 2, 3]);
        let s = b.stats();
        assert_eq!(
            (s.in_order, s.held, s.late, s.occupancy, s.max_occupancy),
            (2, 2, 0, 0, 2)
        );
        assert_eq!((s.held_ns_sum, s.held_ns_max), (7 * MS, 4 * MS));
        assert_eq!(b.deadline_ns(), None);
    }

    #[test]
    fn a_timeout_gives_up_the_gap_and_a_late_packet_leaves_at_once() {
        let mut b = ReorderBuffer::new(8, 10 * MS);
        push(&mut b, 0, 0);
        push(&mut b, 3, MS);
        push(&mut b, 5, 2 * MS);
        let mut out = Vec::new();
        b.poll(10 * MS, &mut out);
        assert!(out.is_empty(), "not yet");
        b.poll(11 * MS, &mut out);
        assert_eq!(out, [3], "3 waited 10 ms; 5 waits for 4");
        b.poll(12 * MS, &mut out);
        assert_eq!(out, [3, 5]);
        assert_eq!(push(&mut b, 1, 13 * MS), [1], "late");
        assert_eq!(push(&mut b, 6, 14 * MS), [6]);
        let s = b.stats();
        assert_eq!((s.late, s.skipped, s.timeouts, s.held), (1, 3, 2, 2));
    }

    #[test]
    fn a_number_a_ring_ahead_makes_room_by_giving_up_the_oldest() {
        let mut b = ReorderBuffer::new(4, 100 * MS);
        push(&mut b, 0, 0);
        push(&mut b, 2, 0);
        push(&mut b, 3, 0);
        // 6 needs the ring to start at 3: 1 is given up, 2 and 3 leave.
        assert_eq!(push(&mut b, 6, MS), [2, 3]);
        // Far ahead: everything waiting leaves, the span between is skipped in one step.
        assert_eq!(push(&mut b, 1000, 2 * MS), [6]);
        assert_eq!(push(&mut b, 997, 3 * MS), [997], "the ring now starts at 997");
        let s = b.stats();
        assert_eq!(s.overflows, 2);
        assert_eq!(s.skipped, 1 + 2 + (997 - 7), "1; 4 and 5; 7 to 996");
        assert_eq!(s.occupancy, 1, "1000 waits for 998 and 999");
    }

    #[test]
    fn a_gap_every_path_has_passed_is_lost_and_given_up_at_once() {
        let mut b = ReorderBuffer::new(16, 100 * MS);
        b.track_paths(2, 600 * MS, 0);
        let mut out = Vec::new();
        // Path 0 carries 0, 2, 4; path 1 carries 1, 3 and loses 1.
        b.push_on(0, 0, 0, 0, &mut out);
        b.push_on(0, 2, MS, 2, &mut out);
        b.push_on(0, 4, 2 * MS, 4, &mut out);
        assert_eq!(out, [0], "1 may still be on path 1");
        b.push_on(1, 3, 3 * MS, 3, &mut out);
        assert_eq!(out, [0, 2, 3, 4], "path 1 delivered 3, so its 1 is lost");
        assert_eq!((b.stats().losses, b.stats().skipped, b.stats().timeouts), (1, 1, 0));
    }

    #[test]
    fn a_keepalive_moves_an_idle_paths_floor_and_a_silent_path_does_not_hold_it() {
        let mut b = ReorderBuffer::new(16, 1_000 * MS);
        b.track_paths(2, 600 * MS, 0);
        let mut out = Vec::new();
        b.push_on(0, 0, 0, 0, &mut out);
        b.push_on(0, 2, MS, 2, &mut out);
        assert_eq!(out, [0], "1 may be on path 1");
        // Path 1's keepalive: its sender's next number was 1, so 1 was never on path 1.
        b.raise_floor(1, 1, 2 * MS, &mut out);
        assert_eq!(out, [0], "1 may still be sent on path 1 after the keepalive");
        b.raise_floor(1, 3, 3 * MS, &mut out);
        assert_eq!(out, [0, 2], "path 1's next was 3 and it never carried 1: 1 is lost");
        // Path 1 falls silent past the silence: path 0 alone sets the floor.
        b.push_on(0, 5, 4 * MS, 5, &mut out);
        assert_eq!(out, [0, 2], "4 may be on path 1");
        b.push_on(0, 6, 700 * MS, 6, &mut out);
        assert_eq!(out, [0, 2, 5, 6], "path 1 is silent: 4 given up");
        assert_eq!((b.stats().losses, b.stats().timeouts), (2, 0));
    }

    #[test]
    fn duplicates_of_a_waiting_packet_are_dropped() {
        let mut b = ReorderBuffer::new(8, 100 * MS);
        push(&mut b, 0, 0);
        push(&mut b, 2, 0);
        assert!(push(&mut b, 2, 0).is_empty());
        assert_eq!(b.stats().duplicates, 1);
    }

    proptest! {
        /// Whatever the arrival order, every packet leaves exactly once; packets leave in
        /// order except those counted late; occupancy stays within the ring, and with polls
        /// at the deadline no packet waits past the timeout.
        #[test]
        fn every_packet_leaves_once_and_in_order_unless_late(
            delays in proptest::collection::vec(0u32..40, 300),
            cap in 1usize..64,
        ) {
            // Packet s arrives at slot s + delays[s], as over paths of different delay.
            let mut arrivals: Vec<u32> = (0..300).collect();
            arrivals.sort_by_key(|&s| (s + delays[s as usize], s));
            let timeout = 5 * MS;
            let mut b = ReorderBuffer::new(cap, timeout);
            let mut out = Vec::new();
            for (i, &s) in arrivals.iter().enumerate() {
                let now = i as u64 * MS;
                while let Some(d) = b.deadline_ns().filter(|&d| d <= now) {
                    b.poll(d, &mut out);
                }
                b.push(s, now, s, &mut out);
                prop_assert!(b.stats().occupancy as usize <= cap);
            }
            let end = 300 * MS + timeout;
            while let Some(d) = b.deadline_ns() {
                prop_assert!(d <= end);
                b.poll(d, &mut out);
            }
            let mut sorted = out.clone();
            sorted.sort();
            prop_assert_eq!(sorted, (0..300).collect::<Vec<_>>());
            let mut max_seen = None;
            let mut backwards = 0;
            for &s in &out {
                if max_seen.is_some_and(|m| s < m) { backwards += 1; }
                max_seen = max_seen.max(Some(s));
            }
            prop_assert!(backwards <= b.stats().late, "{} backwards, {} late", backwards, b.stats().late);
            prop_assert!(b.stats().held_ns_max <= timeout, "waited {} ns", b.stats().held_ns_max);
        }
    }
}
