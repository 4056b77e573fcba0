//! UDP flows paced by a rate controller (`[flow.rate_control]`): DCQCN's reaction point, which
//! the receiver notifies with a CNP for a CE-marked packet (at most one per flow per CNP
//! interval, DCQCN's notification point), and PMQECN's (Algorithm 3), which switches notify.
//! The flow's figures are a UDP flow's; its controller replaces the constant rate.
//!
//! A flow of a `size` is a transfer, recovered as RDMA's reliable connections recover
//! (go-back-N): packets carry their number (the PSN); the receiver takes them in order, drops
//! what arrives beyond a gap and answers the first such packet of a gap with a NAK naming the
//! packet it expects, which sends the sender back to it; when it holds every byte it records the
//! completion and answers with an ACK, which ends the flow at the sender (its controller and
//! timers are freed). A sender that has sent its last packet and heard neither within the
//! retransmission timeout sends that packet again: the receiver answers it with a NAK, or, if it
//! is done, with the ACK again. A sender goes back once per gap: a second NAK for the packet it
//! already went back to (the receiver's answer to the last packet of the pass before) is passed
//! over until a timeout, as a NIC's sender waits out its timer when a packet is lost twice. A
//! flow's sender may wait for room in its host's interface queue (`host_queue_limit`), as a TCP
//! connection may: the flows waiting send in turn as it drains.

use super::*;
use crate::packet::CONTROL_FLOW;
use mpsched_core::packet::Ecn;
use mpsched_programs::pmqecn::cp::FEEDBACK_PORT;
use mpsched_scenario::completion::{paced_completion_key, paced_retransmissions_key};
use mpsched_scenario::{PacedTransport, RateControl};
use mpsched_transport::rate::{NotificationPoint, RateSender};

/// UDP port of DCQCN's congestion notification packets and of a transfer's ACKs and NAKs
/// (RoCE v2's).
pub const CNP_PORT: u16 = 4791;
/// Wire bytes of a CNP, an ACK or a NAK (a minimum Ethernet frame).
const REPLY_WIRE_BYTES: u32 = 64;
/// A reply's kind rides in the top two bits of its `seq`, the PSN below them, as RoCE's base
/// transport header carries an opcode and a PSN: 0 a CNP.
const REPLY_KIND_SHIFT: u32 = 62;
/// The receiver holds every byte (the ACK that ends a transfer).
const REPLY_ACK: u64 = 1;
/// The receiver expects the packet numbered in the low bits (a NAK).
const REPLY_NAK: u64 = 2;
/// The PSN bits of a reply's `seq`.
const PSN_MASK: u64 = (1 << REPLY_KIND_SHIFT) - 1;

/// A sized flow's go-back-N state at both ends, and its counters.
struct Transfer {
    /// Packets it takes (the last may be short).
    packets: u64,
    /// Payload of the last packet.
    last_payload: u32,
    timeout_ps: TimePs,
    // The sender.
    /// The next packet to send.
    next_psn: u64,
    /// Packets sent before, by number: below this every packet has gone at least once.
    sent_below: u64,
    /// When the sender, having sent its last packet, sends it again (None: not armed).
    deadline_ps: Option<TimePs>,
    retransmitted: u64,
    timeouts: u64,
    /// The packet the last NAK it acted on asked for, until a timeout: a NAK for it again
    /// (the receiver's answer to the rest of the pass it already went back from) is passed
    /// over, so that one gap sends the sender back once.
    last_nak: Option<u64>,
    // The receiver.
    /// The next packet it takes.
    expected: u64,
    /// The packet its last NAK asked for (it asks once per gap, and again for a packet sent
    /// after a timeout).
    nak_for: Option<u64>,
    naks_sent: u64,
    discarded: u64,
    /// When it held every byte.
    done_ps: Option<TimePs>,
}

impl Transfer {
    fn new(size_bytes: u64, payload_bytes: u32, timeout_ps: TimePs) -> Self {
        let payload = u64::from(payload_bytes.max(1));
        let packets = size_bytes.div_ceil(payload).max(1);
        Transfer {
            packets,
            last_payload: (size_bytes - (packets - 1) * payload) as u32,
            timeout_ps,
            next_psn: 0,
            sent_below: 0,
            deadline_ps: None,
            retransmitted: 0,
            timeouts: 0,
            last_nak: None,
            expected: 0,
            nak_for: None,
            naks_sent: 0,
            discarded: 0,
            done_ps: None,
        }
    }

