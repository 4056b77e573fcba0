//! TCP in the simulator: connections between hosts (and between tunnel ends), their timers,
//! and the applications on top (bulk, fixed-size transfer, request / response).

use super::component::{ComponentId, ConnId};
use super::{Simulation, TunnelRef};
use crate::event::{EventKind, TimePs};
use crate::packet::{option_bytes, segment_flags, Packet, TcpPart, NO_OPTION};
use mpsched_core::packet::{Ecn, HeaderExt, PacketMeta, PortId};
use mpsched_scenario::TcpApp;
use mpsched_transport::tcp::{Segment, TcpConfig, TcpReceiver, TcpSender, TCP_OVERHEAD_BYTES};
use mpsched_tunnel::RecordQueue;
use std::collections::VecDeque;

/// Who uses a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The data connection of a flow (bulk or transfer), or its request connection.
    Flow(u32),
    /// The response connection of a request / response flow.
    Response(u32),
    /// A subtunnel.
    Subtunnel(TunnelRef),
    /// A component's connection.
    Component(ComponentId),
    /// Subflow `k` of MPTCP connection `mp`.
    Subflow { mp: u32, k: u8 },
}

/// One TCP connection: a sender at `src`, a receiver at `dst`.
pub(crate) struct Conn {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub src_node: u32,
    pub dst_node: u32,
    /// Headers of data segments (src -> dst); ACKs swap addresses and ports.
    pub data_meta: PacketMeta,
    pub ack_meta: PacketMeta,
    /// Egress port of data at `src`, of ACKs at `dst`.
    pub data_port: PortId,
    pub ack_port: PortId,
    pub owner: Owner,
    /// Earliest pending timer event.
    pub timer_at: Option<TimePs>,
    /// Subtunnel stream: (end offset, inner packet) in the order written.
    pub records: RecordQueue<u32>,
    /// Sum of one-way delays of data segments received, for the mean.
    pub owd_sum_ps: u128,
    /// When a handshake segment is due again (an MPTCP subflow's SYN or MP_JOIN third ACK).
    pub handshake_deadline_ns: Option<u64>,
    /// Bytes the source host's queue may hold before this connection waits for room
    /// (`tcp.host_queue_limit`; `u64::MAX`: never).
    pub host_queue_limit_bytes: u64,
    /// Whether it is in its host link's `waiting`.
    pub waiting_for_room: bool,
}

impl Conn {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &TcpConfig,
        src_node: u32,
        dst_node: u32,
        data_meta: PacketMeta,
        data_port: PortId,
        ack_port: PortId,
        owner: Owner,
    ) -> Conn {
        let mut data_meta = data_meta;
        data_meta.proto = mpsched_core::packet::proto::TCP;
        let mut ack_meta = data_meta;
        std::mem::swap(&mut ack_meta.src_ip, &mut ack_meta.dst_ip);
        std::mem::swap(&mut ack_meta.src_port, &mut ack_meta.dst_port);
        ack_meta.wire_len_bytes = TCP_OVERHEAD_BYTES;
        ack_meta.ecn = Ecn::NotEct;
        Conn {
            sender: TcpSender::new(cfg.clone()),
            receiver: TcpReceiver::new(cfg),
            src_node,
            dst_node,
            data_meta,
            ack_meta,
            data_port,
            ack_port,
            owner,
            timer_at: None,
            records: RecordQueue::default(),
            owd_sum_ps: 0,
            handshake_deadline_ns: None,
            host_queue_limit_bytes: cfg.host_queue_limit_bytes.unwrap_or(u64::MAX),
            waiting_for_room: false,
        }
    }
}

/// A TCP flow's application state.
pub(crate) struct TcpFlowState {
    pub app: TcpApp,
    /// Data (or request) connection.
    pub conn: u32,
    /// Response connection (request / response).
    pub response_conn: Option<u32>,
    /// The MPTCP connection (MPTCP flows; `conn` is then its first subflow).
    pub mptcp: Option<u32>,
    pub stopped: bool,
    pub completion_ps: Option<TimePs>,
    /// Request / response: when each outstanding request was written.
    pub requests_sent_ps: VecDeque<TimePs>,
    pub requests_written: u64,
    pub responses_written: u64,
    pub responses_done: u64,
    pub response_time_sum_ps: u128,
    /// Per-sample sums for the mean window.
    pub cwnd_samples_sum: u64,
    pub cwnd_samples: u64,
    pub retx_at_last_sample: u64,
    /// Segments sent and retransmitted, per sample interval.
    pub segs_by_interval: Vec<u64>,
    pub retx_by_interval: Vec<u64>,
}

