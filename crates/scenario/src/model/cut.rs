//! A run cut short (`--duration`): the same experiment, stopped earlier, as ns-3's stop time
//! and htsim's `-end` stop theirs. Nothing moves in time: arrivals keep their times (so a
//! workload keeps its rate and its draws), what would begin at or after the new end does not
//! happen, and what was still going then stops there.

use super::*;

impl Scenario {
    /// The first `end_ps` of this run: flows that would start at or after `end_ps` are left
    /// out, the others stop at `end_ps` at the latest; failures from `end_ps` on are left out;
    /// rate traces are cut at `end_ps`. Everything else (ports, draws, seeds, routes) stays as
    /// the full-length scenario has it. `end_ps` is at most the scenario's duration (see
    /// [`Scenario::cut_to_checked`]).
    pub fn cut_to(&self, end_ps: u64) -> Scenario {
        let end_ps = end_ps.min(self.duration_ps);
        let mut out = self.clone();
        out.flows.retain(|f| f.start_ps < end_ps);
        for f in &mut out.flows {
            f.stop_ps = f.stop_ps.min(end_ps);
        }
        out.failures.retain(|f| f.at_ps < end_ps);
        for t in &mut out.rate_traces {
            t.points.retain(|p| p.0 < end_ps);
        }
        out.duration_ps = end_ps;
        out
    }

    /// [`Scenario::cut_to`], refusing an end after the scenario's own (a longer run would need
    /// flows, arrivals and trace points the scenario does not define) or at zero, and checking
    /// the cut scenario against the bounds a file is held to.
    pub fn cut_to_checked(&self, end_ps: u64) -> Result<Scenario, ScenarioError> {
        let ctx = Ctx { file: &self.origin };
        if end_ps == 0 {
            return Err(ctx.err("scenario.duration", "a run cut to no time at all"));
        }
        if end_ps > self.duration_ps {
            return Err(ctx.err(
                "scenario.duration",
                format!(
                    "{} is longer than the scenario ({}): a run can be cut short, not lengthened \
                     (set `scenario.duration` in the file for a longer experiment)",
                    crate::units::format_time_ps(end_ps),
                    crate::units::format_time_ps(self.duration_ps)
                ),
            ));
        }
        let out = self.cut_to(end_ps);
        out.check_bounds()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
[scenario]
name = "cut"
title = "cut short"
reproduces = "issue 45 item 10"
duration = "10s"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "h2"
kind = "host"
[[node]]
name = "s1"
kind = "switch"
[[link]]
name = "l1"
a = "h1"
b = "s1"
rate = "10Mbps"
[[link]]
a = "s1"
b = "h2"
rate = "10Mbps"
[[flow]]
name = "whole"
src = "h1"
dst = "h2"
rate = "1Mbps"
[[flow]]
name = "late"
src = "h1"
dst = "h2"
rate = "1Mbps"
start = "6s"
stop = "9s"
[[failure]]
link = "l1"
at = "8s"
"#;

    #[test]
    fn a_cut_run_keeps_every_time_and_drops_what_comes_after_the_end() {
        let sc = Scenario::from_toml(TEXT, "cut.toml").unwrap();
        let s = 1_000_000_000_000u64;
        let cut = sc.cut_to_checked(7 * s).unwrap();
        assert_eq!(cut.duration_ps, 7 * s);
        let times: Vec<(u64, u64)> = cut.flows.iter().map(|f| (f.start_ps, f.stop_ps)).collect();
        assert_eq!(
            times,
            vec![(0, 7 * s), (6 * s, 7 * s)],
            "nothing moves; stops at the end"
        );
        assert!(cut.failures.is_empty(), "the failure at 8 s is after the end");
        assert_eq!(cut.flows[1].src_port, sc.flows[1].src_port, "ports as at full length");
        let shorter = sc.cut_to_checked(5 * s).unwrap();
        assert_eq!(shorter.flows.len(), 1, "the flow starting at 6 s never starts");
        assert_eq!(
            sc.cut_to_checked(10 * s).unwrap(),
            sc,
            "the full length is the scenario"
        );
    }

    #[test]
    fn a_longer_or_empty_run_is_refused_at_the_duration() {
        let sc = Scenario::from_toml(TEXT, "cut.toml").unwrap();
        let e = sc.cut_to_checked(11_000_000_000_000).unwrap_err();
        assert_eq!(e.field, "scenario.duration");
        assert!(e.message.contains("longer than the scenario"), "{e}");
        assert!(sc.cut_to_checked(0).is_err());
    }
}
