//! One path of a tunnel, seen from each end: what the sender knows of it (sequence numbers,
//! RTT, minimum RTT, in-flight, loss, liveness) and what the receiver acknowledges.
//!
//! The sender numbers every message it sends on a path (data and keepalives). The receiver
//! acknowledges the highest number received, with the count received and the echoed send time
//! ([`crate::wire::Ack`]), at least every [`PathConfig::ack_every`] messages and at most
//! [`PathConfig::ack_delay_max_ns`] after a message arrived. From acknowledgements the sender
//! takes an RTT sample (smoothed as RFC 6298 does, and its minimum), in-flight (highest sent
//! minus highest acknowledged) and a loss estimate (numbers below the highest that never
//! arrived). A path with messages in flight and no acknowledgement for
//! [`PathConfig::dead_after_ns`] is down; any acknowledgement brings it back up. An idle path is
//! sent a keepalive every [`PathConfig::keepalive_ns`], so liveness is known before traffic
//! needs the path.

use crate::wire::{extend_seq, Ack};
use mpsched_core::tunnel::AckSample;

/// Timing of acknowledgements, keepalives and liveness (the same at both ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathConfig {
    /// Acknowledge after this many messages (at least 1).
    pub ack_every: u32,
    /// Acknowledge at most this long after a message arrived, ns.
    pub ack_delay_max_ns: u64,
    /// Send a keepalive on a path that sent nothing for this long, ns.
    pub keepalive_ns: u64,
    /// A path with messages in flight and no acknowledgement for this long is down, ns.
    pub dead_after_ns: u64,
}

impl Default for PathConfig {
    /// Acks every 2 messages or 5 ms; keepalives every 200 ms; down after 600 ms of silence
    /// (three keepalives).
    fn default() -> Self {
        PathConfig {
            ack_every: 2,
            ack_delay_max_ns: 5_000_000,
            keepalive_ns: 200_000_000,
            dead_after_ns: 600_000_000,
        }
    }
}

/// A send time on the wire: microseconds, wrapping.
pub fn wire_us(now_ns: u64) -> u32 {
    (now_ns / 1_000) as u32
}

/// What a path's sender knows, for schedulers and counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PathView {
    /// Whether the path is up (acknowledged recently, or nothing outstanding).
    pub up: bool,
    /// Smoothed RTT, ns (0 before the first sample).
    pub srtt_ns: u64,
    /// Minimum RTT sampled, ns (0 before the first sample).
    pub min_rtt_ns: u64,
    /// Latest RTT sample, ns.
    pub latest_rtt_ns: u64,
    /// Messages sent and not yet acknowledged (highest sent minus highest acknowledged).
    pub in_flight: u64,
    /// Messages sent in all.
    pub sent: u64,
    /// Messages the receiver reported received in all.
    pub acked: u64,
    /// Messages below the highest acknowledged that the receiver never received.
    pub lost: u64,
    /// Times the path went down.
    pub downs: u64,
    /// Bytes of data in flight: the sizes of the messages in flight (with [`SENT_SIZES`] or
    /// more in flight, their number times the mean size).
    pub in_flight_bytes: u64,
    /// Delivery rate, bytes per second: the largest of the recent samples (0 before one).
    pub delivery_rate_bytes_per_s: u64,
}

/// Delivery-rate samples a path keeps (the largest is its rate, as BBR's max filter).
const RATE_SAMPLES: usize = 8;
/// The shortest interval a delivery-rate sample spans, ns (longer than a token-bucket burst at
/// the rates the tunnel bonds; a path's minimum RTT when that is longer).
const RATE_WINDOW_MIN_NS: u64 = 20_000_000;
/// Most messages whose sizes a path remembers, to count its bytes in flight exactly (64 KiB
/// a path at most: the memory grows with the most a path had in flight, from
/// [`SENT_SIZES_MIN`]; with this many or more in flight, the bytes are their number times the
/// mean size).
pub const SENT_SIZES: usize = 8192;
/// The sizes remembered at first.
pub const SENT_SIZES_MIN: usize = 64;

