//! AFMT (Sailer and Hähner, "An Adaptive Flow-Aware Packet Scheduling Algorithm for Multipath
//! Tunnelling"): Algorithm 1 (flow awareness) and Algorithm 2 (adaptivity).
//!
//! A packet of a known flow may leave its flow's last subtunnel `s_last` only for a subtunnel
//! `s_i` with `s_i.SRTT + delta > s_last.SRTT`, delta being the time since the flow's last
//! packet: then it arrives after that packet and is not reordered. Among the applicable
//! subtunnels (and among all of them for a new flow) it takes the one with the smallest weighted
//! fill `(fill + size) * SRTT / cwnd`, compared by cross-multiplication in 128-bit integers.

use super::{FlowEntry, FlowKey, FlowTable, SubtunnelView, TunnelScheduler};
use crate::MAX_PATHS;

/// AFMT.
#[derive(Debug)]
pub struct Afmt {
    table: FlowTable,
    new_flows: u64,
    moves: u64,
    stays: u64,
}

impl Afmt {
    /// AFMT with a flow table of `flow_table_entries` flows.
    pub fn new(flow_table_entries: u32) -> Self {
        Afmt {
            table: FlowTable::new(flow_table_entries),
            new_flows: 0,
            moves: 0,
            stays: 0,
        }
    }

    /// The flow table.
    pub fn table(&self) -> &FlowTable {
        &self.table
    }
}

/// Whether `a`'s weighted fill is below `b`'s: `(fa + size) * ra / ca < (fb + size) * rb / cb`,
/// as `(fa + size) * ra * cb < (fb + size) * rb * ca`. A zero window counts as one byte, a
/// zero SRTT as one nanosecond. So that the product fits in 128 bits, fill + size saturates at
/// 2^47 bytes, SRTT at 2^40 ns (18 minutes) and the window at 2^40 bytes; no real subtunnel
/// comes near.
#[inline]
pub fn weighted_fill_less(a: &SubtunnelView, b: &SubtunnelView, size: u32) -> bool {
    const FILL_MAX: u64 = 1 << 47;
    const SRTT_MAX: u64 = 1 << 40;
    const CWND_MAX: u64 = 1 << 40;
    let load = |v: &SubtunnelView| {
        u128::from(v.fill_bytes.saturating_add(u64::from(size)).min(FILL_MAX))
            * u128::from(v.srtt_ns.clamp(1, SRTT_MAX))
    };
    let cwnd = |v: &SubtunnelView| u128::from(v.cwnd_bytes.clamp(1, CWND_MAX));
    load(a) * cwnd(b) < load(b) * cwnd(a)
}

/// Algorithm 2: the subtunnel of least weighted fill among those `allowed`; ties to the lowest
/// index.
#[inline]
fn select_adaptively(subtunnels: &[SubtunnelView], allowed: u32, size: u32) -> usize {
    let mut best = usize::MAX;
    for (i, v) in subtunnels.iter().enumerate().take(MAX_PATHS) {
        if allowed & (1 << i) == 0 {
            continue;
        }
        if best == usize::MAX || weighted_fill_less(v, &subtunnels[best], size) {
            best = i;
        }
    }
    best
}