    /// Whether the sender has a packet to send.
    fn has_data(&self) -> bool {
        self.next_psn < self.packets
    }
}

/// What became of a data packet at a transfer's receiver.
enum Taken {
    /// In order: its payload counts.
    Accepted,
    /// A duplicate, or beyond a gap: dropped.
    Discarded,
}

/// A rate-controlled flow's sender and its receiver's notification point.
pub(super) struct RateFlow {
    /// None once a transfer has ended (its controller freed).
    sender: Option<RateSender>,
    /// DCQCN: the receiver's notification point, in ps (None: the receiver sends no CNPs).
    np: Option<NotificationPoint>,
    /// The receiving host and its port back towards the source.
    dst_node: u32,
    back_port: PortId,
    /// The one pending `Send` event that counts (an earlier wake-up makes a later one stale).
    wake_ps: Option<TimePs>,
    /// Sized flows: go-back-N.
    transfer: Option<Transfer>,
    /// Bytes the host's queue may hold before the sender waits (`u64::MAX`: never).
    host_queue_limit_bytes: u64,
    /// Whether it is in its host link's `waiting`.
    waiting_for_room: bool,
    /// The sender's figures when it ended: notifications taken, the rate at the end.
    ended: Option<(u64, u64)>,
}

impl RateFlow {
    /// The sender of a flow of `payload_bytes` packets (the rate counts UDP payload, as a
    /// constant-rate flow's does) starting at `start_ps`, its first wake-up due then.
    pub(super) fn new(
        rc: &RateControl,
        paced: &PacedTransport,
        payload_bytes: u32,
        start_ps: TimePs,
        dst_node: u32,
        back_port: PortId,
    ) -> Self {
        let sender = rc
            .sender(payload_bytes, start_ps / 1000)
            .expect("rate controllers pace; payloads are above 0");
        RateFlow {
            sender: Some(sender),
            np: rc.cnp_interval_ps().map(NotificationPoint::new),
            dst_node,
            back_port,
            wake_ps: Some(start_ps),
            transfer: paced
                .size_bytes
                .map(|size| Transfer::new(size, payload_bytes, paced.retransmit_timeout_ps)),
            host_queue_limit_bytes: paced.host_queue_limit_bytes.unwrap_or(u64::MAX),
            waiting_for_room: false,
            ended: None,
        }
    }

    /// Whether the flow is a transfer (it ends when its bytes are delivered, not at its stop).
    pub(super) fn is_transfer(&self) -> bool {
        self.transfer.is_some()
    }

    /// Counters for the run's results: `<flow>.cnps`, `<flow>.notifications`, `<flow>.rate_bps`;
    /// a transfer's `<flow>.completion_ns` (from its start, once complete),
    /// `<flow>.retransmitted_pkts`, `<flow>.naks`, `<flow>.timeouts`, `<flow>.discarded_pkts`.
    pub(super) fn counters(&self, flow: &str, start_ps: TimePs) -> Vec<(String, u64)> {
        let (notifications, rate) = match (&self.sender, self.ended) {
            (Some(s), _) => (s.stats().notifications, s.controller().pacing_rate_bps().unwrap_or(0)),
            (None, Some(e)) => e,
            (None, None) => (0, 0),
        };
        let mut out = vec![
            (format!("{flow}.cnps"), self.np.map_or(0, |np| np.cnps_sent())),
            (format!("{flow}.notifications"), notifications),
            (format!("{flow}.rate_bps"), rate),
        ];
        if let Some(t) = &self.transfer {
            if let Some(done) = t.done_ps {
                out.push((paced_completion_key(flow), (done - start_ps) / 1000));
            }
            out.extend([
                (paced_retransmissions_key(flow), t.retransmitted),
                (format!("{flow}.naks"), t.naks_sent),
                (format!("{flow}.timeouts"), t.timeouts),
                (format!("{flow}.discarded_pkts"), t.discarded),
            ]);
        }
        out
    }
}