/// A path's delivery rate, measured from its acknowledgements (what BBR's estimator does with
/// TCP's): bytes acknowledged over an interval of at least a minimum RTT. Only a sample taken
/// while a queue stood on the path (its latest RTT above the minimum by an eighth, and 1 ms)
/// measures the path rather than what it was given; a sample of a path that was not queued
/// counts only if it raises a rate already measured. A path never queued has no rate (0).
#[derive(Clone, Debug, Default)]
struct DeliveryRate {
    /// Data bytes sent in all.
    sent_bytes: u64,
    /// Data bytes sent up to and including message `s`, at `s % len` (empty until the first
    /// data message; a power of two from [`SENT_SIZES_MIN`] to [`SENT_SIZES`] long).
    sent_through: Vec<u64>,
    /// Mean bytes per message, times 16 (an average over about the last 16 messages).
    mean_bytes_x16: u64,
    /// Where the current sample started: when, and bytes delivered by then.
    window: Option<(u64, u64)>,
    samples: [u64; RATE_SAMPLES],
    next_sample: usize,
}

/// How far above the minimum RTT the latest must be for a path to count as queued, ns: an
/// eighth of the minimum, and at least this.
const QUEUED_MIN_NS: u64 = 1_000_000;

impl DeliveryRate {
    /// Message `seq` of `bytes` data bytes left, the oldest unacknowledged being `first`.
    fn on_send(&mut self, seq: u64, bytes: u64, first: u64) {
        self.sent_bytes = self.sent_bytes.saturating_add(bytes);
        self.mean_bytes_x16 = self.mean_bytes_x16 - self.mean_bytes_x16 / 16 + bytes;
        if bytes > 0 && self.sent_through.is_empty() {
            self.sent_through = vec![0; SENT_SIZES_MIN];
        }
        let len = self.sent_through.len();
        if len == 0 {
            return;
        }
        if seq.saturating_sub(first) >= len as u64 - 1 && len < SENT_SIZES {
            self.grow(seq);
        }
        let len = self.sent_through.len() as u64;
        self.sent_through[(seq % len) as usize] = self.sent_bytes;
    }

    /// Twice the sizes remembered, the latest `len` (up to `next`, not included) kept.
    fn grow(&mut self, next: u64) {
        let old = std::mem::take(&mut self.sent_through);
        let (len, new_len) = (old.len() as u64, old.len() as u64 * 2);
        self.sent_through = vec![0; new_len as usize];
        for s in next.saturating_sub(len)..next {
            self.sent_through[(s % new_len) as usize] = old[(s % len) as usize];
        }
    }

    /// Data bytes of the messages from `first` up to `next` (not included).
    fn in_flight_bytes(&self, first: u64, next: u64) -> u64 {
        let msgs = next.saturating_sub(first);
        let len = self.sent_through.len() as u64;
        if msgs == 0 {
            return 0;
        }
        if first == 0 {
            return self.sent_bytes;
        }
        if msgs < len {
            let before = self.sent_through[((first - 1) % len) as usize];
            return self.sent_bytes.saturating_sub(before);
        }
        msgs.saturating_mul(self.mean_bytes_x16 / 16).min(self.sent_bytes)
    }

    fn rate(&self) -> u64 {
        self.samples.iter().copied().max().unwrap_or(0)
    }

    /// An acknowledgement at `now_ns` left the messages from `first` to `next` in flight;
    /// the path's latest and minimum RTT.
    fn on_ack(&mut self, (first, next): (u64, u64), latest_rtt_ns: u64, min_rtt_ns: u64, now_ns: u64) {
        let delivered = self.sent_bytes - self.in_flight_bytes(first, next).min(self.sent_bytes);
        let Some((t0, d0)) = self.window else {
            self.window = Some((now_ns, delivered));
            return;
        };
        let span = now_ns.saturating_sub(t0);
        if span < RATE_WINDOW_MIN_NS.max(min_rtt_ns) {
            return;
        }
        self.window = Some((now_ns, delivered));
        let sample = (u128::from(delivered.saturating_sub(d0)) * 1_000_000_000 / u128::from(span)) as u64;
        let queued = latest_rtt_ns >= min_rtt_ns + (min_rtt_ns / 8).max(QUEUED_MIN_NS);
        let rate = self.rate();
        if queued || (rate > 0 && sample > rate) {
            self.samples[self.next_sample] = sample;
            self.next_sample = (self.next_sample + 1) % RATE_SAMPLES;
        }
    }
}

