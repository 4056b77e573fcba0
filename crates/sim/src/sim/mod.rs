//! The simulation: nodes running programs, links, traffic, monitors, wired from a scenario.

mod build;
mod component;
mod failures;
mod mptcp;
mod tcp;
mod tunnel;

use crate::event::{EventKind, EventQueue, TimePs, PS_PER_S};
use crate::link::{Link, Wire};
use crate::packet::{Packet, PacketId, Slab, TcpPart, CONTROL_FLOW, NO_INNER, NO_PATH, NO_TCP};
use crate::pcap::Capture;
use crate::queue::PortQueues;
use crate::series::TimeSeries;
pub use component::{Component, ComponentId, ConnId, Net};
use mpsched_core::packet::{Ipv4, PacketMeta, PortId, UDP_OVERHEAD_BYTES};
use mpsched_core::program::{Ctx, EgressVerdict, Program, QueueMeta, Verdict};
use mpsched_core::rng::SeededRandom;
use mpsched_core::switch::MultipathSwitch;
use mpsched_core::tunnel::SubtunnelView;
use mpsched_scenario::results::TcpFigures;
use mpsched_scenario::results::{round, FlowFigures, PathFigures, RunFigures};
use mpsched_scenario::{NodeKind, Scenario};
use mpsched_scenario::{SubtunnelTransport, TcpApp};
use mpsched_topo::addressing::{subtunnel_addr, TunnelDir};
use mpsched_tunnel::{TunnelEntry, TunnelExit};
pub use mpsched_tunnel::{TCP_FRAMING_BYTES, TUNNEL_UDP_PORT, UDP_ENCAP_BYTES};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::collections::HashSet;
use tcp::{Conn, Owner, TcpFlowState};
use tunnel::{TunnelRef, TunnelSide, TunnelState};

/// How long the simulation runs past the scenario's end so that packets in flight are delivered
/// rather than counted lost.
pub const DEFAULT_DRAIN_PS: TimePs = 2 * PS_PER_S;

pub use mpsched_run::CaptureRequest;

/// Options of one run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Seed of this run.
    pub seed: u64,
    /// Interfaces to capture.
    pub captures: Vec<CaptureRequest>,
    /// Time run past the scenario's end.
    pub drain_ps: TimePs,
}

impl SimOptions {
    /// Default options with `seed`.
    pub fn with_seed(seed: u64) -> Self {
        SimOptions {
            seed,
            captures: Vec::new(),
            drain_ps: DEFAULT_DRAIN_PS,
        }
    }
}

/// Errors building or running a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario could not be turned into programs.
    #[error("configuration: {0}")]
    Config(String),
    /// A capture request names no interface.
    #[error("capture: {0}")]
    Capture(String),
    /// Writing a capture failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

struct NodeState {
    /// Per port: the outgoing link.
    out_links: Vec<u32>,
    program: Option<Box<dyn Program>>,
    /// For a tunnel end: (tunnel, direction it encapsulates in: 0 down, 1 up).
    tunnel_side: Option<(u32, u8)>,
    ip: Ipv4,
    kind: NodeKind,
    /// Whether the program has an enqueue stage (asked once, not per packet).
    uses_enqueue: bool,
    /// Whether the program reads MPTCP options (asked once, not per packet).
    parses_mptcp: bool,
    /// Packets that reached a host not addressed to it, or were dropped by a program.
    dropped: u64,
    name: String,
    /// Per port: (peer node, peer port).
    peers: Vec<(u32, PortId)>,
}

struct FlowState {
    name: String,
    src_node: u32,
    /// The source host's port towards the destination (a multi-homed host has several).
    out_port: PortId,
    meta: PacketMeta,
    payload_bytes: u32,
    rate_bps: u64,
    offered_mbps: f64,
    start_ps: TimePs,
    stop_ps: TimePs,
    next_seq: u64,
    split_paths: Vec<usize>,
    // Receiver side.
    delivered: u64,
    /// Payload that arrived while the flow was active (by arrival time), as a receiver measures
    /// goodput over the test.
    delivered_payload_bytes: u64,
    owd_sum_ps: u128,
    max_seq: Option<u64>,
    reordered: u64,
    per_path_bytes: Vec<u64>,
    // Per sample interval.
    rx_interval_bytes: u64,
    per_path_interval_bytes: Vec<u64>,
    sent_by_interval: Vec<u64>,
    delivered_by_sent_interval: Vec<u64>,
    /// TCP flows: connections and application state.
    tcp: Option<TcpFlowState>,
    /// Application bytes delivered over the whole run.
    delivered_total_bytes: u64,
}

impl FlowState {
    /// The receiving application got `bytes` more at `now` (TCP).
    fn record_goodput(&mut self, now: TimePs, bytes: u64) {
        self.delivered_total_bytes += bytes;
        self.rx_interval_bytes += bytes;
        if now >= self.start_ps && now <= self.stop_ps {
            self.delivered_payload_bytes += bytes;
        }
    }
}

