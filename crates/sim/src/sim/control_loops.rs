//! Programs' control loops ([`mpsched_programs::ControlLoop`]) on simulated time: one component
//! per node whose program has one, calling it every period through the control channel. A
//! loop's error ends the run with [`SimError::Control`], naming the node.

use super::*;
use mpsched_programs::{ControlInput, ControlLoop};

/// One node's control loop.
struct LoopComponent {
    name: String,
    node: String,
    inner: Box<dyn ControlLoop>,
    steps: u64,
}

impl Component for LoopComponent {
    fn name(&self) -> &str {
        &self.name
    }

    fn start(&mut self, net: &mut Net<'_>) {
        let at = net.now_ps() + self.inner.period_ps();
        net.set_timer(at, 0);
    }

    fn on_timer(&mut self, _token: u64, net: &mut Net<'_>) {
        let now = net.now_ps();
        self.steps += 1;
        if let Err(e) = self.inner.step(now, &self.node, net) {
            net.fail_control(format!(
                "node `{}`'s control loop at {} us: {e}",
                self.node,
                now / 1_000_000
            ));
            return;
        }
        net.set_timer(now + self.inner.period_ps(), 0);
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut c = vec![("steps".to_string(), self.steps)];
        c.extend(self.inner.counters());
        c
    }
}

impl Simulation {
    /// Add a component for every switch whose program has a control loop; `port_rates_bps`
    /// are each node's ports' rates.
    pub(super) fn add_control_loops(&mut self, sc: &Scenario, port_rates_bps: &[Vec<u64>], seed: u64) {
        let mut rng = SeededRandom::new(seed ^ 0x636f_6e74_726f_6c21);
        for (i, node) in sc.nodes.iter().enumerate() {
            let node_seed = rng.next_u64();
            if node.kind != NodeKind::Switch {
                continue;
            }
            let Some((spec, params)) = sc.program_of(i) else {
                continue;
            };
            let input = ControlInput {
                node: &node.name,
                params,
                port_rates_bps: &port_rates_bps[i],
                seed: node_seed,
            };
            if let Some(inner) = spec.control_loop(&input) {
                self.add_component(Box::new(LoopComponent {
                    name: format!("control:{}", node.name),
                    node: node.name.clone(),
                    inner,
                    steps: 0,
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::control::{ControlError, ControlPlane};

    /// Reads a register that does not exist at its third step.
    struct Failing {
        steps: u64,
    }

    impl ControlLoop for Failing {
        fn period_ps(&self) -> u64 {
            10_000_000_000
        }

        fn step(&mut self, _now_ps: u64, node: &str, plane: &mut dyn ControlPlane) -> Result<(), ControlError> {
            self.steps += 1;
            if self.steps == 3 {
                plane.read_register(node, "no_such_register", 0)?;
            }
            Ok(())
        }
    }

    const NET: &str = r#"
[scenario]
name = "loop"
duration = "100ms"
[[node]]
name = "a"
kind = "host"
[[node]]
name = "s"
kind = "switch"
[[node]]
name = "b"
kind = "host"
[[link]]
a = "a"
b = "s"
rate = "10Mbps"
[[link]]
a = "s"
b = "b"
rate = "10Mbps"
[[flow]]
name = "f"
src = "a"
dst = "b"
rate = "1Mbps"
"#;

    #[test]
    fn a_failing_control_loop_ends_the_run_with_its_node_and_time() {
        let sc = Scenario::from_toml(NET, "loop.toml").unwrap();
        let mut sim = Simulation::new(&sc, &SimOptions::with_seed(1)).unwrap();
        sim.add_component(Box::new(LoopComponent {
            name: "control:s".into(),
            node: "s".into(),
            inner: Box::new(Failing { steps: 0 }),
            steps: 0,
        }));
        let e = sim.run().err().expect("the loop's error ends the run");
        let text = e.to_string();
        assert!(matches!(e, SimError::Control(_)), "{text}");
        assert!(text.contains("node `s`'s control loop at 30000 us"), "{text}");
    }
}
