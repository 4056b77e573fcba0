//! The connection-level receive side of MPTCP (RFC 8684 3.3): segments arrive on any subflow
//! with DSS mappings that place them in the connection's 64-bit data sequence space; this puts
//! them back in order, delivers what is contiguous, and answers the DATA_ACK and the one
//! connection-level receive window every subflow advertises.
//!
//! The application is taken to read at once (as the simulator's sinks do): delivered bytes leave
//! the buffer, and the window is the capacity minus what waits out of order. Data beyond the
//! window is refused (the sender must not send it) and counted; data below the DATA_ACK
//! (a reinjection that raced its original) is counted as a duplicate.

use std::collections::BTreeMap;

/// What one arrival did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Bytes now delivered in order to the application (this arrival's and any it released).
    pub delivered_bytes: u64,
    /// The DATA_ACK to send: the next data sequence number expected.
    pub data_ack: u64,
    /// The receive window to advertise, bytes.
    pub window_bytes: u64,
}

/// Counters of a [`DataReceiver`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Bytes delivered in order.
    pub delivered_bytes: u64,
    /// Bytes that arrived out of order and waited.
    pub out_of_order_bytes: u64,
    /// Bytes that arrived again after they were delivered or while they waited.
    pub duplicate_bytes: u64,
    /// Bytes refused because they lay beyond the window.
    pub beyond_window_bytes: u64,
}

/// The receiving end of an MPTCP connection's data stream.
#[derive(Clone, Debug)]
pub struct DataReceiver {
    /// The first data sequence number of the stream. Positions inside are offsets from it,
    /// which grow from 0 and never wrap in a run, though data sequence numbers may (they start
    /// at a random point of the 64-bit space).
    base: u64,
    /// The offset of the next byte expected (the DATA_ACK).
    rcv_nxt: u64,
    capacity_bytes: u64,
    /// Waiting ranges, start -> end (exclusive), disjoint and not touching.
    waiting: BTreeMap<u64, u64>,
    waiting_bytes: u64,
    stats: ReassemblyStats,
}

impl DataReceiver {
    /// A receiver whose peer's initial data sequence number is `peer_idsn` (the first data byte
    /// is `peer_idsn + 1`, RFC 8684 3.3.1), with a buffer of `capacity_bytes`.
    pub fn new(peer_idsn: u64, capacity_bytes: u64) -> Self {
        DataReceiver {
            base: peer_idsn.wrapping_add(1),
            rcv_nxt: 0,
            capacity_bytes,
            waiting: BTreeMap::new(),
            waiting_bytes: 0,
            stats: ReassemblyStats::default(),
        }
    }

    /// The next data sequence number expected.
    pub fn data_ack(&self) -> u64 {
        self.base.wrapping_add(self.rcv_nxt)
    }

    /// The window to advertise: the buffer less what waits out of order.
    pub fn window_bytes(&self) -> u64 {
        self.capacity_bytes - self.waiting_bytes
    }

    /// Counters.
    pub fn stats(&self) -> ReassemblyStats {
        self.stats
    }

    /// `len` bytes mapped to data sequence numbers from `dsn` arrived (on any subflow).
    pub fn on_data(&mut self, dsn: u64, len: u32) -> Received {
        // Offsets from the stream's start; a segment from before it (a wrapped difference) is
        // a duplicate as far as it lies there.
        let rel = dsn.wrapping_sub(self.base) as i64;
        let before = if rel < 0 {
            rel.unsigned_abs().min(u64::from(len))
        } else {
            0
        };
        self.stats.duplicate_bytes += before;
        let start0 = rel.max(0) as u64;
        let (mut start, mut end) = (start0, start0 + u64::from(len) - before);
        // Already delivered: duplicate.
        if start < self.rcv_nxt {
            let dup = end.min(self.rcv_nxt) - start;
            self.stats.duplicate_bytes += dup;
            start = self.rcv_nxt.min(end);
        }
        // Beyond the window: refused.
        let limit = self.rcv_nxt + self.capacity_bytes;
        if end > limit {
            self.stats.beyond_window_bytes += end - limit.max(start);
            end = limit.max(start);
        }
        let mut delivered = 0;
        if start < end {
            if start == self.rcv_nxt {
                delivered = end - start;
                self.rcv_nxt = end;
                // Drop what this covered of the waiting ranges, then release what now follows.
                delivered += self.release();
            } else {
                self.wait(start, end);
            }
        }
        self.stats.delivered_bytes += delivered;
        Received {
            delivered_bytes: delivered,
            data_ack: self.data_ack(),
            window_bytes: self.window_bytes(),
        }
    }

    /// Add [start, end) to the waiting ranges, merging with neighbours; count what was there.
    fn wait(&mut self, start: u64, end: u64) {
        let (mut s, mut e) = (start, end);
        let mut covered = 0;
        let mut absorb = |waiting: &mut BTreeMap<u64, u64>, a: u64, b: u64, s: &mut u64, e: &mut u64| {
            covered += b.min(end).saturating_sub(a.max(start));
            waiting.remove(&a);
            *s = (*s).min(a);
            *e = (*e).max(b);
            b - a
        };
        let mut absorbed = 0;
        // The range starting before s, if it reaches s; then every range starting in [s, e]
        // (e grows as ranges join; the next one starts past it, since ranges never touch).
        if let Some((&a, &b)) = self.waiting.range(..s).next_back() {
            if b >= s {
                absorbed += absorb(&mut self.waiting, a, b, &mut s, &mut e);
            }
        }
        while let Some((&a, &b)) = self.waiting.range(s..=e).next() {
            absorbed += absorb(&mut self.waiting, a, b, &mut s, &mut e);
        }
        self.waiting.insert(s, e);
        self.waiting_bytes = self.waiting_bytes - absorbed + (e - s);
        self.stats.duplicate_bytes += covered;
        self.stats.out_of_order_bytes += end - start - covered;
    }