/// What a finished run produced.
pub struct RunOutput {
    /// The figures of this run.
    pub figures: RunFigures,
    /// The time series.
    pub series: TimeSeries,
    /// Events processed.
    pub events: u64,
    /// Frames written to captures.
    pub captured_frames: u64,
}

/// A simulation of one scenario with one seed: the network the engine moves packets through,
/// the traffic that uses it, and what is measured.
pub struct Simulation {
    net: Network,
    traffic: Traffic,
    monitor: Monitor,
}

/// The engine's part: time and events, nodes with their programs, links, the stores packets
/// refer to, captures.
struct Network {
    now: TimePs,
    queue: EventQueue,
    nodes: Vec<NodeState>,
    links: Vec<Link>,
    /// Events processed.
    events: u64,
    /// The programs' context, reused from call to call.
    ctx: Ctx,
    /// Pending program timers: (node, token).
    program_timers: Slab<(u32, u64)>,
    /// The TCP parts of packets in the network.
    tcp_parts: Slab<TcpPart>,
    /// MPTCP options of segments (`TcpPart::mptcp`).
    mptcp_options: Slab<mpsched_core::mptcp::MptcpOption>,
    /// Packets inside UDP subtunnels and TCP subtunnel streams.
    inner: Slab<tunnel::Inner>,
    /// Packets in queues, on wires and in flight, which those hold by handle.
    pool: Slab<Packet>,
    /// Where the packets in propagation are due, by handle; each link holds its list's ends.
    wire: Wire,
    /// The pcap writers (a link names the ones recording it).
    captures: Vec<Capture>,
    /// The first error writing a capture (reported at the end).
    io_error: Option<std::io::Error>,
    /// The time the run ends.
    end_ps: TimePs,
    /// Routes between every pair of nodes, kept only when a host has several interfaces (a
    /// component's connection from a host with one leaves by it; the dense table is 4 bytes
    /// per pair of nodes, 16 MB at 2 000 nodes, so it goes once the tables are built).
    routes: Option<mpsched_topo::Routes>,
    /// Per node, per port: the interface's address.
    interface_ips: Vec<Vec<Ipv4>>,
}

/// What uses the network: the scenario's flows, TCP connections, tunnels, and components.
struct Traffic {
    flows: Vec<FlowState>,
    /// TCP connections (flows, subtunnels, components', MPTCP subflows).
    conns: Vec<Conn>,
    /// MPTCP connections, their subflows among `conns`.
    mptcp: Vec<mptcp::MptcpConn>,
    tunnels: Vec<TunnelState>,
    /// What a tunnel scheduler sees of the subtunnels, reused from packet to packet.
    view_buf: Vec<SubtunnelView>,
    /// Subtunnel address -> the node that terminates it.
    tunnel_addrs: FxHashMap<Ipv4, u32>,
    /// Components, each taken out while it runs.
    components: Vec<Option<Box<dyn Component>>>,
    /// Pending component timers: (component, token).
    component_timers: Slab<(u32, u64)>,
    /// (host, UDP port) -> the component that bound it.
    udp_endpoints: FxHashMap<(u32, u16), ComponentId>,
    send_jitter_ps: u64,
    jitter_rng: SeededRandom,
}

/// What is measured: the paths' monitors and the time series.
struct Monitor {
    /// Per scenario path: its monitored link (into the confluence point).
    path_links: Vec<u32>,
    path_names: Vec<String>,
    path_capacity_bps: Vec<u64>,
    path_total_bytes: Vec<u64>,
    sample_interval_ps: TimePs,
    duration_ps: TimePs,
    series: TimeSeries,
    register_columns: Vec<(u32, usize)>,
    /// Number of sample intervals.
    intervals: usize,
    seed: u64,
}