/// The sending side of one path.
#[derive(Clone, Debug)]
pub struct PathSender {
    cfg: PathConfig,
    /// Number of the next message (64-bit; the wire carries the low 32 bits).
    next_seq: u64,
    /// Highest number acknowledged, if any.
    highest_acked: Option<u64>,
    /// Send time of the oldest message not yet acknowledged, ns.
    oldest_unacked_ns: Option<u64>,
    last_send_ns: u64,
    last_ack_ns: u64,
    srtt_ns: u64,
    rttvar_ns: u64,
    min_rtt_ns: u64,
    latest_rtt_ns: u64,
    received: u64,
    lost: u64,
    /// Messages numbered below this went to an earlier session of the peer, whose counts its
    /// acknowledgements no longer include.
    count_base: u64,
    up: bool,
    downs: u64,
    rate: DeliveryRate,
}

impl PathSender {
    /// A path that has sent nothing, up until proven otherwise.
    pub fn new(cfg: PathConfig) -> Self {
        PathSender {
            cfg,
            next_seq: 0,
            highest_acked: None,
            oldest_unacked_ns: None,
            last_send_ns: 0,
            last_ack_ns: 0,
            srtt_ns: 0,
            rttvar_ns: 0,
            min_rtt_ns: 0,
            latest_rtt_ns: 0,
            received: 0,
            lost: 0,
            count_base: 0,
            up: true,
            downs: 0,
            rate: DeliveryRate::default(),
        }
    }

    /// The peer restarted (a new session): its receiver counts from nothing, so forget what
    /// was acknowledged and count from the next message. RTTs and liveness stay.
    pub fn peer_restarted(&mut self) {
        self.highest_acked = None;
        self.received = 0;
        self.lost = 0;
        self.count_base = self.next_seq;
        self.oldest_unacked_ns = None;
        self.rate.window = None;
    }

    /// A message leaves on this path at `now_ns`: its path sequence number and send time as the
    /// wire carries them.
    pub fn on_send(&mut self, now_ns: u64) -> (u32, u32) {
        self.on_send_data(now_ns, 0)
    }

    /// A data message of `bytes` bytes (the inner packet) leaves at `now_ns`: as
    /// [`PathSender::on_send`], and counted for the delivery rate.
    pub fn on_send_data(&mut self, now_ns: u64, bytes: u64) -> (u32, u32) {
        let seq = self.next_seq;
        let first = self.highest_acked.map_or(self.count_base, |h| h + 1);
        self.rate.on_send(seq, bytes, first);
        self.next_seq += 1;
        self.last_send_ns = now_ns;
        self.oldest_unacked_ns.get_or_insert(now_ns);
        (seq as u32, wire_us(now_ns))
    }

    /// An acknowledgement of this path arrived at `now_ns`. Acknowledgements of numbers never
    /// sent, and older than one already taken, are ignored (returns false).
    pub fn on_ack(&mut self, ack: &Ack, now_ns: u64) -> bool {
        let Some(sent_highest) = self.next_seq.checked_sub(1) else {
            return false;
        };
        let highest = extend_seq(ack.highest_seq, sent_highest);
        let received = extend_seq(ack.received, self.received).min(highest + 1 - self.count_base.min(highest + 1));
        // An acknowledgement that reports nothing new (acknowledgements can be reordered too)
        // must not take back what a newer one said.
        let stale = match self.highest_acked {
            Some(h) => highest < h || (highest == h && received < self.received),
            None => false,
        };
        if highest > sent_highest || stale {
            return false;
        }
        let rtt_us = wire_us(now_ns)
            .wrapping_sub(ack.echo_us)
            .saturating_sub(ack.ack_delay_us);
        self.sample_rtt(u64::from(rtt_us) * 1_000);
        self.highest_acked = Some(highest);
        // The count received is 32 bits on the wire: extended next to what it was.
        self.received = self.received.max(received);
        self.lost = (highest + 1)
            .saturating_sub(self.count_base)
            .saturating_sub(self.received);
        self.last_ack_ns = now_ns;
        // With more outstanding, the silence that judges liveness starts now.
        self.oldest_unacked_ns = (highest < sent_highest).then_some(now_ns);
        self.up = true;
        self.rate.on_ack(
            (highest + 1, self.next_seq),
            self.latest_rtt_ns,
            self.min_rtt_ns,
            now_ns,
        );
        true
    }

