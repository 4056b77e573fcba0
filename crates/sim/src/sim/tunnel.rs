//! Multipath tunnels in the simulator: the endpoints of `mpsched-tunnel` (classification,
//! scheduling, order stamps, decapsulation, the reordering measure) driven with the simulator's
//! links and TCP connections as subtunnels (a byte stream of framed packets over TCP, one
//! datagram per packet over UDP).

use super::Simulation;
use crate::event::EventKind;
use crate::packet::{Packet, NO_INNER};
use mpsched_core::packet::PortId;
use mpsched_core::tunnel::{FlowKey, SubtunnelView};
use mpsched_scenario::results::{round, ReorderFigures, SubtunnelFigures, TunnelFigures};
use mpsched_scenario::NodeKind;
use mpsched_scenario::SubtunnelTransport;
use mpsched_topo::addressing::{subtunnel_addr, subtunnel_of, TunnelDir};
use mpsched_tunnel::framing::udp_outer;
use mpsched_tunnel::path::{PathConfig, PathReceiver, PathSender};
use mpsched_tunnel::reorder::ReorderBuffer;
use mpsched_tunnel::wire::Ack;
use mpsched_tunnel::{TunnelEntry, TunnelExit, TCP_FRAMING_BYTES};
use std::collections::BTreeMap;

/// UDP source port of a simulated subtunnel acknowledgement (data leaves from
/// `TUNNEL_UDP_PORT`): how the entry tells one from data.
pub(crate) const ACK_SRC_PORT: u16 = 4790;
/// Bytes an acknowledged subtunnel's datagram carries beyond the outer IPv4 and UDP headers:
/// the daemon's 20-byte header in its clear mode and the 12-byte data header.
pub(crate) const ACKED_DATA_EXTRA_BYTES: u32 = 20 + 12;
/// Wire bytes of an acknowledgement: Ethernet, IPv4, UDP, the 20-byte header, 16 bytes.
pub(crate) const ACK_WIRE_BYTES: u32 = 14 + 20 + 8 + 20 + 16;

/// The path timing of the simulator's acknowledged subtunnels: every datagram acknowledged at
/// once (no delayed acknowledgement, so no timer), liveness left to the scheduler.
pub(crate) fn sim_path_config() -> PathConfig {
    PathConfig {
        ack_every: 1,
        ..PathConfig::default()
    }
}

/// An acknowledgement in a simulated packet's two spare fields (`seq`: highest and received;
/// `sent_ps`: echoed send time and hold time, µs), undone by [`ack_of`].
fn ack_into(pkt: &mut Packet, a: &Ack) {
    pkt.seq = u64::from(a.highest_seq) << 32 | u64::from(a.received);
    pkt.sent_ps = u64::from(a.echo_us) << 32 | u64::from(a.ack_delay_us);
}

fn ack_of(pkt: &Packet) -> Ack {
    Ack {
        highest_seq: (pkt.seq >> 32) as u32,
        received: pkt.seq as u32,
        echo_us: (pkt.sent_ps >> 32) as u32,
        ack_delay_us: pkt.sent_ps as u32,
    }
}

/// A subtunnel of a tunnel in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TunnelRef {
    pub tunnel: u32,
    pub dir: TunnelDir,
}

/// The tunnels that end at a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TunnelEnds {
    /// None.
    None,
    /// One: packets for the hosts behind its far end enter it (`TunnelEntry::carries`).
    One {
        /// The tunnel.
        tunnel: u32,
        /// The direction it encapsulates in here (0 down, 1 up).
        dir: u8,
    },
    /// Several, each with a host at its far end: a packet enters the one whose far end it is
    /// addressed to (`Traffic::tunnel_by_dst`, one probe, not a scan of the tunnels).
    Many,
}

/// One direction of a tunnel: its entry at `node` and its exit at the other end.
pub(crate) struct TunnelSide {
    /// Per subtunnel, where the scheduler learns of its paths from acknowledgements
    /// ([`TunnelState::acked`]): the entry's path sender (numbers, RTT, in-flight, loss) and
    /// the exit's path receiver, as the tunnel daemon has them. Empty otherwise.
    pub senders: Vec<PathSender>,
    pub receivers: Vec<PathReceiver>,
    /// Per subtunnel with `senders`: the sum of the RTT samples, ns, and their number.
    pub rtt_sum_ns: Vec<u64>,
    pub rtt_samples: Vec<u64>,
    /// The exit's reordering buffer (UDP subtunnels, `reorder_capacity` > 0): inner packets
    /// by their index in the store, with the port they arrived by.
    pub reorder: Option<ReorderBuffer<(u32, PortId)>>,
    /// When the buffer's pending timer event fires, ps.
    pub reorder_timer_ps: Option<u64>,
    /// Occupancy summed over the time series' samples, and their number.
    pub occupancy_sum: u64,
    pub occupancy_samples: u64,
    /// The node that encapsulates in this direction.
    pub node: u32,
    pub entry: TunnelEntry,
    pub exit: TunnelExit,
    /// Per subtunnel: the TCP connection (TCP transport).
    pub conns: Vec<u32>,
    /// Per subtunnel: the egress port at `node`.
    pub ports: Vec<PortId>,
}

