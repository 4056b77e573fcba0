//! The connection-level send side of MPTCP (RFC 8684 3.3): each segment a subflow sends is given
//! its place in the connection's 64-bit data sequence space (the DSS mapping it carries), the
//! peer's DATA_ACK frees what it covers, the peer's one receive window bounds what may be
//! outstanding across all subflows, and what a failed subflow had outstanding is handed back
//! for reinjection on another.

use std::collections::VecDeque;

/// One DSS mapping: `len` bytes from data sequence number `dsn`, sent on `subflow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First data sequence number.
    pub dsn: u64,
    /// Length in bytes.
    pub len: u32,
    /// The subflow that carries it.
    pub subflow: usize,
}

impl Mapping {
    /// One past its last data sequence number.
    pub fn end(&self) -> u64 {
        self.dsn.wrapping_add(u64::from(self.len))
    }
}

/// A stretch of consecutive data on one subflow (its first data sequence number follows from
/// its place: runs cover the outstanding data without gaps, in order).
#[derive(Clone, Copy, Debug)]
struct Run {
    len: u32,
    subflow: u32,
}

/// The sending end of an MPTCP connection's data stream.
#[derive(Clone, Debug)]
pub struct DataSender {
    /// The first data sequence number of the stream. Positions inside are offsets from it,
    /// which grow from 0 and never wrap in a run, though data sequence numbers may (they start
    /// at a random point of the 64-bit space).
    base: u64,
    /// Offset of the oldest unacknowledged byte.
    data_una: u64,
    /// Offset of the next new byte.
    snd_nxt: u64,
    /// What is not yet wholly covered by a DATA_ACK, from `front_off` to `snd_nxt` without
    /// gaps: consecutive mappings on one subflow are one run, and a run is 8 bytes, so a
    /// window of a million segments costs megabytes, not tens of them.
    outstanding: VecDeque<Run>,
    /// Offset of the first run's first byte (at or before `data_una`).
    front_off: u64,
    /// The peer's window from its last DATA_ACK, bytes.
    peer_window_bytes: u64,
}

impl DataSender {
    /// A sender whose own initial data sequence number is `idsn` (its first byte is `idsn + 1`),
    /// with the peer's initial window.
    pub fn new(idsn: u64, peer_window_bytes: u64) -> Self {
        DataSender {
            base: idsn.wrapping_add(1),
            data_una: 0,
            snd_nxt: 0,
            outstanding: VecDeque::new(),
            front_off: 0,
            peer_window_bytes,
        }
    }

    /// Oldest unacknowledged data sequence number.
    pub fn data_una(&self) -> u64 {
        self.base.wrapping_add(self.data_una)
    }

    /// Next new data sequence number.
    pub fn snd_nxt(&self) -> u64 {
        self.base.wrapping_add(self.snd_nxt)
    }

    /// New data the peer's window admits now, bytes.
    pub fn window_room_bytes(&self) -> u64 {
        (self.data_una + self.peer_window_bytes).saturating_sub(self.snd_nxt)
    }

    /// Map up to `len` new bytes onto `subflow` (fewer if the window admits fewer): the DSS
    /// mapping the segment carries, or None when the window is closed.
    pub fn map_new(&mut self, len: u32, subflow: usize) -> Option<Mapping> {
        let len = u64::from(len).min(self.window_room_bytes());
        if len == 0 {
            return None;
        }
        let m = Mapping {
            dsn: self.snd_nxt(),
            len: len as u32,
            subflow,
        };
        self.snd_nxt += len;
        match self.outstanding.back_mut() {
            Some(run) if run.subflow as usize == subflow && u64::from(run.len) + len <= u64::from(u32::MAX) => {
                run.len += m.len;
            }
            _ => self.outstanding.push_back(Run {
                len: m.len,
                subflow: subflow as u32,
            }),
        }
        Some(m)
    }

