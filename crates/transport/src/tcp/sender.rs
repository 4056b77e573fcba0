//! The sending side: windows, loss recovery and the retransmission timer.

use super::{Segment, TcpConfig};
use crate::cc::{AckEvent, CongestionControl, CongestionSignal, SubflowView};
use crate::rtt::RttEstimator;
use crate::TimeNs;
use std::collections::VecDeque;

/// Largest RTO backoff exponent.
const MAX_BACKOFF: u32 = 10;

/// Counters of a sender.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Segments that repeated bytes sent before.
    pub retransmitted_segments: u64,
    /// Fast retransmits (entries into loss recovery).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Window reductions on ECN-Echo.
    pub ecn_reductions: u64,
}

/// A segment sent for the first time: where it ends, when it left, and whether it has been
/// sent again since (Karn), the flag in the time's top bit. 16 bytes, not 24: a sender in a
/// long recovery at 100 Gbit/s holds millions of them (one per segment sent until an RTO).
#[derive(Clone, Copy, Debug)]
struct SentRecord {
    end: u64,
    sent_ns_and_retransmitted: u64,
}

impl SentRecord {
    const RETRANSMITTED: u64 = 1 << 63;

    fn new(end: u64, sent_ns: TimeNs) -> SentRecord {
        debug_assert!(sent_ns < Self::RETRANSMITTED, "2^63 ns is 292 years");
        SentRecord {
            end,
            sent_ns_and_retransmitted: sent_ns,
        }
    }

    fn sent_ns(self) -> TimeNs {
        self.sent_ns_and_retransmitted & !Self::RETRANSMITTED
    }

    fn retransmitted(self) -> bool {
        self.sent_ns_and_retransmitted & Self::RETRANSMITTED != 0
    }

    fn mark_retransmitted(&mut self) {
        self.sent_ns_and_retransmitted |= Self::RETRANSMITTED;
    }
}

const _: () = assert!(std::mem::size_of::<SentRecord>() == 16);

/// Records of sent segments a sender keeps room for while nothing is outstanding.
const IDLE_SENT_CAPACITY: usize = 64;

/// A TCP sender: the application writes bytes, [`TcpSender::poll_transmit`] hands out segments,
/// ACKs and timer expiries come back in.
#[derive(Debug)]
pub struct TcpSender {
    cfg: TcpConfig,
    cc: Box<dyn CongestionControl>,
    rtt: RttEstimator,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    written: u64,
    /// End of the last segment sent shorter than the MSS (Minshall's Nagle: another short one
    /// waits only while this is unacknowledged).
    snd_sml: u64,
    /// The application will write nothing more ([`TcpSender::close`]).
    closed: bool,
    peer_window: u64,
    dupacks: u32,
    in_recovery: bool,
    /// NewReno's recovery point: snd_max when recovery (or the RTO) began.
    recover: Option<u64>,
    retransmit_next: bool,
    rto_deadline: Option<TimeNs>,
    backoff: u32,
    sent: VecDeque<SentRecord>,
    /// Stream offsets where a segment must end, ascending: the starts of records written with
    /// [`TcpSender::write_record`] (an MPTCP subflow's mappings, which a segment may not
    /// straddle, as Linux keeps one mapping per skb).
    boundaries: VecDeque<u64>,
    cwr_pending: bool,
    /// No ECN reduction until snd_una passes this (one per round trip).
    ecn_hold_until: Option<u64>,
    /// End of the current observation window (DCTCP, cwnd-limited tracking).
    window_end: u64,
    cwnd_limited_now: bool,
    cwnd_limited_prev: bool,
    max_flight: u64,
    stats: SenderStats,
}

impl TcpSender {
    /// A sender with nothing written yet.
    pub fn new(cfg: TcpConfig) -> Self {
        let cc = cfg.cc.build(cfg.mss_bytes, cfg.initial_window_segments);
        Self::with_controller(cfg, cc)
    }

    /// A sender with a controller of the caller's choosing (a coupled one, say).
    pub fn with_controller(cfg: TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        TcpSender {
            rtt: RttEstimator::new(cfg.min_rto_ns),
            peer_window: cfg.receive_window_bytes,
            cfg,
            cc,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            written: 0,
            snd_sml: 0,
            closed: false,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            retransmit_next: false,
            rto_deadline: None,
            backoff: 0,
            sent: VecDeque::new(),
            boundaries: VecDeque::new(),
            cwr_pending: false,
            ecn_hold_until: None,
            window_end: 0,
            cwnd_limited_now: false,
            cwnd_limited_prev: false,
            max_flight: 0,
            stats: SenderStats::default(),
        }
    }