/// A tunnel.
pub(crate) struct TunnelState {
    pub name: String,
    pub scheduler_name: &'static str,
    pub transport: SubtunnelTransport,
    pub send_buffer_bytes: u64,
    pub subtunnel_names: Vec<String>,
    /// Whether UDP subtunnels carry path numbers and send times and the exit acknowledges
    /// every datagram (schedulers that ask: `needs_path_acks`).
    pub acked: bool,
    /// Down (entry -> exit), Up.
    pub sides: [TunnelSide; 2],
}

/// A packet inside a tunnel, with its entry order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inner {
    pub pkt: Packet,
    pub entry_seq: u64,
}

/// The subtunnel index an address names.
fn subtunnel_j(addr: mpsched_core::packet::Ipv4) -> usize {
    subtunnel_of(addr).map_or(0, |(_, j, _)| j)
}

impl Simulation {
    fn store_inner(&mut self, inner: Inner) -> u32 {
        self.net.inner.insert(inner)
    }

    pub(crate) fn take_inner(&mut self, i: u32) -> Inner {
        self.net.inner.take(i)
    }

    /// Packets held inside tunnels: in UDP subtunnel datagrams still on their way and in TCP
    /// subtunnel streams not yet delivered in order.
    pub fn tunnel_packets_held(&self) -> usize {
        self.net.inner.len()
    }

    /// What the scheduler sees of each subtunnel of `t` in direction `d`.
    fn views(&mut self, t: usize, d: usize) {
        self.traffic.view_buf.clear();
        let tun = &self.traffic.tunnels[t];
        for j in 0..tun.sides[d].ports.len() {
            let v = match tun.transport {
                SubtunnelTransport::Tcp => {
                    let c = &self.traffic.conns[tun.sides[d].conns[j] as usize];
                    SubtunnelView {
                        path: j as u8,
                        fill_bytes: c.sender.unacked_bytes(),
                        cwnd_bytes: c.sender.cwnd_bytes(),
                        srtt_ns: c.sender.rtt().srtt_ns().unwrap_or(0),
                        ..SubtunnelView::default()
                    }
                }
                SubtunnelTransport::Udp if tun.acked => {
                    let node = tun.sides[d].node as usize;
                    let l = self.net.nodes[node].out_links[usize::from(tun.sides[d].ports[j])] as usize;
                    let p = tun.sides[d].senders[j].view();
                    SubtunnelView {
                        path: j as u8,
                        fill_bytes: self.net.links[l].queued_bytes,
                        cwnd_bytes: 0,
                        srtt_ns: p.srtt_ns,
                        min_rtt_ns: p.min_rtt_ns,
                        in_flight_pkts: p.in_flight,
                        in_flight_bytes: p.in_flight_bytes,
                        delivery_rate_bytes_per_s: p.delivery_rate_bytes_per_s,
                        weight: 0,
                    }
                }
                SubtunnelTransport::Udp => {
                    let node = tun.sides[d].node as usize;
                    let l = self.net.nodes[node].out_links[usize::from(tun.sides[d].ports[j])] as usize;
                    SubtunnelView {
                        path: j as u8,
                        fill_bytes: self.net.links[l].queued_bytes,
                        cwnd_bytes: 0,
                        srtt_ns: 0,
                        ..SubtunnelView::default()
                    }
                }
            };
            self.traffic.view_buf.push(v);
        }
    }

