//! The per-packet path: a node's output queues and serialisers, the links' arrivals, the
//! programs' stages and what they ask for (emitted packets, timers, headers), and the dispatch
//! of an arriving packet to its node.

use super::tunnel::TunnelEnds;
use super::{NodeExtra, SimError, Simulation};
use crate::event::EventKind;
use crate::packet::{Packet, PacketId, StackRef, CONTROL_FLOW, NO_INNER, NO_TCP};
use crate::queue::Dequeued;
use mpsched_core::packet::{Ecn, PacketMeta, PortId};
use mpsched_core::program::{Ctx, EgressVerdict, Program, QueueMeta, Verdict};
use mpsched_scenario::NodeKind;

impl Simulation {
    /// Ask `node`'s program once which stages it has (enqueue; dequeue per port), whether it
    /// parses MPTCP options, uses custom headers or reads its ports' queues, so the per-packet
    /// path skips the calls and copies that would do nothing.
    pub(super) fn cache_stages(&mut self, node: u32) {
        let n = &mut self.net.nodes[node as usize];
        n.uses_enqueue = n.program.as_ref().is_some_and(|p| p.uses_enqueue());
        n.parses_mptcp = n.program.as_ref().is_some_and(|p| p.parses_mptcp());
        let extra = NodeExtra {
            uses_headers: n.program.as_ref().is_some_and(|p| p.uses_headers()),
            reads_port_queues: n.program.as_ref().is_some_and(|p| p.reads_port_queues()),
        };
        self.net.extra[node as usize] = extra;
        self.net.extras_used |= extra.uses_headers || extra.reads_port_queues;
        for (port, &l) in n.out_links.iter().enumerate() {
            let port = PortId::try_from(port).expect("ports fit a PortId");
            self.net.links[l as usize].egress_stage = n.program.as_ref().is_some_and(|p| p.uses_dequeue(port));
        }
    }

    /// Send `pkt` out of `port` of `node`, in the queue its DSCP class selects.
    #[inline]
    pub(super) fn output(&mut self, node: u32, port: PortId, pkt: Packet) {
        if self.net.nodes[node as usize].host_tunnel_end {
            self.output_at_host_tunnel_end(node, port, pkt);
            return;
        }
        let id = self.net.pool.insert(pkt);
        self.output_to(node, port, None, id);
    }

    /// [`Simulation::output`] at a host that ends a tunnel: it encapsulates what it sends to the
    /// hosts behind the far end. Out of line, so that `output`, inlined at every sender, stays
    /// as small as it was without host tunnel ends.
    #[inline(never)]
    fn output_at_host_tunnel_end(&mut self, node: u32, port: PortId, pkt: Packet) {
        if let Err(pkt) = self.tunnel_ingress(node, pkt) {
            let id = self.net.pool.insert(pkt);
            self.output_to(node, port, None, id);
        }
    }

    /// A packet's handle is done with: free it and what it holds.
    #[inline]
    pub(super) fn drop_packet(&mut self, id: PacketId) {
        let pkt = self.net.pool.take(id);
        self.release(&pkt);
    }

