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
    /// A link finished serialising its current packet.
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
    /// Bit b set: bucket b is not empty.
    occupied: u128,
    /// Bucket 128 does not fit the mask's 128 bits; it is tracked apart.
    top_occupied: bool,
    len: usize,
    /// The key the buckets are filed around: the last popped, or after a look ahead the
    /// earliest pending.
    last: (TimePs, u64),
    /// The last key popped: (time, seq).
    popped: (TimePs, u64),
    next_seq: u64,
    now: TimePs,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: 0,
            top_occupied: false,
            len: 0,
            last: (0, 0),
            popped: (0, 0),
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
    /// panics; a release build runs it now rather than in the past).
    #[inline]
    pub fn schedule(&mut self, time: TimePs, kind: EventKind) {
        debug_assert!(
            time >= self.now,
            "event {kind:?} scheduled at {time} ps, before now ({} ps)",
            self.now
        );
        let time = time.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.insert(Entry { time, seq, kind });
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
        let ok = (time, seq) > self.popped;
        debug_assert!(ok, "event {kind:?} at ({time}, {seq}) lies before {:?}", self.popped);
        if ok {
            self.insert(Entry { time, seq, kind });
        } else {
            self.schedule(time, kind);
        }
    }

    #[inline]
    fn insert(&mut self, e: Entry) {
        if (e.time, e.seq) < self.last {
            // Only after a look ahead that did not pop (`pop_before` past its limit): the
            // buckets are kept around the earliest pending key; put them back around the key
            // popped last, which lies before every key that may be scheduled.
            self.rebase();
        }
        let b = bucket_of(e.time, e.seq, self.last);
        self.buckets[b].push(e);
        self.mark(b);
        self.len += 1;
    }

    #[inline]
    fn mark(&mut self, b: usize) {
        if b < 128 {
            self.occupied |= 1 << b;
        } else {
            self.top_occupied = true;
        }
    }

    /// Re-file every pending event around the last key popped.
    #[cold]
    fn rebase(&mut self) {
        let all: Vec<Entry> = self.buckets.iter_mut().flat_map(std::mem::take).collect();
        self.occupied = 0;
        self.top_occupied = false;
        self.last = self.popped;
        for e in all {
            let b = bucket_of(e.time, e.seq, self.last);
            self.buckets[b].push(e);
            self.mark(b);
        }
    }

    /// Whether an event is pending at the current time (none can be pending before it).
    #[inline]
    pub fn due_now(&self) -> bool {
        // Relative to a key at `now`, buckets 0..=64 hold the keys of the same time.
        const SAME_TIME: u128 = (1 << 65) - 1;
        self.last.0 == self.now && self.occupied & SAME_TIME != 0
    }

    /// The lowest non-empty bucket.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        if self.occupied != 0 {
            Some(self.occupied.trailing_zeros() as usize)
        } else {
            self.top_occupied.then_some(128)
        }
    }

    /// Make the lowest non-empty bucket hold the minimum alone (bucket 0, or any bucket with
    /// one entry: the common case when few events are pending), redistributing the lowest
    /// bucket around its minimum when it holds several. Returns that bucket.
    #[inline]
    fn settle(&mut self) -> Option<usize> {
        let b = self.lowest()?;
        if b == 0 || self.buckets[b].len() == 1 {
            return Some(b);
        }
        self.redistribute(b);
        Some(0)
    }

    fn redistribute(&mut self, b: usize) {
        let mut entries = std::mem::take(&mut self.buckets[b]);
        self.unmark(b);
        let min = entries
            .iter()
            .map(|e| (e.time, e.seq))
            .min()
            .expect("an occupied bucket has entries");
        self.last = min;
        for e in entries.drain(..) {
            let nb = bucket_of(e.time, e.seq, min);
            self.buckets[nb].push(e);
            self.mark(nb);
        }
        // Keep the emptied vector's capacity for the next time this bucket fills.
        self.buckets[b] = entries;
    }

    #[inline]
    fn unmark(&mut self, b: usize) {
        if b < 128 {
            self.occupied &= !(1 << b);
        } else {
            self.top_occupied = false;
        }
    }

    /// Remove and return the earliest event if it is due before `until`.
    #[inline]
    pub fn pop_before(&mut self, until: TimePs) -> Option<(TimePs, EventKind)> {
        let b = self.settle()?;
        if self.buckets[b][0].time >= until {
            return None;
        }
        Some(self.take_min(b))
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(TimePs, EventKind)> {
        let b = self.settle()?;
        Some(self.take_min(b))
    }

    /// Take the one entry of settled bucket `b`: the minimum. The buckets above stay filed
    /// correctly around it (it agrees with the old reference key above bit `b`).
    #[inline]
    fn take_min(&mut self, b: usize) -> (TimePs, EventKind) {
        let e = self.buckets[b].pop().expect("settled");
        self.unmark(b);
        self.len -= 1;
        self.now = e.time;
        self.last = (e.time, e.seq);
        self.popped = self.last;
        (e.time, e.kind)
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
