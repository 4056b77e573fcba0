//! Flow completion times of fixed-size transfers (TCP and MPTCP transfers, and rate-controlled
//! UDP flows of a `size`): per-flow rows (`flows.csv`) and their summaries for all flows, mice,
//! elephants and each decade of size.
//!
//! A flow's ideal completion time is what it would take alone on an idle network: its payload at
//! the slowest link rate of its route, plus the route's one-way propagation delay. Headers are
//! not counted, so even an idle network gives a slowdown a few percent above 1.

use crate::model::{Scenario, TcpApp};
use crate::results::{round, RunFigures};
use serde::{Deserialize, Serialize};
use std::io::Write;

/// Flows below this size are mice.
pub const MICE_BELOW_BYTES: u64 = 100_000;
/// Flows above this size are elephants.
pub const ELEPHANTS_ABOVE_BYTES: u64 = 10_000_000;

/// The counters group where a run reports its rate-controlled flows (`<flow>.cnps`, ...).
pub const RATE_CONTROL_COUNTERS: &str = "rate-control";

/// A sized rate-controlled flow's completion time in its run's [`RATE_CONTROL_COUNTERS`], ns
/// from its start (absent: not finished).
pub fn paced_completion_key(flow: &str) -> String {
    format!("{flow}.completion_ns")
}

/// Packets a sized rate-controlled flow sent again (go-back-N), in [`RATE_CONTROL_COUNTERS`].
pub fn paced_retransmissions_key(flow: &str) -> String {
    format!("{flow}.retransmitted_pkts")
}

/// The size buckets of [`stats`] after all flows, mice and elephants: `[low, high)` bytes.
pub const SIZE_BUCKETS: [(&str, u64, u64); 5] = [
    ("size < 10 KB", 0, 10_000),
    ("size 10-100 KB", 10_000, 100_000),
    ("size 100 KB-1 MB", 100_000, 1_000_000),
    ("size 1-10 MB", 1_000_000, 10_000_000),
    ("size >= 10 MB", 10_000_000, u64::MAX),
];

/// One fixed-size transfer's row.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionRow {
    /// Flow name.
    pub id: String,
    /// Source and destination host names.
    pub src: String,
    /// Destination host.
    pub dst: String,
    /// Bytes to transfer.
    pub size_bytes: u64,
    /// Start, s.
    pub start_s: f64,
    /// Completion time, s (None: not finished by the end of the run).
    pub fct_s: Option<f64>,
    /// Ideal completion time, s.
    pub ideal_fct_s: f64,
    /// Retransmitted segments (None where the backend did not measure them; an empty field in
    /// `flows.csv`).
    pub retransmissions: Option<u64>,
}

impl CompletionRow {
    /// Completion time over the ideal one.
    pub fn slowdown(&self) -> Option<f64> {
        self.fct_s.map(|f| f / self.ideal_fct_s)
    }
}

/// The rows of every fixed-size transfer of `sc` in run `figs`, in flow order.
pub fn rows(sc: &Scenario, figs: &RunFigures) -> Result<Vec<CompletionRow>, String> {
    Ok(rows_of_runs(sc, std::slice::from_ref(figs))?.remove(0))
}

/// [`rows`] of each of several runs of `sc` (the routes are computed once).
pub fn rows_of_runs(sc: &Scenario, runs: &[RunFigures]) -> Result<Vec<Vec<CompletionRow>>, String> {
    if !sc.flows.iter().any(is_transfer) {
        return Ok(vec![Vec::new(); runs.len()]);
    }
    let ideal = ideal_fcts(sc)?;
    Ok(runs.iter().map(|figs| rows_with(sc, &ideal, figs)).collect())
}

fn is_transfer(f: &crate::model::Flow) -> bool {
    transfer_size(f).is_some()
}

/// A transfer's size: a TCP (or MPTCP) transfer's, or a sized rate-controlled UDP flow's.
fn transfer_size(f: &crate::model::Flow) -> Option<u64> {
    match f.tcp.as_ref().map(|t| &t.app) {
        Some(TcpApp::Transfer { size_bytes }) => Some(*size_bytes),
        _ => f.paced_size_bytes(),
    }
}