    /// If `pkt` at `node` (arriving at a switch, or sent by a host) must enter a tunnel there,
    /// schedule and send it; the packet back if it is not tunnel traffic.
    pub(crate) fn tunnel_ingress(&mut self, node: u32, pkt: Packet) -> Result<(), Packet> {
        if pkt.inner != NO_INNER {
            return Err(pkt);
        }
        let (t, d) = match self.net.nodes[node as usize].tunnel_ends {
            TunnelEnds::None => return Err(pkt),
            TunnelEnds::One { tunnel, dir } => {
                if !self.traffic.tunnels[tunnel as usize].sides[usize::from(dir)]
                    .entry
                    .carries(&pkt.meta)
                {
                    return Err(pkt);
                }
                (tunnel, dir)
            }
            TunnelEnds::Many => match self.traffic.tunnel_by_dst.get(&(node, pkt.meta.dst_ip)) {
                Some(&(t, d)) => (t, d),
                None => return Err(pkt),
            },
        };
        let (ti, di) = (t as usize, d as usize);
        self.views(ti, di);
        let side = &mut self.traffic.tunnels[ti].sides[di];
        let s = side
            .entry
            .schedule(&pkt.meta, self.net.now / 1000, &self.traffic.view_buf);
        let (j, port) = (s.subtunnel, side.ports[s.subtunnel]);
        let idx = self.store_inner(Inner {
            pkt,
            entry_seq: s.entry_seq,
        });
        match self.traffic.tunnels[ti].transport {
            SubtunnelTransport::Tcp => {
                let c = self.traffic.tunnels[ti].sides[di].conns[j];
                let size = u64::from(s.ip_bytes + TCP_FRAMING_BYTES);
                let buf = self.traffic.tunnels[ti].send_buffer_bytes;
                let conn = &mut self.traffic.conns[c as usize];
                if conn.sender.unacked_bytes() + size > buf {
                    self.traffic.tunnels[ti].sides[di].entry.note_send_buffer_drop();
                    let dropped = self.take_inner(idx);
                    self.release(&dropped.pkt);
                    return Ok(());
                }
                conn.sender.write(size);
                let end = conn.records.push(size, idx);
                debug_assert_eq!(end, conn.sender.written_bytes(), "records frame the whole stream");
                self.pump(c);
            }
            SubtunnelTransport::Udp => {
                let dir = if d == 0 { TunnelDir::Down } else { TunnelDir::Up };
                let own_ip = self.net.nodes[node as usize].ip;
                let mut meta = udp_outer(own_ip, subtunnel_addr(ti, j, dir), &pkt.meta);
                let mut outer = Packet::bare(meta, pkt.flow, self.net.now);
                outer.payload_bytes = s.ip_bytes;
                outer.inner = idx;
                let side = &mut self.traffic.tunnels[ti].sides[di];
                if let Some(sender) = side.senders.get_mut(j) {
                    let (path_seq, sent_us) = sender.on_send_data(self.net.now / 1000, u64::from(s.ip_bytes));
                    outer.seq = u64::from(sent_us) << 32 | u64::from(path_seq);
                    meta.wire_len_bytes += ACKED_DATA_EXTRA_BYTES;
                    outer.meta = meta;
                    outer.payload_bytes += ACKED_DATA_EXTRA_BYTES;
                }
                self.output(node, port, outer);
            }
        }
        Ok(())
    }

    /// A UDP subtunnel datagram reached the far end: decapsulate and forward.
    pub(crate) fn udp_subtunnel_arrival(&mut self, node: u32, port: PortId, outer: Packet) {
        let mut inner = self.take_inner(outer.inner);
        // The address names the tunnel and the direction the packet travels in (whose exit
        // this is); `input` hands over only addresses this node terminates.
        let Some((t, _, dir)) = subtunnel_of(outer.meta.dst_ip) else {
            self.net.nodes[node as usize].dropped += 1;
            self.release(&inner.pkt);
            return;
        };
        let d = dir as usize;
        if self.traffic.tunnels[t].acked {
            self.acknowledge(node, t, d, subtunnel_j(outer.meta.dst_ip), &outer);
        }
        let exit = &mut self.traffic.tunnels[t].sides[d].exit;
        match exit.decapsulate(outer.meta.ecn, inner.pkt.meta.ecn) {
            Ok(ecn) => inner.pkt.meta.ecn = ecn,
            Err(_) => {
                self.net.nodes[node as usize].dropped += 1;
                self.release(&inner.pkt);
                return;
            }
        }
        if self.traffic.tunnels[t].sides[d].reorder.is_some() {
            let j = subtunnel_j(outer.meta.dst_ip);
            let seq = inner.entry_seq as u32;
            let idx = self.store_inner(inner);
            let now_ns = self.net.now / 1000;
            let mut out = std::mem::take(&mut self.traffic.reorder_out);
            if let Some(rb) = self.traffic.tunnels[t].sides[d].reorder.as_mut() {
                rb.push_on(j, seq, now_ns, (idx, port), &mut out);
            }
            self.release_reordered(t, d, node, &mut out);
            self.traffic.reorder_out = out;
            return;
        }
        self.tunnel_egress(t, d, node, port, inner);
    }

