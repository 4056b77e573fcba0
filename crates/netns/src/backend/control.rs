//! The control channel on the kernel: [`KernelControl`] implements
//! [`ControlPlane`](mpsched_core::control::ControlPlane) over a running network, so that the
//! same controller drives the simulator's components and the kernel's switches. Register and
//! table calls go to the node's data plane ([`SwitchPlane`]: BPF maps, or BMv2's CLI); queue
//! calls to its port's qdiscs (`tc`, [`super::queues`]). Each call touches one node.
//!
//! A [`Controller`] in [`super::NetnsOptions`] is called every `period` while the traffic runs,
//! from the thread that samples the run, with the time since time zero.

use super::queues;
use crate::ns::Netns;
use crate::switchplane::SwitchPlane;
use mpsched_core::control::{ControlError, ControlPlane, ProgramControl, QueueThreshold};
use mpsched_core::packet::PortId;
use mpsched_scenario::{NodeKind, Scenario};
use mpsched_topo::Wiring;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a controller does at each call: reads and writes through the control plane, at a time
/// since the run's time zero.
pub type ControlFn = dyn FnMut(&mut dyn ControlPlane, Duration) + Send;

/// A controller called while a run's traffic runs.
#[derive(Clone)]
pub struct Controller {
    /// How often (the sampling loop wakes every 5 ms, so shorter periods are not kept).
    pub period: Duration,
    /// The controller.
    pub act: Arc<Mutex<ControlFn>>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

/// The control plane of a running kernel network.
pub struct KernelControl<'a> {
    pub(super) sc: &'a Scenario,
    pub(super) w: &'a Wiring,
    pub(super) nss: &'a [Netns],
    pub(super) planes: &'a mut [(usize, Box<dyn SwitchPlane>)],
    /// How the run's strict-priority ports are built, if it has any.
    pub(super) strict: Option<queues::StrictPriority>,
}

impl KernelControl<'_> {
    fn node(&self, name: &str) -> Result<usize, ControlError> {
        self.sc
            .node_index(name)
            .ok_or_else(|| ControlError::NoNode(name.to_string()))
    }

    fn plane(&mut self, name: &str) -> Result<&mut Box<dyn SwitchPlane>, ControlError> {
        let n = self.node(name)?;
        self.planes
            .iter_mut()
            .find(|(i, _)| *i == n)
            .map(|(_, p)| p)
            .ok_or_else(|| ControlError::NoProgram(name.to_string()))
    }

    /// The link out of `node`'s `port` and its queue count.
    fn port(&self, name: &str, port: PortId) -> Result<(usize, &mpsched_scenario::Link), ControlError> {
        let n = self.node(name)?;
        let end = self.w.ports[n]
            .get(usize::from(port))
            .ok_or_else(|| ControlError::NoPort {
                node: name.to_string(),
                port,
            })?;
        Ok((n, &self.sc.links[end.link]))
    }
}

fn tc_failed(e: super::NetnsError) -> ControlError {
    ControlError::Unsupported(format!("tc: {e}"))
}