    /// Send packet `id` out of `port` of `node` in egress queue `queue` (a program's choice), or
    /// by default the queue of its DSCP class (`dscp >> 3`); clamped to the port's queues.
    #[inline]
    fn output_to(&mut self, node: u32, port: PortId, queue: Option<u8>, id: PacketId) {
        let ni = node as usize;
        let Some(&l) = self.net.nodes[ni].out_links.get(usize::from(port)) else {
            self.net.nodes[ni].dropped += 1;
            self.drop_packet(id);
            return;
        };
        let link = &self.net.links[l as usize];
        if !link.up {
            let now = self.net.now;
            let data = self.net.pool.at(id).flow != CONTROL_FLOW;
            let stats = &mut self.net.links[l as usize].stats;
            stats.down_drops += 1;
            if data {
                stats.sent_into_down += 1;
                stats.last_sent_into_down_ps = now;
            }
            self.drop_packet(id);
            return;
        }
        let (dscp, wire_bytes) = {
            let m = &self.net.pool.at(id).meta;
            (m.dscp, m.wire_len_bytes)
        };
        let q = link.queues.clamp(queue.unwrap_or(dscp >> 3));
        let now = self.net.now;
        let mut wire_bytes = wire_bytes;
        if self.net.nodes[ni].uses_enqueue {
            let meta = QueueMeta {
                enq_qdepth_pkts: link.queues.queue_len(q),
                queue: q,
                enq_timestamp_ps: now,
                enq_qdepth_bytes: link.queues.queue_bytes(q, link.queued_bytes),
                ..QueueMeta::default()
            };
            self.show_port_queues(node, l);
            let verdict = self.call_program_on(node, id, |p, m, ctx| p.on_enqueue(m, port, meta, ctx));
            if verdict == Some(EgressVerdict::Drop) {
                self.net.links[l as usize].stats.egress_drops += 1;
                self.drop_packet(id);
                return;
            }
            // The program may have pushed or popped headers.
            wire_bytes = self.net.pool.at(id).meta.wire_len_bytes;
        }
        let link = &mut self.net.links[l as usize];
        if link.busy_until_ps <= now && link.queues.is_empty() {
            self.start_tx(l, id, q, None);
            return;
        }
        let was_empty = link.queues.is_empty();
        match link.queues.push(q, id, wire_bytes, now, link.queued_bytes) {
            Some(pushed) => {
                let depth = pushed.depth;
                link.queued_bytes += u64::from(wire_bytes);
                link.stats.max_depth_pkts = link.stats.max_depth_pkts.max(depth + 1);
                let waiting = link.queues.len() as u32;
                link.stats.max_port_pkts_interval = link.stats.max_port_pkts_interval.max(waiting);
                if pushed.mark_ce {
                    let m = &mut self.net.pool.at_mut(id).meta;
                    if m.ecn.is_ect() {
                        m.ecn = Ecn::Ce;
                    }
                }
                // The first to wait brings the serialiser back when it is free. Without
                // propagation delay the arrival of the packet on the wire is that moment:
                // `on_arrive` starts the next, and no TxDone is needed.
                if was_empty && link.delay_ps > 0 {
                    let at = link.busy_until_ps;
                    self.net.queue.schedule(at, EventKind::TxDone(l));
                }
            }
            None => {
                link.stats.tail_drops += 1;
                self.drop_packet(id);
            }
        }
    }

    /// Call `node`'s program with the runtime's context and carry out what it asked for:
    /// generated packets are sent, timers scheduled. None if the node has no program.
    #[inline]
    pub(super) fn call_program<T>(&mut self, node: u32, f: impl FnOnce(&mut dyn Program, &mut Ctx) -> T) -> Option<T> {
        self.net.ctx.reset(self.net.now);
        let out = self.net.nodes[node as usize]
            .program
            .as_deref_mut()
            .map(|p| f(p, &mut self.net.ctx));
        self.apply_program_effects(node);
        out
    }

    /// Show `node`'s program the depths of every queue of link `l`'s port, if it reads them
    /// (before an enqueue or dequeue call, which resets everything else in the context).
    #[inline(always)]
    fn show_port_queues(&mut self, node: u32, l: u32) {
        if self.net.extras_used {
            self.gather_port_queues(node, l);
        }
    }

    #[cold]
    fn gather_port_queues(&mut self, node: u32, l: u32) {
        if self.net.extra[node as usize].reads_port_queues {
            let link = &self.net.links[l as usize];
            self.net.port_depths.clear();
            self.net.port_depths.extend(link.queues.depths(link.queued_bytes));
        }
    }