impl TcpFlowState {
    pub fn new(app: TcpApp, conn: u32, response_conn: Option<u32>, intervals: usize) -> Self {
        TcpFlowState {
            app,
            conn,
            response_conn,
            mptcp: None,
            stopped: false,
            completion_ps: None,
            requests_sent_ps: VecDeque::new(),
            requests_written: 0,
            responses_written: 0,
            responses_done: 0,
            response_time_sum_ps: 0,
            cwnd_samples_sum: 0,
            cwnd_samples: 0,
            retx_at_last_sample: 0,
            segs_by_interval: vec![0; intervals + 1],
            retx_by_interval: vec![0; intervals + 1],
        }
    }
}

#[inline]
pub(crate) fn ps_to_ns(t: TimePs) -> u64 {
    t / 1000
}

impl Simulation {
    /// Send what connection `c` may send now, and keep its timer armed.
    pub(crate) fn pump(&mut self, c: u32) {
        let now_ns = ps_to_ns(self.net.now);
        let limited_link = self.limited_host_link(c);
        loop {
            if limited_link.is_some_and(|l| self.must_wait_for_room(c, l)) {
                break;
            }
            let conn = &mut self.traffic.conns[c as usize];
            let Some(seg) = conn.sender.poll_transmit(now_ns) else {
                break;
            };
            let mut meta = conn.data_meta;
            let (node, port, owner) = (conn.src_node, conn.data_port, conn.owner);
            let mut part = TcpPart::plain(c, false, seg);
            let mut kind = None;
            meta.wire_len_bytes = seg.len + TCP_OVERHEAD_BYTES;
            if let Owner::Subflow { mp, k } = owner {
                if let Some(o) = self.mptcp_data_option(mp, k, &seg) {
                    kind = Some(o.kind());
                    meta.wire_len_bytes += option_bytes(&o);
                    part.mptcp = self.net.mptcp_options.insert(o);
                }
            }
            meta.ecn = if seg.ect { Ecn::Ect0 } else { Ecn::NotEct };
            meta.ext = HeaderExt::Tcp {
                flags: segment_flags(&seg),
                mptcp: kind,
            };
            let flow = self.owner_flow(owner);
            if flow != crate::packet::CONTROL_FLOW {
                let fi = flow;
                let k = self.interval_index(self.net.now);
                if let Some(t) = self.traffic.flows[fi as usize].tcp.as_mut() {
                    t.segs_by_interval[k] += 1;
                    if seg.retransmission {
                        t.retx_by_interval[k] += 1;
                    }
                }
            }
            let mut pkt = Packet::bare(meta, flow, self.net.now);
            pkt.payload_bytes = seg.len;
            pkt.tcp = self.net.tcp_parts.insert(part);
            self.output(node, port, pkt);
        }
        self.arm_timer(c);
    }

    /// The link out of connection `c`'s host whose queue limits it (`tcp.host_queue_limit`).
    #[inline]
    fn limited_host_link(&self, c: u32) -> Option<u32> {
        let conn = &self.traffic.conns[c as usize];
        if conn.host_queue_limit_bytes == u64::MAX {
            return None;
        }
        let node = &self.net.nodes[conn.src_node as usize];
        node.out_links.get(usize::from(conn.data_port)).copied()
    }

    /// Whether connection `c` must wait for room in its host's queue on link `l`; if so it
    /// joins the link's waiting connections, once.
    fn must_wait_for_room(&mut self, c: u32, l: u32) -> bool {
        let conn = &mut self.traffic.conns[c as usize];
        let link = &mut self.net.links[l as usize];
        if link.queued_bytes < conn.host_queue_limit_bytes {
            return false;
        }
        if !conn.waiting_for_room {
            conn.waiting_for_room = true;
            link.waiting.push_back(crate::link::Waiter::Conn(c));
        }
        true
    }

    /// A packet left host link `l`'s queue: the senders waiting for room (connections and
    /// paced flows) send in turn, until one fills the queue again (it waits at the back) or
    /// none is left.
    pub(crate) fn wake_waiting(&mut self, l: u32) {
        use crate::link::Waiter;
        while let Some(w) = self.net.links[l as usize].waiting.pop_front() {
            let again = match w {
                Waiter::Conn(c) => {
                    self.traffic.conns[c as usize].waiting_for_room = false;
                    self.pump(c);
                    self.traffic.conns[c as usize].waiting_for_room
                }
                Waiter::Paced(fi) => self.wake_paced(fi),
            };
            if again {
                break;
            }
        }
    }

