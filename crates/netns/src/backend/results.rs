//! A run's results: iperf3's and the traffic generator's reports and the samples into the
//! shared results schema (figures per flow and path, the time series).

use super::measure::Samples;
use super::paced::{is_paced, paced_columns, paced_counters, paced_figures, PacedOutput};
use super::setup::link_model;
use super::{is_transfer, Build, Live, NetnsError, NetnsRun, PS_PER_S};
use crate::trafficgen::FlowResult;
use mpsched_run::TimeSeries;
use mpsched_scenario::results::{round, FlowFigures, PathFigures, RunFigures, TcpFigures};
use mpsched_scenario::{Flow, Scenario, TcpFlow};
use std::collections::BTreeMap;
use std::time::Duration;

/// The run's figures and time series from what it sampled and what iperf3 reported.
pub(super) fn figures(b: &Build, live: &Live, samples: Samples, outputs: &[String]) -> Result<NetnsRun, NetnsError> {
    let (sc, w) = (b.sc, b.w);
    let intervals = sc.duration_ps.div_ceil(sc.sample_interval_ps) as usize;
    let sample_every = Duration::from_nanos(sc.sample_interval_ps / 1000);

    let mut flows = Vec::new();
    let mut series_cols = vec!["time_s".to_string()];
    for p in &sc.paths {
        series_cols.push(format!("{}_mbps", p.name));
    }
    for f in &sc.flows {
        series_cols.push(format!("{}_mbps", f.name));
    }
    let mut flow_series: Vec<Vec<f64>> = Vec::new();
    let mut tcp_series: Vec<(String, Vec<Vec<f64>>)> = Vec::new();
    // Paced flows' extra columns (loss, delay, rate) by flow, their counters and their lines.
    let mut paced_series: Vec<(String, Vec<Vec<f64>>)> = Vec::new();
    let mut rate_counters: BTreeMap<String, u64> = BTreeMap::new();
    let mut paced_lines = String::new();
    let generated = generator_results(live, outputs);
    for (fi, f) in sc.flows.iter().enumerate() {
        if let (Some(t), true) = (&f.tcp, is_transfer(f)) {
            let (fig, col) = transfer_figures(f, t, generated.get(&fi), intervals, sample_every.as_secs_f64());
            flows.push(fig);
            flow_series.push(col);
            // No window, RTT or retransmission columns: the generator samples a transfer once,
            // at its end, not every interval (they were columns of zeros).
            continue;
        }
        if is_paced(f) {
            let out = PacedOutput::read(f, fi, live, outputs)?;
            flows.push(paced_figures(f, &out)?);
            let c = paced_columns(&out, intervals, sample_every.as_secs_f64());
            flow_series.push(c.mbps);
            paced_series.push((f.name.clone(), vec![c.loss_pct, c.owd_ms, c.rate_mbps]));
            rate_counters.extend(paced_counters(f, &out));
            paced_lines.push_str(&out.jsonl(&f.name));
            continue;
        }
        let out = live.server_of[fi].map_or("", |ci| outputs[ci].as_str());
        let server: serde_json::Value = serde_json::from_str(out).map_err(|e| {
            NetnsError::Traffic(format!(
                "flow `{}`: server report unreadable ({e}): {}",
                f.name,
                out.chars().take(300).collect::<String>()
            ))
        })?;
        let mut start_s = samples.started_at[fi].unwrap_or(f.start_ps as f64 / PS_PER_S as f64);
        if let Some(err) = server.get("error").and_then(|e| e.as_str()) {
            if !ended_late_with_report(&server, err) {
                return Err(NetnsError::Traffic(format!("flow `{}`: {err}", f.name)));
            }
            let ended_s = live.server_of[fi].and_then(|ci| live.ended_late_s.get(ci).copied().flatten());
            start_s = late_start(f, &server, start_s, ended_s, live.t0_unix_s);
        } else {
            start_s = late_start(f, &server, start_s, None, live.t0_unix_s);
        }
        if let Some(t) = &f.tcp {
            let client: serde_json::Value = samples.client_of[fi]
                .and_then(|ci| serde_json::from_str(&outputs[ci]).ok())
                .unwrap_or(serde_json::Value::Null);
            let (mut fig, mut cols) =
                tcp_flow_figures(f, t, &server, &client, intervals, sample_every.as_secs_f64(), start_s);
            if let Some(tcp) = fig.tcp.as_mut() {
                samples.mptcp.apply(fi, tcp, &mut cols[1]);
            }
            flows.push(fig);
            flow_series.push(cols[0].clone());
            tcp_series.push((f.name.clone(), cols[1..].to_vec()));
            continue;
        }
        let (fig, col) = udp_flow_figures(f, &server, intervals, sample_every.as_secs_f64(), start_s);
        flows.push(fig);
        flow_series.push(col);
    }
    let mut reg_names: Vec<String> = Vec::new();
    for r in &samples.regs {
        for (k, _) in r {
            if !reg_names.contains(k) {
                reg_names.push(k.clone());
            }
        }
    }
    for (name, _) in &tcp_series {
        for k in ["cwnd_kib", "srtt_ms", "retx"] {
            series_cols.push(format!("{name}_{k}"));
        }
    }
    for (name, _) in &paced_series {
        for k in PACED_COLUMNS {
            series_cols.push(format!("{name}_{k}"));
        }
    }
    series_cols.extend(reg_names.iter().cloned());
    let mut rows = Vec::new();
    for t in 0..intervals {
        let mut row = vec![(t + 1) as f64 * sample_every.as_secs_f64()];
        for p in &samples.path {
            row.push(round(p.get(t).copied().unwrap_or(0.0), 4));
        }
        for f in &flow_series {
            row.push(round(f[t], 4));
        }
        for (_, cols) in tcp_series.iter().chain(&paced_series) {
            for c in cols {
                row.push(round(c[t], 4));
            }
        }
        for k in &reg_names {
            let v = samples
                .regs
                .get(t)
                .and_then(|r| r.iter().find(|(n, _)| n == k))
                .map_or(0.0, |(_, v)| *v as f64);
            row.push(v);
        }
        rows.push(row);
    }
    let paths = sc
        .paths
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            let xs = &samples.path[pi];
            let cap = p
                .nodes
                .windows(2)
                .map(|h| sc.links[w.ports[h[0]][usize::from(w.port_to(h[0], h[1]).unwrap())].link].rate_bps)
                .min()
                .unwrap_or(0);
            PathFigures {
                id: p.name.clone(),
                mean_mbps: round(xs.iter().sum::<f64>() / xs.len().max(1) as f64, 4),
                capacity_mbps: cap as f64 / 1e6,
            }
        })
        .collect();
    let mut counters = BTreeMap::new();
    for (i, dp) in &live.dataplanes {
        if let Some(s) = dp.snapshot() {
            counters.insert(
                sc.nodes[*i].name.clone(),
                // The counters, by the names the simulator's results use too (the
                // registers are the vectors' business, not the results').
                s.into_iter()
                    .filter(|(k, v)| *v > 0 && mpsched_core::switch::is_counter(k))
                    .collect(),
            );
        }
    }
    counters.extend(samples.loop_counters.iter().cloned());
    if !rate_counters.is_empty() {
        counters.insert("rate-control".into(), rate_counters);
    }
    Ok(NetnsRun {
        figures: RunFigures {
            tunnels: super::tunnels::figures(b, live),
            seed: sc.seed,
            flows,
            paths,
            counters,
            link_model: Some(match b.strict {
                Some(how) => format!(
                    "{}; {}",
                    link_model(b.have_netem),
                    super::strict_priority_description(b.sc, b.w, how, &*b.opts.planes())
                ),
                None => link_model(b.have_netem).into(),
            }),
        },
        series: TimeSeries {
            columns: series_cols,
            rows,
        },
        queue_tracking: samples.queue_tracking,
        transfers: generated.into_values().collect(),
        paced: paced_lines,
    })
}

