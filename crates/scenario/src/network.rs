//! A scenario as the control plane sees it: nodes, links and intents for `mpsched-topo`.

use crate::model::{Protocol, Scenario};
use mpsched_topo::{Intents, PinIntent, SplitIntent, Wiring};

impl Scenario {
    /// The splits, pinned flows and tunnels, as intents over this scenario's graph.
    pub fn intents(&self) -> Intents {
        let path = |p: usize| self.paths[p].nodes.clone();
        Intents {
            routing: self.routing,
            splits: self
                .splits
                .iter()
                .map(|s| SplitIntent {
                    src: s.src,
                    dst: s.dst,
                    paths: s.paths.iter().map(|&p| path(p)).collect(),
                    scheduler: s.scheduler.clone(),
                    feedback_every: s.feedback_every,
                    ecn_threshold_pkts: s.ecn_threshold_pkts,
                })
                .collect(),
            pins: self
                .flows
                .iter()
                .filter_map(|f| {
                    Some(PinIntent {
                        src: f.src,
                        dst: f.dst,
                        path: path(f.path?),
                        // A TCP flow's ACKs come back along the same path.
                        both_ways: f.protocol != Protocol::Udp,
                    })
                })
                .collect(),
            tunnels: self
                .tunnels
                .iter()
                .map(|t| t.subtunnels.iter().map(|&p| path(p)).collect())
                .collect(),
        }
    }

    /// Ports, routes and switch tables: what every backend wires this scenario from.
    pub fn wiring(&self) -> Result<Wiring, String> {
        Wiring::build(&self.nodes, &self.links, &self.intents())
    }

    /// The wiring once links `down` (indices into `links`) have failed and been routed around:
    /// the same ports, other routes.
    pub fn wiring_with_down(&self, down: &[usize]) -> Result<Wiring, String> {
        Wiring::build_with_down(&self.nodes, &self.links, &self.intents(), down)
    }

    /// The flows whose route passes through both ends of a tunnel: the tunnels' payload.
    pub fn tunnelled_flows(&self, w: &Wiring) -> Vec<usize> {
        (0..self.flows.len())
            .filter(|&fi| {
                let f = &self.flows[fi];
                w.route_nodes(f.src, f.dst).is_some_and(|nodes| {
                    self.tunnels
                        .iter()
                        .any(|t| nodes.contains(&t.entry) && nodes.contains(&t.exit))
                })
            })
            .collect()
    }
}
