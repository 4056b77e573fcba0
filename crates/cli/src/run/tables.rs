//! The tables `mpsched run` prints on the terminal: per flow, per path, TCP and tunnel figures,
//! acknowledged paths and completion times. Each stops after a few rows or columns; everything
//! is in `summary.json` and the CSV files.

use super::or_dash;
use mpsched_run::VariantResult;
use mpsched_scenario::results::{RunFigures, SubtunnelFigures, Summary, TunnelFigures};
use mpsched_scenario::Scenario;

/// Per-flow tables stop after this many flows (a workload has thousands; they are all in
/// `summary.json` and `flows.csv`).
const MAX_FLOW_ROWS: usize = 32;
/// The path table stops after this many columns (a scenario of 10 000 UEs has 2 000 paths;
/// they are all in `summary.json`).
const MAX_PATH_COLUMNS: usize = 8;
/// Runs with at most this many flows list each MPTCP flow's subflows under it.
const MAX_SUBFLOW_LISTS: usize = 8;

fn more_flows(n: usize) -> anyhow::Result<()> {
    if n > MAX_FLOW_ROWS {
        outln!("  ... and {} more flows (summary.json, flows.csv)", n - MAX_FLOW_ROWS);
    }
    Ok(())
}

/// Completion times of fixed-size transfers, per variant, pooled over repetitions: all flows,
/// mice, elephants.
pub(super) fn print_completion(results: &[VariantResult]) -> anyhow::Result<()> {
    let mut header = false;
    for r in results {
        if r.summary.completion.is_empty() {
            continue;
        }
        if !header {
            outln!();
            outln!(
                "{:<12} {:<20} {:>7} {:>8}  {:>26}  {:>24}",
                "variant",
                "flows",
                "count",
                "finished",
                "FCT ms mean / median / p99",
                "slowdown mean / med / p99"
            );
            header = true;
        }
        let three = |x: Option<[f64; 3]>, d: usize| {
            x.map_or("-".to_string(), |[a, b, c]| format!("{a:.d$} / {b:.d$} / {c:.d$}"))
        };
        for s in &r.summary.completion {
            outln!(
                "{:<12} {:<20} {:>7} {:>8}  {:>26}  {:>24}",
                r.variant.as_deref().unwrap_or("-"),
                s.class,
                s.flows,
                s.finished,
                three(s.fct_ms, 2),
                three(s.slowdown, 1)
            );
        }
    }
    if header && results.iter().any(|r| r.summary.repetitions.len() > 1) {
        outln!("  (pooled over repetitions; flows.csv holds the first)");
    }
    Ok(())
}

/// TCP and tunnel figures of each variant's first repetition, when there are any.
pub(super) fn print_tcp_and_tunnels(results: &[VariantResult]) -> anyhow::Result<()> {
    let has_tcp = results.iter().any(|r| {
        r.summary
            .repetitions
            .first()
            .is_some_and(|x| x.flows.iter().any(|f| f.tcp.is_some()))
    });
    if has_tcp {
        outln!();
        outln!(
            "{:<12} {:<12} {:>6} {:>12} {:>9} {:>7} {:>7} {:>9} {:>10}",
            "variant",
            "tcp flow",
            "cc",
            "goodput MiB",
            "retx",
            "RTOs",
            "ECN cut",
            "SRTT ms",
            "cwnd KiB"
        );
        for r in results {
            let Some(run) = r.summary.repetitions.first() else {
                continue;
            };
            for f in run.flows.iter().take(MAX_FLOW_ROWS) {
                let Some(t) = &f.tcp else { continue };
                outln!(
                    "{:<12} {:<12} {:>6} {:>12.2} {:>9} {:>7} {:>7} {:>9} {:>10}",
                    r.variant.as_deref().unwrap_or("-"),
                    f.id,
                    t.cc,
                    f.delivered_mib,
                    or_dash(t.retransmitted_segments.map(|x| x.to_string())),
                    or_dash(t.rtos.map(|x| x.to_string())),
                    or_dash(t.ecn_reductions.map(|x| x.to_string())),
                    or_dash(t.srtt_ms.map(|x| format!("{x:.2}"))),
                    or_dash(t.mean_cwnd_kib.map(|x| format!("{x:.1}")))
                );
                // Subflow lines only while they stay readable (all are in summary.json).
                for sub in t.subflows.iter().filter(|_| run.flows.len() <= MAX_SUBFLOW_LISTS) {
                    outln!(
                        "{:<12}   subflow {} acked {:.2} Mbit/s, {} retx, {} RTOs, SRTT {:.2} ms, cwnd {:.1} KiB",
                        "",
                        sub.id,
                        sub.acked_mbps,
                        sub.retransmitted_segments,
                        or_dash(sub.rtos.map(|x| x.to_string())),
                        sub.srtt_ms,
                        sub.cwnd_kib
                    );
                }
            }
            more_flows(run.flows.len())?;
        }
    }
    let tunnels: Vec<_> = results
        .iter()
        .filter_map(|r| r.summary.repetitions.first().map(|x| (r, x)))
        .filter(|(_, x)| !x.tunnels.is_empty())
        .collect();
    if !tunnels.is_empty() {
        outln!();
        outln!(
            "{:<12} {:<10} {:>6} {:>5} {:>11} {:>11} {:>10} {:>9}  per subtunnel",
            "variant",
            "tunnel",
            "sched",
            "over",
            "scheduled",
            "forwarded",
            "reorder %",
            "buf drop"
        );
        for &(r, x) in &tunnels {
            for t in x.tunnels.iter().take(MAX_TUNNEL_ROWS) {
                let per: Vec<String> = t.per_subtunnel_pkts.iter().map(|(k, v)| format!("{k}={v}")).collect();
                outln!(
                    "{:<12} {:<10} {:>6} {:>5} {:>11} {:>11} {:>10.2} {:>9}  {}",
                    r.variant.as_deref().unwrap_or("-"),
                    t.id,
                    t.scheduler,
                    t.transport,
                    t.scheduled_pkts,
                    t.forwarded_pkts,
                    t.reordered_pct,
                    t.send_buffer_drops,
                    per.join(" ")
                );
            }
            if x.tunnels.len() > MAX_TUNNEL_ROWS {
                outln!(
                    "  ... and {} more tunnel directions (summary.json)",
                    x.tunnels.len() - MAX_TUNNEL_ROWS
                );
            }
        }
        print_acknowledged_paths(&tunnels)?;
    }
    Ok(())
}