    pub(crate) fn arm_timer(&mut self, c: u32) {
        let conn = &mut self.traffic.conns[c as usize];
        let earliest = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let next = earliest(
            earliest(conn.sender.next_timer(), conn.receiver.next_timer()),
            conn.handshake_deadline_ns,
        );
        if let Some(ns) = next {
            let at = (ns * 1000).max(self.net.now);
            // Schedule only when no timer event is pending at or before `at`.
            if conn.timer_at.is_none_or(|pending| pending > at) {
                conn.timer_at = Some(at);
                self.net.queue.schedule(at, EventKind::TcpTimer(c));
            }
        }
    }

    pub(crate) fn on_tcp_timer(&mut self, c: u32) {
        let now_ns = ps_to_ns(self.net.now);
        let conn = &mut self.traffic.conns[c as usize];
        if conn.timer_at == Some(self.net.now) {
            conn.timer_at = None;
        }
        if conn.handshake_deadline_ns.is_some_and(|d| d <= now_ns) {
            self.on_handshake_timer(c);
        }
        let conn = &mut self.traffic.conns[c as usize];
        let rtos = conn.sender.stats().rtos;
        conn.sender.on_timer(now_ns);
        let timed_out = conn.sender.stats().rtos > rtos;
        if let Some(ack) = conn.receiver.on_timer(now_ns) {
            self.send_ack(c, ack);
        }
        match self.traffic.conns[c as usize].owner {
            Owner::Subflow { mp, k } => {
                if timed_out {
                    self.mptcp_reinject(mp, k);
                }
                self.mptcp_pump(mp, Some(usize::from(k)));
            }
            _ => self.pump(c),
        }
        self.arm_timer(c);
    }

    /// The flow connection `c` carries (its packets' flow id), or the control flow.
    pub(crate) fn conn_flow(&self, c: u32) -> u32 {
        self.owner_flow(self.traffic.conns[c as usize].owner)
    }

    /// The flow a connection of `owner` carries, or the control flow.
    #[inline]
    fn owner_flow(&self, owner: Owner) -> u32 {
        match owner {
            Owner::Flow(f) | Owner::Response(f) => f,
            Owner::Subflow { mp, .. } => self.traffic.mptcp[mp as usize].flow,
            Owner::Subtunnel(_) | Owner::Component(_) => crate::packet::CONTROL_FLOW,
        }
    }

    fn send_ack(&mut self, c: u32, mut seg: Segment) {
        let conn = &self.traffic.conns[c as usize];
        let (node, port, mut meta, owner) = (conn.dst_node, conn.ack_port, conn.ack_meta, conn.owner);
        let mptcp = match owner {
            Owner::Subflow { mp, .. } => self.mptcp_ack_option(mp, &mut seg),
            _ => None,
        };
        let mut part = TcpPart::plain(c, true, seg);
        if let Some(o) = mptcp {
            meta.wire_len_bytes += option_bytes(&o);
            part.mptcp = self.net.mptcp_options.insert(o);
        }
        meta.ext = HeaderExt::Tcp {
            flags: part.flags(),
            mptcp: mptcp.map(|o| o.kind()),
        };
        let mut pkt = Packet::bare(meta, self.owner_flow(owner), self.net.now);
        pkt.tcp = self.net.tcp_parts.insert(part);
        self.output(node, port, pkt);
    }

    /// A TCP packet reached its end (host or tunnel end).
    pub(crate) fn on_tcp_packet(&mut self, pkt: Packet) {
        let t = self.net.tcp_parts.take(pkt.tcp);
        let option = (t.mptcp != NO_OPTION).then(|| self.net.mptcp_options.take(t.mptcp));
        let c = t.conn;
        let now_ns = ps_to_ns(self.net.now);
        let subflow = match self.traffic.conns[c as usize].owner {
            Owner::Subflow { mp, k } => Some((mp, k)),
            _ => None,
        };
        if let Some((mp, k)) = subflow {
            if t.handshake.is_some() {
                self.on_handshake(mp, k, &t, option);
                return;
            }
            if t.is_ack {
                self.mptcp_on_ack(mp, k, &t, option);
                return;
            }
            if !self.mptcp_on_data(mp, k, &t, option) {
                return;
            }
        } else if t.is_ack {
            self.traffic.conns[c as usize].sender.on_ack(now_ns, &t.seg);
            self.pump(c);
            return;
        }
        let conn = &mut self.traffic.conns[c as usize];
        conn.owd_sum_ps += u128::from(self.net.now - pkt.sent_ps);
        let out = conn.receiver.on_segment(now_ns, &t.seg, pkt.meta.ecn == Ecn::Ce);
        for ack in [out.prior_ack, out.ack].into_iter().flatten() {
            self.send_ack(c, ack);
        }
        if out.delivered_bytes > 0 && subflow.is_none() {
            self.on_delivered(c, out.delivered_bytes);
        }
        self.arm_timer(c);
    }

