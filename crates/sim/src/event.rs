//! The event queue: a binary heap ordered by (time, sequence number).
//!
//! Events at equal times run in the order they were scheduled, so a run is a function of its
//! inputs alone. Events are small (time, sequence, kind, index); packets live in the links'
//! queues, not in the heap, as in htsim.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: TimePs,
    seq: u64,
    kind: EventKind,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed, so that the max-heap pops the earliest event.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic event queue. It owns simulated time: [`EventQueue::pop`] advances it, and
/// nothing may be scheduled before it, so time never runs backwards.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    now: TimePs,
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
        self.heap.push(Entry { time, seq, kind });
    }

    /// The time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<TimePs> {
        self.heap.peek().map(|e| e.time)
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(TimePs, EventKind)> {
        let e = self.heap.pop()?;
        self.now = e.time;
        Some((e.time, e.kind))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
