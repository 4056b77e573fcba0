//! Routes: shortest paths by hop count, their equal-cost alternatives, and pinned paths.
//!
//! Routes are kept per destination *column*, one breadth-first search each: every switch is a
//! column of its own, and hosts with the same neighbours share one (a host does not forward, so
//! the routes to it are the routes to its neighbours, one hop further). A column holds, for
//! every node, its hop count and its lowest equal-cost port towards the destination; a node
//! next to a host finds its last port in the host's short list of neighbours. Memory is
//! `4 n` bytes a column plus a few bytes a node and a link: linear in the hosts when they hang
//! off few switches (10 000 hosts behind two access switches: six columns, 250 KB, where a
//! table of every pair of nodes took 400 MB). A lookup is an index, and at the last hop a
//! search of the host's neighbours. Hosts do not forward: a search never continues through a
//! host, so no route crosses one.

use crate::graph::{Graph, NodeId, NodeKind};
use mpsched_core::packet::PortId;
use std::collections::{HashMap, VecDeque};

/// No route.
const NONE: u16 = u16::MAX;

/// In a host's column: this node is one of the host's neighbours, and its port to the host is
/// in the host's own list ([`Routes::last_port`]). Below [`NONE`], above any port a node can have
/// ([`MAX_PORTS`]).
const NEIGHBOUR: u16 = u16::MAX - 1;

/// The most ports a node may have for these tables: port numbers stay below the two markers.
pub const MAX_PORTS: usize = NEIGHBOUR as usize;

/// Where the routes to one node live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dest {
    /// The column of hop counts and next hops towards it.
    column: u32,
    /// Whether some pin names it as destination (then [`Routes::pins`] is asked first).
    pinned: bool,
}

/// Next hops and hop counts between every pair of nodes, stored per destination column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    n: usize,
    /// Per node: where the routes to it live.
    dest: Vec<Dest>,
    /// `hops[c * n + from]`: hops from `from` to column `c`'s destination ([`NONE`]:
    /// unreachable). For a host's column, the hops to the host itself.
    hops: Vec<u16>,
    /// `next[c * n + from]`: egress port of `from` towards column `c`'s destination ([`NONE`]:
    /// none; [`NEIGHBOUR`]: `from` neighbours the host, see `last`).
    next: Vec<PortId>,
    /// `last[last_start[h]..last_start[h + 1]]`: host `h`'s neighbours (ascending) and the lowest
    /// port of each that leads to `h` over an up link.
    last_start: Vec<u32>,
    /// See `last_start`.
    last: Vec<(u32, PortId)>,
    /// Pinned next hops: (from, to) to port.
    pins: HashMap<(NodeId, NodeId), PortId>,
}

/// A host's neighbours over up links, ascending, without itself: the key of its column.
fn neighbours(g: &Graph, h: NodeId) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = g.ports[h]
        .iter()
        .filter(|e| g.is_up(e) && e.peer != h)
        .map(|e| e.peer)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Ports of every node: both ends of every link.
pub fn ports(g: &Graph) -> usize {
    g.ports.iter().map(Vec::len).sum()
}

/// The columns `g`'s routes take: one per switch, one per distinct set of neighbours of a host.
/// Each is `4 n` bytes (see [`Routes::estimated_bytes`]).
pub fn columns(g: &Graph) -> usize {
    let mut classes = std::collections::HashSet::new();
    let mut switches = 0;
    for v in 0..g.len() {
        match g.nodes[v].kind {
            NodeKind::Switch => switches += 1,
            NodeKind::Host => {
                classes.insert(neighbours(g, v));
            }
        }
    }
    switches + classes.len()
}