    /// The application hands over `bytes` more bytes to send.
    pub fn write(&mut self, bytes: u64) {
        self.written = self.written.saturating_add(bytes);
    }

    /// The application hands over `bytes` more bytes as a record of their own: no segment
    /// will carry bytes of both this record and what was written before it (an MPTCP mapping).
    pub fn write_record(&mut self, bytes: u64) {
        if self.written > 0 && self.boundaries.back() != Some(&self.written) {
            self.boundaries.push_back(self.written);
        }
        self.write(bytes);
    }

    /// `len` bytes from `seq`, cut at the first record boundary after `seq`.
    fn within_record(&self, seq: u64, len: u64) -> u64 {
        // Boundaries ascend: a binary search, as an MPTCP subflow holds one per mapping in flight.
        let i = self.boundaries.partition_point(|&b| b <= seq);
        match self.boundaries.get(i) {
            Some(&b) if b < seq + len => b - seq,
            _ => len,
        }
    }

    /// The application stops: bytes written but never sent are discarded (iperf3 at the end of
    /// `-t`); what was sent is still delivered.
    pub fn discard_unsent(&mut self) {
        self.written = self.written.min(self.snd_max.max(self.snd_una));
    }

    /// The application will write nothing more: once everything is acknowledged the sender
    /// keeps no room for records of sent segments.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Bytes the application has written.
    pub fn written_bytes(&self) -> u64 {
        self.written
    }

    /// Bytes written and not yet acknowledged: what `SIOCOUTQ` reports on Linux.
    pub fn unacked_bytes(&self) -> u64 {
        self.written - self.snd_una
    }

    /// Bytes written and not yet sent.
    pub fn unsent_bytes(&self) -> u64 {
        self.written - self.snd_nxt.max(self.snd_una)
    }