impl TunnelScheduler for Afmt {
    fn select(&mut self, flow: &FlowKey, size: u32, now_ns: u64, subtunnels: &[SubtunnelView]) -> usize {
        let n = subtunnels.len().min(MAX_PATHS);
        debug_assert!(
            (0..n).all(|i| subtunnels[..i].iter().all(|w| w.path != subtunnels[i].path)),
            "each view names its own subtunnel"
        );
        let all = (1u32 << n) - 1;
        // The flow table keeps the subtunnel's number in the tunnel (`SubtunnelView::path`),
        // not its position among those offered: a daemon offers only the paths that are up.
        let last = self
            .table
            .get(flow)
            .and_then(|e| Some((subtunnels[..n].iter().position(|v| v.path == e.subtunnel)?, e.last_ns)));
        let chosen = match last {
            Some((last, last_ns)) => {
                let delta = now_ns.saturating_sub(last_ns);
                let last_srtt = subtunnels[last].srtt_ns;
                let mut allowed = 1u32 << last;
                for (i, v) in subtunnels.iter().enumerate().take(n) {
                    if v.srtt_ns.saturating_add(delta) > last_srtt {
                        allowed |= 1 << i;
                    }
                }
                let s = select_adaptively(subtunnels, allowed, size);
                if s == last {
                    self.stays += 1;
                } else {
                    self.moves += 1;
                }
                s
            }
            _ => {
                self.new_flows += 1;
                select_adaptively(subtunnels, all, size)
            }
        };
        self.table.insert(
            *flow,
            FlowEntry {
                subtunnel: subtunnels.get(chosen).map_or(chosen as u8, |v| v.path),
                last_ns: now_ns,
            },
        );
        chosen
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![
            ("afmt_new_flows".into(), self.new_flows),
            ("afmt_moves".into(), self.moves),
            ("afmt_stays".into(), self.stays),
            ("afmt_evictions".into(), self.table.evictions()),
            ("afmt_flows_held".into(), self.table.len() as u64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(fill: u64, cwnd: u64, srtt_ms: u64) -> SubtunnelView {
        SubtunnelView {
            fill_bytes: fill,
            cwnd_bytes: cwnd,
            srtt_ns: srtt_ms * 1_000_000,
            ..SubtunnelView::default()
        }
    }

    /// The views numbered as their tunnel's subtunnels 0, 1, ...
    fn ids<const N: usize>(mut s: [SubtunnelView; N]) -> [SubtunnelView; N] {
        for (i, v) in s.iter_mut().enumerate() {
            v.path = i as u8;
        }
        s
    }

    fn key(n: u16) -> FlowKey {
        FlowKey {
            src_ip: 1,
            dst_ip: 2,
            src_port: n,
            dst_port: 80,
            proto: 6,
        }
    }

    #[test]
    fn a_new_flow_takes_the_least_weighted_fill() {
        let mut a = Afmt::new(16);
        // Weighted fills: (0 + 1000) * 10 / 10000 = 1; (0 + 1000) * 40 / 80000 = 0.5; 20000*5/10000 = 10.5
        let s = ids([v(0, 10_000, 10), v(0, 80_000, 40), v(20_000, 10_000, 5)]);
        assert_eq!(a.select(&key(1), 1000, 0, &s), 1);
    }

    #[test]
    fn a_known_flow_moves_only_where_it_cannot_overtake_itself() {
        let mut a = Afmt::new(16);
        let mut s = ids([v(0, 10_000, 10), v(0, 80_000, 40)]);
        assert_eq!(a.select(&key(1), 1000, 0, &s), 1, "new flow: least weighted fill");
        // Now subtunnel 0 is much better, but it is 30 ms faster: within 30 ms of the last
        // packet the flow must stay on 1.
        s[1].fill_bytes = 500_000;
        assert_eq!(a.select(&key(1), 1000, 10_000_000, &s), 1);
        assert_eq!(a.select(&key(1), 1000, 39_000_000, &s), 1, "delta 29 ms: 10 + 29 < 40");
        assert_eq!(a.select(&key(1), 1000, 70_000_000, &s), 0, "delta 31 ms: 10 + 31 > 40");
        // Moving to a slower subtunnel is always allowed.
        s[0].fill_bytes = 10_000_000;
        assert_eq!(a.select(&key(1), 1000, 70_000_001, &s), 1);
        let c: std::collections::BTreeMap<_, _> = a.counters().into_iter().collect();
        assert_eq!((c["afmt_new_flows"], c["afmt_moves"], c["afmt_stays"]), (1, 2, 2));
    }

    #[test]
    fn a_flow_keeps_its_subtunnel_when_another_one_is_no_longer_offered() {
        let mut a = Afmt::new(16);
        let s = ids([v(900_000, 10_000, 10), v(0, 10_000, 10), v(0, 10_000, 10)]);
        assert_eq!(a.select(&key(1), 1000, 0, &s), 1);
        // Subtunnel 0 goes down: the daemon offers 1 and 2, at positions 0 and 1. The flow
        // stays on subtunnel 1 (position 0), though 2 looks as good.
        let up = [s[1], s[2]];
        assert_eq!(a.select(&key(1), 1000, 1_000, &up), 0);
        let c: std::collections::BTreeMap<_, _> = a.counters().into_iter().collect();
        assert_eq!((c["afmt_new_flows"], c["afmt_stays"]), (1, 1));
        // Its subtunnel gone, the flow is placed as a new one.
        assert_eq!(a.select(&key(1), 1000, 2_000, &[s[0], s[2]]), 1);
        let c: std::collections::BTreeMap<_, _> = a.counters().into_iter().collect();
        assert_eq!(c["afmt_new_flows"], 2);
    }

    #[test]
    fn weighted_fill_comparison_is_exact_up_to_the_saturation_limits() {
        // One byte of difference at the largest fill, SRTT and window still decides.
        let a = SubtunnelView {
            fill_bytes: (1 << 46) + 1,
            cwnd_bytes: (1 << 40) - 1,
            srtt_ns: (1 << 40) - 1,
            ..SubtunnelView::default()
        };
        let b = SubtunnelView {
            fill_bytes: 1 << 46,
            ..a
        };
        assert!(weighted_fill_less(&b, &a, 0));
        assert!(!weighted_fill_less(&a, &b, 0));
        // Extremes do not overflow.
        let m = SubtunnelView {
            fill_bytes: u64::MAX / 2,
            cwnd_bytes: u64::MAX,
            srtt_ns: u64::MAX,
            ..SubtunnelView::default()
        };
        assert!(!weighted_fill_less(&m, &m, u32::MAX));
    }
}