/// The packets and figures of a tunnel direction's `k`-th subtunnel (its own order).
fn nth_subtunnel(t: &TunnelFigures, k: usize) -> Option<(u64, &SubtunnelFigures)> {
    let name = t.subtunnels.get(k)?;
    Some((*t.per_subtunnel_pkts.get(name)?, t.per_subtunnel.get(name)?))
}

/// Most tunnel directions printed one per row; the summary has them all.
const MAX_TUNNEL_ROWS: usize = 16;

/// Where tunnels acknowledge their paths (ATSSS): per variant and subtunnel position
/// (preferred first), over every tunnel direction that carried packets: the share of packets,
/// the mean RTT inflation over the minimum, loss, and the reordering buffers.
fn print_acknowledged_paths(tunnels: &[(&VariantResult, &RunFigures)]) -> anyhow::Result<()> {
    if !tunnels
        .iter()
        .any(|(_, x)| x.tunnels.iter().any(|t| !t.per_subtunnel.is_empty()))
    {
        return Ok(());
    }
    outln!();
    outln!(
        "{:<14} {:>8} {:>13} {:>8} {:>10} {:>8} {:>11} {:>10} {:>10}",
        "variant",
        "tunnels",
        "path",
        "share %",
        "RTT x min",
        "loss %",
        "reorder avg",
        "max pkts",
        "hold ms"
    );
    for (r, x) in tunnels {
        let used: Vec<_> = x
            .tunnels
            .iter()
            .filter(|t| !t.per_subtunnel.is_empty() && t.scheduled_pkts > 0)
            .collect();
        let Some(first) = used.first() else { continue };
        let scheduled: u64 = used.iter().map(|t| t.scheduled_pkts).sum();
        let paths = first.per_subtunnel_pkts.len();
        for k in 0..paths {
            // Position k in each tunnel's own order (preferred first).
            let rows: Vec<(u64, &SubtunnelFigures)> = used.iter().filter_map(|t| nth_subtunnel(t, k)).collect();
            let pkts: u64 = rows.iter().map(|r| r.0).sum();
            let infl: Vec<f64> = rows.iter().map(|r| r.1.rtt_inflation).filter(|x| *x > 0.0).collect();
            let lost: u64 = rows.iter().map(|r| r.1.lost_pkts).sum();
            let name = first.subtunnels.get(k).cloned().unwrap_or_default();
            let rb: Vec<_> = used.iter().filter_map(|t| t.reorder_buffer.as_ref()).collect();
            let (avg, most, hold) = if k == 0 && !rb.is_empty() {
                let held: u64 = rb.iter().map(|b| b.held_pkts).sum();
                (
                    format!(
                        "{:.2}",
                        rb.iter().map(|b| b.mean_occupancy_pkts).sum::<f64>() / rb.len() as f64
                    ),
                    rb.iter().map(|b| b.max_occupancy_pkts).max().unwrap_or(0).to_string(),
                    format!(
                        "{:.2}",
                        rb.iter().map(|b| b.mean_hold_ms * b.held_pkts as f64).sum::<f64>() / held.max(1) as f64
                    ),
                )
            } else {
                ("".into(), "".into(), "".into())
            };
            outln!(
                "{:<14} {:>8} {:>13} {:>8.2} {:>10.2} {:>8.3} {:>11} {:>10} {:>10}",
                if k == 0 {
                    r.variant.as_deref().unwrap_or("-")
                } else {
                    ""
                },
                if k == 0 { used.len().to_string() } else { String::new() },
                if used.len() == 1 { name } else { k.to_string() },
                100.0 * pkts as f64 / scheduled.max(1) as f64,
                if infl.is_empty() {
                    0.0
                } else {
                    infl.iter().sum::<f64>() / infl.len() as f64
                },
                100.0 * lost as f64 / pkts.max(1) as f64,
                avg,
                most,
                hold
            );
        }
    }
    Ok(())
}

