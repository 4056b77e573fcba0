//! PMQECN's control plane (paper Fig. 3 and Algorithm 2) as a [`ControlLoop`]: every period it
//! reads each class's arrivals at the switch's ports through the control channel, takes the
//! most utilised port (bytes over its rate) as the congested one, solves the model for it
//! ([`super::optimiser`]) and writes back each class's weight, threshold, measured and target
//! rate.
//!
//! Units: the model counts packets; the loop measures the period's mean packet size at that
//! port and expresses the port's rate (`Gamma`, `C`) and the arrival rates in packets of that
//! size per second. The measured sojourn of a class (`W_i`, for the jitter objective) is its
//! virtual queue's length over its arrival rate (Little), read at the end of the period. The
//! weights and thresholds are per class, not per port (the data plane's registers): a switch
//! with two congested ports gets the more utilised one's.

use super::optimiser::{optimise, ClassInput, DeConfig, Goal, Objective, PortModel};
use super::vqwrr::VIRTUAL_QUEUES;
use crate::ControlLoop;
use mpsched_core::control::{ControlError, ControlPlane};

/// What the loop is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlConfig {
    /// Period, ps.
    pub period_ps: u64,
    /// The model's `N`: packets a class may hold.
    pub capacity_pkts: u32,
    /// Category A's class.
    pub class_a: usize,
    /// Category B's class.
    pub class_b: usize,
    /// Packets per level the weights share.
    pub weight_scale: u32,
    /// The node's ports' rates, bit/s.
    pub port_rates_bps: Vec<u64>,
    /// Seed of the optimiser's draws (each period adds its number).
    pub seed: u64,
    /// How the model sums its terms.
    pub objective: ObjectiveKind,
}

/// The reading of the model's objective a loop solves ([`Objective`] without the figures the
/// loop fills in per port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectiveKind {
    /// [`Objective::Paper`].
    Paper,
    /// [`Objective::Literal`], `C` the congested port's rate in Mbit/s.
    Literal,
    /// [`Objective::Normalised`].
    Normalised,
}

impl ObjectiveKind {
    /// The kind a value of the `objective` parameter names (`cp::OBJECTIVES`' order).
    pub fn from_param(value: u64) -> ObjectiveKind {
        match value {
            1 => ObjectiveKind::Literal,
            2 => ObjectiveKind::Normalised,
            _ => ObjectiveKind::Paper,
        }
    }

    /// The objective at a port of `port_bps`.
    fn at(self, port_bps: u64) -> Objective {
        match self {
            ObjectiveKind::Paper => Objective::Paper,
            ObjectiveKind::Literal => Objective::Literal {
                link_mbps: port_bps as f64 / 1e6,
            },
            ObjectiveKind::Normalised => Objective::Normalised,
        }
    }
}

/// The control loop's state: the last counters read, and its own counters.
pub struct PmqecnControl {
    cfg: ControlConfig,
    /// Per port and class: bytes and packets read last period.
    last: Vec<[(u64, u64); VIRTUAL_QUEUES]>,
    /// When the last step ran, ps: the arrivals read are over the time since (a backend on the
    /// wall clock runs a step a few milliseconds late now and then).
    last_step_ps: Option<u64>,
    steps: u64,
    solved: u64,
    infeasible: u64,
}

/// One class's measurements over a period at a port.
#[derive(Clone, Copy, Debug)]
struct Measured {
    class: usize,
    bytes: u64,
    pkts: u64,
    queued: u64,
}

impl PmqecnControl {
    /// A loop with `cfg`.
    pub fn new(cfg: ControlConfig) -> PmqecnControl {
        let n = cfg.port_rates_bps.len();
        PmqecnControl {
            cfg,
            last: vec![[(0, 0); VIRTUAL_QUEUES]; n],
            last_step_ps: None,
            steps: 0,
            solved: 0,
            infeasible: 0,
        }
    }

