//! MPTCP in the simulator (RFC 8684): a connection is N subflows, each a TCP connection of
//! [`super::tcp`] with its own 5-tuple, opened by MP_CAPABLE (the first) or MP_JOIN (the others,
//! once the first is up, as Linux's in-kernel path manager opens them). The application's bytes
//! are mapped into the data sequence space as a subflow gets room (the packet scheduler picks
//! which), every data segment carries its DSS mapping and every ACK the DATA_ACK, and the
//! receiver puts the stream back in order across subflows. The state machines are
//! `mpsched_transport::mptcp`'s; this file moves their segments through the network.
//!
//! A subflow that times out hands the data holding the connection's delivery to another, and
//! after four timeouts in a row all it holds. What is not modelled: DATA_FIN and subflow
//! teardown (a transfer completes when its last byte is delivered), ADD_ADDR / REMOVE_ADDR (both
//! ends know the subflows from the scenario), backup subflows, and checksums (Linux negotiates
//! none by default).

use super::tcp::{ps_to_ns, Owner};
use super::Simulation;
use crate::packet::{option_bytes, Handshake, Packet, TcpPart};
use mpsched_core::mptcp::{DssMapping, MptcpOption, MptcpVersion};
use mpsched_core::packet::{Ecn, HeaderExt};
use mpsched_scenario::{MptcpScheduler, MptcpSettings};
use mpsched_transport::cc::SubflowView;
use mpsched_transport::mptcp::data_sender::DataSender;
use mpsched_transport::mptcp::handshake::{CapableClient, CapableServer, ConnectionKeys, JoinInitiator, JoinResponder};
use mpsched_transport::mptcp::reassembly::DataReceiver;
use mpsched_transport::mptcp::scheduler::{LowestRtt, PacketScheduler, RoundRobin, SubflowState};
use mpsched_transport::tcp::{Segment, TcpConfig, TCP_OVERHEAD_BYTES};
use std::collections::VecDeque;

/// First retransmission timeout of a SYN (RFC 6298 as Linux: 1 s), doubled per retry; the
/// interval at which an unanswered MP_JOIN third ACK is repeated.
const SYN_RTO_NS: u64 = 1_000_000_000;
/// Most SYN retransmissions (Linux's `tcp_syn_retries` default).
const SYN_RETRIES: u32 = 6;
/// Timeouts in a row, without an acknowledgement of new data between them, after which a
/// subflow is stale: it carries no new data and hands all it holds to the others (Linux's
/// `net.mptcp.stale_loss_cnt` default).
const STALE_LOSS_COUNT: u32 = 4;

/// Header bytes the DSS option of a data segment takes (64-bit DATA_ACK and mapping, no
/// checksum: 26, padded to 28). A subflow's segments carry this much less payload than a TCP
/// connection's, so that its frames keep the MTU, as Linux sizes MPTCP segments.
pub(crate) const DSS_DATA_BYTES: u32 = 28;

/// Where the active opener's side of a subflow stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opening {
    /// Not started (a join waits for the first subflow).
    Idle,
    /// SYN sent, this many times.
    SynSent(u32),
    /// SYN/ACK answered: data may flow.
    Established,
}

/// One subflow of a connection, both ends.
#[derive(Debug)]
pub(crate) struct Subflow {
    /// Its TCP connection.
    pub conn: u32,
    opening: Opening,
    /// The passive end checked the handshake (MP_CAPABLE's keys, or MP_JOIN's HMAC): it accepts
    /// data on the subflow.
    verified: bool,
    /// MP_JOIN's third ACK, repeated until the peer sends anything on the subflow.
    third_ack: Option<MptcpOption>,
    join: Option<JoinInitiator>,
    responder: Option<JoinResponder>,
    /// The two ends' MP_JOIN nonces (drawn at build time from the run's seed).
    nonces: (u32, u32),
    /// The data each stretch of the subflow's stream carries: (subflow offset, data sequence
    /// number, length), in stream order, until acknowledged on the subflow. A stretch that
    /// continues the last in both spaces extends it (one entry per run, not per segment: a
    /// subflow in a long recovery holds millions of segments); each segment's DSS mapping is
    /// cut from its stretch, so the wire is the same.
    maps: VecDeque<(u64, u64, u32)>,
    /// Bytes handed to the subflow.
    written: u64,
    /// Bytes acknowledged on the subflow at its last ACK.
    acked: u64,
    /// Timeouts since it last had new data acknowledged.
    timeouts: u32,
    /// Whether it is stale (`STALE_LOSS_COUNT` timeouts in a row).
    stale: bool,
}

