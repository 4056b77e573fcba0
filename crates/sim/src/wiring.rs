//! The control plane's view of a scenario: which port of each node leads where, the routes, and
//! the tables each switch's program is filled with. Both backends wire a scenario from this, so
//! the simulator and the kernel data plane run the same tables.

use mpsched_core::packet::{Ipv4, PortId};
use mpsched_core::sched::SchedulerConfig;
use mpsched_core::switch::{ConfluenceConfig, SplitGroupConfig, SwitchConfig};
use mpsched_core::table::Route;
use mpsched_scenario::{NodeKind, Protocol, Scenario};
use std::collections::{BTreeMap, VecDeque};

/// Ports, routes and switch tables of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Wiring {
    /// Per node, per port (in the order the node's links are declared): the node at the other
    /// end, the port there, and the scenario link.
    pub ports: Vec<Vec<PortEnd>>,
    /// Per node: destination node -> egress port. Shortest paths by hop count (hosts do not
    /// forward), ties to the lowest port; a flow pinned to a path routes its destination along
    /// that path.
    pub routes: Vec<BTreeMap<usize, PortId>>,
    /// Per node: its switch program's tables (None for hosts).
    pub switches: Vec<Option<SwitchConfig>>,
}

/// Direction of a subtunnel: entry to exit as the tunnel declares it, or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TunnelDir {
    /// Entry to exit, along the path.
    Down = 0,
    /// Exit to entry, along the path reversed.
    Up = 1,
}

/// The outer destination address of subtunnel `j` of tunnel `t` in direction `dir`:
/// `10.250.t.(2 j + dir)`. The switches along the subtunnel's path route it by this address,
/// so each subtunnel keeps to its path.
pub fn subtunnel_addr(t: usize, j: usize, dir: TunnelDir) -> Ipv4 {
    0x0afa_0000 | ((t as u32 & 0xff) << 8) | ((2 * j as u32 + dir as u32) & 0xff)
}

/// The far end of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortEnd {
    /// Node at the other end.
    pub peer: usize,
    /// Its port.
    pub peer_port: PortId,
    /// Index into `Scenario::links`.
    pub link: usize,
}

impl Wiring {
    /// The port of `from` that leads to its neighbour `to`.
    pub fn port_to(&self, from: usize, to: usize) -> Option<PortId> {
        self.ports[from].iter().position(|e| e.peer == to).map(|p| p as PortId)
    }

    /// The nodes a packet from host `src` to host `dst` visits, by the routes (including both
    /// ends); None if the routes do not reach.
    pub fn route_nodes(&self, src: usize, dst: usize) -> Option<Vec<usize>> {
        let mut at = src;
        let mut seen = vec![src];
        while at != dst {
            let port = if at == src { 0 } else { *self.routes[at].get(&dst)? };
            at = self.ports[at].get(usize::from(port))?.peer;
            if seen.contains(&at) {
                return None;
            }
            seen.push(at);
        }
        Some(seen)
    }

    /// The flows whose route passes through both ends of a tunnel: the tunnel's payload.
    pub fn tunnelled_flows(&self, sc: &Scenario) -> Vec<usize> {
        (0..sc.flows.len())
            .filter(|&fi| {
                let f = &sc.flows[fi];
                self.route_nodes(f.src, f.dst).is_some_and(|nodes| {
                    sc.tunnels
                        .iter()
                        .any(|t| nodes.contains(&t.entry) && nodes.contains(&t.exit))
                })
            })
            .collect()
    }