    fn on_delivered(&mut self, c: u32, bytes: u64) {
        let owner = self.traffic.conns[c as usize].owner;
        let rcv_nxt = self.traffic.conns[c as usize].receiver.rcv_nxt();
        match owner {
            Owner::Subtunnel(r) => self.on_subtunnel_delivered(r, c, rcv_nxt),
            // Counted at the connection level, as the reassembly releases it.
            Owner::Subflow { .. } => {}
            Owner::Component(id) => self.call_component(id, |x, net| x.on_delivered(ConnId(c), rcv_nxt, net)),
            Owner::Flow(fi) => {
                let now = self.net.now;
                let f = &mut self.traffic.flows[fi as usize];
                let app = f.tcp.as_ref().map(|t| t.app);
                match app {
                    Some(TcpApp::RequestResponse {
                        request_bytes,
                        response_bytes,
                        ..
                    }) => {
                        // The server reads requests and answers each complete one.
                        let complete = rcv_nxt / request_bytes;
                        let t = f.tcp.as_mut().expect("tcp");
                        let rc = t.response_conn.expect("request / response has a response connection");
                        let mut wrote = false;
                        while t.responses_written < complete {
                            t.responses_written += 1;
                            self.traffic.conns[rc as usize].sender.write(response_bytes);
                            wrote = true;
                        }
                        if wrote {
                            self.pump(rc);
                        }
                    }
                    _ => {
                        f.record_goodput(now, bytes);
                        if let Some(TcpApp::Transfer { size_bytes }) = app {
                            let t = f.tcp.as_mut().expect("tcp");
                            if rcv_nxt >= size_bytes && t.completion_ps.is_none() {
                                t.completion_ps = Some(now);
                            }
                        }
                    }
                }
            }
            Owner::Response(fi) => {
                let now = self.net.now;
                let f = &mut self.traffic.flows[fi as usize];
                f.record_goodput(now, bytes);
                let Some(TcpApp::RequestResponse {
                    request_bytes,
                    response_bytes,
                    count,
                }) = f.tcp.as_ref().map(|t| t.app)
                else {
                    return;
                };
                let stop = f.stop_ps;
                let t = f.tcp.as_mut().expect("tcp");
                let done = rcv_nxt / response_bytes;
                let mut next = false;
                while t.responses_done < done {
                    t.responses_done += 1;
                    if let Some(sent) = t.requests_sent_ps.pop_front() {
                        t.response_time_sum_ps += u128::from(now - sent);
                    }
                    next = true;
                }
                if next && !t.stopped && now < stop && (count == 0 || t.requests_written < count) {
                    t.requests_written += 1;
                    t.requests_sent_ps.push_back(now);
                    let rq = t.conn;
                    self.traffic.conns[rq as usize].sender.write(request_bytes);
                    self.pump(rq);
                }
            }
        }
    }

    pub(crate) fn on_app_start(&mut self, fi: u32) {
        let now = self.net.now;
        let f = &mut self.traffic.flows[fi as usize];
        let Some(t) = f.tcp.as_mut() else { return };
        let c = t.conn;
        if let Some(mp) = t.mptcp {
            match t.app {
                TcpApp::Transfer { size_bytes } => self.mptcp_start(mp, size_bytes, true),
                _ => self.mptcp_start(mp, u64::MAX / 4, false),
            }
            return;
        }
        match t.app {
            TcpApp::Bulk => self.traffic.conns[c as usize].sender.write(u64::MAX / 4),
            TcpApp::Transfer { size_bytes } => {
                let sender = &mut self.traffic.conns[c as usize].sender;
                sender.write(size_bytes);
                sender.close();
            }
            TcpApp::RequestResponse { request_bytes, .. } => {
                t.requests_written = 1;
                t.requests_sent_ps.push_back(now);
                self.traffic.conns[c as usize].sender.write(request_bytes);
            }
        }
        self.pump(c);
    }

    pub(crate) fn on_app_stop(&mut self, fi: u32) {
        let f = &mut self.traffic.flows[fi as usize];
        let Some(t) = f.tcp.as_mut() else { return };
        t.stopped = true;
        if let (Some(mp), TcpApp::Bulk) = (t.mptcp, t.app) {
            self.mptcp_stop(mp);
        } else if t.app == TcpApp::Bulk {
            self.traffic.conns[t.conn as usize].sender.discard_unsent();
        }
    }

    /// Index of the sample interval `t` falls in.
    pub(crate) fn interval_index(&self, t: TimePs) -> usize {
        ((t / self.monitor.sample_interval_ps) as usize).min(self.monitor.intervals)
    }
}