impl Simulation {
    /// Wire the scenario into nodes, links, programs and sources.
    pub fn new(sc: &Scenario, opts: &SimOptions) -> Result<Simulation, SimError> {
        let (mut nodes, mut links) = build::network(sc);
        let wiring = sc.wiring().map_err(SimError::Config)?;
        let mut rng = SeededRandom::new(opts.seed);
        build::install_switches(sc, &wiring, &mut nodes, &mut rng)?;
        let (path_links, path_capacity_bps) = build::path_monitors(sc, &nodes, &mut links);
        let intervals = sc.duration_ps.div_ceil(sc.sample_interval_ps) as usize;
        let mut flows = build::flows(sc, &wiring, &mut rng, intervals);
        let (mut conns, mptcp) = build::flow_connections(sc, &wiring, &mut flows, intervals, opts.seed);
        let (tunnels, tunnel_addrs) = build::tunnels(sc, &wiring, &mut nodes, &mut conns)?;
        let captures = build::captures(opts, sc, &nodes, &mut links)?;
        let (columns, register_columns) = build::series_columns(sc, &flows, &tunnels, &nodes);
        let queue = build::first_events(sc, &flows);
        let multi_homed = nodes.iter().any(|n| n.kind == NodeKind::Host && n.out_links.len() > 1);
        let net = Network {
            now: 0,
            queue,
            nodes,
            links,
            events: 0,
            ctx: Ctx::new(),
            program_timers: Slab::default(),
            tcp_parts: Slab::default(),
            mptcp_options: Slab::default(),
            inner: Slab::default(),
            pool: Slab::default(),
            wire: Wire::default(),
            captures,
            io_error: None,
            end_ps: sc.duration_ps + opts.drain_ps,
            routes: multi_homed.then_some(wiring.routes),
            interface_ips: wiring.interface_ips,
        };
        let traffic = Traffic {
            flows,
            conns,
            mptcp,
            tunnels,
            view_buf: Vec::new(),
            tunnel_addrs,
            components: Vec::new(),
            component_timers: Slab::default(),
            udp_endpoints: FxHashMap::default(),
            send_jitter_ps: sc.send_jitter_ps,
            jitter_rng: SeededRandom::new(rng.next_u64()),
        };
        let monitor = Monitor {
            path_links,
            path_names: sc.paths.iter().map(|p| p.name.clone()).collect(),
            path_capacity_bps,
            path_total_bytes: vec![0; sc.paths.len()],
            sample_interval_ps: sc.sample_interval_ps,
            duration_ps: sc.duration_ps,
            series: TimeSeries {
                columns,
                rows: Vec::new(),
            },
            register_columns,
            intervals,
            seed: opts.seed,
        };
        let mut sim = Simulation { net, traffic, monitor };
        for n in 0..sim.net.nodes.len() as u32 {
            sim.cache_stages(n);
        }
        if let Some(f) = failures::LinkFailures::of(sc)? {
            sim.add_component(Box::new(f));
        }
        Ok(sim)
    }

    /// The port host `host` sends to node `dst` by: its one interface, or (multi-homed) the one
    /// its routes give; None if no route reaches.
    pub(crate) fn host_port(&self, host: u32, dst: u32) -> Option<PortId> {
        if self.net.nodes[host as usize].out_links.len() == 1 {
            return Some(0);
        }
        self.net.routes.as_ref()?.port(host as usize, dst as usize)
    }

    /// Ask `node`'s program once which stages it has (enqueue; dequeue per port) and whether it
    /// parses MPTCP options, so the
    /// per-packet path skips the calls that would do nothing.
    fn cache_stages(&mut self, node: u32) {
        let n = &mut self.net.nodes[node as usize];
        n.uses_enqueue = n.program.as_ref().is_some_and(|p| p.uses_enqueue());
        n.parses_mptcp = n.program.as_ref().is_some_and(|p| p.parses_mptcp());
        for (port, &l) in n.out_links.iter().enumerate() {
            let port = PortId::try_from(port).expect("ports fit a PortId");
            self.net.links[l as usize].egress_stage = n.program.as_ref().is_some_and(|p| p.uses_dequeue(port));
        }
    }

    /// The time the run ends (the scenario's duration plus the drain time).
    pub fn end_ps(&self) -> TimePs {
        self.net.end_ps
    }

    /// Current simulated time.
    pub fn now_ps(&self) -> TimePs {
        self.net.now
    }

    /// Check that the stores packets refer to hold exactly what the packets in the network
    /// refer to: every drop path freed what its packet held. An error names the store.
    pub fn check_held(&self) -> Result<(), String> {
        let mut tcp = 0;
        let mut inner = 0;
        let (mut pooled, mut dangling) = (0, 0);
        let mut count = |id: PacketId| match self.net.pool.get(id) {
            Some(p) => {
                tcp += usize::from(p.tcp != NO_TCP);
                inner += usize::from(p.inner != NO_INNER);
                pooled += 1;
            }
            None => dangling += 1,
        };
        for l in &self.net.links {
            l.queues.iter().for_each(&mut count);
            self.net.wire.iter(&l.in_flight).for_each(&mut count);
        }
        if dangling > 0 {
            return Err(format!("{dangling} handles to packets no longer in the pool"));
        }
        if self.net.pool.len() != pooled {
            return Err(format!(
                "{} packets held in the pool for {pooled} in queues, on wires and in flight",
                self.net.pool.len()
            ));
        }
        // Inner packets waiting in TCP subtunnel streams, and the TCP parts they carry.
        for c in &self.traffic.conns {
            inner += c.records.len();
        }
        for i in 0..self.net.inner.capacity() {
            if let Some(x) = self.net.inner.get(i) {
                tcp += usize::from(x.pkt.tcp != NO_TCP);
            }
        }
        if self.net.tcp_parts.len() != tcp {
            return Err(format!(
                "{} TCP parts held for {tcp} TCP packets",
                self.net.tcp_parts.len()
            ));
        }
        let options = (0..self.net.tcp_parts.capacity())
            .filter_map(|i| self.net.tcp_parts.get(i))
            .filter(|t| t.mptcp != crate::packet::NO_OPTION)
            .count();
        if self.net.mptcp_options.len() != options {
            return Err(format!(
                "{} MPTCP options held for {options} segments with one",
                self.net.mptcp_options.len()
            ));
        }
        if self.net.inner.len() != inner {
            return Err(format!(
                "{} inner packets held for {inner} references",
                self.net.inner.len()
            ));
        }
        Ok(())
    }

