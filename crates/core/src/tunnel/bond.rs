//! Bonding: one flow gets the sum of unequal paths (the idea of ECF, BLEST and DEMS for MPTCP:
//! schedule by each path's rate and delay, applied per packet inside a tunnel).
//!
//! With `r` a path's delivery rate (bytes/s, measured from the tunnel's acknowledgements), `F`
//! its bytes in flight and `m` its minimum RTT, the pipe holds `r * m` bytes and the rest waits
//! in a queue that drains in `q = max(0, F / r - m)`.
//!
//! - While no path is queued, packets are dealt out in proportion to the rates (smooth
//!   weighted round robin), so every path carries its share from a flow's first packets: the
//!   flow's RTT is the slower path's from the start (the receiver's reordering buffer holds
//!   what the faster path brings early). Sending on the nearest path first and spilling over
//!   once it queues would make the RTT jump as the flow speeds up, and TCP's slow start reads
//!   such a jump as a full pipe and stops (HyStart): one CUBIC flow then stayed near a
//!   quarter of the sum for seconds.
//! - Once a path is queued, each packet goes where `q + size / r` is least, so the paths queue
//!   about as long, a path whose rate was overestimated gets less, and the shares follow the
//!   rates whatever the delays.
//!
//! A path whose rate is not measured yet (it has not been queued) counts as the fastest
//! measured one, so it is given enough to be measured; with none measured every path counts
//! alike (round robin). Between paths that score alike, the one with fewer bytes in flight.

use super::{FlowKey, SubtunnelView, TunnelScheduler};
use crate::MAX_PATHS;

const NS_PER_S: u128 = 1_000_000_000;

/// The bonding scheduler.
#[derive(Clone, Debug, Default)]
pub struct Bond {
    /// Smooth weighted round robin's running credit per path (by [`SubtunnelView::path`]),
    /// bytes/s units.
    credit: [i128; MAX_PATHS],
    /// Packets sent on each path (by [`SubtunnelView::path`]).
    chosen: [u64; MAX_PATHS],
    /// Packets dealt by weight (no path queued).
    dealt: u64,
}

/// Where a path's state is kept.
fn slot(v: &SubtunnelView) -> usize {
    usize::from(v.path) % MAX_PATHS
}

/// How long the bytes queued on `v` beyond its pipe take to drain at `rate` bytes per second
/// (> 0), ns.
pub fn queue_delay_ns(v: &SubtunnelView, rate: u64) -> u128 {
    let drain = u128::from(v.in_flight_bytes) * NS_PER_S / u128::from(rate.max(1));
    drain.saturating_sub(u128::from(v.min_rtt_ns))
}

impl Bond {
    /// Smooth weighted round robin over the paths offered (each one's credit grows by its
    /// weight, the largest credit sends and pays the sum): shares exactly in proportion,
    /// interleaved evenly. A path not offered (down) keeps its credit until it is back.
    fn deal(&mut self, views: &[SubtunnelView], weights: &[u64]) -> usize {
        let mut best = 0;
        for (i, &w) in weights.iter().enumerate() {
            let c = &mut self.credit[slot(&views[i])];
            *c += i128::from(w);
            if *c > self.credit[slot(&views[best])] {
                best = i;
            }
        }
        self.credit[slot(&views[best])] -= weights.iter().map(|&w| i128::from(w)).sum::<i128>();
        best
    }
}