    /// [`Simulation::call_program`] on the headers of pooled packet `id`, which the program
    /// reads and rewrites where they lie (no copy in and out). Its custom headers are handed
    /// over when the packet carries some or the program uses them, and taken back after: the
    /// packet's wire length follows what was pushed or popped.
    #[inline]
    fn call_program_on<T>(
        &mut self,
        node: u32,
        id: PacketId,
        f: impl FnOnce(&mut dyn Program, &mut PacketMeta, &mut Ctx) -> T,
    ) -> Option<T> {
        let net = &mut self.net;
        net.ctx.reset(net.now);
        // Only once a program uses custom headers or port depths (or emitted a packet with
        // headers) does a call look for them: runs without pay one load.
        if net.extras_used {
            return self.call_program_with_extras(node, id, f);
        }
        let pkt = net.pool.at_mut(id);
        // An MPTCP option travels in the packet's TCP part; a program that parses it gets its
        // fields as a P4 parser's extracted header.
        if pkt.meta.mptcp_kind().is_some() && net.nodes[node as usize].parses_mptcp {
            net.ctx.set_mptcp_option(
                net.tcp_parts
                    .get(pkt.tcp)
                    .and_then(|t| net.mptcp_options.get(t.mptcp).copied()),
            );
        }
        let meta = &mut pkt.meta;
        let out = net.nodes[node as usize]
            .program
            .as_deref_mut()
            .map(|p| f(p, meta, &mut net.ctx));
        self.apply_program_effects(node);
        out
    }

    /// [`Simulation::call_program_on`] once custom headers or port depths are in use: the
    /// packet's stack is handed over when it carries one or the program uses them, and taken
    /// back after; the port's depths when the program reads them.
    #[inline(never)]
    fn call_program_with_extras<T>(
        &mut self,
        node: u32,
        id: PacketId,
        f: impl FnOnce(&mut dyn Program, &mut PacketMeta, &mut Ctx) -> T,
    ) -> Option<T> {
        let net = &mut self.net;
        let extra = net.extra[node as usize];
        if extra.reads_port_queues && !net.port_depths.is_empty() {
            net.ctx.set_port_queues(net.port_depths.drain(..));
        }
        let pkt = net.pool.at_mut(id);
        if pkt.meta.mptcp_kind().is_some() && net.nodes[node as usize].parses_mptcp {
            net.ctx.set_mptcp_option(
                net.tcp_parts
                    .get(pkt.tcp)
                    .and_then(|t| net.mptcp_options.get(t.mptcp).copied()),
            );
        }
        let headers = pkt.headers.is_some() || extra.uses_headers;
        let before = pkt.headers.index().map(|i| *net.stacks.at(i)).unwrap_or_default();
        if headers {
            net.ctx.set_headers(before);
        }
        let out = net.nodes[node as usize]
            .program
            .as_deref_mut()
            .map(|p| f(p, &mut pkt.meta, &mut net.ctx));
        let after = *net.ctx.headers();
        if headers && after != before {
            pkt.meta.wire_len_bytes =
                (pkt.meta.wire_len_bytes + after.wire_bytes()).saturating_sub(before.wire_bytes());
            pkt.headers = match (pkt.headers.index(), after.is_empty()) {
                (Some(i), true) => {
                    net.stacks.take(i);
                    StackRef::NONE
                }
                (Some(i), false) => {
                    *net.stacks.at_mut(i) = after;
                    pkt.headers
                }
                (None, false) => StackRef::new(net.stacks.insert(after)),
                (None, true) => StackRef::NONE,
            };
        }
        self.apply_program_effects(node);
        out
    }

    /// Send what the last program call emitted and schedule the timers it asked for.
    #[inline(always)]
    fn apply_program_effects(&mut self, node: u32) {
        if !self.net.ctx.emitted().is_empty() || !self.net.ctx.timers().is_empty() {
            // Rare: take the context out, since sending may call programs again.
            let ctx = std::mem::take(&mut self.net.ctx);
            self.program_effects(node, &ctx);
            self.net.ctx = ctx;
        }
    }

    #[cold]
    fn program_effects(&mut self, node: u32, ctx: &Ctx) {
        for t in ctx.timers() {
            let i = self.net.program_timers.insert((node, t.token));
            self.net.queue.schedule(t.at_ps, EventKind::ProgramTimer(i));
        }
        for e in ctx.emitted() {
            let mut pkt = Packet::bare(e.meta, CONTROL_FLOW, self.net.now);
            if !e.headers.is_empty() {
                self.net.extras_used = true;
                pkt.meta.wire_len_bytes += e.headers.wire_bytes();
                pkt.headers = StackRef::new(self.net.stacks.insert(e.headers));
            }
            let id = self.net.pool.insert(pkt);
            self.output_to(node, e.port, e.queue, id);
        }
    }