    /// Events pending in the event queue.
    pub fn pending_events(&self) -> usize {
        self.net.queue.len()
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.net.events
    }

    /// Process every event before `until` (capped at the end of the run).
    pub fn run_until(&mut self, until: TimePs) {
        let until = until.min(self.net.end_ps);
        while let Some((t, kind)) = self.net.queue.pop_before(until) {
            self.net.now = t;
            self.net.events += 1;
            match kind {
                EventKind::TxDone(l) => self.on_tx_done(l),
                EventKind::Arrive(l) => self.on_arrive(l),
                EventKind::Send(f) => self.on_send(f),
                EventKind::Sample => self.on_sample(),
                EventKind::AppStart(f) => self.on_app_start(f),
                EventKind::AppStop(f) => self.on_app_stop(f),
                EventKind::TcpTimer(c) => self.on_tcp_timer(c),
                EventKind::ProgramTimer(i) => self.on_program_timer(i),
                EventKind::ComponentTimer(i) => self.on_component_timer(i),
            }
        }
        self.net.now = self.net.now.max(until);
    }

    /// Run to the end and collect the results.
    pub fn run(mut self) -> Result<RunOutput, SimError> {
        self.run_until(self.net.end_ps);
        self.finish()
    }

    fn on_send(&mut self, fi: u32) {
        let now = self.net.now;
        let interval = self.monitor.sample_interval_ps;
        let jitter = if self.traffic.send_jitter_ps > 0 {
            self.traffic.jitter_rng.next_u64() % (self.traffic.send_jitter_ps + 1)
        } else {
            0
        };
        let f = &mut self.traffic.flows[fi as usize];
        let seq = f.next_seq;
        f.next_seq += 1;
        let pkt = Packet {
            meta: f.meta,
            flow: fi,
            seq,
            sent_ps: now,
            payload_bytes: f.payload_bytes,
            path: NO_PATH,
            tcp: NO_TCP,
            inner: NO_INNER,
        };
        let k = ((now / interval) as usize).min(f.sent_by_interval.len() - 1);
        f.sent_by_interval[k] += 1;
        // Constant bit rate: packet k is due at start + k * bits / rate, plus (optionally) a
        // random delay that does not accumulate.
        let bits = u128::from(f.payload_bytes) * 8;
        let nominal =
            f.start_ps + ((u128::from(seq + 1) * bits * u128::from(PS_PER_S)) / u128::from(f.rate_bps)) as u64;
        if nominal < f.stop_ps {
            // A packet sent late (a large jitter) must not send its successor in the past.
            self.net
                .queue
                .schedule((nominal + jitter).max(now), EventKind::Send(fi));
        }
        let src = f.src_node;
        let port = f.out_port;
        self.output(src, port, pkt);
    }

    /// Send `pkt` out of `port` of `node`, in the queue its DSCP class selects.
    #[inline]
    fn output(&mut self, node: u32, port: PortId, pkt: Packet) {
        let id = self.net.pool.insert(pkt);
        self.output_to(node, port, None, id);
    }