impl ControlPlane for KernelControl<'_> {
    fn program(&mut self, node: &str) -> Result<&mut dyn ProgramControl, ControlError> {
        Ok(&mut **self.plane(node)?)
    }

    fn set_queue_weights(&mut self, node: &str, port: PortId, weights: &[u32]) -> Result<(), ControlError> {
        let (n, link) = self.port(node, port)?;
        if link.queues < 2 {
            return Err(ControlError::Unsupported(format!(
                "node `{node}` port {port} has one queue; weights need `queues` of 2 or more on its link"
            )));
        }
        queues::weights_settable(&link.discipline)
            .map_err(|why| ControlError::Unsupported(format!("node `{node}` port {port}: {why}")))?;
        if weights.len() != usize::from(link.queues) || weights.iter().all(|&w| w == 0) {
            return Err(ControlError::BadEntry {
                table: format!("{node} port {port} queue weights"),
                reason: format!("one weight per queue ({}), not all zero; got {weights:?}", link.queues),
            });
        }
        queues::set_weights(&self.nss[n], &format!("e{port}"), link.rate_bps, weights).map_err(tc_failed)
    }

    fn set_queue_threshold(
        &mut self,
        node: &str,
        port: PortId,
        queue: u8,
        threshold: QueueThreshold,
    ) -> Result<(), ControlError> {
        let (_, link) = self.port(node, port)?;
        if queue >= link.queues.max(1) {
            return Err(ControlError::NoQueue {
                node: node.to_string(),
                port,
                queue,
            });
        }
        if let QueueThreshold::DropPkts(limit) = threshold {
            // A port whose queues the switch serves itself (BMv2's priority queues).
            if let Ok(plane) = self.plane(node) {
                if let Some(r) = plane.set_queue_depth(port, queue, limit) {
                    return r;
                }
            }
        }
        let (n, link) = self.port(node, port)?;
        match threshold {
            QueueThreshold::DropPkts(limit) if link.queues > 1 && self.sc.nodes[n].kind == NodeKind::Switch => {
                let layout = queues::Layout::of(&link.discipline, usize::from(link.queues), self.strict)
                    .map_err(ControlError::Unsupported)?;
                queues::set_limit(&self.nss[n], &format!("e{port}"), &layout, usize::from(queue), limit)
                    .map_err(tc_failed)
            }
            QueueThreshold::DropPkts(_) => Err(ControlError::Unsupported(format!(
                "node `{node}` port {port}: capacities change on switch ports with several queues"
            ))),
            QueueThreshold::EcnMarkPkts(_) => Err(ControlError::Unsupported(
                "per-queue ECN thresholds: the kernel has no red here, and the eBPF marker sees the port, not its queues"
                    .into(),
            )),
        }
    }
}

/// The programs' own control loops ([`mpsched_programs::ControlLoop`]: PMQECN's optimiser),
/// one per switch whose program has one, built as the simulator builds them (the same seeds
/// per node) and called from the sampling thread every period of wall time since time zero.
/// A loop's error ends the run, naming the node and the time.
pub(super) struct ProgramLoops {
    loops: Vec<NodeLoop>,
}

struct NodeLoop {
    node: String,
    inner: Box<dyn mpsched_programs::ControlLoop>,
    period: Duration,
    next: Duration,
    steps: u64,
}

impl ProgramLoops {
    /// The loops of `sc`'s switches, their ports' rates from the wiring.
    pub(super) fn new(sc: &Scenario, w: &Wiring) -> ProgramLoops {
        let mut rng = mpsched_core::rng::SeededRandom::new(sc.seed ^ 0x636f_6e74_726f_6c21);
        let mut loops = Vec::new();
        for (i, node) in sc.nodes.iter().enumerate() {
            let node_seed = rng.next_u64();
            let Some((spec, params)) = sc.program_of(i).filter(|_| node.kind == NodeKind::Switch) else {
                continue;
            };
            let rates: Vec<u64> = w.ports[i].iter().map(|e| sc.links[e.link].rate_bps).collect();
            let input = mpsched_programs::ControlInput {
                node: &node.name,
                params,
                port_rates_bps: &rates,
                seed: node_seed,
            };
            if let Some(inner) = spec.control_loop(&input) {
                let period = Duration::from_nanos(inner.period_ps() / 1000);
                loops.push(NodeLoop {
                    node: node.name.clone(),
                    inner,
                    period,
                    next: period,
                    steps: 0,
                });
            }
        }
        ProgramLoops { loops }
    }

    /// Run every loop that is due at `now` (one late by more than its period runs once, and
    /// next a period later).
    pub(super) fn run_due(&mut self, ctl: &mut KernelControl<'_>, now: Duration) -> Result<(), super::NetnsError> {
        for l in self.loops.iter_mut().filter(|l| now >= l.next) {
            l.steps += 1;
            let now_ps = now.as_nanos() as u64 * 1000;
            l.inner.step(now_ps, &l.node, ctl).map_err(|e| {
                super::NetnsError::Plane(format!(
                    "node `{}`'s control loop at {} us: {e}",
                    l.node,
                    now.as_micros()
                ))
            })?;
            l.next += l.period;
            if l.next <= now {
                l.next = now + l.period;
            }
        }
        Ok(())
    }

    /// Each loop's counters by the simulator's component name (`control:<node>`).
    pub(super) fn counters(&self) -> Vec<(String, BTreeMap<String, u64>)> {
        self.loops
            .iter()
            .map(|l| {
                let mut c: BTreeMap<String, u64> = l.inner.counters().into_iter().collect();
                c.insert("steps".into(), l.steps);
                (format!("control:{}", l.node), c)
            })
            .collect()
    }
}