impl Simulation {
    /// A rate-controlled flow's wake-up: unless a later change made it stale, send if a
    /// packet is due and come back when the sender next needs to.
    pub(super) fn on_rate_send(&mut self, fi: u32) {
        let now = self.net.now;
        let Some(rf) = self.traffic.flows[fi as usize].rate.as_mut() else {
            return;
        };
        if rf.wake_ps != Some(now) {
            return;
        }
        rf.wake_ps = None;
        self.rate_pump(fi);
    }

    /// Run flow `fi`'s sender now: its controller's clock, a transfer's timeout, the packet
    /// due (if its host's queue has room), and its next wake-up.
    fn rate_pump(&mut self, fi: u32) {
        let now = self.net.now;
        let now_ns = now / 1000;
        let interval = self.monitor.sample_interval_ps;
        let f = &mut self.traffic.flows[fi as usize];
        let (src, port, stop_ps) = (f.src_node, f.out_port, f.stop_ps);
        let Some(rf) = f.rate.as_mut() else { return };
        let Some(sender) = rf.sender.as_mut() else { return };
        if let Some(t) = rf.transfer.as_mut() {
            if t.deadline_ps.is_some_and(|d| d <= now) {
                // Neither the ACK nor a NAK came: send the last packet again.
                t.deadline_ps = None;
                t.next_psn = t.packets - 1;
                t.timeouts += 1;
                t.last_nak = None;
            }
        }
        let has_data = rf.transfer.as_ref().is_none_or(Transfer::has_data);
        let due = has_data && now_ns >= sender.next_send_ns();
        let mut sent = None;
        if due && !rf.waiting_for_room {
            let link = self.net.nodes[src as usize].out_links.get(usize::from(port)).copied();
            let full = rf.host_queue_limit_bytes != u64::MAX
                && link.is_some_and(|l| self.net.links[l as usize].queued_bytes >= rf.host_queue_limit_bytes);
            if full {
                // It sends when the queue has drained to its turn.
                rf.waiting_for_room = true;
                let l = link.expect("a full queue is a link's");
                self.net.links[l as usize]
                    .waiting
                    .push_back(crate::link::Waiter::Paced(fi));
                sender.run_clock(now_ns);
            } else {
                sent = sender.poll_transmit(now_ns);
            }
        } else {
            sender.run_clock(now_ns);
        }
        if sent.is_some() {
            let psn = match rf.transfer.as_mut() {
                Some(t) => {
                    let psn = t.next_psn;
                    t.next_psn += 1;
                    if psn < t.sent_below {
                        t.retransmitted += 1;
                    }
                    t.sent_below = t.sent_below.max(t.next_psn);
                    if psn + 1 == t.packets {
                        t.deadline_ps = Some(now + t.timeout_ps);
                    }
                    Some((psn, (psn + 1 == t.packets).then_some(t.last_payload)))
                }
                None => None,
            };
            self.rate_schedule(fi, stop_ps);
            let f = &mut self.traffic.flows[fi as usize];
            let mut pkt = f.next_datagram(fi, now, interval);
            if let Some((psn, last)) = psn {
                pkt.seq = psn;
                if let Some(bytes) = last {
                    pkt.payload_bytes = bytes;
                    pkt.meta.wire_len_bytes = bytes + mpsched_core::packet::UDP_OVERHEAD_BYTES;
                }
            }
            self.output(src, port, pkt);
        } else {
            self.rate_schedule(fi, stop_ps);
        }
    }

