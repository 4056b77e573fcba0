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
//!
//! Each waiting packet keeps what its dequeue shows an egress program (BMv2's
//! `standard_metadata`): when it arrived and how deep its queue was then, in packets and bytes
//! (24 bytes a packet). A control plane may change a port's weights and a queue's capacity or
//! ECN threshold while it runs; a single-queue port given a threshold takes the general path
//! from then on, so ports without one pay nothing.

use crate::packet::PacketId;
use mpsched_core::program::QueueDepth;
use std::collections::VecDeque;

/// The bytes of one DRR quantum: a full-sized Ethernet frame.
pub const DRR_QUANTUM_BYTES: u64 = 1514;

/// How a port with several queues chooses the next packet (the scenario's spelling of it).
pub use mpsched_topo::QueueDiscipline as Discipline;

/// A packet waiting: its handle, the depth of its queue when it arrived (packets, bytes), its
/// wire bytes and its arrival time.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    pkt: PacketId,
    enq_depth: u32,
    wire_bytes: u32,
    /// Saturated at `u32::MAX` (4 GiB waiting in one queue).
    enq_bytes: u32,
    enq_ps: u64,
}

impl Waiting {
    #[inline]
    fn new(pkt: PacketId, enq_depth: u32, wire_bytes: u32, enq_bytes: u64, enq_ps: u64) -> Waiting {
        Waiting {
            pkt,
            enq_depth,
            wire_bytes,
            enq_bytes: u32::try_from(enq_bytes).unwrap_or(u32::MAX),
            enq_ps,
        }
    }
}

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
    /// Its wire bytes, as counted when it was enqueued.
    pub wire_bytes: u32,
    /// When it was enqueued.
    pub enq_ps: u64,
    /// Wire bytes its queue held when it arrived (not counting itself).
    pub enq_bytes: u64,
    /// Wire bytes still in its queue.
    pub deq_bytes: u64,
}

/// What [`PortQueues::push`] did with a packet it accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// Packets its queue held before it (not counting itself).
    pub depth: u32,
    /// The queue's ECN threshold says: mark it CE if it is ECN-capable.
    pub mark_ce: bool,
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
    /// Per queue: wire bytes waiting.
    bytes: Vec<u64>,
    /// Per queue: its capacity in packets (the drop threshold).
    limit: Vec<u32>,
    /// Per queue: mark ECN-capable packets CE that find at least this many waiting.
    ecn_pkts: Vec<Option<u32>>,
}

impl PortQueues {
    /// `n` queues (at least one) of `capacity_pkts` each under `discipline`.
    pub fn new(n: usize, capacity_pkts: u32, discipline: Discipline) -> Self {
        let multi = (n > 1).then(|| Box::new(MultiQueue::new(n, capacity_pkts, discipline)));
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

    /// Wire bytes waiting in queue `q`, given the port's total `port_bytes` (which is the one
    /// queue's on a single-queue port).
    #[inline]
    pub fn queue_bytes(&self, q: u8, port_bytes: u64) -> u64 {
        match &self.multi {
            None => port_bytes,
            Some(m) => m.bytes.get(usize::from(q)).copied().unwrap_or(0),
        }
    }

    /// Packets and bytes waiting in each queue, queue 0 first (`port_bytes` as for
    /// [`PortQueues::queue_bytes`]).
    pub fn depths(&self, port_bytes: u64) -> impl Iterator<Item = QueueDepth> + '_ {
        (0..self.n_queues()).map(move |q| QueueDepth {
            pkts: self.queue(q).len() as u32,
            bytes: self.queue_bytes(q as u8, port_bytes),
        })
    }

    /// Enqueue `pkt` of `wire_bytes` in queue `q` (clamped) at `now_ps`, the port holding
    /// `port_bytes` before it: the depth it found and whether to mark it, or None (and nothing
    /// enqueued) when the queue is full.
    #[inline]
    pub fn push(&mut self, q: u8, pkt: PacketId, wire_bytes: u32, now_ps: u64, port_bytes: u64) -> Option<Pushed> {
        let Some(m) = self.multi.as_deref_mut() else {
            // The common case: one queue, no threshold.
            let depth = self.fifo.len() as u32;
            if depth >= self.capacity_pkts {
                return None;
            }
            self.fifo
                .push_back(Waiting::new(pkt, depth, wire_bytes, port_bytes, now_ps));
            self.len += 1;
            return Some(Pushed { depth, mark_ce: false });
        };
        let q = usize::from(q).min(m.queues.len() - 1);
        let depth = m.queues[q].len() as u32;
        if depth >= m.limit[q] {
            return None;
        }
        m.queues[q].push_back(Waiting::new(pkt, depth, wire_bytes, m.bytes[q], now_ps));
        m.bytes[q] += u64::from(wire_bytes);
        self.len += 1;
        Some(Pushed {
            depth,
            mark_ce: m.ecn_pkts[q].is_some_and(|t| depth >= t),
        })
    }