    /// A DATA_ACK of `data_ack` with the peer's window: the bytes it newly acknowledges.
    /// An acknowledgement of data never sent is ignored (0).
    pub fn on_data_ack(&mut self, data_ack: u64, window_bytes: u64) -> u64 {
        let ack = data_ack.wrapping_sub(self.base);
        if (ack as i64) < 0 || ack > self.snd_nxt {
            // Before the stream (a wrapped difference), or beyond what was sent.
            return 0;
        }
        self.peer_window_bytes = window_bytes;
        if ack <= self.data_una {
            return 0;
        }
        let acked = ack - self.data_una;
        self.data_una = ack;
        // Runs wholly covered go (reinjection changes only their carrier).
        while let Some(r) = self.outstanding.front() {
            let end = self.front_off + u64::from(r.len);
            if end > ack {
                break;
            }
            self.front_off = end;
            self.outstanding.pop_front();
        }
        crate::release_burst_room(&mut self.outstanding);
        acked
    }

    /// The oldest run with what the peer has already acknowledged cut off its front.
    fn trim_front(&mut self) {
        if let Some(r) = self.outstanding.front_mut() {
            let acked = self.data_una - self.front_off;
            if acked > 0 {
                r.len -= acked as u32;
                self.front_off = self.data_una;
            }
        }
    }

    /// Subflow `subflow` failed: its mappings not yet acknowledged at the data level, to send
    /// again on others (RFC 8684 3.3.6). They stay outstanding, now with `to` as carrier.
    pub fn reinject(&mut self, subflow: usize, to: usize) -> Vec<Mapping> {
        self.trim_front();
        let mut again = Vec::new();
        let mut off = self.front_off;
        for r in self.outstanding.iter_mut() {
            if r.subflow as usize == subflow {
                r.subflow = to as u32;
                again.push(Mapping {
                    dsn: self.base.wrapping_add(off),
                    len: r.len,
                    subflow: to,
                });
            }
            off += u64::from(r.len);
        }
        again
    }

    /// Subflow `subflow` timed out: if the oldest run not acknowledged at the data level is one
    /// it carries (what holds the peer's in-order delivery), its unacknowledged part goes to
    /// `to` now; that part, to send again there.
    pub fn reinject_first(&mut self, subflow: usize, to: usize) -> Option<Mapping> {
        self.trim_front();
        let r = self.outstanding.front_mut().filter(|r| r.subflow as usize == subflow)?;
        r.subflow = to as u32;
        Some(Mapping {
            dsn: self.base.wrapping_add(self.front_off),
            len: r.len,
            subflow: to,
        })
    }

