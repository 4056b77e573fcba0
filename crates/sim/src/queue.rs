//! A port's output queues and the discipline that chooses which one the serialiser serves next.
//!
//! One FIFO per queue, each of a capacity in packets waiting (the packet being serialised is not
//! counted), as BMv2 runs one FIFO per priority with `--priority-queues`. The disciplines:
//!
//! - FIFO: one queue;
//! - strict priority: the highest-numbered non-empty queue first (BMv2's priority queues: a
//!   larger `priority` is served first), so a saturated high class starves the lower ones;
//! - WRR: queue `i` sends up to `weights[i]` packets per round;
//! - DRR (Shreedhar and Varghese, 1995): queue `i` earns `weights[i]` quanta of 1514 bytes per
//!   round and sends while its deficit covers the head packet.
//!
//! A single-queue port takes the FIFO path without consulting a discipline.

use crate::packet::PacketId;
use std::collections::VecDeque;

/// The bytes of one DRR quantum: a full-sized Ethernet frame.
pub const DRR_QUANTUM_BYTES: u64 = 1514;

/// How a port with several queues chooses the next packet (the scenario's spelling of it).
pub use mpsched_topo::QueueDiscipline as Discipline;

/// A packet waiting, with the depth of its queue when it arrived and its wire bytes.
type Waiting = (PacketId, u32, u32);

/// What [`PortQueues::pop`] hands the serialiser.
#[derive(Clone, Copy, Debug)]
pub struct Dequeued {
    /// The packet.
    pub pkt: PacketId,
    /// Packets its queue held when it arrived (not counting itself).
    pub enq_depth: u32,
    /// Packets still in its queue.
    pub deq_depth: u32,
    /// Which queue.
    pub queue: u8,
}

/// A port's queues.
#[derive(Clone, Debug)]
pub struct PortQueues {
    /// The one queue of a single-queue port, the common case, kept inline (no pointer to
    /// follow per packet).
    fifo: VecDeque<Waiting>,
    capacity_pkts: u32,
    /// Packets waiting in all queues (a `u32`, so the port's state fits 48 bytes of its
    /// link's second cache line, beside the transmit counters).
    len: u32,
    /// A port with several queues: all of them and the discipline's state.
    multi: Option<Box<MultiQueue>>,
}

/// Several queues under a discipline.
#[derive(Clone, Debug)]
struct MultiQueue {
    queues: Vec<VecDeque<Waiting>>,
    discipline: Discipline,
    /// Round-robin state: the queue being served and what it may still send (packets for WRR,
    /// bytes for DRR).
    cursor: usize,
    credit: Vec<u64>,
}

impl PortQueues {
    /// `n` queues (at least one) of `capacity_pkts` each under `discipline`.
    pub fn new(n: usize, capacity_pkts: u32, discipline: Discipline) -> Self {
        let multi = (n > 1).then(|| {
            Box::new(MultiQueue {
                queues: (0..n).map(|_| VecDeque::new()).collect(),
                discipline,
                cursor: 0,
                credit: vec![0; n],
            })
        });
        PortQueues {
            fifo: VecDeque::new(),
            capacity_pkts,
            len: 0,
            multi,
        }
    }

    /// Number of queues.
    #[inline]
    pub fn n_queues(&self) -> usize {
        self.multi.as_ref().map_or(1, |m| m.queues.len())
    }

    /// Packets waiting in all queues.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no packet waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn queue(&self, q: usize) -> &VecDeque<Waiting> {
        match &self.multi {
            None => &self.fifo,
            Some(m) => &m.queues[q],
        }
    }

    #[inline]
    fn queue_mut(&mut self, q: usize) -> &mut VecDeque<Waiting> {
        match &mut self.multi {
            None => &mut self.fifo,
            Some(m) => &mut m.queues[q],
        }
    }

    /// Packets waiting in queue `q`.
    #[inline]
    pub fn queue_len(&self, q: u8) -> u32 {
        self.queue(usize::from(q)).len() as u32
    }

    /// The queue a packet asking for `q` goes to: `q` clamped to the port's queues.
    #[inline]
    pub fn clamp(&self, q: u8) -> u8 {
        q.min((self.n_queues() - 1) as u8)
    }

    /// Enqueue `pkt` of `wire_bytes` in queue `q` (clamped): the depth it found, or None (and
    /// nothing enqueued) when the queue is full.
    #[inline]
    pub fn push(&mut self, q: u8, pkt: PacketId, wire_bytes: u32) -> Option<u32> {
        let q = usize::from(self.clamp(q));
        let capacity = self.capacity_pkts;
        let fifo = self.queue_mut(q);
        let depth = fifo.len() as u32;
        if depth >= capacity {
            return None;
        }
        fifo.push_back((pkt, depth, wire_bytes));
        self.len += 1;
        Some(depth)
    }

    /// The next packet the discipline serves.
    #[inline]
    pub fn pop(&mut self) -> Option<Dequeued> {
        if self.len == 0 {
            return None;
        }
        let q = self.multi.as_mut().map_or(0, |m| m.choose());
        let fifo = self.queue_mut(q);
        let (pkt, enq_depth, _) = fifo.pop_front()?;
        let deq_depth = fifo.len() as u32;
        self.len -= 1;
        Some(Dequeued {
            pkt,
            enq_depth,
            deq_depth,
            queue: q as u8,
        })
    }

    /// The iterator over every waiting packet (for checks and statistics).
    pub fn iter(&self) -> impl Iterator<Item = PacketId> + '_ {
        let more = self.multi.iter().flat_map(|m| m.queues.iter());
        std::iter::once(&self.fifo)
            .chain(more)
            .flat_map(|q| q.iter().map(|&(p, _, _)| p))
    }
}

