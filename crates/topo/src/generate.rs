//! Generated data-centre topologies: a k-ary fat tree and a two-tier leaf-spine.
//!
//! A generator returns names, kinds and links tagged with their tier; the scenario crate gives
//! each tier its rate, delay and queue. Hosts come first, so that hosts take the first
//! addresses (host `i` is 10.0.0.`i + 1` by default), then switches from the edge up.

use crate::graph::NodeKind;

/// Which tier a generated link belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Host to its top-of-rack (fat tree) or leaf switch.
    Host,
    /// Top-of-rack to aggregation (fat tree), leaf to spine (leaf-spine).
    Edge,
    /// Aggregation to core (fat tree only).
    Core,
}

/// A generated link between nodes `a` and `b` (indices into [`Generated::nodes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratedLink {
    /// One end (the lower tier's node).
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// Its tier.
    pub tier: Tier,
}

/// A generated topology.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Generated {
    /// Names and kinds, hosts first.
    pub nodes: Vec<(String, NodeKind)>,
    /// Links.
    pub links: Vec<GeneratedLink>,
}

/// The largest generated topology, in nodes (a k = 48 fat tree has 55 872), checked before
/// anything is generated. What its routes and switch tables would take is bounded by the
/// scenario's validation (`MAX_CONTROL_PLANE_BYTES`), from [`LayoutSize`] before generating
/// and from the graph after: routes take 4 bytes a node per switch and per rack, no longer per
/// node.
pub const MAX_GENERATED_NODES: usize = 65_536;

/// The most links a generated topology may have, checked before anything is generated: a
/// leaf-spine links every leaf to every spine, so a few thousand nodes can ask for millions of
/// links (4 000 x 4 000: 16 million; `mpsched check` took 9.8 GB and 135 s). A k = 34 fat tree
/// has 29 478, a 512 x 512 leaf-spine 262 656 (validated in 160 MB).
pub const MAX_GENERATED_LINKS: usize = 262_144;

/// What a generated layout holds, computed from its sizes before anything is generated (with
/// saturating arithmetic: sizes come from a file and may be anything), so that every count it
/// derives can be bounded first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayoutSize {
    /// Hosts.
    pub hosts: usize,
    /// Switches.
    pub switches: usize,
    /// Switches that hosts hang off (racks, leaves); each rack's hosts share one route column.
    pub racks: usize,
    /// Links, every tier.
    pub links: usize,
}

impl LayoutSize {
    /// Hosts and switches.
    pub fn nodes(&self) -> usize {
        self.hosts.saturating_add(self.switches)
    }

    /// The routes' destination columns (`crate::routing::columns`): one per switch and one per
    /// rack, whose hosts all have the rack's switch as their one neighbour.
    pub fn columns(&self) -> usize {
        self.switches.saturating_add(self.racks)
    }

    /// Ports: both ends of every link.
    pub fn ports(&self) -> usize {
        self.links.saturating_mul(2)
    }

    /// `tors` racks of `hosts_per_tor` hosts and `others` switches above them, linked by
    /// `uplinks` links.
    fn racked(tors: usize, hosts_per_tor: usize, others: usize, uplinks: usize) -> LayoutSize {
        let hosts = tors.saturating_mul(hosts_per_tor);
        LayoutSize {
            hosts,
            switches: tors.saturating_add(others),
            racks: tors,
            links: hosts.saturating_add(uplinks),
        }
    }

    /// A [`fat_tree`]'s: `k^2/2` racks and as many aggregation switches, `k^2/4` cores, `k^3/4`
    /// links in each of the two upper tiers.
    pub fn fat_tree(k: usize, hosts_per_tor: usize) -> LayoutSize {
        let half = k / 2;
        let pod_switches = k.saturating_mul(half);
        let tier_links = pod_switches.saturating_mul(half);
        let others = pod_switches.saturating_add(half.saturating_mul(half));
        Self::racked(pod_switches, hosts_per_tor, others, tier_links.saturating_mul(2))
    }