    /// Wire `sc`.
    pub fn of(sc: &Scenario) -> Wiring {
        let n = sc.nodes.len();
        let mut ports: Vec<Vec<PortEnd>> = vec![Vec::new(); n];
        for (li, l) in sc.links.iter().enumerate() {
            let (pa, pb) = (ports[l.a].len() as PortId, ports[l.b].len() as PortId);
            ports[l.a].push(PortEnd {
                peer: l.b,
                peer_port: pb,
                link: li,
            });
            ports[l.b].push(PortEnd {
                peer: l.a,
                peer_port: pa,
                link: li,
            });
        }
        let mut w = Wiring {
            ports,
            routes: vec![BTreeMap::new(); n],
            switches: vec![None; n],
        };
        let adjacency: Vec<Vec<usize>> = w.ports.iter().map(|ps| ps.iter().map(|e| e.peer).collect()).collect();
        for d in 0..n {
            let mut dist = vec![u32::MAX; n];
            dist[d] = 0;
            let mut q = VecDeque::from([d]);
            while let Some(u) = q.pop_front() {
                if u != d && sc.nodes[u].kind == NodeKind::Host {
                    continue;
                }
                for &v in &adjacency[u] {
                    if dist[v] == u32::MAX {
                        dist[v] = dist[u] + 1;
                        q.push_back(v);
                    }
                }
            }
            for u in 0..n {
                if u == d || dist[u] == u32::MAX {
                    continue;
                }
                if let Some(port) = adjacency[u]
                    .iter()
                    .position(|&v| dist[v] != u32::MAX && dist[v] + 1 == dist[u])
                {
                    w.routes[u].insert(d, port as PortId);
                }
            }
        }
        for f in &sc.flows {
            if let Some(p) = f.path {
                for hop in sc.paths[p].nodes.windows(2) {
                    let port = w.port_to(hop[0], hop[1]).expect("validated: linked");
                    w.routes[hop[0]].insert(f.dst, port);
                    // A TCP flow's ACKs come back along the same path.
                    if f.protocol == Protocol::Tcp {
                        let back = w.port_to(hop[1], hop[0]).expect("validated: linked");
                        w.routes[hop[1]].insert(f.src, back);
                    }
                }
            }
        }
        let mut tunnel_routes: Vec<Vec<Route>> = vec![Vec::new(); n];
        for (t, tun) in sc.tunnels.iter().enumerate() {
            for (j, &p) in tun.subtunnels.iter().enumerate() {
                for hop in sc.paths[p].nodes.windows(2) {
                    let (a, b) = (hop[0], hop[1]);
                    tunnel_routes[a].push(Route {
                        prefix: subtunnel_addr(t, j, TunnelDir::Down),
                        len: 32,
                        port: w.port_to(a, b).expect("validated: linked"),
                    });
                    tunnel_routes[b].push(Route {
                        prefix: subtunnel_addr(t, j, TunnelDir::Up),
                        len: 32,
                        port: w.port_to(b, a).expect("validated: linked"),
                    });
                }
            }
        }
        for (i, node) in sc.nodes.iter().enumerate() {
            if node.kind != NodeKind::Switch {
                continue;
            }
            let mut cfg = SwitchConfig::forwarding(
                node.ip,
                w.routes[i]
                    .iter()
                    .map(|(&d, &port)| Route {
                        prefix: sc.nodes[d].ip,
                        len: 32,
                        port,
                    })
                    .collect(),
            );
            let mut markers = BTreeMap::new();
            for (g, s) in sc.splits.iter().enumerate() {
                let paths: Vec<&Vec<usize>> = s.paths.iter().map(|&p| &sc.paths[p].nodes).collect();
                let to = |a: usize, b: usize| w.port_to(a, b).expect("validated: linked");
                if paths[0][0] == i {
                    cfg.splits.push(SplitGroupConfig {
                        group: g as u8,
                        src_ip: sc.nodes[s.src].ip,
                        dst_ip: sc.nodes[s.dst].ip,
                        ports: paths.iter().map(|p| to(i, p[1])).collect(),
                        scheduler: s.scheduler.clone(),
                    });
                }
                // The confluence point's feedback is part of DWRR; other schedulers ignore it.
                let wants_feedback = matches!(s.scheduler, SchedulerConfig::Dwrr { .. });
                if wants_feedback && *paths[0].last().unwrap() == i {
                    let ports: Vec<PortId> = paths.iter().map(|p| to(i, p[p.len() - 2])).collect();
                    cfg.confluences.push(ConfluenceConfig {
                        group: g as u8,
                        src_ip: sc.nodes[s.src].ip,
                        dst_ip: sc.nodes[s.dst].ip,
                        path_ingress_ports: ports.clone(),
                        return_ports: ports,
                        splitter_ip: sc.nodes[paths[0][0]].ip,
                        feedback_every: s.feedback_every,
                    });
                }
                if let Some(th) = s.ecn_threshold_pkts {
                    for p in &paths {
                        for hop in p.windows(2) {
                            if hop[0] == i {
                                markers.insert(to(i, hop[1]), th);
                            }
                        }
                    }
                }
            }
            for l in &sc.links {
                if let Some(th) = l.ecn_threshold_pkts {
                    for (x, y) in [(l.a, l.b), (l.b, l.a)] {
                        if x == i {
                            markers.insert(w.port_to(x, y).expect("linked"), th);
                        }
                    }
                }
            }
            cfg.routes.extend(tunnel_routes[i].iter().cloned());
            cfg.ecn_markers = markers.into_iter().collect();
            w.switches[i] = Some(cfg);
        }
        w
    }
}
