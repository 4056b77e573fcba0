//! Values that are legal but most likely a mistake: said on standard error before a run, never
//! refused (a user may mean them).

use super::*;
use crate::units::{format_rate_bps, format_time_ps};

/// A send jitter above this share of the run delays packets by more than timer noise would
/// (the jitter is meant as microseconds of it).
const SEND_JITTER_WARN_SHARE: u64 = 100;

impl Scenario {
    /// What in the scenario is legal but probably not meant, each as `field: why`.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let capacities = host_capacities_bps(&self.links, self.nodes.len());
        for (i, f) in self.flows.iter().enumerate() {
            if f.protocol != Protocol::Udp {
                continue;
            }
            let capacity = capacities[f.src];
            if f.rate_bps > capacity {
                out.push(format!(
                    "flow[{i}].rate: `{}` offers {} where its host `{}`'s links carry {}: the excess is dropped in the \
                     host's own queue",
                    f.name,
                    format_rate_bps(f.rate_bps),
                    self.nodes[f.src].name,
                    format_rate_bps(capacity)
                ));
            }
        }
        if self.send_jitter_ps > 0 && self.send_jitter_ps >= self.duration_ps / SEND_JITTER_WARN_SHARE {
            out.push(format!(
                "scenario.send_jitter: {} delays each packet by up to {}% of the run; it models a sender's timer \
                 noise (microseconds)",
                format_time_ps(self.send_jitter_ps),
                self.send_jitter_ps * 100 / self.duration_ps
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts joined by a link of `link_rate`, a UDP flow of `rate`.
    fn text(scenario_keys: &str, link_rate: &str, rate: &str) -> String {
        format!(
            r#"
            [scenario]
            name = "w"
            duration = "10s"
            {scenario_keys}
            [[node]]
            name = "a"
            kind = "host"
            [[node]]
            name = "b"
            kind = "host"
            [[link]]
            a = "a"
            b = "b"
            rate = "{link_rate}"
            [[flow]]
            name = "f"
            src = "a"
            dst = "b"
            rate = "{rate}"
            "#
        )
    }

    fn with(scenario_keys: &str, rate: &str) -> Scenario {
        Scenario::from_toml(&text(scenario_keys, "10Mbps", rate), "w.toml").unwrap()
    }

    #[test]
    fn a_plain_scenario_has_no_warnings() {
        assert!(with("", "8Mbps").warnings().is_empty());
    }

    #[test]
    fn a_flow_above_its_hosts_links_is_warned_of() {
        let w = with("", "20Mbps").warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("flow[0].rate: `f` offers 20Mbps where its host `a`'s links carry 10Mbps"),
            "{w:?}"
        );
    }

    #[test]
    fn a_flow_a_hundred_times_above_its_hosts_links_is_refused() {
        let e = Scenario::from_toml(&text("", "54Mbps", "100Tbps"), "w.toml").unwrap_err();
        assert_eq!(e.field, "flow[0].rate");
        assert!(
            e.message
                .contains("100Tbps is over 100 times what `a`'s links carry (54Mbps)"),
            "{e}"
        );
    }

    #[test]
    fn a_send_jitter_of_a_large_share_of_the_run_is_warned_of() {
        assert!(with("send_jitter = \"10us\"", "8Mbps").warnings().is_empty());
        let w = with("send_jitter = \"1s\"", "8Mbps").warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("scenario.send_jitter: 1s delays each packet by up to 10% of the run"),
            "{w:?}"
        );
    }
}
