//! Classifier intents: the scenario's `[[classify]]` rules, naming hosts, become a switch's
//! [`ClassRule`]s, naming addresses.

use crate::graph::{Link, Node, NodeId};
use mpsched_core::classify::{ClassRule, MAX_CLASS_RULES};
use mpsched_core::packet::Ipv4;
use std::collections::{HashMap, HashSet};

/// What a rule matches a packet's source or destination by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassMatch {
    /// Any address of a node: its own and those of its interfaces.
    Node(NodeId),
    /// A network and its prefix length.
    Prefix(Ipv4, u8),
}

/// A classifier rule at a switch (first match first, in the order given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassifyIntent {
    /// The switch whose ingress classifies.
    pub at: NodeId,
    /// Source (None: any).
    pub src: Option<ClassMatch>,
    /// Destination (None: any).
    pub dst: Option<ClassMatch>,
    /// The DSCP the packet arrives with (None: any).
    pub dscp: Option<u8>,
    /// The queue it picks (its DSCP becomes `queue << 3`).
    pub queue: u8,
}

/// Each node's addresses beyond its own: those its interfaces hold (a multi-homed host's), in
/// link order without repeats. One pass over the links.
fn interface_addresses(nodes: &[Node], links: &[Link]) -> HashMap<NodeId, Vec<Ipv4>> {
    let mut out: HashMap<NodeId, Vec<Ipv4>> = HashMap::new();
    let mut seen: HashSet<(NodeId, Ipv4)> = HashSet::new();
    for l in links {
        for (end, ip) in [(l.a, l.a_ip), (l.b, l.b_ip)] {
            if let Some(ip) = ip.filter(|&ip| ip != nodes[end].ip && seen.insert((end, ip))) {
                out.entry(end).or_default().push(ip);
            }
        }
    }
    out
}

/// The (network, prefix length) pairs a rule's source or destination stands for.
fn prefixes(nodes: &[Node], extra: &HashMap<NodeId, Vec<Ipv4>>, m: Option<ClassMatch>) -> Vec<(Ipv4, u8)> {
    match m {
        None => vec![(0, 0)],
        Some(ClassMatch::Prefix(ip, len)) => vec![(ip, len)],
        Some(ClassMatch::Node(n)) => std::iter::once(nodes[n].ip)
            .chain(extra.get(&n).into_iter().flatten().copied())
            .map(|ip| (ip, 32))
            .collect(),
    }
}

/// Every classifying switch's rules, in order: a rule naming a node with several addresses
/// becomes one rule per address (per source and destination pair). A switch that would hold
/// more than [`MAX_CLASS_RULES`] is refused before its rules are made.
pub fn rules_by_switch(
    nodes: &[Node],
    links: &[Link],
    intents: &[ClassifyIntent],
) -> Result<HashMap<NodeId, Vec<ClassRule>>, String> {
    let extra = interface_addresses(nodes, links);
    let mut out: HashMap<NodeId, Vec<ClassRule>> = HashMap::new();
    for c in intents {
        let (srcs, dsts) = (prefixes(nodes, &extra, c.src), prefixes(nodes, &extra, c.dst));
        let rules = out.entry(c.at).or_default();
        if rules.len().saturating_add(srcs.len().saturating_mul(dsts.len())) > MAX_CLASS_RULES {
            return Err(format!(
                "`{}` has more than {MAX_CLASS_RULES} classifier rules once its hosts' addresses are counted, \
                 the most a switch holds",
                nodes[c.at].name
            ));
        }
        for &(src, src_len) in &srcs {
            for &(dst, dst_len) in &dsts {
                rules.push(ClassRule {
                    src,
                    src_len,
                    dst,
                    dst_len,
                    dscp: c.dscp,
                    queue: c.queue,
                });
            }
        }
    }
    Ok(out)
}