impl TunnelScheduler for Bond {
    fn select(&mut self, _flow: &FlowKey, size: u32, _now_ns: u64, subtunnels: &[SubtunnelView]) -> usize {
        let views = &subtunnels[..subtunnels.len().min(MAX_PATHS)];
        if views.is_empty() {
            return 0;
        }
        debug_assert!(
            views
                .iter()
                .enumerate()
                .all(|(i, v)| views[..i].iter().all(|w| w.path != v.path)),
            "each view names its own path"
        );
        let fastest = views
            .iter()
            .map(|v| v.delivery_rate_bytes_per_s)
            .max()
            .unwrap_or(0)
            .max(1);
        let mut rates = [0u64; MAX_PATHS];
        for (r, v) in rates.iter_mut().zip(views) {
            *r = match v.delivery_rate_bytes_per_s {
                0 => fastest,
                r => r,
            };
        }
        let rates = &rates[..views.len()];
        let queued = views.iter().zip(rates).any(|(v, &r)| queue_delay_ns(v, r) > 0);
        let k = if queued {
            (0..views.len())
                .min_by_key(|&i| {
                    let score =
                        queue_delay_ns(&views[i], rates[i]) + u128::from(size) * NS_PER_S / u128::from(rates[i]);
                    (score, views[i].in_flight_bytes)
                })
                .unwrap_or(0)
        } else {
            self.dealt += 1;
            self.deal(views, rates)
        };
        self.chosen[slot(&views[k])] += 1;
        k
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut c: Vec<(String, u64)> = self
            .chosen
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(i, &n)| (format!("bond_path{i}_packets"), n))
            .collect();
        c.push(("bond_dealt_by_weight".into(), self.dealt));
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const MBIT: u64 = 125_000;

    fn path(rate_mbit: u64, min_rtt_ms: u64) -> SubtunnelView {
        SubtunnelView {
            path: 0,
            min_rtt_ns: min_rtt_ms * MS,
            delivery_rate_bytes_per_s: rate_mbit * MBIT,
            ..SubtunnelView::default()
        }
    }

    /// The views numbered as their tunnel's paths 0, 1, ...
    fn ids<const N: usize>(mut p: [SubtunnelView; N]) -> [SubtunnelView; N] {
        for (i, v) in p.iter_mut().enumerate() {
            v.path = i as u8;
        }
        p
    }

    fn key() -> FlowKey {
        FlowKey {
            src_ip: 1,
            dst_ip: 2,
            src_port: 3,
            dst_port: 4,
            proto: 6,
        }
    }

    /// Send `packets` back to back through `paths` (in-flight bytes grow by what each path is
    /// given and drain at its rate between packets spaced `gap_ns`); the share each carried.
    fn shares(paths: &mut [SubtunnelView], packets: usize, gap_ns: u64) -> Vec<f64> {
        let mut s = Bond::default();
        let mut count = vec![0u64; paths.len()];
        for _ in 0..packets {
            let k = s.select(&key(), 1500, 0, paths);
            count[k] += 1;
            paths[k].in_flight_bytes += 1500;
            for p in paths.iter_mut() {
                let drained = p.delivery_rate_bytes_per_s * gap_ns / 1_000_000_000;
                let pipe = p.delivery_rate_bytes_per_s * p.min_rtt_ns / 1_000_000_000;
                // What is queued beyond the pipe drains at the rate; the pipe stays full.
                p.in_flight_bytes = p
                    .in_flight_bytes
                    .saturating_sub(drained)
                    .max(pipe.min(p.in_flight_bytes));
            }
        }
        count.iter().map(|&c| c as f64 / packets as f64).collect()
    }

    #[test]
    fn a_saturating_sender_splits_in_proportion_to_the_rates_whatever_the_delays() {
        // 60 Mbit/s offered over 40 + 20 Mbit/s, one-way delays 5 and 30 ms.
        let mut p = ids([path(40, 10), path(20, 60)]);
        let gap = 1500 * 1_000_000_000 / (60 * MBIT);
        let s = shares(&mut p, 60_000, gap);
        assert!((s[0] - 2.0 / 3.0).abs() < 0.02, "{s:?}");
        let mut p = ids([path(50, 10), path(10, 60), path(10, 60)]);
        let gap = 1500 * 1_000_000_000 / (70 * MBIT);
        let s = shares(&mut p, 70_000, gap);
        assert!((s[0] - 5.0 / 7.0).abs() < 0.02 && (s[1] - s[2]).abs() < 0.02, "{s:?}");
    }

