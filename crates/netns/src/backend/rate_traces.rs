//! Capacity traces on the kernel (`[[rate_trace]]`): each point sets the traced link's rate in
//! both directions at its time, as the simulator's rate-trace component does.
//!
//! A link's ends are shaped by htb class `1:1` over a leaf qdisc (`setup::shape`). A rate is
//! `tc class change` of that class (and of the leaf's `rate` where the leaf is netem). A rate of
//! 0 is an outage, as in the simulator: the leaf is deleted, which drops what it queued, and a
//! `bfifo` of no room takes its place, dropping everything offered after; the next point puts
//! the link's own leaf back the same way. The interfaces stay up, so the routes
//! and neighbours through them stay, and a sender sees loss, not an error, as over a WiFi link
//! that has lost its signal.
//!
//! The points are applied by the run's sampling loop (it wakes every 5 ms) with `tc`, one
//! process per end: a change lands within about 10 ms of its time. Links of several queues and
//! links a switch queues for itself are refused before anything is made ([`check`]).

use super::setup::{leaf_qdisc, netem_limit_pkts};
use super::{Build, Live, NetnsError, MIN_KERNEL_RATE_BPS};
use mpsched_scenario::{NodeKind, Scenario};
use mpsched_topo::Wiring;
use std::time::Duration;

/// Refuse traces the kernel's shaping cannot follow: on a link of several queues (each has its
/// own class), or below htb's slowest rate.
pub(super) fn check(sc: &Scenario) -> Result<(), String> {
    for (i, t) in sc.rate_traces.iter().enumerate() {
        let l = &sc.links[t.link];
        let name = l.name.as_deref().unwrap_or("?");
        if l.queues > 1 {
            return Err(format!(
                "rate_trace[{i}] traces link `{name}` of {} queues; on the kernel a trace sets a one-queue link's rate \
                 (each queue has its own htb class); use --backend sim",
                l.queues
            ));
        }
        if let Some(&(at, r)) = t.points.iter().find(|&&(_, r)| r > 0 && r < MIN_KERNEL_RATE_BPS) {
            return Err(format!(
                "rate_trace[{i}] ({}): {r} bit/s at {:.3} s; the kernel's htb shapes at least {MIN_KERNEL_RATE_BPS} \
                 bit/s (0 is an outage)",
                t.source,
                at as f64 / 1e12
            ));
        }
    }
    Ok(())
}

/// One end of a traced link: what `tc` needs to change it.
struct End {
    node: usize,
    ifname: String,
    leaf_limit_pkts: u32,
    delay_ps: u64,
}

/// The traces' points in time order, and where the next is.
pub(super) struct TracePlayer {
    /// (when, link, rate bit/s), by time.
    points: Vec<(Duration, usize, u64)>,
    next: usize,
    /// Per scenario link: its two ends (traced links only).
    ends: Vec<Vec<End>>,
    /// Per scenario link: whether it is in an outage now.
    down: Vec<bool>,
    netem: bool,
    /// Changes applied, outages among them.
    pub changes: u64,
    /// Outages begun.
    pub outages: u64,
}

impl TracePlayer {
    /// The points of every trace of `sc`, with each traced link's ends as `setup` shaped them.
    pub(super) fn new(b: &Build<'_>) -> TracePlayer {
        let (sc, w) = (b.sc, b.w);
        let mut points: Vec<(Duration, usize, u64)> = sc
            .rate_traces
            .iter()
            .flat_map(|t| {
                t.points
                    .iter()
                    .map(|&(at, r)| (Duration::from_nanos(at / 1000), t.link, r))
            })
            .collect();
        points.sort_by_key(|p| p.0);
        let mut ends: Vec<Vec<End>> = (0..sc.links.len()).map(|_| Vec::new()).collect();
        for t in &sc.rate_traces {
            ends[t.link] = link_ends(b, w, t.link);
        }
        TracePlayer {
            points,
            next: 0,
            ends,
            down: vec![false; sc.links.len()],
            netem: b.have_netem,
            changes: 0,
            outages: 0,
        }
    }

