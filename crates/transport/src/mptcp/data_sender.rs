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
    /// Mappings not yet wholly covered by a DATA_ACK, in data sequence order.
    outstanding: VecDeque<Mapping>,
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
        self.outstanding.push_back(m);
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
        // Mappings are kept in data sequence order (reinjection changes only their carrier).
        while let Some(m) = self.outstanding.front() {
            if m.end().wrapping_sub(self.base) > ack {
                break;
            }
            self.outstanding.pop_front();
        }
        acked
    }

    /// Subflow `subflow` failed: its mappings not yet acknowledged at the data level, to send
    /// again on others (RFC 8684 3.3.6). They stay outstanding, now with `to` as carrier.
    pub fn reinject(&mut self, subflow: usize, to: usize) -> Vec<Mapping> {
        let mut again = Vec::new();
        for m in self.outstanding.iter_mut().filter(|m| m.subflow == subflow) {
            m.subflow = to;
            again.push(*m);
        }
        again
    }

    /// Subflow `subflow` timed out: if the oldest mapping not acknowledged at the data level is
    /// one it carries (the one holding the peer's in-order delivery), it goes to `to` now; that
    /// mapping, to send again there.
    pub fn reinject_first(&mut self, subflow: usize, to: usize) -> Option<Mapping> {
        let m = self.outstanding.front_mut().filter(|m| m.subflow == subflow)?;
        m.subflow = to;
        Some(*m)
    }

    /// Mappings outstanding (sent, not acknowledged at the data level).
    pub fn outstanding(&self) -> impl Iterator<Item = &Mapping> {
        self.outstanding.iter()
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
