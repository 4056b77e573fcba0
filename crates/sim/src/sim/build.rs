//! Building a simulation from a scenario, one part at a time: the network, the switches'
//! programs, the path monitors, the flows and their connections, the tunnels, the captures, the
//! time-series columns and the first events.

use super::*;
use mpsched_tunnel::path::{PathReceiver, PathSender};
use mpsched_tunnel::reorder::ReorderBuffer;

/// Flows whose order a tunnel exit remembers (the reordering measure's bound).
const EXIT_FLOWS: usize = mpsched_core::tunnel::DEFAULT_FLOW_TABLE_ENTRIES as usize;

/// The port of `from` that leads to its neighbour `to`.
pub(super) fn port_to(nodes: &[NodeState], from: usize, to: usize) -> PortId {
    nodes[from]
        .peers
        .iter()
        .position(|&(p, _)| p as usize == to)
        .expect("validated: linked") as PortId
}

/// Nodes and simplex links (two per scenario link), each node's ports in declaration order.
pub(super) fn network(sc: &Scenario) -> (Vec<NodeState>, Vec<Link>) {
    let mut nodes: Vec<NodeState> = sc
        .nodes
        .iter()
        .map(|x| NodeState {
            name: x.name.clone(),
            kind: x.kind,
            ip: x.ip,
            out_links: Vec::new(),
            peers: Vec::new(),
            program: None,
            uses_enqueue: false,
            parses_mptcp: false,
            dropped: 0,
            tunnel_ends: TunnelEnds::None,
            host_tunnel_end: false,
        })
        .collect();
    let mut links = Vec::new();
    // A host's own interface queue may differ from the switch buffers (`host_queue_pkts`).
    let queue_at = |end: usize, l: &mpsched_scenario::Link| l.queue_pkts_at(sc.nodes[end].kind == NodeKind::Host);
    for l in &sc.links {
        let (pa, pb) = (
            nodes[l.a].out_links.len() as PortId,
            nodes[l.b].out_links.len() as PortId,
        );
        let (ia, ib) = (links.len() as u32, links.len() as u32 + 1);
        links.push(Link::new(
            l.a as u32,
            pa,
            l.b as u32,
            pb,
            l.rate_bps,
            l.delay_ps,
            PortQueues::new(usize::from(l.queues), queue_at(l.a, l), l.discipline.clone()),
        ));
        links.push(Link::new(
            l.b as u32,
            pb,
            l.a as u32,
            pa,
            l.rate_bps,
            l.delay_ps,
            PortQueues::new(usize::from(l.queues), queue_at(l.b, l), l.discipline.clone()),
        ));
        nodes[l.a].out_links.push(ia);
        nodes[l.a].peers.push((l.b as u32, pb));
        nodes[l.b].out_links.push(ib);
        nodes[l.b].peers.push((l.a as u32, pa));
    }
    (nodes, links)
}

/// Every switch's program, by the name the scenario gives it, from the registry
/// (`mpsched-programs`), filled with the tables the control plane computed for the node.
pub(super) fn install_switches(
    sc: &Scenario,
    wiring: &mpsched_topo::Wiring,
    nodes: &mut [NodeState],
    rng: &mut SeededRandom,
) -> Result<(), SimError> {
    for (i, node) in sc.nodes.iter().enumerate() {
        let Some(tables) = &wiring.switches[i] else {
            continue;
        };
        // Drawn for every switch whatever it runs, so that changing one node's program moves
        // no other node's draws.
        let seed = rng.next_u64();
        let (spec, params) = sc
            .program_of(i)
            .ok_or_else(|| SimError::Config(format!("node `{}` runs no registered program", node.name)))?;
        let input = mpsched_programs::BuildInput {
            node: &node.name,
            tables,
            params,
            seed,
        };
        let prog = spec.build(&input).map_err(|e| SimError::Config(e.to_string()))?;
        nodes[i].program = Some(prog);
    }

    Ok(())
}

/// Per scenario path: the monitored link (its last, into the confluence point) and its capacity.
pub(super) fn path_monitors(sc: &Scenario, nodes: &[NodeState], links: &mut [Link]) -> (Vec<u32>, Vec<u64>) {
    let mut path_links = Vec::new();
    let mut path_capacity_bps = Vec::new();
    for (pi, p) in sc.paths.iter().enumerate() {
        let k = p.nodes.len();
        let (a, b) = (p.nodes[k - 2], p.nodes[k - 1]);
        let l = nodes[a].out_links[usize::from(port_to(nodes, a, b))];
        links[l as usize].path_tag = Some(pi as u8);
        path_links.push(l);
        let cap = p
            .nodes
            .windows(2)
            .map(|w| links[nodes[w[0]].out_links[usize::from(port_to(nodes, w[0], w[1]))] as usize].rate_bps)
            .min()
            .unwrap_or(0);
        path_capacity_bps.push(cap);
    }

    (path_links, path_capacity_bps)
}