    pub(super) fn on_program_timer(&mut self, i: u32) {
        let (node, token) = self.net.program_timers.take(i);
        self.call_program(node, |p, ctx| p.on_timer(token, ctx));
    }

    /// Replace the program of switch `node` (by name) with `program`, and start it. A runtime
    /// hook for programs a scenario cannot name yet (tests, experiments in code).
    pub fn install_program(&mut self, node: &str, program: Box<dyn Program>) -> Result<(), SimError> {
        let i = self
            .net
            .nodes
            .iter()
            .position(|n| n.name == node && n.kind == NodeKind::Switch)
            .ok_or_else(|| SimError::Config(format!("no switch named `{node}`")))?;
        self.net.nodes[i].program = Some(program);
        self.cache_stages(i as u32);
        self.call_program(i as u32, |p, ctx| p.start(ctx));
        Ok(())
    }

    /// Free what a dropped packet holds (its TCP part; its custom headers; a UDP subtunnel
    /// datagram's inner packet and what that holds). Every drop path calls this.
    pub(crate) fn release(&mut self, pkt: &Packet) {
        if let Some(i) = pkt.headers.index() {
            self.net.stacks.take(i);
        }
        if pkt.tcp != NO_TCP {
            let t = self.net.tcp_parts.take(pkt.tcp);
            if t.mptcp != crate::packet::NO_OPTION {
                self.net.mptcp_options.take(t.mptcp);
            }
        }
        if pkt.inner != NO_INNER {
            let inner = self.take_inner(pkt.inner);
            self.release(&inner.pkt);
        }
    }

    /// Run the egress program and put the packet on the wire; false if the program dropped it.
    /// The packet joins the link's packets in flight at once, due at the far end when its last
    /// bit has crossed: no event marks the end of its serialisation unless others wait.
    /// `queue` is the packet's queue; `waited` what the queue recorded of it, None when it
    /// found the port idle.
    #[inline]
    fn start_tx(&mut self, l: u32, id: PacketId, queue: u8, waited: Option<&Dequeued>) -> bool {
        let li = l as usize;
        let (from, from_port) = (self.net.links[li].from, self.net.links[li].from_port);
        if self.net.links[li].egress_stage {
            let now = self.net.now;
            let q = match waited {
                Some(d) => QueueMeta {
                    enq_qdepth_pkts: d.enq_depth,
                    deq_qdepth_pkts: d.deq_depth,
                    queue,
                    enq_timestamp_ps: d.enq_ps,
                    deq_timedelta_ps: now - d.enq_ps,
                    enq_qdepth_bytes: d.enq_bytes,
                    deq_qdepth_bytes: d.deq_bytes,
                },
                None => QueueMeta {
                    queue,
                    enq_timestamp_ps: now,
                    ..QueueMeta::default()
                },
            };
            self.show_port_queues(from, l);
            let verdict = self.call_program_on(from, id, |p, m, ctx| p.on_dequeue(m, from_port, q, ctx));
            if verdict == Some(EgressVerdict::Drop) {
                self.net.links[li].stats.egress_drops += 1;
                self.drop_packet(id);
                return false;
            }
        }
        if let Some(c) = self.net.links[li].capture_tx {
            let pkt = *self.net.pool.at(id);
            self.capture(c, &pkt, true);
        }
        let wire_bytes = self.net.pool.at(id).meta.wire_len_bytes;
        let link = &mut self.net.links[li];
        let done = self.net.now + link.serialisation_ps(wire_bytes);
        let arrive_ps = done + link.delay_ps;
        link.stats.tx_pkts += 1;
        link.stats.tx_bytes += u64::from(wire_bytes);
        link.busy_until_ps = done;
        // The oldest packet in flight has the link's one arrival event; a later one only
        // takes its place in the order of equal-time events now.
        let seq = if link.in_flight.is_empty() {
            self.net.queue.schedule(arrive_ps, EventKind::Arrive(l))
        } else {
            self.net.queue.reserve_seq()
        };
        self.net.wire.push_back(&mut link.in_flight, id, arrive_ps, seq);
        true
    }

