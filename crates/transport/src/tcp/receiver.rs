//! The receiving side: reassembly, delayed ACKs, the advertised window and ECN echo.

use super::{Segment, TcpConfig};
use crate::TimeNs;
use std::collections::BTreeMap;

/// Counters of a receiver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Data segments received.
    pub segments: u64,
    /// Segments carrying only bytes already received.
    pub duplicate_segments: u64,
    /// Segments that arrived beyond a hole.
    pub out_of_order_segments: u64,
    /// Segments with CE in their IP header.
    pub ce_segments: u64,
    /// ACKs sent.
    pub acks_sent: u64,
}

/// What one arriving segment produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RxOutcome {
    /// Bytes that became deliverable in order.
    pub delivered_bytes: u64,
    /// An ACK to send now.
    pub ack: Option<Segment>,
    /// DCTCP: an ACK to send before [`RxOutcome::ack`], for the segments whose ACK was being
    /// delayed when the CE state changed, echoing the state they arrived with (RFC 8257 3.2,
    /// Linux `dctcp_ece_ack_update`).
    pub prior_ack: Option<Segment>,
}

/// A TCP receiver. The application reads in-order bytes as soon as they are deliverable.
#[derive(Debug)]
pub struct TcpReceiver {
    delayed_ack_ns: u64,
    delayed_ack_segments: u32,
    window_bytes: u64,
    dctcp_echo: bool,
    rcv_nxt: u64,
    /// Out-of-order ranges, start -> end, disjoint and not touching rcv_nxt.
    ooo: BTreeMap<u64, u64>,
    ooo_bytes: u64,
    pending_segments: u32,
    delack_deadline: Option<TimeNs>,
    /// RFC 3168: ECE on every ACK from a CE arrival until a CWR arrives.
    ece_latched: bool,
    /// DCTCP: the CE state of the latest segment, echoed exactly.
    ce_state: bool,
    stats: ReceiverStats,
}

impl TcpReceiver {
    /// A receiver expecting byte 0. With `cfg.cc == Dctcp` it echoes CE per segment (RFC 8257,
    /// 3.2) instead of latching ECE until CWR.
    pub fn new(cfg: &TcpConfig) -> Self {
        TcpReceiver {
            delayed_ack_ns: cfg.delayed_ack_ns,
            delayed_ack_segments: cfg.delayed_ack_segments.max(1),
            window_bytes: cfg.receive_window_bytes,
            dctcp_echo: cfg.cc == crate::cc::CcKind::Dctcp,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            pending_segments: 0,
            delack_deadline: None,
            ece_latched: false,
            ce_state: false,
            stats: ReceiverStats::default(),
        }
    }

    /// Next byte expected (all before it have been delivered).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Bytes held beyond a hole.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    /// When [`TcpReceiver::on_timer`] must next be called.
    pub fn next_timer(&self) -> Option<TimeNs> {
        self.delack_deadline
    }

    fn ack(&mut self) -> Segment {
        self.pending_segments = 0;
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
        Segment {
            seq: 0,
            len: 0,
            ack: self.rcv_nxt,
            window_bytes: self.window_bytes.saturating_sub(self.ooo_bytes),
            ece: if self.dctcp_echo {
                self.ce_state
            } else {
                self.ece_latched
            },
            cwr: false,
            ect: false,
            retransmission: false,
        }
    }

    /// A data segment arrived; `ce` is whether its IP header carried CE.
    pub fn on_segment(&mut self, now: TimeNs, seg: &Segment, ce: bool) -> RxOutcome {
        self.stats.segments += 1;
        let mut immediate = false;
        if seg.cwr {
            self.ece_latched = false;
        }
        if ce {
            self.stats.ce_segments += 1;
            self.ece_latched = true;
        }
        let mut prior_ack = None;
        if self.dctcp_echo && ce != self.ce_state {
            // RFC 8257 3.2: a change of CE state is acknowledged at once; a delayed ACK goes
            // first, with the state its segments arrived with.
            if self.pending_segments > 0 {
                prior_ack = Some(self.ack());
            }
            self.ce_state = ce;
            immediate = true;
        }
        let end = seg.end();
        let before = self.rcv_nxt;
        if end <= self.rcv_nxt {
            self.stats.duplicate_segments += 1;
            immediate = true;
        } else if seg.seq <= self.rcv_nxt {
            let had_holes = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some((&s, &e)) = self.ooo.first_key_value() {
                if s > self.rcv_nxt {
                    break;
                }
                self.ooo.pop_first();
                self.ooo_bytes -= e - s;
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            self.pending_segments += 1;
            // RFC 5681 4.2: fill a hole -> ACK at once; else every second segment or the timer.
            if had_holes || self.pending_segments >= self.delayed_ack_segments || self.delayed_ack_ns == 0 {
                immediate = true;
            } else if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delayed_ack_ns);
            }
        } else {
            self.stats.out_of_order_segments += 1;
            self.insert_ooo(seg.seq, end);
            immediate = true;
        }
        RxOutcome {
            delivered_bytes: self.rcv_nxt - before,
            ack: immediate.then(|| self.ack()),
            prior_ack,
        }
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        // Grow the range that starts at or before `s` if it reaches `s` (the common case: the
        // next segment after a hole extends the last range), else start a new one; then absorb
        // every range that starts inside the result. No allocation per segment.
        let (start, mut end, had) = match self.ooo.range(..=s).next_back() {
            Some((&a, &b)) if b >= s => (a, b.max(e), b - a),
            _ => (s, e, 0),
        };
        while let Some((&a, &b)) = self.ooo.range(start + 1..=end).next() {
            self.ooo.remove(&a);
            self.ooo_bytes -= b - a;
            end = end.max(b);
        }
        self.ooo.insert(start, end);
        self.ooo_bytes += (end - start) - had;
    }

    /// Call at [`TcpReceiver::next_timer`]: the delayed ACK, if due.
    pub fn on_timer(&mut self, now: TimeNs) -> Option<Segment> {
        match self.delack_deadline {
            Some(d) if d <= now => Some(self.ack()),
            _ => None,
        }
    }
}