/// The flows' sources and sinks, each starting up to the scenario's start jitter late.
pub(super) fn flows(
    sc: &Scenario,
    wiring: &mpsched_topo::Wiring,
    rng: &mut SeededRandom,
    intervals: usize,
) -> Vec<FlowState> {
    let mut flows = Vec::new();
    for f in &sc.flows {
        let jitter = if sc.start_jitter_ps > 0 {
            rng.next_u64() % (sc.start_jitter_ps + 1)
        } else {
            0
        };
        // Each end's address is that of the interface it sends by (the node's own unless the
        // link gives the interface one).
        let (out_port, back_port) = (sc.flow_port(wiring, f, f.src), sc.flow_port(wiring, f, f.dst));
        let mut meta = PacketMeta::udp(
            wiring.interface_ips[f.src][usize::from(out_port)],
            wiring.interface_ips[f.dst][usize::from(back_port)],
            f.src_port,
            f.dst_port,
            f.payload_bytes + UDP_OVERHEAD_BYTES,
        );
        meta.ecn = f.ecn;
        meta.dscp = f.dscp;
        let split_paths = sc
            .splits
            .iter()
            .find(|s| s.src == f.src && s.dst == f.dst)
            .map(|s| s.paths.clone())
            .unwrap_or_default();
        flows.push(FlowState {
            name: f.name.clone(),
            src_node: f.src as u32,
            out_port,
            meta,
            payload_bytes: f.payload_bytes,
            rate_bps: f.rate_bps,
            offered_mbps: f.rate_bps as f64 / 1e6,
            start_ps: (f.start_ps + jitter).min(f.stop_ps),
            stop_ps: f.stop_ps,
            next_seq: 0,
            per_path_bytes: vec![0; split_paths.len()],
            per_path_interval_bytes: vec![0; split_paths.len()],
            split_paths,
            delivered: 0,
            delivered_payload_bytes: 0,
            owd_sum_ps: 0,
            max_seq: None,
            reordered: 0,
            rx_interval_bytes: 0,
            sent_by_interval: vec![0; intervals + 1],
            delivered_by_sent_interval: vec![0; intervals + 1],
            tcp: None,
            delivered_total_bytes: 0,
            rate: f.rate_control.as_ref().map(|rc| {
                let start_ps = (f.start_ps + jitter).min(f.stop_ps);
                let back = wiring.interface_ips[f.dst][usize::from(back_port)];
                debug_assert_eq!(back, meta.dst_ip);
                let paced = f.paced.unwrap_or(mpsched_scenario::PacedTransport {
                    size_bytes: None,
                    retransmit_timeout_ps: mpsched_scenario::DEFAULT_RETRANSMIT_TIMEOUT_PS,
                    host_queue_limit_bytes: None,
                });
                rate::RateFlow::new(rc, &paced, f.payload_bytes, start_ps, f.dst as u32, back_port)
            }),
        });
    }

    flows
}

/// The TCP connections of TCP flows (two for request / response), and the MPTCP connections of
/// Most tunnels whose acknowledged paths get time-series columns of their own (RTT, in
/// flight, weight, reordering buffer): beyond it (ten thousand UEs) the summary's figures say
/// it, and the series stays a size one can open.
pub(super) const MAX_DETAILED_TUNNELS: usize = 64;

/// A scenario link's name for columns: its own, else `a-b`.
pub(super) fn link_name(sc: &Scenario, l: usize) -> String {
    let link = &sc.links[l];
    link.name
        .clone()
        .unwrap_or_else(|| format!("{}-{}", sc.nodes[link.a].name, sc.nodes[link.b].name))
}

