//! Routes: shortest paths by hop count, their equal-cost alternatives, and pinned paths.
//!
//! The tables are dense (`n x n` entries of two bytes each), computed by one breadth-first search
//! per destination: O(n (n + links)) time, and a lookup is an index. Hosts do not forward: a
//! search never continues through a host, so no route crosses one.

use crate::graph::{Graph, NodeId, NodeKind};
use mpsched_core::packet::PortId;
use std::collections::VecDeque;

/// No route.
const NONE: u16 = u16::MAX;

/// Next hops and hop counts between every pair of nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    n: usize,
    /// `hops[to * n + from]`: hops from `from` to `to` ([`NONE`]: unreachable).
    hops: Vec<u16>,
    /// `next[from * n + to]`: egress port of `from` towards `to` ([`NONE`]: none).
    next: Vec<PortId>,
}

impl Routes {
    /// Shortest paths by hop count; among equal-cost next hops the lowest port.
    pub fn shortest(g: &Graph) -> Routes {
        let n = g.len();
        let mut r = Routes {
            n,
            hops: vec![NONE; n * n],
            next: vec![NONE; n * n],
        };
        let mut q = VecDeque::new();
        for to in 0..n {
            r.search_from(g, to, &mut q);
        }
        r
    }

    /// Hop counts to `to`, and every node's lowest port on a shortest path to it: a node `v`
    /// one hop further than a forwarding node `u` may leave through any of its ports to `u`
    /// (the candidates [`Routes::equal_cost_ports`] lists), found as the search reaches `v`
    /// from `u`, so no node's ports are scanned once per destination.
    fn search_from(&mut self, g: &Graph, to: NodeId, q: &mut VecDeque<NodeId>) {
        let n = self.n;
        let hops = &mut self.hops[to * n..(to + 1) * n];
        hops[to] = 0;
        q.clear();
        q.push_back(to);
        while let Some(u) = q.pop_front() {
            if u != to && g.nodes[u].kind == NodeKind::Host {
                continue;
            }
            let further = hops[u].saturating_add(1).min(NONE - 1);
            for e in g.ports[u].iter().filter(|e| g.is_up(e)) {
                let v = e.peer;
                if hops[v] == NONE {
                    hops[v] = further;
                    q.push_back(v);
                }
                if hops[v] == further && v != to {
                    let next = &mut self.next[v * n + to];
                    *next = (*next).min(e.peer_port);
                }
            }
        }
    }

    /// Hops from `from` to `to`, if reachable.
    pub fn hops(&self, from: NodeId, to: NodeId) -> Option<u16> {
        let h = self.hops[to * self.n + from];
        (h != NONE).then_some(h)
    }

    /// The egress port of `from` towards `to`.
    #[inline]
    pub fn port(&self, from: NodeId, to: NodeId) -> Option<PortId> {
        let p = self.next[from * self.n + to];
        (p != NONE).then_some(p)
    }

    /// Every port of `from` that starts a shortest path to `to` (ECMP's candidates), lowest
    /// first.
    pub fn equal_cost_ports<'a>(&'a self, g: &'a Graph, from: NodeId, to: NodeId) -> impl Iterator<Item = PortId> + 'a {
        let here = self.hops(from, to);
        g.ports[from].iter().enumerate().filter_map(move |(p, e)| {
            let forwards = g.is_up(e) && (e.peer == to || g.nodes[e.peer].kind == NodeKind::Switch);
            let there = self.hops(e.peer, to)?;
            (forwards && Some(there + 1) == here).then_some(p as PortId)
        })
    }

    /// Route `to` along `path` (consecutive nodes, each linked to the next): every node of the
    /// path but the last sends traffic for `to` to its successor.
    pub fn pin(&mut self, g: &Graph, path: &[NodeId], to: NodeId) -> Result<(), String> {
        for hop in path.windows(2) {
            let port = g.port_to(hop[0], hop[1]).ok_or_else(|| {
                format!(
                    "`{}` and `{}` are not linked",
                    g.nodes[hop[0]].name, g.nodes[hop[1]].name
                )
            })?;
            self.next[hop[0] * self.n + to] = port;
        }
        Ok(())
    }

