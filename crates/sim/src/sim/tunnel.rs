//! Multipath tunnels in the simulator: encapsulation at the entry, the scheduler, subtunnels
//! over TCP (a byte stream of length-prefixed packets) or UDP (one datagram per packet), and
//! decapsulation with reordering measurement at the exit.

use super::Simulation;
use crate::packet::{Packet, NO_INNER};
use mpsched_core::packet::{Ecn, Ipv4, PacketMeta, PortId};
use mpsched_core::tunnel::{FlowKey, SubtunnelView, TunnelScheduler};
use mpsched_scenario::results::{round, TunnelFigures};
use mpsched_scenario::SubtunnelTransport;
use mpsched_topo::addressing::{subtunnel_addr, TunnelDir};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Bytes of the length header that frames each payload packet in a TCP subtunnel's stream.
pub const TCP_FRAMING_BYTES: u32 = 8;
/// Outer IPv4 + UDP header of a UDP subtunnel datagram (the outer Ethernet header replaces the
/// inner one).
pub const UDP_ENCAP_BYTES: u32 = 20 + 8;
/// UDP port of subtunnel datagrams.
pub const TUNNEL_UDP_PORT: u16 = 4789;

/// A subtunnel of a tunnel in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TunnelRef {
    pub tunnel: u32,
    pub dir: TunnelDir,
}

/// One direction of a tunnel.
pub(crate) struct TunnelSide {
    /// The node that encapsulates in this direction.
    pub node: u32,
    /// Hosts behind the other end: packets to them are tunnelled.
    pub far_hosts: HashSet<Ipv4>,
    pub scheduler: Box<dyn TunnelScheduler>,
    /// Per subtunnel: the TCP connection (TCP transport).
    pub conns: Vec<u32>,
    /// Per subtunnel: the egress port at `node`.
    pub ports: Vec<PortId>,
    pub next_entry_seq: HashMap<FlowKey, u64>,
    pub exit_max_seq: HashMap<FlowKey, u64>,
    pub scheduled: u64,
    pub forwarded: u64,
    pub reordered: u64,
    pub drops: u64,
    pub per_sub: Vec<u64>,
}

/// A tunnel.
pub(crate) struct TunnelState {
    pub name: String,
    pub scheduler_name: &'static str,
    pub transport: SubtunnelTransport,
    pub send_buffer_bytes: u64,
    pub subtunnel_names: Vec<String>,
    /// Down (entry -> exit), Up.
    pub sides: [TunnelSide; 2],
}

/// A packet inside a tunnel, with its entry order within its flow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inner {
    pub pkt: Packet,
    pub entry_seq: u64,
}

impl Simulation {
    fn store_inner(&mut self, inner: Inner) -> u32 {
        self.inner.insert(inner)
    }

    pub(crate) fn take_inner(&mut self, i: u32) -> Inner {
        self.inner.take(i)
    }

    /// Packets held inside tunnels: in UDP subtunnel datagrams still on their way and in TCP
    /// subtunnel streams not yet delivered in order.
    pub fn tunnel_packets_held(&self) -> usize {
        self.inner.len()
    }

    /// What the scheduler sees of each subtunnel of `t` in direction `d`.
    fn views(&mut self, t: usize, d: usize) {
        self.view_buf.clear();
        let tun = &self.tunnels[t];
        for j in 0..tun.sides[d].ports.len() {
            let v = match tun.transport {
                SubtunnelTransport::Tcp => {
                    let c = &self.conns[tun.sides[d].conns[j] as usize];
                    SubtunnelView {
                        fill_bytes: c.sender.unacked_bytes(),
                        cwnd_bytes: c.sender.cwnd_bytes(),
                        srtt_ns: c.sender.rtt().srtt_ns().unwrap_or(0),
                    }
                }
                SubtunnelTransport::Udp => {
                    let node = tun.sides[d].node as usize;
                    let l = self.nodes[node].out_links[usize::from(tun.sides[d].ports[j])] as usize;
                    SubtunnelView {
                        fill_bytes: self.links[l].queued_bytes,
                        cwnd_bytes: 0,
                        srtt_ns: 0,
                    }
                }
            };
            self.view_buf.push(v);
        }
    }