    /// RFC 6298's smoothing (alpha 1/8, beta 1/4) in integers, and the minimum.
    fn sample_rtt(&mut self, rtt_ns: u64) {
        let rtt_ns = rtt_ns.max(1);
        self.latest_rtt_ns = rtt_ns;
        if self.srtt_ns == 0 {
            self.srtt_ns = rtt_ns;
            self.rttvar_ns = rtt_ns / 2;
            self.min_rtt_ns = rtt_ns;
            return;
        }
        self.rttvar_ns = (3 * self.rttvar_ns + self.srtt_ns.abs_diff(rtt_ns)) / 4;
        self.srtt_ns = (7 * self.srtt_ns + rtt_ns) / 8;
        self.min_rtt_ns = self.min_rtt_ns.min(rtt_ns);
    }

    /// Advance the path's liveness to `now_ns`; returns true when the path just went down.
    pub fn poll_liveness(&mut self, now_ns: u64) -> bool {
        let silent_since = match self.oldest_unacked_ns {
            Some(t) => t.max(self.last_ack_ns),
            None => return false,
        };
        if self.up && now_ns.saturating_sub(silent_since) >= self.cfg.dead_after_ns {
            self.up = false;
            self.downs += 1;
            return true;
        }
        false
    }

    /// Whether a keepalive is due at `now_ns` (nothing sent for the keepalive interval).
    pub fn keepalive_due(&self, now_ns: u64) -> bool {
        now_ns.saturating_sub(self.last_send_ns) >= self.cfg.keepalive_ns
    }

    /// When the next keepalive falls due, ns.
    pub fn keepalive_at_ns(&self) -> u64 {
        self.last_send_ns + self.cfg.keepalive_ns
    }

    /// When the latest acknowledgement was taken, ns (None before the first).
    pub fn last_ack_ns(&self) -> Option<u64> {
        (self.last_ack_ns > 0 || self.highest_acked.is_some()).then_some(self.last_ack_ns)
    }

    /// Whether the path is up.
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// What the sender knows now.
    pub fn view(&self) -> PathView {
        let in_flight = match self.highest_acked {
            Some(h) => self.next_seq - 1 - h,
            None => self.next_seq - self.count_base,
        };
        PathView {
            up: self.up,
            srtt_ns: self.srtt_ns,
            min_rtt_ns: self.min_rtt_ns,
            latest_rtt_ns: self.latest_rtt_ns,
            in_flight,
            sent: self.next_seq,
            acked: self.received,
            lost: self.lost,
            downs: self.downs,
            in_flight_bytes: self.rate.in_flight_bytes(self.next_seq - in_flight, self.next_seq),
            delivery_rate_bytes_per_s: self.rate.rate(),
        }
    }

    /// What the acknowledgement just taken tells a scheduler ([`TunnelScheduler::on_ack`]).
    ///
    /// [`TunnelScheduler::on_ack`]: mpsched_core::tunnel::TunnelScheduler::on_ack
    pub fn ack_sample(&self) -> AckSample {
        let v = self.view();
        AckSample {
            rtt_ns: v.latest_rtt_ns,
            in_flight_pkts: v.in_flight,
            lost_pkts: v.lost,
        }
    }

    /// Retransmission-style timeout of the path, ns: SRTT + 4 RTTVAR (RFC 6298), 0 before a
    /// sample.
    pub fn rto_ns(&self) -> u64 {
        self.srtt_ns + 4 * self.rttvar_ns
    }
}

/// The receiving side of one path: what to acknowledge, and when.
#[derive(Clone, Debug, Default)]
pub struct PathReceiver {
    ack_every: u32,
    ack_delay_max_ns: u64,
    /// Highest number received (64-bit) and its send time and arrival.
    highest: Option<(u64, u32, u64)>,
    received: u64,
    /// Messages that arrived below the highest number already received: the path reordered.
    reordered: u64,
    /// Messages received since the last acknowledgement, and when the first of them arrived.
    unacked: u32,
    first_unacked_ns: u64,
}

impl PathReceiver {
    /// A receiver acknowledging as `cfg` says.
    pub fn new(cfg: &PathConfig) -> Self {
        PathReceiver {
            ack_every: cfg.ack_every.max(1),
            ack_delay_max_ns: cfg.ack_delay_max_ns,
            ..PathReceiver::default()
        }
    }