impl Routes {
    /// Shortest paths by hop count; among equal-cost next hops the lowest port.
    pub fn shortest(g: &Graph) -> Routes {
        let n = g.len();
        let mut dest = vec![
            Dest {
                column: 0,
                pinned: false
            };
            n
        ];
        // Columns: switches in node order, then host classes in order of first appearance.
        let mut sources: Vec<Vec<NodeId>> = Vec::new();
        let mut class_of: HashMap<Vec<NodeId>, u32> = HashMap::new();
        let mut last_start = Vec::with_capacity(n + 1);
        let mut last = Vec::new();
        for (v, d) in dest.iter_mut().enumerate() {
            if g.nodes[v].kind == NodeKind::Switch {
                d.column = sources.len() as u32;
                sources.push(vec![v]);
            }
        }
        let switches = sources.len();
        for (v, d) in dest.iter_mut().enumerate() {
            last_start.push(last.len() as u32);
            if g.nodes[v].kind == NodeKind::Switch {
                continue;
            }
            let key = neighbours(g, v);
            // Each of the host's links names the neighbour's port for it: no neighbour's ports
            // are scanned (an access switch may have thousands).
            for &u in &key {
                let port = g.ports[v]
                    .iter()
                    .filter(|e| e.peer == u && g.is_up(e))
                    .map(|e| e.peer_port)
                    .min()
                    .expect("a neighbour over an up link has a port to the host");
                last.push((u as u32, port));
            }
            let next = (switches + class_of.len()) as u32;
            d.column = *class_of.entry(key).or_insert_with_key(|key| {
                sources.push(key.clone());
                next
            });
        }
        last_start.push(last.len() as u32);
        let columns = sources.len();
        let mut r = Routes {
            n,
            dest,
            hops: vec![NONE; columns * n],
            next: vec![NONE; columns * n],
            last_start,
            last,
            pins: HashMap::new(),
        };
        let mut q = VecDeque::new();
        for (c, src) in sources.iter().enumerate() {
            let to_switch = c < switches;
            r.search(g, c, src, to_switch, &mut q);
        }
        r
    }

    /// Column `c`'s hop counts and every node's lowest port on a shortest path to its
    /// destination: a switch (`to_switch`, `src` = [it]), or a host with neighbours `src`, which
    /// are one hop from it and take their last port from the host's list. A node `v` one hop
    /// further than a forwarding node `u` may leave through any of its ports to `u` (the
    /// candidates [`Routes::equal_cost_ports`] lists), found as the search reaches `v` from `u`,
    /// so no node's ports are scanned once per destination.
    fn search(&mut self, g: &Graph, c: usize, src: &[NodeId], to_switch: bool, q: &mut VecDeque<NodeId>) {
        let n = self.n;
        let hops = &mut self.hops[c * n..(c + 1) * n];
        let next = &mut self.next[c * n..(c + 1) * n];
        q.clear();
        for &s in src {
            if to_switch {
                hops[s] = 0;
            } else {
                hops[s] = 1;
                next[s] = NEIGHBOUR;
            }
            q.push_back(s);
        }
        while let Some(u) = q.pop_front() {
            // The destination switch forwards to itself; hosts forward nothing.
            if g.nodes[u].kind == NodeKind::Host {
                continue;
            }
            let further = hops[u].saturating_add(1).min(NONE - 1);
            for e in g.ports[u].iter().filter(|e| g.is_up(e)) {
                let v = e.peer;
                if hops[v] == NONE {
                    hops[v] = further;
                    q.push_back(v);
                }
                // Sources are at 0 or 1 hops, never `further`: their marks stay.
                if hops[v] == further {
                    next[v] = next[v].min(e.peer_port);
                }
            }
        }
    }

    /// Hops from `from` to `to`, if reachable.
    pub fn hops(&self, from: NodeId, to: NodeId) -> Option<u16> {
        if from == to {
            return Some(0);
        }
        let h = self.hops[self.dest[to].column as usize * self.n + from];
        (h != NONE).then_some(h)
    }

    /// The egress port of `from` towards `to`.
    #[inline]
    pub fn port(&self, from: NodeId, to: NodeId) -> Option<PortId> {
        let d = self.dest[to];
        if d.pinned {
            if let Some(&p) = self.pins.get(&(from, to)) {
                return Some(p);
            }
        }
        if from == to {
            return None;
        }
        match self.next[d.column as usize * self.n + from] {
            NONE => None,
            NEIGHBOUR => self.last_port(from, to),
            p => Some(p),
        }
    }