fn fmt_spread(s: &Summary, f: usize) -> String {
    let fl = &s.flows[f];
    if s.repetitions.len() > 1 {
        format!(
            "{:.2} [{:.2}-{:.2}]",
            fl.delivered_mbps, fl.delivered_spread_mbps.min, fl.delivered_spread_mbps.max
        )
    } else {
        format!("{:.2}", fl.delivered_mbps)
    }
}

pub(super) fn print_table(sc: &Scenario, results: &[VariantResult]) -> anyhow::Result<()> {
    outln!("{} — {}", sc.name, sc.title);
    if !sc.reproduces.is_empty() {
        outln!("reproduces: {}", sc.reproduces);
    }
    let reps = results.first().map_or(1, |r| r.summary.repetitions.len());
    if reps > 1 {
        outln!("{reps} repetitions: delivered shown as mean [min-max]");
    }
    outln!();
    outln!(
        "{:<10} {:<8} {:>9} {:>22} {:>8} {:>9} {:>8}",
        "variant",
        "flow",
        "offered",
        "delivered Mbit/s",
        "loss %",
        "OWD ms",
        "reord %"
    );
    for r in results {
        let v = r.variant.as_deref().unwrap_or("-");
        for (i, f) in r.summary.flows.iter().enumerate().take(MAX_FLOW_ROWS) {
            // A TCP flow offers what its window allows: no offered rate to show.
            let tcp = r.scenario.flows.get(i).is_some_and(|x| x.tcp.is_some());
            outln!(
                "{:<10} {:<8} {:>9} {:>22} {:>8} {:>9} {:>8}",
                v,
                f.id,
                or_dash((!tcp).then(|| format!("{:.2}", f.offered_mbps))),
                fmt_spread(&r.summary, i),
                or_dash(f.loss_pct.map(|x| format!("{x:.2}"))),
                or_dash(f.mean_owd_ms.map(|x| format!("{x:.2}"))),
                or_dash(f.reordered_pct.map(|x| format!("{x:.2}")))
            );
        }
        more_flows(r.summary.flows.len())?;
    }
    if !sc.paths.is_empty() {
        outln!();
        out!("{:<10}", "variant");
        for p in sc.paths.iter().take(MAX_PATH_COLUMNS) {
            out!(" {:>18}", format!("{} Mbit/s", p.name));
        }
        outln!("   (wire, into the confluence point)");
        for r in results {
            out!("{:<10}", r.variant.as_deref().unwrap_or("-"));
            for p in r.summary.paths.iter().take(MAX_PATH_COLUMNS) {
                out!(" {:>18}", format!("{:.2} / {:.2}", p.mean_mbps, p.capacity_mbps));
            }
            outln!();
        }
        if sc.paths.len() > MAX_PATH_COLUMNS {
            outln!(
                "  ... and {} more paths (summary.json)",
                sc.paths.len() - MAX_PATH_COLUMNS
            );
        }
    }
    for r in results {
        let Some(first) = r.summary.repetitions.first() else {
            continue;
        };
        for (node, c) in &first.counters {
            let windows: Vec<String> = c
                .iter()
                .filter(|(k, v)| {
                    let field = k.rsplit_once('.').map_or(k.as_str(), |(_, f)| f);
                    **v > 0
                        && matches!(
                            field,
                            "windows" | "adjustments" | "avoidance_drops" | "feedback_rx" | "feedback_sent" | "marked"
                        )
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if !windows.is_empty() {
                outln!(
                    "{:<10} {node}: {}",
                    r.variant.as_deref().unwrap_or("-"),
                    windows.join(" ")
                );
            }
        }
    }
    Ok(())
}
