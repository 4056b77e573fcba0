//! Link failures during a run, as a component: at each `[[failure]]`'s time the link fails;
//! `reroute_after` later the control plane installs, in every switch, the routes of the network
//! without every link failed so far (computed when the simulation is built, so a failure costs
//! no route computation during the run).

use super::component::{Component, Net};
use super::SimError;
use mpsched_core::switch::SwitchConfig;
use mpsched_scenario::Scenario;

/// The failures of a scenario and the tables to install after each.
pub struct LinkFailures {
    /// (time, scenario link, reroute time), by failure time.
    failures: Vec<(u64, usize, u64)>,
    /// Per failure, in the same order: every switch's tables with it and all earlier ones down.
    tables: Vec<Vec<(u32, SwitchConfig)>>,
    /// How many of `tables` are installed (a later failure's tables include the earlier ones,
    /// so an earlier reroute arriving late installs nothing).
    installed: usize,
    links_failed: u64,
    reroutes: u64,
    reroute_errors: u64,
}

impl LinkFailures {
    /// The failures of `sc` with their routing tables, or None if it has none.
    pub fn of(sc: &Scenario) -> Result<Option<LinkFailures>, SimError> {
        if sc.failures.is_empty() {
            return Ok(None);
        }
        let mut failures: Vec<(u64, usize, u64)> = sc
            .failures
            .iter()
            .map(|f| (f.at_ps, f.link, f.at_ps.saturating_add(f.reroute_after_ps)))
            .collect();
        failures.sort_by_key(|f| f.0);
        let mut tables = Vec::with_capacity(failures.len());
        for i in 0..failures.len() {
            let down: Vec<usize> = failures[..=i].iter().map(|f| f.1).collect();
            let w = sc.wiring_with_down(&down).map_err(SimError::Config)?;
            let switches = w
                .switches
                .into_iter()
                .enumerate()
                .filter_map(|(n, c)| c.map(|c| (n as u32, c)))
                .collect();
            tables.push(switches);
        }
        Ok(Some(LinkFailures {
            failures,
            tables,
            installed: 0,
            links_failed: 0,
            reroutes: 0,
            reroute_errors: 0,
        }))
    }
}

/// Timer tokens: failure `i` fails at token `2i`, is routed around at `2i + 1`.
impl Component for LinkFailures {
    fn name(&self) -> &str {
        "failures"
    }

    fn start(&mut self, net: &mut Net<'_>) {
        for (i, &(at, _, reroute)) in self.failures.iter().enumerate() {
            net.set_timer(at, 2 * i as u64);
            net.set_timer(reroute, 2 * i as u64 + 1);
        }
    }

    fn on_timer(&mut self, token: u64, net: &mut Net<'_>) {
        let i = (token / 2) as usize;
        if token % 2 == 0 {
            // Indices come from validation; a bad one would be a bug, and fail_link refuses it.
            if net.fail_link(self.failures[i].1).is_ok() {
                self.links_failed += 1;
            }
            return;
        }
        if i < self.installed {
            return;
        }
        for (node, cfg) in &self.tables[i] {
            // The tables come from the control plane that built these switches; a refusal
            // would be a bug, counted rather than ending the run.
            if net.update_routes(*node, cfg).is_err() {
                self.reroute_errors += 1;
            }
        }
        self.installed = i + 1;
        self.reroutes += 1;
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("links_failed".into(), self.links_failed),
            ("reroutes".into(), self.reroutes),
            ("reroute_errors".into(), self.reroute_errors),
        ]
    }
}
