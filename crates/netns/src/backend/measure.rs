//! Measuring while the traffic runs: each sample interval, the paths' receive counters, the
//! splitters' registers, MPTCP subflows and (when asked) virtual queue against qdisc backlog.

use super::traffic::{spawn_iperf3, tcp_client_args, udp_client_args};
use super::{is_transfer, push_child, Build, Live, NetnsError, DRAIN, PS_PER_S};
use crate::ns::Netns;
use crate::subflows::{self, SsSubflow};
use mpsched_core::packet::{ipv4_to_string, PortId};
use mpsched_scenario::results::{round, TcpFigures};
use mpsched_scenario::Protocol;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What a run measured while its traffic ran.
pub(super) struct Samples {
    /// Per path, Mbit/s into the confluence point per sample interval.
    pub(super) path: Vec<Vec<f64>>,
    /// Per sample interval, the DWRR weight registers.
    pub(super) regs: Vec<Vec<(String, u64)>>,
    /// Per flow, the child running its TCP client.
    pub(super) client_of: Vec<Option<usize>>,
    /// Per iperf3 flow, when its client started, seconds after time zero: its reports are
    /// placed on the clock from there.
    pub(super) started_at: Vec<Option<f64>>,
    pub(super) queue_tracking: Vec<(f64, String, PortId, u64, u64)>,
    /// Per flow, its MPTCP subflows as `ss` showed them last.
    pub(super) mptcp: MptcpWatch,
    /// The programs' control loops' counters, by component (`control:<node>`).
    pub(super) loop_counters: Vec<(String, BTreeMap<String, u64>)>,
}

/// The subflows of each running MPTCP bulk flow, read with `ss` every sample interval
/// ([`crate::subflows`]): iperf3 sees only the first.
pub(super) struct MptcpWatch {
    /// Per flow: seconds since its start at the last reading, and the subflows then.
    pub(super) last: Vec<Option<(f64, Vec<SsSubflow>)>>,
    /// Per flow: (sample interval, the subflows' windows together in KiB) of each reading.
    pub(super) cwnd_kib: Vec<Vec<(usize, f64)>>,
}

impl MptcpWatch {
    pub(super) fn new(flows: usize) -> MptcpWatch {
        MptcpWatch {
            last: vec![None; flows],
            cwnd_kib: vec![Vec::new(); flows],
        }
    }

    /// Read the subflows of every MPTCP bulk flow running `now` after time zero, in sample
    /// interval `interval`.
    pub(super) fn sample(&mut self, b: &Build, live: &Live, now: Duration, interval: usize) {
        let mut listings: BTreeMap<usize, Vec<SsSubflow>> = BTreeMap::new();
        for (fi, f) in b.sc.flows.iter().enumerate() {
            let ps = now.as_nanos() as u64 * 1000;
            if f.protocol != Protocol::Mptcp || is_transfer(f) || ps < f.start_ps || ps >= f.stop_ps {
                continue;
            }
            let all = listings
                .entry(f.src)
                .or_insert_with(|| subflows::parse(&subflows::read(&live.nss[f.src])));
            let remote = format!("{}:{}", ipv4_to_string(b.sc.flow_addresses(b.w, f).1), f.dst_port);
            let conn = subflows::connection(all, &remote);
            if conn.is_empty() {
                continue;
            }
            let cwnd: u64 = conn.iter().map(|s| s.cwnd_bytes).sum();
            self.cwnd_kib[fi].push((interval, cwnd as f64 / 1024.0));
            self.last[fi] = Some(((ps - f.start_ps) as f64 / PS_PER_S as f64, conn));
        }
    }

    /// Flow `fi`'s TCP figures and window column with its subflows': theirs listed, the
    /// retransmissions their sum, the window their sum (its mean over readings in the figures),
    /// the RTT the first subflow's, as the simulator gives an MPTCP flow's.
    pub(super) fn apply(&self, fi: usize, tcp: &mut TcpFigures, cwnd_col: &mut [f64]) {
        let Some((active_s, conn)) = &self.last[fi] else { return };
        tcp.subflows = conn.iter().map(|s| s.figures(*active_s)).collect();
        tcp.retransmitted_segments = Some(conn.iter().map(|s| s.retrans_total).sum());
        tcp.srtt_ms = Some(round(conn[0].srtt_ms, 3));
        let readings = &self.cwnd_kib[fi];
        if !readings.is_empty() {
            tcp.mean_cwnd_kib = Some(round(
                readings.iter().map(|r| r.1).sum::<f64>() / readings.len() as f64,
                3,
            ));
        }
        for &(k, kib) in readings {
            if let Some(c) = cwnd_col.get_mut(k) {
                *c = kib;
            }
        }
    }
}

