//! Rate-controlled UDP flows (`[flow.rate_control]`) in a kernel run: a paced receiver and a
//! paced sender per flow (`mpsched trafficgen paced-recv` / `paced-send`,
//! [`crate::paced`]) instead of iperf3, and their reports into the run's figures and series.

use super::{check_stop_plain, push_child, trafficgen_exe, Build, Live, NetnsError, DRAIN, PS_PER_S};
use crate::hosts;
use crate::paced::{ReceiverConfig, ReceiverTotals, Report, SenderConfig, SenderTotals};
use crate::trafficgen::unix_ns;
use mpsched_scenario::results::{round, FlowFigures};
use mpsched_scenario::{Flow, RateControl};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant, SystemTime};

/// Whether a flow is paced by a rate controller (run by the paced sender, not iperf3).
pub(super) fn is_paced(f: &Flow) -> bool {
    f.rate_control.is_some()
}

/// Unix time of the instant `t0` (which may be ahead).
fn unix_ns_of(t0: Instant) -> u64 {
    let now = Instant::now();
    unix_ns(SystemTime::now() + t0.saturating_duration_since(now) - now.saturating_duration_since(t0))
}

impl Build<'_> {
    /// The paced flows' receivers, then (once every one is bound) their senders; `t0` is the
    /// run's time zero, which the senders wait for.
    pub(super) fn paced_flows(&self, live: &mut Live, t0: Instant) -> Result<(), NetnsError> {
        let sc = self.sc;
        let paced: Vec<(usize, &Flow, RateControl)> = sc
            .flows
            .iter()
            .enumerate()
            .filter_map(|(fi, f)| Some((fi, f, f.rate_control?)))
            .collect();
        if paced.is_empty() {
            return Ok(());
        }
        let exe = trafficgen_exe()?;
        let t0_unix_ns = unix_ns_of(t0);
        for &(fi, f, rc) in &paced {
            let cfg = self.receiver_config(f, &rc, t0_unix_ns);
            let input = serde_json::to_string(&cfg).map_err(|e| NetnsError::Traffic(e.to_string()))?;
            let c = live.nss[f.dst].spawn_with_input(&exe, &["trafficgen", "paced-recv"], input)?;
            live.server_of[fi] = Some(live.children.len());
            push_child(live, c);
        }
        self.wait_bound(live, &paced)?;
        for &(fi, f, rc) in &paced {
            let cfg = self.sender_config(f, &rc, t0_unix_ns);
            let input = serde_json::to_string(&cfg).map_err(|e| NetnsError::Traffic(e.to_string()))?;
            let c = live.nss[f.src].spawn_with_input(&exe, &["trafficgen", "paced-send"], input)?;
            live.paced_sender_of[fi] = Some(live.children.len());
            push_child(live, c);
        }
        Ok(())
    }

    fn receiver_config(&self, f: &Flow, rc: &RateControl, t0_unix_ns: u64) -> ReceiverConfig {
        let dst = Ipv4Addr::from(self.sc.flow_addresses(self.w, f).1);
        ReceiverConfig {
            flow: f.name.clone(),
            bind: SocketAddrV4::new(dst, f.dst_port),
            t0_unix_ns,
            stop_ns: self.sc.duration_ps / 1000 + crate::paced::ns(DRAIN),
            interval_ns: self.sc.sample_interval_ps / 1000,
            cnp_interval_ns: rc.cnp_interval_ps().map(|ps| ps / 1000),
            peer: Some(SocketAddrV4::new(
                Ipv4Addr::from(self.sc.flow_addresses(self.w, f).0),
                f.src_port,
            )),
        }
    }

    fn sender_config(&self, f: &Flow, rc: &RateControl, t0_unix_ns: u64) -> SenderConfig {
        let (sc, w) = (self.sc, self.w);
        SenderConfig {
            flow: f.name.clone(),
            dst: SocketAddrV4::new(Ipv4Addr::from(sc.flow_addresses(w, f).1), f.dst_port),
            bind: hosts::bind_address(sc, w, f).map_or(Ipv4Addr::UNSPECIFIED, Ipv4Addr::from),
            src_port: f.src_port,
            payload_bytes: f.payload_bytes,
            tos: (f.dscp << 2) | f.ecn.bits(),
            rate_control: *rc,
            t0_unix_ns,
            start_ns: f.start_ps / 1000,
            stop_ns: f.stop_ps / 1000,
            interval_ns: sc.sample_interval_ps / 1000,
        }
    }

    /// Wait until every paced receiver has bound its port (10 s at most).
    fn wait_bound(&self, live: &mut Live, paced: &[(usize, &Flow, RateControl)]) -> Result<(), NetnsError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        for &(fi, f, _) in paced {
            while !udp_bound(&live.nss[f.dst], f.dst_port) {
                let ci = live.server_of[fi].unwrap_or(usize::MAX);
                let exited = live.children.get_mut(ci).and_then(|c| c.try_wait().ok().flatten());
                if exited.is_some() || Instant::now() > deadline {
                    // A receiver still running past the deadline would hold its reader (and
                    // this run) until its stop: end it first.
                    if exited.is_none() {
                        if let Some(c) = live.children.get_mut(ci) {
                            let _ = c.kill();
                            let _ = c.wait();
                        }
                    }
                    let said = live
                        .readers
                        .get_mut(ci)
                        .and_then(Option::take)
                        .and_then(|r| r.join().ok())
                        .unwrap_or_default();
                    return Err(NetnsError::Traffic(format!(
                        "flow `{}`: the paced receiver did not bind port {} on `{}`: {}",
                        f.name,
                        f.dst_port,
                        self.sc.nodes[f.dst].name,
                        error_of(&said).unwrap_or_else(|| "no report".into())
                    )));
                }
                check_stop_plain(&self.opts.stop, self.run_id)?;
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    }
}

