//! The control plane: what each switch's program is filled with.

use crate::addressing::{subtunnel_addr, TunnelDir};
use crate::graph::{Graph, Link, Node, NodeId, NodeKind, PortEnd};
use crate::routing::Routes;
use mpsched_core::packet::{Ipv4, PortId};
use mpsched_core::sched::SchedulerConfig;
use mpsched_core::switch::{ConfluenceConfig, SplitGroupConfig, SwitchConfig};
use mpsched_core::table::Route;
use mpsched_core::table::ECMP_GROUP;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Traffic from `src` to `dst` split over several paths by a scheduler at the paths' common
/// first node (the splitting point), rejoining at their common last node (the confluence point).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitIntent {
    /// Source host.
    pub src: NodeId,
    /// Destination host.
    pub dst: NodeId,
    /// The paths, each from the splitting point to the confluence point.
    pub paths: Vec<Vec<NodeId>>,
    /// The scheduler.
    pub scheduler: SchedulerConfig,
    /// CE arrivals per path per feedback packet (DWRR).
    pub feedback_every: u32,
    /// ECN marking threshold on every egress port along the paths, in packets waiting.
    pub ecn_threshold_pkts: Option<u32>,
}

/// Traffic to `dst` routed along `path` instead of the shortest route; `src`'s traffic back
/// along the reverse path too when `both_ways` (a TCP flow's ACKs).
#[derive(Clone, Debug, PartialEq)]
pub struct PinIntent {
    /// Source host.
    pub src: NodeId,
    /// Destination host.
    pub dst: NodeId,
    /// The path's nodes (a part of the route), each linked to the next.
    pub path: Vec<NodeId>,
    /// Route `src` back along the path reversed.
    pub both_ways: bool,
}

/// How switches route what no split or pin decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Routing {
    /// One shortest path per destination (the lowest port among equal-cost next hops).
    #[default]
    Shortest,
    /// Every equal-cost next hop, one chosen per flow by the 5-tuple hash (ECMP), with a hash
    /// seed per switch.
    Ecmp,
}

/// What the control plane is asked to set up beside plain shortest-path routing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Intents {
    /// Routing of what no split or pin decides.
    pub routing: Routing,
    /// Per node, a routing that overrides [`Intents::routing`] for its own tables (a program
    /// that needs every equal-cost next hop, say); empty or None: `routing`.
    pub node_routing: Vec<Option<Routing>>,
    /// Per node, whether its program is probe-driven and needs [`SwitchConfig::probe`] (HULA,
    /// MP-HULA); empty: none does.
    pub node_probe: Vec<bool>,
    /// Splitting groups, in group-id order.
    pub splits: Vec<SplitIntent>,
    /// Pinned routes, applied in order (a later pin wins).
    pub pins: Vec<PinIntent>,
    /// Per tunnel, its subtunnels' paths from the entry to the exit (subtunnel `j` of tunnel
    /// `t` is routed by [`subtunnel_addr`] in both directions).
    pub tunnels: Vec<Vec<Vec<NodeId>>>,
    /// Classifier rules, each at its switch, in order.
    pub classify: Vec<crate::classify::ClassifyIntent>,
}

/// Ports, routes and switch tables of a network. Both backends wire a scenario from this, so
/// the simulator and the kernel data plane run the same tables.
#[derive(Clone, Debug)]
pub struct Wiring {
    /// Per node, per port (in the order the node's links are declared): the node at the other
    /// end, the port there, and the link.
    pub ports: Vec<Vec<PortEnd>>,
    /// Routes between every pair of nodes, pins applied.
    pub routes: Routes,
    /// Per node: its switch program's tables (None for hosts).
    pub switches: Vec<Option<SwitchConfig>>,
    /// Per node, per port: the interface's address (the node's own unless its link end sets
    /// one: a multi-homed host with an address per interface).
    pub interface_ips: Vec<Vec<Ipv4>>,
}

impl Wiring {
    /// Wire `nodes` and `links` for `intents`. Fails only on an intent whose path is not a
    /// path of the graph (validation normally catches that first).
    pub fn build(nodes: &[Node], links: &[Link], intents: &Intents) -> Result<Wiring, String> {
        Self::build_with_down(nodes, links, intents, &[])
    }