    /// Forward what the reordering buffer of direction `d` of tunnel `t` (at `node`) released,
    /// and keep its timer armed for the next packet due.
    fn release_reordered(&mut self, t: usize, d: usize, node: u32, out: &mut Vec<(u32, PortId)>) {
        for (idx, port) in out.drain(..) {
            let inner = self.take_inner(idx);
            self.tunnel_egress(t, d, node, port, inner);
        }
        let side = &mut self.traffic.tunnels[t].sides[d];
        let Some(due_ns) = side.reorder.as_mut().and_then(|rb| rb.deadline_ns()) else {
            return;
        };
        let due_ps = due_ns.saturating_mul(1000).max(self.net.now);
        if side.reorder_timer_ps.is_none_or(|at| at > due_ps) {
            side.reorder_timer_ps = Some(due_ps);
            self.net
                .queue
                .schedule(due_ps, EventKind::ReorderTimer((t * 2 + d) as u32));
        }
    }

    /// A reordering buffer's timer fired: release what has waited its timeout.
    pub(crate) fn on_reorder_timer(&mut self, code: u32) {
        let (t, d) = ((code / 2) as usize, (code % 2) as usize);
        let now = self.net.now;
        let side = &mut self.traffic.tunnels[t].sides[d];
        // Only the latest armed event is live; an earlier one that fires finds another pending.
        if side.reorder_timer_ps != Some(now) {
            return;
        }
        side.reorder_timer_ps = None;
        let node = self.traffic.tunnels[t].sides[1 - d].node;
        let mut out = std::mem::take(&mut self.traffic.reorder_out);
        if let Some(rb) = self.traffic.tunnels[t].sides[d].reorder.as_mut() {
            rb.poll(now / 1000, &mut out);
        }
        self.release_reordered(t, d, node, &mut out);
        self.traffic.reorder_out = out;
    }

    /// Sample each reordering buffer's occupancy (for its mean).
    pub(crate) fn sample_reorder_occupancy(&mut self) {
        for tun in &mut self.traffic.tunnels {
            for side in &mut tun.sides {
                if let Some(rb) = &side.reorder {
                    side.occupancy_sum += rb.stats().occupancy;
                    side.occupancy_samples += 1;
                }
            }
        }
    }

    /// The exit of direction `d` of tunnel `t` at `node` received datagram `outer` on subtunnel
    /// `j`: its path receiver takes it, and the acknowledgement goes back along the subtunnel
    /// to the entry's address of the other direction.
    fn acknowledge(&mut self, node: u32, t: usize, d: usize, j: usize, outer: &Packet) {
        let now_ns = self.net.now / 1000;
        let tun = &mut self.traffic.tunnels[t];
        let Some(rx) = tun.sides[d].receivers.get_mut(j) else {
            return;
        };
        rx.on_message(outer.seq as u32, (outer.seq >> 32) as u32, now_ns, false);
        let Some(ack) = rx.ack(now_ns) else {
            return;
        };
        let port = tun.sides[1 - d].ports[j];
        let back = if d == 0 { TunnelDir::Up } else { TunnelDir::Down };
        let own_ip = self.net.nodes[node as usize].ip;
        let meta = mpsched_core::packet::PacketMeta::udp(
            own_ip,
            subtunnel_addr(t, j, back),
            ACK_SRC_PORT,
            mpsched_tunnel::framing::TUNNEL_UDP_PORT,
            ACK_WIRE_BYTES,
        );
        let mut pkt = Packet::bare(meta, crate::packet::CONTROL_FLOW, 0);
        ack_into(&mut pkt, &ack);
        self.output(node, port, pkt);
    }

    /// An acknowledgement reached the entry it is addressed to: its path sender takes it and
    /// the scheduler hears of it.
    pub(crate) fn subtunnel_ack_arrival(&mut self, node: u32, pkt: Packet) {
        let now_ns = self.net.now / 1000;
        let Some((t, j, back)) = subtunnel_of(pkt.meta.dst_ip) else {
            self.net.nodes[node as usize].dropped += 1;
            return;
        };
        // Addressed to the other direction's address: it acknowledges this direction.
        let d = 1 - back as usize;
        let side = &mut self.traffic.tunnels[t].sides[d];
        let Some(tx) = side.senders.get_mut(j) else {
            self.net.nodes[node as usize].dropped += 1;
            return;
        };
        if tx.on_ack(&ack_of(&pkt), now_ns) {
            let sample = tx.ack_sample();
            side.rtt_sum_ns[j] += sample.rtt_ns;
            side.rtt_samples[j] += 1;
            side.entry.on_ack(j, &sample, now_ns);
        }
    }