/// One MPTCP connection: its subflows and the connection-level state of both ends.
pub(crate) struct MptcpConn {
    /// The flow it carries.
    pub flow: u32,
    pub subflows: Vec<Subflow>,
    client: CapableClient,
    server: CapableServer,
    client_keys: Option<ConnectionKeys>,
    /// The DATA_ACK every data segment of the active end carries (the peer's IDSN + 1), known
    /// with the keys: a hash of the key, computed once rather than per segment.
    client_data_ack: Option<u64>,
    server_keys: Option<ConnectionKeys>,
    tx: Option<DataSender>,
    rx: Option<DataReceiver>,
    /// A DATA_ACK reached the active end: the peer has the keys.
    fully_established: bool,
    scheduler: Box<dyn PacketScheduler>,
    /// Data to send again on another subflow (a timed-out subflow's, RFC 8684 3.3.6): (data
    /// sequence number, length, the subflow to carry it), before any new data.
    reinject: VecDeque<(u64, u32, usize)>,
    /// Mappings sent again on another subflow.
    reinjected: u64,
    /// Application bytes not yet mapped onto a subflow.
    app_unsent: u64,
    /// Whether the application will write nothing more (a transfer).
    app_closed: bool,
    /// Receive buffer of the connection, bytes (the one window every subflow advertises).
    window_bytes: u64,
    /// Payload of a full segment on a subflow, bytes.
    mss: u32,
    /// Whether the subflows' controllers are coupled (LIA, OLIA): they are then fed the
    /// siblings' windows on each ACK.
    coupled: bool,
    /// Handshake segments refused (wrong token, HMAC or keys) and data refused on a subflow
    /// whose handshake the passive end had not checked.
    refused: u64,
    states: Vec<SubflowState>,
    views: Vec<SubflowView>,
}

impl MptcpConn {
    /// A connection for flow `flow` over the subflow connections `conns` (whose settings are
    /// `cfg`), with the two ends' keys and each subflow's nonces.
    pub fn new(
        flow: u32,
        settings: &MptcpSettings,
        conns: &[u32],
        keys: (u64, u64),
        nonces: &[(u32, u32)],
        cfg: &TcpConfig,
    ) -> MptcpConn {
        let scheduler: Box<dyn PacketScheduler> = match settings.scheduler {
            MptcpScheduler::LowestRtt => Box::new(LowestRtt),
            MptcpScheduler::RoundRobin => Box::new(RoundRobin::default()),
        };
        MptcpConn {
            flow,
            subflows: conns
                .iter()
                .zip(nonces)
                .map(|(&conn, &nonces)| Subflow {
                    conn,
                    opening: Opening::Idle,
                    verified: false,
                    third_ack: None,
                    join: None,
                    responder: None,
                    nonces,
                    maps: VecDeque::new(),
                    written: 0,
                    acked: 0,
                    timeouts: 0,
                    stale: false,
                })
                .collect(),
            client: CapableClient::new(settings.version, keys.0),
            server: CapableServer::new(settings.version, keys.1),
            client_keys: None,
            client_data_ack: None,
            server_keys: None,
            tx: None,
            rx: None,
            fully_established: false,
            scheduler,
            reinject: VecDeque::new(),
            reinjected: 0,
            app_unsent: 0,
            app_closed: false,
            window_bytes: cfg.receive_window_bytes,
            mss: cfg.mss_bytes,
            coupled: cfg.cc.is_coupled(),
            refused: 0,
            states: vec![SubflowState::default(); conns.len()],
            views: vec![SubflowView::default(); conns.len()],
        }
    }

    /// The next segment's worth of the application's data, mapped onto the subflow the
    /// scheduler picks: (subflow, data sequence number, length); None when nothing is to be
    /// sent, the peer's window is full or no subflow has room.
    fn map_next(&mut self) -> Option<(usize, u64, u32)> {
        let tx = self.tx.as_mut()?;
        if self.app_unsent == 0 {
            return None;
        }
        let len = u64::from(self.mss).min(self.app_unsent) as u32;
        // A segment's worth or nothing: every mapping but a transfer's last is a full
        // segment, so a subflow's segments never straddle two mappings.
        if tx.window_room_bytes() < u64::from(len) {
            return None;
        }
        self.states.iter_mut().for_each(|s| s.next_segment_bytes = len);
        let k = self.scheduler.pick(&self.states)?;
        let map = tx.map_new(len, k).expect("the window has room");
        self.app_unsent -= u64::from(len);
        Some((k, map.dsn, len))
    }