    /// A [`three_tier`] layout's: every rack linked to its pod's aggregation switches, every
    /// aggregation switch to every core.
    pub fn three_tier(
        pods: usize,
        tors_per_pod: usize,
        aggs_per_pod: usize,
        cores: usize,
        hosts_per_tor: usize,
    ) -> LayoutSize {
        let tors = pods.saturating_mul(tors_per_pod);
        let aggs = pods.saturating_mul(aggs_per_pod);
        let uplinks = tors
            .saturating_mul(aggs_per_pod)
            .saturating_add(aggs.saturating_mul(cores));
        Self::racked(tors, hosts_per_tor, aggs.saturating_add(cores), uplinks)
    }

    /// A [`leaf_spine`]'s: every leaf linked to every spine.
    pub fn leaf_spine(leaves: usize, spines: usize, hosts_per_leaf: usize) -> LayoutSize {
        Self::racked(leaves, hosts_per_leaf, spines, leaves.saturating_mul(spines))
    }

    /// Within [`MAX_GENERATED_NODES`] and [`MAX_GENERATED_LINKS`], or why not (`what`
    /// describes the layout).
    fn check(&self, what: &str) -> Result<(), String> {
        if self.nodes() > MAX_GENERATED_NODES {
            return Err(format!(
                "{what} has {} nodes; at most {MAX_GENERATED_NODES}",
                self.nodes()
            ));
        }
        if self.links > MAX_GENERATED_LINKS {
            return Err(format!(
                "{what} has {} links; at most {MAX_GENERATED_LINKS}",
                self.links
            ));
        }
        Ok(())
    }
}

impl Generated {
    fn add(&mut self, name: String, kind: NodeKind) -> usize {
        self.nodes.push((name, kind));
        self.nodes.len() - 1
    }

    fn link(&mut self, a: usize, b: usize, tier: Tier) {
        self.links.push(GeneratedLink { a, b, tier });
    }

    /// `tors` racks of `hosts_per_tor` hosts each: hosts `tor<t>-h<h>` first, then the racks'
    /// switches `tor<t>`, each host linked to its rack. Returns the racks' switches.
    fn racks(&mut self, tors: usize, hosts_per_tor: usize) -> Vec<usize> {
        let first_host = self.nodes.len();
        for t in 0..tors {
            for h in 0..hosts_per_tor {
                self.add(format!("tor{t}-h{h}"), NodeKind::Host);
            }
        }
        let tor: Vec<usize> = (0..tors)
            .map(|t| self.add(format!("tor{t}"), NodeKind::Switch))
            .collect();
        for (t, &sw) in tor.iter().enumerate() {
            for h in 0..hosts_per_tor {
                self.link(first_host + t * hosts_per_tor + h, sw, Tier::Host);
            }
        }
        tor
    }
}

/// A k-ary fat tree (Al-Fares et al., SIGCOMM 2008): `k` pods, each of `k/2` top-of-rack
/// switches `tor<t>` (numbered across pods) and `k/2` aggregation switches `pod<p>-agg<a>`;
/// `(k/2)^2` core switches `core<c>`; `hosts_per_tor` hosts `tor<t>-h<h>` per rack (`k/2`
/// without oversubscription). Aggregation switch `a` of every pod links to cores
/// `a*k/2 .. (a+1)*k/2`.
pub fn fat_tree(k: usize, hosts_per_tor: usize) -> Result<Generated, String> {
    if k < 2 || k % 2 != 0 {
        return Err(format!("a fat tree needs an even k of at least 2, got {k}"));
    }
    if hosts_per_tor == 0 {
        return Err("a fat tree needs at least one host per rack".into());
    }
    LayoutSize::fat_tree(k, hosts_per_tor)
        .check(&format!("a fat tree of k = {k} with {hosts_per_tor} hosts per rack"))?;
    let half = k / 2;
    let tors = k * half;
    let mut g = Generated::default();
    let tor = g.racks(tors, hosts_per_tor);
    let agg: Vec<usize> = (0..k * half)
        .map(|i| g.add(format!("pod{}-agg{}", i / half, i % half), NodeKind::Switch))
        .collect();
    let core: Vec<usize> = (0..half * half)
        .map(|c| g.add(format!("core{c}"), NodeKind::Switch))
        .collect();
    for pod in 0..k {
        for e in 0..half {
            for a in 0..half {
                g.link(tor[pod * half + e], agg[pod * half + a], Tier::Edge);
            }
        }
        for a in 0..half {
            for c in 0..half {
                g.link(agg[pod * half + a], core[a * half + c], Tier::Core);
            }
        }
    }
    Ok(g)
}