/// Start each client at its time and sample the path monitors and registers each interval,
/// Named links whose `a` end is a switch: the link's name, the switch's plane and its port
/// toward `b`, whose queue the series shows where the switch's program counts it (as the
/// simulator's `<link>_queue_*` columns).
fn queue_links(b: &Build, live: &Live) -> Vec<(String, usize, PortId)> {
    b.sc.links
        .iter()
        .filter_map(|l| {
            let name = l.name.clone()?;
            let plane = live.dataplanes.iter().position(|(i, _)| *i == l.a)?;
            Some((name, plane, b.w.port_to(l.a, l.b)?))
        })
        .collect()
}

/// The control plane's turn at `now` (before the scenario's end): the programs' own loops that
/// are due, then the run's controller if its period has come.
fn control(
    b: &Build,
    live: &mut Live,
    program_loops: &mut super::control::ProgramLoops,
    now: Duration,
    next_control: &mut Duration,
) -> Result<(), NetnsError> {
    let mut ctl = super::KernelControl {
        sc: b.sc,
        w: b.w,
        nss: &live.nss,
        planes: &mut live.dataplanes,
        strict: b.strict,
    };
    program_loops.run_due(&mut ctl, now)?;
    if let Some(c) = b.opts.controller.as_ref().filter(|_| now >= *next_control) {
        (c.act.lock().unwrap_or_else(|e| e.into_inner()))(&mut ctl, now);
        *next_control = now + c.period;
    }
    Ok(())
}