    /// Schedule flow `fi`'s next wake-up: the earliest of its controller's clock, its next
    /// packet (unless it waits for room or has nothing to send) and a transfer's timeout;
    /// only if earlier than the one pending. An unsized flow wakes only before `stop_ps`.
    fn rate_schedule(&mut self, fi: u32, stop_ps: TimePs) {
        let now = self.net.now;
        let Some(rf) = self.traffic.flows[fi as usize].rate.as_mut() else {
            return;
        };
        let Some(sender) = rf.sender.as_ref() else { return };
        let mut next = sender.controller().next_timer().map(|ns| ns.saturating_mul(1000));
        let earliest = |a: Option<TimePs>, b: TimePs| Some(a.map_or(b, |a| a.min(b)));
        let has_data = rf.transfer.as_ref().is_none_or(Transfer::has_data);
        if has_data && !rf.waiting_for_room {
            next = earliest(next, sender.next_send_ns().saturating_mul(1000));
        }
        if let Some(d) = rf.transfer.as_ref().and_then(|t| t.deadline_ps) {
            next = earliest(next, d);
        }
        let Some(next) = next.map(|t| t.max(now + 1)) else {
            return;
        };
        if rf.transfer.is_none() && next >= stop_ps {
            return;
        }
        if rf.wake_ps.is_none_or(|w| next < w) {
            rf.wake_ps = Some(next);
            self.net.queue.schedule(next, EventKind::Send(fi));
        }
    }

    /// Paced flow `fi`'s turn in its host's queue (`Simulation::wake_waiting`): it sends if
    /// its packet is due; whether it waits again (the queue is full once more).
    pub(super) fn wake_paced(&mut self, fi: u32) -> bool {
        let Some(rf) = self.traffic.flows[fi as usize].rate.as_mut() else {
            return false;
        };
        rf.waiting_for_room = false;
        self.rate_pump(fi);
        self.traffic.flows[fi as usize]
            .rate
            .as_ref()
            .is_some_and(|rf| rf.waiting_for_room)
    }

    /// Paced flow `fi`'s host link failed while it waited for room: it waits no more (its next
    /// wake-up sends into a link that drops what it is given).
    pub(super) fn release_paced(&mut self, fi: u32) {
        if let Some(rf) = self.traffic.flows[fi as usize].rate.as_mut() {
            rf.waiting_for_room = false;
            let stop = self.traffic.flows[fi as usize].stop_ps;
            self.rate_schedule(fi, stop);
        }
    }

    /// A data packet of rate-controlled flow `fi` reached its receiver: DCQCN's notification
    /// point answers CE with a CNP, at most one per CNP interval; a transfer's receiver takes
    /// it in order or drops it, and answers as go-back-N does. Whether its payload counts
    /// (a transfer's duplicates and packets beyond a gap do not).
    pub(super) fn rate_flow_delivered(&mut self, fi: u32, seq: u64, ecn: Ecn) -> bool {
        let now = self.net.now;
        let f = &mut self.traffic.flows[fi as usize];
        let Some(rf) = f.rate.as_mut() else {
            return true;
        };
        if rf.np.as_mut().is_some_and(|np| np.on_packet(now, ecn == Ecn::Ce)) {
            self.send_reply(fi, 0);
        }
        let Some(rf) = self.traffic.flows[fi as usize].rate.as_mut() else {
            return true;
        };
        let Some(t) = rf.transfer.as_mut() else {
            return true;
        };
        let (taken, reply) = if t.done_ps.is_some() {
            // Done: the last packet sent again after a timeout asks for the ACK again.
            (
                Taken::Discarded,
                (seq + 1 == t.packets).then_some(REPLY_ACK << REPLY_KIND_SHIFT),
            )
        } else if seq == t.expected {
            t.expected += 1;
            t.nak_for = None;
            if t.expected == t.packets {
                t.done_ps = Some(now);
                (Taken::Accepted, Some(REPLY_ACK << REPLY_KIND_SHIFT))
            } else {
                (Taken::Accepted, None)
            }
        } else if seq > t.expected {
            // Beyond a gap: a NAK for the first of it, once, and again for the last packet
            // (what a sender sends after its timeout), so that a lost NAK is asked again.
            let ask = t.nak_for != Some(t.expected) || seq + 1 == t.packets;
            let reply = ask.then(|| {
                t.nak_for = Some(t.expected);
                t.naks_sent += 1;
                (REPLY_NAK << REPLY_KIND_SHIFT) | (t.expected & PSN_MASK)
            });
            (Taken::Discarded, reply)
        } else {
            (Taken::Discarded, None)
        };
        if matches!(taken, Taken::Discarded) {
            t.discarded += 1;
        }
        if let Some(r) = reply {
            self.send_reply(fi, r);
        }
        matches!(taken, Taken::Accepted)
    }