/// A paced flow's columns after the TCP flows', each `<flow>_<suffix>`.
const PACED_COLUMNS: [&str; 3] = ["loss_pct", "owd_ms", "rate_mbps"];

/// Whether an iperf3 server's error is only its being ended past the drain (SIGTERM, see
/// `traffic::end_late`) with its report complete: it had received the data, but its closing
/// exchange with the client over the control connection had not finished.
pub(super) fn ended_late_with_report(server: &serde_json::Value, err: &str) -> bool {
    err.starts_with("interrupt") && server["end"]["sum_received"].is_object()
}

/// When flow `f`'s iperf3 test began, seconds after time zero (`t0_unix_s` on the wall
/// clock): `started_s`, when its client started, unless its server accepted the client's
/// control connection more than a second later (the report's `timestamp`, whole seconds).
/// That happens when the client's opening exchange waits in a starved queue (iperf3 leaves
/// its control connection at DSCP 0, the lowest class under strict priority) until the other
/// classes stop: the report is then placed where it happened, after the run, not over it, from
/// the server's end and the report's span where the server was ended past the drain
/// (`ended_s`), else from the accepting second's middle.
fn late_start(f: &Flow, server: &serde_json::Value, started_s: f64, ended_s: Option<f64>, t0_unix_s: f64) -> f64 {
    let accepted_s = server["start"]["timestamp"]["timesecs"]
        .as_f64()
        .map_or(started_s, |t| t - t0_unix_s);
    if accepted_s <= started_s + 1.0 {
        if ended_s.is_some() {
            eprintln!(
                "note: flow `{}`: iperf3's server was still waiting for its client's closing exchange at \
                 the end of the drain and was ended; its figures are what it had received by then",
                f.name
            );
        }
        return started_s;
    }
    let span_s = server["end"]["sum_received"]["seconds"].as_f64().unwrap_or(0.0);
    let began_s = ended_s.map_or(accepted_s + 0.5, |e| (e - span_s).max(accepted_s));
    eprintln!(
        "warning: flow `{}`: its iperf3 test began {:.1} s after its client started (its control \
         connection, which iperf3 leaves at DSCP 0, waited in a queue the other classes starved); what \
         it received is placed from {began_s:.1} s, and its figures count what arrived after the run",
        f.name,
        began_s - started_s
    );
    began_s
}

