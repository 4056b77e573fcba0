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
//!
//! "Each path delivers in order" holds in the simulator, not always in a kernel: a veth
//! queues to the backlog of the CPU the sender runs on, so a sender that moves between CPUs
//! can reorder a path by a few packets (35 of 25 002 packets came late in a CI run that gave
//! gaps up at once). So a gap every path has passed is given up after a **loss grace**, as
//! RACK (RFC 8985) waits a reordering window: the grace starts at zero (a path that never
//! reorders loses nothing to it), grows to [`LOSS_GRACE_MIN_NS`] and doubles each time a
//! number given up as lost arrives after all (`loss_late`), up to half the timeout, and
//! halves after [`GRACE_DECAY_LOSSES`] losses without one, to no less than the minimum.

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
    /// Packets that arrived after their number was given up as lost: a path reordered.
    pub loss_late: u64,
    /// The loss grace now, ns.
    pub loss_grace_ns: u64,
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
    /// Per path number, for the paths tracked: the floor (every number below it has arrived
    /// or is lost on that path) and when the path last delivered, ns (its declaration at
    /// first).
    floors: Vec<Option<(u64, u64)>>,
    /// A path silent this long no longer holds the floor back, ns.
    silence_ns: u64,
    /// The number every live path had passed, and when that was first seen, ns: given up at
    /// the loss grace after it.
    suspect: Option<(u64, u64)>,
    /// The latest ranges of numbers given up as lost, `[from, to)` (at most [`LOST_RANGES`]).
    lost: VecDeque<(u64, u64)>,
    /// Losses given up since a number given up as lost last arrived.
    clean_losses: u32,
    stats: ReorderStats,
}