/// Run the traffic: start each flow on time, call the control plane, sample paths, queues and
/// registers every interval until the scenario's end.
pub(super) fn drive(b: &Build, live: &mut Live, t0: Instant) -> Result<Samples, NetnsError> {
    let (sc, w, opts) = (b.sc, b.w, b.opts);

    let monitors: Vec<(usize, String)> = sc
        .paths
        .iter()
        .map(|p| {
            let k = p.nodes.len();
            let (a, b) = (p.nodes[k - 2], p.nodes[k - 1]);
            (b, format!("e{}", w.port_to(b, a).unwrap()))
        })
        .collect();
    let intervals = sc.duration_ps.div_ceil(sc.sample_interval_ps) as usize;
    let sample_every = Duration::from_nanos(sc.sample_interval_ps / 1000);
    let mut path_samples: Vec<Vec<f64>> = vec![Vec::new(); sc.paths.len()];
    let mut reg_samples: Vec<Vec<(String, u64)>> = Vec::new();
    let mut last_rx: Vec<u64> = monitors
        .iter()
        .map(|(node, ifname)| rx_bytes(&live.nss[*node], ifname).unwrap_or(0))
        .collect();
    // Fixed-size transfers run in the traffic generator and paced flows in their own sender,
    // both started before time zero.
    let mut started: Vec<bool> = sc
        .flows
        .iter()
        .map(|f| is_transfer(f) || super::paced::is_paced(f))
        .collect();
    // When each iperf3 client really started, seconds after time zero.
    let mut started_at: Vec<Option<f64>> = vec![None; sc.flows.len()];
    let mut client_of: Vec<Option<usize>> = vec![None; sc.flows.len()];
    let mut queue_tracking = Vec::new();
    let mut mptcp = MptcpWatch::new(sc.flows.len());
    let tracked: Vec<(usize, PortId)> = live
        .dataplanes
        .iter()
        .flat_map(|(i, _)| {
            w.switches[*i]
                .as_ref()
                .map(|c| c.ecn_markers.iter().map(|&(p, _)| (*i, p)).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect();
    let queue_links = queue_links(b, live);
    let end = Duration::from_nanos(sc.duration_ps / 1000);
    let mut next_sample = sample_every;
    let mut last_sample_at = Duration::ZERO;
    let mut next_track = opts.track_queues.unwrap_or(Duration::MAX);
    let mut next_control = Duration::ZERO;
    let mut program_loops = super::control::ProgramLoops::new(sc, w);
    let mut traces = super::rate_traces::TracePlayer::new(b);
    loop {
        b.check_stop()?;
        let now = t0.elapsed();
        if now < end {
            traces.play_due(live, now)?;
            control(b, live, &mut program_loops, now, &mut next_control)?;
        }
        for (fi, f) in sc.flows.iter().enumerate() {
            if !started[fi] && now >= Duration::from_nanos(f.start_ps / 1000) {
                started[fi] = true;
                started_at[fi] = Some(t0.elapsed().as_secs_f64());
                let dur_s = (f.stop_ps - f.start_ps) as f64 / PS_PER_S as f64;
                if let Some(t) = &f.tcp {
                    let args = tcp_client_args(sc, w, f, t, dur_s);
                    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                    let c = spawn_iperf3(&live.nss[f.src], f, &refs)?;
                    client_of[fi] = Some(live.children.len());
                    push_child(live, c);
                    continue;
                }
                let args = udp_client_args(sc, w, f, dur_s);
                let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                let c = live.nss[f.src].spawn("iperf3", &refs)?;
                push_child(live, c);
            }
        }
        if now >= next_track {
            let t = now.as_secs_f64();
            for &(node, port) in &tracked {
                let dp = &live.dataplanes.iter().find(|(i, _)| *i == node).unwrap().1;
                let vq = dp.marker_backlog_bytes(port);
                let q = qdisc_backlog_bytes(&live.nss[node], &format!("e{port}"));
                if let (Some(vq), Some(q)) = (vq, q) {
                    queue_tracking.push((t, sc.nodes[node].name.clone(), port, vq, q));
                }
            }
            next_track += opts.track_queues.unwrap_or(Duration::MAX);
        }
        if now >= next_sample {
            // Bytes over the time that really passed since the last reading: the loop wakes
            // every few milliseconds, not exactly on the interval.
            let span_s = (now - last_sample_at).as_secs_f64().max(1e-9);
            last_sample_at = now;
            for (pi, (node, ifname)) in monitors.iter().enumerate() {
                let rx = rx_bytes(&live.nss[*node], ifname).unwrap_or(last_rx[pi]);
                let mbps = (rx - last_rx[pi]) as f64 * 8.0 / span_s / 1e6;
                path_samples[pi].push(mbps);
                last_rx[pi] = rx;
            }
            let mut regs = Vec::new();
            for (i, dp) in &live.dataplanes {
                for (g, ws) in dp.weights() {
                    let is_dwrr = w.switches[*i]
                        .as_ref()
                        .and_then(|c| c.splits.iter().find(|s| s.group == g))
                        .is_some_and(|s| matches!(s.scheduler, mpsched_core::sched::SchedulerConfig::Dwrr { .. }));
                    if is_dwrr {
                        for (k, v) in ws.iter().enumerate() {
                            regs.push((format!("{}_group{g}_weight{}", sc.nodes[*i].name, k + 1), u64::from(*v)));
                        }
                    }
                }
            }
            for (name, plane, port) in &queue_links {
                if let Some((now_pkts, most)) = live.dataplanes[*plane].1.queue_pkts(*port) {
                    regs.push((format!("{name}_queue_pkts"), now_pkts));
                    regs.push((format!("{name}_queue_max_pkts"), most));
                }
            }
            reg_samples.push(regs);
            mptcp.sample(b, live, now, reg_samples.len() - 1);
            next_sample += sample_every;
            if reg_samples.len() >= intervals {
                break;
            }
        }
        if now >= end + DRAIN * 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(Samples {
        path: path_samples,
        regs: reg_samples,
        client_of,
        started_at,
        queue_tracking,
        mptcp,
        loop_counters: program_loops.counters(),
    })
}

/// Received bytes of an interface, read from the namespace's /proc/net/dev.
pub(super) fn rx_bytes(n: &Netns, ifname: &str) -> Option<u64> {
    let name = ifname.to_string();
    n.enter(move || {
        let text = std::fs::read_to_string("/proc/thread-self/net/dev").ok()?;
        text.lines().find_map(|l| {
            let (dev, rest) = l.split_once(':')?;
            (dev.trim() == name).then(|| rest.split_whitespace().next()?.parse().ok())?
        })
    })
    .ok()
    .flatten()
}

/// The backlog in bytes of the htb class of an interface (`tc -s -j class show`).
pub(super) fn qdisc_backlog_bytes(n: &Netns, ifname: &str) -> Option<u64> {
    let out = n.exec("tc", &["-s", "-j", "qdisc", "show", "dev", ifname]).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v.as_array()?
        .iter()
        .find(|q| q["kind"] == "pfifo" || q["kind"] == "netem")
        .and_then(|q| q["backlog"].as_u64())
}