    /// [`Wiring::build`] with links `down` failed: routes and ECMP groups avoid them (pins and
    /// splits are intents and keep their paths), and every port keeps its number.
    pub fn build_with_down(
        nodes: &[Node],
        links: &[Link],
        intents: &Intents,
        down: &[usize],
    ) -> Result<Wiring, String> {
        let g = Graph::with_down(nodes, links, down);
        let mut routes = Routes::shortest(&g);
        for p in &intents.pins {
            routes.pin(&g, &p.path, p.dst)?;
            if p.both_ways {
                let back: Vec<NodeId> = p.path.iter().rev().copied().collect();
                routes.pin(&g, &back, p.src)?;
            }
        }
        let tunnel_routes = tunnel_routes(&g, &intents.tunnels)?;
        let pinned = pinned_hops(&intents.pins);
        let node_of_ip: HashMap<u32, NodeId> = (0..g.len()).map(|d| (g.nodes[d].ip, d)).collect();
        let mut class_rules = crate::classify::rules_by_switch(nodes, links, &intents.classify)?;
        let mut switches = vec![None; nodes.len()];
        let probe_cfgs = if intents.node_probe.iter().any(|&p| p) {
            crate::probe::probe_configs(&g)
        } else {
            Vec::new()
        };
        for (i, node) in nodes.iter().enumerate() {
            if node.kind == NodeKind::Switch {
                let mut cfg = switch_tables(&g, &routes, intents, &tunnel_routes[i], i)?;
                cfg.classify = class_rules.remove(&i).unwrap_or_default();
                let routing = intents
                    .node_routing
                    .get(i)
                    .copied()
                    .flatten()
                    .unwrap_or(intents.routing);
                if routing == Routing::Ecmp {
                    ecmp_routes(&g, &routes, &pinned, &node_of_ip, i, &mut cfg);
                }
                if intents.node_probe.get(i).copied().unwrap_or(false) {
                    cfg.probe = probe_cfgs.get(i).cloned().flatten();
                }
                switches[i] = Some(cfg);
            }
        }
        let interface_ips = (0..g.len())
            .map(|n| (0..g.ports[n].len()).map(|p| g.interface_ip(n, p as PortId)).collect())
            .collect();
        Ok(Wiring {
            ports: g.ports,
            routes,
            switches,
            interface_ips,
        })
    }

    /// The port of `from` that leads to its neighbour `to`.
    pub fn port_to(&self, from: NodeId, to: NodeId) -> Option<PortId> {
        self.ports[from].iter().position(|e| e.peer == to).map(|p| p as PortId)
    }

    /// The nodes a packet from `src` to `dst` visits by the routes (both ends included); None
    /// if the routes do not reach.
    pub fn route_nodes(&self, src: NodeId, dst: NodeId) -> Option<Vec<NodeId>> {
        let mut at = src;
        let mut seen = vec![src];
        while at != dst {
            let port = self.routes.port(at, dst)?;
            at = self.ports[at].get(usize::from(port))?.peer;
            if seen.contains(&at) {
                return None;
            }
            seen.push(at);
        }
        Some(seen)
    }
}

/// The (node, destination) pairs whose next hop a pin fixed.
fn pinned_hops(pins: &[PinIntent]) -> HashSet<(NodeId, NodeId)> {
    let mut out = HashSet::new();
    for p in pins {
        for hop in p.path.windows(2) {
            out.insert((hop[0], p.dst));
            if p.both_ways {
                out.insert((hop[1], p.src));
            }
        }
    }
    out
}

/// Switch `i`'s routes to nodes with several equal-cost next hops become ECMP groups (one
/// group per distinct set of ports), unless a pin fixed the next hop; its hash seed is its own
/// address, so that no two switches share one.
fn ecmp_routes(
    g: &Graph,
    routes: &Routes,
    pinned: &HashSet<(NodeId, NodeId)>,
    node_of_ip: &HashMap<u32, NodeId>,
    i: NodeId,
    cfg: &mut SwitchConfig,
) {
    let mut group_of: HashMap<Vec<PortId>, PortId> = HashMap::new();
    for r in cfg.routes.iter_mut().filter(|r| r.len == 32) {
        let Some(&d) = node_of_ip.get(&r.prefix) else { continue };
        if pinned.contains(&(i, d)) {
            continue;
        }
        let ports: Vec<PortId> = routes.equal_cost_ports(g, i, d).collect();
        if ports.len() < 2 {
            continue;
        }
        let next = cfg.ecmp_groups.len() as PortId;
        let group = *group_of.entry(ports.clone()).or_insert_with(|| {
            cfg.ecmp_groups.push(ports);
            next
        });
        r.port = ECMP_GROUP | group;
    }
    cfg.hash_seed = g.nodes[i].ip;
}

fn linked(g: &Graph, a: NodeId, b: NodeId) -> Result<PortId, String> {
    g.port_to(a, b)
        .ok_or_else(|| format!("`{}` and `{}` are not linked", g.nodes[a].name, g.nodes[b].name))
}