    /// Apply every point due at `now` (time since time zero).
    pub(super) fn play_due(&mut self, live: &Live, now: Duration) -> Result<(), NetnsError> {
        while let Some(&(at, link, rate)) = self.points.get(self.next) {
            if at > now {
                break;
            }
            self.next += 1;
            for e in &self.ends[link] {
                self.apply(live, e, rate, self.down[link])?;
            }
            self.changes += 1;
            self.outages += u64::from(rate == 0 && !self.down[link]);
            self.down[link] = rate == 0;
        }
        Ok(())
    }

    fn apply(&self, live: &Live, e: &End, rate_bps: u64, was_down: bool) -> Result<(), NetnsError> {
        let n = &live.nss[e.node];
        let ifname = e.ifname.as_str();
        if rate_bps == 0 {
            n.exec("tc", &["qdisc", "del", "dev", ifname, "parent", "1:1", "handle", "10:"])?;
            n.exec(
                "tc",
                &[
                    "qdisc", "add", "dev", ifname, "parent", "1:1", "handle", "10:", "bfifo", "limit", "0",
                ],
            )?;
            return Ok(());
        }
        let rate = format!("{rate_bps}bit");
        n.exec(
            "tc",
            &[
                "class", "change", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate", &rate, "ceil",
                &rate, "quantum", "1514",
            ],
        )?;
        if was_down || self.netem {
            // Back from an outage the link's own leaf returns (a new qdisc); netem's rate moves too.
            let verb = if was_down { "add" } else { "change" };
            if was_down {
                n.exec("tc", &["qdisc", "del", "dev", ifname, "parent", "1:1", "handle", "10:"])?;
            }
            let leaf = leaf_qdisc(rate_bps, e.leaf_limit_pkts, e.delay_ps, self.netem);
            let mut args = vec!["qdisc", verb, "dev", ifname, "parent", "1:1", "handle", "10:"];
            args.extend(leaf.iter().map(String::as_str));
            n.exec("tc", &args)?;
        }
        Ok(())
    }
}

/// Link `li`'s two ends, with the leaf limit `setup::links` gave each.
fn link_ends(b: &Build<'_>, w: &Wiring, li: usize) -> Vec<End> {
    let (sc, l) = (b.sc, &b.sc.links[li]);
    [l.a, l.b]
        .into_iter()
        .filter_map(|node| {
            let port = w.ports[node].iter().position(|e| e.link == li)?;
            let delay_ps = if b.have_netem { l.delay_ps } else { 0 };
            let in_rate_bps: u64 = w.ports[node].iter().map(|e| sc.links[e.link].rate_bps).sum();
            let queue_pkts = l.queue_pkts_at(sc.nodes[node].kind == NodeKind::Host);
            Some(End {
                node,
                ifname: format!("e{port}"),
                leaf_limit_pkts: netem_limit_pkts(queue_pkts, in_rate_bps, delay_ps, b.ref_frame),
                delay_ps,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_ue() -> Scenario {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/atsss");
        let text = std::fs::read_to_string(dir.join("one-ue.toml")).unwrap();
        Scenario::from_toml(&text, "one-ue.toml").unwrap()
    }

    #[test]
    fn traces_the_kernel_cannot_shape_are_refused_by_name() {
        let sc = one_ue();
        check(&sc).unwrap();
        assert!(
            sc.rate_traces[0].points.iter().any(|p| p.1 < 10_000_000),
            "the trace falls"
        );
        let mut queues = sc.clone();
        queues.links[queues.rate_traces[0].link].queues = 2;
        let e = check(&queues).unwrap_err();
        assert!(e.contains("rate_trace[0] traces link `wifi` of 2 queues"), "{e}");
        let mut slow = sc.clone();
        slow.rate_traces[0].points.push((29_000_000_000_000, 4));
        let e = check(&slow).unwrap_err();
        assert!(e.contains("4 bit/s at 29.000 s"), "{e}");
        let mut outage = sc;
        outage.rate_traces[0].points.push((29_000_000_000_000, 0));
        check(&outage).unwrap();
    }
}
