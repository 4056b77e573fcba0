//! The event queue: events ordered by (time, sequence number).
//!
//! Events at equal times run in the order they were scheduled, so a run is a function of its
//! inputs alone. Events are small (time, sequence, kind, index); packets live in the links'
//! queues, not in the queue of events, as in htsim.
//!
//! Simulated time never runs backwards, so the keys popped only grow, and the queue is a radix
//! heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) rather than a binary heap: an event sits in the
//! bucket of the highest bit in which its key differs from the last key popped, and a pop
//! redistributes the lowest non-empty bucket around its minimum. Each event moves down a few
//! buckets in its life, by sequential vector pushes; a binary heap's pop takes a comparison per
//! level whose outcome the processor cannot predict. The order is exactly that of the keys.

/// Simulated time in picoseconds.
pub type TimePs = u64;

/// Picoseconds per second.
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// What happens at an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A link's serialiser finished its packet while others wait: it starts the next.
    TxDone(u32),
    /// The oldest packet in flight on a link reaches the far end.
    Arrive(u32),
    /// A traffic source sends its next packet.
    Send(u32),
    /// Take a time-series sample.
    Sample,
    /// A TCP flow's application starts.
    AppStart(u32),
    /// A TCP flow's application stops.
    AppStop(u32),
    /// A TCP connection's timers (retransmission, delayed ACK) may be due.
    TcpTimer(u32),
    /// A program's timer (an index into the simulation's pending program timers).
    ProgramTimer(u32),
    /// A component's timer (an index into the simulation's pending component timers).
    ComponentTimer(u32),
    /// A tunnel exit's reordering buffer may have a packet due (tunnel x 2 + direction).
    ReorderTimer(u32),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: TimePs,
    seq: u64,
    kind: EventKind,
}

/// Buckets: 0 holds keys equal to the last popped; 1..=64 keys of the same time, by the highest
/// differing bit of the sequence number; 65..=128 later times, by the highest differing bit of
/// the time.
const BUCKETS: usize = 129;

/// A deterministic event queue. It owns simulated time: [`EventQueue::pop`] advances it, and
/// nothing may be scheduled before it, so time never runs backwards.
pub struct EventQueue {
    buckets: Vec<Vec<Entry>>,
    /// Bit `b % 64` of word `b / 64` set: bucket b is not empty. Three 64-bit words rather
    /// than a `u128` and a flag: a shift by a variable amount is one instruction on a word,
    /// and the mask is touched on every schedule, pop and refile.
    occupied: [u64; 3],
    len: usize,
    /// The key the buckets are filed around: the last popped, (time, seq). A look ahead
    /// (`pop_before` past its limit) finds the minimum without moving anything, so every key
    /// that may be scheduled lies above it.
    last: (TimePs, u64),
    next_seq: u64,
    now: TimePs,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; 3],
            len: 0,
            last: (0, 0),
            next_seq: 0,
            now: 0,
        }
    }
}