/// A UDP flow's figures and per-interval goodput from its iperf3 server report.
pub(super) fn udp_flow_figures(
    f: &Flow,
    server: &serde_json::Value,
    intervals: usize,
    interval_s: f64,
    start_s: f64,
) -> (FlowFigures, Vec<f64>) {
    // iperf3 3.12's server leaves end.sum.bytes at 0 for UDP; sum_received has them.
    let sum = &server["end"]["sum_received"];
    let bytes = sum["bytes"].as_f64().unwrap_or(0.0);
    let packets = sum["packets"].as_u64().unwrap_or(0);
    let lost = sum["lost_packets"].as_u64().unwrap_or(0);
    let ooo: u64 = server["end"]["streams"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|st| st["udp"]["out_of_order"].as_u64())
        .sum();
    let active_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
    let delivered_pkts = packets.saturating_sub(lost);
    let fig = FlowFigures {
        id: f.name.clone(),
        offered_mbps: f.rate_bps as f64 / 1e6,
        delivered_mbps: round(bytes * 8.0 / active_s / 1e6, 4),
        loss_pct: Some(round(
            if packets > 0 {
                lost as f64 * 100.0 / packets as f64
            } else {
                0.0
            },
            4,
        )),
        // iperf3 reports jitter, not one-way delay.
        mean_owd_ms: None,
        reordered_pct: Some(round(
            if packets > 0 {
                ooo as f64 * 100.0 / packets as f64
            } else {
                0.0
            },
            4,
        )),
        sent_pkts: packets,
        delivered_pkts,
        per_path_mbps: BTreeMap::new(),
        delivered_mib: round(bytes / f64::from(1u32 << 20), 4),
        tcp: None,
    };
    (fig, goodput_column(server, start_s, intervals, interval_s))
}

/// Goodput at the receiver per sample interval from an iperf3 server's reports, placed on the
/// run's clock from `start_s` (when the flow's client started): each report's bytes spread over
/// the sample intervals its span covers, over the interval's length. Bytes, not iperf3's rates:
/// the server's last report is often a short one (what was still queued when the client
/// stopped, arriving after the run's end), whose rate over its few milliseconds was added to the
/// whole last interval's (15.47 Mbit/s for an 8 Mbit/s flow); its bytes now fall after the
/// last interval, as the simulator's drain does.
pub(super) fn goodput_column(server: &serde_json::Value, start_s: f64, intervals: usize, interval_s: f64) -> Vec<f64> {
    let mut col = vec![0.0; intervals];
    for iv in server["intervals"].as_array().into_iter().flatten() {
        let s = &iv["sum"];
        let end = s["end"].as_f64().unwrap_or(0.0);
        let start = s["start"].as_f64().unwrap_or(end - interval_s).min(end);
        let bytes = s["bytes"]
            .as_f64()
            .unwrap_or_else(|| s["bits_per_second"].as_f64().unwrap_or(0.0) * (end - start) / 8.0);
        let (a, b) = (start_s + start, start_s + end);
        if b - a < 1e-9 {
            let k = report_slot(start_s, end, interval_s);
            if k < intervals {
                col[k] += bytes * 8.0 / interval_s / 1e6;
            }
            continue;
        }
        let first = (a / interval_s).floor().max(0.0) as usize;
        for (k, c) in col.iter_mut().enumerate().skip(first) {
            let (lo, hi) = (k as f64 * interval_s, (k + 1) as f64 * interval_s);
            if lo >= b {
                break;
            }
            let overlap = (hi.min(b) - lo.max(a)).max(0.0);
            *c += bytes * overlap / (b - a) * 8.0 / interval_s / 1e6;
        }
    }
    col
}