    /// If `pkt` arriving at `node` must enter a tunnel there, schedule and send it; false if it
    /// is not tunnel traffic.
    pub(crate) fn tunnel_ingress(&mut self, node: u32, pkt: Packet) -> Result<(), Packet> {
        let Some((t, d)) = self.nodes[node as usize].tunnel_side else {
            return Err(pkt);
        };
        let (ti, di) = (t as usize, d as usize);
        if pkt.inner != NO_INNER || !self.tunnels[ti].sides[di].far_hosts.contains(&pkt.meta.dst_ip) {
            return Err(pkt);
        }
        let key = FlowKey::of(&pkt.meta);
        let ip_bytes = pkt.meta.wire_len_bytes.saturating_sub(14);
        self.views(ti, di);
        let now_ns = self.now / 1000;
        let side = &mut self.tunnels[ti].sides[di];
        let j = side.scheduler.select(&key, ip_bytes, now_ns, &self.view_buf);
        let seq = side.next_entry_seq.entry(key).or_insert(0);
        let entry_seq = *seq;
        *seq += 1;
        side.scheduled += 1;
        side.per_sub[j] += 1;
        let idx = self.store_inner(Inner { pkt, entry_seq });
        let dir = if d == 0 { TunnelDir::Down } else { TunnelDir::Up };
        match self.tunnels[ti].transport {
            SubtunnelTransport::Tcp => {
                let c = self.tunnels[ti].sides[di].conns[j];
                let size = u64::from(ip_bytes + TCP_FRAMING_BYTES);
                let buf = self.tunnels[ti].send_buffer_bytes;
                let conn = &mut self.conns[c as usize];
                if conn.sender.unacked_bytes() + size > buf {
                    self.tunnels[ti].sides[di].drops += 1;
                    let dropped = self.take_inner(idx);
                    self.release(&dropped.pkt);
                    return Ok(());
                }
                conn.sender.write(size);
                let end = conn.sender.written_bytes();
                conn.records.push_back((end, idx));
                self.pump(c);
            }
            SubtunnelTransport::Udp => {
                let own_ip = self.nodes[node as usize].ip;
                let mut meta = PacketMeta::udp(
                    own_ip,
                    subtunnel_addr(ti, j, dir),
                    TUNNEL_UDP_PORT,
                    TUNNEL_UDP_PORT,
                    pkt.meta.wire_len_bytes + UDP_ENCAP_BYTES,
                );
                // RFC 6040 normal mode: the outer header copies the inner ECN field.
                meta.ecn = pkt.meta.ecn;
                let mut outer = Packet::bare(meta, pkt.flow, self.now);
                outer.payload_bytes = ip_bytes;
                outer.inner = idx;
                let port = self.tunnels[ti].sides[di].ports[j];
                self.output(node, port, outer);
            }
        }
        Ok(())
    }

    /// A UDP subtunnel datagram reached the far end: decapsulate and forward.
    pub(crate) fn udp_subtunnel_arrival(&mut self, node: u32, port: PortId, outer: Packet) {
        let (t, d_here) = self.nodes[node as usize].tunnel_side.expect("a tunnel end");
        let inner = self.take_inner(outer.inner);
        let mut inner_pkt = inner.pkt;
        // RFC 6040: CE on the outer header is copied to an ECN-capable inner one.
        if outer.meta.ecn == Ecn::Ce && inner_pkt.meta.ecn.is_ect() {
            inner_pkt.meta.ecn = Ecn::Ce;
        }
        // Packets arriving here travel in the other end's direction.
        let d = 1 - d_here as usize;
        self.tunnel_egress(
            t as usize,
            d,
            node,
            port,
            Inner {
                pkt: inner_pkt,
                ..inner
            },
        );
    }

    /// A TCP subtunnel's receiver delivered its stream up to `rcv_nxt`: forward every payload
    /// packet that is now complete.
    pub(crate) fn on_subtunnel_delivered(&mut self, r: TunnelRef, c: u32, rcv_nxt: u64) {
        let node = self.conns[c as usize].dst_node;
        let d = r.dir as usize;
        let port = self.conns[c as usize].ack_port;
        while let Some(&(end, idx)) = self.conns[c as usize].records.front() {
            if end > rcv_nxt {
                break;
            }
            self.conns[c as usize].records.pop_front();
            let inner = self.take_inner(idx);
            self.tunnel_egress(r.tunnel as usize, d, node, port, inner);
        }
    }

    fn tunnel_egress(&mut self, t: usize, d: usize, node: u32, port: PortId, inner: Inner) {
        let side = &mut self.tunnels[t].sides[d];
        side.forwarded += 1;
        let key = FlowKey::of(&inner.pkt.meta);
        match side.exit_max_seq.get_mut(&key) {
            Some(m) if inner.entry_seq < *m => side.reordered += 1,
            Some(m) => *m = inner.entry_seq,
            None => {
                side.exit_max_seq.insert(key, inner.entry_seq);
            }
        }
        self.route(node, port, inner.pkt);
    }

    /// Figures per tunnel and direction.
    pub(crate) fn tunnel_figures(&self) -> Vec<TunnelFigures> {
        let mut out = Vec::new();
        for t in &self.tunnels {
            for (d, side) in t.sides.iter().enumerate() {
                out.push(TunnelFigures {
                    id: format!("{}.{}", t.name, if d == 0 { "down" } else { "up" }),
                    scheduler: t.scheduler_name.to_string(),
                    transport: t.transport.name().to_string(),
                    scheduled_pkts: side.scheduled,
                    forwarded_pkts: side.forwarded,
                    reordered_pkts: side.reordered,
                    reordered_pct: if side.forwarded == 0 {
                        0.0
                    } else {
                        round(100.0 * side.reordered as f64 / side.forwarded as f64, 4)
                    },
                    send_buffer_drops: side.drops,
                    per_subtunnel_pkts: t
                        .subtunnel_names
                        .iter()
                        .cloned()
                        .zip(side.per_sub.iter().copied())
                        .collect::<BTreeMap<_, _>>(),
                });
            }
        }
        out
    }
}