    /// The protocol version.
    fn version(&self) -> MptcpVersion {
        self.client.version()
    }
}

impl Simulation {
    /// The flow's application starts: `bytes` to send (`closed` for a transfer that writes
    /// nothing more); the first subflow sends its SYN.
    pub(crate) fn mptcp_start(&mut self, mp: u32, bytes: u64, closed: bool) {
        let m = &mut self.traffic.mptcp[mp as usize];
        m.app_unsent = bytes;
        m.app_closed = closed;
        self.send_syn(mp, 0);
    }

    /// The application stops (bulk): what no subflow has sent yet is discarded.
    pub(crate) fn mptcp_stop(&mut self, mp: u32) {
        let m = &mut self.traffic.mptcp[mp as usize];
        m.app_unsent = 0;
        for s in &m.subflows {
            self.traffic.conns[s.conn as usize].sender.discard_unsent();
        }
    }

    fn send_syn(&mut self, mp: u32, k: usize) {
        let m = &mut self.traffic.mptcp[mp as usize];
        let opt = match &m.subflows[k].join {
            Some(j) => j.syn(),
            None => m.client.syn(),
        };
        let s = &mut m.subflows[k];
        let tries = match s.opening {
            Opening::SynSent(n) => n + 1,
            _ => 1,
        };
        s.opening = Opening::SynSent(tries);
        let c = s.conn;
        let retry_ns = SYN_RTO_NS << (tries - 1).min(SYN_RETRIES);
        self.traffic.conns[c as usize].handshake_deadline_ns =
            (tries <= SYN_RETRIES).then(|| ps_to_ns(self.net.now) + retry_ns);
        self.send_handshake(c, Handshake::Syn, opt);
        self.arm_timer(c);
    }

    /// Send a handshake segment of connection `c` carrying `opt`.
    fn send_handshake(&mut self, c: u32, kind: Handshake, opt: MptcpOption) {
        let conn = &self.traffic.conns[c as usize];
        let (node, port, mut meta, is_ack) = match kind {
            Handshake::Syn | Handshake::Ack => (conn.src_node, conn.data_port, conn.data_meta, false),
            Handshake::SynAck => (conn.dst_node, conn.ack_port, conn.ack_meta, true),
        };
        let part = TcpPart {
            conn: c,
            is_ack,
            seg: Segment::default(),
            handshake: Some(kind),
            mptcp: self.net.mptcp_options.insert(opt),
        };
        meta.wire_len_bytes = TCP_OVERHEAD_BYTES + option_bytes(&opt);
        meta.ecn = Ecn::NotEct;
        meta.ext = HeaderExt::Tcp {
            flags: part.flags(),
            mptcp: Some(opt.kind()),
        };
        let flow = self.conn_flow(c);
        let mut pkt = Packet::bare(meta, flow, self.net.now);
        pkt.tcp = self.net.tcp_parts.insert(part);
        self.output(node, port, pkt);
    }

    /// The handshake timer of subflow connection `c` fired: send its SYN again, or repeat an
    /// MP_JOIN third ACK the peer has not answered.
    pub(crate) fn on_handshake_timer(&mut self, c: u32) {
        let Owner::Subflow { mp, k } = self.traffic.conns[c as usize].owner else {
            return;
        };
        self.traffic.conns[c as usize].handshake_deadline_ns = None;
        let s = &self.traffic.mptcp[mp as usize].subflows[k as usize];
        match (s.opening, s.third_ack) {
            (Opening::SynSent(_), _) => self.send_syn(mp, usize::from(k)),
            (Opening::Established, Some(opt)) => {
                self.send_handshake(c, Handshake::Ack, opt);
                self.traffic.conns[c as usize].handshake_deadline_ns = Some(ps_to_ns(self.net.now) + SYN_RTO_NS);
            }
            _ => {}
        }
    }