    /// The next packet the discipline serves, the port holding `port_bytes` before it leaves.
    #[inline]
    pub fn pop(&mut self, port_bytes: u64) -> Option<Dequeued> {
        if self.len == 0 {
            return None;
        }
        let (q, w, deq_depth, deq_bytes) = match self.multi.as_deref_mut() {
            None => {
                let w = self.fifo.pop_front()?;
                (0, w, self.fifo.len() as u32, port_bytes - u64::from(w.wire_bytes))
            }
            Some(m) => {
                let q = m.choose();
                let w = m.queues[q].pop_front()?;
                m.bytes[q] -= u64::from(w.wire_bytes);
                (q, w, m.queues[q].len() as u32, m.bytes[q])
            }
        };
        self.len -= 1;
        Some(Dequeued {
            pkt: w.pkt,
            enq_depth: w.enq_depth,
            deq_depth,
            queue: q as u8,
            wire_bytes: w.wire_bytes,
            enq_ps: w.enq_ps,
            enq_bytes: u64::from(w.enq_bytes),
            deq_bytes,
        })
    }

    /// The iterator over every waiting packet (for checks and statistics).
    pub fn iter(&self) -> impl Iterator<Item = PacketId> + '_ {
        let more = self.multi.iter().flat_map(|m| m.queues.iter());
        std::iter::once(&self.fifo)
            .chain(more)
            .flat_map(|q| q.iter().map(|w| w.pkt))
    }

    /// Replace the weights of a WRR or DRR port, one per queue (each at least 1).
    pub fn set_weights(&mut self, weights: &[u32]) -> Result<(), String> {
        let n = self.n_queues();
        let Some(m) = self.multi.as_mut() else {
            return Err("a single-queue port has no weights".into());
        };
        if weights.len() != n || weights.contains(&0) {
            return Err(format!("{n} weights of at least 1 wanted, got {weights:?}"));
        }
        match &mut m.discipline {
            Discipline::Wrr(w) | Discipline::Drr(w) => {
                w.clear();
                w.extend_from_slice(weights);
                Ok(())
            }
            d => Err(format!("a {d:?} port has no weights")),
        }
    }

    /// Mark ECN-capable packets CE that find at least `pkts` waiting in queue `q` (None: never).
    pub fn set_ecn_threshold(&mut self, q: u8, pkts: Option<u32>) -> Result<(), String> {
        let m = self.general(q)?;
        m.ecn_pkts[usize::from(q)] = pkts;
        Ok(())
    }

    /// Set the capacity of queue `q` in packets waiting (packets that find it full are dropped;
    /// those already waiting stay).
    pub fn set_capacity(&mut self, q: u8, pkts: u32) -> Result<(), String> {
        if self.multi.is_none() && q == 0 {
            self.capacity_pkts = pkts;
            return Ok(());
        }
        let m = self.general(q)?;
        m.limit[usize::from(q)] = pkts;
        Ok(())
    }

    /// The general form of the port (a single-queue port takes it now, its waiting packets
    /// moved over), with `q` checked.
    fn general(&mut self, q: u8) -> Result<&mut MultiQueue, String> {
        if usize::from(q) >= self.n_queues() {
            return Err(format!("queue {q} of {}", self.n_queues()));
        }
        if self.multi.is_none() {
            let mut m = MultiQueue::new(1, self.capacity_pkts, Discipline::Fifo);
            m.bytes[0] = self.fifo.iter().map(|w| u64::from(w.wire_bytes)).sum();
            m.queues[0] = std::mem::take(&mut self.fifo);
            self.multi = Some(Box::new(m));
        }
        Ok(self.multi.as_mut().expect("just made"))
    }
}

impl MultiQueue {
    fn new(n: usize, capacity_pkts: u32, discipline: Discipline) -> MultiQueue {
        MultiQueue {
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            discipline,
            cursor: 0,
            credit: vec![0; n],
            bytes: vec![0; n],
            limit: vec![capacity_pkts; n],
            ecn_pkts: vec![None; n],
        }
    }

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
            match self.queues[i].front().map(|w| self.cost(w.wire_bytes)) {
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
        (0..n).filter_map(|_| p.pop(u64::MAX)).map(|d| d.queue).collect()
    }