/// A three-tier layout of explicit sizes (MP-HULA's Fig. 4 is 2 pods of 1 rack and 2
/// aggregation switches, 2 cores, 16 hosts a rack): `pods` pods, each of `tors_per_pod` racks
/// `tor<t>` (numbered across pods) with `hosts_per_tor` hosts `tor<t>-h<h>`, and
/// `aggs_per_pod` aggregation switches `pod<p>-agg<a>`; every rack links to every aggregation
/// switch of its pod, and every aggregation switch to every one of `cores` cores `core<c>`.
pub fn three_tier(
    pods: usize,
    tors_per_pod: usize,
    aggs_per_pod: usize,
    cores: usize,
    hosts_per_tor: usize,
) -> Result<Generated, String> {
    if [pods, tors_per_pod, aggs_per_pod, cores, hosts_per_tor].contains(&0) {
        return Err(format!(
            "a three-tier layout needs at least one of each (pods {pods}, racks per pod {tors_per_pod}, \
             aggregation switches per pod {aggs_per_pod}, cores {cores}, hosts per rack {hosts_per_tor})"
        ));
    }
    LayoutSize::three_tier(pods, tors_per_pod, aggs_per_pod, cores, hosts_per_tor).check("a three-tier layout")?;
    let (tors, aggs) = (pods * tors_per_pod, pods * aggs_per_pod);
    let mut g = Generated::default();
    let tor = g.racks(tors, hosts_per_tor);
    let agg: Vec<usize> = (0..aggs)
        .map(|i| {
            g.add(
                format!("pod{}-agg{}", i / aggs_per_pod, i % aggs_per_pod),
                NodeKind::Switch,
            )
        })
        .collect();
    let core: Vec<usize> = (0..cores)
        .map(|c| g.add(format!("core{c}"), NodeKind::Switch))
        .collect();
    for pod in 0..pods {
        for t in 0..tors_per_pod {
            for a in 0..aggs_per_pod {
                g.link(tor[pod * tors_per_pod + t], agg[pod * aggs_per_pod + a], Tier::Edge);
            }
        }
    }
    for &a in &agg {
        for &c in &core {
            g.link(a, c, Tier::Core);
        }
    }
    Ok(g)
}