    /// A handshake segment arrived on subflow `k` of connection `mp`.
    pub(crate) fn on_handshake(&mut self, mp: u32, k: u8, t: &TcpPart, option: Option<MptcpOption>) {
        let Some(opt) = option else {
            return;
        };
        let c = t.conn;
        let k = usize::from(k);
        match t.handshake {
            Some(Handshake::Syn) => self.on_syn(mp, k, c, &opt),
            Some(Handshake::SynAck) => self.on_syn_ack(mp, k, c, &opt),
            Some(Handshake::Ack) => self.on_third_ack(mp, k, &opt),
            None => {}
        }
    }

    /// The passive end: a SYN. MP_CAPABLE's is always answered; an MP_JOIN's once the
    /// connection's keys are known, and only if it names this connection's token.
    fn on_syn(&mut self, mp: u32, k: usize, c: u32, opt: &MptcpOption) {
        let m = &mut self.traffic.mptcp[mp as usize];
        let reply = if k == 0 {
            if m.server_keys.is_none() {
                if let Some(keys) = m.server.keys_from_syn(opt) {
                    self.server_learns_keys(mp, keys);
                }
            }
            self.traffic.mptcp[mp as usize].server.on_syn(opt)
        } else {
            match m.server_keys {
                None => {
                    m.refused += 1;
                    return;
                }
                Some(keys) => {
                    let s = &mut m.subflows[k];
                    s.responder
                        .get_or_insert_with(|| JoinResponder::new(keys, s.nonces.1, k as u8))
                        .on_syn(opt)
                }
            }
        };
        match reply {
            Ok(o) => self.send_handshake(c, Handshake::SynAck, o),
            Err(_) => self.traffic.mptcp[mp as usize].refused += 1,
        }
    }

    /// The active end: a SYN/ACK. The first subflow learns the keys, answers with MP_CAPABLE's
    /// third ACK and opens the others; a joining subflow checks the peer's HMAC and answers
    /// with its own.
    fn on_syn_ack(&mut self, mp: u32, k: usize, c: u32, opt: &MptcpOption) {
        let m = &mut self.traffic.mptcp[mp as usize];
        let result = match &m.subflows[k].join {
            Some(j) => j.on_syn_ack(opt).map(|ack| (ack, None)),
            None => m.client.on_syn_ack(opt).map(|(ack, keys)| (ack, Some(keys))),
        };
        let Ok((ack, keys)) = result else {
            m.refused += 1;
            return;
        };
        let first_time = m.subflows[k].opening != Opening::Established;
        m.subflows[k].opening = Opening::Established;
        self.traffic.conns[c as usize].handshake_deadline_ns = None;
        self.send_handshake(c, Handshake::Ack, ack);
        if !first_time {
            return;
        }
        match keys {
            Some(keys) => self.client_learns_keys(mp, keys),
            None => {
                // MP_JOIN's third ACK is reliable: repeat it until the peer answers on the subflow.
                self.traffic.mptcp[mp as usize].subflows[k].third_ack = Some(ack);
                self.traffic.conns[c as usize].handshake_deadline_ns = Some(ps_to_ns(self.net.now) + SYN_RTO_NS);
                self.arm_timer(c);
            }
        }
        self.mptcp_pump(mp, Some(k));
    }

    /// The first subflow is up at the active end: the data stream starts.
    fn client_learns_keys(&mut self, mp: u32, keys: ConnectionKeys) {
        let m = &mut self.traffic.mptcp[mp as usize];
        m.client_keys = Some(keys);
        // It receives no data: its DATA_ACK stays the peer's first data sequence number.
        m.client_data_ack = Some(keys.remote_idsn().wrapping_add(1));
        m.tx = Some(DataSender::new(keys.local_idsn(), m.window_bytes));
    }

    /// The first DATA_ACK arrived: the connection is fully established (RFC 8684 3.1; the peer
    /// has the keys), and every other subflow sends its MP_JOIN SYN, as Linux's path manager
    /// opens subflows then. Earlier, a join could overtake the third ACK and be refused.
    fn open_joins(&mut self, mp: u32) {
        let m = &mut self.traffic.mptcp[mp as usize];
        let Some(keys) = m.client_keys else { return };
        for k in 1..m.subflows.len() {
            let s = &mut m.subflows[k];
            s.join = Some(JoinInitiator::new(keys, s.nonces.0, k as u8, false));
        }
        for k in 1..self.traffic.mptcp[mp as usize].subflows.len() {
            self.send_syn(mp, k);
        }
    }