    /// The serialiser of link `l` is free and packets wait: start the next, and come back when
    /// it is done if more wait.
    pub(super) fn on_tx_done(&mut self, l: u32) {
        self.start_next_tx(l);
        let link = &self.net.links[l as usize];
        if !link.queues.is_empty() {
            let at = link.busy_until_ps;
            self.net.queue.schedule(at, EventKind::TxDone(l));
        }
    }

    /// Serialise the next packet waiting on link `l`, past any the egress program drops.
    fn start_next_tx(&mut self, l: u32) {
        loop {
            let link = &mut self.net.links[l as usize];
            let Some(d) = link.queues.pop(link.queued_bytes) else {
                break;
            };
            link.queued_bytes -= u64::from(d.wire_bytes);
            if self.start_tx(l, d.pkt, d.queue, Some(&d)) {
                break;
            }
        }
        if !self.net.links[l as usize].waiting.is_empty() {
            self.wake_waiting(l);
        }
    }

    pub(super) fn on_arrive(&mut self, l: u32) {
        let link = &mut self.net.links[l as usize];
        let wire = &mut self.net.wire;
        let pkt = wire
            .pop_front(&mut link.in_flight)
            .expect("an Arrive event has a packet in flight");
        if let Some((arrive_ps, seq)) = wire.front(&link.in_flight) {
            self.net.queue.schedule_reserved(arrive_ps, seq, EventKind::Arrive(l));
        }
        if link.delay_ps == 0 && link.busy_until_ps <= self.net.now && !link.queues.is_empty() {
            self.start_next_tx(l);
        }
        self.arrive(l, pkt);
    }

    /// Packet `id` reaches the far end of link `l`.
    #[inline]
    fn arrive(&mut self, l: u32, id: PacketId) {
        let li = l as usize;
        let link = &mut self.net.links[li];
        if !link.up {
            link.stats.down_drops += 1;
            self.drop_packet(id);
            return;
        }
        if let Some(tag) = link.path_tag {
            let pkt = self.net.pool.at_mut(id);
            link.stats.rx_bytes_interval += u64::from(pkt.meta.wire_len_bytes);
            pkt.path = tag;
        }
        let (to, to_port) = (link.to, link.to_port);
        if let Some(c) = link.capture_rx {
            let pkt = *self.net.pool.at(id);
            self.capture(c, &pkt, false);
        }
        self.input(to, to_port, id);
    }

    pub(super) fn input(&mut self, node: u32, port: PortId, id: PacketId) {
        let ni = node as usize;
        if self.net.nodes[ni].tunnel_ends != TunnelEnds::None && self.input_at_tunnel_end(node, port, id) {
            return;
        }
        if self.net.nodes[ni].kind == NodeKind::Host {
            if self.net.extras_used && self.rate_flow_feedback(id) {
                self.strip_headers(id);
                let pkt = self.net.pool.take(id);
                self.release(&pkt);
                return;
            }
            self.strip_headers(id);
            let pkt = self.net.pool.take(id);
            let dst = pkt.meta.dst_ip;
            if dst != self.net.nodes[ni].ip && !self.net.interface_ips[ni].contains(&dst) {
                self.net.nodes[ni].dropped += 1;
                self.release(&pkt);
            } else if pkt.tcp != NO_TCP {
                self.on_tcp_packet(pkt);
            } else if self.rate_flow_notified(&pkt) {
                self.release(&pkt);
            } else if pkt.flow != CONTROL_FLOW {
                self.deliver(pkt);
            } else if pkt.meta.proto == mpsched_core::packet::proto::UDP && self.component_datagram(node, &pkt) {
                self.release(&pkt);
            } else {
                self.net.nodes[ni].dropped += 1;
                self.release(&pkt);
            }
            return;
        }
        self.route(node, port, id);
    }