/// Whether a UDP socket is bound to `port` in the namespace (`/proc/net/udp`).
fn udp_bound(n: &crate::ns::Netns, port: u16) -> bool {
    let want = format!(":{port:04X}");
    n.enter(move || {
        let text = std::fs::read_to_string("/proc/thread-self/net/udp").unwrap_or_default();
        text.lines()
            .skip(1)
            .any(|l| l.split_whitespace().nth(1).is_some_and(|local| local.ends_with(&want)))
    })
    .unwrap_or(false)
}

/// The message of the first `error` line of a paced tool's output.
fn error_of(output: &str) -> Option<String> {
    reports(output).into_iter().find_map(|r| match r {
        Report::Error { message } => Some(message),
        _ => None,
    })
}

/// A paced tool's report lines (lines that are not reports are skipped).
fn reports(output: &str) -> Vec<Report> {
    output.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// What a paced flow's two ends reported, read from their outputs.
pub(super) struct PacedOutput {
    sender: Vec<Report>,
    receiver: Vec<Report>,
}

impl PacedOutput {
    /// Flow `fi`'s ends' reports, or why they are unusable.
    pub(super) fn read(f: &Flow, fi: usize, live: &Live, outputs: &[String]) -> Result<PacedOutput, NetnsError> {
        let text = |ci: Option<usize>| ci.and_then(|ci| outputs.get(ci)).map_or("", String::as_str);
        let (s, r) = (text(live.paced_sender_of[fi]), text(live.server_of[fi]));
        if let Some(e) = error_of(s).or_else(|| error_of(r)) {
            return Err(NetnsError::Traffic(format!("flow `{}`: {e}", f.name)));
        }
        Ok(PacedOutput {
            sender: reports(s),
            receiver: reports(r),
        })
    }

    fn sender_end(&self) -> Option<&SenderTotals> {
        self.sender.iter().find_map(|r| match r {
            Report::SenderEnd(t) => Some(t),
            _ => None,
        })
    }

    fn receiver_end(&self) -> Option<&ReceiverTotals> {
        self.receiver.iter().find_map(|r| match r {
            Report::ReceiverEnd(t) => Some(t),
            _ => None,
        })
    }

    /// Every line, each with the flow's name and which end wrote it: `paced.jsonl`.
    pub(super) fn jsonl(&self, flow: &str) -> String {
        let mut text = String::new();
        for (end, lines) in [("sender", &self.sender), ("receiver", &self.receiver)] {
            for r in lines {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                v["flow"] = flow.into();
                v["end"] = end.into();
                text.push_str(&v.to_string());
                text.push('\n');
            }
        }
        text
    }
}

/// A paced flow's series columns, per sample interval: goodput, loss, one-way delay and the
/// sender's rate.
pub(super) struct PacedColumns {
    /// Goodput at the receiver, Mbit/s.
    pub(super) mbps: Vec<f64>,
    /// Datagrams missing by the numbers, % of those expected in the interval.
    pub(super) loss_pct: Vec<f64>,
    /// Mean one-way delay, ms (0 without datagrams).
    pub(super) owd_ms: Vec<f64>,
    /// The controller's rate at the interval's end, Mbit/s.
    pub(super) rate_mbps: Vec<f64>,
}

/// The columns from the reports: receiver intervals by arrival, sender intervals by time.
pub(super) fn paced_columns(out: &PacedOutput, intervals: usize, interval_s: f64) -> PacedColumns {
    let mut c = PacedColumns {
        mbps: vec![0.0; intervals],
        loss_pct: vec![0.0; intervals],
        owd_ms: vec![0.0; intervals],
        rate_mbps: vec![0.0; intervals],
    };
    for r in &out.receiver {
        let Report::ReceiverInterval {
            k,
            bytes,
            pkts,
            lost_pkts,
            owd_mean_ms,
            ..
        } = r
        else {
            continue;
        };
        let Some(k) = usize::try_from(*k).ok().filter(|&k| k < intervals) else {
            continue;
        };
        c.mbps[k] = round(*bytes as f64 * 8.0 / interval_s / 1e6, 4);
        let expected = *pkts as i64 + lost_pkts;
        if expected > 0 {
            c.loss_pct[k] = round((*lost_pkts).max(0) as f64 * 100.0 / expected as f64, 4);
        }
        c.owd_ms[k] = round(owd_mean_ms.unwrap_or(0.0), 4);
    }
    for r in &out.sender {
        if let Report::SenderInterval { k, rate_bps, .. } = r {
            if let Some(k) = usize::try_from(*k).ok().filter(|&k| k < intervals) {
                c.rate_mbps[k] = round(*rate_bps as f64 / 1e6, 4);
            }
        }
    }
    c
}

/// A paced flow's figures: delivered bytes and one-way delay at the receiver, loss against
/// what the sender sent (against the highest number received where the sender reported
/// nothing).
pub(super) fn paced_figures(f: &Flow, out: &PacedOutput) -> Result<FlowFigures, NetnsError> {
    let r = out.receiver_end().ok_or_else(|| {
        NetnsError::Traffic(format!(
            "flow `{}`: the paced receiver reported no totals (killed before its end?)",
            f.name
        ))
    })?;
    let sent = out.sender_end().map_or(r.expected_pkts, |s| s.sent_pkts);
    let active_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            round(a as f64 * 100.0 / b as f64, 4)
        }
    };
    Ok(FlowFigures {
        id: f.name.clone(),
        offered_mbps: f.rate_bps as f64 / 1e6,
        delivered_mbps: round(r.bytes as f64 * 8.0 / active_s.max(1e-12) / 1e6, 4),
        loss_pct: Some(pct(sent.saturating_sub(r.pkts), sent)),
        mean_owd_ms: r.owd_mean_ms.map(|d| round(d, 4)),
        reordered_pct: Some(pct(r.reordered_pkts, r.pkts)),
        sent_pkts: sent,
        delivered_pkts: r.pkts,
        per_path_mbps: BTreeMap::new(),
        delivered_mib: round(r.bytes as f64 / f64::from(1u32 << 20), 4),
        tcp: None,
    })
}

