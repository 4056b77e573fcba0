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
/// anything is generated. What its routes and switch tables would take is bounded after, by the
/// scenario's validation (`MAX_CONTROL_PLANE_BYTES`): routes take 4 bytes a node per switch and
/// per rack, no longer per node.
pub const MAX_GENERATED_NODES: usize = 65_536;

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
    let half = k / 2;
    let tors = k.saturating_mul(half);
    // Saturating: k comes from a file and may be anything up to 2^63.
    let total = tors
        .saturating_mul(hosts_per_tor)
        .saturating_add(tors)
        .saturating_add(tors)
        .saturating_add(half.saturating_mul(half));
    if total > MAX_GENERATED_NODES {
        return Err(format!(
            "a fat tree of k = {k} with {hosts_per_tor} hosts per rack has {total} nodes; at most {MAX_GENERATED_NODES}"
        ));
    }
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
    let tors = pods.saturating_mul(tors_per_pod);
    let aggs = pods.saturating_mul(aggs_per_pod);
    let total = tors
        .saturating_mul(hosts_per_tor)
        .saturating_add(tors)
        .saturating_add(aggs)
        .saturating_add(cores);
    if total > MAX_GENERATED_NODES {
        return Err(format!(
            "a three-tier layout of {total} nodes; at most {MAX_GENERATED_NODES}"
        ));
    }
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
    let total = leaves
        .saturating_mul(hosts_per_leaf)
        .saturating_add(leaves.saturating_add(spines));
    if total > MAX_GENERATED_NODES {
        return Err(format!("a leaf-spine of {total} nodes; at most {MAX_GENERATED_NODES}"));
    }
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
