//! The simulation: nodes running programs, links, traffic, monitors, wired from a scenario.

mod build;
mod component;
mod control_loops;
mod datapath;
mod failures;
mod mptcp;
mod rate;
mod rate_traces;
mod tcp;
mod tunnel;

use crate::event::{EventKind, EventQueue, TimePs, PS_PER_S};
use crate::link::{Link, Wire};
use crate::packet::{Packet, PacketId, PacketPool, Slab, StackRef, TcpPart, NO_INNER, NO_PATH, NO_TCP};
use crate::pcap::Capture;
use crate::queue::PortQueues;
use crate::series::TimeSeries;
pub use component::{Component, ComponentId, ConnId, Net, UdpOptions};
use mpsched_core::packet::{Ipv4, PacketMeta, PortId, UDP_OVERHEAD_BYTES};
use mpsched_core::program::{Ctx, Program};
use mpsched_core::rng::SeededRandom;
use mpsched_core::tunnel::SubtunnelView;
use mpsched_scenario::results::TcpFigures;
use mpsched_scenario::results::{round, FlowFigures, PathFigures, RunFigures};
use mpsched_scenario::{NodeKind, Scenario};
use mpsched_scenario::{SubtunnelTransport, TcpApp};
use mpsched_topo::addressing::{subtunnel_addr, TunnelDir};
use mpsched_tunnel::{TunnelEntry, TunnelExit};
pub use mpsched_tunnel::{TCP_FRAMING_BYTES, TUNNEL_UDP_PORT, UDP_ENCAP_BYTES};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::Arc;
use tcp::{Conn, Owner, TcpFlowState};
use tunnel::{TunnelEnds, TunnelRef, TunnelSide, TunnelState};

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
    /// A program's control loop failed.
    #[error("control plane: {0}")]
    Control(String),
}

struct NodeState {
    /// Per port: the outgoing link.
    out_links: Vec<u32>,
    program: Option<Box<dyn Program>>,
    /// The tunnels that end here.
    tunnel_ends: TunnelEnds,
    /// A host that ends a tunnel: what it sends is offered to the tunnel first.
    host_tunnel_end: bool,
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
    /// Payload delivered by way of each of `split_paths` (same order): only the paths the flow is
    /// reported on, so that flows times paths is never allocated.
    per_path_bytes: Vec<u64>,
    // Per sample interval.
    rx_interval_bytes: u64,
    /// As `per_path_bytes`, over the current sample interval.
    per_path_interval_bytes: Vec<u64>,
    sent_by_interval: Vec<u64>,
    delivered_by_sent_interval: Vec<u64>,
    /// TCP flows: connections and application state.
    tcp: Option<TcpFlowState>,
    /// Application bytes delivered over the whole run.
    delivered_total_bytes: u64,
    /// UDP flows paced by a rate controller (`[flow.rate_control]`).
    rate: Option<rate::RateFlow>,
}