    /// Send a reply of rate-controlled flow `fi` from its receiver to its sender: a CNP
    /// (`seq` 0), an ACK or a NAK.
    fn send_reply(&mut self, fi: u32, seq: u64) {
        let now = self.net.now;
        let f = &self.traffic.flows[fi as usize];
        let Some(rf) = f.rate.as_ref() else { return };
        let (node, port) = (rf.dst_node, rf.back_port);
        let m = &f.meta;
        let meta = PacketMeta::udp(m.dst_ip, m.src_ip, CNP_PORT, m.src_port, REPLY_WIRE_BYTES);
        let mut reply = Packet::bare(meta, fi, now);
        reply.seq = seq;
        self.output(node, port, reply);
    }

    /// Whether packet `id`, arrived at a host, is a switch's feedback (PMQECN's: UDP from
    /// [`FEEDBACK_PORT`] with a feedback header) for a rate-controlled flow sending from the
    /// address and port it is addressed to: then that flow's sender has taken its rates.
    pub(super) fn rate_flow_feedback(&mut self, id: PacketId) -> bool {
        let pkt = self.net.pool.at(id);
        if pkt.meta.src_port != FEEDBACK_PORT || pkt.meta.proto != mpsched_core::packet::proto::UDP {
            return false;
        }
        let Some(fb) = pkt
            .headers
            .index()
            .and_then(|i| self.net.stacks.at(i).feedback().copied())
        else {
            return false;
        };
        let Some(&fi) = self.traffic.rate_sources.get(&(pkt.meta.dst_ip, pkt.meta.dst_port)) else {
            return false;
        };
        let now_ns = self.net.now / 1000;
        let rf = self.traffic.flows[fi as usize]
            .rate
            .as_mut()
            .expect("rate sources are rate-controlled");
        // A transfer that has ended takes nothing more.
        if let Some(sender) = rf.sender.as_mut() {
            sender.on_rate_feedback(
                now_ns,
                u64::from(fb.measured_kbps) * 1000,
                u64::from(fb.target_kbps) * 1000,
            );
        }
        true
    }

    /// Whether `pkt`, arrived at a host, is a reply for a rate-controlled flow's sender (a
    /// CNP, or a transfer's ACK or NAK): then the sender has taken it.
    pub(super) fn rate_flow_notified(&mut self, pkt: &Packet) -> bool {
        if pkt.meta.src_port != CNP_PORT || pkt.flow == CONTROL_FLOW {
            return false;
        }
        let now_ns = self.net.now / 1000;
        let Some(f) = self.traffic.flows.get_mut(pkt.flow as usize) else {
            return false;
        };
        let stop_ps = f.stop_ps;
        let Some(rf) = f.rate.as_mut() else {
            return false;
        };
        if pkt.meta.dst_ip != f.meta.src_ip || pkt.meta.dst_port != f.meta.src_port {
            return false;
        }
        // A transfer that has ended takes nothing more.
        let Some(sender) = rf.sender.as_mut() else {
            return true;
        };
        match pkt.seq >> REPLY_KIND_SHIFT {
            REPLY_ACK => {
                // The receiver holds every byte: the flow ends, its controller with it.
                rf.ended = Some((
                    sender.stats().notifications,
                    sender.controller().pacing_rate_bps().unwrap_or(0),
                ));
                rf.sender = None;
                rf.wake_ps = None;
                // Still in its link's list if it waited: popped there, it is passed over.
                rf.waiting_for_room = false;
                if let Some(t) = rf.transfer.as_mut() {
                    t.deadline_ps = None;
                }
            }
            REPLY_NAK => {
                let Some(t) = rf.transfer.as_mut() else {
                    return true;
                };
                let psn = pkt.seq & PSN_MASK;
                if psn < t.next_psn && t.last_nak != Some(psn) {
                    t.last_nak = Some(psn);
                    // Go back: everything from the packet it expects goes again.
                    t.next_psn = psn;
                    t.deadline_ps = None;
                    self.rate_schedule(pkt.flow, stop_ps);
                }
            }
            _ => {
                sender.on_notification(now_ns);
                // A cut moves the next packet later; the pending wake-up finds it not yet due.
            }
        }
        true
    }
}