/// The simulator's `rate-control` counters of a paced flow: CNPs its receiver sent,
/// notifications its sender took (CNPs and feedback), its controller's rate at the end.
pub(super) fn paced_counters(f: &Flow, out: &PacedOutput) -> Vec<(String, u64)> {
    let cnps = out.receiver_end().map_or(0, |r| r.cnps);
    let s = out.sender_end();
    let mut c = vec![
        (format!("{}.cnps", f.name), cnps),
        (
            format!("{}.notifications", f.name),
            s.map_or(0, |s| s.cnps + s.feedback),
        ),
        (format!("{}.rate_bps", f.name), s.map_or(0, |s| s.rate_bps)),
    ];
    if let Some(refused) = s.map(|s| s.send_refused).filter(|&n| n > 0) {
        c.push((format!("{}.send_refused", f.name), refused));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> Flow {
        let text = "[scenario]\nname = \"x\"\nduration = \"1s\"\n\
                    [[node]]\nname = \"a\"\nkind = \"host\"\n[[node]]\nname = \"b\"\nkind = \"host\"\n\
                    [[link]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbps\"\n\
                    [[flow]]\nname = \"f\"\nsrc = \"a\"\ndst = \"b\"\nrate = \"8Mbps\"\n\
                    rate_control = { cc = \"dcqcn\" }\n";
        mpsched_scenario::Scenario::from_toml(text, "x.toml").unwrap().flows[0].clone()
    }

    /// The series and figures come from the two ends' lines: goodput, loss and delay per
    /// interval from the receiver's, the rate from the sender's, loss in the figures against
    /// what the sender sent.
    #[test]
    fn paced_reports_become_columns_figures_and_counters() {
        let sender = [
            r#"{"kind":"sender_interval","k":0,"rate_bps":8000000,"sent_pkts":10}"#,
            r#"{"kind":"sender_interval","k":1,"rate_bps":4000000,"sent_pkts":10}"#,
            r#"{"kind":"sender_end","sent_pkts":20,"sent_bytes":20000,"send_refused":0,"cnps":3,"feedback":1,"ignored":0,"rate_bps":4000000,"asked_mbps":6.0,"achieved_mbps":6.0,"late_mean_us":1.0,"late_max_us":2.0,"cpu_user_s":0.0,"cpu_sys_s":0.0,"wall_s":1.0}"#,
        ]
        .join("\n");
        let receiver = [
            r#"{"kind":"receiver_interval","k":0,"bytes":9000,"pkts":9,"lost_pkts":1,"ce_pkts":2,"cnps":2,"owd_mean_ms":1.5}"#,
            r#"{"kind":"receiver_interval","k":1,"bytes":8000,"pkts":8,"lost_pkts":0,"ce_pkts":0,"cnps":0,"owd_mean_ms":null}"#,
            r#"{"kind":"receiver_end","pkts":17,"bytes":17000,"expected_pkts":18,"reordered_pkts":0,"ce_pkts":2,"cnps":3,"owd_mean_ms":1.25,"owd_max_ms":3.0,"ignored":0}"#,
        ]
        .join("\n");
        let out = PacedOutput {
            sender: reports(&sender),
            receiver: reports(&receiver),
        };
        let c = paced_columns(&out, 2, 0.5);
        assert_eq!(c.mbps, [0.144, 0.128]);
        assert_eq!(c.loss_pct, [10.0, 0.0]);
        assert_eq!(c.owd_ms, [1.5, 0.0]);
        assert_eq!(c.rate_mbps, [8.0, 4.0]);
        let f = flow();
        let fig = paced_figures(&f, &out).unwrap();
        assert_eq!((fig.sent_pkts, fig.delivered_pkts, fig.loss_pct), (20, 17, Some(15.0)));
        assert_eq!((fig.mean_owd_ms, fig.offered_mbps), (Some(1.25), 8.0));
        let counters = paced_counters(&f, &out);
        assert_eq!(
            counters,
            [
                ("f.cnps".to_string(), 3),
                ("f.notifications".to_string(), 4),
                ("f.rate_bps".to_string(), 4_000_000)
            ]
        );
        let empty = PacedOutput {
            sender: Vec::new(),
            receiver: Vec::new(),
        };
        let e = paced_figures(&f, &empty).unwrap_err().to_string();
        assert!(e.contains("flow `f`") && e.contains("no totals"), "{e}");
        assert_eq!(
            error_of(r#"{"kind":"error","message":"cannot bind"}"#).as_deref(),
            Some("cannot bind")
        );
    }
}
