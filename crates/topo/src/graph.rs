//! Nodes, links and ports.

use mpsched_core::packet::{Ipv4, PortId};

/// Index of a node in its graph.
pub type NodeId = usize;

/// Node kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An end host: runs traffic sources and sinks, never forwards.
    Host,
    /// A switch / access point: forwards by its program.
    Switch,
}

/// A node.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Name, unique.
    pub name: String,
    /// Host or switch.
    pub kind: NodeKind,
    /// Address.
    pub ip: Ipv4,
}

/// A full-duplex link; each direction has its own queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// One end.
    pub a: NodeId,
    /// Other end.
    pub b: NodeId,
    /// Rate in bit/s, counted on wire bytes.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ps: u64,
    /// Queue capacity per direction, in packets waiting (excluding the one being sent).
    pub queue_pkts: u32,
    /// The queue at a host end instead, when given: the host's own interface queue (Linux's
    /// `txqueuelen`, 1 000 packets by default; htsim's source queue), which a switch's buffer
    /// size does not describe.
    pub host_queue_pkts: Option<u32>,
    /// Name, for variants to refer to.
    pub name: Option<String>,
    /// ECN marking threshold at the switch ends of this link, in packets waiting.
    pub ecn_threshold_pkts: Option<u32>,
    /// Output queues per direction (1 to [`MAX_QUEUES`]), each of `queue_pkts`.
    pub queues: u8,
    /// How the serialiser chooses among them.
    pub discipline: QueueDiscipline,
    /// The address of the interface at end `a` when that end is a host with an address per
    /// interface; None: the node's own address.
    pub a_ip: Option<Ipv4>,
    /// The same for end `b`.
    pub b_ip: Option<Ipv4>,
}

impl Link {
    /// Queue capacity at one end, in packets: `host_queue_pkts` where that end is a host and the
    /// link gives one, else `queue_pkts`.
    pub fn queue_pkts_at(&self, end_is_host: bool) -> u32 {
        match self.host_queue_pkts {
            Some(q) if end_is_host => q,
            _ => self.queue_pkts,
        }
    }
}

/// The most queues a port may have (BMv2's priority queues are 0 to 7).
pub const MAX_QUEUES: u8 = 8;

/// How a port with several output queues serves them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum QueueDiscipline {
    /// One queue, first in first out.
    #[default]
    Fifo,
    /// The highest-numbered non-empty queue first (BMv2's priority queues).
    StrictPriority,
    /// Weighted round robin: up to `w[i]` packets from queue `i` per round.
    Wrr(Vec<u32>),
    /// Deficit round robin: `w[i]` quanta of 1514 bytes per round for queue `i`.
    Drr(Vec<u32>),
}

/// The far end of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortEnd {
    /// Node at the other end.
    pub peer: NodeId,
    /// Its port.
    pub peer_port: PortId,
    /// Index of the link.
    pub link: usize,
}

/// Nodes, links, and the ports they make.
#[derive(Clone, Debug)]
pub struct Graph<'a> {
    /// The nodes.
    pub nodes: &'a [Node],
    /// The links.
    pub links: &'a [Link],
    /// Per node, per port (in the order the node's links are declared): the far end.
    pub ports: Vec<Vec<PortEnd>>,
    /// Per link: down (failed). Routing leaves a down link out; its ports keep their numbers,
    /// so tables computed after a failure fit the switches wired before it.
    pub down: Vec<bool>,
}

impl<'a> Graph<'a> {
    /// The graph of `nodes` joined by `links` (whose ends must index `nodes`).
    pub fn new(nodes: &'a [Node], links: &'a [Link]) -> Graph<'a> {
        Graph {
            nodes,
            links,
            ports: ports_of(nodes.len(), links),
            down: vec![false; links.len()],
        }
    }

    /// The graph with links `down` (indices into `links`) failed.
    pub fn with_down(nodes: &'a [Node], links: &'a [Link], down: &[usize]) -> Graph<'a> {
        let mut g = Graph::new(nodes, links);
        for &l in down {
            if let Some(d) = g.down.get_mut(l) {
                *d = true;
            }
        }
        g
    }

    /// Whether the link behind `e` carries traffic.
    #[inline]
    pub fn is_up(&self, e: &PortEnd) -> bool {
        !self.down[e.link]
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The port of `from` that leads to its neighbour `to` (the first, if several links join
    /// them).
    pub fn port_to(&self, from: NodeId, to: NodeId) -> Option<PortId> {
        self.ports[from].iter().position(|e| e.peer == to).map(|p| p as PortId)
    }

    /// The address of `node`'s interface `port`: the link end's own, or the node's.
    pub fn interface_ip(&self, node: NodeId, port: PortId) -> Ipv4 {
        let Some(e) = self.ports[node].get(usize::from(port)) else {
            return self.nodes[node].ip;
        };
        let l = &self.links[e.link];
        let own = if l.a == node { l.a_ip } else { l.b_ip };
        own.unwrap_or(self.nodes[node].ip)
    }
}

/// Each node's ports, in the order its links are declared.
pub fn ports_of(n: usize, links: &[Link]) -> Vec<Vec<PortEnd>> {
    let mut ports: Vec<Vec<PortEnd>> = vec![Vec::new(); n];
    for (li, l) in links.iter().enumerate() {
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
    ports
}