/// Each transfer's ideal completion time, s, by flow index (None: not a transfer).
fn ideal_fcts(sc: &Scenario) -> Result<Vec<Option<f64>>, String> {
    let w = sc.wiring()?;
    let mut out = Vec::with_capacity(sc.flows.len());
    for f in &sc.flows {
        let Some(size_bytes) = transfer_size(f) else {
            out.push(None);
            continue;
        };
        let route = w
            .route_nodes(f.src, f.dst)
            .ok_or_else(|| format!("flow `{}` has no route", f.name))?;
        let (mut slowest_bps, mut delay_ps) = (u64::MAX, 0u64);
        for hop in route.windows(2) {
            let port = w.port_to(hop[0], hop[1]).ok_or("a route hop without a link")?;
            let link = &sc.links[w.ports[hop[0]][usize::from(port)].link];
            slowest_bps = slowest_bps.min(link.rate_bps);
            delay_ps += link.delay_ps;
        }
        out.push(Some(
            size_bytes as f64 * 8.0 / slowest_bps as f64 + delay_ps as f64 / 1e12,
        ));
    }
    Ok(out)
}

fn rows_with(sc: &Scenario, ideal: &[Option<f64>], figs: &RunFigures) -> Vec<CompletionRow> {
    let mut out = Vec::new();
    let paced = figs.counters.get(RATE_CONTROL_COUNTERS);
    for ((f, fig), ideal) in sc.flows.iter().zip(&figs.flows).zip(ideal) {
        let (Some(size_bytes), Some(ideal)) = (transfer_size(f), ideal) else {
            continue;
        };
        let (fct_s, retransmissions) = match &fig.tcp {
            Some(t) => (t.completion_s, t.retransmitted_segments),
            // A paced transfer's figures are its run's counters (None where a backend has none).
            None => {
                let counter = |key: String| paced.and_then(|c| c.get(&key)).copied();
                (
                    counter(paced_completion_key(&f.name)).map(|ns| ns as f64 / 1e9),
                    counter(paced_retransmissions_key(&f.name)),
                )
            }
        };
        out.push(CompletionRow {
            id: f.name.clone(),
            src: sc.nodes[f.src].name.clone(),
            dst: sc.nodes[f.dst].name.clone(),
            size_bytes,
            start_s: f.start_ps as f64 / 1e12,
            fct_s,
            ideal_fct_s: *ideal,
            retransmissions,
        });
    }
    out
}

/// Write `rows` as `flows.csv`.
pub fn write_csv(rows: &[CompletionRow], mut w: impl Write) -> std::io::Result<()> {
    writeln!(
        w,
        "id,src,dst,size_bytes,start_s,finish_s,fct_s,ideal_fct_s,slowdown,retransmissions"
    )?;
    let opt = |x: Option<f64>, d: i32| x.map_or(String::new(), |v| round(v, d).to_string());
    for r in rows {
        writeln!(
            w,
            "{},{},{},{},{},{},{},{},{},{}",
            r.id,
            r.src,
            r.dst,
            r.size_bytes,
            round(r.start_s, 9),
            opt(r.fct_s.map(|f| r.start_s + f), 9),
            opt(r.fct_s, 9),
            round(r.ideal_fct_s, 9),
            opt(r.slowdown(), 4),
            r.retransmissions.map_or(String::new(), |n| n.to_string())
        )?;
    }
    Ok(())
}

/// Mean, median and 99th percentile of completion time and slowdown over finished flows of one
/// class (in `summary.json` as `completion`, pooled over repetitions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompletionStats {
    /// Which flows: `all`, `mice (< 100 KB)`, `elephants (> 10 MB)`, or a bucket of
    /// [`SIZE_BUCKETS`] (`size 10-100 KB`).
    pub class: String,
    /// Flows of the class.
    pub flows: usize,
    /// Of them, finished by the end of the run.
    pub finished: usize,
    /// Completion time, ms: mean, median, 99th percentile (None: nothing finished).
    pub fct_ms: Option<[f64; 3]>,
    /// Slowdown: mean, median, 99th percentile.
    pub slowdown: Option<[f64; 3]>,
}

