//! Classifier intents: the scenario's `[[classify]]` rules, naming hosts, become a switch's
//! [`ClassRule`]s, naming addresses.

use crate::graph::{Link, Node, NodeId};
use mpsched_core::classify::{ClassRule, MAX_CLASS_RULES};
use mpsched_core::packet::Ipv4;

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

/// Every address of node `n`: its own, then each interface's own, without repeats.
pub fn node_addresses(nodes: &[Node], links: &[Link], n: NodeId) -> Vec<Ipv4> {
    let mut out = vec![nodes[n].ip];
    for l in links {
        for (end, ip) in [(l.a, l.a_ip), (l.b, l.b_ip)] {
            if let Some(ip) = ip.filter(|ip| end == n && !out.contains(ip)) {
                out.push(ip);
            }
        }
    }
    out
}

fn prefixes(nodes: &[Node], links: &[Link], m: Option<ClassMatch>) -> Vec<(Ipv4, u8)> {
    match m {
        None => vec![(0, 0)],
        Some(ClassMatch::Prefix(ip, len)) => vec![(ip, len)],
        Some(ClassMatch::Node(n)) => node_addresses(nodes, links, n).into_iter().map(|ip| (ip, 32)).collect(),
    }
}

/// Switch `at`'s rules, in order: a rule naming a node with several addresses becomes one rule
/// per address (per source and destination pair). Refused beyond [`MAX_CLASS_RULES`].
pub fn switch_rules(
    nodes: &[Node],
    links: &[Link],
    intents: &[ClassifyIntent],
    at: NodeId,
) -> Result<Vec<ClassRule>, String> {
    let mut out = Vec::new();
    for c in intents.iter().filter(|c| c.at == at) {
        for (src, src_len) in prefixes(nodes, links, c.src) {
            for (dst, dst_len) in prefixes(nodes, links, c.dst) {
                out.push(ClassRule {
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
    if out.len() > MAX_CLASS_RULES {
        return Err(format!(
            "`{}` has {} classifier rules once its hosts' addresses are counted; a switch holds at most {MAX_CLASS_RULES}",
            nodes[at].name,
            out.len()
        ));
    }
    Ok(out)
}