    /// [`Simulation::input`] at a node that ends tunnels: a subtunnel packet for it is taken in
    /// (decapsulated), and at a switch a packet that must enter a tunnel enters it; true if the
    /// packet was dealt with here. Out of line, as `output_at_host_tunnel_end`.
    #[inline(never)]
    fn input_at_tunnel_end(&mut self, node: u32, port: PortId, id: PacketId) -> bool {
        let ni = node as usize;
        let dst = self.net.pool.at(id).meta.dst_ip;
        if self.traffic.tunnel_addrs.get(&dst) == Some(&node) {
            self.strip_headers(id);
            let pkt = self.net.pool.take(id);
            if pkt.tcp != NO_TCP {
                self.on_tcp_packet(pkt);
            } else if pkt.inner != NO_INNER {
                self.udp_subtunnel_arrival(node, port, pkt);
            } else if pkt.meta.src_port == super::tunnel::ACK_SRC_PORT {
                self.subtunnel_ack_arrival(node, pkt);
            } else {
                self.net.nodes[ni].dropped += 1;
                self.release(&pkt);
            }
            return true;
        }
        if self.net.nodes[ni].kind != NodeKind::Host {
            let pkt = self.net.pool.take(id);
            if let Err(pkt) = self.tunnel_ingress(node, pkt) {
                self.route_packet(node, port, pkt);
            }
            return true;
        }
        false
    }

    /// Pooled packet `id` reached its end: its custom headers go (the end reads no shims).
    /// Only a run whose programs use headers (`extras_used`) has packets that carry some, so
    /// other runs test one flag. The 3-byte index is read in the pool, not in the copy about to
    /// be taken out of it: a load across that copy's fresh stores waits for them to reach the
    /// cache (a store-forwarding stall on every packet that reached a host).
    #[inline(always)]
    fn strip_headers(&mut self, id: PacketId) {
        if self.net.extras_used {
            self.strip_headers_in_pool(id);
        }
    }

    #[cold]
    fn strip_headers_in_pool(&mut self, id: PacketId) {
        let pkt = self.net.pool.at_mut(id);
        if let Some(i) = pkt.headers.index() {
            pkt.headers = StackRef::NONE;
            let s = self.net.stacks.take(i);
            let pkt = self.net.pool.at_mut(id);
            pkt.meta.wire_len_bytes = pkt.meta.wire_len_bytes.saturating_sub(s.wire_bytes());
        }
    }

    /// [`Simulation::route`] for a packet not in the pool yet.
    pub(super) fn route_packet(&mut self, node: u32, port: PortId, pkt: Packet) {
        let id = self.net.pool.insert(pkt);
        self.route(node, port, id);
    }

    /// Run the node's program on packet `id` and act on its verdict.
    fn route(&mut self, node: u32, port: PortId, id: PacketId) {
        let ni = node as usize;
        let mut queue = None;
        let verdict = self.call_program_on(node, id, |p, meta, ctx| {
            meta.ingress_port = port;
            let v = p.ingress(meta, ctx);
            // Test the choice's tag before reading its value. Read whole, its two bytes span
            // the one-byte store of `Ctx::reset` just before the call, which the CPU cannot
            // forward: every routed packet waited for that store to reach the cache (a third
            // of `route`'s samples; the UDP benchmark's engine time fell 4 % without it).
            if let Some(q) = ctx.queue() {
                queue = Some(q);
            }
            v
        });
        let Some(verdict) = verdict else {
            self.net.nodes[ni].dropped += 1;
            self.drop_packet(id);
            return;
        };
        match verdict {
            Verdict::Forward(p) => self.output_to(node, p, queue, id),
            Verdict::Drop(_) => {
                self.net.nodes[ni].dropped += 1;
                self.drop_packet(id);
            }
            Verdict::Consume => self.drop_packet(id),
        }
    }

    fn capture(&mut self, c: u32, pkt: &Packet, outgoing: bool) {
        if self.net.io_error.is_some() {
            return;
        }
        let tcp = self.net.tcp_parts.get(pkt.tcp);
        let option = tcp.and_then(|t| self.net.mptcp_options.get(t.mptcp));
        let headers = pkt.headers.index().map(|i| self.net.stacks.at(i));
        if let Err(e) = self.net.captures[c as usize].record(pkt, tcp, option, headers, self.net.now, outgoing) {
            self.net.io_error = Some(e);
        }
    }
}