    /// The lowest port of `from`, a neighbour of host `to`, that leads to it.
    #[cold]
    fn last_port(&self, from: NodeId, to: NodeId) -> Option<PortId> {
        let list = &self.last[self.last_start[to] as usize..self.last_start[to + 1] as usize];
        let i = list.binary_search_by_key(&(from as u32), |&(u, _)| u).ok()?;
        Some(list[i].1)
    }

    /// Bytes these tables hold (hop counts, next hops, hosts' neighbour lists, pins), without
    /// the vectors' spare capacity.
    pub fn table_bytes(&self) -> usize {
        use std::mem::size_of;
        self.hops.len() * size_of::<u16>()
            + self.next.len() * size_of::<PortId>()
            + self.dest.len() * size_of::<Dest>()
            + self.last_start.len() * size_of::<u32>()
            + self.last.len() * size_of::<(u32, PortId)>()
            + self.pins.len() * size_of::<((NodeId, NodeId), PortId)>()
    }

    /// Bytes [`Routes::shortest`] would take on `g` (its columns and per-node and per-link
    /// lists), computed without building them: what a scenario's validation bounds.
    pub fn estimated_bytes(g: &Graph) -> usize {
        Self::estimated_bytes_of(g.len(), columns(g), ports(g))
    }

    /// [`Routes::estimated_bytes`] from the counts alone (`nodes`, destination `columns`, and
    /// `ports`, both ends of every link), for a layout not yet generated.
    pub fn estimated_bytes_of(nodes: usize, columns: usize, ports: usize) -> usize {
        columns
            .saturating_mul(nodes)
            .saturating_mul(4)
            .saturating_add(nodes.saturating_add(1).saturating_mul(12))
            .saturating_add(ports.saturating_mul(8))
    }