#[inline]
fn bucket_of(time: TimePs, seq: u64, last: (TimePs, u64)) -> usize {
    if time != last.0 {
        64 + (64 - (time ^ last.0).leading_zeros()) as usize
    } else {
        (64 - (seq ^ last.1).leading_zeros()) as usize
    }
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Simulated time: that of the last event popped.
    #[inline]
    pub fn now(&self) -> TimePs {
        self.now
    }

    /// Schedule `kind` at `time`, which must not lie before [`EventQueue::now`] (a debug build
    /// panics; a release build runs it now rather than in the past). Returns the sequence
    /// number it took, which orders it among events of the same time.
    #[inline]
    pub fn schedule(&mut self, time: TimePs, kind: EventKind) -> u64 {
        debug_assert!(
            time >= self.now,
            "event {kind:?} scheduled at {time} ps, before now ({} ps)",
            self.now
        );
        let time = time.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.insert(Entry { time, seq, kind });
        seq
    }

    /// Take a sequence number now for an event to be scheduled later with
    /// [`EventQueue::schedule_reserved`]: it will run among equal-time events as if scheduled
    /// now. A link keeps one arrival event pending but orders each packet's arrival as of the
    /// moment the packet left.
    #[inline]
    pub fn reserve_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Schedule `kind` at `time` with a sequence number from [`EventQueue::reserve_seq`]. The
    /// key must not lie before the last event popped (a debug build panics; a release build
    /// gives it a fresh sequence number).
    #[inline]
    pub fn schedule_reserved(&mut self, time: TimePs, seq: u64, kind: EventKind) {
        let ok = (time, seq) > self.last;
        debug_assert!(ok, "event {kind:?} at ({time}, {seq}) lies before {:?}", self.last);
        if ok {
            self.insert(Entry { time, seq, kind });
        } else {
            let _ = self.schedule(time, kind);
        }
    }

    #[inline]
    fn insert(&mut self, e: Entry) {
        let b = bucket_of(e.time, e.seq, self.last);
        self.buckets[b].push(e);
        self.mark(b);
        self.len += 1;
    }

    #[inline]
    fn mark(&mut self, b: usize) {
        self.occupied[b >> 6] |= 1 << (b & 63);
    }

    /// Whether an event is pending at the current time (none can be pending before it).
    #[inline]
    pub fn due_now(&self) -> bool {
        // Relative to a key at `now`, buckets 0..=64 hold the keys of the same time.
        self.last.0 == self.now && (self.occupied[0] != 0 || self.occupied[1] & 1 != 0)
    }

    /// The lowest non-empty bucket.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        let [low, mid, high] = self.occupied;
        if low != 0 {
            Some(low.trailing_zeros() as usize)
        } else if mid != 0 {
            Some(64 + mid.trailing_zeros() as usize)
        } else if high != 0 {
            Some(128 + high.trailing_zeros() as usize)
        } else {
            None
        }
    }

    #[inline]
    fn unmark(&mut self, b: usize) {
        self.occupied[b >> 6] &= !(1 << (b & 63));
    }

    /// Remove and return the earliest event if it is due before `until`.
    #[inline]
    pub fn pop_before(&mut self, until: TimePs) -> Option<(TimePs, EventKind)> {
        let (b, i) = self.find_min()?;
        if self.buckets[b][i].time >= until {
            return None;
        }
        Some(self.take(b, i))
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(TimePs, EventKind)> {
        let (b, i) = self.find_min()?;
        Some(self.take(b, i))
    }

    /// Where the minimum lies: the lowest non-empty bucket, and its index there. Most
    /// buckets hold one to three events when popped; those sizes take no loop, so there is
    /// no loop exit to mispredict.
    #[inline]
    fn find_min(&self) -> Option<(usize, usize)> {
        let b = self.lowest()?;
        let v = &self.buckets[b];
        // One 128-bit number per key: compared without a branch.
        let key = |i: usize| (u128::from(v[i].time) << 64) | u128::from(v[i].seq);
        let i = match v.len() {
            1 => 0,
            2 => usize::from(key(1) < key(0)),
            3 => {
                let m = usize::from(key(1) < key(0));
                if key(2) < key(m) {
                    2
                } else {
                    m
                }
            }
            n => (0..n).min_by_key(|&i| key(i)).expect("an occupied bucket has entries"),
        };
        Some((b, i))
    }

    /// Remove entry `i` of bucket `b`, the minimum, and re-file the bucket's others around it
    /// (the buckets above stay filed correctly: the minimum agrees with the old reference key
    /// above bit `b`).
    #[inline]
    fn take(&mut self, b: usize, i: usize) -> (TimePs, EventKind) {
        let v = &mut self.buckets[b];
        let e = v.swap_remove(i);
        let at = (e.time, e.seq);
        if !v.is_empty() {
            self.refile(b, at);
        }
        self.unmark(b);
        self.len -= 1;
        self.now = e.time;
        self.last = at;
        (e.time, e.kind)
    }

    /// Move what is left in bucket `b` to the buckets of reference key `at`: all lie below
    /// `b`, since they agree with `at` above the bit that files them in `b`. The emptied
    /// vector keeps its capacity for the next time this bucket fills.
    fn refile(&mut self, b: usize, at: (TimePs, u64)) {
        let (below, from) = self.buckets.split_at_mut(b);
        for r in from[0].drain(..) {
            let nb = bucket_of(r.time, r.seq, at);
            below[nb].push(r);
            self.occupied[nb >> 6] |= 1 << (nb & 63);
        }
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_equal_times_in_scheduling_order() {
        let mut q = EventQueue::new();
        q.schedule(5, EventKind::Send(1));
        q.schedule(3, EventKind::Send(2));
        q.schedule(5, EventKind::Send(3));
        q.schedule(5, EventKind::Sample);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            [
                (3, EventKind::Send(2)),
                (5, EventKind::Send(1)),
                (5, EventKind::Send(3)),
                (5, EventKind::Sample)
            ]
        );
    }

    proptest::proptest! {
        /// Any interleaving of schedules and pops comes out in (time, scheduling order), as a
        /// sorted reference does.
        #[test]
        fn pops_in_time_then_scheduling_order(
            ops in proptest::collection::vec((0u64..1 << 40, 0u32..4, proptest::bool::ANY), 1..400),
        ) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(u64, u64, u32)> = Vec::new();
            for (seq, (dt, id, pop)) in ops.into_iter().enumerate() {
                // Mostly small steps ahead of now, some equal, some far.
                let t = q.now() + if dt % 3 == 0 { 0 } else { dt >> (dt % 37) };
                q.schedule(t, EventKind::Send(id));
                reference.push((t, seq as u64, id));
                reference.sort();
                let due = reference.iter().any(|r| r.0 == q.now());
                proptest::prop_assert_eq!(q.due_now(), due);
                if pop {
                    let (rt, _, rid) = reference.remove(0);
                    proptest::prop_assert_eq!(q.pop(), Some((rt, EventKind::Send(rid))));
                } else {
                    // A look ahead that stops short must not disturb what follows.
                    let first = reference[0].0;
                    proptest::prop_assert_eq!(q.pop_before(first), None);
                }
            }
            reference.sort();
            for (rt, _, rid) in reference {
                proptest::prop_assert_eq!(q.pop(), Some((rt, EventKind::Send(rid))));
            }
            proptest::prop_assert_eq!(q.pop(), None);
            proptest::prop_assert!(q.is_empty());
        }
    }

    #[test]
    fn a_reserved_sequence_number_orders_as_of_its_reservation() {
        let mut q = EventQueue::new();
        let early = q.reserve_seq();
        q.schedule(7, EventKind::Send(1));
        q.schedule_reserved(7, early, EventKind::Send(0));
        assert_eq!(q.pop(), Some((7, EventKind::Send(0))));
        assert_eq!(q.pop(), Some((7, EventKind::Send(1))));
    }

    #[test]
    fn time_never_runs_backwards() {
        let mut q = EventQueue::new();
        q.schedule(10, EventKind::Sample);
        assert_eq!(q.pop(), Some((10, EventKind::Sample)));
        assert_eq!(q.now(), 10);
        let past = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.schedule(4, EventKind::Sample)));
        if cfg!(debug_assertions) {
            assert!(past.is_err(), "scheduling before now is a bug a debug build reports");
        } else {
            assert_eq!(q.pop(), Some((10, EventKind::Sample)), "a release build runs it now");
        }
    }
}