    fn goal(&self, class: usize) -> Goal {
        if class == self.cfg.class_a {
            Goal::DelayAndBandwidth
        } else if class == self.cfg.class_b {
            Goal::DelayAndJitter
        } else {
            Goal::DelayAndLoss
        }
    }

    /// A per-port register, 0 for a port the data plane has not seen yet.
    fn read_or_zero(plane: &mut dyn ControlPlane, node: &str, reg: &str, index: usize) -> Result<u64, ControlError> {
        match plane.read_register(node, reg, index) {
            Err(ControlError::NoIndex { .. }) => Ok(0),
            r => r,
        }
    }

    /// Each port's classes with arrivals this period (and remember the counters).
    fn measure(&mut self, node: &str, plane: &mut dyn ControlPlane) -> Result<Vec<Vec<Measured>>, ControlError> {
        let mut ports = Vec::with_capacity(self.last.len());
        for p in 0..self.last.len() {
            let mut classes = Vec::new();
            for v in 0..VIRTUAL_QUEUES {
                let i = p * VIRTUAL_QUEUES + v;
                let bytes = Self::read_or_zero(plane, node, "vq_arrival_bytes", i)?;
                let pkts = Self::read_or_zero(plane, node, "vq_arrival_pkts", i)?;
                let (b0, p0) = std::mem::replace(&mut self.last[p][v], (bytes, pkts));
                if pkts > p0 {
                    let queued = Self::read_or_zero(plane, node, "vq_len", i)?;
                    classes.push(Measured {
                        class: v,
                        bytes: bytes - b0,
                        pkts: pkts - p0,
                        queued,
                    });
                }
            }
            ports.push(classes);
        }
        Ok(ports)
    }
}

impl ControlLoop for PmqecnControl {
    fn period_ps(&self) -> u64 {
        self.cfg.period_ps
    }

    fn step(&mut self, now_ps: u64, node: &str, plane: &mut dyn ControlPlane) -> Result<(), ControlError> {
        let since_ps = match self.last_step_ps.replace(now_ps) {
            Some(then) if now_ps > then => now_ps - then,
            _ => self.cfg.period_ps,
        };
        self.steps += 1;
        let ports = self.measure(node, plane)?;
        let Some((port, classes)) = ports
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_empty())
            // The most utilised port (bytes over its rate), the lowest-numbered on a tie.
            .max_by_key(|(p, c)| {
                let bits = 8 * u128::from(c.iter().map(|m| m.bytes).sum::<u64>());
                (
                    bits * 1_000_000 / u128::from(self.cfg.port_rates_bps[*p].max(1)),
                    usize::MAX - p,
                )
            })
        else {
            return Ok(());
        };
        let period_s = since_ps as f64 * 1e-12;
        let bytes: u64 = classes.iter().map(|m| m.bytes).sum();
        let pkts: u64 = classes.iter().map(|m| m.pkts).sum();
        let pkt_bits = 8.0 * bytes as f64 / pkts as f64;
        let gamma = self.cfg.port_rates_bps[port] as f64 / pkt_bits;
        let inputs: Vec<ClassInput> = classes
            .iter()
            .map(|m| {
                let lambda = m.pkts as f64 / period_s;
                ClassInput {
                    arrival_per_s: lambda,
                    measured_sojourn_s: m.queued as f64 / lambda,
                    goal: self.goal(m.class),
                }
            })
            .collect();
        let model = PortModel {
            capacity_pkts: self.cfg.capacity_pkts,
            service_per_s: gamma,
            arrival_budget_per_s: inputs.iter().map(|c| c.arrival_per_s).sum(),
            link_per_s: gamma,
            links: self.cfg.port_rates_bps.len() as u32,
            objective: self.cfg.objective.at(self.cfg.port_rates_bps[port]),
        };
        let de = DeConfig {
            seed: self.cfg.seed.wrapping_add(self.steps),
            ..DeConfig::default()
        };
        // Counters stay deterministic (no wall time): the solve's cost is measured apart
        // (optimiser tests, docs/performance.md).
        let s = optimise(&model, &inputs, &de).map_err(|e| ControlError::Unsupported(format!("the model: {e}")))?;
        self.solved += 1;
        if s.violation != [0.0, 0.0] {
            self.infeasible += 1;
        }
        let kbps = |per_s: f64| (per_s * pkt_bits / 1000.0).round() as u64;
        for (i, m) in classes.iter().enumerate() {
            let weight = (s.weights[i] * f64::from(self.cfg.weight_scale)).round().max(1.0) as u64;
            plane.write_register(node, "vq_weight", m.class, weight)?;
            plane.write_register(node, "vq_threshold", m.class, u64::from(s.thresholds_pkts[i]))?;
            plane.write_register(node, "vq_rate_kbps", m.class, kbps(inputs[i].arrival_per_s))?;
            plane.write_register(node, "vq_target_kbps", m.class, kbps(s.target_arrival_per_s[i]))?;
        }
        Ok(())
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("pmqecn.solved".to_string(), self.solved),
            ("pmqecn.infeasible".to_string(), self.infeasible),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::control::ProgramControl;
    use std::collections::BTreeMap;

