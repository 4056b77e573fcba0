//! # mpsched-topo: the network as a graph, and the control plane over it
//!
//! What every backend needs to know about a network before a packet moves, computed once and
//! shared by the simulator, the kernel backend and (later) BMv2:
//!
//! - [`graph`]: nodes, full-duplex links, and each node's ports in the order its links are
//!   declared (port `p` of a node is its `p`-th link; the kernel backend names it `e<p>`);
//! - [`routing`]: shortest paths by hop count from every node to every node (hosts do not
//!   forward), the equal-cost next hops of each (ECMP), routes pinned along given paths, and
//!   walks along the routes;
//! - [`addressing`]: addresses that are not a node's own (a subtunnel's outer address);
//! - [`tables`]: what the control plane installs in each switch's program ([`Wiring`]): routes,
//!   split and confluence tables, ECN markers, from the routes and a list of intents (splits,
//!   pinned flows, tunnels).
//!
//! It knows nothing of scenario files: `mpsched-scenario` turns a scenario into a node and link
//! list and intents, and calls [`Wiring::build`]. Generated topologies (fat trees, leaf-spine)
//! belong here too, as functions that return nodes and links.

#![warn(missing_docs)]

pub mod addressing;
pub mod classify;
pub mod generate;
pub mod graph;
pub mod probe;
pub mod routing;
pub mod tables;
#[cfg(test)]
mod testing;

pub use classify::{ClassMatch, ClassifyIntent};
pub use graph::{Graph, Link, Node, NodeId, NodeKind, PortEnd, QueueDiscipline, MAX_QUEUES};
pub use routing::Routes;
pub use tables::{Intents, PinIntent, Routing, SplitIntent, Wiring};