    /// After `rcv_nxt` advanced: remove waiting ranges it covers, deliver the one that now
    /// starts at it; the bytes released.
    fn release(&mut self) -> u64 {
        let mut released = 0;
        while let Some((&a, &b)) = self.waiting.iter().next() {
            if a > self.rcv_nxt {
                break;
            }
            self.waiting.remove(&a);
            self.waiting_bytes -= b - a;
            if b > self.rcv_nxt {
                released += b - self.rcv_nxt;
                self.stats.duplicate_bytes += self.rcv_nxt - a;
                self.rcv_nxt = b;
            } else {
                self.stats.duplicate_bytes += b - a;
            }
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDSN: u64 = 0x1234_5678_9abc_def0;
    const FIRST: u64 = IDSN + 1;

    #[test]
    fn in_order_data_is_delivered_at_once() {
        let mut r = DataReceiver::new(IDSN, 64_000);
        let got = r.on_data(FIRST, 1448);
        assert_eq!(got.delivered_bytes, 1448);
        assert_eq!(got.data_ack, FIRST + 1448);
        assert_eq!(got.window_bytes, 64_000);
    }

    #[test]
    fn segments_of_two_subflows_are_put_back_in_order() {
        let mut r = DataReceiver::new(IDSN, 64_000);
        // The second subflow's segments (DSNs 2 and 4) overtake the first's (1 and 3).
        let seg = |i: u64| FIRST + i * 1000;
        assert_eq!(r.on_data(seg(1), 1000).delivered_bytes, 0);
        assert_eq!(r.on_data(seg(3), 1000).delivered_bytes, 0);
        assert_eq!(r.window_bytes(), 62_000);
        let got = r.on_data(seg(0), 1000);
        assert_eq!((got.delivered_bytes, got.data_ack), (2000, seg(2)));
        let got = r.on_data(seg(2), 1000);
        assert_eq!((got.delivered_bytes, got.data_ack), (2000, seg(4)));
        assert_eq!(r.window_bytes(), 64_000);
        let s = r.stats();
        assert_eq!(
            (s.delivered_bytes, s.out_of_order_bytes, s.duplicate_bytes),
            (4000, 2000, 0)
        );
    }

    #[test]
    fn reinjected_and_overlapping_data_counts_once() {
        let mut r = DataReceiver::new(IDSN, 64_000);
        r.on_data(FIRST, 1000);
        // A reinjection of delivered data on another subflow.
        assert_eq!(r.on_data(FIRST, 1000).delivered_bytes, 0);
        // Overlapping waiting ranges merge.
        r.on_data(FIRST + 3000, 1000);
        r.on_data(FIRST + 3500, 1000);
        assert_eq!(r.window_bytes(), 64_000 - 1500);
        // A segment that straddles delivered data and the gap.
        let got = r.on_data(FIRST + 500, 3000);
        assert_eq!((got.delivered_bytes, got.data_ack), (3500, FIRST + 4500));
        let s = r.stats();
        assert_eq!(s.delivered_bytes, 4500);
        // 1000 (reinjection) + 500 (overlap of the waiting ranges) + 500 (straddle below
        // rcv_nxt) + 500 (straddle over the waiting range).
        assert_eq!(s.duplicate_bytes, 2500);
    }

    #[test]
    fn data_beyond_the_window_is_refused() {
        let mut r = DataReceiver::new(IDSN, 10_000);
        let got = r.on_data(FIRST + 9_000, 2_000);
        assert_eq!(got.delivered_bytes, 0);
        assert_eq!(r.stats().beyond_window_bytes, 1_000);
        assert_eq!(r.window_bytes(), 9_000);
        let got = r.on_data(FIRST, 9_000);
        assert_eq!((got.delivered_bytes, got.data_ack), (10_000, FIRST + 10_000));
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Segments of a stream arriving in any order, some twice, deliver the stream exactly
        /// once: every byte, the DATA_ACK at its end, nothing left waiting.
        #[test]
        fn any_order_delivers_the_stream_once(
            lens in proptest::collection::vec(1u32..3000, 1..40),
            order in proptest::collection::vec(any::<u32>(), 40),
            dups in proptest::collection::vec(any::<bool>(), 40),
        ) {
            let mut segs = Vec::new();
            let mut dsn = 101u64;
            for &l in &lens {
                segs.push((dsn, l));
                dsn += u64::from(l);
            }
            let total = dsn - 101;
            let mut arrivals: Vec<(u64, u32)> = segs.clone();
            for (i, &d) in dups.iter().enumerate().take(segs.len()) {
                if d {
                    arrivals.push(segs[i]);
                }
            }
            let n = arrivals.len();
            for i in 0..n {
                arrivals.swap(i, order[i % order.len()] as usize % n);
            }
            let mut r = DataReceiver::new(100, total);
            let delivered: u64 = arrivals.iter().map(|&(d, l)| r.on_data(d, l).delivered_bytes).sum();
            prop_assert_eq!(delivered, total);
            prop_assert_eq!(r.data_ack(), dsn);
            prop_assert_eq!(r.window_bytes(), total);
            prop_assert_eq!(r.stats().beyond_window_bytes, 0);
            // Every byte that arrived was delivered once or counted as a duplicate.
            let arrived: u64 = arrivals.iter().map(|&(_, l)| u64::from(l)).sum();
            prop_assert_eq!(r.stats().delivered_bytes + r.stats().duplicate_bytes, arrived);
        }
    }
}