    /// Bytes sent and not acknowledged.
    pub fn in_flight_bytes(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// Bytes acknowledged so far.
    pub fn acked_bytes(&self) -> u64 {
        self.snd_una
    }

    /// Congestion window in bytes.
    pub fn cwnd_bytes(&self) -> u64 {
        self.cc.window_bytes()
    }

    /// The window a coupled controller counts for this subflow (its siblings' `cwnd_i`, RFC 6356):
    /// the congestion window, or in fast recovery the slow-start threshold the window returns
    /// to. RFC 6582's inflation by a segment per duplicate ACK keeps the ACK clock going; it is
    /// no measure of the path (Linux does not inflate, and htsim's coupled controllers count
    /// `ssthresh` in recovery). Counted inflated, a subflow in recovery at 100 Gbit/s (tens of
    /// MB of window) froze every sibling's increase.
    pub fn coupling_window_bytes(&self) -> u64 {
        if self.in_recovery {
            self.cc.ssthresh_bytes()
        } else {
            self.cc.window_bytes()
        }
    }

    /// Slow-start threshold in bytes.
    pub fn ssthresh_bytes(&self) -> u64 {
        self.cc.ssthresh_bytes()
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The controller.
    pub fn controller(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// Whether loss recovery is under way.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// When [`TcpSender::on_timer`] must next be called.
    pub fn next_timer(&self) -> Option<TimeNs> {
        self.rto_deadline
    }

    fn arm_rto(&mut self, now: TimeNs) {
        let rto = self.rtt.rto_ns().saturating_mul(1 << self.backoff.min(MAX_BACKOFF));
        self.rto_deadline = Some(now + rto.min(crate::rtt::MAX_RTO_NS));
    }

    /// The next segment the windows, Nagle and the data written allow, if any.
    pub fn poll_transmit(&mut self, now: TimeNs) -> Option<Segment> {
        let mss = u64::from(self.cfg.mss_bytes);
        if self.retransmit_next {
            self.retransmit_next = false;
            let len = self.within_record(self.snd_una, mss.min(self.snd_max - self.snd_una));
            if len > 0 {
                for r in self.sent.iter_mut().filter(|r| r.end > self.snd_una) {
                    r.mark_retransmitted();
                    if r.end >= self.snd_una + len {
                        break;
                    }
                }
                return Some(self.emit(now, self.snd_una, len as u32, true));
            }
        }
        let window = self.cc.window_bytes().min(self.peer_window);
        let avail = self.written.saturating_sub(self.snd_nxt);
        if avail == 0 {
            return None;
        }
        let len = self.within_record(self.snd_nxt, mss.min(avail));
        let in_flight = self.snd_nxt - self.snd_una;
        if in_flight + len > window {
            self.cwnd_limited_now = true;
            return None;
        }
        // Nagle as Linux does it (Minshall's variant, `tcp_minshall_check`): a short segment
        // waits only while an earlier short one is sent and unacknowledged, so a transfer's
        // last partial segment goes out behind full ones at once instead of waiting for their
        // (delayed) ACK. After going back (an RTO), the short one is not out any more.
        let short_out = self.snd_una < self.snd_sml && self.snd_sml <= self.snd_nxt;
        if len < mss && !self.cfg.nodelay && short_out {
            return None;
        }
        let seq = self.snd_nxt;
        let retx = seq < self.snd_max;
        self.snd_nxt += len;
        if len < mss {
            self.snd_sml = self.snd_nxt;
        }
        self.snd_max = self.snd_max.max(self.snd_nxt);
        self.max_flight = self.max_flight.max(self.snd_nxt - self.snd_una);
        if !retx {
            self.sent.push_back(SentRecord::new(self.snd_nxt, now));
        }
        Some(self.emit(now, seq, len as u32, retx))
    }

    fn emit(&mut self, now: TimeNs, seq: u64, len: u32, retx: bool) -> Segment {
        if self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        if retx {
            self.stats.retransmitted_segments += 1;
        }
        // RFC 3168 6.1.5: no ECT on retransmissions; CWR rides on the next new data.
        let ect = self.cfg.ecn && !retx;
        let cwr = ect && std::mem::take(&mut self.cwr_pending);
        Segment {
            seq,
            len,
            ack: 0,
            window_bytes: 0,
            ece: false,
            cwr,
            ect,
            retransmission: retx,
        }
    }

    /// Room kept for records of sent segments (tests of the memory a finished transfer holds).
    #[cfg(test)]
    pub(crate) fn sent_capacity(&self) -> usize {
        self.sent.capacity()
    }

    /// An ACK arrived.
    #[inline]
    pub fn on_ack(&mut self, now: TimeNs, seg: &Segment) {
        self.on_ack_coupled(now, seg, &[], 0);
    }

    /// An ACK arrived for subflow `subflow` of a multipath connection whose subflows are
    /// `subflows` (as seen now): the controller may couple their windows.
    #[inline(always)]
    pub fn on_ack_coupled(&mut self, now: TimeNs, seg: &Segment, subflows: &[SubflowView], subflow: usize) {
        let mss = u64::from(self.cfg.mss_bytes);
        let ack = seg.ack;
        if ack > self.snd_max {
            return;
        }
        self.peer_window = seg.window_bytes;
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            // RTT from the newest segment this ACK covers, unless the ACK covers a retransmitted
            // segment: then it may have been sent by the retransmission filling a hole (Karn).
            let mut newest = None;
            let mut ambiguous = false;
            let mut start = self.snd_una;
            while let Some(&r) = self.sent.front() {
                // Any retransmitted record this ACK reaches into, fully or in part.
                ambiguous |= r.retransmitted() && ack > start;
                if r.end > ack {
                    break;
                }
                start = r.end;
                newest = self.sent.pop_front();
            }
            if let Some(r) = newest.filter(|_| !ambiguous) {
                self.rtt.on_sample(now - r.sent_ns());
            }
            crate::release_burst_room(&mut self.sent);
            while self.boundaries.front().is_some_and(|&b| b <= ack) {
                self.boundaries.pop_front();
            }
            let window_end = ack >= self.window_end;
            if window_end {
                self.cwnd_limited_prev = self.cwnd_limited_now;
                self.cwnd_limited_now = false;
            }
            self.cc.on_ecn_ack(acked, seg.ece && self.cfg.ecn, window_end);
            let flight_before = self.snd_nxt.max(ack) - self.snd_una;
            self.snd_una = ack;
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            if self.in_recovery {
                if self.recover.is_some_and(|r| ack >= r) {
                    // Full acknowledgement (RFC 6582 3.2, step 3, option 1).
                    let flight = self.snd_max - ack;
                    let w = self.cc.ssthresh_bytes().min(flight.max(mss) + mss);
                    self.cc.set_window(w);
                    self.in_recovery = false;
                    self.dupacks = 0;
                } else {
                    // Partial acknowledgement: retransmit the next hole, deflate. Every one
                    // re-arms the RTO, as Linux without SACK does (RFC 6582's Slow-but-Steady):
                    // the Impatient variant's RTO fired in slow-start overshoots with many holes
                    // and cost the validated dumbbell a third of its goodput to go-back-N.
                    self.retransmit_next = true;
                    let w = self.cc.window_bytes().saturating_sub(acked) + if acked >= mss { mss } else { 0 };
                    self.cc.set_window(w);
                }
            } else {
                self.dupacks = 0;
                let ss = self.cc.window_bytes() < self.cc.ssthresh_bytes();
                let limited = self.cwnd_limited_now
                    || self.cwnd_limited_prev
                    || (ss && self.cc.window_bytes() < 2 * self.max_flight)
                    || flight_before + mss >= self.cc.window_bytes();
                let counted = self
                    .cfg
                    .abc_limit_segments
                    .map_or(acked, |l| acked.min(u64::from(l) * mss));
                self.cc.on_ack(&AckEvent {
                    now_ns: now,
                    acked_bytes: counted,
                    cwnd_limited: limited,
                    srtt_ns: self.rtt.srtt_ns().unwrap_or(0),
                    min_rtt_ns: if self.rtt.min_rtt_ns() == u64::MAX {
                        0
                    } else {
                        self.rtt.min_rtt_ns()
                    },
                    subflows,
                    subflow,
                });
            }
            if window_end {
                self.window_end = self.snd_nxt;
                self.max_flight = self.snd_nxt - self.snd_una;
            }
            self.backoff = 0;
            if self.snd_una == self.snd_max {
                self.rto_deadline = None;
                // A finished transfer gives back what its window grew the record of sent
                // segments to (held to the end of the run, that was most of the memory at
                // data-centre scale). Only when the application has closed: a sender that
                // merely idles (a tunnel's subflow) would reallocate it at every burst.
                if self.closed && self.snd_una >= self.written && self.sent.capacity() > IDLE_SENT_CAPACITY {
                    self.sent = VecDeque::new();
                }
            } else {
                self.arm_rto(now);
            }
        } else if ack == self.snd_una && seg.len == 0 && self.snd_max > self.snd_una {
            self.dupacks += 1;
            if self.in_recovery {
                let w = self.cc.window_bytes() + mss;
                self.cc.set_window(w);
            } else if self.dupacks == self.cfg.dupack_threshold && self.recover.is_none_or(|r| ack >= r) {
                self.recover = Some(self.snd_max);
                let flight = self.snd_nxt - self.snd_una;
                self.cc.on_congestion(now, CongestionSignal::Loss, flight);
                let w = self.cc.ssthresh_bytes() + u64::from(self.cfg.dupack_threshold) * mss;
                self.cc.set_window(w);
                self.in_recovery = true;
                self.retransmit_next = true;
                self.stats.fast_retransmits += 1;
                // The loss response counts as this round trip's reduction.
                self.ecn_hold_until = Some(self.snd_max);
            }
        }
        if self.cfg.ecn
            && seg.ece
            && !self.in_recovery
            && self.ecn_hold_until.is_none_or(|h| self.snd_una > h)
            && self.snd_max > 0
        {
            let flight = self.snd_nxt - self.snd_una;
            self.cc.on_congestion(now, CongestionSignal::Ecn, flight);
            self.ecn_hold_until = Some(self.snd_max);
            self.cwr_pending = true;
            self.stats.ecn_reductions += 1;
        }
    }

    /// Call at [`TcpSender::next_timer`]: on expiry, the RTO fires (go back to the first
    /// unacknowledged byte with a window of one segment, back off the timer).
    pub fn on_timer(&mut self, now: TimeNs) {
        match self.rto_deadline {
            Some(d) if d <= now => {}
            _ => return,
        }
        self.rto_deadline = None;
        if self.snd_una == self.snd_max {
            return;
        }
        let flight = self.snd_nxt - self.snd_una;
        self.cc.on_rto(now, flight);
        self.stats.rtos += 1;
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
        self.snd_nxt = self.snd_una;
        self.recover = Some(self.snd_max);
        self.in_recovery = false;
        self.retransmit_next = false;
        self.dupacks = 0;
        self.sent.clear();
        crate::release_burst_room(&mut self.sent);
        self.window_end = self.snd_max;
        self.arm_rto(now);
    }
}