    fn server_learns_keys(&mut self, mp: u32, keys: ConnectionKeys) {
        let m = &mut self.traffic.mptcp[mp as usize];
        m.server_keys = Some(keys);
        m.rx = Some(DataReceiver::new(keys.remote_idsn(), m.window_bytes));
    }

    /// The passive end: a third ACK (MP_CAPABLE's keys, or MP_JOIN's HMAC).
    fn on_third_ack(&mut self, mp: u32, k: usize, opt: &MptcpOption) {
        let m = &mut self.traffic.mptcp[mp as usize];
        let ok = if k == 0 {
            match m.server.on_ack(opt) {
                Ok(keys) => {
                    if m.server_keys.is_none() {
                        self.server_learns_keys(mp, keys);
                    }
                    true
                }
                Err(_) => false,
            }
        } else {
            m.subflows[k].responder.as_ref().is_some_and(|r| r.on_ack(opt).is_ok())
        };
        let m = &mut self.traffic.mptcp[mp as usize];
        if ok {
            m.subflows[k].verified = true;
        } else {
            m.refused += 1;
        }
    }

    /// Subflow `k` timed out: if it carries the oldest data the peer has not acknowledged at the
    /// data level (what holds the connection's in-order delivery), that mapping goes again on
    /// the subflow the scheduler would pick among the others, as Linux's MPTCP retransmits at
    /// the connection level (RFC 8684 3.3.6); after `STALE_LOSS_COUNT` timeouts in a row the
    /// subflow is stale and everything it holds goes. The receiver counts whichever copy comes
    /// second as a duplicate.
    pub(crate) fn mptcp_reinject(&mut self, mp: u32, k: u8) {
        let k = usize::from(k);
        let s = &mut self.traffic.mptcp[mp as usize].subflows[k];
        s.timeouts += 1;
        s.stale |= s.timeouts >= STALE_LOSS_COUNT;
        let stale = s.stale;
        self.mptcp_subflow_states(mp);
        let m = &mut self.traffic.mptcp[mp as usize];
        let Some(tx) = m.tx.as_mut() else { return };
        // Any other usable subflow, the scheduler's choice first, room or not.
        m.states[k].active = false;
        let to = m
            .scheduler
            .pick(&m.states)
            .or_else(|| m.states.iter().position(|s| s.active));
        let Some(to) = to else { return };
        let maps = if stale {
            tx.reinject(k, to)
        } else {
            tx.reinject_first(k, to).into_iter().collect()
        };
        for map in maps {
            m.reinject.push_back((map.dsn, map.len, to));
            m.reinjected += 1;
        }
    }

    /// What the scheduler sees of each subflow of connection `mp` now.
    fn mptcp_subflow_states(&mut self, mp: u32) {
        let m = &mut self.traffic.mptcp[mp as usize];
        for (st, s) in m.states.iter_mut().zip(&m.subflows) {
            let sender = &self.traffic.conns[s.conn as usize].sender;
            *st = SubflowState {
                active: s.opening == Opening::Established && !s.stale,
                backup: false,
                srtt_ns: sender.rtt().srtt_ns().unwrap_or(0),
                cwnd_bytes: sender.cwnd_bytes(),
                in_flight_bytes: sender.in_flight_bytes() + sender.unsent_bytes(),
                next_segment_bytes: m.mss,
            };
        }
    }

    /// Hand `len` bytes from data sequence number `dsn` to subflow `k`.
    fn mptcp_assign(&mut self, mp: u32, k: usize, dsn: u64, len: u32) {
        let m = &mut self.traffic.mptcp[mp as usize];
        let s = &mut m.subflows[k];
        match s.maps.back_mut() {
            Some((off, d, l))
                if *off + u64::from(*l) == s.written && *d + u64::from(*l) == dsn && l.checked_add(len).is_some() =>
            {
                *l += len
            }
            _ => {
                s.maps.push_back((s.written, dsn, len));
                s.written += u64::from(len);
                m.states[k].in_flight_bytes += u64::from(len);
                // A new mapping: no segment may carry bytes of it and of the one before.
                self.traffic.conns[s.conn as usize].sender.write_record(u64::from(len));
                return;
            }
        }
        s.written += u64::from(len);
        m.states[k].in_flight_bytes += u64::from(len);
        self.traffic.conns[s.conn as usize].sender.write(u64::from(len));
    }