    /// Runs of mappings outstanding (sent, not wholly acknowledged at the data level), each on
    /// one subflow, in data sequence order.
    pub fn outstanding(&self) -> impl Iterator<Item = Mapping> + '_ {
        let mut off = self.front_off;
        self.outstanding.iter().map(move |r| {
            let m = Mapping {
                dsn: self.base.wrapping_add(off),
                len: r.len,
                subflow: r.subflow as usize,
            };
            off += u64::from(r.len);
            m
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDSN: u64 = 1_000;

    #[test]
    fn segments_on_two_subflows_take_consecutive_data_sequence_numbers() {
        let mut s = DataSender::new(IDSN, 100_000);
        let a = s.map_new(1448, 0).unwrap();
        let b = s.map_new(1448, 1).unwrap();
        assert_eq!((a.dsn, b.dsn), (IDSN + 1, IDSN + 1 + 1448));
        assert_eq!(s.snd_nxt(), IDSN + 1 + 2 * 1448);
        assert_eq!(s.outstanding().count(), 2);
        // The next on subflow 1 extends its run.
        s.map_new(1448, 1).unwrap();
        let runs: Vec<(u64, u32, usize)> = s.outstanding().map(|m| (m.dsn, m.len, m.subflow)).collect();
        assert_eq!(runs, vec![(IDSN + 1, 1448, 0), (IDSN + 1 + 1448, 2 * 1448, 1)]);
    }

    #[test]
    fn a_partly_acknowledged_run_is_reinjected_from_the_data_ack() {
        let mut s = DataSender::new(IDSN, 100_000);
        for _ in 0..4 {
            s.map_new(1000, 1).unwrap();
        }
        s.on_data_ack(IDSN + 1 + 1500, 100_000);
        let again = s.reinject_first(1, 0).unwrap();
        assert_eq!((again.dsn, again.len, again.subflow), (IDSN + 1 + 1500, 2500, 0));
    }

    #[test]
    fn the_data_ack_frees_what_it_covers_and_moves_the_window() {
        let mut s = DataSender::new(IDSN, 4_000);
        s.map_new(1_500, 0).unwrap();
        s.map_new(1_500, 1).unwrap();
        // The window admits 1 000 more bytes, not 1 500.
        assert_eq!(s.map_new(1_500, 0).unwrap().len, 1_000);
        assert_eq!(s.map_new(1, 1), None);
        // Acknowledging the first mapping opens the window by as much.
        assert_eq!(s.on_data_ack(IDSN + 1 + 1_500, 4_000), 1_500);
        assert_eq!(s.window_room_bytes(), 1_500);
        assert_eq!(s.outstanding().count(), 2);
        // Old, repeated and impossible acknowledgements change nothing.
        assert_eq!(s.on_data_ack(IDSN + 1, 4_000), 0);
        assert_eq!(s.on_data_ack(s.snd_nxt() + 1, 9_999), 0);
        assert_eq!(s.window_room_bytes(), 1_500);
    }

    #[test]
    fn data_sequence_numbers_wrap_around_the_64_bit_space() {
        let mut s = DataSender::new(u64::MAX - 1_000, 100_000);
        let a = s.map_new(1_000, 0).unwrap();
        let b = s.map_new(1_000, 0).unwrap();
        assert_eq!((a.dsn, b.dsn), (u64::MAX - 999, 0));
        assert_eq!(b.end(), 1_000);
        let mut r = super::super::reassembly::DataReceiver::new(u64::MAX - 1_000, 100_000);
        assert_eq!(r.on_data(b.dsn, b.len).delivered_bytes, 0);
        let got = r.on_data(a.dsn, a.len);
        assert_eq!((got.delivered_bytes, got.data_ack), (2_000, 1_000));
        // A segment from before the stream's start is a duplicate.
        assert_eq!(r.on_data(u64::MAX - 1_500, 100).delivered_bytes, 0);
        assert_eq!(s.on_data_ack(got.data_ack, 100_000), 2_000);
        assert_eq!(s.outstanding().count(), 0);
        assert_eq!(s.on_data_ack(u64::MAX - 5_000, 100_000), 0);
    }

    #[test]
    fn a_timed_out_subflow_gives_up_only_the_mapping_that_holds_delivery() {
        let mut tx = DataSender::new(IDSN, 1 << 20);
        let first = tx.map_new(1000, 1).unwrap();
        tx.map_new(1000, 0).unwrap();
        tx.map_new(1000, 1).unwrap();
        assert_eq!(tx.reinject_first(0, 1), None, "subflow 0 does not hold the oldest");
        let again = tx.reinject_first(1, 0).unwrap();
        assert_eq!((again.dsn, again.subflow), (first.dsn, 0));
        assert_eq!(tx.reinject_first(1, 0), None, "it is subflow 0's now");
        assert_eq!(tx.outstanding().filter(|m| m.subflow == 1).count(), 1);
    }

    #[test]
    fn a_failed_subflows_outstanding_data_is_reinjected() {
        let mut s = DataSender::new(IDSN, 100_000);
        let a = s.map_new(1_000, 0).unwrap();
        s.map_new(1_000, 1).unwrap();
        let c = s.map_new(1_000, 0).unwrap();
        let again = s.reinject(0, 1);
        assert_eq!(again.iter().map(|m| m.dsn).collect::<Vec<_>>(), [a.dsn, c.dsn]);
        assert!(s.outstanding().all(|m| m.subflow == 1));
        // The data level acknowledges it once, whichever subflow delivered it.
        assert_eq!(s.on_data_ack(c.end(), 100_000), 3_000);
        assert_eq!(s.outstanding().count(), 0);
    }
}