/// Per node: the /32 routes of the subtunnel addresses whose paths cross it.
fn tunnel_routes(g: &Graph, tunnels: &[Vec<Vec<NodeId>>]) -> Result<Vec<Vec<Route>>, String> {
    let mut out: Vec<Vec<Route>> = vec![Vec::new(); g.len()];
    for (t, subtunnels) in tunnels.iter().enumerate() {
        for (j, path) in subtunnels.iter().enumerate() {
            for hop in path.windows(2) {
                let (a, b) = (hop[0], hop[1]);
                out[a].push(Route {
                    prefix: subtunnel_addr(t, j, TunnelDir::Down),
                    len: 32,
                    port: linked(g, a, b)?,
                });
                out[b].push(Route {
                    prefix: subtunnel_addr(t, j, TunnelDir::Up),
                    len: 32,
                    port: linked(g, b, a)?,
                });
            }
        }
    }
    Ok(out)
}

/// Switch `i`'s tables: a /32 route to every node it reaches, the split and confluence entries
/// of the groups it splits or joins, ECN markers, and the subtunnel routes.
fn switch_tables(
    g: &Graph,
    routes: &Routes,
    intents: &Intents,
    tunnel_routes: &[Route],
    i: NodeId,
) -> Result<SwitchConfig, String> {
    let mut node_routes: Vec<Route> = (0..g.len())
        .filter_map(|d| {
            let port = routes.port(i, d)?;
            Some(Route {
                prefix: g.nodes[d].ip,
                len: 32,
                port,
            })
        })
        .collect();
    node_routes.extend(interface_routes(g, routes, i));
    let mut cfg = SwitchConfig::forwarding(g.nodes[i].ip, node_routes);
    let mut markers = BTreeMap::new();
    for (group, s) in intents.splits.iter().enumerate() {
        split_entries(g, routes, intents.routing, s, group as u8, i, &mut cfg, &mut markers)?;
    }
    for l in g.links {
        if let Some(th) = l.ecn_threshold_pkts {
            for (x, y) in [(l.a, l.b), (l.b, l.a)] {
                if x == i {
                    markers.insert(linked(g, x, y)?, th);
                }
            }
        }
    }
    cfg.routes.extend(tunnel_routes.iter().copied());
    cfg.ecn_markers = markers.into_iter().collect();
    cfg.port_queues = g.ports[i].iter().map(|e| g.links[e.link].queues).collect();
    Ok(cfg)
}

/// Switch `i`'s routes to the interfaces of hosts with an address per interface: an address
/// is reached through the interface's neighbour, then across the interface's own link, so
/// traffic to each address of a multi-homed host arrives by that address's interface.
fn interface_routes<'g>(g: &'g Graph, routes: &'g Routes, i: NodeId) -> impl Iterator<Item = Route> + 'g {
    g.links.iter().enumerate().flat_map(move |(li, l)| {
        [(l.a, l.a_ip, l.b), (l.b, l.b_ip, l.a)]
            .into_iter()
            .filter_map(move |(host, ip, neighbour)| {
                let ip = ip.filter(|&ip| ip != g.nodes[host].ip)?;
                let port = if neighbour == i {
                    g.ports[i].iter().position(|e| e.link == li)? as PortId
                } else {
                    routes.port(i, neighbour)?
                };
                Some(Route {
                    prefix: ip,
                    len: 32,
                    port,
                })
            })
    })
}

