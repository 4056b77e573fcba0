//! Connections to a responder's TCP path that have not yet proved the key, and the log of
//! those dropped: state without I/O (the sockets are [`crate::stream`]'s, the key the
//! daemon's opener).
//!
//! Anyone who can reach the responder's port can connect to it, so a connection becomes the
//! path's only once its first record has been opened under the key and passed the replay
//! check. Until then it is *pending*: at most [`MAX_PENDING`] wait on a path, none longer than
//! [`PENDING_TIMEOUT_NS`], and a newer one pushes the oldest out, so that connections held
//! open and silent cannot keep the initiator's next one from being heard. A pending
//! connection is never written to and never touches the established one.

use std::collections::VecDeque;

/// Most connections that wait on one path to prove the key.
pub const MAX_PENDING: usize = 16;
/// Longest a connection may wait for its first record, ns: the initiator sends one as soon as
/// it is connected, so this leaves a round trip and two of TCP's first retransmissions.
pub const PENDING_TIMEOUT_NS: u64 = 5_000_000_000;
/// Least time between two lines about connections dropped unauthenticated, ns.
pub const LOG_EVERY_NS: u64 = 1_000_000_000;

/// Names a pending connection while it waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingId(u64);

/// A connection waiting for its first record.
#[derive(Debug)]
pub struct Pending<C> {
    /// Its name.
    pub id: PendingId,
    /// The connection.
    pub conn: C,
    /// When it is dropped if it has not proved the key, ns.
    pub deadline_ns: u64,
}

/// The pending connections of one path, oldest first.
#[derive(Debug)]
pub struct Admission<C> {
    waiting: VecDeque<Pending<C>>,
    next_id: u64,
    max: usize,
    timeout_ns: u64,
}

impl<C> Admission<C> {
    /// At most `max` pending (at least one), each for at most `timeout_ns`.
    pub fn new(max: usize, timeout_ns: u64) -> Admission<C> {
        Admission {
            waiting: VecDeque::new(),
            next_id: 0,
            max: max.max(1),
            timeout_ns,
        }
    }

    /// Let `conn`, just accepted at `now_ns`, wait; the oldest waiting is pushed out (and
    /// returned) if `max` already wait.
    pub fn admit(&mut self, conn: C, now_ns: u64) -> (PendingId, Option<Pending<C>>) {
        let pushed = match self.waiting.len() >= self.max {
            true => self.waiting.pop_front(),
            false => None,
        };
        let id = PendingId(self.next_id);
        self.next_id += 1;
        self.waiting.push_back(Pending {
            id,
            conn,
            deadline_ns: now_ns.saturating_add(self.timeout_ns),
        });
        (id, pushed)
    }

    /// Stop waiting for `id`: it proved the key, or failed to.
    pub fn take(&mut self, id: PendingId) -> Option<Pending<C>> {
        let at = self.waiting.iter().position(|p| p.id == id)?;
        self.waiting.remove(at)
    }

    /// Move into `out` the connections whose deadline is past at `now_ns`.
    pub fn expire(&mut self, now_ns: u64, out: &mut Vec<Pending<C>>) {
        // One timeout for all: admission order is deadline order.
        while self.waiting.front().is_some_and(|p| p.deadline_ns <= now_ns) {
            out.extend(self.waiting.pop_front());
        }
    }

    /// The earliest deadline, ns.
    pub fn deadline_ns(&self) -> Option<u64> {
        self.waiting.front().map(|p| p.deadline_ns)
    }

    /// The connections waiting, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Pending<C>> {
        self.waiting.iter()
    }

    /// The same, to read from.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Pending<C>> {
        self.waiting.iter_mut()
    }

    /// How many wait.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// At most `burst` log lines per interval for a kind of event anyone can cause: the first
/// events of an interval are said, the others counted and said as one number when it is over,
/// so no event goes unsaid and a flood costs a line an interval (after the burst).
#[derive(Debug)]
pub struct Throttle {
    every_ns: u64,
    burst: u32,
    /// When the current interval began, ns.
    since_ns: Option<u64>,
    said: u32,
    held: u64,
}

impl Throttle {
    /// At most `burst` lines (at least one) every `every_ns`.
    pub fn new(every_ns: u64, burst: u32) -> Throttle {
        Throttle {
            every_ns,
            burst: burst.max(1),
            since_ns: None,
            said: 0,
            held: 0,
        }
    }