impl MultiQueue {
    /// Which non-empty queue serves next (at least one packet waits).
    fn choose(&mut self) -> usize {
        match self.discipline {
            Discipline::Fifo | Discipline::StrictPriority => (0..self.queues.len())
                .rev()
                .find(|&i| !self.queues[i].is_empty())
                .unwrap_or(0),
            Discipline::Wrr(_) | Discipline::Drr(_) => self.round_robin(),
        }
    }

    /// What queue `i` may send per round: packets (WRR) or bytes (DRR).
    fn allowance(&self, i: usize) -> u64 {
        match &self.discipline {
            Discipline::Wrr(weights) => u64::from(weights.get(i).copied().unwrap_or(1).max(1)),
            Discipline::Drr(weights) => u64::from(weights.get(i).copied().unwrap_or(1).max(1)) * DRR_QUANTUM_BYTES,
            _ => 1,
        }
    }

    /// What sending a packet of `wire_bytes` costs against the allowance.
    fn cost(&self, wire_bytes: u32) -> u64 {
        match self.discipline {
            Discipline::Drr(_) => u64::from(wire_bytes),
            _ => 1,
        }
    }

    /// Round robin with credit: the queue at the cursor sends while its credit covers the head
    /// packet's cost; an empty queue loses its credit; moving on grants the next non-empty queue
    /// its allowance. Every lap tops up every non-empty queue, so this ends.
    fn round_robin(&mut self) -> usize {
        let n = self.queues.len();
        loop {
            let i = self.cursor;
            match self.queues[i].front().map(|&(_, _, b)| self.cost(b)) {
                Some(c) if self.credit[i] >= c => {
                    self.credit[i] -= c;
                    return i;
                }
                Some(_) => {}
                None => self.credit[i] = 0,
            }
            self.cursor = (i + 1) % n;
            if !self.queues[self.cursor].is_empty() {
                self.credit[self.cursor] += self.allowance(self.cursor);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(p: &mut PortQueues, n: usize) -> Vec<u8> {
        (0..n).filter_map(|_| p.pop()).map(|d| d.queue).collect()
    }

    fn fill(p: &mut PortQueues, per_queue: usize, bytes: &[u32]) {
        for (q, &b) in bytes.iter().enumerate() {
            for _ in 0..per_queue {
                // The packet's handle says its size, for the test to read back.
                p.push(q as u8, b, b).unwrap();
            }
        }
    }

    #[test]
    fn strict_priority_serves_the_highest_queue_first() {
        let mut p = PortQueues::new(3, 10, Discipline::StrictPriority);
        fill(&mut p, 2, &[100, 100, 100]);
        assert_eq!(served(&mut p, 6), [2, 2, 1, 1, 0, 0]);
    }

    #[test]
    fn wrr_sends_its_weights_per_round() {
        let mut p = PortQueues::new(2, 100, Discipline::Wrr(vec![1, 3]));
        fill(&mut p, 40, &[100, 100]);
        let s = served(&mut p, 40);
        let ones = s.iter().filter(|&&q| q == 1).count();
        assert_eq!(ones, 30, "{s:?}");
    }

    #[test]
    fn drr_shares_bytes_not_packets() {
        // Queue 0 sends 1514-byte frames, queue 1 sends 100-byte ones; equal quanta give equal
        // bytes.
        let mut p = PortQueues::new(2, 10_000, Discipline::Drr(vec![1, 1]));
        fill(&mut p, 3000, &[1514, 100]);
        let mut bytes = [0u64; 2];
        for _ in 0..3000 {
            let d = p.pop().unwrap();
            bytes[usize::from(d.queue)] += u64::from(d.pkt);
        }
        let ratio = bytes[0] as f64 / bytes[1] as f64;
        assert!((0.9..1.1).contains(&ratio), "{bytes:?}");
    }

    #[test]
    fn a_full_queue_refuses_and_depths_are_per_queue() {
        let mut p = PortQueues::new(2, 2, Discipline::StrictPriority);
        assert_eq!(p.push(0, 0, 1).unwrap(), 0);
        assert_eq!(p.push(0, 0, 1).unwrap(), 1);
        assert!(p.push(0, 0, 1).is_none());
        assert_eq!(p.push(7, 1, 1).unwrap(), 0, "clamped to the last queue, its own depth");
        let d = p.pop().unwrap();
        assert_eq!((d.queue, d.enq_depth, d.deq_depth), (1, 0, 0));
        assert_eq!(p.len(), 2);
    }
}