/// The splitting point's ports that feedback of a group arrives on. The confluence point sends a
/// feedback packet back over one of the paths (its return port towards the path's last hop);
/// from there the routes to the splitting point carry it, which need not be the path reversed.
fn feedback_ports(
    g: &Graph,
    routes: &Routes,
    routing: Routing,
    s: &SplitIntent,
    group: u8,
) -> Result<Vec<PortId>, String> {
    let mut ports = Vec::new();
    for p in &s.paths {
        let (splitter, confluence, first_back) = (p[0], p[p.len() - 1], p[p.len() - 2]);
        let walk = routes.walk(g, first_back, splitter).ok_or_else(|| {
            format!(
                "feedback of group {group} sent from `{}` by `{}` has no route back to `{}`",
                g.nodes[confluence].name, g.nodes[first_back].name, g.nodes[splitter].name
            )
        })?;
        let last_hop = if walk.len() >= 2 {
            walk[walk.len() - 2]
        } else {
            confluence
        };
        let mut arrivals = vec![linked(g, splitter, last_hop)?];
        if routing == Routing::Ecmp {
            arrivals.extend(ecmp_arrivals(g, routes, first_back, splitter));
        }
        for port in arrivals {
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
    }
    ports.sort_unstable();
    Ok(ports)
}

/// Under ECMP a packet from `from` may reach `to` over any shortest path: the ports of `to`
/// whose peer lies on one (a switch, or `from` itself, one hop nearer to `from`).
fn ecmp_arrivals<'a>(g: &'a Graph, routes: &'a Routes, from: NodeId, to: NodeId) -> impl Iterator<Item = PortId> + 'a {
    let total = routes.hops(from, to);
    g.ports[to].iter().enumerate().filter_map(move |(p, e)| {
        let forwards = e.peer == from || g.nodes[e.peer].kind == NodeKind::Switch;
        let near = routes.hops(from, e.peer)?;
        (forwards && Some(near + 1) == total).then_some(p as PortId)
    })
}

/// Node `i`'s part in splitting group `group`: a split entry at the splitting point, a
/// confluence entry at the confluence point (DWRR's feedback), markers along the paths.
#[allow(clippy::too_many_arguments)]
fn split_entries(
    g: &Graph,
    routes: &Routes,
    routing: Routing,
    s: &SplitIntent,
    group: u8,
    i: NodeId,
    cfg: &mut SwitchConfig,
    markers: &mut BTreeMap<PortId, u32>,
) -> Result<(), String> {
    let (Some(first), Some(last)) = (s.paths.first(), s.paths.first().and_then(|p| p.last())) else {
        return Ok(());
    };
    if first[0] == i {
        cfg.splits.push(SplitGroupConfig {
            group,
            src_ip: g.nodes[s.src].ip,
            dst_ip: g.nodes[s.dst].ip,
            ports: s.paths.iter().map(|p| linked(g, i, p[1])).collect::<Result<_, _>>()?,
            scheduler: s.scheduler.clone(),
            feedback_ports: feedback_ports(g, routes, routing, s, group)?,
        });
    }
    // The confluence point's feedback is part of DWRR; other schedulers ignore it.
    if matches!(s.scheduler, SchedulerConfig::Dwrr { .. }) && *last == i {
        let ports: Vec<PortId> = s
            .paths
            .iter()
            .map(|p| linked(g, i, p[p.len() - 2]))
            .collect::<Result<_, _>>()?;
        cfg.confluences.push(ConfluenceConfig {
            group,
            src_ip: g.nodes[s.src].ip,
            dst_ip: g.nodes[s.dst].ip,
            path_ingress_ports: ports.clone(),
            return_ports: ports,
            splitter_ip: g.nodes[first[0]].ip,
            feedback_every: s.feedback_every,
        });
    }
    if let Some(th) = s.ecn_threshold_pkts {
        for p in &s.paths {
            for hop in p.windows(2).filter(|h| h[0] == i) {
                markers.insert(linked(g, i, hop[1])?, th);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::NodeKind::{Host, Switch};
    use crate::testing::{link, node};
    use mpsched_core::sched::DwrrParams;

    /// h0 - s1, paths s1-s2-s4 and s1-s5-s6-s7-s4, s4 - h8; a shortcut s7 - s2 means feedback
    /// the confluence point sends back over the long path returns by s2, not by s5.
    #[test]
    fn feedback_ports_follow_the_routes_back_not_the_paths() {
        let names = ["h0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "h8"];
        let nodes: Vec<Node> = names
            .iter()
            .enumerate()
            .map(|(i, n)| node(n, if n.starts_with('h') { Host } else { Switch }, i as u32))
            .collect();
        let links = vec![
            link(0, 1),
            link(1, 2),
            link(2, 4),
            link(1, 5),
            link(5, 6),
            link(6, 7),
            link(7, 4),
            link(7, 2),
            link(4, 8),
            link(1, 3),
        ];
        let split = |paths: Vec<Vec<NodeId>>| Intents {
            splits: vec![SplitIntent {
                src: 0,
                dst: 8,
                paths,
                scheduler: SchedulerConfig::Dwrr {
                    weights: vec![1, 1],
                    params: DwrrParams::default(),
                },
                feedback_every: 16,
                ecn_threshold_pkts: None,
            }],
            ..Intents::default()
        };
        let w = Wiring::build(&nodes, &links, &split(vec![vec![1, 2, 4], vec![1, 5, 6, 7, 4]])).unwrap();
        let s1 = w.switches[1].as_ref().unwrap();
        let to_s2 = w.port_to(1, 2).unwrap();
        assert_eq!(s1.splits[0].ports, [to_s2, w.port_to(1, 5).unwrap()]);
        assert_eq!(
            s1.splits[0].feedback_ports,
            [to_s2],
            "both paths' feedback comes back by s2"
        );
        // One-hop paths: the confluence point is the splitting point's neighbour.
        let w = Wiring::build(&nodes, &links, &split(vec![vec![2, 4], vec![2, 7, 4]])).unwrap();
        let s2 = w.switches[2].as_ref().unwrap();
        assert_eq!(
            s2.splits[0].feedback_ports,
            [w.port_to(2, 4).unwrap(), w.port_to(2, 7).unwrap()]
        );
    }
}
