//! A scenario as the control plane sees it: nodes, links and intents for `mpsched-topo`.

use crate::model::{Flow, Protocol, Scenario};
use mpsched_core::packet::{Ipv4, PortId};
use mpsched_topo::{Intents, NodeId, PinIntent, SplitIntent, Wiring};

impl Scenario {
    /// The splits, pinned flows and tunnels, as intents over this scenario's graph.
    pub fn intents(&self) -> Intents {
        let path = |p: usize| self.paths[p].nodes.clone();
        Intents {
            routing: self.routing,
            node_routing: (0..self.nodes.len()).map(|n| self.node_routing(n)).collect(),
            node_probe: (0..self.nodes.len())
                .map(|n| self.program_of(n).is_some_and(|(p, _)| p.probe_tables()))
                .collect(),
            splits: self
                .splits
                .iter()
                .map(|s| SplitIntent {
                    src: s.src,
                    dst: s.dst,
                    paths: s.paths.iter().map(|&p| path(p)).collect(),
                    scheduler: s.scheduler.clone(),
                    feedback_every: s.feedback_every,
                    ecn_threshold_pkts: s.ecn_threshold_pkts,
                })
                .collect(),
            pins: self
                .flows
                .iter()
                .filter_map(|f| {
                    Some(PinIntent {
                        src: f.src,
                        dst: f.dst,
                        path: path(f.path?),
                        // A TCP flow's ACKs come back along the same path.
                        both_ways: f.protocol != Protocol::Udp,
                    })
                })
                .collect(),
            tunnels: self
                .tunnels
                .iter()
                .map(|t| t.subtunnels.iter().map(|&p| path(p)).collect())
                .collect(),
            classify: self.classify.clone(),
        }
    }

    /// The port flow `f` leaves `host` by (its source, or for replies its destination): a flow
    /// pinned to a path that starts (or ends) at a neighbour of the host uses the interface to
    /// that neighbour, as a socket bound to an interface does; any other by the host's routes
    /// (port 0 where none reaches: its traffic is then dropped further on, as a host without a
    /// route would).
    pub fn flow_port(&self, w: &Wiring, f: &Flow, host: NodeId) -> PortId {
        let other = if host == f.src { f.dst } else { f.src };
        let by_routes = || w.routes.port(host, other).unwrap_or(0);
        let Some(p) = f.path else {
            return by_routes();
        };
        let nodes = &self.paths[p].nodes;
        let end = if host == f.src {
            nodes[0]
        } else {
            nodes[nodes.len() - 1]
        };
        w.port_to(host, end).unwrap_or_else(by_routes)
    }

    /// Flow `f`'s source and destination addresses: those of the interfaces each end sends by
    /// ([`Scenario::flow_port`]; the node's own unless the link gives the interface one).
    pub fn flow_addresses(&self, w: &Wiring, f: &Flow) -> (Ipv4, Ipv4) {
        let (out, back) = (self.flow_port(w, f, f.src), self.flow_port(w, f, f.dst));
        (
            w.interface_ips[f.src][usize::from(out)],
            w.interface_ips[f.dst][usize::from(back)],
        )
    }

    /// The node and port a capture's `NODE:IFACE` names: `ethN` is port N (in the order the
    /// node's links are declared), any other name the port towards that neighbour. The error
    /// says what the node has.
    pub fn interface_port(&self, node: &str, iface: &str) -> Result<(NodeId, PortId), String> {
        let ni = self.node_index(node).ok_or_else(|| format!("no node named `{node}`"))?;
        let peers: Vec<NodeId> = self
            .links
            .iter()
            .filter_map(|l| match (l.a == ni, l.b == ni) {
                (true, _) => Some(l.b),
                (_, true) => Some(l.a),
                _ => None,
            })
            .collect();
        let port = match iface.strip_prefix("eth").and_then(|x| x.parse::<usize>().ok()) {
            Some(p) if p < peers.len() => p,
            Some(p) => return Err(format!("`{node}` has {} interfaces, no eth{p}", peers.len())),
            None => peers.iter().position(|&p| self.nodes[p].name == iface).ok_or_else(|| {
                let names: Vec<String> = peers
                    .iter()
                    .enumerate()
                    .map(|(p, &n)| format!("eth{p} ({})", self.nodes[n].name))
                    .collect();
                format!("`{node}` has no interface `{iface}`; it has {}", names.join(", "))
            })?,
        };
        Ok((ni, port as PortId))
    }

    /// Ports, routes and switch tables: what every backend wires this scenario from.
    pub fn wiring(&self) -> Result<Wiring, String> {
        Wiring::build(&self.nodes, &self.links, &self.intents())
    }

    /// The wiring once links `down` (indices into `links`) have failed and been routed around:
    /// the same ports, other routes.
    pub fn wiring_with_down(&self, down: &[usize]) -> Result<Wiring, String> {
        Wiring::build_with_down(&self.nodes, &self.links, &self.intents(), down)
    }

    /// The flows whose route passes through both ends of a tunnel: the tunnels' payload.
    pub fn tunnelled_flows(&self, w: &Wiring) -> Vec<usize> {
        (0..self.flows.len())
            .filter(|&fi| {
                let f = &self.flows[fi];
                w.route_nodes(f.src, f.dst).is_some_and(|nodes| {
                    self.tunnels
                        .iter()
                        .any(|t| nodes.contains(&t.entry) && nodes.contains(&t.exit))
                })
            })
            .collect()
    }
}