    /// Map what the application has written onto subflows with room, as the scheduler picks,
    /// after any data to reinject, then let send the subflows that got data and `trigger`, the
    /// one whose ACK, timer or handshake called (its window may have opened on data it holds);
    /// the others have nothing new to send.
    pub(crate) fn mptcp_pump(&mut self, mp: u32, trigger: Option<usize>) {
        self.mptcp_subflow_states(mp);
        // Subflows to let send, one bit each (at most `MAX_SUBFLOWS`).
        let mut send: u32 = trigger.map_or(0, |k| 1 << k);
        while let Some(&(dsn, len, to)) = self.traffic.mptcp[mp as usize].reinject.front() {
            self.traffic.mptcp[mp as usize].reinject.pop_front();
            self.mptcp_assign(mp, to, dsn, len);
            send |= 1 << to;
        }
        while let Some((k, dsn, len)) = self.traffic.mptcp[mp as usize].map_next() {
            self.mptcp_assign(mp, k, dsn, len);
            send |= 1 << k;
            let m = &self.traffic.mptcp[mp as usize];
            if m.app_unsent == 0 && m.app_closed {
                for s in &m.subflows {
                    self.traffic.conns[s.conn as usize].sender.close();
                }
            }
        }
        for k in 0..self.traffic.mptcp[mp as usize].subflows.len() {
            let s = &self.traffic.mptcp[mp as usize].subflows[k];
            if send & (1 << k) != 0 && s.opening == Opening::Established {
                self.pump(s.conn);
            }
        }
    }

    /// The option a data segment of subflow `k` carries: its DSS mapping (on version 1's first
    /// segment, MP_CAPABLE with both keys and the length instead).
    pub(crate) fn mptcp_data_option(&self, mp: u32, k: u8, seg: &Segment) -> Option<MptcpOption> {
        let m = &self.traffic.mptcp[mp as usize];
        let s = &m.subflows[usize::from(k)];
        if k == 0 && seg.seq == 0 && m.version() == MptcpVersion::V1 {
            let keys = m.client_keys?;
            return Some(m.client.first_data(keys.remote_key, seg.len as u16));
        }
        let i = s.maps.partition_point(|&(off, _, _)| off <= seg.seq).checked_sub(1)?;
        let (off, dsn, len) = s.maps[i];
        debug_assert!(seg.end() <= off + u64::from(len), "a segment within one mapping");
        Some(MptcpOption::Dss {
            data_ack: m.client_data_ack.map(|a| (a, true)),
            mapping: Some(DssMapping {
                data_seq: dsn.wrapping_add(seg.seq - off),
                dsn64: true,
                // Relative to the subflow's ISN: its SYN took sequence number 0.
                subflow_seq: (seg.seq + 1) as u32,
                len: seg.len as u16,
                checksum: None,
            }),
            data_fin: false,
        })
    }

    /// The option an ACK of subflow connection `mp` carries (the DATA_ACK), and the connection's
    /// window in `seg`.
    pub(crate) fn mptcp_ack_option(&self, mp: u32, seg: &mut Segment) -> Option<MptcpOption> {
        let rx = self.traffic.mptcp[mp as usize].rx.as_ref()?;
        seg.window_bytes = rx.window_bytes();
        Some(MptcpOption::Dss {
            data_ack: Some((rx.data_ack(), true)),
            mapping: None,
            data_fin: false,
        })
    }