    /// A TCP subtunnel's receiver delivered its stream up to `rcv_nxt`: forward every payload
    /// packet that is now complete.
    pub(crate) fn on_subtunnel_delivered(&mut self, r: TunnelRef, c: u32, rcv_nxt: u64) {
        let node = self.traffic.conns[c as usize].dst_node;
        let d = r.dir as usize;
        let port = self.traffic.conns[c as usize].ack_port;
        while let Some(idx) = self.traffic.conns[c as usize].records.pop_complete(rcv_nxt) {
            let inner = self.take_inner(idx);
            self.tunnel_egress(r.tunnel as usize, d, node, port, inner);
        }
    }

    fn tunnel_egress(&mut self, t: usize, d: usize, node: u32, port: PortId, inner: Inner) {
        let key = FlowKey::of(&inner.pkt.meta);
        self.traffic.tunnels[t].sides[d].exit.forward(&key, inner.entry_seq);
        if self.net.nodes[node as usize].kind == NodeKind::Host {
            // A host end: the packet is its own, taken in as if it had arrived bare.
            let id = self.net.pool.insert(inner.pkt);
            self.input(node, port, id);
        } else {
            self.route_packet(node, port, inner.pkt);
        }
    }

    /// Figures per tunnel and direction.
    pub(crate) fn tunnel_figures(&self) -> Vec<TunnelFigures> {
        let mut out = Vec::new();
        for t in &self.traffic.tunnels {
            for (d, side) in t.sides.iter().enumerate() {
                let (entry, exit) = (side.entry.stats(), side.exit.stats());
                out.push(TunnelFigures {
                    id: format!("{}.{}", t.name, if d == 0 { "down" } else { "up" }),
                    scheduler: t.scheduler_name.to_string(),
                    transport: t.transport.name().to_string(),
                    scheduled_pkts: entry.scheduled,
                    forwarded_pkts: exit.forwarded,
                    reordered_pkts: exit.reordered,
                    reordered_pct: if exit.forwarded == 0 {
                        0.0
                    } else {
                        round(100.0 * exit.reordered as f64 / exit.forwarded as f64, 4)
                    },
                    send_buffer_drops: entry.send_buffer_drops,
                    per_subtunnel_pkts: t
                        .subtunnel_names
                        .iter()
                        .cloned()
                        .zip(entry.per_subtunnel.iter().copied())
                        .collect::<BTreeMap<_, _>>(),
                    subtunnels: t.subtunnel_names.clone(),
                    per_subtunnel: subtunnel_figures(&t.subtunnel_names, side),
                    reorder_buffer: side.reorder.as_ref().map(|rb| reorder_figures(rb, side)),
                    scheduler_counters: side.entry.scheduler_counters().into_iter().collect(),
                });
            }
        }
        out
    }
}

/// RTT and loss of each acknowledged subtunnel of one direction.
fn subtunnel_figures(names: &[String], side: &TunnelSide) -> BTreeMap<String, SubtunnelFigures> {
    let mut out = BTreeMap::new();
    for (j, tx) in side.senders.iter().enumerate() {
        let v = tx.view();
        let min_ms = v.min_rtt_ns as f64 / 1e6;
        let mean_ms = if side.rtt_samples[j] == 0 {
            0.0
        } else {
            side.rtt_sum_ns[j] as f64 / side.rtt_samples[j] as f64 / 1e6
        };
        out.insert(
            names[j].clone(),
            SubtunnelFigures {
                min_rtt_ms: round(min_ms, 3),
                mean_rtt_ms: round(mean_ms, 3),
                rtt_inflation: if min_ms > 0.0 { round(mean_ms / min_ms, 3) } else { 0.0 },
                lost_pkts: v.lost,
                loss_pct: if v.sent == 0 {
                    0.0
                } else {
                    round(100.0 * v.lost as f64 / v.sent as f64, 3)
                },
            },
        );
    }
    out
}

/// A reordering buffer's figures.
fn reorder_figures(rb: &ReorderBuffer<(u32, PortId)>, side: &TunnelSide) -> ReorderFigures {
    let s = rb.stats();
    ReorderFigures {
        held_pkts: s.held,
        late_pkts: s.late,
        timeouts: s.timeouts,
        max_occupancy_pkts: s.max_occupancy,
        mean_occupancy_pkts: if side.occupancy_samples == 0 {
            0.0
        } else {
            round(side.occupancy_sum as f64 / side.occupancy_samples as f64, 3)
        },
        mean_hold_ms: if s.held == 0 {
            0.0
        } else {
            round(s.held_ns_sum as f64 / s.held as f64 / 1e6, 3)
        },
        max_hold_ms: round(s.held_ns_max as f64 / 1e6, 3),
    }
}