    #[test]
    fn unqueued_paths_are_dealt_in_proportion_to_their_rates_and_unmeasured_ones_alike() {
        let mut s = Bond::default();
        let p = ids([path(40, 10), path(20, 60)]);
        let got: Vec<usize> = (0..6).map(|_| s.select(&key(), 1500, 0, &p)).collect();
        assert_eq!(got, [0, 1, 0, 0, 1, 0], "2:1, interleaved");
        // Nothing measured: round robin. One measured: the other counts as that fast.
        let mut s = Bond::default();
        let p = ids([path(0, 10), path(0, 60), path(0, 60)]);
        let got: Vec<usize> = (0..6).map(|_| s.select(&key(), 1500, 0, &p)).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);
        let mut s = Bond::default();
        let p = ids([path(10, 10), path(0, 60)]);
        let got: Vec<usize> = (0..4).map(|_| s.select(&key(), 1500, 0, &p)).collect();
        assert_eq!(got, [0, 1, 0, 1]);
        let c: std::collections::BTreeMap<_, _> = s.counters().into_iter().collect();
        assert_eq!(c["bond_dealt_by_weight"], 4);
    }

    #[test]
    fn a_queued_path_gets_less_until_the_queues_are_alike() {
        let mut s = Bond::default();
        // Path 0 is queued 20 ms beyond its pipe; path 1 not at all: path 1 takes packets
        // until its queue is as long.
        let mut p = ids([path(40, 10), path(40, 60)]);
        p[0].in_flight_bytes = 5_000_000 * 30 / 1000;
        p[1].in_flight_bytes = 5_000_000 * 60 / 1000;
        let mut got = Vec::new();
        for _ in 0..200 {
            let k = s.select(&key(), 1500, 0, &p);
            p[k].in_flight_bytes += 1500;
            got.push(k);
        }
        let first_zero = got.iter().position(|&k| k == 0).unwrap();
        assert_eq!(first_zero, 67, "20 ms at 5 MB/s is 100 kB: 66.7 packets");
        let tail = &got[first_zero..];
        let ones = tail.iter().filter(|&&k| k == 1).count();
        assert!(ones.abs_diff(tail.len() - ones) <= 1, "then alternately: {tail:?}");
    }

    #[test]
    fn a_path_that_goes_down_leaves_the_others_their_shares_and_the_counts_their_names() {
        let mut s = Bond::default();
        let p = ids([path(10, 10), path(10, 10), path(20, 10)]);
        for _ in 0..4 {
            s.select(&key(), 1500, 0, &p);
        }
        // Path 0 goes down: the views offered are paths 1 and 2, at positions 0 and 1. Path
        // 2 (twice as fast) gets two of every three, and the counts name the real paths.
        let up = [p[1], p[2]];
        let got: Vec<u8> = (0..30).map(|_| up[s.select(&key(), 1500, 0, &up)].path).collect();
        assert_eq!(got.iter().filter(|&&k| k == 2).count(), 20, "{got:?}");
        let c: std::collections::BTreeMap<_, _> = s.counters().into_iter().collect();
        assert_eq!(c["bond_path0_packets"], 1, "{c:?}");
        assert_eq!(c["bond_path1_packets"] + c["bond_path2_packets"], 33, "{c:?}");
        assert_eq!(c["bond_path2_packets"], 22, "{c:?}");
    }

    #[test]
    fn extremes_do_not_overflow() {
        let v = SubtunnelView {
            in_flight_bytes: u64::MAX,
            min_rtt_ns: u64::MAX,
            delivery_rate_bytes_per_s: 1,
            ..SubtunnelView::default()
        };
        assert!(queue_delay_ns(&v, 1) > 0);
        assert!(queue_delay_ns(&v, 0) > 0);
        let mut s = Bond::default();
        assert!(s.select(&key(), u32::MAX, 0, &[v, SubtunnelView { path: 1, ..v }]) < 2);
    }
}