    /// The peer restarted: its numbers and counts start afresh; the count of reordered
    /// messages goes on.
    pub fn new_session(&mut self) {
        *self = PathReceiver {
            ack_every: self.ack_every,
            ack_delay_max_ns: self.ack_delay_max_ns,
            reordered: self.reordered,
            ..PathReceiver::default()
        };
    }

    /// A message numbered `path_seq`, sent at `sent_us`, arrived at `now_ns`. Returns whether an
    /// acknowledgement is due now (keepalives are acknowledged at once, so liveness and RTT do
    /// not wait for the ack delay).
    pub fn on_message(&mut self, path_seq: u32, sent_us: u32, now_ns: u64, keepalive: bool) -> bool {
        let near = self.highest.map_or(0, |(h, _, _)| h);
        let seq = extend_seq(path_seq, near);
        match self.highest {
            Some((h, _, _)) if seq < h => self.reordered += 1,
            _ => self.highest = Some((seq, sent_us, now_ns)),
        }
        self.received += 1;
        if self.unacked == 0 {
            self.first_unacked_ns = now_ns;
        }
        self.unacked += 1;
        keepalive || self.unacked >= self.ack_every
    }

    /// Messages that arrived after one numbered higher on this path (a path is not always
    /// first-in first-out in a kernel: see [`crate::reorder`]).
    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    /// When an acknowledgement falls due if nothing more arrives, ns (None with nothing to
    /// acknowledge).
    pub fn ack_deadline_ns(&self) -> Option<u64> {
        (self.unacked > 0).then_some(self.first_unacked_ns + self.ack_delay_max_ns)
    }

