//! The results schema: `summary.json`, shared by every backend.
//!
//! Documented in `docs/results.md`. Floating-point figures are rounded to fixed decimals before
//! they are written so that equal runs give byte-identical files.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Round to `d` decimals (for stable, readable output).
pub fn round(x: f64, d: i32) -> f64 {
    let m = 10f64.powi(d);
    (x * m).round() / m
}

/// One flow's figures in one run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FlowFigures {
    /// Flow name.
    pub id: String,
    /// Offered rate, UDP payload, Mbit/s (iperf's `-b`).
    pub offered_mbps: f64,
    /// Payload that arrived while the flow was active, over its active time, Mbit/s.
    pub delivered_mbps: f64,
    /// Packets lost, percent of packets sent; None where the backend does not measure it
    /// (a TCP flow on netns: iperf3 counts retransmissions, not losses).
    pub loss_pct: Option<f64>,
    /// Mean one-way delay of delivered packets, ms; None where the backend does not measure
    /// it (netns: iperf3 reports jitter, not delay).
    pub mean_owd_ms: Option<f64>,
    /// Packets that arrived after a later-sent packet of the same flow, percent of delivered;
    /// None where the backend does not measure it (a TCP flow on netns: iperf3 counts no
    /// segments' order).
    pub reordered_pct: Option<f64>,
    /// Packets sent.
    pub sent_pkts: u64,
    /// Packets delivered.
    pub delivered_pkts: u64,
    /// Delivered payload per path at the confluence point, Mbit/s over the active time (only for
    /// split flows).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_path_mbps: BTreeMap<String, f64>,
    /// Payload delivered to the receiving application over the whole run, MiB (2^20 bytes).
    #[serde(default)]
    pub delivered_mib: f64,
    /// TCP figures (TCP flows only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpFigures>,
}

/// A TCP flow's transport figures. The simulator measures every one; the kernel's tools
/// measure some, and a figure a backend did not measure is None (`null` in `summary.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct TcpFigures {
    /// Congestion control.
    pub cc: String,
    /// Segments retransmitted.
    pub retransmitted_segments: Option<u64>,
    /// Fast retransmits (entries into loss recovery); None where not measured (netns).
    pub fast_retransmits: Option<u64>,
    /// Retransmission timeouts; None where not measured (netns).
    pub rtos: Option<u64>,
    /// ECN window reductions; None where not measured (netns).
    pub ecn_reductions: Option<u64>,
    /// Segments that arrived with CE; None where not measured (netns).
    pub ce_segments: Option<u64>,
    /// Smoothed RTT at the end, ms.
    pub srtt_ms: Option<f64>,
    /// Mean of the per-interval congestion window samples, KiB.
    pub mean_cwnd_kib: Option<f64>,
    /// Time from start to the last byte delivered (fixed-size transfers), s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_s: Option<f64>,
    /// Request / response: exchanges completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<u64>,
    /// Request / response: mean time from request sent to response received, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_response_ms: Option<f64>,
    /// MPTCP: each subflow's figures (the flow's own are their sums, its goodput the
    /// connection's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subflows: Vec<SubflowFigures>,
    /// MPTCP: the connection level's own counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<MptcpFigures>,
}

/// An MPTCP connection's counters at the connection level.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct MptcpFigures {
    /// Mappings sent again on another subflow after a timeout.
    pub reinjected_mappings: u64,
    /// Bytes that arrived at the receiver after they were delivered or while they waited
    /// (the second copy of reinjected data, among others).
    pub duplicate_bytes: u64,
    /// Bytes that arrived out of order at the connection level and waited.
    pub out_of_order_bytes: u64,
    /// Handshake segments refused (token, HMAC, keys) and data refused on a subflow whose
    /// handshake was not checked.
    pub refused_segments: u64,
}

/// One MPTCP subflow's figures.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct SubflowFigures {
    /// Its 5-tuple's ends, `address:port -> address:port`.
    pub id: String,
    /// Payload bytes acknowledged on it over the flow's active time, Mbit/s.
    pub acked_mbps: f64,
    /// Segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Segments retransmitted.
    pub retransmitted_segments: u64,
    /// Retransmission timeouts; None where not measured (netns: `ss` shows no count).
    pub rtos: Option<u64>,
    /// Smoothed RTT at the end, ms.
    pub srtt_ms: f64,
    /// Congestion window at the end, KiB.
    pub cwnd_kib: f64,
}

