//! What probe-driven programs (HULA, MP-HULA) are told about their node: ToR ids, each port's
//! direction in the tree, and which ToR each host sits under.
//!
//! Directions come from levels: hosts are level 0, a switch is one above its lowest neighbour
//! (a breadth-first search from every host). A port to a host is `Host`, to a lower level
//! `Down`, a higher `Up`, the same `None`. The levels come from the links as declared, failed
//! or not, so a failure changes no port's direction (probes simply stop crossing it). ToRs, the
//! switches with a host port, are numbered in node order.

use crate::graph::{Graph, NodeId, NodeKind};
use mpsched_core::probe::{DestTor, PortDir, ProbeConfig, ProbePort};
use std::collections::VecDeque;

/// Each node's level: 0 for hosts, 1 + the least level of its neighbours for switches;
/// `u32::MAX` for switches no host reaches.
pub fn levels(g: &Graph) -> Vec<u32> {
    let mut level = vec![u32::MAX; g.len()];
    let mut queue = VecDeque::new();
    for (n, node) in g.nodes.iter().enumerate() {
        if node.kind == NodeKind::Host {
            level[n] = 0;
            queue.push_back(n);
        }
    }
    while let Some(n) = queue.pop_front() {
        for e in &g.ports[n] {
            let peer = e.peer;
            if g.nodes[peer].kind == NodeKind::Switch && level[peer] == u32::MAX {
                level[peer] = level[n] + 1;
                queue.push_back(peer);
            }
        }
    }
    level
}

/// The probe view of every switch (None for hosts).
pub fn probe_configs(g: &Graph) -> Vec<Option<ProbeConfig>> {
    let level = levels(g);
    let is_tor = |n: NodeId| {
        g.nodes[n].kind == NodeKind::Switch && g.ports[n].iter().any(|e| g.nodes[e.peer].kind == NodeKind::Host)
    };
    let mut tor_id = vec![None; g.len()];
    let mut n_tors: u16 = 0;
    for (n, id) in tor_id.iter_mut().enumerate() {
        if is_tor(n) {
            *id = Some(n_tors);
            n_tors = n_tors.saturating_add(1);
        }
    }
    let mut dest_tors = Vec::new();
    for (h, node) in g.nodes.iter().enumerate() {
        if node.kind != NodeKind::Host {
            continue;
        }
        let Some(tor) = g.ports[h].iter().find_map(|e| tor_id[e.peer]) else {
            continue;
        };
        let mut ips: Vec<u32> = (0..g.ports[h].len()).map(|p| g.interface_ip(h, p as u16)).collect();
        ips.push(node.ip);
        ips.sort_unstable();
        ips.dedup();
        dest_tors.extend(ips.into_iter().map(|prefix| DestTor { prefix, len: 32, tor }));
    }
    (0..g.len())
        .map(|n| {
            (g.nodes[n].kind == NodeKind::Switch).then(|| ProbeConfig {
                tor_id: tor_id[n],
                n_tors,
                ports: g.ports[n]
                    .iter()
                    .map(|e| ProbePort {
                        dir: direction(g, &level, n, e.peer),
                        rate_bps: g.links[e.link].rate_bps,
                    })
                    .collect(),
                dest_tors: dest_tors.clone(),
            })
        })
        .collect()
}

fn direction(g: &Graph, level: &[u32], n: NodeId, peer: NodeId) -> PortDir {
    if g.nodes[peer].kind == NodeKind::Host {
        return PortDir::Host;
    }
    match level[peer].cmp(&level[n]) {
        std::cmp::Ordering::Less => PortDir::Down,
        std::cmp::Ordering::Greater => PortDir::Up,
        std::cmp::Ordering::Equal => PortDir::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;
    use crate::testing::{link, node};

    #[test]
    fn a_three_tier_tree_has_tors_aggs_and_cores_in_the_right_directions() {
        let gen = generate::three_tier(2, 1, 2, 2, 2).unwrap();
        let nodes: Vec<_> = gen
            .nodes
            .iter()
            .enumerate()
            .map(|(i, (name, kind))| node(name, *kind, i as u32 + 1))
            .collect();
        let links: Vec<_> = gen.links.iter().map(|l| link(l.a, l.b)).collect();
        let g = Graph::new(&nodes, &links);
        let cfgs = probe_configs(&g);
        let by_name = |name: &str| nodes.iter().position(|n| n.name == name).unwrap();
        let tor = cfgs[by_name("tor0")].as_ref().unwrap();
        assert_eq!(tor.tor_id, Some(0));
        assert_eq!(tor.n_tors, 2);
        assert!(tor.ports.iter().filter(|p| p.dir == PortDir::Host).count() >= 1);
        assert_eq!(tor.ports.iter().filter(|p| p.dir == PortDir::Up).count(), 2);
        let agg = cfgs[by_name("pod0-agg0")].as_ref().unwrap();
        assert_eq!(agg.tor_id, None);
        assert!(agg.ports.iter().any(|p| p.dir == PortDir::Down));
        assert!(agg.ports.iter().any(|p| p.dir == PortDir::Up));
        let core = cfgs[by_name("core0")].as_ref().unwrap();
        assert!(core.ports.iter().all(|p| p.dir == PortDir::Down));
        let h = &nodes[by_name("tor1-h0")];
        assert_eq!(tor.dest_tor(h.ip), Some(1));
        assert!(cfgs[by_name("tor1-h0")].is_none());
    }
}