/// iperf3's report interval (`-i`): the scenario's sample interval, in seconds.
pub(super) fn report_interval(sc: &Scenario) -> String {
    format!("{}", sc.sample_interval_ps as f64 / PS_PER_S as f64)
}

/// The sample interval an iperf3 report belongs to: the one its end is nearest to. iperf3
/// stamps an interval's end a little past the boundary (1.000046 s), and the last one of a
/// run a little before it; rounding up, as before, put every report one interval late and
/// dropped the last.
pub(super) fn report_slot(start_s: f64, end_s: f64, interval_s: f64) -> usize {
    (((start_s + end_s) / interval_s).round() as usize).saturating_sub(1)
}

/// The generator clients' results, by flow index.
pub(super) fn generator_results(live: &Live, outputs: &[String]) -> BTreeMap<usize, FlowResult> {
    let mut clients: Vec<usize> = live.tg_client_of.iter().flatten().copied().collect();
    clients.sort_unstable();
    clients.dedup();
    clients
        .iter()
        .flat_map(|&ci| outputs[ci].lines())
        .filter_map(|l| serde_json::from_str::<FlowResult>(l).ok())
        .map(|r| (r.id, r))
        .collect()
}

/// A fixed-size transfer's figures from the traffic generator: completion time measured at the
/// client, the bytes delivered (all of them when it finished; what the receiver had
/// acknowledged by the end of the run and its drain when it had not), and the connection's
/// retransmissions, RTT and window from `TCP_INFO` at its end (unmeasured where the socket gave
/// none); and its goodput column: the bytes spread evenly over the time it took.
pub(super) fn transfer_figures(
    f: &Flow,
    t: &TcpFlow,
    r: Option<&FlowResult>,
    intervals: usize,
    interval_s: f64,
) -> (FlowFigures, Vec<f64>) {
    let done = r.filter(|r| r.fct_s.is_some());
    let bytes = r.map_or(0, |r| r.bytes) as f64;
    let mut col = vec![0.0; intervals];
    if let Some(r) = done {
        let (start, fct) = (r.start_s, r.fct_s.unwrap_or(0.0).max(1e-9));
        for (k, c) in col.iter_mut().enumerate() {
            let (lo, hi) = (k as f64 * interval_s, (k + 1) as f64 * interval_s);
            let overlap = (hi.min(start + fct) - lo.max(start)).max(0.0);
            *c = round(bytes * 8.0 * overlap / fct / interval_s / 1e6, 4);
        }
    }
    let info = r.and_then(|r| r.tcp_info);
    let tcp = TcpFigures {
        cc: t.config.cc.linux_name().to_string(),
        completion_s: done.and_then(|r| r.fct_s).map(|x| round(x, 6)),
        retransmitted_segments: info.map(|i| i.retransmitted_segments),
        srtt_ms: info.map(|i| round(i.srtt_ms, 3)),
        // One reading, at the end: the mean of one sample.
        mean_cwnd_kib: info.map(|i| round(i.cwnd_kib, 3)),
        ..TcpFigures::default()
    };
    (kernel_tcp_figures(f, bytes, tcp), col)
}

/// A TCP flow's figures on the kernel from the bytes it delivered and its transport figures.
/// The kernel's tools count no losses, delays or packets of a TCP flow: those stay empty.
pub(super) fn kernel_tcp_figures(f: &Flow, bytes: f64, tcp: TcpFigures) -> FlowFigures {
    let active_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
    FlowFigures {
        id: f.name.clone(),
        offered_mbps: 0.0,
        delivered_mbps: round(bytes * 8.0 / active_s.max(1e-12) / 1e6, 4),
        loss_pct: None,
        mean_owd_ms: None,
        reordered_pct: None,
        sent_pkts: 0,
        delivered_pkts: 0,
        per_path_mbps: BTreeMap::new(),
        delivered_mib: round(bytes / f64::from(1u32 << 20), 4),
        tcp: Some(tcp),
    }
}