    /// An event at `now_ns`: true if it is to be said now, false if it is counted for
    /// [`Throttle::summary`].
    pub fn event(&mut self, now_ns: u64) -> bool {
        // While some are held back, a new one waits too: the summary comes first.
        if self.held == 0 && self.over(now_ns) {
            (self.since_ns, self.said) = (Some(now_ns), 0);
        }
        if self.held == 0 && self.said < self.burst {
            self.said += 1;
            return true;
        }
        self.held += 1;
        false
    }

    /// The events held back, when their line is due at `now_ns` ([`Throttle::due_ns`]); that
    /// line opens a new interval.
    pub fn summary(&mut self, now_ns: u64) -> Option<u64> {
        if self.held == 0 || !self.over(now_ns) {
            return None;
        }
        (self.since_ns, self.said) = (Some(now_ns), 1);
        Some(std::mem::take(&mut self.held))
    }

    /// When the line of the events held back is due, if any are.
    pub fn due_ns(&self) -> Option<u64> {
        match self.held {
            0 => None,
            _ => Some(self.since_ns.unwrap_or(0).saturating_add(self.every_ns)),
        }
    }

    fn over(&self, now_ns: u64) -> bool {
        self.since_ns.is_none_or(|t| now_ns >= t.saturating_add(self.every_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_connections_are_bounded_and_the_oldest_is_pushed_out() {
        let mut a = Admission::new(3, 100);
        let ids: Vec<PendingId> = (0..3).map(|c| a.admit(c, c).0).collect();
        let (fourth, pushed) = a.admit(3, 5);
        assert_eq!(pushed.map(|p| (p.id, p.conn)), Some((ids[0], 0)), "the oldest goes");
        assert_eq!(a.len(), 3);
        assert_eq!(a.take(ids[2]).map(|p| p.conn), Some(2));
        assert!(a.take(ids[2]).is_none(), "taken once");
        assert_eq!(a.iter().map(|p| p.id).collect::<Vec<_>>(), [ids[1], fourth]);
    }

    #[test]
    fn a_connection_waits_until_its_deadline_and_no_longer() {
        let mut a = Admission::new(8, 100);
        a.admit('x', 0);
        a.admit('y', 50);
        assert_eq!(a.deadline_ns(), Some(100));
        let mut out = Vec::new();
        a.expire(99, &mut out);
        assert!(out.is_empty());
        a.expire(100, &mut out);
        assert_eq!(out.iter().map(|p| p.conn).collect::<String>(), "x");
        assert_eq!(a.deadline_ns(), Some(150));
        a.expire(u64::MAX, &mut out);
        assert!(a.is_empty() && out.len() == 2);
    }

    #[test]
    fn a_flood_is_said_once_a_second_and_every_event_is_counted() {
        let s = LOG_EVERY_NS;
        let mut t = Throttle::new(s, 1);
        assert!(t.event(0), "the first is said");
        // 100 more within the next 2.5 s, every 25 ms; summaries asked for every 1 ms.
        let (mut said, mut counted, mut lines) = (1, 0, 1);
        for k in 1..=2500u64 {
            let now = k * 1_000_000;
            if k % 25 == 0 && t.event(now) {
                said += 1;
                lines += 1;
            }
            if let Some(n) = t.summary(now) {
                counted += n;
                lines += 1;
            }
        }
        assert_eq!(t.due_ns(), Some(3 * s));
        counted += t.summary(3 * s).unwrap();
        lines += 1;
        assert_eq!(said + counted, 101, "no event unsaid");
        assert_eq!(lines, 4, "one line a second: at 0, 1, 2 and 3 s");
        assert_eq!(t.summary(10 * s), None, "nothing held");
        assert!(t.event(10 * s), "after a quiet second an event is said at once");
    }

    #[test]
    fn a_burst_is_said_whole_and_what_follows_it_counted() {
        let mut t = Throttle::new(10, 2);
        assert!(t.event(0) && t.event(1), "a burst of two");
        assert!(!t.event(2) && !t.event(3));
        assert_eq!((t.summary(9), t.due_ns()), (None, Some(10)));
        assert_eq!(t.summary(10), Some(2));
        assert!(t.event(11), "the summary was the new interval's first line");
        assert!(!t.event(12));
        assert_eq!(t.summary(20), Some(1));
        assert!(t.event(31) && t.event(32), "a quiet interval: a whole burst again");
    }
}
