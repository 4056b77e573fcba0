//! Links whose rate follows a trace (`[[rate_trace]]`), as a component: a timer per point of
//! each trace sets the link's rate (0: down until a later point).

use super::component::{Component, Net};
use mpsched_scenario::Scenario;

/// The points of every trace, by time.
pub struct RateTraces {
    /// (time, scenario link, rate in bit/s), by time.
    points: Vec<(u64, usize, u64)>,
    changes: u64,
    outages: u64,
}

impl RateTraces {
    /// The traces of `sc`, or None if it has none.
    pub fn of(sc: &Scenario) -> Option<RateTraces> {
        if sc.rate_traces.is_empty() {
            return None;
        }
        let mut points: Vec<(u64, usize, u64)> = sc
            .rate_traces
            .iter()
            .flat_map(|t| t.points.iter().map(move |&(at, r)| (at, t.link, r)))
            .collect();
        points.sort_by_key(|p| p.0);
        Some(RateTraces {
            points,
            changes: 0,
            outages: 0,
        })
    }
}

/// Timer token `i`: point `i`; each point arms the next, so the event queue holds one.
impl Component for RateTraces {
    fn name(&self) -> &str {
        "rate_traces"
    }

    fn start(&mut self, net: &mut Net<'_>) {
        if let Some(&(at, _, _)) = self.points.first() {
            net.set_timer(at, 0);
        }
    }

    fn on_timer(&mut self, token: u64, net: &mut Net<'_>) {
        let i = token as usize;
        let (_, link, rate) = self.points[i];
        if let Some(&(at, _, _)) = self.points.get(i + 1) {
            net.set_timer(at, i as u64 + 1);
        }
        // Links come from validation; a bad index would be a bug, and set_link_rate refuses it.
        if net.set_link_rate(link, rate).is_ok() {
            self.changes += 1;
            self.outages += u64::from(rate == 0);
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![("changes".into(), self.changes), ("outages".into(), self.outages)]
    }
}