/// The smallest loss grace once a path has reordered, ns.
pub const LOSS_GRACE_MIN_NS: u64 = 250_000;
/// Losses without a late arrival after which the loss grace halves.
pub const GRACE_DECAY_LOSSES: u32 = 16;
/// Ranges given up as lost that are remembered (to tell a path's reordering from a timeout's).
const LOST_RANGES: usize = 8;

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
            suspect: None,
            lost: VecDeque::new(),
            clean_losses: 0,
            stats: ReorderStats::default(),
        }
    }

    /// The peer restarted at `now_ns`: what waits leaves at once, in order (the gaps before
    /// it belong to the old session, and are not counted as given up), and numbering starts
    /// afresh; the counters go on, and so does the loss grace (it is the paths', not the
    /// session's). Paths are to be tracked anew ([`ReorderBuffer::track_paths`]).
    pub fn new_session(&mut self, now_ns: u64, out: &mut Vec<T>) {
        if let Some(next) = self.next {
            for seq in next..next + self.cap() {
                if let Some((arrived, item)) = self.take_slot(seq) {
                    self.release(arrived, now_ns, item, out);
                }
            }
        }
        let stats = std::mem::take(&mut self.stats);
        *self = ReorderBuffer::new(self.capacity, self.timeout_ns);
        self.stats = stats;
    }

    /// Wait at most `timeout_ns` for a gap from now on (a receiver sizes it from its paths'
    /// delays).
    pub fn set_timeout(&mut self, timeout_ns: u64) {
        self.timeout_ns = timeout_ns;
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
            self.note_late(seq);
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

    /// Keep the floors of the paths numbered `paths` (below [`MAX_FLOOR_PATHS`]; others are
    /// ignored) from `now_ns`, and of no other: a path that has delivered nothing for
    /// `silence_ns` is taken as dead.
    pub fn track_paths(&mut self, paths: impl IntoIterator<Item = usize>, silence_ns: u64, now_ns: u64) {
        self.floors = vec![None; MAX_FLOOR_PATHS];
        self.silence_ns = silence_ns;
        for p in paths {
            self.track_path(p, now_ns);
        }
    }

    /// Keep path `path`'s floor too, from `now_ns` (a path added while the tunnel runs): until
    /// it delivers or says where its sender is, it holds the floor back, as every path does at
    /// the start, for at most the silence.
    pub fn track_path(&mut self, path: usize, now_ns: u64) {
        if self.floors.is_empty() {
            self.floors = vec![None; MAX_FLOOR_PATHS];
        }
        if let Some(f) = self.floors.get_mut(path) {
            *f = Some((0, now_ns));
        }
    }

    /// Stop keeping path `path`'s floor (a path removed): gaps no longer wait for it.
    pub fn forget_path(&mut self, path: usize, now_ns: u64, out: &mut Vec<T>) {
        if let Some(f) = self.floors.get_mut(path) {
            *f = None;
        }
        self.judge_floors(now_ns, out);
    }

    /// [`ReorderBuffer::push`] for a packet that arrived on `path`: also raises the path's
    /// floor past it, and gives up gaps every live path has passed.
    pub fn push_on(&mut self, path: usize, wire_seq: u32, now_ns: u64, item: T, out: &mut Vec<T>) {
        self.push(wire_seq, now_ns, item, out);
        self.raise_floor(path, wire_seq.wrapping_add(1), now_ns, out);
    }

    /// Path `path` said (a keepalive) that nothing below tunnel number `wire_next` is still on
    /// its way on it; give up gaps every live path has passed (after the loss grace). Untracked
    /// paths are ignored.
    pub fn raise_floor(&mut self, path: usize, wire_next: u32, now_ns: u64, out: &mut Vec<T>) {
        // Before the first packet, numbers start near 0 (a session numbers from 0).
        let near = self.next.unwrap_or(0);
        let Some(Some(f)) = self.floors.get_mut(path) else {
            return;
        };
        *f = (f.0.max(extend_seq(wire_next, near)), now_ns);
        self.judge_floors(now_ns, out);
    }

    /// The lowest floor of the paths heard from within the silence (None before the first
    /// packet, or when it does not pass a gap something waits behind).
    fn passed_by_every_path(&self, now_ns: u64) -> Option<u64> {
        let next = self.next?;
        let silence = self.silence_ns;
        self.floors
            .iter()
            .flatten()
            .filter(|&&(_, last)| last.saturating_add(silence) >= now_ns)
            .map(|&(fl, _)| fl)
            .min()
            .filter(|&fl| fl > next && self.stats.occupancy > 0)
    }

    /// Suspect, or give up as lost, a gap every live path has passed.
    fn judge_floors(&mut self, now_ns: u64, out: &mut Vec<T>) {
        self.forget_filled_suspect();
        let Some(passed) = self.passed_by_every_path(now_ns) else {
            return;
        };
        if self.stats.loss_grace_ns == 0 {
            self.give_up_lost(passed, now_ns, out);
        } else if self.suspect.is_none() {
            self.suspect = Some((passed, now_ns));
        }
    }

    /// Drop the suspicion once what it suspected has arrived.
    fn forget_filled_suspect(&mut self) {
        if let (Some((passed, _)), Some(next)) = (self.suspect, self.next) {
            if next >= passed {
                self.suspect = None;
            }
        }
    }

    /// When the suspected gap is given up as lost, ns.
    fn suspect_deadline_ns(&mut self) -> Option<u64> {
        self.forget_filled_suspect();
        self.suspect
            .map(|(_, since)| since.saturating_add(self.stats.loss_grace_ns))
    }

    /// Give up, as lost, every missing number below `passed`.
    fn give_up_lost(&mut self, passed: u64, now_ns: u64, out: &mut Vec<T>) {
        let Some(next) = self.next else { return };
        self.stats.losses += 1;
        if self.lost.len() == LOST_RANGES {
            self.lost.pop_front();
        }
        self.lost.push_back((next, passed));
        self.clean_losses = self.clean_losses.saturating_add(1);
        if self.clean_losses >= GRACE_DECAY_LOSSES && self.stats.loss_grace_ns > LOSS_GRACE_MIN_NS {
            self.stats.loss_grace_ns = (self.stats.loss_grace_ns / 2).max(LOSS_GRACE_MIN_NS);
            self.clean_losses = 0;
        }
        self.give_up_to(passed, now_ns, out);
    }

    /// A number below `next` arrived: if it had been given up as lost, a path reordered, and
    /// the loss grace grows (once per range given up).
    fn note_late(&mut self, seq: u64) {
        let Some(k) = self.lost.iter().position(|&(from, to)| (from..to).contains(&seq)) else {
            return;
        };
        self.lost.remove(k);
        self.stats.loss_late += 1;
        self.clean_losses = 0;
        let cap = (self.timeout_ns / 2).max(LOSS_GRACE_MIN_NS);
        self.stats.loss_grace_ns = (self.stats.loss_grace_ns * 2).clamp(LOSS_GRACE_MIN_NS, cap);
    }

    /// Release what has waited `timeout_ns` by `now_ns` (and everything before it), and gaps
    /// suspected lost for the loss grace, in order.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<T>) {
        if let Some((passed, _)) = self
            .suspect
            .filter(|&(_, since)| since + self.stats.loss_grace_ns <= now_ns)
        {
            self.suspect = None;
            if self.next.is_some_and(|n| n < passed) {
                self.give_up_lost(passed, now_ns, out);
            }
            // What the floors passed since waits its own grace.
            self.judge_floors(now_ns, out);
        }
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

    /// When the next gap is given up (its packet waiting longest times out, or a gap suspected
    /// lost reaches its grace), ns (None when none waits).
    pub fn deadline_ns(&mut self) -> Option<u64> {
        let suspect = self.suspect_deadline_ns();
        let timeout = loop {
            let Some(&(arrived, seq)) = self.arrivals.front() else {
                break None;
            };
            if self.waiting(seq) {
                break Some(arrived.saturating_add(self.timeout_ns));
            }
            self.arrivals.pop_front();
        };
        match (suspect, timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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
    fn a_new_session_lets_what_waits_go_in_order_and_keeps_the_counters() {
        let mut b = ReorderBuffer::new(8, 100 * MS);
        assert_eq!(push(&mut b, 0, 0), [0]);
        assert!(push(&mut b, 3, MS).is_empty() && push(&mut b, 2, MS).is_empty());
        let mut out = Vec::new();
        b.new_session(5 * MS, &mut out);
        assert_eq!(out, [2, 3]);
        let s = b.stats().clone();
        assert_eq!(
            (s.held, s.occupancy, s.held_ns_max, s.timeouts, s.skipped),
            (2, 0, 4 * MS, 0, 0)
        );
        // The new session numbers from 0 again, in order at once.
        assert_eq!(push(&mut b, 0, 6 * MS), [0]);
        assert_eq!(push(&mut b, 1, 6 * MS), [1]);
        assert_eq!(b.stats().in_order, s.in_order + 2);
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
        b.track_paths(0..2, 600 * MS, 0);
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
    fn a_path_removed_stops_holding_gaps_and_one_added_holds_them_until_it_speaks() {
        let mut b = ReorderBuffer::new(16, 1_000 * MS);
        // Paths numbered 0 and 2 (1 was never configured: it holds nothing).
        b.track_paths([0, 2], 600 * MS, 0);
        let mut out = Vec::new();
        b.push_on(0, 0, 0, 0, &mut out);
        b.push_on(0, 2, MS, 2, &mut out);
        assert_eq!(out, [0], "1 may be on path 2");
        b.forget_path(2, 2 * MS, &mut out);
        assert_eq!(out, [0, 2], "path 2 removed: only path 0 can carry 1, and it passed it");
        b.track_path(1, 3 * MS);
        b.push_on(0, 4, 4 * MS, 4, &mut out);
        assert_eq!(out, [0, 2], "3 may be on the new path 1");
        b.raise_floor(1, 5, 5 * MS, &mut out);
        assert_eq!(out, [0, 2, 4], "path 1's sender was at 5 and never carried 3");
    }

    #[test]
    fn a_keepalive_moves_an_idle_paths_floor_and_a_silent_path_does_not_hold_it() {
        let mut b = ReorderBuffer::new(16, 1_000 * MS);
        b.track_paths(0..2, 600 * MS, 0);
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
    fn a_path_that_reorders_earns_a_loss_grace_and_a_real_loss_waits_only_that_grace() {
        let mut b = ReorderBuffer::new(32, 100 * MS);
        b.track_paths(0..2, 600 * MS, 0);
        let mut out = Vec::new();
        // Path 0 carries even numbers, path 1 odd ones; path 1 delivers 3 before 1.
        b.push_on(0, 0, 0, 0, &mut out);
        b.push_on(0, 2, MS, 2, &mut out);
        b.push_on(1, 3, 2 * MS, 3, &mut out);
        assert_eq!(out, [0, 2, 3], "no grace yet: 1 given up at once");
        b.push_on(1, 1, 2 * MS + 10_000, 1, &mut out);
        assert_eq!(out, [0, 2, 3, 1], "1 came late");
        let s = b.stats();
        assert_eq!((s.late, s.loss_late, s.loss_grace_ns), (1, 1, LOSS_GRACE_MIN_NS));
        // Again, path 1 delivers 7 before 5: 7 waits the grace and 5 arrives within it.
        out.clear();
        b.push_on(0, 4, 3 * MS, 4, &mut out);
        b.push_on(0, 6, 3 * MS, 6, &mut out);
        b.push_on(1, 7, 3 * MS, 7, &mut out);
        assert_eq!(out, [4], "5 is suspected, not given up");
        assert_eq!(b.deadline_ns(), Some(3 * MS + LOSS_GRACE_MIN_NS));
        b.push_on(1, 5, 3 * MS + 100_000, 5, &mut out);
        assert_eq!(out, [4, 5, 6, 7]);
        assert_eq!(b.deadline_ns(), None, "the suspicion is gone with the gap");
        // A real loss (9 never comes) is given up at the grace, not at the timeout.
        out.clear();
        b.push_on(0, 8, 4 * MS, 8, &mut out);
        b.push_on(1, 11, 4 * MS, 11, &mut out);
        b.push_on(0, 10, 4 * MS, 10, &mut out);
        assert_eq!(out, [8]);
        let due = b.deadline_ns().unwrap();
        assert_eq!(due, 4 * MS + LOSS_GRACE_MIN_NS);
        b.poll(due - 1, &mut out);
        assert_eq!(out, [8], "not before the grace");
        b.poll(due, &mut out);
        assert_eq!(out, [8, 10, 11]);
        let s = b.stats();
        assert_eq!((s.losses, s.late, s.timeouts, s.skipped), (2, 1, 0, 2));
    }

    #[test]
    fn the_loss_grace_doubles_on_each_late_loss_up_to_half_the_timeout_and_decays() {
        let mut b = ReorderBuffer::new(64, 4 * MS);
        b.track_paths(0..1, 600 * MS, 0);
        let mut out = Vec::new();
        b.push_on(0, 0, 0, 0, &mut out);
        let mut seq = 1;
        let mut now = MS;
        let mut graces = Vec::new();
        // Each round: path 0 delivers seq + 1 first; the gap is given up at the grace; seq
        // comes after it. The grace doubles: 0.25, 0.5, 1, 2 (half the timeout), 2 ms.
        for _ in 0..5 {
            b.push_on(0, seq + 1, now, seq + 1, &mut out);
            while let Some(d) = b.deadline_ns().filter(|&d| d <= now + 2 * MS) {
                b.poll(d, &mut out);
            }
            b.push_on(0, seq, now + 3 * MS, seq, &mut out);
            graces.push(b.stats().loss_grace_ns);
            seq += 2;
            now += 10 * MS;
        }
        assert_eq!(graces, [250_000, 500_000, 1_000_000, 2_000_000, 2_000_000]);
        // Losses without late arrivals: the grace halves every GRACE_DECAY_LOSSES of them.
        for _ in 0..GRACE_DECAY_LOSSES {
            b.push_on(0, seq + 1, now, seq + 1, &mut out);
            while let Some(d) = b.deadline_ns() {
                b.poll(d, &mut out);
            }
            seq += 2;
            now += 10 * MS;
        }
        assert_eq!(b.stats().loss_grace_ns, MS);
        assert_eq!(b.stats().loss_late, 5);
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