/// A two-tier leaf-spine: `leaves` leaf switches `leaf<l>`, each with `hosts_per_leaf` hosts
/// `leaf<l>-h<h>` and a link to every one of `spines` spine switches `spine<s>`.
pub fn leaf_spine(leaves: usize, spines: usize, hosts_per_leaf: usize) -> Result<Generated, String> {
    if leaves == 0 || spines == 0 || hosts_per_leaf == 0 {
        return Err(format!(
            "a leaf-spine needs at least one leaf, spine and host per leaf (got {leaves}, {spines}, {hosts_per_leaf})"
        ));
    }
    LayoutSize::leaf_spine(leaves, spines, hosts_per_leaf).check("a leaf-spine")?;
    let mut g = Generated::default();
    let hosts: Vec<Vec<usize>> = (0..leaves)
        .map(|l| {
            (0..hosts_per_leaf)
                .map(|h| g.add(format!("leaf{l}-h{h}"), NodeKind::Host))
                .collect()
        })
        .collect();
    let leaf: Vec<usize> = (0..leaves)
        .map(|l| g.add(format!("leaf{l}"), NodeKind::Switch))
        .collect();
    let spine: Vec<usize> = (0..spines)
        .map(|s| g.add(format!("spine{s}"), NodeKind::Switch))
        .collect();
    for (l, rack) in hosts.iter().enumerate() {
        for &h in rack {
            g.link(h, leaf[l], Tier::Host);
        }
    }
    for &l in &leaf {
        for &s in &spine {
            g.link(l, s, Tier::Edge);
        }
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn count(g: &Generated, tier: Tier) -> usize {
        g.links.iter().filter(|l| l.tier == tier).count()
    }

    #[test]
    fn a_fat_tree_has_al_fares_counts_and_names() {
        for k in [2usize, 4, 8, 16] {
            let g = fat_tree(k, k / 2).unwrap();
            let hosts = g.nodes.iter().filter(|n| n.1 == NodeKind::Host).count();
            assert_eq!(hosts, k * k * k / 4, "k = {k}: k^3/4 hosts");
            assert_eq!(g.nodes.len() - hosts, 5 * k * k / 4, "k = {k}: 5k^2/4 switches");
            for tier in [Tier::Host, Tier::Edge, Tier::Core] {
                assert_eq!(count(&g, tier), k * k * k / 4, "k = {k}, {tier:?}");
            }
            let names: HashSet<&str> = g.nodes.iter().map(|n| n.0.as_str()).collect();
            assert_eq!(names.len(), g.nodes.len(), "unique names");
            // Every switch has k ports: k/2 down, k/2 up (cores k down).
            let mut degree = vec![0usize; g.nodes.len()];
            for l in &g.links {
                degree[l.a] += 1;
                degree[l.b] += 1;
            }
            for (i, (_, kind)) in g.nodes.iter().enumerate() {
                let want = if *kind == NodeKind::Host { 1 } else { k };
                assert_eq!(degree[i], want, "k = {k}: {}", g.nodes[i].0);
            }
        }
        let g = fat_tree(4, 2).unwrap();
        for name in ["tor0-h0", "tor7-h1", "tor3", "pod0-agg1", "pod3-agg0", "core3"] {
            assert!(g.nodes.iter().any(|n| n.0 == name), "{name}");
        }
        assert_eq!(g.nodes[0].0, "tor0-h0", "hosts first");
    }

    #[test]
    fn oversubscription_adds_hosts_per_rack_and_bad_sizes_are_refused() {
        let g = fat_tree(4, 4).unwrap();
        assert_eq!(count(&g, Tier::Host), 32);
        assert!(fat_tree(3, 1).unwrap_err().contains("even k"));
        assert!(fat_tree(0, 1).is_err());
        assert!(fat_tree(4, 0).is_err());
        assert!(fat_tree(80, 40).unwrap_err().contains("at most"));
        assert!(fat_tree(28, 14).is_ok(), "k = 28: 6 468 nodes");
        assert!(fat_tree(64, 32).is_err(), "k = 64: 70 656 nodes");
        // Sizes from a file can be anything: refused, never an overflow (the fuzzer found
        // k = 2^32 overflowing the count in a debug build).
        assert!(fat_tree(1 << 32, 1 << 31).unwrap_err().contains("at most"));
        assert!(fat_tree(usize::MAX - 1, usize::MAX).unwrap_err().contains("at most"));
        assert!(leaf_spine(usize::MAX, usize::MAX, usize::MAX).is_err());
    }

    #[test]
    fn mp_hulas_fig4_as_a_three_tier_layout() {
        let g = three_tier(2, 1, 2, 2, 16).unwrap();
        assert_eq!(count(&g, Tier::Host), 32);
        assert_eq!(
            count(&g, Tier::Edge),
            4,
            "each rack to both of its pod's aggregation switches"
        );
        assert_eq!(count(&g, Tier::Core), 8, "every aggregation switch to both cores");
        assert_eq!(g.nodes.len(), 32 + 2 + 4 + 2);
        let names: HashSet<&str> = g.nodes.iter().map(|n| n.0.as_str()).collect();
        for n in ["tor0-h15", "tor1-h0", "tor1", "pod1-agg1", "core1"] {
            assert!(names.contains(n), "{n}");
        }
        assert!(three_tier(2, 0, 2, 2, 16).is_err());
        assert!(three_tier(usize::MAX, usize::MAX, 1, 1, usize::MAX)
            .unwrap_err()
            .contains("at most"));
    }

    /// `g`'s counts as [`LayoutSize`] has them, and its route columns and ports.
    fn measured(g: &Generated) -> (LayoutSize, usize, usize) {
        use crate::testing::{link, node};
        let nodes: Vec<_> = g.nodes.iter().map(|(n, k)| node(n, *k, 1)).collect();
        let links: Vec<_> = g.links.iter().map(|l| link(l.a, l.b)).collect();
        let graph = crate::Graph::new(&nodes, &links);
        let hosts = g.nodes.iter().filter(|n| n.1 == NodeKind::Host).count();
        let mut racks: Vec<usize> = g.links.iter().filter(|l| l.tier == Tier::Host).map(|l| l.b).collect();
        racks.sort_unstable();
        racks.dedup();
        let size = LayoutSize {
            hosts,
            switches: g.nodes.len() - hosts,
            racks: racks.len(),
            links: g.links.len(),
        };
        (size, crate::routing::columns(&graph), crate::routing::ports(&graph))
    }

    #[test]
    fn layout_sizes_are_what_the_generators_make() {
        let mut cases: Vec<(LayoutSize, Generated)> = Vec::new();
        for (k, h) in [(2, 1), (4, 2), (4, 5), (8, 4), (10, 1)] {
            cases.push((LayoutSize::fat_tree(k, h), fat_tree(k, h).unwrap()));
        }
        for (p, t, a, c, h) in [(2, 1, 2, 2, 16), (3, 2, 4, 5, 1), (1, 1, 1, 1, 1)] {
            cases.push((
                LayoutSize::three_tier(p, t, a, c, h),
                three_tier(p, t, a, c, h).unwrap(),
            ));
        }
        for (l, s, h) in [(4, 2, 8), (1, 7, 1), (9, 3, 2)] {
            cases.push((LayoutSize::leaf_spine(l, s, h), leaf_spine(l, s, h).unwrap()));
        }
        for (size, g) in &cases {
            let (made, columns, ports) = measured(g);
            assert_eq!(*size, made);
            assert_eq!(
                (size.nodes(), size.columns(), size.ports()),
                (g.nodes.len(), columns, ports)
            );
        }
    }

    #[test]
    fn a_layout_of_few_nodes_and_too_many_links_is_refused_before_it_is_made() {
        // The error alone: an Ok would print every node and link.
        let refusal = |r: Result<Generated, String>| r.err().unwrap_or_default();
        // 12 000 nodes, 16 004 000 links: the 3.45 GB of issue 45.
        let e = refusal(leaf_spine(4000, 4000, 1));
        assert_eq!(e, "a leaf-spine has 16004000 links; at most 262144");
        assert!(leaf_spine(512, 511, 1).is_ok(), "261 632 + 512 links");
        // k = 192 with one host a rack: 64 512 nodes, 3.5 million links.
        let e = refusal(fat_tree(192, 1));
        assert!(e.ends_with("has 3557376 links; at most 262144"), "{e}");
        // 6 100 nodes, 402 000 links.
        let e = refusal(three_tier(1, 2000, 100, 2000, 1));
        assert_eq!(e, "a three-tier layout has 402000 links; at most 262144");
        assert_eq!(LayoutSize::leaf_spine(usize::MAX, usize::MAX, 2).links, usize::MAX);
    }

    #[test]
    fn a_leaf_spine_links_every_leaf_to_every_spine() {
        let g = leaf_spine(4, 2, 8).unwrap();
        assert_eq!(g.nodes.len(), 32 + 4 + 2);
        assert_eq!(count(&g, Tier::Host), 32);
        assert_eq!(count(&g, Tier::Edge), 8);
        assert!(g.nodes.iter().any(|n| n.0 == "leaf3-h7"));
        assert!(leaf_spine(0, 2, 1).is_err());
    }
}