    /// The passive end: a data segment on subflow `k`. False when it is refused (the subflow's
    /// handshake unchecked); otherwise its data goes to the connection-level reassembly at once
    /// (the subflow orders only its own acknowledgements) and what that delivers is counted.
    pub(crate) fn mptcp_on_data(&mut self, mp: u32, k: u8, t: &TcpPart, option: Option<MptcpOption>) -> bool {
        let k = usize::from(k);
        if !self.traffic.mptcp[mp as usize].subflows[k].verified {
            // Version 1's first data segment repeats the keys, in case the third ACK was lost.
            match &option {
                Some(o @ MptcpOption::Capable { data: Some(_), .. }) if k == 0 => self.on_third_ack(mp, 0, o),
                _ => self.traffic.mptcp[mp as usize].refused += 1,
            }
            if !self.traffic.mptcp[mp as usize].subflows[k].verified {
                return false;
            }
        }
        let m = &mut self.traffic.mptcp[mp as usize];
        let (Some(rx), Some(keys)) = (m.rx.as_mut(), m.server_keys) else {
            return false;
        };
        let dsn = match option {
            Some(MptcpOption::Dss { mapping: Some(map), .. }) => map.data_seq,
            Some(MptcpOption::Capable { data: Some(_), .. }) => keys.remote_idsn().wrapping_add(1),
            _ => return true,
        };
        let got = rx.on_data(dsn, t.seg.len);
        if got.delivered_bytes > 0 {
            self.mptcp_delivered(mp, got.delivered_bytes);
        }
        true
    }

    /// Connection `mp`'s counters, for the results.
    pub(crate) fn mptcp_figures(&self, mp: u32) -> mpsched_scenario::results::MptcpFigures {
        let m = &self.traffic.mptcp[mp as usize];
        let rx = m.rx.as_ref().map(|r| r.stats()).unwrap_or_default();
        mpsched_scenario::results::MptcpFigures {
            reinjected_mappings: m.reinjected,
            duplicate_bytes: rx.duplicate_bytes,
            out_of_order_bytes: rx.out_of_order_bytes,
            refused_segments: m.refused,
        }
    }

    fn mptcp_delivered(&mut self, mp: u32, bytes: u64) {
        let now = self.net.now;
        let m = &self.traffic.mptcp[mp as usize];
        let total = m.rx.as_ref().map_or(0, |rx| rx.stats().delivered_bytes);
        let f = &mut self.traffic.flows[m.flow as usize];
        f.record_goodput(now, bytes);
        if let Some(t) = f.tcp.as_mut() {
            if let mpsched_scenario::TcpApp::Transfer { size_bytes } = t.app {
                if total >= size_bytes && t.completion_ps.is_none() {
                    t.completion_ps = Some(now);
                }
            }
        }
    }

    /// The active end: an ACK on subflow `k`. Its controller sees the siblings (when coupled),
    /// the DATA_ACK frees data, and the connection sends what it now may.
    pub(crate) fn mptcp_on_ack(&mut self, mp: u32, k: u8, t: &TcpPart, option: Option<MptcpOption>) {
        let now_ns = ps_to_ns(self.net.now);
        let k = usize::from(k);
        let m = &mut self.traffic.mptcp[mp as usize];
        let c = m.subflows[k].conn;
        if m.subflows[k].third_ack.take().is_some() {
            self.traffic.conns[c as usize].handshake_deadline_ns = None;
        }
        if m.coupled {
            for (v, s) in m.views.iter_mut().zip(&m.subflows) {
                let sender = &self.traffic.conns[s.conn as usize].sender;
                *v = SubflowView {
                    cwnd_bytes: sender.coupling_window_bytes(),
                    srtt_ns: sender.rtt().srtt_ns().unwrap_or(0),
                    loss_interval_bytes: sender.controller().loss_interval_bytes(),
                };
            }
            self.traffic.conns[c as usize]
                .sender
                .on_ack_coupled(now_ns, &t.seg, &m.views, k);
        } else {
            self.traffic.conns[c as usize].sender.on_ack(now_ns, &t.seg);
        }
        let mut fully_established = false;
        if let (
            Some(MptcpOption::Dss {
                data_ack: Some((ack, _)),
                ..
            }),
            Some(tx),
        ) = (option, m.tx.as_mut())
        {
            tx.on_data_ack(ack, t.seg.window_bytes);
            fully_established = !std::mem::replace(&mut m.fully_established, true);
        }
        let acked = self.traffic.conns[c as usize].sender.acked_bytes();
        let s = &mut m.subflows[k];
        if acked > s.acked {
            // New data acknowledged: the subflow works.
            s.timeouts = 0;
            s.stale = false;
            s.acked = acked;
        }
        let maps = &mut s.maps;
        while maps.front().is_some_and(|&(off, _, len)| off + u64::from(len) <= acked) {
            maps.pop_front();
        }
        mpsched_transport::release_burst_room(maps);
        if fully_established {
            self.open_joins(mp);
        }
        self.mptcp_pump(mp, Some(k));
    }
}