/// A multipath tunnel's figures, per direction (measured at that direction's exit).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TunnelFigures {
    /// Tunnel name and direction, as `mt.down` (entry to exit as declared) or `mt.up`.
    pub id: String,
    /// Scheduler.
    pub scheduler: String,
    /// Subtunnel transport (`tcp` or `udp`).
    pub transport: String,
    /// Payload packets the entry scheduled.
    pub scheduled_pkts: u64,
    /// Payload packets the exit decapsulated and forwarded.
    pub forwarded_pkts: u64,
    /// Forwarded packets that left the exit after a packet of the same flow that had entered
    /// the tunnel later (RFC 4737 reordered packets, on the order of entry).
    pub reordered_pkts: u64,
    /// `reordered_pkts` in percent of `forwarded_pkts`.
    pub reordered_pct: f64,
    /// Payload packets dropped at the entry because the subtunnel's send buffer was full.
    pub send_buffer_drops: u64,
    /// Packets scheduled per subtunnel (path name).
    pub per_subtunnel_pkts: BTreeMap<String, u64>,
    /// The subtunnels' path names in the tunnel's order (the first the preferred one, for the
    /// ATSSS schedulers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subtunnels: Vec<String>,
    /// Per subtunnel, where the tunnel acknowledges its paths (ATSSS): RTT and loss.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_subtunnel: BTreeMap<String, SubtunnelFigures>,
    /// The exit's reordering buffer, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_buffer: Option<ReorderFigures>,
    /// The entry's scheduler's own counters, by name (AFMT: `afmt_moves`, `afmt_stays`,
    /// `afmt_new_flows`...; the kernel's where its daemon schedules).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scheduler_counters: BTreeMap<String, u64>,
}

/// One acknowledged subtunnel in one direction, as its entry measured it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SubtunnelFigures {
    /// Smallest RTT sample, ms.
    pub min_rtt_ms: f64,
    /// Mean of the RTT samples (one per acknowledgement), ms.
    pub mean_rtt_ms: f64,
    /// `mean_rtt_ms / min_rtt_ms`: how far queueing took the path's RTT above its minimum.
    pub rtt_inflation: f64,
    /// Datagrams the far end reported lost.
    pub lost_pkts: u64,
    /// `lost_pkts` in percent of the datagrams sent on it.
    pub loss_pct: f64,
}

/// A tunnel exit's reordering buffer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ReorderFigures {
    /// Packets that waited for a gap.
    pub held_pkts: u64,
    /// Packets that came after their place was given up (left out of order).
    pub late_pkts: u64,
    /// Gaps given up by the timeout.
    pub timeouts: u64,
    /// Most packets waiting at once.
    pub max_occupancy_pkts: u64,
    /// Packets waiting, averaged over the time series' samples.
    pub mean_occupancy_pkts: f64,
    /// Mean wait of the packets that waited, ms.
    pub mean_hold_ms: f64,
    /// Longest wait, ms.
    pub max_hold_ms: f64,
}

/// One path's figures in one run: wire throughput into the confluence point, as bwm-ng on its
/// input interface shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PathFigures {
    /// Path name.
    pub id: String,
    /// Mean wire throughput over the run, Mbit/s.
    pub mean_mbps: f64,
    /// Wire-byte capacity of its slowest link, Mbit/s.
    pub capacity_mbps: f64,
}

/// Everything measured in one run (one seed).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunFigures {
    /// The seed of this run.
    pub seed: u64,
    /// Per flow.
    pub flows: Vec<FlowFigures>,
    /// Per path.
    pub paths: Vec<PathFigures>,
    /// Program counters per node (marks, feedback, avoidance drops, ...) and queue drops.
    pub counters: BTreeMap<String, BTreeMap<String, u64>>,
    /// Multipath tunnels, per direction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunnels: Vec<TunnelFigures>,
    /// How the kernel backend shaped the links (netns only): whether a frame's serialisation
    /// delay was emulated, which reordering across paths depends on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_model: Option<String>,
}

/// Mean, min and max of a figure over repetitions.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
}

impl Spread {
    /// Spread of `xs` (all zero when empty).
    pub fn of(xs: &[f64]) -> Spread {
        if xs.is_empty() {
            return Spread {
                mean: 0.0,
                min: 0.0,
                max: 0.0,
            };
        }
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        Spread {
            mean: round(mean, 4),
            min: round(min, 4),
            max: round(max, 4),
        }
    }

    /// `max - min`.
    pub fn range(&self) -> f64 {
        self.max - self.min
    }
}

/// A flow's figures over all repetitions: means, and the delivered rate's spread.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FlowSummary {
    /// Flow name.
    pub id: String,
    /// Offered rate, Mbit/s.
    pub offered_mbps: f64,
    /// Mean delivered payload rate, Mbit/s.
    pub delivered_mbps: f64,
    /// Mean loss, percent; None where not measured.
    pub loss_pct: Option<f64>,
    /// Mean one-way delay, ms; None where not measured.
    pub mean_owd_ms: Option<f64>,
    /// Mean reordering, percent; None where not measured.
    pub reordered_pct: Option<f64>,
    /// Delivered rate over repetitions.
    pub delivered_spread_mbps: Spread,
    /// Mean payload delivered over the run, MiB.
    #[serde(default)]
    pub delivered_mib: f64,
}

/// A path's figures over all repetitions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PathSummary {
    /// Path name.
    pub id: String,
    /// Mean wire throughput, Mbit/s.
    pub mean_mbps: f64,
    /// Capacity, Mbit/s.
    pub capacity_mbps: f64,
    /// Throughput over repetitions.
    pub spread_mbps: Spread,
}