    /// A packet's handle is done with: free it and what it holds.
    #[inline]
    fn drop_packet(&mut self, id: PacketId) {
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
            self.net.links[l as usize].stats.down_drops += 1;
            self.drop_packet(id);
            return;
        }
        let (dscp, wire_bytes) = {
            let m = &self.net.pool.at(id).meta;
            (m.dscp, m.wire_len_bytes)
        };
        let q = link.queues.clamp(queue.unwrap_or(dscp >> 3));
        if self.net.nodes[ni].uses_enqueue {
            let meta = QueueMeta {
                enq_qdepth_pkts: link.queues.queue_len(q),
                deq_qdepth_pkts: 0,
                queue: q,
            };
            let verdict = self.call_program_on(node, id, |p, m, ctx| p.on_enqueue(m, port, meta, ctx));
            if verdict == Some(EgressVerdict::Drop) {
                self.net.links[l as usize].stats.egress_drops += 1;
                self.drop_packet(id);
                return;
            }
        }
        let now = self.net.now;
        let link = &mut self.net.links[l as usize];
        if link.busy_until_ps <= now && link.queues.is_empty() {
            let meta = QueueMeta {
                queue: q,
                ..QueueMeta::default()
            };
            self.start_tx(l, id, meta);
            return;
        }
        let was_empty = link.queues.is_empty();
        match link.queues.push(q, id, wire_bytes) {
            Some(depth) => {
                link.queued_bytes += u64::from(wire_bytes);
                link.stats.max_depth_pkts = link.stats.max_depth_pkts.max(depth + 1);
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
    fn call_program<T>(&mut self, node: u32, f: impl FnOnce(&mut dyn Program, &mut Ctx) -> T) -> Option<T> {
        self.net.ctx.reset(self.net.now);
        let out = self.net.nodes[node as usize]
            .program
            .as_deref_mut()
            .map(|p| f(p, &mut self.net.ctx));
        self.apply_program_effects(node);
        out
    }

    /// [`Simulation::call_program`] on the headers of pooled packet `id`, which the program
    /// reads and rewrites where they lie (no copy in and out).
    #[inline]
    fn call_program_on<T>(
        &mut self,
        node: u32,
        id: PacketId,
        f: impl FnOnce(&mut dyn Program, &mut PacketMeta, &mut Ctx) -> T,
    ) -> Option<T> {
        let net = &mut self.net;
        net.ctx.reset(net.now);
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

    /// Send what the last program call emitted and schedule the timers it asked for.
    #[inline]
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
            let pkt = Packet::bare(e.meta, CONTROL_FLOW, self.net.now);
            self.output(node, e.port, pkt);
        }
    }

    fn on_program_timer(&mut self, i: u32) {
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

    /// Free what a dropped packet holds (its TCP part; a UDP subtunnel datagram's inner packet
    /// and what that holds). Every drop path calls this.
    pub(crate) fn release(&mut self, pkt: &Packet) {
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
    #[inline]
    fn start_tx(&mut self, l: u32, id: PacketId, q: QueueMeta) -> bool {
        let li = l as usize;
        let (from, from_port) = (self.net.links[li].from, self.net.links[li].from_port);
        if self.net.links[li].egress_stage {
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
    fn on_tx_done(&mut self, l: u32) {
        self.start_next_tx(l);
        let link = &self.net.links[l as usize];
        if !link.queues.is_empty() {
            let at = link.busy_until_ps;
            self.net.queue.schedule(at, EventKind::TxDone(l));
        }
    }

    /// Serialise the next packet waiting on link `l`, past any the egress program drops.
    fn start_next_tx(&mut self, l: u32) {
        while let Some(d) = self.net.links[l as usize].queues.pop() {
            let bytes = self.net.pool.at(d.pkt).meta.wire_len_bytes;
            self.net.links[l as usize].queued_bytes -= u64::from(bytes);
            let meta = QueueMeta {
                enq_qdepth_pkts: d.enq_depth,
                deq_qdepth_pkts: d.deq_depth,
                queue: d.queue,
            };
            if self.start_tx(l, d.pkt, meta) {
                break;
            }
        }
        if !self.net.links[l as usize].waiting_conns.is_empty() {
            self.wake_waiting_conns(l);
        }
    }

    fn on_arrive(&mut self, l: u32) {
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

    fn input(&mut self, node: u32, port: PortId, id: PacketId) {
        let ni = node as usize;
        if self.net.nodes[ni].kind == NodeKind::Host {
            let pkt = self.net.pool.take(id);
            let dst = pkt.meta.dst_ip;
            if dst != self.net.nodes[ni].ip && !self.net.interface_ips[ni].contains(&dst) {
                self.net.nodes[ni].dropped += 1;
                self.release(&pkt);
            } else if pkt.tcp != NO_TCP {
                self.on_tcp_packet(pkt);
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
        if self.net.nodes[ni].tunnel_side.is_some() {
            let pkt = self.net.pool.take(id);
            if self.traffic.tunnel_addrs.get(&pkt.meta.dst_ip) == Some(&node) {
                if pkt.tcp != NO_TCP {
                    self.on_tcp_packet(pkt);
                } else if pkt.inner != NO_INNER {
                    self.udp_subtunnel_arrival(node, port, pkt);
                } else {
                    self.net.nodes[ni].dropped += 1;
                    self.release(&pkt);
                }
                return;
            }
            let pkt = match self.tunnel_ingress(node, pkt) {
                Ok(()) => return,
                Err(p) => p,
            };
            self.route_packet(node, port, pkt);
            return;
        }
        self.route(node, port, id);
    }

    /// [`Simulation::route`] for a packet not in the pool yet.
    fn route_packet(&mut self, node: u32, port: PortId, pkt: Packet) {
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
            queue = ctx.queue();
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

    fn deliver(&mut self, pkt: Packet) {
        let interval = self.monitor.sample_interval_ps;
        let f = &mut self.traffic.flows[pkt.flow as usize];
        f.delivered += 1;
        if self.net.now <= f.stop_ps {
            f.delivered_payload_bytes += u64::from(pkt.payload_bytes);
        }
        f.rx_interval_bytes += u64::from(pkt.payload_bytes);
        f.owd_sum_ps += u128::from(self.net.now - pkt.sent_ps);
        match f.max_seq {
            Some(m) if pkt.seq < m => f.reordered += 1,
            _ => f.max_seq = Some(pkt.seq),
        }
        if pkt.path != NO_PATH {
            f.per_path_bytes[usize::from(pkt.path)] += u64::from(pkt.payload_bytes);
            f.per_path_interval_bytes[usize::from(pkt.path)] += u64::from(pkt.payload_bytes);
        }
        let k = ((pkt.sent_ps / interval) as usize).min(f.delivered_by_sent_interval.len() - 1);
        f.delivered_by_sent_interval[k] += 1;
    }

    fn on_sample(&mut self) {
        let secs = self.monitor.sample_interval_ps as f64 / PS_PER_S as f64;
        let mbps = |bytes: u64| round(bytes as f64 * 8.0 / secs / 1e6, 4);
        let mut row = vec![round(self.net.now as f64 / PS_PER_S as f64, 6)];
        for (pi, &l) in self.monitor.path_links.iter().enumerate() {
            let b = std::mem::take(&mut self.net.links[l as usize].stats.rx_bytes_interval);
            self.monitor.path_total_bytes[pi] += b;
            row.push(mbps(b));
        }
        for f in &mut self.traffic.flows {
            row.push(mbps(std::mem::take(&mut f.rx_interval_bytes)));
        }
        for f in &mut self.traffic.flows {
            for &p in &f.split_paths {
                row.push(mbps(f.per_path_interval_bytes[p]));
            }
            f.per_path_interval_bytes.iter_mut().for_each(|b| *b = 0);
        }
        // Loss columns, filled in at the end from send-time buckets.
        row.resize(row.len() + self.traffic.flows.len(), 0.0);
        for f in &mut self.traffic.flows {
            let Some(t) = f.tcp.as_mut() else { continue };
            let c = &self.traffic.conns[t.conn as usize];
            // An MPTCP flow's window is its subflows' together.
            let cwnd = match t.mptcp {
                Some(mp) => self.traffic.mptcp[mp as usize]
                    .subflows
                    .iter()
                    .map(|s| self.traffic.conns[s.conn as usize].sender.cwnd_bytes())
                    .sum(),
                None => c.sender.cwnd_bytes(),
            };
            t.cwnd_samples_sum += cwnd;
            t.cwnd_samples += 1;
            row.push(round(cwnd as f64 / 1024.0, 3));
            row.push(round(c.sender.rtt().srtt_ns().unwrap_or(0) as f64 / 1e6, 3));
            // An MPTCP flow's retransmissions are its subflows' together, as in its figures.
            let retx = match t.mptcp {
                Some(mp) => self.traffic.mptcp[mp as usize]
                    .subflows
                    .iter()
                    .map(|s| {
                        self.traffic.conns[s.conn as usize]
                            .sender
                            .stats()
                            .retransmitted_segments
                    })
                    .sum(),
                None => c.sender.stats().retransmitted_segments,
            };
            row.push((retx - t.retx_at_last_sample) as f64);
            t.retx_at_last_sample = retx;
        }
        for t in &mut self.traffic.tunnels {
            for side in &mut t.sides {
                if t.transport == SubtunnelTransport::Tcp {
                    for &c in &side.conns {
                        let s = &self.traffic.conns[c as usize].sender;
                        row.push(round(s.cwnd_bytes() as f64 / 1024.0, 3));
                        row.push(round(s.rtt().srtt_ns().unwrap_or(0) as f64 / 1e6, 3));
                        row.push(round(s.unacked_bytes() as f64 / 1024.0, 3));
                    }
                }
                for n in side.entry.stats().per_subtunnel.iter() {
                    row.push(*n as f64);
                }
            }
        }
        let mut cache: Option<(u32, Vec<(String, u64)>)> = None;
        for &(node, k) in &self.monitor.register_columns {
            if cache.as_ref().map(|c| c.0) != Some(node) {
                let regs = self.net.nodes[node as usize]
                    .program
                    .as_ref()
                    .map(|p| p.registers())
                    .unwrap_or_default();
                cache = Some((node, regs));
            }
            let v = cache.as_ref().and_then(|c| c.1.get(k)).map_or(0, |r| r.1);
            row.push(v as f64);
        }
        self.monitor.series.rows.push(row);
        let next = self.net.now + self.monitor.sample_interval_ps;
        if next <= self.monitor.duration_ps {
            self.net.queue.schedule(next, EventKind::Sample);
        }
    }

    fn tcp_flow_figures(&self, f: &FlowState, t: &TcpFlowState, active_s: f64) -> FlowFigures {
        let mut conns = vec![&self.traffic.conns[t.conn as usize]];
        if let Some(rc) = t.response_conn {
            conns.push(&self.traffic.conns[rc as usize]);
        }
        if let Some(mp) = t.mptcp {
            conns = self.traffic.mptcp[mp as usize]
                .subflows
                .iter()
                .map(|s| &self.traffic.conns[s.conn as usize])
                .collect();
        }
        let sum = |g: &dyn Fn(&Conn) -> u64| conns.iter().map(|c| g(c)).sum::<u64>();
        let sent = sum(&|c| c.sender.stats().segments_sent);
        let retx = sum(&|c| c.sender.stats().retransmitted_segments);
        let received = sum(&|c| c.receiver.stats().segments);
        let ooo = sum(&|c| c.receiver.stats().out_of_order_segments);
        let owd: u128 = conns.iter().map(|c| c.owd_sum_ps).sum();
        let main = &self.traffic.conns[t.conn as usize];
        let pct = |a: u64, b: u64| {
            if b == 0 {
                0.0
            } else {
                round(100.0 * a as f64 / b as f64, 4)
            }
        };
        FlowFigures {
            id: f.name.clone(),
            offered_mbps: 0.0,
            delivered_mbps: round(f.delivered_payload_bytes as f64 * 8.0 / active_s / 1e6, 4),
            loss_pct: Some(pct(retx, sent)),
            mean_owd_ms: Some(if received == 0 {
                0.0
            } else {
                round(owd as f64 / received as f64 / 1e9, 4)
            }),
            reordered_pct: pct(ooo, received),
            sent_pkts: sent,
            delivered_pkts: received,
            per_path_mbps: BTreeMap::new(),
            delivered_mib: round(f.delivered_total_bytes as f64 / f64::from(1u32 << 20), 4),
            tcp: Some(TcpFigures {
                cc: main.sender.controller().name().to_string(),
                retransmitted_segments: Some(retx),
                fast_retransmits: Some(sum(&|c| c.sender.stats().fast_retransmits)),
                rtos: Some(sum(&|c| c.sender.stats().rtos)),
                ecn_reductions: Some(sum(&|c| c.sender.stats().ecn_reductions)),
                ce_segments: Some(sum(&|c| c.receiver.stats().ce_segments)),
                srtt_ms: Some(round(main.sender.rtt().srtt_ns().unwrap_or(0) as f64 / 1e6, 3)),
                mean_cwnd_kib: Some(if t.cwnd_samples == 0 {
                    0.0
                } else {
                    round(t.cwnd_samples_sum as f64 / t.cwnd_samples as f64 / 1024.0, 3)
                }),
                completion_s: t
                    .completion_ps
                    .map(|c| round((c - f.start_ps) as f64 / PS_PER_S as f64, 6)),
                responses: matches!(t.app, TcpApp::RequestResponse { .. }).then_some(t.responses_done),
                mean_response_ms: match t.app {
                    TcpApp::RequestResponse { .. } if t.responses_done > 0 => {
                        Some(round(t.response_time_sum_ps as f64 / t.responses_done as f64 / 1e9, 4))
                    }
                    _ => None,
                },
                subflows: conns
                    .iter()
                    .filter(|_| t.mptcp.is_some())
                    .map(|c| subflow_figures(c, active_s))
                    .collect(),
                mptcp: t.mptcp.map(|mp| self.mptcp_figures(mp)),
            }),
        }
    }

    fn capture(&mut self, c: u32, pkt: &Packet, outgoing: bool) {
        if self.net.io_error.is_some() {
            return;
        }
        let tcp = self.net.tcp_parts.get(pkt.tcp);
        let option = tcp.and_then(|t| self.net.mptcp_options.get(t.mptcp));
        if let Err(e) = self.net.captures[c as usize].record(pkt, tcp, option, self.net.now, outgoing) {
            self.net.io_error = Some(e);
        }
    }

    /// Collect the figures and the time series.
    pub fn finish(mut self) -> Result<RunOutput, SimError> {
        if let Some(e) = self.net.io_error.take() {
            return Err(SimError::Io(e));
        }
        let duration_s = self.monitor.duration_ps as f64 / PS_PER_S as f64;
        // Loss per sample interval, by send time.
        let n_paths = self.monitor.path_links.len();
        let split_cols: usize = self.traffic.flows.iter().map(|f| f.split_paths.len()).sum();
        let loss_col0 = 1 + n_paths + self.traffic.flows.len() + split_cols;
        for (k, row) in self.monitor.series.rows.iter_mut().enumerate() {
            for (fi, f) in self.traffic.flows.iter().enumerate() {
                // TCP: retransmitted segments in percent of segments sent in the interval.
                let (sent, got) = match &f.tcp {
                    Some(t) => {
                        let sent = t.segs_by_interval.get(k).copied().unwrap_or(0);
                        (sent, sent - t.retx_by_interval.get(k).copied().unwrap_or(0).min(sent))
                    }
                    None => (
                        f.sent_by_interval.get(k).copied().unwrap_or(0),
                        f.delivered_by_sent_interval.get(k).copied().unwrap_or(0),
                    ),
                };
                row[loss_col0 + fi] = if sent == 0 {
                    0.0
                } else {
                    round(100.0 * (sent - got.min(sent)) as f64 / sent as f64, 4)
                };
            }
        }
        let flows = self
            .traffic
            .flows
            .iter()
            .map(|f| {
                let sent = f.next_seq;
                let active_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
                let per_path_mbps = f
                    .split_paths
                    .iter()
                    .map(|&p| {
                        (
                            self.monitor.path_names[p].clone(),
                            round(f.per_path_bytes[p] as f64 * 8.0 / active_s / 1e6, 4),
                        )
                    })
                    .collect();
                if let Some(t) = &f.tcp {
                    return self.tcp_flow_figures(f, t, active_s);
                }
                FlowFigures {
                    id: f.name.clone(),
                    offered_mbps: round(f.offered_mbps, 4),
                    delivered_mbps: round(f.delivered_payload_bytes as f64 * 8.0 / active_s / 1e6, 4),
                    loss_pct: Some(if sent == 0 {
                        0.0
                    } else {
                        round(100.0 * (sent - f.delivered.min(sent)) as f64 / sent as f64, 4)
                    }),
                    mean_owd_ms: Some(if f.delivered == 0 {
                        0.0
                    } else {
                        round(f.owd_sum_ps as f64 / f.delivered as f64 / 1e9, 4)
                    }),
                    reordered_pct: if f.delivered == 0 {
                        0.0
                    } else {
                        round(100.0 * f.reordered as f64 / f.delivered as f64, 4)
                    },
                    sent_pkts: sent,
                    delivered_pkts: f.delivered,
                    per_path_mbps,
                    delivered_mib: round(
                        f.delivered as f64 * f64::from(f.payload_bytes) / f64::from(1u32 << 20),
                        4,
                    ),
                    tcp: None,
                }
            })
            .collect();
        let paths = (0..n_paths)
            .map(|p| PathFigures {
                id: self.monitor.path_names[p].clone(),
                mean_mbps: round(self.monitor.path_total_bytes[p] as f64 * 8.0 / duration_s / 1e6, 4),
                capacity_mbps: round(self.monitor.path_capacity_bps[p] as f64 / 1e6, 4),
            })
            .collect();
        let mut counters: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for node in &self.net.nodes {
            let mut c: BTreeMap<String, u64> = node
                .program
                .as_ref()
                .map(|p| p.counters().into_iter().collect())
                .unwrap_or_default();
            c.insert("dropped".into(), node.dropped);
            counters.insert(node.name.clone(), c);
        }
        let mut q = BTreeMap::new();
        for l in &self.net.links {
            let name = format!(
                "{}->{}",
                self.net.nodes[l.from as usize].name, self.net.nodes[l.to as usize].name
            );
            q.insert(format!("{name}.tail_drops"), l.stats.tail_drops);
            q.insert(format!("{name}.max_depth_pkts"), u64::from(l.stats.max_depth_pkts));
            if !l.up || l.stats.down_drops > 0 {
                q.insert(format!("{name}.down_drops"), l.stats.down_drops);
            }
        }
        counters.insert("queues".into(), q);
        for (name, c) in self.component_counters() {
            counters.entry(name).or_default().extend(c);
        }
        let captured_frames = self.net.captures.iter().map(|c| c.frames).sum();
        let tunnels = self.tunnel_figures();
        drop(self.net.captures);
        Ok(RunOutput {
            figures: RunFigures {
                seed: self.monitor.seed,
                flows,
                paths,
                counters,
                tunnels,
                link_model: None,
            },
            series: self.monitor.series,
            events: self.net.events,
            captured_frames,
        })
    }
}

/// One MPTCP subflow's figures.
fn subflow_figures(c: &Conn, active_s: f64) -> mpsched_scenario::results::SubflowFigures {
    let m = &c.data_meta;
    let st = c.sender.stats();
    mpsched_scenario::results::SubflowFigures {
        id: format!(
            "{}:{} -> {}:{}",
            std::net::Ipv4Addr::from(m.src_ip),
            m.src_port,
            std::net::Ipv4Addr::from(m.dst_ip),
            m.dst_port
        ),
        acked_mbps: round(c.sender.acked_bytes() as f64 * 8.0 / active_s / 1e6, 4),
        segments_sent: st.segments_sent,
        retransmitted_segments: st.retransmitted_segments,
        rtos: Some(st.rtos),
        srtt_ms: round(c.sender.rtt().srtt_ns().unwrap_or(0) as f64 / 1e6, 3),
        cwnd_kib: round(c.sender.cwnd_bytes() as f64 / 1024.0, 3),
    }
}