    /// The acknowledgement to send at `now_ns` (None before any message arrived).
    pub fn ack(&mut self, now_ns: u64) -> Option<Ack> {
        let (seq, sent_us, arrived_ns) = self.highest?;
        self.unacked = 0;
        Some(Ack {
            highest_seq: seq as u32,
            received: self.received as u32,
            echo_us: sent_us,
            ack_delay_us: (now_ns.saturating_sub(arrived_ns) / 1_000) as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn rtt_in_flight_and_loss_come_from_acknowledgements() {
        let cfg = PathConfig::default();
        let (mut tx, mut rx) = (PathSender::new(cfg), PathReceiver::new(&cfg));
        // Five messages 1 ms apart; the third is lost; one-way delay 10 ms.
        let mut sent = Vec::new();
        for i in 0..5 {
            sent.push(tx.on_send(i * MS));
        }
        assert_eq!(tx.view().in_flight, 5);
        for (i, &(seq, us)) in sent.iter().enumerate() {
            if i != 2 {
                rx.on_message(seq, us, i as u64 * MS + 10 * MS, false);
            }
        }
        // The receiver acks 1 ms after the last arrival (14 ms): the sender sees it at 25 ms.
        let ack = rx.ack(15 * MS).unwrap();
        assert_eq!((ack.highest_seq, ack.received, ack.ack_delay_us), (4, 4, 1_000));
        assert!(tx.on_ack(&ack, 25 * MS));
        let v = tx.view();
        assert_eq!((v.in_flight, v.lost, v.acked, v.sent), (0, 1, 4, 5));
        assert_eq!(
            v.latest_rtt_ns,
            20 * MS,
            "RTT is the delay both ways, ack delay excluded"
        );
        assert_eq!((v.srtt_ns, v.min_rtt_ns), (20 * MS, 20 * MS));
        assert!(!tx.on_ack(&Ack { highest_seq: 9, ..ack }, 26 * MS), "never sent");
    }

    fn ack_of(seq: u32, sent_us: u32) -> Ack {
        Ack {
            highest_seq: seq,
            received: seq + 1,
            echo_us: sent_us,
            ack_delay_us: 0,
        }
    }

    #[test]
    fn bytes_in_flight_are_the_sizes_of_the_messages_in_flight() {
        let mut tx = PathSender::new(PathConfig::default());
        // 20 small messages then 4 of 1400 B: a mean of the recent sizes would count the
        // in-flight big ones at far less, or small ones at far more.
        let mut sent = Vec::new();
        for i in 0..20 {
            sent.push(tx.on_send_data(i * MS, 60));
        }
        for i in 20..24 {
            sent.push(tx.on_send_data(i * MS, 1400));
        }
        assert_eq!(tx.view().in_flight_bytes, 20 * 60 + 4 * 1400);
        let (seq, us) = sent[19];
        assert!(tx.on_ack(&ack_of(seq, us), 30 * MS));
        assert_eq!(tx.view().in_flight_bytes, 4 * 1400);
        let (seq, us) = sent[21];
        assert!(tx.on_ack(&ack_of(seq, us), 31 * MS));
        assert_eq!(tx.view().in_flight_bytes, 2 * 1400);
        // Keepalives (no data) take numbers and no bytes.
        tx.on_send(32 * MS);
        assert_eq!(tx.view().in_flight_bytes, 2 * 1400);
    }

    #[test]
    fn the_sizes_remembered_grow_with_what_is_in_flight_and_stay_exact() {
        let mut tx = PathSender::new(PathConfig::default());
        let size = |i: u64| 40 + (i * 37) % 1400;
        let mut sent = Vec::new();
        for i in 0..1000 {
            sent.push(tx.on_send_data(i * 1000, size(i)));
        }
        assert_eq!(tx.view().in_flight_bytes, (0..1000).map(size).sum::<u64>());
        assert_eq!(tx.rate.sent_through.len(), 1024, "grown from 64 to hold 1000 in flight");
        let (seq, us) = sent[499];
        assert!(tx.on_ack(&ack_of(seq, us), 2 * MS));
        assert_eq!(tx.view().in_flight_bytes, (500..1000).map(size).sum::<u64>());
        // A path that never has much in flight keeps the smallest ring.
        let mut small = PathSender::new(PathConfig::default());
        for i in 0..10_000 {
            let (seq, us) = small.on_send_data(i * MS, 1000);
            small.on_ack(&ack_of(seq, us), i * MS + 10);
        }
        assert_eq!(small.rate.sent_through.len(), SENT_SIZES_MIN);
    }

    #[test]
    fn beyond_the_remembered_sizes_in_flight_is_counted_at_the_mean() {
        let mut tx = PathSender::new(PathConfig::default());
        let (seq, us) = tx.on_send_data(0, 1000);
        assert!(tx.on_ack(&ack_of(seq, us), MS));
        for i in 0..2 * SENT_SIZES as u64 {
            tx.on_send_data(2 * MS + i, 1000);
        }
        let v = tx.view();
        assert_eq!(v.in_flight, 2 * SENT_SIZES as u64);
        assert_eq!(v.in_flight_bytes, 2 * SENT_SIZES as u64 * 1000);
    }

    #[test]
    fn a_queued_path_delivers_at_its_rate_and_an_idle_one_has_none() {
        // 1000-byte messages every 0.1 ms offered (80 Mbit/s) to a path that delivers one
        // every 0.2 ms (40 Mbit/s) after a 10 ms RTT: the queue grows, the RTT with it.
        let mut tx = PathSender::new(PathConfig::default());
        let mut acks = std::collections::VecDeque::new();
        let mut served_ns = 0;
        for i in 0..5_000u64 {
            let now = i * MS / 10;
            while acks.front().is_some_and(|&(t, _, _)| t <= now) {
                let (t, seq, us) = acks.pop_front().unwrap();
                tx.on_ack(&ack_of(seq, us), t);
            }
            let (seq, us) = tx.on_send_data(now, 1000);
            served_ns = served_ns.max(now) + MS / 5;
            acks.push_back((served_ns + 10 * MS, seq, us));
        }
        let rate = tx.view().delivery_rate_bytes_per_s;
        assert!(rate.abs_diff(5_000_000) < 250_000, "40 Mbit/s is 5 MB/s: {rate}");
        // Paced below its rate, with no queue, a path measures nothing.
        let mut tx = PathSender::new(PathConfig::default());
        for i in 0..1_000u64 {
            let (seq, us) = tx.on_send_data(i * MS, 1000);
            tx.on_ack(&ack_of(seq, us), i * MS + 10 * MS);
        }
        assert_eq!(tx.view().delivery_rate_bytes_per_s, 0);
    }

    #[test]
    fn smoothing_follows_rfc_6298_and_the_minimum_holds() {
        let mut tx = PathSender::new(PathConfig::default());
        for (i, rtt) in [40, 20, 80].iter().enumerate() {
            let t = i as u64 * 100 * MS;
            let (seq, us) = tx.on_send(t);
            let ack = Ack {
                highest_seq: seq,
                received: seq + 1,
                echo_us: us,
                ack_delay_us: 0,
            };
            tx.on_ack(&ack, t + rtt * MS);
        }
        // srtt: 40, then 7/8*40 + 20/8 = 37.5, then 7/8*37.5 + 80/8 = 42.8125 ms.
        assert_eq!(tx.view().srtt_ns, 42_812_500);
        assert_eq!(tx.view().min_rtt_ns, 20 * MS);
    }

    #[test]
    fn a_silent_path_goes_down_and_an_ack_brings_it_back() {
        let cfg = PathConfig::default();
        let mut tx = PathSender::new(cfg);
        assert!(!tx.poll_liveness(10_000 * MS), "nothing outstanding: nothing to judge");
        let (seq, us) = tx.on_send(0);
        assert!(!tx.poll_liveness(cfg.dead_after_ns - 1));
        assert!(tx.poll_liveness(cfg.dead_after_ns));
        assert!(!tx.is_up() && !tx.poll_liveness(cfg.dead_after_ns + MS), "down once");
        let ack = Ack {
            highest_seq: seq,
            received: 1,
            echo_us: us,
            ack_delay_us: 0,
        };
        tx.on_ack(&ack, cfg.dead_after_ns + 2 * MS);
        assert!(tx.is_up());
        assert_eq!(tx.view().downs, 1);
    }

    #[test]
    fn acknowledgements_fall_due_by_count_delay_or_keepalive() {
        let cfg = PathConfig::default();
        let mut rx = PathReceiver::new(&cfg);
        assert_eq!(rx.ack_deadline_ns(), None);
        assert!(!rx.on_message(0, 0, MS, false));
        assert_eq!(rx.ack_deadline_ns(), Some(MS + cfg.ack_delay_max_ns));
        assert!(rx.on_message(1, 0, 2 * MS, false), "every second message");
        rx.ack(2 * MS);
        assert_eq!(rx.ack_deadline_ns(), None);
        assert!(rx.on_message(2, 0, 3 * MS, true), "a keepalive at once");
    }

    #[test]
    fn after_the_peer_restarts_its_fresh_counts_are_taken() {
        let cfg = PathConfig::default();
        let (mut tx, mut rx) = (PathSender::new(cfg), PathReceiver::new(&cfg));
        for t in 0..10 {
            let (seq, us) = tx.on_send(t * MS);
            rx.on_message(seq, us, t * MS + MS, false);
        }
        assert!(tx.on_ack(&rx.ack(11 * MS).unwrap(), 12 * MS));
        tx.peer_restarted();
        // A receiver's new session counts from nothing; what it saw reordered stays counted.
        let mut r = PathReceiver::new(&cfg);
        r.on_message(2, 0, MS, false);
        r.on_message(1, 0, MS, false);
        r.new_session();
        assert_eq!((r.reordered(), r.received, r.highest), (1, 0, None));
        let mut fresh = PathReceiver::new(&cfg);
        // Of the next four, the first is lost: the new receiver never saw it.
        for t in 20..24 {
            let (seq, us) = tx.on_send(t * MS);
            if t != 20 {
                fresh.on_message(seq, us, t * MS + MS, false);
            }
        }
        assert!(
            tx.on_ack(&fresh.ack(25 * MS).unwrap(), 26 * MS),
            "a count of 3 is not stale"
        );
        let v = tx.view();
        assert_eq!((v.acked, v.lost, v.in_flight), (3, 1, 0));
    }

    #[test]
    fn numbers_and_counts_survive_the_32_bit_wrap() {
        let cfg = PathConfig::default();
        let (mut tx, mut rx) = (PathSender::new(cfg), PathReceiver::new(&cfg));
        tx.next_seq = u64::from(u32::MAX) - 1;
        tx.received = tx.next_seq;
        rx.highest = Some((tx.next_seq - 1, 0, 0));
        rx.received = tx.next_seq;
        for t in 0..4 {
            let (seq, us) = tx.on_send(t * MS);
            rx.on_message(seq, us, t * MS + MS, false);
        }
        let ack = rx.ack(5 * MS).unwrap();
        assert!(tx.on_ack(&ack, 6 * MS));
        let v = tx.view();
        assert_eq!((v.in_flight, v.lost, v.sent), (0, 0, u64::from(u32::MAX) + 3));
    }
}
