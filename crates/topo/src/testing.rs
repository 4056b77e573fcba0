//! Nodes and links for the crate's tests.

use crate::graph::{Link, Node, NodeId, NodeKind};

/// Node `name` of `kind` with address 10.0.0.`i`.
pub fn node(name: &str, kind: NodeKind, i: u32) -> Node {
    Node {
        name: name.into(),
        kind,
        ip: 0x0a00_0000 + i,
    }
}

/// A 1 Mbit/s link between `a` and `b`, no delay, one FIFO of 10 packets.
pub fn link(a: NodeId, b: NodeId) -> Link {
    Link {
        a,
        b,
        rate_bps: 1_000_000,
        delay_ps: 0,
        queue_pkts: 10,
        host_queue_pkts: None,
        name: None,
        ecn_threshold_pkts: None,
        a_ip: None,
        b_ip: None,
        queues: 1,
        discipline: Default::default(),
    }
}
