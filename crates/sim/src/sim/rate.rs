//! UDP flows paced by a rate controller (`[flow.rate_control]`): DCQCN's reaction point, which
//! the receiver notifies with a CNP for a CE-marked packet (at most one per flow per CNP
//! interval, DCQCN's notification point), and PMQECN's (Algorithm 3), which switches notify.
//! The flow's figures are a UDP flow's; its controller replaces the constant rate.

use super::*;
use crate::packet::CONTROL_FLOW;
use mpsched_core::packet::Ecn;
use mpsched_programs::pmqecn::cp::FEEDBACK_PORT;
use mpsched_scenario::RateControl;
use mpsched_transport::rate::{NotificationPoint, RateSender};

/// UDP port of DCQCN's congestion notification packets (RoCE v2's).
pub const CNP_PORT: u16 = 4791;
/// Wire bytes of a CNP (a minimum Ethernet frame).
const CNP_WIRE_BYTES: u32 = 64;

/// A rate-controlled flow's sender and its receiver's notification point.
pub(super) struct RateFlow {
    sender: RateSender,
    /// DCQCN: the receiver's notification point, in ps (None: the receiver sends no CNPs).
    np: Option<NotificationPoint>,
    /// The receiving host and its port back towards the source.
    dst_node: u32,
    back_port: PortId,
}

impl RateFlow {
    /// The sender of a flow of `payload_bytes` packets (the rate counts UDP payload, as a
    /// constant-rate flow's does) starting at `start_ps`.
    pub(super) fn new(
        rc: &RateControl,
        payload_bytes: u32,
        start_ps: TimePs,
        dst_node: u32,
        back_port: PortId,
    ) -> Self {
        let sender = rc
            .sender(payload_bytes, start_ps / 1000)
            .expect("rate controllers pace; payloads are above 0");
        RateFlow {
            sender,
            np: rc.cnp_interval_ps().map(NotificationPoint::new),
            dst_node,
            back_port,
        }
    }

    /// When the sender next needs a call (a packet due or its controller's timer), ps.
    fn next_ps(&self) -> TimePs {
        self.sender.next_timer().saturating_mul(1000)
    }

    /// Counters for the run's results: `<flow>.cnps`, `<flow>.notifications`, `<flow>.rate_bps`.
    pub(super) fn counters(&self, flow: &str) -> Vec<(String, u64)> {
        vec![
            (format!("{flow}.cnps"), self.np.map_or(0, |np| np.cnps_sent())),
            (format!("{flow}.notifications"), self.sender.stats().notifications),
            (
                format!("{flow}.rate_bps"),
                self.sender.controller().pacing_rate_bps().unwrap_or(0),
            ),
        ]
    }
}

impl Simulation {
    /// A rate-controlled flow's sender is due: send if a packet is, and come back when the
    /// sender next needs to.
    pub(super) fn on_rate_send(&mut self, fi: u32) {
        let now = self.net.now;
        let interval = self.monitor.sample_interval_ps;
        let f = &mut self.traffic.flows[fi as usize];
        let rf = f.rate.as_mut().expect("a rate-controlled flow");
        let sent = rf.sender.poll_transmit(now / 1000).is_some();
        let next = rf.next_ps().max(now + 1);
        if next < f.stop_ps {
            self.net.queue.schedule(next, EventKind::Send(fi));
        }
        if !sent {
            return;
        }
        let pkt = f.next_datagram(fi, now, interval);
        let (src, port) = (f.src_node, f.out_port);
        self.output(src, port, pkt);
    }

    /// A data packet of rate-controlled flow `fi` reached its receiver with `ecn`: DCQCN's
    /// notification point answers CE with a CNP, at most one per CNP interval.
    pub(super) fn rate_flow_delivered(&mut self, fi: u32, ecn: Ecn) {
        let now = self.net.now;
        let f = &mut self.traffic.flows[fi as usize];
        let Some(rf) = f.rate.as_mut() else {
            return;
        };
        if !rf.np.as_mut().is_some_and(|np| np.on_packet(now, ecn == Ecn::Ce)) {
            return;
        }
        let (node, port) = (rf.dst_node, rf.back_port);
        let m = &f.meta;
        let meta = PacketMeta::udp(m.dst_ip, m.src_ip, CNP_PORT, m.src_port, CNP_WIRE_BYTES);
        let cnp = Packet {
            meta,
            flow: fi,
            seq: 0,
            sent_ps: now,
            payload_bytes: 0,
            path: NO_PATH,
            tcp: NO_TCP,
            inner: NO_INNER,
            headers: StackRef::NONE,
        };
        self.output(node, port, cnp);
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
        rf.sender.on_rate_feedback(
            now_ns,
            u64::from(fb.measured_kbps) * 1000,
            u64::from(fb.target_kbps) * 1000,
        );
        true
    }

    /// Whether `pkt`, arrived at a host, is a CNP for a rate-controlled flow's sender: then
    /// the sender has taken it.
    pub(super) fn rate_flow_notified(&mut self, pkt: &Packet) -> bool {
        if pkt.meta.src_port != CNP_PORT || pkt.flow == CONTROL_FLOW {
            return false;
        }
        let now_ns = self.net.now / 1000;
        let Some(f) = self.traffic.flows.get_mut(pkt.flow as usize) else {
            return false;
        };
        match f.rate.as_mut() {
            Some(rf) if pkt.meta.dst_ip == f.meta.src_ip && pkt.meta.dst_port == f.meta.src_port => {
                rf.sender.on_notification(now_ns);
                true
            }
            _ => false,
        }
    }
}