    /// The steps [`Routes::shortest`] takes: a breadth-first search per destination column,
    /// each visiting every node and every port. What its time grows with (4 to 8 ns a step:
    /// 800 million took 3.5 s), as the bytes are what its memory grows with.
    pub fn search_steps_of(nodes: usize, columns: usize, ports: usize) -> usize {
        columns.saturating_mul(nodes.saturating_add(ports))
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
            self.pins.insert((hop[0], to), port);
            self.dest[to].pinned = true;
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

    /// Nodes `n<i>`, a host where `kinds[i]`, and a link per pair (taken modulo the nodes,
    /// loops left out).
    fn random_network(kinds: &[bool], pairs: &[(usize, usize)]) -> (Vec<Node>, Vec<Link>) {
        let nodes: Vec<Node> = kinds
            .iter()
            .enumerate()
            .map(|(i, &host)| {
                let kind = if host { NodeKind::Host } else { NodeKind::Switch };
                node(&format!("n{i}"), kind, i as u32)
            })
            .collect();
        let n = nodes.len();
        let links = pairs
            .iter()
            .map(|&(a, b)| (a % n, b % n))
            .filter(|(a, b)| a != b)
            .map(|(a, b)| link(a, b))
            .collect();
        (nodes, links)
    }

    proptest::proptest! {
        /// On any graph (hosts and switches, parallel links, parts unreachable), the next hop
        /// the search records is the lowest of the equal-cost ports, or none when none is.
        #[test]
        fn next_hop_is_the_lowest_equal_cost_port(
            kinds in proptest::collection::vec(proptest::bool::ANY, 2..12),
            pairs in proptest::collection::vec((0usize..12, 0usize..12), 0..30),
        ) {
            let (nodes, links) = random_network(&kinds, &pairs);
            let n = nodes.len();
            let g = Graph::new(&nodes, &links);
            let r = Routes::shortest(&g);
            for from in 0..n {
                for to in (0..n).filter(|&t| t != from) {
                    proptest::prop_assert_eq!(r.port(from, to), r.equal_cost_ports(&g, from, to).next());
                }
            }
        }

        /// On any graph, some links down, the per-column tables give the hop counts and next
        /// hops of one breadth-first search per destination node (the dense tables they replace).
        #[test]
        fn columns_agree_with_a_search_per_destination(
            kinds in proptest::collection::vec(proptest::bool::ANY, 2..14),
            pairs in proptest::collection::vec((0usize..14, 0usize..14), 0..34),
            down in proptest::collection::vec(0usize..34, 0..4),
        ) {
            let (nodes, links) = random_network(&kinds, &pairs);
            let n = nodes.len();
            let g = Graph::with_down(&nodes, &links, &down);
            let r = Routes::shortest(&g);
            for to in 0..n {
                let (hops, next) = dense_search(&g, to);
                for from in 0..n {
                    proptest::prop_assert_eq!(r.hops(from, to), hops[from], "hops {} -> {}", from, to);
                    proptest::prop_assert_eq!(r.port(from, to), next[from], "port {} -> {}", from, to);
                }
            }
            proptest::prop_assert!(r.table_bytes() <= Routes::estimated_bytes(&g));
        }
    }

    /// The dense search the columns replaced, from every node to `to`: hop counts and lowest
    /// ports on a shortest path.
    fn dense_search(g: &Graph, to: NodeId) -> (Vec<Option<u16>>, Vec<Option<PortId>>) {
        let n = g.len();
        let mut hops = vec![None; n];
        let mut next: Vec<Option<PortId>> = vec![None; n];
        hops[to] = Some(0u16);
        let mut q = VecDeque::from([to]);
        while let Some(u) = q.pop_front() {
            if u != to && g.nodes[u].kind == NodeKind::Host {
                continue;
            }
            let further = hops[u].unwrap() + 1;
            for e in g.ports[u].iter().filter(|e| g.is_up(e)) {
                let v = e.peer;
                if hops[v].is_none() {
                    hops[v] = Some(further);
                    q.push_back(v);
                }
                if hops[v] == Some(further) && v != to {
                    next[v] = Some(next[v].map_or(e.peer_port, |p| p.min(e.peer_port)));
                }
            }
        }
        (hops, next)
    }

    #[test]
    fn hosts_with_the_same_neighbours_share_a_column_and_memory_is_linear_in_hosts() {
        // h hosts, each linked to both of two access switches a0, a1, which link to a core c.
        let tables = |hosts: usize| {
            let mut nodes = vec![
                node("c", NodeKind::Switch, 0),
                node("a0", NodeKind::Switch, 1),
                node("a1", NodeKind::Switch, 2),
            ];
            let mut links = vec![link(0, 1), link(0, 2)];
            for i in 0..hosts {
                nodes.push(node(&format!("h{i}"), NodeKind::Host, 3 + i as u32));
                links.push(link(3 + i, 1));
                links.push(link(3 + i, 2));
            }
            let g = Graph::new(&nodes, &links);
            let r = Routes::shortest(&g);
            assert_eq!(columns(&g), 4, "three switches and one class of hosts");
            assert_eq!(
                r.walk(&g, 3, 4),
                Some(vec![3, 1, 4]),
                "h0 reaches h1 by a0, its lowest port"
            );
            assert_eq!(
                r.port(2, 3 + hosts - 1),
                Some(hosts as PortId),
                "a1's last port to the last host"
            );
            assert_eq!(r.hops(0, 3), Some(2));
            r.table_bytes()
        };
        let (small, large) = (tables(1_000), tables(10_000));
        // Four columns of 4 bytes a node, 12 bytes a node and 8 a host's link besides.
        assert!(
            large <= 10_004 * (4 * 4 + 12) + 20_000 * 8,
            "{large} bytes for 10 000 hosts"
        );
        assert!(
            large < 11 * small,
            "ten times the hosts, ten times the bytes: {small} -> {large}"
        );
    }

    #[test]
    fn a_pin_to_a_host_overrides_its_shared_column_only_for_it() {
        let (nodes, links) = diamond();
        let g = Graph::new(&nodes, &links);
        let mut r = Routes::shortest(&g);
        // h0 and h5 have one neighbour each, of their own; pin s1 -> s3 for h6 (two neighbours).
        assert_eq!(r.walk(&g, 0, 6), Some(vec![0, 1, 2, 6]));
        r.pin(&g, &[1, 3], 6).unwrap();
        assert_eq!(r.walk(&g, 0, 6), Some(vec![0, 1, 3, 6]));
        assert_eq!(
            r.walk(&g, 0, 5),
            Some(vec![0, 1, 2, 4, 5]),
            "other destinations keep their routes"
        );
    }
}