    /// One node's registers in a map; per-port registers sized for `ports` ports.
    struct Registers {
        ports: usize,
        values: BTreeMap<(String, usize), u64>,
    }

    impl ProgramControl for Registers {
        fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
            let size = if name.starts_with("vq_arrival") || name == "vq_len" {
                self.ports * VIRTUAL_QUEUES
            } else {
                VIRTUAL_QUEUES
            };
            if index >= size {
                return Err(ControlError::NoIndex {
                    register: name.to_string(),
                    size,
                    index,
                });
            }
            Ok(self.values.get(&(name.to_string(), index)).copied().unwrap_or(0))
        }

        fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
            if name == "vq_weight" && value == 0 {
                return Err(ControlError::Unsupported("a weight of 0".into()));
            }
            self.values.insert((name.to_string(), index), value);
            Ok(())
        }
    }

    impl ControlPlane for Registers {
        fn program(&mut self, node: &str) -> Result<&mut dyn ProgramControl, ControlError> {
            match node {
                "s1" => Ok(self),
                _ => Err(ControlError::NoNode(node.to_string())),
            }
        }

        fn set_queue_weights(&mut self, _node: &str, _port: u16, _weights: &[u32]) -> Result<(), ControlError> {
            Err(ControlError::Unsupported("not used by the loop".into()))
        }

        fn set_queue_threshold(
            &mut self,
            _node: &str,
            _port: u16,
            _queue: u8,
            _threshold: mpsched_core::control::QueueThreshold,
        ) -> Result<(), ControlError> {
            Err(ControlError::Unsupported("not used by the loop".into()))
        }
    }

    /// A millisecond in the loop's picoseconds: steps are at the times the run gives them.
    const MS: u64 = 1_000_000_000;

    fn config() -> ControlConfig {
        ControlConfig {
            period_ps: 100 * MS,
            capacity_pkts: 64,
            class_a: 2,
            class_b: 1,
            weight_scale: 9,
            port_rates_bps: vec![10_000_000; 3],
            seed: 7,
            objective: ObjectiveKind::Paper,
        }
    }

    /// Port 2 carried 1500-byte packets of classes 0 to 2 at `per_s` packets/s for 100 ms
    /// (port 1 a little of class 0).
    fn arrive(r: &mut Registers, per_s: [u64; 3]) {
        for (v, &n) in per_s.iter().enumerate() {
            let i = 2 * VIRTUAL_QUEUES + v;
            let pkts = n / 10;
            *r.values.entry(("vq_arrival_pkts".into(), i)).or_default() += pkts;
            *r.values.entry(("vq_arrival_bytes".into(), i)).or_default() += pkts * 1500;
        }
        *r.values.entry(("vq_arrival_pkts".into(), VIRTUAL_QUEUES)).or_default() += 1;
        *r.values.entry(("vq_arrival_bytes".into(), VIRTUAL_QUEUES)).or_default() += 64;
    }

    #[test]
    fn each_period_solves_the_busiest_port_and_writes_the_classes_registers() {
        let mut r = Registers {
            ports: 3,
            values: BTreeMap::new(),
        };
        let mut c = PmqecnControl::new(config());
        // Nothing offered yet: nothing written.
        c.step(0, "s1", &mut r).unwrap();
        assert!(r.values.keys().all(|(k, _)| k.starts_with("vq_arrival")));
        arrive(&mut r, [200, 200, 200]);
        c.step(100 * MS, "s1", &mut r).unwrap();
        // What the optimiser answers for the same measurements, in packets of 1500 bytes.
        let gamma = 10e6 / 12_000.0;
        let goals = [Goal::DelayAndLoss, Goal::DelayAndJitter, Goal::DelayAndBandwidth];
        let inputs: Vec<ClassInput> = goals
            .iter()
            .map(|&goal| ClassInput {
                arrival_per_s: 200.0,
                measured_sojourn_s: 0.0,
                goal,
            })
            .collect();
        let model = PortModel {
            capacity_pkts: 64,
            service_per_s: gamma,
            arrival_budget_per_s: 600.0,
            link_per_s: gamma,
            links: 3,
            objective: Objective::Paper,
        };
        let s = optimise(
            &model,
            &inputs,
            &DeConfig {
                seed: 9,
                ..DeConfig::default()
            },
        )
        .unwrap();
        for v in 0..3 {
            let reg = |name: &str| r.values[&(name.to_string(), v)];
            let w = (s.weights[v] * 9.0).round().max(1.0) as u64;
            assert_eq!(reg("vq_weight"), w, "class {v}");
            assert_eq!(reg("vq_threshold"), u64::from(s.thresholds_pkts[v]));
            assert_eq!(reg("vq_rate_kbps"), 2_400, "200 packets of 12 kbit a second");
            assert_eq!(reg("vq_target_kbps"), (s.target_arrival_per_s[v] * 12.0).round() as u64);
        }
        assert!(
            !r.values.contains_key(&("vq_weight".to_string(), 3)),
            "no class 3 offered"
        );
        // The next period counts only what arrived since.
        arrive(&mut r, [0, 400, 0]);
        c.step(200 * MS, "s1", &mut r).unwrap();
        assert_eq!(r.values[&("vq_rate_kbps".to_string(), 1)], 4_800);
        assert_eq!(c.counters()[0], ("pmqecn.solved".to_string(), 2));
    }

    #[test]
    fn the_congested_port_is_the_most_utilised_not_the_one_that_carried_most() {
        let mut r = Registers {
            ports: 3,
            values: BTreeMap::new(),
        };
        let mut c = PmqecnControl::new(ControlConfig {
            port_rates_bps: vec![10_000_000, 1_000_000, 10_000_000],
            ..config()
        });
        c.step(0, "s1", &mut r).unwrap();
        // In 100 ms, class 0: 50 packets of 1500 bytes at port 1 (1 Mbit/s: six times its
        // rate), 60 at port 2 (10 Mbit/s: under it).
        for (port, pkts) in [(1, 50u64), (2, 60)] {
            let i = port * VIRTUAL_QUEUES;
            r.values.insert(("vq_arrival_pkts".into(), i), pkts);
            r.values.insert(("vq_arrival_bytes".into(), i), pkts * 1500);
        }
        c.step(100 * MS, "s1", &mut r).unwrap();
        assert_eq!(r.values[&("vq_rate_kbps".to_string(), 0)], 6_000, "port 1's class 0");
    }

    #[test]
    fn a_channel_error_comes_back_to_the_caller() {
        let mut r = Registers {
            ports: 3,
            values: BTreeMap::new(),
        };
        let mut c = PmqecnControl::new(config());
        assert!(matches!(c.step(0, "s9", &mut r), Err(ControlError::NoNode(_))));
    }
}