/// The seed of the scheduler at end `d` of tunnel `t`: its own stream, so that tunnels move no
/// other draw (SplitMix64's finaliser over the run's seed, the tunnel and the end).
fn tunnel_seed(seed: u64, t: usize, d: usize) -> u64 {
    let mut z = seed ^ 0x7475_6e6e_656c_0000 ^ ((t as u64) << 1 | d as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// MPTCP flows with their subflows' connections.
pub(super) fn flow_connections(
    sc: &Scenario,
    wiring: &mpsched_topo::Wiring,
    flows: &mut [FlowState],
    intervals: usize,
    seed: u64,
) -> (Vec<Conn>, Vec<mptcp::MptcpConn>) {
    let mut conns: Vec<Conn> = Vec::new();
    let mut mptcp = Vec::new();
    // Keys and nonces from their own stream, so that MPTCP flows move no other draw.
    let mut keys_rng = SeededRandom::new(seed ^ 0x6d70_7463_705f_6b65);
    for (fi, f) in sc.flows.iter().enumerate() {
        let Some(t) = &f.tcp else { continue };
        let meta = flows[fi].meta;
        let c = conns.len() as u32;
        if let Some(settings) = &t.mptcp {
            let mp = mptcp.len() as u32;
            mptcp.push(mptcp_connection(
                sc,
                wiring,
                (fi, mp),
                settings,
                &mut conns,
                &mut keys_rng,
            ));
            let mut state = TcpFlowState::new(t.app, c, None, intervals);
            state.mptcp = Some(mp);
            flows[fi].tcp = Some(state);
            continue;
        }
        let (there, back) = (sc.flow_port(wiring, f, f.src), sc.flow_port(wiring, f, f.dst));
        conns.push(Conn::new(
            &t.config,
            f.src as u32,
            f.dst as u32,
            meta,
            there,
            back,
            Owner::Flow(fi as u32),
        ));
        let response_conn = match t.app {
            TcpApp::RequestResponse { .. } => {
                let mut back_meta = meta;
                std::mem::swap(&mut back_meta.src_ip, &mut back_meta.dst_ip);
                std::mem::swap(&mut back_meta.src_port, &mut back_meta.dst_port);
                conns.push(Conn::new(
                    &t.config,
                    f.dst as u32,
                    f.src as u32,
                    back_meta,
                    back,
                    there,
                    Owner::Response(fi as u32),
                ));
                Some(c + 1)
            }
            _ => None,
        };
        flows[fi].tcp = Some(TcpFlowState::new(t.app, c, response_conn, intervals));
    }

    (conns, mptcp)
}

/// Source port of subflow `k` of flow `fi`: the flow's own for the first, then steps of the
/// number of flows, so that flows on their default ports (40 000 + index) never share a
/// 5-tuple; wrapping within 40 000-65 535 as the defaults do.
fn subflow_port(sc: &Scenario, fi: usize, k: u8) -> u16 {
    let base = sc.flows[fi].src_port;
    if k == 0 {
        return base;
    }
    let step = (u32::from(k) * sc.flows.len() as u32) % 25_536;
    let off = (u32::from(base.saturating_sub(40_000)) + step) % 25_536;
    if base >= 40_000 {
        (40_000 + off) as u16
    } else {
        base.wrapping_add(step as u16)
    }
}

/// One MPTCP flow's connection: a TCP connection per subflow (appended to `conns`), each from
/// the next interface of a host with several (the route's of one with a single link) and its
/// own source port, segments shortened by the DSS option, keys and nonces drawn from `rng`.
fn mptcp_connection(
    sc: &Scenario,
    wiring: &mpsched_topo::Wiring,
    (fi, mp): (usize, u32),
    settings: &mpsched_scenario::MptcpSettings,
    conns: &mut Vec<Conn>,
    rng: &mut SeededRandom,
) -> mptcp::MptcpConn {
    let f = &sc.flows[fi];
    let t = f.tcp.as_ref().expect("an MPTCP flow has TCP settings");
    let mut cfg = t.config.clone();
    cfg.mss_bytes = cfg.mss_bytes.saturating_sub(mptcp::DSS_DATA_BYTES).max(64);
    let interfaces = wiring.interface_ips[f.src].len();
    let back = sc.flow_port(wiring, f, f.dst);
    let mut subflow_conns = Vec::new();
    let mut nonces = Vec::new();
    for k in 0..settings.subflows {
        let out = if interfaces > 1 && f.path.is_none() {
            usize::from(k) % interfaces
        } else {
            usize::from(sc.flow_port(wiring, f, f.src))
        };
        let mut meta = PacketMeta::udp(
            wiring.interface_ips[f.src][out],
            wiring.interface_ips[f.dst][usize::from(back)],
            subflow_port(sc, fi, k),
            f.dst_port,
            0,
        );
        meta.dscp = f.dscp;
        subflow_conns.push(conns.len() as u32);
        conns.push(Conn::new(
            &cfg,
            f.src as u32,
            f.dst as u32,
            meta,
            out as PortId,
            back,
            Owner::Subflow { mp, k },
        ));
        nonces.push((rng.next_u64() as u32, rng.next_u64() as u32));
    }
    let keys = (rng.next_u64(), rng.next_u64());
    mptcp::MptcpConn::new(fi as u32, settings, &subflow_conns, keys, &nonces, &cfg)
}

/// What [`tunnels`] builds: the tunnels, the subtunnel addresses each node terminates, and
/// the dispatch by destination at nodes that end several tunnels.
type Tunnels = (
    Vec<TunnelState>,
    FxHashMap<Ipv4, u32>,
    FxHashMap<(u32, Ipv4), (u32, u8)>,
);

/// The tunnels' two ends, their subtunnel connections (appended to `conns`), the subtunnel
/// addresses each end terminates, and each node's [`TunnelEnds`]. Packets enter a tunnel at an
/// end for the hosts behind its far end: a host far end's own addresses, or the hosts a switch
/// far end reaches other than through the subtunnels (computed once per switch and set of
/// subtunnel ports, and shared: ten thousand devices' tunnels to one gateway share one set).
pub(super) fn tunnels(
    sc: &Scenario,
    wiring: &mpsched_topo::Wiring,
    nodes: &mut [NodeState],
    conns: &mut Vec<Conn>,
    seed: u64,
) -> Result<Tunnels, SimError> {
    let mut tunnels = Vec::new();
    let mut tunnel_addrs = FxHashMap::default();
    let mut behind: HashMap<(usize, Vec<PortId>), Arc<FxHashSet<Ipv4>>> = HashMap::new();
    // Per node: the (tunnel, direction) it encapsulates in, in order.
    let mut ends: HashMap<usize, Vec<(u32, u8)>> = HashMap::new();
    for (ti, tun) in sc.tunnels.iter().enumerate() {
        let scheduler = mpsched_programs::tunnel::tunnel_scheduler(tun.scheduler)
            .ok_or_else(|| SimError::Config(format!("tunnel `{}`: no scheduler `{}`", tun.name, tun.scheduler)))?;
        let acked = scheduler.needs_path_acks() && tun.transport == SubtunnelTransport::Udp;
        let ends_here = [tun.entry, tun.exit];
        let mut sides = Vec::new();
        for (d, &node) in ends_here.iter().enumerate() {
            let far = ends_here[1 - d];
            let dir = if d == 0 { TunnelDir::Down } else { TunnelDir::Up };
            // The next hop of each subtunnel from this end.
            let ports: Vec<PortId> = tun
                .subtunnels
                .iter()
                .map(|&p| {
                    let pn = &sc.paths[p].nodes;
                    let next = if d == 0 { pn[1] } else { pn[pn.len() - 2] };
                    port_to(nodes, node, next)
                })
                .collect();
            let far_ports: Vec<PortId> = tun
                .subtunnels
                .iter()
                .map(|&p| {
                    let pn = &sc.paths[p].nodes;
                    let next = if d == 0 { pn[pn.len() - 2] } else { pn[1] };
                    port_to(nodes, far, next)
                })
                .collect();
            let far_hosts = if sc.nodes[far].kind == NodeKind::Host {
                let mut own: FxHashSet<Ipv4> = wiring.interface_ips[far].iter().copied().collect();
                own.insert(sc.nodes[far].ip);
                Arc::new(own)
            } else {
                let mut key_ports = far_ports.clone();
                key_ports.sort_unstable();
                behind
                    .entry((far, key_ports))
                    .or_insert_with(|| {
                        Arc::new(
                            sc.nodes
                                .iter()
                                .enumerate()
                                .filter(|(h, n)| {
                                    n.kind == NodeKind::Host
                                        && wiring
                                            .routes
                                            .port(far, *h)
                                            .is_some_and(|port| !far_ports.contains(&port))
                                })
                                .map(|(_, n)| n.ip)
                                .collect(),
                        )
                    })
                    .clone()
            };
            let mut sub_conns = Vec::new();
            for (j, &port) in ports.iter().enumerate() {
                let addr = subtunnel_addr(ti, j, dir);
                tunnel_addrs.insert(addr, far as u32);
                if tun.transport == SubtunnelTransport::Tcp {
                    let meta = PacketMeta::udp(sc.nodes[node].ip, addr, 50_000 + j as u16, 9000, 0);
                    let c = conns.len() as u32;
                    let back = if d == 0 { TunnelDir::Up } else { TunnelDir::Down };
                    conns.push(Conn::new(
                        &tun.tcp,
                        node as u32,
                        far as u32,
                        meta,
                        port,
                        far_ports[j],
                        Owner::Subtunnel(TunnelRef { tunnel: ti as u32, dir }),
                    ));
                    // ACKs return along the same subtunnel, to the other direction's address.
                    let ack = &mut conns[c as usize].ack_meta;
                    ack.src_ip = sc.nodes[far].ip;
                    ack.dst_ip = subtunnel_addr(ti, j, back);
                    sub_conns.push(c);
                }
            }
            // ACKs of a TCP subtunnel travel the other way, to the other direction's address.
            for (j, _) in ports.iter().enumerate() {
                let back = if d == 0 { TunnelDir::Up } else { TunnelDir::Down };
                tunnel_addrs.insert(subtunnel_addr(ti, j, back), node as u32);
            }
            ends.entry(node).or_default().push((ti as u32, d as u8));
            let n_paths = if acked { ports.len() } else { 0 };
            let reorder = (tun.reorder_capacity > 0 && tun.transport == SubtunnelTransport::Udp).then(|| {
                let timeout_ns = tun.reorder_timeout_ps / 1000;
                let mut rb = ReorderBuffer::new(tun.reorder_capacity as usize, timeout_ns);
                // Each path delivers in order; one silent for the timeout holds nothing back.
                rb.track_paths(0..ports.len(), timeout_ns, 0);
                rb
            });
            sides.push(TunnelSide {
                rtt_sum_ns: vec![0; n_paths],
                rtt_samples: vec![0; n_paths],
                reorder,
                reorder_timer_ps: None,
                occupancy_sum: 0,
                occupancy_samples: 0,
                senders: (0..n_paths)
                    .map(|_| PathSender::new(tunnel::sim_path_config()))
                    .collect(),
                receivers: (0..n_paths)
                    .map(|_| PathReceiver::new(&tunnel::sim_path_config()))
                    .collect(),
                node: node as u32,
                entry: TunnelEntry::sharing(
                    far_hosts,
                    scheduler.build(&tun.scheduler_params, tunnel_seed(seed, ti, d)),
                    tun.subtunnels.len(),
                ),
                exit: TunnelExit::new(EXIT_FLOWS),
                conns: sub_conns,
                ports,
            });
        }
        let [down, up]: [TunnelSide; 2] = sides.try_into().map_err(|_| SimError::Config("tunnel sides".into()))?;
        tunnels.push(TunnelState {
            name: tun.name.clone(),
            scheduler_name: tun.scheduler,
            transport: tun.transport,
            send_buffer_bytes: tun.send_buffer_bytes,
            subtunnel_names: tun.subtunnels.iter().map(|&p| sc.paths[p].name.clone()).collect(),
            acked,
            sides: [down, up],
        });
    }
    // A node ending several tunnels (validation: each to a host) sends a packet into the one
    // whose far end is its destination.
    let mut by_dst = FxHashMap::default();
    for (node, list) in ends {
        nodes[node].host_tunnel_end = sc.nodes[node].kind == NodeKind::Host;
        nodes[node].tunnel_ends = match list[..] {
            [(tunnel, dir)] => TunnelEnds::One { tunnel, dir },
            _ => {
                for &(t, d) in &list {
                    for &ip in tunnels[t as usize].sides[d as usize].entry.far_hosts() {
                        by_dst.entry((node as u32, ip)).or_insert((t, d));
                    }
                }
                TunnelEnds::Many
            }
        };
    }
    Ok((tunnels, tunnel_addrs, by_dst))
}

/// The pcap captures asked for; each link they record is told which records its
/// transmissions and which its arrivals.
pub(super) fn captures(
    opts: &SimOptions,
    sc: &Scenario,
    nodes: &[NodeState],
    links: &mut [Link],
) -> Result<Vec<Capture>, SimError> {
    let mut captures = Vec::new();
    for req in &opts.captures {
        let (ni, port) = sc.interface_port(&req.node, &req.iface).map_err(SimError::Capture)?;
        let port = usize::from(port);
        let (peer, peer_port) = nodes[ni].peers[port];
        let ci = captures.len() as u32;
        captures.push(Capture::create(
            &req.path,
            ni as u32,
            port as u16,
            peer,
            peer_port,
            req.snaplen,
        )?);
        let out_link = nodes[ni].out_links[port] as usize;
        links[out_link].capture_tx = Some(ci);
        let in_link = nodes[peer as usize].out_links[usize::from(peer_port)] as usize;
        links[in_link].capture_rx = Some(ci);
    }
    Ok(captures)
}

/// The time series' columns, and the (node, register) behind each register column.
pub(super) fn series_columns(
    sc: &Scenario,
    flows: &[FlowState],
    tunnels: &[TunnelState],
    nodes: &[NodeState],
) -> (Vec<String>, Vec<(u32, usize)>) {
    let mut columns = vec!["time_s".to_string()];
    for p in &sc.paths {
        columns.push(format!("{}_mbps", p.name));
    }
    for f in flows {
        columns.push(format!("{}_mbps", f.name));
    }
    for f in flows {
        for &p in &f.split_paths {
            columns.push(format!("{}_{}_mbps", f.name, sc.paths[p].name));
        }
    }
    for f in flows {
        columns.push(format!("{}_loss_pct", f.name));
    }
    for f in flows {
        if f.tcp.is_some() {
            columns.push(format!("{}_cwnd_kib", f.name));
            columns.push(format!("{}_srtt_ms", f.name));
            columns.push(format!("{}_retx", f.name));
        }
    }
    for t in tunnels {
        for dn in ["down", "up"] {
            if t.transport == SubtunnelTransport::Tcp {
                for name in &t.subtunnel_names {
                    columns.push(format!("{}_{dn}_{name}_cwnd_kib", t.name));
                    columns.push(format!("{}_{dn}_{name}_srtt_ms", t.name));
                    columns.push(format!("{}_{dn}_{name}_fill_kib", t.name));
                }
            }
            for name in &t.subtunnel_names {
                columns.push(format!("{}_{dn}_{name}_pkts", t.name));
            }
            if t.acked && tunnels.len() <= MAX_DETAILED_TUNNELS {
                for name in &t.subtunnel_names {
                    columns.push(format!("{}_{dn}_{name}_srtt_ms", t.name));
                    columns.push(format!("{}_{dn}_{name}_in_flight_pkts", t.name));
                }
                columns.push(format!("{}_{dn}_weight", t.name));
                columns.push(format!("{}_{dn}_reorder_pkts", t.name));
            }
        }
    }
    for tr in &sc.rate_traces {
        columns.push(format!("{}_rate_mbps", link_name(sc, tr.link)));
    }
    let mut register_columns = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        if let Some(p) = &node.program {
            for (k, (name, _)) in p.registers().iter().enumerate() {
                columns.push(format!("{}_{}", node.name, name));
                register_columns.push((i as u32, k));
            }
        }
    }

    (columns, register_columns)
}

/// Per named scenario link: its simplex link from `a` to `b`, whose port's queue the time
/// series shows (`<name>_queue_pkts` at each sample, `<name>_queue_max_pkts` the most since
/// the last), and the two columns' names.
pub(super) fn queue_monitors(sc: &Scenario, nodes: &[NodeState]) -> (Vec<u32>, Vec<String>) {
    let mut links = Vec::new();
    let mut columns = Vec::new();
    for l in &sc.links {
        let Some(name) = &l.name else { continue };
        let (a, b) = (l.a, l.b);
        links.push(nodes[a].out_links[usize::from(port_to(nodes, a, b))]);
        columns.push(format!("{name}_queue_pkts"));
        columns.push(format!("{name}_queue_max_pkts"));
    }
    (links, columns)
}

/// The first events: every flow's start (and a TCP flow's stop), the first sample.
pub(super) fn first_events(sc: &Scenario, flows: &[FlowState]) -> EventQueue {
    let mut queue = EventQueue::new();
    for (i, f) in flows.iter().enumerate() {
        if f.start_ps < f.stop_ps {
            if f.tcp.is_some() {
                queue.schedule(f.start_ps, EventKind::AppStart(i as u32));
                queue.schedule(f.stop_ps, EventKind::AppStop(i as u32));
            } else {
                queue.schedule(f.start_ps, EventKind::Send(i as u32));
            }
        }
    }
    queue.schedule(sc.sample_interval_ps.min(sc.duration_ps), EventKind::Sample);

    queue
}