    fn fill(p: &mut PortQueues, per_queue: usize, bytes: &[u32]) {
        for (q, &b) in bytes.iter().enumerate() {
            for _ in 0..per_queue {
                // The packet's handle says its size, for the test to read back.
                p.push(q as u8, b, b, 0, 0).unwrap();
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
            let d = p.pop(u64::MAX).unwrap();
            bytes[usize::from(d.queue)] += u64::from(d.pkt);
        }
        let ratio = bytes[0] as f64 / bytes[1] as f64;
        assert!((0.9..1.1).contains(&ratio), "{bytes:?}");
    }

    #[test]
    fn a_full_queue_refuses_and_depths_are_per_queue() {
        let mut p = PortQueues::new(2, 2, Discipline::StrictPriority);
        assert_eq!(p.push(0, 0, 1, 0, 0).unwrap().depth, 0);
        assert_eq!(p.push(0, 0, 1, 0, 0).unwrap().depth, 1);
        assert!(p.push(0, 0, 1, 0, 0).is_none());
        assert_eq!(
            p.push(7, 1, 1, 0, 0).unwrap().depth,
            0,
            "clamped to the last queue, its own depth"
        );
        let d = p.pop(3).unwrap();
        assert_eq!((d.queue, d.enq_depth, d.deq_depth), (1, 0, 0));
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn a_dequeue_shows_when_the_packet_came_and_the_bytes_before_and_after_it() {
        // A single-queue port: the port's bytes are the queue's, passed in by the link.
        let mut p = PortQueues::new(1, 10, Discipline::Fifo);
        let mut port_bytes = 0;
        for (i, (bytes, at)) in [(1000u32, 5_000u64), (500, 7_000), (200, 9_000)]
            .into_iter()
            .enumerate()
        {
            let got = p.push(0, i as PacketId, bytes, at, port_bytes).unwrap();
            assert_eq!(got.depth, i as u32);
            port_bytes += u64::from(bytes);
        }
        let d = p.pop(port_bytes).unwrap();
        assert_eq!(
            (d.pkt, d.enq_ps, d.enq_bytes, d.deq_bytes, d.wire_bytes),
            (0, 5_000, 0, 700, 1000)
        );
        port_bytes -= u64::from(d.wire_bytes);
        let d = p.pop(port_bytes).unwrap();
        assert_eq!(
            (d.enq_ps, d.enq_bytes, d.deq_bytes, d.enq_depth, d.deq_depth),
            (7_000, 1000, 200, 1, 1)
        );
        // Sojourn is the dequeue time minus this: a runtime dequeuing at 20 us shows 13 us.
        assert_eq!(20_000 - d.enq_ps, 13_000);
        // Several queues count their own bytes.
        let mut p = PortQueues::new(2, 10, Discipline::StrictPriority);
        p.push(0, 1, 300, 1, 0).unwrap();
        p.push(1, 2, 100, 2, 300).unwrap();
        let got = p.push(0, 3, 400, 3, 400).unwrap();
        assert_eq!(got.depth, 1);
        let depths: Vec<_> = p.depths(800).map(|d| (d.pkts, d.bytes)).collect();
        assert_eq!(depths, [(2, 700), (1, 100)]);
        let d = p.pop(800).unwrap();
        assert_eq!((d.queue, d.enq_bytes, d.deq_bytes), (1, 0, 0));
        let d = p.pop(700).unwrap();
        assert_eq!((d.queue, d.enq_bytes, d.deq_bytes, d.enq_ps), (0, 0, 400, 1));
    }

    #[test]
    fn control_changes_weights_capacity_and_ecn_threshold() {
        let mut p = PortQueues::new(2, 100, Discipline::Wrr(vec![1, 1]));
        p.set_weights(&[1, 3]).unwrap();
        assert!(p.set_weights(&[1]).is_err());
        fill(&mut p, 40, &[100, 100]);
        assert_eq!(served(&mut p, 40).iter().filter(|&&q| q == 1).count(), 30);
        // A single-queue port given an ECN threshold keeps its packets and marks from then on.
        let mut p = PortQueues::new(1, 100, Discipline::Fifo);
        p.push(0, 1, 100, 0, 0).unwrap();
        p.set_ecn_threshold(0, Some(2)).unwrap();
        assert!(!p.push(0, 2, 100, 0, 100).unwrap().mark_ce);
        assert!(p.push(0, 3, 100, 0, 200).unwrap().mark_ce);
        assert_eq!(p.depths(300).map(|d| d.bytes).collect::<Vec<_>>(), [300]);
        assert_eq!(p.pop(300).unwrap().pkt, 1);
        p.set_capacity(0, 2).unwrap();
        assert!(
            p.push(0, 4, 100, 0, 200).is_none(),
            "two wait: full at the new capacity"
        );
        assert!(p.set_ecn_threshold(1, None).is_err());
        assert!(PortQueues::new(1, 1, Discipline::Fifo).set_weights(&[1]).is_err());
    }
}