/// A TCP flow's figures from iperf3's server (bytes received) and client (retransmits, cwnd and
/// RTT per interval) reports, and its columns: goodput, cwnd KiB, SRTT ms, retransmits.
pub(super) fn tcp_flow_figures(
    f: &Flow,
    t: &TcpFlow,
    server: &serde_json::Value,
    client: &serde_json::Value,
    intervals: usize,
    interval_s: f64,
    start_s: f64,
) -> (FlowFigures, Vec<Vec<f64>>) {
    let bytes = server["end"]["sum_received"]["bytes"].as_f64().unwrap_or(0.0);
    let sent = &client["end"]["sum_sent"];
    let retx = sent["retransmits"].as_u64();
    let stream = &client["end"]["streams"][0]["sender"];
    let mut cols = vec![vec![0.0; intervals]; 4];
    let slot = |end: f64| report_slot(start_s, end, interval_s);
    cols[0] = goodput_column(server, start_s, intervals, interval_s);
    let (mut cwnd_sum, mut cwnd_n) = (0.0, 0.0);
    for iv in client["intervals"].as_array().into_iter().flatten() {
        let st = &iv["streams"][0];
        let k = slot(st["end"].as_f64().unwrap_or(0.0));
        if k < intervals {
            let cwnd = st["snd_cwnd"].as_f64().unwrap_or(0.0) / 1024.0;
            cols[1][k] = cwnd;
            cols[2][k] = st["rtt"].as_f64().unwrap_or(0.0) / 1000.0;
            cols[3][k] += st["retransmits"].as_f64().unwrap_or(0.0);
            cwnd_sum += cwnd;
            cwnd_n += 1.0;
        }
    }
    // iperf3 counts a TCP flow's retransmissions, not its losses, and no delay; nor timeouts,
    // fast retransmits or ECN figures (`TcpFigures::default()`: None).
    // Without the client's report (it died, or wrote nothing readable) none of the three is
    // measured: absent, not 0.
    let tcp = TcpFigures {
        cc: t.config.cc.linux_name().to_string(),
        retransmitted_segments: retx,
        srtt_ms: stream["mean_rtt"].as_f64().map(|us| round(us / 1000.0, 3)),
        mean_cwnd_kib: (cwnd_n > 0.0).then(|| round(cwnd_sum / cwnd_n, 3)),
        ..TcpFigures::default()
    };
    let fig = kernel_tcp_figures(f, bytes, tcp);
    (fig, cols)
}

#[cfg(test)]
mod tests {

    /// A server that accepted its client's control connection seconds after the client
    /// started began its test late (the connection starved): it is placed where it happened;
    /// one that accepted at once began with its client, however late it ended.
    #[test]
    fn a_test_that_began_late_is_placed_where_it_happened() {
        let sc = mpsched_scenario::Scenario::from_toml(
            include_str!("../../../../scenarios/pmqecn2024/table1-sp-vs-vq-wrr.toml"),
            "table1.toml",
        )
        .unwrap();
        let f = &sc.flows[2];
        let t0 = 1_000_000.3;
        let report = |accepted: f64, span_s: f64| {
            serde_json::json!({"start": {"timestamp": {"timesecs": accepted}},
                               "end": {"sum_received": {"seconds": span_s}}})
        };
        // Accepted at second 1 000 010 (9.7 s after time zero), ended at 16.5 s with 6.5 s of
        // data: it began at 10 s, not at 0.01 s.
        let late = super::late_start(f, &report(1_000_010.0, 6.5), 0.01, Some(16.5), t0);
        assert!((late - 10.0).abs() < 1e-9, "{late}");
        // Not ended by us: the accepting second's middle.
        let late = super::late_start(f, &report(1_000_006.0, 5.0), 1.0, None, t0);
        assert!((late - 6.2).abs() < 1e-6, "{late}");
        // Accepted at once, ended at 17 s with 16.9 s of data (its closing exchange was late).
        let on_time = super::late_start(f, &report(1_000_000.0, 16.9), 0.01, Some(17.0), t0);
        assert_eq!(on_time, 0.01);
        // No timestamp: as its client started.
        assert_eq!(super::late_start(f, &serde_json::json!({}), 0.01, None, t0), 0.01);
    }