impl FlowState {
    /// The flow's next datagram, sent at `now` (counted in its send-time interval of
    /// `interval_ps`); flow index `fi`.
    fn next_datagram(&mut self, fi: u32, now: TimePs, interval_ps: TimePs) -> Packet {
        let seq = self.next_seq;
        self.next_seq += 1;
        let k = ((now / interval_ps) as usize).min(self.sent_by_interval.len() - 1);
        self.sent_by_interval[k] += 1;
        Packet {
            meta: self.meta,
            flow: fi,
            seq,
            sent_ps: now,
            payload_bytes: self.payload_bytes,
            path: NO_PATH,
            tcp: NO_TCP,
            inner: NO_INNER,
            headers: StackRef::NONE,
        }
    }

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

/// What the per-packet path asks of a node's program beside [`NodeState`]'s stages, asked once.
#[derive(Clone, Copy, Debug, Default)]
struct NodeExtra {
    /// Whether the program uses custom headers (hand every packet's stack over).
    uses_headers: bool,
    /// Whether the program reads its ports' queue depths at its enqueue and dequeue stages.
    reads_port_queues: bool,
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
    /// Custom header stacks of packets (`Packet::headers`).
    stacks: Slab<mpsched_core::headers::HeaderStack>,
    /// Per node: what else its program asks of the per-packet path.
    extra: Vec<NodeExtra>,
    /// Whether any program uses custom headers or port depths, or emitted a packet with
    /// headers: until then no call looks at `extra` or a packet's stack.
    extras_used: bool,
    /// The depths of a port's queues, gathered for the next enqueue or dequeue call of a
    /// program that reads them.
    port_depths: Vec<mpsched_core::program::QueueDepth>,
    /// Packets inside UDP subtunnels and TCP subtunnel streams.
    inner: Slab<tunnel::Inner>,
    /// Packets in queues, on wires and in flight, which those hold by handle.
    pool: PacketPool,
    /// Where the packets in propagation are due, by handle; each link holds its list's ends.
    wire: Wire,
    /// The pcap writers (a link names the ones recording it).
    captures: Vec<Capture>,
    /// The first error writing a capture (reported at the end).
    io_error: Option<std::io::Error>,
    /// The first error of a program's control loop (the run stops at it).
    control_error: Option<String>,
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
    /// What a reordering buffer releases (kept to reuse its allocation).
    reorder_out: Vec<(u32, PortId)>,
    /// Subtunnel address -> the node that terminates it.
    tunnel_addrs: FxHashMap<Ipv4, u32>,
    /// At nodes ending several tunnels ([`TunnelEnds::Many`]): (node, destination address) ->
    /// (tunnel, direction encapsulated there), the far ends' addresses.
    tunnel_by_dst: FxHashMap<(u32, Ipv4), (u32, u8)>,
    /// Components, each taken out while it runs.
    components: Vec<Option<Box<dyn Component>>>,
    /// Pending component timers: (component, token).
    component_timers: Slab<(u32, u64)>,
    /// (host, UDP port) -> the component that bound it.
    udp_endpoints: FxHashMap<(u32, u16), ComponentId>,
    /// (source address, source port) -> the rate-controlled flow sending from it.
    rate_sources: FxHashMap<(Ipv4, u16), u32>,
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
    /// Named links whose queues the series shows.
    queue_links: Vec<u32>,
    /// Scenario links whose rate follows a trace (a `<link>_rate_mbps` column each).
    traced_links: Vec<usize>,
    /// Number of sample intervals.
    intervals: usize,
    seed: u64,
}

impl Simulation {
    /// Wire the scenario into nodes, links, programs and sources.
    pub fn new(sc: &Scenario, opts: &SimOptions) -> Result<Simulation, SimError> {
        let (mut nodes, mut links) = build::network(sc);
        let wiring = sc.wiring().map_err(SimError::Config)?;
        let port_rates_bps: Vec<Vec<u64>> = wiring
            .ports
            .iter()
            .map(|ps| ps.iter().map(|e| sc.links[e.link].rate_bps).collect())
            .collect();
        let mut rng = SeededRandom::new(opts.seed);
        build::install_switches(sc, &wiring, &mut nodes, &mut rng)?;
        let (path_links, path_capacity_bps) = build::path_monitors(sc, &nodes, &mut links);
        let intervals = sc.duration_ps.div_ceil(sc.sample_interval_ps) as usize;
        let mut flows = build::flows(sc, &wiring, &mut rng, intervals);
        let (mut conns, mptcp) = build::flow_connections(sc, &wiring, &mut flows, intervals, opts.seed);
        let (tunnels, tunnel_addrs, tunnel_by_dst) = build::tunnels(sc, &wiring, &mut nodes, &mut conns, opts.seed)?;
        let captures = build::captures(opts, sc, &nodes, &mut links)?;
        let (mut columns, register_columns) = build::series_columns(sc, &flows, &tunnels, &nodes);
        let (queue_links, queue_columns) = build::queue_monitors(sc, &nodes);
        columns.extend(queue_columns);
        let queue = build::first_events(sc, &flows);
        let multi_homed = nodes.iter().any(|n| n.kind == NodeKind::Host && n.out_links.len() > 1);
        let n_nodes = nodes.len();
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
            stacks: Slab::default(),
            extra: vec![NodeExtra::default(); n_nodes],
            extras_used: false,
            port_depths: Vec::new(),
            inner: Slab::default(),
            pool: PacketPool::default(),
            wire: Wire::default(),
            captures,
            io_error: None,
            control_error: None,
            end_ps: sc.duration_ps + opts.drain_ps,
            routes: multi_homed.then_some(wiring.routes),
            interface_ips: wiring.interface_ips,
        };
        let rate_sources = flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.rate.is_some())
            .map(|(i, f)| ((f.meta.src_ip, f.meta.src_port), i as u32))
            .collect();
        let traffic = Traffic {
            flows,
            conns,
            mptcp,
            tunnels,
            view_buf: Vec::new(),
            reorder_out: Vec::new(),
            tunnel_addrs,
            tunnel_by_dst,
            components: Vec::new(),
            component_timers: Slab::default(),
            udp_endpoints: FxHashMap::default(),
            rate_sources,
            send_jitter_ps: sc.send_jitter_ps,
            jitter_rng: SeededRandom::new(rng.next_u64()),
        };
        let monitor = Monitor {
            queue_links,
            traced_links: sc.rate_traces.iter().map(|t| t.link).collect(),
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
            // Programs arm their timers (a HULA ToR's probe period) before the first packet.
            if sim.net.nodes[n as usize].program.is_some() {
                sim.call_program(n, |p, ctx| p.start(ctx));
            }
        }
        if let Some(f) = failures::LinkFailures::of(sc)? {
            sim.add_component(Box::new(f));
        }
        if let Some(t) = rate_traces::RateTraces::of(sc) {
            sim.add_component(Box::new(t));
        }
        sim.add_control_loops(sc, &port_rates_bps, opts.seed);
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
        let mut stacks = 0;
        let (mut pooled, mut dangling) = (0, 0);
        let mut count = |id: PacketId| match self.net.pool.get(id) {
            Some(p) => {
                tcp += usize::from(p.tcp != NO_TCP);
                stacks += usize::from(p.headers.is_some());
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
                stacks += usize::from(x.pkt.headers.is_some());
            }
        }
        if self.net.stacks.len() != stacks {
            return Err(format!(
                "{} header stacks held for {stacks} packets with one",
                self.net.stacks.len()
            ));
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
                EventKind::ReorderTimer(code) => self.on_reorder_timer(code),
                EventKind::ComponentTimer(i) => {
                    self.on_component_timer(i);
                    if self.net.control_error.is_some() {
                        break;
                    }
                }
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
        if self.traffic.flows[fi as usize].rate.is_some() {
            return self.on_rate_send(fi);
        }
        let now = self.net.now;
        let interval = self.monitor.sample_interval_ps;
        let jitter = if self.traffic.send_jitter_ps > 0 {
            self.traffic.jitter_rng.next_u64() % (self.traffic.send_jitter_ps + 1)
        } else {
            0
        };
        let f = &mut self.traffic.flows[fi as usize];
        let pkt = f.next_datagram(fi, now, interval);
        let seq = pkt.seq;
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

    fn deliver(&mut self, pkt: Packet) {
        let interval = self.monitor.sample_interval_ps;
        let f = &mut self.traffic.flows[pkt.flow as usize];
        f.delivered += 1;
        f.owd_sum_ps += u128::from(self.net.now - pkt.sent_ps);
        let k = ((pkt.sent_ps / interval) as usize).min(f.delivered_by_sent_interval.len() - 1);
        f.delivered_by_sent_interval[k] += 1;
        let transfer = f.rate.as_ref().is_some_and(|r| r.is_transfer());
        // A transfer's numbers go back after a loss: its receiver counts what it drops, not
        // what arrives out of order.
        if !transfer {
            match f.max_seq {
                Some(m) if pkt.seq < m => f.reordered += 1,
                _ => f.max_seq = Some(pkt.seq),
            }
        }
        // A transfer's payload counts once, in order.
        let counts = f.rate.is_none() || self.rate_flow_delivered(pkt.flow, pkt.seq, pkt.meta.ecn);
        if !counts {
            return;
        }
        let f = &mut self.traffic.flows[pkt.flow as usize];
        if self.net.now <= f.stop_ps {
            f.delivered_payload_bytes += u64::from(pkt.payload_bytes);
        }
        f.rx_interval_bytes += u64::from(pkt.payload_bytes);
        f.delivered_total_bytes += u64::from(pkt.payload_bytes);
        if pkt.path != NO_PATH {
            // Paths the flow is not reported on are not counted (they never were shown).
            if let Some(i) = f.split_paths.iter().position(|&p| p == usize::from(pkt.path)) {
                f.per_path_bytes[i] += u64::from(pkt.payload_bytes);
                f.per_path_interval_bytes[i] += u64::from(pkt.payload_bytes);
            }
        }
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
            for &b in &f.per_path_interval_bytes {
                row.push(mbps(b));
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
        self.sample_reorder_occupancy();
        let detailed = self.traffic.tunnels.len() <= build::MAX_DETAILED_TUNNELS;
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
                if t.acked && detailed {
                    for tx in &side.senders {
                        let v = tx.view();
                        row.push(round(v.srtt_ns as f64 / 1e6, 3));
                        row.push(v.in_flight as f64);
                    }
                    let weight = side.entry.scheduler_counters().into_iter().find(|c| c.0 == "weight");
                    row.push(weight.map_or(0.0, |c| c.1 as f64));
                    row.push(side.reorder.as_ref().map_or(0.0, |rb| rb.stats().occupancy as f64));
                }
            }
        }
        for i in 0..self.monitor.traced_links.len() {
            let l = self.monitor.traced_links[i];
            row.push(round(
                self.net.links[2 * l].rate_bps as f64 * f64::from(u8::from(self.net.links[2 * l].up)) / 1e6,
                3,
            ));
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
        for &l in &self.monitor.queue_links {
            let link = &mut self.net.links[l as usize];
            let now = link.queues.len() as u32;
            let most = std::mem::take(&mut link.stats.max_port_pkts_interval).max(now);
            row.push(f64::from(now));
            row.push(f64::from(most));
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
            reordered_pct: Some(pct(ooo, received)),
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
                // To the nanosecond: a data centre's mice complete in microseconds.
                completion_s: t
                    .completion_ps
                    .map(|c| round((c - f.start_ps) as f64 / PS_PER_S as f64, 9)),
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

    /// Collect the figures and the time series.
    pub fn finish(mut self) -> Result<RunOutput, SimError> {
        if let Some(e) = self.net.io_error.take() {
            return Err(SimError::Io(e));
        }
        if let Some(e) = self.net.control_error.take() {
            return Err(SimError::Control(e));
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
                    .zip(&f.per_path_bytes)
                    .map(|(&p, &b)| {
                        (
                            self.monitor.path_names[p].clone(),
                            round(b as f64 * 8.0 / active_s / 1e6, 4),
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
                    reordered_pct: Some(if f.delivered == 0 {
                        0.0
                    } else {
                        round(100.0 * f.reordered as f64 / f.delivered as f64, 4)
                    }),
                    sent_pkts: sent,
                    delivered_pkts: f.delivered,
                    per_path_mbps,
                    delivered_mib: round(f.delivered_total_bytes as f64 / f64::from(1u32 << 20), 4),
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
                q.insert(format!("{name}.sent_into_down"), l.stats.sent_into_down);
                q.insert(
                    format!("{name}.last_sent_into_down_us"),
                    l.stats.last_sent_into_down_ps / 1_000_000,
                );
            }
        }
        counters.insert("queues".into(), q);
        for (name, c) in self.component_counters() {
            counters.entry(name).or_default().extend(c);
        }
        let rate: BTreeMap<String, u64> = self
            .traffic
            .flows
            .iter()
            .filter_map(|f| Some(f.rate.as_ref()?.counters(&f.name, f.start_ps)))
            .flatten()
            .collect();
        if !rate.is_empty() {
            counters.insert(mpsched_scenario::completion::RATE_CONTROL_COUNTERS.into(), rate);
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