/// The statistics of all flows, mice, elephants, then each of [`SIZE_BUCKETS`] in order
/// (figures rounded to 6 decimals, so that equal runs write equal files).
pub fn stats(rows: &[CompletionRow]) -> Vec<CompletionStats> {
    let mut classes: Vec<(&str, u64, u64)> = vec![
        ("all", 0, u64::MAX),
        ("mice (< 100 KB)", 0, MICE_BELOW_BYTES),
        ("elephants (> 10 MB)", ELEPHANTS_ABOVE_BYTES + 1, u64::MAX),
    ];
    classes.extend(SIZE_BUCKETS);
    classes
        .iter()
        .map(|&(class, low, high)| {
            // `[low, high)`; u64::MAX as the high end takes every size above `low`.
            let keep = |s: u64| s >= low && (s < high || high == u64::MAX);
            let of: Vec<&CompletionRow> = rows.iter().filter(|r| keep(r.size_bytes)).collect();
            let fct: Vec<f64> = of.iter().filter_map(|r| r.fct_s.map(|f| f * 1e3)).collect();
            let slow: Vec<f64> = of.iter().filter_map(|r| r.slowdown()).collect();
            CompletionStats {
                class: class.to_string(),
                flows: of.len(),
                finished: fct.len(),
                fct_ms: summary(fct),
                slowdown: summary(slow),
            }
        })
        .collect()
}

/// Mean, median and 99th percentile (nearest rank).
fn summary(mut xs: Vec<f64>) -> Option<[f64; 3]> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let rank = |q: f64| xs[((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1];
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    Some([mean, rank(0.5), rank(0.99)].map(|x| round(x, 6)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(size: u64, fct: Option<f64>) -> CompletionRow {
        CompletionRow {
            id: "f".into(),
            src: "a".into(),
            dst: "b".into(),
            size_bytes: size,
            start_s: 0.5,
            fct_s: fct,
            ideal_fct_s: 0.001,
            retransmissions: Some(0),
        }
    }

    /// Issue 27 item 12: retransmissions a backend did not measure are an empty field in
    /// `flows.csv`, not 0.
    #[test]
    fn unmeasured_retransmissions_are_an_empty_field() {
        let mut out = Vec::new();
        let unmeasured = CompletionRow {
            retransmissions: None,
            ..row(1000, None)
        };
        write_csv(&[row(1000, Some(0.002)), unmeasured], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].ends_with(",0"), "{text}");
        assert!(lines[2].ends_with(",,,0.001,,"), "{text}");
    }

    #[test]
    fn classes_split_by_size_and_unfinished_flows_are_counted_apart() {
        let mut rows: Vec<CompletionRow> = (1..=100).map(|i| row(1_000, Some(i as f64 / 1000.0))).collect();
        rows.push(row(20_000_000, None));
        rows.push(row(20_000_000, Some(0.5)));
        let s = stats(&rows);
        assert_eq!((s[0].flows, s[0].finished), (102, 101));
        let mice = &s[1];
        assert_eq!((mice.flows, mice.finished), (100, 100));
        let [mean, median, p99] = mice.fct_ms.unwrap();
        assert!(
            (mean - 50.5).abs() < 1e-9 && median == 50.0 && p99 == 99.0,
            "{mean} {median} {p99}"
        );
        assert_eq!(mice.slowdown.unwrap()[1], 50.0);
        assert_eq!((s[2].flows, s[2].finished), (2, 1));
        assert_eq!(stats(&[])[0].fct_ms, None);
    }

    #[test]
    fn size_buckets_split_at_each_decade_and_take_their_low_end() {
        let sizes = [
            5_000, 9_999, 10_000, 99_999, 100_000, 999_999, 1_000_000, 10_000_000, 30_000_000,
        ];
        let rows: Vec<CompletionRow> = sizes.iter().map(|&s| row(s, Some(0.002))).collect();
        let s = stats(&rows);
        assert_eq!(s.len(), 3 + SIZE_BUCKETS.len());
        let counts: Vec<(&str, usize)> = s[3..].iter().map(|c| (c.class.as_str(), c.flows)).collect();
        assert_eq!(
            counts,
            [
                ("size < 10 KB", 2),
                ("size 10-100 KB", 2),
                ("size 100 KB-1 MB", 2),
                ("size 1-10 MB", 1),
                ("size >= 10 MB", 2)
            ]
        );
        // Exactly 10 MB is in the last decade but is no elephant (> 10 MB).
        assert_eq!(s[2].flows, 1);
        assert!(s[3..].iter().all(|c| c.slowdown == Some([2.0; 3])));
    }

    #[test]
    fn the_csv_leaves_unfinished_times_empty() {
        let mut out = Vec::new();
        write_csv(&[row(1_000, Some(0.002)), row(5, None)], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "f,a,b,1000,0.5,0.502,0.002,0.001,2,0");
        assert_eq!(lines[2], "f,a,b,5,0.5,,,0.001,,0");
    }
}