    use mpsched_scenario::Scenario;

    /// Hardening item 15: what iperf3 does not measure is absent (`-` in tables, `null` in
    /// JSON), not zero: one-way delay of every flow, a TCP flow's loss, timeouts, fast
    /// retransmits and ECN figures; what it does measure stays.
    #[test]
    fn figures_the_kernel_does_not_measure_are_absent_not_zero() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/tcp/two-flows.toml"
        ))
        .unwrap();
        let sc = Scenario::from_toml(&text, "two-flows.toml").unwrap();
        let f = &sc.flows[0];
        let server =
            serde_json::json!({"end": {"sum_received": {"bytes": 1_000_000.0, "packets": 700, "lost_packets": 7}}});
        let (udp, _) = super::udp_flow_figures(f, &server, 4, 1.0, 0.0);
        assert_eq!(udp.mean_owd_ms, None);
        assert_eq!(udp.loss_pct, Some(1.0), "iperf3 counts UDP losses");
        let t = f.tcp.as_ref().expect("a TCP flow");
        let client = serde_json::json!({"end": {"streams": [{"sender": {"retransmits": 246}}]}});
        let (tcp, _) = super::tcp_flow_figures(f, t, &server, &client, 4, 1.0, 0.0);
        assert_eq!((tcp.loss_pct, tcp.mean_owd_ms), (None, None));
        let figs = tcp.tcp.as_ref().unwrap();
        assert_eq!(
            (figs.rtos, figs.fast_retransmits, figs.ecn_reductions, figs.ce_segments),
            (None, None, None, None)
        );
        let json = serde_json::to_value(&tcp).unwrap();
        assert!(json["loss_pct"].is_null() && json["mean_owd_ms"].is_null() && json["tcp"]["rtos"].is_null());
        // Issue 45 item 9: iperf3 counts no TCP segment's order (it said 0.0 where the
        // simulator shows 47-50 %); a UDP flow's out-of-order count stays.
        assert_eq!(tcp.reordered_pct, None);
        assert!(json["reordered_pct"].is_null(), "{json}");
        assert_eq!(udp.reordered_pct, Some(0.0));

        // Issue 27 item 12: with no client report, retransmissions, SRTT and window are
        // absent (they printed 0); with one, measured.
        let (tcp, _) = super::tcp_flow_figures(f, t, &server, &serde_json::Value::Null, 4, 1.0, 0.0);
        let json = serde_json::to_value(&tcp).unwrap();
        for k in ["retransmitted_segments", "srtt_ms", "mean_cwnd_kib"] {
            assert!(json["tcp"][k].is_null(), "{k}: {json}");
        }
        let client = serde_json::json!({"end": {"sum_sent": {"retransmits": 3}, "streams": [{"sender": {"mean_rtt": 2500}}]},
            "intervals": [{"streams": [{"end": 1.0, "snd_cwnd": 20480, "rtt": 2000, "retransmits": 3}]}]});
        let (tcp, _) = super::tcp_flow_figures(f, t, &server, &client, 4, 1.0, 0.0);
        let figs = tcp.tcp.as_ref().unwrap();
        assert_eq!(
            (figs.retransmitted_segments, figs.srtt_ms, figs.mean_cwnd_kib),
            (Some(3), Some(2.5), Some(20.0))
        );
    }

    /// Issue 27 item 12: a transfer's retransmissions, RTT and window come from the generator's
    /// TCP_INFO, and are absent without it (they were 0 for every transfer); an unfinished one
    /// has no completion time but the bytes delivered by the end (it had 0).
    #[test]
    fn transfers_carry_tcp_info_or_nothing_and_their_bytes_by_the_end() {
        use crate::trafficgen::{FlowResult, TcpInfo};
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/tcp/two-flows.toml"
        ))
        .unwrap();
        let sc = Scenario::from_toml(&text, "two-flows.toml").unwrap();
        let (f, t) = (&sc.flows[0], sc.flows[0].tcp.as_ref().unwrap());
        let info = TcpInfo {
            retransmitted_segments: 4,
            srtt_ms: 1.25,
            cwnd_kib: 14.0,
            bytes_acked: 3 << 20,
        };
        let unfinished = FlowResult {
            id: 0,
            start_s: 0.5,
            fct_s: None,
            connect_s: None,
            bytes: 3 << 20,
            error: Some("not finished by the end of the run".into()),
            tcp_info: Some(info),
        };
        let (fig, _) = super::transfer_figures(f, t, Some(&unfinished), 4, 1.0);
        let tcp = fig.tcp.as_ref().unwrap();
        assert_eq!((tcp.completion_s, fig.delivered_mib), (None, 3.0));
        assert_eq!(
            (tcp.retransmitted_segments, tcp.srtt_ms, tcp.mean_cwnd_kib),
            (Some(4), Some(1.25), Some(14.0))
        );
        let failed = FlowResult {
            bytes: 0,
            tcp_info: None,
            error: Some("connection refused".into()),
            ..unfinished
        };
        let (fig, _) = super::transfer_figures(f, t, Some(&failed), 4, 1.0);
        let json = serde_json::to_value(&fig).unwrap();
        for k in ["retransmitted_segments", "srtt_ms", "mean_cwnd_kib"] {
            assert!(json["tcp"][k].is_null(), "{k}: {json}");
        }
        let back: mpsched_scenario::results::FlowFigures = serde_json::from_value(json).unwrap();
        assert_eq!(back, fig, "null reads back as not measured");
    }

    /// Hardening item 14: iperf3 stamps a report's end just past the boundary (1.000046 s);
    /// each report lands in the interval it ends, from the first to the last, at any sample
    /// interval (rounding up put every one an interval late and dropped the last).
    #[test]
    fn iperf3_reports_land_in_the_interval_they_end() {
        assert_eq!(super::report_slot(0.0, 1.000046, 1.0), 0);
        assert_eq!(super::report_slot(0.0, 3.9998, 1.0), 3, "the last, a little short");
        assert_eq!(
            super::report_slot(2.0, 0.50002, 0.5),
            4,
            "a flow starting at 2 s, 0.5 s samples"
        );
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/motohashi2022/s1-homogeneous.toml"
        ))
        .unwrap();
        let sc = Scenario::from_toml(&text, "s1.toml").unwrap();
        let ends = [1.000046, 2.000031, 3.000102, 3.999870];
        let intervals: Vec<_> = ends
            .iter()
            .map(|e| serde_json::json!({"sum": {"end": e, "bits_per_second": 8e6}}))
            .collect();
        let server = serde_json::json!({"intervals": intervals, "end": {"sum_received": {}}});
        let (_, col) = super::udp_flow_figures(&sc.flows[0], &server, 4, 1.0, 0.0);
        assert!(
            col.iter().all(|c| (c - 8.0).abs() < 0.01),
            "every second filled, none late, the last kept: {col:?}"
        );
    }

    /// Issue 27 item 6: a server's last report is often a short one (what was still queued
    /// when the client stopped), at the flow's rate over a few milliseconds; its rate was added
    /// to the last full interval's (15.47 Mbit/s for an 8 Mbit/s flow). Bytes are added instead.
    /// Reports are placed from when the client really started.
    #[test]
    fn a_short_last_report_adds_its_bytes_not_its_rate() {
        let iv = |start: f64, end: f64, bytes: f64| {
            serde_json::json!({"sum": {"start": start, "end": end, "seconds": end - start, "bytes": bytes,
                "bits_per_second": bytes * 8.0 / (end - start)}})
        };
        let server = serde_json::json!({"intervals": [
            iv(0.0, 1.000046, 1e6), iv(1.000046, 2.000031, 1e6), iv(2.000031, 3.000102, 1e6),
            iv(3.000102, 4.0001, 1e6), iv(4.0001, 4.03, 30_000.0)
        ]});
        let col = super::goodput_column(&server, 0.0, 4, 1.0);
        assert!(
            col.iter().all(|c| (c - 8.0).abs() < 0.001),
            "each second its own bytes; the 30 ms after the end in none: {col:?}"
        );
        // A client that started 0.2 s after time zero at 100 ms samples.
        let server = serde_json::json!({"intervals": [iv(0.0, 0.1, 1e5), iv(0.1, 0.2, 1e5)]});
        let col = super::goodput_column(&server, 0.2, 5, 0.1);
        let want = [0.0, 0.0, 8.0, 8.0, 0.0];
        assert!(col.iter().zip(want).all(|(c, w)| (c - w).abs() < 1e-6), "{col:?}");
    }
}