    /// The nodes a packet from `src` to `dst` visits by these routes, both ends included; None
    /// if the routes do not reach or loop.
    pub fn walk(&self, g: &Graph, src: NodeId, dst: NodeId) -> Option<Vec<NodeId>> {
        let mut at = src;
        let mut seen = vec![src];
        while at != dst {
            let port = self.port(at, dst)?;
            at = g.ports[at].get(usize::from(port))?.peer;
            if seen.contains(&at) || seen.len() > self.n {
                return None;
            }
            seen.push(at);
        }
        Some(seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Link, Node};
    use crate::testing::{link, node};

    /// h0 - s1 = {s2, s3} = s4 - h5: two equal-cost paths; h6 hangs off both s2 and s3.
    fn diamond() -> (Vec<Node>, Vec<Link>) {
        use NodeKind::*;
        let nodes = vec![
            node("h0", Host, 0),
            node("s1", Switch, 1),
            node("s2", Switch, 2),
            node("s3", Switch, 3),
            node("s4", Switch, 4),
            node("h5", Host, 5),
            node("h6", Host, 6),
        ];
        let links = vec![
            link(0, 1),
            link(1, 2),
            link(1, 3),
            link(2, 4),
            link(3, 4),
            link(4, 5),
            link(2, 6),
            link(3, 6),
        ];
        (nodes, links)
    }

    #[test]
    fn shortest_routes_and_their_equal_cost_alternatives() {
        let (nodes, links) = diamond();
        let g = Graph::new(&nodes, &links);
        let r = Routes::shortest(&g);
        assert_eq!(r.hops(0, 5), Some(4));
        assert_eq!(r.walk(&g, 0, 5), Some(vec![0, 1, 2, 4, 5]), "ties to the lowest port");
        let ecmp: Vec<_> = r.equal_cost_ports(&g, 1, 5).collect();
        assert_eq!(ecmp, [1, 2], "s1 reaches h5 over s2 and over s3");
        assert_eq!(r.walk(&g, 5, 0), Some(vec![5, 4, 2, 1, 0]));
    }

    #[test]
    fn hosts_do_not_forward_even_when_multi_homed() {
        let (nodes, links) = diamond();
        let g = Graph::new(&nodes, &links);
        let r = Routes::shortest(&g);
        // s2 -> s3 is two hops through s1, s4 or the host h6; h6 must not be a next hop.
        let ecmp: Vec<_> = r.equal_cost_ports(&g, 2, 3).collect();
        let peers: Vec<_> = ecmp.iter().map(|&p| g.ports[2][usize::from(p)].peer).collect();
        assert_eq!(peers, [1, 4]);
        // h6 itself reaches h0 over either of its links.
        assert_eq!(r.equal_cost_ports(&g, 6, 0).count(), 2);
    }

    #[test]
    fn a_down_link_is_routed_around_and_ports_keep_their_numbers() {
        let (nodes, links) = diamond();
        // Link 1 is s1 - s2: s1 keeps port 1 for it, but routes only over s3 (port 2).
        let g = Graph::with_down(&nodes, &links, &[1]);
        assert_eq!(g.ports, Graph::new(&nodes, &links).ports);
        let r = Routes::shortest(&g);
        assert_eq!(r.walk(&g, 0, 5), Some(vec![0, 1, 3, 4, 5]));
        assert_eq!(r.equal_cost_ports(&g, 1, 5).collect::<Vec<_>>(), [2]);
        // s2 is now reached through s4 (or the host h6, which does not forward).
        assert_eq!(r.walk(&g, 0, 2), Some(vec![0, 1, 3, 4, 2]));
    }

    #[test]
    fn a_pinned_path_overrides_the_shortest() {
        let (nodes, links) = diamond();
        let g = Graph::new(&nodes, &links);
        let mut r = Routes::shortest(&g);
        r.pin(&g, &[1, 3, 4], 5).unwrap();
        assert_eq!(r.walk(&g, 0, 5), Some(vec![0, 1, 3, 4, 5]));
        assert!(r.pin(&g, &[1, 4], 5).is_err(), "s1 and s4 are not linked");
    }

    #[test]
    fn unreachable_nodes_have_no_route() {
        let (mut nodes, links) = diamond();
        nodes.push(node("lonely", NodeKind::Host, 7));
        let g = Graph::new(&nodes, &links);
        let r = Routes::shortest(&g);
        assert_eq!(r.port(0, 7), None);
        assert_eq!(r.walk(&g, 0, 7), None);
        assert_eq!(r.hops(7, 0), None);
    }

    proptest::proptest! {
        /// On any graph (hosts and switches, parallel links, parts unreachable), the next hop
        /// the search records is the lowest of the equal-cost ports, or none when none is.
        #[test]
        fn next_hop_is_the_lowest_equal_cost_port(
            kinds in proptest::collection::vec(proptest::bool::ANY, 2..12),
            pairs in proptest::collection::vec((0usize..12, 0usize..12), 0..30),
        ) {
            let nodes: Vec<Node> = kinds
                .iter()
                .enumerate()
                .map(|(i, &host)| {
                    let kind = if host { NodeKind::Host } else { NodeKind::Switch };
                    node(&format!("n{i}"), kind, i as u32)
                })
                .collect();
            let n = nodes.len();
            let links: Vec<Link> = pairs
                .iter()
                .map(|&(a, b)| (a % n, b % n))
                .filter(|(a, b)| a != b)
                .map(|(a, b)| link(a, b))
                .collect();
            let g = Graph::new(&nodes, &links);
            let r = Routes::shortest(&g);
            for from in 0..n {
                for to in (0..n).filter(|&t| t != from) {
                    proptest::prop_assert_eq!(r.port(from, to), r.equal_cost_ports(&g, from, to).next());
                }
            }
        }
    }
}