/// `summary.json` for one configuration (scenario, or one of its variants).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Variant name, when the scenario has variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// What it reproduces.
    pub reproduces: String,
    /// `sim` or `netns`.
    pub backend: String,
    /// Seed of the first repetition (repetition `i` uses `seed + i`).
    pub seed: u64,
    /// Simulated (or real) duration, seconds.
    pub duration_s: f64,
    /// Per flow, averaged over repetitions.
    pub flows: Vec<FlowSummary>,
    /// Per path, averaged over repetitions.
    pub paths: Vec<PathSummary>,
    /// Completion times of fixed-size transfers (all, mice, elephants, then each size decade:
    /// `completion::stats`), pooled over repetitions; empty without transfers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completion: Vec<crate::completion::CompletionStats>,
    /// Each repetition's figures.
    pub repetitions: Vec<RunFigures>,
}

impl Summary {
    /// Aggregate runs into a summary.
    pub fn aggregate(
        scenario: &str,
        variant: Option<&str>,
        reproduces: &str,
        backend: &str,
        seed: u64,
        duration_s: f64,
        runs: Vec<RunFigures>,
    ) -> Summary {
        let mean = |xs: Vec<f64>| round(xs.iter().sum::<f64>() / xs.len().max(1) as f64, 4);
        let flows = match runs.first() {
            None => Vec::new(),
            Some(first) => first
                .flows
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let col = |g: fn(&FlowFigures) -> f64| runs.iter().map(|r| g(&r.flows[i])).collect::<Vec<_>>();
                    // A figure measured in every repetition has a mean; otherwise none.
                    let mean_of = |g: fn(&FlowFigures) -> Option<f64>| {
                        runs.iter()
                            .map(|r| g(&r.flows[i]))
                            .collect::<Option<Vec<f64>>>()
                            .map(mean)
                    };
                    let delivered = col(|f| f.delivered_mbps);
                    FlowSummary {
                        id: f.id.clone(),
                        offered_mbps: f.offered_mbps,
                        delivered_mbps: mean(delivered.clone()),
                        loss_pct: mean_of(|f| f.loss_pct),
                        mean_owd_ms: mean_of(|f| f.mean_owd_ms),
                        reordered_pct: mean_of(|f| f.reordered_pct),
                        delivered_spread_mbps: Spread::of(&delivered),
                        delivered_mib: mean(col(|f| f.delivered_mib)),
                    }
                })
                .collect(),
        };
        let paths = match runs.first() {
            None => Vec::new(),
            Some(first) => first
                .paths
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let xs: Vec<f64> = runs.iter().map(|r| r.paths[i].mean_mbps).collect();
                    PathSummary {
                        id: p.id.clone(),
                        mean_mbps: mean(xs.clone()),
                        capacity_mbps: p.capacity_mbps,
                        spread_mbps: Spread::of(&xs),
                    }
                })
                .collect(),
        };
        Summary {
            scenario: scenario.to_string(),
            variant: variant.map(str::to_string),
            reproduces: reproduces.to_string(),
            backend: backend.to_string(),
            seed,
            duration_s,
            flows,
            paths,
            completion: Vec::new(),
            repetitions: runs,
        }
    }
}

/// `summary.json` of a scenario with variants: one [`Summary`] per variant.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MultiSummary {
    /// Scenario name.
    pub scenario: String,
    /// What it reproduces.
    pub reproduces: String,
    /// `sim` or `netns`.
    pub backend: String,
    /// Base seed.
    pub seed: u64,
    /// Duration, seconds.
    pub duration_s: f64,
    /// Per variant.
    pub variants: Vec<Summary>,
}

#[cfg(test)]
mod tests {
    use super::TcpFigures;

    /// Issue 27 item 12: a figure a backend did not measure is `null` in `summary.json`, not 0,
    /// and reads back as not measured; measured ones keep their keys, values and order.
    #[test]
    fn unmeasured_tcp_figures_are_null_and_read_back_so() {
        let measured = TcpFigures {
            cc: "cubic".into(),
            retransmitted_segments: Some(0),
            srtt_ms: Some(1.5),
            mean_cwnd_kib: Some(10.0),
            ..TcpFigures::default()
        };
        let text = serde_json::to_string(&measured).unwrap();
        assert_eq!(
            text,
            r#"{"cc":"cubic","retransmitted_segments":0,"fast_retransmits":null,"rtos":null,"ecn_reductions":null,"ce_segments":null,"srtt_ms":1.5,"mean_cwnd_kib":10.0}"#
        );
        assert_eq!(serde_json::from_str::<TcpFigures>(&text).unwrap(), measured);
        let none = TcpFigures {
            cc: "cubic".into(),
            ..TcpFigures::default()
        };
        let v = serde_json::to_value(&none).unwrap();
        assert!(v["retransmitted_segments"].is_null() && v["srtt_ms"].is_null() && v["mean_cwnd_kib"].is_null());
        assert_eq!(serde_json::from_value::<TcpFigures>(v).unwrap(), none);
    }
}
